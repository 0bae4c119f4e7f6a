"""The consumer protocol codec: golden bytes from the schemas, round trips, and bad input.

The golden vectors are written out by hand from Kafka's ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json (int16 version; arrays as int32 count; strings as int16 length
and UTF-8; bytes as int32 length; -1 for null), one field per line.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator_engine.consumer_protocol import (
    HIGHEST_SUPPORTED_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolError,
    ConsumerProtocolSubscription,
    StickyAssignorUserData,
    decode_assignment,
    decode_cooperative_sticky_assignor_user_data,
    decode_sticky_assignor_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_sticky_assignor_user_data,
    encode_sticky_assignor_user_data,
    encode_subscription,
)

FOO = b"\x00\x03foo"  # string "foo"
BAR = b"\x00\x03bar"  # string "bar"
NULL_BYTES = b"\xff\xff\xff\xff"

SUBSCRIPTION = ConsumerProtocolSubscription(
    topics=("foo",),
    user_data=b"\x01\x02",
    owned_partitions=(("foo", 0), ("foo", 2)),
    generation_id=7,
    rack_id="r1",
)
SUBSCRIPTION_V0 = b"".join(
    [
        b"\x00\x00",  # version 0
        b"\x00\x00\x00\x01" + FOO,  # topics ["foo"]
        b"\x00\x00\x00\x02\x01\x02",  # user_data
    ]
)
OWNED = b"".join(
    [
        b"\x00\x00\x00\x01",  # owned_partitions: 1 topic
        FOO,
        b"\x00\x00\x00\x02",  # 2 partitions
        b"\x00\x00\x00\x00",  # 0
        b"\x00\x00\x00\x02",  # 2
    ]
)
SUBSCRIPTION_V1 = b"\x00\x01" + SUBSCRIPTION_V0[2:] + OWNED
SUBSCRIPTION_V2 = b"\x00\x02" + SUBSCRIPTION_V1[2:] + b"\x00\x00\x00\x07"  # generation_id 7
SUBSCRIPTION_V3 = b"\x00\x03" + SUBSCRIPTION_V2[2:] + b"\x00\x02r1"  # rack_id "r1"

ASSIGNMENT = ConsumerProtocolAssignment(assigned_partitions=(("bar", 1), ("foo", 0), ("foo", 3)))
ASSIGNMENT_BODY = b"".join(
    [
        b"\x00\x00\x00\x02",  # assigned_partitions: 2 topics
        BAR + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01",  # bar: [1]
        FOO + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03",  # foo: [0, 3]
        NULL_BYTES,  # user_data null
    ]
)


# -- golden bytes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "golden"),
    [(0, SUBSCRIPTION_V0), (1, SUBSCRIPTION_V1), (2, SUBSCRIPTION_V2), (3, SUBSCRIPTION_V3)],
)
def test_a_subscription_encodes_to_the_schema_layout_of_each_version(
    version: int, golden: bytes
) -> None:
    assert encode_subscription(SUBSCRIPTION, version) == golden


def test_encoding_a_subscription_defaults_to_version_3() -> None:
    assert encode_subscription(SUBSCRIPTION) == SUBSCRIPTION_V3


@pytest.mark.parametrize(
    ("golden", "expected"),
    [
        (
            SUBSCRIPTION_V0,
            ConsumerProtocolSubscription(topics=("foo",), user_data=b"\x01\x02"),
        ),
        (
            SUBSCRIPTION_V1,
            ConsumerProtocolSubscription(
                topics=("foo",), user_data=b"\x01\x02", owned_partitions=(("foo", 0), ("foo", 2))
            ),
        ),
        (
            SUBSCRIPTION_V2,
            ConsumerProtocolSubscription(
                topics=("foo",),
                user_data=b"\x01\x02",
                owned_partitions=(("foo", 0), ("foo", 2)),
                generation_id=7,
            ),
        ),
        (SUBSCRIPTION_V3, SUBSCRIPTION),
    ],
    ids=["v0", "v1", "v2", "v3"],
)
def test_a_subscription_decodes_with_defaults_for_fields_its_version_lacks(
    golden: bytes, expected: ConsumerProtocolSubscription
) -> None:
    assert decode_subscription(golden) == expected


def test_a_minimal_subscription_has_null_user_data_and_null_rack() -> None:
    golden = b"".join(
        [
            b"\x00\x03",  # version 3
            b"\x00\x00\x00\x00",  # topics []
            NULL_BYTES,  # user_data null
            b"\x00\x00\x00\x00",  # owned_partitions []
            b"\xff\xff\xff\xff",  # generation_id -1
            b"\xff\xff",  # rack_id null
        ]
    )
    empty = ConsumerProtocolSubscription(topics=())
    assert encode_subscription(empty) == golden
    assert decode_subscription(golden) == empty


def test_topics_and_owned_partitions_are_written_sorted_as_kafka_does() -> None:
    unsorted = ConsumerProtocolSubscription(
        topics=("foo", "bar"), owned_partitions=(("foo", 2), ("bar", 1), ("foo", 0))
    )
    decoded = decode_subscription(encode_subscription(unsorted, 1))
    assert decoded.topics == ("bar", "foo")
    assert decoded.owned_partitions == (("bar", 1), ("foo", 0), ("foo", 2))


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_an_assignment_has_the_same_layout_in_every_version(version: int) -> None:
    golden = version.to_bytes(2, "big") + ASSIGNMENT_BODY
    assert encode_assignment(ASSIGNMENT, version) == golden
    assert decode_assignment(golden) == ASSIGNMENT


def test_an_assignment_groups_partitions_by_topic_in_first_appearance_order() -> None:
    mixed = ConsumerProtocolAssignment(assigned_partitions=(("foo", 0), ("bar", 1), ("foo", 3)))
    decoded = decode_assignment(encode_assignment(mixed))
    assert decoded.assigned_partitions == (("foo", 0), ("foo", 3), ("bar", 1))


def test_an_empty_assignment_with_user_data_round_trips() -> None:
    assignment = ConsumerProtocolAssignment(user_data=b"")
    golden = b"\x00\x03" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
    assert encode_assignment(assignment) == golden
    assert decode_assignment(golden) == assignment


def test_sticky_user_data_v1_carries_the_previous_assignment_and_generation() -> None:
    """The StickyAssignor schema (StickyAssignorTest.testMemberData* read it from user data)."""
    golden = b"".join(
        [
            b"\x00\x00\x00\x01",  # previous_assignment: 1 topic
            b"\x00\x01t",
            b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01",  # [0, 1]
            b"\x00\x00\x00\x03",  # generation 3
        ]
    )
    user_data = StickyAssignorUserData(previous_assignment=(("t", 0), ("t", 1)), generation=3)
    assert encode_sticky_assignor_user_data(user_data) == golden
    assert decode_sticky_assignor_user_data(golden) == user_data


def test_sticky_user_data_v0_has_no_generation() -> None:
    """StickyAssignorTest.testSchemaBackwardCompatibility: the v0 layout is read too."""
    golden = b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x05"
    user_data = StickyAssignorUserData(previous_assignment=(("t", 5),))
    assert encode_sticky_assignor_user_data(user_data) == golden
    assert decode_sticky_assignor_user_data(golden) == user_data


def test_cooperative_sticky_user_data_is_the_generation() -> None:
    """CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration."""
    assert encode_cooperative_sticky_assignor_user_data(10) == b"\x00\x00\x00\x0a"
    assert decode_cooperative_sticky_assignor_user_data(b"\x00\x00\x00\x0a") == 10
    assert decode_cooperative_sticky_assignor_user_data(b"\xff\xff\xff\xff") == -1


# -- compatibility rules -------------------------------------------------------------------------


def test_a_newer_subscription_version_is_read_as_far_as_the_known_fields_go() -> None:
    newer = b"\x00\x07" + SUBSCRIPTION_V3[2:] + b"\x00\x00\x00\x2a" + b"more fields"
    assert decode_subscription(newer) == SUBSCRIPTION


def test_a_newer_assignment_version_is_read_as_far_as_the_known_fields_go() -> None:
    newer = b"\x7f\xff" + ASSIGNMENT_BODY + b"\x01\x02\x03"
    assert decode_assignment(newer) == ASSIGNMENT


def test_bytes_after_the_last_field_of_a_known_version_are_ignored() -> None:
    assert decode_subscription(SUBSCRIPTION_V1 + b"\x00\x00\x00\x07") == decode_subscription(
        SUBSCRIPTION_V1
    )


def test_bytearray_and_memoryview_decode_like_bytes() -> None:
    assert decode_subscription(bytearray(SUBSCRIPTION_V3)) == SUBSCRIPTION
    assert decode_assignment(memoryview(b"\x00\x00" + ASSIGNMENT_BODY)) == ASSIGNMENT


# -- round trips ---------------------------------------------------------------------------------

names = st.text(min_size=1, max_size=12)
int32 = st.integers(-(2**31), 2**31 - 1)
subscriptions = st.builds(
    ConsumerProtocolSubscription,
    topics=st.lists(names, max_size=5, unique=True).map(tuple),
    user_data=st.none() | st.binary(max_size=20),
    owned_partitions=st.lists(st.tuples(names, int32), max_size=8, unique=True).map(tuple),
    generation_id=int32,
    rack_id=st.none() | st.text(max_size=8),
)
assignments = st.builds(
    ConsumerProtocolAssignment,
    assigned_partitions=st.lists(st.tuples(names, int32), max_size=8, unique=True).map(tuple),
    user_data=st.none() | st.binary(max_size=20),
)


def java_order(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


@given(subscriptions, st.integers(0, HIGHEST_SUPPORTED_VERSION))
def test_a_subscription_round_trips_through_every_version(
    subscription: ConsumerProtocolSubscription, version: int
) -> None:
    decoded = decode_subscription(encode_subscription(subscription, version))
    assert decoded == ConsumerProtocolSubscription(
        topics=tuple(sorted(subscription.topics, key=java_order)),
        user_data=subscription.user_data,
        owned_partitions=tuple(
            sorted(subscription.owned_partitions, key=lambda p: (java_order(p[0]), p[1]))
        )
        if version >= 1
        else (),
        generation_id=subscription.generation_id if version >= 2 else -1,
        rack_id=subscription.rack_id if version >= 3 else None,
    )


@given(assignments, st.integers(0, HIGHEST_SUPPORTED_VERSION))
def test_an_assignment_round_trips_through_every_version(
    assignment: ConsumerProtocolAssignment, version: int
) -> None:
    first_seen = list(dict.fromkeys(t for t, _ in assignment.assigned_partitions))
    grouped = tuple(sorted(assignment.assigned_partitions, key=lambda p: first_seen.index(p[0])))
    decoded = decode_assignment(encode_assignment(assignment, version))
    assert decoded == ConsumerProtocolAssignment(
        assigned_partitions=grouped, user_data=assignment.user_data
    )


@given(st.lists(st.tuples(names, int32), max_size=8, unique=True), st.none() | int32)
def test_sticky_user_data_round_trips(pairs: list[tuple[str, int]], generation: int | None) -> None:
    first_seen = list(dict.fromkeys(t for t, _ in pairs))
    user_data = StickyAssignorUserData(
        previous_assignment=tuple(sorted(pairs, key=lambda p: first_seen.index(p[0]))),
        generation=generation,
    )
    assert (
        decode_sticky_assignor_user_data(encode_sticky_assignor_user_data(user_data)) == user_data
    )


@pytest.fixture(scope="module")
def metadata() -> Any:
    """kafka-python's consumer protocol module, imported once: imported inside a Hypothesis
    example, its ~0.5 s import under load counted against the example's 200 ms deadline."""
    return pytest.importorskip("kafka.protocol.consumer.metadata")


