"""The report's Spark settings, sized to the history before the first job.

Theory of operation
===================

Spark's defaults are made for data that fills a cluster: 200 shuffle partitions that adaptive
execution (AQE) coalesces at run time, every query compiled to Java bytecode (whole-stage
code generation, Janino), and a JVM that compiles hot code twice (C1, then C2). On the
histories people have, a few thousand to a million events, the report's ~95 queries spend
most of their time on those fixed costs, not on data: compiling code a query runs over a few
thousand rows, planning and scheduling AQE's extra jobs (one per shuffle), warming a JIT that
the job ends before it pays.

The history's size is known before the JVM starts, from its Parquet footers
(:func:`history_events`), so the settings follow it (:func:`tuning_for`; docs/analysis.md,
"Sized to the history", has the measurements behind each threshold):

* below ``INTERPRETED_BELOW`` events, Spark evaluates expressions instead of compiling them
  (``spark.sql.codegen.wholeStage=false`` and ``spark.sql.codegen.factoryMode=NO_CODEGEN``):
  compiling costs more than it saves on so few rows (10k events: 18.5 s → 13.8 s; at 100k
  compiling already pays); from there to ``SIZED_BELOW``, Spark's own code generation is
  stated (``true`` and ``FALLBACK``), so that the report compiles whatever its session had;
* below ``SIZED_BELOW`` events, one shuffle partition per ``EVENTS_PER_PARTITION`` events and
  no AQE (its coalescing then has nothing to do, and its per-shuffle jobs cost a planning
  round each), and the driver JVM compiles with C1 only (``-XX:TieredStopAtLevel=1``: quick
  to warm, and C2 has no time to pay back);
* below ``SIZED_BELOW`` events, the memory pages of a task's sorts, aggregations and joins are
  ``PAGE_SIZE`` (``spark.buffer.pageSize``), where Spark sizes them to the heap: 64 MB with the
  4 GB driver, each a fresh array the JVM zeroes and its collector then has to clear, for a
  sort over a few hundred rows (10k events: the driver's collector threads took 1.7 to 3.9 s
  of CPU per report, and 0.3 to 1.3 s with 1 MB pages);
* below ``SIZED_BELOW`` events, up to ``STEPS_AT_ONCE`` of the report's steps that need none
  of each other's results run side by side (``spark_tasks.side_by_side``: one step's planning
  and last tasks leave cores idle that another's tasks fill; 10k events: 16.2 s → 13.2 s);
* from ``SIZED_BELOW`` on, the session's choices (Spark's own unless its configuration says
  otherwise: AQE over 200 partitions, compiled code, both compilers), the settings the
  ten-million-event measurements were made with, and one step at a time (its 200-partition
  stages keep the cores busy, and two side by side only slowed each other: 10M events, 226 s
  and 240 s against 219 s and 216 s).

Start-up: whatever the size, the driver JVM maps the classes a report loads from a class-data
archive (``CLASS_ARCHIVE``, JDK's CDS: ``-XX:SharedArchiveFile``) when there is one, instead of
loading and verifying them from Spark's jars: the session starts and runs its first job in
3.2 s instead of 6.1 s. ``make`` writes the archive once per install
(``scripts/spark-class-archive.sh``: the JVM of a report on a small generated history dumps
what it loaded as it exits); a JVM that finds it missing or made by another JDK starts
without it, silently. A JVM told to write an archive (``-XX:ArchiveClassesAtExit`` in
``SPARK_SUBMIT_OPTS``, which PySpark's launcher hands the driver: what that script does) gets
none to map: the JDK refuses to start with both ("DynamicDumpSharedSpaces is unsupported when
base CDS archive is not loaded"), so making the archive again, after a new install or JDK,
would fail while the old one is there.

Every setting changes how Spark computes, never what: the report is the same, row for row,
whatever the tuning (``bench/report_diff.py`` compares two reports).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from .history import HistoryError, history_files

__all__ = [
    "C1_ONLY",
    "CLASS_ARCHIVE",
    "DRIVER_JAVA_OPTIONS",
    "DUMP_OPTION",
    "EVENTS_PER_PARTITION",
    "INTERPRETED_BELOW",
    "PAGE_SIZE",
    "SIZED_BELOW",
    "STEPS_AT_ONCE",
    "Tuning",
    "default_java_options",
    "history_events",
    "tuning_for",
    "tuning_for_history",
]

#: The driver JVM's garbage collector, whatever the size: the throughput collector, as a report
#: is one batch job whose pauses nobody waits on (against the JVM's default, G1, the report's
#: event pass on ten million events ran in 20.4 s instead of 24.5 s).
DRIVER_JAVA_OPTIONS = "-XX:+UseParallelGC"
#: The driver JVM's class-data archive (made by ``scripts/spark-class-archive.sh``): this
#: virtualenv's, as it holds the classes of this virtualenv's PySpark.
CLASS_ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"
#: The JVM option that writes a class-data archive (``scripts/spark-class-archive.sh``).
DUMP_OPTION = "-XX:ArchiveClassesAtExit"
#: The driver JIT's options below ``SIZED_BELOW``: C1 alone, with the code cache the JVM gives
#: both compilers (C1 alone gets 48 MB, which Spark's generated classes fill: the JVM then
#: fails with "Out of space in CodeCache for adapters").
C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
#: Below this many events, expressions are interpreted, not compiled.
INTERPRETED_BELOW = 50_000
#: Below this many events, shuffles are sized to the history and the JIT is C1 alone.
SIZED_BELOW = 2_000_000
#: Events per shuffle partition below ``SIZED_BELOW`` (1M events: 4 partitions).
EVENTS_PER_PARTITION = 250_000
#: The memory pages of a task's sorts, aggregations and joins below ``SIZED_BELOW`` (Spark's
#: smallest; it sizes them to the heap, up to 64 MB).
PAGE_SIZE = "1m"
#: Steps side by side below ``SIZED_BELOW`` (the most the report ever has ready at once:
#: summary.json's five queries).
STEPS_AT_ONCE = 5


@dataclass(frozen=True, slots=True)
class Tuning:
    """What a report on ``events`` events runs with: the driver JVM's options and the Spark
    settings Spark reads as it starts (``launch``; both count only where the driver is
    launched: ``build_session``'s ``java_options`` and ``conf``, or spark-submit's
    ``submit_options``), the SQL settings (``applied`` sets them on a session) and how many of
    its steps may run side by side."""

    events: int
    java_options: str = DRIVER_JAVA_OPTIONS
    sql: Mapping[str, str] = field(default_factory=dict)
    steps_at_once: int = 1
    launch: Mapping[str, str] = field(default_factory=dict)

    def submit_options(self) -> list[str]:
        """spark-submit's options that launch the driver so: ``--driver-java-options`` and a
        ``--conf`` for each launch setting."""
        options = ["--driver-java-options", self.java_options]
        for key, value in self.launch.items():
            options += ["--conf", f"{key}={value}"]
        return options

    @contextlib.contextmanager
    def applied(self, spark: SparkSession) -> Iterator[None]:
        """The SQL settings set on ``spark`` for the block, and the session's own put back
        after it (a session that runs several reports, or other work, is left as found)."""
        before = {key: spark.conf.get(key, None) for key in self.sql}
        for key, value in self.sql.items():
            spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, previous in before.items():
                if previous is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, previous)


def _start_up_options() -> str:
    """The class archive's options, when there is one (quiet: a stale archive is no error),
    unless the JVM is to write one (the module docstring)."""
    if not CLASS_ARCHIVE.is_file() or DUMP_OPTION in os.environ.get("SPARK_SUBMIT_OPTS", ""):
        return ""
    return f" -XX:SharedArchiveFile={CLASS_ARCHIVE} -Xlog:cds=off -Xlog:cds+dynamic=off"


def default_java_options() -> str:
    """The driver JVM's options when no history sizes them: the collector, and the class
    archive when there is one."""
    return DRIVER_JAVA_OPTIONS + _start_up_options()


def tuning_for(events: int) -> Tuning:
    """The settings for a history of ``events`` events (the module docstring says why)."""
    start_up = _start_up_options()
    if events >= SIZED_BELOW:
        return Tuning(events, DRIVER_JAVA_OPTIONS + start_up)
    sql = {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(max(1, math.ceil(events / EVENTS_PER_PARTITION))),
    }
    interpreted = events < INTERPRETED_BELOW
    # Stated both ways, so that a session set to interpret (a test's) compiles a large history.
    sql["spark.sql.codegen.wholeStage"] = "false" if interpreted else "true"
    sql["spark.sql.codegen.factoryMode"] = "NO_CODEGEN" if interpreted else "FALLBACK"
    return Tuning(
        events,
        f"{DRIVER_JAVA_OPTIONS} {C1_ONLY}{start_up}",
        sql,
        STEPS_AT_ONCE,
        {"spark.buffer.pageSize": PAGE_SIZE},
    )


def history_events(files: Iterable[str | Path]) -> int:
    """The rows of the history's Parquet files, read from their footers (no data is read)."""
    return sum(pq.read_metadata(path).num_rows for path in files)


def tuning_for_history(input_dir: str | Path) -> Tuning:
    """``tuning_for`` the history under ``input_dir``, for a caller that launches the job
    without checking its input (spark-submit): a history that cannot be read gets the
    smallest tuning, and the job itself says what is wrong with it."""
    try:
        return tuning_for(history_events(history_files(input_dir)))
    except (HistoryError, pa.ArrowException, OSError):
        return tuning_for(0)
