"""The ``range`` assignor: contiguous ranges of each topic's partitions, topic by topic.

Follows Kafka's ``org.apache.kafka.clients.consumer.RangeAssignor`` (without its rack-aware
pass, which needs replica placement this engine does not have).

Theory of operation
===================

Each topic is assigned on its own. Its partitions are laid out in numeric order and the members
subscribed to it in Kafka's ``MemberInfo`` order: static members first, ordered by
``group.instance.id``, then dynamic members ordered by member id. With ``n`` partitions and ``c``
members, every member gets ``n // c`` consecutive partitions and the first ``n % c`` members one
more. Members not subscribed to the topic get nothing from it; a subscribed topic absent from
the metadata is skipped.

Because the split restarts for every topic, the first members collect the extra partition of
every topic that does not divide evenly: with many such topics ``range`` is unbalanced, and in
exchange partition ``i`` of co-partitioned topics lands on the same member (what joins need).

Worked example
==============

Members ``C0`` and ``C1``, topics ``t0`` and ``t1`` with 3 partitions each::

    t0: [t0p0, t0p1 | t0p2]      t1: [t1p0, t1p1 | t1p2]
          C0          C1               C0          C1

    C0: [t0p0, t0p1, t1p0, t1p1]
    C1: [t0p2, t1p2]

Static membership keeps this stable across restarts: when ``C0`` and ``C1`` come back with new
member ids but the same instance ids ``I0`` and ``I1``, the order is taken from ``I0 < I1``, so
``I0`` still gets ``[t0p0, t0p1, t1p0, t1p1]``; with dynamic members the new member ids alone
decide, and the two assignments may swap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from coordinator_engine.assignors._common import (
    GroupAssignment,
    Subscription,
    members_in_kafka_order,
    subscribed_partition_counts,
)


class RangeAssignor:
    """Kafka's ``RangeAssignor``: per topic, contiguous ranges in ``MemberInfo`` order."""

    name: ClassVar[str] = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        assignment: GroupAssignment = {member_id: [] for member_id in subscriptions}
        members = members_in_kafka_order(subscriptions)
        topic_sets = {m: frozenset(subscriptions[m].topics) for m in members}
        for topic, count in subscribed_partition_counts(
            partitions_per_topic, subscriptions
        ).items():
            consumers = [m for m in members if topic in topic_sets[m]]
            per_member, extra = divmod(count, len(consumers))
            start = 0
            for index, member_id in enumerate(consumers):
                length = per_member + (1 if index < extra else 0)
                assignment[member_id].extend((topic, p) for p in range(start, start + length))
                start += length
        return assignment
