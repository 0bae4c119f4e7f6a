"""The Kafka listener in a real ``manage.py serve``: a librdkafka consumer joins a group there
and the dashboard's API shows it; a Kafka port already taken stops serve, saying so."""

from __future__ import annotations

import base64
import signal
import socket
import struct
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer

from tests.live_server import LiveServer, wait_for


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path, COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0")
    yield server
    server.kill()


def test_a_librdkafka_consumer_joins_through_serve_and_the_api_shows_it(
    server: LiveServer,
) -> None:
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 3})
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{server.kafka_port}",
            "group.id": "wired",
            "client.id": "billing-service",
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe(["orders"])

        def assigned() -> list[tuple[str, int]] | None:
            consumer.poll(0.2)
            owned = sorted((tp.topic, tp.partition) for tp in consumer.assignment())
            return owned or None

        assert wait_for(assigned, 20, "an assignment") == [("orders", p) for p in range(3)]
        group = server.get("/api/groups/wired")
        assert group["state"] == "Stable"
        (member,) = group["members"]
        assert (member["client_id"], member["client_host"]) == ("billing-service", "/127.0.0.1")
        assert member["connection"] == "kafka"
        address = f"127.0.0.1:{server.kafka_port}"
        assert server.get("/healthz")["listeners"] == {"kafka": address}
        overview = urllib.request.urlopen(f"{server.url}/", timeout=5).read().decode()
        assert f"bootstrap.servers={address}" in overview
        assert member["assignment"] == [["orders", 0], ["orders", 1], ["orders", 2]]
    finally:
        consumer.close()
    # close() left the group: its LeaveGroup may be handled just after close() returns, and
    # well within the 6 s session timeout that would empty the group without it.
    wait_for(lambda: server.get("/api/groups/wired")["state"] == "Empty", 4, "an empty group")
    assert server.stop(signal.SIGTERM) == 0


def test_serve_stops_naming_a_kafka_port_already_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = LiveServer(tmp_path, KAFKA_PORT=str(port))
        try:
            with pytest.raises(AssertionError):
                server.start()
            assert server.process is not None
            assert server.process.wait(timeout=20) == 1
        finally:
            server.kill()
    output = server.output.read_text()
    assert f"the Kafka listener could not listen on 127.0.0.1:{port}" in output


def metadata_by_id(port: int, topic_ids: list[uuid.UUID]) -> list[tuple[str | None, int]]:
    """(name, error code) of each topic of a Metadata v12 request by ``topic_ids``."""
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
    from kio.schema.metadata.v12.response import MetadataResponse
    from kio.serial import entity_reader

    from .test_wire import request_frame

    request = MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=i, name=None) for i in topic_ids),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request_frame(3, 12, 1, request))
        reply = b""
        while len(reply) < 4 or len(reply) < 4 + struct.unpack(">i", reply[:4])[0]:
            more = sock.recv(1 << 16)
            assert more, "the server closed the connection"
            reply += more
    answer, _ = entity_reader(MetadataResponse)(reply, 9)  # size, id, empty header tags
    by_id = {t.topic_id: (t.name, t.error_code) for t in answer.topics}
    return [by_id[i] for i in topic_ids]


@pytest.mark.database  # the topics come back from the server's database
def test_topic_ids_survive_a_restart_of_serve(server: LiveServer) -> None:
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 3})
    server.post("/api/topics", {"name": "audit", "partitions": 1})
    ids = {t["name"]: t["topic_id"] for t in server.get("/api/topics")["topics"]}
    # Kafka's text form of an id: URL-safe base64 of its 16 bytes, without padding.
    orders, audit = (
        uuid.UUID(bytes=base64.urlsafe_b64decode(ids[n] + "==")) for n in ("orders", "audit")
    )
    assert metadata_by_id(server.kafka_port, [orders, audit]) == [("orders", 0), ("audit", 0)]
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL

    server.start()
    assert {t["name"]: t["topic_id"] for t in server.get("/api/topics")["topics"]} == ids
    assert metadata_by_id(server.kafka_port, [orders, audit]) == [("orders", 0), ("audit", 0)]


