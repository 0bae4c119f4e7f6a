"""Kafka 4's consumer protocol (KIP-848) on the report's figures: consumer groups driven through
the real engine with ConsumerGroupHeartbeat, their events turned into a history, and each
figure of ``spark_tasks.consumer`` worked out by hand from the scenario: a join (epoch bump,
revocation, the wait while nobody owns a partition, its assignment, every member Stable), a
member leaving, a session timeout, a member held in UNREVOKED_PARTITIONS past its rebalance
timeout, and a second epoch bump before the first was reconciled."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    CoordinatorConfig,
    GroupCoordinator,
    MemoryLog,
    OffsetCommitRequest,
    OwnedTopicPartitions,
    PartitionOffset,
)
from coordinator_engine.events import ConsumerStaticMemberLeft, GroupEvent
from spark_tasks.rebalance_report import report_tables
from spark_tasks.schema import row_of
from tests import ROOT

from .scenarios import (
    EMPTY,
    PREPARING,
    T0,
    History,
    completed_rebalance,
    joined,
    state,
)

TOPIC = "t"
GROUP = "c"
REBALANCE_TIMEOUT = 5_000
SESSION = CoordinatorConfig().consumer_group_session_timeout_ms  # 45,000


class Consumer:
    """A consumer group on the real engine, its topic ``t`` of four partitions, a clock that
    starts at ``T0``; members heartbeat with what they own."""

    def __init__(self, group: str = GROUP) -> None:
        self.group = group
        self.now = T0
        self.events: list[GroupEvent] = []
        self.coord = GroupCoordinator(CoordinatorConfig(), MemoryLog(), self.now)
        self.coord.add_listener(self.events.append)
        self.coord.set_topic_partitions(TOPIC, 4, self.now)
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, tuple[int, ...]] = {}

    def at(self, ms: int) -> None:
        self.now = T0 + ms
        self.coord.advance(self.now)

    def hb(
        self, member: str, *owned: int, epoch: int | None = None, instance: str | None = None
    ) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat of ``member`` owning ``owned`` (a join when it has no epoch yet)."""
        joining = member not in self.epochs
        fields: dict[str, Any] = {}
        if joining:
            fields = {
                "rebalance_timeout_ms": REBALANCE_TIMEOUT,
                "subscribed_topic_names": (TOPIC,),
            }
        reply = self.coord.handle(
            ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=member,
                member_epoch=0 if joining else self.epochs[member] if epoch is None else epoch,
                topic_partitions=()
                if joining
                else (OwnedTopicPartitions(topic=TOPIC, partitions=owned),),
                instance_id=instance,
                **fields,
            ),
            self.now,
        )
        response = reply.response
        assert response is not None and response.error_code == 0, response
        self.epochs[member] = response.member_epoch
        if response.assignment is not None:
            self.owned[member] = response.assignment.get(TOPIC, ())
        return response

    def tick(self, member: str) -> ConsumerGroupHeartbeatResponse:
        """A heartbeat of a member that revokes at once: it owns what it was last given."""
        return self.hb(member, *self.owned.get(member, ()))

    def leave(self, member: str) -> None:
        self.hb(member, epoch=-1)
        del self.epochs[member]

    def commit(self, member: str, partition: int, offset: int) -> None:
        request = OffsetCommitRequest(
            group_id=self.group,
            generation_id=self.epochs[member],
            member_id=member,
            offsets=(PartitionOffset(topic=TOPIC, partition=partition, offset=offset),),
        )
        response = self.coord.handle(request, self.now).response
        assert response is not None and response.partitions[0].error_code == 0


def two_members(group: str = GROUP) -> Consumer:
    """a joins at 0 and gets all four partitions at once (a rebalance of 0 ms); b joins at
    1,000 (bump to epoch 2: a keeps t-0 and t-1, b is to get t-2 and t-3); a is told at 1,100
    to revoke t-2 and t-3 and releases them at 1,300; b gets them at its heartbeat at 1,400,
    when every member is Stable at epoch 2."""
    c = Consumer(group)
    assert c.hb("a").assignment == {TOPIC: (0, 1, 2, 3)}
    c.at(1_000)
    assert c.hb("b").assignment == {}  # t-2 and t-3 are still a's
    c.at(1_100)
    assert c.hb("a", 0, 1, 2, 3).assignment == {TOPIC: (0, 1)}
    c.at(1_300)
    c.hb("a", 0, 1)
    c.at(1_400)
    assert c.hb("b").assignment == {TOPIC: (2, 3)}
    return c


