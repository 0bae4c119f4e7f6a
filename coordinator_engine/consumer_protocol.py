"""Kafka's consumer protocol: what consumers put in JoinGroup metadata and SyncGroup assignments.

Theory of operation
===================

Members of a group with protocol type ``consumer`` speak the embedded *consumer protocol*: the
``metadata`` of each JoinGroup protocol is a ConsumerProtocolSubscription, and the
``assignment`` the leader sends in SyncGroup is a ConsumerProtocolAssignment. The coordinator
never needs them to run the group, but it reads them to know which topics a group consumes and
to show who owns which partition. The layouts follow Kafka's message schemas
``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``, and the reading rules follow
``org.apache.kafka.clients.consumer.internals.ConsumerProtocol``.

Both messages are a big-endian ``int16 version`` followed by the fields of that version (never
flexible, so no tagged fields)::

    ConsumerProtocolSubscription
      v0+  topics            [string]
      v0+  user_data         bytes?       (null by default)
      v1+  owned_partitions  [topic string, partitions [int32]]
      v2+  generation_id     int32        (-1 by default)
      v3+  rack_id           string?      (null by default)

    ConsumerProtocolAssignment (v0-v3 share one layout; versions move with the subscription)
      v0+  assigned_partitions  [topic string, partitions [int32]]
      v0+  user_data            bytes?

Primitive types: ``string`` is an int16 length and UTF-8 bytes; ``bytes`` an int32 length and the
bytes; an array an int32 count and the elements; a length or count of ``-1`` is null, allowed only
where the schema says nullable (``?`` above).

Compatibility rules (Kafka's): later versions only append fields, so a reader given a version
higher than it knows reads the fields it knows and ignores the rest; bytes after the last known
field are ignored likewise. A negative version is not a consumer protocol message at all. Fields
a version lacks decode to their defaults, and are silently dropped when encoding to that version
(they are ``ignorable`` in the schema). Like Kafka's serializer, :func:`encode_subscription`
writes the topics sorted and the owned partitions grouped by topic, sorted.

Anything that does not parse raises :class:`ConsumerProtocolError` (a ``ValueError``) naming the
message, the field and the offset; no ``struct.error``, ``IndexError`` or ``UnicodeDecodeError``
escapes.

StickyAssignorUserData
----------------------
The eager ``sticky`` assignor (Kafka's ``StickyAssignor``) puts the member's previous assignment
in the subscription's ``user_data``, without a version prefix::

    v0  previous_assignment [topic string, partitions [int32]]
    v1  previous_assignment [topic string, partitions [int32]], generation int32

Kafka writes v1 and reads v1, falling back to v0 when the generation is missing.

CooperativeStickyAssignor user data
-----------------------------------
The ``cooperative-sticky`` assignor puts its generation in the user data, for the leaders that
read ConsumerProtocolSubscription v1 (which has no ``generation_id`` field)::

    v0  generation int32
"""

from __future__ import annotations

import functools
import operator
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from coordinator_engine.assignors._common import java_string_key

#: The versions of ConsumerProtocolSubscription and ConsumerProtocolAssignment this module knows.
#: The JoinGroup ``protocol_type`` of groups whose members speak this protocol.
CONSUMER_PROTOCOL_TYPE = "consumer"

LOWEST_SUPPORTED_VERSION = 0
HIGHEST_SUPPORTED_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """Bytes that are not a valid consumer protocol message (truncated, garbage, bad version)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerProtocolSubscription:
    """A member's JoinGroup metadata for the ``consumer`` protocol type.

    Fields:
      topics: the subscribed topics.
      user_data: the assignor's opaque data, ``None`` when absent.
      owned_partitions: ``(topic, partition)`` pairs the member owns (v1+; cooperative protocol).
      generation_id: the generation of ``owned_partitions`` (v2+), ``-1`` when unknown.
      rack_id: the member's ``client.rack`` (v3+), ``None`` when unset.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError(
                f"topics must be a collection of topic names, not the string {self.topics!r}"
            )
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(self.owned_partitions))


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerProtocolAssignment:
    """The assignment a member receives in SyncGroup for the ``consumer`` protocol type.

    Fields:
      assigned_partitions: the member's ``(topic, partition)`` pairs.
      user_data: the assignor's opaque data, ``None`` when absent.
    """

    assigned_partitions: tuple[tuple[str, int], ...] = ()
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "assigned_partitions", tuple(self.assigned_partitions))


