"""`ClientDriver.close()` returns once the client is closed, and not before the host has had
every event the client produced on the way: the LeftGroup of its last answer included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator_engine import CoordinatorConfig, GroupCoordinator
from coordinator_engine.client import ConsumerClient, ConsumerProtocolConfig
from webapp.management.commands.consume import monotonic_ms
from webapp.simulation.client_driver import CLOSE_POLL_S, ClientDriver, OnFailure, OnResponse

FAST = CoordinatorConfig(
    consumer_group_heartbeat_interval_ms=100,
    consumer_group_min_heartbeat_interval_ms=100,
)


class LateTransport:
    """Answers every request from an in-memory engine ``CLOSE_POLL_S`` later: the leave's
    answer then lands in the loop turn where ``close()`` looks whether the client closed, as a
    websocket's answer may."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        now = monotonic_ms()
        self.coordinator.advance(now)
        reply = self.coordinator.handle(request, now)
        assert reply.done
        asyncio.get_running_loop().call_later(CLOSE_POLL_S, on_response, reply.response)


@pytest.mark.asyncio
async def test_close_returns_after_the_host_had_the_client_s_left_group() -> None:
    coordinator = GroupCoordinator(FAST, now_ms=monotonic_ms())
    coordinator.set_topic_partitions("orders", 2, monotonic_ms())
    seen: list[str] = []
    client = ConsumerClient(ConsumerProtocolConfig("g", ("orders",)), monotonic_ms())
    driver = ClientDriver(
        client, LateTransport(coordinator), monotonic_ms, lambda e: seen.append(e.type)
    )
    driver.poll()
    for _ in range(200):
        if len(client.fetchable) == 2:
            break
        await asyncio.sleep(0.02)
    assert client.fetchable == {("orders", 0), ("orders", 1)}
    await driver.close(timeout_ms=1000)
    assert client.closed
    assert seen[-1] == "LeftGroup", seen
