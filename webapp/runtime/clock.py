"""The runtime's time: the clocks it reads, and the one asyncio timer that drives the engine's.

The engine keeps its timers as data and says when the earliest is due
(``GroupCoordinator.next_deadline_ms``); the host calls ``advance(now)`` then. So the runtime
needs one ``loop.call_later``, armed at that deadline after every engine call and moved only
when the deadline moved (:class:`EngineTimer`), and a "now" that never goes backwards.

The clock is wall-clock milliseconds read once at start and advanced by ``time.monotonic``
(:class:`WallClock`): it never goes backwards while the process runs, and it continues across
restarts, which matters because a replay re-arms every member's session from "now". Tests and
simulations use a :class:`ManualClock` and call ``runtime.tick()`` after moving it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["EngineTimer", "ManualClock", "WallClock"]


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


class EngineTimer:
    """``now()`` from ``clock``, never decreasing; and one timer at the attached engine's next
    deadline, which calls ``fire()`` when it is due.

    While attached (the runtime serves an engine), :meth:`rearm` after each engine call keeps
    the timer at ``next_deadline()``; it is a comparison when the deadline did not move.
    Detached (not started, stopped, the engine dropped after a fault), nothing is armed.
    """

    __slots__ = (
        "_armed_deadline",
        "_fire",
        "_handle",
        "_last_now",
        "_loop",
        "_next_deadline",
        "clock",
    )

    def __init__(self, clock: Callable[[], int], fire: Callable[[], None]) -> None:
        self.clock = clock
        self._fire = fire
        self._last_now = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._next_deadline: Callable[[], int | None] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._armed_deadline: int | None = None

    def now(self) -> int:
        """The clock's milliseconds, never less than the last answer."""
        now = self.clock()
        if now < self._last_now:
            now = self._last_now
        self._last_now = now
        return now

    def attach(
        self, loop: asyncio.AbstractEventLoop, next_deadline: Callable[[], int | None]
    ) -> None:
        """Keep the timer at ``next_deadline()`` (an engine's ``next_deadline_ms``) on ``loop``
        from the next :meth:`rearm` on."""
        self._loop = loop
        self._next_deadline = next_deadline

    def detach(self) -> None:
        """Disarm, and arm nothing until the next :meth:`attach`."""
        self._next_deadline = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_deadline = None

    def rearm(self) -> None:
        """Arm the timer at the engine's next deadline, unless it is armed there already."""
        next_deadline = self._next_deadline
        if next_deadline is None:
            return
        deadline = next_deadline()
        if deadline == self._armed_deadline and (deadline is None or self._handle is not None):
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_deadline = deadline
        if deadline is not None:
            assert self._loop is not None
            delay_s = max(0, deadline - self.now()) / 1000
            self._handle = self._loop.call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        self._armed_deadline = None
        self._fire()
