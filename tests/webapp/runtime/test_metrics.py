"""The rebalance counters (``webapp.runtime.metrics``) fed by a real engine's events, one group
kind at a time, with a fake clock: rebalances by cause, their durations, partitions moved and
their unavailable time, members removed by reason, and a removed group's numbers gone."""

from __future__ import annotations

import datetime

from coordinator_engine import (
    CoordinatorConfig,
    DeleteGroupsRequest,
    Errors,
    HeartbeatRequest,
    MemberIdentity,
    OffsetCommitRequest,
    PartitionOffset,
)
from coordinator_engine.consumer_protocol import ConsumerProtocolAssignment, encode_assignment
from tests.engine.consumer_harness import ConsumerContext, owned
from tests.engine.harness import GROUP, Context
from tests.engine.test_handoff import GROUP as HANDOFF_GROUP
from tests.engine.test_handoff import HandoffContext, pairs, stable_pair, t
from webapp.runtime.metrics import (
    DURATION_BUCKETS_S,
    Histogram,
    RebalanceCounts,
    RequestCounts,
    api_name,
)


def counting(coord: object) -> RebalanceCounts:
    counts = RebalanceCounts(coord.group_kind)  # type: ignore[attr-defined]
    coord.add_listener(counts.on_event)  # type: ignore[attr-defined]
    return counts


def assigned(*partitions: tuple[str, int]) -> bytes:
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=partitions))


def test_a_histogram_counts_each_value_in_the_first_bucket_that_holds_it() -> None:
    histogram = Histogram((0.1, 1.0))
    for value in (0.0, 0.1, 0.5, 1.0, 7.0):
        histogram.observe(value)
    assert histogram.cumulative() == [("0.1", 2), ("1.0", 4), ("+Inf", 5)]
    assert (histogram.count, histogram.sum) == (5, 8.6)


def test_classic_rebalances_are_counted_by_cause_and_timed_from_start_to_stable() -> None:
    ctx = Context()
    counts = counting(ctx.coord)
    leader, follower, generation = ctx.stable_group_of_two()
    group = counts.groups[GROUP]
    assert group.kind == "classic"
    # The leader's join into the empty group, then the follower's into the stable one.
    assert group.rebalances == {"member_joined": 2}
    # Generation 1 waited the initial delay (50 ms); generation 2 completed at once.
    assert group.durations.counts[0] == 2 and group.durations.sum == 0.05

    ctx.leave(MemberIdentity(member_id=follower))
    ctx.join(leader)
    ctx.sleep(0)
    assert group.rebalances == {"member_joined": 2, "member_left": 1}
    assert group.members_removed == {"left": 1}
    for _ in range(4):  # nobody heartbeats: the leader's session (500 ms) expires
        ctx.sleep(200)
    assert group.rebalances == {"member_joined": 2, "member_left": 1, "session_timeout": 1}
    assert group.members_removed == {"left": 1, "session_timeout": 1}
    assert ctx.group().state.value == "Empty"
    assert generation == 2


def test_a_classic_group_s_moved_partitions_are_timed_from_the_rebalance_start() -> None:
    ctx = Context()
    counts = counting(ctx.coord)
    joined = ctx.join_now()
    leader = joined.member_id
    ctx.sync(leader, joined.generation_id, {leader: assigned(("t", 0), ("t", 1))})
    group = counts.groups[GROUP]
    assert (group.partitions_moved, group.unavailable_ms) == (0, 0)  # a first owner: no move

    started = ctx.now
    follower_join = ctx.join()  # Stable → PreparingRebalance: the eager members give up all
    ctx.sleep(30)
    leader_join = ctx.join(leader)
    assert leader_join.done and follower_join.done
    follower = follower_join.response
    assert follower is not None
    ctx.sleep(20)
    ctx.sync(
        leader,
        follower.generation_id,
        {leader: assigned(("t", 0)), follower.member_id: assigned(("t", 1))},
    )
    # t-1 moved; nobody owned it from the rebalance's start to the stored assignment. t-0
    # stayed with the leader: no move.
    assert (group.partitions_moved, group.unavailable_ms) == (1, ctx.now - started)
    assert group.unavailable_ms == 50


