"""Kafka's wire format: size-prefixed frames, request headers, and kio's per-version schemas.

The bodies are kio's (``kio.index.load_request_schema``; generated from Kafka's own message
JSON, decoded natively). This module adds what kio leaves out: splitting a byte stream into
frames, reading just enough of a header to know which schema applies, and refusing what cannot
be a request with an error that says why (``BadFrame``, ``UnsupportedRequest``), never with
whatever exception a decoder happens to raise.

A frame is a big-endian int32 size and that many bytes. A request starts with its header:
api_key (int16), api_version (int16), correlation_id (int32), client_id (nullable string),
then, in flexible versions, tagged fields. A response is the correlation id (and, in flexible
versions, an empty tag section) then the body; ApiVersions always answers with header v0,
which kio models as that API's response header schema.

Tagged fields a schema does not declare are skipped, as Kafka's generated readers skip them
(KIP-482: a newer client may add tags an older broker has never heard of). kio refuses them, so
a request it refuses for that reason is copied without them (``walk.without_unknown_tags``) and
decoded again; the copy is made only then, never on the common path.

Bytes after a request's body are ignored, as Kafka's broker ignores them (``decode_request``).
"""

from __future__ import annotations

import io
import struct
import typing
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from .walk import BadArray, check_arrays, without_unknown_tags

__all__ = [
    "MAX_FRAME_BYTES",
    "BadFrame",
    "Request",
    "UnsupportedRequest",
    "decode_request",
    "encode_response",
    "peek_header",
    "response_schema",
]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB): a larger size prefix is refused
#: before anything is read or allocated.
MAX_FRAME_BYTES = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")
_HEADER_START = struct.Struct(">hhi")
#: A response's size prefix and header: the correlation id, and in v1 an empty tag section.
_RESPONSE_HEADER_V0 = struct.Struct(">ii")
_RESPONSE_HEADER_V1 = struct.Struct(">iiB")


class BadFrame(ValueError):
    """The bytes are not a request of any API version; the connection is closed."""


class UnsupportedRequest(BadFrame):
    """A well-framed request of an API or version this listener does not serve."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int, why: str) -> None:
        super().__init__(why)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class Request:
    """One decoded request: its header's fields and kio's body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


def frame_size(prefix: bytes) -> int:
    """The size a frame's 4-byte prefix announces; BadFrame if it cannot be a request."""
    size: int = _SIZE.unpack(prefix)[0]
    if size < _HEADER_START.size:
        raise BadFrame(f"frame size {size} is too small for a request header")
    if size > MAX_FRAME_BYTES:
        raise BadFrame(f"frame size {size} exceeds the limit of {MAX_FRAME_BYTES} bytes")
    return size


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request frame (without its size)."""
    if len(frame) < _HEADER_START.size:
        raise BadFrame(f"a {len(frame)}-byte frame is too short for a request header")
    api_key, api_version, correlation_id = _HEADER_START.unpack_from(frame)
    return int(api_key), int(api_version), int(correlation_id)


@cache
def _request_schemas(api_key: int, api_version: int) -> tuple[Any, Any]:
    schema = load_request_schema(api_key, api_version)
    return schema.__header_schema__, schema


@cache
def _request_reader(api_key: int, api_version: int) -> tuple[Any, Any]:
    header, body = _request_schemas(api_key, api_version)
    return entity_reader(header), entity_reader(body)


@cache
def response_schema(api_key: int, api_version: int) -> type:
    """kio's response class of an API version (kio resolves it by name on every call; this
    remembers it)."""
    return typing.cast(type, load_response_schema(api_key, api_version))


@cache
def _response_writer(api_key: int, api_version: int) -> tuple[bool, Any]:
    """Whether the response header has a tag section, and the body's writer."""
    schema: Any = response_schema(api_key, api_version)
    return schema.__header_schema__.__flexible__, entity_writer(schema)


def _encoded_body(api_key: int, api_version: int, body: Any) -> bytes:
    _, write_body = _response_writer(api_key, api_version)
    buffer = io.BytesIO()
    write_body(buffer, body)
    return buffer.getvalue()


#: Bodies that come back again and again (every Heartbeat's, most OffsetCommits') are written
#: once: kio's writer is plain Python and costs more than the rest of such a request.
_remembered_body = lru_cache(maxsize=4096)(_encoded_body)


def decode_request(frame: bytes, supported: dict[int, tuple[int, int]]) -> Request:
    """Decode a request frame whose API and version ``supported`` (api_key → (min, max))
    holds; ``UnsupportedRequest`` otherwise, ``BadFrame`` if its bytes do not decode."""
    api_key, api_version, correlation_id = peek_header(frame)
    versions = supported.get(api_key)
    if versions is None:
        raise UnsupportedRequest(api_key, api_version, correlation_id, f"unknown API key {api_key}")
    low, high = versions
    if not low <= api_version <= high:
        raise UnsupportedRequest(
            api_key,
            api_version,
            correlation_id,
            f"API {api_key} version {api_version} is not in {low}..{high}",
        )
    read_header, read_body = _request_reader(api_key, api_version)
    try:
        # Before kio reads anything: it would size an array by its count alone, and take a
        # null for any array (walk.py).
        check_arrays(*_request_schemas(api_key, api_version), frame)
        try:
            header, used = read_header(frame, 0)
            body, _ = read_body(frame, used)
        except KeyError:  # kio's refusal of a tagged field it does not know
            frame = without_unknown_tags(*_request_schemas(api_key, api_version), frame)
            header, used = read_header(frame, 0)
            body, _ = read_body(frame, used)
    except BadArray as exc:
        raise BadFrame(f"API {api_key} v{api_version} request refused: {exc}") from exc
    except (SerialError, KeyError, ValueError, IndexError, OverflowError) as exc:
        # kio raises SerialError for bytes that run out or do not decode.
        raise BadFrame(
            f"API {api_key} v{api_version} request does not decode: {type(exc).__name__}: {exc}"
        ) from exc
    # Bytes after the body are ignored, as Kafka ignores them: its RequestContext.parseRequest
    # reads a request's body from the frame and never asks that the frame be used up. librdkafka
    # depends on it: a flexible Metadata request (v9) for all topics carries its null topic
    # array in a 4-byte placeholder, one varint and three bytes that a strict reader misplaces.
    return Request(api_key, api_version, correlation_id, header.client_id, body)


def encode_response(request: Request, body: Any, *, repeated: bool = False) -> bytes:
    """The size-prefixed response frame answering ``request`` with kio's ``body``;
    ``repeated`` for a small body likely to be sent again (it is remembered)."""
    return encode_response_as(
        request.api_key, request.api_version, request.correlation_id, body, repeated=repeated
    )


def encode_response_as(
    api_key: int, api_version: int, correlation_id: int, body: Any, *, repeated: bool = False
) -> bytes:
    """A size-prefixed response frame of API ``api_key`` version ``api_version``."""
    flexible_header, _ = _response_writer(api_key, api_version)
    encoded = (_remembered_body if repeated else _encoded_body)(api_key, api_version, body)
    # The header: the correlation id, then (flexible versions) an empty tag section.
    if flexible_header:
        size = _RESPONSE_HEADER_V1.size - _SIZE.size + len(encoded)
        return _RESPONSE_HEADER_V1.pack(size, correlation_id, 0) + encoded
    size = _RESPONSE_HEADER_V0.size - _SIZE.size + len(encoded)
    return _RESPONSE_HEADER_V0.pack(size, correlation_id) + encoded
