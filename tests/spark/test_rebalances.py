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
    replaced,
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


def test_each_start_is_attributed_to_the_cause_its_events_or_its_reason_show(
    spark: SparkSession,
) -> None:
    h = History()
    left = "Removing member {} on LeaveGroup; client reason: {}"
    h.add(joined("join", 0, "m1"), state("join", 0, EMPTY, PREPARING, ADDING.format("m1")))
    h.add(
        removed("left", 0, "m2", "left"),
        state("left", 0, STABLE, PREPARING, left.format("m2", "bye")),
    )
    h.add(
        removed("timeout", 0, "m3", "session_timeout"),
        state("timeout", 0, STABLE, PREPARING, "removing member m3 on heartbeat expiration"),
    )
    h.add(
        removed("poll", 0, "m4", "sync_timeout"),
        removed("poll", 0, "m5", "sync_timeout"),
        state("poll", 0, STABLE, PREPARING, "removing m4, m5 on pending sync request expiration"),
    )
    h.add(
        replaced("static", 0, "i1", "s1", "s2"),
        removed("static", 0, "s1", "fenced", instance="i1"),
        joined("static", 0, "s2", instance="i1"),
        state("static", 0, STABLE, PREPARING, PROTOCOL_CHANGE.format("s2")),
    )
    h.add(state("admin", 0, STABLE, PREPARING, "an admin requested a rebalance"))
    h.add(
        removed("evicted", 0, "m6", "removed_by_admin"),
        state("evicted", 0, STABLE, PREPARING, left.format("m6", "not provided")),
    )
    h.add(
        joined("metadata", 0, "m7", rejoined=True),
        state(
            "metadata",
            0,
            STABLE,
            PREPARING,
            "Updating metadata for member m7 during Stable; client reason: not provided",
        ),
    )
    h.add(
        joined("leader", 0, "m8", rejoined=True),
        state("leader", 0, STABLE, PREPARING, "Leader m8 re-joining group during Stable"),
    )
    # No triggering event (the history starts mid-call): the reason text decides.
    h.add(state("text", 0, STABLE, PREPARING, "removing member m9 on heartbeat expiration"))
    h.add(state("other", 0, STABLE, PREPARING, "Freshly-loaded group is over capacity (4)"))
    # A block ends when the time moves on, and after an AssignmentStored: m11 and m13 did not
    # start these rebalances, whatever came just before them.
    h.add(
        joined("blocks", 100, "m11", rejoined=True),
        state("blocks", 200, STABLE, PREPARING, "removing member m12 on heartbeat expiration"),
        state("blocks", 250, PREPARING, COMPLETING),
        generation("blocks", 250, 7, ["m13"], join_started=200),
        state("blocks", 300, COMPLETING, STABLE),
        joined("blocks", 300, "m13", rejoined=True),
        stored("blocks", 300, 7, {"m13": []}),
        state("blocks", 300, STABLE, PREPARING, "Leader m14 re-joining group during Stable"),
    )
    actual = rebalances(spark, h).select("group_id", "start_ms", "cause", "cause_member_id")
    expected = [
        Row("join", T0, "member_joined", "m1"),
        Row("left", T0, "member_left", "m2"),
        Row("timeout", T0, "session_timeout", "m3"),
        Row("poll", T0, "poll_timeout", "m4"),
        Row("static", T0, "static_member_replaced", "s2"),
        Row("admin", T0, "admin_action", None),
        Row("evicted", T0, "admin_action", "m6"),
        Row("metadata", T0, "metadata_change", "m7"),
        Row("leader", T0, "metadata_change", "m8"),
        Row("text", T0, "session_timeout", "m9"),
        Row("other", T0, "other", None),
        Row("blocks", T0 + 200, "session_timeout", "m12"),
        Row("blocks", T0 + 300, "metadata_change", "m14"),
    ]
    assertDataFrameEqual(actual, expected)
