"""The stored rebalance history as a day-partitioned Parquet dataset, exported incrementally.

The dataset (docs/analysis.md, schema ``spark_tasks.schema.HISTORY_SCHEMA``)::

    DIR/_export.json                                        the manifest
    DIR/day=2026-03-02/part-000000000001-000000050000.parquet
    DIR/day=2026-03-03/part-000000050001-000000061234.parquet

Each file holds the rows of one UTC day (``day_of(at_ms)``) written together; its name carries
the lowest and highest ``seq`` it holds. The manifest records the history schema version and
the high-water mark: every stored event with ``seq <= last_seq`` is in the dataset, once.

Theory of operation
-------------------
An export reads the manifest's ``last_seq`` (0 for a new directory) and the highest stored seq
when it starts, then pages through the ``GroupEvent`` rows in between in seq order (keyset
pagination, ``batch_size`` rows a page: memory stays flat and no read transaction lasts the
whole export). Each page becomes one table (``table_of``) and one file per day it touches. A
file is written under a hidden temporary name (``.part-….tmp``; Spark and pyarrow skip names
that start with ``.`` or ``_``), flushed to disk and renamed into place; only when every file
of a page is in place does the manifest move ``last_seq`` past the page (the manifest too is
written to a temporary file and renamed). A crash therefore leaves at most one page's files
above ``last_seq``; the next export deletes every part file whose first seq lies above
``last_seq``, and every temporary file, before it writes anything, and then writes those
events again: nothing is counted twice, nothing is lost.

The runtime's history writer stores events in seq order, so a later export never finds a seq
at or below a high-water mark it has passed; events stored after an export started wait for
the next one.

``write_day_files`` and the directory checks serve ``webapp.simulation.history`` too, which is
why this module imports Django's models only inside the function that reads them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_tasks.output import write_json_atomically
from spark_tasks.schema import PARTITION_COLUMN, SCHEMA_VERSION, day_of, table_of

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "GENERATED_NAME",
    "MANIFEST_NAME",
    "ExportResult",
    "HistoryDirError",
    "export_history",
    "prepare_empty_dir",
    "write_day_files",
]

#: The export's manifest in DIR: ``{"schema_version", "last_seq", "events", "files"}``.
MANIFEST_NAME = "_export.json"
#: What ``generate_history`` writes in a directory it filled (an export refuses such a one).
GENERATED_NAME = "_generated.json"
#: Rows read from the database, and written, per page.
DEFAULT_BATCH_SIZE = 50_000

DAY_MS = 86_400_000
_PART_NAME = re.compile(r"part-(\d+)-(\d+)\.parquet")


class HistoryDirError(Exception):
    """The output directory cannot take the history; the message says what is wrong."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExportResult:
    """What one export did.

    events: events written by this export (0 when nothing new was stored).
    files: Parquet files written by this export.
    last_seq: the directory's high-water mark afterwards (0: no event exported yet).
    total_events: events the directory holds afterwards, this export's included.
    """

    events: int
    files: int
    last_seq: int
    total_events: int


@dataclass(frozen=True, kw_only=True, slots=True)
class _Manifest:
    last_seq: int = 0
    events: int = 0
    files: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "last_seq": self.last_seq,
            "events": self.events,
            "files": self.files,
        }


# ---------------------------------------------------------------- the dataset layout


def _write_part(table: pa.Table, day_dir: Path) -> Path:
    seqs = pc.min_max(table.column("seq"))
    name = f"part-{seqs['min'].as_py():012d}-{seqs['max'].as_py():012d}.parquet"
    day_dir.mkdir(exist_ok=True)
    temporary = day_dir / f".{name}.tmp"
    with open(temporary, "wb") as sink:
        pq.write_table(table, sink)
        sink.flush()
        os.fsync(sink.fileno())
    path = day_dir / name
    os.replace(temporary, path)
    return path


