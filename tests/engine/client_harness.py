"""Drives `GroupClient`s against the real `GroupCoordinator` in-process, on a virtual clock.

Each simulated consumer is a `GroupClient` plus an application that calls `poll()` every
`poll_interval_ms` (unless told to stop). `step()` sends every client's outgoing requests — the
cluster APIs (FindCoordinator, Metadata) are answered from the harness's topic table, the group
APIs by the engine — delivers the answers (parked JoinGroup/SyncGroup replies when they
complete), and repeats until nothing moves. `advance()` jumps the shared clock to the earliest
deadline of the engine, the clients and the applications' polls. Checks registered in `checks`
run after every delivered answer and every batch of requests, so an invariant is watched at
every instant the clients can observe.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator_engine import CoordinatorConfig, GroupCoordinator, GroupView, partition_for
from coordinator_engine.client import ClientEvent, ConsumerConfig, GroupClient
from coordinator_engine.client.events import ConsumerRebalanceListener
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)
from coordinator_engine.errors import Errors
from coordinator_engine.requests import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from coordinator_engine.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    PartitionResult,
    SyncGroupResponse,
)

TopicPartition = tuple[str, int]
#: Sees each group request before the engine: returns an answer to send instead, DROPPED to
#: never answer it (a lost connection the client only notices by timing out), or None.
Interceptor = Callable[[Any], Any | None]
DROPPED = object()


@dataclass
class Consumer:
    """One simulated consumer: its client and its application's polling."""

    name: str
    client: GroupClient
    poll_interval_ms: int
    next_poll_ms: int
    polling: bool = True
    alive: bool = True
    events: list[ClientEvent] = field(default_factory=list)
    sent: list[tuple[int, Any]] = field(default_factory=list)  # (time, request)

    def events_of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def sent_of(self, kind: type) -> list[Any]:
        return [r for _, r in self.sent if isinstance(r, kind)]


