"""Handoff groups in the rebalance report, measured as the classic groups are.

Theory of operation
===================

A handoff group (docs/engine.md, "Handoff groups") does not rebalance by Kafka's protocol: the
coordinator plans the assignment and moves each partition by a confirmed close on its old owner,
then a grant to its new one. Its events are ``StateChanged`` between the handoff
states (Initial, Starting, Stable, Closing; Dead at deletion), ``HandoffPlanMade`` (the epoch in
``generation_id``, every target in ``assignment``), ``HandoffPartitionsClosing`` / ``Closed`` /
``Granted`` / ``Started`` (``member_id`` and ``partitions``), ``HandoffMemberJoined`` and
``MemberRemoved``. This module turns them into rows of the report's own tables, so that the
ways to rebalance (eager, cooperative, handoff and, in ``spark_tasks.consumer``, Kafka 4's
consumer protocol) are compared on the same figures:

- **A handoff rebalance** starts when the group leaves Stable or Initial for Closing or
  Starting (its id is that ``StateChanged``'s ``seq``) and ends at its first move to Stable
  (completed) or Dead; ``join_ms`` is its time in Closing (the old owners close: Kafka's
  revocation), ``sync_ms`` its time in Starting (the grants are confirmed); ``restarts``
  counts Starting → Closing (a new plan before the last one was started); ``generations``
  the plans it made (``generation_id`` the last epoch). ``rebalance_protocol`` and
  ``protocol_name`` are ``handoff``.
- **Which rebalance an event belongs to.** One engine call emits its events together, the
  ``StateChanged`` last (membership, plan, closes, grants, then the state). An event belongs to
  the rebalance that a start in its own call opens, else to the rebalance open when it
  happened (started and not ended before it), else to none.
- **Cause**: the start's own ``cause`` and ``cause_member_id``, as the engine says them, under
  the report's names as for classic groups (``rebalance_report.report_cause``: a topic's
  partition count changed, or a switch came back on, is a ``metadata_change``).
- **Partitions**: its before assignment is the last plan before its start, its after
  assignment its last plan (known when it completed); moved, kept and stickiness compare
  their owners as for classic groups (``partition_moves``). ``members_before`` /
  ``members_after`` count the members those plans give partitions to.
- **Unavailability**: a partition is *revoked* when its owner is asked to close it
  (``HandoffPartitionsClosing``) or when its owner is removed holding it (granted and not
  closed: a crashed member's partitions are released, as the seed counts them closed); it is
  unavailable until the next ``HandoffPartitionsGranted`` of it in the group (``assigned``), or
  until the rebalance ends without granting it (``group_emptied``: nobody subscribes to it any
  more), or it stays open at the end of the history. Several revocations before one grant (a
  close, then its owner crashed) are one interval, from the first.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .events import (
    before,
    in_group,
    is_type,
    last_where,
    member_partitions,
    planned_assignments,
    report_cause,
    so_far,
    unavailable_intervals,
    with_member_counts,
)

__all__ = [
    "HANDOFF_PROTOCOL",
    "handoff_events",
    "handoff_holdings",
    "handoff_partition_changes",
    "handoff_rebalances",
    "handoff_unavailability",
]

HANDOFF_PROTOCOL = "handoff"

INITIAL, STARTING, STABLE, CLOSING, DEAD = "Initial", "Starting", "Stable", "Closing", "Dead"

_HANDOFF_TYPES = (
    "HandoffMemberJoined",
    "HandoffPlanMade",
    "HandoffPartitionsClosing",
    "HandoffPartitionsClosed",
    "HandoffPartitionsGranted",
    "HandoffPartitionsStarted",
)
_TYPES = (*_HANDOFF_TYPES, "StateChanged", "MemberRemoved")


def _is_start() -> Column:
    return (
        is_type("StateChanged")
        & F.col("from_state").isin(STABLE, INITIAL)
        & F.col("to_state").isin(CLOSING, STARTING)
    )


def _is_end() -> Column:
    return is_type("StateChanged") & F.col("to_state").isin(STABLE, DEAD)


def handoff_events(history: DataFrame) -> DataFrame:
    """The events of handoff groups this module reads (a group is a handoff group when the
    history holds a handoff event of it), each with ``rebalance_id`` (see the module
    docstring; null outside a rebalance)."""
    groups = history.where(F.col("type").isin(*_HANDOFF_TYPES)).select("group_id").distinct()
    events = history.where(F.col("type").isin(*_TYPES)).join(
        F.broadcast(groups), "group_id", "left_semi"
    )
    events = events.select(
        "group_id",
        "seq",
        "at_ms",
        "type",
        "from_state",
        "to_state",
        "reason",
        "cause",
        "cause_member_id",
        "member_id",
        "generation_id",
        "assignment",
        "partitions",
    )
    in_call = (
        Window.partitionBy("group_id", "at_ms")
        .orderBy("seq")
        .rowsBetween(Window.currentRow, Window.unboundedFollowing)
    )
    start = F.when(_is_start(), F.col("seq"))
    last_start = F.last(start, ignorenulls=True).over(so_far())
    last_end = last_where(_is_end(), F.col("seq"), before())
    open_start = F.when(last_start > F.coalesce(last_end, F.lit(-1)), last_start)
    return events.withColumn(
        "rebalance_id", F.coalesce(F.first(start, ignorenulls=True).over(in_call), open_start)
    )


def _plans(events: DataFrame) -> DataFrame:
    """Every plan's (group_id, seq, member_id, topic, partition) rows."""
    return planned_assignments(events, is_type("HandoffPlanMade"))