REBALANCE_COLUMNS = (
    "start_ms",
    "from_state",
    "cause",
    "cause_member_id",
    "end_state",
    "completed",
    "duration_ms",
    "join_ms",
    "sync_ms",
    "restarts",
    "generations",
    "generation_id",
    "protocol_name",
    "rebalance_protocol",
    "members_before",
    "members_after",
    "partitions_before",
    "partitions_after",
    "partitions_moved",
    "partitions_kept",
    "stickiness",
    "partitions_revoked",
    "unavailable_partition_ms",
)


def rebalances(report: dict[str, DataFrame]) -> list[tuple[Any, ...]]:
    rows = report["rebalances"].orderBy("rebalance_id").collect()
    return [tuple(row[c] for c in REBALANCE_COLUMNS) for row in rows]


def rebalance_ids(report: dict[str, DataFrame]) -> list[int]:
    return [r.rebalance_id for r in report["rebalances"].orderBy("rebalance_id").collect()]


def unavailable(report: dict[str, DataFrame]) -> list[tuple[Any, ...]]:
    rows = report["partition_unavailability"].orderBy("revoked_ms", "partition").collect()
    return [
        (
            r.partition,
            r.revoked_from,
            r.revoked_ms - T0,
            r.assigned_to,
            r.ended_by,
            r.unavailable_ms,
            r.rebalance_protocol,
        )
        for r in rows
    ]


def test_a_join_is_a_bump_a_revocation_an_unowned_wait_and_an_assignment(
    scenarios: Scenarios,
) -> None:
    report = scenarios.report("join")
    assert rebalances(report) == [
        # a into the Empty group: its whole target at once, Empty -> Stable in the same call.
        (T0, "Empty", "member_joined", "a", "Stable", True, 0, 0, 0, 0, 1, 1, "uniform",
         "consumer", 0, 1, 0, 4, 4, 0, None, 0, 0),
        # b: Stable -> Reconciling at 1,000 until b holds t-2 and t-3 at 1,400; a keeps two of
        # the four partitions it had.
        (T0 + 1_000, "Stable", "member_joined", "b", "Stable", True, 400, 0, 400, 0, 1, 2,
         "uniform", "consumer", 1, 2, 4, 4, 2, 2, 0.5, 2, 600),
    ]  # fmt: skip
    # Told to revoke at 1,100, released at 1,300 (nobody owns them until 1,400), b's at 1,400.
    assert unavailable(report) == [
        (2, "a", 1_100, "b", "assigned", 300, "consumer"),
        (3, "a", 1_100, "b", "assigned", 300, "consumer"),
    ]
    moves = report["partition_moves"].where("moved").orderBy("rebalance_id", "partition")
    assert [(m.partition, m.member_before, m.member_after) for m in moves.collect()] == [
        (0, None, "a"),
        (1, None, "a"),
        (2, None, "a"),
        (3, None, "a"),
        (2, "a", "b"),
        (3, "a", "b"),
    ]
    assert report["duplicate_consumption"].count() == 0


def a_member_leaves(group: str = GROUP) -> Consumer:
    """``two_members``, then b leaves at 10,000 and a is given its partitions at 10,200."""
    c = two_members(group)
    c.at(10_000)
    c.leave("b")  # bump to epoch 3; the target waits for a heartbeat (Assigning)
    c.at(10_200)
    assert c.hb("a", 0, 1).assignment == {TOPIC: (0, 1, 2, 3)}  # nobody holds t-2, t-3
    return c


def test_a_member_leaving_hands_its_partitions_over_at_the_next_heartbeat(
    scenarios: Scenarios,
) -> None:
    report = scenarios.report("leave")
    assert rebalances(report)[2] == (
        T0 + 10_000, "Stable", "member_left", "b", "Stable", True, 200, 200, 0, 0, 1, 3,
        "uniform", "consumer", 2, 1, 4, 4, 2, 2, 0.5, 2, 400,
    )  # fmt: skip
    assert unavailable(report)[2:] == [
        (2, "b", 10_000, "a", "assigned", 200, "consumer"),
        (3, "b", 10_000, "a", "assigned", 200, "consumer"),
    ]
    # Its one target waited 200 ms in Assigning for a's heartbeat, and a held it at once.
    (generation,) = (
        report["generations"].where(f"rebalance_id = {rebalance_ids(report)[2]}").collect()
    )
    assert (generation.generation_id, generation.members, generation.join_ms) == (3, 1, 200)
    assert (generation.sync_ms, generation.ended_in) == (0, "Stable")
    # b left by itself (it commits first): nothing is processed twice.
    assert report["duplicate_consumption"].count() == 0


