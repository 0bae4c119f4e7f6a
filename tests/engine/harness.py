"""A test context for the coordinator with a fake clock, modelled on Kafka's
`GroupMetadataManagerTestContext` / `GroupCoordinatorTest` helpers: requests go in at the
context's time, `sleep(ms)` moves the clock and fires due timers, every event is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordinator_engine import (
    Assignment,
    CoordinatorConfig,
    GroupCoordinator,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    MemoryLog,
    OffsetCommitRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.errors import Errors
from coordinator_engine.events import GroupEvent
from coordinator_engine.reply import Reply
from coordinator_engine.responses import JoinGroupResponse, SyncGroupResponse

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
