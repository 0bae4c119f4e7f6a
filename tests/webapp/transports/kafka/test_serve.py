"""The Kafka listener in a real ``manage.py serve``: a librdkafka consumer joins a group there
and the dashboard's API shows it; a Kafka port already taken stops serve, saying so."""

from __future__ import annotations

import signal
import socket
import time
import urllib.request
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
