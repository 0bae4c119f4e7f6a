"""A synthetic rebalance history: the real engine, driven in virtual time by simulated members.

``generate_history(out_dir, events, seed=...)`` writes a history of (at least) ``events``
events to ``out_dir`` in the layout ``export_history`` writes (``webapp.analysis.export``), so
the Spark jobs can be tried, tested and measured on histories of any size without running a
cluster for days. Nothing here needs Django.

Theory of operation
===================

**The cluster.** ``COORDINATORS`` (2) ``GroupCoordinator`` engines, each owning a share of the
50 coordinator partitions (``CoordinatorConfig.owned_partitions``), as Kafka spreads groups
over brokers; the groups' partitions are shared out so that both carry a similar load. Each
engine runs with Kafka's broker defaults except ``offsets.retention.minutes``, one day instead
of seven, so that offsets expire within the history, and a record log that keeps each key's
latest record only (memory stays flat; with ``record_logs``, every record also goes to an
``SqliteLog`` file per coordinator, as a runtime's log would hold them before compaction).
Each coordinator's share of the work runs on its own (in a process of its own when ``jobs``
is 2); their events are merged into one history by time (ties: coordinator, then emission
order) and numbered from 1 (``seq``), each row with its group's previous ``seq``
(``prev_seq``), as the runtime numbers them. The result does not depend on ``jobs``.

**The members** speak the classic protocol to the engine with its own request dataclasses, as
Kafka's consumer does (``AbstractCoordinator`` / ``ConsumerCoordinator``; driving the library
version, ``coordinator_engine.client.GroupClient``, one per member, measured half as fast):
JoinGroup with one protocol per assignor (``coordinator_engine.client.protocol.join_protocols``,
the subscription carrying owned partitions and generation), MEMBER_ID_REQUIRED answered by joining
again with the given id (KIP-394), the leader running the real assignor over the members'
subscriptions (``protocol.assign``) and sending SyncGroup with every assignment, followers an
empty SyncGroup; heartbeats, and on REBALANCE_IN_PROGRESS a rejoin at the next poll (eager
members commit and revoke everything first; cooperative members keep their partitions and
rejoin at once after a sync that took some away, KIP-429); ILLEGAL_GENERATION and
UNKNOWN_MEMBER_ID reset the member (the latter its id too) and it joins again; periodic offset
commits with generation and member id.

**Virtual time.** A heap of timed actions and the engine's ``next_deadline_ms()`` decide what
happens next; nothing waits. Responses arrive at once, except that a leader sends its
SyncGroup a few milliseconds after its JoinGroup answer (it computes the assignment) and a
member rejoins at its next poll (within half a second). One liberty is taken with heartbeats: a
member of a quiet group sends only the last heartbeat before its session would expire instead
of one every ``heartbeat.interval.ms``; the engine's state is the same (a heartbeat to a Stable
group only pushes the member's session deadline), and as soon as the group changes (any
StateChanged, GenerationStarted, MemberRemoved or StaticMemberReplaced event) every member's
next heartbeat is brought back to its regular tick, where it would have learnt of the change.

**What happens.** The catalogue (``GROUPS``) runs twelve applications: every assignor (range,
roundrobin, sticky, cooperative-sticky), eager and cooperative groups, static members, two
applications that run by day and one job that only commits offsets. A churn process picks a
group and one action at a time: a member joins; a dynamic member leaves (LeaveGroup); a member
crashes (no LeaveGroup; the engine notices on its session timeout, or at the end of a join phase
or sync that it missed); a member is too slow (its processing outlasts ``max.poll.interval.ms``:
a dynamic one leaves with Kafka's poll-timeout reason, a static one sends nothing, and both
join again when the processing ends); a static member restarts (it comes back with the same
``group.instance.id`` and a new member id, mostly within its session timeout: the engine
replaces it without a rebalance, StaticMemberReplaced); an admin triggers a rebalance
(``trigger_rebalance``) or removes a static member (LeaveGroup by instance id). Topics gain
partitions at random times (three times a day over the catalogue); a member of every group
that subscribes notices at its next metadata refresh (within ``metadata.max.age.ms``, five
minutes) and rejoins. The daily applications shut down every evening (dynamic members leave,
static ones stop and an admin removes them); then an admin does one of ``NIGHTLY_CHORES``:
delete the offsets of one topic or of all (OffsetDelete; the latter removes the group), delete
the group (DeleteGroups), or nothing, and when the next start is more than a day away
``cleanup`` (run every ``offsets.retention.check.interval.ms``) expires the group. The
offsets-only job commits with generation -1 for a few hours a day, and its offsets expire
between runs.

**Pace.** The history starts at ``START_MS`` (2026-03-02 00:00 UTC) and spreads over about
``SPAN_MS`` (four days) whatever ``events`` is: each coordinator has a share of ``events`` in
proportion to its members, the churn runs at the rate that meets it (with feedback: ahead of
schedule it slows down, behind it speeds up, never below ``MIN_CHURN_GAP_MS`` between actions)
and each member commits about every ``tempo × members / COMMIT_SHARE``, so commits are about
half of the events (in a real cluster they are nearly all). Timeouts stay Kafka's; only the
churn and the commits are paced.

**How ``events`` is honoured: at least ``events``.** A coordinator that has emitted its share
takes no new action (no churn, commits, admin actions, partition changes or cleanups) but runs
on until every group has settled (all its live members Stable in the group's current
generation, no member awaiting a timeout), so the history never ends in the middle of a
rebalance and every action counted in the summary has all its events. The surplus is that
settling: tens of events for a small history, about a hundred for a million.

**The summary** (``GeneratedHistory``, also written to ``DIR/_generated.json``) counts what the
generator did, in its own terms and independently of the engine's events, per group: the
actions above and the generations its members saw complete (distinct generation ids answered
NONE by SyncGroup), which an end-to-end test of a report can compare with what the report
finds in the events.

**Deterministic.** Every random choice comes from ``random.Random`` seeded with the seed and the
coordinator's index; member order is list order; the engine is deterministic. The same
``events`` and ``seed`` give the same files, row for row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
import gc
import heapq
import itertools
import math
import multiprocessing
import os
import queue
import random
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from coordinator_engine import (
    CoordinatorConfig,
    DeleteGroupsRequest,
    Errors,
    GroupCoordinator,
    GroupState,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    PartitionOffset,
    SqliteLog,
    SyncGroupRequest,
    TopicPartition,
    partition_for,
)
from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.classic import ADMIN_REMOVAL_REASONS
from coordinator_engine.client import CLOSE_REASON, POLL_TIMEOUT_REASON
from coordinator_engine.client.config import COOPERATIVE_ASSIGNORS
from coordinator_engine.client.protocol import (
    AssignorState,
    assign,
    assigned_partitions,
    group_subscriptions,
    join_protocols,
)
from coordinator_engine.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from coordinator_engine.events import (
    EVENT_TYPES,
    HANDOFF_EVENT_TYPES,
    AssignmentStored,
    GenerationStarted,
    GroupEvent,
    HandoffPartitionsClosed,
    HandoffPartitionsClosing,
    HandoffPartitionsGranted,
    HandoffPartitionsStarted,
    HandoffPlanMade,
    MemberRemoved,
    OffsetsCommitted,
    OffsetsRemoved,
    StateChanged,
    StaticMemberReplaced,
)
from coordinator_engine.handoff import HandoffGroupView, HandoffState
from coordinator_engine.requests import Assignment
from coordinator_engine.responses import (
    JoinGroupMember,
    JoinGroupResponse,
    SyncGroupResponse,
)
from spark_tasks.output import write_json_atomically
from spark_tasks.schema import HISTORY_SCHEMA, RENAMED_FIELDS

from .export import (
    GENERATED_NAME,
    HistoryDirError,
    _check_dir,
    prepare_empty_dir,
    write_day_files,
)

__all__ = [
    "COORDINATORS",
    "GROUPS",
    "SPAN_MS",
    "START_MS",
    "GeneratedHistory",
    "GroupSpec",
    "GroupSummary",
    "catalogue",
    "coordinator_configs",
    "generate_history",
    "record_log_path",
]

SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

#: The history's first instant: 2026-03-02 00:00 UTC (a Monday).
START_MS = int(datetime.datetime(2026, 3, 2, tzinfo=datetime.UTC).timestamp()) * SECOND_MS
#: How long the history lasts, whatever its size (the pace adapts).
SPAN_MS = 4 * DAY_MS
#: Coordinators of the simulated cluster (each an engine owning part of the 50 partitions).
COORDINATORS = 2
#: The engines' settings: Kafka's broker defaults, offsets kept one day instead of seven.
OFFSETS_RETENTION_MS = DAY_MS

#: Events per copy of the catalogue: a larger history runs more applications (``catalogue``).
EVENTS_PER_CATALOGUE = 200_000
#: Rough events per churn action, to set the pace (the feedback corrects it).
EVENTS_PER_ACTION = 8
#: The share of the events that are offset commits (in a real cluster, nearly all are).
COMMIT_SHARE = 0.5
MIN_CHURN_GAP_MS = 100
MIN_COMMIT_INTERVAL_MS = SECOND_MS
MAX_COMMIT_INTERVAL_MS = 6 * HOUR_MS
#: Topic partition changes per day, over the whole catalogue; a topic grows to at most this.
PARTITION_CHANGES_PER_DAY = 3
MAX_PARTITIONS = 32
#: Kafka's ``metadata.max.age.ms``: a member notices a partition change within this.
METADATA_MAX_AGE_MS = 5 * MINUTE_MS
#: A member's poll loop: it acts on a rejoin request within this.
POLL_INTERVAL_MS = 500
#: Records a partition grows by per second (the offsets members commit).
RECORDS_PER_SECOND = 25
#: How long a coordinator that met its share may take to settle before it stops anyway.
SETTLE_LIMIT_MS = 2 * HOUR_MS
#: Rows per table a coordinator hands over, and per write of the merged history.
BATCH_ROWS = 50_000
WRITE_ROWS = 100_000
#: Below this many events, the coordinators run in this process (``jobs`` left unset).
PARALLEL_FROM_EVENTS = 200_000
#: Records per transaction of a full record log (``record_logs``).
FULL_LOG_BATCH = 50_000

#: What an admin does with a daily application's emptied group, one a night, in turn.
NIGHTLY_CHORES = (
    "delete one topic's offsets",
    "delete all offsets",
    "delete the group",
    "leave it be",
)

NONE = Errors.NONE
ADMIN_REMOVAL_REASON = ADMIN_REMOVAL_REASONS[0]  # Kafka's AdminClient says this (KIP-800)


# ---------------------------------------------------------------- the catalogue


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupSpec:
    """One simulated application: its consumer group and how its members are configured.

    group_id: the group.
    assignors: the members' ``partition.assignment.strategy``, in preference order; empty for
        a job without members that commits its group's offsets with generation -1 (as
        manual-assignment consumers and offset tools do).
    topics: the subscribed topics.
    dynamic: the fewest and most dynamic members the churn keeps it between.
    static: how many static members it runs (``group.instance.id`` ``<group>-static-<n>``).
    session_timeout_ms, heartbeat_interval_ms, max_poll_interval_ms: its members' settings
        (the last is the JoinGroup rebalance timeout, KIP-62).
    static_session_timeout_ms: the static members' session timeout (long, so that a restart
        goes unnoticed, KIP-345).
    daily: it runs by day: shut down every evening, started again 10 to 40 hours later.
    handoff: its group is a handoff group (seed 004, docs/engine.md "Handoff groups"): its
        members speak HandoffHeartbeat, the coordinator plans the assignment and moves each
        partition by a confirmed close, then a start (no assignors, no static members).
    """

    group_id: str
    assignors: tuple[str, ...]
    topics: tuple[str, ...]
    dynamic: tuple[int, int] = (0, 0)
    static: int = 0
    session_timeout_ms: int = 45 * SECOND_MS
    heartbeat_interval_ms: int = 3 * SECOND_MS
    max_poll_interval_ms: int = 5 * MINUTE_MS
    static_session_timeout_ms: int = 2 * MINUTE_MS
    daily: bool = False
    handoff: bool = False

    @property
    def offsets_only(self) -> bool:
        """A job without members that only commits offsets."""
        return not self.assignors and not self.handoff

    @property
    def cooperative(self) -> bool:
        """Its members rebalance cooperatively (every assignor they offer supports it)."""
        return bool(self.assignors) and all(a in COOPERATIVE_ASSIGNORS for a in self.assignors)

    @property
    def weight(self) -> int:
        """Its typical member count (offsets-only: 1), to share the work out."""
        return max(1, (self.dynamic[0] + self.dynamic[1]) // 2 + self.static)


#: Topics and their partition counts at the start.
TOPICS: dict[str, int] = {
    "orders": 12,
    "payments": 8,
    "clicks": 16,
    "views": 8,
    "inventory": 12,
    "shipments": 10,
    "audit": 6,
    "emails": 4,
    "metrics": 24,
    "backfill": 6,
}

GROUPS: tuple[GroupSpec, ...] = (
    GroupSpec(group_id="orders-range", assignors=("range",), topics=("orders",), dynamic=(3, 6)),
    GroupSpec(
        group_id="clicks-roundrobin",
        assignors=("roundrobin",),
        topics=("clicks", "views"),
        dynamic=(3, 6),
        session_timeout_ms=10 * SECOND_MS,
        max_poll_interval_ms=MINUTE_MS,
    ),
    GroupSpec(
        group_id="payments-sticky",
        assignors=("sticky",),
        topics=("payments", "orders"),
        dynamic=(2, 4),
        static=2,
        session_timeout_ms=30 * SECOND_MS,
        max_poll_interval_ms=2 * MINUTE_MS,
    ),
    GroupSpec(
        group_id="inventory-coop",
        assignors=("cooperative-sticky",),
        topics=("inventory",),
        dynamic=(3, 6),
    ),
    GroupSpec(
        group_id="shipments-coop",
        assignors=("cooperative-sticky",),
        topics=("shipments", "orders"),
        dynamic=(1, 2),
        static=3,
        static_session_timeout_ms=3 * MINUTE_MS,
    ),
    # A join phase (30 s) shorter than a session (60 s): a member that dies during a rebalance
    # is dropped when the join phase or the sync times out, not on its session.
    GroupSpec(
        group_id="audit-range",
        assignors=("range",),
        topics=("audit",),
        dynamic=(3, 5),
        session_timeout_ms=MINUTE_MS,
        heartbeat_interval_ms=5 * SECOND_MS,
        max_poll_interval_ms=30 * SECOND_MS,
    ),
    GroupSpec(
        group_id="search-roundrobin",
        assignors=("roundrobin",),
        topics=("clicks",),
        dynamic=(0, 1),
        static=4,
        static_session_timeout_ms=5 * MINUTE_MS,
    ),
    GroupSpec(
        group_id="emails-sticky",
        assignors=("sticky",),
        topics=("emails", "payments"),
        dynamic=(2, 4),
    ),
    GroupSpec(
        group_id="metrics-coop",
        assignors=("cooperative-sticky",),
        topics=("metrics",),
        dynamic=(4, 7),
        static=1,
        session_timeout_ms=30 * SECOND_MS,
        max_poll_interval_ms=2 * MINUTE_MS,
    ),
    GroupSpec(
        group_id="reports-range",
        assignors=("range", "roundrobin"),
        topics=("orders", "payments"),
        dynamic=(2, 4),
        daily=True,
    ),
    GroupSpec(
        group_id="etl-coop",
        assignors=("cooperative-sticky",),
        topics=("inventory", "shipments"),
        dynamic=(1, 2),
        static=2,
        daily=True,
    ),
    GroupSpec(group_id="backfill-offsets", assignors=(), topics=("backfill",), daily=True),
    # Seed 004's handoff mode on the workloads of orders-range (eager) and inventory-coop
    # (cooperative): the same topics, member counts, settings and churn, to compare the three.
    GroupSpec(
        group_id="orders-handoff", assignors=(), topics=("orders",), dynamic=(3, 6), handoff=True
    ),
    GroupSpec(
        group_id="inventory-handoff",
        assignors=(),
        topics=("inventory",),
        dynamic=(3, 6),
        handoff=True,
    ),
)


# ---------------------------------------------------------------- results


@dataclass(kw_only=True, slots=True)
class GroupSummary:
    """What the generator did to one group, counted by the generator itself.

    assignor: the protocol its members agree on (their first assignor); ``handoff`` for a
        handoff group (the coordinator plans), None for the offsets-only job. cooperative:
        whether its members rebalance cooperatively. handoff: a handoff group (seed 004).
    joins: member processes started (first starts, replacements, daily starts; not restarts).
    leaves: dynamic members that closed and sent LeaveGroup (daily shutdowns included).
    crashes: members that died without LeaveGroup (now, on the next rebalance, or between
        their JoinGroup answer and their SyncGroup).
    slow_members: members whose processing outlasted ``max.poll.interval.ms`` (in a handoff
        group: whose processing held up the closes asked of it for as long).
    static_restarts: static members restarted with the same ``group.instance.id``.
    partition_changes: partition count changes of a subscribed topic a member acted on
        (rejoined for).
    admin_rebalances: ``trigger_rebalance`` calls that started a rebalance.
    admin_removals: static members an admin removed (LeaveGroup by instance id).
    commits: OffsetCommit requests stored without error.
    offset_deletions: OffsetDelete requests (of an emptied daily group) that succeeded.
    group_deletions: DeleteGroups (of an emptied daily group) that succeeded.
    shutdowns: daily shutdowns (every member stopped).
    generations: distinct generations its members saw complete (SyncGroup answered NONE); in
        a handoff group, distinct epochs (plans) a member was told were Stable.
    fatal_errors: members stopped by an error Kafka's consumer does not retry (expected 0).
    """

    group_id: str
    coordinator: int
    assignor: str | None
    cooperative: bool
    static_members: int
    handoff: bool = False
    joins: int = 0
    leaves: int = 0
    crashes: int = 0
    slow_members: int = 0
    static_restarts: int = 0
    partition_changes: int = 0
    admin_rebalances: int = 0
    admin_removals: int = 0
    commits: int = 0
    offset_deletions: int = 0
    group_deletions: int = 0
    shutdowns: int = 0
    generations: int = 0
    fatal_errors: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorSummary:
    """What one coordinator's run did: its groups, its ``cleanup`` results, its last time."""

    index: int
    groups: tuple[GroupSummary, ...]
    cleanups: int
    offsets_expired: int
    groups_expired: int
    events: int
    end_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratedHistory:
    """A generated history (``DIR/_generated.json`` holds ``to_json()``).

    events, files, last_seq: what was written (events ≥ requested, see the module docstring).
    requested, seed: the arguments. coordinators: engines in the simulated cluster.
    days: the day partitions written. first_at_ms, last_at_ms: the history's time range.
    cleanups, offsets_expired, groups_expired: ``cleanup`` passes and what they removed.
    groups: per group, what the generator did (``GroupSummary``), in catalogue order.
    """

    events: int
    files: int
    last_seq: int
    requested: int
    seed: int
    coordinators: int
    days: tuple[str, ...]
    first_at_ms: int
    last_at_ms: int
    cleanups: int
    offsets_expired: int
    groups_expired: int
    groups: tuple[GroupSummary, ...]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- a member


