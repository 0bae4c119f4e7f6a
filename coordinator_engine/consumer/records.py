"""Consumer groups' records: Kafka's own KIP-848 record types of ``__consumer_offsets``.

The layouts are Kafka's message schemas (group-coordinator's
``src/main/resources/common/message/ConsumerGroup*Key.json`` / ``*Value.json``) and the
factories follow `GroupCoordinatorRecordHelpers`: one factory per record with its tombstone
twin. Keys are non-flexible and their version is the record type; values are version 0,
flexible (compact strings and arrays, a tagged-field section that is skipped when read)::

    3  ConsumerGroupMetadata            key: group            value: epoch int32
    4  ConsumerGroupPartitionMetadata   key: group            value: topics [topic_id uuid,
           topic_name string, num_partitions int32, partition_metadata [partition int32,
           racks []string]]
    5  ConsumerGroupMemberMetadata      key: group, member_id value: instance_id string?,
           rack_id string?, client_id string, client_host string,
           subscribed_topic_names []string, subscribed_topic_regex string?,
           rebalance_timeout_ms int32, server_assignor string?
    6  ConsumerGroupTargetAssignmentMetadata key: group       value: assignment_epoch int32
    7  ConsumerGroupTargetAssignmentMember   key: group, member_id
           value: topic_partitions [topic_id uuid, partitions []int32]
    8  ConsumerGroupCurrentMemberAssignment  key: group, member_id
           value: member_epoch int32, previous_member_epoch int32, state int8,
           assigned_partitions [TP], partitions_pending_revocation [TP]
    16 ConsumerGroupRegularExpression   key: group, regular_expression
           value: topics []string, version int64, timestamp int64

Partitions are named by topic id (a `uuid.UUID`), as in Kafka; the manager maps ids to names.
Tagged fields Kafka added later (record 3's MetadataHash, record 5's ClassicMemberMetadata,
record 8's AssignmentEpochs) are skipped when read and never written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from uuid import UUID

from ..records.codec import (
    INT8,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    Array,
    ArrayOf,
    Fields,
    RecordType,
    as_bytes,
    encode,
    read_key,
    read_value,
)
from ..records.codec import UUID as UUID_TYPE

__all__ = [
    "CONSUMER_RECORD_TYPES",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "PartitionMetadata",
    "TopicMetadata",
    "TopicPartitions",
    "current_assignment_record",
    "current_assignment_tombstone",
    "encode_record",
    "epoch_record",
    "epoch_tombstone",
    "member_subscription_record",
    "member_subscription_tombstone",
    "regular_expression_record",
    "regular_expression_tombstone",
    "subscription_metadata_record",
    "subscription_metadata_tombstone",
    "target_assignment_epoch_record",
    "target_assignment_epoch_tombstone",
    "target_assignment_record",
    "target_assignment_tombstone",
    "topic_partitions",
]

Record = tuple[bytes, bytes | None]
VALUE_VERSION: Final = 0


# ---------------------------------------------------------------------------------- keys


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataKey:
    """Key v3: the epoch of consumer group ``group``."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPartitionMetadataKey:
    """Key v4: the metadata of the topics consumer group ``group`` subscribes to."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataKey:
    """Key v5: member ``member_id``'s subscription."""

    group: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    """Key v6: the epoch of the group's target assignment."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberKey:
    """Key v7: member ``member_id``'s target assignment."""

    group: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    """Key v8: member ``member_id``'s current assignment and epochs."""

    group: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionKey:
    """Key v16: what ``regular_expression`` resolved to in the group."""

    group: str
    regular_expression: str


# ---------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    """Partitions of one topic, by topic id."""

    topic_id: UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadata:
    partition: int
    racks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    topic_id: UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    """``state`` is Kafka's `MemberState` byte (0 stable, 1 unrevoked partitions, 2 unreleased
    partitions, 127 unknown)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionValue:
    """``version``: the engine's topic image version the expression was resolved against;
    ``timestamp``: when (ms)."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


# ---------------------------------------------------------------------------------- schemas

_GROUP_KEY: Final[Fields] = (("group", STRING),)
_MEMBER_KEY: Final[Fields] = (("group", STRING), ("member_id", STRING))
_REGEX_KEY: Final[Fields] = (("group", STRING), ("regular_expression", STRING))
_TOPIC_PARTITIONS: Final = Array(
    (("topic_id", UUID_TYPE), ("partitions", ArrayOf(INT32))), TopicPartitions
)

