"""DescribeGroups, ListGroups and DeleteGroups, modelled on Kafka 3.7's GroupCoordinatorTest,
plus the group-id checks every API shares: NOT_COORDINATOR for a group of a coordinator
partition this coordinator does not own (`CoordinatorConfig.owned_partitions`, partitions by
`partition_for`), and INVALID_GROUP_ID for the empty group id on the group-management APIs
only (Kafka accepts it for OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from coordinator_engine import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    Errors,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListedGroup,
    ListGroupsResponse,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
    partition_for,
)
from coordinator_engine.events import GroupRemoved, OffsetsRemoved, StateChanged
from coordinator_engine.records import GroupMetadataKey, OffsetCommitKey
from tests.engine.harness import (
    GROUP,
    LEADER_INSTANCE,
    TEST_CONFIG,
    Context,
    FlakyLog,
)

NONE = Errors.NONE
OTHER_GROUP = "otherGroup"
ALL_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")


def owning_only(*group_ids: str) -> Context:
    return Context(
        dataclasses.replace(
            TEST_CONFIG, owned_partitions=frozenset(partition_for(g) for g in group_ids)
        )
    )


def dead(group_id: str = GROUP) -> DescribedGroup:
    return DescribedGroup(
        error_code=NONE, group_id=group_id, group_state="Dead", protocol_type="", protocol_data=""
    )


# -- DescribeGroups -------------------------------------------------------------------------------


def test_describe_of_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testDescribeGroupWrongCoordinator."""
    ctx = owning_only(GROUP)
    assert ctx.describe(OTHER_GROUP) == DescribeGroupsResponse(
        groups=(
            DescribedGroup(
                error_code=Errors.NOT_COORDINATOR,
                group_id=OTHER_GROUP,
                group_state="",
                protocol_type="",
                protocol_data="",
            ),
        )
    )


def test_describe_of_an_unknown_group_shows_it_dead() -> None:
    """Mirrors GroupCoordinatorTest.testDescribeGroupInactiveGroup."""
    assert Context().describe(GROUP) == DescribeGroupsResponse(groups=(dead(),))


def test_describe_of_a_stable_group_shows_members_with_metadata_and_assignment() -> None:
    """Mirrors GroupCoordinatorTest.testDescribeGroupStableForDynamicMember."""
    ctx = Context()
    member_id, _ = ctx.stable_group_of_one()
    assert ctx.describe(GROUP) == DescribeGroupsResponse(
        groups=(
            DescribedGroup(
                error_code=NONE,
                group_id=GROUP,
                group_state="Stable",
                protocol_type="consumer",
                protocol_data="range",
                members=(
                    DescribedMember(
                        member_id=member_id,
                        group_instance_id=None,
                        client_id="client",
                        client_host="/127.0.0.1",
                        member_metadata=b"metadata",
                        member_assignment=b"assignment",
                    ),
                ),
            ),
        )
    )


def test_describe_of_a_stable_group_shows_static_members_instance_ids() -> None:
    """Mirrors GroupCoordinatorTest.testDescribeGroupStableForStaticMember."""
    ctx = Context()
    joined = ctx.join_now(instance_id=LEADER_INSTANCE)
    ctx.sync(joined.member_id, 1, {joined.member_id: b""})
    described = ctx.describe(GROUP).groups[0]
    assert (described.protocol_type, described.protocol_data) == ("consumer", "range")
    assert [(m.member_id, m.group_instance_id) for m in described.members] == [
        (joined.member_id, LEADER_INSTANCE)
    ]


def test_describe_of_a_rebalancing_group_hides_protocol_metadata_and_assignments() -> None:
    """Mirrors GroupCoordinatorTest.testDescribeGroupRebalancing."""
    ctx = Context()
    joined = ctx.join_now()
    described = ctx.describe(GROUP).groups[0]
    assert described == DescribedGroup(
        error_code=NONE,
        group_id=GROUP,
        group_state="CompletingRebalance",
        protocol_type="consumer",
        protocol_data="",
        members=(
            DescribedMember(
                member_id=joined.member_id,
                group_instance_id=None,
                client_id="client",
                client_host="/127.0.0.1",
                member_metadata=b"",
                member_assignment=b"",
            ),
        ),
    )


