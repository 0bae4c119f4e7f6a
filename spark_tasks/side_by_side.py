"""Spark jobs that need none of each other's results, submitted from threads side by side.

Theory of operation
===================

A report is a few dozen Spark actions, most of them over a few thousand rows. Run one after
the other, each leaves the two cores idle while the driver plans it (Catalyst's analysis,
optimisation and physical planning, in one driver thread) and while its last task finishes,
so a demo-sized report kept the machine about two-thirds busy. Spark's scheduler takes jobs
from several threads at once (its FIFO pool runs the earlier job's tasks first and fills idle
cores with the later's), so independent steps submitted from threads overlap one step's
planning with another's tasks.

``SideBySide`` is a thread pool for that, running ``at_once`` tasks at a time (with 1, one
after the other in the order they were submitted, on a thread of their own). Each task carries
the Spark local properties of the thread that submitted it (the job description, which the
progress file and Spark's UI show), as PySpark's pinned-thread mode gives every Python thread
its own JVM thread and a new thread would otherwise start with none
(``pyspark.inheritable_thread_target``). Leaving its ``with`` block waits for every task,
finished or failed, so no job still runs, or still writes into a staging directory, once the
block is left; ``Future.result()`` then returns a task's value or raises its error.

Threads change when a step runs, never what it computes: every table is the same, row for row.
Where the cores are already busy, steps side by side only compete for them: a report runs
them so below ``spark_tasks.tuning.SIZED_BELOW`` events, one at a time from there on
(``Tuning.steps_at_once``).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar, cast

from pyspark import inheritable_thread_target
from pyspark.sql import SparkSession

__all__ = ["SideBySide"]

P = ParamSpec("P")
T = TypeVar("T")


class SideBySide(ThreadPoolExecutor):
    """A thread pool whose tasks run with the submitting thread's Spark local properties (and
    the job tags of ``spark``)."""

    def __init__(self, spark: SparkSession, at_once: int, *, thread_name_prefix: str) -> None:
        super().__init__(max_workers=at_once, thread_name_prefix=thread_name_prefix)
        self._spark = spark

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        # The properties are captured here, in the submitting thread.
        inheriting = cast(Callable[P, T], inheritable_thread_target(self._spark)(fn))
        return super().submit(inheriting, *args, **kwargs)
