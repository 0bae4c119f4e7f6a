"""Rebalance boundaries, phases, generations and causes, on histories written out by hand.
Times are milliseconds after T0; every expected value was worked out on paper."""

from __future__ import annotations

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_tasks.rebalance_report import generations_of, prepared_events, rebalances_of

from .scenarios import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    T0,
    History,
    completed_rebalance,
    generation,
    joined,
    removed,
    state,
    stored,
)

ADDING = "Adding new member {} with group instance id None; client reason: not provided"
PROTOCOL_CHANGE = (
    "Group's selected protocol will change because static member {} joined with other protocols"
)


def lifecycle() -> tuple[History, dict[str, int]]:
    """Group "orders": a first rebalance from Empty; one that restarts when a third member
    joins during the sync; one that ends Empty; one still open. Group "billing": one that ends
    Dead (its coordinator partition was unloaded) during the sync."""
    h = History()
    ids = {}
    ids["first"] = h.add(joined("orders", 0, "a"), state("orders", 0, EMPTY, PREPARING, ADDING))
    h.add(
        *completed_rebalance(
            "orders",
            start=0,
            joined_at=3_000,
            synced_at=3_010,
            generation_id=1,
            partitions={"a": [("t", 0), ("t", 1)]},
        )
    )
    ids["restarted"] = h.add(
        joined("orders", 10_000, "b"), state("orders", 10_000, STABLE, PREPARING, ADDING)
    )
    h.add(
        joined("orders", 10_100, "a", rejoined=True),
        state("orders", 10_100, PREPARING, COMPLETING),
        generation("orders", 10_100, 2, ["a", "b"], join_started=10_000),
        joined("orders", 10_150, "c"),
        state("orders", 10_150, COMPLETING, PREPARING, ADDING.format("c")),
        state("orders", 10_400, PREPARING, COMPLETING),
        generation("orders", 10_400, 3, ["a", "b", "c"], join_started=10_150),
        state("orders", 10_500, COMPLETING, STABLE),
        stored("orders", 10_500, 3, {"a": [("t", 0)], "b": [("t", 1)], "c": []}),
    )
    ids["emptied"] = h.add(
        removed("orders", 20_000, "a", "session_timeout"),
        state("orders", 20_000, STABLE, PREPARING, "removing member a on heartbeat expiration"),
    )
    h.add(
        removed("orders", 50_000, "b", "rebalance_timeout"),
        removed("orders", 50_000, "c", "rebalance_timeout"),
        state("orders", 50_000, PREPARING, EMPTY),
        generation("orders", 50_000, 4, [], join_started=20_000),
    )
    ids["open"] = h.add(joined("orders", 60_000, "d"), state("orders", 60_000, EMPTY, PREPARING))
    ids["dead"] = h.add(joined("billing", 0, "x"), state("billing", 0, EMPTY, PREPARING, ADDING))
    h.add(
        state("billing", 3_000, PREPARING, COMPLETING),
        generation("billing", 3_000, 1, ["x"], join_started=0),
        state("billing", 4_000, COMPLETING, DEAD, "the coordinator partition was unloaded"),
    )
    return h, ids


def rebalances(spark: SparkSession, history: History) -> DataFrame:
    return history.frame(spark).transform(prepared_events).transform(rebalances_of)


