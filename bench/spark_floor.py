"""Benchmark: the part of the rebalance report no plan can skip, timed alone with ``local[2]``.

    .venv/bin/python bench/spark_floor.py DIR     # DIR: a history (generate_history's layout)

The report (``spark_tasks.rebalance_report``) must at least start Spark, read the history,
put each group's rebalance events in ``seq`` order (every per-event figure is a window over
that order), put each partition's assignments in ``seq`` order (partition moves and
unavailability compare neighbouring assignments of a partition), read the offset commits of
the removed members' partitions (duplicate consumption), and write its per-partition tables.
This times each of those steps alone, in one session, in that order, the way the report does
them (the same transforms and columns), with no window, join or aggregate on top:

- ``start``: Python, PySpark and the JVM until the session exists;
- ``count``: one pass over the history's ``group_id`` (the report's events per group);
- ``events sort``: the rebalance events (``rebalance_events``) shuffled by group and sorted by
  ``seq``, into Spark's ``noop`` sink (computed, not written);
- ``assignments sort``: every assignment row (``assignments_of``) shuffled by partition and
  sorted by ``seq``, into ``noop``;
- ``commits``: every ``OffsetsCommitted`` event's offsets exploded, into ``noop``;
- ``write``: the assignment rows written as Parquet less the same rows into ``noop``: what
  writing that many rows adds (the report writes about twice as many per-partition rows).

The sum is a floor for the report on this machine: the report's own time, less this, is what
its windows, joins, aggregates and smaller tables cost. There is no peer. The last line is one
JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("history", type=Path, help="a history directory")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    args = parser.parse_args()

    started = time.perf_counter()
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from spark_tasks.events import assignments_of
    from spark_tasks.history import check_history, read_history
    from spark_tasks.rebalance_report import rebalance_events
    from spark_tasks.session import build_session

    check_history(args.history)
    spark = build_session("spark_floor", master=args.master, ui_enabled=False)
    figures: dict[str, float] = {"start": time.perf_counter() - started}

    def timed(name: str, action: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        result = action()
        figures[name] = time.perf_counter() - began
        print(f"  {name}: {figures[name]:.1f} s", file=sys.stderr, flush=True)
        return result

    def computed(frame: DataFrame) -> None:
        frame.write.format("noop").mode("overwrite").save()

    history = read_history(spark, args.history)
    per_group = timed("count", lambda: history.groupBy("group_id").count().collect())
    events = sum(row["count"] for row in per_group)
    by_group = (
        history.transform(rebalance_events)
        .repartition("group_id")
        .sortWithinPartitions("group_id", "seq")
    )
    timed("events sort", lambda: computed(by_group))
    partition = ["group_id", "topic", "partition"]
    assignments = assignments_of(history)
    by_partition = assignments.repartition(*partition).sortWithinPartitions(*partition, "seq")
    timed("assignments sort", lambda: computed(by_partition))
    commits = history.where(F.col("type") == "OffsetsCommitted").select(
        "group_id", "member_id", "seq", F.explode("offsets").alias("_o")
    )
    timed("commits", lambda: computed(commits))
    rows = assignments.count()
    scratch = Path(tempfile.mkdtemp(prefix="spark-floor-"))
    try:
        timed("_noop", lambda: computed(assignments))
        timed("_parquet", lambda: assignments.write.parquet(str(scratch / "rows")))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures["write"] = figures.pop("_parquet") - figures.pop("_noop")
    spark.stop()
    total = sum(figures.values())

    print(f"\nthe report's floor on {events:,} events (master {args.master})\n")
    print("| step | seconds |")
    print("|---|---|")
    for name, seconds in figures.items():
        label = f"write ({rows:,} rows)" if name == "write" else name
        print(f"| {label} | {seconds:.1f} |")
    print(f"| **sum** | **{total:.1f}** |")
    print(json.dumps({"events": events, "assignment_rows": rows, **figures, "sum": total}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
