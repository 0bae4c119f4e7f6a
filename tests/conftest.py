"""Fixtures for every test directory, and the ``database`` mark: the tests that use Django's
database, which ``make test`` runs again on PostgreSQL (``make pytest-postgres``: ``pytest -m
database`` under ``scripts/with-postgres.sh``). Tests that use pytest-django's database are
marked here; live-server tests whose subject is what the server keeps in its database (the
schedules, task results and report runs, topics across a restart, a move to another database)
carry the mark themselves: a live server costs seconds, and most of them test the record log,
the wire or the page rather than the database."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from django.conf import settings
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

from tests.live_server import closed_port, redis_server
from webapp.runtime.database import close_connections

__all__ = [
    "closed_port",
    "django_db_setup",
    "pytest_collection_modifyitems",
    "pytest_report_header",
    "pytest_xdist_make_scheduler",
    "redis_server",
]

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


#: The test files that share one work unit under ``--dist loadfile``: every file of the
#: directory runs on the same worker, one after another.
ONE_WORKER = ("tests/spark/",)


class LoadFileSparkTogether(LoadFileScheduling):
    """xdist's ``--dist loadfile`` (a worker takes a whole file at a time), with the files under
    ``ONE_WORKER`` one unit: the worker's one SparkSession (``tests/spark/conftest.py``) then
    starts once and warms up once, and no two Spark JVMs compete for the cores (the figures:
    docs/operations.md, "Tests")."""

    def _split_scope(self, nodeid: str) -> str:
        for directory in ONE_WORKER:
            if nodeid.startswith(directory):
                return directory
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(
    config: pytest.Config, log: Producer
) -> LoadFileSparkTogether | None:
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own
    return LoadFileSparkTogether(config, log)


def pytest_report_header() -> str:
    database = settings.DATABASES["default"]
    return f"database: {database['ENGINE'].rpartition('.')[2]} {database['NAME']}"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's, with asgiref's database thread's connections closed before it drops the
    test database. An async test that reaches the database through ``sync_to_async`` (rather
    than through a runtime, which closes them as it stops) leaves a connection open in that
    thread, which outlives the test; PostgreSQL drops no database a session is connected to,
    so the run would end warning that the database "is being accessed by other users"."""
    yield
    asyncio.run(close_connections())
