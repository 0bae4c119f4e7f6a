"""The ``roundrobin`` assignor: all partitions dealt to the members like cards.

Follows Kafka's ``org.apache.kafka.clients.consumer.RoundRobinAssignor``.

Theory of operation
===================

Every partition of every subscribed topic (with metadata) is laid out in one list, ordered by
topic name and then partition number. The members are laid out in Kafka's ``MemberInfo`` order:
static members first by ``group.instance.id``, then dynamic members by member id. The partitions
are then dealt one by one around the circle of members; a member not subscribed to the
partition's topic is skipped, and the deal goes on from the member after the one that took it.

When all members subscribe to the same topics, member partition counts differ by at most one.
When subscriptions differ, skipping can leave the assignment unbalanced (the ``sticky``
assignors exist for that case).

Worked example
==============

Members ``C0``, ``C1``, ``C2``; topics ``t0``, ``t1``, ``t2`` with 1, 2 and 3 partitions;
``C0`` subscribes to ``t0``, ``C1`` to ``t0, t1``, ``C2`` to ``t0, t1, t2``::

    t0p0 -> C0
    t1p0 -> C1
    t1p1 -> C2
    t2p0 -> C2            (the deal is back at C0: C0 and C1 skipped, not subscribed to t2)
    t2p1 -> C2            (C0, C1 skipped again)
    t2p2 -> C2

    C0: [t0p0]   C1: [t1p0]   C2: [t1p1, t2p0, t2p1, t2p2]

With identical subscriptions (``C0``, ``C1``; ``t0`` and ``t1`` with 3 partitions each) the deal
gives ``C0: [t0p0, t0p2, t1p1]`` and ``C1: [t0p1, t1p0, t1p2]``.
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


class RoundRobinAssignor:
    """Kafka's ``RoundRobinAssignor``: one circular deal over all sorted partitions."""

    name: ClassVar[str] = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        assignment: GroupAssignment = {member_id: [] for member_id in subscriptions}
        members = members_in_kafka_order(subscriptions)
        topic_sets = [frozenset(subscriptions[m].topics) for m in members]
        lists = [assignment[m] for m in members]
        n = len(members)
        position = 0
        for topic, count in subscribed_partition_counts(
            partitions_per_topic, subscriptions
        ).items():
            for partition in range(count):
                # Some member subscribes to the topic (it is in the subscribed counts), so the
                # skip loop ends within one turn of the circle.
                while topic not in topic_sets[position]:
                    position = (position + 1) % n
                lists[position].append((topic, partition))
                position = (position + 1) % n
        return assignment