class ClientHarness:
    def __init__(
        self,
        topics: dict[str, int],
        config: CoordinatorConfig | None = None,
        now_ms: int = 0,
    ) -> None:
        self.now = now_ms
        self.topics = dict(topics)
        self.coordinator = GroupCoordinator(config or CoordinatorConfig(), now_ms=now_ms)
        self.consumers: dict[str, Consumer] = {}
        self.interceptors: list[Interceptor] = []
        self.checks: list[Callable[[ClientHarness], None]] = []
        self.engine_events: list[Any] = []
        self.coordinator.add_listener(self.engine_events.append)
        self._deliveries: deque[tuple[Consumer, Any, Any]] = deque()

    # -- consumers ------------------------------------------------------------------------------

    def add(
        self,
        name: str,
        config: ConsumerConfig,
        *,
        listener: ConsumerRebalanceListener | None = None,
        poll_interval_ms: int = 500,
        quiet_heartbeats: bool = False,
    ) -> Consumer:
        consumer = Consumer(
            name=name,
            client=GroupClient(config, self.now, listener, quiet_heartbeats=quiet_heartbeats),
            poll_interval_ms=poll_interval_ms,
            next_poll_ms=self.now,
        )
        self.consumers[name] = consumer
        return consumer

    def live(self) -> list[Consumer]:
        return [c for c in self.consumers.values() if c.alive]

    def crash(self, name: str) -> None:
        """The process dies: nothing of it is called any more, its answers are dropped."""
        self.consumers[name].alive = False

    def close(self, name: str) -> None:
        self.consumers[name].client.close(self.now)

    # -- the network ----------------------------------------------------------------------------

    def _answer_cluster_request(self, request: Any) -> Any:
        if isinstance(request, FindCoordinatorRequest):
            return FindCoordinatorResponse(
                error_code=Errors.NONE,
                node_id=0,
                host="coordinator.test",
                port=9092,
                coordinator_partition=partition_for(request.key),
            )
        assert isinstance(request, MetadataRequest)
        names = request.topics if request.topics is not None else tuple(sorted(self.topics))
        return MetadataResponse(
            topics=tuple(
                TopicMetadata(
                    name=name,
                    error_code=Errors.NONE if name in self.topics else 3,
                    partitions=self.topics.get(name, 0),
                )
                for name in names
            )
        )

    def _route(self, consumer: Consumer, request: Any) -> None:
        consumer.sent.append((self.now, request))
        if isinstance(request, FindCoordinatorRequest | MetadataRequest):
            self._deliveries.append((consumer, request, self._answer_cluster_request(request)))
            return
        for intercept in self.interceptors:
            answer = intercept(request)
            if answer is DROPPED:
                return
            if answer is not None:
                self._deliveries.append((consumer, request, answer))
                return
        reply = self.coordinator.handle(request, self.now)
        reply.add_done_callback(
            lambda response: self._deliveries.append((consumer, request, response))
        )

    def _run_checks(self) -> None:
        for check in self.checks:
            check(self)

    def step(self) -> None:
        """Polls that are due, every outgoing request, every answer, until nothing moves."""
        progressed = True
        while progressed:
            progressed = False
            for consumer in self.live():
                client = consumer.client
                if consumer.polling and self.now >= consumer.next_poll_ms:
                    client.poll(self.now)
                    consumer.next_poll_ms = self.now + consumer.poll_interval_ms
                requests = client.outgoing(self.now)
                for request in requests:
                    self._route(consumer, request)
                progressed = progressed or bool(requests)
                consumer.events.extend(client.events())
            self._run_checks()
            while self._deliveries:
                consumer, request, response = self._deliveries.popleft()
                if not consumer.alive:
                    continue
                consumer.client.receive(request, response, self.now)
                consumer.events.extend(consumer.client.events())
                progressed = True
                self._run_checks()
        for consumer in self.live():
            deadline = consumer.client.next_deadline_ms()
            assert deadline is None or deadline > self.now, (
                f"{consumer.name} is due at {deadline} but did nothing at {self.now}"
            )

    def next_deadline(self) -> int | None:
        deadlines = [self.coordinator.next_deadline_ms()]
        for consumer in self.live():
            deadlines.append(consumer.client.next_deadline_ms())
            if consumer.polling:
                deadlines.append(consumer.next_poll_ms)
        known = [d for d in deadlines if d is not None]
        return min(known) if known else None

    def advance(self, limit_ms: int | None = None) -> None:
        """Move the clock to the next deadline (no further than `limit_ms`), fire the
        engine's timers, then step."""
        deadline = self.next_deadline()
        if deadline is None:
            deadline = limit_ms if limit_ms is not None else self.now
        if limit_ms is not None:
            deadline = min(deadline, limit_ms)
        assert deadline >= self.now
        self.now = deadline
        self.coordinator.advance(self.now)
        self.step()

    def run_until(self, predicate: Callable[[], bool], within_ms: int) -> None:
        limit = self.now + within_ms
        self.step()
        while not predicate():
            if self.now >= limit:
                raise AssertionError(
                    f"condition not reached within {within_ms} ms (now {self.now})"
                )
            self.advance(limit)

    def run_for(self, ms: int) -> None:
        limit = self.now + ms
        self.step()
        while self.now < limit:
            self.advance(limit)

    # -- views ----------------------------------------------------------------------------------

    def group(self, group_id: str) -> GroupView:
        view = self.coordinator.group(group_id)
        assert view is not None
        return view

    def all_partitions(self, topics: tuple[str, ...] | None = None) -> set[TopicPartition]:
        names = topics if topics is not None else tuple(self.topics)
        return {(t, p) for t in names for p in range(self.topics.get(t, 0))}

    def stable(self, names: list[str] | None = None, topics: tuple[str, ...] | None = None) -> bool:
        """Every named live consumer is STABLE in one generation, the engine's group is Stable
        in it, and their assignments are disjoint and cover every partition."""
        consumers = [self.consumers[n] for n in names] if names else self.live()
        clients = [c.client for c in consumers]
        if any(c.state.value != "STABLE" for c in clients):
            return False
        if len({c.generation for c in clients}) != 1:
            return False
        view = self.coordinator.group(clients[0].config.group_id)
        if view is None or view.state.value != "Stable":
            return False
        if view.generation_id != clients[0].generation or len(view.members) != len(clients):
            return False
        owned = [p for c in clients for p in c.assignment]
        return len(owned) == len(set(owned)) and set(owned) == self.all_partitions(topics)


def no_partition_owned_twice(harness: ClientHarness) -> None:
    owners: dict[TopicPartition, str] = {}
    for consumer in harness.live():
        for tp in consumer.client.assignment:
            assert tp not in owners, (
                f"{tp} owned by {owners[tp]} and {consumer.name} at {harness.now}"
            )
            owners[tp] = consumer.name


def not_coordinator_once(request_type: type) -> Interceptor:
    """Answers the first request of `request_type` with NOT_COORDINATOR (a coordinator that
    moved), then lets every request through."""
    fired = False

    def intercept(request: Any) -> Any | None:
        nonlocal fired
        if fired or not isinstance(request, request_type):
            return None
        fired = True
        code = Errors.NOT_COORDINATOR
        match request:
            case JoinGroupRequest():
                return JoinGroupResponse(error_code=code)
            case SyncGroupRequest():
                return SyncGroupResponse(error_code=code)
            case HeartbeatRequest():
                return HeartbeatResponse(error_code=code)
            case OffsetCommitRequest():
                return OffsetCommitResponse(
                    partitions=tuple(
                        PartitionResult(topic=o.topic, partition=o.partition, error_code=code)
                        for o in request.offsets
                    )
                )
            case OffsetFetchRequest():
                return OffsetFetchResponse(error_code=code)
        raise AssertionError(f"cannot answer {type(request).__name__}")

    return intercept
