"""SyncGroup, Heartbeat and the timers around them, modelled on Kafka 3.7's
GroupCoordinatorTest: SyncGroup validation and parking, Heartbeat in each state, session
expiry and what refreshes a session (heartbeats, commits, SyncGroup), the pending-sync timeout
(members that do not SyncGroup within the rebalance timeout) and the rebalance timeout.

`stable_group_of_one()` ends at t=50 with the member's session running until t=550;
`stable_group_of_two()` likewise (generation 2); `join_with_n_members(3)` ends at t=100 in
CompletingRebalance with sessions and the pending-sync timer running until t=600.
"""

from __future__ import annotations

import dataclasses

from coordinator_engine import (
    Errors,
    GroupState,
    MemberIdentity,
    PartitionOffset,
    SyncGroupResponse,
    partition_for,
)
from coordinator_engine.events import AssignmentStored, MemberRemoved, StateChanged
from coordinator_engine.records import GroupMetadataKey, GroupMetadataValue, MemberMetadata
from tests.engine.harness import (
    FOLLOWER_INSTANCE,
    GROUP,
    LEADER_INSTANCE,
    PROTOCOL_SUPERSET,
    TEST_CONFIG,
    Context,
    FlakyLog,
)

NONE = Errors.NONE
OTHER_GROUP = "otherGroup"


def not_owning_other_group() -> Context:
    assert partition_for(OTHER_GROUP) != partition_for(GROUP)
    return Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )


def two_static_members_joined(ctx: Context) -> tuple[str, str, int]:
    """Leader and follower (static, protocols range and roundrobin) completed the first join
    phase; nobody synced yet."""
    leader = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    follower = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.sleep(50)
    ctx.sleep(50)
    assert leader.response is not None and follower.response is not None
    return leader.response.member_id, follower.response.member_id, leader.response.generation_id


# -- SyncGroup validation ------------------------------------------------------------------------


def test_sync_with_an_empty_group_id_is_invalid() -> None:
    ctx = Context()
    assert ctx.sync("memberId", 1, group_id="").response == SyncGroupResponse(
        error_code=Errors.INVALID_GROUP_ID
    )


def test_sync_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupNotCoordinator."""
    ctx = not_owning_other_group()
    assert ctx.sync("memberId", 1, group_id=OTHER_GROUP).response == SyncGroupResponse(
        error_code=Errors.NOT_COORDINATOR
    )


def test_sync_for_an_unknown_group_is_an_unknown_member() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupFromUnknownGroup."""
    ctx = Context()
    assert ctx.sync("memberId", 1).response == SyncGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID
    )
    assert ctx.coord.group(GROUP) is None


def test_sync_from_an_unknown_member_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupFromUnknownMember."""
    ctx = Context()
    ctx.stable_group_of_one()
    assert ctx.sync("blah", 1).response == SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID)


def test_sync_with_another_generation_is_an_illegal_generation() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupFromIllegalGeneration."""
    ctx = Context()
    joined = ctx.join_now()
    reply = ctx.sync(joined.member_id, joined.generation_id + 1, {joined.member_id: b""})
    assert reply.response == SyncGroupResponse(error_code=Errors.ILLEGAL_GENERATION)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_sync_with_an_inconsistent_protocol_type_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent."""
    ctx = Context()
    leader_id, follower_id, generation = two_static_members_joined(ctx)
    for member_id in (leader_id, follower_id):
        reply = ctx.sync(member_id, generation, {leader_id: b""}, protocol_type="whatever")
        assert reply.response == SyncGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_sync_with_an_inconsistent_protocol_name_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent."""
    ctx = Context()
    leader_id, follower_id, generation = two_static_members_joined(ctx)
    for member_id in (leader_id, follower_id):
        reply = ctx.sync(member_id, generation, {leader_id: b""}, protocol_name="whatever")
        assert reply.response == SyncGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_sync_without_protocol_type_and_name_succeeds_and_names_them() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided."""
    ctx = Context()
    leader_id, follower_id, generation = two_static_members_joined(ctx)
    leader = ctx.sync(leader_id, generation, {leader_id: b"l", follower_id: b"f"})
    follower = ctx.sync(follower_id, generation)
    expected = SyncGroupResponse(error_code=NONE, protocol_type="consumer", protocol_name="range")
    assert leader.response == dataclasses.replace(expected, assignment=b"l")
    assert follower.response == dataclasses.replace(expected, assignment=b"f")


def test_sync_with_consistent_protocol_type_and_name_succeeds() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent."""
    ctx = Context()
    leader_id, follower_id, generation = two_static_members_joined(ctx)
    for member_id in (leader_id, follower_id):
        reply = ctx.sync(member_id, generation, {}, protocol_type="consumer", protocol_name="range")
        assert reply.response == SyncGroupResponse(
            error_code=NONE, protocol_type="consumer", protocol_name="range"
        )


