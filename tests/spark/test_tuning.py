"""The report's settings sized to its history (``spark_tasks.tuning``): what each size gets,
that a report leaves its session's settings as it found them, and that the settings change how
Spark computes, never what: a generated history reported interpreted with its steps side by
side (its own size's tuning) and compiled one step at a time (the tuning of ten million events,
with compiled code and adaptive execution stated: this session's own settings are a demo-sized
report's) gives the same tables, row for row."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import spark_tasks.rebalance_report as rebalance_report
import spark_tasks.tuning as tuning
from spark_tasks.compare import report_differences, table_rows
from spark_tasks.rebalance_report import TABLES, run
from spark_tasks.tuning import (
    C1_ONLY,
    CLASS_ARCHIVE,
    DRIVER_JAVA_OPTIONS,
    DUMP_OPTION,
    PAGE_SIZE,
    SIZED_BELOW,
    STEPS_AT_ONCE,
    default_java_options,
    tuning_for,
    tuning_for_history,
)
from tests import ROOT

from .generated import GeneratedReport, compilations

#: The compiled report's settings: Spark's own code generation and adaptive execution, over two
#: shuffle partitions (Spark's 200 would only slow a 10,000-event report on local[1]). They are
#: stated because the tuning of ten million events sets nothing and so would keep the session's
#: settings, which are a demo-sized report's (interpreted; conftest.py).
COMPILED = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "2",
}


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
    assert tuning.launch == {"spark.buffer.pageSize": PAGE_SIZE}
    assert tuning.steps_at_once == STEPS_AT_ONCE > 1


@pytest.mark.usefixtures("archive_path")
def test_a_million_events_are_compiled_over_partitions_sized_to_them() -> None:
    tuning = tuning_for(1_000_000)
    assert tuning.sql == {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.codegen.wholeStage": "true",
        "spark.sql.codegen.factoryMode": "FALLBACK",
    }
    assert C1_ONLY in tuning.java_options
    assert tuning.launch == {"spark.buffer.pageSize": PAGE_SIZE}
    assert tuning.steps_at_once == STEPS_AT_ONCE
    assert tuning_for(1_000_001).sql["spark.sql.shuffle.partitions"] == "5"


@pytest.mark.usefixtures("archive_path")
def test_from_the_sized_limit_on_spark_chooses() -> None:
    tuning = tuning_for(SIZED_BELOW)
    assert (tuning.sql, tuning.java_options, tuning.launch) == ({}, DRIVER_JAVA_OPTIONS, {})
    assert tuning.steps_at_once == 1  # one step at a time
    assert tuning.submit_options() == ["--driver-java-options", DRIVER_JAVA_OPTIONS]


@pytest.mark.usefixtures("archive_path")
def test_spark_submit_launches_the_driver_as_the_tuning_says() -> None:
    assert tuning_for(10_000).submit_options() == [
        "--driver-java-options",
        f"{DRIVER_JAVA_OPTIONS} {C1_ONLY}",
        "--conf",
        f"spark.buffer.pageSize={PAGE_SIZE}",
    ]


def test_a_session_built_with_the_launch_settings_runs_with_them(spark: SparkSession) -> None:
    # conftest.py builds the tests' session as the report's command does: build_session's
    # conf carries them into the JVM as it starts (set later, Spark would ignore them).
    assert spark.sparkContext.getConf().get("spark.buffer.pageSize") == PAGE_SIZE
    # And build_session's java_options reach the driver JVM itself.
    jvm = spark._jvm.java.lang.management.ManagementFactory  # type: ignore[union-attr]
    arguments = set(jvm.getRuntimeMXBean().getInputArguments())
    assert set(f"{DRIVER_JAVA_OPTIONS} {C1_ONLY}".split()) <= arguments, arguments


def test_every_size_starts_from_the_class_archive_once_there_is_one(archive_path: Path) -> None:
    archive_path.write_bytes(b"made by scripts/spark-class-archive.sh")
    for events in (10_000, 1_000_000, SIZED_BELOW):
        options = tuning_for(events).java_options.split()
        assert options[0] == DRIVER_JAVA_OPTIONS
        assert f"-XX:SharedArchiveFile={archive_path}" in options
        assert "-Xlog:cds=off" in options  # a stale archive is ignored without a word


def test_a_jvm_that_writes_an_archive_maps_none(
    archive_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive_path.write_bytes(b"made by scripts/spark-class-archive.sh")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", f"{DUMP_OPTION}=/tmp/new.jsa -Xlog:cds=off")
    for events in (10_000, SIZED_BELOW):
        assert "SharedArchiveFile" not in tuning_for(events).java_options
    assert "SharedArchiveFile" not in default_java_options()


@pytest.mark.slow  # a report whose JVM loads every class without an archive, then dumps them
def test_the_archive_is_made_again_while_one_is_there(tmp_path: Path) -> None:
    """What ``make`` does after a new install over an old one: the script's JVM, told to write
    an archive, must not also be given the old one (the JDK then refuses to start)."""
    if not CLASS_ARCHIVE.is_file():
        pytest.skip(f"no archive to map: make writes {CLASS_ARCHIVE} before the tests")
    remade = tmp_path / "spark-classes.jsa"
    done = subprocess.run(
        ["scripts/spark-class-archive.sh", str(remade)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Spark class archive: {remade}" in done.stdout
    assert remade.stat().st_size > 1_000_000


def test_an_unreadable_history_gets_the_smallest_tuning(tmp_path: Path) -> None:
    (tmp_path / "day=2026-11-27").mkdir()
    (tmp_path / "day=2026-11-27" / "part-0.parquet").write_text("not parquet")
    assert tuning_for_history(tmp_path) == tuning_for(0)
    assert tuning_for_history(tmp_path / "missing") == tuning_for(0)


@pytest.mark.slow  # a compiled report of the session's generated history
def test_interpreted_and_compiled_reports_are_the_same_row_for_row(
    spark: SparkSession,
    generated_report: GeneratedReport,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The session's report of its generated history (conftest.py) ran interpreted, with the
    # tuning of its size, and left the session's settings as it found them.
    history, interpreted = generated_report.directory, generated_report.summary
    events = generated_report.history.events  # the rows run() read (test_generated_history)
    assert "spark.sql.codegen.factoryMode" in tuning_for(events).sql  # interpreted
    assert generated_report.settings_after == generated_report.settings_before  # put back

    compiled_tuning = dataclasses.replace(tuning_for(SIZED_BELOW), sql=COMPILED)
    monkeypatch.setattr(rebalance_report, "tuning_for", lambda events: compiled_tuning)
    classes_before = compilations(spark)
    compiled = run(spark, history, tmp_path / "compiled")
    # Interpreted, Spark still generates a few classes (26 here); compiled, hundreds (764).
    assert compilations(spark) - classes_before > 10 * generated_report.compiled_classes

    assert interpreted["totals"]["rebalances"] > 50
    differences = report_differences(generated_report.output, tmp_path / "compiled")
    assert differences == dict.fromkeys(differences)  # None everywhere: the same
    assert "summary.json" in differences and set(TABLES) <= differences.keys()
    assert compiled["totals"] == interpreted["totals"]

    # And the comparison sees a difference: one partition moved elsewhere in a copy.
    altered = tmp_path / "altered"
    shutil.copytree(tmp_path / "compiled", altered)
    rows = table_rows(altered, "partition_moves")
    rows[0]["member_after"] = "someone-else"
    shutil.rmtree(altered / "partition_moves")
    (altered / "partition_moves").mkdir()
    schema = pq.read_schema(next((tmp_path / "compiled" / "partition_moves").glob("*.parquet")))
    pq.write_table(
        pa.Table.from_pylist(rows, schema=schema), altered / "partition_moves" / "part-0.parquet"
    )
    found = report_differences(tmp_path / "compiled", altered)
    assert found["partition_moves"] is not None
    assert found["rebalances"] is None and found["summary.json"] is None

    # So does it when only a type changes: the same values, the storms' counts as 64-bit.
    storms = pq.read_table(altered / "storms")
    assert storms.schema.field("rebalances").type == pa.int32()
    widened = storms.set_column(
        storms.schema.get_field_index("rebalances"),
        pa.field("rebalances", pa.int64(), nullable=storms.schema.field("rebalances").nullable),
        storms.column("rebalances").cast(pa.int64()),
    )
    shutil.rmtree(altered / "storms")
    (altered / "storms").mkdir()
    pq.write_table(widened, altered / "storms" / "part-0.parquet")
    assert table_rows(altered, "storms") == table_rows(tmp_path / "compiled", "storms")
    found = report_differences(tmp_path / "compiled", altered)
    assert found["storms"] is not None and found["storms"].startswith("schemas differ")
