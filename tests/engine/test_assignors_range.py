"""The ``range`` assignor: Kafka's RangeAssignorTest scenarios, then properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator_engine.assignors import ASSIGNOR_NAMES, RangeAssignor, Subscription, get_assignor
from coordinator_engine.assignors._common import member_info_key
from coordinator_engine.assignors._validation import assignment_problems

assignor = get_assignor("range")


def tp(topic: str, partition: int) -> tuple[str, int]:
    return (topic, partition)


def by_instance(
    assignment: dict[str, list[tuple[str, int]]], subscriptions: dict[str, Subscription]
) -> dict[str, list[tuple[str, int]]]:
    return {
        s.group_instance_id: assignment[m]
        for m, s in subscriptions.items()
        if s.group_instance_id is not None
    }


# -- the registry ----------------------------------------------------------------------------------


def test_get_assignor_knows_the_four_kafka_assignors() -> None:
    assert ASSIGNOR_NAMES == ("range", "roundrobin", "sticky", "cooperative-sticky")
    for name in ASSIGNOR_NAMES:
        assert get_assignor(name).name == name
    assert isinstance(assignor, RangeAssignor)


def test_get_assignor_rejects_an_unknown_name_and_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'uniform'.*'range', 'roundrobin', 'sticky'"):
        get_assignor("uniform")


def test_subscription_rejects_a_bare_string_as_topics() -> None:
    with pytest.raises(TypeError, match="collection of topic names"):
        Subscription(topics="topic1")


def test_subscription_takes_its_topics_positionally_and_the_rest_by_keyword() -> None:
    """As Kafka's `new Subscription(topics)` and DESIGN.md's contract."""
    assert Subscription(["orders"]) == Subscription(topics=("orders",))
    assert Subscription(["t"], generation_id=3).generation_id == 3
    with pytest.raises(TypeError):
        Subscription(["t"], (("t", 0),))  # type: ignore[misc]
    assert assignor.assign({"orders": 2}, {"c": Subscription(["orders"])}) == {
        "c": [("orders", 0), ("orders", 1)]
    }


def test_a_negative_partition_count_is_rejected() -> None:
    with pytest.raises(ValueError, match="'t'"):
        assignor.assign({"t": -1}, {"c": Subscription(topics=["t"])})


# -- Kafka's RangeAssignorTest -------------------------------------------------------------------


def test_one_consumer_without_topics_gets_nothing() -> None:
    """RangeAssignorTest.testOneConsumerNoTopic."""
    assert assignor.assign({}, {"consumer1": Subscription(topics=[])}) == {"consumer1": []}


def test_one_consumer_of_a_nonexistent_topic_gets_nothing() -> None:
    """RangeAssignorTest.testOneConsumerNonexistentTopic."""
    result = assignor.assign({}, {"consumer1": Subscription(topics=["topic1"])})
    assert result == {"consumer1": []}


def test_only_one_consumer_one_topic_gets_all_partitions() -> None:
    """RangeAssignorTest.testOneConsumerOneTopic."""
    result = assignor.assign({"topic1": 3}, {"consumer1": Subscription(topics=["topic1"])})
    assert result == {"consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]}


def test_only_partitions_of_subscribed_topics_are_assigned() -> None:
    """RangeAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    result = assignor.assign(
        {"topic1": 3, "other": 3}, {"consumer1": Subscription(topics=["topic1"])}
    )
    assert result == {"consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]}


def test_one_consumer_gets_all_partitions_of_all_its_topics() -> None:
    """RangeAssignorTest.testOneConsumerMultipleTopics."""
    result = assignor.assign(
        {"topic1": 1, "topic2": 2}, {"consumer1": Subscription(topics=["topic1", "topic2"])}
    )
    assert result == {"consumer1": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


def test_two_consumers_of_one_partition_leave_the_second_empty() -> None:
    """RangeAssignorTest.testTwoConsumersOneTopicOnePartition."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1"]),
        "consumer2": Subscription(topics=["topic1"]),
    }
    result = assignor.assign({"topic1": 1}, subscriptions)
    assert result == {"consumer1": [tp("topic1", 0)], "consumer2": []}


def test_two_consumers_of_two_partitions_get_one_each() -> None:
    """RangeAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1"]),
        "consumer2": Subscription(topics=["topic1"]),
    }
    result = assignor.assign({"topic1": 2}, subscriptions)
    assert result == {"consumer1": [tp("topic1", 0)], "consumer2": [tp("topic1", 1)]}


def test_consumers_with_mixed_topics_split_each_topic_among_its_subscribers() -> None:
    """RangeAssignorTest.testMultipleConsumersMixedTopics."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1"]),
        "consumer2": Subscription(topics=["topic1", "topic2"]),
        "consumer3": Subscription(topics=["topic1"]),
    }
    result = assignor.assign({"topic1": 3, "topic2": 2}, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 2)],
    }


def test_the_first_consumer_gets_the_extra_partition_of_every_topic() -> None:
    """RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions (the class Javadoc example)."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1", "topic2"]),
        "consumer2": Subscription(topics=["topic1", "topic2"]),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 2), tp("topic2", 2)],
    }


