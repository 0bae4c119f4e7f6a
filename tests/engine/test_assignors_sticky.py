"""The sticky assignors: Kafka's AbstractStickyAssignorTest and StickyAssignorTest scenarios.

The AbstractStickyAssignorTest scenarios run for both ``sticky`` and ``cooperative-sticky``, as in
Kafka. For the cooperative assignor :func:`settled` first plays the follow-up rebalances a
cooperative round triggers (Kafka's ``CooperativeStickyAssignorTest.verifyValidityAndBalance``),
checking on the way that no partition is handed from one owner to another in one round; the
expectations then hold for the settled assignment. The properties at the end (Hypothesis) hold
for both assignors; the cooperative-only ones are in ``test_assignors_cooperative_sticky.py``.

Large groups (1,000,000 partitions) are measured by ``bench/assignors.py``, not here.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from coordinator_engine.assignors import StickyAssignor, Subscription, get_assignor
from coordinator_engine.assignors._validation import (
    assignment_problems,
    balance_problems,
    handover_problems,
)

Assignment = dict[str, list[tuple[str, int]]]
BOTH = pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
GENERATION = 1


def tp(topic: str, partition: int) -> tuple[str, int]:
    return (topic, partition)


def parse(partitions: str) -> list[tuple[str, int]]:
    """``"t1-0, t2-3"`` as ``[("t1", 0), ("t2", 3)]`` (Kafka's test notation)."""
    if not partitions:
        return []
    return [(p.rsplit("-", 1)[0], int(p.rsplit("-", 1)[1])) for p in partitions.split(", ")]


def render(partitions: Sequence[tuple[str, int]]) -> str:
    return ", ".join(sorted(f"{t}-{p}" for t, p in partitions))


def cooperative_revocations(
    subscriptions: Mapping[str, Subscription], assignment: Assignment
) -> set[tuple[str, int]]:
    """Partitions revoked in this round; fails if one is also handed to a new owner now.

    Kafka's ``CooperativeStickyAssignorTest.verifyCooperativeValidity``.
    """
    assert handover_problems(subscriptions, assignment) == []
    return {
        p
        for member_id, partitions in assignment.items()
        for p in set(subscriptions[member_id].owned_partitions) - set(partitions)
    }


def settled(
    name: str,
    partitions: Mapping[str, int],
    subscriptions: dict[str, Subscription],
    assignment: Assignment,
) -> Assignment:
    """The assignment once follow-up rebalances are done, checked valid and balanced."""
    rebalances = 0
    while name == "cooperative-sticky" and cooperative_revocations(subscriptions, assignment):
        subscriptions = {
            m: Subscription(
                topics=s.topics,
                owned_partitions=assignment[m],
                generation_id=GENERATION,
                group_instance_id=s.group_instance_id,
            )
            for m, s in subscriptions.items()
        }
        assignment = get_assignor(name).assign(partitions, subscriptions)
        rebalances += 1
        assert rebalances <= 4
    assert assignment_problems(partitions, subscriptions, assignment) == []
    assert balance_problems(subscriptions, assignment) == []
    return assignment


def assign(
    name: str, partitions: Mapping[str, int], subscriptions: dict[str, Subscription]
) -> Assignment:
    """Assign, settle and check, as Kafka's tests call ``assignPartitions`` then ``verify...``."""
    return settled(
        name, partitions, subscriptions, get_assignor(name).assign(partitions, subscriptions)
    )


def fully_balanced(assignment: Assignment) -> bool:
    sizes = [len(p) for p in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def owning(
    topics: Sequence[str], owned: Sequence[tuple[str, int]], generation: int = GENERATION
) -> Subscription:
    """Kafka's ``buildSubscriptionV2Above``: topics, owned partitions and their generation."""
    return Subscription(topics=topics, owned_partitions=owned, generation_id=generation)


def carried_over(
    subscriptions: Mapping[str, Subscription], assignment: Assignment, generation: int = GENERATION
) -> dict[str, Subscription]:
    """Every member rejoins owning what it was assigned."""
    return {m: owning(s.topics, assignment[m], generation) for m, s in subscriptions.items()}


def swaps(before: Assignment, after: Assignment) -> set[tuple[str, str, str]]:
    """(topic, a, b) where partitions of one topic moved both from a to b and from b to a.

    Kafka's ``AbstractStickyAssignor.isSticky`` (no two-member cycle of one topic's partitions).
    """
    owner_before = {p: m for m, parts in before.items() for p in parts}
    moves = {
        (p[0], owner_before[p], m)
        for m, parts in after.items()
        for p in parts
        if p in owner_before and owner_before[p] != m
    }
    return {(t, a, b) for t, a, b in moves if (t, b, a) in moves}


def name_of(prefix: str, i: int, maximum: int) -> str:
    """Kafka's ``getCanonicalName``: ``c01`` for consumer 1 of up to 20."""
    return prefix + str(i).zfill(len(str(maximum)))


# -- AbstractStickyAssignorTest ------------------------------------------------------------------


@BOTH
def test_one_consumer_without_topics_gets_nothing(name: str) -> None:
    """AbstractStickyAssignorTest.testOneConsumerNoTopic."""
    assert assign(name, {}, {"consumer": Subscription(topics=[])}) == {"consumer": []}


@BOTH
def test_one_consumer_of_a_topic_without_partitions_gets_nothing(name: str) -> None:
    """AbstractStickyAssignorTest.testOneConsumerNonexistentTopic."""
    assert assign(name, {"topic": 0}, {"consumer": Subscription(topics=["topic"])}) == {
        "consumer": []
    }


@BOTH
def test_only_one_consumer_one_topic_gets_all_partitions(name: str) -> None:
    """AbstractStickyAssignorTest.testOneConsumerOneTopic."""
    result = assign(name, {"topic": 3}, {"consumer": Subscription(topics=["topic"])})
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


@BOTH
def test_owned_partitions_of_unknown_topics_are_ignored(name: str) -> None:
    """AbstractStickyAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics."""
    owned = [tp("topic", 0), tp("topic", 1), tp("other", 0), tp("other", 1)]
    result = assign(name, {"topic": 2}, {"consumer": owning(["topic"], owned)})
    assert result == {"consumer": [tp("topic", 0), tp("topic", 1)]}


@BOTH
def test_one_consumer_gets_all_partitions_of_all_its_topics(name: str) -> None:
    """AbstractStickyAssignorTest.testOneConsumerMultipleTopics."""
    result = assign(
        name, {"topic1": 1, "topic2": 2}, {"consumer": Subscription(topics=["topic1", "topic2"])}
    )
    assert result == {"consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


@BOTH
def test_two_consumers_of_one_partition_are_balanced(name: str) -> None:
    """AbstractStickyAssignorTest.testTwoConsumersOneTopicOnePartition."""
    subscriptions = {c: Subscription(topics=["topic"]) for c in ("consumer1", "consumer2")}
    assert fully_balanced(assign(name, {"topic": 1}, subscriptions))


@BOTH
def test_two_consumers_of_two_partitions_get_one_each(name: str) -> None:
    """AbstractStickyAssignorTest.testTwoConsumersOneTopicTwoPartitions."""
    subscriptions = {c: Subscription(topics=["topic"]) for c in ("consumer1", "consumer2")}
    assert assign(name, {"topic": 2}, subscriptions) == {
        "consumer1": [tp("topic", 0)],
        "consumer2": [tp("topic", 1)],
    }


@BOTH
def test_mixed_subscriptions_give_the_single_subscriber_its_topic(name: str) -> None:
    """AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions."""
    subscriptions = {
        "consumer1": Subscription(topics=["topic1"]),
        "consumer2": Subscription(topics=["topic1", "topic2"]),
        "consumer3": Subscription(topics=["topic1"]),
    }
    assert assign(name, {"topic1": 3, "topic2": 2}, subscriptions) == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2)],
        "consumer2": [tp("topic2", 0), tp("topic2", 1)],
        "consumer3": [tp("topic1", 1)],
    }


