"""Fixtures for every test directory."""

from tests.live_server import redis_server

__all__ = ["redis_server"]
