"""Offsets, modelled on Kafka 3.7's GroupCoordinatorTest: OffsetCommit generation fencing,
simple consumers (generation -1), commits in each group state, offset.metadata.max.bytes
(measured as Java's String.length()), OffsetFetch of selected, all and unknown partitions,
OffsetDelete (KIP-496) and the KIP-211 cleanup: the expiry base per group kind and state,
explicit expire timestamps, Empty groups without offsets turning Dead, and the tombstones
written for all of it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from coordinator_engine import (
    CleanupResult,
    Errors,
    GroupState,
    MemberIdentity,
    MemoryLog,
    OffsetData,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    PartitionOffset,
    PartitionResult,
    partition_for,
)
from coordinator_engine.classic.records import group_metadata_record
from coordinator_engine.consumer_protocol import ConsumerProtocolSubscription, encode_subscription
from coordinator_engine.events import (
    GroupRemoved,
    OffsetsCommitted,
    OffsetsRemoved,
    StateChanged,
)
from coordinator_engine.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    offset_commit_record,
)
from tests.engine.harness import GROUP, TEST_CONFIG, Context, FlakyLog

NONE = Errors.NONE
#: One second of retention makes the KIP-211 arithmetic easy to read.
SHORT_RETENTION = dataclasses.replace(TEST_CONFIG, offsets_retention_ms=1000)


def offset(topic: str, partition: int, value: int, **fields: Any) -> PartitionOffset:
    return PartitionOffset(topic=topic, partition=partition, offset=value, **fields)


def data(topic: str, partition: int, value: int, metadata: str = "", epoch: int = -1) -> OffsetData:
    return OffsetData(
        topic=topic,
        partition=partition,
        offset=value,
        metadata=metadata,
        leader_epoch=epoch,
        error_code=NONE,
    )


def subscribing(*topics: str) -> tuple[tuple[str, bytes], ...]:
    """JoinGroup protocols carrying a real ConsumerProtocolSubscription."""
    return (("range", encode_subscription(ConsumerProtocolSubscription(topics=topics))),)


def cleanup(ctx: Context) -> CleanupResult:
    return ctx.coord.cleanup(ctx.now)


def heartbeat_until(ctx: Context, member_id: str, generation: int, until: int) -> None:
    while ctx.now + 400 <= until:
        ctx.sleep(400)
        assert ctx.heartbeat(member_id, generation) == NONE
    ctx.sleep(until - ctx.now)
    assert ctx.heartbeat(member_id, generation) == NONE


# -- OffsetCommit ---------------------------------------------------------------------------------


def test_commit_with_a_generation_to_an_unknown_group_is_an_illegal_generation() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetFromUnknownGroup."""
    ctx = Context()
    assert ctx.commit({("topic", 0): 0}, member_id="memberId", generation_id=1) == {
        ("topic", 0): Errors.ILLEGAL_GENERATION
    }
    assert ctx.coord.group(GROUP) is None
    assert ctx.log.entries == []


def test_simple_consumer_commit_creates_a_group_used_only_for_offsets() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetWithDefaultGeneration."""
    ctx = Context()
    ctx.sleep(7)
    assert ctx.commit({("topic", 0): 0}) == {("topic", 0): NONE}
    view = ctx.group()
    assert (view.state, view.generation_id, view.protocol_type) == (GroupState.EMPTY, 0, None)
    assert ctx.records() == [
        (
            OffsetCommitKey(group=GROUP, topic="topic", partition=0),
            OffsetCommitValue(offset=0, leader_epoch=-1, metadata="", commit_timestamp=7),
        )
    ]
    assert ctx.events == [
        OffsetsCommitted(
            group_id=GROUP, at_ms=7, member_id="", generation_id=-1, offsets=[["topic", 0, 0]]
        )
    ]


def test_simple_consumer_can_commit_after_the_group_emptied() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetsAfterGroupIsEmpty."""
    ctx = Context()
    joined = ctx.join_now()
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    assert ctx.group().state is GroupState.EMPTY
    assert ctx.commit({("topic", 0): 0}) == {("topic", 0): NONE}
    assert ctx.fetch([("topic", 0)]) == {("topic", 0): 0}


