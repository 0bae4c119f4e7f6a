"""summary.json: the report's figures per group, over every rebalance, per assignor and per
protocol, and the members behind the most rebalances, from the report's tables
(``spark_tasks.rebalance_report``); and ``compare_rebalances``, the figures per key that the
assignors and protocols tables hold and summary.json repeats.

Only small aggregates reach the driver, each from its own small query; the queries need none
of each other's results, so they run side by side (``spark_tasks.side_by_side``). Figures are
rounded to three decimals (stickiness to four); percentiles are exact (Spark's
``percentile``). The file's shape is in docs/analysis.md ("Output").
"""

from __future__ import annotations

import datetime
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from .consumer import CONSUMER_PROTOCOL
from .schema import SCHEMA_VERSION
from .side_by_side import SideBySide

__all__ = ["build_summary", "compare_rebalances", "duplicate_figures", "seconds"]


def seconds(milliseconds: Column) -> Column:
    """A duration in milliseconds, in seconds."""
    return milliseconds / 1000.0


# -- comparisons -----------------------------------------------------------------------------


def duplicate_figures() -> list[Column]:
    """The aggregates of duplicate-consumption windows the tables and summary.json report."""
    return [
        F.count("*").cast("int").alias("duplicate_windows"),
        seconds(F.sum("window_ms")).alias("duplicate_window_s"),
        F.sum("records").alias("duplicate_records"),
    ]