@BOTH
def test_a_fresh_assignment_deals_the_sorted_partitions_round_robin(name: str) -> None:
    """AbstractStickyAssignorTest.testTwoConsumersTwoTopicsSixPartitions."""
    subscriptions = {
        c: Subscription(topics=["topic1", "topic2"]) for c in ("consumer1", "consumer2")
    }
    assert assign(name, {"topic1": 3, "topic2": 3}, subscriptions) == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }


@BOTH
def test_a_consumer_owning_min_quota_takes_the_extra_partition(name: str) -> None:
    """AbstractStickyAssignorTest.testConsumerOwningMinQuotaExpectedMaxQuota."""
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, [tp("topic1", 0), tp("topic2", 1)]),
        "consumer2": owning(topics, [tp("topic1", 1), tp("topic2", 2)]),
    }
    assert get_assignor(name).assign({"topic1": 2, "topic2": 3}, subscriptions) == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
    }


def test_only_the_expected_number_of_members_keep_max_quota() -> None:
    """AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers.

    Two members own two partitions each, but with 4 partitions and 3 members only one may keep
    two. Members are visited in member id order, so consumer1 keeps both and consumer2 gives
    back its highest-numbered partition. (Kafka visits them in HashMap order, which there
    happens to put consumer2 first; the shape of the result is the same.)
    """
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, [tp("topic1", 0), tp("topic2", 0)]),
        "consumer2": owning(topics, [tp("topic1", 1), tp("topic2", 1)]),
        "consumer3": owning(topics, []),
    }
    result = assign("sticky", {"topic1": 2, "topic2": 2}, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0), tp("topic2", 0)],
        "consumer2": [tp("topic1", 1)],
        "consumer3": [tp("topic2", 1)],
    }


