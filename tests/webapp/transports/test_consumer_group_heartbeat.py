"""KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe over the websocket consumer
protocol, against the real runtime: a member joins and acknowledges, a second one makes the
first revoke before it gets the partition, describe shows both, leaves and kinds that do not
mix; docs/protocol.md's two examples are what the server answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from coordinator_engine.consumer import ConsumerGroupView
from tests.webapp.helpers import Client, connect, join_request
from webapp.asgi import application
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio

DOC = (Path(__file__).resolve().parents[3] / "docs" / "protocol.md").read_text(encoding="utf-8")


async def beat(ws: Client, member: str, epoch: int, **fields: Any) -> dict[str, Any]:
    return await ws.call(
        "ConsumerGroupHeartbeat",
        {
            "group_id": "cg",
            "member_id": member,
            "member_epoch": epoch,
            "client_id": f"client-{member}",
            **fields,
        },
    )


async def join(ws: Client, member: str) -> dict[str, Any]:
    return await beat(
        ws,
        member,
        0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["orders"],
        topic_partitions=[],
    )


def owned(*partitions: int) -> list[dict[str, Any]]:
    return [{"topic": "orders", "partitions": list(partitions)}]


async def test_a_member_joins_gets_its_assignment_as_an_object_and_acknowledges_it(
    runtime: CoordinatorRuntime,
) -> None:
    await runtime.create_topic("orders", 2)
    communicator = WebsocketCommunicator(application, "/ws/consumer/")
    communicator.scope["client"] = ("10.1.2.3", 50123)
    connected, _ = await communicator.connect()
    assert connected
    ws = Client(communicator)
    joined = await join(ws, "a")
    assert joined == {
        "error_code": 0,
        "error_message": None,
        "member_id": "a",
        "member_epoch": 1,
        "heartbeat_interval_ms": 5000,
        "assignment": {"orders": [0, 1]},
    }
    acked = await beat(ws, "a", 1, topic_partitions=owned(0, 1))
    assert acked["error_code"] == 0 and acked["assignment"] is None
    view = runtime.group("cg")
    assert isinstance(view, ConsumerGroupView) and view.state.value == "Stable"
    member = view.members["a"]
    # The socket filled the client host from its connection, as for JoinGroup.
    assert (member.client_id, member.client_host) == ("client-a", "/10.1.2.3")
    await communicator.disconnect()


async def test_a_second_member_waits_until_the_first_revoked_and_said_so(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", 2)
    await join(ws, "a")
    await beat(ws, "a", 1, topic_partitions=owned(0, 1))
    other, communicator = await connect()
    try:
        b_joined = await join(other, "b")
        assert b_joined["member_epoch"] == 2
        # b's target partition is still a's: nothing yet.
        assert b_joined["assignment"] == {}
        told = await beat(ws, "a", 1)
        assert told["member_epoch"] == 1 and told["assignment"] == {"orders": [0]}
        revoked = await beat(ws, "a", 1, topic_partitions=owned(0))
        assert revoked["member_epoch"] == 2
        granted = await beat(other, "b", 2)
        assert granted["assignment"] == {"orders": [1]}

        described = await ws.call("ConsumerGroupDescribe", {"group_ids": ["cg", "nope"]})
        (group, missing) = described["groups"]
        assert missing["error_code"] == 69  # GROUP_ID_NOT_FOUND
        assert (group["error_code"], group["group_state"], group["group_epoch"]) == (
            0,
            "Stable",
            2,
        )
        members = {m["member_id"]: m for m in group["members"]}
        assert members["a"]["assignment"] == {"orders": [0]}
        assert members["b"]["assignment"] == {"orders": [1]}
        assert members["b"]["target_assignment"] == {"orders": [1]}
        assert members["b"]["client_id"] == "client-b"

        # Closing b's socket does not remove it (its session runs out, as in Kafka).
        await communicator.disconnect()
        view = runtime.group("cg")
        assert isinstance(view, ConsumerGroupView) and set(view.members) == {"a", "b"}
        left = await beat(ws, "a", 2, topic_partitions=owned(0))
        assert left["error_code"] == 0
        gone = await beat(ws, "a", -1)
        assert (gone["error_code"], gone["member_epoch"]) == (0, -1)
        view = runtime.group("cg")
        assert isinstance(view, ConsumerGroupView) and set(view.members) == {"b"}
    finally:
        await communicator.disconnect()


async def test_kinds_do_not_mix_and_errors_are_kafkas_codes_in_normal_replies(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", 2)
    classic = await ws.call("JoinGroup", {**join_request("classic-group"), "member_id": ""})
    assert classic["error_code"] == 79
    joined = await ws.call(
        "JoinGroup",
        {**join_request("classic-group", classic["member_id"]), "require_known_member_id": True},
    )
    assert joined["error_code"] == 0
    refused = await ws.call(
        "ConsumerGroupHeartbeat",
        {
            "group_id": "classic-group",
            "member_id": "x",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30_000,
            "subscribed_topic_names": ["orders"],
            "topic_partitions": [],
        },
    )
    assert refused["error_code"] == 23  # INCONSISTENT_GROUP_PROTOCOL
    unknown = await beat(ws, "z", 3)
    assert unknown["error_code"] == 69  # GROUP_ID_NOT_FOUND: no such group
    invalid = await beat(ws, "y", 0)  # a join without its subscription
    assert invalid["error_code"] == 42 and invalid["error_message"]
    # A malformed frame is an error reply naming the field; the socket goes on.
    await ws.send(
        "ConsumerGroupHeartbeat", {"group_id": "cg", "member_id": "a", "member_epoch": "0"}
    )
    assert (await ws.recv())["error"] == {
        "code": "invalid_request",
        "message": 'request.member_epoch: expected an integer, got string "0"',
    }
    assert (await join(ws, "a"))["error_code"] == 0


def doc_examples() -> list[tuple[str, str]]:
    """The ConsumerGroupHeartbeat request/reply pairs of docs/protocol.md."""
    section = DOC.split("**ConsumerGroupHeartbeat** and **ConsumerGroupDescribe**")[1]
    section = section.split("The runtime answers the other two")[0]
    pairs = []
    for block in section.split("```json")[1:]:
        request, reply = block.split("```")[0].strip().splitlines()
        pairs.append((request, reply))
    return pairs


async def test_the_docs_examples_are_what_the_server_answers(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", 2)
    examples = doc_examples()
    assert len(examples) == 2
    for request, reply in examples:
        await ws.send_raw(text=request)
        assert await ws.recv() == json.loads(reply)
