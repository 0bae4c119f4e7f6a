"""Kafka's __consumer_offsets record layouts.

Golden vectors are written out by hand from Kafka's JSON schemas (OffsetCommitKey/Value,
GroupMetadataKey/Value), never produced by the encoder under test.
"""

from __future__ import annotations

import contextlib
import pickle
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_engine.classic.records import (
    decode_group_metadata_value,
    encode_group_metadata_value,
    group_metadata_record,
    group_metadata_tombstone,
)
from coordinator_engine.coordinator import decode_key
from coordinator_engine.records import (
    CorruptRecordError,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordTypeError,
    decode_offset_commit_value,
    encode_offset_commit_value,
    offset_commit_record,
    offset_commit_tombstone,
)


def i16(n: int) -> bytes:
    return n.to_bytes(2, "big", signed=True)


def i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def s16(s: str) -> bytes:
    """A non-flexible string: int16 length, UTF-8."""
    data = s.encode()
    return i16(len(data)) + data


# ---------------------------------------------------------------------------------------------
# Golden vectors, byte by byte

OFFSET_KEY_BYTES = (
    b"\x00\x01"  # key version 1: OffsetCommitKey
    b"\x00\x07group-1"  # group
    b"\x00\x07topic-a"  # topic
    b"\x00\x00\x00\x07"  # partition 7
)

OFFSET_VALUE_V3_BYTES = (
    b"\x00\x03"  # value version 3
    b"\x00\x00\x00\x00\x00\x00\x00\x64"  # offset 100
    b"\x00\x00\x00\x05"  # leader epoch 5
    b"\x00\x01m"  # metadata "m"
    b"\x00\x00\x00\x00\x00\x00\x03\xe8"  # commit timestamp 1000
)

OFFSET_VALUE_V1_BYTES = (
    b"\x00\x01"  # value version 1 (an explicit expire timestamp)
    b"\x00\x00\x00\x00\x00\x00\x00\x01"  # offset 1
    b"\x00\x00"  # metadata ""
    b"\x00\x00\x00\x00\x00\x00\x00\x02"  # commit timestamp 2
    b"\x00\x00\x00\x00\x00\x00\x00\x03"  # expire timestamp 3
)

GROUP_KEY_BYTES = b"\x00\x02" + b"\x00\x03grp"  # key version 2: GroupMetadataKey "grp"

MEMBER = MemberMetadata(
    member_id="m-1",
    group_instance_id=None,
    client_id="c",
    client_host="/h",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x01\x02",
    assignment=b"",
)
GROUP_VALUE = GroupMetadataValue(
    protocol_type="consumer",
    generation=1,
    protocol="range",
    leader="m-1",
    current_state_timestamp=1000,
    members=(MEMBER,),
)
GROUP_VALUE_V3_BYTES = (
    b"\x00\x03"  # value version 3
    b"\x00\x08consumer"  # protocol type
    b"\x00\x00\x00\x01"  # generation 1
    b"\x00\x05range"  # protocol
    b"\x00\x03m-1"  # leader
    b"\x00\x00\x00\x00\x00\x00\x03\xe8"  # current state timestamp 1000
    b"\x00\x00\x00\x01"  # one member:
    b"\x00\x03m-1"  # member id
    b"\xff\xff"  # group instance id: null
    b"\x00\x01c"  # client id
    b"\x00\x02/h"  # client host
    b"\x00\x04\x93\xe0"  # rebalance timeout 300000
    b"\x00\x00\xaf\xc8"  # session timeout 45000
    b"\x00\x00\x00\x02\x01\x02"  # subscription
    b"\x00\x00\x00\x00"  # assignment: empty
)

EMPTY_GROUP_V3_BYTES = (
    b"\x00\x03"
    b"\x00\x00"  # protocol type ""
    b"\x00\x00\x00\x00"  # generation 0
    b"\xff\xff"  # protocol: null
    b"\xff\xff"  # leader: null
    b"\xff\xff\xff\xff\xff\xff\xff\xff"  # current state timestamp -1
    b"\x00\x00\x00\x00"  # no members
)


def test_offset_commit_record_matches_kafka_layout_byte_for_byte() -> None:
    value = OffsetCommitValue(offset=100, leader_epoch=5, metadata="m", commit_timestamp=1000)
    assert offset_commit_record("group-1", "topic-a", 7, value) == (
        OFFSET_KEY_BYTES,
        OFFSET_VALUE_V3_BYTES,
    )


