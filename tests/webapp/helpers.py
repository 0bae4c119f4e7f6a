"""Helpers for the web host's tests: a websocket client of the consumer protocol and the
requests that bring a group to a known state."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from coordinator_engine import (
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupCoordinator,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OwnedTopicPartitions,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.cluster import FindCoordinatorRequest, MetadataRequest
from coordinator_engine.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    encode_assignment,
    encode_subscription,
)
from webapp.asgi import application
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, install_runtime

#: The manual clock's start: 2023-11-14T22:13:20Z.
START_MS = 1_700_000_000_000
SESSION_MS = 10_000
REBALANCE_MS = 20_000
#: No initial rebalance delay, so one member's join completes at once.
TEST_CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=0)

#: One request of every API, with every field away from its default where it has one.
SAMPLES: dict[str, Any] = {
    "JoinGroup": JoinGroupRequest(
        group_id="g",
        member_id="m",
        group_instance_id="i",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        protocol_type="consumer",
        protocols=(Protocol(name="range", metadata=b"\x00\x01\xff"),),
        require_known_member_id=False,
        client_id="c",
        client_host="/10.0.0.1",
        reason="because",
    ),
    "SyncGroup": SyncGroupRequest(
        group_id="g",
        generation_id=3,
        member_id="m",
        group_instance_id="i",
        protocol_type="consumer",
        protocol_name="range",
        assignments=(Assignment(member_id="m", assignment=b"\x00"),),
    ),
    "Heartbeat": HeartbeatRequest(group_id="g", generation_id=3, member_id="m"),
    "LeaveGroup": LeaveGroupRequest(
        group_id="g", members=(MemberIdentity(member_id="m", reason="bye"),)
    ),
    "OffsetCommit": OffsetCommitRequest(
        group_id="g",
        generation_id=3,
        member_id="m",
        offsets=(
            PartitionOffset(topic="t", partition=0, offset=2**40, metadata=None, leader_epoch=7),
        ),
    ),
    "OffsetFetch": OffsetFetchRequest(
        group_id="g", partitions=(TopicPartition(topic="t", partition=1),)
    ),
    "OffsetDelete": OffsetDeleteRequest(
        group_id="g", partitions=(TopicPartition(topic="t", partition=1),)
    ),
    "DescribeGroups": DescribeGroupsRequest(group_ids=("g", "h")),
    "ListGroups": ListGroupsRequest(states_filter=("Stable",)),
    "DeleteGroups": DeleteGroupsRequest(group_ids=("g",)),
    "HandoffHeartbeat": HandoffHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=3,
        session_timeout_ms=10000,
        topics=("t",),
        closed=(TopicPartition(topic="t", partition=1),),
        started=(TopicPartition(topic="t", partition=2),),
        client_id="c",
        client_host="/10.0.0.1",
    ),
    "ConsumerGroupHeartbeat": ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=3,
        instance_id="i",
        rack_id="r",
        rebalance_timeout_ms=20_000,
        subscribed_topic_names=("t",),
        subscribed_topic_regex="t.*",
        server_assignor="uniform",
        topic_partitions=(OwnedTopicPartitions(topic="t", partitions=(0, 2)),),
        client_id="c",
        client_host="/10.0.0.1",
    ),
    "ConsumerGroupDescribe": ConsumerGroupDescribeRequest(
        group_ids=("g",), include_authorized_operations=True
    ),
    "FindCoordinator": FindCoordinatorRequest(key="g"),
    "Metadata": MetadataRequest(topics=("t",)),
}


class Client:
    """A websocket client of ``/ws/consumer/`` with numbered requests."""

    def __init__(self, communicator: WebsocketCommunicator) -> None:
        self.communicator = communicator
        self.next_id = 1

    async def send(self, api: str, request: dict[str, Any], frame_id: int | None = None) -> int:
        if frame_id is None:
            frame_id = self.next_id
            self.next_id += 1
        await self.communicator.send_to(
            text_data=json.dumps({"id": frame_id, "api": api, "request": request})
        )
        return frame_id

    async def send_raw(self, text: str | None = None, data: bytes | None = None) -> None:
        await self.communicator.send_to(text_data=text, bytes_data=data)

    async def recv(self, timeout: float = 2) -> dict[str, Any]:
        return json.loads(await self.communicator.receive_from(timeout))

    async def call(self, api: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its reply's ``response`` (asserting the envelope)."""
        frame_id = await self.send(api, request)
        reply = await self.recv()
        assert reply["id"] == frame_id, reply
        assert reply["api"] == api, reply
        return reply["response"]

    async def nothing(self, timeout: float = 0.05) -> bool:
        return await self.communicator.receive_nothing(timeout)


