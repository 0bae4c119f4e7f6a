"""The consumer-protocol member's state machine: the one table of the moves it makes.

Follows Kafka's client-side ``MemberState`` (``clients/.../consumer/internals/MemberState.java``,
KIP-848), whose ``previousValidStates`` are the rows below. A member is UNSUBSCRIBED until
its first ``poll()``, JOINING until its epoch-0 heartbeat is answered, RECONCILING while it
moves to a new assignment (commit, revoke, assign), ACKNOWLEDGING until the heartbeat that
reports the new owned partitions is sent, and STABLE when it holds its whole assignment.
FENCED (its epoch was refused: everything lost, it joins again), PREPARE_LEAVING / LEAVING
(``close()`` or a poll timeout), STALE (left after a poll timeout, waits for ``poll()``) and
FATAL (stopped for good) complete it. ``CONSUMER_TRANSITIONS`` maps every legal (from, to)
pair to its cause; any other move is a bug and raises ``IllegalStateTransition``::

    UNSUBSCRIBED ─► JOINING ─► RECONCILING ─► ACKNOWLEDGING ─► STABLE
                      ▲  │         ▲  ▲              │            │
                      │  └─────────┼──┴──────────────┘            │ new assignment
                      │            └──────────────────────────────┘
                      ├── FENCED ◄── (epoch refused, from any in-group state)
                      └── STALE ◄── LEAVING ◄── PREPARE_LEAVING (close, poll timeout)
"""

from __future__ import annotations

import enum

from coordinator_engine.errors import IllegalStateTransition


class ConsumerMemberState(enum.Enum):
    """Where a consumer-protocol member stands (Kafka's client ``MemberState``)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    FATAL = "FATAL"
    STALE = "STALE"

    def __str__(self) -> str:
        return self.value


S = ConsumerMemberState
_IN_GROUP = (S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE)

#: Every legal move and what causes it (Kafka's ``MemberState.previousValidStates``).
CONSUMER_TRANSITIONS: dict[tuple[ConsumerMemberState, ConsumerMemberState], str] = {
    (S.UNSUBSCRIBED, S.JOINING): "the application polled: the member joins with epoch 0",
    (S.FENCED, S.JOINING): "fenced: the member lost its partitions and joins again",
    (S.STALE, S.JOINING): "the application polled again after a poll timeout",
    (S.JOINING, S.RECONCILING): "joined: an assignment to reconcile",
    (S.STABLE, S.RECONCILING): "a new assignment to reconcile",
    (S.ACKNOWLEDGING, S.RECONCILING): "acknowledged, and the target moved meanwhile",
    (S.RECONCILING, S.RECONCILING): "a new assignment while reconciling",
    (S.RECONCILING, S.ACKNOWLEDGING): "revoked and assigned: the next heartbeat reports it",
    (S.JOINING, S.STABLE): "joined with an assignment it already holds (none)",
    (S.RECONCILING, S.STABLE): "the assignment went back to what the member holds",
    (S.ACKNOWLEDGING, S.STABLE): "the heartbeat reporting the new assignment was sent",
    **{(state, S.FENCED): "the coordinator fenced the member's epoch" for state in _IN_GROUP},
    **{(state, S.FATAL): "a fatal error" for state in _IN_GROUP},
    (S.PREPARE_LEAVING, S.FATAL): "a fatal error while leaving",
    (S.LEAVING, S.FATAL): "a fatal error while leaving",
    (S.UNSUBSCRIBED, S.FATAL): "a fatal error",
    **{(state, S.PREPARE_LEAVING): "closing: commit and revoke" for state in _IN_GROUP},
    (S.UNSUBSCRIBED, S.PREPARE_LEAVING): "closing before joining",
    (S.PREPARE_LEAVING, S.LEAVING): "the leave heartbeat goes out",
    (S.PREPARE_LEAVING, S.UNSUBSCRIBED): "closed without a membership to leave",
    (S.LEAVING, S.UNSUBSCRIBED): "left the group",
    (S.FENCED, S.UNSUBSCRIBED): "closed while fenced",
    (S.STALE, S.UNSUBSCRIBED): "closed while waiting for poll() after a poll timeout",
    (S.LEAVING, S.STALE): "left after a poll timeout: waits for the application's poll()",
}


def check_consumer_transition(current: ConsumerMemberState, target: ConsumerMemberState) -> str:
    """The cause of a legal move; raises ``IllegalStateTransition`` for any other."""
    try:
        return CONSUMER_TRANSITIONS[current, target]
    except KeyError:
        raise IllegalStateTransition(
            f"consumer member state cannot move from {current.value} to {target.value}"
        ) from None