def a_member_stops_heartbeating(group: str = GROUP) -> Consumer:
    """``two_members``; b commits t-2 at 2,000 and 4,000, heartbeats last at 5,000 and is
    fenced when its session ends at 50,000; a gets everything at 50,500."""
    c = two_members(group)
    c.at(2_000)
    c.commit("b", 2, 100)
    c.at(4_000)
    c.commit("b", 2, 180)  # 40 records a second
    c.at(5_000)
    c.hb("b", 2, 3)  # b's last heartbeat: its session runs out at 50,000
    for ms in range(6_000, 50_000, 4_000):  # a heartbeats until 46,000
        c.at(ms)
        c.hb("a", 0, 1)
    c.at(50_000)  # b is fenced: bump to epoch 3, Assigning
    c.at(50_500)
    assert c.hb("a", 0, 1).assignment == {TOPIC: (0, 1, 2, 3)}
    return c


def test_a_session_timeout_fences_the_member_and_opens_duplicate_windows(
    scenarios: Scenarios,
) -> None:
    report = scenarios.report("timeout")
    assert rebalances(report)[2] == (
        T0 + 50_000, "Stable", "session_timeout", "b", "Stable", True, 500, 500, 0, 0, 1, 3,
        "uniform", "consumer", 2, 1, 4, 4, 2, 2, 0.5, 2, 1_000,
    )  # fmt: skip
    # b's t-2: from its last commit (4,000) to its last heartbeat (5,000: the removal less the
    # session); 40 records a second. Its t-3, never committed: from 1,400, when it got it.
    windows = report["duplicate_consumption"].orderBy("partition").collect()
    assert [
        (
            w.member_id,
            w.partition,
            w.reason,
            w.rebalance_protocol,
            w.window_start_ms - T0,
            w.window_ms,
            w.records,
        )
        for w in windows
    ] == [
        ("b", 2, "session_timeout", "consumer", 4_000, 1_000, 40),
        ("b", 3, "session_timeout", "consumer", 1_400, 3_600, None),
    ]


def held_past_its_rebalance_timeout(group: str = GROUP) -> Consumer:
    """a holds all four partitions and commits t-2 at 500 and 1,000; b joins at 1,000 (epoch
    2); a is told at 1,100 to revoke t-2 and t-3 but keeps them; its rebalance timeout (5 s)
    fences it at 6,100 (epoch 3), and b gets all four at its heartbeat at 6,200."""
    c = Consumer(group)
    c.hb("a")
    c.at(500)
    c.commit("a", 2, 100)
    c.at(1_000)
    c.commit("a", 2, 150)  # 100 records a second
    c.hb("b")  # bump to epoch 2: a is to give t-2 and t-3 to b
    c.at(1_100)
    assert c.hb("a", 0, 1, 2, 3).assignment == {TOPIC: (0, 1)}  # its rebalance timer: 6,100
    c.at(3_000)
    c.hb("a", 0, 1, 2, 3)  # a is still busy with t-2 and t-3
    c.hb("b")
    c.at(6_100)  # a is fenced: bump to epoch 3 (Reconciling -> Assigning, a restart)
    c.at(6_200)
    assert c.hb("b").assignment == {TOPIC: (0, 1, 2, 3)}
    return c


