"""A consumer group's durable state (Kafka's `ConsumerGroup` and `ConsumerGroupMember`) and the
read-only views the façade hands out (`GroupCoordinator.group`).

The group changes only by applying its records (`ConsumerGroup.apply`), live after their
append and at replay alike, as Kafka's `GroupMetadataManager.replay` does for each record type.
Partitions are held by topic id, as in Kafka; names are the manager's business.

A partition's *owner* is the member that has it in its assigned partitions or in its partitions
pending revocation (Kafka's partition epochs, `ConsumerGroup.currentPartitionEpoch`): a partition
goes to a new member only when nobody owns it. Two owners at once is a bug (`apply` raises).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from uuid import UUID

from ..context import GroupSummary
from ..errors import IllegalStateTransition
from ..server_assignors import DEFAULT_SERVER_ASSIGNOR
from .records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
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
    TopicPartitions,
    topic_partitions,
)
from .state import ConsumerGroupState, MemberState

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "TP",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupView",
    "ConsumerMemberView",
    "CurrentAssignment",
    "ResolvedRegex",
    "SubscribedTopic",
    "by_topic",
    "from_topic_partitions",
]

#: A partition: (topic id, partition).
TP = tuple[UUID, int]
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


def from_topic_partitions(entries: Iterable[TopicPartitions]) -> frozenset[TP]:
    return frozenset((e.topic_id, p) for e in entries for p in e.partitions)


def by_topic(partitions: Iterable[TP]) -> dict[UUID, frozenset[int]]:
    out: dict[UUID, set[int]] = {}
    for topic_id, partition in partitions:
        out.setdefault(topic_id, set()).add(partition)
    return {t: frozenset(p) for t, p in out.items()}


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    """What record 8 holds: the member's epochs, its reconciliation state, what it is assigned
    and what it must revoke (Kafka's `ConsumerGroupMember` assignment fields)."""

    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TP] = frozenset()
    pending_revocation: frozenset[TP] = frozenset()

    def owned(self) -> frozenset[TP]:
        return self.assigned | self.pending_revocation

    def is_reconciled_to(self, epoch: int) -> bool:
        """Kafka's `isReconciledTo`: Stable at that epoch."""
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def value(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state.value,
            assigned_partitions=topic_partitions(by_topic(self.assigned)),
            partitions_pending_revocation=topic_partitions(by_topic(self.pending_revocation)),
        )


@dataclass(slots=True)
class ConsumerGroupMember:
    """One member: its subscription (record 5) and its current assignment (record 8)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    current: CurrentAssignment = field(default_factory=CurrentAssignment)

    def subscription_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
        )

    def regex(self) -> str | None:
        """The member's regular expression, if it has one ("" means none)."""
        return self.subscribed_topic_regex or None