def test_offset_commit_with_expire_timestamp_is_written_as_v1_without_leader_epoch() -> None:
    value = OffsetCommitValue(
        offset=1, leader_epoch=9, metadata="", commit_timestamp=2, expire_timestamp=3
    )
    assert offset_commit_record("group-1", "topic-a", 7, value)[1] == OFFSET_VALUE_V1_BYTES
    assert decode_offset_commit_value(OFFSET_VALUE_V1_BYTES) == replace(value, leader_epoch=-1)


def test_offset_commit_with_empty_metadata_and_default_epoch() -> None:
    value = OffsetCommitValue(offset=5, commit_timestamp=1000)
    assert offset_commit_record("g", "t", 0, value) == (
        b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00",
        b"\x00\x03" + i64(5) + b"\xff\xff\xff\xff" + b"\x00\x00" + i64(1000),
    )


def test_group_metadata_record_matches_kafka_layout_byte_for_byte() -> None:
    assert group_metadata_record("grp", GROUP_VALUE) == (GROUP_KEY_BYTES, GROUP_VALUE_V3_BYTES)


def test_empty_group_metadata_has_null_protocol_and_leader() -> None:
    empty = GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None)
    assert group_metadata_record("grp", empty)[1] == EMPTY_GROUP_V3_BYTES
    assert decode_group_metadata_value(EMPTY_GROUP_V3_BYTES) == empty


def test_tombstones_have_the_record_key_and_no_value() -> None:
    assert offset_commit_tombstone("group-1", "topic-a", 7) == (OFFSET_KEY_BYTES, None)
    assert group_metadata_tombstone("grp") == (GROUP_KEY_BYTES, None)


def test_golden_vectors_decode() -> None:
    assert decode_key(OFFSET_KEY_BYTES) == OffsetCommitKey(
        group="group-1", topic="topic-a", partition=7
    )
    assert decode_key(GROUP_KEY_BYTES) == GroupMetadataKey(group="grp")
    assert decode_offset_commit_value(OFFSET_VALUE_V3_BYTES) == OffsetCommitValue(
        offset=100, leader_epoch=5, metadata="m", commit_timestamp=1000
    )
    assert decode_group_metadata_value(GROUP_VALUE_V3_BYTES) == GROUP_VALUE


def test_key_version_0_is_an_offset_commit_key_with_the_same_layout() -> None:
    assert decode_key(b"\x00\x00" + OFFSET_KEY_BYTES[2:]) == OffsetCommitKey(
        group="group-1", topic="topic-a", partition=7
    )


def test_strings_are_utf8_with_byte_lengths() -> None:
    key, _ = offset_commit_tombstone("gruppé", "tópico", 0)
    assert key == b"\x00\x01\x00\x07grupp\xc3\xa9\x00\x07t\xc3\xb3pico\x00\x00\x00\x00"
    assert decode_key(key) == OffsetCommitKey(group="gruppé", topic="tópico", partition=0)


# ---------------------------------------------------------------------------------------------
# Every value version a cluster may hold, written out by hand


def test_decodes_offset_commit_value_v0() -> None:
    data = b"\x00\x00" + i64(42) + s16("meta") + i64(7)
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=42, metadata="meta", commit_timestamp=7
    )


def test_decodes_offset_commit_value_v1_with_expire_timestamp() -> None:
    data = b"\x00\x01" + i64(42) + s16("") + i64(7) + i64(99)
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=42, commit_timestamp=7, expire_timestamp=99
    )


def test_decodes_offset_commit_value_v2() -> None:
    data = b"\x00\x02" + i64(42) + s16("x") + i64(7)
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=42, metadata="x", commit_timestamp=7
    )


def test_decodes_offset_commit_value_v4_flexible() -> None:
    data = (
        b"\x00\x04"
        + i64(42)
        + i32(3)  # leader epoch
        + b"\x02m"  # compact string: length + 1 = 2
        + i64(7)
        + b"\x00"  # no tagged fields
    )
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=42, leader_epoch=3, metadata="m", commit_timestamp=7
    )


def test_offset_commit_value_v4_skips_unknown_tagged_fields() -> None:
    data = (
        b"\x00\x04"
        + i64(42)
        + i32(3)
        + b"\x01"  # compact string ""
        + i64(7)
        + b"\x02"  # two tagged fields
        + b"\x05\x03abc"  # tag 5, 3 bytes
        + b"\x81\x01\x00"  # tag 129 (two-byte varint), empty
    )
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=42, leader_epoch=3, commit_timestamp=7
    )


