"""Handoff groups through the host: a websocket consumer speaks HandoffHeartbeat, the
topic registry is the partition store, and the JSON API shows the group's state and each
member's sets as the handoff goes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import AsyncClient

from tests.webapp.helpers import Client
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio


async def beat(ws: Client, member: str, epoch: int, **confirmed: Any) -> dict[str, Any]:
    return await ws.call(
        "HandoffHeartbeat",
        {
            "group_id": "handoff",
            "member_id": member,
            "member_epoch": epoch,
            "session_timeout_ms": 10000,
            "topics": ["events"],
            **confirmed,
        },
    )


def pairs(partitions: list[dict[str, Any]]) -> list[list[Any]]:
    return sorted([p["topic"], p["partition"]] for p in partitions)


async def detail(http: AsyncClient) -> dict[str, Any]:
    response = await http.get("/api/groups/handoff")
    assert response.status_code == 200
    return response.json()


async def test_a_partition_moves_closed_first_then_started_as_the_api_shows(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    http = AsyncClient()
    await runtime.create_topic("events", 2)
    first = await beat(ws, "a", 0)
    assert first["error_code"] == 0
    assert pairs(first["start"]) == [["events", 0], ["events", 1]]
    epoch = first["member_epoch"]
    started = [{"topic": "events", "partition": p} for p in (0, 1)]
    assert (await beat(ws, "a", epoch, started=started))["group_state"] == "Stable"

    # b joins: a must close one partition before b may start it.
    joined = await beat(ws, "b", 0)
    assert joined["start"] == []
    summary = (await http.get("/api/groups")).json()["groups"]
    assert [(g["group_id"], g["kind"], g["state"]) for g in summary] == [
        ("handoff", "handoff", "Closing")
    ]
    group = await detail(http)
    members = {m["member_id"]: m for m in group["members"]}
    assert members["a"]["to_close"] == [["events", 1]]
    assert members["a"]["owned"] == [["events", 0], ["events", 1]]
    assert members["b"]["to_start"] == [["events", 1]] and members["b"]["owned"] == []
    assert members["a"]["connection"] == members["b"]["connection"] == "websocket"

    # a closes it (its offset committed first, as the mode asks); b may start it.
    await ws.call(
        "OffsetCommit",
        {
            "group_id": "handoff",
            "member_id": "a",
            "offsets": [{"topic": "events", "partition": 1, "offset": 42}],
        },
    )
    closing = await beat(ws, "a", joined["member_epoch"], closed=[started[1]])
    assert closing["error_code"] == 0
    granted = await beat(ws, "b", joined["member_epoch"])
    assert pairs(granted["start"]) == [["events", 1]]
    assert (await detail(http))["state"] == "Starting"
    done = await beat(ws, "b", granted["member_epoch"], started=[started[1]])
    assert done["group_state"] == "Stable"
    group = await detail(http)
    members = {m["member_id"]: m for m in group["members"]}
    assert (members["a"]["owned"], members["b"]["owned"]) == ([["events", 0]], [["events", 1]])
    assert [(o["partition"], o["offset"]) for o in group["offsets"]] == [(1, 42)]


async def test_a_topic_grown_in_the_registry_is_planned_for_the_handoff_group(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("events", 1)
    first = await beat(ws, "a", 0)
    assert pairs(first["start"]) == [["events", 0]]
    await runtime.update_topic("events", partitions=3)
    grown = await beat(ws, "a", first["member_epoch"])
    assert pairs(grown["assignment"]) == [["events", 0], ["events", 1], ["events", 2]]