def test_a_member_held_in_unrevoked_partitions_past_its_rebalance_timeout_is_fenced(
    scenarios: Scenarios,
) -> None:
    report = scenarios.report("held")
    assert rebalances(report)[1] == (
        # Reconciling 1,000 -> 6,100, Assigning 6,100 -> 6,200; two targets, one restart.
        T0 + 1_000, "Stable", "member_joined", "b", "Stable", True, 5_200, 100, 5_100, 1, 2, 3,
        "uniform", "consumer", 1, 1, 4, 4, 4, 0, 0.0, 4, 2 * 5_100 + 2 * 100,
    )  # fmt: skip
    # t-2 and t-3 from the revocation (one interval, though a still held them when fenced);
    # t-0 and t-1 from the fencing.
    assert unavailable(report) == [
        (2, "a", 1_100, "b", "assigned", 5_100, "consumer"),
        (3, "a", 1_100, "b", "assigned", 5_100, "consumer"),
        (0, "a", 6_100, "b", "assigned", 100, "consumer"),
        (1, "a", 6_100, "b", "assigned", 100, "consumer"),
    ]
    # Fenced holding all four (two not yet released): its t-2 from its last commit at 1,000 to
    # the fencing; the others, never committed, since it got them at 0.
    windows = report["duplicate_consumption"].orderBy("partition").collect()
    figures = [
        (w.partition, w.reason, w.window_start_ms - T0, w.window_ms, w.records) for w in windows
    ]
    assert figures == [
        (0, "rebalance_timeout", 0, 6_100, None),
        (1, "rebalance_timeout", 0, 6_100, None),
        (2, "rebalance_timeout", 1_000, 5_100, 510),
        (3, "rebalance_timeout", 0, 6_100, None),
    ]  # fmt: skip


def overlapping_bumps(group: str = GROUP) -> Consumer:
    """After ``two_members``: c joins at 10,000 (epoch 3), b is told at 10,100 to revoke t-3,
    d joins at 10,200 (epoch 4) before anybody reconciled; every member then heartbeats every
    100 ms, revoking at once."""
    c = two_members(group)  # a: t-0, t-1; b: t-2, t-3 at epoch 2
    c.at(10_000)
    c.tick("c")  # bump to epoch 3: b is to give t-3 to c
    c.at(10_100)
    c.tick("b")  # told to revoke t-3
    c.at(10_200)
    c.tick("d")  # bump to epoch 4 (a is to give t-1 to d) before anybody reconciled
    for ms in range(10_300, 11_000, 100):  # every member heartbeats, revoking at once
        c.at(ms)
        for member in ("a", "b", "c", "d"):
            c.tick(member)
    return c


def test_a_second_bump_before_the_members_reconciled_restarts_the_rebalance(
    scenarios: Scenarios,
) -> None:
    c = scenarios.consumers["bumps"]
    targets = [e.to_json()["assignment"] for e in c.events if e.type.endswith("Computed")]
    assert targets[-1] == {
        "a": [[TOPIC, 0]],
        "b": [[TOPIC, 2]],
        "c": [[TOPIC, 3]],
        "d": [[TOPIC, 1]],
    }
    report = scenarios.report("bumps")
    assert rebalances(report)[2] == (
        # One rebalance from c's bump at 10,000 to every member Stable at epoch 4 at 10,400
        # (b released t-3 at 10,300 and c got it; a released t-1 at 10,300, d got it at
        # 10,400), restarted once by d's bump: two targets. t-1 and t-3 moved, t-0 and t-2
        # stayed.
        T0 + 10_000, "Stable", "member_joined", "c", "Stable", True, 400, 0, 400, 1, 2, 4,
        "uniform", "consumer", 2, 4, 4, 4, 2, 2, 0.5, 2, 200 + 100,
    )  # fmt: skip
    assert unavailable(report)[2:] == [
        (3, "b", 10_100, "c", "assigned", 200, "consumer"),
        (1, "a", 10_300, "d", "assigned", 100, "consumer"),
    ]
    # Its two targets: epoch 3's, computed at c's join and overtaken by d's bump 200 ms later;
    # epoch 4's, computed at d's join, reached by every member at 10,400.
    generations = report["generations"].where(f"rebalance_id = {rebalance_ids(report)[2]}")
    assert [
        (
            g.generation_id,
            g.protocol_name,
            g.rebalance_protocol,
            g.leader_id,
            g.member_ids,
            g.join_started_ms - T0,
            g.join_ms,
            g.sync_ms,
            g.ended_in,
        )
        for g in generations.orderBy("generation_id").collect()
    ] == [
        (3, "uniform", "consumer", None, ["a", "b", "c"], 10_000, 0, 200, "Assigning"),
        (4, "uniform", "consumer", None, ["a", "b", "c", "d"], 10_200, 0, 200, "Stable"),
    ]


