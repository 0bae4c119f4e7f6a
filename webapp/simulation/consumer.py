"""A simulated consumer that really consumes.

Each one is Kafka's consumer in miniature, running as an asyncio task in the serving process:
the sans-IO `GroupClient` (group membership, heartbeats, auto-commit) driven over the
in-process transport, and a `Fetcher` (seed 002) reading the topic registry, whose partitions'
log-end offsets grow at their produce rate. Its loop is the application's:

    poll() → hand the fetched records to "processing" (record_processing_ms each) → commit
    positions (auto-commit every auto_commit_interval_ms) → poll() again

so lag is real: a rebalance stops consumption while partitions move, and shows as lag that the
new owner then works off. Behaviours reproduce every rejoin trigger of seed 000:

- steady: polls, consumes and commits forever.
- slow: every `period_ms` one batch takes longer than max.poll.interval.ms, so the member
  leaves the group (KIP-62) and rejoins at its next poll.
- crash: after `period_ms` it stops dead (no LeaveGroup, no heartbeats): the coordinator notices
  only when its session times out.
- flapping: every `period_ms` it closes (LeaveGroup) and joins again as a new member.
- static_restart: a static member (KIP-345) whose process restarts every `period_ms`: it stops
  without LeaveGroup and comes back with the same group.instance.id well within its session
  timeout, so the group does not rebalance.
- graceful_leave: after `period_ms` it closes (commit + LeaveGroup) and is done.

With ``protocol="handoff"`` the consumer is a member of a handoff group instead:
the sans-IO `HandoffClient`, with the same Fetcher. It consumes only the partitions the
coordinator let it start (from the committed offsets it is handed), and when asked to close one
it stops fetching it, commits the position it processed up to, and only then confirms. Its
behaviours: steady, crash, flapping, graceful_leave, and

- slow_close: takes `period_ms` to close a partition it was asked to close (it goes on
  consuming it meanwhile, as it still owns it): the group is held in Closing that long.

(slow and static_restart do not apply: a handoff member has no max.poll.interval.ms and no
group.instance.id.) A stopped, killed or crashed consumer ends its connection: the runtime's
discovery makes its handoff member leave at once.

With ``protocol="consumer"`` it is a member of a KIP-848 consumer group (Kafka 4's
``group.protocol=consumer``): the sans-IO `ConsumerClient`, the same Fetcher following what
the client lets it fetch (owned, position known, not being revoked). The coordinator assigns
(`assignor` is the server assignor it asks for, `uniform` or `range`; `max_poll_interval_ms`
is its rebalance timeout); the coordinator's own session and heartbeat interval apply. Its
behaviours: steady, slow, crash (the coordinator fences it when its session runs out),
flapping, graceful_leave, static_restart (it closes with epoch -2, so the coordinator keeps its
assignment, and comes back with the same instance id: no rebalance), and

- slow_revoke: holds every revocation back (`ConsumerClient.hold_revocations`, as a slow
  onPartitionsRevoked) for longer than its rebalance timeout: the group stays Reconciling, the
  partitions it should give up wait, until the coordinator fences it; it loses everything and
  joins again.

A consumer the coordinator refuses for good (Kafka's consumer throws these from poll(): a
protocol the group does not share, a fenced static instance, a full group) stops with status
"failed" and the error in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.client import (
    ClientEvent,
    CloseConfirmed,
    ConsumerClient,
    ConsumerConfig,
    ConsumerProtocolConfig,
    FatalError,
    GroupClient,
    HandoffClient,
    HandoffConfig,
    HandoffJoined,
    JoinedGroup,
    MemberEpochChanged,
    MemberState,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsToClose,
    PartitionsToStart,
)
from coordinator_engine.server_assignors import SERVER_ASSIGNORS
from webapp.runtime.api import RuntimeAPI

from .client_driver import ClientDriver, InProcessTransport
from .fetcher import Fetcher

logger = logging.getLogger(__name__)


class Behaviour(enum.Enum):
    STEADY = "steady"
    SLOW = "slow"
    CRASH = "crash"
    FLAPPING = "flapping"
    STATIC_RESTART = "static_restart"
    GRACEFUL_LEAVE = "graceful_leave"
    SLOW_CLOSE = "slow_close"
    SLOW_REVOKE = "slow_revoke"


#: The group protocols a simulated consumer speaks: Kafka's classic one, the handoff one,
#: or KIP-848's consumer protocol.
PROTOCOLS = ("classic", "handoff", "consumer")
#: What applies to each protocol.
BEHAVIOURS = {
    "classic": (
        Behaviour.STEADY,
        Behaviour.SLOW,
        Behaviour.CRASH,
        Behaviour.FLAPPING,
        Behaviour.STATIC_RESTART,
        Behaviour.GRACEFUL_LEAVE,
    ),
    "consumer": (
        Behaviour.STEADY,
        Behaviour.SLOW,
        Behaviour.CRASH,
        Behaviour.FLAPPING,
        Behaviour.STATIC_RESTART,
        Behaviour.GRACEFUL_LEAVE,
        Behaviour.SLOW_REVOKE,
    ),
    "handoff": (
        Behaviour.STEADY,
        Behaviour.CRASH,
        Behaviour.FLAPPING,
        Behaviour.GRACEFUL_LEAVE,
        Behaviour.SLOW_CLOSE,
    ),
}


@dataclass(frozen=True, kw_only=True)
class ConsumerSpec:
    """How to run one simulated consumer (the JSON API's spawn payload)."""

    group_id: str
    topics: tuple[str, ...]
    #: "classic" (JoinGroup/SyncGroup, `GroupClient`), "handoff" (`HandoffClient`;
    #: `assignor`, `max_poll_interval_ms`, `auto_commit_interval_ms` and `metadata_max_age_ms`
    #: do not apply: the coordinator plans, and a handoff member commits when it closes) or
    #: "consumer" (KIP-848, `ConsumerClient`; `assignor` is the server assignor, one of
    #: `SERVER_ASSIGNORS`; `session_timeout_ms`, `heartbeat_interval_ms` and
    #: `metadata_max_age_ms` do not apply: the coordinator's session and interval do).
    protocol: str = "classic"
    behaviour: Behaviour = Behaviour.STEADY
    assignor: str = "range"
    group_instance_id: str | None = None
    period_ms: int = 30_000
    max_poll_records: int = 200
    max_partition_fetch_records: int = 500
    record_processing_ms: float = 1.0
    idle_poll_ms: int = 200
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 20_000
    auto_commit_interval_ms: int = 1_000
    metadata_max_age_ms: int = 5_000

    def __post_init__(self) -> None:
        if not self.topics:
            raise ValueError("a simulated consumer subscribes to at least one topic")
        if self.protocol not in PROTOCOLS:
            raise ValueError(
                f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}"
            )
        if self.behaviour not in BEHAVIOURS[self.protocol]:
            known = ", ".join(b.value for b in BEHAVIOURS[self.protocol])
            raise ValueError(
                f"behaviour {self.behaviour.value!r} does not apply to protocol "
                f"{self.protocol!r}; one of {known}"
            )
        if self.protocol == "handoff" and self.group_instance_id is not None:
            raise ValueError("group_instance_id does not apply to protocol 'handoff'")
        if self.protocol == "consumer" and self.assignor not in SERVER_ASSIGNORS:
            raise ValueError(
                f"assignor {self.assignor!r} does not apply to protocol 'consumer' (the "
                f"coordinator assigns); one of {', '.join(SERVER_ASSIGNORS)}"
            )
        if self.behaviour is Behaviour.STATIC_RESTART and self.group_instance_id is None:
            raise ValueError("static_restart needs a group_instance_id")
        for name in ("period_ms", "max_poll_records", "max_partition_fetch_records"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.record_processing_ms < 0:
            raise ValueError("record_processing_ms must be >= 0")

    def client_config(self, client_id: str) -> ConsumerConfig:
        return ConsumerConfig(
            group_id=self.group_id,
            topics=self.topics,
            assignors=(self.assignor,),
            group_instance_id=self.group_instance_id,
            client_id=client_id,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            max_poll_interval_ms=self.max_poll_interval_ms,
            auto_commit_interval_ms=self.auto_commit_interval_ms,
            metadata_max_age_ms=self.metadata_max_age_ms,
            client_host="simulated",
        )

    def handoff_config(self, client_id: str) -> HandoffConfig:
        return HandoffConfig(
            group_id=self.group_id,
            topics=self.topics,
            client_id=client_id,
            client_host="simulated",
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
        )

    def consumer_protocol_config(
        self, client_id: str, session_timeout_ms: int
    ) -> ConsumerProtocolConfig:
        """``session_timeout_ms``: the coordinator's ``consumer_group_session_timeout_ms``."""
        return ConsumerProtocolConfig(
            group_id=self.group_id,
            topics=self.topics,
            group_instance_id=self.group_instance_id,
            server_assignor=self.assignor,
            rebalance_timeout_ms=self.max_poll_interval_ms,
            client_id=client_id,
            client_host="simulated",
            auto_commit_interval_ms=self.auto_commit_interval_ms,
            session_timeout_ms=session_timeout_ms,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["topics"] = list(self.topics)
        data["behaviour"] = self.behaviour.value
        return data


@dataclass
class ConsumerStats:
    consumed: int = 0
    polls: int = 0
    restarts: int = 0
    status: str = "starting"  # running, paused, crashed, left, stopped, killed, failed
    error: str | None = None  # why it failed
    history: list[str] = field(default_factory=list)


class SimulatedConsumer:
    def __init__(self, runtime: RuntimeAPI, spec: ConsumerSpec, name: str) -> None:
        self.runtime = runtime
        self.spec = spec
        self.name = name
        self.stats = ConsumerStats()
        self.paused = False
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.driver: ClientDriver | None = None
        self.fetcher = Fetcher(self._fetch, max_poll_records=spec.max_poll_records)
        #: Handoff mode: closes asked for and not done yet (slow_close), with their due time.
        self._closes_due: list[tuple[float, tuple[TopicPartitionPair, ...]]] = []
        #: Consumer protocol, slow_revoke: since when a revocation is held back (loop time).
        self._revoking_since: float | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self, *, graceful: bool = True) -> None:
        """Stop: gracefully (commit + LeaveGroup, as a closed consumer) or dead (a kill)."""
        self._stop.set()
        if self.driver is not None:
            if graceful:
                await self.driver.close()
            else:
                self.driver.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._connection_ended()
        self.stats.status = "stopped" if graceful else "killed"

    def _connection_ended(self) -> None:
        """The consumer's process is gone: the runtime's discovery removes its handoff
        member at once (a classic member times out, as in Kafka)."""
        with contextlib.suppress(Exception):
            self.runtime.connection_closed(self)

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    @property
    def handoff(self) -> bool:
        return self.spec.protocol == "handoff"

    def _new_client(self) -> None:
        client: GroupClient | HandoffClient | ConsumerClient
        if self.handoff:
            client = HandoffClient(self.spec.handoff_config(self.name), self.runtime.now_ms())
        elif self.spec.protocol == "consumer":
            session_ms = self.runtime.config.consumer_group_session_timeout_ms
            client = ConsumerClient(
                self.spec.consumer_protocol_config(self.name, session_ms), self.runtime.now_ms()
            )
            client.hold_revocations(self.spec.behaviour is Behaviour.SLOW_REVOKE)
        else:
            client = GroupClient(self.spec.client_config(self.name), self.runtime.now_ms())
        self.driver = ClientDriver(
            client, InProcessTransport(self.runtime, self), self.runtime.now_ms, self._on_event
        )
        self.fetcher = Fetcher(self._fetch, max_poll_records=self.spec.max_poll_records)
        self._closes_due = []
        self._revoking_since = None

    # -- the application loop ----------------------------------------------------------------

    async def _run(self) -> None:
        self._new_client()
        self.stats.status = "running"
        loop = asyncio.get_running_loop()
        next_behaviour_at = loop.time() + self.spec.period_ms / 1000
        try:
            while not self._stop.is_set():
                if self.paused:
                    await asyncio.sleep(self.spec.idle_poll_ms / 1000)
                    continue
                processing_ms = self._poll_once()
                if self.stats.error is not None:
                    self._fail(self.stats.error)
                    return
                if loop.time() >= next_behaviour_at:
                    next_behaviour_at = loop.time() + self.spec.period_ms / 1000
                    if not await self._misbehave():
                        return
                    continue
                await asyncio.sleep(
                    max(processing_ms, self.spec.idle_poll_ms if not processing_ms else 0) / 1000
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("simulated consumer %s failed", self.name)
            self._fail(f"{type(exc).__name__}: {exc}")

    def _fail(self, error: str) -> None:
        self.stats.status = "failed"
        self.stats.error = error
        self.stats.history.append(f"failed: {error}")
        if self.driver is not None:
            self.driver.stop()

    def _poll_once(self) -> float:
        """One poll(): returns how long processing the returned records takes (ms)."""
        assert self.driver is not None
        client = self.driver.client
        self.driver.poll()
        self.stats.polls += 1
        if isinstance(client, HandoffClient):
            return self._poll_handoff(client)
        if isinstance(client, ConsumerClient):
            self._hold_revocations(client)
            self._follow_assignment(client, client.fetchable)
        else:
            self._follow_assignment(client, client.assignment)
            if client.state is not MemberState.STABLE:
                return 0.0
        records = self.fetcher.poll()
        count = 0
        for r in records:
            client.record_consumed(r.topic, r.partition, r.end)
            count += r.count
        self.stats.consumed += count
        return count * self.spec.record_processing_ms

    def _follow_assignment(
        self, client: GroupClient | ConsumerClient, owned: frozenset[TopicPartitionPair]
    ) -> None:
        """Keep the fetcher on ``owned`` (what the client may consume), at the positions the
        client knows (its committed offsets, fetched after each assignment)."""
        current = set(self.fetcher.assignment)
        gone = current - owned
        if gone:
            self.fetcher.revoke(gone)
        positions = client.positions
        new: dict[TopicPartitionPair, int] = {}
        for tp in owned - current:
            position = positions.get(tp)
            if position is None:
                continue  # its OffsetFetch is on the way
            if position < 0:
                # No committed offset and a reset policy other than "earliest": start at 0.
                if isinstance(client, GroupClient):
                    client.seek(tp[0], tp[1], 0)
                position = 0
            new[tp] = position
        if new:
            self.fetcher.assign(new)

    def _hold_revocations(self, client: ConsumerClient) -> None:
        """slow_revoke: each revocation is held back for 1.5 times the rebalance timeout (the
        coordinator fences the member before that, and the fenced client drops it), then let
        go; the next one is held again."""
        if self.spec.behaviour is not Behaviour.SLOW_REVOKE:
            return
        now = asyncio.get_running_loop().time()
        if not client.pending_revocation:
            self._revoking_since = None
            client.hold_revocations(True)
        elif self._revoking_since is None:
            self._revoking_since = now
            self.stats.history.append("holding a revocation longer than its rebalance timeout")
        elif now - self._revoking_since >= 1.5 * self.spec.max_poll_interval_ms / 1000:
            client.hold_revocations(False)
            assert self.driver is not None
            self.driver.kick()

    def _poll_handoff(self, client: HandoffClient) -> float:
        """Handoff mode: close what is due, then consume the started partitions only (the
        fetcher holds exactly those)."""
        now = asyncio.get_running_loop().time()
        due = [c for c in self._closes_due if c[0] <= now]
        for close in due:
            self._closes_due.remove(close)
            self._close_partitions(client, close[1])
        records = self.fetcher.poll()
        count = 0
        for r in records:
            client.record_consumed(r.topic, r.partition, r.end)
            count += r.count
        self.stats.consumed += count
        return count * self.spec.record_processing_ms

    def _close_partitions(
        self, client: HandoffClient, partitions: tuple[TopicPartitionPair, ...]
    ) -> None:
        """Stop fetching them and hand the client the positions processed up to: it commits
        them, then confirms the close."""
        if client.closed or self.driver is None or self.driver.client is not client:
            return
        asked = [tp for tp in partitions if tp in client.closing]
        positions = self.fetcher.positions
        stopped = {tp: positions.get(tp, -1) for tp in asked}
        self.fetcher.revoke(asked)
        if stopped:
            client.partitions_stopped(stopped)
            self.driver.kick()

    def _on_event(self, event: ClientEvent) -> None:
        if isinstance(event, FatalError):
            self.stats.error = event.reason  # the application loop stops at once
            return
        if isinstance(event, PartitionsToStart):
            self.fetcher.assign({tp: max(offset, 0) for tp, offset in event.positions.items()})
        elif isinstance(event, PartitionsToClose):
            assert self.driver is not None and isinstance(self.driver.client, HandoffClient)
            if self.spec.behaviour is Behaviour.SLOW_CLOSE:
                due = asyncio.get_running_loop().time() + self.spec.period_ms / 1000
                self._closes_due.append((due, event.partitions))
            else:
                self._close_partitions(self.driver.client, event.partitions)
        elif isinstance(event, PartitionsLost) and self.handoff:
            self.fetcher.revoke(event.partitions)
        if isinstance(
            event,
            JoinedGroup
            | PartitionsAssigned
            | PartitionsRevoked
            | PartitionsLost
            | HandoffJoined
            | PartitionsToStart
            | PartitionsToClose
            | CloseConfirmed
            | MemberEpochChanged,
        ):
            self.stats.history.append(f"{event.type} {event.to_json()}")
            del self.stats.history[:-20]

    def _fetch(self, asked: list[tuple[TopicPartitionPair, int]]) -> dict[TopicPartitionPair, int]:
        now = self.runtime.now_ms()
        limit = self.spec.max_partition_fetch_records
        out = {}
        for (topic, partition), offset in asked:
            end = self.runtime.topics.log_end_offset(topic, partition, now)
            if end is not None and end > offset:
                out[topic, partition] = min(end, offset + limit)
        return out

    async def _misbehave(self) -> bool:
        """This behaviour's periodic act; False when the consumer is done."""
        assert self.driver is not None
        behaviour = self.spec.behaviour
        if behaviour is Behaviour.SLOW:
            self.stats.history.append("processing a batch slower than max.poll.interval.ms")
            await self._sleep_ms(self.spec.max_poll_interval_ms * 1.3)
        elif behaviour is Behaviour.CRASH:
            self.stats.history.append("crashed")
            self.driver.stop()
            self._connection_ended()
            self.stats.status = "crashed"
            return False
        elif behaviour is Behaviour.FLAPPING:
            self.stats.history.append("left and rejoined as a new member")
            await self.driver.close()
            await self._sleep_ms(500)
            self._new_client()
            self.stats.restarts += 1
        elif behaviour is Behaviour.STATIC_RESTART and isinstance(
            self.driver.client, ConsumerClient
        ):
            # KIP-848: the old process leaves with epoch -2 (the coordinator keeps its
            # assignment); a new one with the same instance id takes it over.
            self.stats.history.append("restarted (static member, left with epoch -2)")
            await self.driver.close()
            await self._sleep_ms(500)
            self._new_client()
            self.stats.restarts += 1
        elif behaviour is Behaviour.STATIC_RESTART:
            self.stats.history.append("restarted (static member)")
            self.driver.stop()
            await self._sleep_ms(min(2_000, self.spec.session_timeout_ms // 3))
            self._new_client()
            self.stats.restarts += 1
        elif behaviour is Behaviour.GRACEFUL_LEAVE:
            self.stats.history.append("left the group")
            await self.driver.close()
            self.stats.status = "left"
            return False
        return True

    async def _sleep_ms(self, ms: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), ms / 1000)

    # -- what the API shows ------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        client = self.driver.client if self.driver is not None else None
        if isinstance(client, HandoffClient):
            return {
                **self._stats_json(),
                "member_id": client.member_id,
                "generation": client.epoch,  # the group's epoch, the plan in force
                "state": client.group_state if client.joined else "UNJOINED",
                "assignment": sorted([t, p] for t, p in client.consuming),
            }
        if isinstance(client, ConsumerClient):
            return {
                **self._stats_json(),
                "member_id": client.member_id,
                "generation": client.epoch,  # the member epoch
                "state": client.state.value,
                "assignment": sorted([t, p] for t, p in client.assignment),
            }
        return {
            **self._stats_json(),
            "member_id": client.member_id if client else "",
            "generation": client.generation if client else -1,
            "state": client.state.value if client else None,
            "assignment": sorted([t, p] for t, p in client.assignment) if client else [],
        }

    def _stats_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec.to_json(),
            "status": "paused"
            if self.paused and self.stats.status == "running"
            else self.stats.status,
            "consumed": self.stats.consumed,
            "polls": self.stats.polls,
            "restarts": self.stats.restarts,
            "error": self.stats.error,
            "history": self.stats.history[-10:],
        }
