"""A load client that speaks Kafka's wire protocol itself, with kio's schemas, for the wire
benchmarks (`kafka_wire.py`): many connections and many group members on one event loop, as
`_live.py`'s consumers are for the websocket benchmarks. A real client library runs one
consumer per instance with threads of its own; thousands of them would measure the library,
not the broker.

Each connection pipelines its requests and matches answers in order, as Kafka answers a
connection's requests in order. Frames sent over and over (a member's heartbeat, a commit) are
encoded once and only their correlation id is rewritten.

Not a benchmark itself (no table, no JSON line).
"""

from __future__ import annotations

import asyncio
import io
import struct
from collections import deque
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

_SIZE = struct.Struct(">i")
#: Where a request frame's correlation id sits: size (4), api_key (2), api_version (2).
_CORRELATION_AT = 8

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT, OFFSET_FETCH = 11, 14, 12, 8, 9
CONSUMER_GROUP_HEARTBEAT = 68

Answer = Callable[[bytes], None]


class WireError(RuntimeError):
    """The broker answered with an error code where the load needs success."""


def encode_request(api_key: int, version: int, body: Any, client_id: str = "load") -> bytearray:
    """A size-prefixed request frame (correlation id 0, rewritten when it is sent)."""
    schema = load_request_schema(api_key, version)
    header = schema.__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    entity_writer(header)(
        buffer,
        header(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=0,
            client_id=client_id,
        ),
    )
    entity_writer(schema)(buffer, body)
    frame = bytearray(buffer.getvalue())
    _SIZE.pack_into(frame, 0, len(frame) - 4)
    return frame


@cache
def _response_readers(api_key: int, version: int) -> tuple[Any, Any]:
    schema = load_response_schema(api_key, version)
    return entity_reader(schema.__header_schema__), entity_reader(schema)


def decode_response(api_key: int, version: int, payload: bytes) -> Any:
    """kio's response body in ``payload`` (a frame without its size prefix)."""
    read_header, read_body = _response_readers(api_key, version)
    _, used = read_header(payload, 0)
    body, _ = read_body(payload, used)
    return body


class WireConnection(asyncio.Protocol):
    """One TCP connection to a broker: requests pipelined, answers matched in order."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._pending: deque[tuple[int, Answer]] = deque()
        self._next_id = 1
        self.lost: BaseException | None = None
        #: Called once if the broker closes the connection (answers due will never come).
        self.on_lost: Callable[[BaseException], None] | None = None

    @classmethod
    async def open(cls, host: str, port: int) -> WireConnection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(cls, host, port)
        return connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionResetError("the broker closed the connection")
        self.transport = None
        if self.on_lost is not None:
            self.on_lost(self.lost)

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def send(self, frame: bytearray, on_answer: Answer) -> None:
        """Send ``frame`` under a fresh correlation id; ``on_answer`` gets the response frame
        (without its size prefix)."""
        if self.transport is None:
            raise ConnectionError(f"connection lost: {self.lost}")
        correlation_id = self._next_id
        self._next_id = correlation_id + 1 if correlation_id < 2**31 - 1 else 1
        _SIZE.pack_into(frame, _CORRELATION_AT, correlation_id)
        self._pending.append((correlation_id, on_answer))
        # A copy: a transport may keep what it could not send yet, and the frame is reused.
        self.transport.write(bytes(frame))

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        start = 0
        end = len(buffer)
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(buffer, start)
            if end - start - 4 < size:
                break
            payload = bytes(buffer[start + 4 : start + 4 + size])
            start += 4 + size
            expected, on_answer = self._pending.popleft()
            (correlation_id,) = _SIZE.unpack_from(payload, 0)
            if correlation_id != expected:
                raise RuntimeError(f"answer {correlation_id} came where {expected} was due")
            on_answer(payload)
        del buffer[:start]

    async def roundtrip(self, frame: bytearray) -> bytes:
        """Send ``frame`` and await its response frame."""
        answered: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.send(frame, answered.set_result)
        return await answered

    async def call(self, api_key: int, version: int, body: Any, client_id: str = "load") -> Any:
        """Send one request and await kio's decoded answer."""
        payload = await self.roundtrip(encode_request(api_key, version, body, client_id))
        return decode_response(api_key, version, payload)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_all(host: str, port: int, count: int, concurrency: int = 50) -> list[WireConnection]:
    """``count`` connections, at most ``concurrency`` handshakes at a time (a listen backlog
    is small; a refused SYN costs a second)."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> WireConnection:
        async with gate:
            return await WireConnection.open(host, port)

    return list(await asyncio.gather(*(one() for _ in range(count))))
