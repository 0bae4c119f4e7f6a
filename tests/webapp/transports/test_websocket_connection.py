"""The websocket consumer protocol at /ws/consumer/, API by API, through Channels'
WebsocketCommunicator and the real ASGI application, with exact reply JSON."""

from __future__ import annotations

import re

import pytest

from coordinator_engine import partition_for
from tests.webapp.helpers import (
    REBALANCE_MS,
    SESSION_MS,
    START_MS,
    Client,
    assignment,
    commit_offsets,
    join_new_member,
    join_request,
    stable_group,
    subscription,
)
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio

MEMBER_ID = re.compile(r"^c1-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def test_find_coordinator_answers_this_node_and_the_groups_coordinator_partition(
    ws: Client,
) -> None:
    await ws.send("FindCoordinator", {"key": "my-group"}, frame_id=7)
    assert await ws.recv() == {
        "id": 7,
        "api": "FindCoordinator",
        "response": {
            "error_code": 0,
            "node_id": 0,
            "host": "127.0.0.1",
            "port": 8000,
            "coordinator_partition": 12,  # Kafka's partitionFor("my-group")
        },
    }
    assert partition_for("my-group") == 12


async def test_find_coordinator_of_a_transactional_id_is_an_invalid_request(ws: Client) -> None:
    response = await ws.call("FindCoordinator", {"key": "tx", "key_type": 1})
    assert response == {
        "error_code": 42,
        "node_id": -1,
        "host": "",
        "port": -1,
        "coordinator_partition": -1,
    }


async def test_metadata_answers_partition_counts_from_the_topic_registry(
    ws: Client, runtime: CoordinatorRuntime
) -> None:
    await runtime.create_topic("orders", 3)
    await runtime.create_topic("audit", 1)
    assert await ws.call("Metadata", {"topics": ["orders", "missing", "orders"]}) == {
        "topics": [
            {"name": "orders", "error_code": 0, "partitions": 3},
            {"name": "missing", "error_code": 3, "partitions": 0},
        ]
    }
    assert await ws.call("Metadata", {}) == {
        "topics": [
            {"name": "audit", "error_code": 0, "partitions": 1},
            {"name": "orders", "error_code": 0, "partitions": 3},
        ]
    }


async def test_join_group_asks_a_new_member_to_rejoin_with_its_id_then_makes_it_leader(
    ws: Client,
) -> None:
    await ws.send("JoinGroup", join_request("my-group"), frame_id=1)
    first = await ws.recv()
    member_id = first["response"]["member_id"]
    assert MEMBER_ID.match(member_id)
    assert first == {
        "id": 1,
        "api": "JoinGroup",
        "response": {
            "error_code": 79,  # MEMBER_ID_REQUIRED (KIP-394)
            "generation_id": -1,
            "protocol_type": None,
            "protocol_name": None,
            "leader": "",
            "member_id": member_id,
            "members": [],
            "skip_assignment": False,
        },
    }
    await ws.send("JoinGroup", join_request("my-group", member_id), frame_id=2)
    assert await ws.recv() == {
        "id": 2,
        "api": "JoinGroup",
        "response": {
            "error_code": 0,
            "generation_id": 1,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": member_id,
            "member_id": member_id,
            "members": [
                {
                    "member_id": member_id,
                    "group_instance_id": None,
                    "metadata": subscription("orders"),
                }
            ],
            "skip_assignment": False,
        },
    }


async def test_sync_group_hands_the_leader_its_assignment(ws: Client) -> None:
    member_id = await join_new_member(ws, "my-group")
    await ws.call("JoinGroup", join_request("my-group", member_id))
    mine = assignment(("orders", 0), ("orders", 1))
    await ws.send(
        "SyncGroup",
        {
            "group_id": "my-group",
            "generation_id": 1,
            "member_id": member_id,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": member_id, "assignment": mine}],
        },
        frame_id=3,
    )
    assert await ws.recv() == {
        "id": 3,
        "api": "SyncGroup",
        "response": {
            "error_code": 0,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignment": mine,
        },
    }


