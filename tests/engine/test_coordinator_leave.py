"""LeaveGroup, modelled on Kafka 3.7's GroupCoordinatorTest: single and batch leaves, members
identified by member id or by group instance id alone (an administrative removal), fenced and
unknown identities, pending members, and what a leave does to the rebalance in progress.
"""

from __future__ import annotations

import dataclasses

from coordinator_engine import (
    Errors,
    GroupState,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResult,
    MemberIdentity,
    SyncGroupResponse,
    partition_for,
)
from coordinator_engine.events import MemberRemoved, PendingMemberRemoved
from coordinator_engine.records import GroupMetadataKey, GroupMetadataValue
from tests.engine.harness import (
    FOLLOWER_INSTANCE,
    GROUP,
    LEADER_INSTANCE,
    PROTOCOL_SUPERSET,
    TEST_CONFIG,
    Context,
)

NONE = Errors.NONE
UNKNOWN = Errors.UNKNOWN_MEMBER_ID


def result(
    member_id: str = "", instance_id: str | None = None, code: int = NONE
) -> LeaveMemberResult:
    return LeaveMemberResult(member_id=member_id, group_instance_id=instance_id, error_code=code)


def group_with_a_pending_member(ctx: Context) -> tuple[str, str, str]:
    """GroupCoordinatorTest.setupGroupWithPendingMember: a Stable group of two, a rebalance
    both members rejoined, and a third member holding a pending id (100 ms session).
    Returns (leader, follower, pending member id)."""
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.join(leader_id)
    partial = ctx.join(require_known_member_id=True, session_timeout=100)
    assert partial.response is not None
    ctx.join(follower_id)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert ctx.group().pending_member_ids == frozenset({partial.response.member_id})
    return leader_id, follower_id, partial.response.member_id


def test_leave_with_an_empty_group_id_is_invalid() -> None:
    ctx = Context()
    assert ctx.leave(MemberIdentity(member_id="m"), group_id="") == LeaveGroupResponse(
        error_code=Errors.INVALID_GROUP_ID
    )


def test_leave_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testLeaveGroupWrongCoordinator."""
    assert partition_for("otherGroup") != partition_for(GROUP)
    ctx = Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )
    assert ctx.leave(MemberIdentity(), group_id="otherGroup") == LeaveGroupResponse(
        error_code=Errors.NOT_COORDINATOR
    )


def test_static_batch_leave_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersWrongCoordinatorBatchLeaveGroup."""
    ctx = Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )
    ctx.static_members_join_and_rebalance()
    response = ctx.leave(
        MemberIdentity(group_instance_id=LEADER_INSTANCE),
        MemberIdentity(group_instance_id=FOLLOWER_INSTANCE),
        group_id="invalid-group",
    )
    assert partition_for("invalid-group") != partition_for(GROUP)
    assert response == LeaveGroupResponse(error_code=Errors.NOT_COORDINATOR)


def test_leave_from_an_unknown_group_answers_unknown_member_per_member() -> None:
    """Mirrors GroupCoordinatorTest.testLeaveGroupUnknownGroup."""
    ctx = Context()
    assert ctx.leave(MemberIdentity(member_id="memberId")) == LeaveGroupResponse(
        error_code=NONE, members=(result("memberId", code=UNKNOWN),)
    )
    assert ctx.coord.group(GROUP) is None


def test_static_batch_leave_from_an_unknown_group_answers_unknown_member_per_member() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersUnknownGroupBatchLeaveGroup."""
    ctx = Context()
    response = ctx.leave(
        MemberIdentity(group_instance_id=LEADER_INSTANCE),
        MemberIdentity(group_instance_id=FOLLOWER_INSTANCE),
    )
    assert response == LeaveGroupResponse(
        error_code=NONE,
        members=(
            result(instance_id=LEADER_INSTANCE, code=UNKNOWN),
            result(instance_id=FOLLOWER_INSTANCE, code=UNKNOWN),
        ),
    )


def test_leave_of_an_unknown_member_of_an_existing_group_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testLeaveGroupUnknownConsumerExistingGroup."""
    ctx = Context()
    ctx.join_now()
    assert ctx.leave(MemberIdentity(member_id="consumerId")).members == (
        result("consumerId", code=UNKNOWN),
    )


