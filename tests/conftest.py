"""Fixtures for every test directory."""

from tests.live_server import closed_port, redis_server

__all__ = ["closed_port", "redis_server"]