def test_the_summary_compares_the_four_modes(spark: SparkSession, tmp_path: Any) -> None:
    from spark_tasks.rebalance_report import run

    from .test_modes import a_handoff_group_moves_then_loses_a_member

    history = History()
    history.add(*a_handoff_group_moves_then_loses_a_member())
    history.add(*two_members().events)
    for group, assignor in (("eager", "range"), ("coop", "cooperative-sticky")):
        history.add(
            joined(group, 0, "a", protocols=(assignor,)),
            state(group, 0, EMPTY, PREPARING, cause="member_joined", cause_member_id="a"),
            *completed_rebalance(
                group,
                start=0,
                joined_at=10,
                synced_at=20,
                generation_id=1,
                partitions={"a": [("orders", 0)]},
                protocol=assignor,
            ),
        )
    summary = run(spark, history.write(tmp_path / "history"), tmp_path / "report")
    assert set(summary["protocols"]) == {"eager", "cooperative", "handoff", "consumer"}
    consumer = summary["protocols"]["consumer"]
    assert (consumer["groups"], consumer["rebalances"], consumer["completed"]) == (1, 2, 2)
    assert consumer["duration_ms"] == {"p50": 200.0, "p95": 380.0, "max": 400}
    assert (consumer["partitions_moved"], consumer["unavailable_partition_s"]) == (6, 0.6)
    assert summary["assignors"]["uniform (consumer)"]["rebalances"] == 2
    assert set(summary["assignors"]) == {
        "range",
        "cooperative-sticky",
        "handoff",
        "uniform (consumer)",
    }
    assert summary["groups"][GROUP]["causes"] == {"member_joined": 2}
    assert summary["input"]["schema_version"] == 3


def test_the_history_rows_carry_the_consumer_events_fields() -> None:
    history = History()
    history.add(*two_members().events)
    rows = {(row["type"], row["at_ms"] - T0): row_of(row) for row in history.rows}
    target = rows["ConsumerTargetAssignmentComputed", 1_000]
    assert (target["generation_id"], target["protocol_name"]) == (2, "uniform")
    assert target["assignment"] == [
        {"member_id": member, "topic": TOPIC, "partition": partition}
        for member, partition in (("a", 0), ("a", 1), ("b", 2), ("b", 3))
    ]
    revoked = rows["ConsumerPartitionsRevoked", 1_100]
    assert (revoked["member_id"], revoked["member_epoch"]) == ("a", 1)
    assert revoked["partitions"] == [{"topic": TOPIC, "partition": p} for p in (2, 3)]
    assert rows["ConsumerPartitionsAssigned", 1_400]["partitions"] == [
        {"topic": TOPIC, "partition": p} for p in (2, 3)
    ]
    moved = rows["ConsumerMemberStateChanged", 1_300]
    assert (moved["from_state"], moved["to_state"]) == ("UNREVOKED_PARTITIONS", "STABLE")
    assert (moved["member_epoch"], moved["previous_member_epoch"]) == (2, 1)
    bump = rows["ConsumerGroupEpochBumped", 1_000]
    assert (bump["generation_id"], bump["cause"], bump["cause_member_id"]) == (
        2,
        "member_joined",
        "b",
    )
    left = row_of(
        {
            **ConsumerStaticMemberLeft(
                group_id=GROUP, at_ms=T0, member_id="m", instance_id="host-1"
            ).to_json(),
            "seq": 1,
        }
    )
    assert (left["member_id"], left["group_instance_id"]) == ("m", "host-1")


def _peers() -> Any:
    """bench/report_peers.py (the benchmark's folder is no package)."""
    spec = importlib.util.spec_from_file_location(
        "report_peers", ROOT / "bench" / "report_peers.py"
    )
    assert spec is not None and spec.loader is not None
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    return peers


