"""Consumer groups' manager: KIP-848's consumer group protocol, as Kafka's
`GroupMetadataManager` serves its consumer groups (`consumerGroupHeartbeat`,
`consumerGroupLeave`, the session and rebalance timeouts, `consumerGroupDescribe`, `replay`).

Theory of operation
-------------------
Members speak one request, ConsumerGroupHeartbeat, answered at once (never parked: librdkafka's
request timeout is the heartbeat interval). A heartbeat goes through three steps, each writing
records only for what changed:

1. **The member.** It joins (epoch 0, a member id of its own), is looked up (UNKNOWN_MEMBER_ID,
   FENCED_MEMBER_EPOCH, the static-membership rules) and updated from the request's non-null
   fields (ConsumerGroupMemberMetadata). A changed subscription, a regular expression that now
   resolves differently (ConsumerGroupRegularExpression) or a change of the subscribed topics'
   metadata (ConsumerGroupPartitionMetadata) bumps the **group epoch** (ConsumerGroupMetadata).
2. **The target.** While the group epoch is ahead of the target assignment's epoch, the
   server-side assignor computes a new target (`target.py`; ConsumerGroupTargetAssignmentMember
   for the members whose target changed, then ConsumerGroupTargetAssignmentMetadata).
3. **Reconciliation.** The member moves towards its target (`reconciliation.py`): it revokes
   first, at its old epoch (UNREVOKED_PARTITIONS, its rebalance timeout armed), then gets the
   new epoch and every partition nobody else owns any more (UNRELEASED_PARTITIONS while some are
   still owned) (ConsumerGroupCurrentMemberAssignment).

Every record is applied to a draft of the group as it is made, so the next step sees it; once
the whole batch is durable the same records are applied to the group (`ConsumerGroup.apply`,
the function the replay calls), the group's state is derived and its events are emitted. A
refused append changes nothing and answers COORDINATOR_NOT_AVAILABLE.

Leaving (epoch -1), a session that expires and a rebalance timeout that fires with the member
still at the epoch it was armed at remove the member (tombstones of its records in Kafka's
order, then an epoch bump); a static member leaving with -2 keeps its place and its partitions
so that its instance id can come back under a new member id without a bump. Topics the host
creates, deletes or grows (`on_topics_changed`) bump the groups that subscribe to them. The
target is computed lazily, at the next heartbeat, as in Kafka: the group is Assigning until
then. Timers: ``("consumer-session", group, member)`` and ``("consumer-rebalance", group,
member)``, re-armed at load. See docs/engine.md, "Consumer groups".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, NoReturn
from uuid import UUID

from ..context import CoordinatorContext, Group, Handler, Record, TimerKey
from ..errors import (
    CoordinatorError,
    CoordinatorNotAvailableError,
    Errors,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InconsistentGroupProtocolError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnknownServerError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
    error_code_of,
)
from ..events import (
    REMOVAL_CAUSES,
    ConsumerGroupEpochBumped,
    ConsumerMemberJoined,
    ConsumerMemberStateChanged,
    ConsumerPartitionsAssigned,
    ConsumerPartitionsRevoked,
    ConsumerStaticMemberLeft,
    ConsumerTargetAssignmentComputed,
    GroupEvent,
    MemberRemoved,
    RebalanceCause,
    RemovalReason,
    StateChanged,
    StaticMemberReplaced,
)
from ..records import RecordType
from ..reply import Reply
from ..requests import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from ..responses import (
    ConsumerDescribedGroup,
    ConsumerDescribedMember,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    ListedGroup,
)
from ..server_assignors import DEFAULT_SERVER_ASSIGNOR, SERVER_ASSIGNORS
from ..server_assignors import UnsupportedAssignorError as AssignorNotFound
from ..topics import default_topic_id
from .group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    TP,
    ConsumerGroup,
    ConsumerGroupMember,
    CurrentAssignment,
    SubscribedTopic,
    by_topic,
)
from .reconciliation import reconcile
from .records import (
    CONSUMER_RECORD_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicMetadata,
    encode_record,
    topic_partitions,
)
from .state import Assigning, Dead, Empty, MemberState, Reconciling, Stable, check_transition
from .target import compute_target_assignment, member_topics

__all__ = ["PROTOCOL_TYPE", "TIMER_KINDS", "ConsumerGroupManager", "validate_regex"]

#: The timer kinds this manager arms (the façade routes them here).
TIMER_KINDS = ("consumer-session", "consumer-rebalance")
#: What ListGroups shows as a consumer group's protocol type and group type.
PROTOCOL_TYPE = "consumer"
NONE = Errors.NONE

#: What RE2 (Kafka's regular expressions) refuses and Python's `re` accepts: lookaround,
#: backreferences (by number or name), conditionals and possessive/atomic groups.
_NOT_RE2 = re.compile(r"\(\?(?:=|!|<=|<!|P=|\(|>)|\\[1-9]|\\g<|[*+?}]\+")


def validate_regex(regex: str) -> re.Pattern[str]:
    """Compile a subscription's regular expression, refusing what RE2 would refuse where
    Python's `re` does not (INVALID_REGULAR_EXPRESSION)."""
    if _NOT_RE2.search(regex):
        raise InvalidRegularExpressionError(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: lookaround, "
            "backreferences, conditionals and possessive or atomic groups are not supported."
        )
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidRegularExpressionError(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}."
        ) from None


