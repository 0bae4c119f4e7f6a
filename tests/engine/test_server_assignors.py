"""KIP-848's server-side assignors: Kafka's assignor tests by name, then properties.

Kafka's tests (``group-coordinator/src/test/.../assignor/``) name topics by id and feed members
through hash maps and sets, so where several balanced answers exist the one they assert is the
one their hash order happens to pick. Here every order is a sort (member ids, topic names), so a
test below asserts Kafka's exact assignment wherever Kafka's answer does not hang on hash order,
and otherwise this module's exact assignment beside what Kafka's and ours share (what each
member keeps, how many partitions it ends with); the docstring says which.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from coordinator_engine.assignors import Subscription
from coordinator_engine.assignors._validation import assignment_problems, balance_problems
from coordinator_engine.server_assignors import (
    DEFAULT_SERVER_ASSIGNOR,
    SERVER_ASSIGNORS,
    MemberSpec,
    SubscriptionType,
    UnsupportedAssignorError,
    assign,
    assign_uniform,
    group_subscription_type,
)

Target = dict[str, dict[str, frozenset[int]]]


def member(
    topics: Iterable[str],
    assignment: Mapping[str, Iterable[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    owned = {t: frozenset(p) for t, p in (assignment or {}).items()}
    return MemberSpec(frozenset(topics), owned, instance_id)


def target(**members: Mapping[str, Iterable[int]]) -> Target:
    """An expected assignment: ``target(A={"topic1": [0, 1]}, B={})``."""
    return {m: {t: frozenset(p) for t, p in a.items()} for m, a in members.items()}


def uniform(members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> Target:
    return assign("uniform", members, partitions)


def heterogeneous(members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> Target:
    """The heterogeneous builder whatever the subscriptions, as Kafka's tests call it with
    ``SubscriptionType.HETEROGENEOUS``."""
    return assign_uniform(members, partitions, builder=SubscriptionType.HETEROGENEOUS)


def kept(members: Mapping[str, MemberSpec], result: Target) -> dict[str, int]:
    """How many of its previous partitions each member keeps."""
    return {
        m: sum(len(parts & spec.assignment.get(t, frozenset())) for t, parts in result[m].items())
        for m, spec in members.items()
    }


def sizes(result: Target) -> dict[str, int]:
    return {m: sum(map(len, a.values())) for m, a in result.items()}


# -- the registry ----------------------------------------------------------------------------------


def test_the_coordinator_serves_uniform_by_default_and_range() -> None:
    assert SERVER_ASSIGNORS == ("uniform", "range")
    assert DEFAULT_SERVER_ASSIGNOR == "uniform"
    for name in SERVER_ASSIGNORS:
        assert assign(name, {}, {}) == {}


def test_an_unknown_assignor_name_is_unsupported_and_the_error_lists_the_served_ones() -> None:
    with pytest.raises(UnsupportedAssignorError, match=r"'sticky'.*'uniform', 'range'"):
        assign("sticky", {"A": member(["t"])}, {"t": 1})
    assert issubclass(UnsupportedAssignorError, ValueError)


def test_a_bad_partition_count_is_refused_naming_the_topic() -> None:
    for count in (-1, True, "3", 2.0):
        with pytest.raises(ValueError, match="'orders'"):
            assign("uniform", {"A": member(["orders"])}, {"orders": count})  # type: ignore[dict-item]


def test_member_spec_keeps_its_topics_as_a_frozenset_and_refuses_a_bare_string() -> None:
    spec = MemberSpec(["b", "a"], {"a": [1, 0]})  # type: ignore[arg-type]
    assert spec.topics == frozenset({"a", "b"})
    assert spec.assignment == {"a": frozenset({0, 1})}
    with pytest.raises(TypeError, match="collection of topic names"):
        MemberSpec("orders", {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must map topic names"):
        MemberSpec(frozenset(), [("t", 0)])  # type: ignore[arg-type]


def test_the_subscription_type_counts_only_topics_that_can_be_assigned() -> None:
    """Kafka counts subscribers per topic name; a name without partitions changes nothing that
    is assigned, so here it does not make a group heterogeneous."""
    same = {"A": member(["t"]), "B": member(["t"])}
    assert group_subscription_type(same, {"t": 2}) is SubscriptionType.HOMOGENEOUS
    ghost = {"A": member(["t", "ghost"]), "B": member(["t"])}
    assert group_subscription_type(ghost, {"t": 2}) is SubscriptionType.HOMOGENEOUS
    assert group_subscription_type(ghost, {"t": 2, "ghost": 1}) is SubscriptionType.HETEROGENEOUS


def test_the_homogeneous_builder_refuses_different_subscriptions() -> None:
    members = {"A": member(["t"]), "B": member(["u"])}
    with pytest.raises(ValueError, match="same topics"):
        assign_uniform(members, {"t": 1, "u": 1}, builder=SubscriptionType.HOMOGENEOUS)


@pytest.mark.parametrize("name", SERVER_ASSIGNORS)
def test_racks_are_not_read(name: str) -> None:
    """As in Kafka 4, whose server-side assignors lost rack awareness (KAFKA-16694)."""
    topics = {"t": 5, "u": 3}
    plain = {m: member(["t", "u"] if m != "C" else ["t"]) for m in "ABC"}
    racked = {
        m: MemberSpec(spec.topics, spec.assignment, rack_id=f"rack-{i}")
        for i, (m, spec) in enumerate(plain.items())
    }
    assert assign(name, racked, topics) == assign(name, plain, topics)


# -- OptimizedUniformAssignmentBuilderTest (the homogeneous builder) -------------------------------


def test_one_member_no_topic_subscription() -> None:
    """OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription. Kafka returns no
    member at all; here every member is in the result, with nothing."""
    assert uniform({"A": member([])}, {"topic1": 3}) == target(A={})


def test_one_member_subscribed_to_nonexistent_topic() -> None:
    """OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic. Kafka's
    assignor throws; its coordinator never passes it a topic the metadata lacks. Here the
    caller's metadata is the mapping, and a topic missing from it is not assigned."""
    assert uniform({"A": member(["topic2"])}, {"topic1": 3}) == target(A={})


