"""Compaction benchmark: a long-running coordinator's record log, replayed before and after.

    .venv/bin/python bench/compaction.py [--quick] [--events N] [--keep DIR]

The runtime (webapp/runtime/coordinator_runtime.py) rebuilds its engine from its record log
(`SqliteLog`) at every start: `GroupCoordinator(config, log, now_ms=...)` replays every record.
Celery compacts that log hourly (webapp/runtime/control.py `compact_log`: `compaction_plan()` in
a worker thread, then `drop()` in slices of `COMPACTION_SLICE`). This measures what compaction
buys at the next start, on the log of a busy cluster that never compacted:

- the log: `generate_history` (webapp/simulation/history/) drives the real engines through N
  events (default 1,000,000: about four virtual days of the synthetic cluster, two
  coordinators, sixty applications) with `record_logs`, so each coordinator's full record stream
  (every offset commit, group metadata record and tombstone) lands in an SqliteLog file, as the
  runtime's log would hold it;
- for each coordinator's log: the replay (construction of a `GroupCoordinator` over the log,
  with the generator's engine settings, `coordinator_configs`: above all the coordinator
  partitions it owns) before compaction; the compaction as the runtime does it (plan, then
  drops of `COMPACTION_SLICE` entries, one transaction each), with the records and the file
  size before and after; the replay after compaction. Replays are timed best of three (wall
  and CPU seconds); everything runs in this one process.
- the check: the engine rebuilt from the compacted log holds the same state as the one rebuilt
  from the whole log (same group ids, same `GroupView` of every group, same committed offsets);
  the benchmark fails otherwise.

There is no peer to run in the same process (Kafka's log cleaner is JVM code, and compacts in
the background), so the table has no ratio column. It ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coordinator_engine import CoordinatorConfig, GroupCoordinator, SqliteLog
from webapp.runtime.control import COMPACTION_SLICE
from webapp.simulation.history import (
    COORDINATORS,
    coordinator_configs,
    generate_history,
    record_log_path,
)

T = TypeVar("T")
REPEAT = 3


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float, float]:
    """fn's result, and its best wall and CPU seconds over ``repeat`` runs."""
    best_wall = best_cpu = float("inf")
    result: Any = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return result, best_wall, best_cpu


def file_bytes(path: Path) -> int:
    """The database and its write-ahead log, as they lie on disk."""
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def replay(config: CoordinatorConfig, path: Path, now_ms: int) -> GroupCoordinator:
    """What the runtime does at start: an engine over the log (which replays it)."""
    log = SqliteLog(path)
    try:
        return GroupCoordinator(config, log, now_ms=now_ms)
    finally:
        log.close()


def state(coord: GroupCoordinator) -> dict[str, Any]:
    """Everything a replay rebuilds, comparable with ==."""
    return {
        group_id: (coord.group(group_id), coord.committed_offsets(group_id))
        for group_id in coord.group_ids()
    }


def compact(path: Path) -> dict[str, Any]:
    """Compact as webapp.runtime.control.compact_log does (plan, then slices)."""
    log = SqliteLog(path)
    try:
        before = log.count()
        size_before = file_bytes(path)
        plan, plan_s, _ = timed(log.compaction_plan)
        started = time.perf_counter()
        dropped = 0
        for start in range(0, len(plan), COMPACTION_SLICE):
            dropped += log.drop(plan[start : start + COMPACTION_SLICE])
        drop_s = time.perf_counter() - started
        after = log.count()
        log.checkpoint()
    finally:
        log.close()
    assert dropped == len(plan) == before - after, (dropped, len(plan), before, after)
    return {
        "records_before": before,
        "records_after": after,
        "bytes_before": size_before,
        "bytes_after": file_bytes(path),
        "plan_s": round(plan_s, 3),
        "drop_s": round(drop_s, 3),
    }