def test_sync_while_preparing_rebalance_is_rebalance_in_progress() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    ctx.join(leader_id)
    assert ctx.sync(follower_id, generation).response == SyncGroupResponse(
        error_code=Errors.REBALANCE_IN_PROGRESS
    )


def test_sync_after_the_member_left_is_an_unknown_member() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.leave(MemberIdentity(member_id=member_id))
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.sync(member_id, generation).response == SyncGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID
    )


# -- SyncGroup: storing and handing out the assignment ---------------------------------------------


def test_leader_sync_with_an_empty_assignment_stabilizes_the_group() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupEmptyAssignment."""
    ctx = Context()
    joined = ctx.join_now()
    reply = ctx.sync(joined.member_id, joined.generation_id, {})
    assert reply.response == SyncGroupResponse(
        error_code=NONE, protocol_type="consumer", protocol_name="range", assignment=b""
    )
    assert ctx.group().state is GroupState.STABLE
    assert ctx.heartbeat(joined.member_id, 1) == NONE


def test_leader_sync_stores_the_group_metadata_record_before_answering() -> None:
    ctx = Context()
    joined = ctx.join_now()
    member_id = joined.member_id
    ctx.sync(member_id, 1, {member_id: b"assigned", "not-a-member": b"dropped"})
    assert ctx.records() == [
        (
            GroupMetadataKey(group=GROUP),
            GroupMetadataValue(
                protocol_type="consumer",
                generation=1,
                protocol="range",
                leader=member_id,
                current_state_timestamp=50,
                members=(
                    MemberMetadata(
                        member_id=member_id,
                        group_instance_id=None,
                        client_id="client",
                        client_host="/127.0.0.1",
                        rebalance_timeout=500,
                        session_timeout=500,
                        subscription=b"metadata",
                        assignment=b"assigned",
                    ),
                ),
            ),
        )
    ]
    assert ctx.events[-2:] == [
        StateChanged(
            group_id=GROUP,
            at_ms=50,
            from_state="CompletingRebalance",
            to_state="Stable",
            reason="the leader's assignment was stored",
        ),
        AssignmentStored(
            group_id=GROUP,
            at_ms=50,
            generation_id=1,
            assignments={member_id: b"assigned".hex()},
            partitions=None,  # b"assigned" is not a ConsumerProtocolAssignment
        ),
    ]


def test_follower_syncing_after_the_leader_gets_its_assignment_at_once() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupFollowerAfterLeader."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    leader = ctx.sync(leader_id, 2, {leader_id: b"\x00", follower_id: b"\x01"})
    assert leader.response is not None
    assert (leader.response.error_code, leader.response.assignment) == (NONE, b"\x00")
    follower = ctx.sync(follower_id, 2)
    assert follower.response is not None
    assert (follower.response.error_code, follower.response.assignment) == (NONE, b"\x01")


def test_follower_syncing_before_the_leader_waits_for_the_assignment() -> None:
    """Mirrors GroupCoordinatorTest.testSyncGroupLeaderAfterFollower."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    follower = ctx.sync(follower_id, 2)
    assert not follower.done
    leader = ctx.sync(leader_id, 2, {leader_id: b"\x00", follower_id: b"\x01"})
    assert leader.response is not None and leader.response.assignment == b"\x00"
    assert follower.response == SyncGroupResponse(
        error_code=NONE, protocol_type="consumer", protocol_name="range", assignment=b"\x01"
    )