def test_static_members_are_ordered_by_instance_id_not_member_id() -> None:
    """RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions."""
    subscriptions = {
        "consumer-b": Subscription(topics=["topic1", "topic2"], group_instance_id="instance1"),
        "consumer-a": Subscription(topics=["topic1", "topic2"], group_instance_id="instance2"),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 2), tp("topic2", 2)],
    }


def test_a_static_member_comes_before_a_dynamic_member() -> None:
    """RangeAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions."""
    subscriptions = {
        "consumer-b": Subscription(topics=["topic1", "topic2"], group_instance_id="instance1"),
        "consumer-a": Subscription(topics=["topic1", "topic2"]),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 2), tp("topic2", 2)],
    }


def test_static_members_keep_their_ranges_when_a_dynamic_member_is_replaced() -> None:
    """RangeAssignorTest.testStaticMemberRangeAssignmentPersistent."""
    topics = ["topic1", "topic2"]
    subscriptions = {
        f"consumer{i}": Subscription(topics=topics, group_instance_id=f"instance{i}")
        for i in (1, 2, 3)
    }
    subscriptions["consumer4"] = Subscription(topics=topics)
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0)],
        "consumer2": [tp("topic1", 2), tp("topic2", 1)],
        "consumer3": [tp("topic1", 3), tp("topic2", 2)],
        "consumer4": [tp("topic1", 4), tp("topic2", 3)],
    }
    assert assignor.assign({"topic1": 5, "topic2": 4}, subscriptions) == expected

    del subscriptions["consumer4"]
    subscriptions["consumer5"] = Subscription(topics=topics)
    expected["consumer5"] = expected.pop("consumer4")
    assert assignor.assign({"topic1": 5, "topic2": 4}, subscriptions) == expected


