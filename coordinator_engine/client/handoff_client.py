"""``HandoffClient``: one member of a handoff group, as a sans-IO state machine.

Theory of operation
===================

A handoff group's coordinator decides the assignment and moves a partition in two confirmed
steps (docs/engine.md, "Handoff groups"): its old owner **closes** it (stops consuming, commits
its offset, confirms) and only then may the new owner **start** it. The member speaks one
request, ``HandoffHeartbeatRequest`` (modelled on KIP-848's ConsumerGroupHeartbeat), plus the
ordinary OffsetCommit and OffsetFetch. This client is that member, driven like ``GroupClient``
(the same calls, so ``webapp.simulation.client_driver.ClientDriver`` drives both): the host
passes the time into every call and moves the requests.

* **Identity.** The member draws its own id (KIP-1082: a random UUID, Kafka's 22-character
  base64 spelling; ``member_id_factory`` sets it for tests) and joins with epoch 0. Once in the
  group it sends the epoch of the last answer, at least 1 (0 would mean "I restarted").
* **Heartbeats** every ``heartbeat_interval_ms``, and at once when there is something new to
  confirm. Each carries ``closed`` and ``started``: the confirmations the coordinator is still
  asking for (the partitions of the last answer's ``close`` this member has committed and
  stopped; those of its ``start`` it consumes). A confirmation is repeated until an answer no
  longer asks for it (the coordinator ignores confirmations it did not ask for).
  With ``quiet_heartbeats`` (a host in virtual time that watches the coordinator's events),
  a member with nothing to do in a Stable group heartbeats at the last regular tick before
  its session ends, and at its next regular tick once the host calls ``group_changed``.
* **Close** (the answer's ``close``): ``PartitionsToClose``; the application stops those
  partitions and hands their positions to ``partitions_stopped``; the client commits them
  (OffsetCommit with its member id) and confirms the close only once the commit succeeded. A
  failed commit is retried after ``retry_backoff_ms`` and the close stays unconfirmed: the
  partition is held in Closing rather than started elsewhere from an older offset.
* **Start** (the answer's ``start``): OffsetFetch for the granted partitions, then
  ``PartitionsToStart`` with the positions to consume from (the committed offset, else the
  reset policy's), and the start is confirmed.
* **Commits** while it works: ``commit()`` commits the positions of the partitions it consumes
  (``record_consumed``), as a consumer commits periodically; the position of a stopped
  partition is committed for its close, and only that commit confirms the close.
* **Errors**, as the classic client: ``UNKNOWN_MEMBER_ID`` (or no heartbeat answered for a
  session timeout, when the coordinator must be taken to have removed the member) → every
  partition is lost (``PartitionsLost``: stop without committing, another member may own them
  already) and the member joins again with epoch 0 and a fresh id; ``COORDINATOR_NOT_AVAILABLE``,
  ``NOT_COORDINATOR``, ``COORDINATOR_LOAD_IN_PROGRESS``, a lost or timed-out request → retried
  after ``retry_backoff_ms`` (the partitions are kept); ``INCONSISTENT_GROUP_PROTOCOL``,
  ``INVALID_SESSION_TIMEOUT``, ``INVALID_GROUP_ID``, ``GROUP_AUTHORIZATION_FAILED`` and any
  error the protocol does not list → ``FatalError`` and the client stops.
* **Close.** ``close(now)``: commit the positions of everything consumed (at most
  ``timeout_ms``), then leave with epoch −1.
* **A lost connection.** A coordinator that watches its members' connections removes a member
  as soon as its connection ends (the lab's discovery); a host whose connection dropped calls
  ``connection_lost(now)``: everything is lost, and the member joins again with a fresh id.

The client sends its requests to the coordinator the transport reaches (the lab's transports
reach it directly): it does not look the coordinator up (no FindCoordinator), and retries a
coordinator error in place.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.errors import Errors
from coordinator_engine.requests import (
    INT64_MAX,
    HandoffHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    PartitionOffset,
    TopicPartition,
    check_str,
    trusted_constructor,
)
from coordinator_engine.responses import (
    HandoffHeartbeatResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)

from .config import HandoffConfig
from .events import (
    CloseConfirmed,
    CommitCompleted,
    CommitFailed,
    CoordinatorLost,
    FatalError,
    HandoffJoined,
    LeftGroup,
    PartitionsLost,
    PartitionsToClose,
    PartitionsToStart,
    StartConfirmed,
)
from .flights import Flight, SlottedClient, Timers
from .rules import check_offset, next_regular_tick_ms, quiet_period_ms

__all__ = [
    "HANDOFF_CLOSE_REASON",
    "HandoffClient",
    "HandoffRequest",
    "HandoffResponse",
    "new_member_id",
]

#: Every request the handoff client sends.
HandoffRequest = HandoffHeartbeatRequest | OffsetCommitRequest | OffsetFetchRequest
#: Every response it reads.
HandoffResponse = HandoffHeartbeatResponse | OffsetCommitResponse | OffsetFetchResponse

HANDOFF_CLOSE_REASON = "the consumer is being closed"

TP = TopicPartitionPair
_NONE = Errors.NONE
#: Retried after the backoff; the member keeps what it holds.
_RETRIABLE = frozenset(
    {
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
#: What each fatal heartbeat error means, in words.
_FATAL: dict[int, str] = {
    Errors.INCONSISTENT_GROUP_PROTOCOL: "the group is not a handoff group (a classic group "
    "has this id)",
    Errors.INVALID_SESSION_TIMEOUT: "the coordinator refuses this session timeout "
    "(group.min/max.session.timeout.ms)",
    Errors.INVALID_GROUP_ID: "the group id is not valid",
    Errors.GROUP_AUTHORIZATION_FAILED: "not authorized to use the group",
}


def new_member_id() -> str:
    """A fresh member id: a random UUID in Kafka's ``Uuid.toString()`` spelling (url-safe
    base64, no padding, 22 characters), as KIP-1082's clients draw at start."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def _sorted(partitions: Iterable[TP]) -> tuple[TP, ...]:
    return tuple(sorted(partitions))


