"""GroupMetadata records: a classic group's metadata, GroupMetadataKey v2 + GroupMetadataValue
v3 (Kafka's schemas, `records.schemas`; every value version 0-4 is read).

The group's record is written at every rebalance and read at every load, so v3 has hand-unrolled
paths both ways; each produces the same bytes (or the same value) as the table-driven codec,
the reference, and falls back to it for anything unusual, so that its error names the field.
"""

from __future__ import annotations

import struct
from typing import Any

from ..records.codec import (
    I16,
    I16_I16,
    I32,
    I32_I32,
    I64,
    I64_I32,
    MAX_STRING,
    RecordType,
    as_bytes,
    encode,
    put_bytes,
    put_string,
    read_key,
    read_value,
    type_name,
)
from ..records.schemas import (
    GROUP_METADATA_KEY_FIELDS,
    GROUP_METADATA_KEY_VERSION,
    GROUP_METADATA_KEY_VERSIONS,
    GROUP_METADATA_VALUE_VERSION,
    GROUP_METADATA_VALUE_VERSIONS,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
)

__all__ = [
    "GROUP_METADATA",
    "decode_group_metadata_key",
    "decode_group_metadata_value",
    "encode_group_metadata_value",
    "group_metadata_record",
    "group_metadata_tombstone",
]


def encode_group_metadata_value(value: GroupMetadataValue, *, version: int | None = None) -> bytes:
    """Encode ``value`` as a GroupMetadataValue of ``version`` (0-4; by default 3, as Kafka).

    Fields the version lacks are dropped (they are ignorable in Kafka's schema).
    Raises TypeError / ValueError for a field of the wrong type or out of range.
    """
    if not isinstance(value, GroupMetadataValue):
        raise TypeError(f"value must be a GroupMetadataValue, got {type_name(value)}")
    if version is None or version == GROUP_METADATA_VALUE_VERSION:
        try:
            return _encode_group_metadata_value_v3(value)
        except (AttributeError, TypeError, ValueError, struct.error):
            version = GROUP_METADATA_VALUE_VERSION  # the table-driven encoder names the field
    elif version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"GroupMetadataValue has versions 0-4, not {version}")
    return encode(GROUP_METADATA_VALUE_VERSIONS, version, value, "GroupMetadataValue")


def _encode_group_metadata_value_v3(value: GroupMetadataValue) -> bytes:
    """GroupMetadataValue v3 written field by field: the same bytes as the table-driven
    encoder (the reference) for plain values, at every stored generation. Raises for anything
    unusual (a wrong type, an int out of range, a required string that is None, a string too
    long), and the caller then lets the table-driven encoder raise its error naming the field."""
    members = value.members
    if (
        type(value.protocol_type) is not str
        or type(value.generation) is not int
        or type(value.current_state_timestamp) is not int
        or type(members) not in (tuple, list)
    ):
        raise TypeError
    out = [I16.pack(GROUP_METADATA_VALUE_VERSION)]
    put_string(out, value.protocol_type)
    out.append(I32.pack(value.generation))
    put_string(out, value.protocol)
    put_string(out, value.leader)
    out.append(I64.pack(value.current_state_timestamp))
    out.append(I32.pack(len(members)))
    for member in members:
        if (
            type(member) is not MemberMetadata
            or type(member.member_id) is not str
            or type(member.client_id) is not str
            or type(member.client_host) is not str
            or type(member.rebalance_timeout) is not int
            or type(member.session_timeout) is not int
        ):
            raise TypeError
        put_string(out, member.member_id)
        put_string(out, member.group_instance_id)
        put_string(out, member.client_id)
        put_string(out, member.client_host)
        out.append(I32_I32.pack(member.rebalance_timeout, member.session_timeout))
        put_bytes(out, member.subscription)
        put_bytes(out, member.assignment)
    return b"".join(out)


def _encode_group_metadata_key(group: str) -> bytes:
    if type(group) is str and group.isascii() and len(group) <= MAX_STRING:
        return I16_I16.pack(GROUP_METADATA_KEY_VERSION, len(group)) + group.encode("ascii")
    return encode(
        GROUP_METADATA_KEY_VERSIONS,
        GROUP_METADATA_KEY_VERSION,
        GroupMetadataKey(group=group),
        "GroupMetadataKey",
    )


def group_metadata_record(group: str, value: GroupMetadataValue) -> tuple[bytes, bytes]:
    """The (key, value) of a group's metadata: GroupMetadataKey v2, GroupMetadataValue v3."""
    return _encode_group_metadata_key(group), encode_group_metadata_value(value)