def test_a_rebalance_runs_from_leaving_stable_or_empty_to_stable_and_its_phases_add_up(
    spark: SparkSession,
) -> None:
    history, ids = lifecycle()
    actual = rebalances(spark, history).select(
        "group_id",
        "rebalance_id",
        "start_ms",
        "from_state",
        "end_ms",
        "end_state",
        "completed",
        "duration_ms",
        "join_ms",
        "sync_ms",
        "restarts",
        "generations",
        "generation_id",
        "members_before",
        "members_after",
        "protocol_name",
    )
    expected = [
        Row("orders", ids["first"], T0, EMPTY, T0 + 3_010, STABLE, True, 3_010, 3_000, 10, 0, 1,
            1, 0, 1, "range"),
        # join: 10_000→10_100 and 10_150→10_400; sync: 10_100→10_150 and 10_400→10_500.
        Row("orders", ids["restarted"], T0 + 10_000, STABLE, T0 + 10_500, STABLE, True, 500,
            350, 150, 1, 2, 3, 1, 3, "range"),
        Row("orders", ids["emptied"], T0 + 20_000, STABLE, T0 + 50_000, EMPTY, False, None,
            30_000, None, 0, 1, 4, 3, 0, "range"),
        Row("orders", ids["open"], T0 + 60_000, EMPTY, None, None, False, None, None, None, 0,
            0, None, 0, None, None),
        Row("billing", ids["dead"], T0, EMPTY, T0 + 4_000, DEAD, False, None, 3_000, 1_000, 0,
            1, 1, 0, None, "range"),
    ]  # fmt: skip
    assertDataFrameEqual(actual, expected)


def test_each_generation_has_its_join_phase_and_its_sync_phase_until_what_ended_it(
    spark: SparkSession,
) -> None:
    history, ids = lifecycle()
    actual = (
        history.frame(spark)
        .transform(prepared_events)
        .transform(generations_of)
        .select(
            "group_id", "rebalance_id", "generation_id", "members", "join_ms", "sync_ms", "ended_in"
        )
    )
    expected = [
        Row("orders", ids["first"], 1, 1, 3_000, 10, STABLE),
        Row("orders", ids["restarted"], 2, 2, 100, 50, PREPARING),
        Row("orders", ids["restarted"], 3, 3, 250, 100, STABLE),
        Row("orders", ids["emptied"], 4, 0, 30_000, None, EMPTY),
        Row("billing", ids["dead"], 1, 1, 3_000, 1_000, DEAD),
    ]
    assertDataFrameEqual(actual, expected)


def test_each_start_has_the_cause_the_engine_said_under_the_report_s_name(
    spark: SparkSession,
) -> None:
    """The cause is the start's own field: whatever events or words surround it. The engine's
    causes keep their names, but for the three the report counts as others."""
    h = History()
    said = [
        ("join", "member_joined", "m1"),
        ("left", "member_left", "m2"),
        ("timeout", "session_timeout", "m3"),
        ("poll", "poll_timeout", "m4"),
        ("static", "static_member_replaced", "s2"),
        ("admin", "admin_action", None),
        ("metadata", "metadata_change", "m7"),
        ("grown", "partitions_changed", None),
        ("outage", "outage_ended", None),
        ("coordinator", "coordinator", None),
        ("unsaid", None, None),  # stored before the engine said causes
    ]
    for group, cause, member in said:
        # A misleading neighbourhood: a rejoin and a reason text that name someone else.
        h.add(
            joined(group, 0, "someone-else", rejoined=True),
            state(
                group,
                0,
                STABLE,
                PREPARING,
                ADDING.format("someone-else"),
                cause=cause,
                cause_member_id=member,
            ),
        )
    # Only a start counts: a restart's cause (CompletingRebalance → PreparingRebalance) does not
    # make another rebalance.
    h.add(
        state("join", 10, PREPARING, COMPLETING),
        state("join", 20, COMPLETING, PREPARING, cause="member_joined", cause_member_id="m9"),
    )
    actual = rebalances(spark, h).select("group_id", "start_ms", "cause", "cause_member_id")
    expected = [
        Row("join", T0, "member_joined", "m1"),
        Row("left", T0, "member_left", "m2"),
        Row("timeout", T0, "session_timeout", "m3"),
        Row("poll", T0, "poll_timeout", "m4"),
        Row("static", T0, "static_member_replaced", "s2"),
        Row("admin", T0, "admin_action", None),
        Row("metadata", T0, "metadata_change", "m7"),
        Row("grown", T0, "metadata_change", None),
        Row("outage", T0, "metadata_change", None),
        Row("coordinator", T0, "other", None),
        Row("unsaid", T0, "other", None),
    ]
    assertDataFrameEqual(actual, expected)