def test_member_missing_from_the_leaders_assignment_gets_an_empty_one() -> None:
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    ctx.sync(leader_id, 2, {leader_id: b"everything"})
    follower = ctx.sync(follower_id, 2)
    assert follower.response is not None
    assert (follower.response.error_code, follower.response.assignment) == (NONE, b"")


def test_sync_in_a_stable_group_returns_the_stored_assignment_again() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    again = ctx.sync(follower_id, generation)
    assert again.response is not None and again.response.assignment == b"follower"
    # A leader's assignment sent to a Stable group is ignored.
    leader = ctx.sync(leader_id, generation, {leader_id: b"new", follower_id: b"new"})
    assert leader.response is not None and leader.response.assignment == b"leader"
    assert ctx.group().members[follower_id].assignment == b"follower"


def test_repeated_sync_while_parked_supersedes_the_earlier_one() -> None:
    """Kafka drops the earlier callback; the engine answers it with REBALANCE_IN_PROGRESS."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    first = ctx.sync(follower_id, 2)
    second = ctx.sync(follower_id, 2)
    assert first.response == SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    ctx.sync(leader_id, 2, {follower_id: b"f"})
    assert second.response is not None and second.response.assignment == b"f"


def test_leader_sync_that_cannot_be_stored_fails_every_parked_sync_and_rebalances() -> None:
    log = FlakyLog()
    ctx = Context(log=log)
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    follower = ctx.sync(follower_id, 2)
    entries_before = len(log.entries)
    log.failing = True
    leader = ctx.sync(leader_id, 2, {leader_id: b"l", follower_id: b"f"})
    assert leader.response == SyncGroupResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE)
    assert follower.response == SyncGroupResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE)
    view = ctx.group()
    assert view.state is GroupState.PREPARING_REBALANCE
    assert [m.assignment for m in view.members.values()] == [b"", b""]
    assert log.entries[entries_before:] == []


def test_leader_failing_before_its_sync_sends_the_follower_back_to_join() -> None:
    """Mirrors GroupCoordinatorTest.testLeaderFailureInSyncGroup."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower = ctx.sync(other.response.member_id, 2)
    ctx.sleep(600)
    assert follower.response == SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    view = ctx.group()
    assert view.state is GroupState.PREPARING_REBALANCE
    assert list(view.members) == [other.response.member_id]


# -- the pending-sync timeout ----------------------------------------------------------------------


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    """Mirrors GroupCoordinatorTest.testRebalanceTimesOutWhenSyncRequestIsNotReceived."""
    ctx = Context()
    members = ctx.join_with_n_members(3)
    ctx.sleep(250)
    assert [ctx.heartbeat(m.member_id, m.generation_id) for m in members] == [NONE] * 3
    ctx.sleep(250)
    ctx.sleep(1)
    assert [ctx.heartbeat(m.member_id, m.generation_id) for m in members] == [
        Errors.UNKNOWN_MEMBER_ID
    ] * 3
    assert [(e.member_id, e.reason) for e in ctx.events_of(MemberRemoved)] == [
        (m.member_id, "sync_timeout") for m in members
    ]
    view = ctx.group()
    assert (view.state, view.generation_id) == (GroupState.EMPTY, 2)


def test_followers_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    """Mirrors GroupCoordinatorTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers."""  # noqa: E501
    ctx = Context()
    leader, *followers = ctx.join_with_n_members(3)
    ctx.sleep(250)
    assert [ctx.heartbeat(m.member_id, 1) for m in (leader, *followers)] == [NONE] * 3
    synced = ctx.sync(leader.member_id, 1, {m.member_id: b"" for m in (leader, *followers)})
    assert synced.response is not None and synced.response.error_code == NONE
    assert ctx.heartbeat(leader.member_id, 1) == NONE
    ctx.sleep(251)
    assert ctx.heartbeat(leader.member_id, 1) == Errors.REBALANCE_IN_PROGRESS
    assert [ctx.heartbeat(m.member_id, 1) for m in followers] == [Errors.UNKNOWN_MEMBER_ID] * 2
    assert [e.reason for e in ctx.events_of(MemberRemoved)] == ["sync_timeout"] * 2


