"""The consumer-protocol client (`ConsumerClient`) against the real `GroupCoordinator`, in
virtual time (the coordinator's defaults: heartbeat interval 5 s, session 45 s).

Each member is a client plus an application that polls every second and consumes what its
client says it may (`fetchable`) every 100 ms, 5 records a partition, from the client's
positions. The harness checks, after every request and every answer, that no partition is
fetchable by two live members, and records every offset processed, so a record processed twice
is seen.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupView,
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    OwnedTopicPartitions,
)
from coordinator_engine.client import (
    CONSUMER_TRANSITIONS,
    CommitCompleted,
    ConsumerClient,
    ConsumerMemberState,
    ConsumerProtocolConfig,
    CoordinatorLost,
    FatalError,
    LeftGroup,
    MemberEpochChanged,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from coordinator_engine.client.events import ClientEvent
from coordinator_engine.requests import OffsetCommitRequest, OffsetFetchRequest
from coordinator_engine.responses import (
    ConsumerGroupHeartbeatResponse,
    OffsetCommitResponse,
    PartitionResult,
)

GROUP = "orders-kip848"
TOPIC = "orders"
TP = tuple[str, int]
CONSUME_EVERY_MS = 100
POLL_EVERY_MS = 1000
RECORDS_PER_STEP = 5
SESSION_MS = 45000
INTERVAL_MS = 5000
#: Sees each request (and its sender's name) before the engine: returns an answer to give
#: instead, or None.
Interceptor = Callable[[str, Any], Any | None]


@dataclass
class Member:
    name: str
    client: ConsumerClient
    alive: bool = True
    polling: bool = True
    events: list[ClientEvent] = field(default_factory=list)
    #: Every request sent and every answer received, in order: ("sent", at, request, None) and
    #: ("answered", at, request, response).
    log: list[tuple[str, int, Any, Any]] = field(default_factory=list)

    def events_of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def sent(self, kind: type) -> list[tuple[int, Any]]:
        return [(at, r) for what, at, r, _ in self.log if what == "sent" and isinstance(r, kind)]

    def last_commits(self) -> dict[TP, int]:
        """The offsets of this member's commits that succeeded, the last one per partition."""
        out: dict[TP, int] = {}
        for event in self.events_of(CommitCompleted):
            out.update(event.offsets)
        return out

    def owned(self) -> list[int]:
        return sorted(p for _, p in self.client.assignment)


