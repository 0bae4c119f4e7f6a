"""The listener against bytes no client should send, and the ApiVersions handshake, over real
sockets: each bad connection is closed (or answered, where Kafka answers) and the listener
keeps serving the others."""

from __future__ import annotations

import asyncio
import struct

import pytest

from webapp.transports.kafka.apis import SUPPORTED
from webapp.transports.kafka.listener import KafkaListener

pytestmark = pytest.mark.asyncio


async def exchange(listener: KafkaListener, payload: bytes) -> bytes:
    """Send ``payload`` and end the sending side; everything the listener sends back until it
    closes (at most 2 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(payload)
        writer.write_eof()
        await writer.drain()
        return await asyncio.wait_for(reader.read(1 << 20), 2)
    finally:
        writer.close()


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def api_versions_v0(correlation_id: int = 7) -> bytes:
    # api_key 18, version 0, correlation id, client id "t"
    return frame(struct.pack(">hhih", 18, 0, correlation_id, 1) + b"t")


def api_versions_v0_body(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    """(error_code, {api_key: (min, max)}) of an ApiVersions v0 response body, read by hand."""
    error_code, count = struct.unpack_from(">hi", body)
    ranges = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", body, 6 + 6 * index)
        ranges[key] = (low, high)
    assert len(body) == 6 + 6 * count
    return error_code, ranges


async def answers_api_versions(listener: KafkaListener) -> bool:
    reply = await exchange(listener, api_versions_v0())
    return len(reply) > 8 and struct.unpack(">ii", reply[:8])[1] == 7


async def test_api_versions_v0_lists_every_api_served(kafka: KafkaListener) -> None:
    reply = await exchange(kafka, api_versions_v0())
    size, correlation_id = struct.unpack(">ii", reply[:8])
    assert size == len(reply) - 4 and correlation_id == 7
    assert api_versions_v0_body(reply[8:]) == (0, SUPPORTED)


async def test_an_api_versions_version_not_served_gets_a_v0_answer_with_the_ranges(
    kafka: KafkaListener,
) -> None:
    payload = frame(struct.pack(">hhih", 18, 99, 5, 1) + b"t")
    reply = await exchange(kafka, payload)
    assert struct.unpack(">i", reply[4:8])[0] == 5
    assert api_versions_v0_body(reply[8:]) == (35, SUPPORTED)  # UNSUPPORTED_VERSION


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x7f\xff\xff\xff" + b"x" * 100, id="a 2 GB size prefix"),
        pytest.param(frame(b"\x00\x01"), id="a frame too short for a header"),
        pytest.param(frame(struct.pack(">hhih", 18, 3, 1, 1))[:-1], id="a truncated frame"),
        pytest.param(frame(struct.pack(">hhih", 999, 0, 1, -1)), id="an unknown API key"),
        pytest.param(
            frame(struct.pack(">hhih", 11, 42, 1, -1)), id="a JoinGroup version not served"
        ),
        pytest.param(frame(struct.pack(">hhih", 11, 5, 1, -1) + b"\xff" * 9), id="garbage body"),
        pytest.param(bytes(range(256)) * 4, id="random bytes"),
    ],
)
async def test_a_bad_request_closes_its_connection_and_the_listener_serves_on(
    kafka: KafkaListener, payload: bytes
) -> None:
    assert await exchange(kafka, payload) == b""
    assert await answers_api_versions(kafka)