def test_first_assignment_two_members_two_topics_no_member_racks() -> None:
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks.

    Kafka: A gets topic1-0 and topic3-0..1, B topic1-1..2 (its hash order lists topic3 first).
    Shared: A, first in order, gets 3 of the 5 partitions, B 2. Here topics are handed out in
    name order, so each member gets whole topics."""
    members = {"A": member(["topic1", "topic3"]), "B": member(["topic1", "topic3"])}
    result = uniform(members, {"topic1": 3, "topic3": 2})
    assert sizes(result) == {"A": 3, "B": 2}
    assert result == target(A={"topic1": [0, 1, 2]}, B={"topic3": [0, 1]})


def test_first_assignment_num_members_greater_than_total_num_partitions() -> None:
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions."""
    members = {m: member(["topic3"]) for m in "ABC"}
    assert uniform(members, {"topic3": 2}) == target(A={"topic3": [0]}, B={"topic3": [1]}, C={})


def test_validity_and_balance_for_large_sample_set() -> None:
    """OptimizedUniformAssignmentBuilderTest.testValidityAndBalanceForLargeSampleSet: 99 topics
    of 3 partitions over 49 members."""
    partitions = {f"topic-{i}": 3 for i in range(1, 100)}
    members = {f"member{i}": member(partitions) for i in range(1, 50)}
    result = uniform(members, partitions)
    assert problems(members, partitions, result) == []
    assert set(sizes(result).values()) == {6, 7}


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
        "B": member(["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
    }
    assert uniform(members, {"topic1": 3, "topic2": 3}) == target(
        A={"topic1": [0, 1], "topic2": [0]}, B={"topic1": [2], "topic2": [1, 2]}
    )


def test_reassignment_when_partitions_are_added_for_two_members_two_topics() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics.

    Kafka: A gets topic1-3 and topic2-3..4, B topic1-4..5. Shared: both keep all they had, A
    ends with 6 and B with 5. Here the new partitions go out in name order: A takes topic1-3..5,
    B topic2-3..4."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 2], "topic2": [0]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [1, 2]}),
    }
    result = uniform(members, {"topic1": 6, "topic2": 5})
    assert kept(members, result) == {"A": 3, "B": 3}
    assert sizes(result) == {"A": 6, "B": 5}
    assert result == target(
        A={"topic1": [0, 2, 3, 4, 5], "topic2": [0]}, B={"topic1": [1], "topic2": [1, 2, 3, 4]}
    )


