"""A test context for the coordinator with a fake clock, modelled on Kafka's
`GroupMetadataManagerTestContext` / `GroupCoordinatorTest` helpers: requests go in at the
context's time, `sleep(ms)` moves the clock and fires due timers, every event is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coordinator_engine import (
    Assignment,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupCoordinator,
    GroupView,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    LogAppendError,
    MemberIdentity,
    MemoryLog,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.classic.records import decode_group_metadata_value
from coordinator_engine.coordinator import decode_key
from coordinator_engine.errors import Errors
from coordinator_engine.events import GroupEvent
from coordinator_engine.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_offset_commit_value,
)
from coordinator_engine.reply import Reply
from coordinator_engine.responses import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    JoinGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

GROUP = "groupId"
PROTOCOL_TYPE = "consumer"
PROTOCOLS = (("range", b"metadata"),)
# GroupCoordinatorTest's settings.
REBALANCE_TIMEOUT = 500
SESSION_TIMEOUT = 500
TEST_CONFIG = CoordinatorConfig(
    group_min_session_timeout_ms=10,
    group_max_session_timeout_ms=10 * 60 * 1000,
    group_initial_rebalance_delay_ms=50,
    group_max_size=4,
)


# GroupCoordinatorTest's instance ids and protocol lists.
LEADER_INSTANCE = "leader"
FOLLOWER_INSTANCE = "follower"
PROTOCOL_SUPERSET = (("range", b"metadata"), ("roundrobin", b"metadata"))

Record = tuple[OffsetCommitKey | GroupMetadataKey, OffsetCommitValue | GroupMetadataValue | None]


class FlakyLog(MemoryLog):
    """A MemoryLog whose appends raise `LogAppendError` while `failing` is set (a storage
    failure: nothing of the batch is written)."""

    def __init__(self, entries: Sequence[tuple[bytes, bytes | None]] = ()) -> None:
        self.failing = False
        super().__init__(entries)

    def append(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        if self.failing:
            raise LogAppendError("injected storage failure")
        super().append(entries)


def decode_record(key: bytes, value: bytes | None) -> Record:
    """One log entry as (decoded key, decoded value or None for a tombstone)."""
    decoded_key = decode_key(key)
    if value is None:
        return decoded_key, None
    if isinstance(decoded_key, OffsetCommitKey):
        return decoded_key, decode_offset_commit_value(value)
    return decoded_key, decode_group_metadata_value(value)


@dataclass(frozen=True)
class RebalanceResult:
    """Two static members joined and synced (GroupCoordinatorTest's RebalanceResult)."""

    generation: int
    leader_id: str
    leader_assignment: bytes
    follower_id: str
    follower_assignment: bytes


class Context:
    def __init__(
        self,
        config: CoordinatorConfig = TEST_CONFIG,
        log: MemoryLog | None = None,
        now: int = 0,
    ) -> None:
        self.config = config
        self.log = log if log is not None else MemoryLog()
        self.now = now
        self.coord = GroupCoordinator(config, self.log, now)
        self.events: list[GroupEvent] = []
        self.coord.add_listener(self.events.append)

    def sleep(self, ms: int) -> None:
        self.now += ms
        self.coord.advance(self.now)

    def rebuilt(self) -> GroupCoordinator:
        """A new coordinator replaying a copy of this one's log, at the current time."""
        log = MemoryLog()
        log.append(list(self.log.entries))
        return GroupCoordinator(self.config, log, self.now)

    # -- requests -------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        session_timeout: int = SESSION_TIMEOUT,
        rebalance_timeout: int = REBALANCE_TIMEOUT,
        protocol_type: str = PROTOCOL_TYPE,
        protocols: Sequence[tuple[str, bytes]] = PROTOCOLS,
        require_known_member_id: bool = False,
        reason: str | None = None,
        client_id: str = "client",
    ) -> Reply[JoinGroupResponse]:
        return self.coord.handle(
            JoinGroupRequest(
                group_id=group_id,
                member_id=member_id,
                group_instance_id=instance_id,
                session_timeout_ms=session_timeout,
                rebalance_timeout_ms=rebalance_timeout,
                protocol_type=protocol_type,
                protocols=tuple(Protocol(name=n, metadata=m) for n, m in protocols),
                require_known_member_id=require_known_member_id,
                client_id=client_id,
                client_host="/127.0.0.1",
                reason=reason,
            ),
            self.now,
        )

    def join_now(self, member_id: str = "", **kwargs: Any) -> JoinGroupResponse:
        """Join and move the clock past the initial delay so the join phase can end."""
        reply = self.join(member_id, **kwargs)
        if not reply.done:
            self.sleep(self.config.group_initial_rebalance_delay_ms)
        assert reply.done, "join phase did not complete"
        assert reply.response is not None
        return reply.response

    def sync(
        self,
        member_id: str,
        generation_id: int,
        assignments: dict[str, bytes] | None = None,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Reply[SyncGroupResponse]:
        return self.coord.handle(
            SyncGroupRequest(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=instance_id,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=tuple(
                    Assignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()
                ),
            ),
            self.now,
        )

    def heartbeat(
        self,
        member_id: str,
        generation_id: int,
        *,
        group_id: str = GROUP,
        instance_id: str | None = None,
    ) -> int:
        reply = self.coord.handle(
            HeartbeatRequest(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=instance_id,
            ),
            self.now,
        )
        assert reply.response is not None
        return reply.response.error_code

    def leave(self, *members: MemberIdentity, group_id: str = GROUP) -> Any:
        reply = self.coord.handle(LeaveGroupRequest(group_id=group_id, members=members), self.now)
        return reply.response

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation_id: int = -1,
        instance_id: str | None = None,
        group_id: str = GROUP,
        metadata: str = "",
    ) -> dict[tuple[str, int], int]:
        reply = self.coord.handle(
            OffsetCommitRequest(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=instance_id,
                offsets=tuple(
                    PartitionOffset(topic=t, partition=p, offset=o, metadata=metadata)
                    for (t, p), o in offsets.items()
                ),
            ),
            self.now,
        )
        assert reply.response is not None
        return {(r.topic, r.partition): r.error_code for r in reply.response.partitions}

    def fetch(
        self, partitions: Sequence[tuple[str, int]] | None = None, *, group_id: str = GROUP
    ) -> dict[tuple[str, int], int]:
        reply = self.coord.handle(
            OffsetFetchRequest(
                group_id=group_id,
                partitions=None
                if partitions is None
                else tuple(TopicPartition(topic=t, partition=p) for t, p in partitions),
            ),
            self.now,
        )
        assert reply.response is not None
        assert reply.response.error_code == Errors.NONE
        return {(d.topic, d.partition): d.offset for d in reply.response.partitions}

    # -- composite steps --------------------------------------------------------------------

    def stable_group_of_one(self, **kwargs: Any) -> tuple[str, int]:
        """One dynamic member joins and syncs: (member id, generation)."""
        joined = self.join_now(**kwargs)
        assert joined.error_code == Errors.NONE
        synced = self.sync(
            joined.member_id,
            joined.generation_id,
            {joined.member_id: b"assignment"},
            group_id=kwargs.get("group_id", GROUP),
        )
        assert synced.response is not None and synced.response.error_code == Errors.NONE
        return joined.member_id, joined.generation_id

    def events_of(self, kind: type[GroupEvent]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    # -- additions for the scenario tests -----------------------------------------------------

    def group(self, group_id: str = GROUP) -> GroupView:
        """The group's view; fails the test if the coordinator does not hold it."""
        view = self.coord.group(group_id)
        assert view is not None, f"group {group_id!r} not found"
        return view

    def restarted(self) -> Context:
        """A new context whose coordinator replays a copy of this one's log, at the current
        time (a coordinator fail-over); its events start empty."""
        return Context(self.config, MemoryLog(list(self.log.entries)), self.now)

    def records(self, start: int = 0) -> list[Record]:
        """The log's entries from position `start`, decoded."""
        return [decode_record(k, v) for k, v in self.log.entries[start:]]

    def commit_response(
        self,
        offsets: Sequence[PartitionOffset],
        *,
        member_id: str = "",
        generation_id: int = -1,
        instance_id: str | None = None,
        group_id: str = GROUP,
    ) -> OffsetCommitResponse:
        reply = self.coord.handle(
            OffsetCommitRequest(
                group_id=group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=instance_id,
                offsets=tuple(offsets),
            ),
            self.now,
        )
        assert reply.response is not None
        return reply.response

    def fetch_response(
        self, partitions: Sequence[tuple[str, int]] | None = None, *, group_id: str = GROUP
    ) -> OffsetFetchResponse:
        reply = self.coord.handle(
            OffsetFetchRequest(
                group_id=group_id,
                partitions=None
                if partitions is None
                else tuple(TopicPartition(topic=t, partition=p) for t, p in partitions),
            ),
            self.now,
        )
        assert reply.response is not None
        return reply.response

    def delete_offsets(
        self, partitions: Sequence[tuple[str, int]], *, group_id: str = GROUP
    ) -> OffsetDeleteResponse:
        reply = self.coord.handle(
            OffsetDeleteRequest(
                group_id=group_id,
                partitions=tuple(TopicPartition(topic=t, partition=p) for t, p in partitions),
            ),
            self.now,
        )
        assert reply.response is not None
        return reply.response

    def describe(self, *group_ids: str) -> DescribeGroupsResponse:
        reply = self.coord.handle(DescribeGroupsRequest(group_ids=group_ids), self.now)
        assert reply.response is not None
        return reply.response

    def list_groups(self, *states: str) -> ListGroupsResponse:
        reply = self.coord.handle(ListGroupsRequest(states_filter=states), self.now)
        assert reply.response is not None
        return reply.response

    def delete_groups(self, *group_ids: str) -> DeleteGroupsResponse:
        reply = self.coord.handle(DeleteGroupsRequest(group_ids=group_ids), self.now)
        assert reply.response is not None
        return reply.response

    def static_members_join_and_rebalance(
        self,
        leader_instance: str = LEADER_INSTANCE,
        follower_instance: str = FOLLOWER_INSTANCE,
        *,
        session_timeout: int = SESSION_TIMEOUT,
        rebalance_timeout: int = REBALANCE_TIMEOUT,
    ) -> RebalanceResult:
        """Two static members (protocols range and roundrobin) join an empty group together,
        the leader assigns b"leader"/b"follower", both sync: the group is Stable in
        generation 1 (GroupCoordinatorTest.staticMembersJoinAndRebalance)."""
        leader_join = self.join(
            instance_id=leader_instance,
            protocols=PROTOCOL_SUPERSET,
            session_timeout=session_timeout,
            rebalance_timeout=rebalance_timeout,
        )
        follower_join = self.join(
            instance_id=follower_instance,
            protocols=PROTOCOL_SUPERSET,
            session_timeout=session_timeout,
            rebalance_timeout=rebalance_timeout,
        )
        # The follower joined during the initial delay, which extends it once (the extension
        # starts when the first delay fires, so the clock moves in two steps).
        self.sleep(self.config.group_initial_rebalance_delay_ms)
        self.sleep(self.config.group_initial_rebalance_delay_ms)
        leader, follower = leader_join.response, follower_join.response
        assert leader is not None and leader.error_code == Errors.NONE
        assert follower is not None and follower.error_code == Errors.NONE
        assert leader.generation_id == follower.generation_id == 1
        assert leader.leader == leader.member_id
        leader_sync = self.sync(
            leader.member_id,
            1,
            {leader.member_id: b"leader", follower.member_id: b"follower"},
        )
        follower_sync = self.sync(follower.member_id, 1)
        assert leader_sync.response is not None and follower_sync.response is not None
        assert leader_sync.response.error_code == follower_sync.response.error_code == Errors.NONE
        return RebalanceResult(
            generation=1,
            leader_id=leader.member_id,
            leader_assignment=leader_sync.response.assignment,
            follower_id=follower.member_id,
            follower_assignment=follower_sync.response.assignment,
        )

    def stable_group_of_two(self, **kwargs: Any) -> tuple[str, str, int]:
        """A leader and a follower in a Stable group: the leader joins and syncs alone
        (generation 1), the follower joins, the leader rejoins, both sync with the assignments
        b"leader" and b"follower" (generation 2). Returns (leader id, follower id, generation).
        `kwargs` go to the follower's JoinGroup."""
        leader_id, _ = self.stable_group_of_one()
        follower_join = self.join(**kwargs)
        leader_join = self.join(leader_id)
        leader, follower = leader_join.response, follower_join.response
        assert leader is not None and leader.error_code == Errors.NONE
        assert follower is not None and follower.error_code == Errors.NONE
        assert leader.generation_id == follower.generation_id == 2
        follower_id = follower.member_id
        synced = self.sync(leader_id, 2, {leader_id: b"leader", follower_id: b"follower"})
        assert synced.response is not None and synced.response.error_code == Errors.NONE
        synced = self.sync(follower_id, 2)
        assert synced.response is not None and synced.response.error_code == Errors.NONE
        return leader_id, follower_id, 2

    def join_with_n_members(self, n: int) -> list[JoinGroupResponse]:
        """`n` dynamic members get ids (KIP-394), join with them and complete the first join
        phase together: the group is in CompletingRebalance, generation 1, leader first
        (GroupCoordinatorTest.joinWithNMembers)."""
        member_ids = []
        for _ in range(n):
            reply = self.join(require_known_member_id=True)
            assert reply.response is not None
            assert reply.response.error_code == Errors.MEMBER_ID_REQUIRED
            member_ids.append(reply.response.member_id)
        replies = [self.join(m, require_known_member_id=True) for m in member_ids]
        self.sleep(self.config.group_initial_rebalance_delay_ms)
        if n > 1:  # the later joiners extended the initial delay once
            self.sleep(self.config.group_initial_rebalance_delay_ms)
        responses = []
        for reply in replies:
            assert reply.response is not None and reply.response.error_code == Errors.NONE
            responses.append(reply.response)
        return responses
