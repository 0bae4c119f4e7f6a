"""Engine events turned into history rows (``spark_tasks.schema.HISTORY_SCHEMA``) as they are
emitted, a column at a time per event type."""

from __future__ import annotations

import dataclasses
from operator import attrgetter, itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from coordinator_engine.events import (
    CONSUMER_EVENT_TYPES,
    EVENT_TYPES,
    HANDOFF_EVENT_TYPES,
    GroupEvent,
)
from spark_tasks.schema import HISTORY_SCHEMA, NESTED_FIELDS, RENAMED_FIELDS

#: Columns an event does not fill as they are: the nested ones, and those the table numbers.
_DERIVED_COLUMNS = frozenset({"seq", "prev_seq", "type", "assignment", "partitions", "offsets"})
#: Every event type, by its name.
_EVENT_CLASSES = {**EVENT_TYPES, **HANDOFF_EVENT_TYPES, **CONSUMER_EVENT_TYPES}
#: Event types whose nested field becomes a list<struct> column: (field, column), as
#: ``row_of`` makes them (``NESTED_FIELDS``).
_NESTED = {_EVENT_CLASSES[name]: nested for name, nested in NESTED_FIELDS.items()}


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


class RowsOfType:
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
        data: dict[str, Any] = dict(zip(self.columns, zip(*self.rows, strict=True), strict=True))
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


class HistoryRows:
    """Events turned into history rows as they are emitted: the rows ``row_of`` makes of their
    ``to_json()``, gathered a column at a time per event type rather than a dict at a time
    per event (which was most of the cost of a row)."""

    def __init__(self) -> None:
        self.of_type = {cls: RowsOfType(cls) for cls in _EVENT_CLASSES.values()}
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