def test_leader_that_never_syncs_is_removed_and_parked_followers_are_sent_back() -> None:
    """Mirrors GroupCoordinatorTest.testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders."""
    ctx = Context()
    leader, *followers = ctx.join_with_n_members(3)
    ctx.sleep(250)
    assert [ctx.heartbeat(m.member_id, 1) for m in (leader, *followers)] == [NONE] * 3
    parked = [
        ctx.sync(m.member_id, 1, protocol_type="consumer", protocol_name="range") for m in followers
    ]
    ctx.sleep(251)
    assert [p.response for p in parked] == [
        SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
    ] * 2
    assert ctx.heartbeat(leader.member_id, 1) == Errors.UNKNOWN_MEMBER_ID
    assert [ctx.heartbeat(m.member_id, 1) for m in followers] == [Errors.REBALANCE_IN_PROGRESS] * 2
    assert [(e.member_id, e.reason) for e in ctx.events_of(MemberRemoved)] == [
        (leader.member_id, "sync_timeout")
    ]


def test_nobody_is_removed_when_every_member_synced() -> None:
    """Mirrors GroupCoordinatorTest.testRebalanceDoesNotTimeOutWhenAllSyncAreReceived."""
    ctx = Context()
    members = ctx.join_with_n_members(3)
    leader, *followers = members
    ctx.sleep(250)
    assert [ctx.heartbeat(m.member_id, 1) for m in members] == [NONE] * 3
    ctx.sync(leader.member_id, 1, {m.member_id: b"" for m in members})
    follower_syncs = [ctx.sync(m.member_id, 1) for m in followers]
    assert [s.response.error_code for s in follower_syncs if s.response] == [NONE] * 2
    assert ctx.coord.next_deadline_ms() == 850  # only sessions are armed now
    ctx.sleep(251)
    assert [ctx.heartbeat(m.member_id, 1) for m in members] == [NONE] * 3
    ctx.sleep(250)
    assert [ctx.heartbeat(m.member_id, 1) for m in members] == [NONE] * 3
    assert ctx.events_of(MemberRemoved) == []


# -- Heartbeat ---------------------------------------------------------------------------------


def test_heartbeat_with_an_empty_group_id_is_invalid() -> None:
    assert Context().heartbeat("memberId", 1, group_id="") == Errors.INVALID_GROUP_ID


def test_heartbeat_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatWrongCoordinator."""
    ctx = not_owning_other_group()
    assert ctx.heartbeat("memberId", -1, group_id=OTHER_GROUP) == Errors.NOT_COORDINATOR


def test_heartbeat_for_an_unknown_group_is_an_unknown_member() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatUnknownGroup."""
    assert Context().heartbeat("memberId", -1) == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_to_an_empty_group_is_an_unknown_member() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatEmptyGroup (whose Empty group holds a member
    by construction; here an Empty group never has members, so it is one used for offsets)."""
    ctx = Context()
    ctx.commit({("topic", 0): 1})  # a group that exists only for its offsets
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.heartbeat("memberId", 0) == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_from_an_unknown_member_of_an_existing_group_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatUnknownConsumerExistingGroup."""
    ctx = Context()
    ctx.stable_group_of_one()
    assert ctx.heartbeat("memberId", 1) == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_while_completing_rebalance_succeeds() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatRebalanceInProgress."""
    ctx = Context()
    joined = ctx.join_now()
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.heartbeat(joined.member_id, 1) == NONE


def test_heartbeat_with_another_generation_is_an_illegal_generation() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatIllegalGeneration."""
    ctx = Context()
    member_id, _ = ctx.stable_group_of_one()
    assert ctx.heartbeat(member_id, 2) == Errors.ILLEGAL_GENERATION


