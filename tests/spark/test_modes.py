"""The three ways to rebalance on the report's figures: a handoff group driven through the real
engine (its rebalances, phases, causes, moves and unavailable time, ``spark_tasks.handoff``),
and the duplicate-consumption windows of a handoff group and of classic groups
(``spark_tasks.duplicates``), each figure worked out by hand from the scenario."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from coordinator_engine import (
    CoordinatorConfig,
    GroupCoordinator,
    MemoryLog,
    OffsetCommitRequest,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.client import POLL_TIMEOUT_REASON
from coordinator_engine.events import GroupEvent, MemberRemoved, OffsetsCommitted
from coordinator_engine.requests import HandoffHeartbeatRequest
from spark_tasks.rebalance_report import report_tables

from .scenarios import (
    COMPLETING,
    EMPTY,
    PREPARING,
    STABLE,
    T0,
    History,
    generation,
    joined,
    state,
    stored,
)

SESSION = 10_000
TOPIC = "t"


def tables(spark: SparkSession, history: History) -> dict[str, DataFrame]:
    """The report's tables, their shared frames computed once (as ``run`` does)."""
    return report_tables(history.frame(spark), storm_count=3, storm_window_ms=60_000)


class Handoff:
    """A handoff group on the real engine, with a clock that starts at ``T0``."""

    def __init__(self) -> None:
        self.now = T0
        self.events: list[GroupEvent] = []
        self.coord = GroupCoordinator(CoordinatorConfig(), MemoryLog(), self.now)
        self.coord.add_listener(self.events.append)
        self.coord.set_topic_partitions(TOPIC, 2, self.now)

    def at(self, ms: int) -> None:
        self.now = T0 + ms
        self.coord.advance(self.now)

    def hb(self, member: str, epoch: int = 1, **confirmed: tuple[int, ...]) -> Any:
        reply = self.coord.handle(
            HandoffHeartbeatRequest(
                group_id="h",
                member_id=member,
                member_epoch=epoch,
                session_timeout_ms=SESSION,
                topics=(TOPIC,),
                **{
                    kind: tuple(TopicPartition(topic=TOPIC, partition=p) for p in partitions)
                    for kind, partitions in confirmed.items()
                },
            ),
            self.now,
        )
        return reply.response

    def commit(self, member: str, partition: int, offset: int) -> None:
        request = OffsetCommitRequest(
            group_id="h",
            generation_id=-1,
            member_id=member,
            offsets=(PartitionOffset(topic=TOPIC, partition=partition, offset=offset),),
        )
        assert self.coord.handle(request, self.now).response.partitions[0].error_code == 0


def a_handoff_group_moves_then_loses_a_member() -> list[GroupEvent]:
    """a joins and starts both partitions; b joins, a closes t-1 (after committing), b starts
    it; a then falls silent and its session expires: t-0 goes to b at once."""
    h = Handoff()
    assert [p.partition for p in h.hb("a", 0).start] == [0, 1]  # R1 starts at 0
    h.at(100)
    h.hb("a", started=(0, 1))  # R1 ends: Stable at 100
    h.at(1_000)
    h.commit("a", 0, 10)
    h.at(2_000)
    h.commit("a", 0, 30)  # a's t-0 moves 20 records a second
    h.at(5_000)
    h.hb("b", 0)  # R2 starts: a must close t-1
    h.at(5_300)
    h.commit("a", 1, 77)
    h.hb("a", closed=(1,))  # granted to b: Closing lasted 300 ms
    h.at(5_500)
    assert [p.partition for p in h.hb("b").start] == [1]
    h.hb("b", started=(1,))  # R2 ends: Starting lasted 200 ms
    for ms in range(8_000, 30_001, 4_000):  # b heartbeats; a is silent from 5,300
        if ms > 5_300 + SESSION >= ms - 4_000:
            h.at(5_300 + SESSION)  # a's session expires: t-0 is released
        h.at(ms)
        response = h.hb("b")
        if response.start:
            h.hb("b", started=tuple(p.partition for p in response.start))
    return h.events