def test_only_member_leaving_empties_the_group_and_stores_it() -> None:
    """Mirrors GroupCoordinatorTest.testValidLeaveGroup."""
    ctx = Context()
    joined = ctx.join_now()
    member_id = joined.member_id
    response = ctx.leave(MemberIdentity(member_id=member_id, reason="shutting down"))
    assert response == LeaveGroupResponse(error_code=NONE, members=(result(member_id),))
    view = ctx.group()
    assert (view.state, view.generation_id, dict(view.members)) == (GroupState.EMPTY, 2, {})
    assert ctx.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=50,
            member_id=member_id,
            group_instance_id=None,
            reason="left",
            detail="shutting down",
        )
    ]
    assert ctx.records() == [
        (
            GroupMetadataKey(group=GROUP),
            GroupMetadataValue(
                protocol_type="consumer",
                generation=2,
                protocol=None,
                leader=None,
                current_state_timestamp=50,
                members=(),
            ),
        )
    ]


def test_leave_with_an_instance_id_mapped_to_another_member_is_fenced() -> None:
    """Mirrors GroupCoordinatorTest.testLeaveGroupWithFencedInstanceId."""
    ctx = Context()
    ctx.join_now(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    identity = MemberIdentity(member_id="some_member", group_instance_id=LEADER_INSTANCE)
    assert ctx.leave(identity).members == (
        result("some_member", LEADER_INSTANCE, Errors.FENCED_INSTANCE_ID),
    )
    assert len(ctx.group().members) == 1


def test_static_member_leaves_by_instance_id_alone() -> None:
    """Mirrors GroupCoordinatorTest.testLeaveGroupStaticMemberWithUnknownMemberId: a leave by
    instance id without a member id is an administrative removal."""
    ctx = Context()
    joined = ctx.join_now(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    response = ctx.leave(MemberIdentity(group_instance_id=LEADER_INSTANCE))
    assert response.members == (result(instance_id=LEADER_INSTANCE),)
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=50,
            member_id=joined.member_id,
            group_instance_id=LEADER_INSTANCE,
            reason="removed_by_admin",
            detail=None,
        )
    ]


def test_static_members_leave_in_one_batch() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersValidBatchLeaveGroup."""
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    response = ctx.leave(
        MemberIdentity(group_instance_id=LEADER_INSTANCE),
        MemberIdentity(group_instance_id=FOLLOWER_INSTANCE),
    )
    assert response == LeaveGroupResponse(
        error_code=NONE,
        members=(result(instance_id=LEADER_INSTANCE), result(instance_id=FOLLOWER_INSTANCE)),
    )
    view = ctx.group()
    assert (view.state, view.generation_id) == (GroupState.EMPTY, 2)


def test_batch_leave_reports_a_fenced_instance_and_removes_the_rest() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersFencedInstanceBatchLeaveGroup."""
    ctx = Context()
    outcome = ctx.static_members_join_and_rebalance()
    response = ctx.leave(
        MemberIdentity(group_instance_id=LEADER_INSTANCE),
        MemberIdentity(member_id="invalid-member", group_instance_id=FOLLOWER_INSTANCE),
    )
    assert response.members == (
        result(instance_id=LEADER_INSTANCE),
        result("invalid-member", FOLLOWER_INSTANCE, Errors.FENCED_INSTANCE_ID),
    )
    assert list(ctx.group().members) == [outcome.follower_id]


