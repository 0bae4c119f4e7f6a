"""The member's state machine: the one table of the moves a consumer's group membership makes.

Follows Kafka's ``AbstractCoordinator.MemberState``. The member is UNJOINED until it sends a
JoinGroup (PREPARING_REBALANCE), a member of a new generation once the JoinGroup is answered
(COMPLETING_REBALANCE, heartbeats resume), and STABLE once the SyncGroup brought its assignment.
A reset (an unknown member id, a stale generation, leaving the group) sends it back to UNJOINED
from anywhere; a rejoin sends it back to PREPARING_REBALANCE. ``TRANSITIONS`` maps every legal
(from, to) pair to its cause; any other move is a bug and raises ``IllegalStateTransition``::

    UNJOINED ──JoinGroup sent──► PREPARING_REBALANCE ──JoinGroup answered──► COMPLETING_REBALANCE
       ▲  ▲                         ▲      ▲  (retry)                              │
       │  │                         │      └─── SyncGroup failed, rejoin ─────────┤
       │  │                         └──── rejoin ──── STABLE ◄──SyncGroup answered─┘
       └──┴──── generation reset / left the group (from any state) ────┘
"""

from __future__ import annotations

import enum

from coordinator_engine.errors import IllegalStateTransition


class MemberState(enum.Enum):
    """Where this consumer stands in its group (Kafka's ``MemberState``)."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"

    # Members are singletons: the identity hash (in C) serves the state checks the client
    # makes on every call, not Enum's hash of the name.
    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.value


UNJOINED = MemberState.UNJOINED
PREPARING_REBALANCE = MemberState.PREPARING_REBALANCE
COMPLETING_REBALANCE = MemberState.COMPLETING_REBALANCE
STABLE = MemberState.STABLE

#: Every legal move and what causes it.
TRANSITIONS: dict[tuple[MemberState, MemberState], str] = {
    (UNJOINED, PREPARING_REBALANCE): "JoinGroup sent",
    (PREPARING_REBALANCE, PREPARING_REBALANCE): "JoinGroup sent again after a retriable failure",
    (COMPLETING_REBALANCE, PREPARING_REBALANCE): "JoinGroup sent again: the sync did not finish",
    (STABLE, PREPARING_REBALANCE): "JoinGroup sent to rejoin the group",
    (PREPARING_REBALANCE, COMPLETING_REBALANCE): "JoinGroup answered: member of a new generation",
    (COMPLETING_REBALANCE, STABLE): "SyncGroup answered with this member's assignment",
    (PREPARING_REBALANCE, UNJOINED): "generation reset, or the member left the group",
    (COMPLETING_REBALANCE, UNJOINED): "generation reset, or the member left the group",
    (STABLE, UNJOINED): "generation reset, or the member left the group",
    (UNJOINED, UNJOINED): "generation reset while not in the group",
}

#: States in which the member heartbeats (Kafka: not ``hasNotJoinedGroup()``).
HEARTBEAT_STATES = frozenset({COMPLETING_REBALANCE, STABLE})


def check_transition(current: MemberState, target: MemberState) -> str:
    """The cause of a legal move; raises ``IllegalStateTransition`` for any other."""
    try:
        return TRANSITIONS[current, target]
    except KeyError:
        raise IllegalStateTransition(
            f"member state cannot move from {current.value} to {target.value}"
        ) from None
