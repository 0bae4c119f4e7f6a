"""A consumer group's states (KIP-848): the one place that says which transitions exist.

Kafka's `ConsumerGroup.maybeUpdateGroupState` derives the state from the group: Empty without
members; Assigning while the group epoch is ahead of the target assignment's epoch; Reconciling
while a member is not yet Stable at the target epoch; Stable otherwise. Here the state is
derived the same way after each change (`ConsumerGroup.derive_state`), and every move it makes
must be in `TRANSITIONS`, which maps each allowed (from, to) pair to what causes it; the table
is checked against docs/engine.md, "Consumer groups". A move the table does not hold is a bug:
`check_transition` raises `IllegalStateTransition`. Dead is only the moment of deletion.

`MemberState` is Kafka's `MemberState`, with its byte values (record 8 stores them).
"""

from __future__ import annotations

import enum

from ..errors import IllegalStateTransition

__all__ = ["TRANSITIONS", "ConsumerGroupState", "MemberState", "check_transition"]


class ConsumerGroupState(enum.Enum):
    """A consumer group's state; the values are Kafka's `ConsumerGroupState` names."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class MemberState(enum.Enum):
    """Where a member is in its reconciliation (Kafka's `MemberState`, its byte values).

    STABLE: it holds its target assignment at the target epoch (or waits for a new target).
    UNREVOKED_PARTITIONS: it must revoke partitions first; it stays at its old epoch.
    UNRELEASED_PARTITIONS: at the target epoch, it waits for partitions others still hold.
    UNKNOWN: a state this engine does not know (read from a newer writer): fenced.
    """

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


Empty = ConsumerGroupState.EMPTY
Assigning = ConsumerGroupState.ASSIGNING
Reconciling = ConsumerGroupState.RECONCILING
Stable = ConsumerGroupState.STABLE
Dead = ConsumerGroupState.DEAD

#: Every legal transition and what causes it (docs/engine.md, "Consumer groups", checked there).
TRANSITIONS: dict[tuple[ConsumerGroupState, ConsumerGroupState], str] = {
    (Empty, Stable): "a member joined and got its whole target assignment at once",
    (Stable, Assigning): "a member joined, left or changed its subscription, or a topic changed",
    (Stable, Reconciling): "a new target moves partitions, or a static member is away (epoch -2)",
    (Assigning, Reconciling): "the target assignment was computed and members must reconcile",
    (Assigning, Stable): "the target assignment was computed and every member holds it",
    (Reconciling, Assigning): "the group epoch went up again before the members reconciled",
    (Reconciling, Stable): "every member reached the target assignment",
    (Assigning, Empty): "the last member left",
    (Reconciling, Empty): "the last member left",
    (Stable, Empty): "the last member left",
    (Empty, Dead): "the group was deleted, or expired with no offsets left",
}


def check_transition(current: ConsumerGroupState, target: ConsumerGroupState) -> str:
    """The cause of a legal move; raises `IllegalStateTransition` for any other."""
    try:
        return TRANSITIONS[current, target]
    except KeyError:
        raise IllegalStateTransition(
            f"consumer group state cannot move from {current.value} to {target.value}"
        ) from None