def test_manual_commit_into_an_empty_group_does_not_check_member_or_instance_ids() -> None:
    """Mirrors GroupCoordinatorTest.testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId
    (Kafka 3.3+, KAFKA-14201)."""
    ctx = Context()
    assert ctx.commit({("topic", 0): 0}, instance_id="instance-id") == {("topic", 0): NONE}
    assert ctx.commit({("topic", 0): 0}, member_id="unknown") == {("topic", 0): NONE}


def test_simple_consumer_commit_into_a_group_with_members_is_an_unknown_member() -> None:
    ctx = Context()
    ctx.stable_group_of_one()
    assert ctx.commit({("topic", 0): 0}) == {("topic", 0): Errors.UNKNOWN_MEMBER_ID}
    assert ctx.commit({("topic", 0): 0}, member_id="unknown") == {
        ("topic", 0): Errors.UNKNOWN_MEMBER_ID
    }


def test_member_commit_without_a_generation_into_a_stable_group_is_an_illegal_generation() -> None:
    ctx = Context()
    member_id, _ = ctx.stable_group_of_one()
    assert ctx.commit({("topic", 0): 0}, member_id=member_id) == {
        ("topic", 0): Errors.ILLEGAL_GENERATION
    }


def test_member_commit_with_a_stale_generation_is_an_illegal_generation() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    assert ctx.commit({("topic", 0): 0}, member_id=follower_id, generation_id=generation - 1) == {
        ("topic", 0): Errors.ILLEGAL_GENERATION
    }
    assert ctx.commit({("topic", 0): 0}, member_id=leader_id, generation_id=generation) == {
        ("topic", 0): NONE
    }


def test_commit_while_completing_rebalance_is_rebalance_in_progress() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetInCompletingRebalance."""
    ctx = Context()
    joined = ctx.join_now()
    assert ctx.commit(
        {("topic", 0): 0}, member_id=joined.member_id, generation_id=joined.generation_id
    ) == {("topic", 0): Errors.REBALANCE_IN_PROGRESS}
    assert ctx.log.entries == []


def test_commit_while_completing_rebalance_from_an_unknown_member_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetInCompletingRebalanceFromUnknownMemberId."""
    ctx = Context()
    joined = ctx.join_now()
    assert ctx.commit({("topic", 0): 0}, generation_id=joined.generation_id) == {
        ("topic", 0): Errors.UNKNOWN_MEMBER_ID
    }


def test_commit_while_completing_rebalance_with_another_generation_is_rejected() -> None:
    """Mirrors GroupCoordinatorTest.testCommitOffsetInCompletingRebalanceFromIllegalGeneration."""
    ctx = Context()
    joined = ctx.join_now()
    assert ctx.commit(
        {("topic", 0): 0}, member_id=joined.member_id, generation_id=joined.generation_id + 1
    ) == {("topic", 0): Errors.ILLEGAL_GENERATION}


def test_commit_while_preparing_rebalance_is_accepted_and_refreshes_the_session() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    ctx.join(leader_id)
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(400)
    assert ctx.commit({("topic", 0): 3}, member_id=follower_id, generation_id=generation) == {
        ("topic", 0): NONE
    }
    assert ctx.fetch([("topic", 0)]) == {("topic", 0): 3}


def test_commit_records_epoch_and_metadata_and_fetch_returns_them() -> None:
    """Mirrors GroupCoordinatorTest.testFetchOffsets."""
    ctx = Context()
    response = ctx.commit_response(
        [offset("topic", 0, 97, leader_epoch=15, metadata="some metadata")]
    )
    assert response.partitions == (PartitionResult(topic="topic", partition=0, error_code=NONE),)
    assert ctx.fetch_response([("topic", 0)]) == OffsetFetchResponse(
        error_code=NONE, partitions=(data("topic", 0, 97, "some metadata", 15),)
    )
    assert ctx.records()[0][1] == OffsetCommitValue(
        offset=97, leader_epoch=15, metadata="some metadata", commit_timestamp=0
    )


