"""The coordinator runtime: the one caller of the engine in a serving process.

Theory of operation
===================

The engine (``coordinator_engine``) is sans-IO: requests in, replies, records and events out,
time an argument. This module is the host that gives it I/O, a clock and a timer, and it is the
engine's only caller: the websocket consumers, the JSON API, in-process simulated consumers,
Celery's control messages (``webapp.runtime.control``) and (later) the Kafka listener all go
through one :class:`CoordinatorRuntime`.

* **One thread.** Every engine call happens on the event loop thread (the one Daphne serves
  on). The engine is synchronous and fast, so a call simply runs; nothing is locked. Code on
  other threads uses :meth:`CoordinatorRuntime.submit_threadsafe`.
* **Durable before any reply.** ``coord.handle`` appends the request's records to the
  :class:`~coordinator_engine.SqliteLog` inside the call and completes replies only after the
  append returned; the runtime then passes the reply on. A parked JoinGroup/SyncGroup is an
  ``asyncio.Future`` completed from ``Reply.add_done_callback``.
* **Group commit.** A transport that has several requests in hand at once (the Kafka
  listener: the requests a client pipelined, read in one chunk) handles them inside
  :meth:`CoordinatorRuntime.batch`: their records go into one SQLite transaction
  (``SqliteLog.batch``), committed when the block ends, and nothing they caused leaves before
  that COMMIT: the transport sends the answers after the block, the runtime holds the events
  and the answers to other callers' parked replies until then. The invariant that makes this
  safe: **no other task runs while the transaction is open**. Everything is on the loop
  thread, and the block never awaits (the listener handles the run in a plain function that
  drives each handler without letting it suspend; ``batch`` itself notices a block that
  awaited and raises). So nobody can read, or answer from, a state the log does not hold
  yet, and to every other caller the batch looks like one engine call. A COMMIT that fails
  stores nothing of the batch: an engine fault (below), and the transport closes the
  connections whose answers it held. Other transports (the websocket, simulated consumers)
  keep one transaction per request.
* **The clock** is wall-clock milliseconds read once at start and advanced by
  ``time.monotonic``: it never goes backwards while the process runs, and it continues across
  restarts, which matters because a replay re-arms every member's session from "now".
* **One timer.** After every call the runtime arms a single ``loop.call_later`` at
  ``coord.next_deadline_ms()`` (re-arming only when that deadline moved); when it fires it calls
  ``coord.advance(now)``.
* **Events** get a sequence number (continuing the highest stored one) and go to in-process
  listeners (:meth:`CoordinatorRuntime.add_listener`; the dashboard's feeds are), to the
  history table and to the Channels groups (``webapp.runtime.history``,
  ``webapp.runtime.events``), never
  blocking the loop.
* **Checkpoints off the loop.** The log's appends never checkpoint SQLite's write-ahead log
  (one that did took the loop 15-25 ms); a task copies it into the database file every
  ``checkpoint_interval_s`` from a worker thread (``SqliteLog.checkpoint``), and at stop.
* **Fair turns.** Transports call ``await runtime.turns.wait()`` before each request and each
  reply (``webapp.runtime.turns``): a burst, such as a whole group rejoining at once, is
  handled a few milliseconds per loop turn, and the loop's socket writes go out in between.
* **Start and restart.** Daphne runs no ASGI lifespan, so the runtime starts on first use
  (:func:`get_runtime`, from the first websocket connect or API request) or eagerly from
  ``manage.py serve``. Starting takes an exclusive lock on the log (one process owns a log),
  replays it in a worker thread (``/healthz`` says "starting" meanwhile) and loads the topics.
  A restart, including after ``kill -9``, replays the log: groups, generations, assignments and
  offsets come back, members' sessions restart from now.

* **An engine fault reloads the engine from its log.** The invariant is that the engine's
  state is what its log replays to. An exception out of an engine call (a bug: the engine
  answers every bad request with a Kafka error code) may have left the in-memory state half
  changed, a popped timer lost, replies and events queued for the next call. So the runtime
  stops serving at once (the failing call's caller gets the exception; later requests get
  RuntimeNotReady, which the transports answer as "unavailable", and clients retry), fails
  every parked reply with RuntimeNotReady, drops the engine,
  replays the log into a new one off the loop, and serves again: the state Kafka reloads when
  it moves a coordinator shard (``CoordinatorRuntime.scheduleUnloadOperation`` then
  ``scheduleLoadOperation``). Members' sessions restart from now, as after a restart; what the
  failed call appended stays, what it had not appended never happened. ``/healthz`` says
  ``recovering`` meanwhile and counts the faults (:attr:`CoordinatorRuntime.engine_faults`,
  :attr:`~CoordinatorRuntime.last_engine_fault`); the log has the traceback.

* **How each member is connected.** The engine knows a member's client id and host, as Kafka
  does, not the wire it came over. Transports say it when they submit (``via``: ``kafka``,
  ``websocket``, ``simulated``); a JoinGroup that makes a member remembers it for that member
  until a MemberRemoved or GroupRemoved event ends it (:meth:`CoordinatorRuntime.connection_of`).
  Members replayed from the log after a restart are unknown (None) until they rejoin.

* **Discovery: a handoff member lives as long as its connection** (seed 004's coordinator
  reads the live consumers from its service discovery, where each is an ephemeral node). A
  transport names the connection a request came by (``connection``: the websocket socket, the
  simulated consumer); every answered HandoffHeartbeat registers its member under that
  connection. When the connection ends (:meth:`CoordinatorRuntime.connection_closed`: a socket
  closed, a simulated consumer stopped, killed or crashed) each of its handoff members is made
  to leave at once (a HandoffHeartbeat with epoch −1 on its behalf; the MemberRemoved event
  says ``left``), so its partitions go to the others without waiting for its session timeout.
  While the engine's discovery is switched off (``GroupCoordinator.set_discovery_available``)
  nobody learns of departures: they are kept (:attr:`CoordinatorRuntime.departures_pending`)
  and applied after the next engine call that finds it back on (any call made through the
  runtime, the switch's own included, or a timer). Classic members are never removed this way:
  as in Kafka, their sessions time out. The registry lives in the runtime, not the engine: it
  survives an engine reload, and after a restart members are registered again by their next
  heartbeat.
  ``listeners`` maps each extra listener the host opened (``kafka``) to its address, for
  ``/healthz`` and the dashboard.

* **Profiling** (``REBALANCE_LAB_PROFILE_ENGINE=1``): :class:`EngineProfile` adds up the wall
  time spent inside ``coord.handle`` (the record append included, except inside a group
  commit, whose records are written when its batch ends) and ``coord.advance``, so a
  benchmark can tell the engine's share of a run from the host's (``/healthz`` reports it).

FindCoordinator and Metadata are answered here, not by the engine: this process is node 0 at
``ADVERTISED_HOST:ADVERTISED_PORT`` and the topics come from
:class:`~webapp.runtime.topics.TopicRegistry`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import get_channel_layer

from coordinator_engine import (
    CleanupResult,
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    GroupEvent,
    GroupView,
    HandoffGroupView,
    HandoffHeartbeatRequest,
    JoinGroupRequest,
    LogAppendError,
    Reply,
    SqliteLog,
    partition_for,
)
from coordinator_engine.cluster import (
    KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)
from coordinator_engine.events import GroupRemoved, MemberRemoved
from coordinator_engine.records import OffsetCommitValue

from .control import serve_control
from .events import SequencedEvent
from .history import HistoryWriter, Publisher, last_stored_seq_per_group
from .topics import TopicRegistry, TopicSpec, UnknownTopicError
from .turns import TurnBudget

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

__all__ = [
    "CoordinatorRuntime",
    "EngineProfile",
    "GroupCommitFailed",
    "ManualClock",
    "RuntimeNotReady",
    "WallClock",
    "current_runtime",
    "ensure_runtime_started",
    "get_runtime",
    "install_runtime",
]

Listener = Callable[[SequencedEvent], None]
T = TypeVar("T")

#: This process's node id in FindCoordinator answers.
NODE_ID = 0


class RuntimeNotReady(RuntimeError):
    """The runtime is not serving (not started yet, stopped, or called from another thread)."""


class GroupCommitFailed(RuntimeNotReady):
    """The COMMIT of a :meth:`CoordinatorRuntime.batch` failed: nothing the batch's engine
    calls wrote is stored, none of their answers may be sent, and the engine reloads."""


class _GroupCommit:
    """What an open :meth:`CoordinatorRuntime.batch` holds back until its COMMIT: the engine's
    events, and the answers to other callers' replies that completed inside the batch (each
    with how to fail it if the COMMIT fails)."""

    __slots__ = ("events", "released", "yielded")

    def __init__(self) -> None:
        self.events: list[GroupEvent] = []
        self.released: list[tuple[Callable[[], None], Callable[[str], None] | None]] = []
        #: Set by a callback scheduled at the batch's start: the loop ran it, so the block
        #: awaited something (a bug the batch reports when it ends).
        self.yielded = False

    def mark_yielded(self) -> None:
        self.yielded = True


class WallClock:
    """Epoch milliseconds: the wall clock read once, then advanced by ``time.monotonic``."""

    def __init__(self) -> None:
        self._base_ms = time.time_ns() // 1_000_000
        self._base_monotonic_ns = time.monotonic_ns()

    def __call__(self) -> int:
        return self._base_ms + (time.monotonic_ns() - self._base_monotonic_ns) // 1_000_000


class ManualClock:
    """A clock that moves only when told (tests, simulations): ``clock.advance(ms)`` then
    ``runtime.tick()`` fires whatever became due."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        self.now_ms += ms
        return self.now_ms


