"""``GroupClient``: one consumer's side of the classic group protocol, as a sans-IO state machine.

Theory of operation
===================

Kafka's consumer runs its group protocol in two places: the application thread's ``poll()``
(``ConsumerCoordinator.poll``: find the coordinator, rejoin when needed, auto-commit) and a
background heartbeat thread (``AbstractCoordinator.HeartbeatThread``: heartbeats, the session
and ``max.poll.interval.ms`` checks). ``GroupClient`` is both, without threads, sockets or a
clock, in the manner of h11 and aioquic: the host passes the time into every call and moves the
bytes.

* ``poll(now)`` is the application's ``poll()``: it records that the application is alive (the
  ``max.poll.interval.ms`` timer, KIP-62), lets a pending rejoin start, and auto-commits when
  due. Nothing is sent before the first ``poll()``.
* ``outgoing(now)`` returns the requests to send now, at most one in flight per kind.
  FindCoordinator and Metadata go to any broker; the others go to ``client.coordinator``.
* ``receive(request, response, now)`` feeds the answer to a request ``outgoing`` returned (the
  same object); ``fail(request, now)`` reports that it will never be answered (a lost
  connection). Answers to requests the client has given up on are ignored.
* ``next_deadline_ms()`` is when ``outgoing`` must be called again at the latest (a heartbeat,
  a retry backoff, a timeout); None when only the host can move things (a ``poll()``, an answer).
* ``events()`` drains what happened (``events.py``); a ``ConsumerRebalanceListener`` given to
  the constructor is called synchronously at the same moments.

After every ``poll``/``receive``/``fail``/``commit``/``close``/``metadata_changed`` the host calls
``outgoing`` again: those calls only change state, ``outgoing`` turns state into requests.

A host that runs many members in virtual time and sees the coordinator's events (a simulation)
may save most of their steps: ``awaiting_poll`` says when a join waits for ``poll()`` (poll
then, not every few milliseconds), and ``quiet_heartbeats=True`` lets a Stable member whose
heartbeat was answered NONE send the next one at the last regular tick before its session would
end; the host calls ``group_changed(now)`` when it sees the group change, and the member
heartbeats at its next regular tick, where it would have learnt of the change. The
coordinator's state is the same: a heartbeat to a Stable group only pushes the session on.

The flow follows Kafka's ``AbstractCoordinator`` and ``ConsumerCoordinator`` step by step:

1. **Discovery.** FindCoordinator for the group, and Metadata for the subscribed topics (every
   ``metadata_max_age_ms``, on ``metadata_changed()``, and after every JoinGroup).
2. **Join** (``joinGroupIfNeeded``). Before the first JoinGroup of a rebalance the member
   prepares (``onJoinPrepare``): it auto-commits its consumed positions and waits for the answer
   (at most the rebalance timeout), then EAGER revokes every partition, COOPERATIVE keeps them;
   a member whose generation was reset loses them instead (``onPartitionsLost``). The JoinGroup
   carries one protocol per assignor (``protocol.py``). ``MEMBER_ID_REQUIRED`` → rejoin at once
   with the given id (KIP-394).
3. **Sync.** The leader fetches fresh metadata for every topic the group subscribes to, runs
   the selected assignor and sends every member's assignment; followers send an empty
   SyncGroup. A static leader told ``skip_assignment`` keeps the stored assignment (KIP-345).
4. **Stable** (``onJoinComplete``). The assignment is applied; COOPERATIVE revokes only the
   partitions no longer assigned and, if there were any, rejoins at once (KIP-429's second
   round). OffsetFetch gives new partitions their committed offsets (``positions``).
5. **Heartbeats** every ``heartbeat_interval_ms`` in COMPLETING_REBALANCE and STABLE.
   ``REBALANCE_IN_PROGRESS`` → rejoin at the next ``poll()``; ``ILLEGAL_GENERATION`` →
   generation reset; ``UNKNOWN_MEMBER_ID`` → member id reset too (a static member keeps its
   instance id); ``FENCED_INSTANCE_ID`` → fatal. No successful heartbeat for a session timeout
   → the coordinator is looked up again.
6. **Poll timeout.** No ``poll()`` for ``max_poll_interval_ms`` while in the group → the member
   leaves (a LeaveGroup, reason "consumer poll timeout has expired"; a static member sends none)
   and rejoins at its next ``poll()``, as Kafka's heartbeat thread does.
7. **Coordinator errors.** ``NOT_COORDINATOR``/``COORDINATOR_NOT_AVAILABLE``, a lost or timed
   out request → the coordinator is unknown; it is looked up again after ``retry_backoff_ms``.
8. **Commits** (``commitOffsetsAsync``/``commitSync``): auto-commits from ``poll()`` and before
   a revocation, manual ``commit()``; sent only while STABLE, with the generation and member
   id; retriable errors are retried after the backoff.
9. **Close.** Commit the consumed positions (auto-commit), revoke (or lose) the partitions,
   LeaveGroup for a dynamic member (a static member sends none, KIP-345).

Rejoins wait for a ``poll()`` when something outside a rebalance asked for them (a heartbeat
error, a metadata change, a poll timeout, ``enforce_rebalance``), as Kafka rejoins only from
``poll()``; the steps of a rebalance already under way (a new member id, a failed sync, the
cooperative second round) go on without one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from coordinator_engine.assignors import Subscription, TopicPartitionPair
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from coordinator_engine.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from coordinator_engine.errors import Errors
from coordinator_engine.requests import (
    Assignment,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    PartitionOffset,
    SyncGroupRequest,
    TopicPartition,
    trusted_constructor,
)
from coordinator_engine.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

from .config import ConsumerConfig, RebalanceProtocol
from .events import (
    ClientEvent,
    CommitCompleted,
    CommitFailed,
    ConsumerRebalanceListener,
    CoordinatorDiscovered,
    CoordinatorLost,
    FatalError,
    JoinedGroup,
    LeftGroup,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceStarted,
)
from .protocol import (
    AssignorState,
    assign,
    assigned_partitions,
    group_subscriptions,
    join_protocols,
)
from .rules import check_offset, checked_time, next_regular_tick_ms, quiet_period_ms
from .state import (
    COMPLETING_REBALANCE,
    HEARTBEAT_STATES,
    PREPARING_REBALANCE,
    STABLE,
    UNJOINED,
    MemberState,
    check_transition,
)

#: Every request the client sends.
ClientRequest = (
    FindCoordinatorRequest
    | MetadataRequest
    | JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
)
#: Every response the client reads.
ClientResponse = (
    FindCoordinatorResponse
    | MetadataResponse
    | JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
)

#: A JoinGroup may wait a whole rebalance timeout; Kafka gives it this much more.
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000
#: Kafka truncates JoinGroup/LeaveGroup reasons to this many characters.
MAX_REASON_LENGTH = 255
#: The reason a member that stopped polling gives when it leaves (KIP-62).
POLL_TIMEOUT_REASON = "consumer poll timeout has expired"
CLOSE_REASON = "the consumer is being closed"

_NONE = Errors.NONE

# The requests the client builds hold values that fit their Kafka types by construction (its
# checked config and positions, ids and generations from the coordinator's answers): built
# without the field checks, which would otherwise run on every request of every member.
_find_coordinator_request = trusted_constructor(FindCoordinatorRequest)
_metadata_request = trusted_constructor(MetadataRequest)
_join_group_request = trusted_constructor(JoinGroupRequest)
_sync_group_request = trusted_constructor(SyncGroupRequest)
_heartbeat_request = trusted_constructor(HeartbeatRequest)
_offset_commit_request = trusted_constructor(OffsetCommitRequest)
_partition_offset = trusted_constructor(PartitionOffset)
_offset_fetch_request = trusted_constructor(OffsetFetchRequest)
_topic_partition = trusted_constructor(TopicPartition)
#: ``_idle_until`` when nothing is timed: later than any time.
_NO_DEADLINE = 1 << 63
_COORDINATOR_ERRORS = frozenset({Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR})
#: JoinGroup errors Kafka's consumer throws to the application instead of retrying.
_FATAL_JOIN_ERRORS = frozenset(
    {
        Errors.FENCED_INSTANCE_ID,
        Errors.INCONSISTENT_GROUP_PROTOCOL,
        Errors.INVALID_SESSION_TIMEOUT,
        Errors.INVALID_GROUP_ID,
        Errors.GROUP_AUTHORIZATION_FAILED,
        Errors.GROUP_MAX_SIZE_REACHED,
    }
)


class _Kind(enum.Enum):
    """A kind of request; at most one of each is in flight."""

    # The in-flight table is keyed by kind on every call: members are singletons, so the
    # identity hash (in C) serves, not Enum's hash of the name.
    __hash__ = object.__hash__

    FIND_COORDINATOR = "FindCoordinator"
    METADATA = "Metadata"
    JOIN_GROUP = "JoinGroup"
    SYNC_GROUP = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    LEAVE_GROUP = "LeaveGroup"
    OFFSET_COMMIT = "OffsetCommit"
    OFFSET_FETCH = "OffsetFetch"


_FIND = _Kind.FIND_COORDINATOR
_METADATA = _Kind.METADATA
_JOIN = _Kind.JOIN_GROUP
_SYNC = _Kind.SYNC_GROUP
_HEARTBEAT = _Kind.HEARTBEAT
_LEAVE = _Kind.LEAVE_GROUP
_COMMIT = _Kind.OFFSET_COMMIT
_FETCH = _Kind.OFFSET_FETCH

#: Request type → (kind, the response type that answers it).
_KINDS: dict[type, tuple[_Kind, type]] = {
    FindCoordinatorRequest: (_FIND, FindCoordinatorResponse),
    MetadataRequest: (_METADATA, MetadataResponse),
    JoinGroupRequest: (_JOIN, JoinGroupResponse),
    SyncGroupRequest: (_SYNC, SyncGroupResponse),
    HeartbeatRequest: (_HEARTBEAT, HeartbeatResponse),
    LeaveGroupRequest: (_LEAVE, LeaveGroupResponse),
    OffsetCommitRequest: (_COMMIT, OffsetCommitResponse),
    OffsetFetchRequest: (_FETCH, OffsetFetchResponse),
}
#: Requests that go to the group coordinator (the others go to any broker).
_COORDINATOR_KINDS = (_JOIN, _SYNC, _HEARTBEAT, _LEAVE, _COMMIT, _FETCH)


@dataclass(frozen=True, slots=True)
class Generation:
    """Kafka's ``AbstractCoordinator.Generation``: what the member knows of its membership."""

    generation_id: int
    member_id: str
    protocol_name: str | None


