"""Hypothesis state machine for handoff groups: random members join, heartbeat,
confirm their closes and starts fast or slowly, leave, crash (their sessions expire as the clock
jumps), the partition store and the discovery go out and come back, and the coordinator
restarts from its log. After every step:

- no partition is active on two members at once (active: started by the member and not yet
  closed by it: the member's side of the protocol, simulated here as a consumer does it);
- whatever a member consumes, the coordinator counts as that member's (`owned`), and no
  partition is owned by two members;
- during an outage the assignment of every member that stayed does not change;
- a coordinator rebuilt from the log holds the group exactly as the live one does.

And whenever the members stop changing and do everything they are asked, the group becomes
Stable with every partition of their topics active on exactly one member.

A simulated member behaves as a consumer should: it stops consuming a partition as soon as it is
asked to close it (it commits, then confirms, maybe much later); it starts a partition as soon as
it is granted it (the worst case for duplicates) and confirms maybe later; and it stops
everything once a session timeout has passed since its last answered heartbeat (as Kafka's
consumer does when its heartbeats fail) or when told UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator_engine import (
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    MemoryLog,
    OffsetCommitRequest,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.handoff import HandoffGroupView, HandoffState
from coordinator_engine.requests import HandoffHeartbeatRequest
from coordinator_engine.responses import HandoffHeartbeatResponse

GROUP = "orders"
TOPICS = {"t": 4, "u": 3}
MEMBERS = ("m0", "m1", "m2", "m3")
SESSION = 1_000
CONFIG = CoordinatorConfig(group_min_session_timeout_ms=10)

TP = tuple[str, int]


@dataclass
class SimMember:
    """A consumer's side of the handoff protocol."""

    topics: tuple[str, ...] = ()
    joined: bool = False
    last_heartbeat: int = 0
    active: set[TP] = field(default_factory=set)
    closed: set[TP] = field(default_factory=set)  # stopped and committed, not yet confirmed
    started: set[TP] = field(default_factory=set)  # started, not yet confirmed

    def lose_everything(self) -> None:
        self.joined = False
        self.active.clear()
        self.closed.clear()
        self.started.clear()


def _tps(partitions: set[TP]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic=t, partition=p) for t, p in sorted(partitions))


class HandoffMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.log = MemoryLog()
        self.store = True
        self.discovery = True
        self.coord = self._start(GroupCoordinator(CONFIG, self.log, self.now))
        self.members = {m: SimMember() for m in MEMBERS}
        #: While an outage lasts: the assignment of each member present when it began.
        self.outage_assignments: dict[str, tuple[TopicPartition, ...]] | None = None

    def _start(self, coord: GroupCoordinator) -> GroupCoordinator:
        """The host's facts: partition counts and the switches (not records)."""
        coord.set_partition_store_available(self.store, self.now)
        coord.set_discovery_available(self.discovery, self.now)
        for topic, n in TOPICS.items():
            coord.set_topic_partitions(topic, n, self.now)
        return coord

    def view(self) -> HandoffGroupView | None:
        view = self.coord.group(GROUP)
        assert view is None or isinstance(view, HandoffGroupView)
        return view

    # -- the member's side ------------------------------------------------------------------

    def heartbeat(self, member_id: str, epoch: int) -> HandoffHeartbeatResponse:
        sim = self.members[member_id]
        reply = self.coord.handle(
            HandoffHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                session_timeout_ms=SESSION,
                topics=sim.topics,
                closed=_tps(sim.closed) if epoch > 0 else (),
                started=_tps(sim.started) if epoch > 0 else (),
            ),
            self.now,
        )
        response = reply.response
        assert response is not None
        if response.error_code == Errors.UNKNOWN_MEMBER_ID:
            sim.lose_everything()
            return response
        assert response.error_code == Errors.NONE, response
        if epoch == -1:
            return response
        sim.joined = True
        sim.last_heartbeat = self.now
        sim.closed.clear()  # confirmations sent are taken (or were not needed any more)
        sim.started.clear()
        self.act(member_id, response)
        return response

    def act(self, member_id: str, response: HandoffHeartbeatResponse) -> None:
        sim = self.members[member_id]
        for p in response.close:
            sim.active.discard((p.topic, p.partition))
        for p in response.start:
            sim.active.add((p.topic, p.partition))

    def confirm(self, member_id: str, response: HandoffHeartbeatResponse) -> None:
        """Commit the closed partitions' positions, and remember what to confirm next time."""
        sim = self.members[member_id]
        if response.close:
            commit = self.coord.handle(
                OffsetCommitRequest(
                    group_id=GROUP,
                    member_id=member_id,
                    generation_id=response.member_epoch,
                    offsets=tuple(
                        PartitionOffset(topic=p.topic, partition=p.partition, offset=self.now)
                        for p in response.close
                    ),
                ),
                self.now,
            ).response
            assert commit is not None
            assert {r.error_code for r in commit.partitions} == {Errors.NONE}
        sim.closed |= {(p.topic, p.partition) for p in response.close}
        sim.started |= {(p.topic, p.partition) for p in response.start}

    # -- rules ------------------------------------------------------------------------------

    @rule(
        member_id=st.sampled_from(MEMBERS),
        topics=st.sampled_from([("t",), ("u",), ("t", "u")]),
    )
    def join(self, member_id: str, topics: tuple[str, ...]) -> None:
        sim = self.members[member_id]
        sim.lose_everything()  # a (re)start: it consumes nothing yet
        sim.topics = topics
        if self.outage_assignments is not None:
            self.outage_assignments.pop(member_id, None)
        self.confirm(member_id, self.heartbeat(member_id, 0))

    @rule(member_id=st.sampled_from(MEMBERS), confirm_at_once=st.booleans())
    def heartbeat_and_maybe_confirm(self, member_id: str, confirm_at_once: bool) -> None:
        sim = self.members[member_id]
        if not sim.joined:
            return
        if not confirm_at_once:  # a slow member: what it was asked waits for a later beat
            closed, started = set(sim.closed), set(sim.started)
            sim.closed.clear()
            sim.started.clear()
        response = self.heartbeat(member_id, 1)
        if not confirm_at_once and sim.joined:
            sim.closed |= closed
            sim.started |= started
        if sim.joined:
            self.confirm(member_id, response)

    @rule(member_id=st.sampled_from(MEMBERS))
    def leave(self, member_id: str) -> None:
        sim = self.members[member_id]
        if not sim.joined:
            return
        sim.lose_everything()
        response = self.heartbeat(member_id, -1)
        assert response.error_code in (Errors.NONE, Errors.UNKNOWN_MEMBER_ID)
        sim.joined = False
        if self.outage_assignments is not None:
            self.outage_assignments.pop(member_id, None)

    @rule(ms=st.sampled_from([100, 400, 700, 1_100]))
    def time_passes(self, ms: int) -> None:
        """Members that did not heartbeat for a session know they are out (a crash, or a
        member too slow to heartbeat); the coordinator expires them at the same instant."""
        self.now += ms
        for member_id, sim in self.members.items():
            if sim.joined and sim.last_heartbeat + SESSION <= self.now:
                sim.lose_everything()
                if self.outage_assignments is not None:
                    self.outage_assignments.pop(member_id, None)
        self.coord.advance(self.now)

    @rule(store=st.booleans(), discovery=st.booleans())
    def switches(self, store: bool, discovery: bool) -> None:
        self.store, self.discovery = store, discovery
        # Switch off first, so that going from one outage to the other never passes through
        # "both on" (which plans).
        setters = [
            (self.coord.set_partition_store_available, store),
            (self.coord.set_discovery_available, discovery),
        ]
        for setter, on in sorted(setters, key=lambda s: s[1]):
            setter(on, self.now)
        if store and discovery:
            self.outage_assignments = None
        elif self.outage_assignments is None:
            view = self.view()
            self.outage_assignments = (
                {}
                if view is None
                else {m: v.assignment for m, v in view.members.items() if self.members[m].joined}
            )

    @rule()
    def restart(self) -> None:
        self.log = MemoryLog(list(self.log.entries))
        self.coord = self._start(GroupCoordinator(CONFIG, self.log, self.now))

    @precondition(lambda self: any(m.joined for m in self.members.values()))
    @rule()
    def everyone_settles(self) -> None:
        """Membership stops changing, the switches are on, every member does all it is asked:
        the group ends Stable with every partition active on exactly one member."""
        self.switches(True, True)
        for round_ in range(8):
            for member_id in MEMBERS:
                if self.members[member_id].joined:
                    self.heartbeat_and_maybe_confirm(member_id, True)
            if round_ < 3:  # members the coordinator still counts (after a restart) expire
                self.time_passes(SESSION // 2)
        view = self.view()
        assert view is not None
        joined = {m for m, sim in self.members.items() if sim.joined}
        assert set(view.members) == joined
        assert view.state is HandoffState.STABLE, view
        wanted = {(t, p) for m in joined for t in self.members[m].topics for p in range(TOPICS[t])}
        active = [p for m in joined for p in self.members[m].active]
        assert sorted(active) == sorted(wanted)

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def no_partition_is_active_on_two_members(self) -> None:
        seen: dict[TP, str] = {}
        for member_id, sim in self.members.items():
            for p in sim.active:
                assert p not in seen, f"{p} active on {seen[p]} and {member_id}"
                seen[p] = member_id

    @invariant()
    def what_a_member_consumes_the_coordinator_counts_as_its_own(self) -> None:
        view = self.view()
        owners: dict[tuple[str, int], str] = {}
        if view is not None:
            for member_id, member in view.members.items():
                owned = {(p.topic, p.partition) for p in member.owned}
                assert {(p.topic, p.partition) for p in member.to_close} <= owned
                for p in owned:
                    assert p not in owners, f"{p} owned by {owners[p]} and {member_id}"
                    owners[p] = member_id
        for member_id, sim in self.members.items():
            for p in sim.active:
                assert owners.get(p) == member_id, (member_id, p, view)

    @invariant()
    def during_an_outage_the_assignment_does_not_change(self) -> None:
        if self.outage_assignments is None:
            return
        view = self.view()
        for member_id, assignment in self.outage_assignments.items():
            assert view is not None and member_id in view.members
            assert view.members[member_id].assignment == assignment

    @invariant()
    def a_coordinator_rebuilt_from_the_log_equals_the_live_one(self) -> None:
        rebuilt = GroupCoordinator(CONFIG, MemoryLog(list(self.log.entries)), self.now)
        assert rebuilt.group(GROUP) == self.coord.group(GROUP)
        assert rebuilt.committed_offsets(GROUP) == self.coord.committed_offsets(GROUP)


HandoffMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestHandoffMachine = HandoffMachine.TestCase
