"""Whether the housekeeping processes are alive, asked of the processes themselves.

A page that reads only the schedules looks healthy while nothing runs them (a worker that
exited when Redis went away, say: docs/operations.md, "Supervision"). So ``/healthz`` and the
Housekeeping page say what the processes answer:

* **the worker** answers Celery's own ping (``app.control.ping``: a broadcast over the broker
  that every running worker replies to within ``PING_TIMEOUT_S``);
* **beat** has no such channel, so it announces itself: ``AnnouncingScheduler`` (the
  ``CELERY_BEAT_SCHEDULER``, django-celery-beat's database scheduler) sets ``BEAT_KEY`` in the
  broker's Redis at every turn of its loop (at least every five seconds), to expire after
  ``BEAT_TTL_S``; beat is alive while the key is there.

``Liveness`` asks both in a thread, at most every ``PERIOD_S`` and one ask at a time, and
answers with the last result at once: a health check never waits on the broker. Until the
first ask has finished, ``alive`` is None (not known yet); with the broker down, both are
False and ``error`` says why.

Beat also stops cleanly here. On SIGTERM or SIGINT Celery's handler saves the schedule and
raises SystemExit wherever beat is; raised inside the Redis client while a task was being sent,
it left the connection broken mid-reply, and beat logged the send as failed, with a traceback,
as it went. ``AnnouncingScheduler`` holds those signals back during each turn of beat's loop
(``stop_signals_deferred``): a stop that comes while it sends takes effect once it has sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import redis
from django.conf import settings
from django_celery_beat.schedulers import DatabaseScheduler

__all__ = [
    "BEAT_KEY",
    "BEAT_TTL_S",
    "LIVENESS",
    "AnnouncingScheduler",
    "Liveness",
    "Processes",
    "ask_processes",
    "stop_signals_deferred",
]

log = logging.getLogger(__name__)

#: The key beat refreshes in the broker's Redis, and how long it lives unrefreshed.
BEAT_KEY = "rebalance-lab:celery-beat"
BEAT_TTL_S = 15
#: How long a ping waits for the workers' replies; how often ``Liveness`` asks again.
PING_TIMEOUT_S = 1.0
PERIOD_S = 5.0
#: Redis connection and socket timeouts of these checks (the broker may be down).
REDIS_TIMEOUT_S = 1.0


def _redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.CELERY_BROKER_URL,
        socket_connect_timeout=REDIS_TIMEOUT_S,
        socket_timeout=REDIS_TIMEOUT_S,
    )


#: The signals beat stops on (Celery's handler saves the schedule and raises SystemExit).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold ``STOP_SIGNALS`` back until the block ends, then hand each that came to the handler
    it would have run (the default action for one without a Python handler). A second one
    while the first is held is handled at once: a turn stuck on an unanswering database still
    stops on a second Ctrl-C. Python runs signal handlers in the main thread only, so elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[tuple[int, FrameType | None]] = []  # the one stop waiting for the block's end

    def handle(signum: int, frame: FrameType | None) -> None:
        handler = previous[signal.Signals(signum)]
        if callable(handler):
            handler(signum, frame)
        elif handler != signal.SIG_IGN:
            signal.raise_signal(signum)

    def hold(signum: int, frame: FrameType | None) -> None:
        if held:  # a second stop: both are answered by handling this one now
            held.clear()
            handle(signum, frame)
        else:
            held.append((signum, frame))

    previous = {signum: signal.signal(signum, hold) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler if handler is not None else signal.SIG_DFL)
        for signum, frame in held:
            handle(signum, frame)


class AnnouncingScheduler(DatabaseScheduler):
    """django-celery-beat's database scheduler that also says, at every turn of beat's loop,
    that beat is alive (``BEAT_KEY``: its host, pid and time, for ``BEAT_TTL_S``). A broker it
    cannot reach costs one warning per outage, not one per turn. A stop signal that comes
    during a turn takes effect at its end (the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._announcer: redis.Redis | None = None
        self._announced = True

    def tick(self, *args: Any, **kwargs: Any) -> float:
        with stop_signals_deferred():
            interval = float(super().tick(*args, **kwargs))
            self.announce()
        return interval

    def announce(self) -> None:
        if self._announcer is None:
            self._announcer = _redis()
        value = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()})
        try:
            self._announcer.set(BEAT_KEY, value, ex=BEAT_TTL_S)
        except redis.RedisError as exc:
            if self._announced:
                log.warning("beat could not announce itself in Redis: %s", exc)
            self._announced = False
        else:
            if not self._announced:
                log.info("beat announces itself in Redis again")
            self._announced = True


@dataclass(frozen=True, slots=True)
class Processes:
    """One answer: the workers that replied to the ping, whether beat's key was there."""

    workers: tuple[str, ...]
    beat: dict[str, Any] | None
    checked_at: float
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": {"alive": bool(self.workers), "names": list(self.workers)},
            "beat": {"alive": self.beat is not None, **({"seen": self.beat} if self.beat else {})},
            "checked_at": self.checked_at,
            "error": self.error,
        }


def ask_processes() -> Processes:
    """Ping the workers and read beat's key (blocking: up to about two seconds)."""
    from .celery_app import app

    now = time.time()
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0)
            replies = app.control.ping(timeout=PING_TIMEOUT_S, connection=connection)
        client = _redis()
        try:
            raw = client.get(BEAT_KEY)
        finally:
            client.close()
    except Exception as exc:  # the broker is down or refuses: say so, never raise
        return Processes(workers=(), beat=None, checked_at=now, error=f"broker: {exc}")
    workers = tuple(sorted(name for reply in replies for name in reply))
    beat = json.loads(raw) if raw else None
    return Processes(workers=workers, beat=beat, checked_at=now)


class Liveness:
    """The last answer of ``ask_processes``, asked again in a thread when older than
    ``period_s`` (see the module docstring)."""

    def __init__(self, period_s: float = PERIOD_S) -> None:
        self.period_s = period_s
        self._last: Processes | None = None
        self._asking: asyncio.Task[None] | None = None

    def snapshot(self) -> dict[str, Any]:
        """The last answer (``alive`` None before the first); starts a new ask when due. Call
        it on the event loop."""
        last = self._last
        due = last is None or time.time() - last.checked_at >= self.period_s
        asking = self._asking
        loop = asyncio.get_running_loop()
        # An ask of another loop (one that has closed: tests run a loop each) never finishes.
        if due and (asking is None or asking.done() or asking.get_loop() is not loop):
            self._asking = loop.create_task(self._ask())
        if last is None:
            unknown = {"alive": None}
            return {"worker": unknown, "beat": unknown, "checked_at": None, "error": None}
        return last.to_json()

    async def _ask(self) -> None:
        self._last = await asyncio.to_thread(ask_processes)


#: The server's one ``Liveness`` (``/healthz``, ``/api/housekeeping``).
LIVENESS = Liveness()
