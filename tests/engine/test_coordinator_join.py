"""JoinGroup scenarios, modelled on Kafka 3.7's GroupCoordinatorTest: request validation,
KIP-394 member ids, group.max.size, the protocol vote, the initial delayed join and its cap,
join completion (dynamic members that did not rejoin are dropped, static ones kept), leader
re-election and the new-member join timeout.

Times are the context's fake clock (TEST_CONFIG: initial rebalance delay 50 ms, session and
rebalance timeouts 500 ms, group.max.size 4). A timer fires when the clock reaches its deadline.
"""

from __future__ import annotations

import dataclasses

from coordinator_engine import (
    CoordinatorConfig,
    Errors,
    GroupState,
    JoinGroupMember,
    JoinGroupResponse,
    MemberIdentity,
    MemoryLog,
    partition_for,
)
from coordinator_engine.events import (
    GenerationStarted,
    MemberJoined,
    MemberRemoved,
    PendingMemberAdded,
    PendingMemberRemoved,
    StateChanged,
)
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
OTHER_GROUP = "otherGroup"  # GroupCoordinatorTest's group of another coordinator partition


def coordinator_owning_only_the_test_group() -> Context:
    assert partition_for(OTHER_GROUP) != partition_for(GROUP)
    return Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )


# -- validation ------------------------------------------------------------------------------


def test_join_with_an_empty_group_id_is_rejected_as_invalid() -> None:
    """Mirrors GroupCoordinatorTest.testInvalidGroupId."""
    ctx = Context()
    assert ctx.join(group_id="").response == JoinGroupResponse(error_code=Errors.INVALID_GROUP_ID)
    assert ctx.coord.group_ids() == []


def test_join_for_a_group_of_another_coordinator_partition_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupWrongCoordinator."""
    ctx = coordinator_owning_only_the_test_group()
    dynamic = ctx.join(group_id=OTHER_GROUP)
    static = ctx.join(group_id=OTHER_GROUP, instance_id="groupInstanceId")
    assert dynamic.response == JoinGroupResponse(error_code=Errors.NOT_COORDINATOR)
    assert static.response == JoinGroupResponse(error_code=Errors.NOT_COORDINATOR)
    assert ctx.coord.group(OTHER_GROUP) is None


def test_session_timeout_below_the_minimum_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupSessionTimeoutTooSmall."""
    ctx = Context()
    reply = ctx.join(session_timeout=TEST_CONFIG.group_min_session_timeout_ms - 1)
    assert reply.response == JoinGroupResponse(error_code=Errors.INVALID_SESSION_TIMEOUT)
    assert ctx.coord.group(GROUP) is None


def test_session_timeout_above_the_maximum_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupSessionTimeoutTooLarge."""
    ctx = Context()
    reply = ctx.join(session_timeout=TEST_CONFIG.group_max_session_timeout_ms + 1)
    assert reply.response == JoinGroupResponse(error_code=Errors.INVALID_SESSION_TIMEOUT)


def test_session_timeouts_at_both_bounds_are_accepted() -> None:
    ctx = Context()
    shortest = ctx.join(group_id="a", session_timeout=TEST_CONFIG.group_min_session_timeout_ms)
    longest = ctx.join(group_id="b", session_timeout=TEST_CONFIG.group_max_session_timeout_ms)
    ctx.sleep(50)
    assert shortest.response is not None and shortest.response.error_code == NONE
    assert longest.response is not None and longest.response.error_code == NONE


def test_known_member_id_for_a_group_that_does_not_exist_is_unknown() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupUnknownConsumerNewGroup."""
    ctx = Context()
    dynamic = ctx.join("memberId")
    static = ctx.join("memberId", instance_id="groupInstanceId")
    expected = JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID, member_id="memberId")
    assert dynamic.response == expected
    assert static.response == expected
    assert ctx.coord.group(GROUP) is None


def test_unknown_member_id_in_an_existing_group_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupUnknownConsumerExistingGroup."""
    ctx = Context()
    assert ctx.join_now().error_code == NONE
    assert ctx.join("memberId").response == JoinGroupResponse(
        error_code=Errors.UNKNOWN_MEMBER_ID, member_id="memberId"
    )


def test_empty_protocol_type_is_an_inconsistent_protocol() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupWithEmptyProtocolType."""
    ctx = Context()
    dynamic = ctx.join(protocol_type="")
    static = ctx.join(protocol_type="", instance_id="groupInstanceId")
    expected = JoinGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
    assert dynamic.response == expected
    assert static.response == expected
    # As in Kafka, the JoinGroup created the (still empty) group before it was refused.
    view = ctx.group()
    assert (view.state, view.generation_id, dict(view.members)) == (GroupState.EMPTY, 0, {})


