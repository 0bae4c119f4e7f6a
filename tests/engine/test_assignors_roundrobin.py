"""The ``roundrobin`` assignor: Kafka's RoundRobinAssignorTest scenarios, then properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coordinator_engine.assignors import RoundRobinAssignor, Subscription, get_assignor
from coordinator_engine.assignors._validation import assignment_problems

assignor = get_assignor("roundrobin")


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


# -- Kafka's RoundRobinAssignorTest --------------------------------------------------------------


def test_roundrobin_is_the_kafka_roundrobin_assignor() -> None:
    assert isinstance(assignor, RoundRobinAssignor)
    assert assignor.name == "roundrobin"


def test_one_consumer_without_topics_gets_nothing() -> None:
    """RoundRobinAssignorTest.testOneConsumerNoTopic."""
    assert assignor.assign({}, {"consumer": Subscription(topics=[])}) == {"consumer": []}


def test_one_consumer_of_a_nonexistent_topic_gets_nothing() -> None:
    """RoundRobinAssignorTest.testOneConsumerNonexistentTopic."""
    result = assignor.assign({}, {"consumer": Subscription(topics=["topic"])})
    assert result == {"consumer": []}


def test_only_one_consumer_one_topic_gets_all_partitions() -> None:
    """RoundRobinAssignorTest.testOneConsumerOneTopic."""
    result = assignor.assign({"topic": 3}, {"consumer": Subscription(topics=["topic"])})
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_only_partitions_of_subscribed_topics_are_assigned() -> None:
    """RoundRobinAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    result = assignor.assign({"topic": 3, "other": 3}, {"consumer": Subscription(topics=["topic"])})
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def test_one_consumer_gets_all_partitions_of_all_its_topics() -> None:
    """RoundRobinAssignorTest.testOneConsumerMultipleTopics."""
    result = assignor.assign(
        {"topic1": 1, "topic2": 2}, {"consumer": Subscription(topics=["topic1", "topic2"])}
    )
    assert result == {"consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


def test_two_consumers_of_one_partition_leave_the_second_empty() -> None:
    """RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic"]),
        "consumer2": Subscription(topics=["topic"]),
    }
    result = assignor.assign({"topic": 1}, subscriptions)
    assert result == {"consumer1": [tp("topic", 0)], "consumer2": []}


def test_two_consumers_of_two_partitions_get_one_each() -> None:
    """RoundRobinAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic"]),
        "consumer2": Subscription(topics=["topic"]),
    }
    result = assignor.assign({"topic": 2}, subscriptions)
    assert result == {"consumer1": [tp("topic", 0)], "consumer2": [tp("topic", 1)]}


def test_the_deal_skips_consumers_not_subscribed_to_the_topic() -> None:
    """RoundRobinAssignorTest.testMultipleConsumersMixedTopics."""
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


def test_two_dynamic_consumers_alternate_over_all_sorted_partitions() -> None:
    """RoundRobinAssignorTest.testTwoDynamicConsumersTwoTopicsSixPartitions."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1", "topic2"]),
        "consumer2": Subscription(topics=["topic1", "topic2"]),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_static_members_are_ordered_by_instance_id_not_member_id() -> None:
    """RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions."""
    subscriptions = {
        "consumer-b": Subscription(topics=["topic1", "topic2"], group_instance_id="instance1"),
        "consumer-a": Subscription(topics=["topic1", "topic2"], group_instance_id="instance2"),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_a_static_member_comes_before_a_dynamic_member() -> None:
    """RoundRobinAssignorTest.testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions."""
    subscriptions = {
        "consumer-b": Subscription(topics=["topic1", "topic2"], group_instance_id="instance1"),
        "consumer-a": Subscription(topics=["topic1", "topic2"]),
    }
    result = assignor.assign({"topic1": 3, "topic2": 3}, subscriptions)
    assert result == {
        "consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


def test_static_members_keep_their_partitions_when_a_dynamic_member_is_replaced() -> None:
    """RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent."""
    topics = ["topic1", "topic2"]
    subscriptions = {
        f"consumer{i}": Subscription(topics=topics, group_instance_id=f"instance{i}")
        for i in (1, 2, 3)
    }
    subscriptions["consumer4"] = Subscription(topics=topics)
    expected = {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic1", 2)],
        "consumer4": [tp("topic2", 0)],
    }
    assert assignor.assign({"topic1": 3, "topic2": 3}, subscriptions) == expected

    del subscriptions["consumer4"]
    subscriptions["consumer5"] = Subscription(topics=topics)
    expected["consumer5"] = expected.pop("consumer4")
    assert assignor.assign({"topic1": 3, "topic2": 3}, subscriptions) == expected


def test_static_members_keep_their_partitions_after_their_member_ids_change() -> None:
    """RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges."""
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 5, "topic2": 5}
    subscriptions = {
        f"consumer{i}": Subscription(topics=topics, group_instance_id=f"instance{i}")
        for i in (1, 2, 3)
    }
    before = by_instance(assignor.assign(partitions, subscriptions), subscriptions)
    assert before == {
        "instance1": [tp("topic1", 0), tp("topic1", 3), tp("topic2", 1), tp("topic2", 4)],
        "instance2": [tp("topic1", 1), tp("topic1", 4), tp("topic2", 2)],
        "instance3": [tp("topic1", 2), tp("topic2", 0), tp("topic2", 3)],
    }
    subscriptions["consumer4"] = subscriptions.pop("consumer3")
    subscriptions["consumer5"] = subscriptions.pop("consumer2")
    assert by_instance(assignor.assign(partitions, subscriptions), subscriptions) == before


def test_unequal_subscriptions_can_leave_the_deal_unbalanced() -> None:
    """The class Javadoc example: C2 gets four partitions while C0 and C1 get one each."""
    subscriptions = {
        "C0": Subscription(topics=["t0"]),
        "C1": Subscription(topics=["t0", "t1"]),
        "C2": Subscription(topics=["t0", "t1", "t2"]),
    }
    result = assignor.assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0)],
        "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


# -- properties ----------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]


@st.composite
def groups(
    draw: st.DrawFn, equal_subscriptions: bool = False
) -> tuple[dict[str, int], dict[str, Subscription]]:
    """A topic layout and a group: any members, static or not, any (or equal) subscriptions."""
    partitions = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), max_size=4))
    member_ids = draw(
        st.lists(st.text("mxyz", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    shared = draw(st.sets(st.sampled_from([*TOPICS, "missing"])))
    subscriptions = {}
    for index, member_id in enumerate(member_ids):
        topics = shared if equal_subscriptions else draw(st.sets(st.sampled_from(TOPICS)))
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


@given(groups(equal_subscriptions=True))
def test_equal_subscriptions_give_counts_within_one(
    group: tuple[dict[str, int], dict[str, Subscription]],
) -> None:
    partitions, subscriptions = group
    sizes = [len(p) for p in assignor.assign(partitions, subscriptions).values()]
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
