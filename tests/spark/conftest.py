"""One small SparkSession for every Spark test (Spark's testing guide): ``local[1]``, no UI, and
the settings a report on a demo-sized history runs with (``tuning_for(0)``: expressions
interpreted rather than compiled, one shuffle partition, no adaptive execution, a JIT that
compiles with C1 only, 1 MB memory pages), so a test of a transform on a dozen rows pays no
compiler. Compiled code has its own test: ``test_tuning`` runs a whole report compiled and
compares it, row for row, with the interpreted one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_tasks.session import build_session
from spark_tasks.tuning import tuning_for

from .generated import GeneratedReport

SMALL = tuning_for(0)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(
        "spark_tasks-tests",
        master="local[1]",
        ui_enabled=False,
        java_options=SMALL.java_options,
        conf={**SMALL.launch, **SMALL.sql, "spark.default.parallelism": "1"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def generated_report(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> GeneratedReport:
    """A generated history and its report, made once (``generated.py``)."""
    return GeneratedReport.make(spark, tmp_path_factory.mktemp("generated"))