def test_empty_protocol_list_is_an_inconsistent_protocol() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupWithEmptyGroupProtocol."""
    ctx = Context()
    assert ctx.join(protocols=()).response == JoinGroupResponse(
        error_code=Errors.INCONSISTENT_GROUP_PROTOCOL
    )


def test_joiner_with_another_protocol_type_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupInconsistentProtocolType."""
    ctx = Context()
    first = ctx.join_now()
    other = ctx.join(protocol_type="connect")
    assert other.response == JoinGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
    view = ctx.group()
    assert list(view.members) == [first.member_id]
    assert view.state is GroupState.COMPLETING_REBALANCE


def test_joiner_without_a_protocol_in_common_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupInconsistentGroupProtocol."""
    ctx = Context()
    first = ctx.join(protocols=(("range", b""),))
    other = ctx.join(protocols=(("roundrobin", b""),))
    assert other.response == JoinGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
    ctx.sleep(50)
    assert first.response is not None and first.response.error_code == NONE


def test_join_group_error_carries_no_protocol_type() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupProtocolTypeIsNotProvidedWhenAnErrorOccurs."""
    ctx = Context()
    reply = ctx.join("fake-id", instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    assert reply.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert reply.response.protocol_type is None
    assert reply.response.protocol_name is None


def test_join_group_success_carries_the_protocol_type() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupReturnsTheProtocolType."""
    ctx = Context()
    leader = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    follower = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.sleep(50)
    ctx.sleep(50)
    for reply in (leader, follower):
        assert reply.response is not None
        assert reply.response.error_code == NONE
        assert reply.response.protocol_type == "consumer"
        assert reply.response.protocol_name == "range"


# -- the first generation ----------------------------------------------------------------------


def test_first_member_becomes_the_leader_of_generation_one() -> None:
    """Mirrors GroupCoordinatorTest.testValidJoinGroup."""
    ctx = Context()
    reply = ctx.join()
    assert not reply.done
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(50)
    assert reply.response is not None
    member_id = reply.response.member_id
    assert member_id.startswith("client-")
    assert reply.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=member_id,
        member_id=member_id,
        members=(
            JoinGroupMember(member_id=member_id, group_instance_id=None, metadata=b"metadata"),
        ),
    )
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert (view.generation_id, view.protocol_type, view.protocol_name) == (1, "consumer", "range")
    assert view.leader_id == member_id
    assert list(view.members) == [member_id]
    assert view.members[member_id].session_timeout_ms == 500
    assert view.members[member_id].rebalance_timeout_ms == 500


def test_first_join_produces_member_joined_state_changes_and_generation_events() -> None:
    ctx = Context()
    reply = ctx.join(reason="starting up")
    ctx.sleep(50)
    assert reply.response is not None
    member_id = reply.response.member_id
    assert ctx.events == [
        MemberJoined(
            group_id=GROUP,
            at_ms=0,
            member_id=member_id,
            group_instance_id=None,
            client_id="client",
            client_host="/127.0.0.1",
            session_timeout_ms=500,
            rebalance_timeout_ms=500,
            protocols=["range"],
            rejoined=False,
            reason="starting up",
        ),
        StateChanged(
            group_id=GROUP,
            at_ms=0,
            from_state="Empty",
            to_state="PreparingRebalance",
            reason=f"Adding new member {member_id} with group instance id None"
            "; client reason: starting up",
            cause="member_joined",
            cause_member_id=member_id,
        ),
        StateChanged(
            group_id=GROUP,
            at_ms=50,
            from_state="PreparingRebalance",
            to_state="CompletingRebalance",
            reason="every member rejoined, or the rebalance timed out",
        ),
        GenerationStarted(
            group_id=GROUP,
            at_ms=50,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader_id=member_id,
            member_ids=[member_id],
            join_started_ms=0,
        ),
    ]
    # Nothing is written until the leader's SyncGroup stores the assignment.
    assert ctx.log.entries == []


def test_generation_increments_on_each_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.testGenerationIdIncrementsOnRebalance."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    assert generation == 1
    rejoined = ctx.join(member_id)
    assert rejoined.response is not None
    assert (rejoined.response.error_code, rejoined.response.generation_id) == (NONE, 2)


# -- KIP-394: member id required -----------------------------------------------------------------


def test_member_id_required_hands_out_a_pending_id_that_the_member_joins_with() -> None:
    ctx = Context()
    first = ctx.join(require_known_member_id=True)
    assert first.response is not None
    pending = first.response.member_id
    assert pending.startswith("client-")
    assert first.response == JoinGroupResponse(
        error_code=Errors.MEMBER_ID_REQUIRED, member_id=pending
    )
    view = ctx.group()
    assert (view.state, dict(view.members), view.pending_member_ids) == (
        GroupState.EMPTY,
        {},
        frozenset({pending}),
    )
    assert ctx.events == [PendingMemberAdded(group_id=GROUP, at_ms=0, member_id=pending)]

    second = ctx.join(pending, require_known_member_id=True)
    assert not second.done
    view = ctx.group()
    assert list(view.members) == [pending]
    assert view.pending_member_ids == frozenset()
    assert ctx.events_of(PendingMemberRemoved) == [
        PendingMemberRemoved(group_id=GROUP, at_ms=0, member_id=pending, reason="joined")
    ]
    ctx.sleep(50)
    assert second.response is not None
    assert (second.response.error_code, second.response.generation_id) == (NONE, 1)
    assert second.response.leader == second.response.member_id == pending


def test_pending_member_rejoining_with_an_inconsistent_protocol_is_refused_then_accepted() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupSecondJoinInconsistentProtocol."""
    ctx = Context()
    first = ctx.join(require_known_member_id=True)
    assert first.response is not None
    pending = first.response.member_id
    refused = ctx.join(pending, protocols=(), require_known_member_id=True)
    assert refused.response == JoinGroupResponse(
        error_code=Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=pending
    )
    assert ctx.group().pending_member_ids == frozenset({pending})
    accepted = ctx.join(pending, require_known_member_id=True)
    ctx.sleep(50)
    assert accepted.response is not None and accepted.response.error_code == NONE


def test_pending_member_that_never_rejoins_expires_and_the_group_stays_stable() -> None:
    """Mirrors GroupCoordinatorTest.testSecondMemberPartiallyJoinAndTimeout."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.sleep(100)
    partial = ctx.join(require_known_member_id=True)
    assert partial.response is not None
    assert partial.response.error_code == Errors.MEMBER_ID_REQUIRED
    pending = partial.response.member_id
    assert ctx.group().pending_member_ids == frozenset({pending})
    assert ctx.group().state is GroupState.STABLE

    ctx.sleep(300)
    assert ctx.heartbeat(member_id, generation) == NONE
    ctx.sleep(300)  # the pending member's session (500 ms from t=150) ran out at t=650
    view = ctx.group()
    assert (view.state, list(view.members), view.pending_member_ids) == (
        GroupState.STABLE,
        [member_id],
        frozenset(),
    )
    assert ctx.events_of(PendingMemberRemoved) == [
        PendingMemberRemoved(group_id=GROUP, at_ms=750, member_id=pending, reason="session_timeout")
    ]


def test_pending_member_that_rejoins_completes_the_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupCompletionWhenPendingMemberJoins."""
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.join(leader_id)
    partial = ctx.join(require_known_member_id=True, session_timeout=100)
    assert partial.response is not None
    pending = partial.response.member_id
    ctx.join(follower_id)
    # Every member rejoined, but a pending member holds the join phase open.
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    joined = ctx.join(pending)
    assert joined.response is not None
    assert (joined.response.error_code, joined.response.generation_id) == (NONE, 3)
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert list(view.members) == [leader_id, follower_id, pending]
    assert view.pending_member_ids == frozenset()


def test_pending_member_that_times_out_completes_the_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupCompletionWhenPendingMemberTimesOut."""
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    leader_join = ctx.join(leader_id)
    ctx.join(require_known_member_id=True, session_timeout=100)
    ctx.join(follower_id)
    ctx.sleep(120)
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert list(view.members) == [leader_id, follower_id]
    assert view.pending_member_ids == frozenset()
    assert leader_join.response is not None and leader_join.response.generation_id == 3


# -- the initial delayed join ----------------------------------------------------------------------


def test_first_rebalance_of_an_empty_group_waits_the_initial_delay() -> None:
    """Mirrors GroupCoordinatorTest.shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup."""  # noqa: E501
    ctx = Context()
    reply = ctx.join()
    ctx.sleep(25)
    ctx.sleep(24)
    assert not reply.done
    ctx.sleep(1)
    assert reply.response is not None and reply.response.error_code == NONE


def test_new_member_joining_during_the_initial_delay_extends_it() -> None:
    """Mirrors GroupCoordinatorTest.shouldResetRebalanceDelayWhenNewMemberJoinsGroupInInitialRebalance."""  # noqa: E501
    ctx = Context()
    first = ctx.join(rebalance_timeout=150)
    ctx.sleep(49)
    second = ctx.join(rebalance_timeout=150)
    ctx.sleep(1)  # t=50: the first delay ends, a new member came: wait another 50 ms
    ctx.sleep(49)
    assert not first.done and not second.done
    ctx.sleep(1)  # t=100
    for reply in (first, second):
        assert reply.response is not None
        assert (reply.response.error_code, reply.response.generation_id) == (NONE, 1)
    assert len(ctx.group().members) == 2


def test_initial_delay_extensions_are_capped_by_the_rebalance_timeout() -> None:
    """Mirrors GroupCoordinatorTest.shouldDelayRebalanceUptoRebalanceTimeout."""
    ctx = Context()
    first = ctx.join(rebalance_timeout=100)
    second = ctx.join(rebalance_timeout=100)
    ctx.sleep(50)  # extended by 50 ms, which uses up the 100 ms rebalance timeout
    ctx.sleep(10)
    third = ctx.join(rebalance_timeout=100)  # would extend again, but no time is left
    ctx.sleep(39)
    assert not (first.done or second.done or third.done)
    ctx.sleep(1)  # t=100
    for reply in (first, second, third):
        assert reply.response is not None
        assert (reply.response.error_code, reply.response.generation_id) == (NONE, 1)
    assert first.response is not None and len(first.response.members) == 3


def test_initial_delay_is_not_shortened_by_a_shorter_rebalance_timeout() -> None:
    ctx = Context()
    first = ctx.join(rebalance_timeout=20)
    ctx.sleep(10)
    second = ctx.join(rebalance_timeout=20)  # no time left to extend: no extension
    ctx.sleep(39)
    assert not first.done
    ctx.sleep(1)
    assert first.response is not None and second.response is not None
    assert first.response.generation_id == second.response.generation_id == 1


def test_join_phase_that_ends_with_no_members_leaves_an_empty_group_record() -> None:
    ctx = Context()
    partial = ctx.join(require_known_member_id=True)
    assert partial.response is not None
    member_id = partial.response.member_id
    parked = ctx.join(member_id, require_known_member_id=True)
    left = ctx.leave(MemberIdentity(member_id=member_id))
    assert left.members[0].error_code == NONE
    assert parked.response == JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
    # The initial delayed join never completes early: the group waits the delay out.
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(50)
    view = ctx.group()
    assert (view.state, view.generation_id, view.leader_id) == (GroupState.EMPTY, 1, None)
    assert ctx.records() == [
        (
            GroupMetadataKey(group=GROUP),
            GroupMetadataValue(
                protocol_type="consumer",
                generation=1,
                protocol=None,
                leader=None,
                current_state_timestamp=50,
                members=(),
            ),
        )
    ]
    assert ctx.events_of(GenerationStarted)[-1] == GenerationStarted(
        group_id=GROUP,
        at_ms=50,
        generation_id=1,
        protocol_type="consumer",
        protocol_name=None,
        leader_id=None,
        member_ids=[],
        join_started_ms=0,
    )


# -- rejoining -------------------------------------------------------------------------------------


def test_unchanged_follower_rejoining_while_completing_rebalance_gets_the_current_generation() -> (
    None
):
    """Mirrors GroupCoordinatorTest.testJoinGroupFromUnchangedFollowerDoesNotRebalance."""
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    leader = ctx.join(leader_id)
    assert leader.response is not None and other.response is not None
    assert leader.response.generation_id == other.response.generation_id == 2
    assert leader.response.leader == other.response.leader == leader_id
    follower_id = other.response.member_id

    again = ctx.join(follower_id)
    assert again.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=2,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader_id,
        member_id=follower_id,
    )
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_unchanged_leader_rejoining_while_completing_rebalance_gets_the_members_again() -> None:
    ctx = Context()
    joined = ctx.join_now()
    again = ctx.join(joined.member_id)
    assert again.response == joined
    assert ctx.group().generation_id == 1


def test_unchanged_follower_rejoining_a_stable_group_does_not_rebalance() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    events_before = len(ctx.events)
    again = ctx.join(follower_id)
    assert again.response == JoinGroupResponse(
        error_code=NONE,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        leader=leader_id,
        member_id=follower_id,
    )
    assert ctx.group().state is GroupState.STABLE
    assert ctx.events[events_before:] == []


def test_unchanged_leader_rejoining_a_stable_group_forces_a_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupFromUnchangedLeaderShouldRebalance."""
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.join(leader_id)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert ctx.heartbeat(follower_id, 2) == Errors.REBALANCE_IN_PROGRESS


def test_follower_rejoining_with_new_metadata_forces_a_rebalance() -> None:
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    follower = ctx.join(follower_id, protocols=(("range", b"new-topics"),))
    assert not follower.done
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    leader = ctx.join(leader_id)
    assert leader.response is not None and follower.response is not None
    assert follower.response.generation_id == 3
    assert leader.response.members == (
        JoinGroupMember(member_id=leader_id, group_instance_id=None, metadata=b"metadata"),
        JoinGroupMember(member_id=follower_id, group_instance_id=None, metadata=b"new-topics"),
    )
    rejoined = ctx.events_of(MemberJoined)[-2]
    assert (rejoined.member_id, rejoined.rejoined) == (follower_id, True)


def test_rejoin_with_new_metadata_while_completing_rebalance_cancels_parked_syncs() -> None:
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    ctx.join(leader_id)
    assert other.response is not None
    follower_id = other.response.member_id
    follower_sync = ctx.sync(follower_id, 2)
    assert not follower_sync.done
    leader = ctx.join(leader_id, protocols=(("range", b"changed"),))
    assert follower_sync.response is not None
    assert follower_sync.response.error_code == Errors.REBALANCE_IN_PROGRESS
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.join(follower_id)
    assert leader.response is not None and leader.response.generation_id == 3


def test_member_rejoining_while_parked_supersedes_its_earlier_join_group() -> None:
    """The engine answers the superseded JoinGroup (REBALANCE_IN_PROGRESS) where Kafka drops
    its callback: no reply is left unanswered."""
    ctx = Context()
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    first = ctx.join(leader_id)
    second = ctx.join(leader_id)
    assert first.response == JoinGroupResponse(
        error_code=Errors.REBALANCE_IN_PROGRESS, member_id=leader_id
    )
    assert not second.done
    ctx.join(follower_id)
    assert second.response is not None and second.response.generation_id == 3


# -- the protocol vote ---------------------------------------------------------------------------


def three_members_vote(*preferences: tuple[str, ...]) -> JoinGroupResponse:
    ctx = Context()
    replies = [
        ctx.join(protocols=tuple((name, f"{i}-{name}".encode()) for name in names))
        for i, names in enumerate(preferences)
    ]
    ctx.sleep(50)
    ctx.sleep(50)
    response = replies[0].response
    assert response is not None and response.error_code == NONE
    return response


def test_protocol_vote_picks_the_protocol_most_members_prefer() -> None:
    leader = three_members_vote(
        ("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin", "range")
    )
    assert leader.protocol_name == "roundrobin"
    assert [m.metadata for m in leader.members] == [
        b"0-roundrobin",
        b"1-roundrobin",
        b"2-roundrobin",
    ]


def test_protocol_vote_tie_goes_to_the_first_members_preference() -> None:
    """Kafka breaks a tie by hash-map order; the engine by the longest-standing member."""
    assert three_members_vote(("range", "roundrobin"), ("roundrobin", "range")).protocol_name == (
        "range"
    )
    assert three_members_vote(("roundrobin", "range"), ("range", "roundrobin")).protocol_name == (
        "roundrobin"
    )


def test_protocol_vote_only_counts_protocols_every_member_supports() -> None:
    leader = three_members_vote(("range", "roundrobin"), ("roundrobin",), ("sticky", "roundrobin"))
    assert leader.protocol_name == "roundrobin"


def test_repeated_protocol_name_in_one_join_group_keeps_its_first_metadata() -> None:
    ctx = Context()
    joined = ctx.join_now(protocols=(("range", b"first"), ("range", b"second")))
    assert [m.metadata for m in joined.members] == [b"first"]


# -- join completion: who stays, who leads ---------------------------------------------------------


def test_join_phase_end_drops_dynamic_members_that_did_not_rejoin() -> None:
    ctx = Context()
    leader_id, _ = ctx.stable_group_of_one()
    follower_join = ctx.join(session_timeout=1000)
    ctx.join(leader_id)
    assert follower_join.response is not None
    follower_id = follower_join.response.member_id
    ctx.sync(leader_id, 2, {leader_id: b"leader", follower_id: b"follower"})
    ctx.sync(follower_id, 2)

    leader = ctx.join(leader_id)  # t=50: the join phase lasts at most 500 ms
    ctx.sleep(499)
    assert not leader.done
    ctx.sleep(1)
    assert leader.response is not None
    assert leader.response.generation_id == 3
    assert [m.member_id for m in leader.response.members] == [leader_id]
    assert list(ctx.group().members) == [leader_id]
    assert ctx.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=550,
            member_id=follower_id,
            group_instance_id=None,
            reason="rebalance_timeout",
            detail=None,
        )
    ]