@dataclass(frozen=True, kw_only=True, slots=True)
class StickyAssignorUserData:
    """The eager ``sticky`` assignor's user data: the member's previous assignment.

    Fields:
      previous_assignment: the ``(topic, partition)`` pairs the member owned.
      generation: the generation they were owned in; ``None`` for v0 data, which has none.
    """

    previous_assignment: tuple[tuple[str, int], ...] = ()
    generation: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "previous_assignment", tuple(self.previous_assignment))


# -- encoding ------------------------------------------------------------------------------------


class _Writer:
    __slots__ = ("message", "parts")

    def __init__(self, message: str) -> None:
        self.message = message
        self.parts: list[bytes] = []

    def int16(self, value: int) -> None:
        self.parts.append(_INT16.pack(value))

    def int32(self, value: int, field: str) -> None:
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"{self.message}: {field} {value} does not fit in an int32")
        self.parts.append(_INT32.pack(value))

    def string(self, value: str | None, field: str, *, nullable: bool = False) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{self.message}: {field} must not be None")
            self.parts.append(_INT16.pack(-1))
            return
        data = value.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError(f"{self.message}: {field} is {len(data)} bytes, over the int16 limit")
        self.parts.append(_INT16.pack(len(data)))
        self.parts.append(data)

    def nullable_bytes(self, value: bytes | None) -> None:
        if value is None:
            self.parts.append(_INT32.pack(-1))
        else:
            self.parts.append(_INT32.pack(len(value)))
            self.parts.append(bytes(value))

    def topic_partitions(self, groups: list[tuple[str, list[int]]], field: str) -> None:
        self.parts.append(_INT32.pack(len(groups)))
        for topic, partitions in groups:
            self.string(topic, f"{field} topic")
            self.parts.append(_INT32.pack(len(partitions)))
            if all(type(p) is int and -(2**31) <= p < 2**31 for p in partitions):
                self.parts.append(struct.pack(f">{len(partitions)}i", *partitions))
                continue
            for partition in partitions:
                self.int32(partition, f"{field} partition of {topic!r}")

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def _group_by_topic(pairs: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    """``(topic, partition)`` pairs grouped by topic, topics in first-appearance order."""
    groups: dict[str, list[int]] = {}
    for topic, partition in pairs:
        groups.setdefault(topic, []).append(partition)
    return list(groups.items())


def _sorted_by_java_topic(pairs: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``(topic, partition)`` pairs sorted by topic in Java's order, then partition. ASCII
    topics sort the same in Python's order, which needs no key computed per pair."""
    pairs = list(pairs)
    if all(type(tp) is tuple and len(tp) == 2 and type(tp[0]) is str for tp in pairs) and all(
        topic.isascii() for topic in {tp[0] for tp in pairs}
    ):
        return sorted(pairs, key=_TOPIC_PARTITION)
    return sorted(pairs, key=lambda tp: (java_string_key(tp[0]), tp[1]))


_TOPIC_PARTITION = operator.itemgetter(0, 1)


def _check_version(version: int, message: str) -> None:
    if not LOWEST_SUPPORTED_VERSION <= version <= HIGHEST_SUPPORTED_VERSION:
        raise ValueError(
            f"unsupported {message} version {version} "
            f"(supported: {LOWEST_SUPPORTED_VERSION}-{HIGHEST_SUPPORTED_VERSION})"
        )


# -- the encoders' fast paths: plain values (ASCII names, ints in range, bytes or None) are
# written in one go, with the same bytes; anything else takes the field-by-field writer, which
# raises the error that names the field.


def _plain_name(text: object) -> bool:
    """A str that encodes as it is (ASCII) within a string's length, and sorts in Java's
    order already."""
    return type(text) is str and text.isascii() and len(text) <= 0x7FFF


def _plain_pairs(pairs: object) -> bool:
    return all(
        type(tp) is tuple
        and len(tp) == 2
        and type(tp[0]) is str
        and tp[0].isascii()
        and len(tp[0]) <= 0x7FFF
        and type(tp[1]) is int
        and -(2**31) <= tp[1] < 2**31
        for tp in pairs  # type: ignore[attr-defined]
    )


def _plain_bytes(data: object) -> bool:
    return data is None or type(data) is bytes


def _nullable_bytes(data: bytes | None) -> bytes:
    return _INT32.pack(-1) if data is None else _INT32.pack(len(data)) + data


def _plain_topic_partitions(groups: list[tuple[str, list[int]]]) -> list[bytes]:
    parts = [_INT32.pack(len(groups))]
    for topic, partitions in groups:
        parts.append(_INT16.pack(len(topic)) + topic.encode("ascii"))
        parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    return parts


def _plain_subscription(subscription: ConsumerProtocolSubscription, version: int) -> bytes | None:
    """``encode_subscription`` of a plain subscription; None for any other."""
    topics = subscription.topics
    owned = subscription.owned_partitions if version >= 1 else ()
    generation = subscription.generation_id if version >= 2 else 0
    rack = subscription.rack_id if version >= 3 else None
    if not (
        all(type(topic) is str and topic.isascii() and len(topic) <= 0x7FFF for topic in topics)
        and _plain_bytes(subscription.user_data)
        and _plain_pairs(owned)
        and type(generation) is int
        and -(2**31) <= generation < 2**31
        and (rack is None or _plain_name(rack))
    ):
        return None
    parts = [_INT16.pack(version), _INT32.pack(len(topics))]
    for topic in sorted(topics):
        parts.append(_INT16.pack(len(topic)) + topic.encode("ascii"))
    parts.append(_nullable_bytes(subscription.user_data))
    if version >= 1:
        parts += _plain_topic_partitions(_group_by_topic(sorted(owned)))
    if version >= 2:
        parts.append(_INT32.pack(generation))
    if version >= 3:
        parts.append(_INT16.pack(-1) if rack is None else _INT16.pack(len(rack)) + rack.encode())
    return b"".join(parts)


def encode_subscription(subscription: ConsumerProtocolSubscription, version: int = 3) -> bytes:
    """ConsumerProtocolSubscription bytes of ``version`` (0-3), version prefix included.

    Topics are written sorted and owned partitions grouped by topic, both sorted, as Kafka's
    ``ConsumerProtocol.serializeSubscription`` does; fields the version lacks are dropped.
    """
    _check_version(version, "ConsumerProtocolSubscription")
    plain = _plain_subscription(subscription, version)
    if plain is not None:
        return plain
    out = _Writer(f"ConsumerProtocolSubscription v{version}")
    out.int16(version)
    topics = sorted(subscription.topics, key=java_string_key)
    out.parts.append(_INT32.pack(len(topics)))
    for topic in topics:
        out.string(topic, "topic")
    out.nullable_bytes(subscription.user_data)
    if version >= 1:
        owned = _sorted_by_java_topic(subscription.owned_partitions)
        out.topic_partitions(_group_by_topic(owned), "owned_partitions")
    if version >= 2:
        out.int32(subscription.generation_id, "generation_id")
    if version >= 3:
        out.string(subscription.rack_id, "rack_id", nullable=True)
    return out.getvalue()


def encode_assignment(assignment: ConsumerProtocolAssignment, version: int = 3) -> bytes:
    """ConsumerProtocolAssignment bytes of ``version`` (0-3), version prefix included.

    Partitions are grouped by topic in order of first appearance, each topic's partitions in the
    order given (Kafka's ``ConsumerProtocol.serializeAssignment``).
    """
    _check_version(version, "ConsumerProtocolAssignment")
    if _plain_pairs(assignment.assigned_partitions) and _plain_bytes(assignment.user_data):
        groups = _group_by_topic(assignment.assigned_partitions)
        return b"".join([_INT16.pack(version), *_plain_topic_partitions(groups)]) + (
            _nullable_bytes(assignment.user_data)
        )
    out = _Writer(f"ConsumerProtocolAssignment v{version}")
    out.int16(version)
    out.topic_partitions(_group_by_topic(assignment.assigned_partitions), "assigned_partitions")
    out.nullable_bytes(assignment.user_data)
    return out.getvalue()


def encode_sticky_assignor_user_data(user_data: StickyAssignorUserData) -> bytes:
    """StickyAssignorUserData bytes: v1 when it has a generation, v0 when it has none."""
    version = 0 if user_data.generation is None else 1
    out = _Writer(f"StickyAssignorUserData v{version}")
    out.topic_partitions(_group_by_topic(user_data.previous_assignment), "previous_assignment")
    if user_data.generation is not None:
        out.int32(user_data.generation, "generation")
    return out.getvalue()


def encode_cooperative_sticky_assignor_user_data(generation: int) -> bytes:
    """The ``cooperative-sticky`` assignor's user data: its generation as an int32."""
    out = _Writer("CooperativeStickyAssignor user data")
    out.int32(generation, "generation")
    return out.getvalue()


# -- decoding ------------------------------------------------------------------------------------


class _Reader:
    """Reads Kafka's primitive types, turning every short read into a ConsumerProtocolError."""

    __slots__ = ("data", "message", "position")

    def __init__(self, data: bytes, message: str) -> None:
        self.data = data
        self.message = message
        self.position = 0

    def fail(self, problem: str) -> ConsumerProtocolError:
        return ConsumerProtocolError(f"{self.message}: {problem}")

    def need(self, size: int, field: str) -> None:
        left = len(self.data) - self.position
        if size > left:
            raise self.fail(
                f"truncated at {field}: needs {size} bytes at offset {self.position}, {left} left"
            )

    def int16(self, field: str) -> int:
        self.need(2, field)
        (value,) = _INT16.unpack_from(self.data, self.position)
        self.position += 2
        return int(value)

    def int32(self, field: str) -> int:
        self.need(4, field)
        (value,) = _INT32.unpack_from(self.data, self.position)
        self.position += 4
        return int(value)

    def count(self, field: str, element_size: int) -> int:
        """An array length; checked against the bytes left so garbage cannot allocate much."""
        at = self.position
        n = self.int32(f"{field} count")
        if n < 0:
            raise self.fail(f"{field} count is {n} at offset {at}; the array is not nullable")
        self.need(n * element_size, f"{field} ({n} elements)")
        return n

    def string(self, field: str, *, nullable: bool = False) -> str | None:
        at = self.position
        length = self.int16(f"{field} length")
        if length < 0:
            if length == -1 and nullable:
                return None
            raise self.fail(f"{field} has length {length} at offset {at}")
        self.need(length, field)
        raw = self.data[self.position : self.position + length]
        self.position += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{field} at offset {at} is not UTF-8 ({e.reason})") from None

    def required_string(self, field: str) -> str:
        value = self.string(field)
        assert value is not None  # only nullable strings decode to None
        return value

    def plain_string(self) -> str | None:
        """The next string if it is well-formed, else None with the position unchanged: the
        caller then reads it with `required_string`, which raises the precise error. (The fast
        path of arrays of strings: no field name to build per element.)"""
        data = self.data
        start = self.position + 2
        if start <= len(data):
            (length,) = _INT16.unpack_from(data, self.position)
            end = start + length
            if length >= 0 and end <= len(data):
                try:
                    value = data[start:end].decode("utf-8")
                except UnicodeDecodeError:
                    return None
                self.position = end
                return value
        return None

    def nullable_bytes(self, field: str) -> bytes | None:
        at = self.position
        length = self.int32(f"{field} length")
        if length < 0:
            if length == -1:
                return None
            raise self.fail(f"{field} has length {length} at offset {at}")
        self.need(length, field)
        value = self.data[self.position : self.position + length]
        self.position += length
        return value

    def topic_partitions(self, field: str) -> tuple[tuple[str, int], ...]:
        pairs: list[tuple[str, int]] = []
        # Each element is at least a topic length and a partition count: 6 bytes.
        data = self.data
        for index in range(self.count(field, 6)):
            topic = self.plain_string()
            if topic is not None and self.position + 4 <= len(data):
                (n,) = _INT32.unpack_from(data, self.position)
                if n >= 0 and self.position + 4 + 4 * n <= len(data):
                    self.position += 4
                else:
                    n = self.count(f"{field}[{index}] partitions", 4)
            else:
                if topic is None:
                    topic = self.required_string(f"{field}[{index}] topic")
                n = self.count(f"{field}[{index}] partitions", 4)
            partitions = struct.unpack_from(f">{n}i", self.data, self.position)
            self.position += 4 * n
            pairs.extend((topic, partition) for partition in partitions)
        return tuple(pairs)


def _as_bytes(data: bytes | bytearray | memoryview, message: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"{message} must be decoded from bytes, not {type(data).__name__}")


def _read_version(reader: _Reader) -> int:
    version = reader.int16("version")
    if version < LOWEST_SUPPORTED_VERSION:
        raise reader.fail(f"unsupported version {version}")
    reader.message += f" v{version}"
    # A newer version is read as the newest known one: later versions only append fields.
    return min(version, HIGHEST_SUPPORTED_VERSION)


#: Messages up to this size are remembered (at most 1,024 of each kind: 16 MiB at worst).
_REMEMBERED_BYTES = 16 * 1024


def decode_subscription(data: bytes | bytearray | memoryview) -> ConsumerProtocolSubscription:
    """A ConsumerProtocolSubscription from its bytes (any version >= 0, version prefix included).

    The coordinator (for the group's topics) and the leader (to assign) read the same
    metadata: small ones are remembered by their bytes (the result is immutable)."""
    if type(data) is bytes and len(data) <= _REMEMBERED_BYTES:
        return _remembered_subscription(data)
    return _decode_subscription(data)


@functools.lru_cache(maxsize=1024)
def _remembered_subscription(data: bytes) -> ConsumerProtocolSubscription:
    return _decode_subscription(data)


def _decode_subscription(data: bytes | bytearray | memoryview) -> ConsumerProtocolSubscription:
    reader = _Reader(
        _as_bytes(data, "ConsumerProtocolSubscription"), "ConsumerProtocolSubscription"
    )
    version = _read_version(reader)
    topics = tuple(
        topic
        if (topic := reader.plain_string()) is not None
        else reader.required_string(f"topics[{index}]")
        for index in range(reader.count("topics", 2))
    )
    user_data = reader.nullable_bytes("user_data")
    owned: tuple[tuple[str, int], ...] = ()
    generation_id = -1
    rack_id = None
    if version >= 1:
        owned = reader.topic_partitions("owned_partitions")
    if version >= 2:
        generation_id = reader.int32("generation_id")
    if version >= 3:
        rack_id = reader.string("rack_id", nullable=True)
    return ConsumerProtocolSubscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation_id,
        rack_id=rack_id,
    )


def subscribed_topics(metadata: bytes) -> tuple[str, ...]:
    """The topics a ConsumerProtocolSubscription names (raises ConsumerProtocolError).

    Members send the same metadata rejoin after rejoin, and decoding all of them took ~9 of the
    ~12 ms of the call that completes a 200-member join phase: small ones are remembered by
    their bytes (``decode_subscription``)."""
    return decode_subscription(metadata).topics


def decode_assignment(data: bytes | bytearray | memoryview) -> ConsumerProtocolAssignment:
    """A ConsumerProtocolAssignment from its bytes (any version >= 0, version prefix included).

    The coordinator (for its events) and the member read the same assignment: small ones are
    remembered by their bytes (the result is immutable)."""
    if type(data) is bytes and len(data) <= _REMEMBERED_BYTES:
        return _remembered_assignment(data)
    return _decode_assignment(data)


@functools.lru_cache(maxsize=1024)
def _remembered_assignment(data: bytes) -> ConsumerProtocolAssignment:
    return _decode_assignment(data)


def _decode_assignment(data: bytes | bytearray | memoryview) -> ConsumerProtocolAssignment:
    reader = _Reader(_as_bytes(data, "ConsumerProtocolAssignment"), "ConsumerProtocolAssignment")
    _read_version(reader)
    assigned = reader.topic_partitions("assigned_partitions")
    user_data = reader.nullable_bytes("user_data")
    return ConsumerProtocolAssignment(assigned_partitions=assigned, user_data=user_data)


def decode_sticky_assignor_user_data(
    data: bytes | bytearray | memoryview,
) -> StickyAssignorUserData:
    """StickyAssignorUserData from its bytes: v1 when a generation follows the assignment, else v0.

    Kafka's ``StickyAssignor`` ignores user data it cannot parse (the member then counts as owning
    nothing); here that case raises :class:`ConsumerProtocolError` and the caller decides.
    """
    reader = _Reader(_as_bytes(data, "StickyAssignorUserData"), "StickyAssignorUserData")
    previous = reader.topic_partitions("previous_assignment")
    if len(reader.data) - reader.position < 4:
        return StickyAssignorUserData(previous_assignment=previous)
    return StickyAssignorUserData(
        previous_assignment=previous, generation=reader.int32("generation")
    )


def decode_cooperative_sticky_assignor_user_data(data: bytes | bytearray | memoryview) -> int:
    """The generation in ``cooperative-sticky`` user data.

    Kafka's ``CooperativeStickyAssignor`` reads unparseable user data as generation ``-1``; here
    that case raises :class:`ConsumerProtocolError` and the caller decides.
    """
    message = "CooperativeStickyAssignor user data"
    return _Reader(_as_bytes(data, message), message).int32("generation")