class _Change:
    """The records of one change of one group, applied to a draft as they are made; the
    events to emit once they are durable; the cause of an epoch bump."""

    __slots__ = (
        "bumped",
        "cause",
        "cause_member_id",
        "draft",
        "events",
        "pre",
        "records",
        "replaced",
    )

    def __init__(self, draft: ConsumerGroup) -> None:
        self.draft = draft
        self.records: list[tuple[Any, Any]] = []
        self.events: list[GroupEvent] = []
        #: Records written first (the tombstones of an empty classic group taken over).
        self.pre: list[Record] = []
        #: The group of another kind this change takes over, if any.
        self.replaced: Group | None = None
        self.cause: RebalanceCause | None = None
        self.cause_member_id: str | None = None
        #: Whether it bumps the group epoch: a move it makes out of Empty or Stable starts a
        #: rebalance only then (a static member's -2 leave moves the group to Reconciling,
        #: as in Kafka, with no new target: nothing is rebalanced).
        self.bumped = False

    def add(self, key: Any, value: Any) -> None:
        self.records.append((key, value))
        self.draft.apply(key, value)

    def caused_by(self, cause: RebalanceCause, member_id: str | None) -> None:
        if self.cause is None:
            self.cause, self.cause_member_id = cause, member_id


def _json_tps(group: ConsumerGroup, partitions: Iterable[TP]) -> list[list[Any]]:
    return [[t, p] for t, parts in group.named(partitions).items() for p in parts]


