"""The consumer protocol as a member speaks it: JoinGroup metadata out, the leader's assignment.

Follows Kafka's ``ConsumerCoordinator.metadata()`` (one JoinGroup protocol per configured
assignor, each carrying a ConsumerProtocolSubscription v3 with the member's topics, owned
partitions and generation, plus the assignor's own user data) and
``ConsumerCoordinator.onLeaderElected()`` (decode every member's subscription, run the selected
assignor over them and the topic metadata, encode one ConsumerProtocolAssignment per member).

Assignor user data, as Kafka's assignors write it:

* ``sticky`` (``StickyAssignor.subscriptionUserData``): the member's previous assignment and its
  generation (StickyAssignorUserData v1). The eager protocol revokes everything before
  rejoining, so the subscription's ``owned_partitions`` is empty and the leader reads the
  previous owners from this user data only (``StickyAssignor.memberData``).
* ``cooperative-sticky`` (``CooperativeStickyAssignor.subscriptionUserData``): the generation of
  the last assignment, for leaders that read subscriptions older than v2; the owned partitions
  travel in the subscription itself.
* ``range``, ``roundrobin``: none.

A member whose subscription cannot be decoded counts as subscribing to nothing (Kafka's leader
would fail the rebalance with an exception instead).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from coordinator_engine.assignors import Subscription, TopicPartitionPair, get_assignor
from coordinator_engine.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolError,
    ConsumerProtocolSubscription,
    StickyAssignorUserData,
    decode_assignment,
    decode_cooperative_sticky_assignor_user_data,
    decode_sticky_assignor_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_sticky_assignor_user_data,
    encode_sticky_assignor_user_data,
    encode_subscription,
)
from coordinator_engine.requests import Assignment, Protocol
from coordinator_engine.responses import JoinGroupMember


@dataclass(frozen=True, kw_only=True, slots=True)
class AssignorState:
    """What the assignors remember between rebalances (Kafka: their ``onAssignment`` state).

    previous_assignment: the partitions of the last assignment, None before the first one.
    generation: the generation of that assignment, −1 before the first one.
    """

    previous_assignment: tuple[TopicPartitionPair, ...] | None = None
    generation: int = -1


def join_protocols(
    assignors: Sequence[str],
    topics: Sequence[str],
    owned_partitions: Iterable[TopicPartitionPair],
    generation_id: int,
    state: AssignorState,
) -> tuple[Protocol, ...]:
    """The JoinGroup protocols: one per assignor, in preference order (``metadata()``).

    The members of a group mostly join with the same inputs (the same topics and generation,
    nothing owned under EAGER, a member rejoining with the id it was given): the encodings of
    the latest few thousand inputs are kept (the protocols are immutable)."""
    assignors = tuple(assignors)
    # The assignor state counts only for the assignors whose user data carries it.
    sticky = state if "sticky" in assignors else None
    cooperative = state.generation if "cooperative-sticky" in assignors else None
    return _join_protocols(
        assignors,
        tuple(topics),
        tuple(sorted(owned_partitions)),
        generation_id,
        sticky,
        cooperative,
    )


@functools.lru_cache(maxsize=4096)
def _join_protocols(
    assignors: tuple[str, ...],
    topics: tuple[str, ...],
    owned: tuple[TopicPartitionPair, ...],
    generation_id: int,
    sticky: AssignorState | None,
    cooperative_generation: int | None,
) -> tuple[Protocol, ...]:
    protocols = []
    for name in assignors:
        user_data: bytes | None = None
        if name == "sticky" and sticky is not None and sticky.previous_assignment is not None:
            user_data = encode_sticky_assignor_user_data(
                StickyAssignorUserData(
                    previous_assignment=sticky.previous_assignment, generation=sticky.generation
                )
            )
        elif name == "cooperative-sticky" and cooperative_generation is not None:
            user_data = encode_cooperative_sticky_assignor_user_data(cooperative_generation)
        subscription = ConsumerProtocolSubscription(
            topics=topics,
            user_data=user_data,
            owned_partitions=owned,
            generation_id=generation_id,
        )
        protocols.append(Protocol(name=name, metadata=encode_subscription(subscription)))
    return tuple(protocols)


def member_subscription(protocol_name: str, member: JoinGroupMember) -> Subscription:
    """One member's subscription as the selected assignor reads it (``memberData``)."""
    try:
        decoded = decode_subscription(member.metadata)
    except ConsumerProtocolError:
        return Subscription(topics=(), group_instance_id=member.group_instance_id)
    owned = decoded.owned_partitions
    generation = decoded.generation_id
    if protocol_name == "sticky":
        owned, generation = (), -1
        if decoded.user_data:
            try:
                user_data = decode_sticky_assignor_user_data(decoded.user_data)
            except ConsumerProtocolError:
                pass
            else:
                owned = user_data.previous_assignment
                generation = -1 if user_data.generation is None else user_data.generation
    elif protocol_name == "cooperative-sticky" and generation == -1 and decoded.user_data:
        try:
            generation = decode_cooperative_sticky_assignor_user_data(decoded.user_data)
        except ConsumerProtocolError:
            generation = -1
    return Subscription(
        topics=decoded.topics,
        owned_partitions=owned,
        generation_id=generation,
        group_instance_id=member.group_instance_id,
    )


def group_subscriptions(
    protocol_name: str, members: Sequence[JoinGroupMember]
) -> dict[str, Subscription]:
    """Every member's subscription, keyed by member id, in the JoinGroup response's order."""
    return {m.member_id: member_subscription(protocol_name, m) for m in members}


def assign(
    protocol_name: str,
    subscriptions: Mapping[str, Subscription],
    partitions_per_topic: Mapping[str, int],
) -> tuple[dict[str, list[TopicPartitionPair]], tuple[Assignment, ...]]:
    """Run the selected assignor; its result and the SyncGroup assignments it encodes to."""
    result = get_assignor(protocol_name).assign(partitions_per_topic, subscriptions)
    encoded = tuple(
        Assignment(
            member_id=member_id,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=tuple(result.get(member_id, ())))
            ),
        )
        for member_id in subscriptions
    )
    return result, encoded


def assigned_partitions(assignment: bytes) -> tuple[TopicPartitionPair, ...] | None:
    """The partitions of a SyncGroup assignment; () for empty bytes (a member the leader left
    out), None when the bytes are not a ConsumerProtocolAssignment."""
    if not assignment:
        return ()
    try:
        return decode_assignment(assignment).assigned_partitions
    except ConsumerProtocolError:
        return None
