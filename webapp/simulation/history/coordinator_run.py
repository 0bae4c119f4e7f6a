"""One coordinator's run: its engine, its record log, its groups, driven in virtual time.

``CoordinatorRun`` owns one ``GroupCoordinator`` and the groups of its ``Plan``; it runs the
recurring work (churn, cleanups, topic growth), wakes a group's members when the engine reports
a change (quiet heartbeats), and yields the engine's events as history tables until its quota
is met and its groups have settled.
"""

from __future__ import annotations

import contextlib
import gc
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from coordinator_engine import CoordinatorConfig, Errors, GroupCoordinator, SqliteLog
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)
from coordinator_engine.events import (
    ConsumerGroupEpochBumped,
    ConsumerMemberStateChanged,
    ConsumerPartitionsAssigned,
    ConsumerPartitionsRevoked,
    GenerationStarted,
    GroupEvent,
    HandoffPartitionsClosing,
    HandoffPartitionsGranted,
    HandoffPlanMade,
    MemberRemoved,
    StateChanged,
    StaticMemberReplaced,
)

from .catalogue import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, SPAN_MS, START_MS, TOPICS, GroupSpec
from .churn import ConsumerGroupRun, GroupRun, HandoffGroupRun
from .rows import HistoryRows
from .summary import CoordinatorSummary
from .virtual_time import VirtualTime

#: Coordinators of the simulated cluster (each an engine owning part of the 50 partitions).
COORDINATORS = 2
#: The engines' settings: Kafka's broker defaults, offsets kept one day instead of seven.
OFFSETS_RETENTION_MS = DAY_MS
#: Rough events per churn action, to set the pace (the feedback corrects it).
EVENTS_PER_ACTION = 8
#: The share of the events that are offset commits (in a real cluster, nearly all are).
COMMIT_SHARE = 0.5
MIN_CHURN_GAP_MS = 100
MIN_COMMIT_INTERVAL_MS = SECOND_MS
MAX_COMMIT_INTERVAL_MS = 6 * HOUR_MS
#: Kafka's ``metadata.max.age.ms``: a member notices a partition change within this.
METADATA_MAX_AGE_MS = 5 * MINUTE_MS
#: How long a coordinator that met its share may take to settle before it stops anyway.
SETTLE_LIMIT_MS = 2 * HOUR_MS
#: Rows per table a coordinator hands over.
BATCH_ROWS = 50_000
#: Records per transaction of a full record log (``record_logs``).
FULL_LOG_BATCH = 50_000


