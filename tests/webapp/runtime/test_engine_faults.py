"""An exception out of the engine (docs/operations.md, "Engine faults"): the runtime stops
serving, fails every parked reply, reloads the engine from its log and serves again, so that
the engine's state is once more what the log replays to, whatever the failing call had done
to it in memory."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import pytest

from coordinator_engine import (
    Errors,
    GroupCoordinator,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    MemoryLog,
    Protocol,
)
from tests.webapp.helpers import (
    REBALANCE_MS,
    SESSION_MS,
    TEST_CONFIG,
    Client,
    inject_engine_fault,
    join_new_member,
    stable_group,
    subscription,
)
from webapp.runtime.api import RuntimeNotReady
from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio

GROUP = "my-group"


def rejoin(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP,
        member_id=member_id,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="consumer",
        protocols=(Protocol(name="range", metadata=base64.b64decode(subscription("orders"))),),
    )


def replayed(runtime: CoordinatorRuntime, now_ms: int) -> GroupCoordinator:
    """An engine of its own over a copy of the runtime's log: what the log replays to."""
    return GroupCoordinator(TEST_CONFIG, MemoryLog(runtime._log.read()), now_ms=now_ms)  # type: ignore[union-attr]


async def test_a_fault_in_advance_reloads_the_engine_from_its_log_and_fails_parked_replies(
    runtime: CoordinatorRuntime,
    ws: Client,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    leader = await stable_group(ws)
    # A newcomer's JoinGroup parks (the group prepares a rebalance, waiting for the leader),
    # one through submit() and one through submit_nowait(), as a simulated consumer's.
    newcomer = await join_new_member(ws, GROUP, client_id="c2")
    parked = asyncio.ensure_future(runtime.submit(rejoin(newcomer)))
    other = await join_new_member(ws, GROUP, client_id="c3")
    answers: list[Any] = []
    failures: list[str] = []
    runtime.submit_nowait(rejoin(other), answers.append, failures.append)
    await asyncio.sleep(0)
    assert runtime.group(GROUP).state is GroupState.PREPARING_REBALANCE  # type: ignore[union-attr]
    assert not parked.done() and answers == []

    broken = inject_engine_fault(monkeypatch, runtime, "advance")
    with caplog.at_level(logging.WARNING, logger="webapp.runtime.coordinator_runtime"):
        clock.advance(1)
        runtime.tick()

        # Not serving: the parked replies fail, new requests are refused, until the reload.
        assert not runtime.ready and runtime.recovering
        with pytest.raises(RuntimeNotReady, match="reloading its state from its log"):
            await parked
        assert answers == [] and len(failures) == 1 and "reloading" in failures[0]
        with pytest.raises(RuntimeNotReady, match="reloading"):
            await runtime.submit(ListGroupsRequest())
        assert runtime.engine_faults == 1
        assert runtime.last_engine_fault is not None
        assert runtime.last_engine_fault["during"] == "advance"
        assert "injected engine fault" in runtime.last_engine_fault["error"]

        assert runtime.reload_task is not None
        await runtime.reload_task

    # Serving again, with a new engine whose state is the log's (the drift is gone, and so is
    # the rebalance in preparation that no record held: the group is Stable at generation 1).
    assert runtime.ready and not runtime.recovering
    assert runtime.coordinator is not broken
    view = runtime.group(GROUP)
    assert view == replayed(runtime, clock.now_ms).group(GROUP)
    assert view is not None and view.state is GroupState.STABLE
    assert (view.generation_id, list(view.members)) == (1, [leader])
    assert "reloaded_in_ms" in runtime.last_engine_fault
    heartbeat = HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=leader)
    assert (await runtime.submit(heartbeat)).error_code == Errors.NONE

    # The timer is armed again: the silent leader's session expires and the group empties.
    clock.advance(SESSION_MS + 1)
    runtime.tick()
    assert runtime.group(GROUP).state is GroupState.EMPTY  # type: ignore[union-attr]

    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    critical = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1 and critical[0].exc_info is not None
    assert "engine failed in advance" in critical[0].getMessage()
    assert any("reloaded from" in text for level, text in messages if level == logging.WARNING)


async def test_a_fault_in_handle_fails_that_request_and_the_runtime_reloads(
    runtime: CoordinatorRuntime,
    ws: Client,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leader = await stable_group(ws)
    inject_engine_fault(monkeypatch, runtime, "handle")
    heartbeat = HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=leader)
    with pytest.raises(RuntimeError, match="injected engine fault"):
        await runtime.submit(heartbeat)
    assert runtime.last_engine_fault is not None
    assert runtime.last_engine_fault["during"] == "handle(HeartbeatRequest)"
    with pytest.raises(RuntimeNotReady):
        await runtime.submit(heartbeat)
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert (await runtime.submit(heartbeat)).error_code == Errors.NONE
    assert runtime.group(GROUP) == replayed(runtime, clock.now_ms).group(GROUP)


async def test_a_reload_that_fails_is_tried_again(
    runtime: CoordinatorRuntime,
    ws: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await stable_group(ws)
    load = runtime._load_engine
    attempts: list[int] = []

    def flaky_load(now_ms: int) -> GroupCoordinator:
        attempts.append(now_ms)
        if len(attempts) == 1:
            raise OSError("disk hiccup")
        return load(now_ms)

    monkeypatch.setattr(runtime, "_load_engine", flaky_load)
    inject_engine_fault(monkeypatch, runtime, "trigger_rebalance")
    with pytest.raises(RuntimeError, match="injected"):
        runtime.trigger_rebalance(GROUP)
    assert runtime.reload_task is not None
    await asyncio.wait_for(runtime.reload_task, timeout=10)
    assert len(attempts) == 2 and runtime.ready
    assert runtime.last_engine_fault is not None
    assert "disk hiccup" in runtime.last_engine_fault["reload_error"]
    assert runtime.group_ids() == [GROUP]


async def test_a_runtime_stopped_while_reloading_stops_cleanly(
    runtime: CoordinatorRuntime, ws: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stable_group(ws)
    inject_engine_fault(monkeypatch, runtime, "cleanup")
    with pytest.raises(RuntimeError, match="injected"):
        runtime.cleanup()
    await runtime.stop()
    assert not runtime.ready
    assert runtime.reload_task is not None and runtime.reload_task.done()
