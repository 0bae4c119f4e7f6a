"""The target assignment: Kafka's `TargetAssignmentBuilder` (org.apache.kafka.coordinator.group
.modern).

When the group epoch is ahead of the target assignment's epoch, the server-side assignor
(`coordinator_engine.server_assignors`) is run over every member (static members that left for a
while included: they keep their partitions), each with the topics it subscribes to (names and
what its regular expression resolved to) that exist, its rack and instance id, and its current
target (for stickiness). The result is compared member by member with the current target: a
ConsumerGroupTargetAssignmentMember record is written for each member whose target changed (and
for each member that had none), then one ConsumerGroupTargetAssignmentMetadata record with the
new epoch. Members are visited in member-id order, so the records are deterministic.

Partitions are (topic id, partition) here and topic names for the assignor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from ..server_assignors import MemberSpec, assign
from .group import TP, ConsumerGroup, SubscribedTopic

__all__ = ["TargetAssignment", "compute_target_assignment", "member_topics"]


@dataclass(frozen=True, slots=True)
class TargetAssignment:
    """A computed target: every member's partitions, and the members whose target changed."""

    assignor: str
    targets: dict[str, frozenset[TP]]
    changed: tuple[str, ...]


def member_topics(group: ConsumerGroup, member_id: str) -> frozenset[str]:
    """The topic names a member subscribes to: its names, and what its regex resolved to."""
    member = group.members[member_id]
    topics = set(member.subscribed_topic_names)
    regex = member.regex()
    if regex is not None and regex in group.regexes:
        topics.update(group.regexes[regex].topics)
    return frozenset(topics)


def compute_target_assignment(
    group: ConsumerGroup, assignor: str, metadata: Mapping[str, SubscribedTopic]
) -> TargetAssignment:
    """The new target of every member of `group` (its members as they are now) over the
    subscribed topics in `metadata` (name → id and partition count). Raises the assignors'
    `UnsupportedAssignorError` for an unknown assignor name."""
    names: dict[UUID, str] = {topic.topic_id: name for name, topic in metadata.items()}
    specs: dict[str, MemberSpec] = {}
    for member_id in sorted(group.members):
        member = group.members[member_id]
        current: dict[str, set[int]] = {}
        for topic_id, partition in group.target.get(member_id, frozenset()):
            name = names.get(topic_id)
            if name is not None:
                current.setdefault(name, set()).add(partition)
        specs[member_id] = MemberSpec(
            topics=frozenset(t for t in member_topics(group, member_id) if t in metadata),
            assignment={t: frozenset(p) for t, p in current.items()},
            instance_id=member.instance_id,
            rack_id=member.rack_id,
        )
    result = assign(assignor, specs, {name: t.num_partitions for name, t in metadata.items()})
    targets: dict[str, frozenset[TP]] = {}
    changed: list[str] = []
    for member_id in specs:
        assigned = result.get(member_id, {})
        target = frozenset(
            (metadata[topic].topic_id, partition)
            for topic, partitions in assigned.items()
            for partition in partitions
        )
        targets[member_id] = target
        if group.target.get(member_id) != target:
            changed.append(member_id)
    return TargetAssignment(assignor=assignor, targets=targets, changed=tuple(changed))