def test_join_phase_end_keeps_static_members_that_did_not_rejoin() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance(session_timeout=1000)
    newcomer = ctx.join(instance_id="newMember", protocols=PROTOCOL_SUPERSET)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    leader = ctx.join(result.leader_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    ctx.sleep(500)
    assert leader.response is not None and newcomer.response is not None
    assert leader.response.generation_id == 2
    assert leader.response.leader == leader.response.member_id == result.leader_id
    assert [m.group_instance_id for m in leader.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
        "newMember",
    ]
    assert newcomer.response.error_code == NONE
    assert (newcomer.response.leader, newcomer.response.members) == (result.leader_id, ())
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.events_of(MemberRemoved) == []


def test_leader_that_did_not_rejoin_hands_over_to_the_first_member_that_did() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout;
    Kafka picks any rejoined member, the engine the first one in member order."""
    ctx = Context()
    result = ctx.static_members_join_and_rebalance(session_timeout=1000)
    newcomer = ctx.join(instance_id="newMember", protocols=PROTOCOL_SUPERSET)
    ctx.sleep(1)
    follower = ctx.join(
        result.follower_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET
    )
    ctx.sleep(500)
    assert follower.response is not None and newcomer.response is not None
    assert follower.response.leader == follower.response.member_id == result.follower_id
    assert [m.group_instance_id for m in follower.response.members] == [
        LEADER_INSTANCE,
        FOLLOWER_INSTANCE,
        "newMember",
    ]
    assert (newcomer.response.leader, newcomer.response.members) == (result.follower_id, ())
    assert ctx.group().leader_id == result.follower_id


def stuck_with_a_static_member_that_does_not_rejoin(ctx: Context) -> str:
    """GroupCoordinatorTest.groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember: returns
    the static leader's member id; the group waits in PreparingRebalance (t=1100)."""
    result = ctx.static_members_join_and_rebalance(session_timeout=1000)
    dynamic = ctx.join(protocols=PROTOCOL_SUPERSET, session_timeout=1000)
    ctx.sleep(500)
    assert dynamic.response is not None
    # Neither static member rejoined: the new dynamic member is elected leader.
    assert dynamic.response.leader == dynamic.response.member_id
    assert (dynamic.response.generation_id, len(dynamic.response.members)) == (2, 3)
    view = ctx.group()
    assert view.state is GroupState.COMPLETING_REBALANCE
    assert list(view.members) == [result.leader_id, result.follower_id, dynamic.response.member_id]

    left = ctx.leave(MemberIdentity(member_id=result.follower_id))
    assert left.members[0].error_code == NONE
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(500)
    # The dynamic member did not rejoin and is dropped; the static leader is kept although
    # it did not rejoin either, so nobody can lead: wait for another rebalance timeout.
    view = ctx.group()
    assert (view.state, view.generation_id) == (GroupState.PREPARING_REBALANCE, 2)
    assert list(view.members) == [result.leader_id]
    return result.leader_id


def test_rebalance_with_only_a_non_rejoined_static_member_waits_until_its_session_ends() -> None:
    """Mirrors GroupCoordinatorTest.testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout."""  # noqa: E501
    ctx = Context()
    stuck_with_a_static_member_that_does_not_rejoin(ctx)
    ctx.sleep(501)
    view = ctx.group()
    assert (view.state, view.generation_id, view.leader_id) == (GroupState.EMPTY, 3, None)
    assert dict(view.members) == {}


def test_static_leader_rejoining_a_stuck_rebalance_completes_it() -> None:
    """Mirrors GroupCoordinatorTest.testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout."""  # noqa: E501
    ctx = Context()
    old_leader_id = stuck_with_a_static_member_that_does_not_rejoin(ctx)
    rejoined = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert rejoined.response is not None
    new_id = rejoined.response.member_id
    assert new_id != old_leader_id
    assert rejoined.response.generation_id == 3
    assert rejoined.response.members == (
        JoinGroupMember(member_id=new_id, group_instance_id=LEADER_INSTANCE, metadata=b"metadata"),
    )
    view = ctx.group()
    assert (view.state, list(view.members), view.leader_id) == (
        GroupState.COMPLETING_REBALANCE,
        [new_id],
        new_id,
    )


# -- new members -----------------------------------------------------------------------------------


def test_new_member_parked_past_the_new_member_join_timeout_is_removed() -> None:
    """Mirrors GroupCoordinatorTest.testNewMemberJoinExpiration."""
    ctx = Context()
    session, rebalance = 305_000, 600_000
    first = ctx.join_now(session_timeout=session, rebalance_timeout=rebalance)
    newcomer = ctx.join(session_timeout=session, rebalance_timeout=rebalance)
    assert not newcomer.done
    view = ctx.group()
    assert len(view.members) == 2
    new_id = next(m for m in view.members if m != first.member_id)

    ctx.sleep(300_000)
    assert newcomer.response == JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
    assert list(ctx.group().members) == [first.member_id]
    assert ctx.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=300_050,
            member_id=new_id,
            group_instance_id=None,
            reason="join_timeout",
            detail=None,
        )
    ]


