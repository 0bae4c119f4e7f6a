"""The rebalance report: per group, each rebalance, why it happened, what it moved, what it cost.

Theory of operation
===================

The input is the engine's event history (``spark_tasks.schema``), ordered within a group by
``seq``. Only six event types matter here: ``StateChanged``, ``GenerationStarted``,
``MemberJoined``, ``MemberRemoved``, ``StaticMemberReplaced`` and ``AssignmentStored``. The
rules below are a classic group's; handoff groups (``spark_tasks.handoff``) and consumer
groups (Kafka 4's protocol, ``spark_tasks.consumer``) have their own, and their rebalances
join the same tables (``report_tables``).

Rebalance boundaries (``coordinator_engine.classic.state``). A rebalance *starts* when the group
moves Stable → PreparingRebalance or Empty → PreparingRebalance; its id is that event's ``seq``. It
may loop CompletingRebalance → PreparingRebalance (a *restart*: same rebalance, one more
generation). It *ends* at its first move to Stable (completed: the leader's assignment was
stored), Empty (the join phase ended with nobody) or Dead (the group was deleted or unloaded);
with no such move yet it is *open* (``end_state`` null). An event belongs to the rebalance whose
start it follows, up to and including the end move and the events the same call emitted right
after it (the ``GenerationStarted`` after → Empty, the ``AssignmentStored`` after → Stable).

Phases. Each state change is timed until the group's next state change; ``join_ms`` sums the
time spent in PreparingRebalance, ``sync_ms`` the time in CompletingRebalance, so for a
completed rebalance ``join_ms + sync_ms == duration_ms == end_ms - start_ms``.

Cause. The engine says why a rebalance started as data: the start's ``cause`` (one of
``coordinator_engine.RebalanceCause``) and ``cause_member_id``, set where it decided to
rebalance (docs/engine.md, "Events"). The report keeps its own names (``CAUSES``, the keys of
``summary.json``'s ``causes``): the engine's ``partitions_changed`` and ``outage_ended`` are
counted as ``metadata_change``, its ``coordinator`` (and a start without a cause) as ``other``
(``REPORT_CAUSES``). Nothing is read from the reason text.

Partitions. A rebalance's *before* assignment is the last ``AssignmentStored`` before its start
(empty when it starts from Empty: nobody owned anything); its *after* assignment is its own
``AssignmentStored`` when completed, empty when it ended Empty or Dead, unknown when open.
Owners are compared by ``group_instance_id`` for static members (KIP-345: a static member that
comes back under a new member id keeps its partitions), by member id otherwise. A partition
*moved* when its owner differs before and after (including appearing or disappearing); *kept*
when the same owner holds it; ``stickiness`` = kept / partitions present before and after.

Unavailability. Eager assignors (every assignor but ``cooperative-sticky``) revoke every owned
partition when the rebalance starts; cooperative-sticky revokes only the partitions whose owner
changes (including those it takes away, to hand out in a follow-up rebalance). A revoked
partition is unavailable from the rebalance's start until the group's next ``AssignmentStored``
that holds it, under any member; if the group becomes Empty or Dead first, the interval ends
there (``ended_by`` ``group_emptied``); still running at the end of the history, it is open
(``unavailable_ms`` null, not summed). The rebalance's protocol is its last generation's
assignor (else the previous generation's).

Storms. A rebalance is *in a storm* when a window of ``storm_window_ms`` (both ends included)
holding it also holds at least ``storm_count`` rebalance starts of the same group; a storm is a
maximal run of such rebalances whose windows chain together.

Percentiles are exact: Spark's ``percentile`` (linear interpolation between the closest ranks,
as numpy's default), not ``percentile_approx``.

How it is computed
==================

Two sorts carry the report; everything else works on rows per rebalance.

1. **The event pass** (``prepared_events``): the used events, without their assignments, are
   shuffled by group and sorted by ``seq`` once; every per-event column is a window function
   over that one order (``last(..., ignorenulls)`` over a growing frame: what the latest start,
   state change, generation or assignment before the event was). What would need to look ahead
   (the next move to Empty or Dead, the end of a generation's sync phase) is found among the few
   rows that matter instead (``with_next_emptied``, ``generations_of``), never by a second pass
   over all events in reverse. ``rebalances_of`` then groups the events of each rebalance.
2. **The partition timeline** (``partition_timeline``): every assignment's (partition, member)
   rows, sorted by partition and ``seq``, each with the same partition's previous and next
   assignment. A rebalance's before and after assignments are consecutive assignments of its
   group, so its moves come from pairs of neighbouring rows (``partition_changes``, one pass:
   a row yields the change it is the after row of, the one it is the before row of, or both)
   and each revoked partition's next holder is the next row (``partition_unavailability``).
   The assignments (most of the history's bytes) are read only here and, for the few that
   a forced removal follows, by duplicate consumption (``classic_holdings``); they are never
   copied onto the events.

The two per-partition tables are the report's biggest (about 17 million rows for ten million
events). The timeline they come from is computed for each of them rather than kept: a copy
of it costs more than the sort. ``run`` writes each as soon as it is known and reads it back
(Parquet, only the columns asked for), and the per-rebalance figures (``with_partition_moves``,
``with_unavailability``) are counted from the written tables; the rebalances table is written
once, then read back for the storms, comparisons and summary, and kept in memory for them (as
is the small duplicate_consumption table), since each reads it again.

Steps that need none of each other's frames run side by side, each submitting its jobs from
its own thread (``spark_tasks.side_by_side``): the three kinds' event passes; the two
per-partition tables with the holdings duplicate consumption starts from; the tables no later
step reads; summary.json's queries. Most of a small report's jobs run over a few thousand
rows, and one after the other they left the cores idle while the driver planned the next.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from coordinator_engine.classic.state import GroupState

from .consumer import (
    consumer_events,
    consumer_generations,
    consumer_holdings,
    consumer_partition_changes,
    consumer_rebalances,
    consumer_unavailability,
)
from .duplicates import classic_holdings, duplicate_windows, forced_removals
from .events import (
    assignments_of,
    before,
    is_type,
    last_where,
    report_cause,
    so_far,
)
from .handoff import (
    handoff_events,
    handoff_holdings,
    handoff_partition_changes,
    handoff_rebalances,
    handoff_unavailability,
)
from .history import check_history, history_groups, read_history
from .output import (
    discard_directory,
    replace_directory,
    staging_directory,
    write_json_atomically,
)
from .side_by_side import SideBySide
from .summary import build_summary, compare_rebalances, seconds
from .tuning import tuning_for

__all__ = [
    "CAUSES",
    "DEFAULT_STORM_COUNT",
    "DEFAULT_STORM_WINDOW_MS",
    "TABLES",
    "assignment_roles",
    "assignments_of",
    "generations_of",
    "member_instances_of",
    "partition_changes",
    "partition_timeline",
    "partition_unavailability",
    "prepared_events",
    "rebalance_events",
    "rebalances_of",
    "report_tables",
    "run",
    "storms_of",
    "with_causes",
    "with_event_context",
    "with_next_emptied",
    "with_partition_moves",
    "with_storms",
    "with_unavailability",
]

DEFAULT_STORM_COUNT = 3
DEFAULT_STORM_WINDOW_MS = 60_000

EMPTY = GroupState.EMPTY.value
PREPARING = GroupState.PREPARING_REBALANCE.value
COMPLETING = GroupState.COMPLETING_REBALANCE.value
STABLE = GroupState.STABLE.value
DEAD = GroupState.DEAD.value

COOPERATIVE_ASSIGNORS = ("cooperative-sticky",)

CAUSES = (
    "member_joined",
    "member_left",
    "session_timeout",
    "poll_timeout",
    "static_member_replaced",
    "admin_action",
    "metadata_change",
    "other",
)

#: Output tables, in the order they are written.
TABLES = (
    "rebalances",
    "generations",
    "partition_moves",
    "partition_unavailability",
    "duplicate_consumption",
    "storms",
    "assignors",
    "protocols",
)

_USED_TYPES = (
    "StateChanged",
    "GenerationStarted",
    "MemberJoined",
    "MemberRemoved",
    "StaticMemberReplaced",
    "AssignmentStored",
)


# -- windows over one group's events ---------------------------------------------------------


# -- events ----------------------------------------------------------------------------------


def _is_start() -> Column:
    """The state change that starts a rebalance."""
    return (
        is_type("StateChanged")
        & (F.col("to_state") == PREPARING)
        & F.col("from_state").isin(STABLE, EMPTY)
    )


def rebalance_events(history: DataFrame) -> DataFrame:
    """The history's events a rebalance is made of, with the columns the report reads. The
    assignments stay behind (``assignments_of`` reads them): carried through the event pass,
    they would be most of its bytes. So do the reasons (every state change and join has one,
    a sentence): only a start's is kept, for the rebalances table; its cause is data."""
    start = _is_start()
    return history.where(F.col("type").isin(*_USED_TYPES)).select(
        "group_id",
        "seq",
        "at_ms",
        "type",
        "from_state",
        "to_state",
        F.when(start, F.col("reason")).alias("reason"),
        F.when(start, F.col("cause")).alias("cause"),
        F.when(start, F.col("cause_member_id")).alias("cause_member_id"),
        "member_id",
        "old_member_id",
        "group_instance_id",
        "generation_id",
        "protocol_name",
        "leader_id",
        "member_ids",
        F.size("member_ids").alias("members"),
        "join_started_ms",
    )