def test_uniform_a_member_added_after_the_initial_assignment_takes_a_third() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 2], "topic2": [0]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [1, 2]}),
        "C": member(["topic1", "topic2"]),
    }
    assert uniform(members, {"topic1": 3, "topic2": 3}) == target(
        A={"topic1": [0, 2]}, B={"topic1": [1], "topic2": [1]}, C={"topic2": [0, 2]}
    )


def test_uniform_a_member_removed_leaves_its_partitions_to_the_others() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics.

    Kafka: A gets topic2-2 and B topic1-2 (C's partitions). Shared: both keep theirs and take
    one of C's. Here they go out in name order: A takes topic1-2, B topic2-2."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0], "topic2": [0]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [1]}),
    }
    result = uniform(members, {"topic1": 3, "topic2": 3})
    assert kept(members, result) == {"A": 2, "B": 2}
    assert result == target(
        A={"topic1": [0, 2], "topic2": [0]}, B={"topic1": [1], "topic2": [1, 2]}
    )


def test_uniform_a_topic_unsubscribed_by_all_is_revoked_from_all() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {
        "A": member(["topic2"], {"topic1": [0], "topic2": [0]}),
        "B": member(["topic2"], {"topic1": [1], "topic2": [1]}),
    }
    assert uniform(members, {"topic1": 2, "topic2": 2}) == target(
        A={"topic2": [0]}, B={"topic2": [1]}
    )


def test_the_extra_partitions_stay_with_members_that_hold_them() -> None:
    """Where this module and Kafka differ: Kafka gives the ``P % M`` extra partitions to the
    first members it iterates, so a member holding one extra can lose it to a member that then
    gains one. Here the members already holding more than ``P // M`` keep their extra: nothing
    moves. Seven partitions over A (2), B (3) and C (2): quotas 2, 3, 2."""
    members = {
        "A": member(["t"], {"t": [0, 1]}),
        "B": member(["t"], {"t": [2, 3, 4]}),
        "C": member(["t"], {"t": [5, 6]}),
    }
    assert uniform(members, {"t": 7}) == target(
        A={"t": [0, 1]}, B={"t": [2, 3, 4]}, C={"t": [5, 6]}
    )


def test_uniform_worked_example_of_the_module_docstring() -> None:
    members = {
        "A": member(["t0", "t1"], {"t0": [0, 1, 2]}),
        "B": member(["t0", "t1"], {"t0": [3], "t1": [0, 1]}),
        "C": member(["t0", "t1"]),
    }
    assert uniform(members, {"t0": 4, "t1": 2}) == target(
        A={"t0": [0, 1]}, B={"t0": [3], "t1": [0]}, C={"t0": [2], "t1": [1]}
    )


def test_a_deleted_topic_and_a_shrunk_topic_are_dropped_and_the_rest_rebalanced() -> None:
    """A topic gone from the metadata (deleted) and partitions past a topic's count (a topic
    recreated smaller) are not kept; what remains is balanced."""
    members = {
        "A": member(["t", "gone"], {"t": [0, 1, 5], "gone": [0, 1]}),
        "B": member(["t", "gone"], {"t": [2], "gone": [2]}),
    }
    assert uniform(members, {"t": 4}) == target(A={"t": [0, 1]}, B={"t": [2, 3]})


def test_a_partition_claimed_by_two_members_stays_with_the_first_in_member_order() -> None:
    """Kafka's target assignment never gives a partition to two members; if the caller's does,
    the first member id keeps it and the other is treated as not holding it."""
    members = {"A": member(["t"], {"t": [0]}), "B": member(["t"], {"t": [0, 1]})}
    assert uniform(members, {"t": 2}) == target(A={"t": [0]}, B={"t": [1]})


