"""Beat's stop signals wait for the end of a turn (webapp.housekeeping.liveness): Celery's
handler raises SystemExit wherever beat is, and raised inside the Redis client while a task was
being sent it broke the connection mid-reply and beat logged a traceback as it stopped. Real
signals, sent to this process."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from webapp.housekeeping.liveness import STOP_SIGNALS, stop_signals_deferred


@pytest.fixture
def handled() -> Iterator[list[str]]:
    """What the stop signals' handlers (this test's) did, in order."""
    seen: list[str] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        seen.append(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield seen
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def test_a_stop_signal_during_a_turn_is_handled_when_the_turn_ends(handled: list[str]) -> None:
    handler = signal.getsignal(signal.SIGTERM)
    with stop_signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)  # delivered before kill returns
        sum(range(10_000))  # bytecodes enough for a pending handler to have run
        handled.append("the turn's end")
    assert handled == ["the turn's end", "SIGTERM"]
    assert signal.getsignal(signal.SIGTERM) is handler  # the handlers are back


def test_a_second_stop_signal_during_a_turn_is_handled_at_once(handled: list[str]) -> None:
    # A turn stuck on a database that does not answer still stops on a second Ctrl-C.
    with stop_signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(10_000))
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))
        handled.append("the turn's end")
    assert handled == ["SIGINT", "the turn's end"]


def test_outside_a_turn_a_stop_signal_is_handled_at_once(handled: list[str]) -> None:
    with stop_signals_deferred():
        handled.append("a turn")
    os.kill(os.getpid(), signal.SIGTERM)
    sum(range(10_000))
    handled.append("after")
    assert handled == ["a turn", "SIGTERM", "after"]


def test_celery_s_handler_stops_beat_at_the_end_of_the_turn(handled: list[str]) -> None:
    def celery_s(signum: int, frame: FrameType | None) -> None:  # celery.apps.beat's _sync
        raise SystemExit()

    signal.signal(signal.SIGTERM, celery_s)
    with pytest.raises(SystemExit), stop_signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(10_000))
        handled.append("sent")  # reached: the signal waited
    assert handled == ["sent"]
