"""HandoffGroup records: a handoff group written whole at every durable change, this engine's
own record type (key version 1004, far above Kafka's 0-2 and the 3 and up of KIP-848, KIP-932
and KIP-1071, so no Kafka record can be mistaken for one, and Kafka's loader skips it).

HandoffGroupKey v1004: ``group string``. HandoffGroupValue v0, non-flexible, Kafka's primitive
encodings (string = int16 length + UTF-8, arrays = int32 count)::

    state string, epoch int32, state_timestamp int64,
    members [member_id string, client_id string, client_host string, session_timeout int32,
             topics [string], assignment [TP], owned [TP], to_start [TP], to_close [TP]]
    TP = topic string, partition int32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..records.codec import (
    I16,
    I32,
    I64,
    STRING,
    Fields,
    Reader,
    RecordType,
    as_bytes,
    put_string,
    read_key,
    type_name,
)

__all__ = [
    "HANDOFF_GROUP",
    "HANDOFF_GROUP_KEY_VERSION",
    "HandoffGroupKey",
    "HandoffGroupValue",
    "HandoffMemberValue",
    "decode_handoff_group_key",
    "decode_handoff_group_value",
    "encode_handoff_group_value",
    "handoff_group_record",
    "handoff_group_tombstone",
]

#: This engine's own record type for handoff groups.
HANDOFF_GROUP_KEY_VERSION: Final = 1004
HANDOFF_GROUP_VALUE_VERSION: Final = 0
_HANDOFF_GROUP_KEY_FIELDS: Final[Fields] = (("group", STRING),)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffGroupKey:
    """Key v1004 (this engine's own record type): the state of handoff group ``group``."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffMemberValue:
    """One member of a handoff group record: its identity, session and topics, and its four
    partition sets (each sorted; docs/engine.md, "Handoff groups")."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    topics: tuple[str, ...]
    assignment: tuple[tuple[str, int], ...]
    owned: tuple[tuple[str, int], ...]
    to_start: tuple[tuple[str, int], ...]
    to_close: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffGroupValue:
    """HandoffGroupValue v0: a handoff group as of its last change. ``state`` is "Initial",
    "Starting", "Stable" or "Closing"; ``epoch`` the number of the plan in force;
    ``state_timestamp`` when the group last lost its last member or changed state (ms)."""

    state: str
    epoch: int
    state_timestamp: int
    members: tuple[HandoffMemberValue, ...] = ()


def _encode_handoff_group_key(group: str) -> bytes:
    out = [I16.pack(HANDOFF_GROUP_KEY_VERSION)]
    put_string(out, group)
    return b"".join(out)


def encode_handoff_group_value(value: HandoffGroupValue) -> bytes:
    """Encode ``value`` as a HandoffGroupValue v0."""
    if not isinstance(value, HandoffGroupValue):
        raise TypeError(f"expected a HandoffGroupValue, got {type_name(value)}")
    out = [I16.pack(HANDOFF_GROUP_VALUE_VERSION)]
    put_string(out, value.state)
    out.append(I32.pack(value.epoch))
    out.append(I64.pack(value.state_timestamp))
    out.append(I32.pack(len(value.members)))
    for member in value.members:
        put_string(out, member.member_id)
        put_string(out, member.client_id)
        put_string(out, member.client_host)
        out.append(I32.pack(member.session_timeout))
        out.append(I32.pack(len(member.topics)))
        for topic in member.topics:
            put_string(out, topic)
        for partitions in (member.assignment, member.owned, member.to_start, member.to_close):
            out.append(I32.pack(len(partitions)))
            for topic, partition in partitions:
                put_string(out, topic)
                out.append(I32.pack(partition))
    return b"".join(out)


def handoff_group_record(group: str, value: HandoffGroupValue) -> tuple[bytes, bytes]:
    """The (key, value) of a handoff group: HandoffGroupKey v1004, HandoffGroupValue v0."""
    return _encode_handoff_group_key(group), encode_handoff_group_value(value)


def handoff_group_tombstone(group: str) -> tuple[bytes, None]:
    """The (key, None) that deletes handoff group ``group``."""
    return _encode_handoff_group_key(group), None


def decode_handoff_group_value(value: bytes | bytearray | memoryview) -> HandoffGroupValue:
    """Decode a HandoffGroupValue v0 (check for a tombstone first); CorruptRecordError names the
    field that is wrong."""
    reader = Reader(as_bytes(value, "value"), "HandoffGroupValue")
    version = reader.int16()
    if version != HANDOFF_GROUP_VALUE_VERSION:
        reader.fail(f"unknown version {version} (this engine reads {HANDOFF_GROUP_VALUE_VERSION})")
    reader.label = f"HandoffGroupValue v{version}"

    def count() -> int:
        n = reader.length(False, nullable=False, wide=True)
        if n > len(reader.buf) - reader.pos:
            reader.fail(f"{n} elements cannot fit in the remaining bytes")
        return n

    def text(field: str) -> str:
        reader.field = field
        result = reader.string(False)
        assert result is not None  # not nullable
        return result

    def partitions(field: str) -> tuple[tuple[str, int], ...]:
        reader.field = field
        out = []
        for _ in range(count()):
            topic = text(field)
            reader.field = field
            out.append((topic, reader.int32()))
        return tuple(out)

    state = text("state")
    reader.field = "epoch"
    epoch = reader.int32()
    reader.field = "state_timestamp"
    state_timestamp = reader.int64()
    reader.field = "members"
    members = []
    for index in range(count()):
        reader.where = f"members[{index}]."
        member_id = text("member_id")
        client_id = text("client_id")
        client_host = text("client_host")
        reader.field = "session_timeout"
        session_timeout = reader.int32()
        reader.field = "topics"
        topics = tuple(text("topics") for _ in range(count()))
        members.append(
            HandoffMemberValue(
                member_id=member_id,
                client_id=client_id,
                client_host=client_host,
                session_timeout=session_timeout,
                topics=topics,
                assignment=partitions("assignment"),
                owned=partitions("owned"),
                to_start=partitions("to_start"),
                to_close=partitions("to_close"),
            )
        )
    reader.where = ""
    reader.finish()
    return HandoffGroupValue(
        state=state, epoch=epoch, state_timestamp=state_timestamp, members=tuple(members)
    )


def decode_handoff_group_key(data: bytes, version: int) -> HandoffGroupKey:
    """A HandoffGroupKey (version 1004)."""
    return read_key(data, f"HandoffGroupKey v{version}", _HANDOFF_GROUP_KEY_FIELDS, HandoffGroupKey)


#: The HandoffGroup record type: key version 1004.
HANDOFF_GROUP = RecordType(
    name="HandoffGroup",
    key_versions=(HANDOFF_GROUP_KEY_VERSION,),
    key_class=HandoffGroupKey,
    decode_key=decode_handoff_group_key,
    decode_value=decode_handoff_group_value,
)