def test_describe_answers_every_group_in_request_order() -> None:
    ctx = owning_only(GROUP, "a")
    assert partition_for("") == 0 and partition_for("a") == 47
    ctx.commit({("t", 0): 1}, group_id="a")
    response = ctx.describe(OTHER_GROUP, "a", GROUP, "")
    assert [(g.group_id, g.error_code, g.group_state) for g in response.groups] == [
        (OTHER_GROUP, Errors.NOT_COORDINATOR, ""),
        ("a", NONE, "Empty"),
        (GROUP, NONE, "Dead"),
        ("", Errors.NOT_COORDINATOR, ""),
    ]


def test_describe_and_delete_accept_the_empty_group_id() -> None:
    ctx = Context()
    assert ctx.describe("").groups == (dead(""),)
    assert ctx.delete_groups("").results == (
        DeleteGroupResult(group_id="", error_code=Errors.GROUP_ID_NOT_FOUND),
    )


# -- ListGroups -----------------------------------------------------------------------------------


def test_list_groups_includes_stable_groups() -> None:
    """Mirrors GroupCoordinatorTest.testListGroupsIncludesStableGroups."""
    ctx = Context()
    ctx.stable_group_of_one()
    assert ctx.list_groups() == ListGroupsResponse(
        error_code=NONE,
        groups=(ListedGroup(group_id=GROUP, protocol_type="consumer", group_state="Stable"),),
    )


def test_list_groups_includes_rebalancing_groups() -> None:
    """Mirrors GroupCoordinatorTest.testListGroupsIncludesRebalancingGroups."""
    ctx = Context()
    ctx.join_now()
    assert ctx.list_groups().groups == (
        ListedGroup(group_id=GROUP, protocol_type="consumer", group_state="CompletingRebalance"),
    )


def test_list_groups_filters_by_state() -> None:
    """Mirrors GroupCoordinatorTest.testListGroupsWithStates."""
    ctx = Context()

    def listed(state: str) -> tuple[int, int]:
        others = tuple(s for s in ALL_STATES if s != state)
        return len(ctx.list_groups(state).groups), len(ctx.list_groups(*others).groups)

    joined = ctx.join_now()
    assert listed("CompletingRebalance") == (1, 0)
    ctx.sync(joined.member_id, joined.generation_id, {})
    assert listed("Stable") == (1, 0)
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    assert listed("Empty") == (1, 0)


def test_list_groups_compares_the_states_filter_without_regard_to_case() -> None:
    """KIP-518: Kafka lower-cases the filter and each group's state (`isInStates`), so the
    admin tool's `--state stable` finds Stable groups."""
    ctx = Context()
    ctx.stable_group_of_one()
    for spelling in ("stable", "STABLE", "sTaBlE", "Stable"):
        assert ctx.list_groups(spelling).groups == (
            ListedGroup(group_id=GROUP, protocol_type="consumer", group_state="Stable"),
        ), spelling
    assert ctx.list_groups("empty", "preparingrebalance").groups == ()


def test_list_groups_lists_every_group_sorted_including_groups_used_only_for_offsets() -> None:
    ctx = Context()
    ctx.commit({("t", 0): 1}, group_id="zeta")
    ctx.join(group_id="alpha")
    ctx.stable_group_of_one()
    assert ctx.list_groups() == ListGroupsResponse(
        error_code=NONE,
        groups=(
            ListedGroup(
                group_id="alpha", protocol_type="consumer", group_state="CompletingRebalance"
            ),
            ListedGroup(group_id=GROUP, protocol_type="consumer", group_state="Stable"),
            ListedGroup(group_id="zeta", protocol_type="", group_state="Empty"),
        ),
    )
    assert [g.group_id for g in ctx.list_groups("Empty", "Stable").groups] == [GROUP, "zeta"]


# -- DeleteGroups ---------------------------------------------------------------------------------


def test_delete_of_a_group_with_members_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteNonEmptyGroup."""
    ctx = Context()
    ctx.join_now()
    assert ctx.delete_groups(GROUP) == DeleteGroupsResponse(
        results=(DeleteGroupResult(group_id=GROUP, error_code=Errors.NON_EMPTY_GROUP),)
    )
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE


def test_delete_of_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteGroupWithWrongCoordinator."""
    ctx = owning_only(GROUP)
    assert ctx.delete_groups(OTHER_GROUP).results == (
        DeleteGroupResult(group_id=OTHER_GROUP, error_code=Errors.NOT_COORDINATOR),
    )


def test_delete_of_an_unknown_group_is_group_id_not_found() -> None:
    assert Context().delete_groups(GROUP).results == (
        DeleteGroupResult(group_id=GROUP, error_code=Errors.GROUP_ID_NOT_FOUND),
    )