class Harness:
    def __init__(self, partitions: int = 6) -> None:
        self.now = 0
        self.coordinator = GroupCoordinator(CoordinatorConfig(), now_ms=0)
        self.coordinator.set_topic_partitions(TOPIC, partitions, 0)
        self.members: dict[str, Member] = {}
        self.interceptors: list[Interceptor] = []
        #: (topic, partition, offset) → who processed it.
        self.processed: dict[tuple[str, int, int], str] = {}
        self.duplicates: list[tuple[str, int, int]] = []
        self.next_consume_ms = 0
        self.next_poll_ms = 0

    def add(
        self, name: str, *, member_id: str | None = None, quiet: bool = False, **overrides: Any
    ) -> Member:
        client = ConsumerClient(
            ConsumerProtocolConfig(GROUP, **{"topics": (TOPIC,), "client_id": name, **overrides}),
            self.now,
            member_id_factory=lambda: member_id or name,
            quiet_heartbeats=quiet,
        )
        member = self.members[name] = Member(name, client)
        client.poll(self.now)
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive]

    def crash(self, name: str) -> None:
        """The process dies: its client is never called again."""
        self.members[name].alive = False

    def group(self) -> ConsumerGroupView:
        view = self.coordinator.group(GROUP)
        assert isinstance(view, ConsumerGroupView)
        return view

    def owners(self) -> dict[str, list[int]]:
        return {m.name: m.owned() for m in self.live() if m.client.joined}

    # -- the application -----------------------------------------------------------------------

    def consume(self) -> None:
        for member in self.live():
            client = member.client
            positions = client.positions
            for tp in sorted(client.fetchable):
                position = max(positions[tp], 0)
                for offset in range(position, position + RECORDS_PER_STEP):
                    key = (tp[0], tp[1], offset)
                    if key in self.processed:
                        self.duplicates.append(key)
                    self.processed[key] = member.name
                client.record_consumed(tp[0], tp[1], position + RECORDS_PER_STEP)

    def check(self) -> None:
        holders: dict[TP, list[str]] = {}
        for member in self.live():
            for tp in member.client.fetchable:
                holders.setdefault(tp, []).append(member.name)
        doubled = {tp: names for tp, names in holders.items() if len(names) > 1}
        assert not doubled, f"consumed by two members at {self.now}: {doubled}"

    # -- the network and the clock -------------------------------------------------------------

    def _answer(self, member: Member, request: Any) -> Any:
        for intercept in self.interceptors:
            answer = intercept(member.name, request)
            if answer is not None:
                return answer
        reply = self.coordinator.handle(request, self.now)
        assert reply.done
        return reply.response

    def step(self) -> None:
        progressed = True
        while progressed:
            progressed = False
            for member in self.live():
                client = member.client
                for request in client.outgoing(self.now):
                    progressed = True
                    member.log.append(("sent", self.now, request, None))
                    member.events.extend(client.events())
                    self.check()
                    response = self._answer(member, request)
                    client.receive(request, response, self.now)
                    member.log.append(("answered", self.now, request, response))
                    member.events.extend(client.events())
                    self.check()
                member.events.extend(client.events())
            self.check()
        for member in self.live():
            deadline = member.client.next_deadline_ms()
            assert deadline is None or deadline > self.now, (member.name, deadline, self.now)

    def run(self, ms: int) -> None:
        end = self.now + ms
        self.step()
        while True:
            deadlines = [
                self.coordinator.next_deadline_ms(),
                self.next_consume_ms,
                self.next_poll_ms,
            ]
            deadlines.extend(m.client.next_deadline_ms() for m in self.live())
            upcoming = min(d for d in deadlines if d is not None)
            if upcoming > end:
                self.now = end
                self.coordinator.advance(end)
                self.step()
                return
            self.now = max(self.now, upcoming)
            self.coordinator.advance(self.now)
            if self.now >= self.next_consume_ms:
                self.consume()
                self.next_consume_ms = self.now + CONSUME_EVERY_MS
            if self.now >= self.next_poll_ms:
                for member in self.live():
                    if member.polling:
                        member.client.poll(self.now)
                self.next_poll_ms = self.now + POLL_EVERY_MS
            self.step()


@pytest.fixture
def h() -> Harness:
    return Harness()


def heartbeats(member: Member, after: int = -1) -> list[ConsumerGroupHeartbeatRequest]:
    return [r for at, r in member.sent(ConsumerGroupHeartbeatRequest) if at > after]


def partitions(owned: tuple[OwnedTopicPartitions, ...] | None) -> list[int] | None:
    if owned is None:
        return None
    return sorted(p for topic in owned for p in topic.partitions)


