"""Virtual time: a heap of timed actions and the engine's own deadlines decide what happens next.

Nothing waits. ``VirtualTime.step(engine)`` moves ``now`` to the earlier of the next timed
action (``at``) and the engine's ``next_deadline_ms()``, and runs it (ties: the action first, so
a heartbeat due at a session's deadline is in time, as a real one sent a moment before would
be); an answer the engine completes later (a JoinGroup, a SyncGroup) is delivered right after
the step that completed it, in completion order.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

#: A timed action: (when, insertion order, the action, its argument).
Action = tuple[int, int, Callable[[Any], None], Any]


class Engine(Protocol):
    def next_deadline_ms(self) -> int | None: ...

    def may_be_due(self, now_ms: int) -> bool: ...

    def advance(self, now_ms: int) -> Any: ...


class VirtualTime:
    """The clock and agenda of one coordinator's run."""

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms
        self.heap: list[Action] = []
        self.order = itertools.count()
        #: Answers completed by a step, with their handlers, delivered after it.
        self.deliveries: deque[tuple[Callable[[Any], None], Any]] = deque()

    def at(self, when: int, action: Callable[[Any], None], argument: Any = None) -> None:
        """Run ``action(argument)`` at ``when`` (in insertion order among equal times)."""
        heapq.heappush(self.heap, (when, next(self.order), action, argument))

    def step(self, engine: Engine) -> bool:
        """Run the next thing due, then deliver the answers it completed; False when nothing
        is left to run."""
        heap = self.heap
        # The engine's deadline, or None when none can be due by the agenda's next action: most
        # steps are a member's wake-up long before any engine timer, and that is cheaper to ask
        # than the exact deadline.
        deadline = None if heap and not engine.may_be_due(heap[0][0]) else engine.next_deadline_ms()
        if heap and (deadline is None or heap[0][0] < deadline):
            when, _, action, argument = heapq.heappop(heap)
            self.now = when
            action(argument)
        elif deadline is not None:
            self.now = deadline
            engine.advance(deadline)
        else:
            return False
        deliveries = self.deliveries
        while deliveries:
            on_response, response = deliveries.popleft()
            on_response(response)
        return True
