"""The runtime's group commit (``CoordinatorRuntime.batch``; the module docstring, "Group
commit"): the records of every engine call inside a batch are one transaction of the log, and
nothing they caused (other callers' answers, the engine's events) is released before it has
committed; a batch that fails to commit stores and answers nothing, and the engine reloads."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from coordinator_engine import (
    Errors,
    JoinGroupRequest,
    OffsetCommitRequest,
    PartitionOffset,
    Protocol,
)
from coordinator_engine.events import OffsetsCommitted
from tests.webapp.helpers import (
    REBALANCE_MS,
    SESSION_MS,
    Client,
    join_new_member,
    stable_group,
    subscription,
)
from webapp.runtime.api import GroupCommitFailed, RuntimeNotReady
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.runtime.events import SequencedEvent

pytestmark = pytest.mark.asyncio

GROUP = "my-group"


def commit(group_id: str, partition: int, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group_id,
        offsets=(PartitionOffset(topic="orders", partition=partition, offset=offset),),
    )


def rejoin(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP,
        member_id=member_id,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="consumer",
        protocols=(Protocol(name="range", metadata=base64.b64decode(subscription("orders"))),),
    )


def stored(log_path: Path) -> int:
    """How many records another connection sees in the log's file."""
    conn = sqlite3.connect(log_path)
    try:
        (count,) = conn.execute("SELECT COUNT(*) FROM records").fetchone()
    finally:
        conn.close()
    return int(count)


