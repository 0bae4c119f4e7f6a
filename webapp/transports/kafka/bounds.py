"""Arrays checked against the frame and the schema, before kio reads a request body.

kio's native reader sizes its buffer for an array by the element count the frame announces.
A count of two billion in a 300-byte frame asks for hundreds of gigabytes, the allocation fails,
and Rust aborts the process: one malformed frame would end ``serve`` with everything in it.
Kafka's generated readers refuse such a count before allocating anything ("Tried to allocate a
collection of size N, but there are only M bytes remaining"): every element takes at least one
byte, so a count larger than the bytes left cannot be a request. :func:`check_arrays` does the
same for a request body: it walks the body's fields as the schema lays them out (sizes only,
nothing decoded) and raises :class:`BadArray` for the first array whose count exceeds the
bytes after it. The same walk refuses a null where the schema has a non-nullable array, as
Kafka's readers do ("non-nullable field ... was serialized as null"), where kio reads it and a
handler would meet a None. The walk is compiled once per schema into a list of steps,
consecutive fixed-size fields merged into one skip.
"""

from __future__ import annotations

import dataclasses
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

__all__ = ["BadArray", "check_arrays"]

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
# legacy count) of elements, each a list of steps; a nullable struct (an int8 marker, -1 for
# null); a tag section.
_SKIP, _COMPACT, _LEGACY16, _LEGACY32, _ARRAY_C, _ARRAY_L, _NULLABLE, _TAGS = range(8)

Steps = tuple[tuple[int, Any], ...]


class BadArray(ValueError):
    """An array no Kafka reader takes: more elements than bytes left in the frame, or null where
    the schema has a non-nullable array (or a frame that ends before its fields)."""


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


@cache
def _steps(entity: type) -> Steps:
    """The walk of one ``entity`` (a kio schema class) as steps."""
    flexible: bool = getattr(entity, "__flexible__")  # noqa: B009 (kio's class attribute)
    # A request header's client id is a legacy string in every version (KIP-482).
    legacy_strings = entity.__name__ == "RequestHeader"
    steps: list[tuple[int, Any]] = []

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
        if get_field_tag(field) is not None:
            continue  # in the tag section, not inline
        kind = classify_field(field)
        array = _ARRAY_C if flexible else _ARRAY_L
        nullable = is_optional(field)
        if isinstance(kind, EntityTupleField):
            steps.append((array, (field.name, nullable, _steps(kind.type_))))
        elif isinstance(kind, PrimitiveTupleField):
            items = _element_steps(field.metadata["kafka_type"], flexible)
            steps.append((array, (field.name, nullable, items)))
        elif isinstance(kind, EntityField):
            if nullable:
                steps.append((_NULLABLE, _steps(kind.type_)))
            else:
                steps.extend(_steps(kind.type_))
        else:
            element(field.metadata["kafka_type"])
    if flexible:
        steps.append((_TAGS, None))
    return tuple(steps)


@cache
def _element_steps(kafka_type: str, flexible: bool) -> Steps:
    """The walk of one primitive value (a field, or an element of a primitive array)."""
    if kafka_type in _FIXED:
        return ((_SKIP, _FIXED[kafka_type]),)
    if flexible:
        return ((_COMPACT, None),)
    return ((_LEGACY16 if kafka_type == "string" else _LEGACY32, None),)


def _walk(steps: Steps, data: bytes, offset: int, end: int) -> int:
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
            offset = _elements(argument, count - 1, data, offset, end)  # count 0 is null
        elif op == _ARRAY_L:
            count = _I32.unpack_from(data, offset)[0]
            offset = _elements(argument, count, data, offset + 4, end)
        elif op == _TAGS:
            count = data[offset]
            offset += 1
            if count:
                count, offset = _varint(data, offset - 1)
                for _ in range(count):
                    _, offset = _varint(data, offset)
                    length, offset = _varint(data, offset)
                    offset += length
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
                offset = _walk(argument, data, offset, end)
    return offset


def _elements(
    array: tuple[str, bool, Steps], count: int, data: bytes, offset: int, end: int
) -> int:
    """Walk ``count`` elements of ``array`` (its name, whether it may be null, its element's
    steps); the offset after them."""
    name, nullable, items = array
    if count < 0:
        if not nullable:
            raise BadArray(f"{name} is null, and the schema has it non-nullable")
        return offset
    if count > end - offset:
        raise BadArray(f"{name} has {count} elements with {end - offset} bytes left in the frame")
    index = 0
    try:
        for index in range(count):  # noqa: B007 (named in the error below)
            offset = _walk(items, data, offset, end)
    except BadArray as inner:
        raise BadArray(f"{name}[{index}].{inner}") from None
    return offset


@cache
def _has_arrays(entity: type) -> bool:
    """Whether an ``entity`` has an array at any depth (a heartbeat has none: nothing to check)."""
    return _any_array(_steps(entity))


def _any_array(steps: Steps) -> bool:
    return any(
        op in (_ARRAY_C, _ARRAY_L) or (op == _NULLABLE and _any_array(argument))
        for op, argument in steps
    )


def check_arrays(header: type, body: type, data: bytes) -> None:
    """Raise BadArray if the request frame ``data`` (a ``header`` then a ``body``, kio schema
    classes) has an array no Kafka reader takes (the module docstring), or ends before its
    fields do."""
    if not _has_arrays(body):
        return
    end = len(data)
    try:
        offset = _walk(_steps(body), data, _walk(_steps(header), data, 0, end), end)
    except (IndexError, struct.error):
        offset = end + 1
    if offset > end:
        raise BadArray("the request ends before its fields do")
