"""GroupClients against the real coordinator: joining, leaving, crashing, eager and cooperative
rebalances, and partition count changes (seed 000's rebalance triggers)."""

from __future__ import annotations

import pytest

from coordinator_engine.client import (
    ConsumerConfig,
    JoinedGroup,
    LeftGroup,
    MemberState,
    PartitionsAssigned,
    PartitionsRevoked,
    RebalanceStarted,
)
from coordinator_engine.requests import JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest
from tests.engine.client_harness import ClientHarness, no_partition_owned_twice

GROUP = "orders"
TOPICS = {"payments": 7, "refunds": 5}
ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def config(*assignors: str, **overrides: object) -> ConsumerConfig:
    settings: dict[str, object] = {"session_timeout_ms": 10000, "heartbeat_interval_ms": 1000}
    settings.update(overrides)
    return ConsumerConfig(GROUP, tuple(TOPICS), assignors or ("range",), **settings)  # type: ignore[arg-type]


def harness_with(n: int, *assignors: str, **overrides: object) -> ClientHarness:
    harness = ClientHarness(TOPICS)
    harness.checks.append(no_partition_owned_twice)
    for i in range(n):
        harness.add(f"c{i}", config(*assignors, **overrides))
    harness.run_until(harness.stable, within_ms=30000)
    return harness


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("members", [1, 3, 20])
def test_members_reach_stable_with_a_disjoint_and_complete_assignment(
    assignor: str, members: int
) -> None:
    harness = harness_with(members, assignor)

    clients = [c.client for c in harness.live()]
    assert {c.generation for c in clients} == {1}
    assert {c.protocol_name for c in clients} == {assignor}
    assert sum(c.is_leader for c in clients) == 1
    view = harness.group(GROUP)
    assert set(view.members) == {c.member_id for c in clients}
    assert view.leader_id == next(c.member_id for c in clients if c.is_leader)
    for consumer in harness.live():
        joined = consumer.events_of(JoinedGroup)
        assert [(e.generation, e.member_id) for e in joined] == [(1, consumer.client.member_id)]
        (assigned,) = consumer.events_of(PartitionsAssigned)
        assert set(assigned.assignment) == consumer.client.assignment


def test_a_dynamic_member_rejoins_at_once_with_the_member_id_the_coordinator_requires() -> None:
    harness = harness_with(1)

    consumer = harness.consumers["c0"]
    first, second = consumer.sent_of(JoinGroupRequest)
    assert first.member_id == ""
    assert second.member_id == consumer.client.member_id != ""
    assert [t for t, r in consumer.sent if isinstance(r, JoinGroupRequest)] == [0, 0]


def test_a_member_that_crashes_loses_its_partitions_to_the_others_after_its_session_timeout() -> (
    None
):
    harness = harness_with(3, "range")
    crashed = harness.consumers["c2"].client
    crashed_at = harness.now

    harness.crash("c2")
    harness.run_until(lambda: harness.stable(["c0", "c1"]), within_ms=20000)

    assert harness.now - crashed_at >= 10000 - 1000  # its session, from its last heartbeat
    removed = [
        e
        for e in harness.engine_events
        if type(e).__name__ == "MemberRemoved" and e.member_id == crashed.member_id
    ]
    assert [e.reason for e in removed] == ["session_timeout"]
    survivors = (
        harness.consumers["c0"].client.assignment | harness.consumers["c1"].client.assignment
    )
    assert crashed.assignment <= survivors


def test_a_dynamic_member_that_closes_commits_leaves_and_is_replaced_at_once() -> None:
    harness = harness_with(3, "range")
    leaving = harness.consumers["c2"]
    owned = leaving.client.assignment
    for topic, partition in owned:
        leaving.client.record_consumed(topic, partition, 10)
    closed_at = harness.now

    harness.close("c2")
    harness.run_until(lambda: leaving.client.closed, within_ms=1000)
    harness.run_until(lambda: harness.stable(["c0", "c1"]), within_ms=5000)

    assert harness.now - closed_at < 10000  # well before its session could time out
    last_two = [type(r) for _, r in leaving.sent[-2:]]
    assert last_two == [OffsetCommitRequest, LeaveGroupRequest]
    (left,) = leaving.events_of(LeftGroup)
    assert left.leave_group_sent and left.reason == "the consumer is being closed"
    assert set(leaving.events_of(PartitionsRevoked)[-1].partitions) == owned
    assert leaving.client.state is MemberState.UNJOINED
    assert leaving.client.outgoing(harness.now) == []