def test_new_member_join_timeout_ends_with_the_join_phase() -> None:
    """Mirrors GroupCoordinatorTest.testNewMemberTimeoutCompletion."""
    ctx = Context()
    session = 305_000
    member_id, _ = ctx.stable_group_of_one(session_timeout=session)
    ctx.sleep(300_000 + 100)
    assert list(ctx.group().members) == [member_id]
    ctx.sleep(session + 100)
    assert dict(ctx.group().members) == {}
    assert ctx.events_of(MemberRemoved)[0].reason == "session_timeout"


def test_new_member_follows_session_expiry_once_the_join_phase_completed() -> None:
    """Mirrors GroupCoordinatorTest.testNewMemberFailureAfterJoinGroupCompletion."""
    ctx = Context()
    first_id, _ = ctx.stable_group_of_one()
    other = ctx.join()
    first = ctx.join(first_id)
    assert first.response is not None and other.response is not None
    assert first.response.error_code == other.response.error_code == NONE
    ctx.sleep(501)
    view = ctx.group()
    assert (view.state, dict(view.members)) == (GroupState.EMPTY, {})


def test_new_member_follows_session_expiry_once_synced() -> None:
    """Mirrors GroupCoordinatorTest.testNewMemberFailureAfterSyncGroupCompletion."""
    ctx = Context()
    ctx.stable_group_of_two()
    ctx.sleep(501)
    view = ctx.group()
    assert (view.state, dict(view.members)) == (GroupState.EMPTY, {})
    assert [e.reason for e in ctx.events_of(MemberRemoved)] == ["session_timeout"] * 2


