"""``python manage.py generate_history DIR --events N [--seed S] [--jobs J] [--record-logs LOGS]``:
a synthetic rebalance history of at least N events, from the real engine driven in virtual time
by simulated members, written to DIR (new or empty) as ``export_history`` writes the stored one;
with ``--record-logs``, each simulated coordinator's full record log too, as
``LOGS/coordinator-<n>.db`` (an ``SqliteLog``, uncompacted: what bench/compaction.py replays).

The same N and seed give the same files, whatever ``--jobs``. Progress goes to stderr; the
summary to stdout: one line (events, files, last seq, days, time taken, events per second),
then a table of what the generator did per group (also in ``DIR/_generated.json``). A DIR that
is a file, not writable or not empty, or an N below 1, ends with a message naming what is
wrong and a non-zero exit status. The work is ``webapp.simulation.history.generate_history``;
see docs/analysis.md. The command touches no Django database (record logs are files of their own).
"""

from __future__ import annotations

import argparse
import datetime
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.analysis.export import GENERATED_NAME, HistoryDirError
from webapp.simulation.history import COORDINATORS, GeneratedHistory, generate_history

from .export_history import positive_int

#: The summary table's columns: (heading, GroupSummary field).
COLUMNS = (
    ("group", "group_id"),
    ("assignor", "assignor"),
    ("coop", "cooperative"),
    ("joins", "joins"),
    ("leaves", "leaves"),
    ("crashes", "crashes"),
    ("slow", "slow_members"),
    ("static restarts", "static_restarts"),
    ("partition changes", "partition_changes"),
    ("admin rebalances", "admin_rebalances"),
    ("commits", "commits"),
    ("generations", "generations"),
)


def jobs_count(text: str) -> int:
    """An argparse type: 1 to COORDINATORS."""
    value = positive_int(text)
    if value > COORDINATORS:
        raise argparse.ArgumentTypeError(f"must be at most {COORDINATORS}, got {value}")
    return value


def utc(at_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def summary_table(history: GeneratedHistory) -> list[str]:
    """The per-group counts as aligned text columns (names left, numbers right)."""
    rows = [[heading for heading, _ in COLUMNS]]
    rows += [[cell(getattr(group, name)) for _, name in COLUMNS] for group in history.groups]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return [
        "  ".join(
            text.ljust(width) if column < 3 else text.rjust(width)
            for column, (text, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]


class Command(BaseCommand):
    help = (
        "Generate a rebalance history of at least N events (the real engine in virtual time, "
        "simulated members of every behaviour, over several days) into DIR as day-partitioned "
        "Parquet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", metavar="DIR", help="the dataset directory (new or empty)")
        parser.add_argument(
            "--events",
            type=positive_int,
            required=True,
            metavar="N",
            help="how many events at least (the history ends when every group has settled)",
        )
        parser.add_argument(
            "--seed",
            type=int,
            default=0,
            help="the random seed (default 0); same seed, same history",
        )
        parser.add_argument(
            "--jobs",
            type=jobs_count,
            default=None,
            help=f"processes to run the {COORDINATORS} simulated coordinators in (1 or "
            f"{COORDINATORS}; default {COORDINATORS} from 200000 events on a machine with "
            "as many cores); the output is the same either way",
        )
        parser.add_argument(
            "--record-logs",
            metavar="LOGS",
            default=None,
            help="also write each simulated coordinator's full record log (every record, "
            "uncompacted) to LOGS/coordinator-<n>.db, an SqliteLog an engine can replay",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(events: int, at_ms: int) -> None:
            self.stderr.write(f"generated {events} events (virtual time {utc(at_ms)})")

        started = time.perf_counter()
        try:
            history = generate_history(
                options["dir"],
                options["events"],
                seed=options["seed"],
                jobs=options["jobs"],
                progress=progress,
                record_logs=options["record_logs"],
            )
        except HistoryDirError as exc:
            raise CommandError(str(exc)) from exc
        elapsed = time.perf_counter() - started
        self.stdout.write(
            f"Generated {history.events} events in {history.files} files to {options['dir']} "
            f"(last seq {history.last_seq}; days {history.days[0]} to {history.days[-1]}) "
            f"in {elapsed:.1f} s: {history.events / elapsed:.0f} events/s; "
            f"summary in {GENERATED_NAME}."
        )
        for line in summary_table(history):
            self.stdout.write(line)
