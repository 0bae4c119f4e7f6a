"""Static members (KIP-345) through the client: a restart keeps the generation and the
partitions, a duplicate instance fences the older one, and close sends no LeaveGroup."""

from __future__ import annotations

import pytest

from coordinator_engine.client import (
    ConsumerConfig,
    FatalError,
    LeftGroup,
    MemberState,
    PartitionsAssigned,
    PartitionsLost,
    RebalanceStarted,
)
from coordinator_engine.errors import Errors
from coordinator_engine.requests import JoinGroupRequest, LeaveGroupRequest
from tests.engine.client_harness import ClientHarness

GROUP = "orders"
TOPICS = {"payments": 6}


def static(instance: str, *assignors: str) -> ConsumerConfig:
    return ConsumerConfig(
        GROUP,
        ("payments",),
        assignors or ("range",),
        group_instance_id=instance,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )


def stable_static_pair(*assignors: str) -> ClientHarness:
    harness = ClientHarness(TOPICS)
    harness.add("a", static("instance-a", *assignors))
    harness.add("b", static("instance-b", *assignors))
    harness.run_until(harness.stable, within_ms=30000)
    return harness


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("restarted", ["leader", "follower"])
@pytest.mark.parametrize("how", ["crash", "close"])
def test_a_static_member_restarted_within_its_session_keeps_generation_and_partitions(
    assignor: str, restarted: str, how: str
) -> None:
    harness = stable_static_pair(assignor)
    old = next(c for c in harness.live() if c.client.is_leader == (restarted == "leader"))
    other = next(c for c in harness.live() if c is not old)
    generation, owned = old.client.generation, old.client.assignment
    instance = old.client.config.group_instance_id
    assert instance is not None

    if how == "close":
        harness.close(old.name)
        harness.run_until(lambda: old.client.closed, within_ms=1000)
        assert old.sent_of(LeaveGroupRequest) == []
        (left,) = old.events_of(LeftGroup)
        assert not left.leave_group_sent
    harness.crash(old.name)
    harness.run_for(3000)
    new = harness.add("restarted", static(instance, assignor))
    harness.run_until(lambda: new.client.state is MemberState.STABLE, within_ms=5000)
    harness.run_for(20000)

    assert harness.stable()
    assert new.client.generation == generation == other.client.generation
    assert harness.group(GROUP).generation_id == generation
    assert new.client.assignment == owned
    assert new.client.member_id != old.client.member_id
    assert other.events_of(RebalanceStarted) == other.events_of(RebalanceStarted)[:1]
    (assigned,) = new.events_of(PartitionsAssigned)
    assert set(assigned.partitions) == owned
    assert [r.member_id for r in new.sent_of(JoinGroupRequest)] == [""]


def test_a_duplicate_static_instance_fences_the_older_one_fatally() -> None:
    harness = stable_static_pair()
    older = harness.consumers["a"]
    owned = older.client.assignment

    newer = harness.add("a-duplicate", static("instance-a"))
    harness.run_until(lambda: older.client.closed, within_ms=5000)
    harness.run_until(lambda: harness.stable(["a-duplicate", "b"]), within_ms=5000)

    (fatal,) = older.events_of(FatalError)
    assert fatal.error_code == Errors.FENCED_INSTANCE_ID == older.client.fatal_error
    assert set(older.events_of(PartitionsLost)[-1].partitions) == owned
    assert older.client.assignment == frozenset()
    assert older.client.outgoing(harness.now) == []
    assert older.client.next_deadline_ms() is None
    assert newer.client.assignment == owned
