"""KIP-345 static membership, modelled on Kafka 3.7's GroupCoordinatorTest: a static member
that comes back with an unknown member id replaces its old id (in Stable, CompletingRebalance
and PreparingRebalance), the old id is fenced everywhere with FENCED_INSTANCE_ID, a static
leader rejoining a Stable group is told to skip the assignor (JoinGroup v9 semantics, which the
engine follows), and a replacement whose record cannot be written is reverted.

Most tests start from `static_members_join_and_rebalance()`: a leader (instance "leader") and
a follower (instance "follower"), both supporting range and roundrobin, Stable in generation 1
with assignments b"leader" and b"follower", at t=100.
"""

from __future__ import annotations

from coordinator_engine import (
    Errors,
    GroupState,
    JoinGroupMember,
    JoinGroupResponse,
    MemberIdentity,
    PartitionOffset,
    SyncGroupResponse,
)
from coordinator_engine.events import MemberRemoved, StateChanged, StaticMemberReplaced
from coordinator_engine.records import GroupMetadataKey, GroupMetadataValue, MemberMetadata
from tests.engine.harness import (
    FOLLOWER_INSTANCE,
    GROUP,
    LEADER_INSTANCE,
    PROTOCOL_SUPERSET,
    Context,
    FlakyLog,
)

NONE = Errors.NONE
FENCED = Errors.FENCED_INSTANCE_ID
RANGE_ONLY = (("range", b"metadata"),)
ROUNDROBIN_ONLY = (("roundrobin", b"metadata"),)


def member_metadata(
    member_id: str, instance_id: str, assignment: bytes, timeouts: int = 500
) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id="client",
        client_host="/127.0.0.1",
        rebalance_timeout=timeouts,
        session_timeout=timeouts,
        subscription=b"metadata",
        assignment=assignment,
    )


# -- joining ----------------------------------------------------------------------------------


def test_static_member_can_be_the_first_member_and_its_id_starts_with_its_instance_id() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberJoinAsFirstMember."""
    ctx = Context()
    joined = ctx.join_now(instance_id="groupInstanceId")
    assert joined.error_code == NONE
    assert joined.member_id.startswith("groupInstanceId-")
    assert joined.members == (
        JoinGroupMember(
            member_id=joined.member_id, group_instance_id="groupInstanceId", metadata=b"metadata"
        ),
    )
    assert ctx.group().members[joined.member_id].group_instance_id == "groupInstanceId"


def test_static_member_rejoining_with_a_made_up_member_id_is_fenced() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberReJoinWithExplicitUnknownMemberId."""
    ctx = Context()
    ctx.join_now(instance_id="groupInstanceId")
    reply = ctx.join("unknown_member", instance_id="groupInstanceId")
    assert reply.response == JoinGroupResponse(error_code=FENCED, member_id="unknown_member")


def test_static_member_rejoining_with_its_member_id_while_completing_gets_the_generation() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithKnownMemberId."""
    ctx = Context()
    joined = ctx.join_now(instance_id="groupInstanceId")
    again = ctx.join(joined.member_id, instance_id="groupInstanceId")
    assert again.response == joined
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    synced = ctx.sync(
        joined.member_id,
        joined.generation_id,
        {joined.member_id: b""},
        instance_id="groupInstanceId",
        protocol_type="consumer",
        protocol_name="range",
    )
    assert synced.response is not None and synced.response.error_code == NONE
    assert ctx.group().state is GroupState.STABLE


def test_static_member_with_an_unknown_instance_id_and_a_known_member_id_is_unknown() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberJoinWithUnknownInstanceIdAndKnownMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    reply = ctx.join(result.leader_id, instance_id="unknown_instance", protocols=PROTOCOL_SUPERSET)
    assert reply.response == JoinGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID, member_id=result.leader_id
    )


def test_follower_member_id_with_the_leaders_instance_id_is_fenced() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinAsFollowerWithMismatchedMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    reply = ctx.join(result.follower_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response == JoinGroupResponse(error_code=FENCED, member_id=result.follower_id)


def test_leader_member_id_with_the_followers_instance_id_is_fenced() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinAsLeaderWithMismatchedMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    reply = ctx.join(result.leader_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response == JoinGroupResponse(error_code=FENCED, member_id=result.leader_id)


def test_pending_member_id_reused_with_an_instance_id_is_unknown() -> None:
    """Kafka throws IllegalStateException here (a static member never gets a pending id); the
    engine answers UNKNOWN_MEMBER_ID: the id is not this instance's."""
    ctx = Context()
    partial = ctx.join(require_known_member_id=True)
    assert partial.response is not None
    pending = partial.response.member_id
    reply = ctx.join(pending, instance_id="groupInstanceId")
    assert reply.response == JoinGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID, member_id=pending
    )
    assert ctx.group().pending_member_ids == frozenset({pending})