def group_head(version: int, *, with_state_timestamp: bool) -> bytes:
    head = i16(version) + s16("consumer") + i32(2) + s16("range") + s16("m-1")
    return head + (i64(1000) if with_state_timestamp else b"")


def test_decodes_group_metadata_value_v0_taking_session_timeout_as_rebalance_timeout() -> None:
    data = (
        group_head(0, with_state_timestamp=False)
        + i32(1)
        + s16("m-1")
        + s16("c")
        + s16("/h")
        + i32(10000)  # session timeout; v0 has no rebalance timeout
        + i32(2)
        + b"\x01\x02"
        + i32(1)
        + b"\x09"
    )
    assert decode_group_metadata_value(data) == GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol="range",
        leader="m-1",
        members=(
            MemberMetadata(
                member_id="m-1",
                group_instance_id=None,
                client_id="c",
                client_host="/h",
                rebalance_timeout=10000,
                session_timeout=10000,
                subscription=b"\x01\x02",
                assignment=b"\x09",
            ),
        ),
    )


V1_MEMBER = (
    s16("m-1") + s16("c") + s16("/h") + i32(300000) + i32(45000) + i32(2) + b"\x01\x02" + i32(0)
)


def test_decodes_group_metadata_value_v1() -> None:
    data = group_head(1, with_state_timestamp=False) + i32(1) + V1_MEMBER
    assert decode_group_metadata_value(data) == replace(
        GROUP_VALUE, generation=2, current_state_timestamp=-1
    )


def test_decodes_group_metadata_value_v2() -> None:
    data = group_head(2, with_state_timestamp=True) + i32(1) + V1_MEMBER
    assert decode_group_metadata_value(data) == replace(GROUP_VALUE, generation=2)


def test_decodes_group_metadata_value_v4_flexible_with_tagged_fields() -> None:
    data = (
        b"\x00\x04"
        + b"\x09consumer"  # compact string: 8 + 1
        + i32(2)
        + b"\x06range"
        + b"\x04m-1"
        + i64(1000)
        + b"\x02"  # compact array: 1 member + 1
        + b"\x04m-1"
        + b"\x05inst"  # group instance id
        + b"\x02c"
        + b"\x03/h"
        + i32(300000)
        + i32(45000)
        + b"\x03\x01\x02"  # compact bytes: 2 + 1
        + b"\x01"  # compact bytes: empty
        + b"\x01\x07\x01\xff"  # member's tagged fields: one, tag 7, 1 byte
        + b"\x00"  # value's tagged fields: none
    )
    assert decode_group_metadata_value(data) == GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol="range",
        leader="m-1",
        current_state_timestamp=1000,
        members=(replace(MEMBER, group_instance_id="inst"),),
    )


def test_decodes_group_metadata_value_v4_with_null_compact_strings() -> None:
    data = b"\x00\x04" + b"\x01" + i32(0) + b"\x00" + b"\x00" + i64(-1) + b"\x01" + b"\x00"
    assert decode_group_metadata_value(data) == GroupMetadataValue(
        protocol_type="", generation=0, protocol=None, leader=None
    )


# ---------------------------------------------------------------------------------------------
# Round trips: every record type and version

texts = st.text(max_size=40)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
offset_values = st.builds(
    OffsetCommitValue,
    offset=int64s,
    leader_epoch=int32s,
    metadata=texts,
    commit_timestamp=int64s,
    expire_timestamp=int64s,
)
members = st.builds(
    MemberMetadata,
    member_id=texts,
    group_instance_id=st.none() | texts,
    client_id=texts,
    client_host=texts,
    rebalance_timeout=int32s,
    session_timeout=int32s,
    subscription=st.binary(max_size=64),
    assignment=st.binary(max_size=64),
)
group_values = st.builds(
    GroupMetadataValue,
    protocol_type=texts,
    generation=int32s,
    protocol=st.none() | texts,
    leader=st.none() | texts,
    current_state_timestamp=int64s,
    members=st.lists(members, max_size=4).map(tuple),
)


def offset_value_as_version(value: OffsetCommitValue, version: int) -> OffsetCommitValue:
    """What survives encoding into ``version``: fields it lacks take their defaults."""
    return replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp=value.expire_timestamp if version == 1 else -1,
    )


