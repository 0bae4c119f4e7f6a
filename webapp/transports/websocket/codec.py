"""The websocket consumer protocol's codec: JSON frames ⇄ the engine's request and response
dataclasses. Pure: no Django, no asyncio, no I/O (docs/protocol.md is its specification).

Theory of operation
===================

One JSON object per websocket frame. A request frame names the API and carries the fields of
that API's request dataclass (``coordinator_engine.requests`` and ``coordinator_engine.cluster``)
under their own snake_case names::

    {"id": 1, "api": "Heartbeat", "request": {"group_id": "orders", "generation_id": 1,
                                                "member_id": "c1-..."}}

and its reply echoes the id and carries the response dataclass the same way::

    {"id": 1, "api": "Heartbeat", "response": {"error_code": 0}}

The codec is generic: :data:`APIS` maps each API name to its request class, and the decoder of
a class is built once from its dataclass fields and type hints (``str``, ``int``, ``bool``,
``bytes`` as base64, ``X | None``, ``tuple[X, ...]`` as a list, ``Mapping[str, X]`` as an object
keyed by strings, nested dataclasses as objects).
The decoder checks JSON types, required and unknown fields and base64, naming the field by its
path (``request.protocols[0].metadata``); the dataclass constructor then checks ranges and
lengths (Kafka's int32/int64 bounds, 32,767-byte strings), and its complaint is passed on
under the same path (``request.offsets[0].partition: must lie in 0..2147483647, got -1``). A frame
that fails raises :class:`FrameError` carrying the error code of the reply
``{"id": <id or null>, "error": {"code": ..., "message": ...}}``.
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from coordinator_engine import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from coordinator_engine.requests import FieldError, FieldTypeError
from coordinator_engine.responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HandoffHeartbeatResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

__all__ = [
    "APIS",
    "API_OF",
    "MAX_FRAME_BYTES",
    "MAX_ID",
    "RESPONSES",
    "Frame",
    "FrameError",
    "decode_response",
    "dumps",
    "error_frame",
    "parse_frame",
    "request_frame",
    "response_frame",
    "to_json",
]

#: API name → request class. The one table of the protocol.
APIS: Final[dict[str, type]] = {
    "JoinGroup": JoinGroupRequest,
    "SyncGroup": SyncGroupRequest,
    "Heartbeat": HeartbeatRequest,
    "LeaveGroup": LeaveGroupRequest,
    "OffsetCommit": OffsetCommitRequest,
    "OffsetFetch": OffsetFetchRequest,
    "OffsetDelete": OffsetDeleteRequest,
    "DescribeGroups": DescribeGroupsRequest,
    "ListGroups": ListGroupsRequest,
    "DeleteGroups": DeleteGroupsRequest,
    "HandoffHeartbeat": HandoffHeartbeatRequest,
    "ConsumerGroupHeartbeat": ConsumerGroupHeartbeatRequest,
    "ConsumerGroupDescribe": ConsumerGroupDescribeRequest,
    "FindCoordinator": FindCoordinatorRequest,
    "Metadata": MetadataRequest,
}

#: API name → response class, for clients of the protocol (``decode_response``).
RESPONSES: Final[dict[str, type]] = {
    "JoinGroup": JoinGroupResponse,
    "SyncGroup": SyncGroupResponse,
    "Heartbeat": HeartbeatResponse,
    "LeaveGroup": LeaveGroupResponse,
    "OffsetCommit": OffsetCommitResponse,
    "OffsetFetch": OffsetFetchResponse,
    "OffsetDelete": OffsetDeleteResponse,
    "DescribeGroups": DescribeGroupsResponse,
    "ListGroups": ListGroupsResponse,
    "DeleteGroups": DeleteGroupsResponse,
    "HandoffHeartbeat": HandoffHeartbeatResponse,
    "ConsumerGroupHeartbeat": ConsumerGroupHeartbeatResponse,
    "ConsumerGroupDescribe": ConsumerGroupDescribeResponse,
    "FindCoordinator": FindCoordinatorResponse,
    "Metadata": MetadataResponse,
}
#: Request class → API name.
API_OF: Final[dict[type, str]] = {cls: name for name, cls in APIS.items()}

#: Frames above this many bytes (UTF-8) are refused with ``frame_too_large``.
MAX_FRAME_BYTES: Final = 1024 * 1024
#: Ids are integers a JSON client represents exactly: |id| ≤ 2**53 − 1.
MAX_ID: Final = 2**53 - 1
_FRAME_KEYS: Final = ("id", "api", "request")

# Error codes of error replies.
INVALID_JSON: Final = "invalid_json"
INVALID_FRAME: Final = "invalid_frame"
UNKNOWN_API: Final = "unknown_api"
INVALID_REQUEST: Final = "invalid_request"
FRAME_TOO_LARGE: Final = "frame_too_large"
INTERNAL_ERROR: Final = "internal_error"
UNAVAILABLE: Final = "unavailable"


class FrameError(Exception):
    """A frame that cannot be served; the error reply carries ``code`` and ``message``."""

    def __init__(self, code: str, message: str, frame_id: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.frame_id = frame_id


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """A decoded request frame."""

    id: int
    api: str
    request: Any


# ---------------------------------------------------------------- JSON text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _too_large(data: str | bytes) -> bool:
    if isinstance(data, bytes):
        return len(data) > MAX_FRAME_BYTES
    # A character is 1 to 4 bytes of UTF-8: only the ambiguous middle needs encoding.
    if len(data) > MAX_FRAME_BYTES:
        return True
    if len(data) * 4 <= MAX_FRAME_BYTES:
        return False
    return len(data.encode("utf-8", "surrogatepass")) > MAX_FRAME_BYTES


def _load(data: str | bytes) -> Any:
    if _too_large(data):
        raise FrameError(FRAME_TOO_LARGE, f"a frame may hold at most {MAX_FRAME_BYTES} bytes")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError(INVALID_JSON, f"frame is not UTF-8 text: {exc.reason}") from None
    try:
        return json.loads(data, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except RecursionError:
        raise FrameError(INVALID_JSON, "not JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and int() beyond its digit limit
        raise FrameError(INVALID_JSON, f"not JSON: {exc}") from None


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# ---------------------------------------------------------------- decoding, from type hints

Decoder = Callable[[Any, str], Any]


def _shown(value: Any) -> str:
    """A short JSON rendering of a scalar for error messages."""
    if value is None or isinstance(value, dict | list):
        return ""
    if isinstance(value, str):
        return " " + json.dumps(value[:40])
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**18:
        return f" with {len(str(abs(value)))} digits"
    return " " + json.dumps(value)


def _fail(path: str, expected: str, value: Any) -> FrameError:
    return FrameError(
        INVALID_REQUEST, f"{path}: expected {expected}, got {_json_type_name(value)}{_shown(value)}"
    )


def _decode_str(value: Any, path: str) -> str:
    if type(value) is not str:
        raise _fail(path, "a string", value)
    return value


def _decode_int(value: Any, path: str) -> int:
    if type(value) is not int:
        raise _fail(path, "an integer", value)
    return value


def _decode_bool(value: Any, path: str) -> bool:
    if type(value) is not bool:
        raise _fail(path, "true or false", value)
    return value


def _decode_bytes(value: Any, path: str) -> bytes:
    if type(value) is not str:
        raise _fail(path, "a base64 string", value)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FrameError(INVALID_REQUEST, f"{path}: not valid base64 ({exc})") from None


_PRIMITIVES: Final[dict[Any, Decoder]] = {
    str: _decode_str,
    int: _decode_int,
    bool: _decode_bool,
    bytes: _decode_bytes,
}


def _decoder_for(hint: Any) -> Decoder:
    if hint in _PRIMITIVES:
        return _PRIMITIVES[hint]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        others = [arg for arg in args if arg is not type(None)]
        if len(others) != 1 or len(args) != 2:
            raise TypeError(f"no JSON decoder for {hint}")
        inner = _decoder_for(others[0])

        def decode_optional(value: Any, path: str) -> Any:
            return None if value is None else inner(value, path)

        return decode_optional
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _decoder_for(args[0])

        def decode_tuple(value: Any, path: str) -> tuple[Any, ...]:
            if type(value) is not list:
                raise _fail(path, "an array", value)
            return tuple(item(element, f"{path}[{i}]") for i, element in enumerate(value))

        return decode_tuple
    if origin is collections.abc.Mapping and len(args) == 2 and args[0] is str:
        value_decoder = _decoder_for(args[1])

        def decode_mapping(value: Any, path: str) -> dict[str, Any]:
            if type(value) is not dict:
                raise _fail(path, "an object", value)
            return {key: value_decoder(item, f"{path}.{key}") for key, item in value.items()}

        return decode_mapping
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_decoder(hint)
    raise TypeError(f"no JSON decoder for {hint}")


@cache
def _dataclass_decoder(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    decoders = {f.name: _decoder_for(hints[f.name]) for f in fields}
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    known = ", ".join(f.name for f in fields) or "no fields"

    def decode(value: Any, path: str) -> Any:
        if type(value) is not dict:
            raise _fail(path, f"an object ({cls.__name__})", value)
        for name in value:
            if name not in decoders:
                raise FrameError(
                    INVALID_REQUEST,
                    f"{path}.{name}: unknown field ({cls.__name__} has {known})",
                )
        for name in required:
            if name not in value:
                raise FrameError(INVALID_REQUEST, f"{path}.{name}: missing required field")
        kwargs = {name: decoders[name](item, f"{path}.{name}") for name, item in value.items()}
        try:
            return cls(**kwargs)
        except (FieldError, FieldTypeError) as exc:  # the field is named: say its path
            raise FrameError(INVALID_REQUEST, f"{path}.{exc.field}: {exc.problem}") from None
        except (TypeError, ValueError) as exc:
            raise FrameError(INVALID_REQUEST, f"{path}: {exc}") from None

    return decode


def decode_request(api: str, value: Any, path: str = "request") -> Any:
    """The request dataclass of ``api`` built from its JSON object (FrameError if not)."""
    return _dataclass_decoder(APIS[api])(value, path)


def decode_response(api: str, value: Any) -> Any:
    """The response dataclass of ``api`` from a reply's ``response`` object (the client side
    of the protocol; FrameError if it does not fit)."""
    return _dataclass_decoder(RESPONSES[api])(value, "response")


def request_frame(frame_id: int, request: Any) -> dict[str, Any]:
    """The frame that sends ``request`` (an engine or cluster request dataclass)."""
    return {"id": frame_id, "api": API_OF[type(request)], "request": to_json(request)}


def _frame_id(obj: dict[str, Any]) -> int | None:
    value = obj.get("id")
    if type(value) is int and -MAX_ID <= value <= MAX_ID:
        return value
    return None


def parse_frame(data: str | bytes) -> Frame:
    """Decode one websocket frame (text, or UTF-8 bytes) into a :class:`Frame`.

    Raises FrameError with the reply's error code: ``frame_too_large``, ``invalid_json``,
    ``invalid_frame`` (not an object, bad id/api/request keys), ``unknown_api``,
    ``invalid_request`` (the request's fields).
    """
    obj = _load(data)
    if type(obj) is not dict:
        raise FrameError(
            INVALID_FRAME, f"a frame must be a JSON object, got {_json_type_name(obj)}"
        )
    frame_id = _frame_id(obj)
    if "id" not in obj:
        raise FrameError(INVALID_FRAME, "missing id")
    if frame_id is None:
        raise FrameError(
            INVALID_FRAME,
            f"id must be an integer in -{MAX_ID}..{MAX_ID}, "
            f"got {_json_type_name(obj['id'])}{_shown(obj['id'])}",
        )
    for key in obj:
        if key not in _FRAME_KEYS:
            raise FrameError(
                INVALID_FRAME, f"unknown key {key!r} (a frame has id, api and request)", frame_id
            )
    api = obj.get("api")
    if api is None:
        raise FrameError(INVALID_FRAME, "missing api", frame_id)
    if type(api) is not str:
        raise FrameError(
            INVALID_FRAME, f"api must be a string, got {_json_type_name(api)}", frame_id
        )
    if api not in APIS:
        raise FrameError(
            UNKNOWN_API, f"unknown api {api[:60]!r} (known: {', '.join(APIS)})", frame_id
        )
    if "request" not in obj:
        raise FrameError(INVALID_FRAME, "missing request", frame_id)
    try:
        request = decode_request(api, obj["request"])
    except FrameError as exc:
        exc.frame_id = frame_id
        raise
    return Frame(id=frame_id, api=api, request=request)


# ---------------------------------------------------------------- encoding


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def to_json(value: Any) -> Any:
    """A response dataclass (or anything inside one) as JSON-ready data: dataclasses become
    objects, tuples lists, bytes base64 strings, enums their values."""
    if value is None or isinstance(value, bool | int | float | str):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: to_json(getattr(value, name)) for name in _field_names(type(value))}
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def response_frame(frame_id: int, api: str, response: Any) -> dict[str, Any]:
    return {"id": frame_id, "api": api, "response": to_json(response)}


def error_frame(frame_id: int | None, code: str, message: str) -> dict[str, Any]:
    return {"id": frame_id, "error": {"code": code, "message": message}}


def dumps(frame: dict[str, Any]) -> str:
    """Compact JSON text of a reply frame."""
    # ensure_ascii: an error message may quote a lone surrogate, which is not UTF-8.
    return json.dumps(frame, separators=(",", ":"))