_VALUE_FIELDS: Final[dict[type, Fields]] = {
    ConsumerGroupMetadataValue: (("epoch", INT32),),
    ConsumerGroupPartitionMetadataValue: (
        (
            "topics",
            Array(
                (
                    ("topic_id", UUID_TYPE),
                    ("topic_name", STRING),
                    ("num_partitions", INT32),
                    (
                        "partition_metadata",
                        Array(
                            (("partition", INT32), ("racks", ArrayOf(STRING))), PartitionMetadata
                        ),
                    ),
                ),
                TopicMetadata,
            ),
        ),
    ),
    ConsumerGroupMemberMetadataValue: (
        ("instance_id", NULLABLE_STRING),
        ("rack_id", NULLABLE_STRING),
        ("client_id", STRING),
        ("client_host", STRING),
        ("subscribed_topic_names", ArrayOf(STRING)),
        ("subscribed_topic_regex", NULLABLE_STRING),
        ("rebalance_timeout_ms", INT32),
        ("server_assignor", NULLABLE_STRING),
    ),
    ConsumerGroupTargetAssignmentMetadataValue: (("assignment_epoch", INT32),),
    ConsumerGroupTargetAssignmentMemberValue: (("topic_partitions", _TOPIC_PARTITIONS),),
    ConsumerGroupCurrentMemberAssignmentValue: (
        ("member_epoch", INT32),
        ("previous_member_epoch", INT32),
        ("state", INT8),
        ("assigned_partitions", _TOPIC_PARTITIONS),
        ("partitions_pending_revocation", _TOPIC_PARTITIONS),
    ),
    ConsumerGroupRegularExpressionValue: (
        ("topics", ArrayOf(STRING)),
        ("version", INT64),
        ("timestamp", INT64),
    ),
}

K = TypeVar("K")
V = TypeVar("V")


def _build(cls: type[V], fields: Fields, data: dict[str, Any]) -> V:
    """A value dataclass from the reader's nested dicts."""
    kwargs: dict[str, Any] = {}
    for name, ftype in fields:
        raw = data[name]
        if isinstance(ftype, Array):
            kwargs[name] = tuple(_build(ftype.element, ftype.fields, item) for item in raw)
        else:
            kwargs[name] = raw
    return cls(**kwargs)


def _encode_key(version: int, fields: Fields, key: object) -> bytes:
    return encode({version: (fields, False)}, version, key, type(key).__name__)


def _encode_value(value: object) -> bytes:
    fields = _VALUE_FIELDS[type(value)]
    return encode({VALUE_VERSION: (fields, True)}, VALUE_VERSION, value, type(value).__name__)


def _record_type(
    name: str, version: int, key_class: type[K], key_fields: Fields, value_class: type[V]
) -> RecordType:
    value_fields = _VALUE_FIELDS[value_class]
    versions = {VALUE_VERSION: (value_fields, True)}

    def decode_key(data: bytes, key_version: int) -> K:
        return read_key(data, f"{name}Key v{key_version}", key_fields, key_class)

    def decode_value(data: bytes | bytearray | memoryview) -> V:
        _, out = read_value(as_bytes(data, "value"), f"{name}Value", versions)
        return _build(value_class, value_fields, out)

    return RecordType(
        name=name,
        key_versions=(version,),
        key_class=key_class,
        decode_key=decode_key,
        decode_value=decode_value,
    )


GROUP_METADATA = _record_type(
    "ConsumerGroupMetadata", 3, ConsumerGroupMetadataKey, _GROUP_KEY, ConsumerGroupMetadataValue
)
PARTITION_METADATA = _record_type(
    "ConsumerGroupPartitionMetadata",
    4,
    ConsumerGroupPartitionMetadataKey,
    _GROUP_KEY,
    ConsumerGroupPartitionMetadataValue,
)
MEMBER_METADATA = _record_type(
    "ConsumerGroupMemberMetadata",
    5,
    ConsumerGroupMemberMetadataKey,
    _MEMBER_KEY,
    ConsumerGroupMemberMetadataValue,
)
TARGET_ASSIGNMENT_METADATA = _record_type(
    "ConsumerGroupTargetAssignmentMetadata",
    6,
    ConsumerGroupTargetAssignmentMetadataKey,
    _GROUP_KEY,
    ConsumerGroupTargetAssignmentMetadataValue,
)
TARGET_ASSIGNMENT_MEMBER = _record_type(
    "ConsumerGroupTargetAssignmentMember",
    7,
    ConsumerGroupTargetAssignmentMemberKey,
    _MEMBER_KEY,
    ConsumerGroupTargetAssignmentMemberValue,
)
CURRENT_MEMBER_ASSIGNMENT = _record_type(
    "ConsumerGroupCurrentMemberAssignment",
    8,
    ConsumerGroupCurrentMemberAssignmentKey,
    _MEMBER_KEY,
    ConsumerGroupCurrentMemberAssignmentValue,
)
REGULAR_EXPRESSION = _record_type(
    "ConsumerGroupRegularExpression",
    16,
    ConsumerGroupRegularExpressionKey,
    _REGEX_KEY,
    ConsumerGroupRegularExpressionValue,
)

#: The consumer kind's record types, as the façade routes them.
CONSUMER_RECORD_TYPES: Final = (
    GROUP_METADATA,
    PARTITION_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    CURRENT_MEMBER_ASSIGNMENT,
    REGULAR_EXPRESSION,
)


