"""Classic groups: Kafka's `GroupMetadataManager` for the classic rebalance protocol.

In Kafka's group-coordinator module a `GroupCoordinatorShard` routes group requests to its
`GroupMetadataManager`, which holds the groups of every kind with their handlers
(`classicGroupJoin`, `classicGroupSync`, `classicGroupHeartbeat`, `classicGroupLeave`, and
`consumerGroupHeartbeat` for KIP-848's groups), timers, records and replay. Here each kind has a
manager of its own; `ClassicGroupManager` is the classic part: JoinGroup, SyncGroup, Heartbeat
and LeaveGroup, the rebalance timers, DescribeGroups and ListGroups, `trigger_rebalance`, and
the GroupMetadata records. Its rules follow `kafka.coordinator.group.GroupCoordinator` (Kafka
3.x) handler by handler; each method names the Kafka method it mirrors. KIPs: 345 (static
membership), 394 (member id required), 800 (join/leave reasons).

The group's metadata record is written at the moments Kafka writes it (the leader's SyncGroup,
a join phase that ends Empty, a static member replaced in a Stable group). Live, a group's
generation, protocol, leader and members change as the protocol goes (soft until stored, as in
Kafka) and the record is built from the group; once `append` returned, applying it sets what
the group does not hold yet, the members' assignments (`_store_group`), and only then are the
replies that depend on it released. A refused append applies nothing (a replaced static member
is put back; a leader's sync sends the group back to PreparingRebalance). At load, `replay`
builds the group from the record (Stable with its members, or Empty), since nothing else of it
survives a restart; `on_loaded` then re-arms every member's session timer.

The offsets manager asks this manager, through the `GroupKind` hooks (`context.py`), what
offsets depend on: who may commit, which topics a group subscribes to, when its offsets start
to expire, and to create or delete a group when its offsets say so.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from ..consumer_protocol import CONSUMER_PROTOCOL_TYPE, ConsumerProtocolError, decode_assignment
from ..context import CoordinatorContext, Handler, Record, TimerKey
from ..errors import (
    CoordinatorError,
    CoordinatorNotAvailableError,
    Errors,
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_code_of,
)
from ..events import (
    REMOVAL_CAUSES,
    AssignmentStored,
    GenerationStarted,
    GroupRemoved,
    MemberJoined,
    MemberRemoved,
    PendingMemberAdded,
    PendingMemberRemoved,
    RebalanceCause,
    RemovalReason,
    StateChanged,
    StaticMemberReplaced,
)
from ..records import GroupMetadataKey, GroupMetadataValue, MemberMetadata, RecordType
from ..reply import Reply
from ..requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from ..responses import (
    DescribedGroup,
    DescribedMember,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResult,
    ListedGroup,
    SyncGroupResponse,
)
from .group import ClassicGroup, Member
from .records import GROUP_METADATA, group_metadata_record, group_metadata_tombstone
from .state import CAN_REBALANCE, GroupState, check_transition

Empty = GroupState.EMPTY
PreparingRebalance = GroupState.PREPARING_REBALANCE
CompletingRebalance = GroupState.COMPLETING_REBALANCE
Stable = GroupState.STABLE
Dead = GroupState.DEAD

NONE = Errors.NONE
#: Kafka's AdminClient reason for `removeMembersFromConsumerGroup` (KIP-800) and ours.
ADMIN_REMOVAL_REASONS = ("member was removed by an admin", "removed by admin")

#: The timers this manager arms, by the first element of their key (docs/engine.md, "Timers").
TIMER_KINDS = ("heartbeat", "join", "sync")

_HEARTBEAT_REPLIES = {code: Reply.of(HeartbeatResponse(error_code=code)) for code in Errors}

Protocols = tuple[tuple[str, bytes], ...]


def _join_error(member_id: str, code: Errors) -> Reply[JoinGroupResponse]:
    return Reply.of(JoinGroupResponse(error_code=code, member_id=member_id))


def _sync_error(code: Errors) -> Reply[SyncGroupResponse]:
    return Reply.of(SyncGroupResponse(error_code=code))


class ClassicGroupManager:
    """The classic groups of one coordinator. See the module docstring and docs/engine.md."""

    kind: ClassVar[str] = ClassicGroup.kind
    timer_kinds: ClassVar[tuple[str, ...]] = TIMER_KINDS
    record_types: ClassVar[tuple[RecordType, ...]] = (GROUP_METADATA,)

    def __init__(self, ctx: CoordinatorContext) -> None:
        self._ctx = ctx
        self.config = ctx.config
        # The shared pieces this manager uses on every request, bound once.
        self._groups = ctx.groups
        self._timers = ctx.timers
        self._listeners = ctx.listeners
        self._owns = ctx.owns
        self._emit = ctx.emit
        self._complete = ctx.complete
        self._append = ctx.append
        self._validate_group = ctx.validate_group
        self._member_seq = 0

    def handlers(self) -> dict[type, Handler]:
        """The requests this manager answers."""
        return {
            JoinGroupRequest: self._join_group,
            SyncGroupRequest: self._sync_group,
            HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave_group,
        }

    # ---------------------------------------------------------------- façade entry points

    def fire(self, key: TimerKey, now_ms: int) -> None:
        """A timer of this manager (`TIMER_KINDS`) is due."""
        group = self._groups.get(key[1])
        if not isinstance(group, ClassicGroup):
            return
        kind = key[0]
        if kind == "heartbeat":
            self._on_heartbeat_expired(group, key[2], now_ms)
        elif kind == "join":
            self._on_join_timer(group, now_ms)
        elif kind == "sync":
            self._on_sync_expired(group, key[2], now_ms)
        else:  # pragma: no cover - keys are made only in this module
            raise AssertionError(f"unknown timer {key!r}")

    def trigger_rebalance(self, group_id: str, now_ms: int, reason: str) -> Errors:
        """`GroupCoordinator.trigger_rebalance` for a group this coordinator owns."""
        group = self._groups.get(group_id)
        if group is not None and not isinstance(group, ClassicGroup):
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if group is None or group.state in (Empty, Dead):
            return Errors.GROUP_ID_NOT_FOUND
        if group.state is PreparingRebalance:
            return Errors.REBALANCE_IN_PROGRESS
        self._prepare_rebalance(group, now_ms, reason, RebalanceCause.ADMIN_ACTION, None)
        return NONE

    # ---------------------------------------------------------------- GroupKind hooks

    def create_simple_group(self, group_id: str, now: int) -> ClassicGroup:
        """Kafka's `getOrMaybeCreateClassicGroup(groupId, createIfNotExists=true)` for a group
        that only stores offsets: Empty, no protocol, no generation."""
        return self._new_group(group_id, now)

    def is_simple(self, group: ClassicGroup) -> bool:
        return group.generation_id == 0 and group.protocol_type is None

    def is_empty(self, group: ClassicGroup) -> bool:
        return group.state is Empty

    def validate_offset_fetch(self, group: ClassicGroup, req: OffsetFetchRequest) -> None:
        """A classic group's fetch is not checked against its members (OffsetFetch before v9
        carries none)."""

    def validate_offset_commit(
        self, group: ClassicGroup, req: OffsetCommitRequest, now: int
    ) -> None:
        """Kafka's `validateOffsetCommit` (3.3+, KAFKA-14201): a commit with generation −1 into
        an Empty group is not checked against members, whatever member or instance id it
        carries (the admin client and manual-assignment consumers send them). A member's
        commit in Stable or PreparingRebalance refreshes its session; in CompletingRebalance
        the member has the new generation from its JoinGroup but no assignment yet:
        REBALANCE_IN_PROGRESS."""
        state = group.state
        if state is Dead:
            raise CoordinatorNotAvailableError(group.group_id)
        if req.generation_id < 0 and state is Empty:
            return
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            self._validate_current_member(group, req.member_id, req.group_instance_id)
            if req.generation_id != group.generation_id:
                raise IllegalGenerationError(str(req.generation_id))
        elif state is not Empty:
            # Only members may commit into a group that has members.
            raise UnknownMemberIdError(req.member_id)
        if state is CompletingRebalance:
            raise RebalanceInProgressError(group.group_id)
        if state is Stable or state is PreparingRebalance:
            member = group.members[req.member_id]
            self._schedule_session(group, member, member.session_timeout_ms, now)

    def offset_delete_subscribed(
        self, group: ClassicGroup, topics: Sequence[str]
    ) -> set[str] | None:
        """Kafka's `validateOffsetDelete` + `isSubscribedToTopic`: an Empty group keeps no
        topic; a consumer group with members keeps the topics it subscribes to (every topic
        while its subscriptions cannot be read, as in Kafka); another group with members
        refuses (NON_EMPTY_GROUP)."""
        if group.state is Empty:
            return set()
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            return {topic for topic in topics if group.is_subscribed_to_topic(topic)}
        return None

    def offset_expiration_condition(
        self, group: ClassicGroup
    ) -> tuple[int | None, frozenset[str]] | None:
        """KIP-211 for a classic group: the retention clock starts when an Empty group became
        Empty; in a Stable consumer group at the last commit, for topics nobody subscribes to
        any more; for a group used only for offsets at the last commit. Other groups with a
        protocol keep their offsets."""
        if group.protocol_type is not None and group.state is Empty:
            return group.state_timestamp_ms, frozenset()
        if (
            group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and group.subscribed_topics is not None
            and group.state is Stable
        ):
            return None, group.subscribed_topics
        if group.protocol_type is not None:
            return None
        return None, frozenset()

    def group_tombstones(self, group: ClassicGroup) -> list[Record]:
        """A group tombstone for a group that ever had a generation (none was stored before)."""
        return [group_metadata_tombstone(group.group_id)] if group.generation_id > 0 else []

    def remove_group(self, group: ClassicGroup, now: int, reason: str, *, tombstoned: bool) -> None:
        """The group goes Dead and is dropped, with its timers (its records are durable)."""
        self._transition(group, Dead, now, reason)
        self._drop_group(group)
        self._emit(
            GroupRemoved(
                group_id=group.group_id,
                at_ms=now,
                reason=reason,
                generation_id=group.generation_id,
                tombstoned=tombstoned,
            )
        )

    # ---------------------------------------------------------------- plumbing

    @staticmethod
    def _validate_current_member(
        group: ClassicGroup, member_id: str, group_instance_id: str | None
    ) -> None:
        """Kafka's `validateCurrentMember`: a static member's instance id must map to this
        member id (else FENCED_INSTANCE_ID); the member must exist (else UNKNOWN_MEMBER_ID)."""
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                raise UnknownMemberIdError(member_id)
            if current != member_id:
                raise FencedInstanceIdError(group_instance_id)
        elif member_id not in group.members:
            raise UnknownMemberIdError(member_id)

    def _classic_group(self, group_id: str) -> ClassicGroup | None:
        """The classic group of this id, None if there is none; a group of another kind (a
        handoff group) raises INCONSISTENT_GROUP_PROTOCOL: classic requests cannot join it."""
        group = self._groups.get(group_id)
        if group is None or isinstance(group, ClassicGroup):
            return group
        raise InconsistentGroupProtocolError(group_id)

    def _new_group(self, group_id: str, now_ms: int) -> ClassicGroup:
        group = ClassicGroup(group_id, now_ms)
        self._groups[group_id] = group
        return group

    def _new_member_id(self, group_id: str, prefix: str, now_ms: int) -> str:
        """Kafka's `generateMemberId`: `clientId-UUID`, or `groupInstanceId-UUID` for a static
        member; the UUID is derived from (group, time, sequence) so that the engine stays
        deterministic while ids never repeat across time or restarts."""
        self._member_seq += 1
        seed = f"{group_id}\0{now_ms}\0{self._member_seq}".encode("utf-8", "surrogatepass")
        suffix = str(uuid.UUID(bytes=hashlib.blake2b(seed, digest_size=16).digest(), version=4))
        member_id = f"{prefix}-{suffix}"
        if len(member_id.encode("utf-8")) > 32767:
            member_id = suffix
        return member_id

    def _transition(
        self,
        group: ClassicGroup,
        target: GroupState,
        now_ms: int,
        reason: str,
        cause: RebalanceCause | None = None,
        cause_member_id: str | None = None,
    ) -> None:
        check_transition(group.state, target)
        previous = group.state
        group.state = target
        group.state_timestamp_ms = now_ms
        self._emit(
            StateChanged(
                group_id=group.group_id,
                at_ms=now_ms,
                from_state=previous.value,
                to_state=target.value,
                reason=reason,
                cause=None if cause is None else cause.value,
                cause_member_id=cause_member_id,
            )
        )

    # ---------------------------------------------------------------- timers

    def _schedule_session(
        self, group: ClassicGroup, member: Member, timeout_ms: int, now: int
    ) -> None:
        """Kafka's `completeAndScheduleNextHeartbeatExpiration`."""
        if not member.timer_key:
            member.timer_key = ("heartbeat", group.group_id, member.member_id)
        self._timers.schedule(member.timer_key, now + timeout_ms)

    def _on_heartbeat_expired(self, group: ClassicGroup, member_id: str, now: int) -> None:
        """Kafka's `onExpireHeartbeat` with `hasSatisfiedHeartbeat`: a new member parked too
        long is removed (join timeout); a member awaiting join or sync is not; any other member
        missed its session."""
        if member_id in group.pending_members:
            group.remove(member_id)
            self._emit(
                PendingMemberRemoved(
                    group_id=group.group_id,
                    at_ms=now,
                    member_id=member_id,
                    reason="session_timeout",
                )
            )
            if group.state is PreparingRebalance:
                self._try_complete_join(group, now)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if member.is_new:
            reason = RemovalReason.JOIN_TIMEOUT
        elif member.join_reply is not None or member.sync_reply is not None:
            return
        else:
            reason = RemovalReason.SESSION_TIMEOUT
        self._remove_member_and_update_group(
            group, member, reason, None, now, f"removing member {member_id} on heartbeat expiration"
        )

    def _on_join_timer(self, group: ClassicGroup, now: int) -> None:
        """Kafka's `InitialDelayedJoin.onComplete` / `DelayedJoin.onComplete`."""
        if group.state is not PreparingRebalance:
            return
        if group.initial_join is not None:
            delay, remaining = group.initial_join
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
                group.initial_join = (next_delay, max(remaining - delay, 0))
                self._timers.schedule(("join", group.group_id), now + next_delay)
                return
            group.initial_join = None
        self._complete_join(group, now)

    def _on_sync_expired(self, group: ClassicGroup, generation_id: int, now: int) -> None:
        """Kafka's `onExpirePendingSync`: members that never sent SyncGroup are removed."""
        if generation_id != group.generation_id:
            return
        if group.state not in (CompletingRebalance, Stable) or not group.pending_sync:
            return
        late = [m for m in group.members if m in group.pending_sync]
        for member_id in late:
            member = group.members[member_id]
            group.remove(member_id)
            self._timers.cancel(member.timer_key)
            self._emit_removed(group, member, RemovalReason.SYNC_TIMEOUT, None, now)
        self._prepare_rebalance(
            group,
            now,
            f"removing {', '.join(late)} on pending sync request expiration",
            RebalanceCause.POLL_TIMEOUT,
            late[0],
        )

    # ---------------------------------------------------------------- rebalance core

    def _maybe_prepare_rebalance(
        self,
        group: ClassicGroup,
        now: int,
        reason: str,
        cause: RebalanceCause,
        cause_member_id: str | None,
    ) -> None:
        if group.state in CAN_REBALANCE:
            self._prepare_rebalance(group, now, reason, cause, cause_member_id)

    def _prepare_rebalance(
        self,
        group: ClassicGroup,
        now: int,
        reason: str,
        cause: RebalanceCause,
        cause_member_id: str | None,
    ) -> None:
        """Kafka's `prepareRebalance`: an Empty group waits the initial delay (extended by new
        joiners, capped by the rebalance timeout); otherwise the join phase lasts until every
        member rejoined or the rebalance timeout. `reason` says why in words (Kafka's), `cause`
        and `cause_member_id` as data (`RebalanceCause`)."""
        if group.state is CompletingRebalance:
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS, now)
        self._timers.cancel(("sync", group.group_id, group.generation_id))
        was_empty = group.state is Empty
        rebalance_timeout = group.rebalance_timeout_ms()
        self._transition(group, PreparingRebalance, now, reason, cause, cause_member_id)
        group.join_started_ms = now
        if was_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            group.initial_join = (delay, max(rebalance_timeout - delay, 0))
            self._timers.schedule(("join", group.group_id), now + delay)
        else:
            group.initial_join = None
            self._timers.schedule(("join", group.group_id), now + rebalance_timeout)
            self._try_complete_join(group, now)

    def _try_complete_join(self, group: ClassicGroup, now: int) -> None:
        """Kafka's `tryCompleteJoin` (the initial delayed join never completes early)."""
        if (
            group.state is PreparingRebalance
            and group.initial_join is None
            and group.has_all_members_joined()
        ):
            self._timers.cancel(("join", group.group_id))
            self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        """Kafka's `onCompleteJoin`: drop dynamic members that did not rejoin (static ones
        stay), make sure the leader is a member that rejoined, start the next generation."""
        for member in group.not_yet_rejoined():
            if member.is_static:
                continue
            group.remove(member.member_id)
            self._timers.cancel(member.timer_key)
            self._emit_removed(group, member, RemovalReason.REBALANCE_TIMEOUT, None, now)
        if not self._maybe_elect_new_joined_leader(group) and group.members:
            # Nobody rejoined: wait another rebalance timeout for session expiry to clear them.
            self._timers.schedule(("join", group.group_id), now + group.rebalance_timeout_ms())
            return
        self._init_next_generation(group, now)
        if group.state is Empty:
            # Kafka logs and carries on if this write fails; the group is Empty either way.
            self._store_group(group, {}, now)
            return
        leader_members = tuple(
            JoinGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(group.protocol_name),  # type: ignore[arg-type]
            )
            for m in group.members.values()
        )
        for member in group.members.values():
            if member.join_reply is not None:
                is_leader = member.member_id == group.leader_id
                self._complete(
                    member.join_reply,
                    JoinGroupResponse(
                        error_code=NONE,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        member_id=member.member_id,
                        members=leader_members if is_leader else (),
                    ),
                )
                group.set_join_reply(member, None)
            self._schedule_session(group, member, member.session_timeout_ms, now)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        self._timers.schedule(
            ("sync", group.group_id, group.generation_id), now + group.rebalance_timeout_ms()
        )

    @staticmethod
    def _maybe_elect_new_joined_leader(group: ClassicGroup) -> bool:
        """Kafka's `maybeElectNewJoinedLeader`; the new leader is the first member (in member
        order) that rejoined, where Kafka takes whichever its hash map yields first."""
        if group.leader_id is None:
            return False
        leader = group.members.get(group.leader_id)
        if leader is not None and leader.join_reply is not None:
            return True
        for member in group.members.values():
            if member.join_reply is not None:
                group.leader_id = member.member_id
                return True
        return False

    def _init_next_generation(self, group: ClassicGroup, now: int) -> None:
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.subscribed_topics = group.compute_subscribed_topics()
            self._transition(
                group, CompletingRebalance, now, "every member rejoined, or the rebalance timed out"
            )
        else:
            group.protocol_name = None
            group.subscribed_topics = group.compute_subscribed_topics()
            self._transition(group, Empty, now, "the join phase completed with no members left")
        group.pending_sync.clear()
        self._emit(
            GenerationStarted(
                group_id=group.group_id,
                at_ms=now,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader_id=group.leader_id,
                member_ids=list(group.members),
                join_started_ms=group.join_started_ms,
            )
        )

    def _propagate_assignment(self, group: ClassicGroup, error: Errors, now: int) -> None:
        """Kafka's `propagateAssignment`: answer every parked SyncGroup and restart its
        member's session (its expiry was ignored while it waited)."""
        ok = error == NONE
        for member in group.members.values():
            if member.sync_reply is not None:
                self._complete(
                    member.sync_reply,
                    SyncGroupResponse(
                        error_code=error,
                        protocol_type=group.protocol_type if ok else None,
                        protocol_name=group.protocol_name if ok else None,
                        assignment=member.assignment,
                    ),
                )
                member.sync_reply = None
                self._schedule_session(group, member, member.session_timeout_ms, now)

    def _reset_and_propagate_assignment_error(
        self, group: ClassicGroup, error: Errors, now: int
    ) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now)

    def _group_metadata_value(
        self, group: ClassicGroup, assignment: dict[str, bytes]
    ) -> GroupMetadataValue:
        protocol = group.protocol_name
        return GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=-1
            if group.state_timestamp_ms is None
            else group.state_timestamp_ms,
            members=tuple(
                MemberMetadata(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol is not None else b"",
                    assignment=assignment.get(m.member_id, b""),
                )
                for m in group.members.values()
            ),
        )

    def _store_group(self, group: ClassicGroup, assignment: dict[str, bytes], now: int) -> bool:
        """Kafka's `storeGroup`: append the group's metadata record; on success the given
        assignment becomes each member's (applying the record)."""
        value = self._group_metadata_value(group, assignment)
        if not self._append([group_metadata_record(group.group_id, value)]):
            return False
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        return True

    def _emit_removed(
        self,
        group: ClassicGroup,
        member: Member,
        reason: RemovalReason,
        detail: str | None,
        now: int,
    ) -> None:
        self._emit(
            MemberRemoved(
                group_id=group.group_id,
                at_ms=now,
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                reason=reason.value,
                detail=detail,
            )
        )

    def _remove_member_and_update_group(
        self,
        group: ClassicGroup,
        member: Member,
        reason: RemovalReason,
        detail: str | None,
        now: int,
        rebalance_reason: str,
    ) -> None:
        """Kafka's `removeMemberAndUpdateGroup`. A parked JoinGroup gets UNKNOWN_MEMBER_ID so a
        live client rejoins; a parked SyncGroup (Kafka leaves it unanswered) gets it too, so no
        reply is ever left hanging."""
        if member.join_reply is not None:
            self._complete(
                member.join_reply, JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
            )
            group.set_join_reply(member, None)
        if member.sync_reply is not None:
            self._complete(
                member.sync_reply, SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
            )
            member.sync_reply = None
        group.remove(member.member_id)
        self._timers.cancel(member.timer_key)
        self._emit_removed(group, member, reason, detail, now)
        if group.state in (Stable, CompletingRebalance):
            self._maybe_prepare_rebalance(
                group, now, rebalance_reason, REMOVAL_CAUSES[reason], member.member_id
            )
        elif group.state is PreparingRebalance:
            self._try_complete_join(group, now)

    # ---------------------------------------------------------------- JoinGroup

    def _join_group(self, req: JoinGroupRequest, now: int) -> Reply[JoinGroupResponse]:
        """Kafka's `handleJoinGroup`."""
        cfg = self.config
        try:
            self._validate_group(req.group_id, allow_empty_id=False)
            if (
                not cfg.group_min_session_timeout_ms
                <= req.session_timeout_ms
                <= cfg.group_max_session_timeout_ms
            ):
                raise InvalidSessionTimeoutError(str(req.session_timeout_ms))
            if not self._take_over_empty_consumer_group(req.group_id, now):
                return _join_error(req.member_id, Errors.COORDINATOR_NOT_AVAILABLE)
            group = self._classic_group(req.group_id)
        except CoordinatorError as exc:
            return _join_error(req.member_id, error_code_of(exc))
        is_unknown_member = req.member_id == ""
        if group is None:
            if not is_unknown_member:
                return _join_error(req.member_id, Errors.UNKNOWN_MEMBER_ID)
            group = self._new_group(req.group_id, now)
        if not self._accept_joining_member(group, req.member_id):
            if req.member_id in group.members or req.member_id in group.pending_members:
                member = group.members.get(req.member_id)
                group.remove(req.member_id)
                if member is not None:
                    self._timers.cancel(member.timer_key)
                    self._emit_removed(group, member, RemovalReason.GROUP_MAX_SIZE, None, now)
                else:
                    self._timers.cancel(("heartbeat", group.group_id, req.member_id))
                    self._emit(
                        PendingMemberRemoved(
                            group_id=group.group_id,
                            at_ms=now,
                            member_id=req.member_id,
                            reason="group_max_size",
                        )
                    )
            reply = _join_error("", Errors.GROUP_MAX_SIZE_REACHED)
        elif is_unknown_member:
            reply = self._do_new_member_join(group, req, now)
        else:
            reply = self._do_current_member_join(group, req, now)
        if group.state is PreparingRebalance:
            self._try_complete_join(group, now)
        return reply

    def _take_over_empty_consumer_group(self, group_id: str, now: int) -> bool:
        """Kafka's `maybeDeleteEmptyConsumerGroup` on JoinGroup: an empty KIP-848 consumer
        group's id is taken over by the joining classic member (its records tombstoned, its
        offsets kept). False when the log refused the tombstones (nothing changed). A consumer
        group with members, or a group of any other kind, is left to `_classic_group`."""
        group = self._groups.get(group_id)
        kinds = self._ctx.kinds
        if group is None or group.kind != "consumer" or kinds is None or not kinds.is_empty(group):
            return True
        tombstones = kinds.group_tombstones(group)
        if tombstones and not self._ctx.append(tombstones):
            return False
        kinds.remove_group(group, now, "converted", tombstoned=bool(tombstones))
        return True

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """Kafka's `acceptJoiningMember`: members already awaiting, and new ones up to
        group.max.size (counting awaiting members while preparing a rebalance)."""
        max_size = self.config.group_max_size
        state = group.state
        if state is Empty or state is Dead:
            return True
        member = group.members.get(member_id)
        if state is PreparingRebalance:
            return (
                member is not None and member.join_reply is not None
            ) or group.num_awaiting_join < max_size
        return member is not None or len(group.members) < max_size

    @staticmethod
    def _protocols(req: JoinGroupRequest) -> Protocols:
        seen: set[str] = set()
        out: list[tuple[str, bytes]] = []
        for p in req.protocols:
            if p.name not in seen:  # a repeated name would be counted twice in the vote
                seen.add(p.name)
                out.append((p.name, p.metadata))
        return tuple(out)

    def _do_new_member_join(
        self, group: ClassicGroup, req: JoinGroupRequest, now: int
    ) -> Reply[JoinGroupResponse]:
        """Kafka's `doNewMemberJoinGroup` (static: `doStaticNewMemberJoinGroup`, dynamic with
        KIP-394: `doDynamicNewMemberJoinGroup`)."""
        if group.state is Dead:
            return _join_error("", Errors.COORDINATOR_NOT_AVAILABLE)
        protocols = self._protocols(req)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in protocols]):
            return _join_error("", Errors.INCONSISTENT_GROUP_PROTOCOL)
        prefix = req.client_id if req.group_instance_id is None else req.group_instance_id
        new_member_id = self._new_member_id(group.group_id, prefix, now)
        if req.group_instance_id is not None:
            old_member_id = group.static_members.get(req.group_instance_id)
            if old_member_id is not None:
                return self._update_static_member_and_rebalance(
                    group, old_member_id, new_member_id, req, protocols, now
                )
            return self._add_member_and_rebalance(group, new_member_id, req, protocols, now)
        if req.require_known_member_id:
            group.pending_members[new_member_id] = None
            self._timers.schedule(
                ("heartbeat", group.group_id, new_member_id), now + req.session_timeout_ms
            )
            self._emit(
                PendingMemberAdded(group_id=group.group_id, at_ms=now, member_id=new_member_id)
            )
            return _join_error(new_member_id, Errors.MEMBER_ID_REQUIRED)
        return self._add_member_and_rebalance(group, new_member_id, req, protocols, now)

    def _do_current_member_join(
        self, group: ClassicGroup, req: JoinGroupRequest, now: int
    ) -> Reply[JoinGroupResponse]:
        """Kafka's `doCurrentMemberJoinGroup`."""
        member_id = req.member_id
        if group.state is Dead:
            return _join_error(member_id, Errors.COORDINATOR_NOT_AVAILABLE)
        protocols = self._protocols(req)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in protocols]):
            return _join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL)
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka fails this with an IllegalStateException (UNKNOWN_SERVER_ERROR): a static
                # member never gets a pending id. The id is not this instance's: unknown member.
                return _join_error(member_id, Errors.UNKNOWN_MEMBER_ID)
            was = PendingMemberRemoved(
                group_id=group.group_id, at_ms=now, member_id=member_id, reason="joined"
            )
            self._emit(was)
            return self._add_member_and_rebalance(group, member_id, req, protocols, now)
        try:
            self._validate_current_member(group, member_id, req.group_instance_id)
        except CoordinatorError as exc:
            return _join_error(member_id, error_code_of(exc))
        member = group.members[member_id]
        state = group.state
        if state is PreparingRebalance:
            return self._update_member_and_rebalance(
                group,
                member,
                req,
                protocols,
                now,
                f"Updating metadata for member {member_id} during PreparingRebalance",
            )
        if state is CompletingRebalance:
            if member.matches(protocols):
                # The member lost its JoinGroup response: give it the current generation again.
                return Reply.of(self._current_join_response(group, member))
            return self._update_member_and_rebalance(
                group,
                member,
                req,
                protocols,
                now,
                f"Updating metadata for member {member_id} during CompletingRebalance",
            )
        if state is Stable:
            if group.is_leader(member_id):
                # A leader's rejoin forces a rebalance: it is how a consumer leader reacts to
                # topic metadata changes that do not change its own subscription.
                return self._update_member_and_rebalance(
                    group,
                    member,
                    req,
                    protocols,
                    now,
                    f"Leader {member_id} re-joining group during Stable",
                )
            if not member.matches(protocols):
                return self._update_member_and_rebalance(
                    group,
                    member,
                    req,
                    protocols,
                    now,
                    f"Updating metadata for member {member_id} during Stable",
                )
            return Reply.of(self._current_join_response(group, member, leader_gets_members=False))
        return _join_error(member_id, Errors.UNKNOWN_MEMBER_ID)  # Empty: validated away above

    def _current_join_response(
        self, group: ClassicGroup, member: Member, *, leader_gets_members: bool = True
    ) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if leader_gets_members and group.is_leader(member.member_id):
            members = self._join_members(group)
        return JoinGroupResponse(
            error_code=NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    @staticmethod
    def _join_members(group: ClassicGroup) -> tuple[JoinGroupMember, ...]:
        protocol = group.protocol_name
        assert protocol is not None
        return tuple(
            JoinGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(protocol),
            )
            for m in group.members.values()
        )

    def _add_member_and_rebalance(
        self,
        group: ClassicGroup,
        member_id: str,
        req: JoinGroupRequest,
        protocols: Protocols,
        now: int,
    ) -> Reply[JoinGroupResponse]:
        """Kafka's `addMemberAndRebalance`. A new member's JoinGroup can only wait
        new.member.join.timeout: its client cannot heartbeat before it has an id."""
        member = Member(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=protocols,
        )
        member.is_new = True
        if group.state is PreparingRebalance and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        reply: Reply[JoinGroupResponse] = Reply()
        group.set_join_reply(member, reply)
        self._emit_joined(group, member, req, rejoined=False, now=now)
        self._schedule_session(group, member, self.config.new_member_join_timeout_ms, now)
        self._maybe_prepare_rebalance(
            group,
            now,
            f"Adding new member {member_id} with group instance id {req.group_instance_id}"
            f"; client reason: {req.reason or 'not provided'}",
            RebalanceCause.MEMBER_JOINED,
            member_id,
        )
        return reply

    def _emit_joined(
        self,
        group: ClassicGroup,
        member: Member,
        req: JoinGroupRequest,
        *,
        rejoined: bool,
        now: int,
    ) -> None:
        self._emit(
            MemberJoined(
                group_id=group.group_id,
                at_ms=now,
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                session_timeout_ms=member.session_timeout_ms,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                protocols=member.protocol_names(),
                rejoined=rejoined,
                reason=req.reason,
            )
        )

    def _park_join(self, group: ClassicGroup, member: Member) -> Reply[JoinGroupResponse]:
        """Park a JoinGroup. A JoinGroup it supersedes gets REBALANCE_IN_PROGRESS (retriable)
        where Kafka drops the old callback, so no reply is ever left unanswered."""
        if member.join_reply is not None:
            self._complete(
                member.join_reply,
                JoinGroupResponse(
                    error_code=Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id
                ),
            )
        reply: Reply[JoinGroupResponse] = Reply()
        group.set_join_reply(member, None)
        group.set_join_reply(member, reply)
        return reply

    def _update_member_and_rebalance(
        self,
        group: ClassicGroup,
        member: Member,
        req: JoinGroupRequest,
        protocols: Protocols,
        now: int,
        reason: str,
    ) -> Reply[JoinGroupResponse]:
        """Kafka's `updateMemberAndRebalance`."""
        group.update_protocols(member, protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        reply = self._park_join(group, member)
        self._emit_joined(group, member, req, rejoined=True, now=now)
        self._maybe_prepare_rebalance(
            group,
            now,
            f"{reason}; client reason: {req.reason or 'not provided'}",
            RebalanceCause.METADATA_CHANGE,
            member.member_id,
        )
        return reply

    def _replace_static_member(
        self, group: ClassicGroup, instance_id: str, old_id: str, new_id: str
    ) -> Member:
        """Kafka's `replaceStaticMember`: the member keeps its place, its assignment and its
        leadership under the new id; whatever the old id had parked is fenced."""
        member = group.members[old_id]
        if member.join_reply is not None:
            self._complete(
                member.join_reply,
                JoinGroupResponse(error_code=Errors.FENCED_INSTANCE_ID, member_id=old_id),
            )
            group.set_join_reply(member, None)
        if member.sync_reply is not None:
            self._complete(
                member.sync_reply, SyncGroupResponse(error_code=Errors.FENCED_INSTANCE_ID)
            )
            member.sync_reply = None
        self._timers.cancel(member.timer_key)
        group.members = {(new_id if mid == old_id else mid): m for mid, m in group.members.items()}
        member.member_id = new_id
        member.timer_key = ("heartbeat", group.group_id, new_id)
        group.static_members[instance_id] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        return member

    def _update_static_member_and_rebalance(
        self,
        group: ClassicGroup,
        old_id: str,
        new_id: str,
        req: JoinGroupRequest,
        protocols: Protocols,
        now: int,
    ) -> Reply[JoinGroupResponse]:
        """Kafka's `updateStaticMemberAndRebalance` (JoinGroup v9+: a Stable group keeps its
        assignment and a static leader is told to skip the assignor)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = self._replace_static_member(group, instance_id, old_id, new_id)
        self._schedule_session(group, member, member.session_timeout_ms, now)
        old_protocols = member.protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_protocols(member, protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        reply = self._park_join(group, member)

        def replaced() -> None:
            self._emit_static_replacement(group, member, old_id, req, now)

        reason = (
            f"Updating metadata for static member {new_id} with instance id {instance_id}"
            f"; client reason: {req.reason or 'not provided'}"
        )
        if group.state is Stable:
            if group.protocol_name == group.select_protocol():
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                if self._store_group(group, assignment, now):
                    replaced()
                    is_leader = group.is_leader(new_id)
                    response = JoinGroupResponse(
                        error_code=NONE,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        member_id=new_id,
                        members=self._join_members(group) if is_leader else (),
                        skip_assignment=is_leader,
                    )
                else:
                    # The new id could not be stored: put the old member back as it was.
                    group.update_protocols(member, old_protocols)
                    member.rebalance_timeout_ms, member.session_timeout_ms = old_timeouts
                    group.set_join_reply(member, None)
                    self._replace_static_member(group, instance_id, new_id, old_id)
                    self._schedule_session(group, member, member.session_timeout_ms, now)
                    response = JoinGroupResponse(
                        error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or "",
                    )
                group.set_join_reply(member, None)
                self._complete(reply, response)
            else:
                replaced()
                self._maybe_prepare_rebalance(
                    group,
                    now,
                    f"Group's selected protocol will change because static member {new_id}"
                    " joined with other protocols",
                    RebalanceCause.STATIC_MEMBER_REPLACED,
                    new_id,
                )
        elif group.state is CompletingRebalance:
            # The leader may already be assigning to the old id: rebalance so the new id gets
            # an assignment.
            replaced()
            self._prepare_rebalance(
                group, now, reason, RebalanceCause.STATIC_MEMBER_REPLACED, new_id
            )
        else:
            replaced()
        return reply

    def _emit_static_replacement(
        self, group: ClassicGroup, member: Member, old_id: str, req: JoinGroupRequest, now: int
    ) -> None:
        """A replacement took effect: the ids are linked, the old one is fenced (removed) and
        the new one joined, so a history keyed by member id stays whole."""
        instance_id = member.group_instance_id
        assert instance_id is not None
        self._emit(
            StaticMemberReplaced(
                group_id=group.group_id,
                at_ms=now,
                group_instance_id=instance_id,
                old_member_id=old_id,
                new_member_id=member.member_id,
            )
        )
        self._emit(
            MemberRemoved(
                group_id=group.group_id,
                at_ms=now,
                member_id=old_id,
                group_instance_id=instance_id,
                reason=RemovalReason.FENCED.value,
                detail=f"static member {instance_id} rejoined as {member.member_id}",
            )
        )
        self._emit_joined(group, member, req, rejoined=False, now=now)

    # ---------------------------------------------------------------- SyncGroup

    def _sync_group(self, req: SyncGroupRequest, now: int) -> Reply[SyncGroupResponse]:
        """Kafka's `handleSyncGroup` / `doSyncGroup`."""
        try:
            self._validate_group(req.group_id, allow_empty_id=False)
            group = self._classic_group(req.group_id)
            if group is None:
                raise UnknownMemberIdError(req.member_id)
            if group.state is Dead:
                raise CoordinatorNotAvailableError(req.group_id)
            self._validate_current_member(group, req.member_id, req.group_instance_id)
            if req.generation_id != group.generation_id:
                raise IllegalGenerationError(str(req.generation_id))
            if req.protocol_type is not None and group.protocol_type != req.protocol_type:
                raise InconsistentGroupProtocolError(req.protocol_type)
            if req.protocol_name is not None and group.protocol_name != req.protocol_name:
                raise InconsistentGroupProtocolError(req.protocol_name)
        except CoordinatorError as exc:
            return _sync_error(error_code_of(exc))
        state = group.state
        if state is Empty:
            return _sync_error(Errors.UNKNOWN_MEMBER_ID)
        if state is PreparingRebalance:
            return _sync_error(Errors.REBALANCE_IN_PROGRESS)
        member = group.members[req.member_id]
        self._remove_pending_sync_member(group, req.member_id)
        if state is Stable:
            response = SyncGroupResponse(
                error_code=NONE,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            )
            self._schedule_session(group, member, member.session_timeout_ms, now)
            return Reply.of(response)
        # CompletingRebalance: park until the leader's assignment is stored.
        if member.sync_reply is not None:
            self._complete(
                member.sync_reply, SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
            )
        reply: Reply[SyncGroupResponse] = Reply()
        member.sync_reply = reply
        if group.is_leader(req.member_id):
            given = {a.member_id: a.assignment for a in req.assignments}
            assignment = {mid: given.get(mid, b"") for mid in group.members}
            if self._store_group(group, assignment, now):
                self._propagate_assignment(group, NONE, now)
                self._transition(group, Stable, now, "the leader's assignment was stored")
                self._emit_assignment(group, now)
            else:
                self._reset_and_propagate_assignment_error(
                    group, Errors.COORDINATOR_NOT_AVAILABLE, now
                )
                self._maybe_prepare_rebalance(
                    group,
                    now,
                    "Error when storing group assignment during SyncGroup"
                    f" (member: {req.member_id})",
                    RebalanceCause.COORDINATOR,
                    None,
                )
        return reply

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._timers.cancel(("sync", group.group_id, group.generation_id))

    def _emit_assignment(self, group: ClassicGroup, now: int) -> None:
        if not self._listeners:
            return
        partitions: dict[str, list[list[Any]]] | None = None
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            partitions = {}
            for member in group.members.values():
                try:
                    decoded = decode_assignment(member.assignment) if member.assignment else None
                except ConsumerProtocolError:
                    partitions = None
                    break
                partitions[member.member_id] = (
                    [] if decoded is None else [[t, p] for t, p in decoded.assigned_partitions]
                )
        self._emit(
            AssignmentStored(
                group_id=group.group_id,
                at_ms=now,
                generation_id=group.generation_id,
                assignments={m.member_id: m.assignment.hex() for m in group.members.values()},
                partitions=partitions,
            )
        )

    # ---------------------------------------------------------------- Heartbeat

    def _heartbeat(self, req: HeartbeatRequest, now: int) -> Reply[HeartbeatResponse]:
        """Kafka's `handleHeartbeat`: a member in the current generation refreshes its session;
        while a rebalance is being prepared the answer is REBALANCE_IN_PROGRESS."""
        group_id = req.group_id
        if group_id == "":
            return _HEARTBEAT_REPLIES[Errors.INVALID_GROUP_ID]
        if self._owns is not None and not self._owns(group_id):
            return _HEARTBEAT_REPLIES[Errors.NOT_COORDINATOR]
        group = self._groups.get(group_id)
        if group is None:
            return _HEARTBEAT_REPLIES[Errors.UNKNOWN_MEMBER_ID]
        if not isinstance(group, ClassicGroup):
            return Reply.of(HeartbeatResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL))
        member = group.members.get(req.member_id)
        instance_id = req.group_instance_id
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return _HEARTBEAT_REPLIES[Errors.UNKNOWN_MEMBER_ID]
            if current != req.member_id:
                return _HEARTBEAT_REPLIES[Errors.FENCED_INSTANCE_ID]
        if member is None:
            return _HEARTBEAT_REPLIES[Errors.UNKNOWN_MEMBER_ID]
        if req.generation_id != group.generation_id:
            return _HEARTBEAT_REPLIES[Errors.ILLEGAL_GENERATION]
        state = group.state
        if state is Empty:
            return _HEARTBEAT_REPLIES[Errors.UNKNOWN_MEMBER_ID]
        self._timers.schedule(member.timer_key, now + member.session_timeout_ms)
        if state is PreparingRebalance:
            return _HEARTBEAT_REPLIES[Errors.REBALANCE_IN_PROGRESS]
        return _HEARTBEAT_REPLIES[NONE]

    # ---------------------------------------------------------------- LeaveGroup

    def _leave_group(self, req: LeaveGroupRequest, now: int) -> Reply[LeaveGroupResponse]:
        """Kafka's `handleLeaveGroup`: members leave by member id, or by instance id alone (an
        administrative removal); pending members just vanish."""
        try:
            self._validate_group(req.group_id, allow_empty_id=False)
            group = self._classic_group(req.group_id)
        except CoordinatorError as exc:
            return Reply.of(LeaveGroupResponse(error_code=error_code_of(exc)))
        if group is None:
            return Reply.of(
                LeaveGroupResponse(
                    error_code=NONE,
                    members=tuple(
                        self._leave_result(m, Errors.UNKNOWN_MEMBER_ID) for m in req.members
                    ),
                )
            )
        results = tuple(self._leave_one(group, m, now) for m in req.members)
        return Reply.of(LeaveGroupResponse(error_code=NONE, members=results))

    @staticmethod
    def _leave_result(identity: MemberIdentity, code: Errors) -> LeaveMemberResult:
        return LeaveMemberResult(
            member_id=identity.member_id,
            group_instance_id=identity.group_instance_id,
            error_code=code,
        )

    def _leave_one(
        self, group: ClassicGroup, identity: MemberIdentity, now: int
    ) -> LeaveMemberResult:
        member_id = identity.member_id
        if member_id == "":
            current = (
                None
                if identity.group_instance_id is None
                else group.static_members.get(identity.group_instance_id)
            )
            if current is None:
                return self._leave_result(identity, Errors.UNKNOWN_MEMBER_ID)
            self._remove_leaving_member(
                group, group.members[current], identity, RemovalReason.REMOVED_BY_ADMIN, now
            )
            return self._leave_result(identity, NONE)
        if member_id in group.pending_members:
            group.remove(member_id)
            self._timers.cancel(("heartbeat", group.group_id, member_id))
            self._emit(
                PendingMemberRemoved(
                    group_id=group.group_id, at_ms=now, member_id=member_id, reason="left"
                )
            )
            if group.state is PreparingRebalance:
                self._try_complete_join(group, now)
            return self._leave_result(identity, NONE)
        try:
            self._validate_current_member(group, member_id, identity.group_instance_id)
        except CoordinatorError as exc:
            return self._leave_result(identity, error_code_of(exc))
        reason = RemovalReason.LEFT
        if identity.reason is not None and identity.reason.startswith(ADMIN_REMOVAL_REASONS):
            reason = RemovalReason.REMOVED_BY_ADMIN
        self._remove_leaving_member(group, group.members[member_id], identity, reason, now)
        return self._leave_result(identity, NONE)

    def _remove_leaving_member(
        self,
        group: ClassicGroup,
        member: Member,
        identity: MemberIdentity,
        reason: RemovalReason,
        now: int,
    ) -> None:
        client_reason = identity.reason or "not provided"
        self._remove_member_and_update_group(
            group,
            member,
            reason,
            identity.reason,
            now,
            f"Removing member {member.member_id} on LeaveGroup; client reason: {client_reason}",
        )

    def _drop_group(self, group: ClassicGroup) -> None:
        del self._groups[group.group_id]
        self._timers.cancel(("join", group.group_id))
        self._timers.cancel(("sync", group.group_id, group.generation_id))
        for member_id in group.pending_members:
            self._timers.cancel(("heartbeat", group.group_id, member_id))

    # ---------------------------------------------------------------- admin APIs

    def describe(self, group: ClassicGroup) -> DescribedGroup:
        """Kafka's `handleDescribeGroup` for one classic group: member metadata and assignments
        only when Stable."""
        group_id = group.group_id
        stable = group.state is Stable
        protocol = group.protocol_name if stable else None
        return DescribedGroup(
            error_code=NONE,
            group_id=group_id,
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=protocol or "",
            members=tuple(
                DescribedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata(protocol) if protocol is not None else b"",
                    member_assignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            ),
        )

    def listed_groups(self, states: set[str]) -> list[ListedGroup]:
        """ListGroups' entries for classic groups, by group id (`states` lower-cased)."""
        return [
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type or "",
                group_state=g.state.value,
                group_type="classic",
            )
            for _, g in sorted(self._groups.items())
            if isinstance(g, ClassicGroup) and (not states or g.state.value.lower() in states)
        ]

    # ---------------------------------------------------------------- replay

    def replay(self, key: GroupMetadataKey, value: GroupMetadataValue | None, now: int) -> None:
        """Apply a GroupMetadata record at load: the group as stored (Stable with members,
        else Empty); a tombstone removes it (the offsets manager keeps a group whose offsets
        remain, `OffsetsManager.on_loaded`)."""
        group_id = key.group
        self._groups.pop(group_id, None)
        if value is None:
            return
        group = self._new_group(group_id, now)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.state_timestamp_ms = (
            None if value.current_state_timestamp < 0 else value.current_state_timestamp
        )
        for stored in value.members:
            member = Member(
                member_id=stored.member_id,
                group_instance_id=stored.group_instance_id,
                client_id=stored.client_id,
                client_host=stored.client_host,
                rebalance_timeout_ms=stored.rebalance_timeout,
                session_timeout_ms=stored.session_timeout,
                protocol_type=value.protocol_type,
                protocols=((value.protocol, stored.subscription),)
                if value.protocol is not None
                else (),
                assignment=stored.assignment,
            )
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.state = Stable if group.members else Empty
        group.subscribed_topics = group.compute_subscribed_topics()

    def on_loaded(self, now: int) -> None:
        """Kafka's `onGroupLoaded`: re-arm every member's session timer; a group over
        group.max.size rebalances."""
        max_size = self.config.group_max_size
        for group_id in sorted(self._groups):
            group = self._groups[group_id]
            if not isinstance(group, ClassicGroup):
                continue
            for member in group.members.values():
                self._schedule_session(group, member, member.session_timeout_ms, now)
            if len(group.members) > max_size:
                self._prepare_rebalance(
                    group,
                    now,
                    f"Freshly-loaded group is over capacity ({max_size})",
                    RebalanceCause.COORDINATOR,
                    None,
                )