def test_a_handoff_groups_rebalances_on_the_reports_figures(spark: SparkSession) -> None:
    history = History()
    history.add(*a_handoff_group_moves_then_loses_a_member())
    report = tables(spark, history)
    columns = (
        "cause",
        "cause_member_id",
        "completed",
        "duration_ms",
        "join_ms",
        "sync_ms",
        "rebalance_protocol",
        "members_before",
        "members_after",
        "partitions_moved",
        "partitions_revoked",
        "unavailable_partition_ms",
    )
    rebalances = [
        {c: row[c] for c in ("start_ms", *columns)}
        for row in report["rebalances"].orderBy("start_ms").collect()
    ]
    removed_at = 5_300 + SESSION  # a's last sign of life, its close, plus its session
    assert rebalances == [
        dict(zip(("start_ms", *columns), values, strict=True))
        for values in (
            (T0, "member_joined", "a", True, 100, 0, 100, "handoff", 0, 1, 2, 0, 0),
            (T0 + 5_000, "member_joined", "b", True, 500, 300, 200, "handoff", 1, 2, 1, 1, 300),
            (
                T0 + removed_at,
                "session_timeout",
                "a",
                True,
                700,  # b is granted t-0 at the expiry and starts it at its next heartbeat
                0,
                700,
                "handoff",
                2,
                1,
                1,
                1,
                0,  # released and granted in the same call
            ),
        )
    ]
    unavailable = report["partition_unavailability"].orderBy("revoked_ms").collect()
    assert [
        (r.partition, r.revoked_from, r.assigned_to, r.ended_by, r.unavailable_ms)
        for r in unavailable
    ] == [(1, "a", "b", "assigned", 300), (0, "a", "b", "assigned", 0)]
    moves = report["partition_moves"].where("moved").orderBy("rebalance_id", "partition")
    assert [(r.partition, r.member_before, r.member_after) for r in moves.collect()] == [
        (0, None, "a"),
        (1, None, "a"),
        (1, "a", "b"),
        (0, "a", "b"),
    ]
    # Its closed partition was committed before the close: no window. Its t-0, held when its
    # session expired: from its last commit (2,000) to its last heartbeat (5,300); the commits
    # moved 20 records a second.
    windows = report["duplicate_consumption"].collect()
    assert [
        (w.member_id, w.partition, w.reason, w.window_start_ms, w.window_ms, w.records)
        for w in windows
    ] == [("a", 0, "session_timeout", T0 + 2_000, 3_300, 66)]
    (protocol,) = report["protocols"].collect()
    assert (protocol.rebalance_protocol, protocol.rebalances, protocol.duplicate_windows) == (
        "handoff",
        3,
        1,
    )


def commit(group: str, at: int, member: str, partition: int, offset: int) -> OffsetsCommitted:
    return OffsetsCommitted(
        group_id=group,
        at_ms=T0 + at,
        member_id=member,
        generation_id=1,
        offsets=[["orders", partition, offset]],
    )


def removal(group: str, at: int, member: str, reason: str, detail: str | None) -> MemberRemoved:
    return MemberRemoved(
        group_id=group,
        at_ms=T0 + at,
        member_id=member,
        group_instance_id=None,
        reason=reason,
        detail=detail,
    )


def test_classic_windows_come_from_removals_not_from_members_that_give_partitions_up(
    spark: SparkSession,
) -> None:
    history = History()
    members = ("a", "b", "c", "d")
    history.add(
        joined("g", 0, "a"),
        state("g", 0, "Empty", PREPARING),
        *[joined("g", 1, m) for m in members[1:]],
        state("g", 10, PREPARING, COMPLETING),
        generation("g", 10, 1, members, join_started=0),
        state("g", 20, COMPLETING, STABLE),
        stored("g", 20, 1, {m: [("orders", i)] for i, m in enumerate(members)}),
        commit("g", 1_000, "a", 0, 100),
        commit("g", 3_000, "a", 0, 140),  # 20 records a second
        commit("g", 3_000, "b", 1, 500),  # once only: no rate
        commit("g", 3_000, "d", 3, 9),
        # a stops dead: removed when its session (10 s, ``joined``) expires at 20,000.
        removal("g", 20_000, "a", "session_timeout", None),
        # b's poll loop is too slow: it leaves at 21,000 while still processing.
        removal("g", 21_000, "b", "left", POLL_TIMEOUT_REASON),
        # c never committed; an admin removes it at 22,000.
        removal("g", 22_000, "c", "removed_by_admin", None),
        # d commits and closes: nothing is processed twice.
        commit("g", 23_000, "d", 3, 99),
        removal("g", 23_000, "d", "left", "the consumer is being closed"),
    )
    windows = tables(spark, history)["duplicate_consumption"].orderBy("member_id").collect()
    assert [
        (w.member_id, w.partition, w.reason, w.rebalance_protocol, w.window_ms, w.records)
        for w in windows
    ] == [
        ("a", 0, "session_timeout", "eager", 10_000 - 3_000, 140),  # alive until 10,000
        ("b", 1, "left", "eager", 21_000 - 3_000, None),
        ("c", 2, "removed_by_admin", "eager", 22_000 - 20, None),  # since its assignment
    ]
    assert windows[2].committed_ms is None


