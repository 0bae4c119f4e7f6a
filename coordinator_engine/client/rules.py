"""The rules every client shares: the host's clock only moves forward, an offset the
application hands over is an int64 >= 0, and a member with ``quiet_heartbeats`` keeps to the
ticks of its heartbeat interval (docs/engine.md, the clients' hooks for hosts in virtual
time)."""

from __future__ import annotations

from coordinator_engine.requests import INT64_MAX


def checked_time(now_ms: int, given_ms: object) -> int:
    """``given_ms``, the time a host passes in, once checked: an int, not before ``now_ms``."""
    if type(given_ms) is not int:
        raise TypeError(f"now_ms must be an int, got {type(given_ms).__name__}")
    if given_ms < now_ms:
        raise ValueError(f"time went backwards: {given_ms} < {now_ms}")
    return given_ms


def quiet_period_ms(session_timeout_ms: int, interval_ms: int) -> int:
    """How long a quiet member waits between heartbeats: the last regular tick before its
    session would end (at least one interval)."""
    return max(1, (session_timeout_ms - 1) // interval_ms) * interval_ms


def next_regular_tick_ms(last_sent_ms: int, now_ms: int, interval_ms: int) -> int:
    """The first tick of the heartbeat interval after ``now_ms``, counted from the last
    heartbeat sent: where a member heartbeating every interval would learn of a change."""
    return last_sent_ms + ((now_ms - last_sent_ms) // interval_ms + 1) * interval_ms


def check_offset(method: str, offset: object, of: object = None) -> None:
    """An offset the application passed to ``method`` (of partition ``of``, if named): an int
    in 0..INT64_MAX, else ValueError saying so."""
    if type(offset) is not int or not 0 <= offset <= INT64_MAX:
        where = "" if of is None else f" of {of}"
        raise ValueError(f"{method}: offset {offset!r}{where} must be an int >= 0")