# -- group.max.size --------------------------------------------------------------------------------


def test_new_member_of_a_full_group_gets_group_max_size_reached() -> None:
    """Mirrors GroupCoordinatorTest.testJoinGroupShouldReceiveErrorIfGroupOverMaxSize."""
    ctx = Context()
    replies = [ctx.join(rebalance_timeout=100) for _ in range(4)]
    ctx.sleep(50)
    ctx.sleep(50)
    assert [r.response.error_code for r in replies if r.response] == [NONE] * 4
    extra = ctx.join(rebalance_timeout=100)
    assert extra.response == JoinGroupResponse(error_code=Errors.GROUP_MAX_SIZE_REACHED)
    assert len(ctx.group().members) == 4


def test_dynamic_members_over_max_size_with_required_member_id_are_refused() -> None:
    """Mirrors GroupCoordinatorTest.testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember."""
    ctx = Context()
    ids = []
    for _ in range(5):
        response = ctx.join(require_known_member_id=True).response
        assert response is not None
        ids.append(response.member_id)
    replies = [ctx.join(m, require_known_member_id=True) for m in ids]
    assert replies[4].response == JoinGroupResponse(error_code=Errors.GROUP_MAX_SIZE_REACHED)
    assert ctx.events_of(PendingMemberRemoved)[-1] == PendingMemberRemoved(
        group_id=GROUP, at_ms=0, member_id=ids[4], reason="group_max_size"
    )
    assert ctx.group().pending_member_ids == frozenset()
    ctx.sleep(50)
    ctx.sleep(50)
    errors = [r.response.error_code for r in replies if r.response]
    assert errors == [NONE] * 4 + [Errors.GROUP_MAX_SIZE_REACHED]

    rejoins = [ctx.join(m, require_known_member_id=True) for m in ids]
    assert [r.response.error_code for r in rejoins if r.response] == errors


