"""Consumer groups beside the other kinds: offsets through the shared offsets manager (member
epochs), ConsumerGroupDescribe, DescribeGroups, ListGroups with types, DeleteGroups, expiry, a
classic request to a consumer group's id and the reverse, a refused log append, replay,
events and the docs' transition table."""

from __future__ import annotations

import json

import pytest

from coordinator_engine import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupState,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Errors,
    GroupView,
    HandoffHeartbeatRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    MemoryLog,
    OffsetCommitRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    TopicPartition,
)
from coordinator_engine.events import (
    CONSUMER_EVENT_SCHEMAS,
    CONSUMER_EVENT_TYPES,
    ConsumerGroupEpochBumped,
    ConsumerMemberStateChanged,
    ConsumerPartitionsAssigned,
    ConsumerPartitionsRevoked,
    ConsumerTargetAssignmentComputed,
    GroupRemoved,
    MemberRemoved,
    event_from_json,
)

from .consumer_harness import GROUP, ConsumerContext, decode, owned
from .harness import FlakyLog


def commit(
    ctx: ConsumerContext,
    member_id: str,
    epoch: int,
    group_id: str = GROUP,
    api_version: int | None = None,
) -> int:
    reply = ctx.coord.handle(
        OffsetCommitRequest(
            group_id=group_id,
            generation_id=epoch,
            member_id=member_id,
            offsets=(PartitionOffset(topic="foo", partition=0, offset=42),),
            api_version=api_version,
        ),
        ctx.now,
    )
    assert reply.response is not None
    return reply.response.partitions[0].error_code


def fetch(ctx: ConsumerContext, member_id: str | None, epoch: int) -> tuple[int, int]:
    reply = ctx.coord.handle(
        OffsetFetchRequest(
            group_id=GROUP,
            partitions=(TopicPartition(topic="foo", partition=0),),
            member_id=member_id,
            member_epoch=epoch,
        ),
        ctx.now,
    )
    response = reply.response
    assert response is not None
    offset = response.partitions[0].offset if response.partitions else -1
    return response.error_code, offset


# ------------------------------------------------------------------ offsets


def test_a_member_commits_and_fetches_in_its_epoch() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    assert commit(ctx, "m1", 1) == Errors.NONE
    assert fetch(ctx, "m1", 1) == (Errors.NONE, 42)
    assert commit(ctx, "m1", 0) == Errors.STALE_MEMBER_EPOCH
    assert commit(ctx, "m1", 2) == Errors.STALE_MEMBER_EPOCH
    assert fetch(ctx, "m1", 7)[0] == Errors.STALE_MEMBER_EPOCH


def test_a_member_commits_with_offset_commit_v9_or_later_as_kafka_requires() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    assert commit(ctx, "m1", 1, api_version=9) == Errors.NONE
    assert commit(ctx, "m1", 1, api_version=8) == Errors.UNSUPPORTED_VERSION
    # A commit without a member into a group without members is no member's: any version.
    ctx.coord.handle(
        ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id="m1", member_epoch=-1), ctx.now
    )
    assert commit(ctx, "", -1, api_version=2) == Errors.NONE
    assert commit(ctx, "ghost", 1) == Errors.UNKNOWN_MEMBER_ID
    assert fetch(ctx, "ghost", 1)[0] == Errors.UNKNOWN_MEMBER_ID


def test_offset_fetch_with_a_null_member_and_epoch_minus_one_is_allowed() -> None:
    """librdkafka's OffsetFetch v9 carries no member; admin tools neither."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    commit(ctx, "m1", 1)
    assert fetch(ctx, None, -1) == (Errors.NONE, 42)


def test_a_commit_without_member_epoch_needs_a_group_without_members() -> None:
    """ConsumerGroup.validateOffsetCommit: epoch -1 only into a group with no members."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    assert commit(ctx, "", -1) == Errors.UNKNOWN_MEMBER_ID
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    assert commit(ctx, "", -1) == Errors.NONE


