"""A generated history and the report ``run`` writes of it in the tests' session, made once per
session (the ``generated_report`` fixture, conftest.py): ``test_generated_history`` checks the
report against the generator's own counts, and ``test_tuning`` compares it, row for row, with
a compiled report of the same history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from spark_tasks.rebalance_report import run
from spark_tasks.tuning import tuning_for
from webapp.simulation.history import GeneratedHistory, generate_history

EVENTS = 10_000
SEED = 1


def compilations(spark: SparkSession) -> int:
    """How many classes Spark has generated and compiled in this JVM so far (its codegen
    metrics)."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics  # type: ignore[union-attr]
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


@dataclass(frozen=True)
class GeneratedReport:
    """``history`` (``EVENTS`` events of seed ``SEED``) written under ``directory``, ``run``'s
    report of it under ``output`` and the summary it returned; the classes Spark compiled
    while it ran, and the session's settings of the report's tuning before and after it."""

    history: GeneratedHistory
    directory: Path
    output: Path
    summary: dict[str, Any]
    compiled_classes: int
    settings_before: dict[str, str | None]
    settings_after: dict[str, str | None]

    @classmethod
    def make(cls, spark: SparkSession, root: Path) -> GeneratedReport:
        directory, output = root / "history", root / "report"
        history = generate_history(directory, EVENTS, seed=SEED, jobs=1)
        keys = tuning_for(history.events).sql  # the settings run() sets, then puts back

        def settings() -> dict[str, str | None]:
            return {key: spark.conf.get(key, None) for key in keys}

        before, classes = settings(), compilations(spark)
        summary = run(spark, directory, output)
        return cls(
            history, directory, output, summary, compilations(spark) - classes, before, settings()
        )