def test_dynamic_members_over_max_size_are_refused() -> None:
    """Mirrors GroupCoordinatorTest.testDynamicMembersJoinGroupWithMaxSize."""
    ctx = Context()
    replies = [ctx.join() for _ in range(5)]
    ctx.sleep(50)
    ctx.sleep(50)
    responses = [r.response for r in replies if r.response]
    errors = [r.error_code for r in responses]
    assert errors == [NONE] * 4 + [Errors.GROUP_MAX_SIZE_REACHED]
    rejoins = [ctx.join(r.member_id) for r in responses]
    assert [r.response.error_code for r in rejoins if r.response] == errors


def test_static_members_over_max_size_are_refused() -> None:
    """Mirrors GroupCoordinatorTest.testStaticMembersJoinGroupWithMaxSize."""
    ctx = Context()
    instances = [f"instance-id-{i}" for i in range(1, 6)]
    replies = [ctx.join(instance_id=i) for i in instances]
    ctx.sleep(50)
    ctx.sleep(50)
    responses = [r.response for r in replies if r.response]
    errors = [r.error_code for r in responses]
    assert errors == [NONE] * 4 + [Errors.GROUP_MAX_SIZE_REACHED]
    rejoins = [
        ctx.join(r.member_id, instance_id=i) for r, i in zip(responses, instances, strict=True)
    ]
    assert [r.response.error_code for r in rejoins if r.response] == errors


