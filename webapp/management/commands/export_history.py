"""``python manage.py export_history DIR [--batch-size 50000]``: write the stored event history
(``GroupEvent`` rows) to DIR as day-partitioned Parquet, incrementally.

A second export into the same DIR writes only the events stored since the first (DIR's
``_export.json`` keeps the high-water mark). Progress goes to stderr, one line per batch; the
summary to stdout, one line. Errors (DIR a file or not writable, DIR not an export's
directory, a corrupt manifest or one of another schema version, no history table) end with
exit status 1 and a message naming what is wrong. The work is
``webapp.analysis.export.export_history``; see docs/analysis.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from webapp.analysis.export import DEFAULT_BATCH_SIZE, HistoryDirError, export_history


def positive_int(text: str) -> int:
    """An argparse type: an integer ≥ 1, or an error in words."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class Command(BaseCommand):
    help = (
        "Export the stored rebalance history to DIR as Parquet partitioned by day "
        "(DIR/day=YYYY-MM-DD/part-<first seq>-<last seq>.parquet); only the events stored "
        "since the last export into DIR are written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "dir",
            metavar="DIR",
            help="the dataset directory (created if missing; a new, empty or earlier export's)",
        )
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=DEFAULT_BATCH_SIZE,
            help=f"events read from the database per batch (default {DEFAULT_BATCH_SIZE})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(events: int, last_seq: int) -> None:
            self.stderr.write(f"exported {events} events (up to seq {last_seq})")

        try:
            result = export_history(
                options["dir"], batch_size=options["batch_size"], progress=progress
            )
        except HistoryDirError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:
            raise CommandError(
                f"cannot read the event history from the database ({exc}); "
                "has `manage.py migrate` been run?"
            ) from exc
        if result.events:
            self.stdout.write(
                f"Exported {result.events} events in {result.files} files to {options['dir']} "
                f"(last seq {result.last_seq})."
            )
        else:
            self.stdout.write(
                f"Nothing new to export: {options['dir']} holds every stored event "
                f"(last seq {result.last_seq})."
            )
