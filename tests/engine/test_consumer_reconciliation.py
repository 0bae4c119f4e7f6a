"""Reconciliation (`consumer.reconciliation.reconcile`): Kafka's `CurrentAssignmentBuilderTest`
ported by name, one member's transition each, and `ConsumerGroupTest`'s partition epochs."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from coordinator_engine.consumer import CurrentAssignment, MemberState, reconcile
from coordinator_engine.consumer.group import TP, ConsumerGroup, by_topic
from coordinator_engine.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    topic_partitions,
)
from coordinator_engine.errors import FencedMemberEpochError, IllegalStateTransition

T1 = UUID(int=1)
T2 = UUID(int=2)

STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def tps(**parts: tuple[int, ...]) -> frozenset[TP]:
    topics = {"t1": T1, "t2": T2}
    return frozenset((topics[t], p) for t, ps in parts.items() for p in ps)


def member(
    epoch: int,
    previous: int,
    state: MemberState = STABLE,
    assigned: frozenset[TP] = frozenset(),
    pending: frozenset[TP] = frozenset(),
) -> CurrentAssignment:
    return CurrentAssignment(epoch, previous, state, assigned, pending)


def nobody(tp: TP) -> str | None:
    return None


def owned_by(holder: str, partitions: frozenset[TP]) -> Callable[[TP], str | None]:
    return lambda tp: holder if tp in partitions else None


def test_stable_to_stable() -> None:
    current = member(10, 9, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = reconcile(current, 11, tps(t1=(1, 2, 3), t2=(4, 5, 6)), None, nobody)
    assert updated == member(11, 10, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))


def test_stable_to_stable_at_the_same_epoch_changes_nothing() -> None:
    current = member(10, 9, assigned=tps(t1=(1, 2)))
    assert reconcile(current, 10, tps(t1=(1, 2)), None, nobody) is current


def test_stable_to_stable_with_new_partitions() -> None:
    current = member(10, 9, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = reconcile(current, 11, tps(t1=(1, 2, 3, 4), t2=(4, 5, 6, 7)), None, nobody)
    assert updated == member(11, 10, assigned=tps(t1=(1, 2, 3, 4), t2=(4, 5, 6, 7)))


def test_stable_to_unrevoked_partitions() -> None:
    current = member(10, 9, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))
    updated = reconcile(current, 11, tps(t1=(2, 3, 4), t2=(5, 6, 7)), None, nobody)
    assert updated == member(
        10, 10, UNREVOKED, assigned=tps(t1=(2, 3), t2=(5, 6)), pending=tps(t1=(1,), t2=(4,))
    )


def test_stable_to_unreleased_partitions() -> None:
    current = member(10, 9, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))
    held = tps(t1=(4,), t2=(7,))
    updated = reconcile(
        current, 11, tps(t1=(1, 2, 3, 4), t2=(4, 5, 6, 7)), None, owned_by("other", held)
    )
    assert updated == member(11, 10, UNRELEASED, assigned=tps(t1=(1, 2, 3), t2=(4, 5, 6)))


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() -> (
    None
):
    """The member already stopped what it must revoke: it moves on at once."""
    current = member(10, 9, assigned=tps(t1=(1, 2, 3)))
    owned = tps(t1=(2, 3))
    updated = reconcile(current, 11, tps(t1=(2, 3, 4)), owned, owned_by("other", tps(t1=(4,))))
    assert updated == member(11, 10, UNRELEASED, assigned=tps(t1=(2, 3)))


def test_unrevoked_partitions_to_stable() -> None:
    current = member(
        10, 10, UNREVOKED, assigned=tps(t1=(2, 3), t2=(5, 6)), pending=tps(t1=(1,), t2=(4,))
    )
    updated = reconcile(current, 11, tps(t1=(2, 3), t2=(5, 6)), tps(t1=(2, 3), t2=(5, 6)), nobody)
    assert updated == member(11, 10, assigned=tps(t1=(2, 3), t2=(5, 6)))


@pytest.mark.parametrize("owned", [None, tps(t1=(1, 2, 3), t2=(5, 6))])
def test_remains_in_unrevoked_partitions(owned: frozenset[TP] | None) -> None:
    """Still owning a revoked partition, or not saying (None), keeps the member waiting."""
    current = member(
        10, 10, UNREVOKED, assigned=tps(t1=(2, 3), t2=(5, 6)), pending=tps(t1=(1,), t2=(4,))
    )
    assert reconcile(current, 12, tps(t1=(3,), t2=(6,)), owned, nobody) is current


def test_unrevoked_partitions_to_unrevoked_partitions() -> None:
    """Revoked, but a newer target takes more away: revoke again, at epoch + 1."""
    current = member(
        10, 10, UNREVOKED, assigned=tps(t1=(2, 3), t2=(5, 6)), pending=tps(t1=(1,), t2=(4,))
    )
    updated = reconcile(current, 12, tps(t1=(3,), t2=(6,)), tps(t1=(2, 3), t2=(5, 6)), nobody)
    assert updated == member(
        11, 10, UNREVOKED, assigned=tps(t1=(3,), t2=(6,)), pending=tps(t1=(2,), t2=(5,))
    )


def test_unrevoked_partitions_to_unreleased_partitions() -> None:
    current = member(11, 10, UNREVOKED, assigned=tps(t1=(2, 3), t2=(5, 6)), pending=tps(t1=(1,)))
    updated = reconcile(
        current,
        11,
        tps(t1=(2, 3, 4), t2=(5, 6, 7)),
        tps(t1=(2, 3), t2=(5, 6)),
        owned_by("other", tps(t1=(4,), t2=(7,))),
    )
    assert updated == member(11, 11, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))


def test_unreleased_partitions_to_stable() -> None:
    current = member(11, 10, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))
    updated = reconcile(current, 12, tps(t1=(2, 3), t2=(5, 6)), None, nobody)
    assert updated == member(12, 11, assigned=tps(t1=(2, 3), t2=(5, 6)))


def test_unreleased_partitions_to_stable_with_new_partitions() -> None:
    current = member(11, 10, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))
    updated = reconcile(current, 11, tps(t1=(2, 3, 4), t2=(5, 6, 7)), None, nobody)
    assert updated == member(11, 11, assigned=tps(t1=(2, 3, 4), t2=(5, 6, 7)))


def test_unreleased_partitions_to_unreleased_partitions() -> None:
    current = member(11, 10, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))
    held = tps(t1=(4,), t2=(7,))
    updated = reconcile(current, 11, tps(t1=(2, 3, 4), t2=(5, 6, 7)), None, owned_by("other", held))
    assert updated == member(11, 11, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))


def test_unreleased_partitions_to_unrevoked_partitions() -> None:
    current = member(11, 10, UNRELEASED, assigned=tps(t1=(2, 3), t2=(5, 6)))
    updated = reconcile(current, 12, tps(t1=(3,), t2=(6,)), None, nobody)
    assert updated == member(
        11, 11, UNREVOKED, assigned=tps(t1=(3,), t2=(6,)), pending=tps(t1=(2,), t2=(5,))
    )


@pytest.mark.parametrize("owned", [None, tps(t1=(1,))])
def test_unknown_state_fences_a_member_that_owns_anything(owned: frozenset[TP] | None) -> None:
    """testUnknownState: a state byte this engine does not know; the member must rejoin owning
    nothing."""
    current = member(11, 10, MemberState.UNKNOWN, assigned=tps(t1=(1,)))
    with pytest.raises(FencedMemberEpochError):
        reconcile(current, 11, tps(t1=(1,)), owned, nobody)


def test_unknown_state_with_nothing_owned_reconciles_from_scratch() -> None:
    current = member(11, 10, MemberState.UNKNOWN, assigned=tps(t1=(1,)))
    assert reconcile(current, 12, tps(t1=(1, 2)), frozenset(), nobody) == member(
        12, 11, assigned=tps(t1=(1, 2))
    )


def test_an_unknown_state_byte_reads_as_unknown() -> None:
    assert MemberState.of(42) is MemberState.UNKNOWN
    assert MemberState.of(1) is UNREVOKED


# ------------------------------------------------------------------ ConsumerGroupTest


def _assignment_record(group: ConsumerGroup, member_id: str, current: CurrentAssignment) -> None:
    group.apply(
        ConsumerGroupCurrentMemberAssignmentKey(group=group.group_id, member_id=member_id),
        current.value(),
    )


def test_updating_member_updates_partition_epoch() -> None:
    """testUpdatingMemberUpdatesPartitionEpoch: a member's assigned and pending partitions are
    owned by it; updating the member releases what it no longer has."""
    group = ConsumerGroup("g")
    _assignment_record(group, "m1", member(10, 9, assigned=tps(t1=(1, 2)), pending=tps(t2=(3,))))
    assert {tp: group.owner(tp) for tp in tps(t1=(1, 2), t2=(3,))} == dict.fromkeys(
        tps(t1=(1, 2), t2=(3,)), "m1"
    )
    _assignment_record(group, "m1", member(11, 10, assigned=tps(t1=(2,))))
    assert group.owner((T1, 1)) is None and group.owner((T2, 3)) is None
    assert group.owner((T1, 2)) == "m1"


def test_giving_a_partition_another_member_owns_is_a_bug() -> None:
    group = ConsumerGroup("g")
    _assignment_record(group, "m1", member(10, 9, assigned=tps(t1=(1,))))
    with pytest.raises(IllegalStateTransition, match="still owns it"):
        _assignment_record(group, "m2", member(10, 9, assigned=tps(t1=(1,))))


def test_deleting_a_member_releases_its_partitions() -> None:
    group = ConsumerGroup("g")
    _assignment_record(group, "m1", member(10, 9, assigned=tps(t1=(1,))))
    group.apply(ConsumerGroupCurrentMemberAssignmentKey(group="g", member_id="m1"), None)
    group.apply(ConsumerGroupMemberMetadataKey(group="g", member_id="m1"), None)
    assert group.members == {} and group.owner((T1, 1)) is None


def test_waiting_on_unreleased_partition() -> None:
    """testWaitingOnUnreleasedPartition: a partition pending revocation elsewhere is unreleased
    until that member lets it go."""
    group = ConsumerGroup("g")
    _assignment_record(group, "m1", member(10, 10, UNREVOKED, pending=tps(t1=(1,))))
    current = member(10, 9, assigned=tps(t1=(2,)))
    updated = reconcile(current, 11, tps(t1=(1, 2)), None, group.owner)
    assert updated.state is UNRELEASED and updated.assigned == tps(t1=(2,))
    _assignment_record(group, "m1", member(11, 10))
    assert reconcile(updated, 11, tps(t1=(1, 2)), None, group.owner).assigned == tps(t1=(1, 2))


def test_topic_partitions_are_sorted_by_topic_id_then_partition() -> None:
    assert topic_partitions(by_topic(tps(t2=(3, 1), t1=(2,)))) == topic_partitions(
        {T1: frozenset({2}), T2: frozenset({1, 3})}
    )