NO_GENERATION = Generation(-1, "", None)


@dataclass(frozen=True, slots=True)
class Node:
    """The coordinator, as FindCoordinator named it."""

    node_id: int
    host: str
    port: int


@dataclass(slots=True)
class _CommitBatch:
    offsets: dict[TopicPartitionPair, int]
    auto: bool


class _MetadataPurpose(enum.Enum):
    REFRESH = "refresh"  # periodic or asked for: a changed partition count triggers a rejoin
    ASSIGNMENT = "assignment"  # the leader's fresh metadata for the assignor
    REBASE = "rebase"  # after a JoinGroup: the counts this generation is based on


_REFRESH = _MetadataPurpose.REFRESH


@dataclass(slots=True)
class _InFlight:
    request: ClientRequest
    deadline_ms: int
    generation: Generation
    commit: _CommitBatch | None = None
    purpose: _MetadataPurpose = _MetadataPurpose.REFRESH


@dataclass(slots=True)
class _LeaderWork:
    """A leader's assignment waiting for fresh metadata."""

    generation: Generation
    protocol_name: str
    subscriptions: dict[str, Subscription]
    topics: frozenset[str]
    metadata_request: MetadataRequest | None = None


@dataclass(slots=True)
class _Timers:
    """Kafka's ``Heartbeat`` timers and the client's retry backoffs, as deadlines."""

    heartbeat_due_ms: int = 0
    heartbeat_sent_ms: int = 0
    session_deadline_ms: int = 0
    poll_timer_start_ms: int = 0
    find_retry_ms: int = 0
    metadata_retry_ms: int = 0
    join_retry_ms: int = 0
    commit_retry_ms: int = 0
    fetch_retry_ms: int = 0
    next_auto_commit_ms: int = 0
    join_prepare_deadline_ms: int | None = None
    close_deadline_ms: int = 0


@dataclass(slots=True)
class _Rejoin:
    needed: bool = True
    reason: str = "joining the group"
    awaiting_poll: bool = True
    needs_join_prepare: bool = True
    after_sync_reason: str | None = None


@dataclass(slots=True)
class _Partitions:
    assignment: frozenset[TopicPartitionPair] = frozenset()  # replaced whole, handed out as is
    positions: dict[TopicPartitionPair, int] = field(default_factory=dict)
    awaiting_positions: set[TopicPartitionPair] = field(default_factory=set)
    committed: dict[TopicPartitionPair, int] = field(default_factory=dict)


def _sorted(partitions: AbstractSet[TopicPartitionPair]) -> tuple[TopicPartitionPair, ...]:
    return tuple(sorted(partitions))


def _reason(text: str) -> str:
    return text[:MAX_REASON_LENGTH]


