"""What the runtime counts for ``GET /metrics`` (docs/operations.md, "Metrics").

Theory of operation
===================

A group's state, generation, members and lag are read from the engine when Prometheus scrapes
(``webapp.dashboard.metrics``): nothing runs for them between scrapes. What the state cannot
tell afterwards is counted here, as it happens:

* :class:`RebalanceCounts`, an engine event listener: rebalances by their structured ``cause``
  (never a reason text), how long each took, partitions moved and for how long they had no
  owner, members removed by reason. The runtime calls it for every event it publishes, that
  is after the records behind the event are durable, on the loop thread. Per event it costs a
  dict lookup by the event's type, and for the few types it reads a few dict updates: an
  OffsetsCommitted (most events) costs the lookup alone.
* :class:`RequestCounts`: requests by API and transport, and the error codes of the responses
  sent, counted as Kafka's ``ErrorsPerSec`` counts them (every code in a response, NONE
  included, one per topic, partition, member or group that carries one). Each transport
  counts its own, at the one place it decodes a request and the one place it sends a
  response, as Kafka's network layer does: the engine's request path counts nothing.
* :class:`LoopLag`: how late a timer of the event loop fires, sampled a few times a second.
* the log's compactions (``webapp.runtime.control`` reports each).

Everything is a plain number in a dict; ``webapp.dashboard.metrics`` turns them into
Prometheus families at scrape time. A group's numbers go when the group goes (``GroupRemoved``),
so the labels stay as many as the groups that exist.

Partitions moved and their unavailable time (the definitions docs/operations.md states): a
partition *moves* when a member other than its last owner gets it. It is *unavailable* from
the moment its previous owner gave it up (or was told to) until the next owner has it:

* handoff: ``HandoffPartitionsClosed`` (the owner confirmed it stopped and committed) →
  ``HandoffPartitionsStarted`` (the new owner confirmed its start);
* consumer: ``ConsumerPartitionsRevoked`` (the owner was told to revoke it) →
  ``ConsumerPartitionsAssigned`` (the answer to the new owner's heartbeat);
* classic: the stored assignment that no longer gives it to anyone (a cooperative
  revocation) → the stored assignment that gives it to another member; when one assignment
  moves it directly (the eager protocol, whose members give up everything as the rebalance
  starts), the rebalance's start → that assignment (the SyncGroup answers).

A member removed (left, timed out) gives up what it held at that moment. A classic group's
partitions are known only for the ``consumer`` protocol type (``AssignmentStored.partitions``);
other protocol types count no moves. The first owner of a partition seen since the process
started is no move: the previous one is not known.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints

from coordinator_engine import Errors, GroupEvent
from coordinator_engine.events import (
    AssignmentStored,
    ConsumerGroupEpochBumped,
    ConsumerPartitionsAssigned,
    ConsumerPartitionsRevoked,
    GroupRemoved,
    HandoffPartitionsClosed,
    HandoffPartitionsStarted,
    MemberRemoved,
    StateChanged,
)

__all__ = [
    "DURATION_BUCKETS_S",
    "LOOP_LAG_BUCKETS_S",
    "CountsSnapshot",
    "GroupCounts",
    "Histogram",
    "LoopLag",
    "RebalanceCounts",
    "RequestCounts",
    "RuntimeMetrics",
    "api_name",
]

#: A rebalance's duration buckets (seconds): Kafka's initial delay (3 s) and the session
#: timeouts people use (10 s, 45 s) fall between two of them.
DURATION_BUCKETS_S = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
#: The event loop's lateness buckets (seconds).
LOOP_LAG_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

#: The states in which a rebalance has ended, whatever the kind.
_ENDED = frozenset({"Stable", "Empty"})


class Histogram:
    """A Prometheus histogram's numbers: per-bucket counts (not cumulative; the last one is
    +Inf), their sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # The first bucket whose upper bound is >= value (Prometheus' "le").
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def copy(self) -> Histogram:
        copied = Histogram(self.bounds)
        copied.counts = list(self.counts)
        copied.sum = self.sum
        return copied

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, count)`` pairs as the exposition writes them, ``+Inf`` last."""
        out = []
        running = 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        return out


@dataclass(frozen=True, slots=True)
class CountsSnapshot:
    """A group's counters as they were at one moment (what a scrape writes, off the loop)."""

    rebalances: dict[str, int]
    members_removed: dict[str, int]
    partitions_moved: int
    unavailable_ms: int
    durations: Histogram


