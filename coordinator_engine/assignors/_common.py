"""What every assignor shares: the member's subscription, the assignor protocol, and Kafka's orders.

Kafka compares names with ``String.compareTo``, which orders UTF-16 code units; Python orders
code points. The two agree except when a name mixes characters above U+FFFF with characters in
U+E000..U+FFFF, so every sort here goes through :func:`java_string_key` and agrees with a Java
leader on any input.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Protocol

#: A partition of a topic: ``(topic, partition)``.
TopicPartitionPair = tuple[str, int]

#: What an assignor returns: every member id of the group, each with its partitions.
GroupAssignment = dict[str, list[TopicPartitionPair]]


@dataclass(frozen=True, slots=True)
class Subscription:
    """One member's view of the group, as the group leader sees it in JoinGroup metadata.

    Fields:
      topics: the topics the member subscribes to (any collection of topic names; kept as a
        tuple); the one positional field, as in Kafka's ``new Subscription(topics)``.
      owned_partitions: the ``(topic, partition)`` pairs the member owned after the previous
        rebalance (ConsumerProtocolSubscription v1+; for the eager ``sticky`` assignor, what its
        user data carried).
      generation_id: the generation those partitions were owned in, ``-1`` when unknown.
      group_instance_id: the static member's ``group.instance.id``, ``None`` for a dynamic member.
    """

    topics: Collection[str]
    _: KW_ONLY
    owned_partitions: Collection[TopicPartitionPair] = ()
    generation_id: int = -1
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError(
                f"topics must be a collection of topic names, not the string {self.topics!r}"
            )
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(self.owned_partitions))


class PartitionAssignor(Protocol):
    """A client-side partition assignor (Kafka's ``ConsumerPartitionAssignor``)."""

    @property
    def name(self) -> str:
        """The protocol name members advertise in JoinGroup (``"range"``, ``"sticky"``, ...)."""
        ...

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        """Assign the partitions of the subscribed topics to the members of ``subscriptions``."""
        ...


def java_string_key(s: str) -> bytes:
    """Sort key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit)."""
    return s.encode("utf-16-be", "surrogatepass")


def member_info_key(member_id: str, group_instance_id: str | None) -> tuple[int, bytes, bytes]:
    """Kafka's ``MemberInfo`` order: static members first by instance id, then dynamic by member id.

    Two static members never share an instance id in a real group; if they do, the member id
    breaks the tie so the order stays total.
    """
    if group_instance_id is not None:
        return (0, java_string_key(group_instance_id), java_string_key(member_id))
    return (1, b"", java_string_key(member_id))


def members_in_kafka_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Member ids sorted in Kafka's ``MemberInfo`` order (see :func:`member_info_key`)."""
    return sorted(
        subscriptions, key=lambda m: member_info_key(m, subscriptions[m].group_instance_id)
    )


def subscribed_partition_counts(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> dict[str, int]:
    """The partition count of every topic some member subscribes to and that has metadata.

    Like Kafka's ``AbstractPartitionAssignor.assign``, a subscribed topic without metadata is
    skipped ("no metadata is available") and a topic nobody subscribes to is not assigned. The
    result is in Java name order.
    """
    subscribed: set[str] = set()
    for subscription in subscriptions.values():
        subscribed.update(subscription.topics)
    counts: dict[str, int] = {}
    for topic in sorted(subscribed & partitions_per_topic.keys(), key=java_string_key):
        count = partitions_per_topic[topic]
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(
                f"partition count of topic {topic!r} must be an int >= 0, got {count!r}"
            )
        counts[topic] = count
    return counts
