"""The walk the codec makes of a request before kio reads it (webapp.transports.kafka.walk): it
follows a request as kio lays it out, so it must take every request a client can encode, refuse
the arrays Kafka's readers refuse, and drop exactly the tags a newer client adds."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial._introspect import get_field_tag

from webapp.transports.kafka.apis import API_NAMES, SUPPORTED
from webapp.transports.kafka.codec import BadFrame, decode_request
from webapp.transports.kafka.walk import BadArray, check_arrays

from .test_any_field_values import SAME_EXAMPLES, drawn_request
from .test_wire import offset_commit_v8, request_frame, with_tags


@pytest.mark.parametrize("api_key", sorted(SUPPORTED), ids=lambda key: API_NAMES[key])
def test_every_request_a_client_can_encode_passes_and_decodes_as_it_was(api_key: int) -> None:
    @settings(SAME_EXAMPLES, max_examples=60)
    @given(data=st.data())
    def one_request(data: Any) -> None:
        schema, body, frame = drawn_request(data, api_key)
        check_arrays(schema.__header_schema__, schema, frame[4:])
        assert decode_request(frame[4:], SUPPORTED).body == body

    one_request()


#: The served APIs with a flexible version (their requests can carry tags).
FLEXIBLE = sorted(
    key for key, (_, high) in SUPPORTED.items() if load_request_schema(key, high).__flexible__
)


@pytest.mark.parametrize("api_key", FLEXIBLE, ids=lambda key: API_NAMES[key])
def test_tags_a_newer_client_adds_are_dropped_after_every_field(api_key: int) -> None:
    # Unknown tags in the body's own tag section, after every other field: the walk reaches
    # them only if it sizes each field as kio does, and drops them without touching the rest.
    @settings(SAME_EXAMPLES, max_examples=30)
    @given(data=st.data())
    def one_request(data: Any) -> None:
        schema, body, frame = drawn_request(data, api_key)
        assume(schema.__flexible__)
        tagged = [f for f in dataclasses.fields(schema) if get_field_tag(f) is not None]
        if tagged:  # the tags it declares left out: its tag section is then empty, 0
            body = dataclasses.replace(body, **{f.name: f.default for f in tagged})
            frame = request_frame(api_key, schema.__version__, 1, body)
        assert frame[-1] == 0
        newer = with_tags(frame[4:], {90: b"new", 200: b"x" * 300})
        assert decode_request(newer, SUPPORTED).body == body

    one_request()


def two_topic_commit(first: bytes, second: bytes) -> bytes:
    """An OffsetCommit v8 frame (without its size) of two topics, ``first`` and ``second``
    (each a name, then its partitions: their count and whatever follows it)."""
    return offset_commit_v8(b"")[:-3] + b"\x03" + first + second


#: A topic "t" of one partition (index 0 at offset 41, no metadata), its tags after it.
ONE_PARTITION = b"\x02t" + b"\x02" + struct.pack(">iqi", 0, 41, -1) + b"\x01\x00" + b"\x00"
#: Four billion partitions (a compact count of 2**32 - 2) and 40 bytes.
TOO_MANY = b"\xff\xff\xff\xff\x0f" + b"\x00" * 40


@pytest.mark.parametrize(
    ("frame", "refusal"),
    [
        pytest.param(
            offset_commit_v8(b"\xff\xff\xff\xff\x0f" + b"\x00" * 40),
            "topics[0].partitions has 4294967294 elements with 40 bytes left in the frame",
            id="more elements than bytes",
        ),
        # The check walks every element of the last array but the last one whole, and that
        # one up to its own last array.
        pytest.param(
            two_topic_commit(b"\x02u" + TOO_MANY, ONE_PARTITION),
            "topics[0].partitions has 4294967294 elements with 62 bytes left in the frame",
            id="more elements than bytes in the first of two topics",
        ),
        pytest.param(
            two_topic_commit(ONE_PARTITION, b"\x02u" + TOO_MANY),
            "topics[1].partitions has 4294967294 elements with 40 bytes left in the frame",
            id="more elements than bytes in the last of two topics",
        ),
        pytest.param(
            offset_commit_v8(b"\x00\x00\x00"),
            "topics[0].partitions is null, and the schema has it non-nullable",
            id="a null non-nullable array",
        ),
        pytest.param(
            struct.pack(">hhih", 15, 0, 1, -1) + b"\x00\x00",
            "the request ends before its fields do",
            id="a frame that ends inside an array's count",
        ),
    ],
)
def test_arrays_kafka_s_readers_refuse_are_refused_with_their_path(
    frame: bytes, refusal: str
) -> None:
    schema = load_request_schema(*struct.unpack_from(">hh", frame))
    with pytest.raises(BadArray) as refused:
        check_arrays(schema.__header_schema__, schema, frame)
    assert str(refused.value) == refusal
    with pytest.raises(BadFrame, match="request refused: "):
        decode_request(frame, SUPPORTED)
