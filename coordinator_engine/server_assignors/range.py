"""The ``range`` server-side assignor: contiguous ranges per topic, co-partitioned.

Follows Kafka's ``org.apache.kafka.coordinator.group.assignor.RangeAssignor`` as Kafka 4 has it
(rewritten by KAFKA-16944). Racks are not read (KAFKA-16694 took them out of the server-side
assignors).

Theory of operation
===================

Each topic is assigned on its own, from scratch at every run. The members subscribed to it are
ordered static members first, by ``group.instance.id``, then dynamic members by member id (Java's
string order; a member id breaks a tie between equal instance ids). With ``n`` partitions and
``c`` subscribers, the subscribers in that order take consecutive ranges of ``n // c``
partitions, and the first ``n % c`` of them one more. A subscribed topic without partitions, or
unknown, is skipped.

**Co-partitioning.** When members subscribe to the same topics and those topics have the same
partition count, every topic is split at the same points, so partition ``i`` of each topic goes to
the same member: what a join of co-partitioned streams needs. (Kafka's homogeneous and
heterogeneous paths both reduce to this per-topic rule; one loop serves both here.)

**Stickiness.** Kafka's server-side range assignor keeps nothing of the previous assignment: its
earlier, sticky version (Kafka 3.5 to 3.8) could not keep partitions and stay co-partitioned, and
KAFKA-16944 replaced it with this recomputation. What stays put is what the order keeps put: a
static member that comes back under a new member id with its instance id takes its old place in
the order, so with the same members, topics and partition counts it gets the same ranges.
``MemberSpec.assignment`` is not read.

Worked example
==============

Members ``M0`` and ``M1``, topics ``t1`` and ``t2`` with 3 partitions each::

    t1: [0, 1 | 2]      t2: [0, 1 | 2]
         M0    M1            M0    M1

    M0: {t1: {0, 1}, t2: {0, 1}}
    M1: {t1: {2},    t2: {2}}

If they restart as ``M3`` and ``M2`` (dynamic members), ``M2`` now sorts first and the two swap
everything; with instance ids ``I0 < I1`` the assignment follows the instance ids and does not
change.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator_engine.assignors._common import member_info_key
from coordinator_engine.server_assignors._common import (
    GroupTargetAssignment,
    MemberSpec,
    assignable_topics,
    effective_subscriptions,
    subscribers_by_topic,
)

#: The assignor's name, as members send it in ConsumerGroupHeartbeat's ServerAssignor.
NAME = "range"


def assign_range(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> GroupTargetAssignment:
    """The ``range`` target assignment of ``members`` over the topics of ``partitions``."""
    counts = assignable_topics(members, partitions)
    subscriptions = effective_subscriptions(members, counts)
    ordered = sorted(members, key=lambda m: member_info_key(m, members[m].instance_id))
    targets: list[dict[str, frozenset[int]]] = [{} for _ in ordered]
    by_topic = subscribers_by_topic([subscriptions[m] for m in ordered])
    for topic, positions in by_topic.items():
        per_member, extra = divmod(counts[topic], len(positions))
        if per_member == 0:
            positions = positions[:extra]  # the others get nothing of this topic
        start = 0
        for index, position in enumerate(positions):
            end = start + per_member + (1 if index < extra else 0)
            targets[position][topic] = frozenset(range(start, end))
            start = end
    return dict(zip(ordered, targets, strict=True))
