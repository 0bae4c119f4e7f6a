"""The classic group state machine: the one place that says which transitions exist.

Follows Kafka's `GroupState` (kafka.coordinator.group) / `ClassicGroupState`, where each state
lists the states it may be entered from and `transitionTo` asserts the move. Here the table maps
each allowed (from, to) pair to what causes it, so the table doubles as documentation (and the
dashboard labels edges with it). A move the table does not hold is a bug: `check_transition`
raises `IllegalStateTransition`.

    Empty ──member joins──► PreparingRebalance ──join phase completes──► CompletingRebalance
      ▲                          ▲    │  (no members left)                    │
      │                          │    └──────────► Empty                       │ leader's SyncGroup
      │                          │                                              ▼  stored
      │                          └──── member joins / leaves / fails ──── Stable
    Dead ◄── group deleted, expired or unloaded (from any state)
"""

from __future__ import annotations

import enum

from ..errors import IllegalStateTransition


class GroupState(enum.Enum):
    """A classic group's state; values are Kafka's own names (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


Empty = GroupState.EMPTY
PreparingRebalance = GroupState.PREPARING_REBALANCE
CompletingRebalance = GroupState.COMPLETING_REBALANCE
Stable = GroupState.STABLE
Dead = GroupState.DEAD

#: Every legal transition and what causes it (Kafka's GroupState.validPreviousStates).
TRANSITIONS: dict[tuple[GroupState, GroupState], str] = {
    (Empty, PreparingRebalance): "a member joined the empty group",
    (Stable, PreparingRebalance): "a member joined, left, failed or changed its protocols",
    (CompletingRebalance, PreparingRebalance): "a member joined, left or failed before the sync",
    (PreparingRebalance, CompletingRebalance): "every member rejoined, or the rebalance timed out",
    (PreparingRebalance, Empty): "the join phase completed with no members left",
    (CompletingRebalance, Stable): "the leader's assignment was stored",
    (Empty, Dead): "the group was deleted, or expired with no offsets left",
    (Stable, Dead): "the coordinator partition was unloaded",
    (PreparingRebalance, Dead): "the coordinator partition was unloaded",
    (CompletingRebalance, Dead): "the coordinator partition was unloaded",
    (Dead, Dead): "the group was already dead",
}

#: States from which a new rebalance may start (Kafka's `canRebalance`).
CAN_REBALANCE = frozenset({Stable, CompletingRebalance, Empty})


def check_transition(current: GroupState, target: GroupState) -> str:
    """The cause of a legal move; raises `IllegalStateTransition` for any other."""
    try:
        return TRANSITIONS[current, target]
    except KeyError:
        raise IllegalStateTransition(
            f"group state cannot move from {current.value} to {target.value}"
        ) from None
