"""The durable record log: where the coordinator's records go before any reply is released.

The engine produces ``(key, value)`` records (``records``; a ``None`` value is a tombstone);
the runtime appends them to a :class:`RecordLog` and only then releases the replies that
depend on them, as Kafka's coordinator waits for the append to ``__consumer_offsets`` before
answering. At start-up the log is read back from the beginning and replayed.

Two implementations:

* :class:`MemoryLog` keeps the records in a list: for tests and simulations.
* :class:`SqliteLog` keeps them in one SQLite table: the embedded, durable default.

Both offer ``compact()``, which does for this log what Kafka's log cleaner does for the
compacted ``__consumer_offsets`` topic (see :func:`compacted`), and ``batch()``, a group
commit: the appends made inside it are one transaction, durable when it exits. The engine
never calls ``batch()`` (to the engine an append is durable when it returns); its host does,
around a run of engine calls whose replies it holds back until the batch has committed.

This module does I/O (it is the engine's one adapter to storage), but it never reads a clock
and starts no threads; the engine only ever sees the :class:`RecordLog` protocol.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Final, Protocol, Self

__all__ = ["LogAppendError", "MemoryLog", "RecordLog", "SqliteLog", "compacted"]

Entry = tuple[bytes, bytes | None]


class RecordLog(Protocol):
    """An append-only sequence of ``(key, value)`` records."""

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append ``entries`` in order, all or none; they are durable when this returns.

        Raises TypeError for an entry that is not a ``(bytes, bytes | None)`` pair (nothing
        is appended), LogAppendError when the storage fails (nothing is appended).
        """
        ...

    def read(self) -> Iterable[tuple[bytes, bytes | None]]:
        """Every record, in append order."""
        ...


class LogAppendError(Exception):
    """The log could not append; nothing of the failed batch was stored.

    The underlying error (``sqlite3.Error``, ``OSError``, ...) is the ``__cause__``.
    """


def _checked(entries: Sequence[tuple[bytes, bytes | None]]) -> list[Entry]:
    """The entries as a list, after checking each is a ``(bytes, bytes | None)`` pair."""
    kind = type(entries)
    # A list or tuple (what the engine passes) skips the ABC check, the dearest part of this.
    if (
        kind is not list
        and kind is not tuple
        and (isinstance(entries, bytes | str) or not isinstance(entries, Iterable))
    ):
        raise TypeError(f"entries must be a sequence of (key, value) tuples, got {kind.__name__}")
    batch = list(entries)
    for index, entry in enumerate(batch):
        if type(entry) is not tuple or len(entry) != 2:
            raise TypeError(
                f"entries[{index}] must be a (key, value) tuple, got {type(entry).__name__}"
                + (f" of length {len(entry)}" if isinstance(entry, tuple) else "")
            )
        key, value = entry
        if type(key) is not bytes:
            raise TypeError(f"entries[{index}]: key must be bytes, got {type(key).__name__}")
        if value is not None and type(value) is not bytes:
            raise TypeError(
                f"entries[{index}]: value must be bytes or None (tombstone), "
                f"got {type(value).__name__}"
            )
    return batch


def compacted(entries: Iterable[tuple[bytes, bytes | None]]) -> list[Entry]:
    """The entries that survive log compaction, in their original order.

    Like Kafka's log cleaner, only the latest entry of each key is kept. A tombstone (value
    None) exists to delete what came before it under its key; once those older entries are
    gone it has nothing left to delete, so it is dropped too. Kafka keeps tombstones for
    ``delete.retention.ms`` longer so that a consumer part-way through the log still sees the
    delete; this log's one reader (the coordinator's replay) always reads from the beginning,
    so a tombstone's job is done in the same pass that removes the entries it deletes.
    Replaying the compacted log yields the same state as replaying the whole log.
    """
    entries = list(entries)
    latest: dict[bytes, int] = {}
    for position, (key, _) in enumerate(entries):
        latest[key] = position
    return [
        entry
        for position, entry in enumerate(entries)
        if entry[1] is not None and latest[entry[0]] == position
    ]


class MemoryLog:
    """A log in a list: ``entries`` holds every appended ``(key, value)`` pair, in order.

    Nothing survives the process; appends cannot fail except for TypeError on bad entries.
    """

    def __init__(self, entries: Iterable[tuple[bytes, bytes | None]] = ()) -> None:
        self.entries: list[Entry] = []
        #: The open batch's entries, not appended yet; None outside a batch.
        self._pending: list[Entry] | None = None
        self.append(list(entries))

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        batch = _checked(entries)
        if self._pending is not None:
            self._pending += batch
        else:
            self.entries += batch

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """A group commit, as :meth:`SqliteLog.batch`: the appends made inside reach
        ``entries`` together when the block ends normally, and never if it raises. Batches
        do not nest (RuntimeError)."""
        if self._pending is not None:
            raise RuntimeError("MemoryLog.batch(): a batch is already open (batches do not nest)")
        pending: list[Entry] = []
        self._pending = pending
        try:
            yield
        finally:
            self._pending = None
        self.entries += pending

    def read(self) -> Iterator[tuple[bytes, bytes | None]]:
        # A snapshot, so that replaying while appending sees a consistent prefix.
        return iter(list(self.entries))

    def count(self) -> int:
        """How many entries the log holds."""
        return len(self.entries)

    def compact(self) -> int:
        """Compact as :func:`compacted` describes; returns how many entries were dropped."""
        before = len(self.entries)
        self.entries[:] = compacted(self.entries)
        return before - len(self.entries)

    def __repr__(self) -> str:
        return f"MemoryLog({len(self.entries)} entries)"