# The requests the client builds hold values that fit their Kafka types by construction (its
# checked config and positions, a member id checked when drawn): built without the field
# checks, which would otherwise run on every request of every member.
_heartbeat_request = trusted_constructor(HandoffHeartbeatRequest)
_offset_commit_request = trusted_constructor(OffsetCommitRequest)
_partition_offset = trusted_constructor(PartitionOffset)
_offset_fetch_request = trusted_constructor(OffsetFetchRequest)
_topic_partition = trusted_constructor(TopicPartition)


def _tps(partitions: Iterable[TP]) -> tuple[TopicPartition, ...]:
    return tuple(_topic_partition(topic=t, partition=p) for t, p in sorted(partitions))


class HandoffClient(SlottedClient):
    """One member of a handoff group (see the module docstring for how a host drives it)."""

    _ANSWERS: ClassVar[dict[type, type]] = {
        HandoffHeartbeatRequest: HandoffHeartbeatResponse,
        OffsetCommitRequest: OffsetCommitResponse,
        OffsetFetchRequest: OffsetFetchResponse,
    }
    _config: HandoffConfig

    def __init__(
        self,
        config: HandoffConfig,
        now_ms: int,
        *,
        member_id_factory: Callable[[], str] | None = None,
        quiet_heartbeats: bool = False,
    ) -> None:
        if not isinstance(config, HandoffConfig):
            raise TypeError(f"config must be a HandoffConfig, got {type(config).__name__}")
        super().__init__(now_ms, Timers())
        self._config = config
        self._new_id = member_id_factory if member_id_factory is not None else new_member_id
        self._member_id = self._draw_member_id()
        self._started = False
        self._leaving = False
        self._joined = False
        self._epoch = 0
        self._group_state = ""
        self._assignment: frozenset[TP] = frozenset()
        #: The answer's partitions ``_assignment`` was read from: an engine in the same process
        #: answers a settled member with the same tuple, read once.
        self._assignment_read: tuple[TopicPartition, ...] = ()
        #: Started and not stopped: what the application consumes.
        self._consuming: set[TP] = set()
        self._positions: dict[TP, int] = {}
        #: Asked to close, the application has not stopped them yet.
        self._closing: set[TP] = set()
        #: Stopped for a close: the position whose commit confirms it.
        self._stopped: dict[TP, int] = {}
        #: Committed and stopped: to confirm in ``closed``.
        self._closed_ready: set[TP] = set()
        #: Granted: their committed offsets to fetch.
        self._to_fetch: set[TP] = set()
        #: Started: to confirm in ``started``.
        self._started_ready: set[TP] = set()
        self._heartbeat_now = True
        #: The last heartbeat with nothing to confirm, resent while member id and epoch hold.
        self._plain_heartbeat: HandoffHeartbeatRequest | None = None
        if type(quiet_heartbeats) is not bool:
            raise TypeError("quiet_heartbeats must be a bool")
        self._quiet_heartbeats = quiet_heartbeats
        #: A quiet member's heartbeat period: the last regular tick before its session ends.
        interval = config.heartbeat_interval_ms
        self._quiet_interval_ms = quiet_period_ms(config.session_timeout_ms, interval)

    # ------------------------------------------------------------------ public state

    @property
    def config(self) -> HandoffConfig:
        return self._config

    @property
    def member_id(self) -> str:
        """This member's own id (a new one after it lost its membership)."""
        return self._member_id

    @property
    def joined(self) -> bool:
        """Whether the coordinator counts this member in the group."""
        return self._joined

    @property
    def epoch(self) -> int:
        """The group's epoch in the last answer (the plan in force); 0 before joining."""
        return self._epoch

    @property
    def group_state(self) -> str:
        """The group's state in the last answer ("" before joining)."""
        return self._group_state

    @property
    def assignment(self) -> frozenset[TP]:
        """The coordinator's target for this member once the handoffs are done (display)."""
        return self._assignment

    @property
    def consuming(self) -> frozenset[TP]:
        """The partitions the application consumes: started, and not stopped yet."""
        return frozenset(self._consuming)

    @property
    def closing(self) -> frozenset[TP]:
        """The partitions the application was asked to stop and has not stopped yet."""
        return frozenset(self._closing)

    @property
    def positions(self) -> dict[TP, int]:
        """The next offset to consume of each partition consumed."""
        return dict(self._positions)

    # ------------------------------------------------------------------ the application's calls

    def poll(self, now_ms: int) -> None:
        """The application is running: the member joins (nothing is sent before the first
        call). A handoff member has no ``max.poll.interval.ms``: its heartbeats keep it in."""
        self._tick(now_ms)
        if not self._closed and not self._leaving:
            self._started = True

    def record_consumed(self, topic: str, partition: int, next_offset: int) -> None:
        """The application consumed a partition up to ``next_offset`` (the next to read).
        Ignored for a partition it does not consume (one just lost, say)."""
        check_offset("record_consumed", next_offset)
        if (topic, partition) in self._consuming:
            self._positions[topic, partition] = next_offset

    def partitions_stopped(self, positions: Mapping[TP, int]) -> None:
        """The application stopped these partitions (asked in ``PartitionsToClose``) at these
        positions (the next offset to read; −1: nothing to commit). The client commits them and
        confirms the close once the commit succeeded."""
        checked: dict[TP, int] = {}
        for tp, offset in positions.items():
            if tp not in self._closing:
                raise ValueError(f"partitions_stopped: {tp!r} was not asked to close")
            if type(offset) is not int or not -1 <= offset <= INT64_MAX:
                raise ValueError(f"partitions_stopped: offset {offset!r} of {tp} must be >= -1")
            checked[tp] = offset
        for tp, offset in checked.items():
            self._closing.discard(tp)
            self._consuming.discard(tp)
            self._positions.pop(tp, None)
            if offset < 0:
                self._confirm_closed({tp})
            else:
                self._to_commit[tp] = self._stopped[tp] = offset

    def commit(self, offsets: Mapping[TP, int] | None = None) -> None:
        """Commit ``offsets`` of partitions it consumes (default: the position of every
        partition consumed and not asked to close), as a consumer commits while it works; a
        CommitCompleted or CommitFailed event tells the outcome. Retriable errors are retried.
        A close is confirmed by the commit of the stopped position only, never by these."""
        if self._closed or self._leaving:
            raise RuntimeError("the client is closed")
        if offsets is None:
            closing = self._closing
            offsets = {
                tp: offset
                for tp, offset in self._positions.items()
                if offset >= 0 and tp not in closing
            }
        checked: dict[TP, int] = {}
        for tp, offset in offsets.items():
            if tp not in self._consuming:
                raise ValueError(f"commit: {tp!r} is not a partition this member consumes")
            check_offset("commit", offset, tp)
            checked[tp] = offset
        self._to_commit.update(checked)

    def group_changed(self, now_ms: int) -> None:
        """The host learnt that the group changed (a plan was made, partitions were granted or
        asked to close: it watches the coordinator's events). A member with
        ``quiet_heartbeats`` heartbeats again at its next regular tick, where a member
        heartbeating every ``heartbeat_interval_ms`` would have learnt of the change; otherwise
        nothing changes."""
        now = self._tick(now_ms)
        if not self._quiet_heartbeats or self._heartbeat is not None or not self._joined:
            return
        t = self._timers
        tick = next_regular_tick_ms(t.heartbeat_sent_ms, now, self._config.heartbeat_interval_ms)
        if tick < t.heartbeat_due_ms:
            t.heartbeat_due_ms = tick

    def close(self, now_ms: int, timeout_ms: int = 30000) -> None:
        """Leave the group: commit the positions of every partition consumed (waited for at
        most ``timeout_ms``), then a leave heartbeat (epoch −1). The application has stopped
        consuming. Keep calling ``outgoing``/``receive`` until ``closed``."""
        now = self._tick(now_ms)
        if self._closed or self._leaving:
            return
        if not self._started:
            self._closed = True
            return
        self._leaving = True
        self._timers.close_deadline_ms = now + timeout_ms
        for tp in self._consuming:
            position = self._positions.get(tp, -1)
            if position >= 0:
                self._to_commit[tp] = position
        self._consuming.clear()
        self._closing.clear()
        self._positions.clear()
        self._to_fetch.clear()

    def connection_lost(self, now_ms: int) -> None:
        """The host's connection to the coordinator ended. A coordinator that learns of its
        members from their connections (the handoff discovery; the lab's server) has removed
        this member already and may have given its partitions away: everything is lost now,
        and the member joins again with a fresh id once it can send."""
        now = self._tick(now_ms)
        if self._closed or not self._joined:
            return
        if self._leaving:
            self._joined = False  # gone: nothing to commit or leave any more
            return
        self._lose_membership("the connection to the coordinator was lost", now)

    # ------------------------------------------------------------------ the transport's calls

    def outgoing(self, now_ms: int) -> list[HandoffRequest]:
        """The requests to send now, in order."""
        now = self._tick(now_ms)
        out: list[HandoffRequest] = []
        if self._closed or not self._started:
            return out
        self._expire_requests(now)
        if self._closed:
            return out
        if self._leaving:
            self._outgoing_while_leaving(now, out)
            return out
        if self._joined and now >= self._session_deadline():
            self._lose_membership("no heartbeat answered for a session timeout", now)
        if self._to_commit:
            self._maybe_commit(now, out)
        if self._to_fetch:
            self._maybe_fetch(now, out)
        self._maybe_heartbeat(now, out)
        return out

    def next_deadline_ms(self) -> int | None:
        """When ``outgoing`` must be called next at the latest; None when nothing is timed."""
        if self._closed or not self._started:
            return None
        t = self._timers
        if (
            self._joined
            and self._heartbeat is None
            and self._commit is None
            and self._fetch is None
            and self._leave is None
            and not self._leaving
            and not self._heartbeat_now
            and not self._to_commit
            and not self._to_fetch
        ):
            # A member between heartbeats (most calls): the deadlines below, without the lists.
            due = t.heartbeat_due_ms
            retry = t.heartbeat_retry_ms
            if retry > due:
                due = retry
            session = self._session_deadline()
            return due if due < session else session
        flights = [self._heartbeat, self._commit, self._fetch, self._leave]
        deadlines = [f.deadline_ms for f in flights if f is not None]
        if self._leaving:
            if self._leave is None:
                if self._commit_pending():
                    deadlines.append(t.close_deadline_ms)
                    if self._to_commit and self._commit is None:
                        deadlines.append(max(t.commit_retry_ms, self._now))
                else:
                    deadlines.append(self._now)
            return min(deadlines)
        if self._heartbeat is None:
            due = t.heartbeat_due_ms
            if self._heartbeat_now or not self._joined:
                due = self._now
            deadlines.append(max(due, t.heartbeat_retry_ms))
        if self._joined:
            deadlines.append(self._session_deadline())
            if self._to_commit and self._commit is None:
                deadlines.append(max(t.commit_retry_ms, self._now))
            if self._to_fetch and self._fetch is None:
                deadlines.append(max(t.fetch_retry_ms, self._now))
        return min(deadlines)

    # ------------------------------------------------------------------ bookkeeping

    def _draw_member_id(self) -> str:
        member_id = self._new_id()
        if not isinstance(member_id, str) or not member_id:
            raise ValueError(f"member_id_factory gave {member_id!r}, not a non-empty str")
        check_str("HandoffClient", "member_id", member_id)  # requests carry it unchecked
        return member_id

    def _session_deadline(self) -> int:
        return self._timers.last_answered_sent_ms + self._config.session_timeout_ms

    def _answered(self, flight: Flight, response: HandoffResponse, now: int) -> None:
        match response:
            case HandoffHeartbeatResponse():
                self._on_heartbeat(flight, response, now)
            case OffsetCommitResponse():
                self._on_commit(flight, response, now)
            case OffsetFetchResponse():
                self._on_fetch(response, now)

    def _outdated(self, slot: str, flight: Flight) -> bool:
        """Sent in an earlier membership, or while leaving (only its commits still count)."""
        return flight.incarnation != self._incarnation or (self._leaving and slot != "_commit")

    def _retry_after_failure(self, flight: Flight, now: int, reason: str) -> None:
        """A request failed without a verdict on the member: retry it after the backoff."""
        retry = now + self._config.retry_backoff_ms
        self._emit(CoordinatorLost(at_ms=now, reason=reason))
        match flight.request:
            case HandoffHeartbeatRequest():
                self._timers.heartbeat_retry_ms = retry
                self._heartbeat_now = True
            case OffsetCommitRequest():
                self._requeue_commit(flight.offsets or {})
                self._timers.commit_retry_ms = retry
            case OffsetFetchRequest():
                self._timers.fetch_retry_ms = retry

    def _requeue_commit(self, offsets: Mapping[TP, int]) -> None:
        for tp, offset in offsets.items():
            self._to_commit.setdefault(tp, offset)

    # ------------------------------------------------------------------ heartbeats

    def _maybe_heartbeat(self, now: int, out: list[HandoffRequest]) -> None:
        t = self._timers
        if self._heartbeat is not None or now < t.heartbeat_retry_ms:
            return
        if self._joined and not self._heartbeat_now and now < t.heartbeat_due_ms:
            return
        cfg = self._config
        epoch = max(self._epoch, 1) if self._joined else 0
        if self._closed_ready or self._started_ready:
            closed = frozenset(self._closed_ready)
            started = frozenset(self._started_ready)
            request = self._heartbeat_request(epoch, _tps(closed), _tps(started))
        else:
            # Most heartbeats confirm nothing: the same request as the last such one.
            closed = started = _NO_TPS
            plain = self._plain_heartbeat
            if plain is None or plain.member_epoch != epoch or plain.member_id != self._member_id:
                plain = self._plain_heartbeat = self._heartbeat_request(epoch, (), ())
            request = plain
        self._heartbeat = Flight(
            request,
            now,
            now + cfg.request_timeout_ms,
            self._incarnation,
            closed=closed,
            started=started,
        )
        self._heartbeat_now = False
        t.heartbeat_due_ms = now + cfg.heartbeat_interval_ms
        t.heartbeat_sent_ms = now
        out.append(request)

    def _heartbeat_request(
        self,
        epoch: int,
        closed: tuple[TopicPartition, ...],
        started: tuple[TopicPartition, ...],
    ) -> HandoffHeartbeatRequest:
        cfg = self._config
        return _heartbeat_request(
            group_id=cfg.group_id,
            member_id=self._member_id,
            member_epoch=epoch,
            session_timeout_ms=cfg.session_timeout_ms,
            topics=cfg.topics,
            closed=closed,
            started=started,
            client_id=cfg.client_id,
            client_host=cfg.client_host,
        )

    def _on_heartbeat(self, flight: Flight, response: HandoffHeartbeatResponse, now: int) -> None:
        error = response.error_code
        if error == _NONE:
            self._on_heartbeat_answered(flight, response, now)
            if (
                self._quiet_heartbeats
                and response.group_state == "Stable"
                and not self._heartbeat_now
                and not (self._closing or self._to_fetch or self._to_commit or self._commit)
            ):
                # Nothing to confirm or wait for: the next heartbeat only keeps the session.
                self._timers.heartbeat_due_ms = flight.sent_ms + self._quiet_interval_ms
        elif error == Errors.UNKNOWN_MEMBER_ID:
            self._lose_membership("HandoffHeartbeat answered UNKNOWN_MEMBER_ID", now)
        elif error in _RETRIABLE:
            self._retry_after_failure(flight, now, f"HandoffHeartbeat answered {_name(error)}")
        else:
            words = _FATAL.get(error, "an error the handoff protocol does not expect")
            self._fail_fatally(error, f"HandoffHeartbeat answered {_name(error)}: {words}", now)

    def _on_heartbeat_answered(
        self, flight: Flight, response: HandoffHeartbeatResponse, now: int
    ) -> None:
        if not self._joined:
            self._joined = True
            self._emit(
                HandoffJoined(at_ms=now, member_id=self._member_id, epoch=response.member_epoch)
            )
        self._timers.last_answered_sent_ms = flight.sent_ms
        self._epoch = response.member_epoch
        self._group_state = response.group_state
        if response.assignment is not self._assignment_read:
            self._assignment_read = response.assignment
            self._assignment = frozenset([(p.topic, p.partition) for p in response.assignment])
        if not (response.close or response.start or flight.closed or flight.started):
            return  # nothing asked, nothing confirmed: the common answer of a settled group
        close = {(p.topic, p.partition) for p in response.close}
        start = {(p.topic, p.partition) for p in response.start}
        taken_closes = (flight.closed & self._closed_ready) - close
        if taken_closes:
            self._closed_ready -= taken_closes
            self._emit(CloseConfirmed(at_ms=now, partitions=_sorted(taken_closes)))
        taken_starts = (flight.started & self._started_ready) - start
        if taken_starts:
            self._started_ready -= taken_starts
            self._emit(StartConfirmed(at_ms=now, partitions=_sorted(taken_starts)))
        in_commit = set(self._to_commit) | (
            set(self._commit.offsets or ()) if self._commit is not None else set()
        )
        new_close: set[TP] = set()
        for tp in close:
            if tp in self._consuming:
                if tp not in self._closing:
                    new_close.add(tp)
            elif tp in self._to_fetch:
                # Granted, never started: nothing was consumed, so nothing to commit.
                self._to_fetch.discard(tp)
                self._confirm_closed({tp})
            elif tp not in in_commit and tp not in self._closed_ready:
                self._confirm_closed({tp})  # not consumed here: closed already
        if new_close:
            self._closing |= new_close
            self._started_ready -= new_close
            self._emit(PartitionsToClose(at_ms=now, partitions=_sorted(new_close)))
        for tp in start:
            if tp in self._consuming:
                if tp not in self._started_ready and tp not in self._closing:
                    self._started_ready.add(tp)  # started; its confirmation went missing
                    self._heartbeat_now = True
            elif tp not in close and tp not in in_commit:
                self._to_fetch.add(tp)

    def _confirm_closed(self, partitions: set[TP]) -> None:
        new = partitions - self._closed_ready
        if new:
            self._closed_ready |= new
            self._heartbeat_now = True

    def _lose_membership(self, reason: str, now: int) -> None:
        """The coordinator no longer counts this member: whatever it holds may be someone
        else's already. Stop without committing; join again with epoch 0 and a fresh id."""
        lost = self._consuming | self._closing
        if lost:
            self._emit(PartitionsLost(at_ms=now, partitions=_sorted(lost)))
        dropped = dict(self._to_commit)
        if self._commit is not None:
            dropped.update(self._commit.offsets or {})
        if dropped:
            self._emit(
                CommitFailed(
                    at_ms=now,
                    offsets=dict(sorted(dropped.items())),
                    auto=False,
                    error_code=Errors.UNKNOWN_MEMBER_ID,
                    reason=f"the member was lost ({reason})",
                )
            )
        self._incarnation += 1
        self._joined = False
        self._epoch = 0
        self._group_state = ""
        self._assignment = frozenset()
        self._assignment_read = ()
        self._consuming.clear()
        self._positions.clear()
        self._closing.clear()
        self._to_commit.clear()
        self._stopped.clear()
        self._closed_ready.clear()
        self._to_fetch.clear()
        self._started_ready.clear()
        self._heartbeat = self._commit = self._fetch = None
        self._heartbeat_now = True
        self._member_id = self._draw_member_id()
        self._emit(CoordinatorLost(at_ms=now, reason=f"member lost: {reason}"))

    def _fail_fatally(self, error: int, reason: str, now: int) -> None:
        lost = self._consuming | self._closing
        if lost:
            self._emit(PartitionsLost(at_ms=now, partitions=_sorted(lost)))
        self._consuming.clear()
        self._closing.clear()
        self._positions.clear()
        self._fatal_error = error
        self._closed = True
        self._emit(FatalError(at_ms=now, error_code=error, reason=reason))

    # ------------------------------------------------------------------ commits

    def _maybe_commit(self, now: int, out: list[HandoffRequest]) -> None:
        if (
            not self._to_commit
            or self._commit is not None
            or not self._joined
            or now < self._timers.commit_retry_ms
        ):
            return
        offsets, self._to_commit = dict(sorted(self._to_commit.items())), {}
        request = _offset_commit_request(
            group_id=self._config.group_id,
            generation_id=max(self._epoch, 1),
            member_id=self._member_id,
            offsets=tuple(
                _partition_offset(topic=t, partition=p, offset=o) for (t, p), o in offsets.items()
            ),
        )
        self._commit = self._flight(request, now, offsets=offsets)
        out.append(request)

    def _on_commit(self, flight: Flight, response: OffsetCommitResponse, now: int) -> None:
        sent = flight.offsets or {}
        done: dict[TP, int] = {}
        failed: dict[TP, int] = {}
        error: int = _NONE
        for result in response.partitions:
            tp = (result.topic, result.partition)
            if tp not in sent:
                continue
            if result.error_code == _NONE:
                done[tp] = sent[tp]
            else:
                failed[tp] = sent[tp]
                error = error or result.error_code
        failed.update({tp: o for tp, o in sent.items() if tp not in done})
        if done:
            self._committed.update(done)
            self._emit(CommitCompleted(at_ms=now, offsets=done, auto=False))
            stopped = self._stopped
            confirmed = {tp for tp, offset in done.items() if stopped.get(tp) == offset}
            if confirmed:
                for tp in confirmed:
                    del stopped[tp]
                if not self._leaving:
                    self._confirm_closed(confirmed)
        if not failed:
            return
        if error == Errors.UNKNOWN_MEMBER_ID and not self._leaving:
            self._to_commit.update(failed)  # reported as dropped with the membership
            self._lose_membership("OffsetCommit answered UNKNOWN_MEMBER_ID", now)
            return
        gone = error == Errors.UNKNOWN_MEMBER_ID
        self._emit(
            CommitFailed(
                at_ms=now,
                offsets=failed,
                auto=False,
                error_code=error or None,
                reason=f"OffsetCommit answered {_name(error)}"
                + ("" if gone else "; retried (a close stays unconfirmed until then)"),
            )
        )
        if gone:
            self._joined = False  # leaving, and gone already: nothing to commit or leave
            return
        self._requeue_commit(failed)
        self._timers.commit_retry_ms = now + self._config.retry_backoff_ms

    # ------------------------------------------------------------------ committed offsets

    def _maybe_fetch(self, now: int, out: list[HandoffRequest]) -> None:
        if (
            not self._to_fetch
            or self._fetch is not None
            or not self._joined
            or now < self._timers.fetch_retry_ms
        ):
            return
        request = _offset_fetch_request(
            group_id=self._config.group_id, partitions=_tps(self._to_fetch)
        )
        self._fetch = self._flight(request, now)
        out.append(request)

    def _on_fetch(self, response: OffsetFetchResponse, now: int) -> None:
        if response.error_code != _NONE:
            self._timers.fetch_retry_ms = now + self._config.retry_backoff_ms
            return
        positions = self._fetched_positions(response, self._to_fetch)
        if self._to_fetch - set(positions):
            self._timers.fetch_retry_ms = now + self._config.retry_backoff_ms
        if not positions:
            return
        self._to_fetch -= set(positions)
        self._consuming |= set(positions)
        self._positions.update(positions)
        self._started_ready |= set(positions)
        self._heartbeat_now = True
        self._emit(
            PartitionsToStart(
                at_ms=now, partitions=_sorted(positions), positions=dict(sorted(positions.items()))
            )
        )

    # ------------------------------------------------------------------ leaving

    def _outgoing_while_leaving(self, now: int, out: list[HandoffRequest]) -> None:
        if self._leave is not None:
            return
        if self._joined and self._commit_pending() and now < self._timers.close_deadline_ms:
            self._maybe_commit(now, out)
            return
        if not self._joined:
            self._left(now, sent=False)
            return
        cfg = self._config
        request = _heartbeat_request(
            group_id=cfg.group_id,
            member_id=self._member_id,
            member_epoch=-1,
            session_timeout_ms=cfg.session_timeout_ms,
            topics=cfg.topics,
            client_id=cfg.client_id,
            client_host=cfg.client_host,
        )
        self._leave = self._flight(request, now)
        out.append(request)

    def _left(self, now: int, *, sent: bool = True) -> None:
        self._closed = True
        self._joined = False
        self._emit(
            LeftGroup(
                at_ms=now,
                member_id=self._member_id,
                reason=HANDOFF_CLOSE_REASON,
                leave_group_sent=sent,
            )
        )


_NO_TPS: frozenset[TP] = frozenset()

#: The attributes holding the requests in flight, at most one of each kind.


def _name(code: int) -> str:
    return Errors.name_of(code)