def test_two_members_share_a_topic_without_consuming_a_partition_twice(h: Harness) -> None:
    a = h.add("a")
    h.run(1000)
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    assert a.client.state is ConsumerMemberState.STABLE and a.client.epoch == 1
    join, ack, *_ = heartbeats(a)
    assert (join.member_id, join.member_epoch, join.topic_partitions) == ("a", 0, ())
    assert join.rebalance_timeout_ms == 300000 and join.subscribed_topic_names == (TOPIC,)
    assert partitions(ack.topic_partitions) == [0, 1, 2, 3, 4, 5] and ack.member_epoch == 1
    assert ack.subscribed_topic_names is None and ack.rebalance_timeout_ms == -1
    (_, fetch), *_ = a.sent(OffsetFetchRequest)
    assert (fetch.member_id, fetch.member_epoch) == ("a", 1)

    h.add("b")
    h.run(20000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.group().state.value == "Stable" and h.duplicates == []
    assert all(r.topic_partitions is None for r in heartbeats(a, h.now - 10000))
    (revoked,) = a.events_of(PartitionsRevoked)
    assert revoked.partitions == ((TOPIC, 3), (TOPIC, 4), (TOPIC, 5))
    # b starts each partition at the position a committed when it revoked it.
    committed = a.last_commits()
    started = {
        tp: o for e in h.members["b"].events_of(OffsetsFetched) for tp, o in e.positions.items()
    }
    assert started and all(started[tp] == committed[tp] > 0 for tp in revoked.partitions)
    # Every record of every partition up to its position was processed exactly once.
    for member in h.live():
        for (topic, partition), position in member.client.positions.items():
            offsets = {o for (t, p, o) in h.processed if (t, p) == (topic, partition)}
            assert offsets == set(range(position))


def test_a_third_member_moves_only_what_it_takes_and_each_move_is_committed_before_it_is_acknowledged(  # noqa: E501
    h: Harness,
) -> None:
    a = h.add("a")
    h.run(2500)  # a and b heartbeat 2.5 s apart: they release c's partitions one by one
    b = h.add("b")
    h.run(20000)
    before = h.owners()
    assert before == {"a": [0, 1, 2], "b": [3, 4, 5]}
    mark = h.now
    # The first commit of each of a and b after c joins is refused: the revocation waits for
    # the retry, and only then is it acknowledged.
    refused: set[str] = set()

    def refuse_first_commit(sender: str, request: Any) -> Any:
        if isinstance(request, OffsetCommitRequest) and sender not in refused:
            refused.add(sender)
            return OffsetCommitResponse(
                partitions=tuple(
                    PartitionResult(
                        topic=o.topic,
                        partition=o.partition,
                        error_code=Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    )
                    for o in request.offsets
                )
            )
        return None

    h.interceptors.append(refuse_first_commit)
    c = h.add("c")
    h.run(30000)
    assert refused >= {"a", "b"}
    after = h.owners()
    assert sorted(after) == ["a", "b", "c"] and all(len(p) == 2 for p in after.values())
    assert h.duplicates == [] and h.group().state.value == "Stable"
    for member in (a, b):
        kept = set(before[member.name]) & set(after[member.name])
        moved = set(before[member.name]) - set(after[member.name])
        (revoked,) = [e for e in member.events_of(PartitionsRevoked) if e.at_ms > mark]
        assert {p for _, p in revoked.partitions} == moved and len(moved) == 1
        assert not member.events_of(PartitionsLost)
        # The moved partition's position was committed (answered) before the heartbeat that
        # leaves it out of the owned list was sent.
        (tp,) = revoked.partitions
        commit_answered = next(
            i
            for i, (what, at, r, _) in enumerate(member.log)
            if what == "answered"
            and at > mark
            and isinstance(r, OffsetCommitRequest)
            and any((o.topic, o.partition) == tp for o in r.offsets)
        )
        ack_sent = next(
            i
            for i, (what, at, r, _) in enumerate(member.log)
            if what == "sent"
            and at > mark
            and isinstance(r, ConsumerGroupHeartbeatRequest)
            and r.topic_partitions is not None
            and tp[1] not in (partitions(r.topic_partitions) or [])
        )
        assert commit_answered < ack_sent
        assert kept == set(after[member.name])
    # c joined owning nothing, then got each partition once its old owner released it: the
    # assignment came in two steps, each reconciled and acknowledged.
    steps = [e for e in c.events_of(PartitionsAssigned) if e.partitions]
    assert [len(e.partitions) for e in steps] == [1, 1]
    assert {p for e in steps for _, p in e.partitions} == set(after["c"])
    assert ("JOINING", "STABLE") in [
        (e.from_state, e.to_state) for e in c.events_of(MemberStateChanged)
    ]


def test_one_heartbeat_is_in_flight_at_a_time_and_after_a_lost_one_the_next_is_full(
    h: Harness,
) -> None:
    a = h.add("a")
    h.run(1000)
    client = a.client
    due = h.now - 1000 + INTERVAL_MS
    assert client.next_deadline_ms() == due
    (plain,) = client.outgoing(due)
    assert isinstance(plain, ConsumerGroupHeartbeatRequest) and plain.member_epoch == 1
    assert plain.topic_partitions is None and plain.subscribed_topic_names is None
    assert plain.rebalance_timeout_ms == -1 and plain.server_assignor is None
    assert client.outgoing(due + 2 * INTERVAL_MS) == []  # unanswered: none sent beside it
    client.fail(plain, due + 2 * INTERVAL_MS)
    assert client.outgoing(due + 2 * INTERVAL_MS) == []  # the backoff
    later = due + 2 * INTERVAL_MS + 100
    (full,) = client.outgoing(later)
    assert isinstance(full, ConsumerGroupHeartbeatRequest) and full.member_epoch == 1
    assert full.subscribed_topic_names == (TOPIC,) and full.rebalance_timeout_ms == 300000
    assert partitions(full.topic_partitions) == [0, 1, 2, 3, 4, 5]
    reply = h.coordinator.handle(full, later)
    assert reply.response is not None and reply.response.assignment is not None
    client.receive(full, reply.response, later)
    (after,) = client.outgoing(later + INTERVAL_MS)
    assert isinstance(after, ConsumerGroupHeartbeatRequest) and after.topic_partitions is None
    assert [e.type for e in client.events()].count("CoordinatorLost") == 1


def test_a_leave_hands_the_partitions_over_at_once(h: Harness) -> None:
    h.add("a")
    b = h.add("b")
    h.run(20000)
    positions = b.client.positions
    b.client.close(h.now)
    h.step()  # no time passes
    assert b.client.closed
    (left,) = b.events_of(LeftGroup)
    assert left.leave_group_sent and b.events_of(PartitionsRevoked)[-1].partitions == tuple(
        sorted(positions)
    )
    assert heartbeats(b)[-1].member_epoch == -1
    assert set(h.group().members) == {"a"}
    committed = {tp: c.offset for tp, c in h.coordinator.committed_offsets(GROUP).items()}
    assert {tp: committed[tp] for tp in positions} == positions
    h.run(INTERVAL_MS)  # a's next heartbeat is given them
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    assert h.duplicates == []


def test_a_static_members_restart_gets_its_partitions_back(h: Harness) -> None:
    h.add("a", group_instance_id="app-a")
    b = h.add("b", group_instance_id="app-b")
    h.run(20000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    epoch = h.group().group_epoch
    b.client.close(h.now)
    h.step()
    assert heartbeats(b)[-1].member_epoch == -2 and b.client.closed
    h.crash("b")
    h.run(10000)  # within the session: nobody takes b's partitions, no new epoch
    assert h.owners() == {"a": [0, 1, 2]} and h.group().group_epoch == epoch
    b2 = h.add("b2", member_id="b-restarted", group_instance_id="app-b")
    h.run(10000)
    assert h.owners() == {"a": [0, 1, 2], "b2": [3, 4, 5]}
    assert h.group().group_epoch == epoch and set(h.group().members) == {"a", "b-restarted"}
    assert b2.client.epoch == epoch
    assert h.duplicates == []


def test_a_fenced_member_loses_everything_and_rejoins_with_the_same_id(h: Harness) -> None:
    a = h.add("a")
    h.add("b")
    h.run(20000)
    assert h.owners()["a"] == [0, 1, 2]
    once = {"left": 1}

    def fence(sender: str, request: Any) -> Any:
        if (
            sender == "a"
            and isinstance(request, ConsumerGroupHeartbeatRequest)
            and request.member_epoch > 0
            and once["left"]
        ):
            once["left"] -= 1
            return ConsumerGroupHeartbeatResponse(
                error_code=Errors.FENCED_MEMBER_EPOCH, member_id=request.member_id
            )
        return None

    h.interceptors.append(fence)
    h.run(INTERVAL_MS)
    (lost,) = a.events_of(PartitionsLost)
    assert lost.partitions == ((TOPIC, 0), (TOPIC, 1), (TOPIC, 2))
    states = [(e.from_state, e.to_state) for e in a.events_of(MemberStateChanged)]
    assert ("STABLE", "FENCED") in states and ("FENCED", "JOINING") in states
    rejoin = [r for r in heartbeats(a) if r.member_epoch == 0][-1]
    assert rejoin.member_id == "a" and rejoin.topic_partitions == ()
    assert rejoin.rebalance_timeout_ms == 300000  # a full request again
    h.run(20000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]} and a.client.member_id == "a"
    assert set(h.group().members) == {"a", "b"}
    assert a.events_of(MemberEpochChanged)[-1].previous_epoch == 0


def test_a_crashed_members_partitions_move_after_the_session_timeout(h: Harness) -> None:
    h.add("a")
    h.add("b")
    h.run(20000)
    h.crash("b")
    crashed = h.now
    h.run(SESSION_MS - 5000)  # within b's session: its partitions stay b's
    assert h.owners() == {"a": [0, 1, 2]} and set(h.group().members) == {"a", "b"}
    h.run(SESSION_MS + INTERVAL_MS + 1000 - (h.now - crashed))
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]} and set(h.group().members) == {"a"}
    # a starts them at what b committed last (auto-commit every 5 s): b's records after that
    # are processed again, as Kafka's at-least-once delivery does after a crash.
    committed = h.members["b"].last_commits()
    fetched = {
        tp: o for e in h.members["a"].events_of(OffsetsFetched) for tp, o in e.positions.items()
    }
    assert all(fetched[(TOPIC, p)] == committed[(TOPIC, p)] for p in (3, 4, 5))