class _State(enum.Enum):
    """A simulated member's place in the protocol (Kafka's ``MemberState``, coarser)."""

    UNJOINED = "unjoined"  # must join at its next poll
    JOINING = "joining"  # JoinGroup sent, answer awaited
    SYNCING = "syncing"  # JoinGroup answered, SyncGroup to send or answer awaited
    STABLE = "stable"
    DEAD = "dead"


UNJOINED, JOINING, SYNCING, STABLE, DEAD = _State


def _position(now: int) -> int:
    """What a member has consumed of a partition by ``now`` (offsets grow at a steady rate)."""
    return (now - START_MS) * RECORDS_PER_SECOND // SECOND_MS


class _Process:
    """What a classic and a handoff member share: their commit ticks' start, their heartbeats'
    schedule, waking up when the group changes (quiet heartbeats: see the module docstring),
    and dying."""

    __slots__ = ()

    run: _CoordinatorRun
    group: _GroupRun
    alive: bool
    hb_due: int | None
    hb_last: int
    heartbeat_ms: int
    commit_due: int
    member_id: str

    @property
    def in_group(self) -> bool:
        """Heartbeating in the group (woken by its changes)."""
        raise NotImplementedError

    def heartbeat(self, due: int) -> None:
        raise NotImplementedError

    def commit_tick(self, due: int) -> None:
        raise NotImplementedError

    def schedule_commits(self, delay_ms: int) -> None:
        """The first commit tick, at a random point of the first interval."""
        run = self.run
        interval = run.commit_interval_ms
        self.commit_due = run.now + delay_ms + run.rng.randrange(interval // 2, interval + 1)
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    def schedule_heartbeat(self, due: int) -> None:
        self.hb_due = due
        run = self.run
        heapq.heappush(run.heap, (due, next(run.order), self.heartbeat, due))  # run.at, inlined

    def wake(self) -> None:
        """The group changed: heartbeat at the next regular tick, where a member learns of it."""
        due = self.hb_due
        if due is not None and self.in_group:
            last = self.hb_last
            tick = last + ((self.run.now - last) // self.heartbeat_ms + 1) * self.heartbeat_ms
            if tick < due:
                self.schedule_heartbeat(tick)

    def commit_positions(
        self,
        partitions: Sequence[TopicPartitionPair],
        generation_id: int,
        instance_id: str | None,
    ) -> None:
        """Commit what it consumed of ``partitions``, in that order, with its member id; a
        commit stored without error counts in the summary."""
        run = self.run
        position = _position(run.now)
        response = run.handle(
            OffsetCommitRequest(
                group_id=self.group.spec.group_id,
                generation_id=generation_id,
                member_id=self.member_id,
                group_instance_id=instance_id,
                offsets=tuple(
                    [
                        PartitionOffset(
                            topic=topic, partition=partition, offset=position + partition
                        )
                        for topic, partition in partitions
                    ]
                ),
            )
        )
        if all(result.error_code == NONE for result in response.partitions):
            self.group.summary.commits += 1

    def die(self) -> None:
        self.alive = False
        self.hb_due = None
        self.group.members.remove(self)  # type: ignore[arg-type]

    def crash(self) -> None:
        self.group.summary.crashes += 1
        self.die()


class _Member(_Process):
    """One consumer process of a group (see the module docstring for what it does)."""

    __slots__ = (
        "alive",
        "assignor_state",
        "client_host",
        "client_id",
        "commit_due",
        "crash_on",
        "generation",
        "group",
        "hb_due",
        "hb_last",
        "hb_request",
        "heartbeat_ms",
        "instance_id",
        "max_poll_ms",
        "member_id",
        "owned",
        "protocol",
        "quiet_heartbeat_ms",
        "rejoin_reason",
        "run",
        "session_ms",
        "stalled_until",
        "state",
    )

    def __init__(
        self, group: _GroupRun, client_id: str, instance_id: str | None, host: int
    ) -> None:
        spec = group.spec
        self.group = group
        self.run = group.run
        self.client_id = client_id
        self.client_host = f"/10.{group.run.index}.{group.number}.{host}"
        self.instance_id = instance_id
        self.session_ms = (
            spec.static_session_timeout_ms if instance_id is not None else spec.session_timeout_ms
        )
        self.heartbeat_ms = spec.heartbeat_interval_ms
        self.max_poll_ms = spec.max_poll_interval_ms
        # A quiet group's member heartbeats once per this (the last regular tick before its
        # session would expire).
        self.quiet_heartbeat_ms = max(1, (self.session_ms - 1) // self.heartbeat_ms) * (
            self.heartbeat_ms
        )
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.state = UNJOINED
        self.owned: tuple[TopicPartitionPair, ...] = ()
        self.assignor_state = AssignorState()
        self.alive = True
        self.rejoin_reason: str | None = "joining the group"
        self.stalled_until = 0
        self.crash_on: str | None = None  # "rebalance" or "join": dies at that step
        self.hb_last = 0
        self.hb_due: int | None = None
        self.hb_request: HeartbeatRequest | None = None
        self.commit_due = 0

    # -- life ----------------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        return self.state is STABLE

    def start(self, delay_ms: int) -> None:
        run = self.run
        run.at(run.now + delay_ms, self.poll, None)
        self.schedule_commits(delay_ms)

    def die(self) -> None:
        self.state = DEAD
        super().die()

    def fail(self) -> None:
        self.group.summary.fatal_errors += 1
        self.die()

    def close(self) -> None:
        """Kafka's ``close()``: commit, and LeaveGroup for a dynamic member in the group."""
        if self.state is STABLE:
            self.commit(self.owned)
        if self.instance_id is None and self.member_id and self.state is not UNJOINED:
            response = self.run.handle(
                LeaveGroupRequest(
                    group_id=self.group.spec.group_id,
                    members=(MemberIdentity(member_id=self.member_id, reason=CLOSE_REASON),),
                )
            )
            if response.error_code == NONE and response.members[0].error_code == NONE:
                self.group.summary.leaves += 1
        self.die()

    @property
    def stalled(self) -> bool:
        return self.run.now < self.stalled_until

    # -- joining -------------------------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        """Rejoin at the next poll (Kafka's ``requestRejoin``)."""
        if self.rejoin_reason is None:
            self.rejoin_reason = reason
            if self.state is STABLE and not self.stalled:
                self.schedule_poll()

    def schedule_poll(self) -> None:
        run = self.run
        run.at(run.now + run.rng.randrange(1, POLL_INTERVAL_MS), self.poll, None)

    def poll(self, _: Any) -> None:
        """The application's poll(): a pending rejoin starts here."""
        if not self.alive or self.rejoin_reason is None or self.stalled:
            return
        if self.state is STABLE:
            if self.crash_on == "rebalance":
                self.crash()
                return
            if not self.group.spec.cooperative and self.owned:
                self.commit(self.owned)  # onJoinPrepare: commit, then revoke everything
                self.owned = ()
            self.join()
        elif self.state is UNJOINED:
            self.join()

    def reset(self, reason: str, *, member_id: bool) -> None:
        """Out of the group (Kafka's ``resetStateAndRejoin``): its partitions are lost."""
        if member_id:
            self.member_id = ""
        self.generation = -1
        self.protocol = None
        self.owned = ()
        self.state = UNJOINED
        self.hb_due = None
        self.rejoin_reason = reason
        if not self.stalled:
            self.schedule_poll()

    def join(self) -> None:
        spec = self.group.spec
        reason = self.rejoin_reason
        self.rejoin_reason = None
        self.state = JOINING
        self.hb_due = None
        request = JoinGroupRequest(
            group_id=spec.group_id,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            session_timeout_ms=self.session_ms,
            rebalance_timeout_ms=self.max_poll_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=join_protocols(
                spec.assignors, spec.topics, self.owned, self.generation, self.assignor_state
            ),
            client_id=self.client_id,
            client_host=self.client_host,
            reason=reason,
        )
        self.run.send(request, self.on_join)

    def on_join(self, response: JoinGroupResponse) -> None:
        if not self.alive or self.state is not JOINING:
            return
        code = response.error_code
        if code == NONE:
            if self.crash_on == "join":
                self.crash()
                return
            run = self.run
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.protocol = response.protocol_name
            self.state = SYNCING
            if response.leader == self.member_id and not response.skip_assignment:
                assert self.protocol is not None
                assignments = run.assign(self.protocol, response.members)
                delay = 2 + len(response.members) + run.rng.randrange(20)
                run.at(run.now + delay, self.sync, (self.generation, assignments))
            else:
                self.sync((self.generation, ()))
        elif code == Errors.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self.rejoin_reason = f"rejoining with the member id {response.member_id}"
            self.join()
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            self.owned = ()
            self.rejoin_reason = "JoinGroup answered UNKNOWN_MEMBER_ID"
            self.join()
        elif code in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self.rejoin_reason = f"JoinGroup answered {Errors.name_of(code)}"
            self.join()
        else:
            self.fail()

    def sync(self, work: tuple[int, tuple[Assignment, ...]]) -> None:
        generation, assignments = work
        if not self.alive or self.state is not SYNCING or self.generation != generation:
            return
        self.run.send(
            SyncGroupRequest(
                group_id=self.group.spec.group_id,
                generation_id=generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=self.protocol,
                assignments=assignments,
            ),
            self.on_sync,
        )

    def on_sync(self, response: SyncGroupResponse) -> None:
        if not self.alive or self.state is not SYNCING:
            return
        code = response.error_code
        if code == NONE:
            self.stable(assigned_partitions(response.assignment) or ())
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.state = JOINING
            self.rejoin_reason = "the group began another rebalance"
            self.join()
        elif code in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self.generation = -1
            self.owned = ()
            self.rejoin_reason = f"SyncGroup answered {Errors.name_of(code)}"
            self.join()
        else:
            self.fail()

    def stable(self, assigned: Sequence[TopicPartitionPair]) -> None:
        """Kafka's ``onJoinComplete``."""
        run = self.run
        group = self.group
        group.generation_completed(self.generation)
        self.state = STABLE
        revoked = set(self.owned).difference(assigned)
        self.owned = tuple(sorted(assigned))
        self.assignor_state = AssignorState(
            previous_assignment=self.owned, generation=self.generation
        )
        self.hb_request = HeartbeatRequest(
            group_id=group.spec.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        self.hb_last = run.now
        self.schedule_heartbeat(run.now + self.heartbeat_ms)
        if revoked:
            # Cooperative: give up what moved (committing it first), then the second round.
            self.commit(tuple(sorted(revoked)))
            self.rejoin_reason = "need to revoke partitions and re-join"
            self.join()
        elif self.rejoin_reason is not None and not self.stalled:
            self.schedule_poll()

    # -- heartbeats ----------------------------------------------------------------------------

    def heartbeat(self, due: int) -> None:
        if not self.alive or self.state is not STABLE or due != self.hb_due:
            return
        assert self.hb_request is not None
        now = self.run.now
        # run.handle inlined (a heartbeat is always answered at once): heartbeats are most of
        # the simulation's steps.
        reply = self.run.coordinator.handle(self.hb_request, now)
        code = reply.response.error_code  # type: ignore[union-attr]
        if code == NONE:
            self.hb_last = now
            self.schedule_heartbeat(now + self.quiet_heartbeat_ms)
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.hb_last = now
            self.schedule_heartbeat(now + self.heartbeat_ms)
            self.request_rejoin("the group is rebalancing")
        elif code == Errors.ILLEGAL_GENERATION:
            self.reset("Heartbeat answered ILLEGAL_GENERATION", member_id=False)
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.reset("Heartbeat answered UNKNOWN_MEMBER_ID", member_id=True)
        else:
            self.fail()

    # -- commits -------------------------------------------------------------------------------

    def commit(self, partitions: Sequence[TopicPartitionPair]) -> None:
        """Commit the consumed position of ``partitions`` (with generation and member id)."""
        if partitions and self.member_id:
            self.commit_positions(partitions, self.generation, self.instance_id)

    def commit_tick(self, due: int) -> None:
        """Auto-commit, every ``commit_interval_ms`` of its coordinator's pace."""
        run = self.run
        if not self.alive or due != self.commit_due or run.draining:
            return
        if self.state is STABLE:
            self.commit(self.owned)
        self.commit_due = run.now + run.commit_interval_ms
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    # -- slowness ------------------------------------------------------------------------------

    def stall(self, duration_ms: int) -> None:
        """The application spends ``duration_ms`` (> max.poll.interval.ms) on one batch."""
        run = self.run
        self.group.summary.slow_members += 1
        self.stalled_until = run.now + duration_ms
        run.at(run.now + self.max_poll_ms, self.poll_timeout, self.stalled_until)
        run.at(self.stalled_until, self.unstall, self.stalled_until)

    def poll_timeout(self, token: int) -> None:
        """KIP-62: the heartbeat thread gives up on the application; a dynamic member leaves."""
        if not self.alive or token != self.stalled_until or self.state is not STABLE:
            return
        if self.instance_id is None:
            self.run.handle(
                LeaveGroupRequest(
                    group_id=self.group.spec.group_id,
                    members=(MemberIdentity(member_id=self.member_id, reason=POLL_TIMEOUT_REASON),),
                )
            )
        self.reset("consumer pro-actively leaving the group", member_id=True)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            self.poll(None)


class _HandoffMember(_Process):
    """One consumer process of a handoff group (seed 004): it speaks only HandoffHeartbeat.

    It joins with epoch 0 under an id of its own (KIP-1082), consumes exactly the partitions it
    was granted and confirmed, and answers a ``close`` as the seed's consumer does: it stops the
    partition, commits its position, and confirms in its next heartbeat (at once, unless its
    processing is stalled: then when the stall ends). Quiet heartbeats as ``_Member``'s."""

    __slots__ = (
        "alive",
        "client_host",
        "client_id",
        "closed",
        "closing",
        "commit_due",
        "consuming",
        "epoch",
        "group",
        "hb_due",
        "hb_last",
        "heartbeat_ms",
        "member_id",
        "quiet_heartbeat_ms",
        "quiet_request",
        "run",
        "session_ms",
        "stalled_until",
        "started",
    )

    instance_id = None

    def __init__(self, group: _GroupRun, client_id: str, host: int) -> None:
        spec = group.spec
        self.group = group
        self.run = group.run
        self.client_id = client_id
        self.client_host = f"/10.{group.run.index}.{group.number}.{host}"
        self.member_id = self.new_id()
        self.session_ms = spec.session_timeout_ms
        self.heartbeat_ms = spec.heartbeat_interval_ms
        self.quiet_heartbeat_ms = max(1, (self.session_ms - 1) // self.heartbeat_ms) * (
            self.heartbeat_ms
        )
        self.epoch = 0
        self.alive = True
        self.consuming: set[TopicPartitionPair] = set()
        self.closing: set[TopicPartitionPair] = set()  # asked to close, not confirmed yet
        self.closed: set[TopicPartitionPair] = set()  # closes to confirm at the next heartbeat
        self.started: set[TopicPartitionPair] = set()  # starts to confirm at the next heartbeat
        self.stalled_until = 0
        self.hb_last = 0
        self.hb_due: int | None = None
        self.commit_due = 0
        self.quiet_request: HandoffHeartbeatRequest | None = None

    def new_id(self) -> str:
        return f"{self.client_id}-{self.run.rng.getrandbits(48):012x}"

    @property
    def stalled(self) -> bool:
        return self.run.now < self.stalled_until

    @property
    def settled(self) -> bool:
        return self.epoch > 0 and not (self.closing or self.closed or self.started)

    # -- life ----------------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        return self.epoch > 0

    def start(self, delay_ms: int) -> None:
        self.schedule_heartbeat(self.run.now + delay_ms)
        self.schedule_commits(delay_ms)

    def close(self) -> None:
        """Commit what it consumes, then leave (epoch -1): its partitions are free at once."""
        self.commit(self.consuming)
        if self.epoch > 0:
            response = self.run.handle(self.request(-1))
            if response.error_code == NONE:
                self.group.summary.leaves += 1
        self.die()

    def stall(self, duration_ms: int) -> None:
        """Its processing is stuck for ``duration_ms``: heartbeats go on (Kafka's heartbeat
        thread), but a close is confirmed only once the batch is done."""
        self.group.summary.slow_members += 1
        self.stalled_until = self.run.now + duration_ms
        self.run.at(self.stalled_until, self.unstall, self.stalled_until)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            self.confirm_closes()

    # -- heartbeats ----------------------------------------------------------------------------

    def request(self, epoch: int) -> HandoffHeartbeatRequest:
        if not (self.closed or self.started):  # most heartbeats: the same request as before
            quiet = self.quiet_request
            if quiet is None or quiet.member_epoch != epoch or quiet.member_id != self.member_id:
                quiet = self.quiet_request = self.new_request(epoch)
            return quiet
        return self.new_request(epoch)

    def new_request(self, epoch: int) -> HandoffHeartbeatRequest:
        return HandoffHeartbeatRequest(
            group_id=self.group.spec.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            session_timeout_ms=self.session_ms,
            topics=self.group.spec.topics,
            closed=_topic_partitions(self.closed),
            started=_topic_partitions(self.started),
            client_id=self.client_id,
            client_host=self.client_host,
        )

    def heartbeat(self, due: int) -> None:
        if not self.alive or due != self.hb_due:
            return
        run = self.run
        now = run.now
        closed, started = self.closed, self.started
        response = run.handle(self.request(self.epoch))
        code = response.error_code
        self.hb_last = now
        if code == NONE:
            self.epoch = response.member_epoch
            closed.clear()
            started.clear()
            # Every partition asked is confirmed, started or not (a grant can be taken back
            # before the member started it: it must still confirm, docs/engine.md).
            self.closing.update((tp.topic, tp.partition) for tp in response.close)
            for topic_partition in response.start:
                tp = (topic_partition.topic, topic_partition.partition)
                if tp not in self.consuming:
                    self.consuming.add(tp)
                    started.add(tp)
            if response.group_state == "Stable":
                self.group.generation_completed(self.epoch)
            self.confirm_closes()
            if self.hb_due == due:  # nothing to confirm: the next regular or quiet tick
                busy = response.group_state != "Stable" or self.closing
                self.schedule_heartbeat(
                    now + (self.heartbeat_ms if busy else self.quiet_heartbeat_ms)
                )
        elif code == Errors.UNKNOWN_MEMBER_ID:
            # Removed (its session expired while it was away): it lost everything.
            self.consuming.clear()
            self.closing.clear()
            closed.clear()
            started.clear()
            self.member_id = self.new_id()
            self.epoch = 0
            self.schedule_heartbeat(now + self.heartbeat_ms)
        else:
            self.group.summary.fatal_errors += 1
            self.die()

    def confirm_closes(self) -> None:
        """Stop the partitions asked to close, commit their positions, confirm at once (the
        seed's consumer), unless the processing is stalled. A start to confirm goes at once
        too (after the OffsetFetch a real consumer makes first)."""
        if self.closing and not self.stalled:
            closing = self.closing
            self.commit(closing & self.consuming)
            self.consuming -= closing
            self.closed |= closing
            self.closing = set()
        if self.closed or self.started:
            self.schedule_heartbeat(self.run.now + 1 + self.run.rng.randrange(20))

    # -- commits -------------------------------------------------------------------------------

    def commit(self, partitions: set[TopicPartitionPair]) -> None:
        if partitions and self.epoch > 0:
            self.commit_positions(sorted(partitions), self.epoch, None)

    def commit_tick(self, due: int) -> None:
        run = self.run
        if not self.alive or due != self.commit_due or run.draining:
            return
        if not self.stalled:
            self.commit(self.consuming - self.closing)
        self.commit_due = run.now + run.commit_interval_ms
        run.at(self.commit_due, self.commit_tick, self.commit_due)


def _topic_partitions(partitions: set[TopicPartitionPair]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic=topic, partition=p) for topic, p in sorted(partitions))


# ---------------------------------------------------------------- a group


class _GroupRun:
    """One application of the catalogue: its members and what happens to them."""

    def __init__(self, run: _CoordinatorRun, spec: GroupSpec, number: int) -> None:
        self.run = run
        self.spec = spec
        self.number = number
        self.members: list[_Member] = []
        self.up = False
        self.started = 0
        self.restarting: set[str] = set()
        self.chores: list[str] = []
        self.last_generation = 0
        self.static_ids = tuple(f"{spec.group_id}-static-{n}" for n in range(spec.static))
        self.summary = GroupSummary(
            group_id=spec.group_id,
            coordinator=run.index,
            assignor=spec.assignors[0] if spec.assignors else "handoff" if spec.handoff else None,
            cooperative=spec.cooperative,
            static_members=spec.static,
            handoff=spec.handoff,
        )

    # -- membership ----------------------------------------------------------------------------

    def start_member(self, instance_id: str | None, delay_ms: int, *, restart: bool) -> None:
        spec = self.spec
        if instance_id is None:
            self.started += 1
            client_id = f"{spec.group_id}-{self.started}"
        else:
            client_id = instance_id
            self.restarting.discard(instance_id)
        if not restart:
            self.summary.joins += 1
        member = _Member(self, client_id, instance_id, host=len(self.members) + 1)
        self.members.append(member)
        member.start(delay_ms)

    def comeback(self, instance_id: str) -> None:
        if self.up:
            self.start_member(instance_id, 0, restart=True)
        else:
            self.restarting.discard(instance_id)

    def generation_completed(self, generation: int) -> None:
        if generation != self.last_generation:
            self.last_generation = generation
            self.summary.generations += 1

    def wake(self) -> None:
        for member in self.members:
            member.wake()

    # -- the day -------------------------------------------------------------------------------

    def startup(self, _: Any = None) -> None:
        run = self.run
        if run.draining:
            return
        self.up = True
        self.last_generation = 0
        if self.spec.offsets_only:
            self.job(run.now + run.rng.randrange(HOUR_MS, 5 * HOUR_MS))
            return
        low, high = self.spec.dynamic
        for _ in range((low + high + 1) // 2):
            self.start_member(None, run.rng.randrange(5 * SECOND_MS), restart=False)
        for instance_id in self.static_ids:
            self.start_member(instance_id, run.rng.randrange(5 * SECOND_MS), restart=False)
        if self.spec.daily:
            run.at(run.now + run.rng.randrange(10 * HOUR_MS, 13 * HOUR_MS), self.shutdown)

    def shutdown(self, _: Any = None) -> None:
        """The evening: dynamic members close (LeaveGroup), static ones stop and are removed by
        an admin; later an admin may delete offsets or the group; the next start is 10 to 40
        hours away."""
        run = self.run
        if run.draining:
            return
        self.up = False
        self.summary.shutdowns += 1
        stopped = []
        for member in list(self.members):
            if member.instance_id is None:
                member.close()
            else:
                stopped.append(member.instance_id)
                member.die()
        if stopped:
            run.at(run.now + run.rng.randrange(5 * SECOND_MS, MINUTE_MS), self.remove, stopped)
        run.at(run.now + run.rng.randrange(30 * MINUTE_MS, 3 * HOUR_MS), self.tidy_up)
        run.at(run.now + run.rng.randrange(10 * HOUR_MS, 40 * HOUR_MS), self.startup)

    def tidy_up(self, _: Any = None) -> None:
        """The admin's night, one of ``NIGHTLY_CHORES`` in turn (shuffled each round): delete
        the offsets of one topic the emptied group has offsets for, or of all of them (which
        removes the group, KIP-496), or delete the group (DeleteGroups), or leave it be (its
        offsets expire if it stays down for a day)."""
        run = self.run
        if run.draining or self.up:
            return
        rng = run.rng
        if not self.chores:
            self.chores = list(NIGHTLY_CHORES)
            rng.shuffle(self.chores)
        chore = self.chores.pop()
        group_id = self.spec.group_id
        topics = sorted({topic for topic, _ in run.coordinator.committed_offsets(group_id)})
        if chore in ("delete one topic's offsets", "delete all offsets") and topics:
            if chore == "delete one topic's offsets":
                topics = [topics[rng.randrange(len(topics))]]
            response = run.handle(
                OffsetDeleteRequest(
                    group_id=group_id,
                    partitions=tuple(
                        TopicPartition(topic=topic, partition=p)
                        for topic in topics
                        for p in range(run.partitions[topic])
                    ),
                )
            )
            if response.error_code == NONE and all(
                p.error_code == NONE for p in response.partitions
            ):
                self.summary.offset_deletions += 1
        elif chore == "delete the group" and run.coordinator.group(group_id) is not None:
            response = run.handle(DeleteGroupsRequest(group_ids=(group_id,)))
            if response.results[0].error_code == NONE:
                self.summary.group_deletions += 1

    def job(self, until_ms: int) -> None:
        """The offsets-only job: commit (generation -1) every commit interval until ``until_ms``,
        then start again 16 to 40 hours later."""
        run = self.run
        if run.draining:
            return
        if run.now >= until_ms:
            self.up = False
            run.at(run.now + run.rng.randrange(16 * HOUR_MS, 40 * HOUR_MS), self.startup)
            return
        topic = self.spec.topics[0]
        position = _position(run.now)
        response = run.handle(
            OffsetCommitRequest(
                group_id=self.spec.group_id,
                offsets=tuple(
                    PartitionOffset(topic=topic, partition=p, offset=position)
                    for p in range(run.partitions[topic])
                ),
            )
        )
        if all(result.error_code == NONE for result in response.partitions):
            self.summary.commits += 1
        run.at(run.now + run.commit_interval_ms, self.job, until_ms)

    # -- churn ---------------------------------------------------------------------------------

    @property
    def churnable(self) -> bool:
        return self.up and not self.spec.offsets_only

    def act(self) -> None:
        """One churn action, chosen at random among those that fit the group now."""
        run = self.run
        rng = run.rng
        members = self.members
        dynamic = [m for m in members if m.instance_id is None]
        static = [m for m in members if m.instance_id is not None]
        present = {m.instance_id for m in static}
        missing = [i for i in self.static_ids if i not in present and i not in self.restarting]
        stable = [m for m in members if m.state is STABLE and not m.stalled]
        low, high = self.spec.dynamic
        choices: list[tuple[Callable[[], None], int]] = []
        if len(dynamic) < high:
            choices.append(
                (lambda: self.start_member(None, 0, restart=False), 12 if len(dynamic) < low else 5)
            )
        if missing:
            choices.append((lambda: self.start_member(missing[0], 0, restart=False), 6))
        if dynamic:
            choices.append((lambda: self.leave(dynamic), 5 if len(dynamic) > low else 1))
        if members:
            choices.append((lambda: self.crash(members), 4))
            choices.append((self.admin_rebalance, 2))
        if stable:
            choices.append((lambda: self.slow(stable), 3))
        if static:
            choices.append((lambda: self.restart(static), 7))
            choices.append((lambda: self.admin_remove(static), 1))
        if not choices:  # every member is a static one between two lives
            return
        actions = [action for action, _ in choices]
        (action,) = rng.choices(actions, weights=[weight for _, weight in choices])
        action()

    def leave(self, dynamic: list[_Member]) -> None:
        dynamic[self.run.rng.randrange(len(dynamic))].close()

    def crash(self, members: list[_Member]) -> None:
        rng = self.run.rng
        member = members[rng.randrange(len(members))]
        draw = rng.random()
        if draw < 0.6 or member.crash_on is not None:
            member.crash()
        else:
            member.crash_on = "rebalance" if draw < 0.85 else "join"

    def slow(self, stable: list[_Member]) -> None:
        rng = self.run.rng
        member = stable[rng.randrange(len(stable))]
        member.stall(int(member.max_poll_ms * (1.1 + 0.5 * rng.random())))

    def restart(self, static: list[_Member]) -> None:
        run = self.run
        rng = run.rng
        member = static[rng.randrange(len(static))]
        assert member.instance_id is not None
        self.summary.static_restarts += 1
        member.die()
        self.restarting.add(member.instance_id)
        if rng.random() < 0.85:  # back within its session: replaced without a rebalance
            downtime = rng.randrange(2 * SECOND_MS, member.session_ms // 2)
        else:
            downtime = int(member.session_ms * (1.2 + rng.random()))
        run.at(run.now + downtime, self.comeback, member.instance_id)

    def admin_rebalance(self) -> None:
        run = self.run
        if run.coordinator.trigger_rebalance(self.spec.group_id, run.now) == NONE:
            self.summary.admin_rebalances += 1

    def admin_remove(self, static: list[_Member]) -> None:
        member = static[self.run.rng.randrange(len(static))]
        assert member.instance_id is not None
        self.remove([member.instance_id])

    def remove(self, instance_ids: list[str]) -> None:
        """LeaveGroup by instance id with the AdminClient's reason (a removal by an admin)."""
        response = self.run.handle(
            LeaveGroupRequest(
                group_id=self.spec.group_id,
                members=tuple(
                    MemberIdentity(group_instance_id=i, reason=ADMIN_REMOVAL_REASON)
                    for i in instance_ids
                ),
            )
        )
        self.summary.admin_removals += sum(m.error_code == NONE for m in response.members)

    def notice_metadata(self, topic: str) -> None:
        """A member's metadata refresh saw ``topic`` grow: it rejoins (after its sync, if it
        is syncing), as Kafka's ``ConsumerCoordinator.rejoinNeededOrPending``."""
        if self.run.draining:
            return
        for member in self.members:
            if member.state in (STABLE, SYNCING) and not member.stalled:
                self.summary.partition_changes += 1
                member.request_rejoin(f"partition count of {topic} changed")
                return

    # -- the end -------------------------------------------------------------------------------

    def settled(self) -> bool:
        view = self.run.coordinator.group(self.spec.group_id)
        members = self.members
        if not members:
            return view is None or (
                not view.members
                and not view.pending_member_ids
                and view.state in (GroupState.EMPTY, GroupState.DEAD)
            )
        if (
            view is None
            or view.state is not GroupState.STABLE
            or len(view.members) != len(members)
            or view.pending_member_ids
        ):
            return False
        return all(
            m.state is STABLE
            and m.generation == view.generation_id
            and m.rejoin_reason is None
            and not m.stalled
            for m in members
        )


class _HandoffGroupRun(_GroupRun):
    """A handoff application: the same churn as a classic one where it applies (members join,
    leave, crash, are slow; the partition store reports topic growth itself), none of the
    static members' or assignors' actions, which the mode does not have."""

    members: list[_HandoffMember]  # type: ignore[assignment]

    def start_member(self, instance_id: str | None, delay_ms: int, *, restart: bool) -> None:
        self.started += 1
        self.summary.joins += 1
        member = _HandoffMember(self, f"{self.spec.group_id}-{self.started}", len(self.members) + 1)
        self.members.append(member)
        member.start(delay_ms)

    def act(self) -> None:
        rng = self.run.rng
        members = self.members
        low, high = self.spec.dynamic
        choices: list[tuple[Callable[[], None], int]] = []
        if len(members) < high:
            choices.append(
                (lambda: self.start_member(None, 0, restart=False), 12 if len(members) < low else 5)
            )
        if members:
            choices.append(
                (
                    lambda: members[rng.randrange(len(members))].close(),
                    5 if len(members) > low else 1,
                )
            )
            choices.append((lambda: members[rng.randrange(len(members))].crash(), 4))
            ready = [m for m in members if not m.stalled]
            if ready:
                member = ready[rng.randrange(len(ready))]
                choices.append(
                    (
                        lambda: member.stall(
                            int(self.spec.max_poll_interval_ms * (0.1 + 0.5 * rng.random()))
                        ),
                        3,
                    )
                )
        if not choices:
            return
        actions = [action for action, _ in choices]
        (action,) = rng.choices(actions, weights=[weight for _, weight in choices])
        action()

    def notice_metadata(self, topic: str) -> None:
        """The partition store told the engine already (``grow_topic``), which re-planned;
        members learn their new partitions at their next heartbeat."""
        if self.members and not self.run.draining:
            self.summary.partition_changes += 1

    def settled(self) -> bool:
        view = self.run.coordinator.group(self.spec.group_id)
        members = self.members
        if not members:
            return view is None or not view.members
        return (
            isinstance(view, HandoffGroupView)
            and view.state is HandoffState.STABLE
            and len(view.members) == len(members)
            and all(m.settled and not m.stalled for m in members)
        )


# ---------------------------------------------------------------- a coordinator


@dataclass(frozen=True, kw_only=True, slots=True)
class _Plan:
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
_WAKING_EVENTS = frozenset(
    {
        StateChanged,
        GenerationStarted,
        MemberRemoved,
        StaticMemberReplaced,
        HandoffPlanMade,
        HandoffPartitionsClosing,
        HandoffPartitionsGranted,
    }
)


class _LatestRecords:
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
def _rare_collections() -> Iterator[None]:
    """Collect garbage rarely while generating: the simulation allocates many short-lived
    objects and almost no cycles, and the default thresholds cost a sixth of the run."""
    thresholds = gc.get_threshold()
    gc.set_threshold(200_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class _CoordinatorRun:
    """One engine and the groups it coordinates, run in virtual time until its quota is met
    and its groups have settled; ``batches()`` yields its events as history tables whose
    ``seq`` is the coordinator's own emission order (the merge renumbers them)."""

    def __init__(self, plan: _Plan) -> None:
        self.index = plan.index
        self.plan = plan
        self.rng = random.Random(f"rebalance-lab/{plan.seed}/{plan.index}")
        self.now = START_MS
        self.log = _LatestRecords(None if plan.record_log is None else SqliteLog(plan.record_log))
        self.coordinator = GroupCoordinator(
            _config(plan.owned_partitions), self.log, now_ms=START_MS
        )
        self.coordinator.add_listener(self.on_event)
        self.heap: list[tuple[int, int, Callable[[Any], None], Any]] = []
        self.order = itertools.count()
        self.deliveries: deque[tuple[Callable[[Any], None], Any]] = deque()
        self.rows = _HistoryRows()
        self.converted = 0
        self.draining = False
        self.partitions = dict(TOPICS)
        self.groups = {
            spec.group_id: (_HandoffGroupRun if spec.handoff else _GroupRun)(self, spec, number)
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

    def at(self, when: int, action: Callable[[Any], None], argument: Any = None) -> None:
        heapq.heappush(self.heap, (when, next(self.order), action, argument))

    def handle(self, request: Any) -> Any:
        """A request answered at once (everything but JoinGroup and SyncGroup)."""
        reply = self.coordinator.handle(request, self.now)
        assert reply.done, f"{type(request).__name__} was parked"
        return reply.response

    def send(self, request: Any, on_response: Callable[[Any], None]) -> None:
        """A JoinGroup or SyncGroup: answered now, or delivered when the engine completes it."""
        reply = self.coordinator.handle(request, self.now)
        if reply.done:
            on_response(reply.response)
        else:
            deliveries = self.deliveries
            reply.add_done_callback(lambda response: deliveries.append((on_response, response)))

    def on_event(self, event: GroupEvent) -> None:
        self.rows.add(event)
        if type(event) in _WAKING_EVENTS:
            self.groups[event.group_id].wake()

    def assign(self, protocol: str, members: Sequence[JoinGroupMember]) -> tuple[Assignment, ...]:
        """The leader's assignment, with the real assignor, over the current partition counts."""
        subscriptions = group_subscriptions(protocol, members)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        counts = {t: self.partitions[t] for t in topics if t in self.partitions}
        return assign(protocol, subscriptions, counts)[1]

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
        self.coordinator.set_topic_partitions(topic, count, self.now)  # the partition store
        for group in self.groups.values():
            if topic in group.spec.topics and group.members:
                delay = self.rng.randrange(SECOND_MS, METADATA_MAX_AGE_MS)
                self.at(self.now + delay, group.notice_metadata, topic)

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
                if isinstance(member, _Member):
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
        heap = self.heap
        coordinator = self.coordinator
        deliveries = self.deliveries
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
            deadline = coordinator.next_deadline_ms()
            if heap and (deadline is None or heap[0][0] < deadline):
                when, _, action, argument = heapq.heappop(heap)
                self.now = when
                action(argument)
            elif deadline is not None:
                self.now = deadline
                coordinator.advance(deadline)
            else:
                break
            while deliveries:
                on_response, response = deliveries.popleft()
                on_response(response)
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


# ---------------------------------------------------------------- events as history rows

#: Columns an event does not fill as they are: the nested ones, and those the table numbers.
_DERIVED_COLUMNS = frozenset({"seq", "prev_seq", "type", "assignment", "partitions", "offsets"})
#: Event types whose nested field becomes a list<struct> column: (field, column).
_NESTED = {
    AssignmentStored: ("partitions", "assignment"),
    OffsetsRemoved: ("partitions", "partitions"),
    OffsetsCommitted: ("offsets", "offsets"),
    HandoffPlanMade: ("assignment", "assignment"),
    HandoffPartitionsClosing: ("partitions", "partitions"),
    HandoffPartitionsClosed: ("partitions", "partitions"),
    HandoffPartitionsGranted: ("partitions", "partitions"),
    HandoffPartitionsStarted: ("partitions", "partitions"),
}


def _copied(cls: type[GroupEvent]) -> tuple[tuple[str, str], ...]:
    """(column, field) pairs of an event type's fields that land in a column as they are (a
    field named like a column: ``row_of``'s rule), and the member the event is about
    (StaticMemberReplaced names it ``new_member_id``)."""
    names = [f.name for f in dataclasses.fields(cls)]
    pairs = [(n, n) for n in names if n in HISTORY_SCHEMA.names and n not in _DERIVED_COLUMNS]
    for name, column in RENAMED_FIELDS:
        if name in names and column not in names:
            pairs.append((column, name))
    return tuple(pairs)


def _list_of_structs(
    field_type: pa.ListType, children: list[list[Any]], bounds: list[int], nulls: list[bool]
) -> pa.Array:
    """A list<struct> column from its struct fields' values (``children``, in field order),
    each row's end in them (``bounds``, after a leading 0) and which rows are null."""
    struct_type = field_type.value_type
    values = pa.StructArray.from_arrays(
        [pa.array(child, struct_type.field(i).type) for i, child in enumerate(children)],
        fields=list(struct_type),
    )
    return pa.ListArray.from_arrays(
        pa.array(bounds, pa.int32()),
        values,
        type=field_type,
        mask=pa.array(nulls, pa.bool_()) if any(nulls) else None,
    )


class _RowsOfType:
    """The rows of one event type gathered so far, a list per column: each event's values are
    taken as it is emitted, while it is still in the processor's cache (reading 50,000 events
    back afterwards cost twice as much)."""

    def __init__(self, cls: type[GroupEvent]) -> None:
        self.cls = cls
        copied = _copied(cls)
        self.columns = [column for column, _ in copied]
        # A tuple of the values (every event has at least group_id and at_ms).
        self.values = attrgetter(*[name for _, name in copied])
        nested = _NESTED.get(cls)
        self.nested = None if nested is None else attrgetter(nested[0])
        self.nested_column = None if nested is None else nested[1]
        self.width = (
            0 if nested is None else HISTORY_SCHEMA.field(nested[1]).type.value_type.num_fields
        )
        self.reset()

    def reset(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.positions: list[int] = []
        # The nested column: its struct fields' values, each row's end in them, null rows.
        self.children: list[list[Any]] = [[] for _ in range(self.width)]
        self.bounds = [0]
        self.nulls: list[bool] = []

    def add(self, event: GroupEvent, position: int) -> None:
        self.rows.append(self.values(event))
        self.positions.append(position)
        if self.nested is not None:
            self.add_nested(self.nested(event))

    def add_nested(self, items: Any) -> None:
        children = self.children
        if items is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            if isinstance(items, dict):  # AssignmentStored: member id -> [[topic, partition]]
                for member, owned in items.items():
                    if owned:
                        children[0] += [member] * len(owned)
                        children[1] += map(_ITEMS[0], owned)
                        children[2] += map(_ITEMS[1], owned)
            else:  # [[value, ...], ...] in the struct's field order
                for child, item in zip(children, _ITEMS, strict=False):
                    child += map(item, items)
        self.bounds.append(len(children[0]))

    def table(self) -> pa.Table:
        """Its rows (``seq`` and ``prev_seq`` 0), and starts afresh."""
        count = len(self.rows)
        data = dict(zip(self.columns, zip(*self.rows, strict=True), strict=True))
        data["type"] = [self.cls.type] * count
        arrays = []
        for f in HISTORY_SCHEMA:
            if f.name in ("seq", "prev_seq"):
                arrays.append(pa.repeat(pa.scalar(0, f.type), count))
            elif f.name == self.nested_column:
                arrays.append(_list_of_structs(f.type, self.children, self.bounds, self.nulls))
            elif f.name in data:
                arrays.append(pa.array(data[f.name], f.type))
            else:
                arrays.append(pa.nulls(count, f.type))
        self.reset()
        return pa.Table.from_arrays(arrays, schema=HISTORY_SCHEMA)


_ITEMS = (itemgetter(0), itemgetter(1), itemgetter(2))


class _HistoryRows:
    """Events turned into history rows as they are emitted: the rows ``row_of`` makes of their
    ``to_json()``, gathered a column at a time per event type rather than a dict at a time
    per event (which was most of the cost of a row)."""

    def __init__(self) -> None:
        self.of_type = {
            cls: _RowsOfType(cls) for cls in (*EVENT_TYPES.values(), *HANDOFF_EVENT_TYPES.values())
        }
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def add(self, event: GroupEvent) -> None:
        self.of_type[type(event)].add(event, self.count)
        self.count += 1

    def table(self, first_seq: int) -> pa.Table:
        """The rows gathered, in emission order, numbered from ``first_seq`` (``prev_seq`` 0);
        starts afresh."""
        positions: list[int] = []
        parts = []
        for rows in self.of_type.values():
            if rows.rows:
                positions += rows.positions
                parts.append(rows.table())
        count, self.count = self.count, 0
        table = pa.concat_tables(parts)
        # Back to emission order: row i is the part row that came from position i.
        table = table.take(pc.sort_indices(pa.array(positions, pa.int64()))).combine_chunks()
        seq = HISTORY_SCHEMA.get_field_index("seq")
        return table.set_column(
            seq,
            HISTORY_SCHEMA.field(seq),
            pa.array(range(first_seq, first_seq + count), pa.int64()),
        )


# ---------------------------------------------------------------- the plan


def _coordinator_of(groups: Sequence[GroupSpec]) -> dict[str, int]:
    """Each group's coordinator: the groups' coordinator partitions, heaviest first, each to
    the coordinator with the least load so far (ties: the lower index)."""
    load_of_partition: dict[int, int] = {}
    for spec in groups:
        partition = partition_for(spec.group_id)
        load_of_partition[partition] = load_of_partition.get(partition, 0) + spec.weight
    loads = [0] * COORDINATORS
    owner: dict[int, int] = {}
    for partition, load in sorted(load_of_partition.items(), key=lambda item: (-item[1], item[0])):
        index = loads.index(min(loads))
        owner[partition] = index
        loads[index] += load
    return {spec.group_id: owner[partition_for(spec.group_id)] for spec in groups}


def _owned_partitions(coordinator_of: dict[str, int]) -> list[frozenset[int]]:
    """The 50 coordinator partitions shared out: the groups' ones to their coordinator, the
    others round robin."""
    owner = {partition_for(group_id): index for group_id, index in coordinator_of.items()}
    owned: list[set[int]] = [set() for _ in range(COORDINATORS)]
    for partition in range(CoordinatorConfig().offsets_topic_num_partitions):
        owned[owner.get(partition, partition % COORDINATORS)].add(partition)
    return [frozenset(p) for p in owned]


def _quotas(events: int, weights: list[int]) -> list[int]:
    """``events`` shared in proportion to ``weights`` (largest remainders; they add up)."""
    total = sum(weights)
    exact = [events * w / total for w in weights]
    quotas = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (quotas[i] - exact[i], i))
    for i in by_remainder[: events - sum(quotas)]:
        quotas[i] += 1
    return quotas


def _partition_changes(rng: random.Random) -> tuple[tuple[int, str, int], ...]:
    """Topics growing at random times over the span (Kafka only ever adds partitions)."""
    counts = dict(TOPICS)
    topics = sorted({t for spec in GROUPS if not spec.offsets_only for t in spec.topics})
    times = sorted(
        START_MS + rng.randrange(HOUR_MS, SPAN_MS)
        for _ in range(PARTITION_CHANGES_PER_DAY * SPAN_MS // DAY_MS)
    )
    changes = []
    for at_ms in times:
        topic = topics[rng.randrange(len(topics))]
        if counts[topic] < MAX_PARTITIONS:
            counts[topic] = min(MAX_PARTITIONS, counts[topic] + rng.randint(1, 4))
            changes.append((at_ms, topic, counts[topic]))
    return tuple(changes)


def catalogue(events: int) -> tuple[GroupSpec, ...]:
    """The applications of a history of ``events`` events: ``GROUPS``, and for every further
    ``EVENTS_PER_CATALOGUE`` events another copy of them (copy n's groups named ``<group>-n``),
    as a larger cluster runs more applications rather than churning the same ones harder."""
    copies = max(1, math.ceil(events / EVENTS_PER_CATALOGUE))
    return GROUPS + tuple(
        dataclasses.replace(spec, group_id=f"{spec.group_id}-{copy}")
        for copy in range(2, copies + 1)
        for spec in GROUPS
    )


def _config(owned_partitions: frozenset[int]) -> CoordinatorConfig:
    """A coordinator's engine settings (see the module docstring)."""
    return CoordinatorConfig(
        offsets_retention_ms=OFFSETS_RETENTION_MS, owned_partitions=owned_partitions
    )


def coordinator_configs(events: int) -> list[CoordinatorConfig]:
    """The engines' settings in a history of ``events`` events, by coordinator: what an engine
    rebuilt from one of its ``record_logs`` needs (the partitions it owns, above all: a
    record of a group it does not own is skipped at replay)."""
    owned = _owned_partitions(_coordinator_of(catalogue(events)))
    return [_config(partitions) for partitions in owned]


def record_log_path(directory: str | os.PathLike[str], index: int) -> Path:
    """Where ``record_logs`` puts coordinator ``index``'s records."""
    return Path(directory) / f"coordinator-{index}.db"


def _plans(
    groups: Sequence[GroupSpec], events: int, seed: int, record_logs: Path | None = None
) -> list[_Plan]:
    coordinator_of = _coordinator_of(groups)
    owned = _owned_partitions(coordinator_of)
    shares = [[s for s in groups if coordinator_of[s.group_id] == i] for i in range(COORDINATORS)]
    quotas = _quotas(events, [sum(s.weight for s in share) or 1 for share in shares])
    changes = _partition_changes(random.Random(f"rebalance-lab/{seed}/topics"))
    return [
        _Plan(
            index=i,
            seed=seed,
            groups=tuple(shares[i]),
            owned_partitions=owned[i],
            quota=quotas[i],
            partition_changes=changes,
            record_log=None if record_logs is None else str(record_log_path(record_logs, i)),
        )
        for i in range(COORDINATORS)
    ]


# ---------------------------------------------------------------- running the coordinators


class _InProcess:
    """A coordinator run in this process, one batch at a time."""

    def __init__(self, plan: _Plan) -> None:
        self.run = _CoordinatorRun(plan)
        self.batches = self.run.batches()
        self.summary: CoordinatorSummary | None = None

    def next(self) -> pa.Table | None:
        table = next(self.batches, None)
        if table is None:
            self.summary = self.run.summary()
        return table

    def stop(self) -> None:
        pass


def _run_coordinator(plan: _Plan, channel: Any) -> None:
    """A coordinator's process: its batches, then its summary, through ``channel``."""
    try:
        with _rare_collections():
            run = _CoordinatorRun(plan)
            for table in run.batches():
                channel.put(("rows", table))
            channel.put(("done", run.summary()))
    except BaseException:
        channel.put(("error", traceback.format_exc()))


class _InSubprocess:
    """A coordinator run in a process of its own; at most four batches wait for the merge
    (slack for one coordinator to run ahead of the other in virtual time)."""

    def __init__(self, plan: _Plan) -> None:
        context = multiprocessing.get_context("spawn")
        self.channel = context.Queue(maxsize=4)
        self.process = context.Process(
            target=_run_coordinator,
            args=(plan, self.channel),
            name=f"generate-history-coordinator-{plan.index}",
            daemon=True,
        )
        self.process.start()
        self.summary: CoordinatorSummary | None = None

    def next(self) -> pa.Table | None:
        while True:
            try:
                kind, payload = self.channel.get(timeout=1.0)
            except queue.Empty:
                if not self.process.is_alive():
                    raise RuntimeError(
                        f"{self.process.name} ended with exit code {self.process.exitcode}"
                    ) from None
                continue
            if kind == "rows":
                return payload
            if kind == "done":
                self.summary = payload
                self.process.join()
                return None
            raise RuntimeError(f"{self.process.name} failed:\n{payload}")

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


class _Merger:
    """Merges the coordinators' tables into one history in time order and numbers it.

    Each coordinator's rows come in time order, so every row earlier than the last time seen
    from each coordinator still running can be released: the release is sorted by
    (at_ms, coordinator, the coordinator's own order) and given ``seq`` and ``prev_seq``."""

    def __init__(self, count: int) -> None:
        self.pending: list[list[pa.Table]] = [[] for _ in range(count)]
        self.last_at: list[int | None] = [None] * count
        self.done = [False] * count
        self.next_seq = 1
        self.last_seq_of_group: dict[str, int] = {}

    def laggard(self) -> int | None:
        """The running coordinator to read from next: the one furthest behind."""
        running = [i for i, done in enumerate(self.done) if not done]
        if not running:
            return None
        return min(running, key=lambda i: (self.last_at[i] is not None, self.last_at[i] or 0, i))

    def add(self, index: int, table: pa.Table | None) -> None:
        if table is None:
            self.done[index] = True
        elif table.num_rows:
            self.pending[index].append(table)
            self.last_at[index] = table.column("at_ms")[-1].as_py()

    def release(self) -> pa.Table | None:
        """The rows no coordinator can precede any more, numbered; None if there are none."""
        running = [self.last_at[i] for i, done in enumerate(self.done) if not done]
        if any(at is None for at in running):
            return None
        watermark = min(running) if running else None  # type: ignore[type-var]
        parts = []
        for index, tables in enumerate(self.pending):
            if not tables:
                continue
            table = pa.concat_tables(tables)
            cut = table.num_rows
            if watermark is not None:
                cut = pc.sum(pc.less(table.column("at_ms"), watermark)).as_py() or 0
            self.pending[index] = [table.slice(cut)] if cut < table.num_rows else []
            if cut:
                released = table.slice(0, cut)
                parts.append(
                    released.append_column("coordinator", pa.array([index] * cut, pa.int32()))
                )
        if not parts:
            return None
        merged = pa.concat_tables(parts)
        order = pc.sort_indices(
            merged,
            sort_keys=[("at_ms", "ascending"), ("coordinator", "ascending"), ("seq", "ascending")],
        )
        merged = merged.take(order).drop_columns(["coordinator"])
        return self.number(merged)

    def number(self, table: pa.Table) -> pa.Table:
        first = self.next_seq
        count = table.num_rows
        self.next_seq += count
        last_seq_of_group = self.last_seq_of_group
        previous = []
        for seq, group_id in enumerate(table.column("group_id").to_pylist(), start=first):
            previous.append(last_seq_of_group.get(group_id, 0))
            last_seq_of_group[group_id] = seq
        schema = table.schema
        table = table.set_column(
            schema.get_field_index("seq"),
            schema.field("seq"),
            pa.array(range(first, first + count), pa.int64()),
        )
        return table.set_column(
            schema.get_field_index("prev_seq"),
            schema.field("prev_seq"),
            pa.array(previous, pa.int64()),
        )


def _default_jobs(events: int) -> int:
    if events < PARALLEL_FROM_EVENTS:
        return 1
    return max(1, min(COORDINATORS, os.cpu_count() or 1))


def generate_history(
    out_dir: str | os.PathLike[str],
    events: int,
    *,
    seed: int = 0,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    record_logs: str | os.PathLike[str] | None = None,
) -> GeneratedHistory:
    """Generate a history of at least ``events`` events into ``out_dir`` (new or empty).

    ``jobs``: processes to run the coordinators in (1 or 2; default 2 from
    ``PARALLEL_FROM_EVENTS`` events on a machine with 2 cores or more); the output is the same
    either way. ``progress(events written so far, at_ms of the last one)`` is called after every
    write. ``record_logs``: a directory (created if need be) where each coordinator's full
    record stream also goes, as the ``SqliteLog`` ``coordinator-<n>.db`` (``record_log_path``)
    that a runtime would have after running the history, uncompacted; an engine built over
    one with ``coordinator_configs(events)[n]`` replays it. The history is the same with or
    without. Raises ValueError for bad arguments, HistoryDirError when ``out_dir`` cannot
    take the history or ``record_logs`` the logs (a directory that already holds one)."""
    if type(events) is not int or events < 1:
        raise ValueError(f"events must be an int >= 1, got {events!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be an int, got {seed!r}")
    if jobs is None:
        jobs = _default_jobs(events)
    if type(jobs) is not int or not 1 <= jobs <= COORDINATORS:
        raise ValueError(f"jobs must be an int from 1 to {COORDINATORS}, got {jobs!r}")
    directory = Path(out_dir)
    logs = None if record_logs is None else Path(record_logs)
    if logs is not None:
        _prepare_record_logs(logs)
    prepare_empty_dir(directory)
    groups = catalogue(events)
    plans = _plans(groups, events, seed, logs)
    sources: list[_InProcess | _InSubprocess] = [
        _InSubprocess(plan) if jobs > 1 else _InProcess(plan) for plan in plans
    ]
    try:
        with _rare_collections():
            written = _write_merged(sources, directory, progress)
    except OSError as exc:
        raise HistoryDirError(
            f"cannot write {exc.filename or directory}: {exc.strerror or exc}"
        ) from exc
    finally:
        for source in sources:
            source.stop()
    summaries = [source.summary for source in sources]
    assert all(s is not None for s in summaries)
    by_group = {g.group_id: g for s in summaries if s is not None for g in s.groups}
    history = GeneratedHistory(
        events=written.events,
        files=written.files,
        last_seq=written.events,
        requested=events,
        seed=seed,
        coordinators=COORDINATORS,
        days=tuple(written.days),
        first_at_ms=written.first_at_ms,
        last_at_ms=written.last_at_ms,
        cleanups=sum(s.cleanups for s in summaries if s is not None),
        offsets_expired=sum(s.offsets_expired for s in summaries if s is not None),
        groups_expired=sum(s.groups_expired for s in summaries if s is not None),
        groups=tuple(by_group[spec.group_id] for spec in groups),
    )
    write_json_atomically(directory / GENERATED_NAME, history.to_json())
    return history


def _prepare_record_logs(directory: Path) -> None:
    """A directory for the record logs, holding none yet (a log is never appended to twice)."""
    _check_dir(directory)
    for index in range(COORDINATORS):
        path = record_log_path(directory, index)
        if path.exists():
            raise HistoryDirError(f"{path} exists: give a directory without record logs")


@dataclass
class _Written:
    events: int = 0
    files: int = 0
    days: list[str] = field(default_factory=list)
    first_at_ms: int = 0
    last_at_ms: int = 0


def _write_merged(
    sources: Sequence[_InProcess | _InSubprocess],
    directory: Path,
    progress: Callable[[int, int], None] | None,
) -> _Written:
    merger = _Merger(len(sources))
    written = _Written()
    ready: list[pa.Table] = []
    waiting = 0

    def write() -> None:
        nonlocal waiting
        table = pa.concat_tables(ready)
        ready.clear()
        waiting = 0
        files = write_day_files(table, directory)
        at_ms = table.column("at_ms")
        if written.events == 0:
            written.first_at_ms = at_ms[0].as_py()
        written.last_at_ms = at_ms[-1].as_py()
        written.events += table.num_rows
        written.files += len(files)
        for path in files:
            day = path.parent.name.partition("=")[2]
            if day not in written.days:
                written.days.append(day)
        if progress is not None:
            progress(written.events, written.last_at_ms)

    while (index := merger.laggard()) is not None:
        merger.add(index, sources[index].next())
        released = merger.release()
        if released is not None:
            ready.append(released)
            waiting += released.num_rows
            if waiting >= WRITE_ROWS:
                write()
    if ready:
        write()
    return written
