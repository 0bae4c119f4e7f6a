"""Responses the coordinator gives: frozen keyword-only dataclasses mirroring Kafka's.

`error_code` fields hold Kafka's numeric codes (`Errors`). Nullable strings are None where
Kafka's schema allows null (JoinGroup's protocol_type/protocol_name in error replies); adapters
for old wire versions that forbid null send "" instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .requests import TopicPartition


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupResponse:
    """The end of the join phase for one member. Only the leader gets `members` (each with its
    metadata for the chosen protocol); `skip_assignment` tells a static leader that rejoined a
    Stable group to keep the current assignment (JoinGroup v9)."""

    error_code: int
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncGroupResponse:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, kw_only=True, slots=True)
class HeartbeatResponse:
    error_code: int


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupResponse:
    error_code: int
    members: tuple[LeaveMemberResult, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[PartitionResult, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetData:
    """A committed position; offset −1 (and metadata "") when nothing was committed."""

    topic: str
    partition: int
    offset: int
    metadata: str | None
    leader_epoch: int
    error_code: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchResponse:
    error_code: int
    partitions: tuple[OffsetData, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteResponse:
    error_code: int
    partitions: tuple[PartitionResult, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedGroup:
    """A group as DescribeGroups shows it. Metadata and assignments are filled only when the
    group is Stable; an unknown group is described as Dead with no members (Kafka's DeadGroup)."""

    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class ListedGroup:
    """A group as ListGroups shows it; `group_type` (v5) is "classic", "consumer" or
    "handoff"."""

    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, kw_only=True, slots=True)
class ListGroupsResponse:
    error_code: int
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteGroupResult:
    group_id: str
    error_code: int


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeleteGroupResult, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffHeartbeatResponse:
    """What a handoff group's member must do (docs/engine.md, "Handoff groups").

    member_epoch: the group's epoch (the plan in force); -1 after a leave.
    group_state: "Initial", "Starting", "Stable" or "Closing".
    close: stop consuming these, commit their offsets, then confirm them in `closed`.
    start: you may consume these now; confirm them in `started`.
    assignment: every partition that is yours once the handoff is done.
    """

    error_code: int
    member_id: str = ""
    member_epoch: int = -1
    group_state: str = ""
    close: tuple[TopicPartition, ...] = ()
    start: tuple[TopicPartition, ...] = ()
    assignment: tuple[TopicPartition, ...] = ()


#: A consumer-group member's partitions: topic name → partitions (sorted).
TopicAssignment = Mapping[str, tuple[int, ...]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    """ConsumerGroupHeartbeat's answer (KIP-848). `assignment` is None unless the request was
    full or the member's assignment changed; the wire layer maps topic names to ids.
    `error_message` explains an error in words (Kafka's ErrorMessage)."""

    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicAssignment | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerDescribedMember:
    """One member in ConsumerGroupDescribe: its identity, epoch, subscription, current
    `assignment` and `target_assignment` (topic name → partitions). `member_type` is 1
    (consumer protocol; v1's MemberType)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: TopicAssignment
    target_assignment: TopicAssignment
    member_type: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerDescribedGroup:
    """One group in ConsumerGroupDescribe; GROUP_ID_NOT_FOUND for an unknown group or one of
    another kind (librdkafka's admin then falls back to DescribeGroups)."""

    error_code: int
    error_message: str | None = None
    group_id: str
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerDescribedMember, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[ConsumerDescribedGroup, ...]


Response = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | OffsetDeleteResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | DeleteGroupsResponse
    | HandoffHeartbeatResponse
    | ConsumerGroupHeartbeatResponse
    | ConsumerGroupDescribeResponse
)