def test_commits_carry_the_member_epoch_and_a_stale_one_is_retried(h: Harness) -> None:
    a = h.add("a")
    h.run(1000)
    stale = {"left": 1}

    def stale_once(sender: str, request: Any) -> Any:
        if isinstance(request, OffsetCommitRequest) and stale["left"]:
            stale["left"] -= 1
            return OffsetCommitResponse(
                partitions=tuple(
                    PartitionResult(
                        topic=o.topic,
                        partition=o.partition,
                        error_code=Errors.STALE_MEMBER_EPOCH,
                    )
                    for o in request.offsets
                )
            )
        return None

    h.interceptors.append(stale_once)
    h.add("b")
    h.run(20000)
    assert stale["left"] == 0 and h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    commits = [r for _, r in a.sent(OffsetCommitRequest)]
    assert commits and all(r.member_id == "a" for r in commits)
    # Each commit carries the epoch of the last heartbeat answer before it.
    epoch = 0
    for what, _, request, response in a.log:
        if what == "answered" and isinstance(response, ConsumerGroupHeartbeatResponse):
            epoch = response.member_epoch
        elif what == "sent" and isinstance(request, OffsetCommitRequest):
            assert request.generation_id == epoch > 0
    # The stale commit (the one before the revocation) was sent again, and the revocation
    # waited for it: b starts from what a committed.
    first, retry = commits[0], commits[1]
    assert {(o.topic, o.partition) for o in first.offsets} <= {
        (o.topic, o.partition) for o in retry.offsets
    }
    assert not a.events_of(PartitionsLost) and h.duplicates == []
    assert a.events_of(CommitCompleted)