def group_value_as_version(value: GroupMetadataValue, version: int) -> GroupMetadataValue:
    return replace(
        value,
        current_state_timestamp=value.current_state_timestamp if version >= 2 else -1,
        members=tuple(
            replace(
                m,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                rebalance_timeout=m.rebalance_timeout if version >= 1 else m.session_timeout,
            )
            for m in value.members
        ),
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@given(value=offset_values)
def test_offset_commit_value_round_trips_in_every_version(
    version: int, value: OffsetCommitValue
) -> None:
    data = encode_offset_commit_value(value, version=version)
    assert data[:2] == i16(version)
    assert decode_offset_commit_value(data) == offset_value_as_version(value, version)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
@given(value=group_values)
def test_group_metadata_value_round_trips_in_every_version(
    version: int, value: GroupMetadataValue
) -> None:
    data = encode_group_metadata_value(value, version=version)
    assert data[:2] == i16(version)
    assert decode_group_metadata_value(data) == group_value_as_version(value, version)


@given(group=texts, topic=texts, partition=int32s, value=offset_values)
def test_offset_commit_record_round_trips_and_picks_kafkas_version(
    group: str, topic: str, partition: int, value: OffsetCommitValue
) -> None:
    key, data = offset_commit_record(group, topic, partition, value)
    assert decode_key(key) == OffsetCommitKey(group=group, topic=topic, partition=partition)
    # The hot path agrees with the table-driven encoder (which the tombstone's key uses).
    assert key == offset_commit_tombstone(group, topic, partition)[0]
    assert data == encode_offset_commit_value(value)
    version = 1 if value.expire_timestamp != -1 else 3
    assert data[:2] == i16(version)
    assert decode_offset_commit_value(data) == offset_value_as_version(value, version)


@given(group=texts, value=group_values)
def test_group_metadata_record_round_trips_as_v3(group: str, value: GroupMetadataValue) -> None:
    key, data = group_metadata_record(group, value)
    assert decode_key(key) == GroupMetadataKey(group=group)
    assert data[:2] == b"\x00\x03"
    assert decode_group_metadata_value(data) == value


def test_longest_kafka_string_round_trips() -> None:
    group = "g" * 0x7FFF
    key, _ = offset_commit_tombstone(group, "t", 0)
    assert decode_key(key) == OffsetCommitKey(group=group, topic="t", partition=0)


# ---------------------------------------------------------------------------------------------
# Corrupt input: CorruptRecordError and nothing else

VALID_KEYS = [
    OFFSET_KEY_BYTES,
    b"\x00\x00" + OFFSET_KEY_BYTES[2:],
    GROUP_KEY_BYTES,
]
VALID_OFFSET_VALUES = [
    encode_offset_commit_value(
        OffsetCommitValue(
            offset=1, leader_epoch=2, metadata="md", commit_timestamp=3, expire_timestamp=4
        ),
        version=v,
    )
    for v in range(5)
]
VALID_GROUP_VALUES = [
    encode_group_metadata_value(replace(GROUP_VALUE, members=(MEMBER, MEMBER)), version=v)
    for v in range(5)
]


@pytest.mark.parametrize("data", VALID_KEYS)
def test_key_truncated_at_any_byte_is_corrupt(data: bytes) -> None:
    for end in range(len(data)):
        with pytest.raises(CorruptRecordError) as info:
            decode_key(data[:end])
        assert info.value.kind == "key"
        assert not isinstance(info.value, UnknownRecordTypeError)


@pytest.mark.parametrize("data", VALID_OFFSET_VALUES)
def test_offset_commit_value_truncated_at_any_byte_is_corrupt(data: bytes) -> None:
    for end in range(len(data)):
        with pytest.raises(CorruptRecordError) as info:
            decode_offset_commit_value(data[:end])
        assert info.value.kind == "OffsetCommitValue"


@pytest.mark.parametrize("data", VALID_GROUP_VALUES)
def test_group_metadata_value_truncated_at_any_byte_is_corrupt(data: bytes) -> None:
    for end in range(len(data)):
        with pytest.raises(CorruptRecordError) as info:
            decode_group_metadata_value(data[:end])
        assert info.value.kind == "GroupMetadataValue"


@pytest.mark.parametrize("data", VALID_KEYS)
def test_key_with_trailing_bytes_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="unexpected byte"):
        decode_key(data + b"\x00")


@pytest.mark.parametrize("data", VALID_OFFSET_VALUES)
def test_offset_commit_value_with_trailing_bytes_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="unexpected byte"):
        decode_offset_commit_value(data + b"\x00")