def test_a_cooperative_revocation_counts_from_the_assignment_that_took_it_away() -> None:
    ctx = Context()
    counts = counting(ctx.coord)
    joined = ctx.join_now()
    leader = joined.member_id
    ctx.sync(leader, joined.generation_id, {leader: assigned(("t", 0), ("t", 1))})
    follower_join = ctx.join()
    leader_join = ctx.join(leader)
    follower = follower_join.response
    assert leader_join.done and follower is not None
    ctx.sleep(10)
    # The first assignment takes t-1 from the leader and gives it to nobody (revoked) ...
    ctx.sync(leader, follower.generation_id, {leader: assigned(("t", 0)), follower.member_id: b""})
    revoked_at = ctx.now
    ctx.sleep(70)
    # ... the leader rejoins once it has let it go, and the next gives it to the follower.
    rejoin_leader = ctx.join(leader)
    rejoin_follower = ctx.join(follower.member_id)
    assert rejoin_leader.done and rejoin_follower.done
    assert rejoin_leader.response is not None
    ctx.sleep(5)
    ctx.sync(
        leader,
        rejoin_leader.response.generation_id,
        {leader: assigned(("t", 0)), follower.member_id: assigned(("t", 1))},
    )
    group = counts.groups[GROUP]
    assert group.partitions_moved == 1
    assert group.unavailable_ms == ctx.now - revoked_at == 75


def test_consumer_group_rebalances_are_its_epoch_bumps() -> None:
    ctx = ConsumerContext(topics={"foo": 4})
    counts = counting(ctx.coord)
    ctx.join("m1")
    group = counts.groups["fooup"]
    assert group.kind == "consumer"
    assert group.rebalances == {"member_joined": 1}
    # The first member gets its whole target in the same heartbeat: a rebalance of 0 s.
    assert group.durations.counts[0] == 1 and group.durations.sum == 0.0

    first = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert first.error_code == Errors.NONE
    ctx.sleep(100)
    ctx.join("m2")
    assert group.rebalances == {"member_joined": 2}
    # m1's next heartbeat (still owning all four) asks it to revoke two; it lets them go at
    # the one after, and m2 is given them at its own next heartbeat.
    ctx.sleep(40)
    everything = owned(foo=(0, 1, 2, 3))
    revoke = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=everything)
    assert revoke.assignment == {"foo": (0, 1)}
    told_at = ctx.now
    ctx.sleep(30)
    ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    assert group.partitions_moved == 0
    ctx.sleep(30)
    given = ctx.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())
    assert given.assignment == {"foo": (2, 3)}
    assert group.partitions_moved == 2
    assert group.unavailable_ms == 2 * (ctx.now - told_at) == 2 * 60


def test_handoff_moves_count_until_the_new_owner_confirmed_its_start() -> None:
    ctx = stable_pair()  # a on t-0,1 and b on t-2,3, before the listener
    counts = counting(ctx.coord)
    ctx.sleep(10)
    ctx.join("c")  # a third member: the re-plan gives it one of the four partitions
    group = counts.groups[HANDOFF_GROUP]
    assert group.kind == "handoff"
    assert group.rebalances == {"member_joined": 1}
    ctx.sleep(25)
    ctx.settle("a", "b", "c")
    # a's and b's partitions were given to them before the listener: their owners are not
    # known, and c getting two of them counts no move.
    assert group.partitions_moved == 0
    assert sorted(ctx.owned("c")) == sorted(
        set(t(0, 1, 2, 3)) - set(ctx.owned("a") + ctx.owned("b"))
    )
    assert len(ctx.owned("c")) == 1
    ctx.sleep(5)
    ctx.hb("c", epoch=-1)  # c leaves: its partition counts as closed at once
    left_at = ctx.now
    ctx.sleep(15)
    ctx.settle("a", "b")  # granted to a or b, who confirms its start now
    assert group.rebalances == {"member_joined": 1, "member_left": 1}
    assert group.members_removed == {"left": 1}
    assert group.partitions_moved == 1
    assert group.unavailable_ms == ctx.now - left_at == 15
    assert group.durations.count == 2


