"""Hand-written histories: engine events (``coordinator_engine.events``) sequenced the way the
runtime sequences them (``seq`` across groups, ``prev_seq`` within one), as a Spark DataFrame or
as a Parquet dataset partitioned by day (``spark_tasks.schema.table_of``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from coordinator_engine.events import (
    AssignmentStored,
    GenerationStarted,
    GroupEvent,
    MemberJoined,
    MemberRemoved,
    OffsetsCommitted,
    StateChanged,
    StaticMemberReplaced,
)
from spark_tasks.history import HISTORY_STRUCT
from spark_tasks.schema import PARTITION_COLUMN, day_of, table_of

#: 2026-11-24T00:00:00Z: every scenario's clock starts here.
T0 = 1_795_478_400_000

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
)


class History:
    """Events in the order they happened; ``add`` gives each its ``seq`` and ``prev_seq``."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._last_seq: dict[str, int] = {}

    def add(self, *events: GroupEvent) -> int:
        """Append events; the last one's seq."""
        for event in events:
            seq = len(self.rows) + 1
            row = event.to_json()
            row["seq"] = seq
            row["prev_seq"] = self._last_seq.get(event.group_id, 0)
            self._last_seq[event.group_id] = seq
            self.rows.append(row)
        return len(self.rows)

    def table(self) -> pa.Table:
        table = table_of(self.rows)
        days = [day_of(at_ms) for at_ms in table.column("at_ms").to_pylist()]
        return table.append_column(PARTITION_COLUMN, pa.array(days, pa.string()))

    def frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(self.table(), schema=HISTORY_STRUCT)

    def write(self, directory: Path) -> Path:
        pq.write_to_dataset(self.table(), directory, partition_cols=[PARTITION_COLUMN])
        return directory


# -- the engine's events, in the words of its scenarios --------------------------------------


def state(
    group: str,
    at: int,
    from_state: str,
    to_state: str,
    reason: str = "",
    *,
    cause: str | None = None,
    cause_member_id: str | None = None,
) -> StateChanged:
    """A state change; a start's ``cause`` and ``cause_member_id`` as the engine says them
    (none unless given: the report then counts the rebalance as ``other``)."""
    return StateChanged(
        group_id=group,
        at_ms=T0 + at,
        from_state=from_state,
        to_state=to_state,
        reason=reason,
        cause=cause,
        cause_member_id=cause_member_id,
    )


def said(cause: str, member: str | None) -> dict[str, str | None]:
    """A start's cause and member as the engine says them (``state(..., **said(...))``)."""
    return {"cause": cause, "cause_member_id": member}


def joined(
    group: str,
    at: int,
    member: str,
    *,
    rejoined: bool = False,
    instance: str | None = None,
    protocols: Sequence[str] = ("range",),
) -> MemberJoined:
    return MemberJoined(
        group_id=group,
        at_ms=T0 + at,
        member_id=member,
        group_instance_id=instance,
        client_id=member.split("-")[0],
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocols=list(protocols),
        rejoined=rejoined,
        reason=None,
    )


def removed(
    group: str, at: int, member: str, reason: str, *, instance: str | None = None
) -> MemberRemoved:
    return MemberRemoved(
        group_id=group,
        at_ms=T0 + at,
        member_id=member,
        group_instance_id=instance,
        reason=reason,
        detail=None,
    )


def replaced(group: str, at: int, instance: str, old: str, new: str) -> StaticMemberReplaced:
    return StaticMemberReplaced(
        group_id=group,
        at_ms=T0 + at,
        group_instance_id=instance,
        old_member_id=old,
        new_member_id=new,
    )


def generation(
    group: str,
    at: int,
    generation_id: int,
    members: Sequence[str],
    *,
    protocol: str | None = "range",
    join_started: int,
) -> GenerationStarted:
    return GenerationStarted(
        group_id=group,
        at_ms=T0 + at,
        generation_id=generation_id,
        protocol_type="consumer",
        protocol_name=protocol if members else None,
        leader_id=members[0] if members else None,
        member_ids=list(members),
        join_started_ms=T0 + join_started,
    )


def stored(
    group: str, at: int, generation_id: int, partitions: dict[str, Sequence[tuple[str, int]]]
) -> AssignmentStored:
    return AssignmentStored(
        group_id=group,
        at_ms=T0 + at,
        generation_id=generation_id,
        assignments={member: "" for member in partitions},
        partitions={member: [[t, p] for t, p in owned] for member, owned in partitions.items()},
    )


def committed(group: str, at: int, member: str, generation_id: int) -> OffsetsCommitted:
    return OffsetsCommitted(
        group_id=group,
        at_ms=T0 + at,
        member_id=member,
        generation_id=generation_id,
        offsets=[["orders", 0, 42]],
    )


def completed_rebalance(
    group: str,
    *,
    start: int,
    joined_at: int,
    synced_at: int,
    generation_id: int,
    partitions: dict[str, Sequence[tuple[str, int]]],
    protocol: str = "range",
) -> list[GroupEvent]:
    """The join and sync phases of a rebalance already started at ``start``: PreparingRebalance
    → CompletingRebalance (a new generation) → Stable (its assignment stored)."""
    members = list(partitions)
    return [
        state(group, joined_at, PREPARING, COMPLETING, "every member rejoined"),
        generation(group, joined_at, generation_id, members, protocol=protocol, join_started=start),
        state(group, synced_at, COMPLETING, STABLE, "the leader's assignment was stored"),
        stored(group, synced_at, generation_id, partitions),
    ]
