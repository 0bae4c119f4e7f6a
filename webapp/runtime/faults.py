"""Fault recovery: an exception out of the engine reloads it from its log.

The invariant is that **the engine's state is what its log replays to**. An exception out of
an engine call (a bug: the engine answers every bad request with a Kafka error code) may have
left its memory half changed, a popped timer lost, replies and events queued for the next
call. So the runtime stops serving at once (the failing call's caller gets the exception;
later requests get RuntimeNotReady, which transports answer as "unavailable", and clients
retry), drops the engine, fails every parked reply (:class:`ParkedReplies`), replays the log
into a new engine off the loop and serves again: the state Kafka reloads when it moves a
coordinator shard (``CoordinatorRuntime.scheduleUnloadOperation`` then
``scheduleLoadOperation``). Members' sessions restart from now, as after a restart; what the
failed call appended stays, what it had not appended never happened.

:class:`FaultRecovery` counts the faults, keeps the latest for ``/healthz``, and runs the
reload, retrying a replay that fails after 1 s, 2 s, … up to 30 s. Stopping and serving again
are the runtime's (it owns the engine, the timer and the listeners); this module tells it when.
docs/operations.md, "Engine faults", is the operator's account.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coordinator_engine import GroupCoordinator, Reply

logger = logging.getLogger(__name__)

__all__ = ["FaultRecovery", "ParkedReplies"]


class ParkedReplies:
    """How to fail each parked reply (a JoinGroup or SyncGroup not answered yet) if the engine
    that holds it is dropped."""

    __slots__ = ("_fails",)

    def __init__(self) -> None:
        self._fails: dict[object, Callable[[str], None]] = {}

    def park(self, reply: Reply[Any], fail: Callable[[str], None]) -> None:
        """Remember ``fail`` until ``reply`` completes."""
        key = object()
        fails = self._fails
        fails[key] = fail

        def unpark(_: object) -> None:
            fails.pop(key, None)

        reply.add_done_callback(unpark)

    def fail_all(self, reason: str) -> None:
        """The engine was dropped: call every remembered ``fail(reason)``, and forget them."""
        parked, self._fails = self._fails, {}
        for fail in parked.values():
            try:
                fail(reason)
            except Exception:
                logger.exception("failing a parked reply failed")


class FaultRecovery:
    """The faults of one runtime's engine, and the reload after the latest.

    ``load_engine(now_ms)`` replays the log into a new engine (called in a worker thread);
    ``serve(engine)`` makes the runtime serve it, on the loop.
    """

    def __init__(
        self,
        *,
        log_path: Path,
        now: Callable[[], int],
        load_engine: Callable[[int], GroupCoordinator],
        serve: Callable[[GroupCoordinator], None],
    ) -> None:
        self.log_path = log_path
        self._now = now
        self._load_engine = load_engine
        self._serve = serve
        #: Exceptions out of the engine since the start, each followed by a reload from the log.
        self.faults = 0
        #: The latest: when (``at_ms``), in which call (``during``), the ``error``, once serving
        #: again ``reloaded_in_ms``, and ``reload_error`` if a replay failed.
        self.last_fault: dict[str, Any] | None = None
        #: The reload after the latest fault (done once serving again).
        self.reload_task: asyncio.Task[None] | None = None

    @property
    def recovering(self) -> bool:
        """True from a fault until the engine is reloaded from the log."""
        return self.reload_task is not None and not self.reload_task.done()

    def record(self, during: str, exc: Exception) -> None:
        """Count the fault and log its traceback (the runtime has not stopped serving yet)."""
        self.faults += 1
        self.last_fault = {"at_ms": self._now(), "during": during, "error": repr(exc)}
        logger.critical(
            "coordinator engine failed in %s; it stops serving and reloads its state from %s, "
            "so that its state is again what the log replays to",
            during,
            self.log_path,
            exc_info=exc,
        )

    def begin_reload(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload in a task on ``loop`` (the runtime dropped its engine)."""
        self.reload_task = loop.create_task(self._reload(), name="runtime-reload")

    def cancel(self) -> asyncio.Task[None] | None:
        """Cancel a reload under way (the runtime stops); the task, to await."""
        task = self.reload_task
        if task is None or task.done():
            return None
        task.cancel()
        return task

    async def _reload(self) -> None:
        started = time.perf_counter()
        backoff_s = 1.0
        while True:
            try:
                engine = await asyncio.to_thread(self._load_engine, self._now())
                break
            except Exception as exc:
                logger.error(
                    "reloading the coordinator from %s failed (%s); trying again in %.0f s",
                    self.log_path,
                    exc,
                    backoff_s,
                )
                assert self.last_fault is not None
                self.last_fault["reload_error"] = repr(exc)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 30.0)
        last_fault = self.last_fault
        self._serve(engine)
        elapsed_ms = round((time.perf_counter() - started) * 1000)
        assert last_fault is not None
        last_fault["reloaded_in_ms"] = elapsed_ms
        logger.warning(
            "coordinator reloaded from %s after an engine fault: %d groups in %d ms; serving",
            self.log_path,
            len(engine.group_ids()),
            elapsed_ms,
        )
