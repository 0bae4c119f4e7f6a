"""TurnBudget: a burst of work is spread over loop turns, in order, and the loop gets to run
its other callbacks (its socket I/O) between the shares."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from webapp.runtime.turns import TurnBudget

WORK_S = 0.002


def spin(seconds: float) -> None:
    """CPU-bound work, as handling a request is."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class TurnCounter:
    """Counts loop turns: a callback that schedules itself again runs once per turn."""

    def __init__(self) -> None:
        self.turn = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.turn += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


async def burst(budget: TurnBudget, turns: TurnCounter, size: int) -> list[tuple[int, int]]:
    """`size` tasks created in one turn, each waiting for the budget then working WORK_S;
    returns (task number, turn it worked in) in the order they worked."""
    done: list[tuple[int, int]] = []

    async def work(n: int) -> None:
        await budget.wait()
        done.append((n, turns.turn))
        spin(WORK_S)

    await asyncio.gather(*(work(n) for n in range(size)))
    return done


@pytest.mark.asyncio
async def test_a_burst_is_spread_over_turns_in_arrival_order() -> None:
    budget = TurnBudget(budget_s=0.005)
    turns = TurnCounter()
    try:
        done = await burst(budget, turns, 40)
    finally:
        turns.stop()
    assert [n for n, _ in done] == list(range(40))
    per_turn = Counter(turn for _, turn in done)
    # 2 ms pieces under a 5 ms budget: a turn admits a piece while it has spent < 5 ms, so
    # at most three; the 40 pieces (80 ms) take at least 14 turns, with the loop's other
    # callbacks (the counter here, socket I/O in the server) running between them.
    assert max(per_turn.values()) <= 3
    assert len(per_turn) >= 14
    assert budget.deferred > 0
    assert budget.waiting == 0


@pytest.mark.asyncio
async def test_light_work_is_admitted_at_once_without_a_turn_in_between() -> None:
    budget = TurnBudget(budget_s=0.005)
    turns = TurnCounter()
    try:
        before = turns.turn
        for _ in range(5):
            await budget.wait()
        assert turns.turn == before  # no wait() suspended
    finally:
        turns.stop()
    assert budget.deferred == 0


@pytest.mark.asyncio
async def test_a_newcomer_does_not_overtake_work_already_waiting() -> None:
    budget = TurnBudget(budget_s=0.005)
    order: list[str] = []

    async def work(name: str, seconds: float) -> None:
        await budget.wait()
        order.append(name)
        spin(seconds)

    first = asyncio.gather(*(work(f"early-{n}", 0.004) for n in range(4)))
    await asyncio.sleep(0)  # the early ones are admitted or queued
    await asyncio.gather(first, work("late", 0))
    assert order == ["early-0", "early-1", "early-2", "early-3", "late"]


@pytest.mark.asyncio
async def test_cancelled_waiters_leave_the_queue_and_the_rest_goes_on() -> None:
    budget = TurnBudget(budget_s=0.005)
    ran: list[int] = []

    async def work(n: int) -> None:
        await budget.wait()
        ran.append(n)
        spin(0.003)

    tasks = [asyncio.create_task(work(n)) for n in range(10)]
    await asyncio.sleep(0)  # 0 and 1 ran; the rest wait
    for task in tasks[2:6]:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert ran == [0, 1, 6, 7, 8, 9]
    assert sum(isinstance(r, asyncio.CancelledError) for r in results) == 4
    assert budget.waiting == 0


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget_s must be positive"):
        TurnBudget(budget_s=0)