def _eager_members_own_nothing_while_rebalancing(harness: ClientHarness) -> None:
    for consumer in harness.live():
        if consumer.client.state in (
            MemberState.PREPARING_REBALANCE,
            MemberState.COMPLETING_REBALANCE,
        ):
            assert consumer.client.assignment == frozenset(), consumer.name


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky"])
def test_eager_members_revoke_everything_before_they_rejoin(assignor: str) -> None:
    harness = harness_with(2, assignor)
    harness.checks.append(_eager_members_own_nothing_while_rebalancing)
    before = {name: c.client.assignment for name, c in harness.consumers.items()}
    generation = harness.consumers["c0"].client.generation

    harness.add("c2", config(assignor))
    harness.run_until(harness.stable, within_ms=30000)

    for name, owned in before.items():
        consumer = harness.consumers[name]
        (revoked,) = consumer.events_of(PartitionsRevoked)
        assert set(revoked.partitions) == owned
        started = consumer.events_of(RebalanceStarted)[-1]
        assert started.reason == "the group is rebalancing"
        assert consumer.events.index(started) < consumer.events.index(revoked)
    assert harness.consumers["c2"].client.generation == generation + 1


def test_the_eager_sticky_assignor_keeps_partitions_with_their_previous_owner() -> None:
    harness = ClientHarness({"payments": 12})
    for name in ("c0", "c1"):
        harness.add(name, ConsumerConfig(GROUP, ("payments",), ("sticky",)))
    harness.run_until(harness.stable, within_ms=30000)
    before = {name: c.client.assignment for name, c in harness.consumers.items()}

    harness.add("c2", ConsumerConfig(GROUP, ("payments",), ("sticky",)))
    harness.run_until(harness.stable, within_ms=30000)

    for name, owned in before.items():
        kept = harness.consumers[name].client.assignment
        assert len(kept) == 4 and kept <= owned


def test_cooperative_members_keep_their_partitions_while_rejoining_and_never_share_one() -> None:
    harness = harness_with(2, "cooperative-sticky")
    before = {name: c.client.assignment for name, c in harness.consumers.items()}
    kept_while_joining: set[str] = set()

    def record_members_joining_with_partitions(h: ClientHarness) -> None:
        for consumer in h.live():
            if (
                consumer.client.state is MemberState.PREPARING_REBALANCE
                and consumer.client.assignment
            ):
                kept_while_joining.add(consumer.name)

    harness.checks.append(record_members_joining_with_partitions)
    harness.add("c2", config("cooperative-sticky"))
    harness.run_until(harness.stable, within_ms=30000)

    assert kept_while_joining == {"c0", "c1"}
    revoked = set()
    for name, owned in before.items():
        consumer = harness.consumers[name]
        (event,) = consumer.events_of(PartitionsRevoked)
        assert set(event.partitions) == owned - consumer.client.assignment
        revoked |= set(event.partitions)
    assert revoked == harness.consumers["c2"].client.assignment


@pytest.mark.parametrize(("assignor", "rebalances"), [("range", 1), ("cooperative-sticky", 2)])
def test_a_joining_member_costs_one_eager_or_two_cooperative_rebalances(
    assignor: str, rebalances: int
) -> None:
    harness = harness_with(2, assignor)
    generation = harness.consumers["c0"].client.generation

    harness.add("c2", config(assignor))
    harness.run_until(harness.stable, within_ms=30000)
    assert harness.consumers["c2"].client.assignment
    harness.run_for(30000)

    assert harness.stable()
    assert {c.client.generation for c in harness.live()} == {generation + rebalances}


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("how", ["host_signal", "periodic_refresh"])
def test_a_partition_count_change_makes_the_group_rejoin_and_assign_the_new_partitions(
    assignor: str, how: str
) -> None:
    harness = harness_with(3, assignor, metadata_max_age_ms=20000)
    generation = harness.consumers["c0"].client.generation
    follower = next(c for c in harness.live() if not c.client.is_leader)

    harness.topics["payments"] = 10
    if how == "host_signal":
        follower.client.metadata_changed()
    harness.run_until(harness.stable, within_ms=60000)
    harness.run_for(60000)  # every member refreshes again: no further rebalance

    assert harness.stable()
    # New partitions move no owned one, so even the cooperative protocol needs one round.
    assert {c.client.generation for c in harness.live()} == {generation + 1}
    assert ("payments", 9) in set().union(*(c.client.assignment for c in harness.live()))
    reasons = {e.reason for c in harness.live() for e in c.events_of(RebalanceStarted)}
    assert "partition count of payments changed" in reasons


def test_a_member_that_does_not_poll_holds_the_rebalance_until_it_polls() -> None:
    harness = harness_with(2, "range", max_poll_interval_ms=60000)
    slow = harness.consumers["c1"]
    slow.polling = False

    harness.add("c2", config("range"))
    harness.run_for(8000)  # long past c1's heartbeats answering REBALANCE_IN_PROGRESS

    assert harness.group(GROUP).state.value == "PreparingRebalance"
    assert slow.client.state is MemberState.STABLE
    assert len(slow.sent_of(JoinGroupRequest)) == 2  # only its first join

    slow.polling = True
    harness.run_until(harness.stable, within_ms=5000)
    assert {c.client.generation for c in harness.live()} == {2}