def _plan_before(rebalances: DataFrame, events: DataFrame) -> DataFrame:
    """(group_id, rebalance_id, before_seq): the last plan before each rebalance, that is
    before the engine call that started it (whose own plan comes first in that call)."""
    first_seqs = (
        events.where(F.col("rebalance_id").isNotNull())
        .groupBy("group_id", "rebalance_id")
        .agg(F.min("seq").alias("seq"))
        .join(rebalances.select("group_id", "rebalance_id"), ["group_id", "rebalance_id"])
    )
    plans = events.where(is_type("HandoffPlanMade")).select(
        "group_id", "seq", F.lit(None).cast("long").alias("rebalance_id")
    )
    before = Window.partitionBy("group_id").orderBy("seq", F.col("rebalance_id").asc_nulls_last())
    return (
        first_seqs.unionByName(plans)
        .withColumn(
            "before_seq",
            F.last(F.when(F.col("rebalance_id").isNull(), F.col("seq")), True).over(
                before.rowsBetween(Window.unboundedPreceding, -1)
            ),
        )
        .where(F.col("rebalance_id").isNotNull())
        .select("group_id", "rebalance_id", "before_seq")
    )


def handoff_rebalances(events: DataFrame) -> DataFrame:
    """One row per handoff rebalance (``handoff_events`` in), with the rebalance table's
    columns up to ``members_after`` and, to find its partitions, ``before_seq`` /
    ``after_seq`` (the plans that bound it)."""
    inside = events.where(F.col("rebalance_id").isNotNull())
    states = events.where(is_type("StateChanged")).select(
        "group_id",
        "seq",
        "to_state",
        (F.lead("at_ms").over(in_group()) - F.col("at_ms")).alias("_lasted_ms"),
    )
    cause = report_cause(F.col("cause"))
    with_states = inside.join(states, ["group_id", "seq", "to_state"], "left")
    grouped = with_states.groupBy("group_id", "rebalance_id").agg(
        F.first(
            F.when(
                _is_start(),
                F.struct("at_ms", "from_state", "reason", cause.alias("cause"), "cause_member_id"),
            ),
            ignorenulls=True,
        ).alias("start"),
        F.min(F.when(_is_end(), F.struct("seq", "at_ms", "to_state"))).alias("end"),
        F.sum(F.when(F.col("to_state") == CLOSING, F.col("_lasted_ms"))).alias("join_ms"),
        F.sum(F.when(F.col("to_state") == STARTING, F.col("_lasted_ms"))).alias("sync_ms"),
        F.sum(
            ((F.col("from_state") == STARTING) & (F.col("to_state") == CLOSING)).cast("int")
        ).alias("restarts"),
        F.sum(is_type("HandoffPlanMade").cast("int")).alias("generations"),
        F.max(F.when(is_type("HandoffPlanMade"), F.col("generation_id"))).alias("generation_id"),
        F.max(F.when(is_type("HandoffPlanMade"), F.col("seq"))).alias("_last_plan"),
    )
    completed = F.coalesce(F.col("end.to_state") == STABLE, F.lit(False))
    rebalances = grouped.where(F.col("start").isNotNull()).select(
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
        F.coalesce("join_ms", F.lit(0)).cast("long").alias("join_ms"),
        F.coalesce("sync_ms", F.lit(0)).cast("long").alias("sync_ms"),
        F.col("restarts").cast("int").alias("restarts"),
        F.col("generations").cast("int").alias("generations"),
        F.col("generation_id").cast("int").alias("generation_id"),
        F.lit(HANDOFF_PROTOCOL).alias("protocol_name"),
        F.lit(HANDOFF_PROTOCOL).alias("rebalance_protocol"),
        F.when(completed, F.col("_last_plan")).alias("after_seq"),
        F.col("end.seq").alias("end_seq"),
    )
    return (
        rebalances.join(_plan_before(rebalances, events), ["group_id", "rebalance_id"], "left")
        .transform(with_member_counts, _plans(events))
        .withColumns(
            {
                "members_before": F.coalesce("members_before", F.lit(0)),
                "members_after": F.when(F.col("completed"), F.coalesce("members_after", F.lit(0))),
            }
        )
    )


