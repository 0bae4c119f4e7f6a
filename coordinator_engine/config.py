"""Coordinator configuration: Kafka's broker settings for groups, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorConfig:
    """The `group.*` and `offsets.*` broker settings the classic coordinator reads.

    group_min_session_timeout_ms / group_max_session_timeout_ms: bounds on a member's session
        timeout (`INVALID_SESSION_TIMEOUT` outside them).
    group_initial_rebalance_delay_ms: how long the first rebalance of an Empty group waits for
        more members; each new joiner extends it, capped by the rebalance timeout.
    group_max_size: most members a group admits (`GROUP_MAX_SIZE_REACHED`).
    offsets_retention_ms: KIP-211 retention of committed offsets.
    offsets_retention_check_interval_ms: how often the host should call `cleanup` (the engine
        arms no timer for it; the host schedules it, e.g. Celery beat).
    offsets_topic_num_partitions: partitions of `__consumer_offsets`; a group's coordinator
        partition is `partition_for(group_id, offsets_topic_num_partitions)`.
    offset_metadata_max_bytes: longest commit metadata accepted (`OFFSET_METADATA_TOO_LARGE`).
    new_member_join_timeout_ms: how long a new member may stay parked in JoinGroup.
    owned_partitions: the coordinator partitions this coordinator serves; None means all.

    Consumer groups (KIP-848; Kafka's `GroupCoordinatorConfig`):
    consumer_group_session_timeout_ms (`group.consumer.session.timeout.ms`): a member that
        has not heartbeated for this long is removed; bounded by
        consumer_group_min/max_session_timeout_ms (`group.consumer.min.session.timeout.ms`,
        `group.consumer.max.session.timeout.ms`).
    consumer_group_heartbeat_interval_ms (`group.consumer.heartbeat.interval.ms`): what the
        heartbeat answer tells members; bounded by consumer_group_min/max_heartbeat_interval_ms
        (`group.consumer.min.heartbeat.interval.ms`, `group.consumer.max.heartbeat.interval.ms`)
        and below the session timeout.
    consumer_group_max_size (`group.consumer.max.size`): most members a consumer group admits.
    """

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = _INT32_MAX
    offsets_retention_ms: int = 604800000
    offsets_retention_check_interval_ms: int = 600000
    offsets_topic_num_partitions: int = 50
    offset_metadata_max_bytes: int = 4096
    new_member_join_timeout_ms: int = 300000
    owned_partitions: frozenset[int] | None = None
    consumer_group_session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    consumer_group_min_session_timeout_ms: int = 45000  # group.consumer.min.session.timeout.ms
    consumer_group_max_session_timeout_ms: int = 60000  # group.consumer.max.session.timeout.ms
    consumer_group_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    # group.consumer.min.heartbeat.interval.ms, group.consumer.max.heartbeat.interval.ms
    consumer_group_min_heartbeat_interval_ms: int = 5000
    consumer_group_max_heartbeat_interval_ms: int = 15000
    consumer_group_max_size: int = _INT32_MAX  # group.consumer.max.size

    def __post_init__(self) -> None:
        for name in (
            "group_min_session_timeout_ms",
            "group_max_session_timeout_ms",
            "group_initial_rebalance_delay_ms",
            "offsets_retention_ms",
            "offsets_retention_check_interval_ms",
            "offset_metadata_max_bytes",
            "new_member_join_timeout_ms",
            "consumer_group_session_timeout_ms",
            "consumer_group_min_session_timeout_ms",
            "consumer_group_max_session_timeout_ms",
            "consumer_group_heartbeat_interval_ms",
            "consumer_group_min_heartbeat_interval_ms",
            "consumer_group_max_heartbeat_interval_ms",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"CoordinatorConfig.{name} must be an int >= 0, got {value!r}")
        if type(self.group_max_size) is not int or self.group_max_size < 1:
            raise ValueError(
                f"CoordinatorConfig.group_max_size must be >= 1, got {self.group_max_size!r}"
            )
        if type(self.consumer_group_max_size) is not int or self.consumer_group_max_size < 1:
            raise ValueError(
                "CoordinatorConfig.consumer_group_max_size must be >= 1, "
                f"got {self.consumer_group_max_size!r}"
            )
        for what in ("session_timeout", "heartbeat_interval"):
            low = getattr(self, f"consumer_group_min_{what}_ms")
            value = getattr(self, f"consumer_group_{what}_ms")
            high = getattr(self, f"consumer_group_max_{what}_ms")
            if not low <= value <= high:
                raise ValueError(
                    f"CoordinatorConfig.consumer_group_{what}_ms must lie in "
                    f"consumer_group_min_{what}_ms..consumer_group_max_{what}_ms "
                    f"({low}..{high}), got {value}"
                )
        if self.consumer_group_heartbeat_interval_ms >= self.consumer_group_session_timeout_ms:
            raise ValueError(
                "CoordinatorConfig.consumer_group_heartbeat_interval_ms must be below "
                "consumer_group_session_timeout_ms"
            )
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError("CoordinatorConfig: group_min_session_timeout_ms exceeds the maximum")
        n = self.offsets_topic_num_partitions
        if type(n) is not int or n < 1:
            raise ValueError(
                f"CoordinatorConfig.offsets_topic_num_partitions must be >= 1, got {n!r}"
            )
        if self.owned_partitions is not None:
            if not isinstance(self.owned_partitions, frozenset):
                raise ValueError("CoordinatorConfig.owned_partitions must be a frozenset or None")
            bad = sorted(p for p in self.owned_partitions if type(p) is not int or not 0 <= p < n)
            if bad:
                raise ValueError(
                    f"CoordinatorConfig.owned_partitions holds partitions outside 0..{n - 1}: {bad}"
                )