_SYNCHRONOUS_MODES: Final = ("NORMAL", "FULL")
_READ_PAGE: Final = 4096
_INSERT: Final = "INSERT INTO records (key, value) VALUES (?, ?)"


class SqliteLog:
    """A log in one SQLite table, ``records("offset" INTEGER PRIMARY KEY, key BLOB NOT NULL,
    value BLOB NULL)``, in WAL journal mode.

    Each ``append`` is one transaction: all of its entries are stored or none is, except
    inside :meth:`batch`, where the appends share one transaction (a group commit).

    **What is durable when append returns** depends on ``synchronous``:

    * ``"NORMAL"`` (default): the transaction is committed to the write-ahead log, which
      SQLite hands to the operating system but does not fsync on every commit. A committed
      append survives the process dying in any way (an exception, ``SIGKILL``, an OOM kill),
      because the OS still has the data. On an OS crash or power loss the last transactions
      before the failure may be lost (never partially: the database stays consistent and holds
      a prefix of the appends).
    * ``"FULL"``: the write-ahead log is also fsynced on every commit, so a committed append
      survives power loss too, at the price of one fsync per append.

    **Checkpoints** copy the write-ahead log into the database file (and fsync both): 17-25 ms
    each under bench/dashboard.py. By default SQLite runs one inside whichever append pushes
    the log past 1,000 pages, and that append's caller waits for it (an append otherwise
    takes ~0.1 ms). With ``autocheckpoint=False`` appends never checkpoint; the owner calls
    :meth:`checkpoint` regularly instead, from a worker thread if it likes (it uses a
    connection of its own and does not hold up appends). Without those calls the write-ahead
    log grows without bound.

    The ``offset`` column orders the entries: each append gets offsets above every stored
    entry. They are not identities: once :meth:`compact` has removed the newest entries, later
    appends may reuse their offsets (AUTOINCREMENT would prevent that but costs about a third
    of the append rate, and nothing reads offsets). One process owns a log file and calls it from
    one thread at a time (the runtime is its only caller); the connection is opened with
    ``check_same_thread=False`` so that the owner may hand calls to a worker thread.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        autocheckpoint: bool = True,
    ) -> None:
        mode = synchronous.upper() if isinstance(synchronous, str) else synchronous
        if mode not in _SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.synchronous: str = mode
        #: The open batch's entries, not written yet; None outside a batch.
        self._pending: list[Entry] | None = None
        # A log under a fresh directory (var/ on a new machine) just works.
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        # isolation_level=None: no implicit transactions; append manages its own.
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            (journal,) = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if journal.lower() != "wal":
                raise ValueError(
                    f"{self.path}: SQLite would not use WAL journal mode (got {journal!r}); "
                    "use a file path, or MemoryLog for a log that need not survive"
                )
            self._conn.execute(f"PRAGMA synchronous={mode}")
            if not autocheckpoint:
                self._conn.execute("PRAGMA wal_autocheckpoint=0")
            self._conn.execute(
                'CREATE TABLE IF NOT EXISTS records ("offset" INTEGER PRIMARY KEY,'
                " key BLOB NOT NULL, value BLOB NULL)"
            )
        except BaseException:
            self._conn.close()
            raise

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append ``entries`` in one transaction; durable (as the class says) when it returns.

        Raises TypeError for a malformed entry, LogAppendError (with the cause) when SQLite
        fails; in both cases nothing of the batch is stored.
        """
        batch = _checked(entries)
        if not batch:
            return
        if self._pending is not None:
            self._pending += batch
            return
        self._write(batch, "append")

    def _write(self, batch: list[Entry], what: str) -> None:
        """Store ``batch`` in one transaction, or nothing of it (LogAppendError)."""
        conn = self._conn
        try:
            if len(batch) == 1:
                # Outside an explicit transaction a single statement is its own transaction.
                conn.execute(_INSERT, batch[0])
            else:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(_INSERT, batch)
                conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            self._rollback()
            raise LogAppendError(
                f"{self.path}: {what} of {len(batch)} entries failed: {exc}"
            ) from exc

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """A group commit: the appends made inside the block are written together, in one
        transaction, when the block ends. Each such append only checks and keeps its
        entries, and returns before anything is durable: the block's owner must hold back
        whatever depends on them until this exits.

        * The block ends normally: the batch is written and committed, and is then durable as
          the class says of an append. If SQLite fails, nothing of the batch is stored and
          LogAppendError is raised here.
        * The block raises: nothing of the batch is stored, the exception goes on.

        A batch with no append costs nothing. Batches do not nest (RuntimeError), and
        :meth:`drop` is refused inside one. Until the batch is committed its entries are
        nowhere in the file: ``read`` and ``count`` do not see them.
        """
        if self._pending is not None:
            raise RuntimeError(f"{self!r}.batch(): a batch is already open (batches do not nest)")
        pending: list[Entry] = []
        self._pending = pending
        try:
            yield
        finally:
            self._pending = None
        if pending:
            self._write(pending, "group commit")

    def _rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            # The connection is broken or closed; SQLite rolls the transaction back itself.
            pass

    def read(self) -> Iterator[tuple[bytes, bytes | None]]:
        """Every record in append order (by offset), read page by page."""
        after = -1
        while True:
            rows = self._conn.execute(
                'SELECT "offset", key, value FROM records WHERE "offset" > ?'
                ' ORDER BY "offset" LIMIT ?',
                (after, _READ_PAGE),
            ).fetchall()
            for _, key, value in rows:
                yield key, value
            if len(rows) < _READ_PAGE:
                return
            after = rows[-1][0]

    def compact(self) -> int:
        """Compact as :func:`compacted` describes, in one transaction; returns how many
        entries were dropped. Raises LogAppendError if SQLite fails (nothing is dropped).

        The file does not shrink: SQLite reuses the freed pages for later appends. An owner
        that must not stop for the whole of it (the runtime, whose appends wait meanwhile)
        calls :meth:`compaction_plan` from a worker thread and :meth:`drop` in slices.
        """
        return self.drop(self.compaction_plan())

    def count(self) -> int:
        """How many entries the log holds."""
        try:
            (n,) = self._conn.execute("SELECT COUNT(*) FROM records").fetchone()
        except sqlite3.Error as exc:
            raise LogAppendError(f"{self.path}: counting the records failed: {exc}") from exc
        return int(n)

    def compaction_plan(self) -> list[int]:
        """The offsets of the entries compaction drops, ascending: every entry that a later
        entry of its key supersedes, and every tombstone that is the latest of its key.

        Read-only, on a connection of its own, so callable from any thread while the owner
        appends (WAL readers and the writer do not wait for each other); it sees the log as
        it was when it started. The plan stays right however much is appended afterwards:
        appends only add later entries, which can supersede more but never bring back what
        the plan drops. Raises LogAppendError when SQLite fails.
        """
        conn = self._side_connection("ro", "planning compaction")
        try:
            rows = conn.execute(
                'WITH latest AS (SELECT key, MAX("offset") AS last FROM records GROUP BY key)'
                ' SELECT r."offset" FROM records AS r JOIN latest AS l ON r.key = l.key'
                ' WHERE r."offset" < l.last OR r.value IS NULL ORDER BY r."offset"'
            ).fetchall()
        except sqlite3.Error as exc:
            raise LogAppendError(f"{self.path}: planning compaction failed: {exc}") from exc
        finally:
            conn.close()
        return [offset for (offset,) in rows]

    def drop(self, offsets: Sequence[int]) -> int:
        """Delete the entries at ``offsets`` (a slice of a :meth:`compaction_plan`, whose
        order it keeps) in one transaction; returns how many were deleted. Raises
        LogAppendError if SQLite fails (nothing is deleted).

        Any prefix of a plan may be dropped and the log still replays to the same state: an
        entry goes only after its key has a later entry, and a tombstone, the latest of its
        key, comes after every older entry it deletes, so it goes last.
        """
        if not offsets:
            return 0
        if self._pending is not None:
            raise RuntimeError(f"{self!r}.drop() inside a batch")
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            cursor = conn.executemany(
                'DELETE FROM records WHERE "offset" = ?', ((offset,) for offset in offsets)
            )
            conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            self._rollback()
            raise LogAppendError(f"{self.path}: compaction failed: {exc}") from exc
        return cursor.rowcount

    def checkpoint(self) -> bool:
        """Copy what the write-ahead log holds into the database file, without waiting for
        appends or readers (SQLite's PASSIVE mode). Callable from any thread, also while
        another appends. True when the whole log was copied; False when an append under way
        kept part of it back (the next checkpoint copies it).

        Raises LogAppendError (with the cause) when SQLite fails; nothing is lost then, the
        records stay in the write-ahead log.
        """
        conn = self._side_connection("rw", "checkpoint")
        try:
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            raise LogAppendError(f"{self.path}: checkpoint failed: {exc}") from exc
        finally:
            conn.close()
        return not busy and frames == copied

    def _side_connection(self, mode: str, doing: str) -> sqlite3.Connection:
        """A connection of its own to the log's file (any thread may use it). ``mode`` ro or
        rw: never c, so a log file deleted meanwhile is an error, not a new empty database."""
        try:
            uri = f"file:{urllib.parse.quote(self.path)}?mode={mode}"
            return sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            raise LogAppendError(f"{self.path}: {doing} failed: {exc}") from exc

    def close(self) -> None:
        """Close the database (idempotent). Appends after close raise LogAppendError."""
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteLog({self.path!r}, synchronous={self.synchronous!r})"