def test_the_benchmarks_peers_count_consumer_groups_by_the_same_rules(tmp_path: Any) -> None:
    """bench/report_peers.py's pandas and DuckDB readings of the rules give the figures worked
    out above for the groups of the join, the member held past its rebalance timeout, the
    overlapping bump and the static member back under a new id (each group its own history's
    figures)."""
    peers = _peers()

    history = History()
    history.add(*two_members().events)
    history.add(*held_past_its_rebalance_timeout("u").events)
    history.add(*overlapping_bumps("o").events)
    history.add(*static_member_back_under_a_new_id("s").events)
    directory = history.write(tmp_path / "history")
    expected = {
        GROUP: {
            "rebalances": 2,
            "completed": 2,
            "duration_ms": {"p50": 200.0, "p95": 380.0, "max": 400},
            "partitions_moved": 6,
            "stickiness_mean": 0.5,
            "causes": {"member_joined": 2},
            "unavailable_partition_s": 0.6,
            "storms": 0,
        },
        "u": {
            "rebalances": 2,
            "completed": 2,
            "duration_ms": {"p50": 2_600.0, "p95": 4_940.0, "max": 5_200},
            "partitions_moved": 8,
            "stickiness_mean": 0.0,  # a joins alone (no partition before), then keeps none
            "causes": {"member_joined": 2},
            "unavailable_partition_s": 10.4,
            "storms": 0,
        },
        "o": {
            "rebalances": 3,
            "completed": 3,
            "duration_ms": {"p50": 400.0, "p95": 400.0, "max": 400},
            "partitions_moved": 8,
            "stickiness_mean": 0.5,
            "causes": {"member_joined": 3},
            "unavailable_partition_s": 0.9,
            "storms": 1,  # three starts within a minute
        },
        "s": {
            "rebalances": 3,
            "completed": 3,
            "duration_ms": {"p50": 400.0, "p95": 490.0, "max": 500},
            "partitions_moved": 8,
            "stickiness_mean": 0.5,
            "causes": {"member_joined": 2, "session_timeout": 1},
            "unavailable_partition_s": 1.6,
            "storms": 1,
        },
    }
    assert peers.pandas_report(directory) == expected
    assert peers.duckdb_report(directory) == expected


def static_member_back_under_a_new_id(group: str = GROUP) -> Consumer:
    """``two_members`` with a static (instance host-a): it leaves for a while at 2,000 (epoch
    -2), comes back at 3,000 as a2, commits t-0 at 4,000 and 6,000, heartbeats last at 7,000
    and is fenced when its session ends at 52,000; b gets t-0 and t-1 at 52,500."""
    c = Consumer(group)
    c.hb("a", instance="host-a")  # a static member: all four partitions
    c.at(1_000)
    c.tick("b")
    c.at(1_100)
    c.hb("a", 0, 1, 2, 3, instance="host-a")  # told to revoke t-2 and t-3
    c.at(1_300)
    c.hb("a", 0, 1, instance="host-a")
    c.at(1_400)
    c.tick("b")  # b holds t-2 and t-3 (as in two_members)
    c.at(2_000)
    c.hb("a", 0, 1, epoch=-2, instance="host-a")  # away for a while: no bump, no rebalance
    c.at(3_000)
    del c.epochs["a"]
    assert c.hb("a2", instance="host-a").assignment == {TOPIC: (0, 1)}  # takes host-a over
    c.at(4_000)
    c.commit("a2", 0, 10)
    c.at(6_000)
    c.commit("a2", 0, 30)  # 10 records a second
    c.at(7_000)
    c.hb("a2", 0, 1, instance="host-a")  # its last heartbeat: its session ends at 52,000
    for ms in range(9_000, 50_000, 4_000):
        c.at(ms)
        c.tick("b")
    c.at(52_000)  # a2 is fenced: bump to epoch 3
    c.at(52_500)
    assert c.tick("b").assignment == {TOPIC: (0, 1, 2, 3)}
    return c


def test_a_static_member_back_under_a_new_id_is_followed_to_its_session_timeout(
    scenarios: Scenarios,
) -> None:
    report = scenarios.report("static")
    rows = rebalances(report)
    assert len(rows) == 3  # the static member's absence and return are no rebalance
    assert rows[2] == (
        # host-a's t-0 and t-1 move to b (the target before names a, the old id of host-a).
        T0 + 52_000, "Stable", "session_timeout", "a2", "Stable", True, 500, 500, 0, 0, 1, 3,
        "uniform", "consumer", 2, 1, 4, 4, 2, 2, 0.5, 2, 1_000,
    )  # fmt: skip
    assert unavailable(report)[2:] == [
        (0, "a2", 52_000, "b", "assigned", 500, "consumer"),
        (1, "a2", 52_000, "b", "assigned", 500, "consumer"),
    ]
    # a2's t-0 from its last commit (6,000) to its last heartbeat (7,000); its t-1, never
    # committed, from when it took host-a over (3,000).
    windows = report["duplicate_consumption"].orderBy("partition").collect()
    figures = [
        (w.member_id, w.partition, w.window_start_ms - T0, w.window_ms, w.records) for w in windows
    ]
    assert figures == [("a2", 0, 6_000, 1_000, 10), ("a2", 1, 3_000, 4_000, None)]


