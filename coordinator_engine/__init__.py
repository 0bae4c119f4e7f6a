"""Rebalance Lab's coordinator engine: Kafka's classic consumer-group coordinator, sans-IO.

Pure Python with no I/O of its own (no sockets, no asyncio, no clock): requests in, replies,
records and events out. See docs/engine.md for the theory of operation.
"""

from .config import CoordinatorConfig
from .coordinator import CleanupResult, GroupCoordinator
from .errors import Errors, ReplayError
from .events import GroupEvent, RebalanceCause, RemovalReason
from .group import GroupView, MemberView
from .handoff import HandoffGroupView, HandoffMemberView, HandoffState
from .hashing import partition_for
from .log import LogAppendError, MemoryLog, RecordLog, SqliteLog
from .reply import Reply
from .requests import (
    Assignment,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from .responses import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    HandoffHeartbeatResponse,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    LeaveGroupResponse,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetData,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    PartitionResult,
    SyncGroupResponse,
)
from .state import GroupState

__all__ = [
    "Assignment",
    "CleanupResult",
    "CoordinatorConfig",
    "DeleteGroupResult",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedMember",
    "Errors",
    "GroupCoordinator",
    "GroupEvent",
    "GroupState",
    "GroupView",
    "HandoffGroupView",
    "HandoffHeartbeatRequest",
    "HandoffHeartbeatResponse",
    "HandoffMemberView",
    "HandoffState",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "LeaveMemberResult",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "LogAppendError",
    "MemberIdentity",
    "MemberView",
    "MemoryLog",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetData",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "PartitionOffset",
    "PartitionResult",
    "Protocol",
    "RebalanceCause",
    "RecordLog",
    "RemovalReason",
    "ReplayError",
    "Reply",
    "SqliteLog",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartition",
    "partition_for",
]
