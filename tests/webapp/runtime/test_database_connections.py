"""The runtime's database connections (webapp.runtime.database). Its database work (topics,
the event history, SASL users) runs in asgiref's thread-sensitive executor, a thread that
outlives the runtime and where no request starts or ends: a session PostgreSQL ends is replaced
at the next call, and a stopped runtime leaves no connection open (PostgreSQL would refuse to
drop the database, "being accessed by other users"). SQLite has neither sessions to end nor to
count: this runs on make test's PostgreSQL pass."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connection, connections

from tests.live_server import _postgres_connection, wait_for
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.transports.kafka.users import add_user, stored_user

from ..helpers import serving
from .test_history_writer import drop_the_connection

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def sessions(database: str) -> set[int]:
    """The server processes of the clients' sessions connected to ``database`` (asked on a
    connection of its own, to the main database); not an autovacuum worker's."""
    with _postgres_connection(os.environ["DATABASE"]) as server:
        rows = server.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = %s AND backend_type = 'client backend'",
            (database,),
        ).fetchall()
    return {row["pid"] for row in rows}


def on_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's sessions: make test's PostgreSQL pass runs this")


async def test_a_session_postgresql_ended_is_replaced_at_the_next_call() -> None:
    on_postgresql()
    await sync_to_async(add_user)("alice", "alice-secret", is_staff=False)
    assert await stored_user("alice") is not None  # the database thread has its session
    await sync_to_async(drop_the_connection)()
    # The call that finds the session ended fails, as a request would; Django keeps the
    # connection, and without a request to replace it every later call would fail too.
    with pytest.raises(OperationalError):
        await stored_user("alice")
    for _ in range(2):
        user = await stored_user("alice")
        assert user is not None and user.name == "alice"


async def test_a_stopped_runtime_leaves_no_database_connection_open(
    make_runtime: Callable[..., CoordinatorRuntime],
) -> None:
    on_postgresql()
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
