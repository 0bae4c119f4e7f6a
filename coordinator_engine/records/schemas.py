"""Kafka's ``__consumer_offsets`` key and value schemas, as data.

The layouts are Kafka's message schemas in its group-coordinator module
(``group-coordinator/src/main/resources/common/message/``: ``OffsetCommitKey.json``,
``OffsetCommitValue.json``, ``GroupMetadataKey.json``, ``GroupMetadataValue.json``): one
dataclass per record part, one table per record with one entry per version, and the versions
this engine writes (Kafka's ``GroupCoordinatorRecordHelpers``). The encoders and decoders are
with the records they serve: `records.offset_commit` for offsets, `classic.records` for group
metadata.

OffsetCommitValue::

    v0  offset int64, metadata string, commit_timestamp int64
    v1  offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
    v2  offset int64, metadata string, commit_timestamp int64
    v3  offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    v4  as v3, flexible

GroupMetadataValue (``[MemberMetadata]`` is an array of the member struct)::

    v0  protocol_type string, generation int32, protocol string?, leader string?, members [M0]
    v1  as v0 with members [M1]
    v2  protocol_type, generation, protocol, leader, current_state_timestamp int64, members [M1]
    v3  as v2 with members [M3]
    v4  as v3, flexible

    M0  member_id string, client_id string, client_host string, session_timeout int32,
        subscription bytes, assignment bytes
    M1  member_id, client_id, client_host, rebalance_timeout int32, session_timeout,
        subscription, assignment
    M3  member_id, group_instance_id string?, client_id, client_host, rebalance_timeout,
        session_timeout, subscription, assignment
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .codec import BYTES, INT32, INT64, NULLABLE_STRING, STRING, Array, Fields

__all__ = [
    "GROUP_METADATA_KEY_FIELDS",
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_KEY_VERSIONS",
    "GROUP_METADATA_VALUE_VERSION",
    "GROUP_METADATA_VALUE_VERSIONS",
    "OFFSET_COMMIT_KEY_FIELDS",
    "OFFSET_COMMIT_KEY_VERSION",
    "OFFSET_COMMIT_KEY_VERSIONS",
    "OFFSET_COMMIT_VALUE_VERSION",
    "OFFSET_COMMIT_VALUE_VERSIONS",
    "OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    """Key v0/v1: the committed position of ``group`` on ``topic``-``partition``."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue:
    """A committed offset.

    ``offset`` is the next offset the group will consume; ``leader_epoch`` the epoch of the
    partition leader the consumer last saw (-1 unknown); ``metadata`` the client's free-form
    string; ``commit_timestamp`` when the coordinator accepted the commit (ms);
    ``expire_timestamp`` an explicit expiry from OffsetCommit v1 requests (-1 none).
    """

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    """Key v2: the metadata of ``group``."""

    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadata:
    """One member of a group metadata record.

    ``group_instance_id`` is the static member id (KIP-345, None for dynamic members);
    timeouts are in ms; ``subscription`` is the member's metadata for the group's chosen
    protocol; ``assignment`` what the leader assigned it.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    """A classic group as of its last completed generation (or an empty group).

    ``protocol_type`` is e.g. "consumer" ("" for an empty group that never had one);
    ``protocol`` the chosen assignor and ``leader`` the leader's member id (None when the group
    has no members); ``current_state_timestamp`` when the group last changed state (ms, -1
    unknown).
    """

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


OFFSET_COMMIT_KEY_FIELDS: Final[Fields] = (
    ("group", STRING),
    ("topic", STRING),
    ("partition", INT32),
)
GROUP_METADATA_KEY_FIELDS: Final[Fields] = (("group", STRING),)
# version -> (fields, flexible); keys are never flexible.
OFFSET_COMMIT_KEY_VERSIONS: Final[dict[int, tuple[Fields, bool]]] = {
    0: (OFFSET_COMMIT_KEY_FIELDS, False),
    1: (OFFSET_COMMIT_KEY_FIELDS, False),
}
GROUP_METADATA_KEY_VERSIONS: Final[dict[int, tuple[Fields, bool]]] = {
    2: (GROUP_METADATA_KEY_FIELDS, False),
}

_OFFSET_COMMIT_V0: Final[Fields] = (
    ("offset", INT64),
    ("metadata", STRING),
    ("commit_timestamp", INT64),
)
_OFFSET_COMMIT_V1: Final[Fields] = (*_OFFSET_COMMIT_V0, ("expire_timestamp", INT64))
_OFFSET_COMMIT_V3: Final[Fields] = (
    ("offset", INT64),
    ("leader_epoch", INT32),
    ("metadata", STRING),
    ("commit_timestamp", INT64),
)

# version -> (fields, flexible)
OFFSET_COMMIT_VALUE_VERSIONS: Final[dict[int, tuple[Fields, bool]]] = {
    0: (_OFFSET_COMMIT_V0, False),
    1: (_OFFSET_COMMIT_V1, False),
    2: (_OFFSET_COMMIT_V0, False),
    3: (_OFFSET_COMMIT_V3, False),
    4: (_OFFSET_COMMIT_V3, True),
}

_MEMBER_V0: Final[Fields] = (
    ("member_id", STRING),
    ("client_id", STRING),
    ("client_host", STRING),
    ("session_timeout", INT32),
    ("subscription", BYTES),
    ("assignment", BYTES),
)
_MEMBER_V1: Final[Fields] = (
    ("member_id", STRING),
    ("client_id", STRING),
    ("client_host", STRING),
    ("rebalance_timeout", INT32),
    ("session_timeout", INT32),
    ("subscription", BYTES),
    ("assignment", BYTES),
)
_MEMBER_V3: Final[Fields] = (
    ("member_id", STRING),
    ("group_instance_id", NULLABLE_STRING),
    *_MEMBER_V1[1:],
)


def _group_fields(members: Fields, *, with_state_timestamp: bool) -> Fields:
    head: Fields = (
        ("protocol_type", STRING),
        ("generation", INT32),
        ("protocol", NULLABLE_STRING),
        ("leader", NULLABLE_STRING),
    )
    if with_state_timestamp:
        head = (*head, ("current_state_timestamp", INT64))
    return (*head, ("members", Array(members, MemberMetadata)))


GROUP_METADATA_VALUE_VERSIONS: Final[dict[int, tuple[Fields, bool]]] = {
    0: (_group_fields(_MEMBER_V0, with_state_timestamp=False), False),
    1: (_group_fields(_MEMBER_V1, with_state_timestamp=False), False),
    2: (_group_fields(_MEMBER_V1, with_state_timestamp=True), False),
    3: (_group_fields(_MEMBER_V3, with_state_timestamp=True), False),
    4: (_group_fields(_MEMBER_V3, with_state_timestamp=True), True),
}

OFFSET_COMMIT_KEY_VERSION: Final = 1
GROUP_METADATA_KEY_VERSION: Final = 2
OFFSET_COMMIT_VALUE_VERSION: Final = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY: Final = 1
GROUP_METADATA_VALUE_VERSION: Final = 3
