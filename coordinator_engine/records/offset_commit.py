"""OffsetCommit records: the committed offsets of every group kind (`offsets.py` writes and
replays them), OffsetCommitKey v1 + OffsetCommitValue v3 (v1 with an explicit expire timestamp).

Offset commits are encoded on the hot path: `offset_commit_record(s)` pack with precompiled
``struct.Struct`` objects and fall back to the table-driven encoder (which has the precise
error messages) only when the fast path fails; both produce identical bytes. Keys and values
are decoded the same way: a fast path for what Kafka writes, the table-driven reader for the
rest.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from typing import Final

from .codec import (
    I16,
    I16_I16,
    I32,
    I64,
    RecordType,
    as_bytes,
    encode,
    read_key,
    read_value,
    type_name,
)
from .schemas import (
    OFFSET_COMMIT_KEY_FIELDS,
    OFFSET_COMMIT_KEY_VERSION,
    OFFSET_COMMIT_KEY_VERSIONS,
    OFFSET_COMMIT_VALUE_VERSION,
    OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY,
    OFFSET_COMMIT_VALUE_VERSIONS,
    OffsetCommitKey,
    OffsetCommitValue,
)

__all__ = [
    "OFFSET_COMMIT",
    "decode_offset_commit_key",
    "decode_offset_commit_value",
    "encode_offset_commit_value",
    "offset_commit_record",
    "offset_commit_records",
    "offset_commit_tombstone",
]

# Offset commit fast paths: key = [v, len] group [len] topic [partition];
# value v3 = [v, offset, epoch, len] metadata [commit ts];
# value v1 = [v, offset, len] metadata [commit ts, expire ts].
_V3_HEAD: Final = struct.Struct(">hqih")
_V3_EMPTY_METADATA: Final = struct.Struct(">hqihq")
_V1_HEAD: Final = struct.Struct(">hqh")
_I64_I64: Final = struct.Struct(">qq")


def encode_offset_commit_value(value: OffsetCommitValue, *, version: int | None = None) -> bytes:
    """Encode ``value`` as an OffsetCommitValue of ``version`` (0-4).

    By default the version Kafka writes: v1 when ``expire_timestamp`` is set, v3 otherwise.
    Fields the version lacks are dropped (they are ignorable in Kafka's schema).
    Raises TypeError / ValueError for a field of the wrong type or out of range.
    """
    if not isinstance(value, OffsetCommitValue):
        raise TypeError(f"value must be an OffsetCommitValue, got {type_name(value)}")
    if version is None:
        version = (
            OFFSET_COMMIT_VALUE_VERSION
            if value.expire_timestamp == -1
            else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        )
    elif version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"OffsetCommitValue has versions 0-4, not {version}")
    return encode(OFFSET_COMMIT_VALUE_VERSIONS, version, value, "OffsetCommitValue")


def _encode_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return encode(
        OFFSET_COMMIT_KEY_VERSIONS,
        OFFSET_COMMIT_KEY_VERSION,
        OffsetCommitKey(group=group, topic=topic, partition=partition),
        "OffsetCommitKey",
    )


@functools.lru_cache(maxsize=4096)
def _offset_commit_key_head(group: str, topic: str) -> bytes:
    """OffsetCommitKey v1 up to its partition: a group commits the same topics again and again.
    Raises for what the fast path cannot encode (then the table-driven encoder reports it)."""
    g = group.encode("utf-8")
    t = topic.encode("utf-8")
    return I16_I16.pack(OFFSET_COMMIT_KEY_VERSION, len(g)) + g + I16.pack(len(t)) + t


def offset_commit_record(
    group: str, topic: str, partition: int, value: OffsetCommitValue
) -> tuple[bytes, bytes]:
    """The (key, value) of an offset commit: OffsetCommitKey v1, OffsetCommitValue v3 (v1 when
    ``value.expire_timestamp`` is set)."""
    try:
        if type(group) is not str or type(topic) is not str:
            raise TypeError
        key = _offset_commit_key_head(group, topic) + I32.pack(partition)
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
                + I64.pack(value.commit_timestamp)
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
                    head + I32.pack(partition),
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


def decode_offset_commit_key(data: bytes, version: int) -> OffsetCommitKey:
    """An OffsetCommitKey of ``version`` (0 or 1): what Kafka writes in one go, anything unusual
    re-read by the table-driven reader, which raises the precise error or returns the same."""
    try:
        (n,) = I16.unpack_from(data, 2)
        if n >= 0:
            end = 4 + n
            group = data[4:end].decode("utf-8")
            (n,) = I16.unpack_from(data, end)
            start = end + 2
            end = start + n
            if n >= 0:
                topic = data[start:end].decode("utf-8")
                (partition,) = I32.unpack_from(data, end)
                if end + 4 == len(data):
                    return OffsetCommitKey(group=group, topic=topic, partition=partition)
    except (struct.error, UnicodeDecodeError):
        pass
    return read_key(data, f"OffsetCommitKey v{version}", OFFSET_COMMIT_KEY_FIELDS, OffsetCommitKey)


def decode_offset_commit_value(value: bytes | bytearray | memoryview) -> OffsetCommitValue:
    """Decode an OffsetCommitValue of any version 0-4 (check for a tombstone first)."""
    data = as_bytes(value, "value")
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
                commit_timestamp=I64.unpack_from(data, end)[0],
            )
    except (struct.error, UnicodeDecodeError):
        pass
    _, fields = read_value(data, "OffsetCommitValue", OFFSET_COMMIT_VALUE_VERSIONS)
    return OffsetCommitValue(**fields)


#: The OffsetCommit record type: key versions 0 and 1.
OFFSET_COMMIT = RecordType(
    name="OffsetCommit",
    key_versions=tuple(OFFSET_COMMIT_KEY_VERSIONS),
    key_class=OffsetCommitKey,
    decode_key=decode_offset_commit_key,
    decode_value=decode_offset_commit_value,
)
