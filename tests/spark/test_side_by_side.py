"""Spark jobs submitted side by side (``spark_tasks.side_by_side``): each task carries the
submitting thread's job description, the block waits for every task, and a failed task's
error reaches its caller without stopping the others."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql import SparkSession

from spark_tasks.side_by_side import SideBySide

DESCRIPTION = "spark.job.description"


def test_a_task_runs_in_its_own_thread_with_the_submitters_job_description(
    spark: SparkSession,
) -> None:
    context = spark.sparkContext
    context.setJobDescription("side by side")
    try:

        def seen() -> tuple[str | None, str, int]:
            counted = spark.range(10).count()
            return context.getLocalProperty(DESCRIPTION), threading.current_thread().name, counted

        with SideBySide(spark, 3, thread_name_prefix="test-steps") as steps:
            futures = [steps.submit(seen) for _ in range(3)]
    finally:
        context.setJobDescription(None)  # type: ignore[arg-type]
    for future in futures:
        description, thread, counted = future.result()
        assert (description, counted) == ("side by side", 10)
        assert thread.startswith("test-steps")
    # A thread's description stays its own: the caller's was reset meanwhile.
    assert context.getLocalProperty(DESCRIPTION) is None


def test_leaving_the_block_waits_for_every_task_and_keeps_each_error_to_its_task(
    spark: SparkSession,
) -> None:
    failing_started = threading.Event()

    def fails() -> int:
        failing_started.set()
        return spark.sql("SELECT no_such_column FROM range(1)").count()

    def counts() -> int:
        failing_started.wait(timeout=60)
        return spark.range(1_000, numPartitions=2).where("id % 2 = 0").count()

    with SideBySide(spark, 3, thread_name_prefix="test-steps") as steps:
        failed = steps.submit(fails)
        counted = steps.submit(counts)
    assert failed.done() and counted.done()
    assert counted.result() == 500
    with pytest.raises(Exception, match="no_such_column"):
        failed.result()