def test_static_member_gets_a_different_member_id_each_time_it_rejoins() -> None:
    """Mirrors GroupCoordinatorTest.shouldGetDifferentStaticMemberIdAfterEachRejoin."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    seen = [result.leader_id]
    for _ in range(5):
        ctx.sleep(1)
        reply = ctx.join(instance_id=LEADER_INSTANCE, protocols=RANGE_ONLY)
        assert reply.response is not None and reply.response.error_code == NONE
        assert reply.response.member_id.startswith(f"{LEADER_INSTANCE}-")
        assert reply.response.member_id not in seen
        seen.append(reply.response.member_id)
    assert ctx.group().leader_id == seen[-1]


# -- replacement in a Stable group ----------------------------------------------------------------


def test_follower_rejoining_stable_group_with_unknown_id_replaces_its_member_id() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinAsFollowerWithUnknownMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    mark = len(ctx.log.entries)
    events_before = len(ctx.events)
    reply = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    new_id = reply.response.member_id
    assert new_id != result.follower_id and new_id.startswith(f"{FOLLOWER_INSTANCE}-")
    assert reply.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=result.leader_id,
        member_id=new_id,
    )
    view = ctx.group()
    assert (view.state, view.generation_id, view.leader_id) == (
        GroupState.STABLE,
        1,
        result.leader_id,
    )
    assert list(view.members) == [result.leader_id, new_id]
    assert view.members[new_id].assignment == b"follower"
    # The replacement is stored at once, keeping every assignment.
    assert ctx.records(mark) == [
        (
            GroupMetadataKey(group=GROUP),
            GroupMetadataValue(
                protocol_type="consumer",
                generation=1,
                protocol="range",
                leader=result.leader_id,
                current_state_timestamp=100,
                members=(
                    member_metadata(result.leader_id, LEADER_INSTANCE, b"leader"),
                    member_metadata(new_id, FOLLOWER_INSTANCE, b"follower"),
                ),
            ),
        )
    ]
    assert ctx.events[events_before] == StaticMemberReplaced(
        group_id=GROUP,
        at_ms=100,
        group_instance_id=FOLLOWER_INSTANCE,
        old_member_id=result.follower_id,
        new_member_id=new_id,
    )
    fenced = ctx.events[events_before + 1]
    assert isinstance(fenced, MemberRemoved)
    assert (fenced.member_id, fenced.reason) == (result.follower_id, "fenced")
    assert ctx.events_of(StateChanged)[-1].to_state == "Stable"  # no rebalance
    synced = ctx.sync(new_id, 1)
    assert synced.response == SyncGroupResponse(
        error_code=NONE, protocol_type="consumer", protocol_name="range", assignment=b"follower"
    )


def test_static_leader_rejoining_stable_group_is_told_to_skip_the_assignment() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithLeaderIdAndUnknownMemberId (JoinGroup
    v9 and above, which the engine always follows)."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    reply = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    new_id = reply.response.member_id
    assert reply.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=new_id,
        member_id=new_id,
        members=(
            JoinGroupMember(
                member_id=new_id, group_instance_id=LEADER_INSTANCE, metadata=b"metadata"
            ),
            JoinGroupMember(
                member_id=result.follower_id,
                group_instance_id=FOLLOWER_INSTANCE,
                metadata=b"metadata",
            ),
        ),
        skip_assignment=True,
    )
    assert ctx.group().state is GroupState.STABLE

    old_join = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert old_join.response == JoinGroupResponse(error_code=FENCED, member_id=result.leader_id)
    old_sync = ctx.sync(result.leader_id, 1, instance_id=LEADER_INSTANCE)
    assert old_sync.response == SyncGroupResponse(error_code=FENCED)
    old_sync_without_instance = ctx.sync(result.leader_id, 1)
    assert old_sync_without_instance.response == SyncGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID
    )
    # The new leader's SyncGroup in a Stable group returns the kept assignment.
    synced = ctx.sync(new_id, 1, {new_id: b"ignored"}, instance_id=LEADER_INSTANCE)
    assert synced.response is not None and synced.response.assignment == b"leader"


def test_static_follower_rejoining_with_its_member_id_and_same_protocols_changes_nothing() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    mark = len(ctx.log.entries)
    reply = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=result.leader_id,
        member_id=result.follower_id,
    )
    assert ctx.group().state is GroupState.STABLE
    assert ctx.log.entries[mark:] == []


def test_replacement_with_new_protocols_keeping_the_selected_one_does_not_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    reply = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=RANGE_ONLY)
    assert reply.response is not None
    new_id = reply.response.member_id
    assert (reply.response.error_code, reply.response.generation_id) == (NONE, 1)
    assert (reply.response.leader, reply.response.members) == (result.leader_id, ())
    assert ctx.group().state is GroupState.STABLE

    old_join = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=RANGE_ONLY)
    assert old_join.response == JoinGroupResponse(error_code=FENCED, member_id=result.follower_id)
    old_sync = ctx.sync(result.follower_id, 1, instance_id=FOLLOWER_INSTANCE)
    assert old_sync.response == SyncGroupResponse(error_code=FENCED)
    new_sync = ctx.sync(new_id, 1, instance_id=FOLLOWER_INSTANCE)
    assert new_sync.response is not None
    assert (new_sync.response.error_code, new_sync.response.assignment) == (NONE, b"follower")


def test_replacement_that_changes_the_selected_protocol_rebalances() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance(session_timeout=1000)
    reply = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=ROUNDROBIN_ONLY)
    assert not reply.done
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    new_id = ctx.events_of(StaticMemberReplaced)[-1].new_member_id
    ctx.sleep(500)  # the leader does not rejoin: the replaced follower is elected
    assert reply.response is not None
    assert reply.response.member_id == reply.response.leader == new_id
    assert (reply.response.generation_id, reply.response.protocol_name) == (2, "roundrobin")
    assert [m.group_instance_id for m in reply.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
    ]
    assert result.follower_id not in ctx.group().members


def test_static_follower_rejoining_with_its_member_id_and_new_protocols_rebalances() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithFollowerIdAndChangeOfProtocol."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance(session_timeout=1000)
    reply = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=ROUNDROBIN_ONLY)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(500)
    assert reply.response is not None
    assert reply.response.member_id == reply.response.leader == result.follower_id
    assert (reply.response.generation_id, reply.response.protocol_name) == (2, "roundrobin")
    assert [m.group_instance_id for m in reply.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
    ]
    view = ctx.group()
    assert view.leader_id == result.follower_id
    assert result.leader_id in view.members  # static: kept although it did not rejoin


def test_static_leader_rejoining_with_its_member_id_forces_a_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithLeaderIdAndKnownMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance(session_timeout=250)
    reply = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.sleep(300)  # the follower's session ran out at t=350: only the leader is left
    assert reply.response is not None
    assert reply.response.member_id == reply.response.leader == result.leader_id
    assert reply.response.generation_id == 2
    assert [m.group_instance_id for m in reply.response.members] == [LEADER_INSTANCE]
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert [m.group_instance_id for m in view.members.values()] == [LEADER_INSTANCE]


def test_static_members_rejoining_with_known_ids_rebalance_and_a_protocol_change_again() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    follower = ctx.join(
        result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET
    )
    assert leader.response is not None and follower.response is not None
    assert leader.response.generation_id == follower.response.generation_id == 2
    assert leader.response.leader == follower.response.leader == result.leader_id
    assert len(leader.response.members) == 2 and follower.response.members == ()

    ctx.sleep(1)
    changed = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=RANGE_ONLY)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(500)  # the leader neither rejoins nor heartbeats: its session ends first
    assert changed.response is not None
    assert changed.response.member_id == changed.response.leader == result.follower_id
    assert changed.response.generation_id == 3
    assert [m.group_instance_id for m in changed.response.members] == [FOLLOWER_INSTANCE]


def test_updated_timeouts_of_a_replaced_static_member_are_stored() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange."""  # noqa: E501
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    follower = ctx.join(
        instance_id=FOLLOWER_INSTANCE,
        protocols=PROTOCOL_SUPERSET,
        session_timeout=1000,
        rebalance_timeout=1000,
    )
    assert follower.response is not None
    assert (follower.response.error_code, follower.response.skip_assignment) == (NONE, False)
    leader = ctx.join(
        instance_id=LEADER_INSTANCE,
        protocols=PROTOCOL_SUPERSET,
        session_timeout=1000,
        rebalance_timeout=1000,
    )
    assert leader.response is not None
    assert (leader.response.error_code, leader.response.skip_assignment) == (NONE, True)
    assert leader.response.leader == leader.response.member_id
    assert ctx.group().state is GroupState.STABLE
    for member in ctx.group().members.values():
        assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (1000, 1000)
    _, stored = ctx.records()[-1]
    assert isinstance(stored, GroupMetadataValue)
    assert [(m.session_timeout, m.rebalance_timeout) for m in stored.members] == [(1000, 1000)] * 2