def test_an_unreachable_coordinator_for_a_session_counts_as_lost_then_the_member_rejoins(
    h: Harness,
) -> None:
    h.add("a")
    b = h.add("b")
    h.run(20000)
    cut = {"on": True}

    def unreachable(sender: str, request: Any) -> Any:
        if cut["on"] and sender == "b" and isinstance(request, ConsumerGroupHeartbeatRequest):
            return ConsumerGroupHeartbeatResponse(
                error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id
            )
        return None

    h.interceptors.append(unreachable)
    h.run(SESSION_MS + INTERVAL_MS)
    assert b.events_of(PartitionsLost) and b.events_of(CoordinatorLost)
    assert h.owners()["a"] == [0, 1, 2, 3, 4, 5]
    cut["on"] = False
    h.run(30000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]} and b.client.member_id == "b"


def test_a_member_that_stops_polling_leaves_and_rejoins_at_its_next_poll(h: Harness) -> None:
    h.add("a")
    b = h.add("b", rebalance_timeout_ms=30000)
    h.run(20000)
    b.polling = False
    h.run(31000)
    assert b.client.awaiting_poll and b.client.state is ConsumerMemberState.STALE
    assert heartbeats(b)[-1].member_epoch == -1 and b.events_of(PartitionsLost)
    assert b.events_of(LeftGroup)[-1].reason == "consumer poll timeout has expired"
    h.run(INTERVAL_MS)
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    b.polling = True
    h.run(30000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}


def test_a_second_process_of_a_static_member_that_has_not_left_fails_in_words(
    h: Harness,
) -> None:
    h.add("a", group_instance_id="app")
    h.run(1000)
    twin = h.add("twin", group_instance_id="app")
    h.run(1000)
    assert twin.client.closed and twin.client.fatal_error == Errors.UNRELEASED_INSTANCE_ID
    (fatal,) = twin.events_of(FatalError)
    assert "group.instance.id" in fatal.reason
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}


def test_an_unknown_server_assignor_is_fatal(h: Harness) -> None:
    a = h.add("a", server_assignor="sticky-deluxe")
    h.run(1000)
    assert a.client.fatal_error == Errors.UNSUPPORTED_ASSIGNOR and a.client.closed
    assert a.client.state is ConsumerMemberState.FATAL


