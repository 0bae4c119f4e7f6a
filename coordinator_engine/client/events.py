"""What the consumer tells its host happened: typed events, and the rebalance listener.

Events queue up inside the client and are drained with ``GroupClient.events()`` (h11/aioquic
style), in the order they happened. Partitions are ``(topic, partition)`` pairs, sorted by topic
then partition; offsets are ``{(topic, partition): offset}``. ``to_json()`` turns an event into
JSON-ready data (partitions as ``[topic, partition]``, offsets as ``[topic, partition, offset]``).

``ConsumerRebalanceListener`` is Kafka's interface of the same name: the client calls it
synchronously, at the same points as Kafka's ``ConsumerCoordinator`` (revoked before a rebalance
for EAGER and after the sync for COOPERATIVE, assigned after every sync, lost when the generation
was reset). A listener may call ``seek``, ``record_consumed`` and ``commit`` on the client.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from coordinator_engine.assignors import TopicPartitionPair

Partitions = tuple[TopicPartitionPair, ...]
Offsets = dict[TopicPartitionPair, int]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return [[topic, partition, offset] for (topic, partition), offset in value.items()]
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientEvent:
    """Base of every event: the client time it happened at."""

    type: ClassVar[str] = "ClientEvent"
    at_ms: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for field in dataclasses.fields(self):
            out[field.name] = _jsonable(getattr(self, field.name))
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberStateChanged(ClientEvent):
    """The member moved in its state machine (``state.TRANSITIONS`` gives the cause)."""

    type: ClassVar[str] = "MemberStateChanged"
    from_state: str
    to_state: str
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorDiscovered(ClientEvent):
    """FindCoordinator answered: group requests now go to this node."""

    type: ClassVar[str] = "CoordinatorDiscovered"
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorLost(ClientEvent):
    """The coordinator is unknown again (an error, a lost request, a silent session); the
    client looks it up again after ``retry_backoff_ms``."""

    type: ClassVar[str] = "CoordinatorLost"
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class RebalanceStarted(ClientEvent):
    """The member prepares to (re)join: once per rebalance, before its first JoinGroup."""

    type: ClassVar[str] = "RebalanceStarted"
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinedGroup(ClientEvent):
    """JoinGroup answered: this member is in ``generation`` as ``member_id``; ``leader`` is the
    leader's member id."""

    type: ClassVar[str] = "JoinedGroup"
    generation: int
    member_id: str
    leader: str
    protocol_name: str | None

    @property
    def is_leader(self) -> bool:
        return self.leader == self.member_id


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsAssigned(ClientEvent):
    """SyncGroup answered: ``partitions`` are new to this member, ``assignment`` is all it owns.
    Emitted after every successful sync, even when nothing is new (Kafka calls
    ``onPartitionsAssigned`` likewise)."""

    type: ClassVar[str] = "PartitionsAssigned"
    generation: int
    partitions: Partitions
    assignment: Partitions


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsRevoked(ClientEvent):
    """The member gave these partitions up in an orderly way (their positions were committed
    first when auto-commit is on)."""

    type: ClassVar[str] = "PartitionsRevoked"
    partitions: Partitions


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsLost(ClientEvent):
    """The member lost these partitions without a chance to commit: its generation was reset
    (unknown member id, stale generation, left after a poll timeout) or it failed."""

    type: ClassVar[str] = "PartitionsLost"
    partitions: Partitions


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetsFetched(ClientEvent):
    """OffsetFetch answered for newly assigned partitions: their starting positions (the
    committed offset, or the reset policy's choice: 0 for "earliest", −1 for the host to
    resolve)."""

    type: ClassVar[str] = "OffsetsFetched"
    positions: Offsets


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitCompleted(ClientEvent):
    """An OffsetCommit was stored; ``auto`` tells an auto-commit from a ``commit()``."""

    type: ClassVar[str] = "CommitCompleted"
    offsets: Offsets
    auto: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class CommitFailed(ClientEvent):
    """An OffsetCommit failed for good. ``error_code`` is Kafka's code when the coordinator
    refused it, None when the client could not send it (not in an active group)."""

    type: ClassVar[str] = "CommitFailed"
    offsets: Offsets
    auto: bool
    error_code: int | None
    reason: str


@dataclass(frozen=True, kw_only=True, slots=True)
class LeftGroup(ClientEvent):
    """The member left its group: closed, or its application stopped polling. A static member
    sends no LeaveGroup (``leave_group_sent`` False): the coordinator keeps it until its
    session times out."""

    type: ClassVar[str] = "LeftGroup"
    member_id: str
    reason: str
    leave_group_sent: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class FatalError(ClientEvent):
    """The client stopped for good (a fenced static instance, a refused configuration); it
    sends nothing more. Kafka throws these from ``poll()``."""

    type: ClassVar[str] = "FatalError"
    error_code: int
    reason: str


class ConsumerRebalanceListener:
    """Kafka's ``ConsumerRebalanceListener``; subclass and override what you need.

    The client calls these synchronously from ``outgoing()``/``receive()``/``close()``, with
    partitions sorted by topic then partition. ``on_partitions_lost`` defaults to
    ``on_partitions_revoked``, as in Kafka.
    """

    def on_partitions_revoked(self, partitions: Partitions) -> None:
        """The member is giving these partitions up; commit what was processed now."""

    def on_partitions_assigned(self, partitions: Partitions) -> None:
        """These partitions are new to the member; ``seek`` may set where to start."""

    def on_partitions_lost(self, partitions: Partitions) -> None:
        """These partitions already belong to someone else; do not commit them."""
        self.on_partitions_revoked(partitions)


# ---------------------------------------------------------------- the handoff client's events


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffJoined(ClientEvent):
    """A handoff group took the member (its epoch-0 heartbeat was answered); ``epoch`` is the
    group's epoch then."""

    type: ClassVar[str] = "HandoffJoined"
    member_id: str
    epoch: int


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsToClose(ClientEvent):
    """The coordinator asks the member to close these partitions: the application stops
    consuming them and hands their positions to ``HandoffClient.partitions_stopped``; the
    client commits them and confirms the close once the commit succeeded."""

    type: ClassVar[str] = "PartitionsToClose"
    partitions: Partitions


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionsToStart(ClientEvent):
    """The coordinator granted these partitions: the application consumes them from
    ``positions`` (the committed offsets, or the reset policy's choice: 0 for "earliest", −1
    for the host to resolve); the client confirms the start."""

    type: ClassVar[str] = "PartitionsToStart"
    partitions: Partitions
    positions: Offsets


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseConfirmed(ClientEvent):
    """The coordinator took the member's confirmation that these partitions are closed (their
    offsets committed); another member may start them now."""

    type: ClassVar[str] = "CloseConfirmed"
    partitions: Partitions


@dataclass(frozen=True, kw_only=True, slots=True)
class StartConfirmed(ClientEvent):
    """The coordinator took the member's confirmation that it consumes these partitions."""

    type: ClassVar[str] = "StartConfirmed"
    partitions: Partitions


# ---------------------------------------------------------------- the consumer-protocol client's


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberEpochChanged(ClientEvent):
    """A consumer-protocol heartbeat answer gave the member another epoch (KIP-848).

    member_id: the member's own id (KIP-1082: the same for the client's whole life).
    epoch: the new member epoch.
    previous_epoch: the one before; 0 when this answer took the member into the group (a
        join, or a rejoin after it was fenced or left)."""

    type: ClassVar[str] = "MemberEpochChanged"
    member_id: str
    epoch: int
    previous_epoch: int
