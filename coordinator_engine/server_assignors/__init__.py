"""KIP-848's server-side assignors: the coordinator computes each member's target assignment.

In the consumer protocol (KIP-848) the group coordinator, not a group leader, assigns the
partitions: when the group epoch moves past the target assignment epoch it runs the group's
assignor over every member's subscription and current target assignment, and reconciles each
member towards its new target. Members name the assignor in ConsumerGroupHeartbeat's
``ServerAssignor``; an unknown name is answered UNSUPPORTED_ASSIGNOR. This package is shared by
the group kinds that assign on the server, as Kafka's
``org.apache.kafka.coordinator.group.assignor`` is.

=============  ===============================================================  ================
name           Kafka class                                                      module
=============  ===============================================================  ================
``uniform``    ``UniformAssignor`` (``UniformHomogeneousAssignmentBuilder``,     :mod:`.uniform`
               ``UniformHeterogeneousAssignmentBuilder``)
``range``      ``RangeAssignor`` (Kafka 4, after KAFKA-16944)                   :mod:`.range`
=============  ===============================================================  ================

Usage::

    target = assign("uniform", {"m1": MemberSpec(frozenset({"orders"}), {})}, {"orders": 3})
    # {"m1": {"orders": frozenset({0, 1, 2})}}

Every assignor is a pure function of its inputs: the same members and partition counts give the
same target assignment whatever order the mappings iterate in (ties are broken by sorted member
ids and topic names, compared as Java compares strings). Racks (``MemberSpec.rack_id``) are not
read, as in Kafka 4 (KAFKA-16694 removed rack awareness from the server-side assignors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from coordinator_engine.server_assignors._common import (
    GroupTargetAssignment,
    MemberSpec,
    MemberTargetAssignment,
    SubscriptionType,
    UnsupportedAssignorError,
    assignable_topics,
    effective_subscriptions,
    subscription_type,
)
from coordinator_engine.server_assignors.range import assign_range
from coordinator_engine.server_assignors.uniform import assign_uniform

ServerAssignor = Callable[[Mapping[str, MemberSpec], Mapping[str, int]], GroupTargetAssignment]

_ASSIGNORS: dict[str, ServerAssignor] = {"uniform": assign_uniform, "range": assign_range}

#: The assignor names the coordinator serves (Kafka's default ``group.consumer.assignors``).
SERVER_ASSIGNORS: tuple[str, ...] = ("uniform", "range")

#: The assignor of a group whose members name none (Kafka: the first of the configured ones).
DEFAULT_SERVER_ASSIGNOR = "uniform"


def assign(
    assignor: str, members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> dict[str, dict[str, frozenset[int]]]:
    """Every member id in ``members`` maps to its new target assignment (topic -> partitions,
    topics with no partition for it omitted). ``partitions`` is topic name -> partition count;
    a subscribed topic missing from it or with 0 partitions is not assigned. Deterministic:
    the same inputs give the same output whatever the mapping's iteration order.

    Raises :class:`UnsupportedAssignorError` for a name not in :data:`SERVER_ASSIGNORS`, and
    ``ValueError`` naming the topic for a partition count that is not an int >= 0.
    """
    try:
        run = _ASSIGNORS[assignor]
    except (KeyError, TypeError):
        known = ", ".join(repr(name) for name in SERVER_ASSIGNORS)
        raise UnsupportedAssignorError(
            f"unsupported server-side assignor {assignor!r}; this coordinator serves {known}"
        ) from None
    return run(members, partitions)


def group_subscription_type(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> SubscriptionType:
    """HOMOGENEOUS when every member subscribes to the same assignable topics: which of
    ``uniform``'s builders runs (Kafka's ``ModernGroup.subscriptionType``)."""
    return subscription_type(
        effective_subscriptions(members, assignable_topics(members, partitions))
    )


__all__ = [
    "DEFAULT_SERVER_ASSIGNOR",
    "SERVER_ASSIGNORS",
    "GroupTargetAssignment",
    "MemberSpec",
    "MemberTargetAssignment",
    "ServerAssignor",
    "SubscriptionType",
    "UnsupportedAssignorError",
    "assign",
    "assign_range",
    "assign_uniform",
    "group_subscription_type",
]