def _joins(request: Any) -> bool:
    """Whether ``request`` makes its sender a member (a JoinGroup, a handoff group's heartbeat
    with epoch 0): the transport it came by is remembered for the member."""
    kind = type(request)
    return kind is JoinGroupRequest or (
        kind is HandoffHeartbeatRequest and request.member_epoch == 0
    )


def _heartbeats(request: Any) -> bool:
    """Whether ``request`` is a handoff member's heartbeat that keeps it in its group (not a
    leave): its member is registered under the connection it came by (see "Discovery")."""
    return type(request) is HandoffHeartbeatRequest and request.member_epoch != -1


class EngineProfile:
    """Wall time spent inside the engine's calls, and how many (``REBALANCE_LAB_PROFILE_ENGINE``);
    and the garbage collector's pauses, which stop the event loop like a long call does.

    Two ``perf_counter`` reads per call; a runtime without a profile reads none.
    """

    __slots__ = (
        "_gc_started",
        "advance_calls",
        "advance_s",
        "gc_collections",
        "gc_max_pause_s",
        "gc_s",
        "handle_calls",
        "handle_s",
    )

    def __init__(self) -> None:
        self.handle_calls = 0
        self.handle_s = 0.0
        self.advance_calls = 0
        self.advance_s = 0.0
        self.gc_collections = 0
        self.gc_s = 0.0
        self.gc_max_pause_s = 0.0
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        pause = time.perf_counter() - self._gc_started
        self.gc_collections += 1
        self.gc_s += pause
        self.gc_max_pause_s = max(self.gc_max_pause_s, pause)

    def close(self) -> None:
        """Stop timing the collector."""
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._on_gc)

    def to_json(self) -> dict[str, Any]:
        return {
            "handle_calls": self.handle_calls,
            "handle_s": round(self.handle_s, 6),
            "advance_calls": self.advance_calls,
            "advance_s": round(self.advance_s, 6),
            "gc_collections": self.gc_collections,
            "gc_s": round(self.gc_s, 6),
            "gc_max_pause_ms": round(1000 * self.gc_max_pause_s, 3),
        }