def test_commit_without_metadata_stores_an_empty_string() -> None:
    ctx = Context()
    ctx.commit_response([offset("topic", 0, 1, metadata=None)])
    assert ctx.fetch_response([("topic", 0)]).partitions == (data("topic", 0, 1),)


def test_commit_with_an_expire_timestamp_writes_the_v1_value() -> None:
    ctx = Context()
    ctx.commit_response([offset("topic", 0, 1, expire_timestamp_ms=5000)])
    _, value = ctx.log.entries[0]
    assert value is not None and value[:2] == b"\x00\x01"  # OffsetCommitValue version 1
    assert ctx.records() == [
        (
            OffsetCommitKey(group=GROUP, topic="topic", partition=0),
            OffsetCommitValue(offset=1, commit_timestamp=0, expire_timestamp=5000),
        )
    ]


def test_metadata_longer_than_the_maximum_is_refused_per_partition() -> None:
    ctx = Context(dataclasses.replace(TEST_CONFIG, offset_metadata_max_bytes=4))
    response = ctx.commit_response(
        [offset("a", 0, 1, metadata="abcd"), offset("b", 0, 2, metadata="abcde")]
    )
    assert [p.error_code for p in response.partitions] == [NONE, Errors.OFFSET_METADATA_TOO_LARGE]
    assert [k for k, _ in ctx.records()] == [OffsetCommitKey(group=GROUP, topic="a", partition=0)]
    assert ctx.fetch() == {("a", 0): 1}
    assert ctx.events_of(OffsetsCommitted)[0].offsets == [["a", 0, 1]]


def test_metadata_length_is_counted_in_java_utf16_code_units() -> None:
    ctx = Context(dataclasses.replace(TEST_CONFIG, offset_metadata_max_bytes=4))
    response = ctx.commit_response(
        [
            offset("emoji", 0, 1, metadata="\U0001f600\U0001f600"),  # 4 code units, 8 bytes
            offset("emoji", 1, 1, metadata="\U0001f600\U0001f600a"),  # 5 code units
            offset("accents", 0, 1, metadata="éééé"),  # 4 code units, 8 bytes in UTF-8
        ]
    )
    assert [p.error_code for p in response.partitions] == [
        NONE,
        Errors.OFFSET_METADATA_TOO_LARGE,
        NONE,
    ]


def test_commit_with_only_oversized_metadata_writes_nothing() -> None:
    ctx = Context(dataclasses.replace(TEST_CONFIG, offset_metadata_max_bytes=0))
    response = ctx.commit_response([offset("a", 0, 1, metadata="x")])
    assert [p.error_code for p in response.partitions] == [Errors.OFFSET_METADATA_TOO_LARGE]
    assert ctx.log.entries == []
    assert ctx.events_of(OffsetsCommitted) == []


def test_commit_that_cannot_be_stored_changes_nothing() -> None:
    log = FlakyLog()
    ctx = Context(log=log)
    ctx.commit({("topic", 0): 1})
    log.failing = True
    assert ctx.commit({("topic", 0): 2, ("topic", 1): 2}) == {
        ("topic", 0): Errors.COORDINATOR_NOT_AVAILABLE,
        ("topic", 1): Errors.COORDINATOR_NOT_AVAILABLE,
    }
    assert ctx.fetch() == {("topic", 0): 1}
    assert len(ctx.events_of(OffsetsCommitted)) == 1


def test_member_commit_event_names_the_member_and_generation() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("a", 0): 5, ("b", 1): 6}, member_id=member_id, generation_id=generation)
    assert ctx.events_of(OffsetsCommitted) == [
        OffsetsCommitted(
            group_id=GROUP,
            at_ms=50,
            member_id=member_id,
            generation_id=1,
            offsets=[["a", 0, 5], ["b", 1, 6]],
        )
    ]


# -- OffsetFetch --------------------------------------------------------------------------------


def test_fetch_of_a_partition_without_a_commit_answers_offset_minus_one() -> None:
    """Mirrors GroupCoordinatorTest.testFetchOffsetForUnknownPartition."""
    ctx = Context()
    assert ctx.fetch_response([("topic", 0)]) == OffsetFetchResponse(
        error_code=NONE, partitions=(data("topic", 0, -1),)
    )


