"""The history writer (webapp.runtime.history.HistoryWriter) on a PostgreSQL that drops its
connection (restarted, or the backend ended). No request or task surrounds the writer, and
Django replaces a broken connection only between requests and Celery tasks: the writer's batch,
one transaction, must leave the connection to be made again when it fails (Django's atomic
closes a connection it cannot roll back), and the next flush stores the batch. A SQLite file
drops no connections: this runs on make test's PostgreSQL pass. And the writer's stop stores
its last events whatever context it is called in, and an event PostgreSQL cannot hold as it is
(a NUL character in its group id) holds up no other; a batch whose flush the stop cancelled is
stored all the same."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import OperationalError, connection

from coordinator_engine.events import StateChanged
from tests.live_server import _postgres_connection
from webapp.models import GroupEvent
from webapp.runtime.events import SequencedEvent
from webapp.runtime.history import HistoryWriter, events_after

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def event(seq: int, group_id: str = "orders", reason: str = "joined") -> SequencedEvent:
    changed = StateChanged(
        group_id=group_id, at_ms=seq, from_state="Empty", to_state="Stable", reason=reason
    )
    return SequencedEvent(seq=seq, prev_seq=seq - 1, event=changed)


def drop_the_connection() -> None:
    """End this thread's database connection the way a server going away does."""
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    with _postgres_connection(os.environ["DATABASE"]) as server:
        server.execute("SELECT pg_terminate_backend(%s)", (backend,))


def close_the_connection() -> None:
    connection.close()


def stored_seqs() -> list[int]:
    return list(GroupEvent.objects.values_list("seq", flat=True))


async def test_a_batch_the_dropped_connection_failed_is_stored_by_the_next_flush() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's dropped connections: make test's PostgreSQL pass runs this")
    writer = HistoryWriter()
    writer.add(event(1))
    await writer.flush()
    # The writer's thread: the one sync_to_async runs the writer's batches in.
    await sync_to_async(drop_the_connection)()
    writer.add(event(2))
    writer.add(event(3))
    with pytest.raises(OperationalError, match="connection"):
        await writer.flush()
    assert writer.pending == 2
    await writer.flush()
    assert writer.pending == 0
    writer.add(event(4))
    await writer.flush()
    assert await sync_to_async(stored_seqs)() == [1, 2, 3, 4]
    # The writer's thread outlives the test: its connection would keep the test database open.
    await sync_to_async(close_the_connection)()


async def test_stopping_stores_the_last_events_whatever_context_the_caller_is_in() -> None:
    """A shutdown signal that interrupts a Django view runs the runtime's stop in a copy of the
    view's context, inside a thread-sensitive sync_to_async call: asgiref refuses another
    there. The writer's last flush must not be one."""
    writer = HistoryWriter()
    writer.start()
    writer.add(event(1))
    writer.add(event(2))

    async def stop_as_if_inside_a_view() -> None:
        SyncToAsync.deadlock_context.set(True)  # what sync_to_async sets while a view runs
        with pytest.raises(RuntimeError, match="would deadlock"):
            await sync_to_async(stored_seqs)()  # what the writer met before
        await writer.stop()

    await asyncio.get_running_loop().create_task(
        stop_as_if_inside_a_view(), context=contextvars.Context()
    )
    assert writer.pending == 0
    assert await sync_to_async(stored_seqs)() == [1, 2]
    await sync_to_async(close_the_connection)()


async def test_a_batch_whose_flush_was_cancelled_is_stored_by_the_next_one() -> None:
    """The runtime's stop cancels the writer's task, which may be flushing: its batch waits
    for the database thread, behind a Django view say, and the cancelled call never runs.
    The batch must go back to the queue, for stop's last flush."""
    writer = HistoryWriter()
    writer.start()
    (task,) = [task for task in asyncio.all_tasks() if task.get_name() == "history-writer"]
    view_runs, view_may_end = threading.Event(), threading.Event()

    def a_slow_view() -> None:  # holds the database thread, as a view's queries do
        view_runs.set()
        view_may_end.wait(10)

    view = asyncio.ensure_future(sync_to_async(a_slow_view)())
    await asyncio.to_thread(view_runs.wait, 10)
    writer.add(event(1))
    writer.add(event(2))
    while writer.pending:  # the task took the batch and waits for the thread
        await asyncio.sleep(0.01)
    stopping = asyncio.ensure_future(writer.stop())
    while not task.done():  # cancelled while its batch waited for the thread
        await asyncio.sleep(0.01)
    view_may_end.set()
    await view
    await stopping
    assert writer.pending == 0
    assert await sync_to_async(stored_seqs)() == [1, 2]
    await sync_to_async(close_the_connection)()


def stored_rows() -> list[tuple[int, str, str]]:
    return [
        (row.seq, row.group_id, row.payload["reason"]) for row in GroupEvent.objects.order_by("seq")
    ]


async def test_an_event_with_a_nul_character_holds_up_no_other_event() -> None:
    """Kafka takes any string as a group id, a NUL character too; PostgreSQL refuses one in
    text, and its refusal of the batch held every later event back for ever. It is stored with
    U+FFFD in place of the NUL there (as it is on SQLite), and read back by the group's id."""
    writer = HistoryWriter()
    for item in (event(1), event(2, group_id="a\x00b", reason="r\x00"), event(3)):
        writer.add(item)
    await writer.flush()
    assert writer.pending == 0
    nul = "\ufffd" if connection.vendor == "postgresql" else "\x00"
    assert await sync_to_async(stored_rows)() == [
        (1, "orders", "joined"),
        (2, f"a{nul}b", f"r{nul}"),
        (3, "orders", "joined"),
    ]
    found = await sync_to_async(events_after)("a\x00b", 0, 10)
    assert [(e["seq"], e["reason"]) for e in found] == [(2, f"r{nul}")]
    await sync_to_async(close_the_connection)()