@dataclass(slots=True)
class GroupCounts:
    """One group's counters since the process started (or since the group was made)."""

    kind: str
    rebalances: dict[str, int] = field(default_factory=dict)  # by RebalanceCause value
    members_removed: dict[str, int] = field(default_factory=dict)  # by RemovalReason value
    partitions_moved: int = 0
    unavailable_ms: int = 0
    durations: Histogram = field(default_factory=lambda: Histogram(DURATION_BUCKETS_S))
    #: When the rebalance under way started (engine time); None between rebalances.
    rebalance_started_ms: int | None = None
    #: When the latest rebalance started (a classic group's assignment is stored after its
    #: rebalance ended: the Stable state comes first).
    last_rebalance_started_ms: int | None = None
    #: Each partition's last owner, and since when a partition waits for its next one.
    owner: dict[tuple[str, int], str] = field(default_factory=dict)
    released_ms: dict[tuple[str, int], int] = field(default_factory=dict)

    def snapshot(self) -> CountsSnapshot:
        return CountsSnapshot(
            dict(self.rebalances),
            dict(self.members_removed),
            self.partitions_moved,
            self.unavailable_ms,
            self.durations.copy(),
        )

    def give(self, partition: tuple[str, int], member_id: str, at_ms: int, since_ms: int) -> None:
        """The coordinator gave ``partition`` to ``member_id`` at ``at_ms``; ``since_ms`` is
        when it was given up if no event said so."""
        previous = self.owner.get(partition)
        released = self.released_ms.pop(partition, None)
        if previous is not None and previous != member_id:
            self.partitions_moved += 1
            self.unavailable_ms += at_ms - (since_ms if released is None else released)
        self.owner[partition] = member_id

    def release(self, partition: tuple[str, int], at_ms: int) -> None:
        """Its owner was told to give ``partition`` up (the first time counts)."""
        self.released_ms.setdefault(partition, at_ms)

    def release_member(self, member_id: str, at_ms: int) -> None:
        for partition, owner in self.owner.items():
            if owner == member_id:
                self.released_ms.setdefault(partition, at_ms)


def _pairs(partitions: Iterable[list[Any]]) -> Iterable[tuple[str, int]]:
    return ((str(topic), int(partition)) for topic, partition in partitions)