@dataclass(frozen=True, slots=True)
class SubscribedTopic:
    """A subscribed topic as record 4 keeps it (Kafka's `TopicMetadata`)."""

    topic_id: UUID
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """What a regular expression resolved to (record 16)."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerMemberView:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Mapping[str, tuple[int, ...]]
    pending_revocation: Mapping[str, tuple[int, ...]]
    target: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupView:
    """A read-only snapshot of one consumer group (`GroupCoordinator.group`); partitions by
    topic name (a topic whose name the engine does not know by its id's text)."""

    group_id: str
    state: ConsumerGroupState
    group_epoch: int
    assignment_epoch: int
    protocol_type: str
    members: Mapping[str, ConsumerMemberView]


class ConsumerGroup:
    """A consumer group's durable state, changed only by `apply`."""

    __slots__ = (
        "_copied",
        "assignment_epoch",
        "group_epoch",
        "group_id",
        "image_names",
        "members",
        "owners",
        "regexes",
        "state",
        "static_members",
        "subscription_metadata",
        "target",
        "topic_names",
    )

    kind: ClassVar[str] = "consumer"

    def __init__(self, group_id: str, image_names: Mapping[UUID, str] | None = None) -> None:
        self.group_id = group_id
        #: The names of the topics the host reported (the coordinator's topic image).
        self.image_names: Mapping[UUID, str] = image_names if image_names is not None else {}
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        #: instance id → member id.
        self.static_members: dict[str, str] = {}
        #: member id → its target assignment (record 7).
        self.target: dict[str, frozenset[TP]] = {}
        #: topic name → id and partition count, as of the last epoch bump (record 4).
        self.subscription_metadata: dict[str, SubscribedTopic] = {}
        #: regular expression → what it resolved to (record 16).
        self.regexes: dict[str, ResolvedRegex] = {}
        #: partition → the member that owns it (derived from the members' assignments).
        self.owners: dict[TP, str] = {}
        #: topic id → name, from record 4 (ids of topics the host has not reported yet).
        self.topic_names: dict[UUID, str] = {}
        self.state = ConsumerGroupState.EMPTY
        #: In a draft (`copy`), the members already copied; None: every member is this
        #: group's own.
        self._copied: set[str] | None = None

    # ---------------------------------------------------------------- reading

    def copy(self) -> ConsumerGroup:
        """A draft, so that applying records to it leaves this group alone. Its members are
        shared until a record changes one (copy on write: a heartbeat changes one member,
        and copying a thousand for it was most of its cost)."""
        other = ConsumerGroup(self.group_id, self.image_names)
        other.group_epoch = self.group_epoch
        other.assignment_epoch = self.assignment_epoch
        other.members = dict(self.members)
        other._copied = set()
        other.static_members = dict(self.static_members)
        other.target = dict(self.target)
        other.subscription_metadata = dict(self.subscription_metadata)
        other.regexes = dict(self.regexes)
        other.owners = dict(self.owners)
        other.topic_names = dict(self.topic_names)
        other.state = self.state
        return other

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def owner(self, tp: TP) -> str | None:
        return self.owners.get(tp)

    def subscribed_regexes(self) -> set[str]:
        return {r for m in self.members.values() if (r := m.regex()) is not None}

    def derive_state(self) -> ConsumerGroupState:
        """Kafka's `maybeUpdateGroupState`."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        epoch = self.assignment_epoch
        if all(m.current.is_reconciled_to(epoch) for m in self.members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    def preferred_assignor(self) -> str | None:
        """Kafka's `computePreferredServerAssignor`: the assignor most members ask for (ties:
        the smallest name); None when nobody asks for one."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor is not None:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return None
        return min(counts, key=lambda name: (-counts[name], name))

    # ---------------------------------------------------------------- applying records

    def apply(self, key: Any, value: Any) -> None:
        """Apply one record of this group (a None value is a tombstone), as Kafka's replay."""
        match key:
            case ConsumerGroupMetadataKey():
                assert value is None or isinstance(value, ConsumerGroupMetadataValue)
                if value is not None:
                    self.group_epoch = value.epoch
            case ConsumerGroupPartitionMetadataKey():
                assert value is None or isinstance(value, ConsumerGroupPartitionMetadataValue)
                self.subscription_metadata = {}
                if value is not None:
                    for topic in value.topics:
                        self.subscription_metadata[topic.topic_name] = SubscribedTopic(
                            topic.topic_id, topic.num_partitions
                        )
                        self.topic_names[topic.topic_id] = topic.topic_name
            case ConsumerGroupMemberMetadataKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupMemberMetadataValue)
                if value is None:
                    self._remove_member(member_id)
                else:
                    self._update_subscription(member_id, value)
            case ConsumerGroupTargetAssignmentMetadataKey():
                assert value is None or isinstance(
                    value, ConsumerGroupTargetAssignmentMetadataValue
                )
                if value is not None:
                    self.assignment_epoch = value.assignment_epoch
            case ConsumerGroupTargetAssignmentMemberKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
                if value is None:
                    self.target.pop(member_id, None)
                else:
                    self.target[member_id] = from_topic_partitions(value.topic_partitions)
            case ConsumerGroupCurrentMemberAssignmentKey(member_id=member_id):
                assert value is None or isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
                if value is None:
                    if member_id in self.members:
                        self._set_current(
                            self._writable(member_id),
                            CurrentAssignment(
                                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            ),
                        )
                else:
                    member = self._writable(member_id)
                    self._set_current(
                        member,
                        CurrentAssignment(
                            member_epoch=value.member_epoch,
                            previous_member_epoch=value.previous_member_epoch,
                            state=MemberState.of(value.state),
                            assigned=from_topic_partitions(value.assigned_partitions),
                            pending_revocation=from_topic_partitions(
                                value.partitions_pending_revocation
                            ),
                        ),
                    )
            case ConsumerGroupRegularExpressionKey(regular_expression=regex):
                assert value is None or isinstance(value, ConsumerGroupRegularExpressionValue)
                if value is None:
                    self.regexes.pop(regex, None)
                else:
                    self.regexes[regex] = ResolvedRegex(
                        value.topics, value.version, value.timestamp
                    )
            case _:
                raise TypeError(f"not a consumer group record: {type(key).__name__}")

    def _writable(self, member_id: str) -> ConsumerGroupMember:
        """The member to change (created if new; in a draft, copied the first time)."""
        member = self.members.get(member_id)
        if member is None:
            member = self.members[member_id] = ConsumerGroupMember(member_id)
        elif self._copied is not None and member_id not in self._copied:
            member = self.members[member_id] = dataclasses.replace(member)
        if self._copied is not None:
            self._copied.add(member_id)
        return member

    def _update_subscription(self, member_id: str, value: ConsumerGroupMemberMetadataValue) -> None:
        member = self._writable(member_id)
        old_instance = member.instance_id
        if (
            old_instance is not None
            and old_instance != value.instance_id
            and self.static_members.get(old_instance) == member_id
        ):
            del self.static_members[old_instance]
        member.instance_id = value.instance_id
        member.rack_id = value.rack_id
        member.client_id = value.client_id
        member.client_host = value.client_host
        member.subscribed_topic_names = value.subscribed_topic_names
        member.subscribed_topic_regex = value.subscribed_topic_regex
        member.rebalance_timeout_ms = value.rebalance_timeout_ms
        member.server_assignor = value.server_assignor
        if value.instance_id is not None:
            self.static_members[value.instance_id] = member_id

    def _remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        for tp in member.current.owned():
            if self.owners.get(tp) == member_id:
                del self.owners[tp]
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]

    def _set_current(self, member: ConsumerGroupMember, current: CurrentAssignment) -> None:
        """Kafka's `updateMember` for the partition epochs: the member's old partitions are
        released, its new ones taken; taking one another member owns is a bug."""
        member_id = member.member_id
        for tp in member.current.owned():
            if self.owners.get(tp) == member_id:
                del self.owners[tp]
        for tp in current.owned():
            holder = self.owners.get(tp)
            if holder is not None and holder != member_id:
                raise IllegalStateTransition(
                    f"group {self.group_id}: partition {tp[0]}-{tp[1]} is given to "
                    f"{member_id} while {holder} still owns it"
                )
            self.owners[tp] = member_id
        member.current = current

    # ---------------------------------------------------------------- views

    def topic_name(self, topic_id: UUID) -> str | None:
        """A topic's name: as the host reported it, else as record 4 stored it."""
        return self.image_names.get(topic_id) or self.topic_names.get(topic_id)

    def named(self, partitions: Iterable[TP]) -> dict[str, tuple[int, ...]]:
        """Partitions by topic name (a topic whose name is unknown by its id's text)."""
        out: dict[str, list[int]] = {}
        for topic_id, partition in partitions:
            out.setdefault(self.topic_name(topic_id) or str(topic_id), []).append(partition)
        return {t: tuple(sorted(p)) for t, p in sorted(out.items())}

    def summary(self) -> GroupSummary:
        return GroupSummary(
            group_id=self.group_id,
            kind=self.kind,
            state=self.state.value,
            generation_id=self.group_epoch,
            protocol=self.preferred_assignor() or DEFAULT_SERVER_ASSIGNOR,
            member_count=len(self.members),
        )

    def view(self) -> ConsumerGroupView:
        named = self.named

        return ConsumerGroupView(
            group_id=self.group_id,
            state=self.state,
            group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch,
            protocol_type="consumer",
            members={
                m.member_id: ConsumerMemberView(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    server_assignor=m.server_assignor,
                    member_epoch=m.current.member_epoch,
                    previous_member_epoch=m.current.previous_member_epoch,
                    state=m.current.state,
                    assigned=named(m.current.assigned),
                    pending_revocation=named(m.current.pending_revocation),
                    target=named(self.target.get(m.member_id, frozenset())),
                )
                for m in self.members.values()
            },
        )
