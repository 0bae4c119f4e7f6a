"""Sharing the event loop's turns fairly between bursts of requests and everything else.

The trouble: asyncio runs, in one turn, every callback that became ready during the previous
one, and polls the sockets only between turns (Twisted, under Daphne, writes a socket's
buffered data only when that poll says it is writable). When a rebalance of 200 members
completes, the engine answers 200 parked JoinGroups in one call, the 200 request tasks wake in
the same turn and each encodes and sends its reply: one turn of ~60 ms during which nothing
written goes out — not the dashboards' frames, not a heartbeat's answer. The members' SyncGroups
and offset commits then arrive together and make the next long turns.

:class:`TurnBudget` bounds that: work that calls ``await budget.wait()`` runs at once while the
current turn has spent less than ``budget_s`` since its first admitted piece of work; past that,
it queues, and the queue is let through a batch per turn, in arrival order, sized by the
measured cost of one admission. Between two batches the loop polls its sockets, so what was
written goes out at least every ``budget_s`` plus the turn's other work. Nothing is dropped or
reordered; a burst takes the same CPU, spread over more turns.

(Node.js's ``setImmediate`` versus ``process.nextTick`` and Go's preemptive scheduler solve the
same starvation: a ready queue must not hold the poller back for long.)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque

__all__ = ["TurnBudget"]


class TurnBudget:
    """Admission to the event loop's turns, at most ``budget_s`` of admitted work per turn.

    Call :meth:`wait` before a piece of work that a burst would repeat many times in one turn
    (handling a request, answering a parked one). Loop-thread only.
    """

    #: Weight of the newest turn in the running estimate of one admission's cost.
    SMOOTHING = 0.25

    def __init__(self, budget_s: float = 0.005) -> None:
        if budget_s <= 0:
            raise ValueError(f"budget_s must be positive, not {budget_s!r}")
        self.budget_s = budget_s
        self._opened_at: float | None = None  # perf_counter at this turn's first admission
        self._admitted = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._released = 0  # let through by _turn_over, not running yet
        self._requeued = 0  # of the batch let through, how many found the turn spent
        self._turn_over_scheduled = False
        self._cost_s = budget_s / 10  # one admission's cost, measured as turns go by
        #: Admissions that had to wait for a later turn (a measure of how bursty the load is).
        self.deferred = 0

    @property
    def waiting(self) -> int:
        """How many pieces of work wait for a later turn."""
        return len(self._waiting)

    async def wait(self) -> None:
        """Return at once if this turn has budget left and nobody queued before; otherwise
        when a later turn lets this caller through (in arrival order)."""
        loop = asyncio.get_running_loop()
        if not self._waiting and not self._released and self._has_budget():
            self._admit(loop)
            return
        self.deferred += 1
        position = len(self._waiting)
        while True:
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiting.insert(position, waiter)
            self._schedule_turn_over(loop)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.cancelled():  # still queued
                    with contextlib.suppress(ValueError):
                        self._waiting.remove(waiter)
                else:  # let through, then cancelled before it ran
                    self._released -= 1
                raise
            self._released -= 1
            if self._has_budget():
                self._admit(loop)
                return
            # The batch was larger than this turn's budget: back to the front of the queue,
            # behind the others of the batch that went back before.
            position = self._requeued
            self._requeued += 1

    def _has_budget(self) -> bool:
        opened = self._opened_at
        return opened is None or time.perf_counter() - opened < self.budget_s

    def _admit(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._opened_at is None:
            self._opened_at = time.perf_counter()
            self._admitted = 0
        self._admitted += 1
        self._schedule_turn_over(loop)

    def _schedule_turn_over(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._turn_over_scheduled:
            self._turn_over_scheduled = True
            loop.call_soon(self._turn_over, loop)

    def _turn_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs early in the turn after one with admissions or waiters: close that turn's
        account, learn the cost of one admission, and let the next batch through. The batch
        runs in the following turn (a released future wakes its task then)."""
        self._turn_over_scheduled = False
        if self._opened_at is not None and self._admitted:
            per_admission = (time.perf_counter() - self._opened_at) / self._admitted
            self._cost_s += self.SMOOTHING * (per_admission - self._cost_s)
        self._opened_at = None
        self._admitted = 0
        self._requeued = 0
        batch = max(1, int(self.budget_s / self._cost_s)) if self._cost_s > 0 else 1
        while batch and self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled waiter is on its way out
                waiter.set_result(None)
                self._released += 1
                batch -= 1
        if self._waiting:
            # Scheduled after the released wake-ups: it runs in the same turn as the batch,
            # measures it and releases the next one.
            self._schedule_turn_over(loop)