def test_a_regex_subscription_and_the_range_assignor_are_sent_as_configured(h: Harness) -> None:
    a = h.add("a", topics=(), topic_regex="ord.*", server_assignor="range")
    h.run(1000)
    (join, *_) = heartbeats(a)
    assert join.subscribed_topic_regex == "ord.*" and join.subscribed_topic_names is None
    assert join.server_assignor == "range"
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    assert h.group().members["a"].subscribed_topic_regex == "ord.*"


def test_configuration_is_checked_and_member_ids_are_drawn_like_kafka_uuids() -> None:
    with pytest.raises(ValueError, match="exactly one of topics and topic_regex"):
        ConsumerProtocolConfig(GROUP)
    with pytest.raises(ValueError, match="exactly one of topics and topic_regex"):
        ConsumerProtocolConfig(GROUP, (TOPIC,), topic_regex="o.*")
    client = ConsumerClient(ConsumerProtocolConfig(GROUP, (TOPIC,)), 0)
    other = ConsumerClient(ConsumerProtocolConfig(GROUP, (TOPIC,)), 0)
    assert len(client.member_id) == 22 and client.member_id != other.member_id
    assert client.outgoing(0) == [] and client.next_deadline_ms() is None  # before poll()
    event = MemberEpochChanged(at_ms=5, member_id="m", epoch=3, previous_epoch=0)
    assert event.to_json() == {
        "type": "MemberEpochChanged",
        "at_ms": 5,
        "member_id": "m",
        "epoch": 3,
        "previous_epoch": 0,
    }


def test_every_state_change_is_a_row_of_the_table(h: Harness) -> None:
    h.add("a")
    b = h.add("b", group_instance_id="b")
    h.run(20000)
    b.client.close(h.now)
    h.run(1000)
    for member in h.members.values():
        for event in member.events_of(MemberStateChanged):
            key = (ConsumerMemberState(event.from_state), ConsumerMemberState(event.to_state))
            assert CONSUMER_TRANSITIONS[key] == event.reason


def test_a_quiet_member_heartbeats_at_the_last_tick_before_its_session_ends(h: Harness) -> None:
    quiet = h.add("quiet", quiet=True)
    regular = h.add("regular")
    h.run(20000)
    owners, epoch, settled = h.owners(), h.group().group_epoch, h.now
    h.run(200000)
    times = [at for at, _ in quiet.sent(ConsumerGroupHeartbeatRequest) if at > settled]
    assert [b - a for a, b in itertools.pairwise(times)] == [40000] * (len(times) - 1)
    assert len(times) >= 4
    assert len([at for at, _ in regular.sent(ConsumerGroupHeartbeatRequest) if at > settled]) >= 39
    assert h.group().state.value == "Stable" and h.group().group_epoch == epoch
    assert h.owners() == owners and set(h.group().members) == {"quiet", "regular"}


def test_group_changed_brings_a_quiet_members_heartbeat_back_to_its_regular_tick(
    h: Harness,
) -> None:
    a = h.add("a", quiet=True)
    h.run(60000)
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    last = [at for at, _ in a.sent(ConsumerGroupHeartbeatRequest)][-1]
    h.add("b")
    h.step()  # b joins: the group's epoch goes up, a must revoke half
    a.client.group_changed(h.now)
    changed = h.now
    h.run(20000)
    after = [at for at, _ in a.sent(ConsumerGroupHeartbeatRequest) if at > changed]
    assert after[0] == last + ((changed - last) // INTERVAL_MS + 1) * INTERVAL_MS
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]} and h.duplicates == []


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["join", "close", "crash", "fence", "stall", "outage", "wait"]),
            st.integers(min_value=0, max_value=4),
            st.integers(min_value=100, max_value=60000),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_no_partition_is_ever_consumed_by_two_members_at_once(
    actions: list[tuple[str, int, int]],
) -> None:
    h = Harness(partitions=8)
    fence_next: set[str] = set()

    def fence(sender: str, request: Any) -> Any:
        if (
            sender in fence_next
            and isinstance(request, ConsumerGroupHeartbeatRequest)
            and request.member_epoch > 0
        ):
            fence_next.discard(sender)
            return ConsumerGroupHeartbeatResponse(
                error_code=Errors.FENCED_MEMBER_EPOCH, member_id=request.member_id
            )
        if sender in cut and isinstance(request, ConsumerGroupHeartbeatRequest):
            return ConsumerGroupHeartbeatResponse(
                error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id
            )
        return None

    cut: set[str] = set()
    h.interceptors.append(fence)
    names = (f"m{i}" for i in itertools.count())
    for action, which, wait_ms in actions:
        live = [m for m in h.live() if not m.client.closed]
        if action == "join" or not live:
            h.add(next(names), group_instance_id="static" if which == 0 else None)
        else:
            member = live[which % len(live)]
            if action == "close":
                member.client.close(h.now)
            elif action == "crash":
                h.crash(member.name)
            elif action == "fence":
                fence_next.add(member.name)
            elif action == "stall":  # the application stops polling, or starts again
                member.polling = not member.polling
            elif action == "outage":  # its heartbeats fail, or reach the coordinator again
                cut.symmetric_difference_update({member.name})
        h.run(wait_ms)  # check() runs after every request and answer
    cut.clear()
    for member in h.live():
        member.polling = True
    h.run(SESSION_MS + 30000)
    owners = h.owners()
    held = sorted(p for parts in owners.values() for p in parts)
    if owners:
        assert held == list(range(8)), owners