@BOTH
def test_consumers_under_min_quota_keep_everything_and_fill_up(name: str) -> None:
    """AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota."""
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, [tp("topic1", 0)]),
        "consumer2": owning(topics, [tp("topic1", 1)]),
        "consumer3": owning(topics, []),
    }
    assert assign(name, {"topic1": 2, "topic2": 3}, subscriptions) == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic1", 1), tp("topic2", 2)],
        "consumer3": [tp("topic2", 0)],
    }


@BOTH
def test_a_joining_consumer_takes_only_the_excess_and_a_leaving_one_gives_all(name: str) -> None:
    """AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic."""
    partitions = {"topic": 3}
    first = assign(name, partitions, {"consumer1": Subscription(topics=["topic"])})
    assert first == {"consumer1": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}

    subscriptions = {
        "consumer1": owning(["topic"], first["consumer1"]),
        "consumer2": owning(["topic"], []),
    }
    second = assign(name, partitions, subscriptions)
    assert second == {
        "consumer1": [tp("topic", 0), tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
    }

    third = assign(name, partitions, {"consumer2": owning(["topic"], second["consumer2"])})
    assert set(third["consumer2"]) == {tp("topic", 0), tp("topic", 1), tp("topic", 2)}


@BOTH
def test_each_topic_stays_balanced_as_consumers_come_and_go(name: str) -> None:
    """AbstractStickyAssignorTest.testTopicBalanceAfterReassignment."""
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 12, "topic2": 12}

    def per_topic(assignment: Assignment, topic: str) -> set[int]:
        return {sum(1 for t, _ in parts if t == topic) for parts in assignment.values()}

    result = assign(name, partitions, {"consumer1": Subscription(topics=topics)})
    assert per_topic(result, "topic1") == per_topic(result, "topic2") == {12}

    subscriptions = {
        "consumer1": owning(topics, result["consumer1"]),
        "consumer2": owning(topics, []),
    }
    result = assign(name, partitions, subscriptions)
    assert per_topic(result, "topic1") == per_topic(result, "topic2") == {6}

    subscriptions = carried_over(subscriptions, result)
    subscriptions |= {"consumer3": owning(topics, []), "consumer4": owning(topics, [])}
    result = assign(name, partitions, subscriptions)
    assert per_topic(result, "topic1") == per_topic(result, "topic2") == {3}

    subscriptions = {m: owning(topics, result[m]) for m in ("consumer3", "consumer4")}
    result = assign(name, partitions, subscriptions)
    assert per_topic(result, "topic1") == per_topic(result, "topic2") == {6}


@BOTH
def test_two_consumers_join_and_the_first_two_leave(name: str) -> None:
    """AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics."""
    topics = ["topic1", "topic2"]
    partitions = {"topic1": 3, "topic2": 4}
    subscriptions = {c: Subscription(topics=topics) for c in ("consumer1", "consumer2")}
    result = assign(name, partitions, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1), tp("topic2", 3)],
        "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)],
    }

    subscriptions = carried_over(subscriptions, result)
    subscriptions |= {"consumer3": owning(topics, []), "consumer4": owning(topics, [])}
    result = assign(name, partitions, subscriptions)
    assert result == {
        "consumer1": [tp("topic1", 0), tp("topic2", 1)],
        "consumer2": [tp("topic2", 0), tp("topic1", 1)],
        "consumer3": [tp("topic1", 2), tp("topic2", 3)],
        "consumer4": [tp("topic2", 2)],
    }

    subscriptions = {m: owning(topics, result[m]) for m in ("consumer3", "consumer4")}
    result = assign(name, partitions, subscriptions)
    assert result == {
        "consumer3": [tp("topic1", 2), tp("topic2", 3), tp("topic1", 0), tp("topic2", 1)],
        "consumer4": [tp("topic2", 2), tp("topic1", 1), tp("topic2", 0)],
    }


def test_joining_consumers_receive_only_partitions_given_back() -> None:
    """AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics (transferring ownership).

    Kafka expects topic1-2 and topic2-3 to move to consumer3 and topic2-2 to consumer4; the
    cooperative round leaves exactly those out.
    """
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, parse("topic1-0, topic1-2, topic2-1, topic2-3")),
        "consumer2": owning(topics, parse("topic1-1, topic2-0, topic2-2")),
        "consumer3": owning(topics, []),
        "consumer4": owning(topics, []),
    }
    eager = get_assignor("sticky").assign({"topic1": 3, "topic2": 4}, subscriptions)
    cooperative = get_assignor("cooperative-sticky").assign(
        {"topic1": 3, "topic2": 4}, subscriptions
    )
    left_out = {p: m for m in eager for p in set(eager[m]) - set(cooperative[m])}
    assert left_out == {
        tp("topic1", 2): "consumer3",
        tp("topic2", 3): "consumer3",
        tp("topic2", 2): "consumer4",
    }


