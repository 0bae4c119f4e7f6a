"""The ``cooperative-sticky`` assignor: the sticky algorithm for the cooperative protocol (KIP-429).

Follows Kafka's ``org.apache.kafka.clients.consumer.CooperativeStickyAssignor`` (without the
rack-aware passes).

Theory of operation
===================

With the cooperative protocol members keep their partitions while they rejoin, so a partition
must never be owned by two members at once. The assignment is computed exactly as ``sticky``
computes it (see :mod:`coordinator_engine.assignors.sticky`); then every partition that changes
owner in this round is **left out** of its new owner's list. Its old owner sees it missing from
its own list and revokes it; the revocation triggers a follow-up rebalance, in which nobody
reports owning the partition any more and it goes to its new owner.

Which partitions change owner:

* all subscriptions equal (the constrained path): a partition that a member owned but had to
  give back to meet the quotas, now dealt to another member; and a partition claimed by two
  members in the same generation (both may still hold it), whoever it is dealt to;
* subscriptions differ (the general path): a partition that some member reported owning and is
  not assigned to it, now assigned to a member that did not report owning it.

A partition whose previous owner left the group moves at once: nobody holds it.

The previous owners come from the ConsumerProtocolSubscription fields (``owned_partitions``
from v1, ``generation_id`` from v2). A v1 client carries its generation in its user data
(``CooperativeStickyAssignor`` user data: one int32), which the caller decodes into
``generation_id``.

Worked example
==============

``C1`` owns ``t0p0, t0p1, t0p2`` of topic ``t0`` (3 partitions) and ``C2`` joins. The sticky
assignment is ``C1: [t0p0, t0p1]``, ``C2: [t0p2]``; ``t0p2`` changes owner, so the cooperative
round assigns::

    C1: [t0p0, t0p1]     (C1 revokes t0p2 and rejoins)
    C2: []

and the follow-up round, where ``C1`` owns ``t0p0, t0p1`` and nobody owns ``t0p2``::

    C1: [t0p0, t0p1]
    C2: [t0p2]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from coordinator_engine.assignors._common import GroupAssignment, Subscription
from coordinator_engine.assignors.sticky import sticky_assign


class CooperativeStickyAssignor:
    """Kafka's ``CooperativeStickyAssignor``: sticky, never moving a partition in one round."""

    name: ClassVar[str] = "cooperative-sticky"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        return sticky_assign(partitions_per_topic, subscriptions, cooperative=True)
