"""What the two heartbeat clients share: their requests in flight, their timers, their events.

``HandoffClient`` and ``ConsumerClient`` speak a heartbeat that carries the whole membership
(the handoff groups' HandoffHeartbeat, KIP-848's ConsumerGroupHeartbeat), plus OffsetCommit and
OffsetFetch, and both keep Kafka's consumer's discipline for them (``NetworkClientDelegate``
and the request managers of its ``AsyncKafkaConsumer``): one request of each kind in flight at
a time, in its slot (``SLOTS``: heartbeat, commit, offset fetch, leave); a request unanswered
for ``request_timeout_ms`` counts as failed; an answer to a request sent in an earlier
membership (``incarnation``: it goes up each time the member loses its membership) is
ignored; a failed leave is taken as done (leaving is best effort). ``SlottedClient`` holds
that, the host's clock (``_tick``), the events the host drains, and the reading of an
OffsetFetch answer (``_fetched_positions``). Each client says the rest: what an answer means
(``_answered``), what a failed request means (``_failed``) and what leaving means (``_left``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.errors import Errors
from coordinator_engine.responses import OffsetFetchResponse

from .events import ClientEvent
from .rules import checked_time

__all__ = ["SLOTS", "Flight", "SlottedClient", "Timers"]

TP = TopicPartitionPair

#: The request slots, one request in flight in each.
SLOTS = ("_heartbeat", "_commit", "_fetch", "_leave")

_NONE = Errors.NONE


@dataclass(slots=True)
class Flight:
    """One request in flight."""

    request: Any
    sent_ms: int
    deadline_ms: int
    #: The membership it was sent in: an answer from an earlier one is ignored.
    incarnation: int
    #: A commit: what it commits.
    offsets: dict[TP, int] | None = None
    #: A consumer-protocol commit: whether it is an auto-commit.
    auto: bool = False
    #: A handoff heartbeat: the closes and the starts it confirms.
    closed: frozenset[TP] = frozenset()
    started: frozenset[TP] = frozenset()


@dataclass(slots=True)
class Timers:
    """When each thing is due (virtual or wall milliseconds, as the host passes them)."""

    heartbeat_due_ms: int = 0
    heartbeat_sent_ms: int = 0
    heartbeat_retry_ms: int = 0
    commit_retry_ms: int = 0
    fetch_retry_ms: int = 0
    #: When the last answered heartbeat was sent: the coordinator's session runs from later.
    last_answered_sent_ms: int = 0
    close_deadline_ms: int = 0
    #: A consumer-protocol member: its last ``poll()`` (KIP-62's poll timer) and next
    #: auto-commit.
    poll_timer_start_ms: int = 0
    next_auto_commit_ms: int = 0


class _Settings(Protocol):
    @property
    def request_timeout_ms(self) -> int: ...
    @property
    def auto_offset_reset(self) -> str: ...


class SlottedClient:
    """The request slots, clock and events of a heartbeat client (the module docstring)."""

    #: Request type -> the response type that answers it.
    _ANSWERS: ClassVar[dict[type, type]]

    _config: _Settings

    def __init__(self, now_ms: int, timers: Timers) -> None:
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        self._now = now_ms
        self._closed = False
        self._fatal_error: int | None = None
        self._incarnation = 0
        self._heartbeat: Flight | None = None
        self._commit: Flight | None = None
        self._fetch: Flight | None = None
        self._leave: Flight | None = None
        self._timers = timers
        self._events: list[ClientEvent] = []
        #: Positions to commit, not in flight yet.
        self._to_commit: dict[TP, int] = {}
        self._committed: dict[TP, int] = {}

    # ------------------------------------------------------------------ the host's calls

    @property
    def closed(self) -> bool:
        """True once the client will send nothing more (closed, or failed)."""
        return self._closed

    @property
    def fatal_error(self) -> int | None:
        return self._fatal_error

    @property
    def committed(self) -> dict[TP, int]:
        """The last committed offset this member saw (fetched or committed), per partition."""
        return dict(self._committed)

    def events(self) -> list[ClientEvent]:
        """Drain the events that happened since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def receive(self, request: Any, response: Any, now_ms: int) -> None:
        """The answer to ``request`` (an object ``outgoing`` returned)."""
        now = self._tick(now_ms)
        expected = self._ANSWERS.get(type(request))
        if expected is None:
            raise TypeError(f"not a request this client sends: {type(request).__name__}")
        if type(response) is not expected and not isinstance(response, expected):
            raise TypeError(
                f"{type(request).__name__} is answered by {expected.__name__}, "
                f"not {type(response).__name__}"
            )
        if self._closed:
            return
        taken = self._take_flight(request)
        if taken is None:
            return  # an answer the client gave up waiting for
        slot, flight = taken
        if slot == "_leave":
            self._left(now)
        elif not self._outdated(slot, flight):
            self._answered(flight, response, now)

    def fail(self, request: Any, now_ms: int, reason: str = "disconnected") -> None:
        """``request`` will never be answered (its connection was lost)."""
        now = self._tick(now_ms)
        if self._closed:
            return
        taken = self._take_flight(request)
        if taken is not None:
            self._failed(*taken, now, reason)

    # ------------------------------------------------------------------ what each client says

    def _answered(self, flight: Flight, response: Any, now: int) -> None:
        """``flight``'s answer, from the membership it was sent in."""
        raise NotImplementedError

    def _retry_after_failure(self, flight: Flight, now: int, reason: str) -> None:
        """``flight`` failed without a verdict on the member (timed out, disconnected)."""
        raise NotImplementedError

    def _left(self, now: int) -> None:
        """The leave was answered, or given up."""
        raise NotImplementedError

    def _outdated(self, slot: str, flight: Flight) -> bool:
        """Whether an answer to ``flight`` (or its failure) no longer concerns the member: it
        was sent in an earlier membership."""
        return flight.incarnation != self._incarnation

    # ------------------------------------------------------------------ bookkeeping

    def _tick(self, now_ms: int) -> int:
        if type(now_ms) is int and now_ms >= self._now:  # every call: checked_time, inlined
            self._now = now_ms
            return now_ms
        self._now = now = checked_time(self._now, now_ms)
        return now

    def _emit(self, event: ClientEvent) -> None:
        self._events.append(event)

    def _commit_pending(self) -> bool:
        return self._commit is not None or bool(self._to_commit)

    def _flight(self, request: Any, now: int, **extra: Any) -> Flight:
        return Flight(
            request=request,
            sent_ms=now,
            deadline_ms=now + self._config.request_timeout_ms,
            incarnation=self._incarnation,
            **extra,
        )

    def _take_flight(self, request: Any) -> tuple[str, Flight] | None:
        """The slot and flight ``request`` belongs to, no longer in flight; None if the
        client gave up on it."""
        flight = self._heartbeat  # most answers: checked first, without getattr
        if flight is not None and flight.request is request:
            self._heartbeat = None
            return "_heartbeat", flight
        for slot in SLOTS:
            flight = getattr(self, slot)
            if flight is not None and flight.request is request:
                setattr(self, slot, None)
                return slot, flight
        return None

    def _expire_requests(self, now: int) -> None:
        if (
            self._heartbeat is None
            and self._commit is None
            and self._fetch is None
            and self._leave is None
        ):
            return
        for slot in SLOTS:
            flight: Flight | None = getattr(self, slot)
            if flight is not None and now >= flight.deadline_ms:
                setattr(self, slot, None)
                self._failed(slot, flight, now, f"{type(flight.request).__name__} timed out")

    def _failed(self, slot: str, flight: Flight, now: int, reason: str) -> None:
        if slot == "_leave":
            self._left(now)  # leaving is best effort, as in Kafka
        elif not self._outdated(slot, flight):
            self._retry_after_failure(flight, now, reason)

    def _fetched_positions(
        self, response: OffsetFetchResponse, asked: Iterable[TP]
    ) -> dict[TP, int]:
        """The positions to consume ``asked`` from, of those an OffsetFetch answer gives
        without error: the committed offset (remembered in ``committed``), else the reset
        policy's (0 for "earliest", -1 for the host to resolve)."""
        wanted = asked if isinstance(asked, (set, frozenset)) else set(asked)
        reset_to = 0 if self._config.auto_offset_reset == "earliest" else -1
        positions: dict[TP, int] = {}
        for data in response.partitions:
            tp = (data.topic, data.partition)
            if tp not in wanted or data.error_code != _NONE:
                continue
            if data.offset >= 0:
                self._committed[tp] = data.offset
                positions[tp] = data.offset
            else:
                positions[tp] = reset_to
        return positions