class ConsumerGroupManager:
    """The consumer groups of one coordinator: their heartbeat, timers, records and replay,
    ConsumerGroupDescribe, and the `GroupKind` hooks the offsets manager asks of them."""

    kind: ClassVar[str] = ConsumerGroup.kind
    timer_kinds: ClassVar[tuple[str, ...]] = TIMER_KINDS
    record_types: ClassVar[tuple[RecordType, ...]] = CONSUMER_RECORD_TYPES

    def __init__(self, ctx: CoordinatorContext) -> None:
        self._ctx = ctx
        self.config = ctx.config
        self._groups = ctx.groups
        self._timers = ctx.timers
        self._topics = ctx.topics
        #: (group, member) → the member epoch its rebalance timeout was armed at.
        self._rebalance_epochs: dict[tuple[str, str], int] = {}

    def handlers(self) -> dict[type, Handler]:
        return {
            ConsumerGroupHeartbeatRequest: self._heartbeat,
            ConsumerGroupDescribeRequest: self._describe_consumer_groups,
        }

    def consumer_groups(self) -> list[ConsumerGroup]:
        """Every consumer group, in group id order."""
        return [g for _, g in sorted(self._groups.items()) if isinstance(g, ConsumerGroup)]

    # ---------------------------------------------------------------- validation

    def _raise_if_request_invalid(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid` (v1: the member id is
        always required, as KIP-1082 clients choose it)."""

        def blank(value: str | None) -> bool:
            return value is not None and value.strip() == ""

        if req.member_id.strip() == "":
            raise InvalidRequestError("MemberId can't be empty.")
        if req.group_id.strip() == "":
            raise InvalidRequestError("GroupId can't be empty.")
        if blank(req.instance_id):
            raise InvalidRequestError("InstanceId can't be empty.")
        if blank(req.rack_id):
            raise InvalidRequestError("RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
            if not req.subscribed_topic_names and not req.subscribed_topic_regex:
                raise InvalidRequestError(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
                )
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise InvalidRequestError("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise InvalidRequestError("MemberEpoch is invalid.")
        if req.rebalance_timeout_ms < -1:
            raise InvalidRequestError("RebalanceTimeoutMs is invalid.")
        if req.server_assignor is not None and req.server_assignor not in SERVER_ASSIGNORS:
            raise UnsupportedAssignorError(
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(SERVER_ASSIGNORS)}."
            )
        if req.subscribed_topic_regex:
            validate_regex(req.subscribed_topic_regex)

    @staticmethod
    def _raise_if_member_epoch_invalid(
        member: ConsumerGroupMember, received: int, owned: frozenset[TP] | None
    ) -> None:
        """Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`, with KAFKA-19233: a known
        member rejoining with epoch 0 is never fenced (librdkafka rejoins under its id)."""
        current = member.current
        if received == 0:
            return
        if received > current.member_epoch:
            raise FencedMemberEpochError(
                f"The consumer group member has a greater member epoch ({received}) than the "
                f"one known by the group coordinator ({current.member_epoch}). The member must "
                "abandon all its partitions and rejoin."
            )
        if received < current.member_epoch and (
            received != current.previous_member_epoch
            or owned is None
            or not owned <= current.assigned
        ):
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller member epoch ({received}) than the "
                f"one known by the group coordinator ({current.member_epoch}). The member must "
                "abandon all its partitions and rejoin."
            )

    # ---------------------------------------------------------------- the heartbeat

    def _heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]:
        """Kafka's `consumerGroupHeartbeat`: a leave, or a join or regular heartbeat."""
        try:
            self._raise_if_request_invalid(req)
            self._ctx.raise_if_not_coordinator(req.group_id)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req, now)
            return self._regular_heartbeat(req, now)
        except CoordinatorError as exc:
            # Kafka's error answer: the code and its message, no member id, epoch 0.
            return Reply.of(
                ConsumerGroupHeartbeatResponse(
                    error_code=error_code_of(exc), error_message=str(exc) or None
                )
            )

    def _group_for_heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> _Change:
        """Kafka's `getOrMaybeCreateConsumerGroup`: a join creates the group, and takes over
        the id of an empty classic group (its metadata tombstoned, its offsets kept)."""
        group_id = req.group_id
        group = self._groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return _Change(group.copy())
        change = _Change(ConsumerGroup(group_id, self._topics.names))
        if group is None:
            if req.member_epoch != 0:
                raise GroupIdNotFoundError(f"Consumer group {group_id} not found.")
            return change
        kinds = self._ctx.kinds
        if (
            req.member_epoch == 0
            and group.kind == "classic"
            and kinds is not None
            and kinds.is_empty(group)
        ):
            change.pre = kinds.group_tombstones(group)
            change.replaced = group
            return change
        raise InconsistentGroupProtocolError(f"Group {group_id} is not a consumer group.")

    def _regular_heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]:
        group = self._groups.get(req.group_id)
        if isinstance(group, ConsumerGroup) and req.member_epoch != 0:
            fast = self._unchanged_heartbeat(group, req, now)
            if fast is not None:
                return fast
        change = self._group_for_heartbeat(req)
        draft = change.draft
        member_id = req.member_id
        if (
            len(draft.members) >= self.config.consumer_group_max_size
            and member_id not in draft.members
        ):
            raise GroupMaxSizeReachedError(
                "The consumer group has reached its maximum capacity of "
                f"{self.config.consumer_group_max_size} members."
            )
        owned = self._owned(draft, req)
        member, joined = self._member_for_heartbeat(change, req, owned, now)
        old_current = member.current

        # 1. The member and its subscription.
        updated = dataclasses.replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms
            if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=req.server_assignor
            if req.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=tuple(req.subscribed_topic_names)
            if req.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=req.subscribed_topic_regex
            if req.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            client_id=req.client_id,
            client_host=req.client_host,
        )
        bump = False
        # `member` is the draft's: applying its record changes it, so compare first.
        subscription_changed = (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.regex() != member.regex()
        )
        if joined or updated.subscription_value() != member.subscription_value():
            change.add(
                ConsumerGroupMemberMetadataKey(group=req.group_id, member_id=member_id),
                updated.subscription_value(),
            )
            if joined:
                bump = True
                change.caused_by(RebalanceCause.MEMBER_JOINED, member_id)
                change.events.append(
                    ConsumerMemberJoined(
                        group_id=req.group_id,
                        at_ms=now,
                        member_id=member_id,
                        instance_id=updated.instance_id,
                        rack_id=updated.rack_id,
                        client_id=updated.client_id,
                        client_host=updated.client_host,
                        rebalance_timeout_ms=updated.rebalance_timeout_ms,
                        subscribed_topic_names=list(updated.subscribed_topic_names),
                        subscribed_topic_regex=updated.subscribed_topic_regex,
                        server_assignor=updated.server_assignor,
                    )
                )
            elif subscription_changed:
                bump = True
                change.caused_by(RebalanceCause.METADATA_CHANGE, member_id)
        if bump:
            self._refresh_regexes(change, now)
            self._refresh_metadata(change)
            self._bump_epoch(change, now)

        # 2. The target assignment.
        if draft.group_epoch > draft.assignment_epoch:
            self._update_target(change, now)

        # 3. Reconciliation.
        current = draft.members[member_id].current
        target = draft.target.get(member_id, frozenset())
        new_current = reconcile(current, draft.assignment_epoch, target, owned, draft.owner)
        if new_current != current:
            self._set_current(change, member_id, new_current, now)

        if not self._commit(change, now):
            raise CoordinatorNotAvailableError("The coordinator could not store the change.")
        stored = self._groups[req.group_id]
        assert isinstance(stored, ConsumerGroup)
        stored_member = stored.members[member_id]
        self._arm_timers(stored, stored_member, now, changed=new_current != current)
        full = req.member_epoch == 0 or (
            req.rebalance_timeout_ms != -1
            and req.subscribed_topic_names is not None
            and req.topic_partitions is not None
        )
        send = full or stored_member.current.assigned != old_current.assigned
        return Reply.of(self._answer(stored, stored_member, send))

    def _unchanged_heartbeat(
        self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> Reply[ConsumerGroupHeartbeatResponse] | None:
        """Most heartbeats: a Stable member at the group's epoch that changes nothing gets its
        answer without a draft of the group (no record, no reconciliation to do)."""
        member = group.members.get(req.member_id)
        if member is None or req.instance_id not in (None, member.instance_id):
            return None
        current = member.current
        epoch = group.assignment_epoch
        if (
            req.member_epoch != current.member_epoch
            or group.group_epoch != epoch
            or not current.is_reconciled_to(epoch)
            or req.topic_partitions is not None
            or req.client_id != member.client_id
            or req.client_host != member.client_host
            or req.rack_id not in (None, member.rack_id)
            or req.rebalance_timeout_ms not in (-1, member.rebalance_timeout_ms)
            or req.server_assignor not in (None, member.server_assignor)
            or req.subscribed_topic_regex not in (None, member.subscribed_topic_regex)
            or (
                req.subscribed_topic_names is not None
                and tuple(req.subscribed_topic_names) != member.subscribed_topic_names
            )
        ):
            return None
        self._schedule_session(group.group_id, member.member_id, now)
        return Reply.of(self._answer(group, member, False))

    def _answer(
        self, group: ConsumerGroup, member: ConsumerGroupMember, with_assignment: bool
    ) -> ConsumerGroupHeartbeatResponse:
        assignment: dict[str, tuple[int, ...]] | None = None
        if with_assignment:
            # A topic whose name the engine does not know (its id read from the log, the host
            # has not reported it) cannot be named to the member: it is left out.
            named: dict[str, list[int]] = {}
            for topic_id, partition in member.current.assigned:
                name = group.topic_name(topic_id)
                if name is not None:
                    named.setdefault(name, []).append(partition)
            assignment = {t: tuple(sorted(p)) for t, p in sorted(named.items())}
        return ConsumerGroupHeartbeatResponse(
            error_code=NONE,
            member_id=member.member_id,
            member_epoch=member.current.member_epoch,
            heartbeat_interval_ms=self.config.consumer_group_heartbeat_interval_ms,
            assignment=assignment,
        )

    def _topic_id_of(self, group: ConsumerGroup, name: str) -> UUID:
        """A topic name's id: as reported by the host, else as the group stored it, else the
        derived one."""
        if self._topics.reported(name):
            return self._topics.topic_id(name)
        stored = group.subscription_metadata.get(name)
        if stored is not None:
            return stored.topic_id
        for topic_id, stored_name in group.topic_names.items():
            if stored_name == name:
                return topic_id
        return default_topic_id(name)

    def _owned(
        self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest
    ) -> frozenset[TP] | None:
        if req.topic_partitions is None:
            return None
        return frozenset(
            (self._topic_id_of(group, entry.topic), partition)
            for entry in req.topic_partitions
            for partition in entry.partitions
        )

    def _member_for_heartbeat(
        self,
        change: _Change,
        req: ConsumerGroupHeartbeatRequest,
        owned: frozenset[TP] | None,
        now: int,
    ) -> tuple[ConsumerGroupMember, bool]:
        """Kafka's `getOrMaybeSubscribeDynamicConsumerGroupMember` and
        `getOrMaybeSubscribeStaticConsumerGroupMember`: the member (new or known) and whether
        it is new. A static member taking over its instance id from a member that left with
        -2 replaces it (its records tombstoned, its assignment copied to the new id)."""
        draft = change.draft
        member_id = req.member_id
        joining = req.member_epoch == 0
        if req.instance_id is None:
            member = draft.members.get(member_id)
            if member is None:
                if not joining:
                    raise UnknownMemberIdError(
                        f"Member {member_id} is not a member of group {req.group_id}."
                    )
                return ConsumerGroupMember(member_id), True
            self._raise_if_member_epoch_invalid(member, req.member_epoch, owned)
            return member, False
        instance_id = req.instance_id
        existing = draft.static_member(instance_id)
        if not joining:
            if existing is None:
                raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
            if existing.member_id != member_id:
                raise FencedInstanceIdError(
                    f"Static member {member_id} with instance id {instance_id} was fenced by "
                    f"member {existing.member_id}."
                )
            self._raise_if_member_epoch_invalid(existing, req.member_epoch, owned)
            return existing, False
        if existing is None:
            member = draft.members.get(member_id)
            return (member, False) if member is not None else (ConsumerGroupMember(member_id), True)
        if existing.member_id == member_id:
            # The same member rejoining with epoch 0 (KAFKA-19233): not a new instance.
            return existing, False
        if existing.current.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise UnreleasedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} cannot join the "
                f"group because the instance id is owned by {existing.member_id} member."
            )
        # Kafka's `replaceMember`: the old member's records go, the new id inherits its
        # subscription, target and assignment (at epoch 0), with no epoch bump.
        old_id = existing.member_id
        target = draft.target.get(old_id, frozenset())
        replacement = dataclasses.replace(
            existing,
            member_id=member_id,
            current=dataclasses.replace(existing.current, member_epoch=0, previous_member_epoch=0),
        )
        self._tombstone_member(change, old_id)
        group_id = req.group_id
        change.add(
            ConsumerGroupMemberMetadataKey(group=group_id, member_id=member_id),
            replacement.subscription_value(),
        )
        change.add(
            ConsumerGroupTargetAssignmentMemberKey(group=group_id, member_id=member_id),
            ConsumerGroupTargetAssignmentMemberValue(
                topic_partitions=topic_partitions(by_topic(target))
            ),
        )
        change.add(
            ConsumerGroupCurrentMemberAssignmentKey(group=group_id, member_id=member_id),
            replacement.current.value(),
        )
        change.events.append(
            StaticMemberReplaced(
                group_id=group_id,
                at_ms=now,
                group_instance_id=instance_id,
                old_member_id=old_id,
                new_member_id=member_id,
            )
        )
        return draft.members[member_id], False

    # ---------------------------------------------------------------- leaving and fencing

    def _leave(
        self, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]:
        """Kafka's `consumerGroupLeave`: -1 removes the member (an epoch bump follows); -2,
        a static member's, keeps it at epoch -2 with its assignment."""
        group = self._groups.get(req.group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Consumer group {req.group_id} not found.")
        if not isinstance(group, ConsumerGroup):
            raise InconsistentGroupProtocolError(f"Group {req.group_id} is not a consumer group.")
        change = _Change(group.copy())
        draft = change.draft
        if req.instance_id is None:
            member = draft.members.get(req.member_id)
            if member is None:
                raise UnknownMemberIdError(
                    f"Member {req.member_id} is not a member of group {req.group_id}."
                )
        else:
            member = draft.static_member(req.instance_id)
            if member is None:
                raise UnknownMemberIdError(f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise FencedInstanceIdError(
                    f"Static member {req.member_id} with instance id {req.instance_id} was "
                    f"fenced by member {member.member_id}."
                )
        member_id = member.member_id
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            leaving = dataclasses.replace(
                member.current,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                pending_revocation=frozenset(),
            )
            self._set_current(change, member_id, leaving, now, quiet=True)
            assert req.instance_id is not None
            change.events.append(
                ConsumerStaticMemberLeft(
                    group_id=req.group_id,
                    at_ms=now,
                    member_id=member_id,
                    instance_id=req.instance_id,
                )
            )
        else:
            self._fence(change, member_id, RemovalReason.LEFT, now)
        if not self._commit(change, now):
            raise CoordinatorNotAvailableError("The coordinator could not store the change.")
        self._cancel_rebalance_timer(req.group_id, member_id)
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            self._timers.cancel(("consumer-session", req.group_id, member_id))
        return Reply.of(
            ConsumerGroupHeartbeatResponse(
                error_code=NONE,
                member_id=req.member_id,
                member_epoch=req.member_epoch,
                heartbeat_interval_ms=0,
            )
        )

    def remove_member(self, group_id: str, member_id: str, now: int) -> Errors:
        """An admin removes a member, as Kafka's LeaveGroup to a consumer group does
        (`classicGroupLeaveToConsumerGroup`, what `kafka-consumer-groups --delete-members`
        sends): it is fenced (`MemberRemoved` reason `removed_by_admin`, an epoch bump caused
        by `admin_action`). GROUP_ID_NOT_FOUND for a group that is not a consumer group,
        UNKNOWN_MEMBER_ID for a member it does not have, COORDINATOR_NOT_AVAILABLE when the
        log refused the change."""
        group = self._groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return Errors.GROUP_ID_NOT_FOUND
        if member_id not in group.members:
            return Errors.UNKNOWN_MEMBER_ID
        change = _Change(group.copy())
        self._fence(change, member_id, RemovalReason.REMOVED_BY_ADMIN, now)
        if not self._commit(change, now):
            return Errors.COORDINATOR_NOT_AVAILABLE
        self._timers.cancel(("consumer-session", group_id, member_id))
        self._cancel_rebalance_timer(group_id, member_id)
        return NONE

    def _tombstone_member(self, change: _Change, member_id: str) -> None:
        """Kafka's `removeMember`: the member's records, in Kafka's order."""
        group_id = change.draft.group_id
        change.add(
            ConsumerGroupCurrentMemberAssignmentKey(group=group_id, member_id=member_id), None
        )
        change.add(
            ConsumerGroupTargetAssignmentMemberKey(group=group_id, member_id=member_id), None
        )
        change.add(ConsumerGroupMemberMetadataKey(group=group_id, member_id=member_id), None)

    def _fence(self, change: _Change, member_id: str, reason: RemovalReason, now: int) -> None:
        """Kafka's `consumerGroupFenceMember`: tombstones, the subscriptions refreshed without
        the member, an epoch bump."""
        draft = change.draft
        member = draft.members[member_id]
        self._tombstone_member(change, member_id)
        change.caused_by(REMOVAL_CAUSES[reason], member_id)
        change.events.append(
            MemberRemoved(
                group_id=draft.group_id,
                at_ms=now,
                member_id=member_id,
                group_instance_id=member.instance_id,
                reason=reason.value,
                detail=None,
            )
        )
        self._refresh_regexes(change, now)
        self._refresh_metadata(change)
        self._bump_epoch(change, now)

    def fire(self, key: TimerKey, now: int) -> None:
        """A member's session expired, or its rebalance timeout fired while it was still at
        the epoch it was armed at: it is fenced (removed, the group epoch bumped)."""
        kind, group_id, member_id = key
        group = self._groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or member_id not in group.members:
            self._rebalance_epochs.pop((group_id, member_id), None)
            return
        if kind == "consumer-rebalance":
            armed_at = self._rebalance_epochs.pop((group_id, member_id), None)
            if armed_at is None or group.members[member_id].current.member_epoch != armed_at:
                return
            reason = RemovalReason.REBALANCE_TIMEOUT
        else:
            reason = RemovalReason.SESSION_TIMEOUT
        change = _Change(group.copy())
        self._fence(change, member_id, reason, now)
        if self._commit(change, now):
            self._timers.cancel(("consumer-session", group_id, member_id))
            self._cancel_rebalance_timer(group_id, member_id)
        elif kind == "consumer-session":
            # The log refused: the member stays; try again after another session.
            self._schedule_session(group_id, member_id, now)
        else:
            # The log refused: the member stays; try again after another rebalance timeout.
            self._arm_rebalance_timer(group_id, group.members[member_id], now)

    # ---------------------------------------------------------------- epochs, subscriptions

    def _bump_epoch(self, change: _Change, now: int) -> None:
        draft = change.draft
        epoch = draft.group_epoch + 1
        change.add(
            ConsumerGroupMetadataKey(group=draft.group_id), ConsumerGroupMetadataValue(epoch=epoch)
        )
        cause = change.cause or RebalanceCause.METADATA_CHANGE
        change.bumped = True
        change.events.append(
            ConsumerGroupEpochBumped(
                group_id=draft.group_id,
                at_ms=now,
                epoch=epoch,
                cause=cause.value,
                cause_member_id=change.cause_member_id,
            )
        )

    def _resolve(self, group: ConsumerGroup, regex: str) -> tuple[str, ...]:
        """The topics a regex matches (whole names): among the topics that exist, and of those
        it matched before, the ones the host has not reported since the load."""
        old = group.regexes.get(regex)
        try:
            pattern = validate_regex(regex)
        except InvalidRegularExpressionError:
            # Only a regex read from a log another writer made (RE2 syntax `re` lacks) gets
            # here: requests are checked first. It keeps what it resolved to.
            return old.topics if old is not None else ()
        matched = {t for t in self._topics.existing() if pattern.fullmatch(t)}
        if old is not None:
            matched.update(t for t in old.topics if not self._topics.reported(t))
        return tuple(sorted(matched))

    def _refresh_regexes(self, change: _Change, now: int) -> bool:
        """Resolve every regex the members use (ConsumerGroupRegularExpression for those whose
        topics changed), tombstone those nobody uses; True when a used one changed."""
        draft = change.draft
        used = draft.subscribed_regexes()
        changed = False
        for regex in sorted(used):
            topics = self._resolve(draft, regex)
            old = draft.regexes.get(regex)
            if old is None or old.topics != topics:
                change.add(
                    ConsumerGroupRegularExpressionKey(
                        group=draft.group_id, regular_expression=regex
                    ),
                    ConsumerGroupRegularExpressionValue(
                        topics=topics, version=self._topics.version, timestamp=now
                    ),
                )
                changed = changed or old is not None
        for regex in sorted(set(draft.regexes) - used):
            change.add(
                ConsumerGroupRegularExpressionKey(group=draft.group_id, regular_expression=regex),
                None,
            )
        return changed

    def _subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        return {t for member_id in group.members for t in member_topics(group, member_id)}

    def _refresh_metadata(self, change: _Change) -> bool:
        """Recompute the subscribed topics' metadata (ConsumerGroupPartitionMetadata when it
        changed, as Kafka 4.0 writes it); True when it changed. A subscribed topic the host has
        not reported since the load keeps what the group stored of it."""
        draft = change.draft
        metadata: dict[str, SubscribedTopic] = {}
        for name in sorted(self._subscribed_topics(draft)):
            if self._topics.reported(name):
                count = self._topics.partitions(name)
                if count > 0:
                    metadata[name] = SubscribedTopic(self._topics.topic_id(name), count)
            elif name in draft.subscription_metadata:
                metadata[name] = draft.subscription_metadata[name]
        if metadata == draft.subscription_metadata:
            return False
        change.add(
            ConsumerGroupPartitionMetadataKey(group=draft.group_id),
            ConsumerGroupPartitionMetadataValue(
                topics=tuple(
                    TopicMetadata(
                        topic_id=topic.topic_id,
                        topic_name=name,
                        num_partitions=topic.num_partitions,
                    )
                    for name, topic in sorted(metadata.items())
                )
            ),
        )
        return True

    def _update_target(self, change: _Change, now: int) -> None:
        """Kafka's `updateTargetAssignment`."""
        draft = change.draft
        assignor = draft.preferred_assignor() or DEFAULT_SERVER_ASSIGNOR
        try:
            result = compute_target_assignment(draft, assignor, draft.subscription_metadata)
        except AssignorNotFound as exc:
            raise UnknownServerError(
                f"Failed to compute a new target assignment for epoch {draft.group_epoch}: {exc}"
            ) from None
        group_id = draft.group_id
        for member_id in result.changed:
            change.add(
                ConsumerGroupTargetAssignmentMemberKey(group=group_id, member_id=member_id),
                ConsumerGroupTargetAssignmentMemberValue(
                    topic_partitions=topic_partitions(by_topic(result.targets[member_id]))
                ),
            )
        change.add(
            ConsumerGroupTargetAssignmentMetadataKey(group=group_id),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=draft.group_epoch),
        )
        if not self._ctx.listeners:
            return  # the event names every member's partitions: not built for nobody
        change.events.append(
            ConsumerTargetAssignmentComputed(
                group_id=group_id,
                at_ms=now,
                epoch=draft.group_epoch,
                assignor=assignor,
                assignment={m: _json_tps(draft, t) for m, t in sorted(result.targets.items())},
            )
        )

    def _set_current(
        self,
        change: _Change,
        member_id: str,
        current: CurrentAssignment,
        now: int,
        *,
        quiet: bool = False,
    ) -> None:
        """Record a member's new current assignment, with the events that say what moved."""
        draft = change.draft
        old = draft.members[member_id].current
        change.add(
            ConsumerGroupCurrentMemberAssignmentKey(group=draft.group_id, member_id=member_id),
            current.value(),
        )
        if quiet or not self._ctx.listeners:
            return
        group_id = draft.group_id
        if (old.state, old.member_epoch) != (current.state, current.member_epoch):
            change.events.append(
                ConsumerMemberStateChanged(
                    group_id=group_id,
                    at_ms=now,
                    member_id=member_id,
                    from_state=old.state.name,
                    to_state=current.state.name,
                    member_epoch=current.member_epoch,
                    previous_member_epoch=current.previous_member_epoch,
                )
            )
        revoked = current.pending_revocation - old.pending_revocation
        if revoked:
            change.events.append(
                ConsumerPartitionsRevoked(
                    group_id=group_id,
                    at_ms=now,
                    member_id=member_id,
                    member_epoch=current.member_epoch,
                    partitions=_json_tps(draft, revoked),
                )
            )
        assigned = current.assigned - old.assigned
        if assigned:
            change.events.append(
                ConsumerPartitionsAssigned(
                    group_id=group_id,
                    at_ms=now,
                    member_id=member_id,
                    member_epoch=current.member_epoch,
                    partitions=_json_tps(draft, assigned),
                )
            )

    # ---------------------------------------------------------------- committing a change

    def _commit(self, change: _Change, now: int) -> bool:
        """Append the change's records; once durable, apply them to the group (the replay's
        function), derive its state and emit its events. False when the log refused."""
        if not change.records and not change.pre:
            return True
        encoded = [*change.pre, *(encode_record(k, v) for k, v in change.records)]
        if not self._ctx.append(encoded):
            return False
        group_id = change.draft.group_id
        if change.replaced is not None:
            kinds = self._ctx.kinds
            assert kinds is not None
            kinds.remove_group(change.replaced, now, "converted", tombstoned=bool(change.pre))
        group = self._groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            group = ConsumerGroup(group_id, self._topics.names)
            self._groups[group_id] = group
        for key, value in change.records:
            group.apply(key, value)
        for event in change.events:
            self._ctx.emit(event)
        self._settle_state(group, change, now)
        return True

    def _settle_state(self, group: ConsumerGroup, change: _Change, now: int) -> None:
        state = group.derive_state()
        if state is group.state:
            return
        reason = check_transition(group.state, state)
        starts = change.bumped and (
            (group.state in (Empty, Stable) and state in (Assigning, Reconciling))
            or (group.state is Reconciling and state is Assigning)
        )
        self._ctx.emit(
            StateChanged.of_move(
                group.group_id,
                now,
                group.state.value,
                state.value,
                reason,
                starts=starts,
                cause=change.cause,
                cause_member_id=change.cause_member_id,
            )
        )
        group.state = state

    # ---------------------------------------------------------------- timers

    def _schedule_session(self, group_id: str, member_id: str, now: int) -> None:
        self._timers.schedule(
            ("consumer-session", group_id, member_id),
            now + self.config.consumer_group_session_timeout_ms,
        )

    def _cancel_rebalance_timer(self, group_id: str, member_id: str) -> None:
        self._timers.cancel(("consumer-rebalance", group_id, member_id))
        self._rebalance_epochs.pop((group_id, member_id), None)

    def _arm_timers(
        self, group: ConsumerGroup, member: ConsumerGroupMember, now: int, *, changed: bool
    ) -> None:
        """Kafka: the session re-armed by every heartbeat; the rebalance timeout armed when the
        member's assignment changed into UNREVOKED_PARTITIONS, cancelled on any other change."""
        self._schedule_session(group.group_id, member.member_id, now)
        if not changed:
            return
        if member.current.state is MemberState.UNREVOKED_PARTITIONS:
            self._arm_rebalance_timer(group.group_id, member, now)
        else:
            self._cancel_rebalance_timer(group.group_id, member.member_id)

    def _arm_rebalance_timer(self, group_id: str, member: ConsumerGroupMember, now: int) -> None:
        self._rebalance_epochs[group_id, member.member_id] = member.current.member_epoch
        self._timers.schedule(
            ("consumer-rebalance", group_id, member.member_id),
            now + max(member.rebalance_timeout_ms, 0),
        )

    # ---------------------------------------------------------------- topics

    def on_topics_changed(self, topics: set[str], now: int) -> None:
        """The host created, deleted or resized `topics`: every consumer group that subscribes
        to one of them (by name, or by a regex that may now match differently) re-resolves its
        regexes and its subscribed topics' metadata, and bumps its epoch if either changed."""
        for group in self.consumer_groups():
            subscribed = self._subscribed_topics(group)
            if not group.subscribed_regexes() and not topics & subscribed:
                continue
            change = _Change(group.copy())
            change.caused_by(RebalanceCause.PARTITIONS_CHANGED, None)
            regexes = self._refresh_regexes(change, now)
            metadata = self._refresh_metadata(change)
            if regexes or metadata:
                self._bump_epoch(change, now)
            self._commit(change, now)

    # ---------------------------------------------------------------- records

    def replay(self, key: Any, value: Any, now: int) -> None:
        """Apply a consumer group record at load (Kafka's `replay` for each type): a record of
        a group id another kind holds replaces that group; the epoch record's tombstone
        removes the group."""
        group_id = key.group
        group = self._groups.get(group_id)
        if isinstance(key, ConsumerGroupMetadataKey) and value is None:
            if isinstance(group, ConsumerGroup):
                del self._groups[group_id]
            return
        if not isinstance(group, ConsumerGroup):
            if value is None:
                return
            group = ConsumerGroup(group_id, self._topics.names)
            self._groups[group_id] = group
        group.apply(key, value)

    def on_loaded(self, now: int) -> None:
        """Kafka's `onLoaded`: every member's session re-armed; the rebalance timeout of every
        member that must revoke; the group's state derived."""
        for group in self.consumer_groups():
            group.state = group.derive_state()
            for member in group.members.values():
                self._schedule_session(group.group_id, member.member_id, now)
                if member.current.state is MemberState.UNREVOKED_PARTITIONS:
                    self._arm_rebalance_timer(group.group_id, member, now)

    # ---------------------------------------------------------------- GroupKind hooks

    def create_simple_group(self, group_id: str, now: int) -> NoReturn:  # pragma: no cover
        raise AssertionError("a simple group is always a classic group")

    def is_simple(self, group: ConsumerGroup) -> bool:
        return False

    def is_empty(self, group: ConsumerGroup) -> bool:
        return not group.members

    def validate_offset_commit(
        self, group: ConsumerGroup, req: OffsetCommitRequest, now: int
    ) -> None:
        """Kafka's `ConsumerGroup.validateOffsetCommit`: without a member epoch (-1) only into
        a group without members; a member commits with OffsetCommit v9 or later over Kafka's
        wire (UNSUPPORTED_VERSION otherwise), in its current epoch (STALE_MEMBER_EPOCH
        otherwise). The generation field of OffsetCommit v9 carries the member epoch."""
        if req.generation_id < 0 and not group.members:
            return
        member = group.members.get(req.member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of the group.")
        if req.api_version is not None and req.api_version < 9:
            raise UnsupportedVersionError(
                "OffsetCommit version 9 or above must be used by members using the consumer "
                f"group protocol (this one is version {req.api_version})."
            )
        if req.generation_id != member.current.member_epoch:
            raise StaleMemberEpochError(
                f"The member epoch {req.generation_id} is stale; the current epoch is "
                f"{member.current.member_epoch}."
            )

    def validate_offset_fetch(self, group: ConsumerGroup, req: OffsetFetchRequest) -> None:
        """Kafka's `ConsumerGroup.validateOffsetFetch`: a null member id with epoch -1 (admin
        tools, librdkafka) may fetch; a member fetches in its current epoch."""
        if req.member_id is None and req.member_epoch < 0:
            return
        member = group.members.get(req.member_id or "")
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of the group.")
        if req.member_epoch != member.current.member_epoch:
            raise StaleMemberEpochError(
                f"The member epoch {req.member_epoch} is stale; the current epoch is "
                f"{member.current.member_epoch}."
            )

    def offset_delete_subscribed(self, group: ConsumerGroup, topics: Sequence[str]) -> set[str]:
        subscribed = self._subscribed_topics(group)
        return {topic for topic in topics if topic in subscribed}

    def offset_expiration_condition(
        self, group: ConsumerGroup
    ) -> tuple[int | None, frozenset[str]] | None:
        """Kafka's `ConsumerGroup.offsetExpirationCondition`: each offset expires after its own
        commit, unless the group subscribes to its topic."""
        return None, frozenset(self._subscribed_topics(group))

    def group_tombstones(self, group: ConsumerGroup) -> list[Record]:
        """Kafka's `ConsumerGroup.createGroupTombstoneRecords`, in its order."""
        group_id = group.group_id
        keys: list[Any] = []
        members = sorted(group.members)
        keys += [
            ConsumerGroupCurrentMemberAssignmentKey(group=group_id, member_id=m) for m in members
        ]
        keys += [
            ConsumerGroupTargetAssignmentMemberKey(group=group_id, member_id=m) for m in members
        ]
        keys.append(ConsumerGroupTargetAssignmentMetadataKey(group=group_id))
        keys += [ConsumerGroupMemberMetadataKey(group=group_id, member_id=m) for m in members]
        keys += [
            ConsumerGroupRegularExpressionKey(group=group_id, regular_expression=r)
            for r in sorted(group.regexes)
        ]
        keys.append(ConsumerGroupPartitionMetadataKey(group=group_id))
        keys.append(ConsumerGroupMetadataKey(group=group_id))
        return [encode_record(key, None) for key in keys]

    def remove_group(
        self, group: ConsumerGroup, now: int, reason: str, *, tombstoned: bool
    ) -> None:
        cause = check_transition(group.state, Dead)
        del self._groups[group.group_id]
        for member_id in group.members:
            self._timers.cancel(("consumer-session", group.group_id, member_id))
            self._cancel_rebalance_timer(group.group_id, member_id)
        self._ctx.emit_removal(
            group.group_id,
            now,
            from_state=group.state.value,
            to_state=Dead.value,
            cause=cause,
            reason=reason,
            generation_id=group.group_epoch,
            tombstoned=tombstoned,
        )
        group.state = Dead

    # ---------------------------------------------------------------- admin APIs

    @staticmethod
    def describe(group: ConsumerGroup) -> DescribedGroup:
        """DescribeGroups (the classic API) for a consumer group: Kafka describes it as Dead,
        with no members (a tool must use ConsumerGroupDescribe)."""
        return DescribedGroup(
            error_code=NONE,
            group_id=group.group_id,
            group_state=Dead.value,
            protocol_type="",
            protocol_data="",
        )

    def listed_groups(self, states: set[str]) -> list[ListedGroup]:
        """ListGroups' entries for consumer groups (`states` lower-cased; empty = all)."""
        return [
            ListedGroup(
                group_id=g.group_id,
                protocol_type=PROTOCOL_TYPE,
                group_state=g.state.value,
                group_type=PROTOCOL_TYPE,
            )
            for g in self.consumer_groups()
            if not states or g.state.value.lower() in states
        ]

    def _describe_consumer_groups(
        self, req: ConsumerGroupDescribeRequest, now: int
    ) -> Reply[ConsumerGroupDescribeResponse]:
        """Kafka's `consumerGroupDescribe`: GROUP_ID_NOT_FOUND for an unknown group or one of
        another kind."""
        out = []
        for group_id in req.group_ids:
            try:
                self._ctx.validate_group(group_id, allow_empty_id=True)
                group = self._groups.get(group_id)
                if group is None:
                    raise GroupIdNotFoundError(f"Group {group_id} not found.")
                if not isinstance(group, ConsumerGroup):
                    raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
            except CoordinatorError as exc:
                out.append(
                    ConsumerDescribedGroup(
                        error_code=error_code_of(exc),
                        error_message=str(exc) or None,
                        group_id=group_id,
                    )
                )
                continue
            out.append(self._described(group))
        return Reply.of(ConsumerGroupDescribeResponse(groups=tuple(out)))

    @staticmethod
    def _described(group: ConsumerGroup) -> ConsumerDescribedGroup:
        return ConsumerDescribedGroup(
            error_code=NONE,
            group_id=group.group_id,
            group_state=group.state.value,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=group.preferred_assignor() or DEFAULT_SERVER_ASSIGNOR,
            members=tuple(
                ConsumerDescribedMember(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.current.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    assignment=group.named(m.current.assigned),
                    target_assignment=group.named(group.target.get(m.member_id, frozenset())),
                )
                for _, m in sorted(group.members.items())
            ),
        )
