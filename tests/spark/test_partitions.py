"""Partitions moved, stickiness and partition-unavailable time, eager against cooperative, on
histories written out by hand. Times are milliseconds after T0; expected values by hand."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_tasks.rebalance_report import report_tables

from .scenarios import (
    COMPLETING,
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
)


def start(history: History, group: str, at: int, member: str, *, empty: bool = False) -> int:
    """``member`` joins and the group starts a rebalance; the rebalance id."""
    return history.add(
        joined(group, at, member), state(group, at, EMPTY if empty else STABLE, PREPARING)
    )


def moves_and_static_members(h: History) -> dict[str, int]:
    """Group "moves": a owns four partitions, b joins, a leaves. Group "static": static member
    i1 comes back as s2 (no rebalance: its protocols did not change), then x leaves."""
    four = [("t", 0), ("t", 1), ("t", 2), ("t", 3)]
    first = start(h, "moves", 0, "a", empty=True)
    h.add(
        *completed_rebalance(
            "moves", start=0, joined_at=10, synced_at=20, generation_id=1, partitions={"a": four}
        )
    )
    second = start(h, "moves", 1_000, "b")
    h.add(
        *completed_rebalance(
            "moves",
            start=1_000,
            joined_at=1_010,
            synced_at=1_020,
            generation_id=2,
            partitions={"a": four[:2], "b": four[2:]},
        )
    )
    third = h.add(removed("moves", 2_000, "a", "left"), state("moves", 2_000, STABLE, PREPARING))
    h.add(
        *completed_rebalance(
            "moves",
            start=2_000,
            joined_at=2_010,
            synced_at=2_020,
            generation_id=3,
            partitions={"b": four},
        )
    )
    # Static member i1 comes back as s2 (no rebalance: its protocols did not change), then x
    # leaves: i1 kept t0 and t1 under its new id, only t2 moved.
    statics = start(h, "static", 0, "s1", empty=True)
    h.add(
        *completed_rebalance(
            "static",
            start=0,
            joined_at=10,
            synced_at=20,
            generation_id=1,
            partitions={"s1": four[:2], "x": four[2:3]},
        )
    )
    h.add(
        joined("static", 0, "s1", instance="i1"),
        replaced("static", 500, "i1", "s1", "s2"),
        removed("static", 500, "s1", "fenced", instance="i1"),
        joined("static", 500, "s2", instance="i1"),
    )
    static_leave = h.add(
        removed("static", 1_000, "x", "left"), state("static", 1_000, STABLE, PREPARING)
    )
    h.add(
        *completed_rebalance(
            "static",
            start=1_000,
            joined_at=1_010,
            synced_at=1_020,
            generation_id=2,
            partitions={"s2": four[:3]},
        )
    )
    return {
        "first": first,
        "second": second,
        "third": third,
        "statics": statics,
        "static_leave": static_leave,
    }


def emptied_and_open(h: History) -> dict[str, int]:
    """Group "gone": both members leave (b) or time out (a) and the group ends Empty. Group
    "open": b joins at 70 000 and the history ends during that rebalance."""
    start(h, "gone", 0, "a", empty=True)
    h.add(
        *completed_rebalance(
            "gone",
            start=0,
            joined_at=10,
            synced_at=20,
            generation_id=1,
            partitions={"a": [("t", 0)], "b": [("t", 1)]},
        )
    )
    emptied = h.add(removed("gone", 20_000, "b", "left"), state("gone", 20_000, STABLE, PREPARING))
    h.add(
        removed("gone", 50_000, "a", "rebalance_timeout"),
        state("gone", 50_000, PREPARING, EMPTY),
        generation("gone", 50_000, 2, [], join_started=20_000),
    )
    start(h, "open", 0, "a", empty=True)
    h.add(
        *completed_rebalance(
            "open",
            start=0,
            joined_at=10,
            synced_at=20,
            generation_id=1,
            partitions={"a": [("t", 0)]},
        )
    )
    still_open = start(h, "open", 70_000, "b")
    h.add(state("open", 70_100, PREPARING, COMPLETING))
    return {"emptied": emptied, "still_open": still_open}


@pytest.fixture(scope="module")
def report(spark: SparkSession) -> tuple[dict[str, DataFrame], dict[str, dict[str, int]]]:
    """One report over every scenario of this module (each in its own groups), and their ids."""
    h = History()
    ids = {
        "moves": moves_and_static_members(h),
        "eager": two_members_then_a_third(h, "eager", "range"),
        "cooperative": two_members_then_a_third(h, "cooperative", "cooperative-sticky"),
        "ends": emptied_and_open(h),
    }
    return report_tables(h.frame(spark), storm_count=3, storm_window_ms=60_000), ids


Report = tuple[dict[str, DataFrame], dict[str, dict[str, int]]]


def in_groups(frame: DataFrame, *groups: str) -> DataFrame:
    return frame.where(frame.group_id.isin(*groups))


def test_partitions_moved_and_stickiness_compare_owners_with_the_previous_assignment(
    report: Report,
) -> None:
    result, all_ids = report
    ids = all_ids["moves"]
    first, second, third = ids["first"], ids["second"], ids["third"]
    statics, static_leave = ids["statics"], ids["static_leave"]
    actual = in_groups(result["rebalances"], "moves", "static").select(
        "group_id",
        "rebalance_id",
        "partitions_before",
        "partitions_after",
        "partitions_moved",
        "partitions_kept",
        "stickiness",
    )
    expected = [
        Row("moves", first, 0, 4, 4, 0, None),  # all added; nothing was owned before
        Row("moves", second, 4, 4, 2, 2, 0.5),
        Row("moves", third, 4, 4, 2, 2, 0.5),
        Row("static", statics, 0, 3, 3, 0, None),
        Row("static", static_leave, 3, 3, 1, 2, 2 / 3),
    ]
    assertDataFrameEqual(actual, expected)
    moves = result["partition_moves"].where(f"rebalance_id = {static_leave}").drop("group_id")
    assertDataFrameEqual(
        moves,
        [
            Row(static_leave, "t", 0, "s1", "s2", False, True),
            Row(static_leave, "t", 1, "s1", "s2", False, True),
            Row(static_leave, "t", 2, "x", "s2", True, False),
        ],
    )


def two_members_then_a_third(h: History, group: str, protocol: str) -> dict[str, int]:
    """a owns t0 and t1; b joins at 10 000 and, for cooperative-sticky, the rebalance takes t1
    away from a and hands it to b in a follow-up rebalance (a rejoins at 10 600)."""
    ids = {"first": start(h, group, 0, "a", empty=True)}
    h.add(
        *completed_rebalance(
            group,
            start=0,
            joined_at=3_000,
            synced_at=3_010,
            generation_id=1,
            partitions={"a": [("t", 0), ("t", 1)]},
            protocol=protocol,
        )
    )
    ids["join"] = start(h, group, 10_000, "b")
    if protocol == "cooperative-sticky":
        h.add(
            *completed_rebalance(
                group,
                start=10_000,
                joined_at=10_100,
                synced_at=10_500,
                generation_id=2,
                partitions={"a": [("t", 0)], "b": []},
                protocol=protocol,
            )
        )
        ids["follow_up"] = h.add(
            joined(group, 10_600, "a", rejoined=True),
            state(group, 10_600, STABLE, PREPARING, "Updating metadata for member a during Stable"),
        )
        h.add(
            *completed_rebalance(
                group,
                start=10_600,
                joined_at=10_700,
                synced_at=10_800,
                generation_id=3,
                partitions={"a": [("t", 0)], "b": [("t", 1)]},
                protocol=protocol,
            )
        )
    else:
        h.add(
            *completed_rebalance(
                group,
                start=10_000,
                joined_at=10_100,
                synced_at=10_500,
                generation_id=2,
                partitions={"a": [("t", 0)], "b": [("t", 1)]},
                protocol=protocol,
            )
        )
    return ids


def test_eager_revokes_everything_at_the_start_and_cooperative_only_what_moves(
    report: Report,
) -> None:
    result, ids = report
    eager, cooperative = ids["eager"], ids["cooperative"]
    actual = in_groups(result["partition_unavailability"], "eager", "cooperative").select(
        "group_id",
        "rebalance_id",
        "rebalance_protocol",
        "topic",
        "partition",
        "revoked_from",
        "revoked_ms",
        "assigned_to",
        "available_ms",
        "ended_by",
        "unavailable_ms",
    )
    expected = [
        Row("eager", eager["join"], "eager", "t", 0, "a", T0 + 10_000, "a", T0 + 10_500,
            "assigned", 500),
        Row("eager", eager["join"], "eager", "t", 1, "a", T0 + 10_000, "b", T0 + 10_500,
            "assigned", 500),
        # t1 leaves a in the first rebalance, reaches b when the follow-up is stored.
        Row("cooperative", cooperative["join"], "cooperative", "t", 1, "a", T0 + 10_000, "b",
            T0 + 10_800, "assigned", 800),
    ]  # fmt: skip
    assertDataFrameEqual(actual, expected)
    per_rebalance = in_groups(result["rebalances"], "eager", "cooperative").select(
        "group_id",
        "rebalance_id",
        "rebalance_protocol",
        "partitions_revoked",
        "unavailable_partition_ms",
    )
    assertDataFrameEqual(
        per_rebalance,
        [
            Row("eager", eager["first"], "eager", 0, 0),
            Row("eager", eager["join"], "eager", 2, 1_000),
            Row("cooperative", cooperative["first"], "cooperative", 0, 0),
            Row("cooperative", cooperative["join"], "cooperative", 1, 800),
            Row("cooperative", cooperative["follow_up"], "cooperative", 0, 0),
        ],
    )


def test_unavailability_ends_when_the_group_empties_and_stays_open_at_the_end_of_history(
    report: Report,
) -> None:
    result, ids = report
    emptied, still_open = ids["ends"]["emptied"], ids["ends"]["still_open"]
    actual = in_groups(result["partition_unavailability"], "gone", "open").select(
        "group_id", "rebalance_id", "partition", "assigned_to", "ended_by", "unavailable_ms"
    )
    expected = [
        Row("gone", emptied, 0, None, "group_emptied", 30_000),
        Row("gone", emptied, 1, None, "group_emptied", 30_000),
        Row("open", still_open, 0, None, None, None),
    ]
    assertDataFrameEqual(actual, expected)
    per_rebalance = in_groups(result["rebalances"], "gone", "open").where("partitions_revoked > 0")
    assertDataFrameEqual(
        per_rebalance.select(
            "rebalance_id", "partitions_moved", "partitions_revoked", "unavailable_partition_ms"
        ),
        [Row(emptied, 2, 2, 60_000), Row(still_open, None, 1, 0)],
    )