def with_event_context(events: DataFrame) -> DataFrame:
    """What each event knows of the group's events up to it, in one pass over windows that
    share ``_in_group``: ``is_start``; ``rebalance_id``: the seq of the last start at or before
    it, null before the group's first; ``state``,
    ``state_seq`` and ``state_from``: the last state change at or before it; ``prev_change``
    (seq, at_ms, to_state): the last state change before it; ``previous_generation``
    (seq, generation_id, protocol_name, members) and ``previous_assignment_seq`` before it;
    ``in_rebalance``: the event belongs to a rebalance (its start through its end, with the
    events emitted right after the end move: the group's state is still the one the end move
    entered)."""
    changed = is_type("StateChanged")
    start = _is_start()
    generation = F.struct("seq", "generation_id", "protocol_name", "members")
    last_change = last_where(changed, F.struct("seq", "to_state", "from_state"), so_far())
    rebalancing = (PREPARING, COMPLETING)
    in_rebalance = F.col("rebalance_id").isNotNull() & (
        F.col("state").isin(*rebalancing)
        | (F.col("state").isin(STABLE, EMPTY, DEAD) & F.col("state_from").isin(*rebalancing))
    )
    return (
        events.withColumns(
            {
                "is_start": F.coalesce(start, F.lit(False)),
                "rebalance_id": last_where(start, F.col("seq"), so_far()),
                "_last_change": last_change,
                "prev_change": last_where(changed, F.struct("seq", "at_ms", "to_state"), before()),
                "previous_generation": last_where(
                    is_type("GenerationStarted"), generation, before()
                ),
                "previous_assignment_seq": last_where(
                    is_type("AssignmentStored"), F.col("seq"), before()
                ),
            }
        )
        .withColumns(
            {
                "state_seq": F.col("_last_change.seq"),
                "state": F.col("_last_change.to_state"),
                "state_from": F.col("_last_change.from_state"),
            }
        )
        .withColumn("in_rebalance", F.coalesce(in_rebalance, F.lit(False)))
        .drop("_last_change")
    )