def test_fetch_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    """Mirrors GroupCoordinatorTest.testFetchOffsetNotCoordinatorForGroup."""
    assert partition_for("otherGroup") != partition_for(GROUP)
    ctx = Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )
    assert ctx.fetch_response([("topic", 0)], group_id="otherGroup") == OffsetFetchResponse(
        error_code=Errors.NOT_COORDINATOR
    )


def test_fetch_of_all_offsets_returns_every_committed_partition() -> None:
    """Mirrors GroupCoordinatorTest.testFetchAllOffsets."""
    ctx = Context()
    assert ctx.fetch_response() == OffsetFetchResponse(error_code=NONE, partitions=())
    ctx.commit({("topic", 1): 16, ("topic", 0): 15, ("other-topic", 0): 17})
    assert ctx.fetch_response() == OffsetFetchResponse(
        error_code=NONE,
        partitions=(data("other-topic", 0, 17), data("topic", 0, 15), data("topic", 1, 16)),
    )


def test_fetch_of_selected_partitions_answers_in_request_order() -> None:
    ctx = Context()
    ctx.commit({("topic", 0): 15, ("topic", 1): 16})
    assert ctx.fetch_response([("topic", 1), ("missing", 0), ("topic", 0)]).partitions == (
        data("topic", 1, 16),
        data("missing", 0, -1),
        data("topic", 0, 15),
    )


def test_offsets_of_the_empty_group_id_can_be_committed_fetched_and_deleted() -> None:
    """Mirrors GroupCoordinatorTest.testCommitAndFetchOffsetsWithEmptyGroup."""
    ctx = Context()
    assert ctx.commit({("topic", 0): 0}, group_id="") == {("topic", 0): NONE}
    assert ctx.fetch([("topic", 0)], group_id="") == {("topic", 0): 0}
    described = ctx.describe("").groups[0]
    assert (described.error_code, described.group_state) == (NONE, "Empty")
    assert [r.error_code for r in ctx.delete_groups("").results] == [NONE]
    assert ctx.fetch([("topic", 0)], group_id="") == {("topic", 0): -1}


# -- OffsetDelete ---------------------------------------------------------------------------------


def test_offset_delete_with_an_empty_group_id_is_invalid() -> None:
    assert Context().delete_offsets([("foo", 0)], group_id="") == OffsetDeleteResponse(
        error_code=Errors.INVALID_GROUP_ID
    )


def test_offset_delete_for_a_group_of_another_coordinator_gets_not_coordinator() -> None:
    ctx = Context(
        dataclasses.replace(TEST_CONFIG, owned_partitions=frozenset({partition_for(GROUP)}))
    )
    assert ctx.delete_offsets([("foo", 0)], group_id="otherGroup") == OffsetDeleteResponse(
        error_code=Errors.NOT_COORDINATOR
    )


def test_offset_delete_of_a_group_that_does_not_exist_is_group_id_not_found() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfNonExistingGroup."""
    assert Context().delete_offsets([("foo", 0)]) == OffsetDeleteResponse(
        error_code=Errors.GROUP_ID_NOT_FOUND
    )


def test_offset_delete_in_a_non_consumer_group_with_members_is_refused() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfNonEmptyNonConsumerGroup."""
    ctx = Context()
    ctx.join_now(protocol_type="My Protocol")
    assert ctx.delete_offsets([("foo", 0)]) == OffsetDeleteResponse(
        error_code=Errors.NON_EMPTY_GROUP
    )


def empty_group_with_offsets(ctx: Context, protocol_type: str) -> None:
    joined = ctx.join_now(protocol_type=protocol_type)
    ctx.sync(joined.member_id, joined.generation_id, {})
    committed = ctx.commit(
        {("foo", 0): 37, ("bar", 0): 37},
        member_id=joined.member_id,
        generation_id=joined.generation_id,
    )
    assert committed == {("foo", 0): NONE, ("bar", 0): NONE}
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    assert ctx.group().state is GroupState.EMPTY