@pytest.mark.parametrize("data", VALID_GROUP_VALUES)
def test_group_metadata_value_with_trailing_bytes_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="unexpected byte"):
        decode_group_metadata_value(data + b"\x00")


@pytest.mark.parametrize("version", [9, 11, 15, 0x7FFF])
def test_unknown_key_version_raises_unknown_record_type_naming_it(version: int) -> None:
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_key(i16(version) + b"\x00\x01g")
    assert info.value.version == version
    assert info.value.kind == "key"
    assert f"key version {version}" in str(info.value)


def test_negative_key_version_is_corrupt_not_an_unknown_type() -> None:
    with pytest.raises(CorruptRecordError, match="negative key version -1") as info:
        decode_key(b"\xff\xff\x00\x01g")
    assert not isinstance(info.value, UnknownRecordTypeError)


@pytest.mark.parametrize("version", [-1, 5, 100])
def test_unknown_value_versions_are_corrupt(version: int) -> None:
    with pytest.raises(CorruptRecordError, match=f"unknown version {version}"):
        decode_offset_commit_value(i16(version) + OFFSET_VALUE_V3_BYTES[2:])
    with pytest.raises(CorruptRecordError, match=f"unknown version {version}"):
        decode_group_metadata_value(i16(version) + GROUP_VALUE_V3_BYTES[2:])


def test_invalid_utf8_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="invalid UTF-8"):
        decode_key(b"\x00\x02\x00\x02\xc3\x28")
    with pytest.raises(CorruptRecordError, match="invalid UTF-8"):
        decode_key(b"\x00\x01\x00\x01g\x00\x01\xff\x00\x00\x00\x00")
    with pytest.raises(CorruptRecordError, match="invalid UTF-8"):
        decode_offset_commit_value(b"\x00\x03" + i64(1) + i32(-1) + b"\x00\x01\x80" + i64(0))


def test_negative_lengths_are_corrupt_except_null_for_nullable_strings() -> None:
    head = b"\x00\x03" + s16("consumer") + i32(1)
    tail = i64(-1) + i32(0)
    # -1: null protocol and leader are fine
    assert decode_group_metadata_value(head + i16(-1) + i16(-1) + tail).protocol is None
    # -2 is not a length
    with pytest.raises(CorruptRecordError, match="invalid length -2"):
        decode_group_metadata_value(head + i16(-2) + i16(-1) + tail)
    # protocol_type is not nullable
    with pytest.raises(CorruptRecordError, match="invalid length -1"):
        decode_group_metadata_value(b"\x00\x03" + i16(-1) + i32(1) + i16(-1) * 2 + tail)
    # a member array of -1
    with pytest.raises(CorruptRecordError, match="invalid length -1"):
        decode_group_metadata_value(head + i16(-1) + i16(-1) + i64(-1) + i32(-1))
    # key strings are not nullable
    with pytest.raises(CorruptRecordError, match="invalid length -1"):
        decode_key(b"\x00\x02\xff\xff")
    # bytes are not nullable
    member = s16("m") + i16(-1) + s16("c") + s16("h") + i32(1) + i32(1) + i32(-1) + i32(0)
    with pytest.raises(CorruptRecordError, match="invalid length -1"):
        decode_group_metadata_value(head + s16("r") + s16("m") + i64(0) + i32(1) + member)


def test_member_count_beyond_the_remaining_bytes_is_corrupt() -> None:
    data = b"\x00\x03" + s16("") + i32(0) + i16(-1) * 2 + i64(-1) + i32(2**31 - 1)
    with pytest.raises(CorruptRecordError, match="cannot fit"):
        decode_group_metadata_value(data)


def test_overlong_varint_is_corrupt() -> None:
    data = b"\x00\x04" + i64(1) + i32(1) + b"\x80\x80\x80\x80\x80\x01" + i64(0) + b"\x00"
    with pytest.raises(CorruptRecordError, match="varint"):
        decode_offset_commit_value(data)


def test_flexible_string_longer_than_int16_is_corrupt() -> None:
    data = b"\x00\x04" + i64(1) + i32(1) + b"\x81\x80\x02" + b"x" * 0x8000 + i64(0) + b"\x00"
    with pytest.raises(CorruptRecordError, match="exceeds 32767"):
        decode_offset_commit_value(data)


