"""`ClientDriver` runs a `ConsumerClient` with the same calls as the other two clients: on a
real loop and clock, against an engine answering through a transport. Its `close()` returns
once the client is closed, and not before the host has had every event the client produced
on the way: the LeftGroup of its last answer included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coordinator_engine import ConsumerGroupHeartbeatRequest, CoordinatorConfig, GroupCoordinator
from coordinator_engine.client import ConsumerClient, ConsumerProtocolConfig
from webapp.management.commands.consume import monotonic_ms
from webapp.simulation.client_driver import CLOSE_POLL_S, ClientDriver, OnFailure, OnResponse

FAST = CoordinatorConfig(
    consumer_group_heartbeat_interval_ms=100,
    consumer_group_min_heartbeat_interval_ms=100,
)


class EngineTransport:
    """Answers every request from an in-memory engine, on the next loop turn, or ``late_s``
    later."""

    def __init__(self, coordinator: GroupCoordinator, late_s: float = 0) -> None:
        self.coordinator = coordinator
        self.late_s = late_s
        self.sent: list[Any] = []

    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        self.sent.append(request)
        now = monotonic_ms()
        self.coordinator.advance(now)
        reply = self.coordinator.handle(request, now)
        assert reply.done
        loop = asyncio.get_running_loop()
        if self.late_s:
            loop.call_later(self.late_s, on_response, reply.response)
        else:
            loop.call_soon(on_response, reply.response)


@pytest.mark.asyncio
async def test_the_driver_runs_a_consumer_protocol_member_from_join_to_leave() -> None:
    coordinator = GroupCoordinator(FAST, now_ms=monotonic_ms())
    coordinator.set_topic_partitions("orders", 3, monotonic_ms())
    transport = EngineTransport(coordinator)
    seen: list[str] = []
    client = ConsumerClient(ConsumerProtocolConfig("g", ("orders",)), monotonic_ms())
    driver = ClientDriver(client, transport, monotonic_ms, lambda e: seen.append(e.type))
    driver.poll()
    for _ in range(100):
        if len(client.fetchable) == 3 and len(transport.sent) >= 6:
            break
        await asyncio.sleep(0.02)
    assert client.fetchable == {("orders", 0), ("orders", 1), ("orders", 2)}
    assert client.heartbeat_interval_ms == 100 and client.epoch == 1
    heartbeats = [r for r in transport.sent if isinstance(r, ConsumerGroupHeartbeatRequest)]
    epochs = [r.member_epoch for r in heartbeats]
    assert epochs[:2] == [0, 1]
    await driver.close(timeout_ms=1000)
    assert client.closed and "LeftGroup" in seen and "PartitionsAssigned" in seen
    view = coordinator.group("g")
    assert view is not None and not view.members


@pytest.mark.asyncio
async def test_close_returns_after_the_host_had_the_client_s_left_group() -> None:
    """Answered ``CLOSE_POLL_S`` late, the leave's answer lands in the loop turn where
    ``close()`` looks whether the client closed, as a websocket's answer may."""
    coordinator = GroupCoordinator(FAST, now_ms=monotonic_ms())
    coordinator.set_topic_partitions("orders", 2, monotonic_ms())
    seen: list[str] = []
    client = ConsumerClient(ConsumerProtocolConfig("g", ("orders",)), monotonic_ms())
    transport = EngineTransport(coordinator, late_s=CLOSE_POLL_S)
    driver = ClientDriver(client, transport, monotonic_ms, lambda e: seen.append(e.type))
    driver.poll()
    for _ in range(200):
        if len(client.fetchable) == 2:
            break
        await asyncio.sleep(0.02)
    assert client.fetchable == {("orders", 0), ("orders", 1)}
    await driver.close(timeout_ms=1000)
    assert client.closed
    assert seen[-1] == "LeftGroup", seen
