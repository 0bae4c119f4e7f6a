"""Fixtures for every test directory, and the ``database`` mark: the tests that use Django's
database, which ``make test`` runs again on PostgreSQL (``make pytest-postgres``: ``pytest -m
database`` under ``scripts/with-postgres.sh``). Tests that use pytest-django's database are
marked here; live-server tests whose subject is what the server keeps in its database (the
schedules, task results and report runs, topics across a restart, a move to another database)
carry the mark themselves: a live server costs seconds, and most of them test the record log,
the wire or the page rather than the database."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.live_server import closed_port, redis_server

__all__ = ["closed_port", "pytest_collection_modifyitems", "pytest_report_header", "redis_server"]

#: pytest-django's fixtures that open the test database; every fixture that uses the database
#: requests one of them (``runtime`` does), and ``item.fixturenames`` holds them all.
DATABASE_FIXTURES = frozenset({"db", "transactional_db"})


def uses_the_test_database(item: pytest.Item) -> bool:
    """Marked ``django_db``, or requesting a database fixture, directly or through another."""
    return bool(
        item.get_closest_marker("django_db")
        or DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if uses_the_test_database(item):
            item.add_marker(pytest.mark.database)


def pytest_report_header() -> str:
    database = settings.DATABASES["default"]
    return f"database: {database['ENGINE'].rpartition('.')[2]} {database['NAME']}"