def test_an_abandoned_consumer_group_expires_with_its_offsets() -> None:
    """Offsets expire after offsets.retention.ms from their commit once nobody subscribes to
    their topic; the Empty group without offsets is then tombstoned (Kafka's order)."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    commit(ctx, "m1", 1)
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    retention = ctx.config.offsets_retention_ms
    ctx.now += retention - 1
    assert ctx.coord.cleanup(ctx.now).groups_removed == 0
    ctx.now += 1
    mark = ctx.mark()
    result = ctx.coord.cleanup(ctx.now)
    assert (result.offsets_removed, result.groups_removed) == (1, 1)
    kinds = [type(k).__name__ for k, v in ctx.records_since(mark) if v is None]
    assert kinds == [
        "OffsetCommitKey",
        "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey",
    ]
    assert ctx.coord.group(GROUP) is None
    assert ctx.replayed().group(GROUP) is None
    removed = ctx.events_of(GroupRemoved)[-1]
    assert (removed.reason, removed.tombstoned) == ("expired", True)


def test_offsets_of_subscribed_topics_do_not_expire() -> None:
    ctx = ConsumerContext({"foo": 2}, config=CoordinatorConfig(offsets_retention_ms=60000))
    ctx.join("m1")
    commit(ctx, "m1", 1)
    for _ in range(4):
        ctx.sleep(30000)
        ctx.heartbeat(member_id="m1", member_epoch=1)
    assert ctx.coord.cleanup(ctx.now).offsets_removed == 0


# ------------------------------------------------------------------ admin APIs


def test_consumer_group_describe() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", client_id="c", client_host="/h", server_assignor="range")
    ctx.coord.handle(
        JoinGroupRequest(
            group_id="classic",
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            protocol_type="consumer",
            protocols=(Protocol(name="range", metadata=b""),),
            require_known_member_id=False,
        ),
        ctx.now,
    )
    reply = ctx.coord.handle(
        ConsumerGroupDescribeRequest(group_ids=(GROUP, "classic", "nope")), ctx.now
    )
    assert reply.response is not None
    described, classic, missing = reply.response.groups
    assert (described.error_code, described.group_state, described.group_epoch) == (
        Errors.NONE,
        "Stable",
        1,
    )
    assert (described.assignment_epoch, described.assignor_name) == (1, "range")
    (member,) = described.members
    assert (member.member_id, member.client_id, member.client_host, member.member_epoch) == (
        "m1",
        "c",
        "/h",
        1,
    )
    assert member.assignment == member.target_assignment == {"foo": (0, 1)}
    assert member.subscribed_topic_names == ("foo",)
    assert (classic.error_code, classic.error_message) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Group classic is not a consumer group.",
    )
    assert missing.error_code == Errors.GROUP_ID_NOT_FOUND


def test_describe_groups_shows_a_consumer_group_as_dead() -> None:
    """Kafka's classic DescribeGroups does not describe consumer groups: Dead, no members."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    reply = ctx.coord.handle(DescribeGroupsRequest(group_ids=(GROUP,)), ctx.now)
    assert reply.response is not None
    (group,) = reply.response.groups
    assert (group.error_code, group.group_state, group.members) == (Errors.NONE, "Dead", ())


def test_list_groups_with_types() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    ctx.coord.handle(
        HandoffHeartbeatRequest(
            group_id="handoff", member_id="h", member_epoch=0, session_timeout_ms=10000
        ),
        ctx.now,
    )
    commit(ctx, "", -1, group_id="simple")

    def listed(**filters: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
        reply = ctx.coord.handle(ListGroupsRequest(**filters), ctx.now)
        assert reply.response is not None
        return [
            (g.group_id, g.group_type, g.protocol_type, g.group_state)
            for g in reply.response.groups
        ]

    assert listed() == [
        (GROUP, "consumer", "consumer", "Stable"),
        ("handoff", "handoff", "handoff", "Stable"),
        ("simple", "classic", "", "Empty"),
    ]
    assert listed(types_filter=("Consumer",)) == [(GROUP, "consumer", "consumer", "Stable")]
    assert listed(types_filter=("classic", "handoff"), states_filter=("empty",)) == [
        ("simple", "classic", "", "Empty")
    ]


def test_delete_groups_of_a_consumer_group() -> None:
    """Kafka: NON_EMPTY_GROUP while it has members; an empty one is tombstoned with its
    offsets."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    commit(ctx, "m1", 1)

    def delete() -> int:
        reply = ctx.coord.handle(DeleteGroupsRequest(group_ids=(GROUP,)), ctx.now)
        assert reply.response is not None
        return reply.response.results[0].error_code

    assert delete() == Errors.NON_EMPTY_GROUP
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    assert delete() == Errors.NONE
    assert ctx.coord.group(GROUP) is None and ctx.coord.committed_offsets(GROUP) == {}
    assert ctx.replayed().group(GROUP) is None


def test_an_admin_removes_a_member_which_is_fenced_with_the_admins_reason() -> None:
    """Kafka's LeaveGroup to a consumer group: the member's records are tombstoned, the epoch
    goes up, caused by the admin; the others' target follows."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    ctx.join("m2")
    assert ctx.coord.remove_consumer_member(GROUP, "nobody", ctx.now) == Errors.UNKNOWN_MEMBER_ID
    assert ctx.coord.remove_consumer_member("other", "m1", ctx.now) == Errors.GROUP_ID_NOT_FOUND
    epoch = ctx.group().group_epoch
    assert ctx.coord.remove_consumer_member(GROUP, "m2", ctx.now) == Errors.NONE
    view = ctx.group()
    assert list(view.members) == ["m1"] and view.group_epoch == epoch + 1
    (removed,) = ctx.events_of(MemberRemoved)
    assert (removed.member_id, removed.reason) == ("m2", "removed_by_admin")
    bump = ctx.events_of(ConsumerGroupEpochBumped)[-1]
    assert (bump.epoch, bump.cause, bump.cause_member_id) == (epoch + 1, "admin_action", "m2")
    assert ctx.replayed().group(GROUP) == view
    assert ctx.heartbeat(member_id="m2", member_epoch=1).error_code == Errors.UNKNOWN_MEMBER_ID


# ------------------------------------------------------------------ kinds do not mix


def test_a_classic_join_to_a_consumer_group_is_inconsistent_group_protocol() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    reply = ctx.coord.handle(
        JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            protocol_type="consumer",
            protocols=(Protocol(name="range", metadata=b""),),
        ),
        ctx.now,
    )
    assert reply.response is not None
    assert reply.response.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def _classic_member(ctx: ConsumerContext) -> None:
    ctx.coord.handle(
        JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            protocol_type="consumer",
            protocols=(Protocol(name="range", metadata=b""),),
            require_known_member_id=False,
        ),
        ctx.now,
    )


