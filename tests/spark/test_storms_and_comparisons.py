"""Storms and the per-assignor comparison, on rebalance rows written out by hand."""

from __future__ import annotations

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_tasks.rebalance_report import storms_of, with_storms
from spark_tasks.summary import compare_rebalances

STORM_ROWS = "group_id string, rebalance_id long, start_ms long, cause string, " + (
    "cause_member_id string, duration_ms long, unavailable_partition_ms long"
)


def storm_history(spark: SparkSession) -> DataFrame:
    rows = [
        # g1: three starts within 50 s; a lone one; three within exactly 60 s; two.
        ("g1", 11, 0, "member_joined", "m1", 100, 1_000),
        ("g1", 12, 10_000, "member_left", "m2", 200, 2_000),
        ("g1", 13, 50_000, "member_joined", "m1", 300, 500),
        ("g1", 14, 200_000, "session_timeout", "m3", 100, 0),
        ("g1", 15, 300_000, "session_timeout", "m4", 100, 0),
        ("g1", 16, 330_000, "session_timeout", "m4", None, 0),
        ("g1", 17, 360_000, "session_timeout", "m5", 100, 0),
        ("g1", 18, 500_000, "member_joined", "m6", 100, 0),
        ("g1", 19, 520_000, "member_joined", "m7", 100, 0),
        # g2: every 30 s for two minutes (overlapping windows chain into one storm), then
        # three starts in 10 s, two of them at the same millisecond.
        ("g2", 21, 0, "admin_action", None, 10, 0),
        ("g2", 22, 30_000, "admin_action", None, 10, 0),
        ("g2", 23, 60_000, "admin_action", None, 10, 0),
        ("g2", 24, 90_000, "admin_action", None, 10, 0),
        ("g2", 25, 120_000, "admin_action", None, 10, 0),
        ("g2", 26, 400_000, "metadata_change", "m6", 20, 100),
        ("g2", 27, 400_000, "metadata_change", "m7", 20, 100),
        ("g2", 28, 410_000, "metadata_change", "m6", 20, 100),
    ]
    return spark.createDataFrame(rows, STORM_ROWS).transform(with_storms, 3, 60_000)


def test_three_rebalances_within_the_window_make_a_storm_and_overlapping_windows_chain(
    spark: SparkSession,
) -> None:
    actual = storm_history(spark).select("group_id", "rebalance_id", "storm_id")
    expected = [
        Row("g1", 11, 11),
        Row("g1", 12, 11),
        Row("g1", 13, 11),
        Row("g1", 14, None),
        Row("g1", 15, 15),
        Row("g1", 16, 15),
        Row("g1", 17, 15),
        Row("g1", 18, None),
        Row("g1", 19, None),
        *(Row("g2", rebalance, 21) for rebalance in (21, 22, 23, 24, 25)),
        Row("g2", 26, 26),
        Row("g2", 27, 26),
        Row("g2", 28, 26),
    ]
    assertDataFrameEqual(actual, expected)


def test_a_storm_lists_its_span_causes_and_the_members_behind_it(spark: SparkSession) -> None:
    actual = storm_history(spark).transform(storms_of)
    expected = [
        Row(group_id="g1", storm_id=11, first_start_ms=0, last_start_ms=50_000, span_ms=50_000,
            rebalances=3, causes={"member_joined": 2, "member_left": 1},
            member_ids=["m1", "m2"], rebalancing_ms=600, unavailable_partition_s=3.5),
        Row(group_id="g1", storm_id=15, first_start_ms=300_000, last_start_ms=360_000,
            span_ms=60_000, rebalances=3, causes={"session_timeout": 3}, member_ids=["m4", "m5"],
            rebalancing_ms=200, unavailable_partition_s=0.0),
        Row(group_id="g2", storm_id=21, first_start_ms=0, last_start_ms=120_000,
            span_ms=120_000, rebalances=5, causes={"admin_action": 5}, member_ids=[],
            rebalancing_ms=50, unavailable_partition_s=0.0),
        Row(group_id="g2", storm_id=26, first_start_ms=400_000, last_start_ms=410_000,
            span_ms=10_000, rebalances=3, causes={"metadata_change": 3},
            member_ids=["m6", "m7"], rebalancing_ms=60, unavailable_partition_s=0.3),
    ]  # fmt: skip
    assertDataFrameEqual(actual, expected)


def test_assignors_compare_with_exact_percentiles_over_the_same_history(
    spark: SparkSession,
) -> None:
    columns = "group_id string, completed boolean, duration_ms long, join_ms long, " + (
        "sync_ms long, protocol_name string, rebalance_protocol string, partitions_moved int, "
        "stickiness double, unavailable_partition_ms long"
    )
    rows = [
        ("g1", True, 100, 60, 40, "range", "eager", 2, 0.5, 1_000),
        ("g1", True, 200, 150, 50, "range", "eager", 0, 1.0, 0),
        ("g1", True, 300, 250, 50, "range", "eager", 1, 0.75, 500),
        ("g2", True, 400, 300, 100, "range", "eager", 3, None, 1_500),
        ("g2", True, 1_000, 900, 100, "range", "eager", 4, None, 3_000),
        ("g2", False, None, 50, None, "range", "eager", None, None, 0),
        ("g3", True, 50, 30, 20, "cooperative-sticky", "cooperative", 1, 1.0, 800),
        ("g3", True, 150, 100, 50, "cooperative-sticky", "cooperative", 1, 1.0, 0),
    ]
    actual = (
        spark.createDataFrame(rows, columns)
        .transform(compare_rebalances, "rebalance_protocol", "protocol_name")
        .select(
            "rebalance_protocol",
            "protocol_name",
            "groups",
            "rebalances",
            "completed",
            "duration_ms_p50",
            "duration_ms_p95",
            "duration_ms_max",
            "join_ms_p50",
            "sync_ms_p50",
            "partitions_moved",
            "partitions_moved_mean",
            "stickiness_mean",
            "unavailable_partition_s",
            "unavailable_partition_s_mean",
        )
    )
    # p95 of 100, 200, 300, 400, 1000: rank 0.95 × 4 = 3.8, so 400 + 0.8 × 600 = 880
    # (an approximate percentile would answer one of the five values).
    expected = [
        Row("eager", "range", 2, 6, 5, 300.0, 880.0, 1_000, 200.0, 50.0, 10, 2.0, 0.75, 6.0,
            1.0),
        Row("cooperative", "cooperative-sticky", 1, 2, 2, 100.0, 145.0, 150, 65.0, 35.0, 2,
            1.0, 1.0, 0.8, 0.4),
    ]  # fmt: skip
    assertDataFrameEqual(actual, expected)
