"""A handoff group's service discovery from the runtime's registry of connections: a handoff
member lives as long as the websocket it heartbeats on; closing the socket makes it leave at
once, unless the discovery is switched off, when the departure waits for it to come back."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator_engine.handoff import HandoffGroupView
from tests.webapp.helpers import Client, connect, hold_the_reload, inject_engine_fault, subscription
from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio


async def beat(ws: Client, member: str, epoch: int, **confirmed: Any) -> dict[str, Any]:
    return await ws.call(
        "HandoffHeartbeat",
        {
            "group_id": "handoff",
            "member_id": member,
            "member_epoch": epoch,
            "session_timeout_ms": 30000,
            "topics": ["events"],
            **confirmed,
        },
    )


def tps(*partitions: int) -> list[dict[str, Any]]:
    return [{"topic": "events", "partition": p} for p in partitions]


def pairs(partitions: list[dict[str, Any]]) -> list[int]:
    return sorted(p["partition"] for p in partitions)


def members(runtime: CoordinatorRuntime) -> dict[str, list[int]]:
    view = runtime.group("handoff")
    assert isinstance(view, HandoffGroupView)
    return {m: [tp.partition for tp in v.owned] for m, v in view.members.items()}


async def two_members(runtime: CoordinatorRuntime, ws: Client, other: Client) -> None:
    """a (on ``ws``) and b (on ``other``) share the 2 partitions of "events", Stable."""
    await runtime.create_topic("events", 2)
    first = await beat(ws, "a", 0)
    await beat(ws, "a", first["member_epoch"], started=tps(0, 1))
    joined = await beat(other, "b", 0)
    closing = await beat(ws, "a", joined["member_epoch"])
    assert pairs(closing["close"]) == [1]
    await beat(ws, "a", closing["member_epoch"], closed=tps(1))
    granted = await beat(other, "b", closing["member_epoch"])
    assert pairs(granted["start"]) == [1]
    done = await beat(other, "b", granted["member_epoch"], started=tps(1))
    assert done["group_state"] == "Stable"
    assert members(runtime) == {"a": [0], "b": [1]}


async def test_closing_the_socket_removes_its_handoff_member_at_once(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    other, communicator = await connect()
    await two_members(runtime, ws, other)
    removed: list[Any] = []
    runtime.add_listener(lambda item: removed.append(item.event))

    await communicator.disconnect()

    # No time passed: b is gone (no session timeout waited for), a is granted partition 1.
    assert members(runtime) == {"a": [0, 1]}
    assert [(e.member_id, e.reason) for e in removed if e.type == "MemberRemoved"] == [
        ("b", "left")
    ]
    answer = await beat(ws, "a", 2)
    assert pairs(answer["start"]) == [1] and pairs(answer["assignment"]) == [0, 1]
    assert runtime.departures_pending == []


async def test_with_discovery_off_a_closed_socket_changes_nothing_until_it_is_back(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    other, communicator = await connect()
    await two_members(runtime, ws, other)
    # What the admin's "discovery unreachable" switch does, through the runtime's engine calls.
    runtime._call_engine(
        "set_discovery_available", lambda engine, now: engine.set_discovery_available(False, now)
    )

    await communicator.disconnect()

    assert members(runtime) == {"a": [0], "b": [1]}
    assert runtime.departures_pending == [("handoff", "b")]
    answer = await beat(ws, "a", 2)
    assert answer["start"] == [] and answer["group_state"] == "Stable"

    runtime._call_engine(
        "set_discovery_available", lambda engine, now: engine.set_discovery_available(True, now)
    )

    assert runtime.departures_pending == []
    assert members(runtime) == {"a": [0, 1]}
    answer = await beat(ws, "a", answer["member_epoch"])
    assert pairs(answer["start"]) == [1]


async def test_a_classic_member_stays_when_its_socket_closes(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("events", 2)
    other, communicator = await connect()
    reply = await other.call(
        "JoinGroup",
        {
            "group_id": "classic",
            "session_timeout_ms": 30000,
            "rebalance_timeout_ms": 30000,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": subscription("events")}],
            "require_known_member_id": False,
        },
    )
    assert reply["error_code"] == 0
    await communicator.disconnect()
    view = runtime.group("classic")
    assert view is not None and set(view.members) == {reply["member_id"]}


async def test_the_registry_outlives_an_engine_reload_and_waits_for_it(
    runtime: CoordinatorRuntime,
    ws: Client,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other, communicator = await connect()
    third, third_communicator = await connect()
    await two_members(runtime, ws, other)
    joined = await beat(third, "c", 0)
    assert joined["error_code"] == 0
    inject_engine_fault(monkeypatch, runtime, "advance")
    loaded = hold_the_reload(monkeypatch, runtime)
    clock.advance(1)
    runtime.tick()
    assert runtime.recovering

    # c's socket closes while the engine reloads: its departure waits for the engine.
    await third_communicator.disconnect()
    assert runtime.departures_pending == [("handoff", "c")]
    loaded.set()
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert runtime.departures_pending == []
    assert set(members(runtime)) == {"a", "b"}

    # b was registered before the reload: closing its socket still removes it at once.
    await communicator.disconnect()
    assert members(runtime) == {"a": [0, 1]}