async def test_heartbeat_in_a_stable_group_and_with_an_old_generation(ws: Client) -> None:
    member_id = await stable_group(ws)
    request = {"group_id": "my-group", "generation_id": 1, "member_id": member_id}
    assert await ws.call("Heartbeat", request) == {"error_code": 0}
    assert await ws.call("Heartbeat", {**request, "generation_id": 0}) == {"error_code": 22}
    assert await ws.call("Heartbeat", {**request, "member_id": "nobody"}) == {"error_code": 25}


async def test_offset_commit_then_fetch(ws: Client) -> None:
    member_id = await stable_group(ws)
    committed = await commit_offsets(
        ws,
        member_id,
        [
            {"topic": "orders", "partition": 0, "offset": 42, "metadata": "m"},
            {"topic": "orders", "partition": 1, "offset": 7, "leader_epoch": 3},
        ],
    )
    assert committed == {
        "partitions": [
            {"topic": "orders", "partition": 0, "error_code": 0},
            {"topic": "orders", "partition": 1, "error_code": 0},
        ]
    }
    fetched = await ws.call(
        "OffsetFetch",
        {
            "group_id": "my-group",
            "partitions": [
                {"topic": "orders", "partition": 1},
                {"topic": "orders", "partition": 5},
            ],
        },
    )
    assert fetched == {
        "error_code": 0,
        "partitions": [
            {
                "topic": "orders",
                "partition": 1,
                "offset": 7,
                "metadata": "",
                "leader_epoch": 3,
                "error_code": 0,
            },
            {
                "topic": "orders",
                "partition": 5,
                "offset": -1,
                "metadata": "",
                "leader_epoch": -1,
                "error_code": 0,
            },
        ],
    }
    every = await ws.call("OffsetFetch", {"group_id": "my-group"})
    assert [(p["partition"], p["offset"]) for p in every["partitions"]] == [(0, 42), (1, 7)]


async def test_leave_group_then_offset_delete_and_delete_groups(ws: Client) -> None:
    member_id = await stable_group(ws)
    await commit_offsets(
        ws,
        member_id,
        [
            {"topic": "orders", "partition": 0, "offset": 42},
            {"topic": "orders", "partition": 1, "offset": 9},
        ],
    )
    assert await ws.call(
        "LeaveGroup",
        {"group_id": "my-group", "members": [{"member_id": member_id, "reason": "shutdown"}]},
    ) == {
        "error_code": 0,
        "members": [{"member_id": member_id, "group_instance_id": None, "error_code": 0}],
    }
    assert await ws.call(
        "OffsetDelete",
        {"group_id": "my-group", "partitions": [{"topic": "orders", "partition": 0}]},
    ) == {"error_code": 0, "partitions": [{"topic": "orders", "partition": 0, "error_code": 0}]}
    # orders-1 keeps the Empty group alive until DeleteGroups.
    assert await ws.call("DeleteGroups", {"group_ids": ["my-group", "unknown"]}) == {
        "results": [
            {"group_id": "my-group", "error_code": 0},
            {"group_id": "unknown", "error_code": 69},  # GROUP_ID_NOT_FOUND
        ]
    }


async def test_describe_groups_shows_members_with_metadata_and_assignment(ws: Client) -> None:
    member_id = await stable_group(ws)
    assert await ws.call("DescribeGroups", {"group_ids": ["my-group", "other"]}) == {
        "groups": [
            {
                "error_code": 0,
                "group_id": "my-group",
                "group_state": "Stable",
                "protocol_type": "consumer",
                "protocol_data": "range",
                "members": [
                    {
                        "member_id": member_id,
                        "group_instance_id": None,
                        "client_id": "c1",
                        "client_host": "",
                        "member_metadata": subscription("orders"),
                        "member_assignment": assignment(("orders", 0), ("orders", 1)),
                    }
                ],
            },
            {
                "error_code": 0,
                "group_id": "other",
                "group_state": "Dead",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            },
        ]
    }