def handoff_partition_changes(rebalances: DataFrame, events: DataFrame) -> DataFrame:
    """Per completed handoff rebalance, each partition's owner in the plan before and after,
    with ``moved`` and ``kept`` (the columns of ``rebalance_report.partition_changes``)."""
    plans = _plans(events)
    bounds = rebalances.where("completed").select(
        "group_id", "rebalance_id", "before_seq", "after_seq"
    )
    before = plans.select(
        "group_id",
        F.col("seq").alias("before_seq"),
        "topic",
        "partition",
        F.col("member_id").alias("member_before"),
    )
    after = plans.select(
        "group_id",
        F.col("seq").alias("after_seq"),
        "topic",
        "partition",
        F.col("member_id").alias("member_after"),
    )
    owned_before = bounds.join(before, ["group_id", "before_seq"])
    owned_after = bounds.join(after, ["group_id", "after_seq"])
    keys = ["group_id", "rebalance_id", "topic", "partition"]
    same = F.col("member_before").eqNullSafe(F.col("member_after"))
    return (
        owned_before.select(*keys, "member_before")
        .join(owned_after.select(*keys, "member_after"), keys, "full_outer")
        .select(
            *keys,
            "member_before",
            "member_after",
            (~same).alias("moved"),
            (same & F.col("member_before").isNotNull()).alias("kept"),
        )
    )


def handoff_holdings(events: DataFrame) -> DataFrame:
    """The partitions each member held when it was removed: granted to it and not closed by it
    since (``group_id``, ``member_id``, ``topic``, ``partition``, ``granted_ms``, and the
    removal's ``seq``, ``at_ms``, ``rebalance_id``, ``reason``)."""
    moves = (
        member_partitions(events, "HandoffPartitionsGranted")
        .withColumn("_granted", F.lit(True))
        .unionByName(
            member_partitions(events, "HandoffPartitionsClosed").withColumn(
                "_granted", F.lit(False)
            )
        )
    )
    last = moves.groupBy("group_id", "member_id", "topic", "partition").agg(
        F.max(F.struct("seq", "_granted", "at_ms")).alias("_last")
    )
    removals = events.where(is_type("MemberRemoved")).select(
        "group_id", "member_id", "seq", "at_ms", "rebalance_id", "reason"
    )
    return (
        last.where(F.col("_last._granted"))
        .join(removals, ["group_id", "member_id"])
        .where(F.col("_last.seq") < F.col("seq"))
        .select(
            "group_id",
            "member_id",
            "topic",
            "partition",
            F.col("_last.at_ms").alias("granted_ms"),
            "seq",
            "at_ms",
            "rebalance_id",
            "reason",
        )
    )


def handoff_unavailability(
    rebalances: DataFrame, events: DataFrame, holdings: DataFrame
) -> DataFrame:
    """Each revoked partition's unavailable interval (module docstring), with the columns of
    ``rebalance_report.partition_unavailability``."""
    tp = ["group_id", "topic", "partition"]
    columns = ["group_id", "seq", "at_ms", "member_id", "rebalance_id", "topic", "partition"]
    revoked = (
        member_partitions(events, "HandoffPartitionsClosing")
        .unionByName(holdings.select(*columns))
        .withColumn("_grant", F.lit(False))
    )
    granted = member_partitions(events, "HandoffPartitionsGranted").withColumn(
        "_grant", F.lit(True)
    )
    later = (
        Window.partitionBy(*tp)
        .orderBy(F.col("seq").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    timeline = revoked.unionByName(granted).withColumn(
        "_next_grant",
        F.last(F.when(F.col("_grant"), F.struct("seq", "at_ms", "member_id")), True).over(later),
    )
    revocations = (
        timeline.where(~F.col("_grant") & F.col("rebalance_id").isNotNull())
        .groupBy(*tp, F.col("_next_grant.seq").alias("_grant_seq"))
        .agg(
            F.min(F.struct("seq", "at_ms", "member_id", "rebalance_id")).alias("_first"),
            F.first("_next_grant").alias("_next"),
        )
        .withColumn("rebalance_id", F.col("_first.rebalance_id"))
    )
    return unavailable_intervals(revocations, rebalances)
