"""A stopped runtime leaves no database connection open. Its database work (the topics, the
event history) runs through ``sync_to_async`` in asgiref's thread-sensitive executor, a thread
that outlives the runtime and where no request ends to close a connection: the runtime closes
them as it stops, or they would stay open, idle, until the process ends, and PostgreSQL would
refuse to drop the database ("being accessed by other users"). SQLite has no sessions to count:
this runs on make test's PostgreSQL pass."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections

from tests.live_server import _postgres_connection, wait_for
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

from ..helpers import serving

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def sessions(database: str) -> set[int]:
    """The server processes of the sessions connected to ``database`` (asked on a connection
    of its own, to the main database)."""
    with _postgres_connection(os.environ["DATABASE"]) as server:
        rows = server.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchall()
    return {row["pid"] for row in rows}


async def test_a_stopped_runtime_leaves_no_database_connection_open(
    make_runtime: Callable[..., CoordinatorRuntime],
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's sessions: make test's PostgreSQL pass runs this")
    database = connection.settings_dict["NAME"]
    # The runtime's thread starts without a connection (an earlier test may have left one).
    await sync_to_async(connections.close_all)()
    before = sessions(database)
    async with serving(make_runtime()) as runtime:
        await runtime.create_topic("orders", 3)  # stored from the runtime's database thread
        opened = sessions(database) - before
    assert opened, "the runtime used the database without a session of its own"
    # A session ends a moment after its client closes it.
    wait_for(
        lambda: not sessions(database) & opened,
        10,
        f"the runtime's sessions {sorted(opened)} to end after it stopped",
    )