def test_offset_delete_in_an_empty_non_consumer_group_removes_the_offset() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfEmptyNonConsumerGroup."""
    ctx = Context()
    empty_group_with_offsets(ctx, "My Protocol")
    mark = len(ctx.log.entries)
    assert ctx.delete_offsets([("foo", 0)]) == OffsetDeleteResponse(
        error_code=NONE, partitions=(PartitionResult(topic="foo", partition=0, error_code=NONE),)
    )
    assert ctx.fetch([("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}
    assert ctx.records(mark) == [(OffsetCommitKey(group=GROUP, topic="foo", partition=0), None)]
    assert ctx.group().state is GroupState.EMPTY


def test_offset_delete_in_an_empty_consumer_group_removes_the_offset() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfEmptyConsumerGroup."""
    ctx = Context()
    empty_group_with_offsets(ctx, "consumer")
    response = ctx.delete_offsets([("foo", 0)])
    assert response.partitions == (PartitionResult(topic="foo", partition=0, error_code=NONE),)
    assert ctx.fetch([("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}
    assert ctx.events_of(OffsetsRemoved)[-1] == OffsetsRemoved(
        group_id=GROUP, at_ms=50, reason="deleted", partitions=[["foo", 0]]
    )


def test_offset_delete_of_the_last_offsets_of_an_empty_group_deletes_the_group() -> None:
    ctx = Context()
    empty_group_with_offsets(ctx, "consumer")
    mark = len(ctx.log.entries)
    response = ctx.delete_offsets([("foo", 0), ("bar", 0), ("never", 0)])
    assert [p.error_code for p in response.partitions] == [NONE] * 3
    assert ctx.coord.group(GROUP) is None
    assert ctx.records(mark) == [
        (OffsetCommitKey(group=GROUP, topic="foo", partition=0), None),
        (OffsetCommitKey(group=GROUP, topic="bar", partition=0), None),
        (GroupMetadataKey(group=GROUP), None),
    ]
    assert ctx.events_of(GroupRemoved) == [
        GroupRemoved(
            group_id=GROUP, at_ms=50, reason="offsets_deleted", generation_id=2, tombstoned=True
        )
    ]


def test_offset_delete_in_a_consumer_group_with_unparsable_subscriptions_protects_every_topic() -> (
    None
):
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfConsumerGroupWithUnparsableProtocol."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()  # metadata b"metadata" is no subscription
    ctx.commit({("foo", 0): 37}, member_id=member_id, generation_id=generation)
    assert ctx.delete_offsets([("foo", 0)]) == OffsetDeleteResponse(
        error_code=NONE,
        partitions=(
            PartitionResult(topic="foo", partition=0, error_code=Errors.GROUP_SUBSCRIBED_TO_TOPIC),
        ),
    )
    assert ctx.fetch([("foo", 0)]) == {("foo", 0): 37}


def test_offset_delete_in_a_stable_consumer_group_spares_subscribed_topics() -> None:
    """Mirrors GroupCoordinatorTest.testDeleteOffsetOfStableConsumerGroup."""
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one(protocols=subscribing("bar"))
    ctx.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=member_id, generation_id=generation)
    assert ctx.group().state is GroupState.STABLE
    mark = len(ctx.log.entries)
    response = ctx.delete_offsets([("foo", 0), ("bar", 0)])
    assert response == OffsetDeleteResponse(
        error_code=NONE,
        partitions=(
            PartitionResult(topic="foo", partition=0, error_code=NONE),
            PartitionResult(topic="bar", partition=0, error_code=Errors.GROUP_SUBSCRIBED_TO_TOPIC),
        ),
    )
    assert ctx.fetch([("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}
    assert ctx.records(mark) == [(OffsetCommitKey(group=GROUP, topic="foo", partition=0), None)]


def test_offset_delete_while_rebalancing_uses_the_last_generations_subscriptions() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one(protocols=subscribing("bar"))
    ctx.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=member_id, generation_id=generation)
    ctx.join()  # a newcomer starts a rebalance
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    response = ctx.delete_offsets([("bar", 0), ("foo", 0)])
    assert [p.error_code for p in response.partitions] == [Errors.GROUP_SUBSCRIBED_TO_TOPIC, NONE]


def test_offset_delete_during_the_first_rebalance_protects_every_topic() -> None:
    ctx = Context()
    ctx.commit({("foo", 0): 1}, group_id=GROUP)  # offsets first, then the group forms
    ctx.join(protocols=subscribing("bar"))
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    response = ctx.delete_offsets([("foo", 0)])
    assert [p.error_code for p in response.partitions] == [Errors.GROUP_SUBSCRIBED_TO_TOPIC]


# -- cleanup and expiry (KIP-211) ------------------------------------------------------------------


def test_offsets_of_a_group_used_only_for_offsets_expire_after_retention_from_their_commit() -> (
    None
):
    ctx = Context(SHORT_RETENTION)
    ctx.commit({("topic", 0): 1})
    ctx.sleep(500)
    ctx.commit({("topic", 1): 1})
    ctx.sleep(499)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    ctx.sleep(1)  # t=1000: the first commit is a retention period old
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=0)
    assert ctx.fetch() == {("topic", 1): 1}
    ctx.sleep(500)
    mark = len(ctx.log.entries)
    events_before = len(ctx.events)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)
    assert ctx.coord.group(GROUP) is None
    # Generation 0: the group never had metadata, so only the offset is tombstoned.
    assert ctx.records(mark) == [(OffsetCommitKey(group=GROUP, topic="topic", partition=1), None)]
    assert ctx.events[events_before:] == [
        OffsetsRemoved(group_id=GROUP, at_ms=1500, reason="expired", partitions=[["topic", 1]]),
        StateChanged(
            group_id=GROUP, at_ms=1500, from_state="Empty", to_state="Dead", reason="expired"
        ),
        GroupRemoved(
            group_id=GROUP, at_ms=1500, reason="expired", generation_id=0, tombstoned=False
        ),
    ]


def test_offsets_of_an_empty_group_expire_after_retention_from_when_it_emptied() -> None:
    ctx = Context(SHORT_RETENTION)
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("topic", 0): 1}, member_id=member_id, generation_id=generation)  # t=50
    heartbeat_until(ctx, member_id, generation, 500)
    ctx.leave(MemberIdentity(member_id=member_id))  # Empty since t=500
    ctx.sleep(999)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    ctx.sleep(1)  # t=1500
    mark = len(ctx.log.entries)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)
    assert ctx.records(mark) == [
        (OffsetCommitKey(group=GROUP, topic="topic", partition=0), None),
        (GroupMetadataKey(group=GROUP), None),
    ]
    assert ctx.events_of(GroupRemoved)[-1] == GroupRemoved(
        group_id=GROUP, at_ms=1500, reason="expired", generation_id=2, tombstoned=True
    )