def test_heartbeat_of_a_stable_member_succeeds() -> None:
    """Mirrors GroupCoordinatorTest.testValidHeartbeat."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    assert ctx.heartbeat(member_id, generation) == NONE


def test_heartbeat_while_preparing_rebalance_tells_the_member_to_rejoin() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatDuringRebalanceCausesRebalanceInProgress."""
    ctx = Context()
    joined = ctx.join_now()
    ctx.join()
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert ctx.heartbeat(joined.member_id, joined.generation_id) == Errors.REBALANCE_IN_PROGRESS


# -- sessions ----------------------------------------------------------------------------------


def test_member_without_heartbeats_is_removed_after_its_session_timeout() -> None:
    """Mirrors GroupCoordinatorTest.testSessionTimeout."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.sleep(499)
    assert ctx.group().members.keys() == {member_id}
    ctx.sleep(1)  # t=550
    assert ctx.heartbeat(member_id, generation) == Errors.UNKNOWN_MEMBER_ID
    view = ctx.group()
    assert (view.state, view.generation_id, dict(view.members)) == (GroupState.EMPTY, 2, {})
    assert ctx.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=550,
            member_id=member_id,
            group_instance_id=None,
            reason="session_timeout",
            detail=None,
        )
    ]
    _, last = ctx.records()[-1]
    assert last == GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol=None,
        leader=None,
        current_state_timestamp=550,
        members=(),
    )


def test_heartbeats_keep_a_session_alive() -> None:
    """Mirrors GroupCoordinatorTest.testHeartbeatMaintainsSession."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one(session_timeout=1000, rebalance_timeout=1000)
    ctx.sleep(500)
    assert ctx.heartbeat(member_id, generation) == NONE
    ctx.sleep(600)
    assert ctx.heartbeat(member_id, generation) == NONE


