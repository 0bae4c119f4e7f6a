"""Client-side partition assignors, as the group leader runs them: Kafka's rules, deterministic.

Every assignor has a ``name`` (the protocol name members advertise in JoinGroup) and
``assign(partitions_per_topic, subscriptions) -> {member_id: [(topic, partition), ...]}``, a
pure function of its inputs: every member id of ``subscriptions`` is in the result (possibly with
an empty list), ties are broken by documented orders (member ids and topic names compared as
Java compares strings), never by dict or set iteration.

=====================  ==============================================  =========================
name                   Kafka class                                     module
=====================  ==============================================  =========================
``range``              ``RangeAssignor``                               :mod:`.range`
``roundrobin``         ``RoundRobinAssignor``                          :mod:`.roundrobin`
``sticky``             ``StickyAssignor`` (``AbstractStickyAssignor``)   :mod:`.sticky`
``cooperative-sticky`` ``CooperativeStickyAssignor``                   :mod:`.cooperative_sticky`
=====================  ==============================================  =========================
"""

from __future__ import annotations

from coordinator_engine.assignors._common import (
    GroupAssignment,
    PartitionAssignor,
    Subscription,
    TopicPartitionPair,
)
from coordinator_engine.assignors.cooperative_sticky import CooperativeStickyAssignor
from coordinator_engine.assignors.range import RangeAssignor
from coordinator_engine.assignors.roundrobin import RoundRobinAssignor
from coordinator_engine.assignors.sticky import StickyAssignor

_ASSIGNORS: dict[str, PartitionAssignor] = {
    assignor.name: assignor
    for assignor in (
        RangeAssignor(),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
    )
}

#: The protocol names :func:`get_assignor` knows, in a fixed order.
ASSIGNOR_NAMES: tuple[str, ...] = tuple(_ASSIGNORS)


def get_assignor(name: str) -> PartitionAssignor:
    """The assignor for a protocol name; ``ValueError`` naming it for an unknown one."""
    try:
        return _ASSIGNORS[name]
    except (KeyError, TypeError):
        known = ", ".join(repr(n) for n in ASSIGNOR_NAMES)
        raise ValueError(f"unknown partition assignor {name!r}; known assignors: {known}") from None


__all__ = [
    "ASSIGNOR_NAMES",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "PartitionAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartitionPair",
    "get_assignor",
]
