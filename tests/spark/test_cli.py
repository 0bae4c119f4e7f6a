"""``python -m spark_tasks`` as a subprocess: bad input and bad usage exit non-zero with one line
on stderr naming the problem (no traceback), before Spark starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT


def spark_tasks(*args: str | Path, module: bool = True) -> subprocess.CompletedProcess[str]:
    entry = ["-m", "spark_tasks"] if module else [str(ROOT / "spark_tasks" / "__main__.py")]
    return subprocess.run(
        [sys.executable, *entry, *map(str, args)],
        cwd=ROOT if module else "/",
        capture_output=True,
        text=True,
        timeout=60,
    )


def report(input_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return spark_tasks("rebalance_report", "--input", input_dir, "--output", tmp_path / "out")


def assert_one_clear_line(result: subprocess.CompletedProcess[str], status: int, text: str) -> None:
    assert result.returncode == status, result.stderr
    assert text in result.stderr
    assert "Traceback" not in result.stderr and "\tat " not in result.stderr


@pytest.mark.parametrize("module", [True, False], ids=["python -m", "the file, as spark-submit"])
def test_an_unknown_job_is_a_usage_error_that_lists_the_jobs(module: bool) -> None:
    result = spark_tasks("rebalance_repot", module=module)
    assert_one_clear_line(result, 2, "invalid choice: 'rebalance_repot'")
    assert "rebalance_report" in result.stderr.split("choose from")[1]


def test_a_storm_count_of_zero_is_a_usage_error(tmp_path: Path) -> None:
    result = spark_tasks(
        "rebalance_report", "--input", tmp_path, "--output", tmp_path, "--storm-count", "0"
    )
    assert_one_clear_line(result, 2, "--storm-count: must be at least 1, got 0")


def test_a_driver_memory_that_is_not_a_size_is_a_usage_error(tmp_path: Path) -> None:
    result = spark_tasks(
        "rebalance_report", "--input", tmp_path, "--output", tmp_path, "--driver-memory", "4 GB"
    )
    assert_one_clear_line(
        result, 2, "--driver-memory: must be a size such as 512m or 4g, got '4 GB'"
    )


def test_the_driver_memory_is_the_option_else_the_environment_else_four_gigabytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spark_tasks.session import driver_memory

    monkeypatch.delenv("SPARK_DRIVER_MEMORY", raising=False)
    assert driver_memory() == "4g"
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "6g")
    assert (driver_memory(), driver_memory("512m")) == ("6g", "512m")


def test_a_missing_input_directory_fails_naming_it(tmp_path: Path) -> None:
    result = report(tmp_path / "nowhere", tmp_path)
    assert_one_clear_line(result, 1, f"error: input directory {tmp_path}/nowhere does not exist")


def test_an_empty_input_directory_fails_saying_there_is_no_parquet(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    result = report(tmp_path / "history", tmp_path)
    assert_one_clear_line(result, 1, f"error: no Parquet files under {tmp_path}/history")


def test_a_corrupt_parquet_file_fails_naming_the_file(tmp_path: Path) -> None:
    day = tmp_path / "history" / "day=2026-11-24"
    day.mkdir(parents=True)
    (day / "part-0.parquet").write_bytes(b"\x00" * 64)
    result = report(tmp_path / "history", tmp_path)
    assert_one_clear_line(result, 1, f"error: {day}/part-0.parquet is not a readable Parquet file")
    assert not (tmp_path / "out").exists()


def test_a_file_with_another_schema_fails_naming_the_file_and_the_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "history").mkdir()
    pq.write_table(pa.table({"seq": [1]}), tmp_path / "history" / "other.parquet")
    result = report(tmp_path / "history", tmp_path)
    assert_one_clear_line(result, 1, "other.parquet does not have the history schema: it lacks")


@pytest.mark.slow  # a small generated history and one report, about 15 s
def test_a_report_prints_its_summary_line_and_nothing_of_spark_s_set_up(tmp_path: Path) -> None:
    """stdout has the report's one line; stderr, at the default log level, nothing but what the
    JDK itself may print about the incubator module Spark loads (the gateway's "Setting default
    log level" banner is configured away in spark_tasks/log4j2.properties)."""
    from webapp.simulation.history import generate_history

    generate_history(tmp_path / "history", 300, seed=0, jobs=1)
    result = report(tmp_path / "history", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("rebalance_report: ")
    assert f"-> {tmp_path / 'out'}" in result.stdout
    chatter = [
        line
        for line in result.stderr.splitlines()
        if not line.startswith("WARNING: Using incubator modules")
    ]
    assert chatter == []