def test_offset_commits_keep_a_session_alive() -> None:
    """Mirrors GroupCoordinatorTest.testCommitMaintainsSession."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one(session_timeout=1000, rebalance_timeout=1000)
    ctx.sleep(500)
    committed = ctx.commit({("topic", 0): 0}, member_id=member_id, generation_id=generation)
    assert committed == {("topic", 0): NONE}
    ctx.sleep(600)
    assert ctx.heartbeat(member_id, generation) == NONE


def test_sync_in_a_stable_group_keeps_a_session_alive() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.sleep(400)
    ctx.sync(member_id, generation)
    ctx.sleep(400)
    assert ctx.heartbeat(member_id, generation) == NONE


def test_rejected_heartbeat_does_not_refresh_the_session() -> None:
    ctx = Context()
    member_id, _ = ctx.stable_group_of_one()
    ctx.sleep(400)
    assert ctx.heartbeat(member_id, 7) == Errors.ILLEGAL_GENERATION
    ctx.sleep(100)
    assert ctx.events_of(MemberRemoved)[0].member_id == member_id


def test_session_expires_during_a_rebalance_the_member_does_not_rejoin() -> None:
    """Mirrors GroupCoordinatorTest.testSessionTimeoutDuringRebalance."""
    ctx = Context()
    first_id, generation = ctx.stable_group_of_one(session_timeout=1000, rebalance_timeout=2000)
    other = ctx.join()
    ctx.sleep(500)
    assert ctx.heartbeat(first_id, generation) == Errors.REBALANCE_IN_PROGRESS
    ctx.sleep(1100)  # the session ran out at t=1550; the join phase ended with it
    assert ctx.heartbeat(first_id, generation) == Errors.UNKNOWN_MEMBER_ID
    assert other.response is not None
    assert other.response.error_code == NONE
    assert other.response.generation_id == 2
    assert other.response.leader == other.response.member_id


def test_rebalance_times_out_before_a_static_member_rejoins_which_then_expires() -> None:
    """Mirrors GroupCoordinatorTest.testRebalanceCompletesBeforeMemberJoins."""
    ctx = Context()
    first = ctx.join_now(instance_id=LEADER_INSTANCE, rebalance_timeout=1200, session_timeout=1000)
    first_id = first.member_id
    ctx.sync(first_id, 1, {first_id: b""})
    other = ctx.join()
    for _ in range(2):
        ctx.sleep(500)
        assert ctx.heartbeat(first_id, 1) == Errors.REBALANCE_IN_PROGRESS
    ctx.sleep(500)  # t=1550: the 1200 ms join phase (from t=50) is over
    assert other.response is not None and other.response.error_code == NONE
    other_id, generation = other.response.member_id, other.response.generation_id
    assert other.response.leader == other_id and generation == 2
    synced = ctx.sync(other_id, generation, {other_id: b""})
    assert synced.response is not None and synced.response.error_code == NONE
    # The static member that did not rejoin is still a member of generation 2.
    assert first_id in ctx.group().members
    assert ctx.heartbeat(first_id, 1) == Errors.ILLEGAL_GENERATION

    expected = [NONE, NONE, Errors.REBALANCE_IN_PROGRESS]  # its session ends at t=2550
    for code in expected:
        ctx.sleep(400)
        assert ctx.heartbeat(other_id, generation) == code
    rejoined = ctx.join(other_id)
    assert rejoined.response is not None and rejoined.response.error_code == NONE
    generation = rejoined.response.generation_id
    assert generation == 3
    ctx.sync(other_id, generation, {other_id: b""})
    for _ in range(20):
        ctx.sleep(400)
        assert ctx.heartbeat(other_id, generation) == NONE
    assert ctx.group().state is GroupState.STABLE


def test_member_parked_in_join_group_is_not_expired_by_its_session() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two(session_timeout=100, rebalance_timeout=1000)
    parked = ctx.join(follower_id, protocols=(("range", b"changed"),), session_timeout=100)
    ctx.sleep(400)  # t=450: far past the follower's 100 ms session
    assert not parked.done
    assert ctx.group().members.keys() == {leader_id, follower_id}
    assert ctx.events_of(MemberRemoved) == []
    ctx.sleep(100)  # t=550: the leader, which did not rejoin, is removed; the phase ends
    assert ctx.events_of(MemberRemoved)[0].member_id == leader_id
    assert parked.response is not None and parked.response.generation_id == 3


def test_member_parked_in_sync_group_is_not_expired_by_its_session() -> None:
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one(rebalance_timeout=2000)
    other = ctx.join(session_timeout=100)
    ctx.join(leader_id, rebalance_timeout=2000)
    assert other.response is not None
    follower = ctx.sync(other.response.member_id, 2)
    ctx.sleep(400)
    assert not follower.done
    assert ctx.heartbeat(leader_id, 2) == NONE
    ctx.sync(leader_id, 2, {leader_id: b"l"})
    assert follower.response is not None and follower.response.error_code == NONE
    # Once answered, the follower's session runs again from the answer.
    ctx.sleep(100)
    assert ctx.events_of(MemberRemoved)[0].member_id == other.response.member_id


def test_next_deadline_is_the_earliest_armed_timer() -> None:
    ctx = Context()
    assert ctx.coord.next_deadline_ms() is None
    ctx.join()
    assert ctx.coord.next_deadline_ms() == 50  # the initial delayed join
    ctx.sleep(50)
    assert ctx.coord.next_deadline_ms() == 550  # session and pending sync
    ctx.commit_response([PartitionOffset(topic="t", partition=0, offset=1)], group_id="other")
    assert ctx.coord.next_deadline_ms() == 550


def test_may_be_due_is_false_only_when_no_timer_is_due() -> None:
    ctx = Context()
    assert not ctx.coord.may_be_due(10**12)  # nothing armed
    leader_id, _ = ctx.stable_group_of_one()
    deadline = ctx.coord.next_deadline_ms()
    assert deadline is not None
    assert not ctx.coord.may_be_due(ctx.now) and ctx.coord.may_be_due(deadline)
    # A heartbeat pushes the session's deadline later without touching the timer heap: the
    # cheap check may then say "maybe" before the exact deadline, never "no" at or after it.
    ctx.sleep(100)
    assert ctx.heartbeat(leader_id, 1) == NONE
    later = ctx.coord.next_deadline_ms()
    assert later == deadline + 100
    assert not ctx.coord.may_be_due(ctx.now)
    assert ctx.coord.may_be_due(later) and ctx.coord.may_be_due(later + 1)