def test_a_handoff_partition_is_unavailable_from_its_close_to_its_start() -> None:
    ctx = HandoffContext()
    counts = counting(ctx.coord)
    ctx.join("a")
    ctx.settle("a")  # a owns t-0..3
    ctx.sleep(10)
    ctx.join("b")  # the new plan moves t-2 and t-3 to b: a must close them first
    ctx.sleep(20)
    asked = ctx.hb("a")
    assert pairs(asked.close) == t(2, 3)
    ctx.hb("a", closed=t(2, 3))  # a stopped consuming them at 30
    ctx.sleep(30)
    granted = ctx.hb("b")
    assert pairs(granted.start) == t(2, 3)
    ctx.hb("b", started=t(2, 3))  # and b started them at 60
    group = counts.groups[HANDOFF_GROUP]
    assert (group.partitions_moved, group.unavailable_ms) == (2, 2 * 30)
    assert group.rebalances == {"member_joined": 2}
    assert group.durations.count == 2 and group.durations.sum == 0.05  # 10 → 60 for b's


def test_a_removed_group_s_numbers_go_with_it() -> None:
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=10)
    ctx = Context(config=config)
    counts = counting(ctx.coord)
    leader, generation = ctx.stable_group_of_one()
    assert GROUP in counts.groups
    ctx.leave(MemberIdentity(member_id=leader))
    reply = ctx.coord.handle(DeleteGroupsRequest(group_ids=(GROUP,)), ctx.now)
    assert reply.response is not None and reply.response.results[0].error_code == Errors.NONE
    assert GROUP not in counts.groups
    assert generation == 1


def test_response_errors_are_counted_per_code_as_kafka_counts_them() -> None:
    ctx = Context()
    requests = RequestCounts()
    leader, generation = ctx.stable_group_of_one()
    for request in (
        HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=leader),
        HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id="nobody"),
        OffsetCommitRequest(
            group_id=GROUP,
            generation_id=generation + 5,
            member_id=leader,
            offsets=(
                PartitionOffset(topic="t", partition=0, offset=1),
                PartitionOffset(topic="t", partition=1, offset=1),
            ),
        ),
    ):
        reply = ctx.coord.handle(request, ctx.now)
        requests.count(api_name(type(request)), "in-process", reply.response)
    assert requests.error_counts() == {
        ("Heartbeat", "NONE"): 1,
        ("Heartbeat", "UNKNOWN_MEMBER_ID"): 1,
        ("OffsetCommit", "ILLEGAL_GENERATION"): 2,
    }


def test_duration_buckets_are_sorted() -> None:
    assert list(DURATION_BUCKETS_S) == sorted(DURATION_BUCKETS_S)


def test_a_wire_response_s_codes_are_counted_at_every_depth() -> None:
    from kio.schema.errors import ErrorCode
    from kio.schema.offset_commit.v8.response import (
        OffsetCommitResponse,
        OffsetCommitResponsePartition,
        OffsetCommitResponseTopic,
    )
    from kio.schema.types import TopicName
    from kio.static.primitive import i32, i32Timedelta

    def partition(index: int, code: ErrorCode) -> OffsetCommitResponsePartition:
        return OffsetCommitResponsePartition(partition_index=i32(index), error_code=code)

    response = OffsetCommitResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        topics=(
            OffsetCommitResponseTopic(
                name=TopicName("a"),
                partitions=(partition(0, ErrorCode.none), partition(1, ErrorCode.none)),
            ),
            OffsetCommitResponseTopic(
                name=TopicName("b"), partitions=(partition(0, ErrorCode.illegal_generation),)
            ),
        ),
    )
    requests = RequestCounts()
    requests.count("OffsetCommit", "kafka", response)
    requests.count("OffsetCommit", "kafka", response)
    requests.count("Produce", "kafka", object())  # no codes: nothing, no error
    requests.count("Heartbeat", "kafka", None)  # failed: the request alone
    assert requests.request_counts() == {
        ("OffsetCommit", "kafka"): 2,
        ("Produce", "kafka"): 1,
        ("Heartbeat", "kafka"): 1,
    }
    assert requests.error_counts() == {
        ("OffsetCommit", "NONE"): 4,
        ("OffsetCommit", "ILLEGAL_GENERATION"): 2,
    }