def bench_log(config: CoordinatorConfig, path: Path, now_ms: int) -> dict[str, Any]:
    whole, before_s, before_cpu = timed(lambda: replay(config, path, now_ms), REPEAT)
    figures = compact(path)
    compacted, after_s, after_cpu = timed(lambda: replay(config, path, now_ms), REPEAT)
    before_state, after_state = state(whole), state(compacted)
    if after_state != before_state:
        differ = sorted(
            g
            for g in set(before_state) | set(after_state)
            if before_state.get(g) != after_state.get(g)
        )
        raise SystemExit(f"{path}: the compacted log replays to another state: {differ[:5]}")
    return {
        **figures,
        "replay_before_ms": round(before_s * 1000, 1),
        "replay_before_cpu_ms": round(before_cpu * 1000, 1),
        "replay_after_ms": round(after_s * 1000, 2),
        "replay_after_cpu_ms": round(after_cpu * 1000, 2),
        "replay_speedup": round(before_s / after_s),
        "groups": len(after_state),
        "offsets": sum(len(offsets) for _, offsets in after_state.values()),
        "same_state": True,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 events (a smoke test)")
    parser.add_argument("--events", type=int, help="events of history (default 1,000,000)")
    parser.add_argument(
        "--keep", metavar="DIR", help="generate into DIR (kept) instead of a temp dir"
    )
    args = parser.parse_args()
    events = args.events or (100_000 if args.quick else 1_000_000)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        logs = root / "record-logs"
        started = time.perf_counter()
        history = generate_history(root / "history", events, record_logs=logs)
        generated_s = time.perf_counter() - started
        now_ms = history.last_at_ms
        results = [
            bench_log(config, record_log_path(logs, index), now_ms)
            for index, config in enumerate(coordinator_configs(events))
        ]

    def row(name: str, key: str, fmt: str = "{:,}", target: str = "") -> None:
        rows.append((name, *(fmt.format(r[key]) for r in results), target))

    rows: list[tuple[str, ...]] = []
    row("records in the log, before compaction", "records_before")
    row("records after compaction", "records_after")
    row("log file bytes before (db + wal)", "bytes_before")
    row("log file bytes after (SQLite reuses freed pages)", "bytes_after")
    row("compaction_plan(), wall s", "plan_s", "{:.3f}")
    row(f"drop() in slices of {COMPACTION_SLICE:,}, wall s", "drop_s", "{:.3f}")
    row("replay of the whole log, wall ms", "replay_before_ms", "{:,.1f}")
    row("replay of the whole log, CPU ms", "replay_before_cpu_ms", "{:,.1f}")
    row("replay after compaction, wall ms", "replay_after_ms", "{:,.2f}")
    row("replay after compaction, CPU ms", "replay_after_cpu_ms", "{:,.2f}")
    row("replay speed-up (wall)", "replay_speedup", "{:,}x")
    row("groups after replay", "groups")
    row("committed offsets after replay", "offsets")
    rows.append(("state after compaction = state before", *("yes" for _ in results), "yes"))

    heads = [f"coordinator {i}" for i in range(COORDINATORS)]
    width = max(len(r[0]) for r in rows)
    columns = [max(len(h), *(len(r[i + 1]) for r in rows)) for i, h in enumerate(heads)]
    print(
        f"history: {history.events:,} events generated in {generated_s:.1f} s "
        f"({history.days[0]} to {history.days[-1]}); CPUs: {os.cpu_count()}"
    )
    print(
        f"{'measure':<{width}}  "
        + "  ".join(f"{h:>{c}}" for h, c in zip(heads, columns, strict=True))
        + "  target"
    )
    print(f"{'-' * width}  " + "  ".join("-" * c for c in columns) + "  ------")
    for name, *values, target in rows:
        cells = "  ".join(f"{v:>{c}}" for v, c in zip(values, columns, strict=True))
        print(f"{name:<{width}}  {cells}  {target}")
    print(
        json.dumps(
            {
                "bench": "compaction",
                "python": sys.version.split()[0],
                "events": history.events,
                "coordinators": results,
            }
        )
    )


if __name__ == "__main__":
    main()
