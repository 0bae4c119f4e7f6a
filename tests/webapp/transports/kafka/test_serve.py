"""The Kafka listener in a real ``manage.py serve``: a librdkafka consumer joins a group there
and the dashboard's API shows it; a Kafka port already taken stops serve, saying so."""

from __future__ import annotations

import base64
import signal
import socket
import struct
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

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
    time.sleep(0.2)
    assert server.get("/api/groups/wired")["state"] == "Empty"  # close() left the group
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