def engine_config(owned_partitions: frozenset[int]) -> CoordinatorConfig:
    """A coordinator's engine settings: Kafka's broker defaults, ``OFFSETS_RETENTION_MS``."""
    return CoordinatorConfig(
        offsets_retention_ms=OFFSETS_RETENTION_MS, owned_partitions=owned_partitions
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """One coordinator's part of a generation: which groups, which partitions, how many events."""

    index: int
    seed: int
    groups: tuple[GroupSpec, ...]
    owned_partitions: frozenset[int]
    quota: int
    partition_changes: tuple[tuple[int, str, int], ...]  # (at_ms, topic, new partition count)
    record_log: str | None = None  # where the full record stream goes (an SqliteLog file)


#: The events after which a group's members heartbeat at their regular tick again (the
#: module docstring's quiet heartbeats); event classes are final, so their type is enough.
WAKING_EVENTS = frozenset(
    {
        StateChanged,
        GenerationStarted,
        MemberRemoved,
        StaticMemberReplaced,
        HandoffPlanMade,
        HandoffPartitionsClosing,
        HandoffPartitionsGranted,
        ConsumerGroupEpochBumped,
        ConsumerMemberStateChanged,
        ConsumerPartitionsRevoked,
        ConsumerPartitionsAssigned,
    }
)


def run_kind(spec: GroupSpec) -> type[GroupRun]:
    """The run of a group of ``spec``'s kind."""
    if spec.handoff:
        return HandoffGroupRun
    if spec.consumer:
        return ConsumerGroupRun
    return GroupRun


class LatestRecords:
    """An engine's record log that keeps each key's latest record only (what Kafka's log
    cleaner leaves of ``__consumer_offsets``), so memory stays flat however long the history.
    Nothing reads it back: an engine replays its log only when it is built.

    Given ``full`` (``record_logs``), it also appends every record, tombstones and superseded
    ones included, to that ``SqliteLog``: what a coordinator's log holds after running the
    history, uncompacted. They go ``FULL_LOG_BATCH`` at a time, one transaction each (nothing
    waits for their durability here); ``close()`` writes the rest."""

    def __init__(self, full: SqliteLog | None = None) -> None:
        self.latest: dict[bytes, bytes] = {}
        self.full = full
        self.pending: list[tuple[bytes, bytes | None]] = []

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        latest = self.latest
        for key, value in entries:
            if value is None:
                latest.pop(key, None)
            else:
                latest[key] = value
        if self.full is not None:
            self.pending += entries
            if len(self.pending) >= FULL_LOG_BATCH:
                self.flush()

    def flush(self) -> None:
        if self.full is not None and self.pending:
            self.full.append(self.pending)
            self.pending = []

    def read(self) -> Iterator[tuple[bytes, bytes | None]]:
        return iter(list(self.latest.items()))

    def close(self) -> None:
        if self.full is not None:
            self.flush()
            self.full.close()


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """Collect garbage rarely while generating: the simulation allocates many short-lived
    objects and almost no cycles, and the default thresholds cost a sixth of the run."""
    thresholds = gc.get_threshold()
    gc.set_threshold(200_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class CoordinatorRun(VirtualTime):
    """One engine and the groups it coordinates, run in virtual time until its quota is met
    and its groups have settled; ``batches()`` yields its events as history tables whose
    ``seq`` is the coordinator's own emission order (the merge renumbers them)."""

    def __init__(self, plan: Plan) -> None:
        self.index = plan.index
        self.plan = plan
        super().__init__(START_MS)
        self.rng = random.Random(f"rebalance-lab/{plan.seed}/{plan.index}")
        self.log = LatestRecords(None if plan.record_log is None else SqliteLog(plan.record_log))
        self.coordinator = GroupCoordinator(
            engine_config(plan.owned_partitions), self.log, now_ms=START_MS
        )
        self.coordinator.add_listener(self.on_event)
        self.rows = HistoryRows()
        self.converted = 0
        self.draining = False
        self.partitions = dict(TOPICS)
        self.metadata_answers: dict[tuple[str, ...] | None, MetadataResponse] = {}
        self.metadata_max_age_ms = METADATA_MAX_AGE_MS
        self.coordinator_node = FindCoordinatorResponse(
            error_code=Errors.NONE, node_id=plan.index, host=f"coordinator-{plan.index}", port=9092
        )
        self.groups = {
            spec.group_id: run_kind(spec)(self, spec, number)
            for number, spec in enumerate(plan.groups, start=1)
        }
        self.cleanups = self.offsets_expired = self.groups_expired = 0
        quota = max(plan.quota, 1)
        #: Virtual milliseconds per event that spread the quota over SPAN_MS.
        self.tempo_ms = SPAN_MS / quota
        members = sum(spec.weight for spec in plan.groups) or 1
        self.commit_interval_ms = int(
            min(
                max(self.tempo_ms * members / COMMIT_SHARE, MIN_COMMIT_INTERVAL_MS),
                MAX_COMMIT_INTERVAL_MS,
            )
        )
        self.churn_gap_ms = self.tempo_ms * EVENTS_PER_ACTION / (1 - COMMIT_SHARE)

    # -- plumbing ------------------------------------------------------------------------------

    def handle(self, request: Any) -> Any:
        """A request answered at once (everything but JoinGroup and SyncGroup)."""
        reply = self.coordinator.handle(request, self.now)
        assert reply.done, f"{type(request).__name__} was parked"
        return reply.response

    def find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        """This run's engine coordinates every group of its plan."""
        return self.coordinator_node

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """The partition counts of the topics asked (the same answer until a topic grows)."""
        topics = request.topics
        response = self.metadata_answers.get(topics)
        if response is None:
            names = sorted(self.partitions) if topics is None else topics
            response = self.metadata_answers[topics] = MetadataResponse(
                topics=tuple(
                    TopicMetadata(name=name, error_code=Errors.NONE, partitions=count)
                    if (count := self.partitions.get(name))
                    else TopicMetadata(
                        name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, partitions=0
                    )
                    for name in names
                )
            )
        return response

    def on_event(self, event: GroupEvent) -> None:
        self.rows.add(event)
        if type(event) in WAKING_EVENTS:
            self.groups[event.group_id].wake()

    # -- recurring work ------------------------------------------------------------------------

    def churn(self, _: Any = None) -> None:
        if self.draining:
            return
        candidates = [g for g in self.groups.values() if g.churnable]
        if candidates:
            candidates[self.rng.randrange(len(candidates))].act()
        emitted = self.converted + len(self.rows)
        expected = (self.now - START_MS) / self.tempo_ms
        ahead = min(max(((emitted + 100) / (expected + 100)) ** 4, 0.02), 10.0)
        gap = self.rng.expovariate(1 / (self.churn_gap_ms * ahead))
        self.at(self.now + max(MIN_CHURN_GAP_MS, int(gap)), self.churn)

    def cleanup(self, _: Any = None) -> None:
        if self.draining:
            return
        result = self.coordinator.cleanup(self.now)
        self.cleanups += 1
        self.offsets_expired += result.offsets_removed
        self.groups_expired += result.groups_removed
        interval = self.coordinator.config.offsets_retention_check_interval_ms
        self.at(self.now + interval, self.cleanup)

    def grow_topic(self, change: tuple[str, int]) -> None:
        if self.draining:
            return
        topic, count = change
        self.partitions[topic] = count
        self.metadata_answers.clear()
        self.coordinator.set_topic_partitions(topic, count, self.now)  # the partition store
        for group in self.groups.values():  # their members notice at their metadata refresh
            if topic in group.spec.topics and group.members:
                group.summary.partition_changes += 1

    # -- the run -------------------------------------------------------------------------------

    def begin(self) -> None:
        rng = self.rng
        for topic, count in self.partitions.items():  # the handoff groups' partition store
            self.coordinator.set_topic_partitions(topic, count, self.now)
        for group in self.groups.values():
            if group.spec.daily:
                first = 7 * HOUR_MS + rng.randrange(2 * HOUR_MS)
            else:
                first = rng.randrange(30 * MINUTE_MS)
            self.at(START_MS + first, group.startup)
        self.at(START_MS + MINUTE_MS, self.churn)
        interval = self.coordinator.config.offsets_retention_check_interval_ms
        self.at(START_MS + interval, self.cleanup)
        for at_ms, topic, count in self.plan.partition_changes:
            self.at(at_ms, self.grow_topic, (topic, count))

    def drain(self) -> None:
        """The quota is met: no new action; run on until every group has settled."""
        self.draining = True
        for group in self.groups.values():
            for member in group.members:
                member.crash_on = None

    def settled(self) -> bool:
        return all(group.settled() for group in self.groups.values())

    def table(self) -> pa.Table:
        count = len(self.rows)
        table = self.rows.table(self.converted + 1)
        self.converted += count
        return table

    def batches(self) -> Iterator[pa.Table]:
        """Run; yield the events, ``BATCH_ROWS`` at a time, in emission order."""
        self.begin()
        coordinator = self.coordinator
        step = self.step
        quota = self.plan.quota
        rows = self.rows
        settle_check = stop_at = 0
        while True:
            if not self.draining:
                if self.converted + rows.count >= quota:
                    self.drain()
                    stop_at = self.now + SETTLE_LIMIT_MS
            elif self.now >= settle_check:
                if self.settled() or self.now >= stop_at:
                    break
                settle_check = self.now + SECOND_MS
            if not step(coordinator):
                break
            if rows.count >= BATCH_ROWS:
                yield self.table()
        if len(self.rows):
            yield self.table()
        self.log.close()

    def summary(self) -> CoordinatorSummary:
        return CoordinatorSummary(
            index=self.index,
            groups=tuple(group.summary for group in self.groups.values()),
            cleanups=self.cleanups,
            offsets_expired=self.offsets_expired,
            groups_expired=self.groups_expired,
            events=self.converted,
            end_ms=self.now,
        )
