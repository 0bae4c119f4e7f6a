"""Where engine events go after the runtime numbered them: the history table and the
Channels groups.

Both run off the engine's path. The engine calls the runtime's listener synchronously on the
event loop; the listener only appends to two in-memory queues:

* :class:`HistoryWriter` stores the events as ``GroupEvent`` rows in batches (every
  ``interval_s`` or as soon as ``batch_size`` are waiting) in the runtime's database thread
  (``database.in_database_thread``), so the loop never waits for the database. A batch is one
  ``executemany`` of the model's own INSERT (what ``bulk_create(ignore_conflicts=True)``
  sends, without building a model instance per row: under a stream of offset commits the ORM's
  per-row work took a fifth of the process's CPU, from the thread that shares the interpreter
  with the event loop).
  A failed or cancelled write is retried on the next batch; if the database stays down, the
  oldest events beyond ``max_pending`` are dropped (logged) rather than growing without bound.
  PostgreSQL refuses a NUL character in text (Kafka allows any string as a group id, a member
  id or a reason; SQLite stores it as it is): a batch it refuses for that is stored again with
  U+FFFD in place of each NUL, as are the ids asked of it, and a row it still refuses is
  dropped (logged) rather than holding up every event after it. The
  history is a record of what happened, not the coordinator's
  state (that is the record log), so at worst a crash loses the last ``interval_s`` of it.
* :class:`Publisher` sends the events to the group's Channels group and to the global one (the
  feed for other processes; the dashboard's feeds listen to the runtime itself), in order, from
  one task, batching whatever accumulated while the previous send was under way.
  A full queue (a channel layer that cannot keep up) drops events; the subscribers see the gap
  in ``prev_seq`` and take a new snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DataError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Max
from django.db.models.constants import OnConflict

from webapp.models import GroupEvent

from .database import in_a_context_of_its_own, in_database_thread
from .events import ALL_GROUPS_CHANNEL_GROUP, SequencedEvent, events_message, group_channel_group

logger = logging.getLogger(__name__)

__all__ = [
    "HistoryWriter",
    "Publisher",
    "events_after",
    "last_stored_seq_per_group",
    "stored_group_id",
]

_ENVELOPE = ("type", "group_id", "at_ms")


#: The columns a stored event fills, in the order of ``_row``'s values.
_COLUMNS = ("seq", "prev_seq", "group_id", "type", "at_ms", "payload")
_PAYLOAD = GroupEvent._meta.get_field("payload")


#: What PostgreSQL cannot hold in text or jsonb, and what stands for it there.
_NUL, _NUL_STAND_IN = "\x00", "\ufffd"


def _without_nul(value: Any) -> Any:
    """``value`` with ``_NUL_STAND_IN`` for each NUL of its strings, at any depth."""
    if isinstance(value, str):
        return value.replace(_NUL, _NUL_STAND_IN)
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(item) for item in value]
    return value


def stored_group_id(group_id: str) -> str:
    """The ``group_id`` column's value for a group (``_without_nul`` on PostgreSQL)."""
    if _NUL in group_id and connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        return group_id.replace(_NUL, _NUL_STAND_IN)
    return group_id


def _row(
    item: SequencedEvent, db: BaseDatabaseWrapper, *, nul_free: bool = False
) -> tuple[Any, ...]:
    data = item.event.to_json()
    payload = {key: value for key, value in data.items() if key not in _ENVELOPE}
    group_id = item.event.group_id
    if nul_free:
        payload, group_id = _without_nul(payload), _without_nul(group_id)
    return (
        item.seq,
        item.prev_seq,
        group_id,
        item.event.type,
        item.event.at_ms,
        _PAYLOAD.get_db_prep_value(payload, db),
    )


def _insert_sql(db: BaseDatabaseWrapper) -> str:
    """The INSERT of one stored event that skips a seq already stored, in the database's
    own dialect (as ``bulk_create(ignore_conflicts=True)`` writes it)."""
    ops = db.ops
    columns = [GroupEvent._meta.get_field(name) for name in _COLUMNS]
    return " ".join(
        part
        for part in (
            ops.insert_statement(on_conflict=OnConflict.IGNORE),
            ops.quote_name(GroupEvent._meta.db_table),
            "(" + ", ".join(ops.quote_name(field.column) for field in columns) + ")",
            "VALUES (" + ", ".join(["%s"] * len(columns)) + ")",
            ops.on_conflict_suffix_sql(columns, OnConflict.IGNORE, None, None),
        )
        if part
    )


def _insert(db: BaseDatabaseWrapper, rows: list[tuple[Any, ...]]) -> None:
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        cursor.executemany(_insert_sql(db), rows)


