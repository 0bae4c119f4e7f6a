"""Hypothesis state-machine tests: random clients drive the coordinator through joins, syncs,
heartbeats, commits, leaves, static restarts, clock jumps, cleanups and deletions, and after
every step the group invariants hold:

- the leader is a member (and there is one whenever there are members);
- a group's generation never goes back (until the group is deleted);
- every member of a Stable group holds the assignment its leader gave it;
- a consumer assignment never gives one partition to two members;
- a coordinator rebuilt from the log equals the live one: same offsets everywhere, and every
  Stable or Empty group the same (state, generation, protocol, leader, members, assignments);
- no parked JoinGroup or SyncGroup is left unanswered once time has passed every timeout.

Clients behave as Kafka's consumer does (AbstractCoordinator): they rejoin on
REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID, the leader assigns with the
`range` assignor over the members' real ConsumerProtocolSubscription metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from coordinator_engine import (
    CoordinatorConfig,
    DeleteGroupsRequest,
    Errors,
    GroupState,
    MemberIdentity,
)
from coordinator_engine.assignors import Subscription, get_assignor
from coordinator_engine.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_engine.reply import Reply
from coordinator_engine.responses import JoinGroupResponse, SyncGroupResponse

from .harness import Context

GROUPS = ("orders", "payments")
TOPICS = {"a": 3, "b": 2, "c": 4}
CONFIG = CoordinatorConfig(
    group_min_session_timeout_ms=10,
    group_initial_rebalance_delay_ms=30,
    group_max_size=5,
    offsets_retention_ms=5_000,
    new_member_join_timeout_ms=3_000,
)
SESSION = 1_000
REBALANCE = 2_000


@dataclass
class Client:
    name: str
    group_id: str
    topics: tuple[str, ...]
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    members: tuple[Any, ...] = ()
    synced_generation: int = -1
    join: Reply[JoinGroupResponse] | None = None
    sync: Reply[SyncGroupResponse] | None = None
    replies: list[Reply[Any]] = field(default_factory=list)


class CoordinatorMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.ctx = Context(CONFIG)
        self.clients: list[Client] = []
        self.max_generation: dict[str, int] = {}
        self.parked: list[Reply[Any]] = []

    # -- client behaviour ----------------------------------------------------------------

    def _metadata(self, client: Client) -> bytes:
        return encode_subscription(ConsumerProtocolSubscription(topics=client.topics))

    def _send_join(self, client: Client) -> None:
        reply = self.ctx.join(
            client.member_id,
            group_id=client.group_id,
            instance_id=client.instance_id,
            session_timeout=SESSION,
            rebalance_timeout=REBALANCE,
            protocols=(("range", self._metadata(client)),),
            require_known_member_id=True,
            client_id=client.name,
        )
        client.join = reply
        self.parked.append(reply)

    def _absorb(self, client: Client) -> None:
        """Read whatever replies arrived, as the client's response handlers would."""
        if client.join is not None and client.join.done:
            response = client.join.response
            assert response is not None
            client.join = None
            if response.error_code == Errors.NONE:
                client.member_id = response.member_id
                client.generation = response.generation_id
                client.leader = response.leader == response.member_id
                client.members = response.members
            elif response.error_code == Errors.MEMBER_ID_REQUIRED:
                client.member_id = response.member_id
            elif response.error_code in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
                client.member_id = ""
                client.generation = -1
        if client.sync is not None and client.sync.done:
            response = client.sync.response
            assert response is not None
            client.sync = None
            if response.error_code == Errors.UNKNOWN_MEMBER_ID:
                client.member_id = ""
                client.generation = -1

    def _assignments(self, client: Client) -> dict[str, bytes]:
        subscriptions = {
            m.member_id: Subscription(
                topics=decode_subscription(m.metadata).topics,
                group_instance_id=m.group_instance_id,
            )
            for m in client.members
        }
        plan = get_assignor("range").assign(TOPICS, subscriptions)
        return {
            member_id: encode_assignment(ConsumerProtocolAssignment(assigned_partitions=tuple(tps)))
            for member_id, tps in plan.items()
        }

    # -- rules ---------------------------------------------------------------------------

    @rule(
        group_id=st.sampled_from(GROUPS),
        topics=st.lists(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=3, unique=True),
        static=st.booleans(),
    )
    def new_client_joins(self, group_id: str, topics: list[str], static: bool) -> None:
        if len(self.clients) >= 8:
            return
        name = f"c{len(self.clients)}"
        client = Client(
            name=name,
            group_id=group_id,
            topics=tuple(topics),
            instance_id=f"instance-{name}" if static else None,
        )
        self.clients.append(client)
        self._send_join(client)
        self._absorb(client)

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def client_rejoins(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from(self.clients))
        self._absorb(client)
        if client.join is None:
            self._send_join(client)
            self._absorb(client)

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def client_syncs(self, data: st.DataObject) -> None:
        self.client_syncs_now(data.draw(st.sampled_from(self.clients)))

    def client_syncs_now(self, client: Client) -> None:
        self._absorb(client)
        if client.member_id == "" or client.generation < 0 or client.sync is not None:
            return
        assignments = self._assignments(client) if client.leader and client.members else {}
        client.sync = self.ctx.sync(
            client.member_id,
            client.generation,
            assignments,
            group_id=client.group_id,
            instance_id=client.instance_id,
        )
        self.parked.append(client.sync)
        self._absorb(client)

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def client_heartbeats(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from(self.clients))
        self._absorb(client)
        if client.member_id == "":
            return
        code = self.ctx.heartbeat(
            client.member_id,
            client.generation,
            group_id=client.group_id,
            instance_id=client.instance_id,
        )
        assert code in (
            Errors.NONE,
            Errors.REBALANCE_IN_PROGRESS,
            Errors.ILLEGAL_GENERATION,
            Errors.UNKNOWN_MEMBER_ID,
            Errors.FENCED_INSTANCE_ID,
        ), code
        if code in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
            client.member_id = ""
            client.generation = -1

    @precondition(lambda self: self.clients)
    @rule(data=st.data(), offset=st.integers(0, 10_000))
    def client_commits(self, data: st.DataObject, offset: int) -> None:
        client = data.draw(st.sampled_from(self.clients))
        topic = data.draw(st.sampled_from(client.topics))
        partition = data.draw(st.integers(0, TOPICS[topic] - 1))
        results = self.ctx.commit(
            {(topic, partition): offset},
            member_id=client.member_id,
            generation_id=client.generation if client.member_id else -1,
            instance_id=client.instance_id if client.member_id else None,
            group_id=client.group_id,
        )
        if results[topic, partition] == Errors.NONE:
            fetched = self.ctx.fetch([(topic, partition)], group_id=client.group_id)
            assert fetched == {(topic, partition): offset}

    @precondition(lambda self: self.clients)
    @rule(data=st.data())
    def client_leaves(self, data: st.DataObject) -> None:
        client = data.draw(st.sampled_from(self.clients))
        self._absorb(client)
        if client.member_id == "" and client.instance_id is None:
            return
        response = self.ctx.leave(
            MemberIdentity(member_id=client.member_id, group_instance_id=client.instance_id),
            group_id=client.group_id,
        )
        assert response.error_code == Errors.NONE
        client.member_id = ""
        client.generation = -1

    @precondition(lambda self: any(c.instance_id for c in self.clients))
    @rule(data=st.data())
    def static_client_restarts(self, data: st.DataObject) -> None:
        """A static member's process restarts: it rejoins with its instance id and no member
        id (KIP-345); its old member id is fenced."""
        client = data.draw(st.sampled_from([c for c in self.clients if c.instance_id]))
        client.member_id = ""
        client.generation = -1
        client.join = None
        client.sync = None
        self._send_join(client)
        self._absorb(client)

    @precondition(lambda self: self.clients)
    @rule(rounds=st.integers(1, 6))
    def clients_follow_the_protocol(self, rounds: int) -> None:
        """A few rounds 40 ms apart (past the initial delay) in which every client does what
        Kafka's consumer would do next."""
        for _ in range(rounds):
            self.every_client_takes_its_next_step()
            self.time_passes(40)

    def every_client_takes_its_next_step(self) -> None:
        """Join when it has no generation, sync a generation it has not synced, heartbeat
        otherwise (and rejoin when told a rebalance is in progress)."""
        for client in self.clients:
            self._absorb(client)
            if client.join is not None or client.sync is not None:
                continue
            if client.member_id == "" or client.generation < 0:
                self._send_join(client)
            elif client.synced_generation != client.generation:
                self.client_syncs_now(client)
                if client.sync is not None and client.sync.done:
                    response = client.sync.response
                    assert response is not None
                    if response.error_code == Errors.NONE:
                        client.synced_generation = client.generation
            else:
                code = self.ctx.heartbeat(
                    client.member_id,
                    client.generation,
                    group_id=client.group_id,
                    instance_id=client.instance_id,
                )
                if code != Errors.NONE:
                    client.generation = (
                        -1 if code != Errors.REBALANCE_IN_PROGRESS else client.generation
                    )
                    self._send_join(client)
            self._absorb(client)

    @rule(ms=st.sampled_from([1, 30, 100, 200, 600, 1_100, 2_500, 6_000]))
    def time_passes(self, ms: int) -> None:
        self.ctx.sleep(ms)
        for client in self.clients:
            self._absorb(client)

    @rule()
    def cleanup_runs(self) -> None:
        result = self.ctx.coord.cleanup(self.ctx.now)
        assert result.offsets_removed >= 0 and result.groups_removed >= 0

    @rule(group_id=st.sampled_from(GROUPS))
    def admin_deletes_group(self, group_id: str) -> None:
        view = self.ctx.coord.group(group_id)
        reply = self.ctx.coord.handle(DeleteGroupsRequest(group_ids=(group_id,)), self.ctx.now)
        assert reply.response is not None
        code = reply.response.results[0].error_code
        if view is None:
            assert code == Errors.GROUP_ID_NOT_FOUND
        elif view.state is GroupState.EMPTY:
            assert code == Errors.NONE
            assert self.ctx.coord.group(group_id) is None
        else:
            assert code == Errors.NON_EMPTY_GROUP

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def leader_is_a_member(self) -> None:
        for group_id in self.ctx.coord.group_ids():
            view = self.ctx.coord.group(group_id)
            assert view is not None
            if view.members:
                assert view.leader_id in view.members, (group_id, view.leader_id)
            else:
                assert view.leader_id is None

    @invariant()
    def generation_never_goes_back(self) -> None:
        for group_id in GROUPS:
            view = self.ctx.coord.group(group_id)
            if view is None:
                self.max_generation.pop(group_id, None)
                continue
            previous = self.max_generation.get(group_id, 0)
            assert view.generation_id >= previous, (group_id, previous, view.generation_id)
            self.max_generation[group_id] = view.generation_id

    @invariant()
    def stable_members_hold_disjoint_assignments(self) -> None:
        for group_id in self.ctx.coord.group_ids():
            view = self.ctx.coord.group(group_id)
            assert view is not None
            if view.state is not GroupState.STABLE:
                continue
            owners: dict[tuple[str, int], str] = {}
            for member in view.members.values():
                assert member.assignment, f"{member.member_id} is Stable without an assignment"
                for tp in decode_assignment(member.assignment).assigned_partitions:
                    assert tp not in owners, f"{tp} owned by {owners[tp]} and {member.member_id}"
                    owners[tp] = member.member_id

    @invariant()
    def rebuilt_coordinator_equals_live_one(self) -> None:
        live = self.ctx.coord
        rebuilt = self.ctx.rebuilt()
        assert set(rebuilt.group_ids()) <= set(live.group_ids())
        for group_id in live.group_ids():
            assert rebuilt.committed_offsets(group_id) == live.committed_offsets(group_id)
            view = live.group(group_id)
            assert view is not None
            if view.state in (GroupState.STABLE, GroupState.EMPTY) and (
                view.generation_id > 0 or view.members
            ):
                # Pending members (KIP-394) are soft state: they hold no durable membership.
                assert rebuilt.group(group_id) == replace(view, pending_member_ids=frozenset())

    def teardown(self) -> None:
        if not hasattr(self, "ctx"):
            return
        # Past every session, rebalance, sync and new-member timeout: nothing stays parked.
        for _ in range(4):
            self.ctx.sleep(CONFIG.new_member_join_timeout_ms + REBALANCE)
        hanging = [r for r in self.parked if not r.done]
        assert not hanging, f"{len(hanging)} replies were never answered"


CoordinatorMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
)
test_coordinator_state_machine = CoordinatorMachine.TestCase
