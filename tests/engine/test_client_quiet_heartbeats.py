"""A host that watches the coordinator's events may let its members heartbeat quietly
(``quiet_heartbeats``: once per session while nothing changes, ``group_changed`` to hear of a
change at the next regular tick), and poll only when a join waits for it (``awaiting_poll``)."""

from __future__ import annotations

import itertools

import pytest

from coordinator_engine import CoordinatorConfig
from coordinator_engine.client import ConsumerConfig, GroupClient, MemberState
from coordinator_engine.errors import Errors
from coordinator_engine.requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
)
from coordinator_engine.responses import HeartbeatResponse
from tests.engine.client_harness import ClientHarness

GROUP = "orders"
TOPICS = {"payments": 6}
QUICK = CoordinatorConfig(group_initial_rebalance_delay_ms=0)


def config(**overrides: object) -> ConsumerConfig:
    settings: dict[str, object] = {
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 60000,
    }
    settings.update(overrides)
    return ConsumerConfig(GROUP, ("payments",), **settings)  # type: ignore[arg-type]


def heartbeat_times(harness: ClientHarness, name: str, after: int) -> list[int]:
    return [
        at
        for at, request in harness.consumers[name].sent
        if isinstance(request, HeartbeatRequest) and at > after
    ]


def test_a_quiet_member_of_a_stable_group_heartbeats_at_the_last_tick_before_its_session_ends() -> (
    None
):
    harness = ClientHarness(TOPICS, QUICK)
    harness.add("quiet", config(), quiet_heartbeats=True)
    harness.add("regular", config())
    harness.run_until(harness.stable, within_ms=30000)
    generation = harness.group(GROUP).generation_id
    settled = harness.now

    harness.run_for(60000)

    quiet = heartbeat_times(harness, "quiet", settled)
    assert [b - a for a, b in itertools.pairwise(quiet)] == [9000] * (len(quiet) - 1)
    assert len(quiet) >= 6
    regular = heartbeat_times(harness, "regular", settled)
    assert len(regular) >= 59
    assert harness.stable() and harness.group(GROUP).generation_id == generation


def test_group_changed_brings_a_quiet_members_heartbeat_back_to_its_regular_tick() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    for name in ("c0", "c1"):
        harness.add(name, config(), quiet_heartbeats=True)
    harness.run_until(harness.stable, within_ms=30000)
    harness.run_for(2500)
    (last,) = heartbeat_times(harness, "c0", harness.now - 9000)[-1:]

    harness.add("c2", config())
    harness.step()  # c2's JoinGroup starts a rebalance
    assert harness.group(GROUP).state.value == "PreparingRebalance"
    for name in ("c0", "c1"):
        harness.consumers[name].client.group_changed(harness.now)
    changed = harness.now
    harness.run_until(harness.stable, within_ms=5000)

    (next_heartbeat,) = heartbeat_times(harness, "c0", changed)[:1]
    assert next_heartbeat == last + ((changed - last) // 1000 + 1) * 1000
    assert next_heartbeat - changed <= 1000
    assert len(harness.group(GROUP).members) == 3


def test_group_changed_leaves_a_member_without_quiet_heartbeats_as_it_was() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config())
    harness.run_until(harness.stable, within_ms=30000)
    due = consumer.client.next_deadline_ms()
    consumer.client.group_changed(harness.now)
    assert consumer.client.next_deadline_ms() == due


def test_awaiting_poll_says_a_rejoin_waits_for_the_applications_poll() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config())
    client = consumer.client
    assert client.awaiting_poll  # nothing is sent before the first poll()
    harness.run_until(harness.stable, within_ms=30000)
    assert not client.awaiting_poll
    consumer.polling = False

    client.enforce_rebalance()
    harness.run_for(3000)
    assert client.awaiting_poll and client.state is MemberState.STABLE
    assert not [
        r for at, r in consumer.sent if at > harness.now - 3000 and isinstance(r, JoinGroupRequest)
    ]

    client.poll(harness.now)
    assert not client.awaiting_poll
    consumer.polling = True
    harness.run_until(harness.stable, within_ms=10000)


def test_quiet_heartbeats_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="quiet_heartbeats"):
        GroupClient(config(), 0, quiet_heartbeats=1)  # type: ignore[arg-type]


def test_between_its_deadlines_an_idle_client_sends_nothing_until_its_state_changes() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config(enable_auto_commit=False), quiet_heartbeats=True)
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    consumer.polling = False
    now = harness.now
    assert client.outgoing(now) == []
    due = client.next_deadline_ms()
    assert due is not None and due > now
    assert client.outgoing(due - 1) == []
    assert client.next_deadline_ms() == due

    client.enforce_rebalance()  # a change of state: the next call looks again
    client.poll(due - 1)
    assert [type(r) for r in client.outgoing(due - 1)] == [JoinGroupRequest]


def test_auto_commit_due_ms_says_when_a_poll_commits() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config(auto_commit_interval_ms=5000))
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    consumer.polling = False
    due = client.auto_commit_due_ms
    assert due > harness.now

    client.poll(due - 1)
    assert not [r for r in client.outgoing(due - 1) if isinstance(r, OffsetCommitRequest)]
    assert client.auto_commit_due_ms == due
    client.poll(due)
    assert [r for r in client.outgoing(due) if isinstance(r, OffsetCommitRequest)]
    assert client.auto_commit_due_ms == due + 5000


def test_an_idle_client_whose_heartbeat_is_answered_none_is_idle_again_until_its_next_tick() -> (
    None
):
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config(enable_auto_commit=False), quiet_heartbeats=True)
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    consumer.polling = False
    assert client.outgoing(harness.now) == []
    due = client.next_deadline_ms()
    assert due is not None

    (heartbeat,) = client.outgoing(due)
    assert isinstance(heartbeat, HeartbeatRequest)
    client.receive(heartbeat, HeartbeatResponse(error_code=Errors.NONE), due)
    assert client.next_deadline_ms() == due + 9000  # the last tick before the session ends
    assert client.outgoing(due) == []
    assert client.outgoing(due + 8999) == []
    assert [type(r) for r in client.outgoing(due + 9000)] == [HeartbeatRequest]


def test_a_heartbeat_answered_after_the_poll_timeout_lets_the_member_leave() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config(enable_auto_commit=False), quiet_heartbeats=True)
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    consumer.polling = False
    last_poll = harness.now
    assert client.outgoing(last_poll) == []
    due = client.next_deadline_ms()
    assert due is not None

    (heartbeat,) = client.outgoing(due)
    late = last_poll + 60000  # max_poll_interval_ms ran out while the answer was on its way
    client.receive(heartbeat, HeartbeatResponse(error_code=Errors.NONE), late)
    assert [type(r) for r in client.outgoing(late)] == [LeaveGroupRequest]


def test_a_poll_with_nothing_to_commit_leaves_an_idle_client_idle() -> None:
    harness = ClientHarness(TOPICS, QUICK)
    consumer = harness.add("c0", config(enable_auto_commit=False), quiet_heartbeats=True)
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    consumer.polling = False
    assert client.outgoing(harness.now) == []
    due = client.next_deadline_ms()
    assert due is not None

    client.poll(due - 1)
    assert client.outgoing(due - 1) == []
    assert client.next_deadline_ms() == due