@BOTH
def test_sticky_balances_where_round_robin_does_poorly(name: str) -> None:
    """AbstractStickyAssignorTest.testPoorRoundRobinAssignmentScenario."""
    partitions = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    everything = [f"topic{i}" for i in range(1, 6)]
    odd = ["topic1", "topic3", "topic5"]
    subscriptions = {
        "consumer1": Subscription(topics=everything),
        "consumer2": Subscription(topics=odd),
        "consumer3": Subscription(topics=odd),
        "consumer4": Subscription(topics=everything),
    }
    result = assign(name, partitions, subscriptions)
    assert sorted(len(p) for p in result.values()) == [2, 2, 2, 2]


@BOTH
def test_adding_and_removing_a_topic_keeps_the_other_partitions(name: str) -> None:
    """AbstractStickyAssignorTest.testAddRemoveTopicTwoConsumers."""
    partitions = {"topic": 3}
    subscriptions = {c: Subscription(topics=["topic"]) for c in ("consumer1", "consumer2")}
    first = assign(name, partitions, subscriptions)
    assert sorted(len(p) for p in first.values()) == [1, 2]

    partitions = {"topic": 3, "topic2": 3}
    subscriptions = {m: owning(["topic", "topic2"], first[m]) for m in first}
    second = assign(name, partitions, subscriptions)
    assert [len(p) for p in second.values()] == [3, 3]
    for member in first:
        assert set(first[member]) <= set(second[member])

    partitions = {"topic2": 3}
    subscriptions = {m: owning(["topic2"], second[m]) for m in second}
    third = assign(name, partitions, subscriptions)
    assert sorted(len(p) for p in third.values()) == [1, 2]
    for member in first:
        assert set(third[member]) <= set(second[member])


@BOTH
def test_when_one_consumer_leaves_no_partitions_swap_between_others(name: str) -> None:
    """AbstractStickyAssignorTest.testReassignmentAfterOneConsumerLeaves."""
    partitions = {name_of("t", i, 20): i for i in range(1, 20)}
    subscriptions = {
        name_of("c", i, 20): Subscription(topics=[name_of("t", j, 20) for j in range(1, i + 1)])
        for i in range(1, 20)
    }
    first = assign(name, partitions, subscriptions)
    subscriptions = carried_over(subscriptions, first)
    del subscriptions["c10"]
    second = assign(name, partitions, subscriptions)
    assert swaps(first, second) == set()


@BOTH
def test_a_consumer_joining_one_topic_gets_a_balanced_share(name: str) -> None:
    """AbstractStickyAssignorTest.testReassignmentAfterOneConsumerAdded."""
    partitions = {"topic": 20}
    subscriptions = {name_of("c", i, 10): Subscription(topics=["topic"]) for i in range(1, 10)}
    assign(name, partitions, subscriptions)
    subscriptions[name_of("c", 10, 10)] = Subscription(topics=["topic"])
    assert fully_balanced(assign(name, partitions, subscriptions))


@BOTH
def test_same_subscriptions_survive_a_consumer_leaving(name: str) -> None:
    """AbstractStickyAssignorTest.testSameSubscriptions."""
    partitions = {name_of("t", i, 15): i for i in range(1, 15)}
    topics = list(partitions)
    subscriptions = {name_of("c", i, 9): Subscription(topics=topics) for i in range(1, 9)}
    first = assign(name, partitions, subscriptions)
    subscriptions = carried_over(subscriptions, first)
    del subscriptions["c5"]
    second = assign(name, partitions, subscriptions)
    for member in second:
        assert len(set(first[member]) - set(second[member])) == 0


@BOTH
def test_consumers_leaving_random_subscriptions_stay_valid_and_sticky(name: str) -> None:
    """AbstractStickyAssignorTest.testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription.

    Kafka's sizes (40 topics, 200 consumers, 50 leaving) with a fixed seed.
    """
    rng = random.Random(20240601)
    partitions = {name_of("t", i, 40): rng.randint(1, 10) for i in range(40)}
    subscriptions = {
        name_of("c", i, 200): Subscription(
            topics=[name_of("t", rng.randrange(40), 40) for _ in range(rng.randrange(20))]
        )
        for i in range(200)
    }
    first = assign(name, partitions, subscriptions)
    subscriptions = carried_over(subscriptions, first)
    for _ in range(50):
        subscriptions.pop(name_of("c", rng.randrange(200), 200), None)
    second = assign(name, partitions, subscriptions)
    assert swaps(first, second) == set()


@BOTH
def test_a_new_subscription_is_balanced(name: str) -> None:
    """AbstractStickyAssignorTest.testNewSubscription."""
    partitions = {name_of("t", i, 5): 1 for i in range(1, 5)}
    topics = {i: [name_of("t", j, 5) for j in range(i, 3 * i - 1)] for i in range(3)}
    subscriptions = {name_of("c", i, 3): Subscription(topics=topics[i]) for i in range(3)}
    assign(name, partitions, subscriptions)
    subscriptions["c0"] = Subscription(topics=[*topics[0], "t1"])
    assign(name, partitions, subscriptions)


