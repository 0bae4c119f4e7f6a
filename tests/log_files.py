"""Reading a record log's SQLite database file by itself, without its write-ahead log: what a
checkpoint has copied there (tests/engine/test_log.py,
tests/webapp/runtime/test_coordinator_runtime.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def records_in_database_file(db_path: Path, scratch: Path) -> list[tuple[bytes, bytes | None]]:
    """The records ``db_path`` holds without its WAL, in append order; a copy of the file
    alone is read, under the directory ``scratch``."""
    copy = scratch / "database-file-only.sqlite3"
    copy.write_bytes(db_path.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'records'").fetchall():
            return []
        return conn.execute('SELECT key, value FROM records ORDER BY "offset"').fetchall()
    finally:
        conn.close()