def test_offsets_of_unsubscribed_topics_in_a_stable_consumer_group_expire_from_their_commit() -> (
    None
):
    ctx = Context(SHORT_RETENTION)
    member_id, generation = ctx.stable_group_of_one(protocols=subscribing("orders"))
    ctx.commit(
        {("orders", 0): 1, ("audit", 0): 1}, member_id=member_id, generation_id=generation
    )  # t=50
    heartbeat_until(ctx, member_id, generation, 1049)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    heartbeat_until(ctx, member_id, generation, 5000)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=0)
    assert ctx.fetch() == {("orders", 0): 1}
    assert ctx.group().state is GroupState.STABLE


def test_offsets_do_not_expire_in_a_stable_group_whose_subscriptions_are_unknown() -> None:
    ctx = Context(SHORT_RETENTION)
    member_id, generation = ctx.stable_group_of_one()  # b"metadata": not a subscription
    ctx.commit({("topic", 0): 1}, member_id=member_id, generation_id=generation)
    heartbeat_until(ctx, member_id, generation, 5000)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)


def test_offsets_do_not_expire_in_a_stable_group_of_another_protocol_type() -> None:
    ctx = Context(SHORT_RETENTION)
    member_id, generation = ctx.stable_group_of_one(protocol_type="connect")
    ctx.commit({("topic", 0): 1}, member_id=member_id, generation_id=generation)
    heartbeat_until(ctx, member_id, generation, 5000)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)