async def test_list_groups_with_and_without_a_state_or_type_filter(ws: Client) -> None:
    await stable_group(ws, "b-group")
    await ws.call(
        "OffsetCommit",
        {"group_id": "a-group", "offsets": [{"topic": "orders", "partition": 0, "offset": 1}]},
    )
    a_group = {
        "group_id": "a-group",
        "protocol_type": "",
        "group_state": "Empty",
        "group_type": "classic",
    }
    b_group = {
        "group_id": "b-group",
        "protocol_type": "consumer",
        "group_state": "Stable",
        "group_type": "classic",
    }
    assert await ws.call("ListGroups", {}) == {"error_code": 0, "groups": [a_group, b_group]}
    assert await ws.call("ListGroups", {"states_filter": ["Stable"]}) == {
        "error_code": 0,
        "groups": [b_group],
    }
    assert await ws.call("ListGroups", {"types_filter": ["classic"]}) == {
        "error_code": 0,
        "groups": [a_group, b_group],
    }
    assert await ws.call("ListGroups", {"types_filter": ["handoff"]}) == {
        "error_code": 0,
        "groups": [],
    }


async def test_a_parked_join_group_does_not_hold_up_a_heartbeat_on_the_same_socket(
    ws: Client,
) -> None:
    leader = await stable_group(ws)
    newcomer = await join_new_member(ws, "my-group", client_id="c2")
    # The newcomer's JoinGroup parks: the group waits for the leader to rejoin.
    parked = await ws.send("JoinGroup", join_request("my-group", newcomer, client_id="c2"))
    assert await ws.nothing()
    heartbeat = await ws.send(
        "Heartbeat", {"group_id": "my-group", "generation_id": 1, "member_id": leader}
    )
    assert await ws.recv() == {
        "id": heartbeat,
        "api": "Heartbeat",
        "response": {"error_code": 27},  # REBALANCE_IN_PROGRESS: rejoin
    }
    rejoin = await ws.send("JoinGroup", join_request("my-group", leader))
    replies = {reply["id"]: reply["response"] for reply in [await ws.recv(), await ws.recv()]}
    assert set(replies) == {parked, rejoin}
    assert replies[parked]["generation_id"] == replies[rejoin]["generation_id"] == 2
    assert replies[parked]["leader"] == leader
    assert replies[parked]["members"] == []  # only the leader gets the member list
    assert [m["member_id"] for m in replies[rejoin]["members"]] == [leader, newcomer]


async def test_a_closed_socket_leaves_its_members_to_time_out(
    runtime: CoordinatorRuntime, clock: object
) -> None:
    from tests.webapp.helpers import connect

    client, communicator = await connect()
    member_id = await stable_group(client)
    await communicator.disconnect()
    view = runtime.group("my-group")
    assert view is not None and list(view.members) == [member_id]
    clock.advance(SESSION_MS)  # type: ignore[attr-defined]
    runtime.tick()
    view = runtime.group("my-group")
    assert view is not None and view.state.value == "Empty" and not view.members


async def test_a_timer_fires_without_any_request(
    runtime: CoordinatorRuntime, ws: Client, clock: object
) -> None:
    member_id = await stable_group(ws)
    assert runtime.coordinator.next_deadline_ms() == START_MS + SESSION_MS
    clock.advance(SESSION_MS - 1)  # type: ignore[attr-defined]
    runtime.tick()
    assert member_id in runtime.group("my-group").members  # type: ignore[union-attr]
    clock.advance(1)  # type: ignore[attr-defined]
    runtime.tick()
    assert not runtime.group("my-group").members  # type: ignore[union-attr]
    assert REBALANCE_MS > SESSION_MS
