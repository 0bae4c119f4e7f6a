"""A request frame walked as its kio schema lays it out, sizes only, nothing decoded.

Two things a Kafka broker's generated readers do that kio's do not, both done here by one walk,
compiled once per schema into a tuple of steps (consecutive fixed-size fields merged into one
skip):

* **Arrays checked against the frame** (:func:`check_arrays`), before kio reads a body. kio's
  native reader sizes its buffer for an array by the element count the frame announces. A count
  of two billion in a 300-byte frame asks for hundreds of gigabytes, the allocation fails, and
  Rust aborts the process: one malformed frame would end ``serve`` with everything in it.
  Kafka's readers refuse such a count before allocating anything ("Tried to allocate a
  collection of size N, but there are only M bytes remaining"): every element takes at least one
  byte, so a count larger than the bytes left cannot be a request. They also refuse a null where
  the schema has a non-nullable array ("non-nullable field ... was serialized as null"), where
  kio reads it and a handler would meet a None. :class:`BadArray` names the first such array by
  its path. The check walks no further than the last array it must check: its elements are
  walked only when they hold arrays themselves, so a one-topic commit is checked at its
  partitions' count. What comes after is left to kio, which refuses a frame that ends early.
* **Tagged fields the schema does not declare, dropped** (:func:`without_unknown_tags`).
  Kafka's readers skip them (KIP-482: a newer client may add tags an older broker has never
  heard of); kio refuses them. The codec copies a request kio refused for that reason without
  them, and decodes the copy.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.serial.writers import write_unsigned_varint
from kio.static.primitive import uvarint

__all__ = ["BadArray", "check_arrays", "without_unknown_tags"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

#: The encoded size of each fixed-size Kafka type.
_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "uuid": 16,
}

# The steps: (op, argument). A skip of n bytes; a string or byte string (compact: an unsigned
# varint of length + 1; legacy: an int16 or int32 length, -1 for null); an array (compact or
# legacy count) of elements (an ``Array``); a nullable struct (an int8 marker, -1 for null,
# then its steps); a tag section (the tags its schema declares).
_SKIP, _COMPACT, _LEGACY16, _LEGACY32, _ARRAY_C, _ARRAY_L, _NULLABLE, _TAGS = range(8)

Steps = tuple[tuple[int, Any], ...]
#: An array's step argument: its name, whether it may be null, its elements' steps, and the
#: steps of its last element (the same tuple, except in a check that stops inside it).
Array = tuple[str, bool, Steps, Steps]
#: A tag section's replacement: (start, end, the bytes that replace data[start:end]).
Edit = tuple[int, int, bytes]


class BadArray(ValueError):
    """An array no Kafka reader takes: more elements than bytes left in the frame, or null where
    the schema has a non-nullable array (or a frame that ends before the walk does)."""


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """An unsigned varint at ``offset``: its value and the offset after it."""
    value = shift = 0
    while True:
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise BadArray("a varint runs over five bytes")


# -- the steps -------------------------------------------------------------------------------


@cache
def _steps(entity: type) -> Steps:
    """The whole walk of one ``entity`` (a kio schema class) as steps."""
    flexible: bool = getattr(entity, "__flexible__")  # noqa: B009 (kio's class attribute)
    # A request header's client id is a legacy string in every version (KIP-482).
    legacy_strings = entity.__name__ == "RequestHeader"
    steps: list[tuple[int, Any]] = []
    known_tags: set[int] = set()

    def skip(size: int) -> None:
        if steps and steps[-1][0] == _SKIP:
            steps[-1] = (_SKIP, steps[-1][1] + size)
        else:
            steps.append((_SKIP, size))

    def element(kafka_type: str) -> None:
        ((op, argument),) = _element_steps(kafka_type, flexible and not legacy_strings)
        if op == _SKIP:
            skip(argument)
        else:
            steps.append((op, argument))

    for field in dataclasses.fields(entity):
        tag = get_field_tag(field)
        if tag is not None:
            known_tags.add(tag)  # in the tag section, not inline
            continue
        kind = classify_field(field)
        array = _ARRAY_C if flexible else _ARRAY_L
        nullable = is_optional(field)
        if isinstance(kind, EntityTupleField):
            items = _steps(kind.type_)
            steps.append((array, (field.name, nullable, items, items)))
        elif isinstance(kind, PrimitiveTupleField):
            items = _element_steps(field.metadata["kafka_type"], flexible)
            steps.append((array, (field.name, nullable, items, items)))
        elif isinstance(kind, EntityField):
            if nullable:
                steps.append((_NULLABLE, _steps(kind.type_)))
            else:
                steps.extend(_steps(kind.type_))
        else:
            element(field.metadata["kafka_type"])
    if flexible:
        steps.append((_TAGS, frozenset(known_tags)))
    return tuple(steps)


@cache
def _element_steps(kafka_type: str, flexible: bool) -> Steps:
    """The walk of one primitive value (a field, or an element of a primitive array)."""
    if kafka_type in _FIXED:
        return ((_SKIP, _FIXED[kafka_type]),)
    if flexible:
        return ((_COMPACT, None),)
    return ((_LEGACY16 if kafka_type == "string" else _LEGACY32, None),)


def _holds_array(step: tuple[int, Any]) -> bool:
    op, argument = step
    return op in (_ARRAY_C, _ARRAY_L) or (op == _NULLABLE and any(map(_holds_array, argument)))


@cache
def _check_steps(steps: Steps) -> Steps:
    """The part of ``steps`` the array check walks: up to its last array, inside which only
    the last element's walk stops early (the elements before it lead to it), and that one's
    not at all when it holds no array (the count is all there is to check)."""
    last = max((i for i, step in enumerate(steps) if _holds_array(step)), default=-1)
    if last < 0:
        return ()
    op, argument = steps[last]
    if op == _NULLABLE:
        tail: tuple[int, Any] = (op, _check_steps(argument))
    else:
        name, nullable, items, _ = argument
        tail = (op, (name, nullable, items, _check_steps(items)))
    return (*steps[:last], tail)


# -- the walk ----------------------------------------------------------------------------------


def _walk(steps: Steps, data: bytes, offset: int, end: int, edits: list[Edit] | None) -> int:
    """Walk ``steps`` from ``offset``: the offset after them. With ``edits``, each tag section
    holding tags its schema does not declare adds its replacement there."""
    for op, argument in steps:
        if op == _SKIP:
            offset += argument
        elif op == _COMPACT:
            length = data[offset]  # a one-byte varint, the usual case
            offset += 1
            if length >= 0x80:
                length, offset = _varint(data, offset - 1)
            if length:
                offset += length - 1
        elif op == _ARRAY_C:
            count = data[offset]
            offset += 1
            if count >= 0x80:
                count, offset = _varint(data, offset - 1)
            offset = _elements(argument, count - 1, data, offset, end, edits)  # 0 is null
        elif op == _ARRAY_L:
            count = _I32.unpack_from(data, offset)[0]
            offset = _elements(argument, count, data, offset + 4, end, edits)
        elif op == _TAGS:
            if edits is None and data[offset] == 0:
                offset += 1  # no tags, the usual case
            else:
                offset = _tags(argument, data, offset, end, edits)
        elif op == _LEGACY16:
            length = _I16.unpack_from(data, offset)[0]
            offset += 2 if length < 0 else 2 + length
        elif op == _LEGACY32:
            length = _I32.unpack_from(data, offset)[0]
            offset += 4 if length < 0 else 4 + length
        else:  # _NULLABLE
            marker = data[offset]
            offset += 1
            if marker != 0xFF:
                offset = _walk(argument, data, offset, end, edits)
    return offset


def _elements(
    array: Array, count: int, data: bytes, offset: int, end: int, edits: list[Edit] | None
) -> int:
    """Walk ``count`` elements of ``array``; the offset after them."""
    name, nullable, items, last_items = array
    if count < 0:
        if not nullable:
            raise BadArray(f"{name} is null, and the schema has it non-nullable")
        return offset
    if count > end - offset:
        raise BadArray(f"{name} has {count} elements with {end - offset} bytes left in the frame")
    last = last_items is not items  # the check's last array: its last element differs
    if last:
        if not last_items or not count:
            return offset
        count -= 1
    index = 0
    try:
        for index in range(count):  # noqa: B007 (named in the error below)
            offset = _walk(items, data, offset, end, edits)
        if last:
            index = count
            offset = _walk(last_items, data, offset, end, edits)
    except BadArray as inner:
        raise BadArray(f"{name}[{index}].{inner}") from None
    return offset


def _tags(
    known: frozenset[int], data: bytes, offset: int, end: int, edits: list[Edit] | None
) -> int:
    """Walk a tag section; with ``edits``, replace it by its ``known`` tags if it has others."""
    start = offset
    count, offset = _varint(data, offset)
    kept: list[bytes] = []
    for _ in range(count):
        field_start = offset
        tag, offset = _varint(data, offset)
        length, offset = _varint(data, offset)
        offset += length
        if offset > end:
            raise BadArray(f"tagged field {tag} runs past the end of the frame")
        if tag in known:
            kept.append(data[field_start:offset])
    if edits is not None and len(kept) < count:
        section = io.BytesIO()
        write_unsigned_varint(section, uvarint(len(kept)))
        section.write(b"".join(kept))
        edits.append((start, offset, section.getvalue()))
    return offset


def _walk_request(header: type, body_steps: Steps, data: bytes, edits: list[Edit] | None) -> None:
    """Walk the request frame ``data``: its ``header`` whole, then ``body_steps``."""
    end = len(data)
    try:
        offset = _walk(_steps(header), data, 0, end, edits)
        offset = _walk(body_steps, data, offset, end, edits)
    except (IndexError, struct.error):
        offset = end + 1
    if offset > end:
        raise BadArray("the request ends before its fields do")


# -- what the codec calls ----------------------------------------------------------------------


@cache
def _body_check(body: type) -> Steps:
    return _check_steps(_steps(body))


def check_arrays(header: type, body: type, data: bytes) -> None:
    """Raise BadArray if the request frame ``data`` (a ``header`` then a ``body``, kio schema
    classes) has an array no Kafka reader takes (the module docstring), or ends before the
    check's walk does."""
    steps = _body_check(body)
    if steps:  # none when there is no array anywhere (a heartbeat): nothing to check
        _walk_request(header, steps, data, None)


def without_unknown_tags(header: type, body: type, data: bytes) -> bytes:
    """The request frame ``data`` without the tagged fields its schemas do not declare, at any
    depth (the tags it keeps, and everything else, as they came)."""
    edits: list[Edit] = []
    _walk_request(header, _steps(body), data, edits)
    pieces: list[bytes] = []
    offset = 0
    for start, stop, replacement in edits:
        pieces += (data[offset:start], replacement)
        offset = stop
    pieces.append(data[offset:])
    return b"".join(pieces)
