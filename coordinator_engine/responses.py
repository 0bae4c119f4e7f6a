"""Responses the coordinator gives: frozen keyword-only dataclasses mirroring Kafka's.

`error_code` fields hold Kafka's numeric codes (`Errors`). Nullable strings are None where
Kafka's schema allows null (JoinGroup's protocol_type/protocol_name in error replies); adapters
for old wire versions that forbid null send "" instead.
"""

from __future__ import annotations

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
    """One group in a ListGroups answer; `group_type` is its kind's name (KIP-848's type)."""

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
)