def group_metadata_tombstone(group: str) -> tuple[bytes, None]:
    """The (key, None) that deletes ``group``."""
    return _encode_group_metadata_key(group), None


def decode_group_metadata_key(data: bytes, version: int) -> GroupMetadataKey:
    """A GroupMetadataKey (version 2): in one go when well formed, else re-read by the
    table-driven reader, which raises the precise error."""
    try:
        (n,) = I16.unpack_from(data, 2)
        if n >= 0 and 4 + n == len(data):
            return GroupMetadataKey(group=data[4:].decode("utf-8"))
    except (struct.error, UnicodeDecodeError):
        pass
    return read_key(
        data, f"GroupMetadataKey v{version}", GROUP_METADATA_KEY_FIELDS, GroupMetadataKey
    )


def _member(fields: dict[str, Any]) -> MemberMetadata:
    # v0 has no rebalance timeout: Kafka's readGroupMessageValue uses the session timeout.
    fields.setdefault("rebalance_timeout", fields["session_timeout"])
    fields.setdefault("group_instance_id", None)
    return MemberMetadata(**fields)


def decode_group_metadata_value(value: bytes | bytearray | memoryview) -> GroupMetadataValue:
    """Decode a GroupMetadataValue of any version 0-4 (check for a tombstone first)."""
    data = as_bytes(value, "value")
    try:
        return _decode_group_metadata_value_v3(data)
    except (struct.error, UnicodeDecodeError, ValueError):
        pass  # not a well-formed v3: the table-driven reader decodes it or names the fault
    _, fields = read_value(data, "GroupMetadataValue", GROUP_METADATA_VALUE_VERSIONS)
    fields["members"] = tuple(_member(member) for member in fields["members"])
    return GroupMetadataValue(**fields)


def _decode_group_metadata_value_v3(data: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue v3 (what this engine and Kafka write) read field by field: the
    same result as the table-driven reader for a well-formed one. Raises ValueError (or
    struct.error, UnicodeDecodeError) for anything else, and the caller then lets the
    table-driven reader decode it (another version) or name what is wrong."""
    end = len(data)

    def text(at: int, nullable: bool) -> tuple[str | None, int]:
        (n,) = I16.unpack_from(data, at)
        at += 2
        if n < 0:
            if n == -1 and nullable:
                return None, at
            raise ValueError
        if at + n > end:
            raise ValueError
        return data[at : at + n].decode("utf-8"), at + n

    def blob(at: int) -> tuple[bytes, int]:
        (n,) = I32.unpack_from(data, at)
        at += 4
        if n < 0 or at + n > end:
            raise ValueError
        return data[at : at + n], at + n

    (version,) = I16.unpack_from(data, 0)
    if version != GROUP_METADATA_VALUE_VERSION:
        raise ValueError
    protocol_type, at = text(2, False)
    (generation,) = I32.unpack_from(data, at)
    protocol, at = text(at + 4, True)
    leader, at = text(at, True)
    current_state_timestamp, count = I64_I32.unpack_from(data, at)
    at += I64_I32.size
    if count < 0 or count > end - at:
        raise ValueError
    members = []
    for _ in range(count):
        member_id, at = text(at, False)
        group_instance_id, at = text(at, True)
        client_id, at = text(at, False)
        client_host, at = text(at, False)
        rebalance_timeout, session_timeout = I32_I32.unpack_from(data, at)
        subscription, at = blob(at + 8)
        assignment, at = blob(at)
        members.append(
            MemberMetadata(
                member_id=member_id,  # type: ignore[arg-type]
                group_instance_id=group_instance_id,
                client_id=client_id,  # type: ignore[arg-type]
                client_host=client_host,  # type: ignore[arg-type]
                rebalance_timeout=rebalance_timeout,
                session_timeout=session_timeout,
                subscription=subscription,
                assignment=assignment,
            )
        )
    if at != end:
        raise ValueError
    return GroupMetadataValue(
        protocol_type=protocol_type,  # type: ignore[arg-type]
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=tuple(members),
    )


#: The GroupMetadata record type: key version 2.
GROUP_METADATA = RecordType(
    name="GroupMetadata",
    key_versions=(GROUP_METADATA_KEY_VERSION,),
    key_class=GroupMetadataKey,
    decode_key=decode_group_metadata_key,
    decode_value=decode_group_metadata_value,
)
