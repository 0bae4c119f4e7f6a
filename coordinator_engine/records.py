"""Kafka's ``__consumer_offsets`` records: what this engine writes, and what any cluster wrote.

Theory of operation
===================

Every durable change of the group coordinator is a record: a key and a value, both
version-prefixed byte strings, exactly as Kafka lays them out in ``__consumer_offsets``.
The layouts follow Kafka's message schemas in the group-coordinator module
(``group-coordinator/src/main/resources/common/message/``: ``OffsetCommitKey.json``,
``OffsetCommitValue.json``, ``GroupMetadataKey.json``, ``GroupMetadataValue.json``); the choice of
versions follows ``GroupCoordinatorRecordHelpers`` / ``MetadataVersion.offsetCommitValueVersion`` /
``groupMetadataValueVersion``, and the reading rules follow ``GroupCoordinatorRecordSerde`` and
the Scala ``GroupMetadataManager.readMessageKey`` / ``readOffsetMessageValue`` /
``readGroupMessageValue``.

Keys: the version is the record type
------------------------------------
A key is ``int16 version`` followed by the key's fields. The key version says which kind of
record this is, so that offsets and group metadata never compact together:

====== ==================== ====================================================
key v  record kind          fields
====== ==================== ====================================================
0, 1   OffsetCommitKey      group: string, topic: string, partition: int32
2      GroupMetadataKey     group: string
3+     (not handled here)   KIP-848 consumer/share group records; decoding one raises
                            :class:`UnknownRecordTypeError` so a loader can skip it
1004   HandoffGroupKey      group: string (this engine's own: seed 004's handoff groups,
                            a type no Kafka version uses; Kafka's loader would skip it)
====== ==================== ====================================================

This engine writes OffsetCommitKey v1 and GroupMetadataKey v2, as current Kafka does. A key
must end exactly where its fields end; a negative key version is corruption, not an unknown
record type.

Values: the version evolves the layout
--------------------------------------
A value is ``int16 version`` followed by the value's fields; ``None`` (a null value) is a
**tombstone**: the key's entity is deleted, and log compaction eventually drops the key.

OffsetCommitValue::

    v0  offset int64, metadata string, commit_timestamp int64
    v1  offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
    v2  offset int64, metadata string, commit_timestamp int64
    v3  offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    v4  as v3, flexible

GroupMetadataValue (``[MemberMetadata]`` is an array of the member struct)::

    v0  protocol_type string, generation int32, protocol string?, leader string?, members [M0]
    v1  as v0 with members [M1]
    v2  protocol_type, generation, protocol, leader, current_state_timestamp int64, members [M1]
    v3  as v2 with members [M3]
    v4  as v3, flexible

    M0  member_id string, client_id string, client_host string, session_timeout int32,
        subscription bytes, assignment bytes
    M1  member_id, client_id, client_host, rebalance_timeout int32, session_timeout,
        subscription, assignment
    M3  member_id, group_instance_id string?, client_id, client_host, rebalance_timeout,
        session_timeout, subscription, assignment

Primitive encodings (Kafka's protocol types, big-endian):

* non-flexible versions: ``string`` = int16 length + UTF-8 (``string?`` may have length -1 =
  null); ``bytes`` = int32 length + data; array = int32 count + elements.
* flexible versions (v4): compact forms, whose length prefix is an unsigned varint holding
  length + 1 (0 = null); every struct (the value and each member) ends with a tagged-field
  section: a varint count, then per field a varint tag, a varint size and that many bytes.
  No tags are defined for these records, so every tagged field is skipped (newer writers put
  their additions there, which is why flexible versions stay readable).

Versions written and read
-------------------------
Written, as Kafka 2.3 and later write them:

* OffsetCommitValue **v3**, except **v1** when the commit carries an explicit expire timestamp
  (v1 is the only version with that field; like Kafka, the leader epoch is then not stored).
* GroupMetadataValue **v3** (the highest non-flexible version, which Kafka still writes).

Read: every version above, v0 to v4 of both values. Fields a version lacks take the schema
default (leader_epoch -1, expire_timestamp -1, current_state_timestamp -1, group_instance_id
None), except a v0 member's rebalance timeout, which takes its session timeout as
``readGroupMessageValue`` does. Encoding into an explicit older version drops the fields it
lacks: they are all "ignorable" in Kafka's schemas.

Reading is strict: truncation, a key or value with bytes after its last field (or, in flexible
versions, after its tagged fields), invalid UTF-8, a negative length (only -1, and only for a
nullable string, means null), an overlong varint or an unknown value version raise
:class:`CorruptRecordError`; nothing else escapes the decoders. Kafka's generated readers are
more lenient (they stop after the last field and replace invalid UTF-8 with U+FFFD); every
writer ends a record at its last field, and newer versions add data only as tagged fields, so
rejecting such bytes keeps a damaged log from being replayed silently.

Offset commits are encoded on the hot path: :func:`offset_commit_record` packs with
precompiled ``struct.Struct`` objects and falls back to the table-driven encoder (which has
the precise error messages) only when the fast path fails; both produce identical bytes.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, NoReturn

__all__ = [
    "CorruptRecordError",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "HandoffGroupKey",
    "HandoffGroupValue",
    "HandoffMemberValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordKey",
    "UnknownRecordTypeError",
    "decode_group_metadata_value",
    "decode_handoff_group_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_value",
    "encode_handoff_group_value",
    "encode_offset_commit_value",
    "group_metadata_record",
    "group_metadata_tombstone",
    "handoff_group_record",
    "handoff_group_tombstone",
    "offset_commit_record",
    "offset_commit_records",
    "offset_commit_tombstone",
]


# --------------------------------------------------------------------------------------------
# Record types


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    """Key v0/v1: the committed position of ``group`` on ``topic``-``partition``."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue:
    """A committed offset.

    ``offset`` is the next offset the group will consume; ``leader_epoch`` the epoch of the
    partition leader the consumer last saw (-1 unknown); ``metadata`` the client's free-form
    string; ``commit_timestamp`` when the coordinator accepted the commit (ms);
    ``expire_timestamp`` an explicit expiry from OffsetCommit v1 requests (-1 none).
    """

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    """Key v2: the metadata of ``group``."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadata:
    """One member of a group metadata record.

    ``group_instance_id`` is the static member id (KIP-345, None for dynamic members);
    timeouts are in ms; ``subscription`` is the member's metadata for the group's chosen
    protocol; ``assignment`` what the leader assigned it.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    """A classic group as of its last completed generation (or an empty group).

    ``protocol_type`` is e.g. "consumer" ("" for an empty group that never had one);
    ``protocol`` the chosen assignor and ``leader`` the leader's member id (None when the group
    has no members); ``current_state_timestamp`` when the group last changed state (ms, -1
    unknown).
    """

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


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


