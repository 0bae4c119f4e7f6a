"""Keyed timers as data (Kafka's `CoordinatorTimer`, aioquic's `get_timer`/`handle_timer`).

A timer is a key and a deadline. Scheduling a key that is already armed replaces its deadline;
timers are never persisted and are re-armed from state after a replay. The engine asks
`next_deadline()` for when it next needs the host, and the host calls back with the time.

Heartbeats push a member's session deadline later on every call, so the common move is
*extending* a deadline. That costs no heap operation here: the heap keeps the old entry, and when
it reaches the top it is found stale (the key's real deadline is later) and pushed again at the
real deadline. Only moving a deadline earlier pushes a new entry. Heartbeats are O(1).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class TimerQueue(Generic[K]):
    __slots__ = ("_deadlines", "_heap", "_seq")

    def __init__(self) -> None:
        self._deadlines: dict[K, int] = {}
        self._heap: list[tuple[int, int, K]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._deadlines)

    def __contains__(self, key: object) -> bool:
        return key in self._deadlines

    def deadline(self, key: K) -> int | None:
        return self._deadlines.get(key)

    def schedule(self, key: K, deadline: int) -> None:
        """Arm `key` at `deadline`, replacing any deadline it had."""
        old = self._deadlines.get(key)
        self._deadlines[key] = deadline
        if old is None or deadline < old:
            self._seq += 1
            heapq.heappush(self._heap, (deadline, self._seq, key))

    def cancel(self, key: K) -> None:
        self._deadlines.pop(key, None)

    def _settle_top(self) -> tuple[int, K] | None:
        """Drop or re-push stale heap entries until the top is a live deadline."""
        heap = self._heap
        deadlines = self._deadlines
        while heap:
            deadline, _, key = heap[0]
            actual = deadlines.get(key)
            if actual == deadline:
                return deadline, key
            if actual is not None and actual > deadline:
                self._seq += 1
                heapq.heapreplace(heap, (actual, self._seq, key))
            else:
                heapq.heappop(heap)
        return None

    def may_be_due(self, now_ms: int) -> bool:
        """A cheap check: False means no timer is due at `now_ms`. (Every armed key has a heap
        entry at or before its deadline, so the heap's top is a lower bound.)"""
        heap = self._heap
        return bool(heap) and heap[0][0] <= now_ms

    def next_deadline(self) -> int | None:
        heap = self._heap
        if heap:
            deadline, _, key = heap[0]
            if self._deadlines.get(key) == deadline:  # a live top: nothing to settle
                return deadline
        top = self._settle_top()
        return None if top is None else top[0]

    def pop_due(self, now_ms: int) -> K | None:
        """Disarm and return the earliest key due at `now_ms`, or None if none is due."""
        top = self._settle_top()
        if top is None or top[0] > now_ms:
            return None
        heapq.heappop(self._heap)
        del self._deadlines[top[1]]
        return top[1]