def with_causes(events: DataFrame) -> DataFrame:
    """``cause`` on each start under the report's name of the engine's, null elsewhere
    (``rebalance_events`` kept ``cause`` and ``cause_member_id`` on the starts only)."""
    return events.withColumn("cause", F.when(F.col("is_start"), report_cause(F.col("cause"))))


def prepared_events(history: DataFrame) -> DataFrame:
    """The history's rebalance events with every per-event column the tables are built from."""
    return history.transform(rebalance_events).transform(with_event_context).transform(with_causes)


# -- rebalances ------------------------------------------------------------------------------


def _time_in(state: str) -> Column:
    """Time spent in ``state`` during the rebalance: each state change ends the stay in the state
    the previous change entered."""
    left = is_type("StateChanged") & (F.col("prev_change.to_state") == state)
    return F.sum(F.when(left, F.col("at_ms") - F.col("prev_change.at_ms")))


def with_next_emptied(rebalances: DataFrame, events: DataFrame) -> DataFrame:
    """``next_emptied`` (seq, at_ms): the group's first move to Empty or Dead after each
    rebalance's start, null if none. Computed over the starts and those moves only."""
    emptied = events.where(is_type("StateChanged") & F.col("to_state").isin(EMPTY, DEAD)).select(
        "group_id", "seq", "at_ms", F.lit(None).cast("long").alias("rebalance_id")
    )
    starts = rebalances.select(
        "group_id",
        F.col("rebalance_id").alias("seq"),
        F.col("start_ms").alias("at_ms"),
        "rebalance_id",
    )
    # Later rows, nearest last: last(..., ignorenulls) is the next one (a growing frame, linear,
    # where first() over an unbounded following frame would be quadratic).
    later = (
        Window.partitionBy("group_id")
        .orderBy(F.col("seq").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    following = (
        starts.unionByName(emptied)
        .withColumn(
            "next_emptied",
            last_where(F.col("rebalance_id").isNull(), F.struct("seq", "at_ms"), later),
        )
        .where(F.col("rebalance_id").isNotNull())
        .select("group_id", "rebalance_id", "next_emptied")
    )
    return rebalances.join(following, ["group_id", "rebalance_id"], "left")


def rebalances_of(events: DataFrame) -> DataFrame:
    """One row per rebalance (``prepared_events`` in), before partitions and storms. Besides the
    report's columns it says which assignments bound it: ``before_known`` / ``before_seq`` (the
    ``AssignmentStored`` in force at the start; known and empty when it started from Empty) and
    ``after_known`` / ``after_seq`` (its own; known and empty when it ended Empty or Dead)."""
    changed = is_type("StateChanged")
    restarted = changed & (F.col("from_state") == COMPLETING) & (F.col("to_state") == PREPARING)
    terminal = changed & F.col("to_state").isin(STABLE, EMPTY, DEAD)
    generation = F.struct("seq", "generation_id", "protocol_name", "members")
    start = F.struct(
        "at_ms",
        "from_state",
        "reason",
        "cause",
        "cause_member_id",
        "previous_generation",
        "previous_assignment_seq",
    )
    grouped = (
        events.where("in_rebalance")
        .groupBy("group_id", "rebalance_id")
        .agg(
            F.first(F.when(F.col("is_start"), start), ignorenulls=True).alias("start"),
            F.max(F.when(terminal, F.struct("seq", "at_ms", "to_state"))).alias("end"),
            _time_in(PREPARING).alias("join_ms"),
            _time_in(COMPLETING).alias("sync_ms"),
            F.sum(restarted.cast("int")).alias("restarts"),
            F.sum(is_type("GenerationStarted").cast("int")).alias("generations"),
            F.max(F.when(is_type("GenerationStarted"), generation)).alias("last_generation"),
            F.max(F.when(is_type("AssignmentStored"), F.col("seq"))).alias("stored_seq"),
        )
    )
    completed = F.coalesce(F.col("end.to_state") == STABLE, F.lit(False))
    ended_empty = F.coalesce(F.col("end.to_state").isin(EMPTY, DEAD), F.lit(False))
    from_empty = F.col("start.from_state") == EMPTY
    previous = F.col("start.previous_generation")
    protocol = F.coalesce("last_generation.protocol_name", previous["protocol_name"])
    rebalances = grouped.select(
        "group_id",
        "rebalance_id",
        F.col("start.at_ms").alias("start_ms"),
        F.col("start.from_state").alias("from_state"),
        F.col("start.reason").alias("reason"),
        F.col("start.cause").alias("cause"),
        F.col("start.cause_member_id").alias("cause_member_id"),
        F.col("end.at_ms").alias("end_ms"),
        F.col("end.to_state").alias("end_state"),
        completed.alias("completed"),
        F.when(completed, F.col("end.at_ms") - F.col("start.at_ms")).alias("duration_ms"),
        "join_ms",
        "sync_ms",
        F.col("restarts").cast("int").alias("restarts"),
        F.col("generations").cast("int").alias("generations"),
        F.col("last_generation.generation_id").alias("generation_id"),
        protocol.alias("protocol_name"),
        F.when(protocol.isin(*COOPERATIVE_ASSIGNORS), F.lit("cooperative"))
        .when(protocol.isNotNull(), F.lit("eager"))
        .alias("rebalance_protocol"),
        F.when(from_empty, F.lit(0)).otherwise(previous["members"]).alias("members_before"),
        F.when(
            completed | (F.col("end.to_state") == EMPTY), F.col("last_generation.members")
        ).alias("members_after"),
        (from_empty | F.col("start.previous_assignment_seq").isNotNull()).alias("before_known"),
        F.when(~from_empty, F.col("start.previous_assignment_seq")).alias("before_seq"),
        (completed | ended_empty).alias("after_known"),
        F.when(completed, F.col("stored_seq")).alias("after_seq"),
    )
    return rebalances.transform(with_next_emptied, events)


def generations_of(events: DataFrame) -> DataFrame:
    """One row per generation a rebalance went through (``prepared_events`` in): its join phase
    and, when it had members, its sync phase and how that ended (``ended_in``: Stable,
    PreparingRebalance for a restart, Dead; Empty for a generation without members; null open)."""
    # The state change that ends a generation's sync phase: it leaves CompletingRebalance, and
    # the last generation before it started after the group entered CompletingRebalance.
    sync_ends = events.where(
        is_type("StateChanged")
        & (F.col("prev_change.to_state") == COMPLETING)
        & (F.col("previous_generation.seq") > F.col("prev_change.seq"))
    ).select(
        "group_id",
        F.col("previous_generation.seq").alias("seq"),
        F.col("at_ms").alias("sync_ended_ms"),
        F.col("to_state").alias("sync_ended_in"),
    )
    synced = F.col("state") == COMPLETING
    return (
        events.where(F.col("in_rebalance") & is_type("GenerationStarted"))
        .join(sync_ends, ["group_id", "seq"], "left")
        .select(
            "group_id",
            "rebalance_id",
            "generation_id",
            "protocol_name",
            "leader_id",
            "members",
            "member_ids",
            "join_started_ms",
            F.col("at_ms").alias("join_completed_ms"),
            (F.col("at_ms") - F.col("join_started_ms")).alias("join_ms"),
            F.when(synced, F.col("sync_ended_ms") - F.col("at_ms")).alias("sync_ms"),
            F.when(F.col("state") == EMPTY, F.lit(EMPTY))
            .when(synced, F.col("sync_ended_in"))
            .alias("ended_in"),
        )
    )


# -- partitions ------------------------------------------------------------------------------


def member_instances_of(events: DataFrame) -> DataFrame:
    """(group_id, member_id, group_instance_id) of every static member id the history names."""
    joined = events.where(F.col("group_instance_id").isNotNull()).select(
        "group_id", "member_id", "group_instance_id"
    )
    fenced = events.where(is_type("StaticMemberReplaced")).select(
        "group_id", F.col("old_member_id").alias("member_id"), "group_instance_id"
    )
    return (
        joined.unionByName(fenced)
        .where(F.col("member_id").isNotNull())
        .groupBy("group_id", "member_id")
        .agg(F.min("group_instance_id").alias("group_instance_id"))
    )


def assignment_roles(rebalances: DataFrame) -> DataFrame:
    """Per ``AssignmentStored`` (group_id, seq) that bounds a rebalance whose before assignment
    is known: ``after_of`` (rebalance_id, before_seq), the rebalance that stored it, and
    ``before_of`` (rebalance_id, start_ms, rebalance_protocol, after_known, after_seq,
    next_emptied), the rebalance that started while it was in force. Each assignment is the
    after of at most one rebalance and the before of at most one."""
    known = rebalances.where("before_known")
    after_of = known.where(F.col("after_seq").isNotNull()).select(
        "group_id",
        F.col("after_seq").alias("seq"),
        F.struct("rebalance_id", "before_seq").alias("after_of"),
    )
    before_of = known.where(F.col("before_seq").isNotNull()).select(
        "group_id",
        F.col("before_seq").alias("seq"),
        F.struct(
            "rebalance_id",
            "start_ms",
            "rebalance_protocol",
            "after_known",
            "after_seq",
            "next_emptied",
        ).alias("before_of"),
    )
    return after_of.join(before_of, ["group_id", "seq"], "full_outer")


def partition_timeline(
    assignments: DataFrame, roles: DataFrame, member_instances: DataFrame
) -> DataFrame:
    """Each (partition, member) of the assignments that bound a rebalance, with its ``owner``
    (the static member's ``group_instance_id``, else the member id) and the same partition in the
    group's ``previous`` (seq, member_id, owner) and ``next`` (seq, at_ms, member_id, owner)
    assignment that holds it, whichever those are: one sort of the assignments by partition.
    ``assignment_roles`` says which rebalances each row bounds."""
    by_partition = Window.partitionBy("group_id", "topic", "partition").orderBy("seq")
    owned = assignments.join(
        F.broadcast(member_instances), ["group_id", "member_id"], "left"
    ).withColumn("owner", F.coalesce("group_instance_id", "member_id"))
    return (
        owned.withColumns(
            {
                "previous": F.lag(F.struct("seq", "member_id", "owner")).over(by_partition),
                "next": F.lead(F.struct("seq", "at_ms", "member_id", "owner")).over(by_partition),
            }
        )
        .join(F.broadcast(roles), ["group_id", "seq"])
        .select(
            "group_id",
            "topic",
            "partition",
            "seq",
            "member_id",
            "owner",
            "previous",
            "next",
            "after_of",
            "before_of",
        )
    )


def _stays() -> Column:
    """The row's partition is in its before-of rebalance's after assignment too."""
    return F.coalesce(F.col("next.seq") == F.col("before_of.after_seq"), F.lit(False))


def partition_changes(timeline: DataFrame) -> DataFrame:
    """Per rebalance whose before and after assignments are known, each partition's member
    before and after (null: none), with ``moved`` and ``kept`` (owners compared). A partition
    owned after comes from the after assignment's row (its owner before: the previous row, if
    that is the before assignment); one owned before and not after, from the before
    assignment's row. One pass: each timeline row yields the change it is the after row of,
    the one it is the before row of, both or neither."""
    after, before = F.col("after_of"), F.col("before_of")
    from_before = F.col("previous.seq") == after["before_seq"]
    nobody = F.lit(None).cast("string")

    def change(
        rebalance: Column,
        member_before: Column,
        owner_before: Column,
        member_after: Column,
        owner_after: Column,
    ) -> Column:
        return F.struct(
            rebalance.alias("rebalance_id"),
            member_before.alias("member_before"),
            owner_before.alias("owner_before"),
            member_after.alias("member_after"),
            owner_after.alias("owner_after"),
        )

    as_after = F.when(
        after.isNotNull(),
        change(
            after["rebalance_id"],
            F.when(from_before, F.col("previous.member_id")),
            F.when(from_before, F.col("previous.owner")),
            F.col("member_id"),
            F.col("owner"),
        ),
    )
    as_before_only = F.when(
        before.isNotNull() & before["after_known"] & ~_stays(),
        change(before["rebalance_id"], F.col("member_id"), F.col("owner"), nobody, nobody),
    )
    same_owner = F.col("_c.owner_before").eqNullSafe(F.col("_c.owner_after"))
    return timeline.select(
        "group_id",
        "topic",
        "partition",
        F.explode(F.array_compact(F.array(as_after, as_before_only))).alias("_c"),
    ).select(
        "group_id",
        F.col("_c.rebalance_id").alias("rebalance_id"),
        "topic",
        "partition",
        F.col("_c.member_before").alias("member_before"),
        F.col("_c.member_after").alias("member_after"),
        (~same_owner).alias("moved"),
        (same_owner & F.col("_c.owner_before").isNotNull()).alias("kept"),
    )


def with_partition_moves(rebalances: DataFrame, moves: DataFrame) -> DataFrame:
    """``partitions_before``, ``partitions_after``, ``partitions_moved``, ``partitions_kept`` and
    ``stickiness`` on each rebalance whose before and after assignments are known, from its
    rows of the ``partition_moves`` table (a partition has an owner exactly when it has a
    member)."""
    counts = moves.groupBy("group_id", "rebalance_id").agg(
        F.count("member_before").alias("_before"),
        F.count("member_after").alias("_after"),
        F.sum(F.col("moved").cast("int")).alias("_moved"),
        F.sum(F.col("kept").cast("int")).alias("_kept"),
        F.sum(
            (F.col("member_before").isNotNull() & F.col("member_after").isNotNull()).cast("int")
        ).alias("_both"),
    )
    known = F.col("before_known") & F.col("after_known")

    def known_count(column: str) -> Column:
        return F.when(known, F.coalesce(F.col(column), F.lit(0)).cast("int"))

    return (
        rebalances.join(counts, ["group_id", "rebalance_id"], "left")
        .withColumns(
            {
                "partitions_before": known_count("_before"),
                "partitions_after": known_count("_after"),
                "partitions_moved": known_count("_moved"),
                "partitions_kept": known_count("_kept"),
                "stickiness": F.when(known & (F.col("_both") > 0), F.col("_kept") / F.col("_both")),
            }
        )
        .drop("_before", "_after", "_moved", "_kept", "_both")
    )


def partition_unavailability(timeline: DataFrame) -> DataFrame:
    """The partitions each rebalance revokes (eager: every one owned before; cooperative: those
    whose owner changes, known once the rebalance has an after assignment), each with when it
    ended: the group's next ``AssignmentStored`` holding the partition (``ended_by``
    ``assigned``), or the group's next move to Empty/Dead if that came first
    (``group_emptied``), or null (open at the end of the history). The before assignment is the
    last one before the start, so the partition's next row is its first assignment after it."""
    before = F.col("before_of")
    kept = _stays() & (F.col("next.owner") == F.col("owner"))
    cooperative = before["rebalance_protocol"] == "cooperative"
    revoked = ~cooperative | (before["after_known"] & ~kept)
    emptied = before["next_emptied"]
    assigned_first = F.col("next").isNotNull() & (
        emptied.isNull() | (F.col("next.seq") < emptied["seq"])
    )
    ended_ms = F.when(assigned_first, F.col("next.at_ms")).otherwise(emptied["at_ms"])
    return timeline.where(before.isNotNull() & F.coalesce(revoked, F.lit(False))).select(
        "group_id",
        before["rebalance_id"].alias("rebalance_id"),
        before["rebalance_protocol"].alias("rebalance_protocol"),
        "topic",
        "partition",
        F.col("member_id").alias("revoked_from"),
        before["start_ms"].alias("revoked_ms"),
        F.when(assigned_first, F.col("next.member_id")).alias("assigned_to"),
        ended_ms.alias("available_ms"),
        F.when(assigned_first, F.lit("assigned"))
        .when(emptied.isNotNull(), F.lit("group_emptied"))
        .alias("ended_by"),
        (ended_ms - before["start_ms"]).alias("unavailable_ms"),
    )


def with_unavailability(rebalances: DataFrame, unavailability: DataFrame) -> DataFrame:
    """``partitions_revoked`` and ``unavailable_partition_ms`` (closed intervals only) on each
    rebalance whose before assignment is known."""
    sums = unavailability.groupBy("group_id", "rebalance_id").agg(
        F.count("*").alias("_revoked"), F.sum("unavailable_ms").alias("_unavailable_ms")
    )
    known = F.col("before_known")
    return (
        rebalances.join(sums, ["group_id", "rebalance_id"], "left")
        .withColumns(
            {
                "partitions_revoked": F.when(
                    known, F.coalesce(F.col("_revoked"), F.lit(0)).cast("int")
                ),
                "unavailable_partition_ms": F.when(
                    known, F.coalesce(F.col("_unavailable_ms"), F.lit(0)).cast("long")
                ),
            }
        )
        .drop("_revoked", "_unavailable_ms")
    )


# -- storms ----------------------------------------------------------------------------------


def with_storms(rebalances: DataFrame, storm_count: int, storm_window_ms: int) -> DataFrame:
    """``storm_id`` on every rebalance in a storm (the id of the storm's first rebalance), null
    on the others."""
    by_start = Window.partitionBy("group_id").orderBy("start_ms", "rebalance_id")
    starts_so_far = by_start.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ahead = Window.partitionBy("group_id").orderBy("start_ms").rangeBetween(0, storm_window_ms)
    # A window starting at this rebalance with enough starts covers up to its last start.
    reach = F.when(F.count("*").over(ahead) >= storm_count, F.max("start_ms").over(ahead))
    covered_until = F.max("_reach").over(starts_so_far)
    covered_before = F.max("_reach").over(by_start.rowsBetween(Window.unboundedPreceding, -1))
    in_storm = F.coalesce(covered_until >= F.col("start_ms"), F.lit(False))
    # A storm begins where nothing before covers this start.
    begins = in_storm & F.coalesce(covered_before < F.col("start_ms"), F.lit(True))
    storm_id = F.when(
        F.col("_in_storm"), last_where(F.col("_begins"), F.col("rebalance_id"), starts_so_far)
    )
    return (
        rebalances.withColumn("_reach", reach)
        .withColumns({"_in_storm": in_storm, "_begins": begins})
        .withColumn("storm_id", storm_id)
        .drop("_reach", "_in_storm", "_begins")
    )


def storms_of(rebalances: DataFrame) -> DataFrame:
    """One row per storm: its span, its rebalances, their causes (cause → count) and the
    members behind them."""
    stormy = rebalances.where(F.col("storm_id").isNotNull())
    causes = (
        stormy.groupBy("group_id", "storm_id", "cause")
        .agg(F.count("*").alias("count"))
        .groupBy("group_id", "storm_id")
        .agg(
            F.map_from_entries(F.array_sort(F.collect_list(F.struct("cause", "count")))).alias(
                "causes"
            )
        )
    )
    return (
        stormy.groupBy("group_id", "storm_id")
        .agg(
            F.min("start_ms").alias("first_start_ms"),
            F.max("start_ms").alias("last_start_ms"),
            F.count("*").cast("int").alias("rebalances"),
            F.array_sort(F.collect_set("cause_member_id")).alias("member_ids"),
            F.sum("duration_ms").alias("rebalancing_ms"),
            seconds(F.sum("unavailable_partition_ms")).alias("unavailable_partition_s"),
        )
        .join(causes, ["group_id", "storm_id"])
        .select(
            "group_id",
            "storm_id",
            "first_start_ms",
            "last_start_ms",
            (F.col("last_start_ms") - F.col("first_start_ms")).alias("span_ms"),
            "rebalances",
            "causes",
            "member_ids",
            "rebalancing_ms",
            "unavailable_partition_s",
        )
    )


# -- the report ------------------------------------------------------------------------------


_REBALANCE_COLUMNS = (
    "group_id",
    "rebalance_id",
    "start_ms",
    "from_state",
    "reason",
    "cause",
    "cause_member_id",
    "end_ms",
    "end_state",
    "completed",
    "duration_ms",
    "join_ms",
    "sync_ms",
    "restarts",
    "generations",
    "generation_id",
    "protocol_name",
    "rebalance_protocol",
    "members_before",
    "members_after",
    "partitions_before",
    "partitions_after",
    "partitions_moved",
    "partitions_kept",
    "stickiness",
    "partitions_revoked",
    "unavailable_partition_ms",
    "storm_id",
)
#: Tables of at most a few thousand rows, written as one file.
_SMALL_TABLES = ("duplicate_consumption", "storms", "assignors", "protocols")
#: Tables read back by several later steps (storms, comparisons, summary.json) and small (a row
#: per rebalance or window): kept in memory once read, not read and decoded again by each step.
_REUSED_TABLES = ("rebalances", "duplicate_consumption")
#: Whether a rebalance's before and after assignments are known (``rebalances_of``).
_KNOWN = ("before_known", "after_known")


def materialized(step: str, frame: DataFrame) -> DataFrame:
    """``frame`` computed once and cut loose from its lineage (``localCheckpoint``, memory then
    disk). The tables share intermediate frames: left as plans, the last ones would hold the
    event pipeline half a dozen times, and Spark analyses the whole tree again at every step.
    ``step`` names the frame (for progress reports): an intermediate step, or one of ``TABLES``
    when later tables are computed from that table (``run`` then writes it and reads it back)."""
    return frame.localCheckpoint(eager=True)


def _classic_frames(
    history: DataFrame, materialize: Callable[[str, DataFrame], DataFrame]
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The classic groups' events (what the later steps read of them), member instances and
    rebalances."""
    # Kept of the events: what the later steps read (a rebalance's own events, every state
    # change, the static members' ids), without the columns only the event pass needed.
    later = (
        F.col("in_rebalance")
        | is_type("StateChanged")
        | F.col("group_instance_id").isNotNull()
        | is_type("StaticMemberReplaced")
    )
    events = materialize(
        "events",
        history.transform(prepared_events).where(later).drop("state_seq", "state_from"),
    )
    member_instances = materialize("member instances", events.transform(member_instances_of))
    rebalances = materialize("classic rebalances", events.transform(rebalances_of))
    return events, member_instances, rebalances


def _handoff_frames(
    history: DataFrame, materialize: Callable[[str, DataFrame], DataFrame]
) -> tuple[DataFrame, DataFrame]:
    """The handoff groups' events and rebalances."""
    handoff = materialize("handoff events", history.transform(handoff_events))
    return handoff, materialize("handoff rebalances", handoff.transform(handoff_rebalances))


def _consumer_frames(
    history: DataFrame, materialize: Callable[[str, DataFrame], DataFrame]
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """The consumer groups' events, rebalances and holdings."""
    consumer = materialize("consumer events", history.transform(consumer_events))
    consumers = materialize("consumer rebalances", consumer.transform(consumer_rebalances))
    # Read twice (the unavailable intervals, the holdings) and costly to compute (a window
    # over every assignment and revocation of the consumer groups): computed once.
    held = materialize("consumer holdings", consumer_holdings(consumer))
    return consumer, consumers, held


def report_tables(
    history: DataFrame,
    *,
    storm_count: int,
    storm_window_ms: int,
    materialize: Callable[[str, DataFrame], DataFrame] = materialized,
    steps_at_once: int = 1,
) -> dict[str, DataFrame]:
    """Every output table (``TABLES``) of a history DataFrame (``HISTORY_STRUCT``); the frames
    several tables share go through ``materialize(step, frame)``.

    Steps that need none of each other's frames are materialized side by side, up to
    ``steps_at_once`` at a time (``spark_tasks.side_by_side``): the three kinds' event passes,
    then the two per-partition tables and the holdings duplicate consumption starts from.

    The per-partition tables are computed straight from the plan, never kept whole in between:
    at ten million events they hold about 17 million rows, and a copy of the partition timeline
    they come from costs more than computing it twice. The per-rebalance figures are then
    counted from the tables themselves."""
    with SideBySide(
        history.sparkSession, steps_at_once, thread_name_prefix="report-kinds"
    ) as steps:
        classic = steps.submit(_classic_frames, history, materialize)
        handoff_kind = steps.submit(_handoff_frames, history, materialize)
        consumer_kind = steps.submit(_consumer_frames, history, materialize)
    events, member_instances, rebalances = classic.result()
    handoff, handoffs = handoff_kind.result()
    consumer, consumers, held_by_consumer = consumer_kind.result()
    held_by_handoff = handoff_holdings(handoff)

    assignments = assignments_of(history)
    timeline = partition_timeline(assignments, assignment_roles(rebalances), member_instances)
    removals = forced_removals(history)
    removed_at = removals.select("group_id", "seq")
    forced_handoff = held_by_handoff.join(removed_at, ["group_id", "seq"], "left_semi")
    # A consumer-protocol member removed while away at epoch -2 committed as it closed.
    forced_consumer = held_by_consumer.where(~F.col("away")).join(
        removed_at, ["group_id", "seq"], "left_semi"
    )
    held = ["group_id", "member_id", "topic", "partition", "granted_ms", "seq", "at_ms", "reason"]
    with SideBySide(
        history.sparkSession, steps_at_once, thread_name_prefix="report-partitions"
    ) as steps:
        moved = steps.submit(
            materialize,
            "partition_moves",
            timeline.transform(partition_changes)
            .unionByName(handoff_partition_changes(handoffs, handoff))
            .unionByName(consumer_partition_changes(consumers, consumer)),
        )
        unavailable = steps.submit(
            materialize,
            "partition_unavailability",
            timeline.transform(partition_unavailability)
            .unionByName(handoff_unavailability(handoffs, handoff, held_by_handoff))
            .unionByName(consumer_unavailability(consumers, consumer, held_by_consumer)),
        )
        held_when_removed = steps.submit(
            materialize,
            "holdings",
            classic_holdings(history, removals)
            .unionByName(forced_handoff.select(*held))
            .unionByName(forced_consumer.select(*held)),
        )
    partition_moves, unavailability = moved.result(), unavailable.result()
    holdings = held_when_removed.result()

    # Up to members_after: what a rebalance is before its partitions and storms are counted.
    boundaries = (*_REBALANCE_COLUMNS[: _REBALANCE_COLUMNS.index("partitions_before")], *_KNOWN)
    every_kind = (
        rebalances.select(*boundaries)
        .unionByName(
            handoffs.withColumns(
                {"before_known": F.lit(True), "after_known": F.col("completed")}
            ).select(*boundaries)
        )
        .unionByName(consumers.select(*boundaries))
    )
    complete = materialize(
        "rebalances",
        every_kind.transform(with_partition_moves, partition_moves)
        .transform(with_unavailability, unavailability)
        .transform(with_storms, storm_count, storm_window_ms)
        .select(*_REBALANCE_COLUMNS),
    )
    # A group's protocol: its last rebalance's that has one (a last rebalance no generation
    # named a protocol for, ended Empty, does not make the group's unknown).
    group_protocols = (
        complete.where(F.col("rebalance_protocol").isNotNull())
        .groupBy("group_id")
        .agg(F.max_by("rebalance_protocol", "rebalance_id").alias("rebalance_protocol"))
    )
    duplicates = materialize(
        "duplicate_consumption", duplicate_windows(history, holdings, group_protocols)
    )
    return {
        "rebalances": complete,
        "generations": events.transform(generations_of)
        .join(
            complete.select("group_id", "rebalance_id", "rebalance_protocol"),
            ["group_id", "rebalance_id"],
            "left",
        )
        .unionByName(consumer_generations(complete, consumer)),
        "partition_moves": partition_moves,
        "partition_unavailability": unavailability,
        "duplicate_consumption": duplicates,
        "storms": complete.transform(storms_of),
        "assignors": complete.transform(compare_rebalances, "rebalance_protocol", "protocol_name"),
        "protocols": complete.transform(
            compare_rebalances, "rebalance_protocol", duplicates=duplicates
        ),
    }


def run(
    spark: SparkSession,
    input_dir: str | Path,
    output_dir: str | Path,
    *,
    storm_count: int = DEFAULT_STORM_COUNT,
    storm_window_ms: int = DEFAULT_STORM_WINDOW_MS,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Read the history under ``input_dir``, write the report to ``output_dir`` (replacing it
    whole), return the summary. Raises ``HistoryError`` for bad input, before any Spark work."""
    if storm_count < 1 or storm_window_ms < 0:
        raise ValueError("storm_count must be at least 1 and storm_window_ms at least 0")

    def phase(text: str) -> None:
        spark.sparkContext.setJobDescription(f"rebalance_report: {text}")
        if on_phase is not None:
            on_phase(text)

    phase("checking the input")
    files = check_history(input_dir)
    # The groups and the events from the files themselves (no job); the settings sized to
    # that many events (spark_tasks.tuning).
    group_ids, events = history_groups(files)
    tuning = tuning_for(events)
    with tuning.applied(spark):
        return _report(
            spark,
            input_dir,
            output_dir,
            files,
            group_ids,
            events,
            storm_count,
            storm_window_ms,
            tuning.steps_at_once,
            phase,
        )


def _report(
    spark: SparkSession,
    input_dir: str | Path,
    output_dir: str | Path,
    files: list[Path],
    group_ids: list[str],
    events: int,
    storm_count: int,
    storm_window_ms: int,
    steps_at_once: int,
    phase: Callable[[str], None],
) -> dict[str, Any]:
    phase("reading the history")
    history = read_history(spark, input_dir)

    staging = staging_directory(output_dir)
    written: set[str] = set()
    kept: list[DataFrame] = []

    def write(name: str, frame: DataFrame) -> None:
        phase(f"writing {name}")
        if name in _SMALL_TABLES:
            frame = frame.coalesce(1)
        frame.write.parquet(str(staging / name))
        written.add(name)

    def computed(step: str, frame: DataFrame) -> DataFrame:
        if step not in TABLES:
            phase(f"computing {step}")
            return materialized(step, frame)
        # An output table later ones are computed from: written once, then read back.
        write(step, frame)
        table = spark.read.parquet(str(staging / step))
        if step in _REUSED_TABLES:
            table = table.cache()
            kept.append(table)
        return table

    try:
        tables = report_tables(
            history,
            storm_count=storm_count,
            storm_window_ms=storm_window_ms,
            materialize=computed,
            steps_at_once=steps_at_once,
        )
        # The tables no later step reads, side by side.
        with SideBySide(spark, steps_at_once, thread_name_prefix="report-tables") as steps:
            last = [
                steps.submit(write, name, tables[name]) for name in TABLES if name not in written
            ]
        for table_written in last:
            table_written.result()
        phase("writing summary.json")
        summary = build_summary(
            tables,
            group_ids,
            input_path=str(input_dir),
            events=events,
            files=len(files),
            storm_count=storm_count,
            storm_window_ms=storm_window_ms,
            steps_at_once=steps_at_once,
        )
        write_json_atomically(staging / "summary.json", summary)
        replace_directory(staging, output_dir)
    except BaseException:
        discard_directory(staging)
        raise
    finally:
        for table in kept:
            table.unpersist()
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    return summary