@BOTH
def test_existing_assignments_move_only_as_needed(name: str) -> None:
    """AbstractStickyAssignorTest.testMoveExistingAssignments."""
    partitions = {f"topic{i}": 1 for i in range(1, 7)}
    subscriptions = {
        "consumer1": owning(["topic1", "topic2"], [tp("topic1", 0)]),
        "consumer2": owning(
            ["topic1", "topic2", "topic3", "topic4"], [tp("topic2", 0), tp("topic3", 0)]
        ),
        "consumer3": owning(
            ["topic2", "topic3", "topic4", "topic5", "topic6"],
            [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)],
        ),
    }
    assign(name, partitions, subscriptions)


@BOTH
def test_remaining_consumers_keep_their_partition_when_the_leader_leaves(name: str) -> None:
    """AbstractStickyAssignorTest.testStickiness."""
    partitions = {"topic1": 3}
    subscriptions = {f"consumer{i}": Subscription(topics=["topic1"]) for i in range(1, 5)}
    first = assign(name, partitions, subscriptions)
    assert all(len(p) <= 1 for p in first.values())
    subscriptions = {
        m: owning(["topic1"], first[m]) for m in ("consumer2", "consumer3", "consumer4")
    }
    second = assign(name, partitions, subscriptions)
    for member, partitions_now in second.items():
        assert len(partitions_now) == 1
        assert set(first[member]) <= set(partitions_now)


@BOTH
def test_a_deleted_topic_is_skipped(name: str) -> None:
    """AbstractStickyAssignorTest.testAssignmentUpdatedForDeletedTopic."""
    subscriptions = {"consumer": Subscription(topics=["topic1", "topic2", "topic3"])}
    result = assign(name, {"topic1": 1, "topic3": 100}, subscriptions)
    assert len(result["consumer"]) == 101


@BOTH
def test_the_only_subscribed_topic_being_deleted_leaves_the_consumer_empty(name: str) -> None:
    """AbstractStickyAssignorTest.testNoExceptionThrownWhenOnlySubscribedTopicDeleted."""
    first = assign(name, {"topic": 3}, {"consumer": Subscription(topics=["topic"])})
    subscriptions = {"consumer": owning(["topic"], first["consumer"])}
    assert get_assignor(name).assign({}, subscriptions) == {"consumer": []}


@BOTH
def test_members_owning_their_quota_keep_it(name: str) -> None:
    """AbstractStickyAssignorTest.testAllConsumersReachExpectedQuotaAndAreConsideredFilled."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1)]),
        "consumer2": owning(["topic"], [tp("topic", 2)]),
        "consumer3": owning(["topic"], []),
    }
    assert assign(name, {"topic": 4}, subscriptions) == {
        "consumer1": [tp("topic", 0), tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 3)],
    }


@BOTH
@pytest.mark.parametrize("stale_generation", [9, -1], ids=["older", "unknown"])
def test_claims_of_a_stale_generation_lose_to_the_current_one(
    name: str, stale_generation: int
) -> None:
    """AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration
    and testOwnedPartitionsAreInvalidatedForConsumerWithNoGeneration."""
    topics = ["topic", "topic2"]
    claimed = [tp("topic", 0), tp("topic", 2), tp("topic2", 1)]
    subscriptions = {
        "consumer1": owning(topics, claimed, 10),
        "consumer2": owning(topics, claimed, stale_generation),
    }
    result = assign(name, {"topic": 3, "topic2": 3}, subscriptions)
    assert set(result["consumer1"]) == set(claimed)
    assert set(result["consumer2"]) == {tp("topic", 1), tp("topic2", 0), tp("topic2", 2)}


@BOTH
def test_a_partition_claimed_twice_in_one_generation_goes_to_someone_else(name: str) -> None:
    """AbstractStickyAssignorTest.testPartitionsTransferringOwnershipIncludeThePartitionClaimedBy
    MultipleConsumersInSameGeneration (and StickyAssignorTest...WithEqualPartitionsPerConsumer)."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1)]),
        "consumer2": owning(["topic"], [tp("topic", 0), tp("topic", 2)]),
        "consumer3": owning(["topic"], []),
    }
    assert assign(name, {"topic": 3}, subscriptions) == {
        "consumer1": [tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 0)],
    }