# ---------------------------------------------------------------------------------- factories
# GroupCoordinatorRecordHelpers: one factory per record, and its tombstone.


def topic_partitions(assignment: Mapping[UUID, frozenset[int]]) -> tuple[TopicPartitions, ...]:
    """An assignment as the records hold it: topics by id, partitions sorted (a deterministic
    layout: topics sorted by id)."""
    return tuple(
        TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(parts)))
        for topic_id, parts in sorted(assignment.items())
        if parts
    )


def _group_key(version: int, group: str, cls: Callable[..., Any]) -> bytes:
    return _encode_key(version, _GROUP_KEY, cls(group=group))


def _member_key(version: int, group: str, member_id: str, cls: Callable[..., Any]) -> bytes:
    return _encode_key(version, _MEMBER_KEY, cls(group=group, member_id=member_id))


def epoch_record(group: str, epoch: int) -> Record:
    return _group_key(3, group, ConsumerGroupMetadataKey), _encode_value(
        ConsumerGroupMetadataValue(epoch=epoch)
    )


def epoch_tombstone(group: str) -> Record:
    return _group_key(3, group, ConsumerGroupMetadataKey), None


def subscription_metadata_record(group: str, topics: tuple[TopicMetadata, ...]) -> Record:
    return _group_key(4, group, ConsumerGroupPartitionMetadataKey), _encode_value(
        ConsumerGroupPartitionMetadataValue(topics=topics)
    )


def subscription_metadata_tombstone(group: str) -> Record:
    return _group_key(4, group, ConsumerGroupPartitionMetadataKey), None


def member_subscription_record(
    group: str, member_id: str, value: ConsumerGroupMemberMetadataValue
) -> Record:
    return _member_key(5, group, member_id, ConsumerGroupMemberMetadataKey), _encode_value(value)


def member_subscription_tombstone(group: str, member_id: str) -> Record:
    return _member_key(5, group, member_id, ConsumerGroupMemberMetadataKey), None


def target_assignment_epoch_record(group: str, epoch: int) -> Record:
    return _group_key(6, group, ConsumerGroupTargetAssignmentMetadataKey), _encode_value(
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch)
    )


def target_assignment_epoch_tombstone(group: str) -> Record:
    return _group_key(6, group, ConsumerGroupTargetAssignmentMetadataKey), None


def target_assignment_record(
    group: str, member_id: str, assignment: Mapping[UUID, frozenset[int]]
) -> Record:
    return _member_key(7, group, member_id, ConsumerGroupTargetAssignmentMemberKey), _encode_value(
        ConsumerGroupTargetAssignmentMemberValue(topic_partitions=topic_partitions(assignment))
    )


def target_assignment_tombstone(group: str, member_id: str) -> Record:
    return _member_key(7, group, member_id, ConsumerGroupTargetAssignmentMemberKey), None


def current_assignment_record(
    group: str, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue
) -> Record:
    key = _member_key(8, group, member_id, ConsumerGroupCurrentMemberAssignmentKey)
    return key, _encode_value(value)


def current_assignment_tombstone(group: str, member_id: str) -> Record:
    return _member_key(8, group, member_id, ConsumerGroupCurrentMemberAssignmentKey), None


def _regex_key(group: str, regex: str) -> bytes:
    return _encode_key(
        16, _REGEX_KEY, ConsumerGroupRegularExpressionKey(group=group, regular_expression=regex)
    )


def regular_expression_record(
    group: str, regex: str, topics: tuple[str, ...], version: int, timestamp: int
) -> Record:
    return _regex_key(group, regex), _encode_value(
        ConsumerGroupRegularExpressionValue(topics=topics, version=version, timestamp=timestamp)
    )


def regular_expression_tombstone(group: str, regex: str) -> Record:
    return _regex_key(group, regex), None


_KEYS: Final[dict[type, tuple[int, Fields]]] = {
    ConsumerGroupMetadataKey: (3, _GROUP_KEY),
    ConsumerGroupPartitionMetadataKey: (4, _GROUP_KEY),
    ConsumerGroupMemberMetadataKey: (5, _MEMBER_KEY),
    ConsumerGroupTargetAssignmentMetadataKey: (6, _GROUP_KEY),
    ConsumerGroupTargetAssignmentMemberKey: (7, _MEMBER_KEY),
    ConsumerGroupCurrentMemberAssignmentKey: (8, _MEMBER_KEY),
    ConsumerGroupRegularExpressionKey: (16, _REGEX_KEY),
}


def encode_record(key: object, value: object | None) -> Record:
    """The (key, value) bytes of a decoded record (None: a tombstone): what the manager
    appends for the records it applies."""
    version, fields = _KEYS[type(key)]
    return _encode_key(version, fields, key), None if value is None else _encode_value(value)
