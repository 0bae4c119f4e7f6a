"""What the server-side assignors share: the member's spec, the subscription type, and the checks.

Kafka hands its ``ConsumerGroupPartitionAssignor`` a ``GroupSpec`` (each member's
``MemberSubscriptionAndAssignmentImpl`` and the group's ``SubscriptionType``) and a
``SubscribedTopicDescriber`` (partition counts by topic id). Here the group is a mapping of
member id to :class:`MemberSpec` and the describer is a mapping of topic name to partition count;
topics are named, not numbered, because the engine keys its metadata by name.

Kafka breaks ties by member and topic order, and where it iterates a ``HashMap`` the order is
that of the hash. Here every order is a sort: member ids and topic names compared as Java's
``String.compareTo`` compares them (:func:`~coordinator_engine.assignors._common.java_string_key`,
shared with the client-side assignors), so an assignment depends on its inputs only, never on the
iteration order of a mapping or a set.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

#: One member's target assignment: topic name -> partitions (a topic without partitions is left
#: out).
MemberTargetAssignment = dict[str, frozenset[int]]

#: What an assignor returns: every member id of the group with its target assignment.
GroupTargetAssignment = dict[str, MemberTargetAssignment]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka's ``MemberSubscriptionAndAssignmentImpl``).

    Fields:
      topics: the topic names the member subscribes to; a regular expression is expanded by the
        caller. Any collection of names is accepted and kept as a ``frozenset``.
      assignment: the member's current target assignment, topic name -> partitions; what
        ``uniform`` keeps where it can. Partitions of topics that are gone or not subscribed any
        more, and partition numbers past a topic's count, are ignored.
      instance_id: the static member's ``group.instance.id``, ``None`` for a dynamic member
        (``range`` orders static members by it).
      rack_id: the member's rack; neither assignor reads it (see :mod:`..server_assignors`).
    """

    topics: frozenset[str]
    assignment: Mapping[str, frozenset[int]]
    instance_id: str | None = None
    rack_id: str | None = None

    def __post_init__(self) -> None:
        topics = self.topics
        if not isinstance(topics, frozenset):
            if isinstance(topics, str | bytes):
                raise TypeError(
                    f"MemberSpec.topics must be a collection of topic names, not {topics!r}"
                )
            object.__setattr__(self, "topics", frozenset(topics))
        if not isinstance(self.assignment, Mapping):
            raise TypeError(
                "MemberSpec.assignment must map topic names to partitions, "
                f"not {type(self.assignment).__name__}"
            )
        if any(not isinstance(p, frozenset) for p in self.assignment.values()):
            object.__setattr__(
                self, "assignment", {t: frozenset(p) for t, p in self.assignment.items()}
            )


class SubscriptionType(enum.Enum):
    """Kafka's ``SubscriptionType``: do all members subscribe to the same topics?"""

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"


class UnsupportedAssignorError(ValueError):
    """An assignor name the coordinator does not serve (the caller answers UNSUPPORTED_ASSIGNOR)."""


def assignable_topics(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> dict[str, int]:
    """The partition count of every topic some member subscribes to and that has partitions.

    A subscribed topic missing from ``partitions`` or with 0 partitions is not assigned (Kafka
    leaves a topic it cannot resolve out of the group's subscribed topics before the assignor
    runs). A count that is not an int >= 0 raises ``ValueError`` naming the topic.
    """
    subscribed: set[str] = set()
    for topics in {id(spec.topics): spec.topics for spec in members.values()}.values():
        subscribed.update(topics)
    counts: dict[str, int] = {}
    for topic in subscribed:
        count = partitions.get(topic)
        if count is None:
            continue
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(
                f"partition count of topic {topic!r} must be an int >= 0, got {count!r}"
            )
        if count > 0:
            counts[topic] = count
    return counts


def effective_subscriptions(
    members: Mapping[str, MemberSpec], counts: Mapping[str, int]
) -> dict[str, frozenset[str]]:
    """Each member's subscribed topics that can be assigned (those in ``counts``).

    Members with equal subscriptions share one frozenset, which makes the subscription type a
    count of distinct sets.
    """
    live = frozenset(counts)
    seen: dict[frozenset[str], frozenset[str]] = {}
    result: dict[str, frozenset[str]] = {}
    for member_id, spec in members.items():
        topics = spec.topics
        effective = seen.get(topics)
        if effective is None:
            effective = topics if topics <= live else topics & live
            effective = seen.setdefault(effective, effective)
            seen[topics] = effective
        result[member_id] = effective
    return result


def subscription_type(subscriptions: Mapping[str, frozenset[str]]) -> SubscriptionType:
    """HOMOGENEOUS when every member subscribes to the same assignable topics (Kafka's
    ``ModernGroup.subscriptionType``, which counts subscribers per topic name)."""
    distinct = {id(topics): topics for topics in subscriptions.values()}
    if len(set(distinct.values())) <= 1:
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def subscribers_by_topic(subscriptions: list[frozenset[str]]) -> dict[str, list[int]]:
    """Each subscribed topic's subscribers, as ascending positions in ``subscriptions``.

    Topics subscribed by the same members share one list, built once: a group where every
    member subscribes to every topic costs one pass over its members, not one per topic. The
    lists are shared, so callers must not change them.
    """
    distinct: dict[frozenset[str], int] = {}
    kinds = [distinct.setdefault(topics, len(distinct)) for topics in subscriptions]
    holders: dict[str, list[int]] = {}  # topic -> the distinct subscriptions that hold it
    for topics, kind in distinct.items():
        for topic in topics:
            holders.setdefault(topic, []).append(kind)
    shared: dict[tuple[int, ...], list[int]] = {}
    result: dict[str, list[int]] = {}
    for topic, kinds_holding in holders.items():
        key = tuple(kinds_holding)
        positions = shared.get(key)
        if positions is None:
            wanted = set(key)
            positions = [i for i, kind in enumerate(kinds) if kind in wanted]
            shared[key] = positions
        result[topic] = positions
    return result


def frozen(assignment: Mapping[str, set[int] | frozenset[int]]) -> MemberTargetAssignment:
    """A member's target assignment as returned: frozensets, topics without partitions left out."""
    return {
        topic: parts if isinstance(parts, frozenset) else frozenset(parts)
        for topic, parts in assignment.items()
        if parts
    }