def write_day_files(table: pa.Table, out_dir: Path) -> list[Path]:
    """Write a history table as one file per UTC day of its ``at_ms`` (rows keep their order),
    each under ``out_dir/day=YYYY-MM-DD/``; returns the files, in order of their days' first
    rows."""
    if table.num_rows == 0:
        return []
    day_numbers = [at_ms // DAY_MS for at_ms in table.column("at_ms").to_pylist()]
    days = list(dict.fromkeys(day_numbers))
    if len(days) == 1:
        parts = [(days[0], table)]
    else:
        numbers = pa.array(day_numbers, pa.int64())
        parts = [(day, table.filter(pc.equal(numbers, day))) for day in days]
    return [
        _write_part(part, out_dir / f"{PARTITION_COLUMN}={day_of(day * DAY_MS)}")
        for day, part in parts
    ]


def _check_dir(path: Path) -> None:
    """Create ``path`` if needed; HistoryDirError unless it is a directory this process may
    write into."""
    if path.exists() and not path.is_dir():
        raise HistoryDirError(f"{path} is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HistoryDirError(f"cannot create the directory {path}: {exc.strerror}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise HistoryDirError(f"the directory {path} is not writable")


def prepare_empty_dir(path: Path) -> None:
    """Make sure ``path`` is a writable directory with nothing in it (creating it if needed)."""
    _check_dir(path)
    if any(path.iterdir()):
        raise HistoryDirError(f"{path} is not empty: give a new or empty directory")


# ---------------------------------------------------------------- the export


def _read_manifest(out_dir: Path) -> _Manifest | None:
    """The directory's manifest; None for a new (empty) directory. HistoryDirError for a
    directory that is not an export's, or a manifest that is corrupt or of another schema."""
    path = out_dir / MANIFEST_NAME
    if not path.exists():
        if (out_dir / GENERATED_NAME).exists():
            raise HistoryDirError(
                f"{out_dir} holds a generated history ({GENERATED_NAME}): export into another "
                "directory"
            )
        if any(out_dir.iterdir()):
            raise HistoryDirError(
                f"{out_dir} is not empty and has no {MANIFEST_NAME}: it is not an export's "
                "directory; give a new or empty one"
            )
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HistoryDirError(f"the manifest {path} is corrupt: {exc}") from exc
    fields = ("schema_version", "last_seq", "events", "files")
    if not isinstance(data, dict) or not all(
        type(data.get(name)) is int and data[name] >= 0 for name in fields
    ):
        raise HistoryDirError(
            f"the manifest {path} is corrupt: expected an object with the non-negative "
            f"integers {', '.join(fields)}"
        )
    if data["schema_version"] != SCHEMA_VERSION:
        raise HistoryDirError(
            f"the manifest {path} is of history schema version {data['schema_version']}; this "
            f"export writes version {SCHEMA_VERSION}: export into a new directory"
        )
    return _Manifest(last_seq=data["last_seq"], events=data["events"], files=data["files"])


def _remove_unfinished(out_dir: Path, last_seq: int) -> None:
    """Delete what an export that crashed left behind: temporary files, and part files beyond
    the manifest's high-water mark (their events are written again)."""
    for day_dir in out_dir.glob(f"{PARTITION_COLUMN}=*"):
        for path in day_dir.iterdir():
            match = _PART_NAME.fullmatch(path.name)
            if (match is not None and int(match[1]) > last_seq) or (
                path.name.startswith(".part-") and path.name.endswith(".tmp")
            ):
                path.unlink()
    for path in out_dir.glob(f".{MANIFEST_NAME}.tmp"):
        path.unlink()


def _stored_pages(after: int, batch_size: int) -> Iterator[list[dict[str, Any]]]:
    """The stored events with ``after < seq <= `` the highest seq at the start, as
    ``GroupEvent.to_json()`` dicts, in seq order, ``batch_size`` at a time."""
    from django.db.models import Max

    from webapp.models import GroupEvent

    upto = GroupEvent.objects.aggregate(top=Max("seq"))["top"]
    if upto is None:
        return
    while after < upto:
        rows = list(
            GroupEvent.objects.filter(seq__gt=after, seq__lte=upto).order_by("seq")[:batch_size]
        )
        if not rows:
            return
        yield [row.to_json() for row in rows]
        after = rows[-1].seq


def export_history(
    out_dir: str | os.PathLike[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Write the stored events that ``out_dir`` does not hold yet (see the module docstring).

    ``progress(events written so far, last seq)`` is called after every page. Raises
    HistoryDirError when the directory cannot take the export (a file, not writable, not an
    export's directory, a corrupt manifest or one of another schema version)."""
    if type(batch_size) is not int or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    directory = Path(out_dir)
    _check_dir(directory)
    manifest = _read_manifest(directory)
    try:
        if manifest is None:
            manifest = _Manifest()
            write_json_atomically(directory / MANIFEST_NAME, manifest.to_json())
        else:
            _remove_unfinished(directory, manifest.last_seq)
        events = files = 0
        for page in _stored_pages(manifest.last_seq, batch_size):
            written = write_day_files(table_of(page), directory)
            events += len(page)
            files += len(written)
            manifest = _Manifest(
                last_seq=page[-1]["seq"],
                events=manifest.events + len(page),
                files=manifest.files + len(written),
            )
            write_json_atomically(directory / MANIFEST_NAME, manifest.to_json())
            if progress is not None:
                progress(events, manifest.last_seq)
    except OSError as exc:
        where = exc.filename or directory
        raise HistoryDirError(f"cannot write {where}: {exc.strerror or exc}") from exc
    return ExportResult(
        events=events, files=files, last_seq=manifest.last_seq, total_events=manifest.events
    )