# -- UniformHeterogeneousAssignmentBuilderTest -----------------------------------------------------


def test_two_members_no_topic_subscription() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersNoTopicSubscription (Kafka returns
    no member; here both, with nothing)."""
    members = {"A": member([]), "B": member([])}
    assert heterogeneous(members, {"topic1": 3}) == target(A={}, B={})


def test_two_members_subscribed_to_nonexistent_topics() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToNonexistentTopics
    (Kafka throws; here nothing is assigned, as for the homogeneous case)."""
    members = {"A": member(["topic3"]), "B": member(["topic2"])}
    assert uniform(members, {"topic1": 3}) == target(A={}, B={})


def test_first_assignment_two_members_two_topics() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopics."""
    members = {"A": member(["topic1", "topic3"]), "B": member(["topic3"])}
    assert uniform(members, {"topic1": 3, "topic3": 6}) == target(
        A={"topic1": [0, 1, 2], "topic3": [4]}, B={"topic3": [0, 1, 2, 3, 5]}
    )


def test_heterogeneous_first_assignment_num_members_greater_than_total_num_partitions() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentNumMembersGreaterThanTotalNumPartitions."""
    members = {"A": member(["topic3"]), "B": member(["topic3"]), "C": member(["topic1"])}
    assert uniform(members, {"topic3": 1, "topic1": 2}) == target(
        A={"topic3": [0]}, B={}, C={"topic1": [0, 1]}
    )


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment."""
    members = {
        "A": member(["topic1"], {"topic1": [0, 1, 2]}),
        "B": member(["topic1", "topic2"], {"topic1": [3], "topic2": [0]}),
        "C": member(
            ["topic1", "topic2", "topic3"],
            {"topic1": [4, 5], "topic2": [1, 2, 3], "topic3": [0, 1, 2, 3]},
        ),
    }
    assert uniform(members, {"topic1": 6, "topic2": 4, "topic3": 4}) == target(
        A={"topic1": [0, 1, 2, 5]},
        B={"topic1": [3], "topic2": [0, 1, 2, 3]},
        C={"topic1": [4], "topic3": [0, 1, 2, 3]},
    )


def test_reassignment_when_partitions_are_added_for_two_members() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenPartitionsAreAddedForTwoMembers."""
    members = {
        "A": member(["topic1", "topic3"], {"topic1": [0, 1, 2, 3], "topic3": [0, 1]}),
        "B": member(
            ["topic1", "topic2", "topic3", "topic4"], {"topic2": [0, 1, 2], "topic4": [0, 1, 2]}
        ),
    }
    partitions = {"topic1": 6, "topic2": 5, "topic3": 3, "topic4": 3}
    assert uniform(members, partitions) == target(
        A={"topic1": [0, 1, 2, 3, 4, 5], "topic3": [0, 1, 2]},
        B={"topic2": [0, 1, 2, 3, 4], "topic4": [0, 1, 2]},
    )


def test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics."""
    members = {
        "A": member(["topic1"], {"topic1": [0, 2], "topic2": [0]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [1, 2]}),
        "C": member(["topic1", "topic2"]),
    }
    assert uniform(members, {"topic1": 6, "topic2": 7}) == target(
        A={"topic1": [0, 2, 3, 4, 5]},
        B={"topic1": [1], "topic2": [1, 2, 6]},
        C={"topic2": [0, 3, 4, 5]},
    )


def test_heterogeneous_a_member_removed_leaves_its_partitions_to_the_subscribers() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics."""
    members = {
        "A": member(["topic1", "topic3"], {"topic1": [0, 1, 2], "topic3": [0, 1]}),
        "B": member(["topic2"], {"topic2": [3, 4, 5, 6]}),
    }
    assert uniform(members, {"topic1": 3, "topic2": 8, "topic3": 3}) == target(
        A={"topic1": [0, 1, 2], "topic3": [0, 1, 2]}, B={"topic2": range(8)}
    )