def test_members_already_awaiting_join_can_rejoin_a_full_rebalance() -> None:
    """Mirrors GroupCoordinatorTest.testDynamicMembersCanReJoinGroupWithMaxSizeWhileRebalancing."""
    ctx = Context()
    ids = []
    for _ in range(5):
        response = ctx.join(require_known_member_id=True).response
        assert response is not None
        ids.append(response.member_id)
    first_round = [ctx.join(m, require_known_member_id=True) for m in ids]
    second_round = [ctx.join(m, require_known_member_id=True) for m in ids]
    # The second JoinGroup of a parked member supersedes its first.
    assert [r.response.error_code for r in first_round if r.response] == [
        Errors.REBALANCE_IN_PROGRESS
    ] * 4 + [Errors.GROUP_MAX_SIZE_REACHED]
    ctx.sleep(50)
    ctx.sleep(50)
    assert [r.response.error_code for r in second_round if r.response] == [NONE] * 4 + [
        Errors.GROUP_MAX_SIZE_REACHED
    ]


def test_last_members_to_rejoin_an_over_capacity_group_are_removed() -> None:
    """Mirrors GroupCoordinatorTest.testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize:
    the group was built under a larger group.max.size; the coordinator that loads it with the
    smaller one rebalances it and keeps the first members to rejoin."""
    roomy = Context(dataclasses.replace(TEST_CONFIG, group_max_size=10))
    joined = roomy.join_with_n_members(6)
    ids = [j.member_id for j in joined]
    synced = roomy.sync(ids[0], 1, {m: m.encode() for m in ids})
    assert synced.response is not None and synced.response.error_code == NONE

    ctx = Context(TEST_CONFIG, MemoryLog(list(roomy.log.entries)), roomy.now)
    view = ctx.group()
    assert (view.state, len(view.members)) == (GroupState.PREPARING_REBALANCE, 6)
    replies = [ctx.join(m) for m in ids]
    assert [r.response.error_code for r in replies if r.response] == [NONE] * 4 + [
        Errors.GROUP_MAX_SIZE_REACHED
    ] * 2
    assert list(ctx.group().members) == ids[:4]
    assert ctx.group().generation_id == 2
    assert [(e.member_id, e.reason) for e in ctx.events_of(MemberRemoved)] == [
        (ids[4], "group_max_size"),
        (ids[5], "group_max_size"),
    ]


def test_group_max_size_of_one_admits_a_single_member() -> None:
    ctx = Context(CoordinatorConfig(group_initial_rebalance_delay_ms=0, group_max_size=1))
    first = ctx.join(session_timeout=6000)
    second = ctx.join(session_timeout=6000)
    assert second.response == JoinGroupResponse(error_code=Errors.GROUP_MAX_SIZE_REACHED)
    ctx.sleep(0)
    assert first.response is not None and first.response.error_code == NONE
