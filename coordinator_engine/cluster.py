"""The two cluster APIs a consumer needs besides the group APIs: FindCoordinator and Metadata.

The engine does not answer these (it knows groups, not brokers or topics); the host does — the
web runtime from its topic registry, a test from a fixed table. They live here so that every
host and every client speak the same dataclasses. Field names follow Kafka's
FindCoordinatorRequest/Response (v0–v3, one key) and MetadataRequest/Response, reduced to what
a consumer reads: which node coordinates a group, and how many partitions each topic has.
"""

from __future__ import annotations

from dataclasses import dataclass

from .requests import check_int, check_str, check_tuple_of

#: FindCoordinator key types (KIP-98): a consumer group, or a transactional id.
KEY_TYPE_GROUP = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class FindCoordinatorRequest:
    """Which node coordinates `key` (a group id when `key_type` is 0)."""

    key: str
    key_type: int = KEY_TYPE_GROUP

    def __post_init__(self) -> None:
        check_str("FindCoordinatorRequest", "key", self.key)
        check_int("FindCoordinatorRequest", "key_type", self.key_type, -128, 127)


@dataclass(frozen=True, kw_only=True, slots=True)
class FindCoordinatorResponse:
    """The coordinator's node; `coordinator_partition` is the `__consumer_offsets` partition
    (`partition_for(key)`) that made it the coordinator, for display."""

    error_code: int
    node_id: int = -1
    host: str = ""
    port: int = -1
    coordinator_partition: int = -1


@dataclass(frozen=True, kw_only=True, slots=True)
class MetadataRequest:
    """Partition counts of `topics`, or of every topic when `topics` is None."""

    topics: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.topics is not None:
            check_tuple_of("MetadataRequest", "topics", self.topics, str)


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicMetadata:
    """One topic: UNKNOWN_TOPIC_OR_PARTITION (3) with 0 partitions when it does not exist."""

    name: str
    error_code: int
    partitions: int


@dataclass(frozen=True, kw_only=True, slots=True)
class MetadataResponse:
    topics: tuple[TopicMetadata, ...]