def test_static_members_keep_their_ranges_after_their_member_ids_change() -> None:
    """RangeAssignorTest.testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges."""
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 5, "topic2": 5}
    subscriptions = {
        f"consumer{i}": Subscription(topics=topics, group_instance_id=f"instance{i}")
        for i in (1, 2, 3)
    }
    before = by_instance(assignor.assign(partitions, subscriptions), subscriptions)
    assert before == {
        "instance1": [tp("topic1", 0), tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
        "instance2": [tp("topic1", 2), tp("topic1", 3), tp("topic2", 2), tp("topic2", 3)],
        "instance3": [tp("topic1", 4), tp("topic2", 4)],
    }
    subscriptions["consumer4"] = subscriptions.pop("consumer3")
    subscriptions["consumer5"] = subscriptions.pop("consumer2")
    assert by_instance(assignor.assign(partitions, subscriptions), subscriptions) == before


@pytest.mark.parametrize(
    ("partitions", "consumer_topics", "expected"),
    [
        pytest.param(
            {"t1": 6, "t2": 7, "t3": 2},
            [["t1", "t2", "t3"]] * 3,
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
                "t1-2, t1-3, t2-3, t2-4, t3-1",
                "t1-4, t1-5, t2-5, t2-6",
            ],
            id="testRackAwareAssignmentWithUniformSubscription",
        ),
        pytest.param(
            {"t1": 6, "t2": 7, "t3": 2},
            [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]],
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                "t1-4, t1-5",
            ],
            id="testRackAwareAssignmentWithNonEqualSubscription",
        ),
        pytest.param(
            {"t1": 5, "t2": 5, "t3": 5},
            [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]],
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                "t1-4, t3-4",
            ],
            id="testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription",
        ),
        pytest.param(
            {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4},
            [["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]] * 3,
            [
                "t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
                "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2",
                "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3",
            ],
            id="testCoPartitionedAssignmentWithSameSubscription",
        ),
        pytest.param(
            {"t1": 6, "t2": 6, "t3": 2, "t4": 2},
            [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]],
            [
                "t1-0, t1-1, t1-2, t2-0, t2-1, t2-2",
                "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
                "t3-0, t4-0",
                "t3-1, t4-1",
            ],
            id="testRackAwareAssignmentWithCoPartitioning",
        ),
    ],
)
def test_kafka_non_rack_aware_expectations_hold(
    partitions: dict[str, int], consumer_topics: list[list[str]], expected: list[str]
) -> None:
    """The non-rack-aware expectations of Kafka's rack-aware RangeAssignorTest cases."""
    subscriptions = {f"consumer{i}": Subscription(topics=t) for i, t in enumerate(consumer_topics)}
    result = assignor.assign(partitions, subscriptions)
    rendered = [
        ", ".join(sorted(f"{t}-{p}" for t, p in result[f"consumer{i}"]))
        for i in range(len(consumer_topics))
    ]
    assert rendered == expected


# -- properties ----------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Subscription]]:
    """A topic layout and a group: any members, static or not, any subscriptions."""
    partitions = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), max_size=4))
    member_ids = draw(
        st.lists(st.text("mxyz", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    subscriptions = {}
    for index, member_id in enumerate(member_ids):
        topics = draw(st.sets(st.sampled_from([*TOPICS, "missing"])))
        static = draw(st.booleans())
        subscriptions[member_id] = Subscription(
            topics=sorted(topics), group_instance_id=f"i{index}" if static else None
        )
    return partitions, subscriptions


@given(groups())
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    group: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions, subscriptions = group
    result = assignor.assign(partitions, subscriptions)
    assert assignment_problems(partitions, subscriptions, result) == []


@given(groups())
def test_each_topic_is_split_in_contiguous_ranges_largest_first(
    group: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions, subscriptions = group
    result = assignor.assign(partitions, subscriptions)
    ordered = sorted(
        subscriptions, key=lambda m: member_info_key(m, subscriptions[m].group_instance_id)
    )
    for topic, count in partitions.items():
        consumers = [m for m in ordered if topic in subscriptions[m].topics]
        if not consumers:
            continue
        ranges = [[p for t, p in result[m] if t == topic] for m in consumers]
        assert [p for r in ranges for p in r] == list(range(count))
        sizes = [len(r) for r in ranges]
        assert sizes == sorted(sizes, reverse=True)
        assert max(sizes) - min(sizes) <= 1


@given(groups())
def test_static_members_keep_their_partitions_when_their_member_ids_change(
    group: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions, subscriptions = group
    static = {m: s for m, s in subscriptions.items() if s.group_instance_id is not None}
    before = by_instance(assignor.assign(partitions, static), static)
    renamed = {f"new-{m[::-1]}": s for m, s in static.items()}
    assert by_instance(assignor.assign(partitions, renamed), renamed) == before
