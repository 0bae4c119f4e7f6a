"""Replaying consumer group records: Kafka's `testReplayConsumerGroup*` tests ported by name,
each record type and its tombstone through a coordinator built over a log of them."""

from __future__ import annotations

from uuid import UUID

from coordinator_engine import ConsumerGroupState, GroupCoordinator, MemberState, MemoryLog
from coordinator_engine.consumer import ConsumerGroup, ConsumerGroupView
from coordinator_engine.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    TopicMetadata,
    TopicPartitions,
    current_assignment_record,
    current_assignment_tombstone,
    epoch_record,
    epoch_tombstone,
    member_subscription_record,
    member_subscription_tombstone,
    regular_expression_record,
    regular_expression_tombstone,
    subscription_metadata_record,
    subscription_metadata_tombstone,
    target_assignment_epoch_record,
    target_assignment_record,
    target_assignment_tombstone,
)

GROUP = "foo"
FOO = UUID(int=11)
SUBSCRIPTION = ConsumerGroupMemberMetadataValue(
    instance_id="i1",
    rack_id="r1",
    client_id="c",
    client_host="h",
    subscribed_topic_names=("foo",),
    subscribed_topic_regex=None,
    rebalance_timeout_ms=5000,
    server_assignor="range",
)
CURRENT = ConsumerGroupCurrentMemberAssignmentValue(
    member_epoch=10,
    previous_member_epoch=9,
    state=1,
    assigned_partitions=(TopicPartitions(topic_id=FOO, partitions=(0, 1)),),
    partitions_pending_revocation=(TopicPartitions(topic_id=FOO, partitions=(2,)),),
)


def load(*records: tuple[bytes, bytes | None]) -> ConsumerGroup | None:
    coord = GroupCoordinator(log=MemoryLog(list(records)))
    group = coord._ctx.groups.get(GROUP)
    assert group is None or isinstance(group, ConsumerGroup)
    return group


def test_replay_consumer_group_metadata() -> None:
    group = load(epoch_record(GROUP, 10))
    assert group is not None and group.group_epoch == 10
    assert group.state is ConsumerGroupState.EMPTY


def test_replay_consumer_group_metadata_tombstone() -> None:
    assert load(epoch_record(GROUP, 10), epoch_tombstone(GROUP)) is None
    assert load(epoch_tombstone(GROUP)) is None


def test_replay_consumer_group_partition_metadata() -> None:
    topics = (TopicMetadata(topic_id=FOO, topic_name="foo", num_partitions=3),)
    group = load(subscription_metadata_record(GROUP, topics))
    assert group is not None
    assert group.subscription_metadata["foo"].num_partitions == 3
    assert group.topic_name(FOO) == "foo"
    group = load(
        subscription_metadata_record(GROUP, topics), subscription_metadata_tombstone(GROUP)
    )
    assert group is not None and group.subscription_metadata == {}


def test_replay_consumer_group_member_metadata() -> None:
    group = load(member_subscription_record(GROUP, "m1", SUBSCRIPTION))
    assert group is not None
    member = group.members["m1"]
    assert (member.instance_id, member.rack_id, member.server_assignor) == ("i1", "r1", "range")
    assert group.static_members == {"i1": "m1"}


def test_replay_consumer_group_member_metadata_tombstone() -> None:
    group = load(
        member_subscription_record(GROUP, "m1", SUBSCRIPTION),
        current_assignment_record(GROUP, "m1", CURRENT),
        current_assignment_tombstone(GROUP, "m1"),
        member_subscription_tombstone(GROUP, "m1"),
    )
    assert group is not None and group.members == {} and group.static_members == {}
    assert group.owners == {}


def test_replay_consumer_group_target_assignment_metadata_and_member() -> None:
    group = load(
        target_assignment_record(GROUP, "m1", {FOO: frozenset({0, 1})}),
        target_assignment_epoch_record(GROUP, 10),
    )
    assert group is not None and group.assignment_epoch == 10
    assert group.target == {"m1": frozenset({(FOO, 0), (FOO, 1)})}
    group = load(
        target_assignment_record(GROUP, "m1", {FOO: frozenset({0, 1})}),
        target_assignment_tombstone(GROUP, "m1"),
    )
    assert group is not None and group.target == {}


def test_replay_consumer_group_current_member_assignment() -> None:
    group = load(
        member_subscription_record(GROUP, "m1", SUBSCRIPTION),
        current_assignment_record(GROUP, "m1", CURRENT),
    )
    assert group is not None
    current = group.members["m1"].current
    assert (current.member_epoch, current.previous_member_epoch) == (10, 9)
    assert current.state is MemberState.UNREVOKED_PARTITIONS
    assert group.owners == {(FOO, 0): "m1", (FOO, 1): "m1", (FOO, 2): "m1"}


def test_replay_consumer_group_current_member_assignment_tombstone() -> None:
    group = load(
        member_subscription_record(GROUP, "m1", SUBSCRIPTION),
        current_assignment_record(GROUP, "m1", CURRENT),
        current_assignment_tombstone(GROUP, "m1"),
    )
    assert group is not None
    current = group.members["m1"].current
    assert (current.member_epoch, current.assigned, current.pending_revocation) == (
        -1,
        frozenset(),
        frozenset(),
    )
    assert group.owners == {}


def test_replay_consumer_group_regular_expression() -> None:
    group = load(regular_expression_record(GROUP, "f.*", ("foo",), 3, 100))
    assert group is not None and group.regexes["f.*"].topics == ("foo",)
    group = load(
        regular_expression_record(GROUP, "f.*", ("foo",), 3, 100),
        regular_expression_tombstone(GROUP, "f.*"),
    )
    assert group is not None and group.regexes == {}


def test_a_loaded_group_is_viewed_with_its_derived_state() -> None:
    coord = GroupCoordinator(
        log=MemoryLog(
            [
                member_subscription_record(GROUP, "m1", SUBSCRIPTION),
                epoch_record(GROUP, 10),
                target_assignment_record(GROUP, "m1", {FOO: frozenset({0, 1})}),
                target_assignment_epoch_record(GROUP, 10),
                current_assignment_record(GROUP, "m1", CURRENT),
            ]
        )
    )
    view = coord.group(GROUP)
    assert isinstance(view, ConsumerGroupView)
    assert view.state is ConsumerGroupState.RECONCILING
