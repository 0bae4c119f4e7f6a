"""The array check the codec makes before kio reads a request (webapp.transports.kafka.bounds):
it walks a request as kio lays it out, so it must take every request a client can encode, and
refuse the arrays Kafka's readers refuse."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from kio.index import load_request_schema

from webapp.transports.kafka.apis import API_NAMES, SUPPORTED
from webapp.transports.kafka.bounds import BadArray, check_arrays
from webapp.transports.kafka.codec import BadFrame, decode_request

from . import test_any_field_values  # noqa: F401 (its strategy for kio's record batches)
from .test_wire import request_frame


@pytest.mark.parametrize("api_key", sorted(SUPPORTED), ids=lambda key: API_NAMES[key])
def test_every_request_a_client_can_encode_passes_and_decodes_as_it_was(api_key: int) -> None:
    low, high = SUPPORTED[api_key]

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def one_request(data: Any) -> None:
        version = data.draw(st.integers(low, high), label="version")
        schema = load_request_schema(api_key, version)
        body = data.draw(st.from_type(schema), label="body")
        try:
            frame = request_frame(api_key, version, 1, body)[4:]
        except Exception:  # a value kio will not encode
            reject()
        check_arrays(schema.__header_schema__, schema, frame)
        assert decode_request(frame, SUPPORTED).body == body

    one_request()


def offset_commit_v8(partitions: bytes) -> bytes:
    """An OffsetCommit v8 frame (without its size) whose one topic's partitions are
    ``partitions`` (their count and what follows)."""
    return (
        struct.pack(">hhih", 8, 8, 1, 1)
        + b"t\x00"  # the header's client id and tags
        + b"\x02g"
        + struct.pack(">i", -1)
        + b"\x01\x00"  # group, generation, member, instance
        + b"\x02\x02t"  # one topic, "t"
        + partitions
    )


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
