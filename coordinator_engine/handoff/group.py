"""A handoff group's durable state: its members with their four partition sets, and the
read-only views the façade hands out (`GroupCoordinator.group`).

`HandoffGroupManager` (`manager.py`) is the only one to change these objects, and only by
installing a record (`apply`); see docs/engine.md, "Handoff groups".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..context import GroupSummary
from ..requests import TopicPartition
from .records import HandoffGroupValue, HandoffMemberValue
from .state import HandoffState

__all__ = [
    "PROTOCOL_TYPE",
    "TP",
    "HandoffGroup",
    "HandoffGroupView",
    "HandoffMember",
    "HandoffMemberView",
    "group_value",
    "topic_partitions",
]

#: What DescribeGroups and ListGroups show as a handoff group's protocol type.
PROTOCOL_TYPE = "handoff"
#: A partition: (topic, partition).
TP = tuple[str, int]


@dataclass(slots=True)
class HandoffMember:
    """One member of a handoff group, with its four partition sets."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    topics: tuple[str, ...]
    assignment: frozenset[TP] = frozenset()
    owned: frozenset[TP] = frozenset()
    to_start: frozenset[TP] = frozenset()
    to_close: frozenset[TP] = frozenset()

    def granted_starts(self) -> frozenset[TP]:
        """What the member may start now: to start, granted, and not being closed."""
        return (self.to_start & self.owned) - self.to_close


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffMemberView:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    topics: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]
    owned: tuple[TopicPartition, ...]
    to_start: tuple[TopicPartition, ...]
    to_close: tuple[TopicPartition, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffGroupView:
    """A read-only snapshot of one handoff group (`GroupCoordinator.group`)."""

    group_id: str
    state: HandoffState
    epoch: int
    protocol_type: str
    members: Mapping[str, HandoffMemberView]


def topic_partitions(partitions: Iterable[TP]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic=t, partition=p) for t, p in sorted(partitions))


class HandoffGroup:
    """A handoff group's durable state (what its record holds), installed only by `apply`."""

    __slots__ = ("epoch", "group_id", "members", "state", "state_timestamp_ms")

    kind: ClassVar[str] = "handoff"

    def __init__(self, group_id: str, value: HandoffGroupValue) -> None:
        self.group_id = group_id
        self.state = HandoffState(value.state)
        self.epoch = value.epoch
        self.state_timestamp_ms = value.state_timestamp
        self.members: dict[str, HandoffMember] = {
            m.member_id: HandoffMember(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.session_timeout,
                topics=m.topics,
                assignment=frozenset(m.assignment),
                owned=frozenset(m.owned),
                to_start=frozenset(m.to_start),
                to_close=frozenset(m.to_close),
            )
            for m in value.members
        }

    def value(self) -> HandoffGroupValue:
        return group_value(self.state, self.epoch, self.state_timestamp_ms, self.members)

    def subscribed_topics(self) -> frozenset[str]:
        return frozenset(t for m in self.members.values() for t in m.topics)

    def summary(self) -> GroupSummary:
        return GroupSummary(
            group_id=self.group_id,
            kind=self.kind,
            state=self.state.value,
            generation_id=self.epoch,
            protocol=None,
            member_count=len(self.members),
        )

    def view(self) -> HandoffGroupView:
        return HandoffGroupView(
            group_id=self.group_id,
            state=self.state,
            epoch=self.epoch,
            protocol_type=PROTOCOL_TYPE,
            members={
                m.member_id: HandoffMemberView(
                    member_id=m.member_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    session_timeout_ms=m.session_timeout_ms,
                    topics=m.topics,
                    assignment=topic_partitions(m.assignment),
                    owned=topic_partitions(m.owned),
                    to_start=topic_partitions(m.to_start),
                    to_close=topic_partitions(m.to_close),
                )
                for m in self.members.values()
            },
        )


def group_value(
    state: HandoffState, epoch: int, state_timestamp: int, members: Mapping[str, HandoffMember]
) -> HandoffGroupValue:
    return HandoffGroupValue(
        state=state.value,
        epoch=epoch,
        state_timestamp=state_timestamp,
        members=tuple(
            HandoffMemberValue(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout=m.session_timeout_ms,
                topics=m.topics,
                assignment=tuple(sorted(m.assignment)),
                owned=tuple(sorted(m.owned)),
                to_start=tuple(sorted(m.to_start)),
                to_close=tuple(sorted(m.to_close)),
            )
            for m in members.values()
        ),
    )