def test_batch_leave_reports_an_unknown_instance_and_removes_the_rest() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersUnknownInstanceBatchLeaveGroup."""
    ctx = Context()
    outcome = ctx.static_members_join_and_rebalance()
    response = ctx.leave(
        MemberIdentity(group_instance_id="unknown-instance"),
        MemberIdentity(group_instance_id=FOLLOWER_INSTANCE),
    )
    assert response.members == (
        result(instance_id="unknown-instance", code=UNKNOWN),
        result(instance_id=FOLLOWER_INSTANCE),
    )
    assert list(ctx.group().members) == [outcome.leader_id]


def test_the_same_member_twice_in_a_batch_is_unknown_the_second_time() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    response = ctx.leave(
        MemberIdentity(member_id=follower_id), MemberIdentity(member_id=follower_id)
    )
    assert response.members == (result(follower_id), result(follower_id, code=UNKNOWN))
    assert list(ctx.group().members) == [leader_id]


def test_pending_member_leaving_completes_the_join_phase() -> None:
    """Mirrors GroupCoordinatorTest.testPendingMembersLeavesGroup."""
    ctx = Context()
    leader_id, follower_id, pending = group_with_a_pending_member(ctx)
    assert ctx.leave(MemberIdentity(member_id=pending)).members == (result(pending),)
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert list(view.members) == [leader_id, follower_id]
    assert view.pending_member_ids == frozenset()
    assert ctx.events_of(PendingMemberRemoved)[-1] == PendingMemberRemoved(
        group_id=GROUP, at_ms=50, member_id=pending, reason="left"
    )


def test_pending_member_leaves_in_a_batch_with_an_unknown_instance() -> None:
    """Mirrors GroupCoordinatorTest.testPendingMemberBatchLeaveGroup."""
    ctx = Context()
    _, _, pending = group_with_a_pending_member(ctx)
    response = ctx.leave(
        MemberIdentity(group_instance_id="unknown-instance"), MemberIdentity(member_id=pending)
    )
    assert response.members == (
        result(instance_id="unknown-instance", code=UNKNOWN),
        result(pending),
    )
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_leave_with_the_admin_clients_reason_counts_as_a_removal_by_admin() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.leave(MemberIdentity(member_id=follower_id, reason="member was removed by an admin"))
    ctx.leave(MemberIdentity(member_id=leader_id, reason="the consumer is being closed"))
    assert [(e.member_id, e.reason, e.detail) for e in ctx.events_of(MemberRemoved)] == [
        (follower_id, "removed_by_admin", "member was removed by an admin"),
        (leader_id, "left", "the consumer is being closed"),
    ]


def test_leader_leaving_a_stable_group_hands_leadership_to_the_next_member() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.leave(MemberIdentity(member_id=leader_id))
    view = ctx.group()
    assert (view.state, view.leader_id) == (GroupState.PREPARING_REBALANCE, follower_id)
    assert ctx.heartbeat(follower_id, 2) == Errors.REBALANCE_IN_PROGRESS
    rejoined = ctx.join(follower_id)
    assert rejoined.response is not None
    assert rejoined.response.generation_id == 3
    assert rejoined.response.leader == follower_id


def test_member_leaving_while_parked_in_join_group_gets_an_unknown_member_answer() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    parked = ctx.join(leader_id)
    ctx.leave(MemberIdentity(member_id=leader_id))
    assert parked.response == JoinGroupResponse(error_code=UNKNOWN)
    # The follower is now the only member and has not rejoined yet.
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.join(follower_id)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_member_leaving_while_parked_in_sync_group_gets_an_unknown_member_answer() -> None:
    """Kafka leaves that SyncGroup unanswered; the engine answers UNKNOWN_MEMBER_ID."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    parked = ctx.sync(follower_id, 2)
    ctx.leave(MemberIdentity(member_id=follower_id))
    assert parked.response == SyncGroupResponse(error_code=UNKNOWN)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE


def test_follower_leaving_while_completing_rebalance_sends_others_back_to_join() -> None:
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    # The leader has not synced yet when the follower leaves.
    ctx.leave(MemberIdentity(member_id=other.response.member_id))
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    rejoined = ctx.join(leader_id)
    assert rejoined.response is not None
    assert (rejoined.response.generation_id, rejoined.response.leader) == (3, leader_id)