def test_corrupt_record_error_names_kind_and_detail_and_pickles() -> None:
    with pytest.raises(CorruptRecordError) as info:
        decode_offset_commit_value(OFFSET_VALUE_V3_BYTES[:5])
    error = info.value
    assert isinstance(error, ValueError)
    assert error.kind == "OffsetCommitValue"
    assert "truncated" in error.detail
    assert str(error) == f"corrupt OffsetCommitValue: {error.detail}"
    assert "OffsetCommitValue v3" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.kind, copy.detail) == (CorruptRecordError, error.kind, error.detail)
    unknown = pickle.loads(pickle.dumps(UnknownRecordTypeError(7)))
    assert (type(unknown), unknown.version, str(unknown)) == (
        UnknownRecordTypeError,
        7,
        str(UnknownRecordTypeError(7)),
    )


@settings(max_examples=300)
@given(data=st.binary(max_size=80))
def test_decoders_raise_only_corrupt_record_error_on_arbitrary_bytes(data: bytes) -> None:
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        with contextlib.suppress(CorruptRecordError):
            decode(data)


@settings(max_examples=300)
@given(
    data=st.sampled_from(VALID_KEYS + VALID_OFFSET_VALUES + VALID_GROUP_VALUES),
    position=st.integers(0, 10_000),
    byte=st.integers(0, 255),
)
def test_decoders_raise_only_corrupt_record_error_on_damaged_records(
    data: bytes, position: int, byte: int
) -> None:
    damaged = bytearray(data)
    damaged[position % len(data)] = byte
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        with contextlib.suppress(CorruptRecordError):
            decode(bytes(damaged))


def test_decoding_a_tombstone_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="tombstone"):
        decode_offset_commit_value(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be bytes"):
        decode_key("\x00\x02")  # type: ignore[arg-type]


def test_decoders_accept_bytearray_and_memoryview() -> None:
    assert decode_key(bytearray(GROUP_KEY_BYTES)) == GroupMetadataKey(group="grp")
    assert decode_group_metadata_value(memoryview(GROUP_VALUE_V3_BYTES)) == GROUP_VALUE


# ---------------------------------------------------------------------------------------------
# Encoding bad input: clear TypeError / ValueError naming the field


def test_encoding_an_overlong_string_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"OffsetCommitValue\.metadata is 32768 bytes"):
        offset_commit_record(
            "g", "t", 0, OffsetCommitValue(offset=0, metadata="x" * 0x8000, commit_timestamp=0)
        )
    with pytest.raises(ValueError, match=r"OffsetCommitKey\.group"):
        offset_commit_record("é" * 0x4000, "t", 0, OffsetCommitValue(offset=0, commit_timestamp=0))


def test_encoding_out_of_range_integers_names_the_field() -> None:
    value = OffsetCommitValue(offset=0, commit_timestamp=0)
    with pytest.raises(ValueError, match=r"OffsetCommitKey\.partition = 2147483648"):
        offset_commit_record("g", "t", 2**31, value)
    with pytest.raises(ValueError, match=r"OffsetCommitValue\.offset"):
        offset_commit_record("g", "t", 0, replace(value, offset=2**63))
    with pytest.raises(ValueError, match=r"members\[0\]\.session_timeout"):
        group_metadata_record(
            "g", replace(GROUP_VALUE, members=(replace(MEMBER, session_timeout=2**31),))
        )


def test_encoding_wrong_types_names_the_field() -> None:
    value = OffsetCommitValue(offset=0, commit_timestamp=0)
    with pytest.raises(TypeError, match=r"OffsetCommitKey\.topic must be str, got int"):
        offset_commit_record("g", 5, 0, value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"OffsetCommitValue\.offset must be int, got float"):
        offset_commit_record("g", "t", 0, replace(value, offset=1.5))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be an OffsetCommitValue"):
        offset_commit_record("g", "t", 0, {"offset": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"GroupMetadataValue\.protocol_type must be str, got None"):
        group_metadata_record("g", replace(GROUP_VALUE, protocol_type=None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"members\[0\] must be MemberMetadata"):
        group_metadata_record("g", replace(GROUP_VALUE, members=("m",)))  # type: ignore[arg-type]


def test_encoding_a_lone_surrogate_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not encodable as UTF-8"):
        group_metadata_tombstone("\ud800")


def test_encoding_an_unknown_version_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="versions 0-4, not 5"):
        encode_offset_commit_value(OffsetCommitValue(offset=0, commit_timestamp=0), version=5)
    with pytest.raises(ValueError, match="versions 0-4, not -1"):
        encode_group_metadata_value(GROUP_VALUE, version=-1)
