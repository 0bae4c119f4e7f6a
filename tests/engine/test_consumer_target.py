"""The target assignment (`consumer.target`): Kafka's `TargetAssignmentBuilderTest` cases ported
by name, over a group built from its records."""

from __future__ import annotations

from uuid import UUID

from coordinator_engine.consumer import ConsumerGroup, compute_target_assignment
from coordinator_engine.consumer.group import SubscribedTopic
from coordinator_engine.consumer.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    TopicPartitions,
)

FOO, BAR = UUID(int=1), UUID(int=2)
METADATA = {"foo": SubscribedTopic(FOO, 6), "bar": SubscribedTopic(BAR, 3)}


def group_of(
    *members: tuple[str, tuple[str, ...]], instance: dict[str, str] | None = None
) -> ConsumerGroup:
    group = ConsumerGroup("g")
    for member_id, topics in members:
        group.apply(
            ConsumerGroupMemberMetadataKey(group="g", member_id=member_id),
            ConsumerGroupMemberMetadataValue(
                instance_id=(instance or {}).get(member_id),
                rack_id=None,
                client_id="",
                client_host="",
                subscribed_topic_names=topics,
                subscribed_topic_regex=None,
                rebalance_timeout_ms=5000,
                server_assignor=None,
            ),
        )
    return group


def set_target(group: ConsumerGroup, member_id: str, foo: tuple[int, ...]) -> None:
    group.apply(
        ConsumerGroupTargetAssignmentMemberKey(group="g", member_id=member_id),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=(TopicPartitions(topic_id=FOO, partitions=foo),)
        ),
    )


def test_create_assignment() -> None:
    group = group_of(("m1", ("foo", "bar")), ("m2", ("foo", "bar")))
    result = compute_target_assignment(group, "uniform", METADATA)
    assert result.changed == ("m1", "m2")
    everything = {(FOO, p) for p in range(6)} | {(BAR, p) for p in range(3)}
    assert result.targets["m1"] | result.targets["m2"] == everything
    assert not result.targets["m1"] & result.targets["m2"]


def test_partial_assignment_update() -> None:
    """Only the members whose target changed get a record: a member keeping its partitions
    is not rewritten."""
    group = group_of(("m1", ("foo",)), ("m2", ("foo",)), ("m3", ("bar",)))
    set_target(group, "m1", (0, 1, 2))
    set_target(group, "m2", (3, 4, 5))
    group.apply(
        ConsumerGroupTargetAssignmentMemberKey(group="g", member_id="m3"),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=(TopicPartitions(topic_id=BAR, partitions=(0, 1, 2)),)
        ),
    )
    assert compute_target_assignment(group, "uniform", METADATA).changed == ()
    group = group_of(("m1", ("foo",)), ("m2", ("foo",)), ("m3", ("bar",)), ("m4", ("foo",)))
    set_target(group, "m1", (0, 1, 2))
    set_target(group, "m2", (3, 4, 5))
    group.apply(
        ConsumerGroupTargetAssignmentMemberKey(group="g", member_id="m3"),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=(TopicPartitions(topic_id=BAR, partitions=(0, 1, 2)),)
        ),
    )
    result = compute_target_assignment(group, "uniform", METADATA)
    assert "m3" not in result.changed and "m4" in result.changed
    assert len(result.targets["m4"]) == 2


def test_replace_static_member() -> None:
    """A static member replaced under a new member id keeps its target: the new id is given
    the old target first (the manager's records), and the assignor keeps it."""
    group = group_of(("m1", ("foo",)), ("m2b", ("foo",)), instance={"m2b": "i2"})
    set_target(group, "m1", (0, 1, 2))
    set_target(group, "m2b", (3, 4, 5))
    result = compute_target_assignment(group, "uniform", METADATA)
    assert result.changed == ()
    assert result.targets["m2b"] == {(FOO, 3), (FOO, 4), (FOO, 5)}


def test_a_regex_subscription_counts_the_topics_it_resolved_to() -> None:
    group = ConsumerGroup("g")
    group.apply(
        ConsumerGroupMemberMetadataKey(group="g", member_id="m1"),
        ConsumerGroupMemberMetadataValue(
            instance_id=None,
            rack_id=None,
            client_id="",
            client_host="",
            subscribed_topic_names=(),
            subscribed_topic_regex="b.*",
            rebalance_timeout_ms=5000,
            server_assignor=None,
        ),
    )
    group.apply(
        ConsumerGroupRegularExpressionKey(group="g", regular_expression="b.*"),
        ConsumerGroupRegularExpressionValue(topics=("bar",), version=1, timestamp=0),
    )
    result = compute_target_assignment(group, "range", METADATA)
    assert result.targets["m1"] == {(BAR, 0), (BAR, 1), (BAR, 2)}
