"""Control messages over the (in-memory) channel layer: a caller asks the serving runtime to
expire offsets, compact its log or report its status, and gets the runtime's numbers or a
failure in words (``webapp.runtime.control``). tests/webapp/housekeeping runs the same path
with a real Redis, worker and beat."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.layers import get_channel_layer

from coordinator_engine import GroupCoordinator, MemoryLog
from webapp.runtime import control
from webapp.runtime.clock import ManualClock
from webapp.runtime.control import CONTROL_CHANNEL, ControlError, RuntimeUnavailable
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

from ..helpers import TEST_CONFIG, Client, commit_offsets, stable_group

pytestmark = pytest.mark.asyncio


def replayed(entries: Any, now_ms: int) -> tuple[Any, Any]:
    """What ``entries`` replay to: the group and its committed offsets."""
    engine = GroupCoordinator(TEST_CONFIG, MemoryLog(entries), now_ms=now_ms)
    return engine.group("g"), engine.committed_offsets("g")


async def ask(command: str, timeout_s: float = 2.0) -> dict[str, Any]:
    return await control._call(get_channel_layer(), command, timeout_s)


async def test_expire_offsets_removes_expired_offsets_and_tombstones_the_empty_group(
    runtime: CoordinatorRuntime, ws: Client, clock: ManualClock
) -> None:
    await ws.call(
        "OffsetCommit",
        {"group_id": "simple", "offsets": [{"topic": "orders", "partition": 0, "offset": 5}]},
    )
    assert await ask("expire_offsets") == {"offsets_expired": 0, "groups_tombstoned": 0}
    clock.advance(runtime.config.offsets_retention_ms)
    assert await ask("expire_offsets") == {"offsets_expired": 1, "groups_tombstoned": 1}
    assert runtime.group("simple") is None
    # Idempotent: nothing more to do.
    assert await ask("expire_offsets") == {"offsets_expired": 0, "groups_tombstoned": 0}


async def test_compact_log_drops_superseded_records_and_keeps_the_state(
    runtime: CoordinatorRuntime, ws: Client, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(control, "COMPACTION_SLICE", 3)  # several slices, the loop free between
    member_id = await stable_group(ws, "g")
    for offset in range(10):
        offsets = [{"topic": "orders", "partition": 0, "offset": offset}]
        await commit_offsets(ws, member_id, offsets, group_id="g")
    log = runtime.record_log
    before_state = replayed(log.read(), clock.now_ms)
    records = log.count()

    result = await ask("compact_log")

    assert result["records_before"] == records
    assert result["records_dropped"] >= 9  # the older commits of the partition at least
    assert result["records_after"] == records - result["records_dropped"] == log.count()
    assert replayed(log.read(), clock.now_ms) == before_state
    again = await ask("compact_log")
    assert again["records_dropped"] == 0
    # The runtime serves on: a commit after compaction lands as usual.
    await commit_offsets(ws, member_id, [{"topic": "orders", "partition": 0, "offset": 99}], "g")
    assert runtime.committed_offsets("g")[("orders", 0)].offset == 99


async def test_status_and_unknown_commands(runtime: CoordinatorRuntime) -> None:
    status = await ask("status")
    assert set(status) == {"groups", "records", "last_seq"}
    with pytest.raises(ControlError, match=r"unknown control command 'defragment'"):
        await ask("defragment")
    with pytest.raises(ValueError, match="unknown control command"):
        control.call_runtime("defragment")


async def test_a_runtime_that_does_not_serve_answers_unavailable(
    runtime: CoordinatorRuntime,
) -> None:
    await runtime.stop()
    layer = get_channel_layer()
    # The stopped runtime no longer reads the channel: answer as it would while starting.
    server = asyncio.ensure_future(control.serve_control(runtime, layer))
    try:
        with pytest.raises(RuntimeUnavailable, match="could not run 'expire_offsets'"):
            await ask("expire_offsets")
    finally:
        server.cancel()


async def test_no_runtime_answering_is_unavailable_in_words() -> None:
    with pytest.raises(RuntimeUnavailable, match=r"no coordinator runtime answered .* 0.2 s"):
        await ask("expire_offsets", timeout_s=0.2)


async def test_malformed_and_stale_requests_are_dropped_and_the_server_goes_on(
    runtime: CoordinatorRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    layer = get_channel_layer()
    await layer.send(CONTROL_CHANNEL, {"type": "control.request", "command": "status"})
    reply_channel = await layer.new_channel()
    await layer.send(
        CONTROL_CHANNEL,
        {
            "type": "control.request",
            "command": "expire_offsets",
            "request_id": "old",
            "reply_channel": reply_channel,
            "deadline_ms": int(time.time() * 1000) - 1,
        },
    )
    assert (await ask("status"))["groups"] == 0
    assert "dropped a malformed request" in caplog.text
    assert "its sender gave up waiting" in caplog.text
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await layer.receive(reply_channel)