def _store(batch: list[SequencedEvent]) -> None:
    """Store ``batch`` (sync, in the database's thread: the rows are built there too)."""
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each lookup is a thread-local read
    try:
        _insert(db, [_row(item, db) for item in batch])
        return
    except DataError:
        if db.vendor != "postgresql":
            raise
    # A NUL character somewhere in the batch (the module docstring).
    rows = [_row(item, db, nul_free=True) for item in batch]
    try:
        _insert(db, rows)
        return
    except DataError:
        pass
    for item, row in zip(batch, rows, strict=True):
        try:
            _insert(db, [row])
        except DataError as refused:
            logger.error(
                "event history: event %d (%s of group %r) cannot be stored, dropped: %s",
                item.seq,
                item.event.type,
                item.event.group_id,
                refused,
            )


def last_stored_seq_per_group() -> dict[str, int]:
    """Each group's highest stored sequence number (sync: ORM)."""
    rows = GroupEvent.objects.values("group_id").annotate(last=Max("seq"))
    return {row["group_id"]: row["last"] for row in rows}


def events_after(group_id: str, after: int, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` stored events of ``group_id`` with ``seq > after``, in order (sync)."""
    rows = GroupEvent.objects.filter(group_id=stored_group_id(group_id), seq__gt=after)
    rows = rows.order_by("seq")[:limit]
    return [row.to_json() for row in rows]


class HistoryWriter:
    def __init__(
        self, *, interval_s: float = 0.1, batch_size: int = 500, max_pending: int = 100_000
    ) -> None:
        self.interval_s = interval_s
        self.batch_size = batch_size
        self.max_pending = max_pending
        self._pending: deque[SequencedEvent] = deque()
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="history-writer")

    def add(self, item: SequencedEvent) -> None:
        self._pending.append(item)
        if len(self._pending) > self.max_pending:
            self._pending.popleft()
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 10_000 == 0:
                logger.error(
                    "event history: the database is not keeping up; %d events dropped so far",
                    self.dropped,
                )
        if len(self._pending) >= self.batch_size:
            self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def flush(self) -> None:
        """Store every event added so far (one batch after another)."""
        async with self._lock:
            while self._pending:
                batch = [
                    self._pending.popleft() for _ in range(min(self.batch_size, len(self._pending)))
                ]
                try:
                    await in_database_thread(_store, batch)
                except BaseException:
                    # Failed, or cancelled (the runtime's stop cancels the writer's task): put
                    # the batch back in front, for the next flush. A cancelled call may never
                    # have run, queued behind a view in the database thread, or may still
                    # store the batch there; storing it again skips the seqs already stored.
                    self._pending.extendleft(reversed(batch))
                    raise

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval_s)
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                logger.exception(
                    "event history: storing %d events failed; retrying", len(self._pending)
                )
                await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            # Else a stop inside a Django view's sync_to_async call would lose the last events.
            await in_a_context_of_its_own(self.flush())
        except Exception:
            logger.exception("event history: %d events could not be stored", len(self._pending))


class Publisher:
    def __init__(
        self, channel_layer: Any, *, max_queue: int = 10_000, max_batch: int = 500
    ) -> None:
        self.channel_layer = channel_layer
        self.max_batch = max_batch
        self._queue: asyncio.Queue[SequencedEvent] = asyncio.Queue(maxsize=max_queue)
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self.dropped = 0

    def start(self) -> None:
        if self.channel_layer is not None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="publisher")

    def add(self, item: SequencedEvent) -> None:
        if self._task is None:
            return
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 10_000 == 0:
                logger.warning(
                    "event feed: the channel layer is not keeping up; %d events dropped",
                    self.dropped,
                )

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            # Whatever else is ready goes in the same messages: one group_send per Channels
            # group per batch, however many events the coordinator emitted meanwhile.
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._publish(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _publish(self, batch: list[SequencedEvent]) -> None:
        per_group: dict[str, list[dict[str, Any]]] = {}
        everything = []
        for item in batch:
            event = item.to_json()
            per_group.setdefault(item.event.group_id, []).append(event)
            everything.append(event)
        try:
            for group_id, events in per_group.items():
                await self.channel_layer.group_send(
                    group_channel_group(group_id), events_message(events)
                )
            await self.channel_layer.group_send(
                ALL_GROUPS_CHANNEL_GROUP, events_message(everything)
            )
        except Exception:
            if not self._failing:
                logger.exception("event feed: publishing to the channel layer failed")
            self._failing = True
        else:
            if self._failing:
                logger.info("event feed: publishing works again")
            self._failing = False

    async def drain(self) -> None:
        """Wait until every queued event was published."""
        if self._task is not None:
            await self._queue.join()

    async def stop(self, timeout_s: float = 2.0) -> None:
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout_s)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
