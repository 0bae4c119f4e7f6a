"""What the report's modules read of the history's events alike: an event's type, one group's
events in ``seq`` order (the window every per-event column is computed over), the rows of the
assignments and of the partitions an event names, and the report's name of each rebalance
cause the engine says."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from coordinator_engine.events import RebalanceCause

__all__ = [
    "REPORT_CAUSES",
    "assignments_of",
    "before",
    "in_group",
    "is_type",
    "last_where",
    "member_partitions",
    "report_cause",
    "so_far",
    "unavailable_intervals",
]

#: The engine's rebalance causes (``RebalanceCause`` values) the report names otherwise, so
#: that its causes stay the ones it has always counted; every other cause keeps its name.
REPORT_CAUSES = {
    RebalanceCause.PARTITIONS_CHANGED.value: "metadata_change",
    RebalanceCause.OUTAGE_ENDED.value: "metadata_change",
    RebalanceCause.COORDINATOR.value: "other",
}


def report_cause(cause: Column) -> Column:
    """The report's name of an engine ``RebalanceCause`` value (``other`` for none)."""
    names = F.create_map(*[F.lit(text) for pair in REPORT_CAUSES.items() for text in pair])
    return F.coalesce(names[cause], cause, F.lit("other"))


def is_type(kind: str) -> Column:
    return F.col("type") == kind


def in_group() -> WindowSpec:
    """One group's events in ``seq`` order. Every per-event window shares this partitioning
    and order, so a pass over the events is one shuffle and one sort."""
    return Window.partitionBy("group_id").orderBy("seq")


def so_far() -> WindowSpec:
    """The group's events up to and including this one."""
    return in_group().rowsBetween(Window.unboundedPreceding, Window.currentRow)


def before() -> WindowSpec:
    """The group's events before this one."""
    return in_group().rowsBetween(Window.unboundedPreceding, -1)


def last_where(condition: Column, value: Column, window: WindowSpec) -> Column:
    """``value`` of the last row of ``window`` where ``condition`` holds (null if none)."""
    return F.last(F.when(condition, value), ignorenulls=True).over(window)


def assignments_of(history: DataFrame, *carried: str) -> DataFrame:
    """Every (partition, member) an ``AssignmentStored`` handed out, with the event's seq and
    at_ms, and its ``carried`` columns."""
    return (
        history.where(is_type("AssignmentStored"))
        .select("group_id", "seq", "at_ms", *carried, F.explode("assignment").alias("_owned"))
        .select(
            "group_id",
            "seq",
            "at_ms",
            F.col("_owned.topic").alias("topic"),
            F.col("_owned.partition").alias("partition"),
            F.col("_owned.member_id").alias("member_id"),
            *carried,
        )
    )


def member_partitions(events: DataFrame, kind: str) -> DataFrame:
    """One row per partition of each ``kind`` event (its ``partitions``): group_id, seq,
    at_ms, member_id, rebalance_id, topic, partition."""
    return (
        events.where(is_type(kind))
        .select(
            "group_id",
            "seq",
            "at_ms",
            "member_id",
            "rebalance_id",
            F.explode("partitions").alias("_tp"),
        )
        .select("*", F.col("_tp.topic").alias("topic"), F.col("_tp.partition").alias("partition"))
        .drop("_tp")
    )


def planned_assignments(events: DataFrame, is_plan: Column) -> DataFrame:
    """One row per (member, partition) of each assignment a coordinator planned (the
    ``assignment`` of the events ``is_plan`` picks): group_id, seq, member_id, topic,
    partition."""
    return (
        events.where(is_plan)
        .select("group_id", "seq", F.explode("assignment").alias("_owned"))
        .select(
            "group_id",
            "seq",
            F.col("_owned.member_id").alias("member_id"),
            F.col("_owned.topic").alias("topic"),
            F.col("_owned.partition").alias("partition"),
        )
    )


def with_member_counts(rebalances: DataFrame, plans: DataFrame) -> DataFrame:
    """``members_before`` and ``members_after`` on each rebalance of a kind whose coordinator
    plans the assignment: how many members the plan at ``before_seq`` and the plan at
    ``after_seq`` give partitions to (``plans``: the kind's ``planned_assignments``), null
    where no plan is at that seq."""
    members = plans.groupBy("group_id", "seq").agg(
        F.countDistinct("member_id").cast("int").alias("members")
    )
    return rebalances.join(
        members.select(
            "group_id", F.col("seq").alias("before_seq"), F.col("members").alias("members_before")
        ),
        ["group_id", "before_seq"],
        "left",
    ).join(
        members.select(
            "group_id", F.col("seq").alias("after_seq"), F.col("members").alias("members_after")
        ),
        ["group_id", "after_seq"],
        "left",
    )


def unavailable_intervals(revocations: DataFrame, rebalances: DataFrame) -> DataFrame:
    """The rows of ``partition_unavailability`` from a kind's revocations: one per interval
    (group_id, rebalance_id, topic, partition, ``_first``: the first revocation's seq, at_ms and
    member_id, ``_next``: the next grant or assignment's, null if none). An interval ends at
    that grant when it comes no later than the rebalance's end (``assigned``), else at the
    rebalance's end (``group_emptied``), and stays open while neither came."""
    ends = rebalances.select("group_id", "rebalance_id", "end_seq", "end_ms", "rebalance_protocol")
    first = F.col("_first")
    assigned = F.col("_next").isNotNull() & (
        F.col("end_seq").isNull() | (F.col("_next.seq") <= F.col("end_seq"))
    )
    emptied = ~assigned & F.col("end_ms").isNotNull()
    available_ms = F.when(assigned, F.col("_next.at_ms")).when(emptied, F.col("end_ms"))
    return revocations.join(ends, ["group_id", "rebalance_id"]).select(
        "group_id",
        "rebalance_id",
        "rebalance_protocol",
        "topic",
        "partition",
        first["member_id"].alias("revoked_from"),
        first["at_ms"].alias("revoked_ms"),
        F.when(assigned, F.col("_next.member_id")).alias("assigned_to"),
        available_ms.alias("available_ms"),
        F.when(assigned, F.lit("assigned")).when(emptied, F.lit("group_emptied")).alias("ended_by"),
        (available_ms - first["at_ms"]).alias("unavailable_ms"),
    )
