"""What the report's modules read of the history's events alike: an event's type, one group's
events in ``seq`` order (the window every per-event column is computed over), the rows of the
assignments, and the rebalance cause a member's removal stands for."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from coordinator_engine.events import RemovalReason

__all__ = [
    "REMOVAL_CAUSES",
    "assignments_of",
    "before",
    "in_group",
    "is_type",
    "last_where",
    "so_far",
]

#: A ``MemberRemoved`` reason → the cause of the rebalance it starts.
REMOVAL_CAUSES = {
    RemovalReason.LEFT.value: "member_left",
    RemovalReason.SESSION_TIMEOUT.value: "session_timeout",
    RemovalReason.JOIN_TIMEOUT.value: "poll_timeout",
    RemovalReason.REBALANCE_TIMEOUT.value: "poll_timeout",
    RemovalReason.SYNC_TIMEOUT.value: "poll_timeout",
    RemovalReason.REMOVED_BY_ADMIN.value: "admin_action",
    RemovalReason.FENCED.value: "static_member_replaced",
}


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