class GroupClient:
    """One consumer's group membership (see the module docstring for how a host drives it)."""

    def __init__(
        self,
        config: ConsumerConfig,
        now_ms: int,
        listener: ConsumerRebalanceListener | None = None,
        *,
        quiet_heartbeats: bool = False,
    ) -> None:
        if not isinstance(config, ConsumerConfig):
            raise TypeError(f"config must be a ConsumerConfig, got {type(config).__name__}")
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        self._config = config
        self._protocol = config.rebalance_protocol
        self._listener = listener
        self._now = now_ms
        self._started = False
        self._closing = False
        self._closed = False
        self._fatal_error: int | None = None
        self._state = UNJOINED
        self._generation = NO_GENERATION
        self._is_leader = False
        self._coordinator: Node | None = None
        self._in_flight: dict[_Kind, _InFlight] = {}
        self._timers = _Timers(next_auto_commit_ms=now_ms + config.auto_commit_interval_ms)
        self._rejoin = _Rejoin()
        self._leader_work: _LeaderWork | None = None
        self._pending_sync: SyncGroupRequest | None = None
        self._partitions = _Partitions()
        self._assignor_state = AssignorState()
        self._commit_queue: list[_CommitBatch] = []
        self._metadata: dict[str, int] = {}
        self._metadata_fetched_ms: int | None = None
        self._metadata_refresh_requested = False
        self._metadata_rebase = False
        self._group_subscription: frozenset[str] = frozenset()
        #: ``_watched_topics()`` and the group subscription it was computed for.
        self._watched: tuple[frozenset[str], tuple[str, ...]] | None = None
        self._events: list[ClientEvent] = []
        self._heartbeat_flight: _InFlight | None = None
        #: Set when ``outgoing`` found nothing to send: its next deadline (``_NO_DEADLINE``: none).
        #: Until then, or until a call changes the client's state, there is nothing to send.
        self._idle_until: int | None = None
        #: Set by ``_quiet_deadline`` for a quiet Stable member (nothing in flight, queued or
        #: wanted): its earliest deadline other than the heartbeat's; None otherwise. While
        #: ``_idle_until`` holds the deadline computed with it, a heartbeat falling due before
        #: it is all ``outgoing`` has to send.
        self._quiet_until: int | None = None
        if type(quiet_heartbeats) is not bool:
            raise TypeError("quiet_heartbeats must be a bool")
        self._quiet_heartbeats = quiet_heartbeats
        #: A quiet member's heartbeat period: the last regular tick before its session ends.
        interval = config.heartbeat_interval_ms
        self._quiet_interval_ms = quiet_period_ms(config.session_timeout_ms, interval)

    # ------------------------------------------------------------------ public state

    @property
    def config(self) -> ConsumerConfig:
        return self._config

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return self._protocol

    @property
    def state(self) -> MemberState:
        return self._state

    @property
    def generation(self) -> int:
        """The generation this member is in, −1 when none."""
        return self._generation.generation_id

    @property
    def member_id(self) -> str:
        """The member id the coordinator gave, "" before the first JoinGroup answer."""
        return self._generation.member_id

    @property
    def protocol_name(self) -> str | None:
        """The assignor the coordinator selected for the current generation."""
        return self._generation.protocol_name

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def coordinator(self) -> Node | None:
        """Where group requests go; None while it is unknown."""
        return self._coordinator

    @property
    def assignment(self) -> frozenset[TopicPartitionPair]:
        """The partitions this member owns now."""
        return self._partitions.assignment

    @property
    def positions(self) -> dict[TopicPartitionPair, int]:
        """The next offset to consume of each owned partition whose position is known; −1 when
        nothing was committed and the reset policy leaves the choice to the host."""
        return dict(self._partitions.positions)

    @property
    def committed(self) -> dict[TopicPartitionPair, int]:
        """The last committed offset this member saw (fetched or committed), per partition."""
        return dict(self._partitions.committed)

    @property
    def metadata(self) -> dict[str, int]:
        """Partition counts from the last Metadata answers (0: the topic does not exist)."""
        return dict(self._metadata)

    @property
    def closed(self) -> bool:
        """True once the client will send nothing more (closed, or failed)."""
        return self._closed

    @property
    def awaiting_poll(self) -> bool:
        """A (re)join waits for the application's next ``poll()`` (Kafka's consumer joins only
        from ``poll()``). A host that calls ``poll()`` only when it matters (a simulation in
        virtual time) polls when this turns true, instead of every few milliseconds."""
        rejoin = self._rejoin
        return rejoin.needed and rejoin.awaiting_poll and not (self._closed or self._closing)

    @property
    def auto_commit_due_ms(self) -> int:
        """When a ``poll()`` next auto-commits the consumed positions (with
        ``enable_auto_commit``). A host that calls ``poll()`` only when it matters polls then."""
        return self._timers.next_auto_commit_ms

    @property
    def fatal_error(self) -> int | None:
        """The Kafka error code that stopped the client, if one did."""
        return self._fatal_error

    def events(self) -> list[ClientEvent]:
        """Drain the events that happened since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    # ------------------------------------------------------------------ the application's calls

    def poll(self, now_ms: int) -> None:
        """The application's ``poll()``: it is alive, a waiting rejoin may start, auto-commit."""
        # _tick, inlined: poll, outgoing and receive run on every step of every member.
        if type(now_ms) is not int or now_ms < self._now:
            self._tick(now_ms)
        now = self._now = now_ms
        if self._closed or self._closing:
            return
        t = self._timers
        rejoin = self._rejoin
        config = self._config
        if (
            not self._started
            or (rejoin.needed and rejoin.awaiting_poll)
            or self._idle_until == t.poll_timer_start_ms + config.max_poll_interval_ms
        ):
            # Something to send now (the first join, a rejoin waiting for this poll), or the
            # idle client's deadline was the poll timeout this poll pushes back. Otherwise a
            # poll only pushes that deadline back: the client stays idle as long as it was.
            self._idle_until = None
        self._started = True
        rejoin.awaiting_poll = False
        t.poll_timer_start_ms = now
        if now >= t.next_auto_commit_ms and config.enable_auto_commit:
            t.next_auto_commit_ms = now + config.auto_commit_interval_ms
            if self._state is STABLE:
                consumed = self._consumed()
                if consumed:
                    self._idle_until = None
                    self._enqueue_commit(consumed, auto=True)

    def record_consumed(self, topic: str, partition: int, next_offset: int) -> None:
        """The application consumed a partition up to ``next_offset`` (the next to read)."""
        self._set_positions("record_consumed", (((topic, partition), next_offset),))

    def record_positions(self, positions: Mapping[TopicPartitionPair, int]) -> None:
        """``record_consumed`` for many partitions at once, in order: the application consumed
        each ``(topic, partition)`` up to its offset (a host that moves every partition at
        once, at each poll, makes one call instead of one per partition)."""
        self._set_positions("record_positions", positions.items())

    def seek(self, topic: str, partition: int, offset: int) -> None:
        """Set where to consume an owned partition next; overrides its fetched committed offset."""
        self._set_positions("seek", (((topic, partition), offset),))

    def commit(self, offsets: dict[TopicPartitionPair, int] | None = None) -> None:
        """Commit ``offsets`` (default: every consumed position); a CommitCompleted or
        CommitFailed event tells the outcome. Retriable errors are retried."""
        if self._closed or self._closing:
            raise RuntimeError("the client is closed")
        self._idle_until = None
        if offsets is None:
            offsets = self._consumed()
        checked: dict[TopicPartitionPair, int] = {}
        for key, offset in offsets.items():
            if (
                not isinstance(key, tuple)
                or len(key) != 2
                or type(key[0]) is not str
                or type(key[1]) is not int
                or key[1] < 0
            ):
                raise ValueError(f"commit: {key!r} is not a (topic, partition) pair")
            check_offset("commit", offset, key)
            checked[key] = offset
        if not checked:
            self._emit(CommitCompleted(at_ms=self._now, offsets={}, auto=False))
            return
        self._enqueue_commit(checked, auto=False)

    def metadata_changed(self) -> None:
        """The host learnt that topic metadata changed: refresh it now (a changed partition
        count of a watched topic then makes the member rejoin)."""
        self._idle_until = None
        self._metadata_refresh_requested = True

    def group_changed(self, now_ms: int) -> None:
        """The host learnt that the group changed (a rebalance began, a member left: it watches
        the coordinator's events). A member with ``quiet_heartbeats`` heartbeats again at its
        next regular tick, where a member heartbeating every ``heartbeat_interval_ms`` would
        have learnt of the change; otherwise nothing changes."""
        now = self._tick(now_ms)
        if not self._quiet_heartbeats or _HEARTBEAT in self._in_flight:
            return
        state = self._state
        if state is not STABLE and state is not COMPLETING_REBALANCE:
            return
        t = self._timers
        tick = next_regular_tick_ms(t.heartbeat_sent_ms, now, self._config.heartbeat_interval_ms)
        if tick < t.heartbeat_due_ms:
            t.heartbeat_due_ms = tick
            idle = self._idle_until
            if idle is not None and tick < idle:
                self._idle_until = tick  # only the heartbeat moved, earlier

    def enforce_rebalance(self, reason: str = "the application asked for a rebalance") -> None:
        """Rejoin the group at the next ``poll()`` (Kafka's ``enforceRebalance``)."""
        if not self._closed and not self._closing:
            self._idle_until = None
            self._request_rejoin(reason, wait_for_poll=True)

    def close(self, now_ms: int, timeout_ms: int = 30000) -> None:
        """Leave the group: auto-commit, revoke, LeaveGroup (dynamic members only). Keep
        calling ``outgoing``/``receive`` until ``closed``; ``timeout_ms`` bounds the commit."""
        now = self._tick(now_ms)
        if self._closed or self._closing:
            return
        self._idle_until = None
        if not self._started:
            self._closed = True
            return
        self._closing = True
        self._timers.close_deadline_ms = now + timeout_ms
        if self._config.enable_auto_commit and self._state is STABLE:
            self._enqueue_commit(self._consumed(), auto=True)

    # ------------------------------------------------------------------ the transport's calls

    def outgoing(self, now_ms: int) -> list[ClientRequest]:
        """The requests to send now, in order."""
        if type(now_ms) is not int or now_ms < self._now:
            self._tick(now_ms)
        now = self._now = now_ms
        out: list[ClientRequest] = []
        idle = self._idle_until
        if idle is not None:
            if now < idle:
                return out  # nothing changed and nothing fell due since the last empty call
            quiet = self._quiet_until
            if quiet is not None and now < quiet and now >= self._timers.heartbeat_due_ms:
                # A quiet Stable member whose heartbeat, and nothing else, fell due: what
                # every step below would find.
                self._send_heartbeat(now, out)
                self._idle_until = None
                return out
        if self._closed or not self._started:
            return out
        in_flight = self._in_flight
        if in_flight:
            self._expire_requests(now)
        if self._closing:
            self._outgoing_while_closing(now, out)
            return out
        # The steps run in this order; each is skipped when it has nothing to do (the common
        # call is a Stable member's heartbeat, or nothing at all).
        t = self._timers
        state = self._state
        if (state is STABLE or state is COMPLETING_REBALANCE) and (
            now >= t.session_deadline_ms
            or now >= t.poll_timer_start_ms + self._config.max_poll_interval_ms
        ):
            self._check_liveness(now, out)
        if self._coordinator is None:
            self._maybe_find_coordinator(now, out)
        if _METADATA not in in_flight and now >= t.metadata_retry_ms:
            fetched = self._metadata_fetched_ms
            if (
                fetched is None
                or now >= fetched + self._config.metadata_max_age_ms
                or self._metadata_refresh_requested
                or self._metadata_rebase
                or self._leader_work is not None
            ):
                self._maybe_fetch_metadata(now, out)
        if self._coordinator is not None:
            if self._commit_queue:
                self._maybe_send_commit(now, out)
            if self._rejoin.needed:
                self._maybe_join(now, out)
            if self._pending_sync is not None:
                self._maybe_send_sync(now, out)
            state = self._state
            if (
                (state is STABLE or state is COMPLETING_REBALANCE)
                and now >= t.heartbeat_due_ms
                and _HEARTBEAT not in in_flight
            ):
                self._send_heartbeat(now, out)
            if self._partitions.awaiting_positions:
                self._maybe_fetch_offsets(now, out)
        if not out:
            deadline = self._next_deadline()
            self._idle_until = _NO_DEADLINE if deadline is None else deadline
        return out

    def receive(self, request: ClientRequest, response: ClientResponse, now_ms: int) -> None:
        """The answer to ``request`` (an object ``outgoing`` returned)."""
        if type(now_ms) is not int or now_ms < self._now:
            self._tick(now_ms)
        now = self._now = now_ms
        self._idle_until = None
        kind, response_type = _KINDS.get(type(request)) or self._kind_of(request)
        if type(response) is not response_type and not isinstance(response, response_type):
            raise TypeError(
                f"{type(request).__name__} is answered by {response_type.__name__}, "
                f"not {type(response).__name__}"
            )
        flight = self._in_flight.get(kind)
        if flight is None or flight.request is not request or self._closed:
            return  # an answer the client gave up waiting for
        del self._in_flight[kind]
        _RECEIVERS[kind](self, flight, response, now)
        # Most answers leave a quiet Stable member (a heartbeat's, a commit's): then nothing is
        # due before its next deadline, and the host's next outgoing() need not look again.
        deadline = self._quiet_deadline()
        if deadline is not None and deadline > now:
            self._idle_until = deadline

    def fail(self, request: ClientRequest, now_ms: int, reason: str = "disconnected") -> None:
        """``request`` will never be answered (its connection was lost)."""
        now = self._tick(now_ms)
        self._idle_until = None
        kind, _ = self._kind_of(request)
        flight = self._in_flight.get(kind)
        if flight is None or flight.request is not request or self._closed:
            return
        self._lost(kind, now, reason)

    def next_deadline_ms(self) -> int | None:
        """When ``outgoing`` must be called next at the latest; None when nothing is timed."""
        idle = self._idle_until
        if idle is not None:
            return None if idle == _NO_DEADLINE else idle
        return self._next_deadline()

    def _quiet_deadline(self) -> int | None:
        """The next deadline of a quiet Stable member (nothing in flight, queued or wanted, the
        common case), whose ``outgoing`` has nothing to send before it; None for any other."""
        self._quiet_until = None
        if (
            not self._in_flight
            and not self._closed
            and self._started
            and self._state is STABLE
            and not self._closing
            and self._coordinator is not None
            and not self._commit_queue
            and not self._rejoin.needed
            and self._pending_sync is None
            and not self._partitions.awaiting_positions
            and self._metadata_fetched_ms is not None
            and not self._metadata_rebase
            and not self._metadata_refresh_requested
            and self._leader_work is None  # (with the three above: not _metadata_wanted_now())
        ):
            # The deadlines _next_deadline would list for it, without the list.
            t = self._timers
            config = self._config
            quiet = self._metadata_fetched_ms + config.metadata_max_age_ms
            retry = t.metadata_retry_ms
            if retry > quiet:
                quiet = retry
            deadline = t.session_deadline_ms
            if deadline < quiet:
                quiet = deadline
            deadline = t.poll_timer_start_ms + config.max_poll_interval_ms
            if deadline < quiet:
                quiet = deadline
            self._quiet_until = quiet
            heartbeat = t.heartbeat_due_ms
            return heartbeat if heartbeat < quiet else quiet
        return None

    def _next_deadline(self) -> int | None:
        deadline = self._quiet_deadline()
        if deadline is not None:
            return deadline
        if self._closed or not self._started:
            return None
        t = self._timers
        in_flight = self._in_flight
        deadlines = [flight.deadline_ms for flight in in_flight.values()]
        coordinator_known = self._coordinator is not None
        if (
            not coordinator_known
            and _FIND not in in_flight
            and (self._commit_queue or not self._closing)
        ):
            deadlines.append(t.find_retry_ms)
        if self._closing:
            deadlines.append(t.close_deadline_ms)
            if not self._commits_pending():
                deadlines.append(self._now)
            elif coordinator_known and self._commit_queue and _COMMIT not in in_flight:
                deadlines.append(t.commit_retry_ms)
            return min(deadlines)
        if _METADATA not in in_flight:
            if self._metadata_wanted_now():
                deadlines.append(t.metadata_retry_ms)
            else:
                assert self._metadata_fetched_ms is not None
                refresh = self._metadata_fetched_ms + self._config.metadata_max_age_ms
                retry = t.metadata_retry_ms
                deadlines.append(refresh if refresh >= retry else retry)
        if coordinator_known:
            state = self._state
            if state is STABLE or state is COMPLETING_REBALANCE:
                if _HEARTBEAT not in in_flight:
                    deadlines.append(t.heartbeat_due_ms)
                deadlines.append(t.session_deadline_ms)
                deadlines.append(t.poll_timer_start_ms + self._config.max_poll_interval_ms)
            if self._commit_queue and _COMMIT not in in_flight:
                deadlines.append(t.commit_retry_ms)
            if self._partitions.awaiting_positions and _FETCH not in in_flight and state is STABLE:
                deadlines.append(t.fetch_retry_ms)
            if self._pending_sync is not None and _SYNC not in in_flight:
                deadlines.append(self._now)
            if self._rejoin.needed and self._may_start_join():
                if t.join_prepare_deadline_ms is not None and self._commits_pending():
                    deadlines.append(t.join_prepare_deadline_ms)
                else:
                    deadlines.append(t.join_retry_ms)
        return min(deadlines) if deadlines else None

    # ------------------------------------------------------------------ time and bookkeeping

    def _tick(self, now_ms: int) -> int:
        self._now = now = checked_time(self._now, now_ms)
        return now

    @staticmethod
    def _kind_of(request: Any) -> tuple[_Kind, type]:
        kind = _KINDS.get(type(request))
        if kind is None:
            raise TypeError(f"not a request this client sends: {type(request).__name__}")
        return kind

    def _emit(self, event: ClientEvent) -> None:
        self._events.append(event)

    def _transition(self, target: MemberState) -> None:
        cause = check_transition(self._state, target)
        source, self._state = self._state, target
        self._emit(
            MemberStateChanged(
                at_ms=self._now, from_state=source.value, to_state=target.value, reason=cause
            )
        )

    def _send(
        self,
        kind: _Kind,
        request: ClientRequest,
        now: int,
        out: list[ClientRequest],
        *,
        timeout_ms: int | None = None,
        commit: _CommitBatch | None = None,
        purpose: _MetadataPurpose = _MetadataPurpose.REFRESH,
    ) -> None:
        timeout = self._config.request_timeout_ms if timeout_ms is None else timeout_ms
        # Positional: one _InFlight per request sent, a heartbeat's included.
        self._in_flight[kind] = _InFlight(request, now + timeout, self._generation, commit, purpose)
        out.append(request)

    def _backoff(self, now: int) -> int:
        return now + self._config.retry_backoff_ms

    def _expire_requests(self, now: int) -> None:
        if all(now < flight.deadline_ms for flight in self._in_flight.values()):
            return
        for kind, flight in list(self._in_flight.items()):
            if self._in_flight.get(kind) is flight and now >= flight.deadline_ms:
                self._lost(kind, now, f"{kind.value} request timed out")

    def _lost(self, kind: _Kind, now: int, reason: str) -> None:
        """A request will not be answered: Kafka's disconnect handling."""
        if kind in _COORDINATOR_KINDS:
            self._mark_coordinator_unknown(reason, now)  # fails every coordinator request
            return
        flight = self._in_flight.pop(kind)
        if kind is _FIND:
            self._timers.find_retry_ms = self._backoff(now)
        else:
            self._metadata_not_answered(flight, now)

    # ------------------------------------------------------------------ coordinator discovery

    def _maybe_find_coordinator(self, now: int, out: list[ClientRequest]) -> None:
        if (
            self._coordinator is None
            and _FIND not in self._in_flight
            and now >= self._timers.find_retry_ms
        ):
            self._send(_FIND, _find_coordinator_request(key=self._config.group_id), now, out)

    def _on_find_coordinator(self, response: FindCoordinatorResponse, now: int) -> None:
        error = response.error_code
        if error == _NONE:
            self._coordinator = Node(response.node_id, response.host, response.port)
            self._timers.session_deadline_ms = now + self._config.session_timeout_ms
            self._emit(
                CoordinatorDiscovered(
                    at_ms=now, node_id=response.node_id, host=response.host, port=response.port
                )
            )
        elif error == Errors.GROUP_AUTHORIZATION_FAILED:
            self._fail_fatally(error, "not authorized to use the group")
        else:
            self._timers.find_retry_ms = self._backoff(now)

    def _mark_coordinator_unknown(self, reason: str, now: int) -> None:
        """Kafka's ``markCoordinatorUnknown``: forget it, fail what was sent to it."""
        if self._coordinator is not None:
            self._coordinator = None
            self._timers.find_retry_ms = self._backoff(now)
            self._emit(CoordinatorLost(at_ms=now, reason=reason))
        for kind in _COORDINATOR_KINDS:
            flight = self._in_flight.pop(kind, None)
            if flight is None:
                continue
            if kind is _HEARTBEAT:
                self._timers.heartbeat_due_ms = self._backoff(now)
            elif kind is _COMMIT:
                assert flight.commit is not None
                self._retry_commit(flight.commit, now)
            elif kind is _FETCH:
                self._timers.fetch_retry_ms = self._backoff(now)
        if self._state is PREPARING_REBALANCE or self._state is COMPLETING_REBALANCE:
            # The rebalance under way cannot finish without the coordinator: join again.
            self._leader_work = None
            self._pending_sync = None
            self._request_rejoin(
                "the coordinator was lost during a rebalance", wait_for_poll=False, backoff=True
            )

    # ------------------------------------------------------------------ metadata

    def _watched_topics(self) -> tuple[str, ...]:
        group = self._group_subscription
        watched = self._watched
        if watched is None or watched[0] is not group:
            watched = self._watched = (group, tuple(sorted(set(self._config.topics) | group)))
        return watched[1]

    def _metadata_wanted_now(self) -> bool:
        work = self._leader_work
        return (
            (work is not None and work.metadata_request is None)
            or self._metadata_rebase
            or self._metadata_refresh_requested
            or self._metadata_fetched_ms is None
        )

    def _maybe_fetch_metadata(self, now: int, out: list[ClientRequest]) -> None:
        if _METADATA in self._in_flight or now < self._timers.metadata_retry_ms:
            return
        work = self._leader_work
        if work is not None and work.metadata_request is None:
            purpose = _MetadataPurpose.ASSIGNMENT
        elif self._metadata_rebase:
            purpose = _MetadataPurpose.REBASE
        elif self._metadata_wanted_now() or now >= (
            (self._metadata_fetched_ms or 0) + self._config.metadata_max_age_ms
        ):
            purpose = _MetadataPurpose.REFRESH
        else:
            return
        request = _metadata_request(topics=self._watched_topics())
        if purpose is _MetadataPurpose.ASSIGNMENT:
            assert work is not None
            work.metadata_request = request
        self._metadata_rebase = False
        self._metadata_refresh_requested = False
        self._send(_METADATA, request, now, out, purpose=purpose)

    def _metadata_not_answered(self, flight: _InFlight, now: int) -> None:
        self._timers.metadata_retry_ms = self._backoff(now)
        work = self._leader_work
        if work is not None and work.metadata_request is flight.request:
            work.metadata_request = None
        elif flight.purpose is _MetadataPurpose.REBASE:
            self._metadata_rebase = True
        else:
            self._metadata_refresh_requested = True

    def _on_metadata(self, flight: _InFlight, response: MetadataResponse, now: int) -> None:
        assert isinstance(flight.request, MetadataRequest)
        answered = {t.name: (t.partitions if t.error_code == _NONE else 0) for t in response.topics}
        metadata = self._metadata
        changed = []
        for topic in flight.request.topics or ():  # sorted, each once
            count = answered.get(topic)
            if count is not None:
                known = metadata.get(topic)
                if known is not None and known != count:
                    changed.append(topic)
                metadata[topic] = count
        self._metadata_fetched_ms = now
        work = self._leader_work
        if work is not None and work.metadata_request is flight.request:
            self._leader_assign(work)
        elif changed and flight.purpose is _MetadataPurpose.REFRESH:
            self._on_partition_counts_changed(changed)

    def _on_partition_counts_changed(self, topics: list[str]) -> None:
        """Seed 000's metadata trigger: a subscribed topic's partition count changed."""
        reason = f"partition count of {', '.join(topics)} changed"
        if self._state is STABLE:
            self._request_rejoin(reason, wait_for_poll=True)
        elif self._state is COMPLETING_REBALANCE:
            # The leader may have assigned with the old counts: rejoin once this sync is done.
            self._rejoin.after_sync_reason = reason
        # PREPARING_REBALANCE: the leader fetches metadata after the join phase, so the new
        # generation already sees the change. UNJOINED: a join is coming anyway.

    # ------------------------------------------------------------------ join

    def _request_rejoin(self, reason: str, *, wait_for_poll: bool, backoff: bool = False) -> None:
        """Kafka's ``requestRejoin``; ``wait_for_poll`` when asked for outside a rebalance."""
        already_joining = self._rejoin.needed and not self._rejoin.awaiting_poll
        self._rejoin.needed = True
        self._rejoin.reason = reason
        if wait_for_poll and not already_joining and self._state in (STABLE, UNJOINED):
            self._rejoin.awaiting_poll = True
        self._timers.join_retry_ms = self._backoff(self._now) if backoff else self._now

    def _reset_generation(self, reason: str, *, reset_member_id: bool, wait_for_poll: bool) -> None:
        """Kafka's ``resetStateAndRejoin``: out of the group; rejoin (a new id if asked)."""
        self._transition(UNJOINED)
        if reset_member_id:
            self._generation = NO_GENERATION
        else:
            self._generation = Generation(-1, self._generation.member_id, None)
        self._leader_work = None
        self._pending_sync = None
        self._rejoin.needs_join_prepare = True
        self._timers.join_prepare_deadline_ms = None
        self._request_rejoin(reason, wait_for_poll=wait_for_poll)

    def _may_start_join(self) -> bool:
        return (
            self._rejoin.needed
            and not self._rejoin.awaiting_poll
            and _JOIN not in self._in_flight
            and _SYNC not in self._in_flight
            and self._leader_work is None
            and self._pending_sync is None
        )

    def _commits_pending(self) -> bool:
        return bool(self._commit_queue) or _COMMIT in self._in_flight

    def _maybe_join(self, now: int, out: list[ClientRequest]) -> None:
        """Kafka's ``joinGroupIfNeeded``, one non-blocking step."""
        t = self._timers
        if not self._may_start_join() or now < t.join_retry_ms:
            return
        if self._rejoin.needs_join_prepare:
            if t.join_prepare_deadline_ms is None:
                t.join_prepare_deadline_ms = now + self._config.rebalance_timeout_ms
                self._emit(RebalanceStarted(at_ms=now, reason=self._rejoin.reason))
                if self._config.enable_auto_commit and self._state is STABLE:
                    self._enqueue_commit(self._consumed(), auto=True)
                self._maybe_send_commit(now, out)
            if self._commits_pending() and now < t.join_prepare_deadline_ms:
                return
            self._on_join_prepare(now)
            self._rejoin.needs_join_prepare = False
            self._maybe_send_commit(now, out)  # what the listener committed while revoking
        deadline = t.join_prepare_deadline_ms
        if deadline is not None and self._commits_pending() and now < deadline:
            return
        self._fail_queued_commits("the member is rejoining the group")
        t.join_prepare_deadline_ms = None
        self._send_join_group(now, out)

    def _on_join_prepare(self, now: int) -> None:
        """Kafka's ``onJoinPrepare`` after its commit: revoke, or lose, the partitions."""
        owned = self._partitions.assignment
        if self._generation.generation_id == -1 or not self._generation.member_id:
            if owned:
                self._lose(set(owned), now)
        elif self._protocol is RebalanceProtocol.EAGER:
            self._revoke(set(owned), now, commit=False)  # committed just before
        # COOPERATIVE keeps everything: the subscription never changes here, so no owned
        # partition falls outside it.
        self._is_leader = False
        self._group_subscription = frozenset()

    def _send_join_group(self, now: int, out: list[ClientRequest]) -> None:
        config = self._config
        generation = self._generation
        request = _join_group_request(
            group_id=config.group_id,
            member_id=generation.member_id,
            group_instance_id=config.group_instance_id,
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=join_protocols(
                config.assignors,
                config.topics,
                self._partitions.assignment,
                generation.generation_id,
                self._assignor_state,
            ),
            client_id=config.client_id,
            client_host=config.client_host,
            reason=_reason(self._rejoin.reason) or None,
        )
        self._transition(PREPARING_REBALANCE)
        timeout = max(
            config.request_timeout_ms, config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
        )
        self._send(_JOIN, request, now, out, timeout_ms=timeout)

    def _on_join_group(self, flight: _InFlight, response: JoinGroupResponse, now: int) -> None:
        """Kafka's ``JoinGroupResponseHandler``."""
        error = response.error_code
        if error == _NONE:
            if response.protocol_type not in (None, CONSUMER_PROTOCOL_TYPE):
                self._fail_fatally(
                    Errors.INCONSISTENT_GROUP_PROTOCOL,
                    f"JoinGroup answered protocol type {response.protocol_type!r}",
                )
            elif self._state is not PREPARING_REBALANCE:
                self._request_rejoin("left the group while joining", wait_for_poll=False)
            elif response.protocol_name not in self._config.assignors:
                self._fail_fatally(
                    Errors.INCONSISTENT_GROUP_PROTOCOL,
                    f"the coordinator selected assignor {response.protocol_name!r}",
                )
            else:
                self._joined(response, now)
        elif error == Errors.MEMBER_ID_REQUIRED:
            self._generation = Generation(-1, response.member_id, None)
            self._request_rejoin(
                f"rejoining with the member id {response.member_id}", wait_for_poll=False
            )
        elif error == Errors.UNKNOWN_MEMBER_ID:
            if flight.generation == self._generation:
                self._reset_generation(
                    "JoinGroup answered UNKNOWN_MEMBER_ID",
                    reset_member_id=True,
                    wait_for_poll=False,
                )
            self._request_rejoin("JoinGroup answered UNKNOWN_MEMBER_ID", wait_for_poll=False)
        elif error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self._request_rejoin(f"JoinGroup answered {Errors.name_of(error)}", wait_for_poll=False)
        elif error in _COORDINATOR_ERRORS:
            self._mark_coordinator_unknown(f"JoinGroup answered {Errors.name_of(error)}", now)
            self._request_rejoin(self._rejoin.reason, wait_for_poll=False, backoff=True)
        elif error in _FATAL_JOIN_ERRORS:
            self._fail_fatally(error, f"JoinGroup answered {Errors.name_of(error)}")
        else:
            self._request_rejoin(self._rejoin.reason, wait_for_poll=False, backoff=True)

    def _joined(self, response: JoinGroupResponse, now: int) -> None:
        assert response.protocol_name is not None
        self._generation = Generation(
            response.generation_id, response.member_id, response.protocol_name
        )
        self._transition(COMPLETING_REBALANCE)
        self._reset_heartbeat_timers(now)
        self._is_leader = response.leader == response.member_id
        self._emit(
            JoinedGroup(
                at_ms=now,
                generation=response.generation_id,
                member_id=response.member_id,
                leader=response.leader,
                protocol_name=response.protocol_name,
            )
        )
        if self._is_leader:
            # The leader watches every topic the group subscribes to.
            subscriptions = group_subscriptions(response.protocol_name, response.members)
            topics = frozenset(t for s in subscriptions.values() for t in s.topics)
            self._group_subscription = topics
        if self._is_leader and not response.skip_assignment:
            self._leader_work = _LeaderWork(
                generation=self._generation,
                protocol_name=response.protocol_name,
                subscriptions=subscriptions,
                topics=topics,
            )
        else:
            # A follower, or a static leader keeping the stored assignment: refresh the
            # metadata this generation is based on, then ask for the assignment.
            self._metadata_rebase = True
            self._pending_sync = self._sync_request(())

    def _leader_assign(self, work: _LeaderWork) -> None:
        """Kafka's ``onLeaderElected``, once the fresh metadata is in."""
        self._leader_work = None
        if self._state is not COMPLETING_REBALANCE or self._generation != work.generation:
            return
        counts = {t: self._metadata[t] for t in sorted(work.topics) if t in self._metadata}
        _, assignments = assign(work.protocol_name, work.subscriptions, counts)
        self._pending_sync = self._sync_request(assignments)

    def _sync_request(self, assignments: tuple[Assignment, ...]) -> SyncGroupRequest:
        generation = self._generation
        return _sync_group_request(
            group_id=self._config.group_id,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=self._config.group_instance_id,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=generation.protocol_name,
            assignments=assignments,
        )

    # ------------------------------------------------------------------ sync

    def _maybe_send_sync(self, now: int, out: list[ClientRequest]) -> None:
        request = self._pending_sync
        if request is not None and _SYNC not in self._in_flight:
            self._pending_sync = None
            self._send(_SYNC, request, now, out)

    def _on_sync_group(self, flight: _InFlight, response: SyncGroupResponse, now: int) -> None:
        """Kafka's ``SyncGroupResponseHandler``."""
        error = response.error_code
        if error == _NONE:
            if response.protocol_type not in (None, CONSUMER_PROTOCOL_TYPE):
                self._fail_fatally(
                    Errors.INCONSISTENT_GROUP_PROTOCOL,
                    f"SyncGroup answered protocol type {response.protocol_type!r}",
                )
            elif (
                self._state is not COMPLETING_REBALANCE
                or self._generation != flight.generation
                or self._generation.generation_id == -1
            ):
                self._request_rejoin("the generation changed during the sync", wait_for_poll=False)
            elif response.protocol_name not in (None, self._generation.protocol_name):
                self._fail_fatally(
                    Errors.INCONSISTENT_GROUP_PROTOCOL,
                    f"SyncGroup answered assignor {response.protocol_name!r}",
                )
            else:
                self._transition(STABLE)
                self._rejoin.needed = False
                self._on_join_complete(response.assignment, now)
                self._rejoin.needs_join_prepare = True
                reason, self._rejoin.after_sync_reason = self._rejoin.after_sync_reason, None
                if reason is not None:
                    self._request_rejoin(reason, wait_for_poll=True)
        elif error == Errors.REBALANCE_IN_PROGRESS:
            self._request_rejoin("the group began another rebalance", wait_for_poll=False)
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            reason = f"SyncGroup answered {Errors.name_of(error)}"
            if flight.generation == self._generation:
                self._reset_generation(
                    reason,
                    reset_member_id=error == Errors.UNKNOWN_MEMBER_ID,
                    wait_for_poll=False,
                )
            self._request_rejoin(reason, wait_for_poll=False)
        elif error in _COORDINATOR_ERRORS:
            self._mark_coordinator_unknown(f"SyncGroup answered {Errors.name_of(error)}", now)
            self._request_rejoin(self._rejoin.reason, wait_for_poll=False, backoff=True)
        elif error in (Errors.FENCED_INSTANCE_ID, Errors.GROUP_AUTHORIZATION_FAILED):
            self._fail_fatally(error, f"SyncGroup answered {Errors.name_of(error)}")
        else:
            self._request_rejoin(self._rejoin.reason, wait_for_poll=False, backoff=True)

    def _on_join_complete(self, assignment: bytes, now: int) -> None:
        """Kafka's ``ConsumerCoordinator.onJoinComplete``."""
        if not self._is_leader:
            self._group_subscription = frozenset()
        decoded = assigned_partitions(assignment)
        subscribed = set(self._config.topics)
        if decoded is None or any(topic not in subscribed for topic, _ in decoded):
            self._request_rejoin(
                "the assignment does not match the subscription", wait_for_poll=False
            )
            return
        owned = self._partitions.assignment
        assigned = frozenset(decoded)
        if self._protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
            if revoked:
                self._revoke(revoked, now, commit=True)
                self._request_rejoin("need to revoke partitions and re-join", wait_for_poll=False)
        in_order = _sorted(assigned)
        self._assignor_state = AssignorState(
            previous_assignment=in_order, generation=self._generation.generation_id
        )
        if self._config.enable_auto_commit:
            self._timers.next_auto_commit_ms = now + self._config.auto_commit_interval_ms
        self._set_assignment(assigned)
        added = _sorted(assigned - owned)
        if self._listener is not None:
            self._listener.on_partitions_assigned(added)
        self._emit(
            PartitionsAssigned(
                at_ms=now,
                generation=self._generation.generation_id,
                partitions=added,
                assignment=in_order,
            )
        )

    # ------------------------------------------------------------------ partitions

    def _set_assignment(self, assigned: AbstractSet[TopicPartitionPair]) -> None:
        p = self._partitions
        p.assignment = assigned if type(assigned) is frozenset else frozenset(assigned)
        p.positions = {tp: o for tp, o in p.positions.items() if tp in assigned}
        p.awaiting_positions = {tp for tp in assigned if tp not in p.positions}

    def _revoke(
        self, partitions: AbstractSet[TopicPartitionPair], now: int, *, commit: bool
    ) -> None:
        """Give partitions up in order: commit their positions if asked (auto-commit), tell."""
        if commit and self._config.enable_auto_commit and self._state is STABLE:
            positions = self._partitions.positions
            self._enqueue_commit(
                {tp: positions[tp] for tp in sorted(partitions) if positions.get(tp, -1) >= 0},
                auto=True,
            )
        revoked = _sorted(partitions)
        if self._listener is not None:
            self._listener.on_partitions_revoked(revoked)
        if revoked:
            self._emit(PartitionsRevoked(at_ms=now, partitions=revoked))
        self._set_assignment(self._partitions.assignment - partitions)

    def _lose(self, partitions: AbstractSet[TopicPartitionPair], now: int) -> None:
        lost = _sorted(partitions)
        if self._listener is not None:
            self._listener.on_partitions_lost(lost)
        self._emit(PartitionsLost(at_ms=now, partitions=lost))
        self._set_assignment(self._partitions.assignment - partitions)

    def _set_positions(
        self, method: str, positions: Iterable[tuple[TopicPartitionPair, int]]
    ) -> None:
        # A position alone sends nothing (commits take them later): the client stays idle.
        partitions = self._partitions
        assignment = partitions.assignment
        recorded = partitions.positions
        awaiting = partitions.awaiting_positions
        for tp, offset in positions:
            if tp not in assignment:
                raise ValueError(f"{method}: partition {tp} is not assigned to this consumer")
            check_offset(method, offset)
            recorded[tp] = offset
            if awaiting and tp in awaiting:
                awaiting.remove(tp)
                self._idle_until = None  # its OffsetFetch is no longer wanted

    def _consumed(self) -> dict[TopicPartitionPair, int]:
        """Kafka's ``SubscriptionState.allConsumed``: every owned partition with a position."""
        partitions = self._partitions
        assignment = partitions.assignment
        return {
            tp: offset
            for tp, offset in sorted(partitions.positions.items())
            if offset >= 0 and tp in assignment
        }

    # ------------------------------------------------------------------ heartbeats

    def _reset_heartbeat_timers(self, now: int) -> None:
        """Kafka's ``Heartbeat.resetTimeouts`` when the heartbeat thread is enabled."""
        t = self._timers
        t.session_deadline_ms = now + self._config.session_timeout_ms
        t.poll_timer_start_ms = now
        t.heartbeat_due_ms = now + self._config.heartbeat_interval_ms

    def _check_liveness(self, now: int, out: list[ClientRequest]) -> None:
        """What Kafka's heartbeat thread checks before heartbeating."""
        if self._coordinator is None or self._state not in HEARTBEAT_STATES:
            return
        t = self._timers
        if now >= t.session_deadline_ms:
            self._mark_coordinator_unknown(
                "session timed out without a successful heartbeat response", now
            )
        elif now >= t.poll_timer_start_ms + self._config.max_poll_interval_ms:
            self._leave_group(POLL_TIMEOUT_REASON, now, out)

    def _send_heartbeat(self, now: int, out: list[ClientRequest]) -> None:
        """A heartbeat is due (in COMPLETING_REBALANCE or STABLE) and none is in flight."""
        config = self._config
        t = self._timers
        t.heartbeat_due_ms = now + config.heartbeat_interval_ms
        t.heartbeat_sent_ms = now
        generation = self._generation
        flight = self._heartbeat_flight
        if flight is None or flight.generation is not generation:
            # One request per generation (Kafka's consumer resends the same fields too), and
            # one in-flight record for it: at most one heartbeat is in flight.
            request = _heartbeat_request(
                group_id=config.group_id,
                generation_id=generation.generation_id,
                member_id=generation.member_id,
                group_instance_id=config.group_instance_id,
            )
            flight = self._heartbeat_flight = _InFlight(request, 0, generation, None, _REFRESH)
        flight.deadline_ms = now + config.request_timeout_ms
        self._in_flight[_HEARTBEAT] = flight
        out.append(flight.request)

    def _on_heartbeat(self, flight: _InFlight, response: HeartbeatResponse, now: int) -> None:
        """Kafka's ``HeartbeatResponseHandler`` and the heartbeat thread's listener."""
        error = response.error_code
        t = self._timers
        if error == _NONE:
            t.session_deadline_ms = now + self._config.session_timeout_ms
            if self._quiet_heartbeats and self._state is STABLE:
                # Nothing changed: the next heartbeat only has to keep the session alive.
                t.heartbeat_due_ms = t.heartbeat_sent_ms + self._quiet_interval_ms
        elif error == Errors.REBALANCE_IN_PROGRESS:
            # Heartbeating on during a rebalance keeps the member in the group until it rejoins.
            t.session_deadline_ms = now + self._config.session_timeout_ms
            if self._state is STABLE:
                self._request_rejoin("the group is rebalancing", wait_for_poll=True)
        elif error in (
            Errors.ILLEGAL_GENERATION,
            Errors.UNKNOWN_MEMBER_ID,
            Errors.FENCED_INSTANCE_ID,
        ):
            if flight.generation != self._generation:
                return  # an answer about an older generation
            self._reset_generation(
                f"Heartbeat answered {Errors.name_of(error)}",
                reset_member_id=error != Errors.ILLEGAL_GENERATION,
                wait_for_poll=True,
            )
            if error == Errors.FENCED_INSTANCE_ID:
                self._fail_fatally(
                    error,
                    f"static member {self._config.group_instance_id} was fenced by a newer "
                    "instance with the same group.instance.id",
                )
        elif error in _COORDINATOR_ERRORS:
            self._mark_coordinator_unknown(f"Heartbeat answered {Errors.name_of(error)}", now)
            t.heartbeat_due_ms = self._backoff(now)
        elif error == Errors.GROUP_AUTHORIZATION_FAILED:
            self._fail_fatally(error, "Heartbeat answered GROUP_AUTHORIZATION_FAILED")
        else:
            t.heartbeat_due_ms = self._backoff(now)

    # ------------------------------------------------------------------ commits

    def _enqueue_commit(self, offsets: dict[TopicPartitionPair, int], *, auto: bool) -> None:
        """Queue ``offsets``, a dict made for the call: the batch keeps it."""
        if not offsets:
            return
        queue = self._commit_queue
        if auto and queue and queue[-1].auto:
            queue[-1].offsets.update(offsets)  # an unsent auto-commit: send the newest positions
        else:
            queue.append(_CommitBatch(offsets=offsets, auto=auto))

    def _retry_commit(self, batch: _CommitBatch, now: int) -> None:
        queue = self._commit_queue
        if batch.auto and queue and queue[0].auto:
            queue[0].offsets = {**batch.offsets, **queue[0].offsets}
        else:
            queue.insert(0, batch)
        self._timers.commit_retry_ms = self._backoff(now)

    def _fail_queued_commits(self, reason: str) -> None:
        queue, self._commit_queue = self._commit_queue, []
        for batch in queue:
            self._commit_failed(batch, None, reason)

    def _commit_failed(self, batch: _CommitBatch, error: int | None, reason: str) -> None:
        self._emit(
            CommitFailed(
                at_ms=self._now,
                offsets=dict(batch.offsets),
                auto=batch.auto,
                error_code=error,
                reason=reason,
            )
        )

    def _maybe_send_commit(self, now: int, out: list[ClientRequest]) -> None:
        """Kafka's ``sendOffsetCommitRequest``: only a STABLE member commits."""
        while (
            self._commit_queue
            and _COMMIT not in self._in_flight
            and now >= self._timers.commit_retry_ms
        ):
            batch = self._commit_queue.pop(0)
            if self._state is not STABLE:
                rebalancing = self._state is not UNJOINED
                self._commit_failed(
                    batch,
                    Errors.REBALANCE_IN_PROGRESS if rebalancing else None,
                    "the member is rebalancing"
                    if rebalancing
                    else "the member is not part of an active group",
                )
                continue
            generation = self._generation
            request = _offset_commit_request(
                group_id=self._config.group_id,
                generation_id=generation.generation_id,
                member_id=generation.member_id,
                group_instance_id=self._config.group_instance_id,
                offsets=tuple(
                    [
                        _partition_offset(topic=topic, partition=partition, offset=offset)
                        for (topic, partition), offset in sorted(batch.offsets.items())
                    ]
                ),
            )
            self._send(_COMMIT, request, now, out, commit=batch)

    def _on_offset_commit(
        self, flight: _InFlight, response: OffsetCommitResponse, now: int
    ) -> None:
        """Kafka's ``OffsetCommitResponseHandler``: the first partition error decides."""
        batch = flight.commit
        assert batch is not None
        error: int = _NONE
        for result in response.partitions:
            tp = (result.topic, result.partition)
            if result.error_code == _NONE:
                if tp in batch.offsets:
                    self._partitions.committed[tp] = batch.offsets[tp]
            elif error == _NONE:
                error = result.error_code
        if error == _NONE:
            # The batch ends here: the event takes its offsets.
            self._emit(CommitCompleted(at_ms=now, offsets=batch.offsets, auto=batch.auto))
            return
        name = Errors.name_of(error)
        if error in _COORDINATOR_ERRORS:
            self._mark_coordinator_unknown(f"OffsetCommit answered {name}", now)
            self._retry_commit(batch, now)
        elif error in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.UNKNOWN_TOPIC_OR_PARTITION):
            self._retry_commit(batch, now)
        elif error == Errors.FENCED_INSTANCE_ID and flight.generation == self._generation:
            self._commit_failed(batch, error, f"OffsetCommit answered {name}")
            self._fail_fatally(error, "OffsetCommit answered FENCED_INSTANCE_ID")
        elif error == Errors.REBALANCE_IN_PROGRESS:
            self._commit_failed(batch, error, "the group is rebalancing")
            self._request_rejoin("the group is rebalancing", wait_for_poll=True)
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            self._commit_failed(batch, error, f"OffsetCommit answered {name}")
            if flight.generation == self._generation:
                self._reset_generation(
                    f"OffsetCommit answered {name}",
                    reset_member_id=error == Errors.UNKNOWN_MEMBER_ID,
                    wait_for_poll=True,
                )
        else:
            self._commit_failed(batch, error, f"OffsetCommit answered {name}")

    # ------------------------------------------------------------------ committed offsets

    def _maybe_fetch_offsets(self, now: int, out: list[ClientRequest]) -> None:
        awaiting = self._partitions.awaiting_positions
        if (
            awaiting
            and self._state is STABLE
            and _FETCH not in self._in_flight
            and now >= self._timers.fetch_retry_ms
        ):
            request = _offset_fetch_request(
                group_id=self._config.group_id,
                partitions=tuple(
                    _topic_partition(topic=t, partition=p) for t, p in sorted(awaiting)
                ),
            )
            self._send(_FETCH, request, now, out)

    def _on_offset_fetch(self, response: OffsetFetchResponse, now: int) -> None:
        """Kafka's ``OffsetFetchResponseHandler`` and ``refreshCommittedOffsets``."""
        if response.error_code != _NONE:
            if response.error_code in _COORDINATOR_ERRORS:
                self._mark_coordinator_unknown(
                    f"OffsetFetch answered {Errors.name_of(response.error_code)}", now
                )
            self._timers.fetch_retry_ms = self._backoff(now)
            return
        p = self._partitions
        reset_to = 0 if self._config.auto_offset_reset == "earliest" else -1
        fetched: dict[TopicPartitionPair, int] = {}
        for data in response.partitions:
            tp = (data.topic, data.partition)
            if tp not in p.awaiting_positions or data.error_code == Errors.UNSTABLE_OFFSET_COMMIT:
                continue
            if data.error_code == _NONE and data.offset >= 0:
                p.committed[tp] = data.offset
                position = data.offset
            else:
                position = reset_to
            p.positions[tp] = position
            p.awaiting_positions.discard(tp)
            fetched[tp] = position
        if p.awaiting_positions:
            self._timers.fetch_retry_ms = self._backoff(now)
        if fetched:
            self._emit(OffsetsFetched(at_ms=now, positions=dict(sorted(fetched.items()))))

    # ------------------------------------------------------------------ leaving

    def _leave_group(self, reason: str, now: int, out: list[ClientRequest]) -> None:
        """Kafka's ``maybeLeaveGroup``: only a dynamic member in a group sends LeaveGroup."""
        generation = self._generation
        sent = False
        if (
            self._config.group_instance_id is None
            and self._coordinator is not None
            and self._state is not UNJOINED
            and generation.member_id
        ):
            request = LeaveGroupRequest(
                group_id=self._config.group_id,
                members=(MemberIdentity(member_id=generation.member_id, reason=_reason(reason)),),
            )
            self._send(_LEAVE, request, now, out)
            sent = True
        if generation.member_id:
            self._emit(
                LeftGroup(
                    at_ms=now, member_id=generation.member_id, reason=reason, leave_group_sent=sent
                )
            )
        self._reset_generation(
            "consumer pro-actively leaving the group", reset_member_id=True, wait_for_poll=True
        )
        self._rejoin.awaiting_poll = True  # back only when the application polls again

    def _outgoing_while_closing(self, now: int, out: list[ClientRequest]) -> None:
        """Kafka's ``close``: the auto-commit first (bounded by the close timeout), then
        ``onLeavePrepare`` and ``maybeLeaveGroup``."""
        if self._commit_queue:
            self._maybe_find_coordinator(now, out)  # the commit needs the coordinator
        if self._coordinator is not None:
            self._maybe_send_commit(now, out)
        if self._commits_pending() and now < self._timers.close_deadline_ms:
            return
        self._fail_queued_commits("the consumer closed")
        owned = set(self._partitions.assignment)
        if owned:
            if (
                self._generation.generation_id == -1
                or not self._generation.member_id
                or self._state is not STABLE
            ):
                self._lose(owned, now)
            else:
                self._revoke(owned, now, commit=False)  # committed just before
        self._leave_group(CLOSE_REASON, now, out)
        self._closed = True
        self._closing = False
        self._in_flight.clear()

    def _fail_fatally(self, error: int, reason: str) -> None:
        """Stop for good (Kafka throws the error from ``poll()``)."""
        now = self._now
        if self._partitions.assignment:
            self._lose(set(self._partitions.assignment), now)
        self._fail_queued_commits(reason)
        if self._state is not UNJOINED:
            self._transition(UNJOINED)
        self._generation = NO_GENERATION
        self._leader_work = None
        self._pending_sync = None
        self._in_flight.clear()
        self._fatal_error = int(error)
        self._closed = True
        self._closing = False
        self._emit(FatalError(at_ms=now, error_code=int(error), reason=reason))


def _receive_find(client: GroupClient, flight: _InFlight, response: Any, now: int) -> None:
    client._on_find_coordinator(response, now)


def _receive_fetch(client: GroupClient, flight: _InFlight, response: Any, now: int) -> None:
    client._on_offset_fetch(response, now)


def _receive_leave(client: GroupClient, flight: _InFlight, response: Any, now: int) -> None:
    pass  # leaving is best effort, as in Kafka


#: What reads the answer of each kind of request.
_RECEIVERS: dict[_Kind, Callable[[GroupClient, _InFlight, Any, int], None]] = {
    _FIND: _receive_find,
    _METADATA: GroupClient._on_metadata,
    _JOIN: GroupClient._on_join_group,
    _SYNC: GroupClient._on_sync_group,
    _HEARTBEAT: GroupClient._on_heartbeat,
    _LEAVE: _receive_leave,
    _COMMIT: GroupClient._on_offset_commit,
    _FETCH: _receive_fetch,
}
