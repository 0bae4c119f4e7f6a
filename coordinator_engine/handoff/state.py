"""The handoff group state machine: the one place that says which transitions exist.

A handoff group walks Initial → Starting → Stable → Closing (→ Starting → Stable): the
coordinator plans, an owner closes a moved partition, and only then does its new owner start it.
The state follows from the members' partition sets (`HandoffGroupManager._settle`); the table
maps each allowed (from, to) pair to what causes it and is checked against docs/engine.md,
"Handoff groups". A move the table does not hold is a bug: `check_transition` raises
`IllegalStateTransition`.
"""

from __future__ import annotations

import enum

from ..errors import IllegalStateTransition

__all__ = ["TRANSITIONS", "HandoffState", "check_transition"]


class HandoffState(enum.Enum):
    """A handoff group's state (docs/engine.md, "The four states"); Dead only at deletion."""

    INITIAL = "Initial"
    STARTING = "Starting"
    STABLE = "Stable"
    CLOSING = "Closing"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


Initial = HandoffState.INITIAL
Starting = HandoffState.STARTING
Stable = HandoffState.STABLE
Closing = HandoffState.CLOSING
Dead = HandoffState.DEAD

#: Every legal transition and what causes it (docs/engine.md, "Handoff groups", checked there).
TRANSITIONS: dict[tuple[HandoffState, HandoffState], str] = {
    (Initial, Starting): "the first plan gave members partitions to start",
    (Initial, Stable): "the first plan gave nobody anything to start",
    (Stable, Closing): "a new plan moves partitions: their owners must close them",
    (Stable, Starting): "a new plan only adds partitions",
    (Starting, Closing): "a new plan during the start moves partitions",
    (Starting, Stable): "every start was confirmed, or those who had to start left",
    (Closing, Starting): (
        "every close was confirmed or its owner left: the moved partitions are granted"
    ),
    (Closing, Stable): (
        "every close was confirmed or its owner left, and nothing is left to start"
    ),
    (Initial, Dead): "the group was deleted, or expired with no offsets left",
    (Stable, Dead): "the group was deleted, or expired with no offsets left",
}


def check_transition(current: HandoffState, target: HandoffState) -> str:
    """The cause of a legal move; raises `IllegalStateTransition` for any other."""
    try:
        return TRANSITIONS[current, target]
    except KeyError:
        raise IllegalStateTransition(
            f"handoff group state cannot move from {current.value} to {target.value}"
        ) from None