def test_the_summary_compares_the_three_modes(spark: SparkSession, tmp_path: Any) -> None:
    from spark_tasks.rebalance_report import run

    history = History()
    history.add(*a_handoff_group_moves_then_loses_a_member())
    history.add(
        joined("g", 0, "a"),
        state("g", 0, "Empty", PREPARING),
        state("g", 10, PREPARING, COMPLETING),
        generation("g", 10, 1, ["a"], join_started=0),
        state("g", 20, COMPLETING, STABLE),
        stored("g", 20, 1, {"a": [("orders", 0)]}),
        removal("g", 40_000, "a", "session_timeout", None),
    )
    summary = run(spark, history.write(tmp_path / "history"), tmp_path / "report")
    assert set(summary["protocols"]) == {"eager", "handoff"}
    assert summary["protocols"]["handoff"]["duplicate_windows"] == 1
    assert summary["protocols"]["eager"]["duplicate_windows"] == 1
    assert summary["groups"]["h"]["duplicate_records"] == 66
    assert summary["totals"]["duplicate_windows"] == 2
    assert "duplicate_consumption" in summary["tables"]


def test_windows_count_for_their_groups_protocol_and_unknown_ones_for_unknown(
    spark: SparkSession, tmp_path: Any
) -> None:
    """A group's windows go to its last rebalance's protocol that is known: g's last rebalance
    names none (b joined the emptied group and died before its sync), yet g is eager. Those of
    a group whose protocol is unknown (k's history starts after its last generation began)
    count for `unknown`, so the modes' windows add up to the total."""
    from spark_tasks.rebalance_report import run

    history = History()
    history.add(
        joined("g", 0, "a"),
        state("g", 0, EMPTY, PREPARING),
        state("g", 10, PREPARING, COMPLETING),
        generation("g", 10, 1, ["a"], join_started=0),
        state("g", 20, COMPLETING, STABLE),
        stored("g", 20, 1, {"a": [("orders", 0)]}),
        stored("k", 20, 7, {"x": [("orders", 1)]}),
        # a's session expires while it holds orders-0: a window; the group empties.
        removal("g", 40_000, "a", "session_timeout", None),
        state("g", 40_000, STABLE, PREPARING),
        state("g", 40_000, PREPARING, EMPTY),
        generation("g", 40_000, 2, [], join_started=40_000),
        # So does x's, in a group whose generations lie before the history.
        removal("k", 40_000, "x", "session_timeout", None),
        state("k", 40_000, STABLE, PREPARING),
        state("k", 40_000, PREPARING, EMPTY),
        generation("k", 40_000, 8, [], join_started=40_000),
        joined("g", 60_000, "b"),
        state("g", 60_000, EMPTY, PREPARING),
        state("g", 60_010, PREPARING, COMPLETING),
        generation("g", 60_010, 3, ["b"], join_started=60_000),
        removal("g", 90_010, "b", "sync_timeout", None),
        state("g", 90_010, COMPLETING, PREPARING),
        state("g", 90_010, PREPARING, EMPTY),
        generation("g", 90_010, 4, [], join_started=90_010),
    )
    summary = run(spark, history.write(tmp_path / "history"), tmp_path / "report")
    rebalances = spark.read.parquet(str(tmp_path / "report" / "rebalances"))
    assert [
        (r.group_id, r.rebalance_protocol)
        for r in rebalances.orderBy("group_id", "rebalance_id").collect()
    ] == [("g", "eager"), ("g", "eager"), ("g", None), ("k", None)]
    windows = spark.read.parquet(str(tmp_path / "report" / "duplicate_consumption"))
    assert sorted(
        (w.group_id, w.member_id, w.partition, w.rebalance_protocol) for w in windows.collect()
    ) == [("g", "a", 0, "eager"), ("k", "x", 1, None)]
    protocols = summary["protocols"]
    assert set(protocols) == {"eager", "unknown"}
    assert protocols["eager"]["duplicate_windows"] == 1
    assert protocols["unknown"]["duplicate_windows"] == 1
    assert protocols["unknown"]["completed"] == 0
    assert summary["totals"]["duplicate_windows"] == 2