def fail_inserts_of(log_path: Path, group_id: str) -> None:
    """From now on SQLite refuses to store any record of ``group_id`` (a storage fault that
    only the group commit meets)."""
    conn = sqlite3.connect(log_path)
    try:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON records WHEN instr(NEW.key, "
            f"x'{group_id.encode().hex()}') > 0 BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
        conn.commit()
    finally:
        conn.close()


async def test_a_batch_is_one_transaction_and_its_events_follow_its_commit(
    runtime: CoordinatorRuntime, log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = runtime.record_log
    writes: list[tuple[str, int]] = []
    write = log._write

    def counted(batch: list[Any], what: str) -> None:
        writes.append((what, len(batch)))
        write(batch, what)

    monkeypatch.setattr(log, "_write", counted)
    events: list[tuple[SequencedEvent, int]] = []
    runtime.add_listener(lambda item: events.append((item, stored(log_path))))
    before = stored(log_path)

    with runtime.batch():
        answers = [await runtime.submit(commit("g", p, 100 + p)) for p in range(5)]
        # Answered (to the batch's owner, who holds the answers), not stored, not published.
        assert [a.partitions[0].error_code for a in answers] == [Errors.NONE] * 5
        assert stored(log_path) == before and events == []

    assert writes == [("group commit", 5)]
    assert stored(log_path) == before + 5
    assert [type(item.event) for item, _ in events] == [OffsetsCommitted] * 5
    assert all(count == before + 5 for _, count in events)  # published after the COMMIT
    assert [item.seq for item, _ in events] == sorted(item.seq for item, _ in events)
    offsets = runtime.committed_offsets("g")
    assert {p: offsets[("orders", p)].offset for p in range(5)} == {p: 100 + p for p in range(5)}


async def test_a_parked_reply_completed_inside_a_batch_is_answered_after_its_commit(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    leader = await stable_group(ws)
    newcomer = await join_new_member(ws, GROUP, client_id="c2")
    answers: list[Any] = []
    failures: list[str] = []

    def answered(response: Any) -> None:
        answers.append(response)
        # A simulated consumer acts on its answer at once, calling the engine again.
        runtime.submit_nowait(commit("after", 0, 1), lambda _: None)

    runtime.submit_nowait(rejoin(newcomer), answered, failures.append)
    other = await join_new_member(ws, GROUP, client_id="c3")
    parked = asyncio.ensure_future(runtime.submit(rejoin(other)))
    await asyncio.sleep(0)
    events: list[SequencedEvent] = []
    runtime.add_listener(events.append)

    with runtime.batch():
        # The leader's rejoin ends the join phase: the newcomers' replies complete here...
        joined = await runtime.submit(rejoin(leader))
        assert joined.error_code == Errors.NONE and joined.generation_id == 2
        assert answers == []  # ...and are held until the batch has committed
        assert events == []
    assert [(a.error_code, a.generation_id) for a in answers] == [(Errors.NONE, 2)]
    assert failures == []
    # The batch's events are published before the answers are released: what an answer's
    # callback caused comes after them.
    assert [item.event.group_id for item in events][-1] == "after"
    assert {item.event.group_id for item in events[:-1]} == {GROUP}
    assert [item.seq for item in events] == sorted(item.seq for item in events)
    answer = await parked
    assert (answer.error_code, answer.generation_id) == (Errors.NONE, 2)


async def test_a_batch_that_fails_to_commit_answers_nothing_and_the_engine_reloads(
    runtime: CoordinatorRuntime, ws: Client, log_path: Path
) -> None:
    leader = await stable_group(ws)
    newcomer = await join_new_member(ws, GROUP, client_id="c2")
    answers: list[Any] = []
    failures: list[str] = []
    runtime.submit_nowait(rejoin(newcomer), answers.append, failures.append)
    other = await join_new_member(ws, GROUP, client_id="c3")
    parked = asyncio.ensure_future(runtime.submit(rejoin(other)))
    await asyncio.sleep(0)
    events: list[SequencedEvent] = []
    runtime.add_listener(events.append)
    fail_inserts_of(log_path, "doomed")
    before = stored(log_path)

    with pytest.raises(GroupCommitFailed, match="group commit failed") as info, runtime.batch():
        assert (await runtime.submit(commit("doomed", 0, 7))).partitions[0].error_code == 0
        assert (await runtime.submit(rejoin(leader))).error_code == Errors.NONE
        assert (await runtime.submit(commit("doomed", 1, 8))).partitions[0].error_code == 0
    assert isinstance(info.value, RuntimeNotReady)

    # Nothing of the batch is stored, published or answered; the engine reloads from the log.
    assert stored(log_path) == before
    assert events == []
    assert answers == [] and len(failures) == 1 and "reloading" in failures[0]
    with pytest.raises(RuntimeNotReady, match="reloading"):
        await parked
    assert runtime.engine_faults == 1 and runtime.last_engine_fault is not None
    assert runtime.last_engine_fault["during"] == "group commit"
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert runtime.ready
    assert runtime.committed_offsets("doomed") == {}
    view = runtime.group(GROUP)
    assert view is not None and view.generation_id == 1  # the rejoin never happened
    # Serving again: batches of other groups commit.
    with runtime.batch():
        assert (await runtime.submit(commit("fine", 0, 1))).partitions[0].error_code == 0
    assert runtime.committed_offsets("fine")[("orders", 0)].offset == 1


async def test_a_batch_refuses_to_nest_and_refuses_a_block_that_awaited(
    runtime: CoordinatorRuntime,
) -> None:
    with runtime.batch(), pytest.raises(RuntimeError, match="do not nest"), runtime.batch():
        pass  # pragma: no cover
    with pytest.raises(RuntimeError, match="awaited while the batch was open"), runtime.batch():
        await runtime.submit(commit("g", 0, 1))
        await asyncio.sleep(0)
    # It was committed all the same: what others may have been told meanwhile stays true.
    assert runtime.committed_offsets("g")[("orders", 0)].offset == 1
    assert runtime.ready and runtime.engine_faults == 0


async def test_a_batch_whose_block_raises_stores_nothing_and_the_engine_reloads(
    runtime: CoordinatorRuntime, log_path: Path
) -> None:
    before = stored(log_path)
    with pytest.raises(ValueError, match="a bug"), runtime.batch():
        await runtime.submit(commit("g", 0, 1))
        raise ValueError("a bug")
    assert stored(log_path) == before
    assert runtime.engine_faults == 1 and not runtime.ready
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert runtime.committed_offsets("g") == {}
