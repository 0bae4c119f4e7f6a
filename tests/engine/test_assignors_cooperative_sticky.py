"""The ``cooperative-sticky`` assignor: Kafka's CooperativeStickyAssignorTest, then properties.

The scenarios it shares with ``sticky`` (Kafka's AbstractStickyAssignorTest) run for both
assignors in ``test_assignors_sticky.py``.
"""

from __future__ import annotations

from hypothesis import given

from coordinator_engine.assignors import CooperativeStickyAssignor, Subscription, get_assignor
from coordinator_engine.assignors._validation import assignment_problems

from .test_assignors_sticky import (
    Group,
    cooperative_revocations,
    groups,
    owning,
    parse,
    render,
    settled,
    tp,
)

assignor = get_assignor("cooperative-sticky")


def test_cooperative_sticky_is_the_kafka_cooperative_sticky_assignor() -> None:
    assert isinstance(assignor, CooperativeStickyAssignor)
    assert assignor.name == "cooperative-sticky"


def test_a_partition_claimed_twice_in_one_generation_waits_for_both_to_revoke() -> None:
    """CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedBy
    MultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1)]),
        "consumer2": owning(["topic"], [tp("topic", 0), tp("topic", 2)]),
        "consumer3": owning(["topic"], []),
    }
    result = assignor.assign({"topic": 3}, subscriptions)
    assert result == {
        "consumer1": [tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [],
    }
    assert settled("cooperative-sticky", {"topic": 3}, subscriptions, result)["consumer3"] == [
        tp("topic", 0)
    ]


def test_a_partition_claimed_twice_with_unequal_shares_waits_for_both_to_revoke() -> None:
    """CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedBy
    MultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1)]),
        "consumer2": owning(["topic"], [tp("topic", 0), tp("topic", 2)]),
        "consumer3": owning(["topic"], []),
    }
    assert assignor.assign({"topic": 4}, subscriptions) == {
        "consumer1": [tp("topic", 1), tp("topic", 3)],
        "consumer2": [tp("topic", 2)],
        "consumer3": [],
    }


def test_a_joining_consumer_gets_the_revoked_partition_one_round_later() -> None:
    """AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic, as the cooperative rounds go."""
    subscriptions = {
        "consumer1": owning(["topic"], [tp("topic", 0), tp("topic", 1), tp("topic", 2)]),
        "consumer2": owning(["topic"], []),
    }
    first = assignor.assign({"topic": 3}, subscriptions)
    assert first == {"consumer1": [tp("topic", 0), tp("topic", 1)], "consumer2": []}

    subscriptions = {m: owning(["topic"], first[m]) for m in first}
    assert assignor.assign({"topic": 3}, subscriptions) == {
        "consumer1": [tp("topic", 0), tp("topic", 1)],
        "consumer2": [tp("topic", 2)],
    }


def test_a_partition_given_back_over_quota_waits_one_round() -> None:
    """AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers."""
    topics = ["topic1", "topic2"]
    subscriptions = {
        "consumer1": owning(topics, [tp("topic1", 0), tp("topic2", 0)]),
        "consumer2": owning(topics, [tp("topic1", 1), tp("topic2", 1)]),
        "consumer3": owning(topics, []),
    }
    assert assignor.assign({"topic1": 2, "topic2": 2}, subscriptions) == {
        "consumer1": [tp("topic1", 0), tp("topic2", 0)],
        "consumer2": [tp("topic1", 1)],
        "consumer3": [],
    }


def test_partitions_of_a_member_that_left_move_at_once() -> None:
    """Nobody holds them, so nothing needs revoking first."""
    subscriptions = {
        "consumer2": owning(["topic"], [tp("topic", 1)]),
        "consumer3": owning(["topic"], [tp("topic", 2)]),
    }
    result = assignor.assign({"topic": 4}, subscriptions)
    assert result == {
        "consumer2": [tp("topic", 1), tp("topic", 0)],
        "consumer3": [tp("topic", 2), tp("topic", 3)],
    }


def test_unequal_subscriptions_reach_kafkas_assignment_in_two_rounds() -> None:
    """AbstractStickyAssignorTest.testRackAwareAssignmentWithNonEqualSubscription, the
    CooperativeStickyAssignor case with every rack matching: the intermediate round, then the
    final one (the general path, where moves are found by balancing)."""
    topics = [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]]
    partitions = {"t1": 6, "t2": 7, "t3": 2}

    def run(owned: list[str]) -> list[str]:
        subscriptions = {
            f"consumer{i}": Subscription(topics=topics[i], owned_partitions=parse(owned[i]))
            for i in range(3)
        }
        result = assignor.assign(partitions, subscriptions)
        return [render(result[f"consumer{i}"]) for i in range(3)]

    intermediate = run(
        [
            "t1-0, t1-1, t1-2, t1-3, t1-4",
            "t1-5, t2-0, t2-1, t2-2, t2-3",
            "t2-4, t2-5, t2-6, t3-0, t3-1",
        ]
    )
    assert intermediate == ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
    assert run(intermediate) == [
        "t1-2, t1-3, t1-4, t2-4, t2-5",
        "t2-0, t2-1, t2-2, t2-3, t2-6",
        "t1-0, t1-1, t1-5, t3-0, t3-1",
    ]


# -- properties ----------------------------------------------------------------------------------


@given(group=groups())
def test_no_partition_goes_from_one_owner_to_another_in_one_round(group: Group) -> None:
    partitions, subscriptions = group
    cooperative_revocations(subscriptions, assignor.assign(partitions, subscriptions))


@given(group=groups())
def test_partitions_nobody_reports_owning_are_assigned_at_once(group: Group) -> None:
    partitions, subscriptions = group
    result = assignor.assign(partitions, subscriptions)
    assigned = {p for parts in result.values() for p in parts}
    claimed = {p for s in subscriptions.values() for p in s.owned_partitions}
    subscribed = {t for s in subscriptions.values() for t in s.topics}
    for topic, count in partitions.items():
        if topic in subscribed:
            assert {(topic, p) for p in range(count)} - claimed <= assigned


@given(group=groups())
def test_the_round_is_the_sticky_assignment_minus_partitions_still_owned_elsewhere(
    group: Group,
) -> None:
    partitions, subscriptions = group
    eager = get_assignor("sticky").assign(partitions, subscriptions)
    cooperative = assignor.assign(partitions, subscriptions)
    for member, partitions_now in eager.items():
        kept = set(cooperative[member])
        assert cooperative[member] == [p for p in partitions_now if p in kept]
        for p in set(partitions_now) - kept:
            assert any(
                p in s.owned_partitions and p not in eager[other]
                for other, s in subscriptions.items()
                if other != member
            )


@given(group=groups())
def test_follow_up_rounds_settle_on_a_complete_balanced_assignment(group: Group) -> None:
    partitions, subscriptions = group
    result = assignor.assign(partitions, subscriptions)
    assert assignment_problems(partitions, subscriptions, result, complete=False) == []
    settled("cooperative-sticky", partitions, subscriptions, result)