def test_heterogeneous_an_unsubscribed_topic_is_revoked_and_rebalanced() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {
        "A": member(["topic1"], {"topic1": [0, 2], "topic2": [1, 3]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [0, 2, 4]}),
    }
    assert uniform(members, {"topic1": 3, "topic2": 5}) == target(
        A={"topic1": [0, 1, 2]}, B={"topic2": [0, 1, 2, 3, 4]}
    )


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions:
    the balancing of a topic stops when its loaded members have none of it left to give."""
    members = {
        "A": member(
            ["topic1", "topic2", "topic3"], {"topic1": [0, 1], "topic2": [0, 1], "topic3": [0, 1]}
        ),
        "B": member(["topic1", "topic2", "topic3"]),
    }
    assert heterogeneous(members, {"topic1": 2, "topic2": 2, "topic3": 2}) == target(
        A={"topic2": [0], "topic3": [0, 1]}, B={"topic1": [0, 1], "topic2": [1]}
    )


def test_first_assignment_with_two_members_including_one_without_subscriptions() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions."""
    members = {"A": member(["topic1"]), "B": member([])}
    assert uniform(members, {"topic1": 3}) == target(A={"topic1": [0, 1, 2]}, B={})


# -- RangeAssignorTest (Kafka 4's server-side range) -----------------------------------------------


def ranged(members: Mapping[str, MemberSpec], partitions: Mapping[str, int]) -> Target:
    return assign("range", members, partitions)


def test_range_one_member_no_topic() -> None:
    """RangeAssignorTest.testOneMemberNoTopic."""
    assert ranged({"A": member([])}, {"topic1": 3}) == target(A={})


def test_range_one_member_subscribed_to_non_existent_topic() -> None:
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic (Kafka throws; here nothing
    is assigned)."""
    assert ranged({"A": member(["topic2"])}, {"topic1": 3}) == target(A={})


def test_range_first_assignment_two_members_two_topics_same_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions."""
    members = {"A": member(["topic1", "topic3"]), "B": member(["topic1", "topic3"])}
    assert ranged(members, {"topic1": 3, "topic3": 2}) == target(
        A={"topic1": [0, 1], "topic3": [0]}, B={"topic1": [2], "topic3": [1]}
    )


def test_range_first_assignment_three_members_three_topics_different_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions."""
    members = {
        "A": member(["topic1", "topic2"]),
        "B": member(["topic3"]),
        "C": member(["topic2", "topic3"]),
    }
    assert ranged(members, {"topic1": 3, "topic2": 3, "topic3": 2}) == target(
        A={"topic1": [0, 1, 2], "topic2": [0, 1]},
        B={"topic3": [0]},
        C={"topic2": [2], "topic3": [1]},
    )


def test_range_first_assignment_num_members_greater_than_num_partitions() -> None:
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions."""
    members = {m: member(["topic1", "topic3"]) for m in "ABC"}
    assert ranged(members, {"topic1": 3, "topic3": 2}) == target(
        A={"topic1": [0], "topic3": [0]}, B={"topic1": [1], "topic3": [1]}, C={"topic1": [2]}
    )


def test_range_static_membership() -> None:
    """RangeAssignorTest.testStaticMembership: a static member back under a new member id gets
    its old ranges."""
    members = {
        "A": member(["topic1"], instance_id="instanceA"),
        "B": member(["topic1"], instance_id="instanceB"),
    }
    first = ranged(members, {"topic1": 3})
    del members["A"]
    members["memberA1"] = member(["topic1"], first["A"], "instanceA")
    second = ranged(members, {"topic1": 3})
    assert second["memberA1"] == first["A"]
    assert second["B"] == first["B"]


def test_range_mixed_static_membership() -> None:
    """RangeAssignorTest.testMixedStaticMembership: static members sort before dynamic ones."""
    members = {
        "A": member(["topic1"], instance_id="instanceA"),
        "C": member(["topic1"], instance_id="instanceC"),
        "B": member(["topic1"]),
    }
    first = ranged(members, {"topic1": 5})
    assert first == target(A={"topic1": [0, 1]}, C={"topic1": [2, 3]}, B={"topic1": [4]})
    del members["A"]
    members["memberA1"] = member(["topic1"], first["A"], "instanceA")
    second = ranged(members, {"topic1": 5})
    assert (second["memberA1"], second["B"], second["C"]) == (first["A"], first["B"], first["C"])


