"""The coordinator runtime: the one caller of the engine in a serving process.

Theory of operation
===================

The engine (``coordinator_engine``) is sans-IO: requests in, replies, records and events out,
time an argument. :class:`CoordinatorRuntime` is the host that gives it I/O, a clock and a
timer, and it is the engine's only caller: the websocket consumers, the Kafka listener, the
JSON API, in-process simulated consumers and Celery's control messages
(``webapp.runtime.control``) all go through one runtime. Transports and simulations see it as
:class:`~webapp.runtime.api.RuntimeAPI`.

The runtime is a small host: it owns the life cycle (start, stop), the engine and its log, the
request path, and the events' numbering; each other concern is a collaborator in a module of
its own, which it creates and wires:

* ``clock``: :class:`~webapp.runtime.clock.EngineTimer`, "now" (never decreasing) and the one
  asyncio timer at the engine's next deadline, re-armed after every call;
* ``faults``: :class:`~webapp.runtime.faults.FaultRecovery`, an exception out of the engine
  reloads it from its log, and ``ParkedReplies`` fails the replies the dropped engine held;
* ``group_commit``: :class:`~webapp.runtime.group_commit.GroupCommit`,
  :meth:`~CoordinatorRuntime.batch` puts several requests' records in one transaction, their
  answers and events held until it commits;
* ``presence``: :class:`~webapp.runtime.presence.Presence`, how each member is connected, and
  a handoff member leaves when its connection ends;
* ``topic_service``: :class:`~webapp.runtime.topic_service.TopicService`, topic changes, stored
  in the database and told to the engine;
* ``cluster``: FindCoordinator and Metadata, answered here, not by the engine;
* ``record_log``: the log's lock (one process owns a log) and its checkpoints off the loop;
* ``profiling``: :class:`~webapp.runtime.profiling.EngineProfile`, the time spent inside the
  engine (``REBALANCE_LAB_PROFILE_ENGINE``);
* ``metrics``: :class:`~webapp.runtime.metrics.RuntimeMetrics`, what ``/metrics`` counts:
  rebalances from the events it publishes, the responses' error codes, the loop's lag.

* **One thread.** Every engine call happens on the event loop thread (the one Daphne serves
  on). The engine is synchronous and fast, so a call simply runs; nothing is locked. Code on
  other threads uses :meth:`CoordinatorRuntime.submit_threadsafe`.
* **Durable before any reply.** ``coord.handle`` appends the request's records to the
  :class:`~coordinator_engine.SqliteLog` inside the call and completes replies only after the
  append returned; the runtime then passes the reply on. A parked JoinGroup/SyncGroup is an
  ``asyncio.Future`` completed from ``Reply.add_done_callback``.
* **The request path stays flat.** ``_handle``, ``submit``, ``submit_nowait`` and ``tick`` call
  the engine directly; the collaborators' methods they use on every call (``now``, ``rearm``,
  ``park``) are bound once, when the runtime is made.
* **Events** get a sequence number (continuing the highest stored one) and go to in-process
  listeners (:meth:`CoordinatorRuntime.add_listener`; the dashboard's feeds are), to the
  history table and to the Channels groups (``webapp.runtime.history``,
  ``webapp.runtime.events``), never blocking the loop.
* **Fair turns.** Transports call ``await runtime.turns.wait()`` before each request and each
  reply (``webapp.runtime.turns``): a burst, such as a whole group rejoining at once, is
  handled a few milliseconds per loop turn, and the loop's socket writes go out in between.
* **Start and restart.** Daphne runs no ASGI lifespan, so the runtime starts on first use
  (:func:`get_runtime`, from the first websocket connect or API request) or eagerly from
  ``manage.py serve``. Starting takes an exclusive lock on the log (one process owns a log),
  replays it in a worker thread (``/healthz`` says "starting" meanwhile) and loads the topics.
  A restart, including after ``kill -9``, replays the log: groups, generations, assignments and
  offsets come back, members' sessions restart from now.
* **Seed 004's two outage switches** (:meth:`CoordinatorRuntime.set_handoff_switches`) are
  host facts, not records: told again to an engine reloaded after a fault.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import get_channel_layer

from coordinator_engine import (
    CleanupResult,
    ConsumerGroupView,
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    GroupEvent,
    GroupView,
    HandoffGroupView,
    HandoffHeartbeatRequest,
    Reply,
    SqliteLog,
)
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from coordinator_engine.events import GroupRemoved, MemberRemoved
from coordinator_engine.records import OffsetCommitValue

from . import cluster, database
from .api import AnyRequest, HousekeepingAPI, RuntimeAPI, RuntimeNotReady
from .clock import EngineTimer, WallClock
from .control import serve_control
from .events import SequencedEvent
from .faults import FaultRecovery, ParkedReplies
from .group_commit import GroupCommit
from .history import HistoryWriter, Publisher, last_stored_seq_per_group
from .metrics import RuntimeMetrics
from .presence import Presence, heartbeats, joins
from .profiling import EngineProfile
from .record_log import Checkpointer, LogLock
from .topic_service import TopicService, stored_topics
from .topics import TopicRegistry, TopicSpec
from .turns import TurnBudget

logger = logging.getLogger(__name__)

__all__ = [
    "CoordinatorRuntime",
    "current_runtime",
    "ensure_runtime_started",
    "get_runtime",
    "install_runtime",
]

Listener = Callable[[SequencedEvent], None]
T = TypeVar("T")


def _load_database_state() -> tuple[list[TopicSpec], dict[str, int]]:
    from django.db import DatabaseError

    try:
        return stored_topics(), last_stored_seq_per_group()
    except DatabaseError as exc:
        raise RuntimeError(
            f"cannot read the topics and the event history from Django's database ({exc}); "
            "run `python manage.py migrate` (`manage.py serve` does it itself)"
        ) from exc


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
        #: Where FindCoordinator sends clients (``serve`` sets the port once it listens).
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        self._channel_layer_alias = channel_layer_alias
        #: Turns of the loop shared out to bursts of requests (``webapp.runtime.turns``).
        self.turns = TurnBudget()
        self.history = HistoryWriter(interval_s=history_interval_s, batch_size=history_batch_size)
        self.publisher: Publisher | None = None
        #: The topics (loaded from the database at start); changed through ``topic_service``.
        self.topics = TopicRegistry()
        self._coordinator: GroupCoordinator | None = None
        self._log: SqliteLog | None = None
        self.checkpoint_interval_s = checkpoint_interval_s
        self._checkpointer: Checkpointer | None = None
        #: Reads Celery's control requests (``webapp.runtime.control``) when there is a layer.
        self._control: asyncio.Task[None] | None = None
        self._lock = LogLock(self.log_path)
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
        #: Extra listeners the host opened, by name (``kafka``): their addresses.
        self.listeners: dict[str, str] = {}
        #: Seed 004's two outage switches as last set (:meth:`set_handoff_switches`).
        self._handoff_switches = {"partition_store": True, "discovery": True}

        # The collaborators. What the request path calls on every request is bound here once.
        #: "Now" and the one timer at the engine's next deadline (``webapp.runtime.clock``).
        self.timer = EngineTimer(clock if clock is not None else WallClock(), self.tick)
        self._now = self.timer.now
        self._rearm = self.timer.rearm
        #: Time spent in the engine, when asked for (``profile_engine``); None otherwise.
        self.engine_profile: EngineProfile | None = EngineProfile() if profile_engine else None
        #: What ``/metrics`` counts (``webapp.runtime.metrics``).
        self.metrics = RuntimeMetrics(self._group_kind)
        self._on_metrics_event = self.metrics.rebalances.on_event
        #: Engine faults and the reload after one (``webapp.runtime.faults``).
        self.recovery = FaultRecovery(
            log_path=self.log_path,
            now=self._now,
            # Looked up at each reload, so that a test can replace ``_load_engine``.
            load_engine=lambda now_ms: self._load_engine(now_ms),
            serve=self._engine_reloaded,
        )
        self._parked = ParkedReplies()
        self._park = self._parked.park
        #: How members are connected; handoff members' departures (``webapp.runtime.presence``).
        self.presence = Presence()
        #: Group commits (:meth:`batch`); the engine's events pass through it.
        self._group_commit = GroupCommit(
            publish=self._publish,
            engine_failed=self._engine_failed,
            unavailable_reason=self._unavailable_reason,
        )
        self._on_event = self._group_commit.on_event
        #: Topic changes, stored and told to the engine (``webapp.runtime.topic_service``).
        self.topic_service = TopicService(
            self.topics,
            check_serving=self._check_serving,
            now=self._now,
            set_partitions=self._set_topic_partitions,
        )

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
    def clock(self) -> Callable[[], int]:
        """The clock the runtime reads (a :class:`WallClock` unless one was given)."""
        return self.timer.clock

    @property
    def coordinator(self) -> GroupCoordinator:
        if self._coordinator is None:
            raise RuntimeNotReady(self._unavailable_reason())
        return self._coordinator

    def _group_kind(self, group_id: str) -> str | None:
        coordinator = self._coordinator
        return None if coordinator is None else coordinator.group_kind(group_id)

    def _unavailable_reason(self) -> str:
        if self.recovery.recovering:
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
            specs, self._group_seq = await database.in_database_thread(_load_database_state)
            self._seq = max(self._group_seq.values(), default=0)
        except BaseException as exc:
            if self._log is not None:
                self._log.close()
            self._lock.release()
            if isinstance(exc, Exception):
                # Said once here; whoever awaits the start (every connection) gets the error.
                logger.error("the coordinator runtime could not start: %s", exc)
            raise
        self.topics.load(specs)
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
        self._checkpointer = Checkpointer(self._log, self.checkpoint_interval_s)
        self._checkpointer.start()
        self.metrics.loop_lag.start()
        self._serve(self._coordinator)
        self._started = True
        self.topic_service.report_partitions()
        self._rearm()
        logger.info(
            "coordinator runtime ready: %d groups replayed from %s in %.0f ms",
            len(self._coordinator.group_ids()),
            self.log_path,
            (time.perf_counter() - started) * 1000,
        )

    def _open_log(self) -> SqliteLog:
        # Appends never checkpoint: the Checkpointer does, off the loop (webapp.runtime.record_log).
        return SqliteLog(self.log_path, autocheckpoint=False)

    def _load_engine(self, now_ms: int) -> GroupCoordinator:
        """A new engine over the log, its state replayed from it (worker thread)."""
        assert self._log is not None
        return GroupCoordinator(self.config, self._log, now_ms=now_ms)

    def _serve(self, coordinator: GroupCoordinator) -> None:
        """Serve ``coordinator``: its events flow, its timer is kept, requests reach it."""
        assert self._loop is not None
        self._coordinator = coordinator
        coordinator.add_listener(self._on_event)
        self._ready = True
        self.timer.attach(self._loop, coordinator.next_deadline_ms)

    def _stop_serving(self) -> None:
        """No more engine calls or timers (stop, or an engine fault)."""
        self._ready = False
        self.timer.detach()

    async def stop(self) -> None:
        """Stop serving: no more engine calls, events flushed to the history, its database
        connections closed, log closed and its lock released. Parked replies are left
        unanswered (their clients will retry)."""
        if self._stopped:
            return
        self._stopped = True
        if self.engine_profile is not None:
            self.engine_profile.close()
        if self._start_task is not None and not self._start_task.done():
            self._start_task.cancel()
            with contextlib.suppress(BaseException):
                await self._start_task
        reload = self.recovery.cancel()
        if reload is not None:
            with contextlib.suppress(BaseException):
                await reload
        self._stop_serving()
        if not self._started:
            return
        if self._coordinator is not None:
            self._coordinator.remove_listener(self._on_event)
        if self._control is not None:
            self._control.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._control
        if self._checkpointer is not None:
            await self._checkpointer.stop()
        await self.metrics.loop_lag.stop()
        await self.history.stop()
        if self.publisher is not None:
            await self.publisher.stop()
        try:
            await database.close_connections()
        except Exception:
            logger.exception("coordinator runtime: closing its database connections failed")
        if self._log is not None:
            self._log.close()
        self._lock.release()
        logger.info("coordinator runtime stopped (%s)", self.log_path)

    # ---------------------------------------------------------------- time

    def now_ms(self) -> int:
        """The runtime's clock (never decreasing)."""
        return self._now()

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

    def _handle(self, request: AnyRequest) -> Reply[Any]:
        self._check_serving()
        if isinstance(request, FindCoordinatorRequest):
            return Reply.of(self.find_coordinator(request))
        if isinstance(request, MetadataRequest):
            return Reply.of(self.metadata(request))
        profile = self.engine_profile
        started = time.perf_counter() if profile is not None else 0.0
        try:
            reply = self.coordinator.handle(request, self._now())
        except Exception as exc:
            self._engine_failed(f"handle({type(request).__name__})", exc)
            raise
        finally:
            if profile is not None:
                profile.handle_calls += 1
                profile.handle_s += time.perf_counter() - started
            self._rearm()
        return reply

    async def submit(
        self, request: AnyRequest, *, via: str | None = None, connection: object | None = None
    ) -> Any:
        """Handle one request and return its response (awaiting a parked JoinGroup/SyncGroup).

        ``request`` is an engine request (``coordinator_engine.requests``) or a
        FindCoordinatorRequest/MetadataRequest (``coordinator_engine.cluster``); through
        :class:`~webapp.runtime.api.RuntimeAPI` the response is typed per request. The records
        behind the response are durable when it is returned. Cancelling the await changes
        nothing in the group (like a Kafka client that went away). ``via`` names the transport
        a joining member came by, ``connection`` the connection a handoff member heartbeats on
        (``webapp.runtime.presence``).
        """
        reply = self._handle(request)
        if via is not None and joins(request):
            reply.add_done_callback(self.presence.remember_via(request.group_id, via))
        if connection is not None and heartbeats(request):
            reply.add_done_callback(self.presence.register_handoff(request, connection))
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
            held = self._group_commit.open
            if held is None:
                answer(response)
            else:
                held.released.append((lambda: answer(response), fail))

        reply.add_done_callback(done)
        self._park(reply, fail)
        return await future

    def submit_nowait(
        self,
        request: AnyRequest,
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
        if via is not None and joins(request):
            reply.add_done_callback(self.presence.remember_via(request.group_id, via))
        if connection is not None and heartbeats(request):
            reply.add_done_callback(self.presence.register_handoff(request, connection))
        failed = None if on_failure is None else self._guarded(on_failure)
        answer = self._guarded(callback)

        def done(response: Any) -> None:
            held = self._group_commit.open
            if held is None:
                answer(response)
            else:
                held.released.append((lambda: answer(response), failed))

        reply.add_done_callback(done)
        if failed is not None and not reply.done:
            self._park(reply, failed)

    def submit_threadsafe(self, request: AnyRequest) -> concurrent.futures.Future[Any]:
        """:meth:`submit` from any thread; a ``concurrent.futures.Future`` of the response."""
        if self._loop is None:
            raise RuntimeNotReady("the coordinator runtime has not started")
        return asyncio.run_coroutine_threadsafe(self.submit(request), self._loop)

    def _guarded(self, callback: Callable[[T], None]) -> Callable[[T], None]:
        def call(argument: T) -> None:
            try:
                callback(argument)
            except Exception:
                logger.exception("reply callback %r failed", callback)

        return call

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """A group commit (``webapp.runtime.group_commit``): the records of every engine call
        made inside the block are appended in one transaction of the log, committed when the
        block ends; what they answer is released only after that COMMIT. The block must not
        await. A failed COMMIT is an engine fault and raises GroupCommitFailed; a block that
        raised or awaited, or a nested batch, raise too (``GroupCommit.batch`` says how).

        On a runtime that is not serving it holds nothing and commits nothing (the engine
        calls inside raise RuntimeNotReady).
        """
        return self._group_commit.batch(self._log if self._ready else None, self._loop)

    # ---------------------------------------------------------------- engine faults

    @property
    def engine_faults(self) -> int:
        """Exceptions out of the engine since the start, each followed by a reload."""
        return self.recovery.faults

    @property
    def last_engine_fault(self) -> dict[str, Any] | None:
        """The latest fault: ``at_ms``, ``during``, ``error``, and once serving again
        ``reloaded_in_ms`` (``reload_error`` if a replay failed)."""
        return self.recovery.last_fault

    @property
    def reload_task(self) -> asyncio.Task[None] | None:
        """The reload after the latest engine fault (done once serving again)."""
        return self.recovery.reload_task

    @property
    def recovering(self) -> bool:
        """True from an engine fault until the engine is reloaded from the log."""
        return self.recovery.recovering

    def _engine_failed(self, during: str, exc: Exception) -> None:
        """An exception came out of the engine: stop serving, drop the engine, reload it from
        the log, and fail the parked replies (``webapp.runtime.faults``)."""
        if not self._ready:
            return
        self.recovery.record(during, exc)
        self._stop_serving()
        if self._coordinator is not None:
            self._coordinator.remove_listener(self._on_event)
            self._coordinator = None
        assert self._loop is not None
        self.recovery.begin_reload(self._loop)
        self._parked.fail_all(self._unavailable_reason())

    def _engine_reloaded(self, coordinator: GroupCoordinator) -> None:
        """Serve the engine the log was replayed into after a fault, told the host's facts."""
        self._serve(coordinator)
        self._apply_handoff_switches()
        self.topic_service.report_partitions()
        self._rearm()

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

    # ---------------------------------------------------------------- presence

    def connection_of(self, group_id: str, member_id: str) -> str | None:
        """How the member joined (``kafka``, ``websocket``, ``simulated``), if known."""
        return self.presence.connection_of(group_id, member_id)

    def connection_closed(self, connection: object) -> None:
        """A connection ended: its handoff members leave now, or once the discovery is back
        on (``webapp.runtime.presence``). Safe to call at any time, for any connection."""
        if self.presence.connection_closed(connection):
            self._apply_departures()

    @property
    def departures_pending(self) -> list[tuple[str, str]]:
        """(group_id, member_id) of the handoff members whose connection ended and who were
        not made to leave yet (the discovery is off, or the engine not serving)."""
        return sorted(self.presence.departed)

    def _apply_departures(self) -> None:
        presence = self.presence
        if not presence.departed or not self._ready or not self.coordinator.discovery_available:
            return
        for group_id, member_id in sorted(presence.departed):
            leave = HandoffHeartbeatRequest(
                group_id=group_id, member_id=member_id, member_epoch=-1, session_timeout_ms=0
            )
            try:
                self._handle(leave)  # UNKNOWN_MEMBER_ID if it is gone already: as good
            except Exception:
                return  # the engine failed (it reloads): the rest wait for the next call
            presence.departed.discard((group_id, member_id))

    # ---------------------------------------------------------------- the cluster

    def find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        """This node coordinates every consumer group it owns (``webapp.runtime.cluster``)."""
        return cluster.find_coordinator(
            request, self.config, self.advertised_host, self.advertised_port
        )

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Partition counts from the topic registry; an unknown topic gets
        UNKNOWN_TOPIC_OR_PARTITION (topics are never auto-created)."""
        return cluster.metadata(request, self.topics)

    # ---------------------------------------------------------------- housekeeping and staff

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

    def remove_consumer_member(self, group_id: str, member_id: str) -> Errors:
        """Remove a consumer group's member (the dashboard's staff action;
        ``GroupCoordinator.remove_consumer_member``)."""
        return self._call_engine(
            "remove_consumer_member",
            lambda engine, now: engine.remove_consumer_member(group_id, member_id, now),
        )

    def _set_topic_partitions(self, name: str, count: int, topic_id: uuid.UUID | None) -> None:
        self._call_engine(
            "set_topic_partitions",
            lambda engine, now: engine.set_topic_partitions(name, count, now, topic_id=topic_id),
        )

    @property
    def handoff_switches(self) -> dict[str, bool]:
        """Whether the handoff groups' partition store and service discovery are up
        (docs/engine.md, "Outages: the two switches"): ``{"partition_store", "discovery"}``."""
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

    # ---------------------------------------------------------------- reading state

    def group(self, group_id: str) -> GroupView | HandoffGroupView | ConsumerGroupView | None:
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

    def _publish(self, event: GroupEvent) -> None:
        if type(event) is MemberRemoved:
            self.presence.member_removed(event.group_id, event.member_id)
        elif type(event) is GroupRemoved:
            self.presence.group_removed(event.group_id)
        self._seq += 1
        item = SequencedEvent(self._seq, event, self._group_seq.get(event.group_id, 0))
        self._group_seq[event.group_id] = self._seq
        self.history.add(item)
        if self.publisher is not None:
            self.publisher.add(item)
        try:
            self._on_metrics_event(event)
        except Exception:
            logger.exception("metrics: counting %s failed", event.type)
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
        return await self.topic_service.create(name, partitions, produce_rate_per_s)

    async def update_topic(
        self,
        name: str,
        *,
        partitions: int | None = None,
        produce_rate_per_s: float | None = None,
    ) -> TopicSpec:
        """Grow the partition count and/or change the produce rate (all or nothing)."""
        return await self.topic_service.update(
            name, partitions=partitions, produce_rate_per_s=produce_rate_per_s
        )

    async def append_records(self, topic: str, partition: int, count: int) -> int:
        """Offsets for ``count`` records a producer sent, kept in the database before this
        returns; the first of them. TopicError if there is no such partition."""
        return await self.topic_service.append_records(topic, partition, count)

    async def delete_topic(self, name: str) -> TopicSpec:
        return await self.topic_service.delete(name)


if TYPE_CHECKING:

    def _implements(runtime: CoordinatorRuntime) -> tuple[RuntimeAPI, HousekeepingAPI]:
        """Where mypy checks that the runtime is what the transports, the simulation and the
        control messages are written against."""
        return runtime, runtime


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
