"""A test context for consumer groups (KIP-848) with a fake clock, modelled on Kafka's
`GroupMetadataManagerTestContext`: heartbeats go in at the context's time, `sleep(ms)` moves the
clock and fires due timers, every event is recorded, and the records appended since a mark can
be read back decoded."""

from __future__ import annotations

from typing import Any

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupView,
    CoordinatorConfig,
    GroupCoordinator,
    MemoryLog,
    OwnedTopicPartitions,
)
from coordinator_engine.coordinator import RECORD_TYPES, decode_key
from coordinator_engine.events import GroupEvent

GROUP = "fooup"
REBALANCE_TIMEOUT = 5000

_VALUE_DECODERS = {t.key_class: t.decode_value for t in RECORD_TYPES}


def owned(**topics: tuple[int, ...]) -> tuple[OwnedTopicPartitions, ...]:
    """What a member reports it owns: owned(foo=(0, 1))."""
    return tuple(OwnedTopicPartitions(topic=t, partitions=p) for t, p in sorted(topics.items()))


def decode(entries: list[tuple[bytes, bytes | None]]) -> list[tuple[Any, Any]]:
    out = []
    for key, value in entries:
        k = decode_key(key)
        out.append((k, None if value is None else _VALUE_DECODERS[type(k)](value)))
    return out


class ConsumerContext:
    """A coordinator, its log, a fake clock and the topics the host reports."""

    def __init__(
        self,
        topics: dict[str, int] | None = None,
        config: CoordinatorConfig | None = None,
        log: MemoryLog | None = None,
        now: int = 0,
    ) -> None:
        self.config = config if config is not None else CoordinatorConfig()
        self.log = log if log is not None else MemoryLog()
        self.now = now
        self.coord = GroupCoordinator(self.config, self.log, now)
        self.events: list[GroupEvent] = []
        self.coord.add_listener(self.events.append)
        for topic, count in (topics or {}).items():
            self.coord.set_topic_partitions(topic, count, now)

    def heartbeat(self, **fields: Any) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("group_id", GROUP)
        reply = self.coord.handle(ConsumerGroupHeartbeatRequest(**fields), self.now)
        assert reply.done, "a heartbeat is never parked"
        response = reply.response
        assert response is not None
        return response

    def join(
        self, member_id: str, topics: tuple[str, ...] = ("foo",), **fields: Any
    ) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", REBALANCE_TIMEOUT)
        fields.setdefault("subscribed_topic_names", topics)
        fields.setdefault("topic_partitions", ())
        return self.heartbeat(member_id=member_id, member_epoch=0, **fields)

    def sleep(self, ms: int) -> None:
        self.now += ms
        self.coord.advance(self.now)

    def set_topic(self, topic: str, count: int) -> None:
        self.coord.set_topic_partitions(topic, count, self.now)

    def mark(self) -> int:
        return len(self.log.entries)

    def records_since(self, mark: int) -> list[tuple[Any, Any]]:
        return decode(self.log.entries[mark:])

    def group(self) -> ConsumerGroupView:
        view = self.coord.group(GROUP)
        assert isinstance(view, ConsumerGroupView)
        return view

    def replayed(self) -> GroupCoordinator:
        """A coordinator rebuilt from the log at the context's time."""
        return GroupCoordinator(self.config, MemoryLog(list(self.log.entries)), self.now)

    def events_of(self, kind: type[GroupEvent]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
