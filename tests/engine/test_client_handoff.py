"""The handoff client (`HandoffClient`) against the real `GroupCoordinator`, in virtual time.

Each member is a client plus an application that consumes its started partitions every 100 ms
(5 records each) and stops a partition when asked, handing its position to the client. The
harness watches, after every answer delivered, that no partition is consumed by two
applications or held as consumed by two clients, and records every offset processed, so a
record processed twice is seen.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordinator_engine import CoordinatorConfig, Errors, GroupCoordinator
from coordinator_engine.client import (
    CloseConfirmed,
    CommitCompleted,
    CommitFailed,
    FatalError,
    HandoffClient,
    HandoffConfig,
    HandoffJoined,
    LeftGroup,
    PartitionsLost,
    PartitionsToClose,
    PartitionsToStart,
    StartConfirmed,
)
from coordinator_engine.client.events import ClientEvent
from coordinator_engine.handoff import HandoffGroupView, HandoffState
from coordinator_engine.requests import (
    HandoffHeartbeatRequest,
    OffsetCommitRequest,
)
from coordinator_engine.responses import (
    HandoffHeartbeatResponse,
    OffsetCommitResponse,
    PartitionResult,
)

GROUP = "inventory"
TOPIC = "stock"
TP = tuple[str, int]
CONSUME_EVERY_MS = 100
RECORDS_PER_STEP = 5
#: Sees each request (and its sender's name) before the engine: returns an answer to give
#: instead, or None.
Interceptor = Callable[[str, Any], Any | None]


def ids(name: str) -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"{name}-{next(counter)}"


@dataclass
class Member:
    name: str
    client: HandoffClient
    alive: bool = True
    #: The application's partitions: the next offset it will process.
    consuming: dict[TP, int] = field(default_factory=dict)
    close_delay_ms: int = 0
    pending_stops: list[tuple[int, tuple[TP, ...]]] = field(default_factory=list)
    events: list[ClientEvent] = field(default_factory=list)
    sent: list[tuple[int, Any]] = field(default_factory=list)

    def events_of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


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
        #: Every start (member, partition, position) and stop (member, partition, position).
        self.starts: list[tuple[str, TP, int]] = []
        self.stops: list[tuple[str, TP, int]] = []
        self.next_consume_ms = 0

    def add(self, name: str, *, quiet_heartbeats: bool = False, **overrides: Any) -> Member:
        settings: dict[str, Any] = {
            "client_id": name,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "retry_backoff_ms": 200,
        }
        settings.update(overrides)
        client = HandoffClient(
            HandoffConfig(GROUP, (TOPIC,), **settings),
            self.now,
            member_id_factory=ids(name),
            quiet_heartbeats=quiet_heartbeats,
        )
        member = self.members[name] = Member(name, client)
        client.poll(self.now)
        return member

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive]

    def crash(self, name: str) -> None:
        """The process dies: its application stops, its client is never called again."""
        member = self.members[name]
        member.alive = False
        member.consuming.clear()

    def group(self) -> HandoffGroupView:
        view = self.coordinator.group(GROUP)
        assert isinstance(view, HandoffGroupView)
        return view

    # -- the application -----------------------------------------------------------------------

    def react(self, member: Member, event: ClientEvent) -> None:
        member.events.append(event)
        if isinstance(event, PartitionsToStart):
            for tp, position in event.positions.items():
                member.consuming[tp] = max(position, 0)
                self.starts.append((member.name, tp, position))
        elif isinstance(event, PartitionsToClose):
            if member.close_delay_ms:
                member.pending_stops.append((self.now + member.close_delay_ms, event.partitions))
            else:
                self.stop(member, event.partitions)
        elif isinstance(event, PartitionsLost):
            for tp in event.partitions:
                member.consuming.pop(tp, None)

    def stop(self, member: Member, partitions: tuple[TP, ...]) -> None:
        positions = {tp: member.consuming.pop(tp) for tp in partitions if tp in member.consuming}
        for tp, position in positions.items():
            self.stops.append((member.name, tp, position))
        if positions:
            member.client.partitions_stopped(positions)

    def consume(self) -> None:
        for member in self.live():
            for tp, position in member.consuming.items():
                for offset in range(position, position + RECORDS_PER_STEP):
                    key = (tp[0], tp[1], offset)
                    if key in self.processed:
                        self.duplicates.append(key)
                    self.processed[key] = member.name
                member.consuming[tp] = position + RECORDS_PER_STEP
                member.client.record_consumed(tp[0], tp[1], position + RECORDS_PER_STEP)

    def check(self) -> None:
        apps: dict[TP, list[str]] = {}
        clients: dict[TP, list[str]] = {}
        for member in self.live():
            for tp in member.consuming:
                apps.setdefault(tp, []).append(member.name)
            for tp in member.client.consuming:
                clients.setdefault(tp, []).append(member.name)
        for owners in (apps, clients):
            doubled = {tp: names for tp, names in owners.items() if len(names) > 1}
            assert not doubled, f"consumed twice at {self.now}: {doubled}"

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
                due = [s for s in member.pending_stops if s[0] <= self.now]
                for stop in due:
                    member.pending_stops.remove(stop)
                    self.stop(member, stop[1])
                client = member.client
                for request in client.outgoing(self.now):
                    progressed = True
                    member.sent.append((self.now, request))
                    response = self._answer(member, request)
                    for event in client.events():
                        self.react(member, event)
                    self.check()
                    client.receive(request, response, self.now)
                    for event in client.events():
                        self.react(member, event)
                    self.check()
                for event in client.events():
                    self.react(member, event)
            self.check()
        for member in self.live():
            deadline = member.client.next_deadline_ms()
            assert deadline is None or deadline > self.now, (member.name, deadline, self.now)

    def run(self, ms: int) -> None:
        end = self.now + ms
        self.step()
        while True:
            deadlines = [self.coordinator.next_deadline_ms(), self.next_consume_ms]
            for member in self.live():
                deadlines.append(member.client.next_deadline_ms())
                deadlines.extend(due for due, _ in member.pending_stops)
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
            self.step()

    def owners(self) -> dict[str, list[int]]:
        return {m.name: sorted(p for _, p in m.consuming) for m in self.live() if m.client.joined}


@pytest.fixture
def h() -> Iterator[Harness]:
    yield Harness()


def test_two_members_share_a_topic_without_consuming_a_partition_twice(h: Harness) -> None:
    a = h.add("a")
    h.run(3000)
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    assert a.client.member_id == "a-1" and a.events_of(HandoffJoined)
    h.add("b")
    h.run(5000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.group().state is HandoffState.STABLE
    assert h.duplicates == []
    # b started each partition at the very position a stopped it, from the committed offset.
    stopped = {tp: position for name, tp, position in h.stops if name == "a"}
    started = {tp: position for name, tp, position in h.starts if name == "b"}
    assert sorted(stopped) == sorted(started) == [(TOPIC, 3), (TOPIC, 4), (TOPIC, 5)]
    assert started == stopped
    assert all(position > 0 for position in started.values())
    committed = h.coordinator.committed_offsets(GROUP)
    assert {tp: committed[tp].offset for tp in stopped} == stopped
    assert {p for e in a.events_of(CloseConfirmed) for p in e.partitions} == set(stopped)


def test_three_members_joining_one_by_one_never_share_a_partition(h: Harness) -> None:
    h.add("a")
    h.run(2500)
    h.add("b")
    h.run(700)  # b joins while the first handoff is under way: c comes mid-handoff
    h.add("c")
    h.run(8000)
    owners = h.owners()
    assert sorted(owners) == ["a", "b", "c"] and owners["a"] == [0, 1]
    assert sorted(p for parts in owners.values() for p in parts) == [0, 1, 2, 3, 4, 5]
    assert all(len(parts) == 2 for parts in owners.values())
    assert h.duplicates == []
    last_stop = {}
    for _, tp, position in h.stops:
        last_stop[tp] = position
    for name, tp, position in h.starts:
        if name != "a":
            assert position == last_stop[tp], (name, tp)
    # Every record of every partition up to its current position was processed exactly once.
    for member in h.live():
        for (topic, partition), position in member.consuming.items():
            offsets = {o for (t, p, o) in h.processed if (t, p) == (topic, partition)}
            assert offsets == set(range(position))


def test_a_close_is_confirmed_only_after_its_commit_succeeded(h: Harness) -> None:
    h.add("a")
    h.run(2500)
    failures = {"left": 2}

    def refuse_commits(sender: str, request: Any) -> Any:
        if isinstance(request, OffsetCommitRequest) and failures["left"]:
            failures["left"] -= 1
            return OffsetCommitResponse(
                partitions=tuple(
                    PartitionResult(
                        topic=o.topic,
                        partition=o.partition,
                        error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                    )
                    for o in request.offsets
                )
            )
        return None

    h.interceptors.append(refuse_commits)
    a = h.members["a"]
    h.add("b")
    h.run(5000)
    assert failures["left"] == 0 and len(a.events_of(CommitFailed)) == 2
    first_commit = a.events_of(CommitCompleted)[0].at_ms
    confirmations = [
        at
        for at, r in a.sent
        if isinstance(r, HandoffHeartbeatRequest) and r.closed and r.member_epoch > 0
    ]
    assert confirmations and min(confirmations) >= first_commit
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.duplicates == []


def test_a_slow_close_holds_the_group_in_closing(h: Harness) -> None:
    a = h.add("a")
    h.run(2500)
    a.close_delay_ms = 4000
    h.add("b")
    h.run(2500)
    assert h.group().state is HandoffState.CLOSING
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5], "b": []}
    h.run(4000)
    assert h.group().state is HandoffState.STABLE
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.duplicates == []


def test_a_crashed_member_releases_its_partitions_after_the_session_timeout(
    h: Harness,
) -> None:
    h.add("a")
    h.run(2500)
    h.add("b")
    h.run(5000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    h.crash("b")
    crashed_at = h.now
    h.run(4500)  # within b's session: its partitions stay b's, nobody consumes them
    assert h.owners() == {"a": [0, 1, 2]}
    assert set(h.group().members) == {"a-1", "b-1"}
    h.run(6000 + 1500 - (h.now - crashed_at))
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    # a starts them from what was committed for them (b's close-free life committed nothing
    # after it started them at a's final positions).
    committed = h.coordinator.committed_offsets(GROUP)
    for name, tp, position in h.starts:
        if name == "a" and tp[1] >= 3 and position != 0:
            assert position == committed[tp].offset


def test_a_leave_releases_the_partitions_at_once(h: Harness) -> None:
    h.add("a")
    h.run(2500)
    b = h.add("b")
    h.run(5000)
    b_positions = dict(b.consuming)
    for tp, position in b_positions.items():
        b.client.record_consumed(tp[0], tp[1], position)
    b.consuming.clear()  # the application stopped
    b.client.close(h.now)
    h.step()  # no time passes
    assert b.client.closed and b.events_of(LeftGroup)
    assert set(h.group().members) == {"a-1"}
    committed = h.coordinator.committed_offsets(GROUP)
    assert {tp: committed[tp].offset for tp in b_positions} == b_positions
    h.run(1000)  # a's next heartbeat is granted them
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    assert {tp: pos for name, tp, pos in h.starts if name == "a" and tp in b_positions} == (
        b_positions
    )
    assert h.duplicates == []


def test_unknown_member_id_loses_everything_and_rejoins_with_a_fresh_id(h: Harness) -> None:
    a = h.add("a")
    h.run(2500)
    assert len(a.consuming) == 6
    once = {"left": 1}

    def forget(sender: str, request: Any) -> Any:
        if isinstance(request, HandoffHeartbeatRequest) and once["left"]:
            once["left"] -= 1
            return HandoffHeartbeatResponse(
                error_code=Errors.UNKNOWN_MEMBER_ID, member_id=request.member_id
            )
        return None

    h.interceptors.append(forget)
    h.run(1000)
    lost = a.events_of(PartitionsLost)
    assert lost and len(lost[0].partitions) == 6
    assert a.client.member_id == "a-2"
    joins = [r for _, r in a.sent if isinstance(r, HandoffHeartbeatRequest)]
    assert joins[-1].member_id == "a-2"
    assert next(r.member_epoch for r in joins if r.member_id == "a-2") == 0
    h.run(8000)  # a-1 times out on the coordinator; a-2 gets everything back
    assert set(h.group().members) == {"a-2"}
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}


def test_silence_for_a_session_timeout_counts_as_lost_before_the_coordinator_moves_on(
    h: Harness,
) -> None:
    h.add("a")
    h.run(2500)
    b = h.add("b")
    h.run(5000)
    cut = {"on": True}

    def unreachable(sender: str, request: Any) -> Any:
        if cut["on"] and sender == "b" and isinstance(request, HandoffHeartbeatRequest):
            return HandoffHeartbeatResponse(
                error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id
            )
        return None

    h.interceptors.append(unreachable)
    h.run(9000)  # b is removed by its session timeout; a takes over, b stopped first
    assert b.events_of(PartitionsLost)
    assert h.owners()["a"] == [0, 1, 2, 3, 4, 5]
    cut["on"] = False
    h.run(6000)
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert b.client.member_id == "b-2"


def test_a_refused_session_timeout_is_fatal_in_words(h: Harness) -> None:
    a = h.add("a", session_timeout_ms=2000)  # below group.min.session.timeout.ms (6000)
    h.run(100)
    assert a.client.closed and a.client.fatal_error == Errors.INVALID_SESSION_TIMEOUT
    (fatal,) = a.events_of(FatalError)
    assert "session timeout" in fatal.reason


def test_starts_are_confirmed_and_a_classic_group_is_refused(h: Harness) -> None:
    a = h.add("a")
    h.run(2500)
    assert {p for e in a.events_of(StartConfirmed) for p in e.partitions} == {
        (TOPIC, p) for p in range(6)
    }
    assert h.group().state is HandoffState.STABLE

    def classic(request: Any) -> Any:
        return HandoffHeartbeatResponse(
            error_code=Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id
        )

    other = HandoffClient(HandoffConfig("g2", (TOPIC,)), h.now, member_id_factory=ids("x"))
    other.poll(h.now)
    (request,) = other.outgoing(h.now)
    other.receive(request, classic(request), h.now)
    (fatal,) = [e for e in other.events() if isinstance(e, FatalError)]
    assert "not a handoff group" in fatal.reason and other.closed


def test_member_ids_are_drawn_like_kafka_uuids() -> None:
    client = HandoffClient(HandoffConfig(GROUP, (TOPIC,)), 0)
    other = HandoffClient(HandoffConfig(GROUP, (TOPIC,)), 0)
    assert len(client.member_id) == 22 and client.member_id != other.member_id
    with pytest.raises(ValueError, match="heartbeat_interval_ms"):
        HandoffConfig(GROUP, (TOPIC,), heartbeat_interval_ms=45000)


def test_a_lost_connection_loses_everything_at_once(h: Harness) -> None:
    a = h.add("a")
    h.run(2500)
    assert len(a.consuming) == 6
    a.client.connection_lost(h.now)
    h.step()
    (lost,) = a.events_of(PartitionsLost)
    assert len(lost.partitions) == 6 and a.consuming == {} and not a.client.consuming
    assert a.client.member_id == "a-2"
    assert [r.member_epoch for _, r in a.sent if isinstance(r, HandoffHeartbeatRequest)][-1] == 0


def heartbeat_times(member: Member, after: int) -> list[int]:
    return [at for at, r in member.sent if isinstance(r, HandoffHeartbeatRequest) and at > after]


def test_a_quiet_member_of_a_stable_handoff_group_heartbeats_at_the_last_tick_before_its_session_ends(  # noqa: E501
    h: Harness,
) -> None:
    quiet = h.add("quiet", quiet_heartbeats=True)
    regular = h.add("regular")
    h.run(10000)
    assert h.group().state is HandoffState.STABLE
    owners, epoch, settled = h.owners(), h.group().epoch, h.now

    h.run(30000)

    quiet_times = heartbeat_times(quiet, settled)
    assert [b - a for a, b in itertools.pairwise(quiet_times)] == [5000] * (len(quiet_times) - 1)
    assert len(quiet_times) >= 5
    assert len(heartbeat_times(regular, settled)) >= 29
    assert h.group().state is HandoffState.STABLE and h.group().epoch == epoch
    assert h.owners() == owners and len(h.group().members) == 2


def test_group_changed_brings_a_quiet_handoff_members_heartbeat_back_to_its_regular_tick(
    h: Harness,
) -> None:
    a = h.add("a", quiet_heartbeats=True)
    h.run(10000)
    assert h.owners() == {"a": [0, 1, 2, 3, 4, 5]}
    h.run(2500)
    (last,) = heartbeat_times(a, h.now - 5000)[-1:]

    h.add("b")
    h.step()  # b's first heartbeat: the coordinator plans to move half of a's partitions
    a.client.group_changed(h.now)
    changed = h.now
    h.run(5000)

    (next_heartbeat,) = heartbeat_times(a, changed)[:1]
    assert next_heartbeat == last + ((changed - last) // 1000 + 1) * 1000
    assert next_heartbeat - changed <= 1000
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.group().state is HandoffState.STABLE and h.duplicates == []


def test_commit_commits_what_is_consumed_and_never_confirms_a_close(h: Harness) -> None:
    a = h.add("a")
    h.run(2500)
    positions = a.client.positions
    assert positions and all(offset > 0 for offset in positions.values())
    a.client.commit()
    h.step()
    (done,) = [e for e in a.events_of(CommitCompleted)]
    assert done.offsets == positions and a.client.committed == positions
    with pytest.raises(ValueError, match="not a partition this member consumes"):
        a.client.commit({(TOPIC, 99): 1})

    # A commit of a partition asked to close, at an older position than the one it stops at,
    # confirms nothing: only the stopped position's commit does.
    a.close_delay_ms = 4000
    h.add("b")
    h.run(2500)
    closing = a.client.closing
    assert closing
    a.client.commit({tp: 1 for tp in closing})
    h.step()
    assert not [r for at, r in a.sent if isinstance(r, HandoffHeartbeatRequest) and r.closed]
    h.run(4000)
    confirmed = [(at, r) for at, r in a.sent if isinstance(r, HandoffHeartbeatRequest) and r.closed]
    stopped = {tp: position for name, tp, position in h.stops if name == "a"}
    assert confirmed and set(stopped) == closing
    last_commit = max(e.at_ms for e in a.events_of(CommitCompleted) if set(e.offsets) & closing)
    assert min(at for at, _ in confirmed) >= last_commit
    assert {tp: a.client.committed[tp] for tp in closing} == stopped
    assert h.owners() == {"a": [0, 1, 2], "b": [3, 4, 5]}
    assert h.duplicates == []

    a.client.close(h.now)
    with pytest.raises(RuntimeError, match="closed"):
        a.client.commit()