def test_the_report_and_both_peers_agree_on_random_consumer_churn(
    spark: SparkSession, tmp_path: Any
) -> None:
    """Joins, leaves, crashes, stalled members, static restarts, commits and grown topics at
    random, several engine calls often in one millisecond, and a static instance fenced twice:
    the report's per-group figures and both peers' are the same (the benchmark's comparison,
    bench/spark_report.py)."""
    from spark_tasks.rebalance_report import run

    from .consumer_churn import consumer_churn

    history = History()
    history.add(*consumer_churn(seed=7, groups=6, steps=2_500))
    history.add(*static_member_crashing_twice("twice").events)
    directory = history.write(tmp_path / "history")
    summary = run(spark, directory, tmp_path / "report")
    peers = _peers()
    figures = (
        "rebalances",
        "completed",
        "duration_ms",
        "partitions_moved",
        "stickiness_mean",
        "causes",
        "unavailable_partition_s",
        "storms",
    )

    def rounded(value: Any, digits: int) -> Any:
        if isinstance(value, dict):
            return {key: rounded(item, digits) for key, item in value.items()}
        return round(value, digits) if isinstance(value, float) else value

    def cut(groups: dict[str, Any]) -> dict[str, Any]:
        return {
            group: {
                key: rounded(entry[key], 4 if key == "stickiness_mean" else 3) for key in figures
            }
            for group, entry in groups.items()
        }

    spark_figures = cut(summary["groups"])
    assert sum(entry["rebalances"] for entry in spark_figures.values()) > 100
    assert sum(entry["unavailable_partition_s"] for entry in spark_figures.values()) > 0
    assert set(summary["protocols"]) == {"consumer"}
    assert cut(peers.pandas_report(directory)) == spark_figures
    assert cut(peers.duckdb_report(directory)) == spark_figures


def static_member_crashing_twice(group: str = GROUP) -> Consumer:
    """``two_members`` with a static a (instance host-a) that crashes: its last heartbeat at
    1,300, its session ends at 46,300 (fenced, holding t-0 and t-1), and b takes everything.
    At 50,000 a3 starts under the same instance (a fresh join: a is gone), is given two of
    b's partitions once b released them, and crashes too: its last heartbeat at 50,500, its
    session ends at 95,500."""
    c = Consumer(group)
    c.hb("a", instance="host-a")
    c.at(1_000)
    c.tick("b")
    c.at(1_100)
    c.hb("a", 0, 1, 2, 3, instance="host-a")
    c.at(1_300)
    c.hb("a", 0, 1, instance="host-a")  # a's last heartbeat
    c.at(1_400)
    c.tick("b")
    for ms in range(5_000, 46_000, 4_000):
        c.at(ms)
        c.tick("b")
    c.at(46_300)  # a is fenced
    c.at(46_400)
    assert c.tick("b").assignment == {TOPIC: (0, 1, 2, 3)}
    c.at(50_000)
    c.hb("a3", instance="host-a")
    c.at(50_100)
    c.tick("b")  # told to revoke two partitions
    c.at(50_200)
    c.tick("b")  # releases them
    c.at(50_500)
    given = c.tick("a3").assignment  # a3's last heartbeat
    assert given is not None and len(given[TOPIC]) == 2
    for ms in range(54_000, 95_000, 4_000):
        c.at(ms)
        c.tick("b")
    c.at(95_500)  # a3 is fenced
    return c


