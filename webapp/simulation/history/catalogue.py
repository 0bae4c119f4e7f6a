"""The catalogue: the applications a history runs, the topics they read, and when topics grow.

``GROUPS`` is seventeen applications covering every assignor, eager and cooperative groups, static
members, applications that run by day, an offsets-only job, two handoff groups and three
consumer-protocol groups; a larger history runs more copies of them (``catalogue``) rather than
churning the same ones harder. ``partition_changes`` plans the topics' growth over the span.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import random
from dataclasses import dataclass

from coordinator_engine.client import COOPERATIVE_ASSIGNORS

SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS

#: The history's first instant: 2026-03-02 00:00 UTC (a Monday).
START_MS = int(datetime.datetime(2026, 3, 2, tzinfo=datetime.UTC).timestamp()) * SECOND_MS
#: How long the history lasts, whatever its size (the pace adapts).
SPAN_MS = 4 * DAY_MS
#: Events per copy of the catalogue: a larger history runs more applications (``catalogue``).
EVENTS_PER_CATALOGUE = 200_000
#: Topic partition changes per day, over the whole catalogue; a topic grows to at most this.
PARTITION_CHANGES_PER_DAY = 3
MAX_PARTITIONS = 32


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupSpec:
    """One simulated application: its consumer group and how its members are configured.

    group_id: the group.
    assignors: the members' ``partition.assignment.strategy``, in preference order; empty for
        a job without members that commits its group's offsets with generation -1 (as
        manual-assignment consumers and offset tools do). A consumer-protocol group's one
        entry is the coordinator's assignor its members ask for (``group.remote.assignor``).
    topics: the subscribed topics.
    dynamic: the fewest and most dynamic members the churn keeps it between.
    static: how many static members it runs (``group.instance.id`` ``<group>-static-<n>``).
    session_timeout_ms, heartbeat_interval_ms, max_poll_interval_ms: its members' settings
        (the last is the JoinGroup rebalance timeout, KIP-62).
    static_session_timeout_ms: the static members' session timeout (long, so that a restart
        goes unnoticed, KIP-345).
    daily: it runs by day: shut down every evening, started again 10 to 40 hours later.
    first_chore: a daily application's first night's chore, an index into
        ``churn.NIGHTLY_CHORES``; each night takes the next, in turn.
    handoff: its group is a handoff group (docs/engine.md, "Handoff groups"): its
        members speak HandoffHeartbeat, the coordinator plans the assignment and moves each
        partition by a confirmed close, then a start (no assignors, no static members).
    consumer: its group is a consumer-protocol group (KIP-848, docs/engine.md "Consumer
        groups"): its members speak ConsumerGroupHeartbeat and the coordinator's assignor
        (``assignors[0]``: uniform or range) assigns; ``max_poll_interval_ms`` is the
        members' rebalance timeout; the session timeout is the coordinator's (not daily).
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
    first_chore: int = 0
    handoff: bool = False
    consumer: bool = False

    @property
    def offsets_only(self) -> bool:
        """A job without members that only commits offsets."""
        return not self.assignors and not self.handoff

    @property
    def cooperative(self) -> bool:
        """Its members rebalance cooperatively (every assignor they offer supports it)."""
        return (
            bool(self.assignors)
            and not self.consumer
            and all(a in COOPERATIVE_ASSIGNORS for a in self.assignors)
        )

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
        first_chore=0,  # two nights at least: the offsets of one topic, then all
    ),
    GroupSpec(
        group_id="etl-coop",
        assignors=("cooperative-sticky",),
        topics=("inventory", "shipments"),
        dynamic=(1, 2),
        static=2,
        daily=True,
        first_chore=2,  # and here the group deleted, then left be: every chore in four nights
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
    # Kafka 4's consumer protocol on the same two workloads, with the coordinator's range
    # assignor for the eager range one and its uniform assignor for the cooperative-sticky
    # one; and on shipments-coop's, whose static members restart (KIP-848 keeps a static
    # member's assignment while it is away: epoch -2).
    GroupSpec(
        group_id="orders-consumer",
        assignors=("range",),
        topics=("orders",),
        dynamic=(3, 6),
        consumer=True,
    ),
    GroupSpec(
        group_id="inventory-consumer",
        assignors=("uniform",),
        topics=("inventory",),
        dynamic=(3, 6),
        consumer=True,
    ),
    GroupSpec(
        group_id="shipments-consumer",
        assignors=("uniform",),
        topics=("shipments", "orders"),
        dynamic=(1, 2),
        static=3,
        consumer=True,
    ),
)


def partition_changes(rng: random.Random) -> tuple[tuple[int, str, int], ...]:
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