class _LogLock:
    """An exclusive ``flock`` on ``<log>.lock``: one process owns a log. The kernel drops it
    when the process dies, however it dies."""

    def __init__(self, log_path: Path) -> None:
        self.path = Path(f"{log_path}.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        if fcntl is None:  # pragma: no cover
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise RuntimeError(
                f"the coordinator log {str(self.path)[:-5]} is in use by pid {holder} "
                f"(lock {self.path}): one process owns a log"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


def _load_database_state() -> tuple[list[TopicSpec], dict[str, int]]:
    from django.db import DatabaseError

    from webapp.models import Topic

    try:
        return [topic.to_spec() for topic in Topic.objects.all()], last_stored_seq_per_group()
    except DatabaseError as exc:
        raise RuntimeError(
            f"cannot read the topics and the event history from Django's database ({exc}); "
            "run `python manage.py migrate` (`manage.py serve` does it itself)"
        ) from exc


def _save_topic(spec: TopicSpec) -> None:
    from webapp.models import Topic

    fields = Topic.fields_of(spec)
    # One INSERT ... ON CONFLICT DO UPDATE, not update_or_create's SELECT then write in one
    # transaction: in WAL mode a transaction that has read cannot start writing once another
    # connection committed meanwhile (SQLite fails it at once, "database is locked", without
    # waiting), and the history writer commits many times a second under a stream of commits.
    Topic.objects.bulk_create(
        [Topic(name=spec.name, **fields)],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=list(fields),
    )


def _delete_topic(name: str) -> None:
    from webapp.models import Topic

    Topic.objects.filter(name=name).delete()


class CoordinatorRuntime:
    """Hosts one :class:`~coordinator_engine.GroupCoordinator` over a ``SqliteLog``.

    Everything except :meth:`submit_threadsafe` must be called on the event loop thread the
    runtime was started on.
    """

    def __init__(
        self,
        *,
        log_path: str | os.PathLike[str],
        config: CoordinatorConfig | None = None,
        clock: Callable[[], int] | None = None,
        advertised_host: str = "127.0.0.1",
        advertised_port: int = 8000,
        channel_layer_alias: str | None = DEFAULT_CHANNEL_LAYER,
        history_interval_s: float = 0.1,
        history_batch_size: int = 500,
        checkpoint_interval_s: float = 1.0,
        profile_engine: bool = False,
    ) -> None:
        self.log_path = Path(log_path)
        self.config = config if config is not None else CoordinatorConfig()
        self.clock: Callable[[], int] = clock if clock is not None else WallClock()
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        self._channel_layer_alias = channel_layer_alias
        #: Turns of the loop shared out to bursts of requests (``webapp.runtime.turns``).
        self.turns = TurnBudget()
        self.history = HistoryWriter(interval_s=history_interval_s, batch_size=history_batch_size)
        self.publisher: Publisher | None = None
        self.topics = TopicRegistry()
        self._coordinator: GroupCoordinator | None = None
        self._log: SqliteLog | None = None
        self.checkpoint_interval_s = checkpoint_interval_s
        self._checkpointer: asyncio.Task[None] | None = None
        #: Reads Celery's control requests (``webapp.runtime.control``) when there is a layer.
        self._control: asyncio.Task[None] | None = None
        self._checkpoints_end = asyncio.Event()
        self._lock = _LogLock(self.log_path)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._start_task: asyncio.Task[None] | None = None
        self._ready = False
        #: Started (the log open, the background tasks running), until stop() ends it all.
        self._started = False
        self._stopped = False
        self._listeners: list[Listener] = []
        self._seq = 0
        self._group_seq: dict[str, int] = {}
        self._last_now = 0
        self._timer: asyncio.TimerHandle | None = None
        self._armed_deadline: int | None = None
        #: Time spent in the engine, when asked for (``profile_engine``); None otherwise.
        self.engine_profile: EngineProfile | None = EngineProfile() if profile_engine else None
        #: Exceptions out of the engine since the start, each followed by a reload from the log.
        self.engine_faults = 0
        #: The latest: when (``at_ms``), in which call (``during``), the ``error``, and once
        #: serving again ``reloaded_in_ms``.
        self.last_engine_fault: dict[str, Any] | None = None
        self._reload_task: asyncio.Task[None] | None = None
        #: How to fail each parked reply (a JoinGroup or SyncGroup not answered yet) if the
        #: engine that holds it is dropped.
        self._parked: dict[object, Callable[[str], None]] = {}
        #: (group_id, member_id) → the transport the member joined through.
        self._connections: dict[tuple[str, str], str] = {}
        #: Discovery: (group_id, member_id) of a handoff member → the connection it heartbeats
        #: by; and the members whose connection ended, not yet made to leave.
        self._handoff_connections: dict[tuple[str, str], object] = {}
        self._departed: set[tuple[str, str]] = set()
        #: Extra listeners the host opened, by name (``kafka``): their addresses.
        self.listeners: dict[str, str] = {}
        #: Seed 004's two outage switches as last set (:meth:`set_handoff_switches`): host
        #: facts, not records, so told again to an engine reloaded after a fault.
        self._handoff_switches = {"partition_store": True, "discovery": True}
        #: The open group commit (:meth:`batch`), if any.
        self._batch: _GroupCommit | None = None

    @classmethod
    def from_settings(cls) -> CoordinatorRuntime:
        from django.conf import settings

        return cls(
            log_path=settings.REBALANCE_LAB_LOG_PATH,
            config=settings.COORDINATOR_CONFIG,
            advertised_host=settings.ADVERTISED_HOST,
            advertised_port=settings.ADVERTISED_PORT,
            profile_engine=settings.REBALANCE_LAB_PROFILE_ENGINE,
        )

    # ---------------------------------------------------------------- life cycle

    @property
    def ready(self) -> bool:
        """True while the runtime serves (started, not stopped)."""
        return self._ready

    @property
    def start_task(self) -> asyncio.Task[None] | None:
        return self._start_task

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    @property
    def reload_task(self) -> asyncio.Task[None] | None:
        """The reload after the latest engine fault (done once serving again)."""
        return self._reload_task

    @property
    def recovering(self) -> bool:
        """True from an engine fault until the engine is reloaded from the log."""
        return self._reload_task is not None and not self._reload_task.done()

    @property
    def coordinator(self) -> GroupCoordinator:
        if self._coordinator is None:
            raise RuntimeNotReady(self._unavailable_reason())
        return self._coordinator

    def _unavailable_reason(self) -> str:
        if self.recovering:
            return (
                "the coordinator is reloading its state from its log after an engine fault; "
                "retry in a moment"
            )
        if self._coordinator is None and not self._stopped:
            return "the coordinator runtime has not started"
        return "the coordinator runtime is not serving"

    def begin_start(self) -> asyncio.Task[None]:
        """Start on the running loop without waiting; the start task (created once)."""
        if self._stopped:
            raise RuntimeNotReady("the coordinator runtime was stopped")
        if self._start_task is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._start_task = self._loop.create_task(self._start(), name="runtime-start")
            # A failed start is reported by start() and /healthz, not as "never retrieved".
            self._start_task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._start_task

    async def start(self) -> None:
        """Start once (later calls wait for the same start; a failed start raises again)."""
        await asyncio.shield(self.begin_start())

    async def _start(self) -> None:
        started = time.perf_counter()
        self._lock.acquire()
        try:
            # Replaying a long log takes a while: off the loop, so /healthz can say "starting".
            self._log = await asyncio.to_thread(self._open_log)
            self._coordinator = await asyncio.to_thread(self._load_engine, self._now())
            specs, self._group_seq = await sync_to_async(_load_database_state)()
            self._seq = max(self._group_seq.values(), default=0)
        except BaseException as exc:
            if self._log is not None:
                self._log.close()
            self._lock.release()
            if isinstance(exc, Exception):
                # Said once here; whoever awaits the start (every connection) gets the error.
                logger.error("the coordinator runtime could not start: %s", exc)
            raise
        self.topics = TopicRegistry(specs)
        layer = (
            get_channel_layer(self._channel_layer_alias)
            if self._channel_layer_alias is not None
            else None
        )
        self.publisher = Publisher(layer)
        self.publisher.start()
        if layer is not None:
            self._control = asyncio.get_running_loop().create_task(
                serve_control(self, layer), name="control"
            )
        self.history.start()
        self._checkpointer = asyncio.get_running_loop().create_task(
            self._checkpoint_until_stopped(), name="checkpoint"
        )
        self._coordinator.add_listener(self._on_event)
        self._started = self._ready = True
        self._report_partitions()
        self._rearm()
        logger.info(
            "coordinator runtime ready: %d groups replayed from %s in %.0f ms",
            len(self._coordinator.group_ids()),
            self.log_path,
            (time.perf_counter() - started) * 1000,
        )

    def _open_log(self) -> SqliteLog:
        return SqliteLog(self.log_path, autocheckpoint=False)  # see _checkpoint_until_stopped

    def _load_engine(self, now_ms: int) -> GroupCoordinator:
        """A new engine over the log, its state replayed from it (worker thread)."""
        assert self._log is not None
        return GroupCoordinator(self.config, self._log, now_ms=now_ms)

    async def stop(self) -> None:
        """Stop serving: no more engine calls, events flushed to the history, log closed and
        its lock released. Parked replies are left unanswered (their clients will retry)."""
        if self._stopped:
            return
        self._stopped = True
        if self.engine_profile is not None:
            self.engine_profile.close()
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
            with contextlib.suppress(BaseException):
                await self._start_task
        if self._reload_task is not None and not self._reload_task.done():
            self._reload_task.cancel()
            with contextlib.suppress(BaseException):
                await self._reload_task
        self._ready = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._started:
            return
        if self._coordinator is not None:
            self._coordinator.remove_listener(self._on_event)
        if self._control is not None:
            self._control.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._control
        if self._checkpointer is not None:
            # Not cancelled: a checkpoint under way in its thread finishes before the log closes.
            self._checkpoints_end.set()
            await self._checkpointer
        await self.history.stop()
        if self.publisher is not None:
            await self.publisher.stop()
        if self._log is not None:
            self._log.close()
        self._lock.release()
        logger.info("coordinator runtime stopped (%s)", self.log_path)

    async def _checkpoint_until_stopped(self) -> None:
        """Copy the log's write-ahead log into its database file every
        ``checkpoint_interval_s``, in a worker thread (the copy and its fsyncs took the loop
        15-25 ms when an append did it), and once more when :meth:`stop` ends it."""
        log = self._log
        assert log is not None
        while not self._checkpoints_end.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._checkpoints_end.wait(), self.checkpoint_interval_s)
            try:
                await asyncio.to_thread(log.checkpoint)
            except LogAppendError as exc:
                # The records stay in the write-ahead log; the next checkpoint tries again.
                logger.warning("record log checkpoint failed: %s", exc)
            except Exception:
                logger.exception("record log checkpoint failed")

    # ---------------------------------------------------------------- time

    def now_ms(self) -> int:
        """The runtime's clock (never decreasing)."""
        return self._now()

    def _now(self) -> int:
        now = self.clock()
        if now < self._last_now:
            now = self._last_now
        self._last_now = now
        return now

    def _rearm(self) -> None:
        """Arm the one timer at the engine's next deadline, unless it is armed there already."""
        if not self._ready:
            return
        deadline = self.coordinator.next_deadline_ms()
        if deadline == self._armed_deadline and (deadline is None or self._timer is not None):
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed_deadline = deadline
        if deadline is not None:
            assert self._loop is not None
            delay_s = max(0, deadline - self._now()) / 1000
            self._timer = self._loop.call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._armed_deadline = None
        self.tick()

    def tick(self) -> None:
        """Fire every engine timer due now (the timer does this itself; tests and simulations
        with a :class:`ManualClock` call it after moving the clock)."""
        self._check_serving()
        profile = self.engine_profile
        started = time.perf_counter() if profile is not None else 0.0
        try:
            self.coordinator.advance(self._now())
        except Exception as exc:
            self._engine_failed("advance", exc)
            return
        finally:
            if profile is not None:
                profile.advance_calls += 1
                profile.advance_s += time.perf_counter() - started
        self._rearm()
        self._apply_departures()

    # ---------------------------------------------------------------- requests

    def _check_serving(self) -> None:
        if not self._ready:
            raise RuntimeNotReady(self._unavailable_reason())
        if threading.get_ident() != self._loop_thread:
            raise RuntimeNotReady(
                "the coordinator runtime must be called on its event loop thread; "
                "use submit_threadsafe() from other threads"
            )

    def _handle(self, request: Any) -> Reply[Any]:
        self._check_serving()
        kind = type(request)
        if kind is FindCoordinatorRequest:
            return Reply.of(self.find_coordinator(request))
        if kind is MetadataRequest:
            return Reply.of(self.metadata(request))
        profile = self.engine_profile
        started = time.perf_counter() if profile is not None else 0.0
        try:
            return self.coordinator.handle(request, self._now())
        except Exception as exc:
            self._engine_failed(f"handle({kind.__name__})", exc)
            raise
        finally:
            if profile is not None:
                profile.handle_calls += 1
                profile.handle_s += time.perf_counter() - started
            self._rearm()

    def _park(self, reply: Reply[Any], fail: Callable[[str], None]) -> None:
        """Remember how to fail ``reply``'s waiter until the reply completes."""
        key = object()
        self._parked[key] = fail
        reply.add_done_callback(lambda _: self._parked.pop(key, None))

    # ---------------------------------------------------------------- engine faults

    def _engine_failed(self, during: str, exc: Exception) -> None:
        """An exception came out of the engine: stop serving, fail the parked replies, and
        reload the engine from the log (the module docstring, "An engine fault")."""
        if not self._ready:
            return
        self.engine_faults += 1
        self.last_engine_fault = {"at_ms": self._now(), "during": during, "error": repr(exc)}
        logger.critical(
            "coordinator engine failed in %s; it stops serving and reloads its state from %s, "
            "so that its state is again what the log replays to",
            during,
            self.log_path,
            exc_info=exc,
        )
        self._ready = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed_deadline = None
        if self._coordinator is not None:
            self._coordinator.remove_listener(self._on_event)
            self._coordinator = None
        assert self._loop is not None
        self._reload_task = self._loop.create_task(self._reload(), name="runtime-reload")
        reason = self._unavailable_reason()
        parked, self._parked = self._parked, {}
        for fail in parked.values():
            try:
                fail(reason)
            except Exception:
                logger.exception("failing a parked reply failed")

    async def _reload(self) -> None:
        started = time.perf_counter()
        backoff_s = 1.0
        while True:
            try:
                coordinator = await asyncio.to_thread(self._load_engine, self._now())
                break
            except Exception as exc:
                logger.error(
                    "reloading the coordinator from %s failed (%s); trying again in %.0f s",
                    self.log_path,
                    exc,
                    backoff_s,
                )
                assert self.last_engine_fault is not None
                self.last_engine_fault["reload_error"] = repr(exc)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 30.0)
        self._coordinator = coordinator
        coordinator.add_listener(self._on_event)
        self._ready = True
        self._apply_handoff_switches()
        self._report_partitions()
        elapsed_ms = round((time.perf_counter() - started) * 1000)
        assert self.last_engine_fault is not None
        self.last_engine_fault["reloaded_in_ms"] = elapsed_ms
        self._rearm()
        logger.warning(
            "coordinator reloaded from %s after an engine fault: %d groups in %d ms; serving",
            self.log_path,
            len(coordinator.group_ids()),
            elapsed_ms,
        )

    async def submit(
        self, request: Any, *, via: str | None = None, connection: object | None = None
    ) -> Any:
        """Handle one request and return its response (awaiting a parked JoinGroup/SyncGroup).

        ``request`` is an engine request (``coordinator_engine.requests``) or a
        FindCoordinatorRequest/MetadataRequest (``coordinator_engine.cluster``). The records
        behind the response are durable when it is returned. Cancelling the await changes
        nothing in the group (like a Kafka client that went away). ``via`` names the transport
        (see "How each member is connected"), ``connection`` the connection (see "Discovery").
        """
        reply = self._handle(request)
        if via is not None and _joins(request):
            reply.add_done_callback(self._remember_connection(request.group_id, via))
        if connection is not None and _heartbeats(request):
            reply.add_done_callback(self._register_handoff(request, connection))
        if reply.done:
            return reply.response
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()

        def answer(response: Any) -> None:
            if not future.done():
                future.set_result(response)

        def fail(reason: str) -> None:
            if not future.done():
                future.set_exception(RuntimeNotReady(reason))

        def done(response: Any) -> None:
            # Completed inside another caller's batch: answered once the batch committed.
            batch = self._batch
            if batch is None:
                answer(response)
            else:
                batch.released.append((lambda: answer(response), fail))

        reply.add_done_callback(done)
        self._park(reply, fail)
        return await future

    def submit_nowait(
        self,
        request: Any,
        callback: Callable[[Any], None],
        on_failure: Callable[[str], None] | None = None,
        *,
        via: str | None = None,
        connection: object | None = None,
    ) -> None:
        """Handle one request and call ``callback(response)`` when it is answered — maybe
        before this returns. For in-process clients (simulated consumers) that do not want a
        task per request. If the engine is dropped before a parked reply is answered (an
        engine fault), ``on_failure(reason)`` is called instead. An exception in either is
        logged, never raised into the engine."""
        reply = self._handle(request)
        if via is not None and _joins(request):
            reply.add_done_callback(self._remember_connection(request.group_id, via))
        if connection is not None and _heartbeats(request):
            reply.add_done_callback(self._register_handoff(request, connection))
        failed = None if on_failure is None else self._guarded(on_failure)
        answer = self._guarded(callback)

        def done(response: Any) -> None:
            batch = self._batch
            if batch is None:
                answer(response)
            else:
                batch.released.append((lambda: answer(response), failed))

        reply.add_done_callback(done)
        if failed is not None and not reply.done:
            self._park(reply, failed)

    def submit_threadsafe(self, request: Any) -> concurrent.futures.Future[Any]:
        """:meth:`submit` from any thread; a ``concurrent.futures.Future`` of the response."""
        if self._loop is None:
            raise RuntimeNotReady("the coordinator runtime has not started")
        return asyncio.run_coroutine_threadsafe(self.submit(request), self._loop)

    # ---------------------------------------------------------------- group commit

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """A group commit (the module docstring, "Group commit"): the records of every engine
        call made inside the block are appended in one transaction of the log, committed when
        the block ends; what they answer is released only after that COMMIT.

        The block must be synchronous: it must not await (no other task may run while the
        transaction is open, or it could answer from state not yet durable). Enter it, make
        the calls (``submit`` of a request answered at once returns without suspending),
        leave it, and only then send the answers ``submit`` returned inside.

        * While it is open, the engine's events, and the answers to other callers whose
          parked replies completed (a ``submit`` awaited elsewhere, a ``submit_nowait``
          callback), are held; after the COMMIT they are released, events first.
        * The COMMIT fails (or an append inside it failed): nothing of the batch is stored.
          That is an engine fault (the engine's memory holds what the log does not): the
          engine is dropped and reloaded from the log, the held answers fail with
          RuntimeNotReady, the held events are dropped, and GroupCommitFailed (a
          RuntimeNotReady) is raised here, so the owner sends none of its answers either.
        * The block raises: the transaction is rolled back, and that too is an engine fault.
        * It does not nest (RuntimeError), and it refuses a block that awaited: it commits
          (whatever others were told meanwhile stays true), releases, then raises
          RuntimeError.

        On a runtime that is not serving it holds nothing and commits nothing (the engine
        calls inside raise RuntimeNotReady).
        """
        if self._batch is not None:
            raise RuntimeError("runtime.batch(): a batch is already open (batches do not nest)")
        held = self._batch = _GroupCommit()
        log = self._log if self._ready else None
        sentinel = self._loop.call_soon(held.mark_yielded) if self._loop is not None else None
        try:
            if log is None:
                yield
            else:
                try:
                    with log.batch():
                        yield
                except LogAppendError as exc:
                    self._batch = None
                    self._group_commit_failed(held, "group commit", exc)
                    raise GroupCommitFailed(
                        f"{self._unavailable_reason()} (the group commit failed: {exc})"
                    ) from exc
        except BaseException as exc:
            if self._batch is held and isinstance(exc, Exception):
                self._batch = None
                self._group_commit_failed(held, "a batch that raised", exc)
            raise
        finally:
            self._batch = None
            if sentinel is not None:
                sentinel.cancel()
        # Events first: an answer's callback may call the engine again (a simulated consumer
        # sends its next request), and its events must come after the batch's in the sequence.
        for event in held.events:
            self._publish(event)
        for release, _ in held.released:
            release()
        if held.yielded:
            raise RuntimeError(
                "runtime.batch(): the block awaited while the batch was open; it was "
                "committed, but others may have been answered from records not yet durable"
            )

    def _group_commit_failed(self, held: _GroupCommit, during: str, exc: Exception) -> None:
        """Nothing of ``held``'s batch is stored: an engine fault, and none of its answers."""
        self._engine_failed(during, exc)
        reason = self._unavailable_reason()
        for _, fail in held.released:
            if fail is not None:
                fail(reason)
        held.released.clear()
        held.events.clear()

    def _remember_connection(self, group_id: str, via: str) -> Callable[[Any], None]:
        def remember(response: Any) -> None:
            if response.error_code == 0 and response.member_id:
                self._connections[(group_id, response.member_id)] = via

        return remember

    def connection_of(self, group_id: str, member_id: str) -> str | None:
        """How the member joined (``kafka``, ``websocket``, ``simulated``), if known."""
        return self._connections.get((group_id, member_id))

    # ---------------------------------------------------------------- discovery

    def _register_handoff(self, request: Any, connection: object) -> Callable[[Any], None]:
        key = (request.group_id, request.member_id)

        def register(response: Any) -> None:
            if response.error_code == 0:
                self._handoff_connections[key] = connection
                self._departed.discard(key)

        return register

    def connection_closed(self, connection: object) -> None:
        """A connection ended (see "Discovery"): its handoff members leave now, or once the
        discovery is back on. Safe to call at any time, for any connection."""
        gone = [key for key, c in self._handoff_connections.items() if c is connection]
        for key in gone:
            del self._handoff_connections[key]
            self._departed.add(key)
        self._apply_departures()

    @property
    def departures_pending(self) -> list[tuple[str, str]]:
        """(group_id, member_id) of the handoff members whose connection ended and who were
        not made to leave yet (the discovery is off, or the engine not serving)."""
        return sorted(self._departed)

    def _apply_departures(self) -> None:
        if not self._departed or not self._ready or not self.coordinator.discovery_available:
            return
        for group_id, member_id in sorted(self._departed):
            leave = HandoffHeartbeatRequest(
                group_id=group_id, member_id=member_id, member_epoch=-1, session_timeout_ms=0
            )
            try:
                self._handle(leave)  # UNKNOWN_MEMBER_ID if it is gone already: as good
            except Exception:
                return  # the engine failed (it reloads): the rest wait for the next call
            self._departed.discard((group_id, member_id))

    def _guarded(self, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        def call(argument: Any) -> None:
            try:
                callback(argument)
            except Exception:
                logger.exception("reply callback %r failed", callback)

        return call

    def find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        """This node coordinates every consumer group it owns (all of them unless
        ``owned_partitions`` says otherwise); it is no transaction coordinator."""
        if request.key_type != KEY_TYPE_GROUP:
            return FindCoordinatorResponse(error_code=Errors.INVALID_REQUEST)
        partition = partition_for(request.key, self.config.offsets_topic_num_partitions)
        owned = self.config.owned_partitions
        if owned is not None and partition not in owned:
            return FindCoordinatorResponse(
                error_code=Errors.COORDINATOR_NOT_AVAILABLE, coordinator_partition=partition
            )
        return FindCoordinatorResponse(
            error_code=Errors.NONE,
            node_id=NODE_ID,
            host=self.advertised_host,
            port=self.advertised_port,
            coordinator_partition=partition,
        )

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Partition counts from the topic registry; an unknown topic gets
        UNKNOWN_TOPIC_OR_PARTITION (topics are never auto-created)."""
        names = (
            [spec.name for spec in self.topics.all()]
            if request.topics is None
            else list(dict.fromkeys(request.topics))
        )
        topics = []
        for name in names:
            spec = self.topics.get(name)
            if spec is None:
                topics.append(
                    TopicMetadata(
                        name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, partitions=0
                    )
                )
            else:
                topics.append(
                    TopicMetadata(name=name, error_code=Errors.NONE, partitions=spec.partitions)
                )
        return MetadataResponse(topics=tuple(topics))

    @property
    def record_log(self) -> SqliteLog:
        """The record log, while serving (control's compaction drops from it; only the loop
        thread may write to it)."""
        self._check_serving()
        assert self._log is not None
        return self._log

    def cleanup(self) -> CleanupResult:
        """Kafka's periodic offset expiry and group cleanup, now (for Celery beat's control
        message or an admin action)."""
        return self._call_engine("cleanup", lambda engine, now: engine.cleanup(now))

    def trigger_rebalance(self, group_id: str) -> Errors:
        """Start a rebalance of a group with members (the dashboard's staff action;
        ``GroupCoordinator.trigger_rebalance``)."""
        return self._call_engine(
            "trigger_rebalance", lambda engine, now: engine.trigger_rebalance(group_id, now)
        )

    def _report_partitions(self, *names: str) -> None:
        """Tell the engine the partition counts of these topics (all when none are named; 0
        for a deleted one): the topic registry is the partition store of handoff groups
        (seed 004), whose plans wait for the counts of the topics they subscribe to."""
        for name in names or [spec.name for spec in self.topics.all()]:
            spec = self.topics.get(name)
            count = 0 if spec is None else spec.partitions
            self._call_engine(
                "set_topic_partitions",
                lambda engine, now, name=name, count=count: engine.set_topic_partitions(
                    name, count, now
                ),
            )

    @property
    def handoff_switches(self) -> dict[str, bool]:
        """Whether the handoff groups' partition store and service discovery are up (seed 004;
        docs/engine.md, "Outages: the two switches"): ``{"partition_store", "discovery"}``."""
        return dict(self._handoff_switches)

    def set_handoff_switches(
        self, *, partition_store: bool | None = None, discovery: bool | None = None
    ) -> dict[str, bool]:
        """Switch the partition store or the service discovery of the handoff groups down
        (False) or up (True); None leaves one as it is. While either is down no handoff group
        makes a new plan; when both are up again each is planned once. Returns the switches."""
        if partition_store is not None:
            self._handoff_switches["partition_store"] = partition_store
        if discovery is not None:
            self._handoff_switches["discovery"] = discovery
        self._apply_handoff_switches()
        return self.handoff_switches

    def _apply_handoff_switches(self) -> None:
        """Tell the engine the switches (both calls: a switch coming back is what re-plans)."""
        store = self._handoff_switches["partition_store"]
        discovery = self._handoff_switches["discovery"]
        self._call_engine(
            "set_partition_store_available",
            lambda engine, now: engine.set_partition_store_available(store, now),
        )
        self._call_engine(
            "set_discovery_available",
            lambda engine, now: engine.set_discovery_available(discovery, now),
        )

    def _call_engine(self, during: str, call: Callable[[GroupCoordinator, int], T]) -> T:
        """``call(engine, now_ms)`` as every engine call is made: only while serving, a fault
        reloading the engine, the timer re-armed after. (``_handle`` and ``tick``, the hot
        paths, do the same inline, with the profile's counters.)"""
        self._check_serving()
        try:
            result = call(self.coordinator, self._now())
        except Exception as exc:
            self._engine_failed(during, exc)
            raise
        finally:
            self._rearm()
        self._apply_departures()  # the call may have switched the discovery back on
        return result

    # ---------------------------------------------------------------- reading state

    def group(self, group_id: str) -> GroupView | HandoffGroupView | None:
        return self.coordinator.group(group_id)

    def group_ids(self) -> list[str]:
        return self.coordinator.group_ids()

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetCommitValue]:
        return self.coordinator.committed_offsets(group_id)

    # ---------------------------------------------------------------- events

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(SequencedEvent)`` for every engine event, on the loop thread, after the
        records behind it are durable. An exception in ``fn`` is logged and ignored."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Listener) -> None:
        self._listeners.remove(fn)

    def _on_event(self, event: GroupEvent) -> None:
        batch = self._batch
        if batch is not None:
            batch.events.append(event)  # published after the batch's COMMIT
            return
        self._publish(event)

    def _publish(self, event: GroupEvent) -> None:
        if type(event) is MemberRemoved:
            self._connections.pop((event.group_id, event.member_id), None)
            self._handoff_connections.pop((event.group_id, event.member_id), None)
            self._departed.discard((event.group_id, event.member_id))
        elif type(event) is GroupRemoved:
            for key in [key for key in self._connections if key[0] == event.group_id]:
                del self._connections[key]
            for key in [key for key in self._handoff_connections if key[0] == event.group_id]:
                del self._handoff_connections[key]
            self._departed = {key for key in self._departed if key[0] != event.group_id}
        self._seq += 1
        item = SequencedEvent(self._seq, event, self._group_seq.get(event.group_id, 0))
        self._group_seq[event.group_id] = self._seq
        self.history.add(item)
        if self.publisher is not None:
            self.publisher.add(item)
        for fn in tuple(self._listeners):
            try:
                fn(item)
            except Exception:
                logger.exception("event listener %r failed", fn)

    @property
    def last_seq(self) -> int:
        """The sequence number of the latest event."""
        return self._seq

    def group_last_seq(self, group_id: str) -> int:
        """The sequence number of ``group_id``'s latest event (0 if none): what a snapshot of
        the group taken now already reflects."""
        return self._group_seq.get(group_id, 0)

    async def flush_history(self) -> None:
        """Store every event so far in the history table (reads after this see them)."""
        await self.history.flush()

    # ---------------------------------------------------------------- topics

    async def create_topic(
        self, name: str, partitions: int, produce_rate_per_s: float = 0
    ) -> TopicSpec:
        self._check_serving()
        spec = self.topics.create(name, partitions, produce_rate_per_s, now_ms=self._now())
        try:
            await sync_to_async(_save_topic)(spec)
        except BaseException:
            self.topics.delete(name)
            raise
        self._report_partitions(name)
        return spec

    async def update_topic(
        self,
        name: str,
        *,
        partitions: int | None = None,
        produce_rate_per_s: float | None = None,
    ) -> TopicSpec:
        """Grow the partition count and/or change the produce rate (all or nothing)."""
        self._check_serving()
        before = self.topics.get(name)
        if before is None:
            raise UnknownTopicError(f"no topic {name!r}")
        now = self._now()
        try:
            spec = before
            if partitions is not None:
                spec = self.topics.set_partitions(name, partitions, now_ms=now)
            if produce_rate_per_s is not None:
                spec = self.topics.set_produce_rate(name, produce_rate_per_s, now_ms=now)
            await sync_to_async(_save_topic)(spec)
        except BaseException:
            self.topics.restore(before)
            raise
        if spec.partitions != before.partitions:
            self._report_partitions(name)
        return spec

    async def append_records(self, topic: str, partition: int, count: int) -> int:
        """Offsets for ``count`` records a producer sent (``TopicRegistry.append``), kept in the
        database before this returns; the first of them. TopicError if there is no such
        partition."""
        self._check_serving()
        before = self.topics.get(topic)
        if before is None:
            raise UnknownTopicError(f"no topic {topic!r}")
        spec, base = self.topics.append(topic, partition, count, now_ms=self._now())
        try:
            await sync_to_async(_save_topic)(spec)
        except BaseException:
            self.topics.restore(before)
            raise
        return base

    async def delete_topic(self, name: str) -> TopicSpec:
        self._check_serving()
        spec = self.topics.delete(name)
        try:
            await sync_to_async(_delete_topic)(name)
        except BaseException:
            self.topics.restore(spec)
            raise
        self._report_partitions(name)
        return spec


# ---------------------------------------------------------------- the process's runtime

_runtime: CoordinatorRuntime | None = None


def current_runtime() -> CoordinatorRuntime | None:
    """The process's runtime, started or not; None before anything asked for it."""
    return _runtime


def install_runtime(runtime: CoordinatorRuntime | None) -> None:
    """Make ``runtime`` the process's runtime (tests, ``manage.py serve``); None forgets it."""
    global _runtime
    _runtime = runtime


def ensure_runtime_started() -> CoordinatorRuntime:
    """The process's runtime, created from settings if need be, its start under way on the
    running loop (not awaited)."""
    global _runtime
    if _runtime is None:
        _runtime = CoordinatorRuntime.from_settings()
    if _runtime.loop is not None and _runtime.loop is not asyncio.get_running_loop():
        raise RuntimeNotReady("the coordinator runtime belongs to another event loop")
    _runtime.begin_start()
    return _runtime


async def get_runtime() -> CoordinatorRuntime:
    """The process's runtime, serving (created from settings and started on first use);
    RuntimeNotReady while it reloads after an engine fault."""
    runtime = ensure_runtime_started()
    await runtime.start()
    if not runtime.ready:
        raise RuntimeNotReady(runtime._unavailable_reason())
    return runtime
