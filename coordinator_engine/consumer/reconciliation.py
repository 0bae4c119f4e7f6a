"""Reconciliation: moving one member from its current assignment towards its target, as
Kafka's `CurrentAssignmentBuilder` does (org.apache.kafka.coordinator.group.modern.consumer).

Theory of operation
-------------------
A member holds `assigned` partitions at `member_epoch`. When the group's target assignment
(epoch `target_epoch`) differs, the next assignment is computed (`_next`):

- keep = assigned ∩ target;
- revoke = assigned − keep: the member must stop consuming these first;
- add = target − keep, except partitions another member (or this one, pending revocation)
  still owns: those are *unreleased* and come later.

If something must be revoked and the member still reports owning any of it, it goes to
UNREVOKED_PARTITIONS at its current epoch with `assigned = keep` (nothing new yet) and
`pending_revocation = revoke`. Once its heartbeat no longer lists them (a None list means "still
owned"), it moves to epoch + 1 and is reconciled again. Otherwise it moves to the target epoch
with keep + add: UNRELEASED_PARTITIONS while some partition of its target is still owned by
someone else (it gets those at a later heartbeat), STABLE when it has its whole target. An
UNKNOWN member (a state byte this engine does not know) must rejoin owning nothing: with any
owned partition, or none reported, it is fenced.

Every function here is pure: the member's `CurrentAssignment` in, the next one out.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import FencedMemberEpochError
from .group import TP, CurrentAssignment
from .state import MemberState

__all__ = ["reconcile"]


def reconcile(
    current: CurrentAssignment,
    target_epoch: int,
    target: frozenset[TP],
    owned: frozenset[TP] | None,
    owner_of: Callable[[TP], str | None],
) -> CurrentAssignment:
    """The member's next assignment (Kafka's `CurrentAssignmentBuilder.build`).

    `owned`: what the member's heartbeat reports it owns (None: not reported, still owns
    everything it had); `owner_of(tp)`: the member owning a partition now, or None.

    >>> from uuid import UUID
    >>> t = UUID(int=1)
    >>> a = CurrentAssignment(member_epoch=1, previous_member_epoch=0,
    ...                       assigned=frozenset({(t, 0), (t, 1)}))
    >>> n = reconcile(a, 2, frozenset({(t, 0)}), None, lambda tp: None)
    >>> n.state.name, n.member_epoch, sorted(p for _, p in n.pending_revocation)
    ('UNREVOKED_PARTITIONS', 1, [1])
    """

    def owns_any(partitions: frozenset[TP]) -> bool:
        return owned is None or not owned.isdisjoint(partitions)

    def next_assignment(epoch: int, assigned: frozenset[TP]) -> CurrentAssignment:
        keep = assigned & target
        revoke = assigned - keep
        wanted = target - keep
        unreleased = frozenset(tp for tp in wanted if owner_of(tp) is not None)
        if revoke and owns_any(revoke):
            return CurrentAssignment(
                member_epoch=epoch,
                previous_member_epoch=current.member_epoch,
                state=MemberState.UNREVOKED_PARTITIONS,
                assigned=keep,
                pending_revocation=revoke,
            )
        return CurrentAssignment(
            member_epoch=target_epoch,
            previous_member_epoch=current.member_epoch,
            state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
            assigned=keep | (wanted - unreleased),
            pending_revocation=frozenset(),
        )

    match current.state:
        case MemberState.STABLE:
            if current.member_epoch != target_epoch:
                return next_assignment(current.member_epoch, current.assigned)
            return current
        case MemberState.UNREVOKED_PARTITIONS:
            if owns_any(current.pending_revocation):
                return current
            return next_assignment(current.member_epoch + 1, current.assigned)
        case MemberState.UNRELEASED_PARTITIONS:
            return next_assignment(current.member_epoch, current.assigned)
        case _:
            if owned is None or owned:
                raise FencedMemberEpochError(
                    "The consumer group member is in a unknown state. The member must abandon "
                    "all its partitions and rejoin."
                )
            return next_assignment(target_epoch, current.assigned)
