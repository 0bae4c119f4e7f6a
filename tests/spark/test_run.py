"""``run`` end to end on a small Parquet history (two days, three groups), and the progress
file. Every expected figure was worked out by hand from the events below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import spark_tasks.rebalance_report as rebalance_report
from spark_tasks.progress import PROGRESS_FILE_ENV, track_progress
from spark_tasks.rebalance_report import TABLES, run

from .scenarios import (
    COMPLETING,
    EMPTY,
    PREPARING,
    STABLE,
    History,
    committed,
    completed_rebalance,
    generation,
    joined,
    removed,
    said,
    state,
    stored,
)

DAY = 86_400_000


def two_days_of_history() -> History:
    h = History()
    # orders (range): a alone; b joins 20 s later; b leaves the next day.
    h.add(
        joined("orders", 0, "a"), state("orders", 0, EMPTY, PREPARING, **said("member_joined", "a"))
    )
    h.add(
        *completed_rebalance(
            "orders",
            start=0,
            joined_at=3_000,
            synced_at=3_100,
            generation_id=1,
            partitions={"a": [("o", 0), ("o", 1)]},
        )
    )
    h.add(committed("audit", 500, "simple-consumer", -1))
    h.add(
        joined("orders", 20_000, "b"),
        state("orders", 20_000, STABLE, PREPARING, **said("member_joined", "b")),
    )
    h.add(
        joined("orders", 20_100, "a", rejoined=True),
        state("orders", 20_100, PREPARING, COMPLETING),
        generation("orders", 20_100, 2, ["a", "b"], join_started=20_000),
        state("orders", 20_300, COMPLETING, STABLE),
        stored("orders", 20_300, 2, {"a": [("o", 0)], "b": [("o", 1)]}),
        committed("orders", 25_000, "a", 2),
    )
    h.add(
        removed("orders", DAY, "b", "left"),
        state("orders", DAY, STABLE, PREPARING, **said("member_left", "b")),
    )
    h.add(
        *completed_rebalance(
            "orders",
            start=DAY,
            joined_at=DAY + 100,
            synced_at=DAY + 200,
            generation_id=3,
            partitions={"a": [("o", 0), ("o", 1)]},
        )
    )
    # payments (cooperative-sticky): p alone; q joins and x1 moves from p to q in two steps.
    cooperative = "cooperative-sticky"
    h.add(
        joined("payments", 1_000, "p"),
        state("payments", 1_000, EMPTY, PREPARING, **said("member_joined", "p")),
    )
    h.add(
        *completed_rebalance(
            "payments",
            start=1_000,
            joined_at=4_000,
            synced_at=4_050,
            generation_id=1,
            partitions={"p": [("x", 0), ("x", 1)]},
            protocol=cooperative,
        )
    )
    h.add(
        joined("payments", 30_000, "q"),
        state("payments", 30_000, STABLE, PREPARING, **said("member_joined", "q")),
    )
    h.add(
        *completed_rebalance(
            "payments",
            start=30_000,
            joined_at=30_050,
            synced_at=30_100,
            generation_id=2,
            partitions={"p": [("x", 0)], "q": []},
            protocol=cooperative,
        )
    )
    h.add(
        joined("payments", 30_200, "p", rejoined=True),
        state("payments", 30_200, STABLE, PREPARING, **said("metadata_change", "p")),
    )
    h.add(
        *completed_rebalance(
            "payments",
            start=30_200,
            joined_at=30_250,
            synced_at=30_300,
            generation_id=3,
            partitions={"p": [("x", 0)], "q": [("x", 1)]},
            protocol=cooperative,
        )
    )
    return h


@pytest.fixture(scope="module")
def report(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("report")
    history = two_days_of_history().write(root / "history")
    output = root / "out"
    output.mkdir()
    (output / "stale.txt").write_text("from an older report")
    phases: list[str] = []
    summary = run(
        spark,
        history,
        output,
        storm_count=2,
        storm_window_ms=60_000,
        on_phase=phases.append,
    )
    return {"summary": summary, "output": output, "phases": phases}


def test_the_summary_has_each_groups_rebalances_durations_moves_causes_and_costs(
    report: dict[str, Any],
) -> None:
    groups = report["summary"]["groups"]
    assert groups == {
        "audit": {
            "rebalances": 0,
            "completed": 0,
            "duration_ms": {"p50": None, "p95": None, "max": None},
            "partitions_moved": 0,
            "stickiness_mean": None,
            "causes": {},
            "unavailable_partition_s": 0.0,
            "storms": 0,
            "duplicate_windows": 0,
            "duplicate_window_s": 0.0,
            "duplicate_records": 0,
        },
        "orders": {
            "rebalances": 3,
            "completed": 3,
            # durations 3 100, 300, 200: p95 at rank 1.9 is 300 + 0.9 × 2 800.
            "duration_ms": {"p50": 300.0, "p95": 2_820.0, "max": 3_100},
            "partitions_moved": 4,
            "stickiness_mean": 0.5,
            "causes": {"member_joined": 2, "member_left": 1},
            # o0 and o1 are revoked for 300 ms, then for 200 ms.
            "unavailable_partition_s": 1.0,
            "storms": 1,
            "duplicate_windows": 0,
            "duplicate_window_s": 0.0,
            "duplicate_records": 0,
        },
        "payments": {
            "rebalances": 3,
            "completed": 3,
            "duration_ms": {"p50": 100.0, "p95": 2_755.0, "max": 3_050},
            "partitions_moved": 4,
            "stickiness_mean": 1.0,
            "causes": {"member_joined": 2, "metadata_change": 1},
            # Only x1 is revoked, from 30 000 until the follow-up stores it at 30 300.
            "unavailable_partition_s": 0.3,
            "storms": 1,
            # Nobody was removed by the coordinator: nothing processed twice.
            "duplicate_windows": 0,
            "duplicate_window_s": 0.0,
            "duplicate_records": 0,
        },
    }


def test_the_summary_totals_compare_protocols_and_name_the_members_behind_rebalances(
    report: dict[str, Any],
) -> None:
    summary = report["summary"]
    # orders 20 (one of them a commit), audit 1 (a commit), payments 18.
    assert summary["input"]["events"] == 39
    assert summary["input"]["files"] == 2
    assert summary["parameters"] == {"storm_count": 2, "storm_window_ms": 60_000}
    assert summary["totals"] == {
        "groups": 3,
        "rebalances": 6,
        "completed": 6,
        # 100, 100, 200, 300, 3 050, 3 100: p50 at rank 2.5, p95 at rank 4.75.
        "duration_ms": {"p50": 250.0, "p95": 3_087.5, "max": 3_100},
        "partitions_moved": 8,
        "unavailable_partition_s": 1.3,
        "storms": 2,
        "duplicate_windows": 0,
        "duplicate_window_s": 0.0,
        "duplicate_records": 0,
    }
    assert sorted(summary["assignors"]) == ["cooperative-sticky", "range"]
    eager, cooperative = summary["protocols"]["eager"], summary["protocols"]["cooperative"]
    assert (eager["rebalances"], eager["unavailable_partition_s"]) == (3, 1.0)
    assert (cooperative["rebalances"], cooperative["unavailable_partition_s"]) == (3, 0.3)
    assert summary["top_members"] == [
        {"group_id": "orders", "member_id": "b", "rebalances": 2,
         "causes": {"member_joined": 1, "member_left": 1}},
        {"group_id": "payments", "member_id": "p", "rebalances": 2,
         "causes": {"member_joined": 1, "metadata_change": 1}},
        {"group_id": "orders", "member_id": "a", "rebalances": 1, "causes": {"member_joined": 1}},
        {"group_id": "payments", "member_id": "q", "rebalances": 1,
         "causes": {"member_joined": 1}},
    ]  # fmt: skip
    assert summary["generated_at"].endswith("+00:00")


def test_the_report_replaces_the_output_directory_whole(
    spark: SparkSession, report: dict[str, Any]
) -> None:
    output: Path = report["output"]
    assert sorted(path.name for path in output.iterdir()) == sorted([*TABLES, "summary.json"])
    assert not Path(f"{output}.tmp").exists() and not Path(f"{output}.old").exists()
    assert json.loads((output / "summary.json").read_text()) == report["summary"]
    assert spark.read.parquet(str(output / "rebalances")).count() == 6
    assert spark.read.parquet(str(output / "storms")).count() == 2
    phases = report["phases"]
    assert phases[:2] == ["checking the input", "reading the history"]
    # The three kinds' event passes run side by side, in any order; each kind's steps in order.
    kinds = [
        ["computing events", "computing member instances", "computing classic rebalances"],
        ["computing handoff events", "computing handoff rebalances"],
        [
            "computing consumer events",
            "computing consumer rebalances",
            "computing consumer holdings",
        ],
    ]
    for steps in kinds:
        assert [phases.index(step) for step in steps] == sorted(map(phases.index, steps))
    # A step starts once every step it reads has ended, and tables that later ones are
    # computed from are written as soon as they are known.
    after = {
        "writing partition_moves": [kind[-1] for kind in kinds],
        "writing partition_unavailability": [kind[-1] for kind in kinds],
        "computing holdings": [kind[-1] for kind in kinds],
        "writing rebalances": ["writing partition_moves", "writing partition_unavailability"],
        "writing duplicate_consumption": ["writing rebalances", "computing holdings"],
        **{
            f"writing {name}": ["writing duplicate_consumption"]
            for name in ("generations", "storms", "assignors", "protocols")
        },
    }
    for step, needs in after.items():
        assert all(phases.index(need) < phases.index(step) for need in needs), step
    writing = [phase for phase in phases if phase.startswith("writing ")]
    assert sorted(writing[:-1]) == sorted(f"writing {name}" for name in TABLES)  # each once
    assert phases[-1] == "writing summary.json"
    assert len(phases) == len(set(phases))


def test_a_step_that_fails_side_by_side_with_others_leaves_the_last_report_as_it_was(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = two_days_of_history().write(tmp_path / "history")
    output = tmp_path / "out"
    run(spark, history, output)
    before = {path: path.read_bytes() for path in output.rglob("*") if path.is_file()}

    # The classic rebalances fail as Spark computes them, while the handoff and consumer
    # groups' steps run beside them.
    classic_rebalances = rebalance_report.rebalances_of

    def failing(events: DataFrame) -> DataFrame:
        return classic_rebalances(events).where(F.raise_error(F.lit("failed on purpose")).isNull())

    monkeypatch.setattr(rebalance_report, "rebalances_of", failing)
    with pytest.raises(Exception, match="failed on purpose"):
        run(spark, history, output)
    # Every other step had ended before the staging directory was removed.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["history", "out"]
    assert {path: path.read_bytes() for path in output.rglob("*") if path.is_file()} == before


def test_the_progress_file_counts_stages_and_tasks_until_done(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "progress.json"
    monkeypatch.setenv(PROGRESS_FILE_ENV, str(path))
    with track_progress(spark, interval_s=0.05) as progress:
        progress.set_phase("counting")
        spark.range(1_000, numPartitions=3).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    written = json.loads(path.read_text())
    assert written["state"] == "done" and written["phase"] == "done"
    assert written["stages_total"] >= 2 and written["stages_done"] == written["stages_total"]
    assert written["tasks_total"] >= 3 and written["tasks_done"] == written["tasks_total"]
    assert written["jobs_total"] >= 1 and written["jobs_done"] == written["jobs_total"]
    assert written["ui_url"] is None  # the tests' session runs without its UI
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_progress_file_says_where_a_failed_job_stopped(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "progress.json"
    with pytest.raises(RuntimeError), track_progress(spark, path) as progress:
        progress.set_phase("reading the history")
        raise RuntimeError("the history went away")
    written = json.loads(path.read_text())
    assert (written["state"], written["phase"], written["error"]) == (
        "failed",
        "reading the history",
        "the history went away",
    )