RecordKey = OffsetCommitKey | GroupMetadataKey | HandoffGroupKey


class CorruptRecordError(ValueError):
    """A key or value that is not a valid record of its kind.

    ``kind`` names what was being decoded ("key", "OffsetCommitValue", "GroupMetadataValue");
    ``detail`` says what is wrong and where.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(kind, detail)
        self.kind = kind
        self.detail = detail

    def __str__(self) -> str:
        return f"corrupt {self.kind}: {self.detail}"


class UnknownRecordTypeError(CorruptRecordError):
    """A key whose version (record type) this engine does not know, such as the KIP-848
    consumer-group records (key versions 3 and up). A loader may skip such records, as Kafka's
    ``CoordinatorLoader.UnknownRecordTypeException`` is skipped."""

    def __init__(self, version: int) -> None:
        super().__init__(
            "key",
            f"unknown record type: key version {version} (this engine knows 0, 1, 2 and 1004)",
        )
        self.version = version

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.version,))


# --------------------------------------------------------------------------------------------
# Schemas as data: one table per record, one entry per version.

_INT32: Final = "int32"
_INT64: Final = "int64"
_STRING: Final = "string"
_NULLABLE_STRING: Final = "nullable string"
_BYTES: Final = "bytes"


@dataclass(frozen=True, slots=True)
class _Array:
    """An array of structs whose elements are instances of ``element``."""

    fields: tuple[tuple[str, Any], ...]
    element: type


_Fields = tuple[tuple[str, Any], ...]

_OFFSET_COMMIT_KEY_FIELDS: Final[_Fields] = (
    ("group", _STRING),
    ("topic", _STRING),
    ("partition", _INT32),
)
_GROUP_METADATA_KEY_FIELDS: Final[_Fields] = (("group", _STRING),)
# version -> (fields, flexible); keys are never flexible.
_OFFSET_COMMIT_KEY_VERSIONS: Final[dict[int, tuple[_Fields, bool]]] = {
    0: (_OFFSET_COMMIT_KEY_FIELDS, False),
    1: (_OFFSET_COMMIT_KEY_FIELDS, False),
}
_GROUP_METADATA_KEY_VERSIONS: Final[dict[int, tuple[_Fields, bool]]] = {
    2: (_GROUP_METADATA_KEY_FIELDS, False),
}

_OFFSET_COMMIT_V0: Final[_Fields] = (
    ("offset", _INT64),
    ("metadata", _STRING),
    ("commit_timestamp", _INT64),
)
_OFFSET_COMMIT_V1: Final[_Fields] = (*_OFFSET_COMMIT_V0, ("expire_timestamp", _INT64))
_OFFSET_COMMIT_V3: Final[_Fields] = (
    ("offset", _INT64),
    ("leader_epoch", _INT32),
    ("metadata", _STRING),
    ("commit_timestamp", _INT64),
)

# version -> (fields, flexible)
_OFFSET_COMMIT_VALUE_VERSIONS: Final[dict[int, tuple[_Fields, bool]]] = {
    0: (_OFFSET_COMMIT_V0, False),
    1: (_OFFSET_COMMIT_V1, False),
    2: (_OFFSET_COMMIT_V0, False),
    3: (_OFFSET_COMMIT_V3, False),
    4: (_OFFSET_COMMIT_V3, True),
}

_MEMBER_V0: Final[_Fields] = (
    ("member_id", _STRING),
    ("client_id", _STRING),
    ("client_host", _STRING),
    ("session_timeout", _INT32),
    ("subscription", _BYTES),
    ("assignment", _BYTES),
)
_MEMBER_V1: Final[_Fields] = (
    ("member_id", _STRING),
    ("client_id", _STRING),
    ("client_host", _STRING),
    ("rebalance_timeout", _INT32),
    ("session_timeout", _INT32),
    ("subscription", _BYTES),
    ("assignment", _BYTES),
)
_MEMBER_V3: Final[_Fields] = (
    ("member_id", _STRING),
    ("group_instance_id", _NULLABLE_STRING),
    *_MEMBER_V1[1:],
)


def _group_fields(members: _Fields, *, with_state_timestamp: bool) -> _Fields:
    head: _Fields = (
        ("protocol_type", _STRING),
        ("generation", _INT32),
        ("protocol", _NULLABLE_STRING),
        ("leader", _NULLABLE_STRING),
    )
    if with_state_timestamp:
        head = (*head, ("current_state_timestamp", _INT64))
    return (*head, ("members", _Array(members, MemberMetadata)))


_GROUP_METADATA_VALUE_VERSIONS: Final[dict[int, tuple[_Fields, bool]]] = {
    0: (_group_fields(_MEMBER_V0, with_state_timestamp=False), False),
    1: (_group_fields(_MEMBER_V1, with_state_timestamp=False), False),
    2: (_group_fields(_MEMBER_V1, with_state_timestamp=True), False),
    3: (_group_fields(_MEMBER_V3, with_state_timestamp=True), False),
    4: (_group_fields(_MEMBER_V3, with_state_timestamp=True), True),
}

OFFSET_COMMIT_KEY_VERSION: Final = 1
GROUP_METADATA_KEY_VERSION: Final = 2
#: This engine's own record type for handoff groups (seed 004): far above Kafka's (0-2, and
#: KIP-848/932/1071's from 3 up), so no Kafka record can be mistaken for one.
HANDOFF_GROUP_KEY_VERSION: Final = 1004
HANDOFF_GROUP_VALUE_VERSION: Final = 0
OFFSET_COMMIT_VALUE_VERSION: Final = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY: Final = 1
GROUP_METADATA_VALUE_VERSION: Final = 3

_MAX_STRING: Final = 0x7FFF
_INT32_RANGE: Final = range(-(2**31), 2**31)
_INT64_RANGE: Final = range(-(2**63), 2**63)

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_I16_I16: Final = struct.Struct(">hh")
_I32_I32: Final = struct.Struct(">ii")
_I64_I32: Final = struct.Struct(">qi")
_NULL_STRING: Final = _I16.pack(-1)
# Offset commit fast paths: key = [v, len] group [len] topic [partition];
# value v3 = [v, offset, epoch, len] metadata [commit ts];
# value v1 = [v, offset, len] metadata [commit ts, expire ts].
_V3_HEAD: Final = struct.Struct(">hqih")
_V3_EMPTY_METADATA: Final = struct.Struct(">hqihq")
_V1_HEAD: Final = struct.Struct(">hqh")
_I64_I64: Final = struct.Struct(">qq")


# --------------------------------------------------------------------------------------------
# Table-driven encoder (every version; the reference for the fast paths below)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _type_name(value: object) -> str:
    return type(value).__name__


def _write_struct(out: list[bytes], fields: _Fields, flexible: bool, obj: Any, where: str) -> None:
    for name, ftype in fields:
        value = getattr(obj, name)
        if ftype in (_INT32, _INT64):
            if not isinstance(value, int):
                raise TypeError(f"{where}.{name} must be int, got {_type_name(value)}")
            if value not in (_INT32_RANGE if ftype == _INT32 else _INT64_RANGE):
                raise ValueError(f"{where}.{name} = {value} does not fit in an {ftype}")
            out.append((_I32 if ftype == _INT32 else _I64).pack(value))
        elif ftype in (_STRING, _NULLABLE_STRING):
            if value is None:
                if ftype == _STRING:
                    raise TypeError(f"{where}.{name} must be str, got None")
                out.append(b"\x00" if flexible else b"\xff\xff")
                continue
            if not isinstance(value, str):
                raise TypeError(f"{where}.{name} must be str, got {_type_name(value)}")
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"{where}.{name} is not encodable as UTF-8: {exc}") from None
            if len(data) > _MAX_STRING:
                raise ValueError(
                    f"{where}.{name} is {len(data)} bytes of UTF-8; a Kafka string holds at most "
                    f"{_MAX_STRING}"
                )
            out.append(_uvarint(len(data) + 1) if flexible else _I16.pack(len(data)))
            out.append(data)
        elif ftype == _BYTES:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise TypeError(f"{where}.{name} must be bytes, got {_type_name(value)}")
            data = bytes(value)
            if len(data) > _INT32_RANGE.stop - 1:
                raise ValueError(
                    f"{where}.{name} is {len(data)} bytes; Kafka bytes hold at most 2**31-1"
                )
            out.append(_uvarint(len(data) + 1) if flexible else _I32.pack(len(data)))
            out.append(data)
        else:
            assert isinstance(ftype, _Array)
            if not isinstance(value, tuple | list):
                raise TypeError(f"{where}.{name} must be a tuple, got {_type_name(value)}")
            out.append(_uvarint(len(value) + 1) if flexible else _I32.pack(len(value)))
            for index, element in enumerate(value):
                if not isinstance(element, ftype.element):
                    raise TypeError(
                        f"{where}.{name}[{index}] must be {ftype.element.__name__}, "
                        f"got {_type_name(element)}"
                    )
                where_element = f"{where}.{name}[{index}]"
                _write_struct(out, ftype.fields, flexible, element, where_element)
    if flexible:
        out.append(b"\x00")  # no tagged fields


def _encode(
    versions: dict[int, tuple[_Fields, bool]], version: int, obj: object, where: str
) -> bytes:
    fields, flexible = versions[version]
    out = [_I16.pack(version)]
    _write_struct(out, fields, flexible, obj, where)
    return b"".join(out)


def encode_offset_commit_value(value: OffsetCommitValue, *, version: int | None = None) -> bytes:
    """Encode ``value`` as an OffsetCommitValue of ``version`` (0-4).

    By default the version Kafka writes: v1 when ``expire_timestamp`` is set, v3 otherwise.
    Fields the version lacks are dropped (they are ignorable in Kafka's schema).
    Raises TypeError / ValueError for a field of the wrong type or out of range.
    """
    if not isinstance(value, OffsetCommitValue):
        raise TypeError(f"value must be an OffsetCommitValue, got {_type_name(value)}")
    if version is None:
        version = (
            OFFSET_COMMIT_VALUE_VERSION
            if value.expire_timestamp == -1
            else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        )
    elif version not in _OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"OffsetCommitValue has versions 0-4, not {version}")
    return _encode(_OFFSET_COMMIT_VALUE_VERSIONS, version, value, "OffsetCommitValue")


def encode_group_metadata_value(value: GroupMetadataValue, *, version: int | None = None) -> bytes:
    """Encode ``value`` as a GroupMetadataValue of ``version`` (0-4; by default 3, as Kafka).

    Fields the version lacks are dropped (they are ignorable in Kafka's schema).
    Raises TypeError / ValueError for a field of the wrong type or out of range.
    """
    if not isinstance(value, GroupMetadataValue):
        raise TypeError(f"value must be a GroupMetadataValue, got {_type_name(value)}")
    if version is None or version == GROUP_METADATA_VALUE_VERSION:
        try:
            return _encode_group_metadata_value_v3(value)
        except (AttributeError, TypeError, ValueError, struct.error):
            version = GROUP_METADATA_VALUE_VERSION  # the table-driven encoder names the field
    elif version not in _GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"GroupMetadataValue has versions 0-4, not {version}")
    return _encode(_GROUP_METADATA_VALUE_VERSIONS, version, value, "GroupMetadataValue")


def _put_string(out: list[bytes], text: str | None) -> None:
    """A (nullable) string of a non-flexible version, for the fast paths."""
    if text is None:
        out.append(_NULL_STRING)
        return
    if type(text) is not str:
        raise TypeError
    data = text.encode("utf-8")
    if len(data) > _MAX_STRING:
        raise ValueError
    out.append(_I16.pack(len(data)))
    out.append(data)


def _put_bytes(out: list[bytes], data: bytes) -> None:
    if type(data) is not bytes:
        raise TypeError
    out.append(_I32.pack(len(data)))
    out.append(data)


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
    out = [_I16.pack(GROUP_METADATA_VALUE_VERSION)]
    _put_string(out, value.protocol_type)
    out.append(_I32.pack(value.generation))
    _put_string(out, value.protocol)
    _put_string(out, value.leader)
    out.append(_I64.pack(value.current_state_timestamp))
    out.append(_I32.pack(len(members)))
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
        _put_string(out, member.member_id)
        _put_string(out, member.group_instance_id)
        _put_string(out, member.client_id)
        _put_string(out, member.client_host)
        out.append(_I32_I32.pack(member.rebalance_timeout, member.session_timeout))
        _put_bytes(out, member.subscription)
        _put_bytes(out, member.assignment)
    return b"".join(out)


def _encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode(
        _OFFSET_COMMIT_KEY_VERSIONS,
        OFFSET_COMMIT_KEY_VERSION,
        OffsetCommitKey(group=group, topic=topic, partition=partition),
        "OffsetCommitKey",
    )


def _encode_group_metadata_key(group: str) -> bytes:
    if type(group) is str and group.isascii() and len(group) <= _MAX_STRING:
        return _I16_I16.pack(GROUP_METADATA_KEY_VERSION, len(group)) + group.encode("ascii")
    return _encode(
        _GROUP_METADATA_KEY_VERSIONS,
        GROUP_METADATA_KEY_VERSION,
        GroupMetadataKey(group=group),
        "GroupMetadataKey",
    )


# --------------------------------------------------------------------------------------------
# Record factories (one per record kind, each with its tombstone twin)


@functools.lru_cache(maxsize=4096)
def _offset_commit_key_head(group: str, topic: str) -> bytes:
    """OffsetCommitKey v1 up to its partition: a group commits the same topics again and again.
    Raises for what the fast path cannot encode (then the table-driven encoder reports it)."""
    g = group.encode("utf-8")
    t = topic.encode("utf-8")
    return _I16_I16.pack(OFFSET_COMMIT_KEY_VERSION, len(g)) + g + _I16.pack(len(t)) + t


def offset_commit_record(
    group: str, topic: str, partition: int, value: OffsetCommitValue
) -> tuple[bytes, bytes]:
    """The (key, value) of an offset commit: OffsetCommitKey v1, OffsetCommitValue v3 (v1 when
    ``value.expire_timestamp`` is set)."""
    try:
        if type(group) is not str or type(topic) is not str:
            raise TypeError
        key = _offset_commit_key_head(group, topic) + _I32.pack(partition)
        if type(value) is not OffsetCommitValue:
            raise TypeError
        metadata = value.metadata
        if value.expire_timestamp == -1:
            if metadata == "":
                return key, _V3_EMPTY_METADATA.pack(
                    OFFSET_COMMIT_VALUE_VERSION,
                    value.offset,
                    value.leader_epoch,
                    0,
                    value.commit_timestamp,
                )
            m = metadata.encode("utf-8")
            return key, (
                _V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch, len(m))
                + m
                + _I64.pack(value.commit_timestamp)
            )
        m = metadata.encode("utf-8")
        return key, (
            _V1_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY, value.offset, len(m))
            + m
            + _I64_I64.pack(value.commit_timestamp, value.expire_timestamp)
        )
    except (struct.error, AttributeError, TypeError, UnicodeEncodeError):
        # Bad input: the table-driven encoder raises the error that names the field.
        return _encode_offset_commit_key(group, topic, partition), encode_offset_commit_value(value)


def offset_commit_records(
    group: str, values: Iterable[tuple[str, int, OffsetCommitValue]]
) -> list[tuple[bytes, bytes | None]]:
    """``offset_commit_record`` of each ``(topic, partition, value)`` of one commit of
    ``group``: a batch shares its key heads, and the usual value (no metadata, no explicit
    expiry) is packed in one go."""
    records: list[tuple[bytes, bytes | None]] = []
    heads: dict[str, bytes] = {}
    for topic, partition, value in values:
        try:
            if (
                type(value) is not OffsetCommitValue
                or value.metadata != ""
                or value.expire_timestamp != -1
                or type(partition) is not int
                or type(topic) is not str
                or type(group) is not str
            ):
                raise TypeError
            head = heads.get(topic)
            if head is None:
                head = heads[topic] = _offset_commit_key_head(group, topic)
            records.append(
                (
                    head + _I32.pack(partition),
                    _V3_EMPTY_METADATA.pack(
                        OFFSET_COMMIT_VALUE_VERSION,
                        value.offset,
                        value.leader_epoch,
                        0,
                        value.commit_timestamp,
                    ),
                )
            )
        except (struct.error, TypeError, UnicodeEncodeError):
            records.append(offset_commit_record(group, topic, partition, value))
    return records


def offset_commit_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    """The (key, None) that deletes the committed offset of ``group`` on ``topic``-``partition``."""
    return _encode_offset_commit_key(group, topic, partition), None


def group_metadata_record(group: str, value: GroupMetadataValue) -> tuple[bytes, bytes]:
    """The (key, value) of a group's metadata: GroupMetadataKey v2, GroupMetadataValue v3."""
    return _encode_group_metadata_key(group), encode_group_metadata_value(value)


def group_metadata_tombstone(group: str) -> tuple[bytes, None]:
    """The (key, None) that deletes ``group``."""
    return _encode_group_metadata_key(group), None


# --------------------------------------------------------------------------------------------
# Decoding


class _Reader:
    """A cursor over one key or value; every failure becomes a CorruptRecordError.

    ``where`` + ``field`` name the field being read, for error messages only.
    """

    __slots__ = ("buf", "field", "kind", "label", "pos", "where")

    def __init__(self, buf: bytes, kind: str) -> None:
        self.buf = buf
        self.kind = kind
        self.label = kind
        self.pos = 0
        self.where = ""
        self.field = "version"

    def fail(self, detail: str) -> NoReturn:
        label = "" if self.label == self.kind else f"{self.label}: "
        raise CorruptRecordError(self.kind, f"{label}{self.where}{self.field}: {detail}")

    def take(self, n: int) -> bytes:
        start = self.pos
        end = start + n
        if end > len(self.buf):
            self.fail(f"truncated: needs {n} byte(s) at byte {start}, {len(self.buf) - start} left")
        self.pos = end
        return self.buf[start:end]

    def int16(self) -> int:
        value: int = _I16.unpack(self.take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack(self.take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _I64.unpack(self.take(8))[0]
        return value

    def uvarint(self) -> int:
        """Kafka's unsigned varint: at most 5 bytes, the fifth without a continuation bit."""
        at = self.pos
        result = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                if result > 0xFFFFFFFF:
                    self.fail(f"varint {result} at byte {at} does not fit in 32 bits")
                return result
        self.fail(f"varint at byte {at} is longer than 5 bytes")

    def length(self, flexible: bool, *, nullable: bool, wide: bool) -> int:
        """A length prefix: -1 means null (allowed only when ``nullable``)."""
        at = self.pos
        if flexible:
            n = self.uvarint() - 1
        elif wide:
            n = self.int32()
        else:
            n = self.int16()
        if n < -1 or (n == -1 and not nullable):
            self.fail(f"invalid length {n} at byte {at}")
        return n

    def string(self, flexible: bool, *, nullable: bool = False) -> str | None:
        at = self.pos
        n = self.length(flexible, nullable=nullable, wide=False)
        if n == -1:
            return None
        if n > _MAX_STRING:
            self.fail(f"string length {n} at byte {at} exceeds {_MAX_STRING}")
        data = self.take(n)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(f"invalid UTF-8 in the string at byte {at}: {exc.reason}")

    def tagged_fields(self) -> None:
        # None of these records defines a tag, so every tagged field is unknown: skip it.
        self.field = "tagged fields"
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())  # size, data

    def finish(self) -> None:
        if self.pos != len(self.buf):
            self.where, self.field = "", "end"
            self.fail(f"{len(self.buf) - self.pos} unexpected byte(s) after the last field")

    def struct(self, fields: _Fields, flexible: bool) -> dict[str, Any]:
        where = self.where
        out: dict[str, Any] = {}
        for name, ftype in fields:
            self.field = name
            if ftype == _INT32:
                out[name] = self.int32()
            elif ftype == _INT64:
                out[name] = self.int64()
            elif ftype == _STRING:
                out[name] = self.string(flexible)
            elif ftype == _NULLABLE_STRING:
                out[name] = self.string(flexible, nullable=True)
            elif ftype == _BYTES:
                out[name] = self.take(self.length(flexible, nullable=False, wide=True))
            else:
                count = self.length(flexible, nullable=False, wide=True)
                # Each element takes at least one byte: a count beyond what is left is corrupt
                # (and must not make us allocate a huge list before noticing).
                if count > len(self.buf) - self.pos:
                    self.fail(f"{count} elements cannot fit in the remaining bytes")
                elements = []
                for index in range(count):
                    self.where = f"{where}{name}[{index}]."
                    elements.append(self.struct(ftype.fields, flexible))
                self.where = where
                out[name] = elements
        if flexible:
            self.tagged_fields()
        return out


def _as_bytes(data: object, what: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if data is None:
        raise TypeError(f"{what} is None (a tombstone has no value to decode)")
    raise TypeError(f"{what} must be bytes, got {_type_name(data)}")


def _decode_key_slow(key: bytes) -> RecordKey:
    reader = _Reader(key, "key")
    version = reader.int16()
    if version < 0:
        reader.fail(f"negative key version {version}")
    if version == HANDOFF_GROUP_KEY_VERSION:
        reader.label = f"HandoffGroupKey v{version}"
        fields = reader.struct(_GROUP_METADATA_KEY_FIELDS, False)
        reader.finish()
        return HandoffGroupKey(**fields)
    if version > GROUP_METADATA_KEY_VERSION:
        raise UnknownRecordTypeError(version)
    if version == GROUP_METADATA_KEY_VERSION:
        reader.label = "GroupMetadataKey v2"
        fields = reader.struct(_GROUP_METADATA_KEY_FIELDS, False)
        reader.finish()
        return GroupMetadataKey(**fields)
    reader.label = f"OffsetCommitKey v{version}"
    fields = reader.struct(_OFFSET_COMMIT_KEY_FIELDS, False)
    reader.finish()
    return OffsetCommitKey(**fields)


def decode_key(key: bytes | bytearray | memoryview) -> RecordKey:
    """Decode a record key: OffsetCommitKey (versions 0, 1), GroupMetadataKey (version 2) or
    HandoffGroupKey (version 1004, this engine's own).

    Raises UnknownRecordTypeError for any other key version above 2, CorruptRecordError for anything
    that is not a well-formed key.
    """
    data = _as_bytes(key, "key")
    if len(data) <= _REMEMBERED_KEY_BYTES:
        return _remembered_key(data)
    return _decode_key(data)


#: A replay decodes the same keys over and over (a group commits the same partitions all day):
#: keys up to this size are remembered (at most 16,384 of them; the result is immutable).
_REMEMBERED_KEY_BYTES = 512


@functools.lru_cache(maxsize=16384)
def _remembered_key(data: bytes) -> RecordKey:
    return _decode_key(data)


def _decode_key(data: bytes) -> RecordKey:
    # Fast path for well-formed keys; anything unusual is re-read by the slow path, which
    # either raises the precise error or returns the same result.
    try:
        version, n = _I16_I16.unpack_from(data)
        if n >= 0 and 0 <= version <= 2:
            end = 4 + n
            group = data[4:end].decode("utf-8")
            if version == 2:
                if end == len(data):
                    return GroupMetadataKey(group=group)
            else:
                (n,) = _I16.unpack_from(data, end)
                start = end + 2
                end = start + n
                if n >= 0:
                    topic = data[start:end].decode("utf-8")
                    (partition,) = _I32.unpack_from(data, end)
                    if end + 4 == len(data):
                        return OffsetCommitKey(group=group, topic=topic, partition=partition)
    except (struct.error, UnicodeDecodeError):
        pass
    return _decode_key_slow(data)


def _read_value(
    data: bytes, kind: str, versions: dict[int, tuple[_Fields, bool]]
) -> tuple[int, dict[str, Any]]:
    reader = _Reader(data, kind)
    version = reader.int16()
    if version not in versions:
        reader.fail(
            f"unknown version {version} (this engine reads {min(versions)}-{max(versions)})"
        )
    reader.label = f"{kind} v{version}"
    fields, flexible = versions[version]
    out = reader.struct(fields, flexible)
    reader.finish()
    return version, out


def decode_offset_commit_value(value: bytes | bytearray | memoryview) -> OffsetCommitValue:
    """Decode an OffsetCommitValue of any version 0-4 (check for a tombstone first)."""
    data = _as_bytes(value, "value")
    # Fast paths: v3 (what Kafka 2.1+ writes) with its exact length; in one go without metadata.
    if len(data) == _V3_EMPTY_METADATA.size:
        version, offset, leader_epoch, n, commit_timestamp = _V3_EMPTY_METADATA.unpack(data)
        if version == 3 and n == 0:
            return OffsetCommitValue(
                offset=offset, leader_epoch=leader_epoch, commit_timestamp=commit_timestamp
            )
    try:
        version, offset, leader_epoch, n = _V3_HEAD.unpack_from(data)
        if version == 3 and n >= 0 and len(data) == _V3_HEAD.size + n + 8:
            end = _V3_HEAD.size + n
            return OffsetCommitValue(
                offset=offset,
                leader_epoch=leader_epoch,
                metadata=data[_V3_HEAD.size : end].decode("utf-8"),
                commit_timestamp=_I64.unpack_from(data, end)[0],
            )
    except (struct.error, UnicodeDecodeError):
        pass
    _, fields = _read_value(data, "OffsetCommitValue", _OFFSET_COMMIT_VALUE_VERSIONS)
    return OffsetCommitValue(**fields)


def _member(fields: dict[str, Any]) -> MemberMetadata:
    # v0 has no rebalance timeout: Kafka's readGroupMessageValue uses the session timeout.
    fields.setdefault("rebalance_timeout", fields["session_timeout"])
    fields.setdefault("group_instance_id", None)
    return MemberMetadata(**fields)


def decode_group_metadata_value(value: bytes | bytearray | memoryview) -> GroupMetadataValue:
    """Decode a GroupMetadataValue of any version 0-4 (check for a tombstone first)."""
    data = _as_bytes(value, "value")
    try:
        return _decode_group_metadata_value_v3(data)
    except (struct.error, UnicodeDecodeError, ValueError):
        pass  # not a well-formed v3: the table-driven reader decodes it or names the fault
    _, fields = _read_value(data, "GroupMetadataValue", _GROUP_METADATA_VALUE_VERSIONS)
    fields["members"] = tuple(_member(member) for member in fields["members"])
    return GroupMetadataValue(**fields)


def _decode_group_metadata_value_v3(data: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue v3 (what this engine and Kafka write) read field by field: the
    same result as the table-driven reader for a well-formed one. Raises ValueError (or
    struct.error, UnicodeDecodeError) for anything else, and the caller then lets the
    table-driven reader decode it (another version) or name what is wrong."""
    end = len(data)

    def text(at: int, nullable: bool) -> tuple[str | None, int]:
        (n,) = _I16.unpack_from(data, at)
        at += 2
        if n < 0:
            if n == -1 and nullable:
                return None, at
            raise ValueError
        if at + n > end:
            raise ValueError
        return data[at : at + n].decode("utf-8"), at + n

    def blob(at: int) -> tuple[bytes, int]:
        (n,) = _I32.unpack_from(data, at)
        at += 4
        if n < 0 or at + n > end:
            raise ValueError
        return data[at : at + n], at + n

    (version,) = _I16.unpack_from(data, 0)
    if version != GROUP_METADATA_VALUE_VERSION:
        raise ValueError
    protocol_type, at = text(2, False)
    (generation,) = _I32.unpack_from(data, at)
    protocol, at = text(at + 4, True)
    leader, at = text(at, True)
    current_state_timestamp, count = _I64_I32.unpack_from(data, at)
    at += _I64_I32.size
    if count < 0 or count > end - at:
        raise ValueError
    members = []
    for _ in range(count):
        member_id, at = text(at, False)
        group_instance_id, at = text(at, True)
        client_id, at = text(at, False)
        client_host, at = text(at, False)
        rebalance_timeout, session_timeout = _I32_I32.unpack_from(data, at)
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


# --------------------------------------------------------------------------------------------
# Handoff groups (this engine's own record type, key version 1004)
#
# HandoffGroupValue v0, non-flexible, Kafka's primitive encodings (string = int16 length +
# UTF-8, arrays = int32 count):
#
#     state string, epoch int32, state_timestamp int64,
#     members [member_id string, client_id string, client_host string, session_timeout int32,
#              topics [string], assignment [TP], owned [TP], to_start [TP], to_close [TP]]
#     TP = topic string, partition int32


def _encode_handoff_group_key(group: str) -> bytes:
    out = [_I16.pack(HANDOFF_GROUP_KEY_VERSION)]
    _put_string(out, group)
    return b"".join(out)


def encode_handoff_group_value(value: HandoffGroupValue) -> bytes:
    """Encode ``value`` as a HandoffGroupValue v0."""
    if not isinstance(value, HandoffGroupValue):
        raise TypeError(f"expected a HandoffGroupValue, got {_type_name(value)}")
    out = [_I16.pack(HANDOFF_GROUP_VALUE_VERSION)]
    _put_string(out, value.state)
    out.append(_I32.pack(value.epoch))
    out.append(_I64.pack(value.state_timestamp))
    out.append(_I32.pack(len(value.members)))
    for member in value.members:
        _put_string(out, member.member_id)
        _put_string(out, member.client_id)
        _put_string(out, member.client_host)
        out.append(_I32.pack(member.session_timeout))
        out.append(_I32.pack(len(member.topics)))
        for topic in member.topics:
            _put_string(out, topic)
        for partitions in (member.assignment, member.owned, member.to_start, member.to_close):
            out.append(_I32.pack(len(partitions)))
            for topic, partition in partitions:
                _put_string(out, topic)
                out.append(_I32.pack(partition))
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
    reader = _Reader(_as_bytes(value, "value"), "HandoffGroupValue")
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