def test_delete_of_an_empty_group_tombstones_it() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteEmptyGroup."""
    ctx = Context()
    joined = ctx.join_now()
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    mark, events_before = len(ctx.log.entries), len(ctx.events)
    assert ctx.delete_groups(GROUP).results == (DeleteGroupResult(group_id=GROUP, error_code=NONE),)
    assert ctx.coord.group(GROUP) is None
    assert ctx.records(mark) == [(GroupMetadataKey(group=GROUP), None)]
    assert ctx.events[events_before:] == [
        StateChanged(
            group_id=GROUP, at_ms=50, from_state="Empty", to_state="Dead", reason="deleted"
        ),
        GroupRemoved(group_id=GROUP, at_ms=50, reason="deleted", generation_id=2, tombstoned=True),
    ]


def test_delete_of_an_empty_group_with_offsets_tombstones_them_too() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteEmptyGroupWithStoredOffsets."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("topic", 0): 0}, member_id=member_id, generation_id=generation)
    described = ctx.describe(GROUP).groups[0]
    assert (described.group_state, described.members[0].member_id) == ("Stable", member_id)
    ctx.leave(MemberIdentity(member_id=member_id))
    mark = len(ctx.log.entries)
    assert ctx.delete_groups(GROUP).results == (DeleteGroupResult(group_id=GROUP, error_code=NONE),)
    assert ctx.describe(GROUP).groups == (dead(),)
    assert ctx.records(mark) == [
        (OffsetCommitKey(group=GROUP, topic="topic", partition=0), None),
        (GroupMetadataKey(group=GROUP), None),
    ]
    assert ctx.events_of(OffsetsRemoved)[-1] == OffsetsRemoved(
        group_id=GROUP, at_ms=50, reason="group_deleted", partitions=[["topic", 0]]
    )
    assert ctx.fetch() == {}


def test_delete_of_a_group_used_only_for_offsets_writes_no_group_tombstone() -> None:
    ctx = Context()
    ctx.commit({("topic", 0): 0, ("topic", 1): 0})
    assert ctx.delete_groups(GROUP).results == (DeleteGroupResult(group_id=GROUP, error_code=NONE),)
    assert ctx.records(2) == [
        (OffsetCommitKey(group=GROUP, topic="topic", partition=0), None),
        (OffsetCommitKey(group=GROUP, topic="topic", partition=1), None),
    ]
    assert ctx.events_of(GroupRemoved)[-1].tombstoned is False


def test_delete_answers_each_group_once_in_request_order() -> None:
    ctx = owning_only(GROUP, "empty", "busy", "missing")
    ctx.commit({("t", 0): 1}, group_id="empty")
    ctx.join(group_id="busy")
    response = ctx.delete_groups("missing", "empty", "busy", OTHER_GROUP, "empty")
    assert response.results == (
        DeleteGroupResult(group_id="missing", error_code=Errors.GROUP_ID_NOT_FOUND),
        DeleteGroupResult(group_id="empty", error_code=NONE),
        DeleteGroupResult(group_id="busy", error_code=Errors.NON_EMPTY_GROUP),
        DeleteGroupResult(group_id=OTHER_GROUP, error_code=Errors.NOT_COORDINATOR),
    )
    assert ctx.coord.group_ids() == ["busy"]


def test_delete_that_cannot_write_its_tombstones_keeps_the_group() -> None:
    log = FlakyLog()
    ctx = Context(log=log)
    ctx.commit({("topic", 0): 0})
    log.failing = True
    assert ctx.delete_groups(GROUP).results == (
        DeleteGroupResult(group_id=GROUP, error_code=Errors.COORDINATOR_NOT_AVAILABLE),
    )
    assert ctx.fetch() == {("topic", 0): 0}
    assert ctx.events_of(GroupRemoved) == []


# -- group id checks shared by every API ----------------------------------------------------------


def every_request(group_id: str) -> dict[str, Any]:
    return {
        "JoinGroup": JoinGroupRequest(
            group_id=group_id,
            session_timeout_ms=500,
            rebalance_timeout_ms=500,
            protocol_type="consumer",
            protocols=(Protocol(name="range"),),
        ),
        "SyncGroup": SyncGroupRequest(group_id=group_id, generation_id=1, member_id="m"),
        "Heartbeat": HeartbeatRequest(group_id=group_id, generation_id=1, member_id="m"),
        "LeaveGroup": LeaveGroupRequest(
            group_id=group_id, members=(MemberIdentity(member_id="m"),)
        ),
        "OffsetCommit": OffsetCommitRequest(
            group_id=group_id, offsets=(PartitionOffset(topic="t", partition=0, offset=1),)
        ),
        "OffsetFetch": OffsetFetchRequest(group_id=group_id),
        "OffsetDelete": OffsetDeleteRequest(
            group_id=group_id, partitions=(TopicPartition(topic="t", partition=0),)
        ),
    }


def error_of(response: Any) -> int:
    """The group-level error of any response (per-partition for OffsetCommit)."""
    if hasattr(response, "error_code"):
        return int(response.error_code)
    codes = {p.error_code for p in response.partitions}
    assert len(codes) == 1
    return int(codes.pop())


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        ("JoinGroup", Errors.INVALID_GROUP_ID),
        ("SyncGroup", Errors.INVALID_GROUP_ID),
        ("Heartbeat", Errors.INVALID_GROUP_ID),
        ("LeaveGroup", Errors.INVALID_GROUP_ID),
        ("OffsetDelete", Errors.INVALID_GROUP_ID),
        ("OffsetCommit", NONE),
        ("OffsetFetch", NONE),
    ],
)
def test_empty_group_id_is_invalid_only_for_group_management_apis(api: str, expected: int) -> None:
    """Kafka's `isValidGroupId`: the empty group id stays usable for offsets, DescribeGroups
    and DeleteGroups (see testCommitAndFetchOffsetsWithEmptyGroup)."""
    ctx = Context()
    reply = ctx.coord.handle(every_request("")[api], ctx.now)
    assert reply.response is not None
    assert error_of(reply.response) == expected


@pytest.mark.parametrize(
    "api",
    [
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "OffsetDelete",
    ],
)
def test_every_group_api_refuses_a_group_of_another_coordinator_partition(api: str) -> None:
    ctx = owning_only(GROUP)
    reply = ctx.coord.handle(every_request(OTHER_GROUP)[api], ctx.now)
    assert reply.response is not None
    assert error_of(reply.response) == Errors.NOT_COORDINATOR
    assert ctx.coord.group_ids() == []


def test_coordinator_owning_several_partitions_serves_exactly_their_groups() -> None:
    ctx = owning_only(GROUP, "my-group")
    assert partition_for("my-group") == 12 and partition_for(GROUP) == 18
    assert ctx.commit({("t", 0): 1}, group_id="my-group") == {("t", 0): NONE}
    assert ctx.commit({("t", 0): 1}, group_id=GROUP) == {("t", 0): NONE}
    assert partition_for("polygenelubricants") == 0
    assert ctx.commit({("t", 0): 1}, group_id="polygenelubricants") == {
        ("t", 0): Errors.NOT_COORDINATOR
    }
    assert ctx.coord.group_ids() == [GROUP, "my-group"]


# ---------------------------------------------------------------- trigger_rebalance


def test_trigger_rebalance_moves_a_stable_group_to_preparing_and_members_learn_by_heartbeat() -> (
    None
):
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    assert ctx.coord.trigger_rebalance(GROUP, ctx.now) == Errors.NONE
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    change = ctx.events_of(StateChanged)[-1]
    assert (change.from_state, change.to_state) == ("Stable", "PreparingRebalance")
    assert change.reason == "an admin requested a rebalance"
    assert ctx.heartbeat(member_id, generation) == Errors.REBALANCE_IN_PROGRESS
    # A second request while the first is being prepared changes nothing.
    assert ctx.coord.trigger_rebalance(GROUP, ctx.now) == Errors.REBALANCE_IN_PROGRESS
    rejoined = ctx.join_now(member_id)
    assert rejoined.generation_id == generation + 1


def test_trigger_rebalance_refuses_unknown_empty_and_foreign_groups() -> None:
    ctx = Context()
    assert ctx.coord.trigger_rebalance("nobody", ctx.now) == Errors.GROUP_ID_NOT_FOUND
    member_id, _ = ctx.stable_group_of_one()
    ctx.leave(MemberIdentity(member_id=member_id))
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.coord.trigger_rebalance(GROUP, ctx.now) == Errors.GROUP_ID_NOT_FOUND
    owner = partition_for(GROUP)
    config = dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({(owner + 1) % 50}))
    assert Context(config).coord.trigger_rebalance(GROUP, 0) == Errors.NOT_COORDINATOR
