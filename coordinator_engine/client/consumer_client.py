"""``ConsumerClient``: one member of a consumer group (KIP-848), as a sans-IO state machine.

Theory of operation
===================

In Kafka 4's consumer protocol the coordinator assigns; a member heartbeats, is told its
assignment, moves to it, and says so. This client is that member, following Kafka's own
(``AbstractMembershipManager`` / ``ConsumerMembershipManager`` for the membership and the
reconciliation, ``ConsumerHeartbeatRequestManager`` and ``HeartbeatRequestState`` for the
heartbeat, ``CommitRequestManager`` for commits), driven like ``HandoffClient`` (the same
calls, so ``ClientDriver`` drives it): the host passes the time into every call and moves the
requests. It speaks ConsumerGroupHeartbeat, OffsetCommit (the member epoch as generation) and
OffsetFetch (member id and epoch), naming topics (the engine works with names).

* **Identity.** The member draws its id once (KIP-1082: a random UUID in Kafka's 22-character
  spelling; ``member_id_factory`` sets it for tests) and keeps it for its whole life: a fenced
  member joins again under the same id with epoch 0.
* **Heartbeats** (``ConsumerHeartbeatRequestManager``): the join (epoch 0) is full: rebalance
  timeout, subscription, server assignor, owned ``()``. Later ones send each field only when it
  changed since it was last sent, and the owned partitions only with the first heartbeat after
  the member's assignment changed (``HeartbeatState.sentFields``); any failed heartbeat forgets
  what was sent, so the next one is full again. Every ``heartbeat_interval_ms`` of the last
  answer, at once in JOINING and ACKNOWLEDGING, never two in flight. With
  ``quiet_heartbeats`` (a host in virtual time that watches the coordinator's events), a
  STABLE member with nothing to do heartbeats at the last interval tick before its session
  would end, and at its next regular tick once the host calls ``group_changed``.
* **Reconciliation** (``AbstractMembershipManager.maybeReconcile``): an answer's assignment is
  the member's target. When it differs from what the member owns: the partitions to revoke
  stop being fetchable at once (``fetchable``), the consumed positions are committed (with
  ``enable_auto_commit``; waited for, at most ``rebalance_timeout_ms``, a STALE_MEMBER_EPOCH
  retried with the epoch the heartbeats bring, as ``maybeAutoCommitSyncBeforeRevocation``),
  then ``PartitionsRevoked`` and ``PartitionsAssigned`` (always, as Kafka calls
  ``onPartitionsAssigned`` even with nothing new), and the member is ACKNOWLEDGING: its next
  heartbeat, sent at once, lists what it owns now, which is how the coordinator learns that
  the revoked partitions are free. One reconciliation at a time; a target that moved meanwhile
  is reconciled after the acknowledgement. The coordinator may hand the target over in steps
  (partitions another member has not released yet): each step is a reconciliation.
* **New partitions** get an OffsetFetch (member id and epoch), then ``OffsetsFetched`` with the
  positions to consume from (the committed offset, else the reset policy's: 0 for "earliest",
  −1 for the host to resolve); from then on they are ``fetchable``.
* **Commits** (``CommitRequestManager``): ``poll()`` auto-commits the consumed positions every
  ``auto_commit_interval_ms``; ``commit()`` for the rest; always with the member id and the
  current epoch. STALE_MEMBER_EPOCH and coordinator errors are retried after the backoff with
  the epoch then current (for partitions still owned); other errors fail the commit
  (``CommitFailed``). One commit in flight; later offsets are merged into the next one.
* **Errors** (``AbstractHeartbeatRequestManager.onErrorResponse``): FENCED_MEMBER_EPOCH and
  UNKNOWN_MEMBER_ID → fenced: ``PartitionsLost`` for everything (another member may own it
  already: nothing is committed), pending commits dropped (``CommitFailed``), then a join with
  epoch 0 and the same member id. So is a heartbeat unanswered for ``session_timeout_ms``
  (counted from the send of the last answered one, so before the coordinator can expire it).
  COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a lost or timed
  out request → ``CoordinatorLost``, retried after ``retry_backoff_ms``, partitions kept.
  UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, INVALID_REQUEST,
  GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED, INVALID_REGULAR_EXPRESSION,
  UNSUPPORTED_VERSION and any code the protocol does not list → ``FatalError`` in words; the
  client stops.
* **A slow revocation** (``hold_revocations``): the application may hold the revocations
  back, as a slow ``onPartitionsRevoked`` does in Kafka, whose reconciliation waits for the
  application thread's callback to complete. A held reconciliation stops after its commit:
  the member keeps heartbeating at its epoch, the partitions to revoke neither fetched nor
  released, until the host lets go, or until the coordinator's rebalance timeout fences the
  member (then it loses everything and joins again, as any fenced member).
* **Poll timeout** (KIP-62, ``max.poll.interval.ms`` = ``rebalance_timeout_ms``): no
  ``poll()`` for that long while in the group → a leave heartbeat (epoch −1, −2 for a static
  member), ``PartitionsLost``, ``LeftGroup``; the member is STALE (``awaiting_poll``) and
  joins again at the next ``poll()``.
* **Close** (``close(now)``, Kafka's ``leaveGroup``): commit the consumed positions (at most
  ``timeout_ms``), ``PartitionsRevoked`` for everything, then a leave heartbeat with epoch −1,
  or −2 for a static member (the coordinator keeps its assignment for its next process), and
  ``LeftGroup``.

``consumer_state.py`` holds the member's state table. The client does not look the
coordinator up (the lab's transports reach it directly) and retries coordinator errors in
place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.errors import Errors
from coordinator_engine.requests import (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OwnedTopicPartitions,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.responses import (
    ConsumerGroupHeartbeatResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)

from .config import ConsumerProtocolConfig
from .consumer_state import ConsumerMemberState, check_consumer_transition
from .events import (
    CommitCompleted,
    CommitFailed,
    CoordinatorLost,
    FatalError,
    LeftGroup,
    MemberEpochChanged,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from .flights import Flight, SlottedClient, Timers
from .handoff_client import new_member_id
from .rules import check_offset, next_regular_tick_ms, quiet_period_ms

__all__ = [
    "CONSUMER_CLOSE_REASON",
    "CONSUMER_POLL_TIMEOUT_REASON",
    "LEAVE_GROUP_EPOCH",
    "LEAVE_GROUP_STATIC_EPOCH",
    "ConsumerClient",
    "ConsumerProtocolRequest",
    "ConsumerProtocolResponse",
]

#: Every request the consumer-protocol client sends.
ConsumerProtocolRequest = ConsumerGroupHeartbeatRequest | OffsetCommitRequest | OffsetFetchRequest
#: Every response it reads.
ConsumerProtocolResponse = (
    ConsumerGroupHeartbeatResponse | OffsetCommitResponse | OffsetFetchResponse
)

CONSUMER_CLOSE_REASON = "the consumer is being closed"
CONSUMER_POLL_TIMEOUT_REASON = "consumer poll timeout has expired"
#: Kafka's ``LEAVE_GROUP_MEMBER_EPOCH`` and ``LEAVE_GROUP_STATIC_MEMBER_EPOCH``.
LEAVE_GROUP_EPOCH = -1
LEAVE_GROUP_STATIC_EPOCH = -2

TP = TopicPartitionPair
State = ConsumerMemberState
_NONE = Errors.NONE
#: Retried after the backoff; the member keeps what it holds.
_RETRIABLE = frozenset(
    {
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
#: The member's epoch is no longer the coordinator's: everything is lost, join again.
_FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
#: A commit retried after the backoff, with the epoch current then.
_COMMIT_RETRIABLE = _RETRIABLE | {Errors.STALE_MEMBER_EPOCH}
#: What each fatal heartbeat error means, in words.
_FATAL: dict[int, str] = {
    Errors.UNRELEASED_INSTANCE_ID: "another member still holds this group.instance.id (the "
    "previous process has not left with epoch -2, nor has its session expired)",
    Errors.FENCED_INSTANCE_ID: "another member id took over this group.instance.id",
    Errors.UNSUPPORTED_ASSIGNOR: "the coordinator does not know the server assignor",
    Errors.INVALID_REQUEST: "the coordinator refused the heartbeat as invalid",
    Errors.GROUP_MAX_SIZE_REACHED: "the group is full (group.consumer.max.size)",
    Errors.GROUP_AUTHORIZATION_FAILED: "not authorized to use the group",
    Errors.INVALID_REGULAR_EXPRESSION: "the coordinator refuses the topic regular expression",
    Errors.UNSUPPORTED_VERSION: "the coordinator does not serve the consumer protocol",
    Errors.INCONSISTENT_GROUP_PROTOCOL: "the group is not a consumer group (a group of "
    "another kind has this id)",
    Errors.GROUP_ID_NOT_FOUND: "the coordinator does not know the group",
}
#: States in which the member heartbeats.
_HEARTBEAT_STATES = frozenset({State.JOINING, State.RECONCILING, State.ACKNOWLEDGING, State.STABLE})
#: States in which the member counts as in the group once it has an epoch.
_MEMBER_STATES = frozenset({State.RECONCILING, State.ACKNOWLEDGING, State.STABLE})


def _sorted(partitions: Iterable[TP]) -> tuple[TP, ...]:
    return tuple(sorted(partitions))


def _owned(partitions: Iterable[TP]) -> tuple[OwnedTopicPartitions, ...]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple(
        OwnedTopicPartitions(topic=topic, partitions=tuple(parts))
        for topic, parts in by_topic.items()
    )


@dataclass(slots=True)
class _Reconciliation:
    """One ``maybeReconcile``: from what the member owns to ``target``."""

    target: frozenset[TP]
    revoke: frozenset[TP]
    add: frozenset[TP]
    #: Partitions whose commit the revocation waits for (committed, failed, or the deadline).
    awaiting_commit: set[TP]
    deadline_ms: int


@dataclass(slots=True)
class _SentFields:
    """What the last heartbeats told the coordinator (Kafka's ``HeartbeatState.sentFields``);
    None: not sent since the last reset, so the next heartbeat carries it."""

    subscription: bool = False
    owned_version: int | None = None


class ConsumerClient(SlottedClient):
    """One member of a consumer group (see the module docstring for how a host drives it)."""

    _ANSWERS: ClassVar[dict[type, type]] = {
        ConsumerGroupHeartbeatRequest: ConsumerGroupHeartbeatResponse,
        OffsetCommitRequest: OffsetCommitResponse,
        OffsetFetchRequest: OffsetFetchResponse,
    }
    _config: ConsumerProtocolConfig

    def __init__(
        self,
        config: ConsumerProtocolConfig,
        now_ms: int,
        *,
        member_id_factory: Callable[[], str] | None = None,
        quiet_heartbeats: bool = False,
    ) -> None:
        if not isinstance(config, ConsumerProtocolConfig):
            raise TypeError(f"config must be a ConsumerProtocolConfig, got {type(config).__name__}")
        if type(quiet_heartbeats) is not bool:
            raise TypeError("quiet_heartbeats must be a bool")
        super().__init__(
            now_ms, Timers(next_auto_commit_ms=now_ms + config.auto_commit_interval_ms)
        )
        self._config = config
        member_id = (member_id_factory or new_member_id)()
        if not isinstance(member_id, str) or not member_id:
            raise ValueError(f"member_id_factory gave {member_id!r}, not a non-empty str")
        self._member_id = member_id
        self._state = State.UNSUBSCRIBED
        self._started = False
        self._epoch = 0
        self._interval_ms = 0
        #: The last assignment the coordinator gave (None: none since joining).
        self._target: frozenset[TP] | None = None
        #: What the member owns (Kafka's ``currentAssignment``), and its local version.
        self._owned: frozenset[TP] = frozenset()
        self._owned_version = 0
        self._sent = _SentFields()
        self._reconciliation: _Reconciliation | None = None
        self._positions: dict[TP, int] = {}
        self._to_fetch: set[TP] = set()
        self._to_commit_auto = True
        self._leave_epoch: int | None = None
        self._quiet_heartbeats = quiet_heartbeats
        self._revocations_held = False

    # ------------------------------------------------------------------ public state

    @property
    def config(self) -> ConsumerProtocolConfig:
        return self._config

    @property
    def member_id(self) -> str:
        """This member's own id, the same for the client's whole life (KIP-1082)."""
        return self._member_id

    @property
    def state(self) -> ConsumerMemberState:
        return self._state

    @property
    def epoch(self) -> int:
        """The member epoch of the last answer; 0 while (re)joining."""
        return self._epoch

    @property
    def joined(self) -> bool:
        """Whether the coordinator counts this member in the group (it has an epoch)."""
        return self._epoch > 0 and self._state in _MEMBER_STATES

    @property
    def heartbeat_interval_ms(self) -> int:
        """The coordinator's heartbeat interval, from its last answer (0 before the first)."""
        return self._interval_ms

    @property
    def target(self) -> frozenset[TP]:
        """The last assignment the coordinator gave this member (display)."""
        return self._target if self._target is not None else frozenset()

    @property
    def assignment(self) -> frozenset[TP]:
        """The partitions the member owns now (what its heartbeats report)."""
        return self._owned

    @property
    def pending_revocation(self) -> frozenset[TP]:
        """Owned partitions a reconciliation is revoking: no longer fetched, their positions
        being committed."""
        r = self._reconciliation
        return r.revoke if r is not None else frozenset()

    @property
    def fetchable(self) -> frozenset[TP]:
        """What the application consumes now: owned, position known, not being revoked
        (Kafka's ``SubscriptionState.fetchablePartitions``)."""
        revoking = self.pending_revocation
        return frozenset(tp for tp in self._positions if tp not in revoking)

    @property
    def positions(self) -> dict[TP, int]:
        """The next offset to consume of each owned partition whose position is known."""
        return dict(self._positions)

    @property
    def awaiting_poll(self) -> bool:
        """The member left after a poll timeout and joins again at the next ``poll()``. A host
        that calls ``poll()`` only when it matters polls when this turns true."""
        return self._state is State.STALE and not self._closed

    @property
    def auto_commit_due_ms(self) -> int:
        """When a ``poll()`` next auto-commits the consumed positions (``enable_auto_commit``)."""
        return self._timers.next_auto_commit_ms

    # ------------------------------------------------------------------ the application's calls

    def poll(self, now_ms: int) -> None:
        """The application's ``poll()``: the member joins (nothing is sent before the first
        call) or rejoins after a poll timeout; the poll timer restarts; auto-commit when due."""
        now = self._tick(now_ms)
        if self._closed or self._leaving:
            return
        self._started = True
        t = self._timers
        t.poll_timer_start_ms = now
        if self._state is State.UNSUBSCRIBED or self._state is State.STALE:
            self._transition(State.JOINING, now)
        cfg = self._config
        if now >= t.next_auto_commit_ms:
            t.next_auto_commit_ms = now + cfg.auto_commit_interval_ms
            if cfg.enable_auto_commit and self.joined:
                self._enqueue_commit(self._consumed(), auto=True)

    def record_consumed(self, topic: str, partition: int, next_offset: int) -> None:
        """The application consumed a partition up to ``next_offset`` (the next to read).
        Ignored for a partition it may not consume now (not owned, or being revoked: Kafka
        drops what was fetched for a partition pending revocation)."""
        check_offset("record_consumed", next_offset)
        tp = (topic, partition)
        if tp in self._positions and tp not in self.pending_revocation:
            self._positions[tp] = next_offset

    def commit(self, offsets: Mapping[TP, int] | None = None) -> None:
        """Commit ``offsets`` of owned partitions (default: every consumed position); a
        CommitCompleted or CommitFailed event tells the outcome."""
        if self._closed or self._leaving:
            raise RuntimeError("the client is closed")
        if offsets is None:
            offsets = self._consumed()
        checked: dict[TP, int] = {}
        for tp, offset in offsets.items():
            if tp not in self._owned:
                raise ValueError(f"commit: {tp!r} is not a partition this member owns")
            check_offset("commit", offset, tp)
            checked[tp] = offset
        if not checked:
            self._emit(CommitCompleted(at_ms=self._now, offsets={}, auto=False))
            return
        if not self.joined:
            self._emit(
                CommitFailed(
                    at_ms=self._now,
                    offsets=dict(sorted(checked.items())),
                    auto=False,
                    error_code=None,
                    reason="the member is not in the group",
                )
            )
            return
        self._enqueue_commit(checked, auto=False)

    def hold_revocations(self, held: bool) -> None:
        """Hold back (``True``) or let go (``False``) the revocation of partitions, as a slow
        ``onPartitionsRevoked`` callback does in Kafka: while held, a reconciliation that
        revokes partitions waits once its commit is done (``pending_revocation`` stays set,
        the member keeps heartbeating at its epoch and releases nothing). The coordinator
        fences a member that holds them past its rebalance timeout. Letting go finishes the
        reconciliation at the next ``outgoing``."""
        if type(held) is not bool:
            raise TypeError("held must be a bool")
        self._revocations_held = held

    @property
    def revocations_held(self) -> bool:
        """Whether ``hold_revocations(True)`` is in force."""
        return self._revocations_held

    def group_changed(self, now_ms: int) -> None:
        """The host learnt that the group changed (its epoch went up, a member's target or
        state changed: it watches the coordinator's events). A member with
        ``quiet_heartbeats`` heartbeats again at its next regular tick, where a member
        heartbeating every interval would have learnt of the change; otherwise nothing
        changes."""
        now = self._tick(now_ms)
        if not self._quiet_heartbeats or self._heartbeat is not None or not self.joined:
            return
        t = self._timers
        tick = next_regular_tick_ms(t.heartbeat_sent_ms, now, max(self._interval_ms, 1))
        if tick < t.heartbeat_due_ms:
            t.heartbeat_due_ms = tick

    def close(self, now_ms: int, timeout_ms: int = 30000) -> None:
        """Leave the group (Kafka's ``leaveGroup``): commit the consumed positions (waited for
        at most ``timeout_ms``), revoke everything, then a leave heartbeat with epoch −1 (−2
        for a static member). Keep calling ``outgoing``/``receive`` until ``closed``."""
        now = self._tick(now_ms)
        if self._closed or self._leaving:
            return
        if not self._started:
            self._closed = True
            return
        self._timers.close_deadline_ms = now + timeout_ms
        self._reconciliation = None  # Kafka's maybeAbortReconciliation: leaving instead
        self._to_fetch.clear()
        if self._state is State.STALE or self._state is State.FENCED:
            self._transition(State.UNSUBSCRIBED, now)
            self._finish_closing(sent=False)
            return
        self._transition(State.PREPARE_LEAVING, now)
        if self._config.enable_auto_commit and self._epoch > 0:
            self._enqueue_commit(self._consumed(), auto=True)

    # ------------------------------------------------------------------ the transport's calls

    def outgoing(self, now_ms: int) -> list[ConsumerProtocolRequest]:
        """The requests to send now, in order."""
        now = self._tick(now_ms)
        out: list[ConsumerProtocolRequest] = []
        if self._closed or not self._started:
            return out
        self._expire_requests(now)
        if self._closed:
            return out
        if self._leaving:
            self._outgoing_while_leaving(now, out)
            return out
        t = self._timers
        if self.joined:
            if now >= t.last_answered_sent_ms + self._config.session_timeout_ms:
                self._fence("no heartbeat answered for a session timeout", now)
            elif now >= t.poll_timer_start_ms + self._config.rebalance_timeout_ms:
                self._poll_timeout(now, out)
                return out
        if self._reconciliation is not None:
            self._maybe_finish_reconciliation(now)
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
        now = self._now
        flights = (self._heartbeat, self._commit, self._fetch, self._leave)
        deadlines = [f.deadline_ms for f in flights if f is not None]
        if self._leaving:
            if self._state is State.PREPARE_LEAVING:  # as _outgoing_while_leaving decides
                if self._epoch > 0 and self._commit_pending() and now < t.close_deadline_ms:
                    deadlines.append(t.close_deadline_ms)
                    if self._to_commit and self._commit is None:
                        deadlines.append(max(t.commit_retry_ms, now))
                elif self._heartbeat is None:
                    deadlines.append(now)
            return min(deadlines) if deadlines else None
        if self._state is State.STALE:
            return min(deadlines) if deadlines else None
        if self._heartbeat is None and self._state in _HEARTBEAT_STATES:
            due = t.heartbeat_due_ms
            if self._state is State.JOINING or self._state is State.ACKNOWLEDGING:
                due = now
            deadlines.append(max(due, t.heartbeat_retry_ms))
        if self.joined:
            deadlines.append(t.last_answered_sent_ms + self._config.session_timeout_ms)
            deadlines.append(t.poll_timer_start_ms + self._config.rebalance_timeout_ms)
            if self._to_commit and self._commit is None:
                deadlines.append(max(t.commit_retry_ms, now))
            if self._to_fetch and self._fetch is None:
                deadlines.append(max(t.fetch_retry_ms, now))
            r = self._reconciliation
            if r is not None:
                if r.awaiting_commit:
                    deadlines.append(r.deadline_ms)
                elif not (r.revoke and self._revocations_held):
                    deadlines.append(now)
        return min(deadlines) if deadlines else None

    # ------------------------------------------------------------------ bookkeeping

    @property
    def _leaving(self) -> bool:
        return self._state is State.PREPARE_LEAVING or self._state is State.LEAVING

    def _transition(self, target: ConsumerMemberState, now: int) -> None:
        current = self._state
        reason = check_consumer_transition(current, target)
        self._state = target
        self._emit(
            MemberStateChanged(
                at_ms=now, from_state=current.value, to_state=target.value, reason=reason
            )
        )

    def _consumed(self) -> dict[TP, int]:
        """Kafka's ``allConsumed``: the position of every owned partition consumed from."""
        return {tp: offset for tp, offset in sorted(self._positions.items()) if offset >= 0}

    def _answered(self, flight: Flight, response: ConsumerProtocolResponse, now: int) -> None:
        match response:
            case ConsumerGroupHeartbeatResponse():
                self._on_heartbeat(flight, response, now)
            case OffsetCommitResponse():
                self._on_commit(flight, response, now)
            case OffsetFetchResponse():
                self._on_fetch(flight, response, now)

    def _retry_after_failure(self, flight: Flight, now: int, reason: str) -> None:
        retry = now + self._config.retry_backoff_ms
        self._emit(CoordinatorLost(at_ms=now, reason=reason))
        match flight.request:
            case ConsumerGroupHeartbeatRequest():
                self._sent = _SentFields()  # the coordinator may not have seen them
                self._timers.heartbeat_retry_ms = retry
            case OffsetCommitRequest():
                self._requeue_commit(flight.offsets or {}, flight.auto)
                self._timers.commit_retry_ms = retry
            case OffsetFetchRequest():
                self._timers.fetch_retry_ms = retry

    # ------------------------------------------------------------------ heartbeats

    def _maybe_heartbeat(self, now: int, out: list[ConsumerProtocolRequest]) -> None:
        state = self._state
        t = self._timers
        if self._heartbeat is not None or state not in _HEARTBEAT_STATES:
            return
        if now < t.heartbeat_retry_ms:
            return
        if (
            state is not State.JOINING
            and state is not State.ACKNOWLEDGING
            and now < t.heartbeat_due_ms
        ):
            return
        request = self._heartbeat_request(state is State.JOINING)
        self._heartbeat = self._flight(request, now)
        t.heartbeat_sent_ms = now
        t.heartbeat_due_ms = now + max(self._interval_ms, 1)
        out.append(request)
        if state is State.ACKNOWLEDGING:
            # Kafka's onHeartbeatRequestGenerated: the new assignment is reported.
            if self._target is not None and self._target != self._owned:
                self._transition(State.RECONCILING, now)
                self._maybe_reconcile(now)
            else:
                self._transition(State.STABLE, now)

    def _heartbeat_request(self, joining: bool) -> ConsumerGroupHeartbeatRequest:
        """Kafka's ``HeartbeatState.buildRequestData``: every field on a join, else only what
        changed since it was last sent."""
        cfg = self._config
        sent = self._sent
        fields: dict[str, Any] = {}
        if joining or not sent.subscription:
            fields["rebalance_timeout_ms"] = cfg.rebalance_timeout_ms
            if cfg.topic_regex is not None:
                fields["subscribed_topic_regex"] = cfg.topic_regex
            else:
                fields["subscribed_topic_names"] = cfg.topics
            fields["server_assignor"] = cfg.server_assignor
            sent.subscription = True
        if joining:
            fields["topic_partitions"] = ()
            sent.owned_version = self._owned_version
        elif sent.owned_version != self._owned_version:
            fields["topic_partitions"] = _owned(self._owned)
            sent.owned_version = self._owned_version
        request = ConsumerGroupHeartbeatRequest(
            group_id=cfg.group_id,
            member_id=self._member_id,
            member_epoch=0 if joining else self._epoch,
            instance_id=cfg.group_instance_id,
            client_id=cfg.client_id,
            client_host=cfg.client_host,
            **fields,
        )
        return request

    def _on_heartbeat(
        self, flight: Flight, response: ConsumerGroupHeartbeatResponse, now: int
    ) -> None:
        error = response.error_code
        if self._leaving:
            if error == _NONE:
                self._epoch = response.member_epoch  # the leave needs the latest epoch
            return
        if error == _NONE:
            self._on_heartbeat_answered(flight, response, now)
            return
        self._sent = _SentFields()  # Kafka resets the sent fields on every error
        words = response.error_message or ""
        what = f"ConsumerGroupHeartbeat answered {_name(error)}" + (f": {words}" if words else "")
        if error in _FENCED:
            self._fence(what, now)
        elif error in _RETRIABLE:
            self._emit(CoordinatorLost(at_ms=now, reason=what))
            self._timers.heartbeat_retry_ms = now + self._config.retry_backoff_ms
        else:
            meaning = _FATAL.get(error, "an error the consumer protocol does not expect")
            self._fail_fatally(error, f"{what} ({meaning})", now)

    def _on_heartbeat_answered(
        self, flight: Flight, response: ConsumerGroupHeartbeatResponse, now: int
    ) -> None:
        t = self._timers
        t.last_answered_sent_ms = flight.sent_ms
        if response.heartbeat_interval_ms > 0:
            self._interval_ms = response.heartbeat_interval_ms
        t.heartbeat_due_ms = now + max(self._interval_ms, 1)
        previous = self._epoch
        epoch = response.member_epoch
        if epoch != previous:
            self._epoch = epoch
            self._emit(
                MemberEpochChanged(
                    at_ms=now, member_id=self._member_id, epoch=epoch, previous_epoch=previous
                )
            )
        if response.assignment is not None:
            self._target = frozenset(
                (topic, partition)
                for topic, partitions in response.assignment.items()
                for partition in partitions
            )
            if self._state is State.JOINING:
                if self._target == self._owned:
                    self._transition(State.STABLE, now)
                else:
                    self._transition(State.RECONCILING, now)
            elif self._state is State.STABLE and self._target != self._owned:
                self._transition(State.RECONCILING, now)
            elif (
                self._state is State.RECONCILING
                and self._reconciliation is None
                and self._target == self._owned
            ):
                self._transition(State.STABLE, now)
        elif self._state is State.JOINING:
            # Joined, but the answer held no assignment (a coordinator sends one to every
            # full request): forget what was sent, so the next heartbeat asks for it again.
            self._sent = _SentFields()
            self._transition(State.RECONCILING, now)
        if self._state is State.RECONCILING:
            self._maybe_reconcile(now)
        if (
            self._quiet_heartbeats
            and self._state is State.STABLE
            and not (self._to_fetch or self._to_commit or self._commit or self._fetch)
        ):
            # Nothing to report or wait for: the next heartbeat only keeps the session.
            quiet = quiet_period_ms(self._config.session_timeout_ms, max(self._interval_ms, 1))
            t.heartbeat_due_ms = flight.sent_ms + quiet

    def _fence(self, reason: str, now: int) -> None:
        """Kafka's ``transitionToFenced``: the coordinator no longer counts this epoch, so what
        the member holds may be someone else's already. Stop without committing, then join
        again with epoch 0 under the same member id (KIP-1082)."""
        self._release_as_lost(reason, Errors.FENCED_MEMBER_EPOCH, now)
        self._transition(State.FENCED, now)
        self._emit(CoordinatorLost(at_ms=now, reason=f"member fenced: {reason}"))
        self._transition(State.JOINING, now)

    def _release_as_lost(self, reason: str, error: int, now: int) -> None:
        lost = self._owned
        if lost:
            self._emit(PartitionsLost(at_ms=now, partitions=_sorted(lost)))
        dropped = dict(self._to_commit)
        if self._commit is not None and self._commit.offsets:
            dropped.update(self._commit.offsets)
        if dropped:
            self._emit(
                CommitFailed(
                    at_ms=now,
                    offsets=dict(sorted(dropped.items())),
                    auto=self._to_commit_auto,
                    error_code=error,
                    reason=f"the member lost its partitions ({reason})",
                )
            )
        self._incarnation += 1
        self._epoch = 0
        self._target = None
        self._owned = frozenset()
        self._owned_version += 1
        self._sent = _SentFields()
        self._reconciliation = None
        self._positions.clear()
        self._to_fetch.clear()
        self._to_commit.clear()
        self._heartbeat = self._commit = self._fetch = None
        self._timers.heartbeat_retry_ms = 0

    def _poll_timeout(self, now: int, out: list[ConsumerProtocolRequest]) -> None:
        """KIP-62 in the consumer protocol (``transitionToSendingLeaveGroup(true)`` then
        ``transitionToStale``): the application stopped polling; leave, release everything
        as lost, and wait for the next ``poll()`` to join again."""
        epoch = self._leave_epoch_for_member()
        self._transition(State.PREPARE_LEAVING, now)
        self._release_as_lost(CONSUMER_POLL_TIMEOUT_REASON, Errors.UNKNOWN_MEMBER_ID, now)
        self._transition(State.LEAVING, now)
        request = self._leave_request(epoch)
        out.append(request)  # its answer changes nothing: the member is out either way
        self._transition(State.STALE, now)
        self._emit(
            LeftGroup(
                at_ms=now,
                member_id=self._member_id,
                reason=CONSUMER_POLL_TIMEOUT_REASON,
                leave_group_sent=True,
            )
        )

    def _leave_epoch_for_member(self) -> int:
        return (
            LEAVE_GROUP_STATIC_EPOCH
            if self._config.group_instance_id is not None
            else LEAVE_GROUP_EPOCH
        )

    def _leave_request(self, epoch: int) -> ConsumerGroupHeartbeatRequest:
        cfg = self._config
        return ConsumerGroupHeartbeatRequest(
            group_id=cfg.group_id,
            member_id=self._member_id,
            member_epoch=epoch,
            instance_id=cfg.group_instance_id,
            client_id=cfg.client_id,
            client_host=cfg.client_host,
        )

    def _fail_fatally(self, error: int, reason: str, now: int) -> None:
        if self._owned:
            self._emit(PartitionsLost(at_ms=now, partitions=_sorted(self._owned)))
        self._owned = frozenset()
        self._positions.clear()
        self._reconciliation = None
        self._fatal_error = error
        self._transition(State.FATAL, now)
        self._closed = True
        self._emit(FatalError(at_ms=now, error_code=error, reason=reason))

    # ------------------------------------------------------------------ reconciliation

    def _maybe_reconcile(self, now: int) -> None:
        """Kafka's ``maybeReconcile``: start moving to the target unless a reconciliation is
        under way or there is nothing to move."""
        target = self._target
        if self._reconciliation is not None or target is None:
            return
        if target == self._owned:
            return
        owned = self._owned
        revoke = owned - target
        awaiting: set[TP] = set()
        if self._config.enable_auto_commit:
            consumed = self._consumed()
            if consumed:
                # ``maybeAutoCommitSyncBeforeRevocation``: the latest positions of everything
                # owned, waited for before the revocation (at most the rebalance timeout).
                self._enqueue_commit(consumed, auto=True)
                awaiting = set(consumed)
        self._reconciliation = _Reconciliation(
            target=target,
            revoke=revoke,
            add=target - owned,
            awaiting_commit=awaiting,
            deadline_ms=now + self._config.rebalance_timeout_ms,
        )
        self._maybe_finish_reconciliation(now)

    def _maybe_finish_reconciliation(self, now: int) -> None:
        r = self._reconciliation
        assert r is not None
        if r.awaiting_commit:
            in_flight = (self._commit.offsets or {}) if self._commit is not None else {}
            r.awaiting_commit &= set(self._to_commit) | set(in_flight)
        if r.awaiting_commit and now < r.deadline_ms:
            return
        if r.revoke and self._revocations_held:
            return  # the application is still revoking (hold_revocations)
        self._reconciliation = None
        if r.revoke:
            # Past the deadline, a commit of a revoked partition is no longer wanted: another
            # member may commit it soon (Kafka's expired commit attempt).
            dropped = {tp: self._to_commit.pop(tp) for tp in r.revoke if tp in self._to_commit}
            if dropped:
                self._emit(
                    CommitFailed(
                        at_ms=now,
                        offsets=dict(sorted(dropped.items())),
                        auto=self._to_commit_auto,
                        error_code=None,
                        reason="not committed within the rebalance timeout before the revocation",
                    )
                )
            for tp in r.revoke:
                self._positions.pop(tp, None)
                self._to_fetch.discard(tp)
            self._emit(PartitionsRevoked(at_ms=now, partitions=_sorted(r.revoke)))
        self._owned = r.target
        self._owned_version += 1
        self._to_fetch |= r.add
        self._emit(
            PartitionsAssigned(
                at_ms=now,
                generation=self._epoch,
                partitions=_sorted(r.add),
                assignment=_sorted(r.target),
            )
        )
        self._transition(State.ACKNOWLEDGING, now)

    # ------------------------------------------------------------------ commits

    def _enqueue_commit(self, offsets: Mapping[TP, int], *, auto: bool) -> None:
        if not offsets:
            return
        if not self._to_commit:
            self._to_commit_auto = auto
        else:
            self._to_commit_auto = self._to_commit_auto and auto
        self._to_commit.update(offsets)

    def _requeue_commit(self, offsets: Mapping[TP, int], auto: bool) -> None:
        owned = self._owned
        kept = {tp: o for tp, o in offsets.items() if tp in owned and tp not in self._to_commit}
        if kept:
            self._enqueue_commit(kept, auto=auto)

    def _maybe_commit(self, now: int, out: list[ConsumerProtocolRequest]) -> None:
        if self._commit is not None or now < self._timers.commit_retry_ms or self._epoch <= 0:
            return
        offsets, self._to_commit = dict(sorted(self._to_commit.items())), {}
        auto = self._to_commit_auto
        cfg = self._config
        request = OffsetCommitRequest(
            group_id=cfg.group_id,
            generation_id=self._epoch,
            member_id=self._member_id,
            group_instance_id=cfg.group_instance_id,
            offsets=tuple(
                PartitionOffset(topic=t, partition=p, offset=o) for (t, p), o in offsets.items()
            ),
        )
        self._commit = self._flight(request, now, offsets=offsets, auto=auto)
        out.append(request)

    def _on_commit(self, flight: Flight, response: OffsetCommitResponse, now: int) -> None:
        sent = flight.offsets or {}
        done: dict[TP, int] = {}
        retry: dict[TP, int] = {}
        failed: dict[TP, int] = {}
        error: int = _NONE
        results = {(r.topic, r.partition): r.error_code for r in response.partitions}
        for tp, offset in sent.items():
            code = results.get(tp, Errors.UNKNOWN_TOPIC_OR_PARTITION)
            if code == _NONE:
                done[tp] = offset
            elif code in _COMMIT_RETRIABLE and (self._epoch > 0 or self._leaving):
                retry[tp] = offset
            else:
                failed[tp] = offset
                error = error or code
        if done:
            self._committed.update(done)
            self._emit(CommitCompleted(at_ms=now, offsets=done, auto=flight.auto))
        if retry:
            # Kafka retries a stale epoch with the epoch the heartbeats bring meanwhile.
            self._requeue_commit(retry, flight.auto)
            self._timers.commit_retry_ms = now + self._config.retry_backoff_ms
        if failed:
            self._emit(
                CommitFailed(
                    at_ms=now,
                    offsets=failed,
                    auto=flight.auto,
                    error_code=error,
                    reason=f"OffsetCommit answered {_name(error)}",
                )
            )
        if self._reconciliation is not None:
            self._maybe_finish_reconciliation(now)

    # ------------------------------------------------------------------ committed offsets

    def _maybe_fetch(self, now: int, out: list[ConsumerProtocolRequest]) -> None:
        if self._fetch is not None or now < self._timers.fetch_retry_ms or not self.joined:
            return
        request = OffsetFetchRequest(
            group_id=self._config.group_id,
            partitions=tuple(
                TopicPartition(topic=t, partition=p) for t, p in sorted(self._to_fetch)
            ),
            member_id=self._member_id,
            member_epoch=self._epoch,
        )
        self._fetch = self._flight(request, now)
        out.append(request)

    def _on_fetch(self, flight: Flight, response: OffsetFetchResponse, now: int) -> None:
        retry_at = now + self._config.retry_backoff_ms
        if response.error_code != _NONE:
            self._timers.fetch_retry_ms = retry_at
            return
        positions = self._fetched_positions(response, self._to_fetch)
        self._to_fetch -= set(positions)
        if self._to_fetch:
            self._timers.fetch_retry_ms = retry_at
        if positions:
            self._positions.update(positions)
            self._emit(OffsetsFetched(at_ms=now, positions=dict(sorted(positions.items()))))

    # ------------------------------------------------------------------ leaving

    def _outgoing_while_leaving(self, now: int, out: list[ConsumerProtocolRequest]) -> None:
        if self._leave is not None or self._state is State.LEAVING:
            return
        if self._epoch > 0 and self._commit_pending() and now < self._timers.close_deadline_ms:
            self._maybe_commit(now, out)
            return
        if self._heartbeat is not None:
            return  # its answer may bring the epoch to leave with (librdkafka 2.12's fix)
        if self._to_commit:
            self._emit(
                CommitFailed(
                    at_ms=now,
                    offsets=dict(sorted(self._to_commit.items())),
                    auto=self._to_commit_auto,
                    error_code=None,
                    reason="not committed within the close timeout",
                )
            )
            self._to_commit.clear()
        if self._owned:
            self._emit(PartitionsRevoked(at_ms=now, partitions=_sorted(self._owned)))
            self._owned = frozenset()
            self._positions.clear()
        if self._epoch <= 0:
            self._transition(State.UNSUBSCRIBED, now)
            self._finish_closing(sent=False)
            return
        request = self._leave_request(self._leave_epoch_for_member())
        self._leave = self._flight(request, now)
        self._transition(State.LEAVING, now)
        out.append(request)

    def _left(self, now: int) -> None:
        if self._state is State.STALE:
            return  # the poll-timeout leave: the member is out already
        self._transition(State.UNSUBSCRIBED, now)
        self._finish_closing()

    def _finish_closing(self, *, sent: bool = True) -> None:
        self._closed = True
        self._epoch = 0
        self._emit(
            LeftGroup(
                at_ms=self._now,
                member_id=self._member_id,
                reason=CONSUMER_CLOSE_REASON,
                leave_group_sent=sent,
            )
        )


#: The attributes holding the requests in flight, at most one of each kind.


def _name(code: int) -> str:
    return Errors.name_of(code)