def test_offsets_do_not_expire_while_a_rebalance_is_in_progress() -> None:
    ctx = Context(SHORT_RETENTION)
    member_id, generation = ctx.stable_group_of_one(
        protocols=subscribing("orders"), rebalance_timeout=10_000, session_timeout=10_000
    )
    ctx.commit({("audit", 0): 1}, member_id=member_id, generation_id=generation)
    ctx.join(protocols=subscribing("orders"))
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.sleep(5000)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    ctx.join(member_id, protocols=subscribing("orders"), rebalance_timeout=10_000)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)


def test_explicit_expire_timestamp_overrides_the_retention() -> None:
    ctx = Context(SHORT_RETENTION)
    ctx.commit_response(
        [
            offset("early", 0, 1, expire_timestamp_ms=200),
            offset("late", 0, 1, expire_timestamp_ms=5000),
        ]
    )
    ctx.sleep(199)
    assert cleanup(ctx).offsets_removed == 0
    ctx.sleep(1)
    assert cleanup(ctx).offsets_removed == 1
    ctx.sleep(1000)  # past the retention, but "late" has its own expiry
    assert cleanup(ctx).offsets_removed == 0
    ctx.sleep(3800)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)


def test_empty_group_without_offsets_is_removed_with_a_tombstone() -> None:
    ctx = Context()
    joined = ctx.join_now()
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    mark = len(ctx.log.entries)
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=1)
    assert ctx.coord.group(GROUP) is None
    assert ctx.records(mark) == [(GroupMetadataKey(group=GROUP), None)]


def test_empty_group_that_never_had_a_generation_is_removed_without_a_tombstone() -> None:
    ctx = Context()
    ctx.join(protocol_type="")  # refused, but it created the group
    assert ctx.group().generation_id == 0
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=1)
    assert ctx.coord.group(GROUP) is None
    assert ctx.log.entries == []


def test_groups_with_members_are_never_removed_by_cleanup() -> None:
    ctx = Context()
    ctx.stable_group_of_one()
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    assert ctx.group().state is GroupState.STABLE


def test_cleanup_that_cannot_write_its_tombstones_changes_nothing_and_retries() -> None:
    log = FlakyLog()
    ctx = Context(SHORT_RETENTION, log=log)
    ctx.commit({("topic", 0): 1})
    ctx.sleep(1000)
    log.failing = True
    assert cleanup(ctx) == CleanupResult(offsets_removed=0, groups_removed=0)
    assert ctx.fetch() == {("topic", 0): 1}
    log.failing = False
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)


def test_replayed_empty_group_expires_from_its_stored_state_timestamp() -> None:
    entries = [
        group_metadata_record(
            GROUP,
            GroupMetadataValue(
                protocol_type="consumer",
                generation=3,
                protocol=None,
                leader=None,
                current_state_timestamp=5000,
            ),
        ),
        offset_commit_record(GROUP, "topic", 0, OffsetCommitValue(offset=5, commit_timestamp=100)),
    ]
    ctx = Context(SHORT_RETENTION, MemoryLog(entries))
    ctx.sleep(5999)
    assert cleanup(ctx).offsets_removed == 0
    ctx.sleep(1)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)


def test_replayed_empty_group_without_a_state_timestamp_expires_from_the_commit() -> None:
    """Old GroupMetadataValue versions have no state timestamp: Kafka falls back to each
    offset's commit timestamp."""
    entries = [
        group_metadata_record(
            GROUP,
            GroupMetadataValue(
                protocol_type="consumer",
                generation=3,
                protocol=None,
                leader=None,
                current_state_timestamp=-1,
            ),
        ),
        offset_commit_record(GROUP, "topic", 0, OffsetCommitValue(offset=5, commit_timestamp=100)),
    ]
    ctx = Context(SHORT_RETENTION, MemoryLog(entries))
    ctx.sleep(1099)
    assert cleanup(ctx).offsets_removed == 0
    ctx.sleep(1)
    assert cleanup(ctx) == CleanupResult(offsets_removed=1, groups_removed=1)