def consumer_heartbeat(
    port: int, member_id: str, epoch: int, owned: list[tuple[uuid.UUID, list[int]]] | None
) -> object:
    """One ConsumerGroupHeartbeat v1 of group ``modern`` (subscribed to ``orders``); kio's
    decoded answer."""
    import datetime

    from kio.schema.consumer_group_heartbeat.v1.request import (
        ConsumerGroupHeartbeatRequest,
        TopicPartitions,
    )
    from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse
    from kio.serial import entity_reader

    from .test_wire import request_frame

    joining = epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id="modern",
        member_id=member_id,
        member_epoch=epoch,
        rebalance_timeout=datetime.timedelta(milliseconds=300000 if joining else -1),
        subscribed_topic_names=("orders",) if joining else None,
        subscribed_topic_regex="" if joining else None,
        topic_partitions=None
        if owned is None
        else tuple(TopicPartitions(topic_id=i, partitions=tuple(p)) for i, p in owned),
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request_frame(68, 1, 1, request))
        reply = b""
        while len(reply) < 4 or len(reply) < 4 + struct.unpack(">i", reply[:4])[0]:
            more = sock.recv(1 << 16)
            assert more, "the server closed the connection"
            reply += more
    answer, _ = entity_reader(ConsumerGroupHeartbeatResponse)(reply, 9)
    assert answer.error_code == 0, answer
    return answer


def reconciliation(server: LiveServer) -> tuple[object, ...]:
    """What a kill -9 must not change: the group's state and epoch, each member's epoch, state
    and partitions (owned, pending revocation, target)."""
    group = server.get("/api/groups/modern")
    return (
        group["state"],
        group["generation_id"],
        tuple(
            sorted(
                (
                    m["member_id"],
                    m["member_epoch"],
                    m["member_state"],
                    tuple(map(tuple, m["assignment"])),
                    tuple(map(tuple, m["pending_revocation"])),
                    tuple(map(tuple, m["target"])),
                )
                for m in group["members"]
            )
        ),
    )


def test_a_consumer_group_killed_mid_reconciliation_comes_back_with_its_epochs(
    server: LiveServer,
) -> None:
    """KIP-848's records (ConsumerGroupMetadata, member metadata, target and current
    assignments) replayed after a SIGKILL: the same epochs, states and assignments, and the
    reconciliation then finishes where it stopped."""
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 4})
    (spec,) = server.get("/api/topics")["topics"]
    orders = uuid.UUID(bytes=base64.urlsafe_b64decode(spec["topic_id"] + "=="))
    port = server.kafka_port
    first: Any = consumer_heartbeat(port, "first", 0, [])
    consumer_heartbeat(port, "first", 1, [(orders, [0, 1, 2, 3])])
    second: Any = consumer_heartbeat(port, "second", 0, [])
    # "second" waits for partitions "first" still owns; "first" is asked to give two up.
    asked: Any = consumer_heartbeat(port, "first", 1, [(orders, [0, 1, 2, 3])])
    assert (first.member_epoch, second.member_epoch, asked.member_epoch) == (1, 2, 1)
    before = reconciliation(server)
    assert before[0] == "Reconciling"
    states = {m[0]: m[2] for m in before[2]}
    assert states == {"first": "UNREVOKED_PARTITIONS", "second": "UNRELEASED_PARTITIONS"}

    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    server.start()
    assert reconciliation(server) == before

    kept = sorted(asked.assignment.topic_partitions[0].partitions)
    consumer_heartbeat(port, "first", 1, [(orders, kept)])  # revoked: epoch 2
    consumer_heartbeat(port, "second", 2, [])  # gets what was released

    def stable() -> tuple[object, ...] | None:
        after = reconciliation(server)
        return after if after[0] == "Stable" else None

    consumer_heartbeat(port, "first", 2, [(orders, kept)])
    after = wait_for(stable, 10, "a Stable group")
    assert {m[0]: (m[1], len(m[3])) for m in after[2]} == {"first": (2, 2), "second": (2, 2)}