@contextlib.asynccontextmanager
async def serving(runtime: CoordinatorRuntime) -> AsyncIterator[CoordinatorRuntime]:
    """``runtime`` installed as the process's runtime and started; stopped and uninstalled
    when the block ends."""
    install_runtime(runtime)
    try:
        await runtime.start()
        yield runtime
    finally:
        await runtime.stop()
        install_runtime(None)


async def connect() -> tuple[Client, WebsocketCommunicator]:
    communicator = WebsocketCommunicator(application, "/ws/consumer/")
    connected, _ = await communicator.connect()
    assert connected
    return Client(communicator), communicator


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def subscription(*topics: str) -> str:
    return b64(encode_subscription(ConsumerProtocolSubscription(topics=topics)))


def assignment(*partitions: tuple[str, int]) -> str:
    return b64(encode_assignment(ConsumerProtocolAssignment(assigned_partitions=partitions)))


def join_request(group_id: str, member_id: str = "", client_id: str = "c1") -> dict[str, Any]:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "session_timeout_ms": SESSION_MS,
        "rebalance_timeout_ms": REBALANCE_MS,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription("orders")}],
        "client_id": client_id,
    }


async def join_new_member(ws: Client, group_id: str, client_id: str = "c1") -> str:
    """KIP-394's first JoinGroup: the member id to rejoin with."""
    first = await ws.call("JoinGroup", join_request(group_id, client_id=client_id))
    assert first["error_code"] == 79, first
    return str(first["member_id"])


async def stable_group(ws: Client, group_id: str = "my-group") -> str:
    """A Stable one-member group (generation 1) owning orders-0 and orders-1; its member id."""
    member_id = await join_new_member(ws, group_id)
    joined = await ws.call("JoinGroup", join_request(group_id, member_id))
    assert joined["error_code"] == 0 and joined["generation_id"] == 1, joined
    synced = await ws.call(
        "SyncGroup",
        {
            "group_id": group_id,
            "generation_id": 1,
            "member_id": member_id,
            "assignments": [
                {"member_id": member_id, "assignment": assignment(("orders", 0), ("orders", 1))}
            ],
        },
    )
    assert synced["error_code"] == 0, synced
    return member_id


async def commit_offsets(
    ws: Client, member_id: str, offsets: list[dict[str, Any]], group_id: str = "my-group"
) -> Any:
    """OffsetCommit by ``member_id`` of generation 1 (``stable_group``'s); the response."""
    return await ws.call(
        "OffsetCommit",
        {"group_id": group_id, "generation_id": 1, "member_id": member_id, "offsets": offsets},
    )


def inject_engine_fault(
    monkeypatch: pytest.MonkeyPatch, runtime: CoordinatorRuntime, method: str
) -> GroupCoordinator:
    """Make the runtime's engine's ``method`` change its state in a way no record says (every
    group forgotten), then raise: a bug, as the runtime sees one. The engine, to tell it from
    the one the runtime reloads."""
    engine = runtime.coordinator

    def faulty(*args: Any, **kwargs: Any) -> Any:
        engine._groups.clear()  # drift: the log still holds every group
        raise RuntimeError("injected engine fault")

    monkeypatch.setattr(engine, method, faulty)
    return engine


def hold_the_reload(
    monkeypatch: pytest.MonkeyPatch, runtime: CoordinatorRuntime
) -> threading.Event:
    """Make the runtime's reloads from its log wait, in their worker thread, until the event
    returned is set: what a test looks at while the runtime recovers cannot race the reload,
    which on a small log is done within a round trip."""
    may_finish = threading.Event()
    load = runtime._load_engine

    def held(now_ms: int) -> GroupCoordinator:
        assert may_finish.wait(timeout=10), "the test did not let the reload finish in 10 s"
        return load(now_ms)

    monkeypatch.setattr(runtime, "_load_engine", held)
    return may_finish