def test_a_partition_claimed_twice_with_unequal_shares_is_dealt_fresh() -> None:
    """StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultiple
    ConsumersInSameGenerationWithUnequalPartitionsPerConsumer."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1)]),
        "consumer2": owning(["topic"], [tp("topic", 0), tp("topic", 2)]),
        "consumer3": owning(["topic"], []),
    }
    assert assign("sticky", {"topic": 4}, subscriptions) == {
        "consumer1": [tp("topic", 1), tp("topic", 3)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [tp("topic", 0)],
    }


@BOTH
def test_partitions_go_to_the_highest_generation_claiming_them(name: str) -> None:
    """AbstractStickyAssignorTest.testEnsurePartitionsAssignedToHighestGeneration."""
    topics = ["topic", "topic2", "topic3"]
    subscriptions = {
        "consumer1": owning(topics, parse("topic-0, topic2-0, topic3-0"), 10),
        "consumer2": owning(topics, parse("topic-1, topic2-1, topic3-1"), 9),
        "consumer3": owning(topics, parse("topic2-1, topic3-0, topic3-2"), 8),
    }
    result = assign(name, {"topic": 3, "topic2": 3, "topic3": 3}, subscriptions)
    assert render(result["consumer1"]) == "topic-0, topic2-0, topic3-0"
    assert render(result["consumer2"]) == "topic-1, topic2-1, topic3-1"
    assert render(result["consumer3"]) == "topic-2, topic2-2, topic3-2"


@BOTH
def test_members_of_older_generations_keep_what_nobody_newer_claims(name: str) -> None:
    """AbstractStickyAssignorTest.testNoReassignmentOnCurrentMembers."""
    topics = ["topic", "topic2", "topic3", "topic1"]
    subscriptions = {
        "consumer1": owning(topics, [], -1),
        "consumer2": owning(topics, parse("topic-0, topic2-0, topic1-0"), 9),
        "consumer3": owning(topics, parse("topic3-2, topic2-2, topic1-1"), 8),
        "consumer4": owning(topics, parse("topic3-1, topic-1, topic-2"), 7),
    }
    result = assign(name, {t: 3 for t in topics}, subscriptions)
    assert render(result["consumer1"]) == "topic1-2, topic2-1, topic3-0"
    assert render(result["consumer2"]) == "topic-0, topic1-0, topic2-0"


@BOTH
def test_claims_across_several_generations_resolve_to_the_newest(name: str) -> None:
    """AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration."""
    topics = ["topic", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, parse("topic-0, topic2-1, topic-1"), 10),
        "consumer2": owning(topics, parse("topic-0, topic2-1, topic2-2"), 8),
    }
    result = assign(name, {"topic": 3, "topic2": 3}, subscriptions)
    assert render(result["consumer1"]) == "topic-0, topic-1, topic2-1"
    assert render(result["consumer2"]) == "topic-2, topic2-0, topic2-2"


@BOTH
@pytest.mark.parametrize("generations", list(itertools.permutations((1, 2, 3))))
def test_a_partition_claimed_in_three_generations_is_assigned_once(
    name: str, generations: tuple[int, int, int]
) -> None:
    """AbstractStickyAssignorTest.testSubscriptionNotEqualAndAssignSamePartitionWith3Generation."""
    subscriptions = {
        "consumer1": owning(["topic"], parse("topic-0, topic-2"), generations[0]),
        "consumer2": owning(["topic"], parse("topic-1, topic-2, topic-3"), generations[1]),
        "consumer3": owning(["topic"], parse("topic-2, topic-4, topic-5"), generations[2]),
        "consumer4": owning(["topic1"], parse("topic1-0"), 2),
    }
    result = assign(name, {"topic": 6, "topic1": 1}, subscriptions)
    assert all(1 <= len(p) <= 2 for p in result.values())


UNIFORM_EXPECTED = [
    "t1-0, t1-3, t2-0, t2-3, t2-6",
    "t1-1, t1-4, t2-1, t2-4, t3-0",
    "t1-2, t1-5, t2-2, t2-5, t3-1",
]
NON_EQUAL_EXPECTED = [
    "t1-5, t2-0, t2-2, t2-4, t2-6",
    "t1-3, t2-1, t2-3, t2-5, t3-0",
    "t1-0, t1-1, t1-2, t1-4, t3-1",
]


@BOTH
@pytest.mark.parametrize(
    ("consumer_topics", "expected"),
    [
        pytest.param([["t1", "t2", "t3"]] * 3, UNIFORM_EXPECTED, id="uniform"),
        pytest.param([["t1", "t2", "t3"]] * 2 + [["t1", "t3"]], NON_EQUAL_EXPECTED, id="non-equal"),
    ],
)
@pytest.mark.parametrize("owned", [False, True], ids=["fresh", "owning-the-result"])
def test_kafka_non_rack_aware_expectations_hold(
    name: str, consumer_topics: list[list[str]], expected: list[str], owned: bool
) -> None:
    """AbstractStickyAssignorTest.testRackAwareAssignmentWith{Uniform,NonEqual}Subscription,
    the non-rack-aware expectations, fresh and with every consumer already owning them."""
    subscriptions = {
        f"consumer{i}": Subscription(
            topics=topics, owned_partitions=parse(expected[i]) if owned else ()
        )
        for i, topics in enumerate(consumer_topics)
    }
    result = get_assignor(name).assign({"t1": 6, "t2": 7, "t3": 2}, subscriptions)
    assert [render(result[f"consumer{i}"]) for i in range(3)] == expected


def test_eager_sticky_reassigns_from_the_previous_assignment_when_racks_are_ignored() -> None:
    """AbstractStickyAssignorTest.testRackAwareAssignmentWithNonEqualSubscription, the
    StickyAssignor case with every rack matching: the member starting from an unbalanced
    previous assignment ends balanced and valid."""
    owned = [
        "t1-0, t1-1, t1-2, t1-3, t1-4",
        "t1-5, t2-0, t2-1, t2-2, t2-3",
        "t2-4, t2-5, t2-6, t3-0, t3-1",
    ]
    topics = [["t1", "t2", "t3"]] * 2 + [["t1", "t3"]]
    subscriptions = {
        f"consumer{i}": Subscription(topics=topics[i], owned_partitions=parse(owned[i]))
        for i in range(3)
    }
    result = assign("sticky", {"t1": 6, "t2": 7, "t3": 2}, subscriptions)
    assert [len(result[f"consumer{i}"]) for i in range(3)] == [5, 5, 5]


# -- StickyAssignorTest --------------------------------------------------------------------------


def test_sticky_is_the_kafka_sticky_assignor() -> None:
    assert isinstance(get_assignor("sticky"), StickyAssignor)


@pytest.mark.parametrize("equal_subscriptions", [True, False], ids=["equal", "non-equal"])
def test_multiple_generations_keep_partitions_with_their_latest_owner(
    equal_subscriptions: bool,
) -> None:
    """StickyAssignorTest.testAssignmentWithMultipleGenerations1."""
    all_topics = ["topic", "topic2"]
    topics2 = all_topics if equal_subscriptions else ["topic"]
    partitions = {"topic": 6, "topic2": 6}
    subscriptions = {
        "consumer1": Subscription(topics=all_topics),
        "consumer2": Subscription(topics=topics2),
        "consumer3": Subscription(topics=all_topics),
    }
    r1 = assign("sticky", partitions, subscriptions)
    assert [len(p) for p in r1.values()] == [4, 4, 4]

    subscriptions = {
        "consumer1": owning(all_topics, r1["consumer1"], 1),
        "consumer2": owning(topics2, r1["consumer2"], 1),
    }
    r2 = assign("sticky", partitions, subscriptions)
    assert [len(p) for p in r2.values()] == [6, 6]
    if equal_subscriptions:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    subscriptions = {
        "consumer2": owning(topics2, r2["consumer2"], 2),
        "consumer3": owning(all_topics, r1["consumer3"], 1),
    }
    r3 = assign("sticky", partitions, subscriptions)
    assert [len(p) for p in r3.values()] == [6, 6]


@pytest.mark.parametrize("equal_subscriptions", [True, False], ids=["equal", "non-equal"])
def test_a_member_rejoining_after_others_moved_on_gets_its_share(equal_subscriptions: bool) -> None:
    """StickyAssignorTest.testAssignmentWithMultipleGenerations2."""
    all_topics = ["topic", "topic2", "topic3"]
    topics1 = all_topics if equal_subscriptions else ["topic"]
    topics3 = all_topics if equal_subscriptions else ["topic", "topic2"]
    partitions = {"topic": 4, "topic2": 4, "topic3": 4}
    subscriptions = {
        "consumer1": Subscription(topics=topics1),
        "consumer2": Subscription(topics=all_topics),
        "consumer3": Subscription(topics=topics3),
    }
    r1 = assign("sticky", partitions, subscriptions)
    assert [len(p) for p in r1.values()] == [4, 4, 4]

    r2 = assign("sticky", partitions, {"consumer2": owning(all_topics, r1["consumer2"], 1)})
    assert len(r2["consumer2"]) == 12
    assert set(r1["consumer2"]) <= set(r2["consumer2"])

    subscriptions = {
        "consumer1": owning(topics1, r1["consumer1"], 1),
        "consumer2": owning(all_topics, r2["consumer2"], 2),
        "consumer3": owning(topics3, r1["consumer3"], 1),
    }
    r3 = assign("sticky", partitions, subscriptions)
    assert [len(p) for p in r3.values()] == [4, 4, 4]


@pytest.mark.parametrize("equal_subscriptions", [True, False], ids=["equal", "non-equal"])
def test_conflicting_previous_generations_resolve_to_the_newest_claims(
    equal_subscriptions: bool,
) -> None:
    """StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations."""
    all_topics = ["topic", "topic2", "topic3"]
    topics1 = all_topics if equal_subscriptions else ["topic"]
    topics2 = all_topics if equal_subscriptions else ["topic", "topic2"]
    c1_owned = parse(
        "topic-0, topic-1, topic-2, topic2-2, topic2-3, topic3-0"
        if equal_subscriptions
        else "topic-0, topic-1, topic-2, topic-3"
    )
    c2_owned = parse("topic-0, topic-1, topic2-0, topic2-1, topic2-2, topic2-3")
    c3_owned = parse("topic-2, topic-3, topic3-0, topic3-1, topic3-2, topic3-3")
    subscriptions = {
        "consumer1": owning(topics1, c1_owned, 1),
        "consumer2": owning(topics2, c2_owned, 2),
        "consumer3": owning(all_topics, c3_owned, 2),
    }
    result = assign("sticky", {"topic": 4, "topic2": 4, "topic3": 4}, subscriptions)
    assert [len(p) for p in result.values()] == [4, 4, 4]
    assert set(result["consumer2"]) <= set(c2_owned)
    assert set(result["consumer3"]) <= set(c3_owned)


def test_a_previous_assignment_without_generation_still_counts() -> None:
    """StickyAssignorTest.testSchemaBackwardCompatibility: v0 user data has no generation."""
    subscriptions = {
        "consumer1": owning(["topic"], parse("topic-0, topic-2"), 1),
        "consumer2": owning(["topic"], parse("topic-1"), -1),
        "consumer3": Subscription(topics=["topic"]),
    }
    result = assign("sticky", {"topic": 3}, subscriptions)
    assert [len(p) for p in result.values()] == [1, 1, 1]
    assert set(result["consumer1"]) <= {tp("topic", 0), tp("topic", 2)}
    assert result["consumer2"] == [tp("topic", 1)]


@BOTH
def test_old_subscription_versions_keep_their_partitions(name: str) -> None:
    """(Cooperative)StickyAssignorTest.testAssignorWithOldVersionSubscriptions."""
    subscriptions = {
        "consumer1": owning(["topic1"], [tp("topic1", 0)]),
        "consumer2": owning(["topic1"], [tp("topic1", 1)]),
        "consumer3": owning(["topic1"], []),
    }
    assert assign(name, {"topic1": 3}, subscriptions) == {
        "consumer1": [tp("topic1", 0)],
        "consumer2": [tp("topic1", 1)],
        "consumer3": [tp("topic1", 2)],
    }


# -- properties ----------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]
Group = tuple[dict[str, int], dict[str, Subscription]]


@st.composite
def groups(draw: st.DrawFn, equal_subscriptions: bool = False, history: bool = True) -> Group:
    """A topic layout and a group whose members may report (conflicting, stale) ownership."""
    partitions = draw(
        st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 8), min_size=1, max_size=4)
    )
    member_ids = draw(
        st.lists(st.text("cmxz", min_size=1, max_size=3), min_size=1, max_size=6, unique=True)
    )
    existing = [(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
    claimable = [*existing, ("gone", 0), ("a", 99)]
    shared = draw(st.sets(st.sampled_from([*TOPICS, "missing"]), min_size=1))
    subscriptions = {}
    for member_id in member_ids:
        topics = (
            shared if equal_subscriptions else draw(st.sets(st.sampled_from(TOPICS), min_size=1))
        )
        owned = draw(st.lists(st.sampled_from(claimable), max_size=6)) if history else []
        generation = draw(st.integers(-1, 3)) if history else -1
        subscriptions[member_id] = Subscription(
            topics=sorted(topics), owned_partitions=owned, generation_id=generation
        )
    return partitions, subscriptions


@BOTH
@given(group=groups())
def test_no_partition_is_given_to_two_members_or_to_a_non_subscriber(
    name: str, group: Group
) -> None:
    partitions, subscriptions = group
    result = get_assignor(name).assign(partitions, subscriptions)
    complete = name == "sticky"  # a cooperative round leaves moving partitions out
    assert assignment_problems(partitions, subscriptions, result, complete=complete) == []


@given(group=groups())
def test_sticky_assigns_every_partition_and_is_balanced(group: Group) -> None:
    partitions, subscriptions = group
    result = get_assignor("sticky").assign(partitions, subscriptions)
    assert assignment_problems(partitions, subscriptions, result) == []
    assert balance_problems(subscriptions, result) == []


@given(group=groups(equal_subscriptions=True))
def test_equal_subscriptions_give_counts_within_one(group: Group) -> None:
    partitions, subscriptions = group
    assert fully_balanced(get_assignor("sticky").assign(partitions, subscriptions))


@BOTH
@given(group=groups(), data=st.data())
def test_a_balanced_assignment_is_kept_as_it_is(
    name: str, group: Group, data: st.DataObject
) -> None:
    """Stickiness: with nothing changed, a valid balanced previous assignment does not move."""
    partitions, subscriptions = group
    source = data.draw(st.sampled_from(["sticky", "roundrobin", "range"]))
    previous = get_assignor(source).assign(partitions, subscriptions)
    assume(balance_problems(subscriptions, previous) == [])
    again = get_assignor(name).assign(partitions, carried_over(subscriptions, previous, 4))
    assert {m: set(p) for m, p in again.items()} == {m: set(p) for m, p in previous.items()}


@BOTH
@given(group=groups())
@settings(max_examples=50)
def test_the_result_does_not_depend_on_the_order_of_members(name: str, group: Group) -> None:
    partitions, subscriptions = group
    backwards = dict(reversed(list(subscriptions.items())))
    assignor = get_assignor(name)
    assert assignor.assign(partitions, subscriptions) == assignor.assign(partitions, backwards)