def test_range_reassignment_num_members_greater_than_num_partitions_when_one_member_added() -> None:
    """RangeAssignorTest.testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0], "topic2": [0]}),
        "B": member(["topic1", "topic2"], {"topic1": [1], "topic2": [1]}),
        "C": member(["topic1", "topic2"]),
    }
    assert ranged(members, {"topic1": 2, "topic2": 2}) == target(
        A={"topic1": [0], "topic2": [0]}, B={"topic1": [1], "topic2": [1]}, C={}
    )


def test_range_reassignment_when_one_partition_added_for_two_members_two_topics() -> None:
    """RangeAssignorTest.testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
        "B": member(["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
    }
    assert ranged(members, {"topic1": 4, "topic2": 4}) == target(
        A={"topic1": [0, 1], "topic2": [0, 1]}, B={"topic1": [2, 3], "topic2": [2, 3]}
    )


def test_range_reassignment_when_one_member_added_after_initial_assignment() -> None:
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics:
    the ranges are recomputed, not kept (Kafka 4)."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
        "B": member(["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
        "C": member(["topic1", "topic2"]),
    }
    assert ranged(members, {"topic1": 3, "topic2": 3}) == target(
        A={"topic1": [0], "topic2": [0]},
        B={"topic1": [1], "topic2": [1]},
        C={"topic1": [2], "topic2": [2]},
    )


def test_range_a_member_added_with_a_partition_added_gets_the_last_range() -> None:
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {
        "A": member(["topic1", "topic2"], {"topic1": [0, 1], "topic2": [0, 1]}),
        "B": member(["topic1", "topic2"], {"topic1": [2], "topic2": [2]}),
        "C": member(["topic1"]),
    }
    assert ranged(members, {"topic1": 4, "topic2": 3}) == target(
        A={"topic1": [0, 1], "topic2": [0, 1]},
        B={"topic1": [2], "topic2": [2]},
        C={"topic1": [3]},
    )


def test_range_reassignment_when_one_member_removed_after_initial_assignment() -> None:
    """RangeAssignorTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics."""
    members = {"B": member(["topic1", "topic2"], {"topic1": [2], "topic2": [2]})}
    assert ranged(members, {"topic1": 3, "topic2": 3}) == target(
        B={"topic1": [0, 1, 2], "topic2": [0, 1, 2]}
    )


def test_range_reassignment_when_multiple_subscriptions_removed_after_initial_assignment() -> None:
    """RangeAssignorTest.testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics."""
    members = {
        "A": member(["topic1"], {"topic1": [0, 1, 2], "topic2": [0]}),
        "B": member(["topic1", "topic2", "topic3"], {"topic2": [1]}),
        "C": member(["topic2"], {"topic2": [2], "topic3": [0, 1]}),
    }
    assert ranged(members, {"topic1": 3, "topic2": 3, "topic3": 2}) == target(
        A={"topic1": [0, 1]},
        B={"topic1": [2], "topic2": [0, 1], "topic3": [0, 1]},
        C={"topic2": [2]},
    )


def test_range_worked_example_of_the_module_docstring() -> None:
    """Dynamic members swap everything when their new ids sort the other way; static members
    keep their ranges through the instance ids."""
    partitions = {"t1": 3, "t2": 3}
    first = ranged({"M0": member(["t1", "t2"]), "M1": member(["t1", "t2"])}, partitions)
    assert first == target(M0={"t1": [0, 1], "t2": [0, 1]}, M1={"t1": [2], "t2": [2]})
    restarted = ranged({"M3": member(["t1", "t2"]), "M2": member(["t1", "t2"])}, partitions)
    assert restarted == target(M2=first["M0"], M3=first["M1"])
    static = {
        "M3": member(["t1", "t2"], instance_id="I0"),
        "M2": member(["t1", "t2"], instance_id="I1"),
    }
    assert ranged(static, partitions) == target(M3=first["M0"], M2=first["M1"])


def test_range_orders_member_ids_as_java_compares_strings() -> None:
    """U+FFFD sorts after U+10000 in Java (by UTF-16 code unit), before it in Python."""
    members = {"\ufffd": member(["t"]), "\U00010000": member(["t"])}
    assert ranged(members, {"t": 2}) == {
        "\U00010000": {"t": frozenset({0})},
        "\ufffd": {"t": frozenset({1})},
    }


# -- properties ------------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]
Group = tuple[dict[str, int], dict[str, MemberSpec]]


def as_subscriptions(members: Mapping[str, MemberSpec]) -> dict[str, Subscription]:
    return {m: Subscription(sorted(spec.topics)) for m, spec in members.items()}


def as_pairs(result: Target) -> dict[str, list[tuple[str, int]]]:
    return {m: [(t, p) for t, parts in a.items() for p in sorted(parts)] for m, a in result.items()}


def problems(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int], result: Target
) -> list[str]:
    """Every member present; every partition of a subscribed topic owned once, by a subscriber."""
    live = {t: n for t, n in partitions.items() if n > 0}
    found = assignment_problems(live, as_subscriptions(members), as_pairs(result))
    empty = [(m, t) for m, a in result.items() for t, parts in a.items() if not parts]
    return found + [f"{m} has an empty entry for {t}" for m, t in empty]


@st.composite
def groups(draw: st.DrawFn, *, same_topics: bool = False, history: bool = True) -> Group:
    """Topic counts (some topics gone, some empty) and members with any previous assignment:
    stale topics, partitions past the count, two members claiming one partition."""
    partitions = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9), max_size=4))
    member_ids = draw(
        st.lists(st.text("mxyz", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    shared = draw(st.sets(st.sampled_from([*TOPICS, "gone"])))
    claimable = st.tuples(st.sampled_from([*TOPICS, "gone"]), st.integers(0, 10))
    members = {}
    for member_id in member_ids:
        topics = shared if same_topics else draw(st.sets(st.sampled_from([*TOPICS, "gone"])))
        owned: dict[str, set[int]] = {}
        if history:
            for topic, partition in draw(st.lists(claimable, max_size=8)):
                owned.setdefault(topic, set()).add(partition)
        instance_id = draw(st.none() | st.sampled_from(["i1", "i2", "i3"]))
        members[member_id] = member(topics, owned, instance_id)
    return partitions, members


def changed(previous: Target, members: Mapping[str, MemberSpec]) -> dict[str, MemberSpec]:
    """The members again, each carrying its part of ``previous`` as its current assignment."""
    return {
        m: MemberSpec(spec.topics, previous.get(m, {}), spec.instance_id)
        for m, spec in members.items()
    }


def shuffled(group: Group, seed: int) -> Group:
    """The same group with every mapping in another order."""
    partitions, members = group
    rng = random.Random(seed)
    topics = list(partitions.items())
    rng.shuffle(topics)
    ids = list(members)
    rng.shuffle(ids)
    specs = {}
    for m in ids:
        spec = members[m]
        owned = list(spec.assignment.items())
        rng.shuffle(owned)
        specs[m] = MemberSpec(spec.topics, dict(owned), spec.instance_id)
    return dict(topics), specs


@pytest.mark.parametrize("name", SERVER_ASSIGNORS)
@given(group=groups())
def test_every_subscribed_partition_is_owned_exactly_once_by_a_subscriber(
    name: str, group: Group
) -> None:
    partitions, members = group
    result = assign(name, members, partitions)
    assert problems(members, partitions, result) == []


@pytest.mark.parametrize("name", SERVER_ASSIGNORS)
@given(group=groups(), seed=st.integers(0, 2**32))
@settings(max_examples=60)
def test_the_result_does_not_depend_on_the_order_of_any_mapping(
    name: str, group: Group, seed: int
) -> None:
    partitions, members = group
    other_partitions, other_members = shuffled(group, seed)
    assert assign(name, members, partitions) == assign(name, other_members, other_partitions)


@given(group=groups(same_topics=True))
def test_uniform_gives_every_member_of_a_homogeneous_group_floor_or_ceil(group: Group) -> None:
    partitions, members = group
    result = uniform(members, partitions)
    topics = next(iter(members.values())).topics
    total = sum(n for t, n in partitions.items() if t in topics)
    floor, extra = divmod(total, len(members))
    counts = sorted(sizes(result).values())
    assert counts == [floor] * (len(members) - extra) + [floor + 1] * extra


@given(group=groups(), data=st.data())
def test_uniform_homogeneous_moves_the_fewest_partitions(group: Group, data: st.DataObject) -> None:
    """After any change (members joining and leaving, subscriptions, partition counts), each
    member keeps as many of its partitions as its quota allows, and the ``P % M`` larger quotas
    go to members that can fill them from what they hold: the most partitions any balanced
    assignment could keep."""
    partitions, members = group
    previous = uniform(members, partitions)
    new_partitions = data.draw(
        st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), max_size=4), "partitions"
    )
    topics = data.draw(st.sets(st.sampled_from(TOPICS)), "topics")
    stay = data.draw(st.sets(st.sampled_from(sorted(members))), "staying")
    joining = data.draw(st.sets(st.sampled_from(["n1", "n2", "n3"])), "joining")
    after = {m: member(topics, previous[m]) for m in stay} | {m: member(topics) for m in joining}
    assume(after)
    result = uniform(after, new_partitions)
    total = sum(n for t, n in new_partitions.items() if t in topics)
    floor, extra = divmod(total, len(after))
    holdable = {
        m: sum(
            len({p for p in parts if p < new_partitions.get(t, 0)})
            for t, parts in spec.assignment.items()
            if t in topics
        )
        for m, spec in after.items()
    }
    best = sum(min(h, floor) for h in holdable.values()) + min(
        extra, sum(1 for h in holdable.values() if h > floor)
    )
    kept_now = kept(after, result)
    assert sum(kept_now.values()) == best
    for m, count in sizes(result).items():
        assert kept_now[m] == min(holdable[m], count)


@given(group=groups())
def test_uniform_heterogeneous_leaves_no_partition_movable_to_a_subscriber_two_lighter(
    group: Group,
) -> None:
    """Kafka's balance criterion for differing subscriptions: no member holds a partition that
    a subscriber of its topic holding two or more fewer partitions could take."""
    partitions, members = group
    result = heterogeneous(members, partitions)
    live = {
        m: MemberSpec(spec.topics & {t for t, n in partitions.items() if n}, {})
        for m, spec in members.items()
    }
    assert balance_problems(as_subscriptions(live), as_pairs(result)) == []


@pytest.mark.parametrize(
    "builder", [None, SubscriptionType.HETEROGENEOUS], ids=["chosen", "heterogeneous"]
)
@given(group=groups())
def test_uniform_keeps_its_own_assignment_as_it_is(
    builder: SubscriptionType | None, group: Group
) -> None:
    """Stickiness: with nothing changed, running the assignor again moves nothing."""
    partitions, members = group
    first = assign_uniform(members, partitions, builder=builder)
    assert assign_uniform(changed(first, members), partitions, builder=builder) == first


@given(group=groups(history=False))
def test_range_gives_each_topics_subscribers_contiguous_ranges_in_member_order(
    group: Group,
) -> None:
    partitions, members = group
    result = ranged(members, partitions)
    order = sorted(
        members,
        key=lambda m: (members[m].instance_id is None, members[m].instance_id or "", m),
    )
    for topic, count in partitions.items():
        subscribers = [m for m in order if topic in members[m].topics]
        if not subscribers or not count:
            continue
        per, extra = divmod(count, len(subscribers))
        start = 0
        for index, m in enumerate(subscribers):
            end = start + per + (index < extra)
            assert result[m].get(topic, frozenset()) == frozenset(range(start, end))
            start = end


@given(group=groups(same_topics=True))
def test_range_co_partitions_topics_of_equal_partition_counts(group: Group) -> None:
    partitions, members = group
    result = ranged(members, partitions)
    topics = sorted(t for t in next(iter(members.values())).topics if partitions.get(t))
    for first, second in itertools.pairwise(topics):
        if partitions[first] == partitions[second]:
            for assignment in result.values():
                assert assignment.get(first) == assignment.get(second)
