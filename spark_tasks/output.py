"""Writing files so that a reader never sees half of one.

A JSON file is written beside its final name and renamed over it (``os.replace`` is atomic on
one filesystem). A report directory is built under ``OUT.tmp`` and swapped in with two renames:
the old ``OUT`` moves aside to ``OUT.old``, ``OUT.tmp`` becomes ``OUT``, ``OUT.old`` is removed.
Between the two renames ``OUT`` is briefly absent, never partial, so a reader that finds
``OUT/summary.json`` finds the whole report it belongs to. Local filesystems only (the executors
must share it, which holds for ``local[*]`` and a standalone cluster on one machine).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["discard_directory", "replace_directory", "staging_directory", "write_json_atomically"]


def write_json_atomically(path: str | Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file in the same folder, flushed
    to disk before the rename: a reader (or a crash) sees the old file or the new one whole."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as sink:
        sink.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(temporary, target)


def staging_directory(target: str | Path) -> Path:
    """``OUT.tmp`` for ``OUT``, emptied of whatever an interrupted run left there."""
    staging = Path(f"{Path(target)}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    return staging


def discard_directory(staging: str | Path) -> None:
    """Remove a staging directory a failed run leaves behind."""
    shutil.rmtree(staging, ignore_errors=True)


def replace_directory(staging: str | Path, target: str | Path) -> None:
    """Make ``staging`` the new ``target`` (the old one, if any, is removed)."""
    target = Path(target)
    previous = Path(f"{target}.old")
    shutil.rmtree(previous, ignore_errors=True)
    if target.exists():
        os.rename(target, previous)
    os.rename(staging, target)
    shutil.rmtree(previous, ignore_errors=True)
