"""Seed 004's outage switches through the host: the ``handoff-switches`` staff action
(``POST /api/admin/handoff-switches``) turns the partition store or the service discovery down
and up through ``CoordinatorRuntime.set_handoff_switches``; while one is down a handoff group
keeps its assignment, back up it plans again. ``/healthz`` and ``/api/groups/<id>`` show the
switches, and an engine reloaded after a fault is told them again."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import AsyncClient

from tests.webapp.dashboard.test_actions import act, audit, signed_in
from tests.webapp.dashboard.test_feeds import next_message, open_feed
from tests.webapp.dashboard.test_handoff_groups import beat, pairs
from tests.webapp.helpers import Client, inject_engine_fault
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio

UP = {"partition_store": True, "discovery": True}


async def stable_a(runtime: CoordinatorRuntime, ws: Client) -> int:
    """Group "handoff": member a consumes both partitions of "events"; its epoch."""
    await runtime.create_topic("events", 2)
    first = await beat(ws, "a", 0)
    started = [{"topic": "events", "partition": p} for p in (0, 1)]
    assert (await beat(ws, "a", first["member_epoch"], started=started))["group_state"] == "Stable"
    return int(first["member_epoch"])


async def members(http: AsyncClient) -> dict[str, dict[str, Any]]:
    group = (await http.get("/api/groups/handoff")).json()
    return {m["member_id"]: m for m in group["members"]}


async def test_with_the_store_down_a_newcomer_gets_nothing_and_back_up_the_group_plans(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    epoch = await stable_a(runtime, ws)
    http = AsyncClient()
    assert (await http.get("/api/groups/handoff")).json()["switches"] == UP
    staff = await signed_in("ops")

    down = await act(staff, "handoff-switches", {"group_id": "handoff", "partition_store": False})
    assert down.status_code == 200, down.content
    assert down.json() == {
        "ok": True,
        "result": "partition store: down; discovery: up: "
        "handoff groups keep their current assignment until both are up",
        "switches": {"partition_store": False, "discovery": True},
    }
    assert runtime.coordinator.partition_store_available is False
    assert (await http.get("/api/groups/handoff")).json()["switches"] == {
        "partition_store": False,
        "discovery": True,
    }
    health = (await http.get("/healthz")).json()
    assert health["handoff_switches"] == {"partition_store": False, "discovery": True}

    joined = await beat(ws, "b", 0)
    assert (joined["group_state"], joined["assignment"], joined["start"]) == ("Stable", [], [])
    assert pairs((await beat(ws, "a", epoch))["assignment"]) == [["events", 0], ["events", 1]]
    now = await members(http)
    assert now["a"]["assignment"] == now["a"]["owned"] == [["events", 0], ["events", 1]]
    assert now["b"]["assignment"] == now["b"]["to_start"] == [] and now["a"]["to_close"] == []

    up = await act(staff, "handoff-switches", {"group_id": "handoff", "partition_store": True})
    assert up.status_code == 200, up.content
    assert up.json()["result"] == "partition store: up; discovery: up: handoff groups plan again"
    view = runtime.group("handoff")
    assert view is not None and view.state.value == "Closing"
    now = await members(http)
    assert now["a"]["to_close"] == [["events", 1]] and now["b"]["to_start"] == [["events", 1]]
    assert (await http.get("/healthz")).json()["handoff_switches"] == UP
    rows = await audit()
    assert [(r.username, r.action, r.group_id, r.ok) for r in rows] == [
        ("ops", "handoff-switches", "handoff", True),
        ("ops", "handoff-switches", "handoff", True),
    ]
    assert rows[0].parameters == {"group_id": "handoff", "partition_store": False}


async def test_discovery_down_then_the_store_down_needs_both_back_before_a_plan(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_a(runtime, ws)
    staff = await signed_in("ops")
    both = await act(staff, "handoff-switches", {"partition_store": False, "discovery": False})
    assert both.json()["switches"] == {"partition_store": False, "discovery": False}
    await beat(ws, "b", 0)
    half = await act(staff, "handoff-switches", {"discovery": True})
    assert half.json()["switches"] == {"partition_store": False, "discovery": True}
    view = runtime.group("handoff")
    assert view is not None and view.state.value == "Stable"
    await act(staff, "handoff-switches", {"partition_store": True})
    view = runtime.group("handoff")
    assert view is not None and view.state.value == "Closing"


async def test_the_switches_are_refused_without_staff_and_for_bad_input(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_a(runtime, ws)
    anonymous = AsyncClient(enforce_csrf_checks=True)
    refused = await anonymous.post(
        "/api/admin/handoff-switches",
        data={"partition_store": False},
        content_type="application/json",
    )
    assert refused.status_code == 401
    viewer = await signed_in("viewer", staff=False)
    forbidden = await act(viewer, "handoff-switches", {"partition_store": False})
    assert forbidden.status_code == 403
    assert forbidden.json()["error"]["code"] == "staff_only"
    assert runtime.handoff_switches == UP
    assert runtime.coordinator.partition_store_available is True

    staff = await signed_in("ops")
    nothing = await act(staff, "handoff-switches", {"group_id": "handoff"})
    assert (nothing.status_code, nothing.json()["error"]) == (
        400,
        "give partition_store or discovery (true: up, false: down)",
    )
    word = await act(staff, "handoff-switches", {"discovery": "down"})
    assert (word.status_code, word.json()["error"]) == (
        400,
        "discovery must be true (up) or false (down)",
    )
    assert runtime.handoff_switches == UP
    assert [(r.action, r.ok) for r in await audit()] == [
        ("handoff-switches", False),
        ("handoff-switches", False),
    ]


async def test_an_engine_reloaded_after_a_fault_is_told_the_switches_again(
    runtime: CoordinatorRuntime, ws: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stable_a(runtime, ws)
    assert runtime.set_handoff_switches(partition_store=False) == {
        "partition_store": False,
        "discovery": True,
    }
    broken = inject_engine_fault(monkeypatch, runtime, "cleanup")
    with pytest.raises(RuntimeError, match="injected engine fault"):
        runtime.cleanup()
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert runtime.coordinator is not broken
    assert runtime.coordinator.partition_store_available is False
    assert runtime.coordinator.discovery_available is True
    # The reloaded engine keeps the assignment: a newcomer still gets nothing.
    joined = await beat(ws, "b", 0)
    assert (joined["group_state"], joined["assignment"]) == ("Stable", [])
    runtime.set_handoff_switches(partition_store=True)
    view = runtime.group("handoff")
    assert view is not None and view.state.value == "Closing"


async def test_a_handoff_groups_feed_shows_the_switches_in_its_snapshot_and_each_tick(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_a(runtime, ws)
    runtime.set_handoff_switches(discovery=False)
    feed, snapshot = await open_feed("/ws/dashboard/groups/handoff/")
    try:
        assert snapshot["group"]["switches"] == {"partition_store": True, "discovery": False}
        assert (await next_message(feed, "offsets"))["switches"] == {
            "partition_store": True,
            "discovery": False,
        }
        runtime.set_handoff_switches(discovery=True)
        assert (await next_message(feed, "offsets"))["switches"] == UP
    finally:
        await feed.disconnect()
