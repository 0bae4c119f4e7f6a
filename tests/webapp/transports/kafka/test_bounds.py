"""The array check the codec makes before kio reads a request (webapp.transports.kafka.bounds):
it walks a request as kio lays it out, so it must take every request a client can encode, and
refuse the arrays Kafka's readers refuse."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema

from webapp.transports.kafka.apis import API_NAMES, SUPPORTED
from webapp.transports.kafka.bounds import BadArray, check_arrays
from webapp.transports.kafka.codec import BadFrame, decode_request

from .test_any_field_values import SAME_EXAMPLES, drawn_request
from .test_wire import offset_commit_v8


@pytest.mark.parametrize("api_key", sorted(SUPPORTED), ids=lambda key: API_NAMES[key])
def test_every_request_a_client_can_encode_passes_and_decodes_as_it_was(api_key: int) -> None:
    @settings(SAME_EXAMPLES, max_examples=60)
    @given(data=st.data())
    def one_request(data: Any) -> None:
        schema, body, frame = drawn_request(data, api_key)
        check_arrays(schema.__header_schema__, schema, frame[4:])
        assert decode_request(frame[4:], SUPPORTED).body == body

    one_request()


@pytest.mark.parametrize(
    ("frame", "refusal"),
    [
        pytest.param(
            offset_commit_v8(b"\xff\xff\xff\xff\x0f" + b"\x00" * 40),
            "topics[0].partitions has 4294967294 elements with 40 bytes left in the frame",
            id="more elements than bytes",
        ),
        pytest.param(
            offset_commit_v8(b"\x00\x00\x00"),
            "topics[0].partitions is null, and the schema has it non-nullable",
            id="a null non-nullable array",
        ),
        pytest.param(
            struct.pack(">hhih", 15, 0, 1, -1) + struct.pack(">i", 2) + b"\x00\x01a",
            "the request ends before its fields do",
            id="a frame that ends inside an array",
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
