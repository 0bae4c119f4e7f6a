"""Running the coordinators (here or in processes of their own) and merging their events into
one history in time order, numbered as the runtime numbers them, written by day."""

from __future__ import annotations

import multiprocessing
import queue
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from webapp.analysis.export import write_day_files

from .coordinator_run import CoordinatorRun, Plan, rare_collections
from .summary import CoordinatorSummary

#: Rows per write of the merged history.
WRITE_ROWS = 100_000


class InProcess:
    """A coordinator run in this process, one batch at a time."""

    def __init__(self, plan: Plan) -> None:
        self.run = CoordinatorRun(plan)
        self.batches = self.run.batches()
        self.summary: CoordinatorSummary | None = None

    def next(self) -> pa.Table | None:
        table = next(self.batches, None)
        if table is None:
            self.summary = self.run.summary()
        return table

    def stop(self) -> None:
        pass


def run_coordinator(plan: Plan, channel: Any) -> None:
    """A coordinator's process: its batches, then its summary, through ``channel``."""
    try:
        with rare_collections():
            run = CoordinatorRun(plan)
            for table in run.batches():
                channel.put(("rows", table))
            channel.put(("done", run.summary()))
    except BaseException:
        channel.put(("error", traceback.format_exc()))


class InSubprocess:
    """A coordinator run in a process of its own; at most four batches wait for the merge
    (slack for one coordinator to run ahead of the other in virtual time)."""

    def __init__(self, plan: Plan) -> None:
        context = multiprocessing.get_context("spawn")
        self.channel = context.Queue(maxsize=4)
        self.process = context.Process(
            target=run_coordinator,
            args=(plan, self.channel),
            name=f"generate-history-coordinator-{plan.index}",
            daemon=True,
        )
        self.process.start()
        self.summary: CoordinatorSummary | None = None

    def next(self) -> pa.Table | None:
        while True:
            try:
                kind, payload = self.channel.get(timeout=1.0)
            except queue.Empty:
                if not self.process.is_alive():
                    raise RuntimeError(
                        f"{self.process.name} ended with exit code {self.process.exitcode}"
                    ) from None
                continue
            if kind == "rows":
                return payload
            if kind == "done":
                self.summary = payload
                self.process.join()
                return None
            raise RuntimeError(f"{self.process.name} failed:\n{payload}")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


class Merger:
    """Merges the coordinators' tables into one history in time order and numbers it.

    Each coordinator's rows come in time order, so every row earlier than the last time seen
    from each coordinator still running can be released: the release is sorted by
    (at_ms, coordinator, the coordinator's own order) and given ``seq`` and ``prev_seq``."""

    def __init__(self, count: int) -> None:
        self.pending: list[list[pa.Table]] = [[] for _ in range(count)]
        self.last_at: list[int | None] = [None] * count
        self.done = [False] * count
        self.next_seq = 1
        self.last_seq_of_group: dict[str, int] = {}

    def laggard(self) -> int | None:
        """The running coordinator to read from next: the one furthest behind."""
        running = [i for i, done in enumerate(self.done) if not done]
        if not running:
            return None
        return min(running, key=lambda i: (self.last_at[i] is not None, self.last_at[i] or 0, i))

    def add(self, index: int, table: pa.Table | None) -> None:
        if table is None:
            self.done[index] = True
        elif table.num_rows:
            self.pending[index].append(table)
            self.last_at[index] = table.column("at_ms")[-1].as_py()

    def release(self) -> pa.Table | None:
        """The rows no coordinator can precede any more, numbered; None if there are none."""
        running = [self.last_at[i] for i, done in enumerate(self.done) if not done]
        if any(at is None for at in running):
            return None
        watermark = min(running) if running else None  # type: ignore[type-var]
        parts = []
        for index, tables in enumerate(self.pending):
            if not tables:
                continue
            table = pa.concat_tables(tables)
            cut = table.num_rows
            if watermark is not None:
                cut = pc.sum(pc.less(table.column("at_ms"), watermark)).as_py() or 0
            self.pending[index] = [table.slice(cut)] if cut < table.num_rows else []
            if cut:
                released = table.slice(0, cut)
                parts.append(
                    released.append_column("coordinator", pa.array([index] * cut, pa.int32()))
                )
        if not parts:
            return None
        merged = pa.concat_tables(parts)
        order = pc.sort_indices(
            merged,
            sort_keys=[("at_ms", "ascending"), ("coordinator", "ascending"), ("seq", "ascending")],
        )
        merged = merged.take(order).drop_columns(["coordinator"])
        return self.number(merged)

    def number(self, table: pa.Table) -> pa.Table:
        first = self.next_seq
        count = table.num_rows
        self.next_seq += count
        last_seq_of_group = self.last_seq_of_group
        previous = []
        for seq, group_id in enumerate(table.column("group_id").to_pylist(), start=first):
            previous.append(last_seq_of_group.get(group_id, 0))
            last_seq_of_group[group_id] = seq
        schema = table.schema
        table = table.set_column(
            schema.get_field_index("seq"),
            schema.field("seq"),
            pa.array(range(first, first + count), pa.int64()),
        )
        return table.set_column(
            schema.get_field_index("prev_seq"),
            schema.field("prev_seq"),
            pa.array(previous, pa.int64()),
        )


@dataclass
class Written:
    events: int = 0
    files: int = 0
    days: list[str] = field(default_factory=list)
    first_at_ms: int = 0
    last_at_ms: int = 0


def write_merged(
    sources: Sequence[InProcess | InSubprocess],
    directory: Path,
    progress: Callable[[int, int], None] | None,
) -> Written:
    merger = Merger(len(sources))
    written = Written()
    ready: list[pa.Table] = []
    waiting = 0

    def write() -> None:
        nonlocal waiting
        table = pa.concat_tables(ready)
        ready.clear()
        waiting = 0
        files = write_day_files(table, directory)
        at_ms = table.column("at_ms")
        if written.events == 0:
            written.first_at_ms = at_ms[0].as_py()
        written.last_at_ms = at_ms[-1].as_py()
        written.events += table.num_rows
        written.files += len(files)
        for path in files:
            day = path.parent.name.partition("=")[2]
            if day not in written.days:
                written.days.append(day)
        if progress is not None:
            progress(written.events, written.last_at_ms)

    while (index := merger.laggard()) is not None:
        merger.add(index, sources[index].next())
        released = merger.release()
        if released is not None:
            ready.append(released)
            waiting += released.num_rows
            if waiting >= WRITE_ROWS:
                write()
    if ready:
        write()
    return written