def test_a_consumer_heartbeat_to_a_classic_group_with_members_is_inconsistent() -> None:
    ctx = ConsumerContext({"foo": 2})
    _classic_member(ctx)
    response = ctx.join("m1")
    assert response.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert response.error_message == f"Group {GROUP} is not a consumer group."


def test_a_join_takes_over_an_empty_classic_group_keeping_its_offsets() -> None:
    """Kafka's getOrMaybeCreateConsumerGroup: an empty classic group (here one made only by
    offsets) is deleted and a consumer group created in its place; offsets stay."""
    ctx = ConsumerContext({"foo": 2})
    assert commit(ctx, "", -1) == Errors.NONE
    response = ctx.join("m1")
    assert (response.error_code, response.member_epoch) == (Errors.NONE, 1)
    assert ctx.group().state is ConsumerGroupState.STABLE
    assert ctx.coord.committed_offsets(GROUP)[("foo", 0)].offset == 42
    assert ctx.events_of(GroupRemoved)[-1].reason == "converted"
    assert ctx.replayed().group(GROUP) == ctx.group()


def test_a_heartbeat_to_a_handoff_group_is_inconsistent() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.coord.handle(
        HandoffHeartbeatRequest(
            group_id=GROUP, member_id="h", member_epoch=0, session_timeout_ms=10000
        ),
        ctx.now,
    )
    assert ctx.join("m1").error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.heartbeat(member_id="h", member_epoch=-1).error_code == (
        Errors.INCONSISTENT_GROUP_PROTOCOL
    )


# ------------------------------------------------------------------ durability


def test_a_refused_append_changes_nothing_and_answers_coordinator_not_available() -> None:
    log = FlakyLog()
    ctx = ConsumerContext({"foo": 2}, log=log)
    ctx.join("m1")
    before = ctx.group()
    log.failing = True
    response = ctx.join("m2")
    assert response.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert ctx.group() == before
    log.failing = False
    assert ctx.join("m2").error_code == Errors.NONE


def test_replay_mid_reconciliation_comes_back_with_the_same_state_and_timers() -> None:
    """A restart while a member must revoke: same epochs, assignments and member states; the
    sessions and the rebalance timeout are re-armed from the load's time."""
    ctx = ConsumerContext({"foo": 4})
    ctx.join("m1")
    ctx.join("m2")
    ctx.heartbeat(member_id="m1", member_epoch=1)
    live = ctx.group()
    assert live.state is ConsumerGroupState.RECONCILING
    restarted = ctx.replayed()
    assert restarted.group(GROUP) == live
    deadlines = {
        key: restarted._timers.deadline(key)
        for key in (
            ("consumer-session", GROUP, "m1"),
            ("consumer-session", GROUP, "m2"),
            ("consumer-rebalance", GROUP, "m1"),
        )
    }
    assert deadlines == {
        ("consumer-session", GROUP, "m1"): ctx.now + 45000,
        ("consumer-session", GROUP, "m2"): ctx.now + 45000,
        ("consumer-rebalance", GROUP, "m1"): ctx.now + 5000,
    }
    # The restarted coordinator carries on where the live one was.
    ctx.coord = restarted
    ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    response = ctx.heartbeat(member_id="m2", member_epoch=2, topic_partitions=owned())
    assert response.assignment == {"foo": (2, 3)}