@given(subscription=subscriptions)
def test_kafka_python_reads_our_subscriptions_and_we_read_its(
    metadata: Any, subscription: ConsumerProtocolSubscription
) -> None:
    """A second implementation of the same schema (kafka-python's) agrees byte for byte."""
    ours = encode_subscription(subscription)
    theirs = metadata.ConsumerProtocolSubscription.decode(ours)
    assert list(theirs.topics) == sorted(subscription.topics, key=java_order)
    encoded_by_them = metadata.ConsumerProtocolSubscription(
        version=3,
        topics=list(theirs.topics),
        user_data=theirs.user_data,
        owned_partitions=[(p.topic, list(p.partitions)) for p in theirs.owned_partitions],
        generation_id=theirs.generation_id,
        rack_id=theirs.rack_id,
    ).encode()
    assert encoded_by_them == ours


@given(assignment=assignments)
def test_kafka_python_reads_our_assignments(
    metadata: Any, assignment: ConsumerProtocolAssignment
) -> None:
    theirs = metadata.ConsumerProtocolAssignment.decode(encode_assignment(assignment))
    assert sorted(tuple(p) for p in theirs.partitions()) == sorted(assignment.assigned_partitions)
    assert theirs.user_data == assignment.user_data


# -- malformed input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "truncated at version"),
        (b"\x00", "truncated at version"),
        (b"\xff\xff", "unsupported version -1"),
        (b"\x00\x00\x00\x00", "truncated at topics count"),
        (b"\x00\x00\xff\xff\xff\xfe", "topics count is -2"),
        (b"\x00\x00\x7f\xff\xff\xff", "topics (2147483647 elements)"),
        (b"\x00\x00\x00\x00\x00\x01\xff\xff", "topics[0] has length -1"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x05ab", "truncated at topics[0]"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x02\xc3\x28", "topics[0] at offset 6 is not UTF-8"),
        (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe", "user_data has length -2"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09xy", "truncated at user_data"),
        (SUBSCRIPTION_V1[:-3], "truncated at owned_partitions[0] partitions"),
        (SUBSCRIPTION_V2[:-1], "truncated at generation_id"),
        (SUBSCRIPTION_V3[:-1], "truncated at rack_id"),
    ],
)
def test_a_malformed_subscription_is_a_consumer_protocol_error_naming_the_field(
    data: bytes, problem: str
) -> None:
    with pytest.raises(ConsumerProtocolError, match="ConsumerProtocolSubscription") as raised:
        decode_subscription(data)
    assert problem in str(raised.value)