# -- persistence failure ------------------------------------------------------------------------


def test_replacement_that_cannot_be_stored_is_reverted() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure.

    Kafka answers with the append's error; the engine maps any storage failure to
    COORDINATOR_NOT_AVAILABLE. Kafka 3.7 keeps the new protocols by mistake when it reverts
    (it reads the "old" protocols after updating them); the engine restores them, as the newer
    group coordinator does."""  # noqa: E501
    log = FlakyLog()
    ctx = Context(log=log)
    result = ctx.static_members_join_and_rebalance()
    events_before = len(ctx.events)
    entries_before = len(log.entries)
    log.failing = True
    reply = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=RANGE_ONLY)
    assert reply.response == JoinGroupResponse(
        error_code=Errors.COORDINATOR_NOT_AVAILABLE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=result.leader_id,
    )
    view = ctx.group()
    assert (view.state, list(view.members)) == (
        GroupState.STABLE,
        [result.leader_id, result.follower_id],
    )
    assert log.entries[entries_before:] == []
    assert ctx.events[events_before:] == []  # no replacement happened

    log.failing = False
    # The old member id is still the instance's, with its old protocols.
    old_join = ctx.join(
        result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET
    )
    assert old_join.response is not None
    assert (old_join.response.error_code, old_join.response.generation_id) == (NONE, 1)
    assert ctx.group().state is GroupState.STABLE
    old_sync = ctx.sync(result.follower_id, 1, instance_id=FOLLOWER_INSTANCE)
    assert old_sync.response is not None
    assert (old_sync.response.error_code, old_sync.response.assignment) == (NONE, b"follower")


def test_replacement_with_new_timeouts_that_cannot_be_stored_keeps_the_old_timeouts() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsButCannotPersistChange."""  # noqa: E501
    log = FlakyLog()
    ctx = Context(log=log)
    result = ctx.static_members_join_and_rebalance()
    log.failing = True
    reply = ctx.join(
        instance_id=FOLLOWER_INSTANCE,
        protocols=PROTOCOL_SUPERSET,
        session_timeout=1000,
        rebalance_timeout=1000,
    )
    assert reply.response is not None
    assert reply.response.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert (reply.response.generation_id, reply.response.members) == (1, ())
    view = ctx.group()
    assert view.state is GroupState.STABLE
    for member in view.members.values():
        assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (500, 500)
    # The old id's session timer is back: it expires 500 ms after the failed replacement.
    log.failing = False
    ctx.sleep(250)
    assert ctx.heartbeat(result.leader_id, 1) == NONE
    ctx.sleep(251)
    assert ctx.events_of(MemberRemoved)[-1].member_id == result.follower_id


