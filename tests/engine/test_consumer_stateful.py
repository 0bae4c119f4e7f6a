"""Hypothesis state machine for consumer groups (KIP-848): simulated members join, heartbeat
(reporting what they own, or not), lose answers, change their subscription and leave; topics
grow; time passes (sessions expire); the coordinator restarts from its log. After every step:

- no partition is consumed by two members at once (a member consumes what the last answer it
  received assigned it: the member's side of the protocol, simulated as librdkafka does it);
- whatever a member consumes, the coordinator counts as that member's (assigned or pending
  revocation), so it is given to nobody else until that member's heartbeat stops listing it;
- the group epoch, the target assignment epoch and each member's epoch never go backwards;
- a coordinator rebuilt from the log holds the group exactly as the live one does.

And whenever the members heartbeat honestly for a while with no time passing, the group is
Stable and every partition of the topics they subscribe to is consumed by exactly one of them.

After a lost answer a member sends a full request (every field), as librdkafka does after a
failed heartbeat: the answer to a full request carries the assignment. A simulated member
drops everything it consumes when told FENCED_MEMBER_EPOCH or
UNKNOWN_MEMBER_ID (and rejoins with epoch 0 under the same id, as librdkafka does), and when a
session timeout has passed since the send of its last answered heartbeat (as a consumer whose
heartbeats fail stops); its rebalance timeout equals the session timeout, so a member that lost
the answer asking it to revoke stops before the coordinator gives its partitions away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupState,
    ConsumerGroupView,
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    MemoryLog,
    OwnedTopicPartitions,
)

GROUP = "orders"
MEMBERS = ("m0", "m1", "m2", "m3")
#: m2 and m3 are static members (instance ids i2, i3).
STATIC = {"m2": "i2", "m3": "i3"}
SUBSCRIPTIONS = (("t",), ("t", "u"), ("u",))
SESSION = 45_000
CONFIG = CoordinatorConfig()

TP = tuple[str, int]


@dataclass
class SimMember:
    """A consumer's side of the protocol."""

    name: str = ""
    member_id: str = ""  # a static member's restart comes back under a new one
    instance_id: str | None = None
    restarts: int = 0
    away: bool = False  # a static member that left with -2 and has not come back
    topics: tuple[str, ...] = ("t",)
    active: bool = False  # wants to be in the group
    joined: bool = False  # holds a valid epoch
    epoch: int = 0
    last_answered: int = 0  # send time of the last answered heartbeat
    last_accepted: int = 0  # send time of the last heartbeat the coordinator accepted
    #: When the coordinator last re-armed every member's session: a coordinator rebuilt from
    #: its log gives each member a whole session from then (Kafka's onLoaded).
    rearmed: int = 0
    owned: set[TP] = field(default_factory=set)
    full: bool = False  # the last answer was lost: send every field (librdkafka does)

    def drop(self) -> None:
        self.owned = set()
        self.joined = False
        self.epoch = 0


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.log = MemoryLog()
        self.coord = GroupCoordinator(CONFIG, self.log, 0)
        self.counts = {"t": 3, "u": 2}
        for topic, count in self.counts.items():
            self.coord.set_topic_partitions(topic, count, 0)
        self.sims = {m: SimMember(name=m, member_id=m, instance_id=STATIC.get(m)) for m in MEMBERS}
        self.epochs = (0, 0)
        self.member_epochs: dict[str, int] = {}

    # ---------------------------------------------------------------- the members' side

    def _send(self, name: str, report: bool, lose: bool) -> None:
        sim = self.sims[name]
        if not sim.active:
            return
        member_id, instance_id = sim.member_id, sim.instance_id
        if not sim.joined:
            request = ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                instance_id=instance_id,
                member_epoch=0,
                rebalance_timeout_ms=SESSION,
                subscribed_topic_names=sim.topics,
                subscribed_topic_regex="",
                topic_partitions=(),
            )
        elif sim.full:
            request = ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                instance_id=instance_id,
                member_epoch=sim.epoch,
                rebalance_timeout_ms=SESSION,
                subscribed_topic_names=sim.topics,
                topic_partitions=self._owned(sim),
            )
        else:
            request = ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                instance_id=instance_id,
                member_epoch=sim.epoch,
                subscribed_topic_names=sim.topics,
                topic_partitions=self._owned(sim) if report else None,
            )
        reply = self.coord.handle(request, self.now)
        assert reply.done, "a heartbeat is never parked"
        response = reply.response
        assert response is not None
        if response.error_code == Errors.NONE:
            sim.last_accepted = self.now
        if lose:
            sim.full = True
        else:
            self._receive(sim, response)

    @staticmethod
    def _owned(sim: SimMember) -> tuple[OwnedTopicPartitions, ...]:
        topics = sorted({t for t, _ in sim.owned})
        return tuple(
            OwnedTopicPartitions(
                topic=t, partitions=tuple(sorted(p for u, p in sim.owned if u == t))
            )
            for t in topics
        )

    def _receive(self, sim: SimMember, response: ConsumerGroupHeartbeatResponse) -> None:
        code = response.error_code
        sim.full = False
        if code == Errors.NONE:
            sim.joined = True
            sim.epoch = response.member_epoch
            sim.last_answered = self.now
            if response.assignment is not None:
                sim.owned = {(t, p) for t, parts in response.assignment.items() for p in parts}
        elif code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            sim.drop()
        else:
            raise AssertionError(f"unexpected answer {response}")

    # ---------------------------------------------------------------- rules

    @rule(name=st.sampled_from(MEMBERS), topics=st.sampled_from(SUBSCRIPTIONS))
    def join(self, name: str, topics: tuple[str, ...]) -> None:
        sim = self.sims[name]
        if sim.active:
            return
        sim.active, sim.topics = True, topics
        sim.drop()
        self._send(name, report=True, lose=False)

    @rule(name=st.sampled_from(MEMBERS), report=st.booleans(), lose=st.booleans())
    def heartbeat(self, name: str, report: bool, lose: bool) -> None:
        self._send(name, report, lose)

    @rule(name=st.sampled_from(MEMBERS), topics=st.sampled_from(SUBSCRIPTIONS))
    def change_subscription(self, name: str, topics: tuple[str, ...]) -> None:
        sim = self.sims[name]
        sim.topics = topics
        self._send(name, report=True, lose=False)

    @rule(name=st.sampled_from(MEMBERS))
    def leave(self, name: str) -> None:
        sim = self.sims[name]
        if not sim.active:
            return
        self.coord.handle(
            ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=sim.member_id,
                instance_id=sim.instance_id,
                member_epoch=-1,
            ),
            self.now,
        )
        sim.drop()
        sim.active = sim.away = False

    @rule(name=st.sampled_from(tuple(STATIC)))
    def static_restart(self, name: str) -> None:
        """A static member closes (-2, keeping its place) and its process comes back later
        under a new member id (the next `join`), as librdkafka does."""
        sim = self.sims[name]
        if not sim.active or not sim.joined:
            return
        response = self.coord.handle(
            ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=sim.member_id,
                instance_id=sim.instance_id,
                member_epoch=-2,
            ),
            self.now,
        ).response
        assert response is not None
        sim.drop()
        sim.active = False
        sim.away = response.error_code == Errors.NONE
        sim.restarts += 1
        sim.member_id = f"{name}-{sim.restarts}"

    @rule(topic=st.sampled_from(("t", "u")), extra=st.integers(1, 2))
    def grow(self, topic: str, extra: int) -> None:
        self.counts[topic] += extra
        self.coord.set_topic_partitions(topic, self.counts[topic], self.now)

    @rule(ms=st.sampled_from((1_000, 20_000, SESSION + 1)))
    def sleep(self, ms: int) -> None:
        self.now += ms
        for sim in self.sims.values():
            if sim.joined and self.now >= sim.last_answered + SESSION:
                sim.drop()
            if sim.away and self.now >= max(sim.last_accepted, sim.rearmed) + SESSION:
                sim.away = False  # its session ran out: the coordinator removed it
        self.coord.advance(self.now)

    @rule()
    def restart(self) -> None:
        """The coordinator is rebuilt from its log; the host reports its topics again."""
        self.coord = GroupCoordinator(CONFIG, self.log, self.now)
        for sim in self.sims.values():
            sim.rearmed = self.now
        for topic, count in self.counts.items():
            self.coord.set_topic_partitions(topic, count, self.now)

    @rule()
    def settle(self) -> None:
        """The members heartbeat honestly, answers arriving, no time passing."""
        for _ in range(10):
            for name in MEMBERS:
                self._send(name, report=True, lose=False)
        view = self._view()
        active = {sim.member_id for sim in self.sims.values() if sim.active}
        if view is None:
            assert not active
            return
        assert active <= set(view.members)
        if any(sim.away for sim in self.sims.values()):
            return  # a static member away keeps its partitions: the group stays Reconciling
        assert set(view.members) == active
        if not active:
            assert view.state is ConsumerGroupState.EMPTY
            return
        assert view.state is ConsumerGroupState.STABLE, view
        sims = [sim for sim in self.sims.values() if sim.active]
        subscribed = {t for sim in sims for t in sim.topics}
        everything = {(t, p) for t in subscribed for p in range(self.counts[t])}
        consumed = [tp for sim in sims for tp in sim.owned]
        assert sorted(consumed) == sorted(everything)

    # ---------------------------------------------------------------- invariants

    def _view(self) -> ConsumerGroupView | None:
        view = self.coord.group(GROUP)
        assert view is None or isinstance(view, ConsumerGroupView)
        return view

    @invariant()
    def no_partition_is_consumed_by_two_members(self) -> None:
        seen: dict[TP, str] = {}
        for name, sim in self.sims.items():
            for tp in sim.owned:
                assert tp not in seen, f"{tp} consumed by {seen[tp]} and {name}"
                seen[tp] = name

    @invariant()
    def what_a_member_consumes_is_its_own_at_the_coordinator(self) -> None:
        view = self._view()
        for sim in self.sims.values():
            if not sim.owned:
                continue
            assert view is not None and sim.member_id in view.members
            member = view.members[sim.member_id]
            held = {(t, p) for t, ps in member.assigned.items() for p in ps}
            held |= {(t, p) for t, ps in member.pending_revocation.items() for p in ps}
            assert sim.owned <= held

    @invariant()
    def epochs_never_go_backwards(self) -> None:
        view = self._view()
        if view is None:
            return
        epochs = (view.group_epoch, view.assignment_epoch)
        assert epochs >= self.epochs and epochs[0] >= self.epochs[0]
        assert view.assignment_epoch <= view.group_epoch
        self.epochs = epochs
        for member_id, member in view.members.items():
            if member.member_epoch == -2:
                continue  # a static member away: -2 marks it, it is not an epoch
            assert member.member_epoch >= self.member_epochs.get(member_id, 0)
            self.member_epochs[member_id] = member.member_epoch
        for member_id in set(self.member_epochs) - set(view.members):
            del self.member_epochs[member_id]

    @invariant()
    def replay_of_the_log_equals_the_live_group(self) -> None:
        replayed = GroupCoordinator(CONFIG, MemoryLog(list(self.log.entries)), self.now)
        assert replayed.group(GROUP) == self.coord.group(GROUP)


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