def test_every_truncation_of_a_valid_message_is_a_consumer_protocol_error() -> None:
    for message, decode in (
        (SUBSCRIPTION_V3, decode_subscription),
        (b"\x00\x01" + ASSIGNMENT_BODY, decode_assignment),
    ):
        for end in range(len(message)):
            with pytest.raises(ConsumerProtocolError):
                decode(message[:end])


def test_a_consumer_protocol_error_is_a_value_error() -> None:
    assert issubclass(ConsumerProtocolError, ValueError)


@given(st.binary(max_size=64))
def test_garbage_decodes_or_raises_only_consumer_protocol_errors(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment, decode_sticky_assignor_user_data):
        with contextlib.suppress(ConsumerProtocolError):
            decode(data)


def test_malformed_sticky_user_data_is_a_consumer_protocol_error() -> None:
    with pytest.raises(ConsumerProtocolError, match="StickyAssignorUserData: truncated"):
        decode_sticky_assignor_user_data(b"\x00\x00\x00\x01\x00\x05ab")
    with pytest.raises(ConsumerProtocolError, match="generation"):
        decode_cooperative_sticky_assignor_user_data(b"\x00\x01")


def test_decoding_something_other_than_bytes_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="str"):
        decode_subscription("not bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [-1, 4])
def test_encoding_an_unknown_version_is_refused(version: int) -> None:
    with pytest.raises(ValueError, match=f"version {version}"):
        encode_subscription(SUBSCRIPTION, version)
    with pytest.raises(ValueError, match=f"version {version}"):
        encode_assignment(ASSIGNMENT, version)


def test_encoding_values_outside_their_wire_types_is_refused() -> None:
    with pytest.raises(ValueError, match="generation_id 2147483648 does not fit"):
        encode_subscription(ConsumerProtocolSubscription(topics=(), generation_id=2**31), 2)
    with pytest.raises(ValueError, match="over the int16 limit"):
        encode_subscription(ConsumerProtocolSubscription(topics=("x" * 40_000,)))
    with pytest.raises(ValueError, match="does not fit"):
        encode_assignment(ConsumerProtocolAssignment(assigned_partitions=(("t", -(2**31) - 1),)))