def test_each_removal_of_a_static_instance_ends_what_it_held(scenarios: Scenarios) -> None:
    """A static instance fenced twice holds, the second time, only what its second process
    was given: not what the first held before its own removal (days before, in a long
    history), which would open windows and revocations for partitions it never had."""
    given = scenarios.consumers["twice"].owned["a3"]
    report = scenarios.report("twice")
    windows = report["duplicate_consumption"].orderBy("window_start_ms", "partition").collect()
    figures = [
        (w.member_id, w.partition, w.window_start_ms - T0, w.window_ms, w.committed_ms)
        for w in windows
    ]
    # a: t-0 and t-1 from their grant (0) to its last heartbeat (1,300), never committed; a3:
    # its two partitions from when it got them (50,500) to its last heartbeat (50,500).
    assert figures == [
        ("a", 0, 0, 1_300, None),
        ("a", 1, 0, 1_300, None),
        *[("a3", p, 50_500, 0, None) for p in given],
    ]
    revoked_at_removal = [
        (u.partition, u.revoked_from, u.revoked_ms - T0)
        for u in report["partition_unavailability"].orderBy("revoked_ms", "partition").collect()
        if u.revoked_ms - T0 == 95_500
    ]
    assert revoked_at_removal == [(p, "a3", 95_500) for p in given]


def static_member_away_when_its_session_ends(group: str = GROUP) -> Consumer:
    """A static s and e (as in ``two_members``); s commits t-0 at 1,500, leaves for a while at
    2,000 (epoch -2) and is fenced when its session ends at 47,000; e gets everything at
    47,100."""
    c = Consumer(group)
    c.hb("s", instance="host-s")
    c.at(1_000)
    c.tick("e")
    c.at(1_100)
    c.hb("s", 0, 1, 2, 3, instance="host-s")
    c.at(1_300)
    c.hb("s", 0, 1, instance="host-s")
    c.at(1_400)
    c.tick("e")
    c.at(1_500)
    c.commit("s", 0, 10)
    c.at(2_000)
    c.hb("s", 0, 1, epoch=-2, instance="host-s")  # away for a while, its session running
    for ms in range(5_000, 47_000, 4_000):
        c.at(ms)
        c.tick("e")
    c.at(47_000)  # its session ends: fenced
    c.at(47_100)
    assert c.tick("e").assignment == {TOPIC: (0, 1, 2, 3)}
    return c


def test_a_static_member_whose_session_ends_while_away_opens_no_window(
    scenarios: Scenarios,
) -> None:
    """A static member that left for a while (epoch -2) closed cleanly, committing what it
    had processed: when its session ends before it comes back, its partitions pass on from
    that commit, and nothing is processed twice (its removal still revokes them)."""
    removed = [e for e in scenarios.consumers["away"].events if type(e).__name__ == "MemberRemoved"]
    assert [(e.member_id, e.reason) for e in removed] == [("s", "session_timeout")]
    report = scenarios.report("away")
    assert report["duplicate_consumption"].count() == 0
    revoked = [
        (u.partition, u.revoked_from, u.revoked_ms - T0, u.assigned_to)
        for u in report["partition_unavailability"].orderBy("revoked_ms", "partition").collect()
    ]
    assert revoked[-2:] == [(0, "s", 47_000, "e"), (1, "s", 47_000, "e")]


# -- the one report the tests above read ----------------------------------------------------

#: Each scenario above under its group in one history. A report's figures are per group, so
#: each group's are those of a history of its own (the peers' test above counts four such
#: groups in one history too); one report over all of them spares a report per test.
SCENARIOS: dict[str, Callable[[str], Consumer]] = {
    "join": two_members,
    "leave": a_member_leaves,
    "timeout": a_member_stops_heartbeating,
    "held": held_past_its_rebalance_timeout,
    "bumps": overlapping_bumps,
    "static": static_member_back_under_a_new_id,
    "twice": static_member_crashing_twice,
    "away": static_member_away_when_its_session_ends,
}


class Scenarios:
    """``SCENARIOS`` played on the engine, and the report of their events."""

    def __init__(self, spark: SparkSession) -> None:
        self.consumers = {group: play(group) for group, play in SCENARIOS.items()}
        history = History()
        for consumer in self.consumers.values():
            history.add(*consumer.events)
        self.tables = report_tables(history.frame(spark), storm_count=3, storm_window_ms=60_000)

    def report(self, group: str) -> dict[str, DataFrame]:
        """The per-group tables, cut to ``group``'s rows."""
        return {
            name: frame.where(F.col("group_id") == group)
            for name, frame in self.tables.items()
            if "group_id" in frame.columns
        }


@pytest.fixture(scope="module")
def scenarios(spark: SparkSession) -> Scenarios:
    return Scenarios(spark)
