"""Liveness through the client: the poll timeout (KIP-62), coordinator errors and rediscovery,
lost requests."""

from __future__ import annotations

import pytest

from coordinator_engine.client import (
    POLL_TIMEOUT_REASON,
    CommitCompleted,
    ConsumerConfig,
    CoordinatorDiscovered,
    CoordinatorLost,
    LeftGroup,
    MemberState,
    PartitionsLost,
)
from coordinator_engine.cluster import FindCoordinatorRequest
from coordinator_engine.requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from tests.engine.client_harness import DROPPED, ClientHarness, not_coordinator_once

GROUP = "orders"
TOPICS = {"payments": 6}


def config(**overrides: object) -> ConsumerConfig:
    settings: dict[str, object] = {
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 20000,
        "retry_backoff_ms": 250,
    }
    settings.update(overrides)
    return ConsumerConfig(GROUP, ("payments",), **settings)  # type: ignore[arg-type]


def test_a_consumer_that_stops_polling_leaves_the_group_and_rejoins_when_it_polls_again() -> None:
    harness = ClientHarness(TOPICS)
    for name in ("c0", "c1", "c2"):
        harness.add(name, config())
    harness.run_until(harness.stable, within_ms=30000)
    slow = harness.consumers["c2"]
    owned = slow.client.assignment
    slow.polling = False
    last_poll = slow.next_poll_ms - slow.poll_interval_ms

    harness.run_until(lambda: harness.stable(["c0", "c1"]), within_ms=40000)

    ((left_at, leave),) = [(t, r) for t, r in slow.sent if isinstance(r, LeaveGroupRequest)]
    assert left_at == last_poll + 20000
    assert [m.reason for m in leave.members] == [POLL_TIMEOUT_REASON]
    (left,) = slow.events_of(LeftGroup)
    assert left.leave_group_sent and left.reason == POLL_TIMEOUT_REASON
    assert slow.client.state is MemberState.UNJOINED
    assert slow.client.assignment == owned  # as Kafka: lost only when the application polls
    harness.run_for(10000)
    assert slow.client.state is MemberState.UNJOINED  # no rejoin without a poll

    slow.polling = True
    slow.next_poll_ms = harness.now
    harness.run_until(harness.stable, within_ms=30000)

    assert set(slow.events_of(PartitionsLost)[-1].partitions) == owned
    rejoin = slow.sent_of(JoinGroupRequest)[-2]
    assert rejoin.member_id == ""  # a new member: its old id was given up


@pytest.mark.parametrize(
    "request_type",
    [JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, OffsetFetchRequest, OffsetCommitRequest],
)
def test_not_coordinator_makes_the_client_find_the_coordinator_again(request_type: type) -> None:
    harness = ClientHarness(TOPICS)
    harness.interceptors.append(not_coordinator_once(request_type))
    consumer = harness.add("c0", config(enable_auto_commit=False))
    harness.run_until(harness.stable, within_ms=30000)
    consumer.client.record_consumed("payments", 0, 42)
    consumer.client.commit({("payments", 0): 42})
    harness.run_for(5000)

    assert harness.stable()
    (lost,) = consumer.events_of(CoordinatorLost)
    assert "NOT_COORDINATOR" in lost.reason
    assert len(consumer.events_of(CoordinatorDiscovered)) == 2
    find_times = [t for t, r in consumer.sent if isinstance(r, FindCoordinatorRequest)]
    assert len(find_times) == 2
    assert find_times[1] >= lost.at_ms + 250  # after retry_backoff_ms
    assert [e.offsets for e in consumer.events_of(CommitCompleted)] == [{("payments", 0): 42}]
    if request_type in (HeartbeatRequest, OffsetCommitRequest, OffsetFetchRequest):
        assert consumer.client.generation == 1  # a stable member just carries on


def test_a_request_the_transport_lost_counts_as_a_lost_coordinator() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config())
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    dropped: list[HeartbeatRequest] = []

    def drop_first_heartbeat(request: object) -> object | None:
        if isinstance(request, HeartbeatRequest) and not dropped:
            dropped.append(request)
            return DROPPED
        return None

    harness.interceptors.append(drop_first_heartbeat)
    harness.run_until(lambda: bool(dropped), within_ms=5000)
    client.fail(dropped[0], harness.now)

    assert client.coordinator is None
    assert isinstance(client.events()[-1], CoordinatorLost)
    assert client.next_deadline_ms() == harness.now + 250  # retry_backoff_ms
    harness.run_for(5000)
    assert client.coordinator is not None
    assert harness.stable() and client.generation == 1


def test_an_unanswered_heartbeat_times_out_and_the_coordinator_is_looked_up_again() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config(request_timeout_ms=5000))
    harness.run_until(harness.stable, within_ms=30000)
    swallowed: list[HeartbeatRequest] = []

    def swallow_first_heartbeat(request: object) -> object | None:
        if isinstance(request, HeartbeatRequest) and not swallowed:
            swallowed.append(request)
            return DROPPED
        return None

    harness.interceptors.append(swallow_first_heartbeat)
    harness.run_until(lambda: bool(consumer.events_of(CoordinatorLost)), within_ms=10000)

    (lost,) = consumer.events_of(CoordinatorLost)
    assert lost.reason == "Heartbeat request timed out"
    sent_at = next(t for t, r in consumer.sent if r is swallowed[0])
    assert lost.at_ms == sent_at + 5000
    harness.run_for(5000)
    assert harness.stable() and consumer.client.generation == 1
