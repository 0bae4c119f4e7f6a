"""The rebalance history as Parquet: one row per engine event (``coordinator_engine.events``).

This is the contract between whatever writes the history (``manage.py export_history`` from the
stored events, ``manage.py generate_history`` from the engine driven in virtual time) and the
Spark jobs that read it. It imports pyarrow only, so writers need neither Django nor Spark.
docs/analysis.md documents every column.

A dataset is a directory of Parquet files partitioned by day, Hive style
(``DIR/day=2026-11-24/part-….parquet``); ``day`` is the UTC date of ``at_ms``. Columns an event
type does not have are null. Each event's fields land in typed columns, so a job never parses
JSON. Not carried: ``AssignmentStored.assignments`` (the raw assignment bytes, hex), whose
decoded form is ``assignment``, and what a consumer-protocol member says of itself beyond its
instance id and timeouts (rack, subscription, preferred assignor).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

__all__ = [
    "HISTORY_SCHEMA",
    "NESTED_FIELDS",
    "PARTITION_COLUMN",
    "RENAMED_FIELDS",
    "SCHEMA_VERSION",
    "day_of",
    "row_of",
    "table_of",
]

#: 2: ``cause`` and ``cause_member_id`` (the engine's rebalance causes, as data). 3: the
#: consumer-protocol events (KIP-848) carried whole: ``member_epoch`` and
#: ``previous_member_epoch``, their partitions and target assignments in the nested columns.
#: A history of an older version lacks columns: the report refuses it, naming them; a version 2
#: history's consumer events had lost their partitions (docs/analysis.md).
SCHEMA_VERSION = 3
PARTITION_COLUMN = "day"

_TOPIC_PARTITION = pa.struct([("topic", pa.string()), ("partition", pa.int32())])

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("prev_seq", pa.int64(), nullable=False),
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("at_ms", pa.int64(), nullable=False),
        pa.field("generation_id", pa.int32()),
        pa.field("member_id", pa.string()),
        pa.field("old_member_id", pa.string()),
        pa.field("group_instance_id", pa.string()),
        pa.field("from_state", pa.string()),
        pa.field("to_state", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("cause", pa.string()),
        pa.field("cause_member_id", pa.string()),
        pa.field("detail", pa.string()),
        pa.field("protocol_type", pa.string()),
        pa.field("protocol_name", pa.string()),
        pa.field("leader_id", pa.string()),
        pa.field("member_ids", pa.list_(pa.string())),
        pa.field("join_started_ms", pa.int64()),
        pa.field("rejoined", pa.bool_()),
        pa.field("client_id", pa.string()),
        pa.field("client_host", pa.string()),
        pa.field("session_timeout_ms", pa.int32()),
        pa.field("rebalance_timeout_ms", pa.int32()),
        pa.field("protocols", pa.list_(pa.string())),
        pa.field(
            "assignment",
            pa.list_(
                pa.struct(
                    [
                        ("member_id", pa.string()),
                        ("topic", pa.string()),
                        ("partition", pa.int32()),
                    ]
                )
            ),
        ),
        pa.field("partitions", pa.list_(_TOPIC_PARTITION)),
        pa.field(
            "offsets",
            pa.list_(
                pa.struct(
                    [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())]
                )
            ),
        ),
        pa.field("tombstoned", pa.bool_()),
        pa.field("member_epoch", pa.int32()),
        pa.field("previous_member_epoch", pa.int32()),
    ],
    metadata={"rebalance_lab.history_schema": str(SCHEMA_VERSION)},
)

#: Event fields that land in a column of another name, (field, column), where the event has no
#: field of the column's name: StaticMemberReplaced's new member is the member the event is
#: about; a handoff plan's epoch, and a consumer group's epoch (bumped, or of a target
#: assignment), is its generation; a consumer-protocol member's ``instance_id`` is its
#: ``group_instance_id`` (KIP-345 either way); a target assignment's server-side ``assignor`` is
#: the protocol it was computed with.
RENAMED_FIELDS = (
    ("new_member_id", "member_id"),
    ("epoch", "generation_id"),
    ("instance_id", "group_instance_id"),
    ("assignor", "protocol_name"),
)

#: Event fields that become a list<struct> column, by event type: (field, column). A mapping
#: member id -> [[topic, partition], ...] becomes ``assignment`` rows (member_id, topic,
#: partition), a member without partitions giving none; a list of [topic, partition] or
#: [topic, partition, offset] becomes ``partitions`` or ``offsets`` rows.
NESTED_FIELDS = {
    "AssignmentStored": ("partitions", "assignment"),
    "HandoffPlanMade": ("assignment", "assignment"),
    "ConsumerTargetAssignmentComputed": ("assignment", "assignment"),
    "OffsetsRemoved": ("partitions", "partitions"),
    "HandoffPartitionsClosing": ("partitions", "partitions"),
    "HandoffPartitionsClosed": ("partitions", "partitions"),
    "HandoffPartitionsGranted": ("partitions", "partitions"),
    "HandoffPartitionsStarted": ("partitions", "partitions"),
    "ConsumerPartitionsRevoked": ("partitions", "partitions"),
    "ConsumerPartitionsAssigned": ("partitions", "partitions"),
    "OffsetsCommitted": ("offsets", "offsets"),
}

_COLUMNS = tuple(HISTORY_SCHEMA.names)
_NESTED_COLUMNS = frozenset({"assignment", "partitions", "offsets"})
# Event fields copied as they are (same name, same meaning).
_PLAIN = frozenset(_COLUMNS) - _NESTED_COLUMNS - {"member_id"}


def day_of(at_ms: int) -> str:
    """The partition a timestamp belongs to: its UTC date, ``YYYY-MM-DD``."""
    return datetime.datetime.fromtimestamp(at_ms / 1000, tz=datetime.UTC).date().isoformat()


def row_of(event: Mapping[str, Any]) -> dict[str, Any]:
    """One history row from a sequenced event's JSON (``GroupEvent.to_json()`` plus ``seq`` and
    ``prev_seq``, as the runtime publishes and ``GroupEvent`` rows store it).

    Raises ValueError naming the event when it lacks the envelope fields."""
    missing = [key for key in ("seq", "group_id", "type", "at_ms") if event.get(key) is None]
    if missing:
        raise ValueError(f"event {dict(event)!r} lacks {', '.join(missing)}")
    row: dict[str, Any] = dict.fromkeys(_COLUMNS)
    for key, value in event.items():
        if key in _PLAIN:
            row[key] = value
    row["prev_seq"] = event.get("prev_seq") or 0
    row["member_id"] = event.get("member_id")
    for field, column in RENAMED_FIELDS:
        if field in event and column not in event:
            row[column] = event[field]
    nested = NESTED_FIELDS.get(event["type"])
    if nested is None:
        return row
    field, column = nested
    value = event.get(field)
    if value is None:
        return row
    if column == "assignment":
        row[column] = [
            {"member_id": member, "topic": topic, "partition": partition}
            for member, owned in value.items()
            for topic, partition in owned
        ]
    elif column == "partitions":
        row[column] = [{"topic": topic, "partition": partition} for topic, partition in value]
    else:
        row[column] = [
            {"topic": topic, "partition": partition, "offset": offset}
            for topic, partition, offset in value
        ]
    return row


def table_of(events: Iterable[Mapping[str, Any]]) -> pa.Table:
    """A history table (without the ``day`` column, which the partitioning adds) of events."""
    columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    for event in events:
        for name, value in row_of(event).items():
            columns[name].append(value)
    return pa.Table.from_pydict(columns, schema=HISTORY_SCHEMA)