def test_a_member_that_holds_its_revocation_is_fenced_at_the_rebalance_timeout_and_rejoins(
    h: Harness,
) -> None:
    a = h.add("a", rebalance_timeout_ms=20000)
    h.run(1000)
    a.client.hold_revocations(True)
    assert a.client.revocations_held
    h.add("b")
    h.run(INTERVAL_MS + 1000)
    # a was asked to give 3 partitions up: it committed them and holds them back, still
    # heartbeating at its epoch; b waits for them.
    assert a.client.pending_revocation == {(TOPIC, p) for p in (3, 4, 5)}
    assert a.owned() == [0, 1, 2, 3, 4, 5] and sorted(p for _, p in a.client.fetchable) == [0, 1, 2]
    assert not a.events_of(PartitionsRevoked) and not h.members["b"].client.fetchable
    asked = [e for e in a.events_of(MemberStateChanged) if e.to_state == "RECONCILING"][-1].at_ms
    h.run(asked + 20000 - 1000 - h.now)
    assert h.group().members["a"].pending_revocation  # UNREVOKED, within its rebalance timeout
    h.run(INTERVAL_MS + 2000)  # the timeout, then a's next heartbeat learns it was fenced
    (lost,) = a.events_of(PartitionsLost)
    assert lost.partitions == tuple((TOPIC, p) for p in range(6))
    assert not a.events_of(PartitionsRevoked)
    states = [(e.from_state, e.to_state) for e in a.events_of(MemberStateChanged)]
    assert ("RECONCILING", "FENCED") in states and ("FENCED", "JOINING") in states
    h.run(10000)
    # Rejoined under the same id, owning nothing to revoke: it gets its share at once.
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]} and a.client.member_id == "a"
    # b starts what a held where a committed it before holding it (the harness checked all
    # along that no partition was fetchable by both).
    fetched = {
        tp: o for e in h.members["b"].events_of(OffsetsFetched) for tp, o in e.positions.items()
    }
    committed = a.last_commits()
    assert {p: fetched[(TOPIC, p)] for p in (3, 4, 5)} == {
        p: committed[(TOPIC, p)] for p in (3, 4, 5)
    }
    a.client.hold_revocations(False)
    assert not a.client.revocations_held


def test_a_held_revocation_let_go_in_time_finishes_without_a_fence(h: Harness) -> None:
    a = h.add("a", rebalance_timeout_ms=20000)
    h.run(1000)
    a.client.hold_revocations(True)
    h.add("b")
    h.run(INTERVAL_MS + 5000)
    assert a.client.pending_revocation and not h.members["b"].client.fetchable
    # Nothing timed while held: the client's next deadline is its heartbeat, not now.
    deadline = a.client.next_deadline_ms()
    assert deadline is not None and deadline > h.now
    a.client.hold_revocations(False)
    h.run(2 * INTERVAL_MS)
    (revoked,) = a.events_of(PartitionsRevoked)
    assert revoked.partitions == ((TOPIC, 3), (TOPIC, 4), (TOPIC, 5))
    assert not a.events_of(PartitionsLost)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert not [e for e in h.group().members.values() if e.pending_revocation]
