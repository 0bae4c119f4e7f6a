"""What real producers send: their record batches, kept in SQLite as they came.

Kafka keeps a producer's RecordBatch as it arrived, only setting its base offset (which the
batch's CRC does not cover, so the producer's checksum stays valid) and serves it back whole
to consumers, who skip the records before the offset they asked for. So does this store: one
row per batch, ``(topic_id, partition, base_offset, last_offset, appended_ms, data)``, written
and committed before the Produce is answered (WAL, ``synchronous=NORMAL``: durable across a crash
of the process, as a Kafka broker is without flushes). Batches older than the retention are
dropped as new ones arrive (``retention_ms``; Kafka's ``retention.ms``, 7 days by default).

A partition's offsets are shared with its simulated records (``webapp.transports.kafka
.records``): a produced batch takes the offsets from the partition's log-end offset on
(``CoordinatorRuntime.append_records``), and a Fetch of those offsets returns the stored batch.

Batches are kept by topic id, not by name, as Kafka keeps a partition's log by its topic id:
a topic deleted and created again under the same name has a new id, and so none of the old
topic's records. Files written before topic ids kept batches by topic name (the ``batches``
table): :meth:`RecordStore.adopt_named` moves them to the id of the topic of that name when
the listener starts, and drops those of names no topic has any more.

The store is used from the runtime's event loop only; each call is one short transaction.
"""

from __future__ import annotations

import sqlite3
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import crc32c  # Kafka's batches are checksummed with CRC-32C (Castagnoli)

__all__ = ["DEFAULT_RETENTION_MS", "BadBatch", "RecordStore", "StoredBatch", "split_batches"]

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000

# RecordBatch v2 (Kafka's DefaultRecordBatch): the fields this store reads.
_BASE_OFFSET = struct.Struct(">q")  # at 0
_LENGTH = struct.Struct(">i")  # at 8: the bytes after this field
_MAGIC_AT = 16
_CRC = struct.Struct(">I")  # at 17: crc32c of everything from attributes on
_ATTRIBUTES_AT = 21
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at 23
_HEADER_BYTES = 61
_TRANSACTIONAL = 0x10
_CONTROL = 0x20


class BadBatch(ValueError):
    """Bytes that are not RecordBatch v2 batches a producer may send; says what is wrong."""


@dataclass(frozen=True, slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    data: bytes


def split_batches(records: bytes) -> list[tuple[int, bytes]]:
    """The batches of a Produce's records: (record count, the batch's bytes) each, checked:
    magic 2, a length that fits, a CRC that matches, no transactional or control batch."""
    batches = []
    at = 0
    while at < len(records):
        if len(records) - at < _HEADER_BYTES:
            raise BadBatch(f"{len(records) - at} bytes left, too few for a batch header")
        (length,) = _LENGTH.unpack_from(records, at + 8)
        end = at + 12 + length
        if length < _HEADER_BYTES - 12 or end > len(records):
            raise BadBatch(f"a batch length of {length} does not fit the {len(records)} bytes")
        magic = records[at + _MAGIC_AT]
        if magic != 2:
            raise BadBatch(f"record batch magic {magic}: only v2 (magic 2) is accepted")
        (crc,) = _CRC.unpack_from(records, at + 17)
        if crc32c.crc32c(records[at + _ATTRIBUTES_AT : end]) != crc:
            raise BadBatch("a record batch's CRC does not match its bytes")
        (attributes,) = struct.unpack_from(">h", records, at + _ATTRIBUTES_AT)
        if attributes & (_TRANSACTIONAL | _CONTROL):
            raise BadBatch("transactional and control batches are not supported")
        (last_delta,) = _LAST_OFFSET_DELTA.unpack_from(records, at + 23)
        if last_delta < 0:
            raise BadBatch(f"a last offset delta of {last_delta}")
        batches.append((last_delta + 1, records[at:end]))
        at = end
    if not batches:
        raise BadBatch("no record batch")
    return batches


class RecordStore:
    """Produced batches in the SQLite file at ``path``."""

    def __init__(self, path: str | Path, *, retention_ms: int = DEFAULT_RETENTION_MS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.retention_ms = retention_ms
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS produced_batches (topic_id TEXT NOT NULL,"
            " partition INTEGER NOT NULL, base_offset INTEGER NOT NULL,"
            " last_offset INTEGER NOT NULL, appended_ms INTEGER NOT NULL, data BLOB NOT NULL,"
            " PRIMARY KEY (topic_id, partition, base_offset)) WITHOUT ROWID"
        )

    def close(self) -> None:
        self._db.close()

    def adopt_named(self, topic_ids: Mapping[str, uuid.UUID]) -> int:
        """Move the batches a file from before topic ids kept by topic name to the ids of
        ``topic_ids`` (name → id, every topic there is); drop those of other names. The
        number of batches moved (0 when there is nothing to adopt)."""
        legacy = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'batches'"
        ).fetchone()
        if legacy is None:
            return 0
        with self._db:
            self._db.execute("BEGIN")
            moved = 0
            for name, topic_id in topic_ids.items():
                moved += self._db.execute(
                    "INSERT INTO produced_batches SELECT ?, partition, base_offset, last_offset,"
                    " appended_ms, data FROM batches WHERE topic = ?",
                    (topic_id.hex, name),
                ).rowcount
            self._db.execute("DROP TABLE batches")
        return moved

    def append(
        self,
        topic_id: uuid.UUID,
        partition: int,
        base_offset: int,
        batches: list[tuple[int, bytes]],
        now_ms: int,
    ) -> None:
        """Keep ``batches`` (``split_batches``) from ``base_offset`` on, committed when this
        returns; drop the partition's batches past the retention."""
        rows = []
        offset = base_offset
        topic = topic_id.hex
        for count, data in batches:
            placed = _BASE_OFFSET.pack(offset) + data[8:]
            rows.append((topic, partition, offset, offset + count - 1, now_ms, placed))
            offset += count
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO produced_batches VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._db.execute(
                "DELETE FROM produced_batches"
                " WHERE topic_id = ? AND partition = ? AND appended_ms < ?",
                (topic, partition, now_ms - self.retention_ms),
            )

    def read(
        self, topic_id: uuid.UUID, partition: int, offset: int, max_bytes: int
    ) -> list[StoredBatch]:
        """The stored batches from the one holding ``offset`` on, consecutive, up to about
        ``max_bytes`` (at least one); empty when no stored batch holds ``offset``."""
        found: list[StoredBatch] = []
        size = 0
        expected = offset
        for base, last, data in self._db.execute(
            "SELECT base_offset, last_offset, data FROM produced_batches"
            " WHERE topic_id = ? AND partition = ? AND last_offset >= ?"
            " ORDER BY base_offset LIMIT 100",
            (topic_id.hex, partition, offset),
        ):
            if base > expected or (found and size + len(data) > max_bytes):
                break
            found.append(StoredBatch(base, last, data))
            size += len(data)
            expected = last + 1
        return found

    def next_stored(self, topic_id: uuid.UUID, partition: int, offset: int) -> int | None:
        """The base offset of the first stored batch after ``offset``, if any."""
        row = self._db.execute(
            "SELECT MIN(base_offset) FROM produced_batches WHERE topic_id = ? AND partition = ?"
            " AND base_offset > ?",
            (topic_id.hex, partition, offset),
        ).fetchone()
        return None if row[0] is None else int(row[0])