class RebalanceCounts:
    """The engine event listener: per group, rebalances by cause, their durations, partitions
    moved and unavailable, members removed by reason (the module's docstring says how).

    ``kind_of(group_id)`` names a group's kind (``classic``, ``handoff``, ``consumer``; None
    when the engine no longer holds it), asked once per group."""

    def __init__(self, kind_of: Callable[[str], str | None]) -> None:
        self._kind_of = kind_of
        self.groups: dict[str, GroupCounts] = {}
        self._handlers: dict[type[GroupEvent], Callable[[Any], None]] = {
            StateChanged: self._state_changed,
            ConsumerGroupEpochBumped: self._epoch_bumped,
            MemberRemoved: self._member_removed,
            GroupRemoved: self._group_removed,
            AssignmentStored: self._assignment_stored,
            HandoffPartitionsClosed: self._released,
            ConsumerPartitionsRevoked: self._released,
            HandoffPartitionsStarted: self._given,
            ConsumerPartitionsAssigned: self._given,
        }

    def on_event(self, event: GroupEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _group(self, event: GroupEvent) -> GroupCounts:
        counts = self.groups.get(event.group_id)
        if counts is None:
            kind = self._kind_of(event.group_id) or _kind_of_event(event)
            counts = self.groups[event.group_id] = GroupCounts(kind)
        return counts

    def _start(self, counts: GroupCounts, cause: str, at_ms: int) -> None:
        counts.rebalances[cause] = counts.rebalances.get(cause, 0) + 1
        if counts.rebalance_started_ms is None:
            counts.rebalance_started_ms = counts.last_rebalance_started_ms = at_ms

    def _state_changed(self, event: StateChanged) -> None:
        counts = self._group(event)
        if event.cause is not None:
            # A consumer group's rebalances are its epoch bumps (below), as Kafka counts them;
            # the StateChanged beside a bump carries the same cause.
            if counts.kind != "consumer":
                self._start(counts, event.cause, event.at_ms)
        elif event.to_state in _ENDED and counts.rebalance_started_ms is not None:
            counts.durations.observe((event.at_ms - counts.rebalance_started_ms) / 1000)
            counts.rebalance_started_ms = None

    def _epoch_bumped(self, event: ConsumerGroupEpochBumped) -> None:
        self._start(self._group(event), event.cause, event.at_ms)

    def _member_removed(self, event: MemberRemoved) -> None:
        counts = self._group(event)
        counts.members_removed[event.reason] = counts.members_removed.get(event.reason, 0) + 1
        if counts.owner:
            counts.release_member(event.member_id, event.at_ms)

    def _group_removed(self, event: GroupRemoved) -> None:
        self.groups.pop(event.group_id, None)

    def _assignment_stored(self, event: AssignmentStored) -> None:
        if event.partitions is None:
            return
        counts = self._group(event)
        assigned = {
            partition: member_id
            for member_id, partitions in event.partitions.items()
            for partition in _pairs(partitions)
        }
        for partition in counts.owner:
            if partition not in assigned:  # revoked, not given to anyone yet (cooperative)
                counts.release(partition, event.at_ms)
        started = counts.last_rebalance_started_ms
        since = event.at_ms if started is None else started
        for partition, member_id in assigned.items():
            counts.give(partition, member_id, event.at_ms, since)

    def _released(self, event: HandoffPartitionsClosed | ConsumerPartitionsRevoked) -> None:
        counts = self._group(event)
        for partition in _pairs(event.partitions):
            counts.release(partition, event.at_ms)

    def _given(self, event: HandoffPartitionsStarted | ConsumerPartitionsAssigned) -> None:
        counts = self._group(event)
        for partition in _pairs(event.partitions):
            counts.give(partition, event.member_id, event.at_ms, event.at_ms)


def _kind_of_event(event: GroupEvent) -> str:
    """A group's kind from one of its events, for a group the engine no longer holds."""
    name = event.type
    if name.startswith("Handoff"):
        return "handoff"
    if name.startswith("Consumer"):
        return "consumer"
    return "classic"


def api_name(request_type: type) -> str:
    """A request class's API name (``HeartbeatRequest`` → ``Heartbeat``)."""
    return request_type.__name__.removesuffix("Request")


#: How to find every error code in a response of one type: whether it has one of its own, and
#: the fields holding entities that have some (each with its own plan, and whether the field
#: holds a tuple of them or one).
_CodePlan = tuple[bool, tuple[tuple[str, "_CodePlan", bool], ...]]
_NO_CODES: _CodePlan = (False, ())


def _entity_type(hint: Any) -> tuple[type | None, bool]:
    """The dataclass a field's type hint holds (``tuple[Topic, ...]``, ``Topic | None``), and
    whether it holds a tuple of them."""
    if is_dataclass(hint) and isinstance(hint, type):
        return hint, False
    for argument in get_args(hint):
        found, many = _entity_type(argument)
        if found is not None:
            return found, many or get_origin(hint) is tuple
    return None, False


def code_plan(cls: type, plans: dict[type, _CodePlan]) -> _CodePlan:
    """``cls``'s plan, made once from its type hints (an engine response or a kio one: both
    are dataclasses); a type that is no dataclass has no codes."""
    plan = plans.get(cls)
    if plan is not None:
        return plan
    plans[cls] = _NO_CODES  # while it is made (no schema nests itself, but never loop)
    if not is_dataclass(cls):
        return _NO_CODES
    hints = get_type_hints(cls)
    own = False
    children: list[tuple[str, _CodePlan, bool]] = []
    for entry in fields(cls):
        if entry.name == "error_code":
            own = True
            continue
        entity, many = _entity_type(hints.get(entry.name))
        if entity is not None:
            child = code_plan(entity, plans)
            if child != _NO_CODES:
                children.append((entry.name, child, many))
    plan = plans[cls] = (own, tuple(children))
    return plan


def _count_codes(codes: dict[int, int], plan: _CodePlan, value: Any) -> None:
    own, children = plan
    if own:
        code = value.error_code  # kio's codes are an IntEnum: the same key as the int
        codes[code] = codes.get(code, 0) + 1
    for name, child, many in children:
        held = getattr(value, name)
        if held is None:
            continue
        for item in held if many else (held,):
            _count_codes(codes, child, item)


class RequestCounts:
    """Requests by (API, transport), and the error codes of the responses sent, by API and
    code. Both are counted by the transports, as Kafka's network layer counts them
    (``RequestChannel``, as a response is sent): what a client was told, including what a
    transport answers without the engine (an authorisation refusal), and nothing on the
    engine's own path."""

    def __init__(self) -> None:
        #: API → (transport → requests, code → count): one lookup per request.
        self._by_api: dict[str, tuple[dict[str, int], dict[int, int]]] = {}
        #: response type → where its codes are (:func:`code_plan`), made at its first response.
        self._plans: dict[type, _CodePlan] = {}

    def count(self, api: str, transport: str, response: Any) -> None:
        """One request of ``api`` (Kafka's name: ``Heartbeat``) answered by ``transport`` with
        ``response`` (the engine's or the wire's, kio's; None when it failed and nothing was
        sent): the request, and every error code in the response (its own, and each of its
        entities', at any depth: a topic's, a partition's, a member's, a group's), as Kafka's
        ``AbstractResponse.errorCounts``. One call per request, as the response is sent:
        Kafka counts ``RequestsPerSec`` there too (``RequestChannel.updateRequestMetrics``)."""
        entry = self._by_api.get(api)
        if entry is None:
            entry = self._by_api[api] = ({}, {})
        requests, codes = entry
        requests[transport] = requests.get(transport, 0) + 1
        plan = self._plans.get(type(response))
        if plan is None:
            plan = code_plan(type(response), self._plans)
        own, children = plan
        if own:  # most responses (a heartbeat's) stop here
            code = response.error_code
            codes[code] = codes.get(code, 0) + 1
        for name, child, many in children:
            held = getattr(response, name)
            if held is not None:
                for item in held if many else (held,):
                    _count_codes(codes, child, item)

    def request_counts(self) -> dict[tuple[str, str], int]:
        """``(api, transport)`` → requests."""
        return {
            (api, transport): count
            for api, (requests, _) in list(self._by_api.items())
            for transport, count in list(requests.items())
        }

    def error_counts(self) -> dict[tuple[str, str], int]:
        """``(api, error name)`` → count (codes of one name are summed: kio's and the
        engine's are the same numbers)."""
        out: dict[tuple[str, str], int] = {}
        for api, (_, codes) in list(self._by_api.items()):
            for code, count in list(codes.items()):
                key = (api, Errors.name_of(int(code)))
                out[key] = out.get(key, 0) + count
        return out


class LoopLag:
    """How late the event loop runs a timer: every ``interval_s`` a sleep is asked for, and
    what it overran is observed (seconds). A loop busy for 50 ms shows as a 50 ms lag."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.histogram = Histogram(LOOP_LAG_BUCKETS_S)
        self.last_s = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-lag")

    async def _run(self) -> None:
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            self.last_s = max(0.0, time.perf_counter() - asked - self.interval_s)
            self.histogram.observe(self.last_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class RuntimeMetrics:
    """The runtime's counters (``CoordinatorRuntime.metrics``): rebalances from its events,
    requests from the transports, the loop's lag, the log's compactions."""

    def __init__(self, kind_of: Callable[[str], str | None]) -> None:
        self.rebalances = RebalanceCounts(kind_of)
        self.requests = RequestCounts()
        #: ``count(api, transport, response)`` (:meth:`RequestCounts.count`), bound once: a
        #: transport calls it for every request it answers.
        self.count = self.requests.count
        self.loop_lag = LoopLag()
        self.compactions = 0
        self.records_compacted = 0
        #: Unix time (seconds) of the latest compaction's end; None before the first.
        self.last_compaction_s: float | None = None

    def compacted(self, records_dropped: int) -> None:
        """A compaction of the record log ended, dropping ``records_dropped`` records."""
        self.compactions += 1
        self.records_compacted += records_dropped
        self.last_compaction_s = time.time()