# -- fencing the old member id --------------------------------------------------------------------


def test_replaced_member_id_is_fenced_on_heartbeat() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberHeartbeatLeaderWithInvalidMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    assert ctx.heartbeat(result.leader_id, 1) == NONE
    assert ctx.heartbeat("invalidMember", 1, instance_id=LEADER_INSTANCE) == FENCED
    ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert ctx.heartbeat(result.leader_id, 1, instance_id=LEADER_INSTANCE) == FENCED
    assert ctx.heartbeat(result.leader_id, 1) == Errors.UNKNOWN_MEMBER_ID


def test_replaced_member_id_is_fenced_on_sync_group() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberSyncAsLeaderWithInvalidMemberId."""
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    reply = ctx.sync("invalid", 1, instance_id=LEADER_INSTANCE)
    assert reply.response == SyncGroupResponse(error_code=FENCED)


def test_replaced_member_id_is_fenced_on_offset_commit() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberCommitOffsetWithInvalidMemberId."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    assert ctx.commit({("topic", 0): 0}, member_id=result.leader_id, generation_id=1) == {
        ("topic", 0): NONE
    }
    assert ctx.commit(
        {("topic", 0): 0}, member_id="invalidMember", generation_id=1, instance_id=LEADER_INSTANCE
    ) == {("topic", 0): FENCED}
    # Without a member id, the instance id alone is not enough either.
    response = ctx.commit_response(
        [PartitionOffset(topic="topic", partition=0, offset=1)],
        generation_id=1,
        instance_id=LEADER_INSTANCE,
    )
    assert [p.error_code for p in response.partitions] == [FENCED]


def test_replaced_member_id_is_fenced_on_leave_group() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    left = ctx.leave(
        MemberIdentity(member_id=result.follower_id, group_instance_id=FOLLOWER_INSTANCE)
    )
    assert [m.error_code for m in left.members] == [FENCED]
    assert len(ctx.group().members) == 2


def test_duplicate_static_member_fences_the_old_ids_parked_join_group() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberFenceDuplicateRejoinedFollower."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    ctx.join()  # a third member triggers a rebalance
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(1)
    old = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert not old.done
    ctx.sleep(1)
    duplicate = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert old.response == JoinGroupResponse(error_code=FENCED, member_id=result.follower_id)
    assert not duplicate.done
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    replaced = ctx.events_of(StaticMemberReplaced)[-1]
    assert (replaced.at_ms, replaced.old_member_id) == (102, result.follower_id)
    assert replaced.new_member_id in ctx.group().members


def test_duplicate_static_member_fences_the_old_ids_parked_sync_group_and_rebalances() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.sleep(1)
    follower = ctx.join(
        result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET
    )
    assert leader.response is not None and follower.response is not None
    assert leader.response.generation_id == follower.response.generation_id == 2
    assert [m.group_instance_id for m in leader.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
    ]
    assert follower.response.member_id == result.follower_id
    assert follower.response.leader == result.leader_id
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE

    old_sync = ctx.sync(
        result.follower_id,
        2,
        instance_id=FOLLOWER_INSTANCE,
        protocol_type="consumer",
        protocol_name="range",
    )
    assert not old_sync.done
    ctx.sleep(1)
    duplicate = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert old_sync.response == SyncGroupResponse(error_code=FENCED)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE

    ctx.sleep(500)  # the leader does not rejoin and its session ends: the duplicate leads
    assert duplicate.response is not None
    new_id = duplicate.response.member_id
    assert duplicate.response.leader == new_id
    assert duplicate.response.generation_id == 3
    assert [m.group_instance_id for m in duplicate.response.members] == [FOLLOWER_INSTANCE]
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_old_id_rejoining_after_its_replacement_is_fenced() -> None:
    """Mirrors GroupCoordinatorTest.staticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged."""  # noqa: E501
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    duplicate = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    # Both instances are now awaiting: the join phase completes at once.
    assert leader.response is not None and duplicate.response is not None
    assert leader.response.generation_id == duplicate.response.generation_id == 2
    assert [m.group_instance_id for m in leader.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
    ]
    assert duplicate.response.members == ()
    assert duplicate.response.member_id != result.follower_id
    ctx.sleep(1)
    old = ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert old.response == JoinGroupResponse(error_code=FENCED, member_id=result.follower_id)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_replacement_while_completing_rebalance_answers_other_parked_syncs_and_rebalances() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.group().generation_id == 2
    follower_sync = ctx.sync(result.follower_id, 2, instance_id=FOLLOWER_INSTANCE)
    assert not follower_sync.done  # parked until the leader's SyncGroup
    replacement = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert follower_sync.response == SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    assert not replacement.done
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.join(result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert replacement.response is not None
    new_id = replacement.response.member_id
    assert (replacement.response.generation_id, replacement.response.leader) == (3, new_id)
    assert [m.member_id for m in replacement.response.members] == [new_id, result.follower_id]


def test_replaced_member_must_heartbeat_under_its_new_id() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    ctx.sleep(200)
    reply = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    new_id = reply.response.member_id
    ctx.sleep(250)  # t=550
    assert ctx.heartbeat(result.leader_id, 1) == NONE
    ctx.sleep(100)  # t=650: past the old id's deadline (600), not the new id's (800)
    assert new_id in ctx.group().members
    assert ctx.heartbeat(result.leader_id, 1) == NONE
    ctx.sleep(151)  # t=801
    assert [e.reason for e in ctx.events_of(MemberRemoved)] == ["fenced", "session_timeout"]
    assert ctx.events_of(MemberRemoved)[1:] == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=801,
            member_id=new_id,
            group_instance_id=FOLLOWER_INSTANCE,
            reason="session_timeout",
            detail=None,
        )
    ]