def compare_rebalances(
    rebalances: DataFrame, *keys: str, duplicates: DataFrame | None = None
) -> DataFrame:
    """Rebalance figures per ``keys`` (e.g. rebalance_protocol, protocol_name), exact
    percentiles; with ``duplicates`` (``duplicate_consumption`` rows, which carry the keys), the
    duplicate-consumption windows too."""
    durations = F.percentile("duration_ms", F.array(F.lit(0.5), F.lit(0.95)))
    figures = (
        rebalances.groupBy(*keys)
        .agg(
            F.countDistinct("group_id").cast("int").alias("groups"),
            F.count("*").cast("int").alias("rebalances"),
            F.sum(F.col("completed").cast("int")).cast("int").alias("completed"),
            durations.alias("_durations"),
            F.max("duration_ms").alias("duration_ms_max"),
            F.percentile("join_ms", 0.5).alias("join_ms_p50"),
            F.percentile("sync_ms", 0.5).alias("sync_ms_p50"),
            F.sum("partitions_moved").alias("partitions_moved"),
            F.avg("partitions_moved").alias("partitions_moved_mean"),
            F.avg("stickiness").alias("stickiness_mean"),
            seconds(F.sum("unavailable_partition_ms")).alias("unavailable_partition_s"),
            seconds(F.avg("unavailable_partition_ms")).alias("unavailable_partition_s_mean"),
        )
        .select(
            *keys,
            "groups",
            "rebalances",
            "completed",
            F.col("_durations")[0].alias("duration_ms_p50"),
            F.col("_durations")[1].alias("duration_ms_p95"),
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
    if duplicates is None:
        return figures
    windows = (
        duplicates.groupBy(*keys)
        .agg(*duplicate_figures())
        .withColumnsRenamed({key: f"_windows_{key}" for key in keys})
    )
    # Null-safe: the windows of a group whose protocol is unknown (null) count for that row.
    matched = [F.col(key).eqNullSafe(F.col(f"_windows_{key}")) for key in keys]
    return (
        figures.join(windows, matched, "left")
        .drop(*(f"_windows_{key}" for key in keys))
        .withColumns(
            {
                "duplicate_windows": F.coalesce("duplicate_windows", F.lit(0)),
                "duplicate_window_s": F.coalesce("duplicate_window_s", F.lit(0.0)),
                "duplicate_records": F.coalesce("duplicate_records", F.lit(0)),
            }
        )
    )


# -- summary.json ----------------------------------------------------------------------------


def _number(value: Any, digits: int = 3) -> Any:
    return round(value, digits) if isinstance(value, float) else value


def _durations(p50: Any, p95: Any, longest: Any) -> dict[str, Any]:
    return {"p50": _number(p50), "p95": _number(p95), "max": longest}


def _no_rebalances() -> dict[str, Any]:
    """A group's entry when the history holds no rebalance of it."""
    return {
        "rebalances": 0,
        "completed": 0,
        "duration_ms": _durations(None, None, None),
        "partitions_moved": 0,
        "stickiness_mean": None,
        "causes": {},
        "unavailable_partition_s": 0.0,
        "storms": 0,
        **_NO_DUPLICATES,
    }


_NO_DUPLICATES = {"duplicate_windows": 0, "duplicate_window_s": 0.0, "duplicate_records": 0}


def _figures(row: Row) -> dict[str, Any]:
    """A ``compare_rebalances`` row as JSON."""
    return {
        "groups": row["groups"],
        "rebalances": row["rebalances"],
        "completed": row["completed"],
        "duration_ms": _durations(
            row["duration_ms_p50"], row["duration_ms_p95"], row["duration_ms_max"]
        ),
        "join_ms_p50": _number(row["join_ms_p50"]),
        "sync_ms_p50": _number(row["sync_ms_p50"]),
        "partitions_moved": row["partitions_moved"] or 0,
        "partitions_moved_mean": _number(row["partitions_moved_mean"]),
        "stickiness_mean": _number(row["stickiness_mean"], 4),
        "unavailable_partition_s": _number(row["unavailable_partition_s"] or 0.0),
        "unavailable_partition_s_mean": _number(row["unavailable_partition_s_mean"]),
        **_duplicates(row),
    }


def _duplicates(row: Row) -> dict[str, Any]:
    """A row's duplicate-consumption figures, where it has them."""
    if "duplicate_windows" not in row.asDict():
        return {}
    return {
        "duplicate_windows": row["duplicate_windows"],
        "duplicate_window_s": _number(row["duplicate_window_s"]),
        "duplicate_records": row["duplicate_records"],
    }


def _group_entries(rebalances: DataFrame, duplicates: DataFrame) -> dict[str, dict[str, Any]]:
    """The summary's entry of every group that has rebalances (one job: the per-group
    figures, causes and duplicate windows joined before they reach the driver)."""
    causes = (
        rebalances.groupBy("group_id", "cause")
        .count()
        .groupBy("group_id")
        .agg(F.collect_list(F.struct("cause", "count")).alias("causes"))
    )
    windows = duplicates.groupBy("group_id").agg(*duplicate_figures())
    per_group = (
        rebalances.groupBy("group_id")
        .agg(
            F.count("*").alias("rebalances"),
            F.sum(F.col("completed").cast("int")).alias("completed"),
            F.percentile("duration_ms", F.array(F.lit(0.5), F.lit(0.95))).alias("durations"),
            F.max("duration_ms").alias("duration_max"),
            F.sum("partitions_moved").alias("partitions_moved"),
            F.avg("stickiness").alias("stickiness"),
            seconds(F.sum("unavailable_partition_ms")).alias("unavailable_partition_s"),
            F.countDistinct("storm_id").alias("storms"),
        )
        .join(causes, "group_id", "left")
        .join(windows, "group_id", "left")
    )
    entries = {}
    for row in per_group.collect():
        p50, p95 = row["durations"] or (None, None)
        # Causes in their order (a null one first, as Spark orders nulls).
        by_cause = sorted(row["causes"] or (), key=lambda c: (c["cause"] is not None, c["cause"]))
        entries[row["group_id"]] = {
            "rebalances": row["rebalances"],
            "completed": row["completed"],
            "duration_ms": _durations(p50, p95, row["duration_max"]),
            "partitions_moved": row["partitions_moved"] or 0,
            "stickiness_mean": _number(row["stickiness"], 4),
            "causes": {c["cause"]: c["count"] for c in by_cause},
            "unavailable_partition_s": _number(row["unavailable_partition_s"] or 0.0),
            "storms": row["storms"],
            **(_NO_DUPLICATES if row["duplicate_windows"] is None else _duplicates(row)),
        }
    return entries


def _totals(
    rebalances: DataFrame, storms: DataFrame, duplicates: DataFrame
) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """The figures over every rebalance, the storms and the duplicate windows' totals, in one
    job (the two counts always give a row; the figures none when there is no rebalance)."""
    overall = compare_rebalances(rebalances.withColumn("_all", F.lit(1)), "_all")
    counts = storms.agg(F.count("*").alias("storms")).crossJoin(
        duplicates.agg(*duplicate_figures())
    )
    row = counts.join(overall, how="left").collect()[0]
    figures = _no_rebalances() if row["_all"] is None else _figures(row)
    return (
        figures,
        row["storms"],
        {
            "duplicate_windows": row["duplicate_windows"],
            "duplicate_window_s": _number(row["duplicate_window_s"] or 0.0),
            "duplicate_records": row["duplicate_records"] or 0,
        },
    )


def _top_members(rebalances: DataFrame, top: int) -> list[dict[str, Any]]:
    """The members behind the most rebalances, most first, with their causes."""
    per_cause = (
        rebalances.where(F.col("cause_member_id").isNotNull())
        .groupBy("group_id", "cause_member_id", "cause")
        .count()
    )
    ranked = (
        per_cause.groupBy("group_id", "cause_member_id")
        .agg(
            F.sum("count").alias("rebalances"),
            F.map_from_entries(F.collect_list(F.struct("cause", "count"))).alias("causes"),
        )
        .orderBy(F.desc("rebalances"), "group_id", "cause_member_id")
        .limit(top)
    )
    return [
        {
            "group_id": row["group_id"],
            "member_id": row["cause_member_id"],
            "rebalances": row["rebalances"],
            "causes": dict(sorted(row["causes"].items())),
        }
        for row in ranked.collect()
    ]


def _keyed(comparison: DataFrame, key: str) -> dict[str, dict[str, Any]]:
    return {row[key] or "unknown": _figures(row) for row in comparison.orderBy(key).collect()}


def _assignor_key(row: Row) -> str:
    """An assignor's key in summary.json: its name; a consumer group's server-side assignor's
    with `` (consumer)``, since KIP-848's ``range`` is not the classic client's."""
    name = row["protocol_name"] or "unknown"
    if row["rebalance_protocol"] == CONSUMER_PROTOCOL:
        return f"{name} ({CONSUMER_PROTOCOL})"
    return str(name)


def _assignors(comparison: DataFrame) -> dict[str, dict[str, Any]]:
    keyed = sorted(((_assignor_key(row), row) for row in comparison.collect()), key=lambda k: k[0])
    return {key: _figures(row) for key, row in keyed}


def build_summary(
    tables: dict[str, DataFrame],
    group_ids: list[str],
    *,
    input_path: str,
    events: int,
    files: int,
    storm_count: int,
    storm_window_ms: int,
    top: int = 10,
    steps_at_once: int = 1,
) -> dict[str, Any]:
    """summary.json from the report's ``tables`` (``rebalance_report.report_tables``: by
    name, in the order they are written, which its ``tables`` entry lists), ``steps_at_once``
    of its queries side by side."""
    rebalances, windows = tables["rebalances"], tables["duplicate_consumption"]
    with SideBySide(
        rebalances.sparkSession, steps_at_once, thread_name_prefix="report-summary"
    ) as steps:
        per_group = steps.submit(_group_entries, rebalances, windows)
        overall = steps.submit(_totals, rebalances, tables["storms"], windows)
        assignors = steps.submit(_assignors, tables["assignors"])
        protocols = steps.submit(_keyed, tables["protocols"], "rebalance_protocol")
        top_members = steps.submit(_top_members, rebalances, top)
    entries = per_group.result()
    figures, storms, duplicates = overall.result()
    totaled = ("rebalances", "completed", "duration_ms", "partitions_moved")
    return {
        "job": "rebalance_report",
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "input": {
            "path": input_path,
            "files": files,
            "events": events,
            "schema_version": SCHEMA_VERSION,
        },
        "parameters": {"storm_count": storm_count, "storm_window_ms": storm_window_ms},
        "totals": {
            "groups": len(group_ids),
            **{key: figures[key] for key in totaled},
            "unavailable_partition_s": figures["unavailable_partition_s"],
            "storms": storms,
            **duplicates,
        },
        "groups": {
            group_id: entries.get(group_id) or _no_rebalances() for group_id in sorted(group_ids)
        },
        "assignors": assignors.result(),
        "protocols": protocols.result(),
        "top_members": top_members.result(),
        "tables": list(tables),
    }