def test_every_record_round_trips_through_its_codec() -> None:
    ctx = ConsumerContext({"foo": 4, "bar": 1})
    ctx.join("m1", (), subscribed_topic_regex="f.*", instance_id="i1", rack_id="r1")
    ctx.join("m2")
    ctx.heartbeat(member_id="m1", instance_id="i1", member_epoch=-2)
    for key, value in decode(ctx.log.entries):
        assert key.group == GROUP
        assert value is None or type(value).__name__.endswith("Value")


# ------------------------------------------------------------------ events and docs


def test_consumer_events_round_trip_through_json_and_match_their_schemas() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    ctx.join("m2", instance_id="i2")
    ctx.heartbeat(member_id="m1", member_epoch=1)
    ctx.heartbeat(member_id="m2", instance_id="i2", member_epoch=-2)
    seen = {type(e) for e in ctx.events}
    assert set(CONSUMER_EVENT_TYPES.values()) <= seen
    for kind in (
        ConsumerGroupEpochBumped,
        ConsumerTargetAssignmentComputed,
        ConsumerMemberStateChanged,
        ConsumerPartitionsAssigned,
        ConsumerPartitionsRevoked,
    ):
        assert kind in seen
    for event in ctx.events:
        data = json.loads(json.dumps(event.to_json()))
        assert event_from_json(data) == event
        if event.type in CONSUMER_EVENT_TYPES:
            schema = CONSUMER_EVENT_SCHEMAS[event.type]
            assert set(data) == set(schema["required"])
    revoked = ctx.events_of(ConsumerPartitionsRevoked)[-1]
    assert (revoked.member_id, revoked.member_epoch, revoked.partitions) == ("m1", 1, [["foo", 1]])


@pytest.mark.parametrize("regex", ["(^a.*)|(b)", "a[0-9]+", "(?i)topic"])
def test_regexes_librdkafka_sends_are_accepted(regex: str) -> None:
    ctx = ConsumerContext({"a1": 1, "b": 1, "ab": 1})
    assert ctx.join("m1", (), subscribed_topic_regex=regex).error_code == Errors.NONE


def test_a_fence_the_log_refuses_is_tried_again_later() -> None:
    log = FlakyLog()
    ctx = ConsumerContext({"foo": 2}, log=log)
    ctx.join("m1")
    log.failing = True
    ctx.sleep(45000)
    assert set(ctx.group().members) == {"m1"}
    log.failing = False
    ctx.sleep(45000)
    assert ctx.group().members == {}


def test_a_stored_regex_python_cannot_compile_keeps_its_topics() -> None:
    """A log written by Kafka may hold an RE2 expression `re` refuses; the topics it resolved
    to are kept and topic changes do not fail."""
    from coordinator_engine.consumer.records import ConsumerGroupMemberMetadataValue as Value
    from coordinator_engine.consumer.records import (
        member_subscription_record,
        regular_expression_record,
    )

    regex = "\\pN+"
    log = MemoryLog(
        [
            member_subscription_record(
                GROUP,
                "m1",
                Value(
                    instance_id=None,
                    rack_id=None,
                    client_id="",
                    client_host="",
                    subscribed_topic_names=(),
                    subscribed_topic_regex=regex,
                    rebalance_timeout_ms=5000,
                    server_assignor=None,
                ),
            ),
            regular_expression_record(GROUP, regex, ("123",), 1, 0),
        ]
    )
    ctx = ConsumerContext(log=log)
    ctx.set_topic("123", 1)
    ctx.set_topic("456", 1)
    assert ctx.coord.group(GROUP) is not None


def test_a_classic_join_takes_over_an_empty_consumer_group_keeping_its_offsets() -> None:
    """Kafka's classicGroupJoinToClassicGroup: an empty consumer group is tombstoned (Kafka's
    order) and a classic group made in its place; offsets stay."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1")
    commit(ctx, "m1", 1)
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    mark = ctx.mark()
    reply = ctx.coord.handle(
        JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            protocol_type="consumer",
            protocols=(Protocol(name="range", metadata=b""),),
        ),
        ctx.now,
    )
    assert reply.response is not None
    assert reply.response.error_code == Errors.MEMBER_ID_REQUIRED
    kinds = [type(k).__name__ for k, v in ctx.records_since(mark) if v is None]
    assert kinds == [
        "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey",
    ]
    assert isinstance(ctx.coord.group(GROUP), GroupView)
    assert ctx.coord.committed_offsets(GROUP)[("foo", 0)].offset == 42
    assert ctx.events_of(GroupRemoved)[-1].reason == "converted"
    # Membership during a classic join is soft state: the log holds the offsets alone.
    replayed = ctx.replayed()
    assert isinstance(replayed.group(GROUP), GroupView)
    assert replayed.committed_offsets(GROUP)[("foo", 0)].offset == 42
