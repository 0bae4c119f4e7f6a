"""The report's settings sized to its history (``spark_tasks.tuning``): what each size gets,
that a report leaves its session's settings as it found them, and that the settings change how
Spark computes, never what: a generated history reported interpreted (its own size's tuning)
and compiled (the tuning of ten million events) gives the same tables, row for row."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import spark_tasks.rebalance_report as rebalance_report
import spark_tasks.tuning as tuning
from spark_tasks.rebalance_report import TABLES, run
from spark_tasks.tuning import (
    DRIVER_JAVA_OPTIONS,
    SIZED_BELOW,
    history_events,
    tuning_for,
    tuning_for_history,
)
from webapp.simulation.history import generate_history

C1_ONLY = "-XX:TieredStopAtLevel=1"


@pytest.fixture
def archive_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The class archive's path, pointing where there is none yet."""
    archive = tmp_path / "spark-classes.jsa"
    monkeypatch.setattr(tuning, "CLASS_ARCHIVE", archive)
    return archive


@pytest.mark.usefixtures("archive_path")
def test_a_demo_history_is_interpreted_on_one_partition_without_aqe() -> None:
    tuning = tuning_for(10_000)
    assert tuning.sql == {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }
    assert tuning.java_options == f"{DRIVER_JAVA_OPTIONS} {C1_ONLY}"


@pytest.mark.usefixtures("archive_path")
def test_a_million_events_are_compiled_over_partitions_sized_to_them() -> None:
    tuning = tuning_for(1_000_000)
    assert tuning.sql == {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
    }
    assert C1_ONLY in tuning.java_options
    assert tuning_for(1_000_001).sql["spark.sql.shuffle.partitions"] == "5"


@pytest.mark.usefixtures("archive_path")
def test_from_the_sized_limit_on_spark_chooses() -> None:
    tuning = tuning_for(SIZED_BELOW)
    assert (tuning.sql, tuning.java_options) == ({}, DRIVER_JAVA_OPTIONS)


def test_every_size_starts_from_the_class_archive_once_there_is_one(archive_path: Path) -> None:
    archive_path.write_bytes(b"made by scripts/spark-class-archive.sh")
    for events in (10_000, 1_000_000, SIZED_BELOW):
        options = tuning_for(events).java_options.split()
        assert options[0] == DRIVER_JAVA_OPTIONS
        assert f"-XX:SharedArchiveFile={archive_path}" in options
        assert "-Xlog:cds=off" in options  # a stale archive is ignored without a word


def test_an_unreadable_history_gets_the_smallest_tuning(tmp_path: Path) -> None:
    (tmp_path / "day=2026-11-27").mkdir()
    (tmp_path / "day=2026-11-27" / "part-0.parquet").write_text("not parquet")
    assert tuning_for_history(tmp_path) == tuning_for(0)
    assert tuning_for_history(tmp_path / "missing") == tuning_for(0)


def _rows(directory: Path, table: str) -> list[dict[str, Any]]:
    """A table's rows in an order of their own (Spark's partitioning is no part of it)."""

    def key(row: dict[str, Any]) -> str:
        rounded = {k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()}
        return json.dumps(rounded, sort_keys=True, default=str)

    return sorted(pq.read_table(directory / table).to_pylist(), key=key)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.slow  # two reports of a generated history, about 40 s on local[1]
def test_interpreted_and_compiled_reports_are_the_same_row_for_row(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "history"
    generate_history(history, 5_000, seed=3, jobs=1)
    events = history_events(sorted(history.rglob("*.parquet")))
    assert "spark.sql.codegen.factoryMode" in tuning_for(events).sql  # interpreted
    before = {key: spark.conf.get(key, None) for key in tuning_for(events).sql}

    interpreted = run(spark, history, tmp_path / "interpreted")
    assert {key: spark.conf.get(key, None) for key in before} == before  # put back
    monkeypatch.setattr(rebalance_report, "tuning_for", lambda events: tuning_for(SIZED_BELOW))
    compiled = run(spark, history, tmp_path / "compiled")

    for summary in (interpreted, compiled):
        summary.pop("generated_at")
    assert _same(interpreted, compiled)
    assert interpreted["totals"]["rebalances"] > 50
    for table in TABLES:
        a, b = _rows(tmp_path / "interpreted", table), _rows(tmp_path / "compiled", table)
        assert len(a) == len(b), table
        for x, y in zip(a, b, strict=True):
            assert _same(x, y), (table, x, y)
