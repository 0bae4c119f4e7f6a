"""Events: what the coordinator tells the outside world happened, as typed, JSON-ready data.

Every state transition, new generation, membership change (with its reason), stored assignment,
commit batch, offset expiry or deletion and group deletion produces one `GroupEvent`, delivered
synchronously to each listener after the records behind it were appended (push only after
durability). The dashboard and the Spark history are built from these, so each type declares
its JSON schema (`EVENT_SCHEMAS`) and round-trips through `to_json`/`event_from_json`.

Field types are limited to what JSON carries: str, int, bool, None, lists and string-keyed dicts.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, ClassVar, get_type_hints


class RemovalReason(enum.Enum):
    """Why a member left its group."""

    LEFT = "left"  # LeaveGroup from the member itself
    SESSION_TIMEOUT = "session_timeout"  # no heartbeat within session.timeout.ms
    JOIN_TIMEOUT = "join_timeout"  # a new member parked in JoinGroup past new.member.join.timeout
    # did not rejoin before the join phase ended; in a consumer group (KIP-848), did not revoke
    # its partitions within its rebalance timeout
    REBALANCE_TIMEOUT = "rebalance_timeout"
    SYNC_TIMEOUT = "sync_timeout"  # did not SyncGroup within the rebalance timeout
    FENCED = "fenced"  # its static instance id was taken over by a new member id (KIP-345)
    REMOVED_BY_ADMIN = "removed_by_admin"  # LeaveGroup by instance id, or an admin's reason
    GROUP_MAX_SIZE = "group_max_size"  # over group.max.size when rejoining


class RebalanceCause(enum.Enum):
    """Why a rebalance started (or restarted): one closed list for every group kind, said by
    the engine where it decides to rebalance (`StateChanged.cause`, with the member behind it
    in `cause_member_id`), so that nothing downstream reads the reason text to find out. The
    reason text stays, for people. docs/engine.md, "Events", lists where each is said."""

    MEMBER_JOINED = "member_joined"  # a member joined for the first time
    MEMBER_LEFT = "member_left"  # a member left (LeaveGroup)
    SESSION_TIMEOUT = "session_timeout"  # a member's session expired (no heartbeat)
    # A member did not keep up with the rebalance: a new member's join timeout, a member that
    # did not SyncGroup in time (Kafka's max.poll.interval.ms, as the rebalance timeout)
    POLL_TIMEOUT = "poll_timeout"
    STATIC_MEMBER_REPLACED = "static_member_replaced"  # a static member came back, new id
    ADMIN_ACTION = "admin_action"  # an operator: a triggered rebalance, a removed member
    METADATA_CHANGE = "metadata_change"  # a member rejoined with other protocols, or as leader
    PARTITIONS_CHANGED = "partitions_changed"  # a subscribed topic's partition count changed
    OUTAGE_ENDED = "outage_ended"  # a handoff group's partition store or discovery came back
    # The coordinator itself: an assignment it could not store, a group loaded over capacity
    COORDINATOR = "coordinator"


#: The cause of a rebalance a member's removal starts, by the reason it was removed for.
REMOVAL_CAUSES: dict[RemovalReason, RebalanceCause] = {
    RemovalReason.LEFT: RebalanceCause.MEMBER_LEFT,
    RemovalReason.SESSION_TIMEOUT: RebalanceCause.SESSION_TIMEOUT,
    RemovalReason.JOIN_TIMEOUT: RebalanceCause.POLL_TIMEOUT,
    RemovalReason.REBALANCE_TIMEOUT: RebalanceCause.POLL_TIMEOUT,
    RemovalReason.SYNC_TIMEOUT: RebalanceCause.POLL_TIMEOUT,
    RemovalReason.FENCED: RebalanceCause.STATIC_MEMBER_REPLACED,
    RemovalReason.REMOVED_BY_ADMIN: RebalanceCause.ADMIN_ACTION,
    RemovalReason.GROUP_MAX_SIZE: RebalanceCause.COORDINATOR,
}

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """The names of an event class's fields, in order (read once per class: an event is
    turned into JSON twice, for the history and for the feeds, on every commit)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupEvent:
    """Base of every event: the group and the coordinator time it happened at."""

    type: ClassVar[str] = "GroupEvent"
    group_id: str
    at_ms: int

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for name in _field_names(type(self)):
            out[name] = getattr(self, name)
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class StateChanged(GroupEvent):
    """The group moved between two states. A move that starts or restarts a rebalance carries
    its `cause` (a `RebalanceCause` value) and the member behind it, if one is; other moves
    carry None for both."""

    type: ClassVar[str] = "StateChanged"
    from_state: str
    to_state: str
    reason: str
    cause: str | None = None
    cause_member_id: str | None = None

    @classmethod
    def of_move(
        cls,
        group_id: str,
        at_ms: int,
        from_state: str,
        to_state: str,
        reason: str,
        *,
        starts: bool,
        cause: RebalanceCause | None,
        cause_member_id: str | None,
    ) -> StateChanged:
        """A kind's move that ``starts`` (or restarts) a rebalance or not: one that does
        carries ``cause`` (METADATA_CHANGE when the kind recorded none: only a change of the
        topics moves a group without a member or an admin behind it) and its member."""
        if not starts:
            return cls(
                group_id=group_id,
                at_ms=at_ms,
                from_state=from_state,
                to_state=to_state,
                reason=reason,
            )
        return cls(
            group_id=group_id,
            at_ms=at_ms,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            cause=(cause or RebalanceCause.METADATA_CHANGE).value,
            cause_member_id=cause_member_id,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class GenerationStarted(GroupEvent):
    """The join phase completed: a new generation with these members (leader first)."""

    type: ClassVar[str] = "GenerationStarted"
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    member_ids: list[str]
    join_started_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberJoined(GroupEvent):
    """A member entered the group (`rejoined` False) or rejoined for a rebalance (True)."""

    type: ClassVar[str] = "MemberJoined"
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[str]
    rejoined: bool
    reason: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberRemoved(GroupEvent):
    type: ClassVar[str] = "MemberRemoved"
    member_id: str
    group_instance_id: str | None
    reason: str  # a RemovalReason value
    detail: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class StaticMemberReplaced(GroupEvent):
    """A static member came back with a new member id; the old id is fenced (KIP-345)."""

    type: ClassVar[str] = "StaticMemberReplaced"
    group_instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingMemberAdded(GroupEvent):
    """A dynamic member got its id with MEMBER_ID_REQUIRED and must rejoin with it (KIP-394)."""

    type: ClassVar[str] = "PendingMemberAdded"
    member_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingMemberRemoved(GroupEvent):
    type: ClassVar[str] = "PendingMemberRemoved"
    member_id: str
    reason: str  # "joined", "session_timeout", "left", "group_max_size"


@dataclass(frozen=True, kw_only=True, slots=True)
class AssignmentStored(GroupEvent):
    """The leader's assignment for a generation was stored and handed to the members.

    assignments: member id → assignment bytes, hex-encoded. partitions: for the `consumer`
    protocol type, member id → [[topic, partition], ...] decoded from those bytes (None where
    the bytes are not a ConsumerProtocolAssignment)."""

    type: ClassVar[str] = "AssignmentStored"
    generation_id: int
    assignments: dict[str, str]
    partitions: dict[str, list[list[Any]]] | None


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetsCommitted(GroupEvent):
    """One OffsetCommit batch; offsets: [[topic, partition, offset], ...] that were stored."""

    type: ClassVar[str] = "OffsetsCommitted"
    member_id: str
    generation_id: int
    offsets: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetsRemoved(GroupEvent):
    """Committed offsets removed: reason "expired" (retention), "deleted" (OffsetDelete) or
    "group_deleted"; partitions: [[topic, partition], ...]."""

    type: ClassVar[str] = "OffsetsRemoved"
    reason: str
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupRemoved(GroupEvent):
    """The group is gone: reason "deleted" (DeleteGroups), "expired" (cleanup found it Empty
    with no offsets) or "offsets_deleted" (OffsetDelete removed an Empty group's last offsets)."""

    type: ClassVar[str] = "GroupRemoved"
    reason: str
    generation_id: int
    tombstoned: bool


EVENT_TYPES: dict[str, type[GroupEvent]] = {
    cls.type: cls
    for cls in (
        StateChanged,
        GenerationStarted,
        MemberJoined,
        MemberRemoved,
        StaticMemberReplaced,
        PendingMemberAdded,
        PendingMemberRemoved,
        AssignmentStored,
        OffsetsCommitted,
        OffsetsRemoved,
        GroupRemoved,
    )
}


# -- handoff groups (docs/engine.md, "Handoff groups") -------------------------------------------
# Partitions are [[topic, partition], ...] sorted. A handoff group also emits StateChanged (its
# own state names), MemberRemoved ("left", "session_timeout") and GroupRemoved. These types
# are kept in their own registry (HANDOFF_EVENT_TYPES / HANDOFF_EVENT_SCHEMAS) beside the
# classic protocol's; event_from_json reads both.


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffMemberJoined(GroupEvent):
    """A member entered a handoff group (with nothing: the next plan gives it partitions)."""

    type: ClassVar[str] = "HandoffMemberJoined"
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    topics: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffPlanMade(GroupEvent):
    """The coordinator made a new plan: epoch, and every member's target partitions."""

    type: ClassVar[str] = "HandoffPlanMade"
    epoch: int
    assignment: dict[str, list[list[Any]]]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffPartitionsClosing(GroupEvent):
    """`member_id` is asked to close these partitions (stop, commit, confirm)."""

    type: ClassVar[str] = "HandoffPartitionsClosing"
    member_id: str
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffPartitionsClosed(GroupEvent):
    """`member_id` confirmed it closed these partitions."""

    type: ClassVar[str] = "HandoffPartitionsClosed"
    member_id: str
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffPartitionsGranted(GroupEvent):
    """`member_id` may start these partitions: nobody else holds them any more."""

    type: ClassVar[str] = "HandoffPartitionsGranted"
    member_id: str
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffPartitionsStarted(GroupEvent):
    """`member_id` confirmed it started these partitions."""

    type: ClassVar[str] = "HandoffPartitionsStarted"
    member_id: str
    partitions: list[list[Any]]


HANDOFF_EVENT_TYPES: dict[str, type[GroupEvent]] = {
    cls.type: cls
    for cls in (
        HandoffMemberJoined,
        HandoffPlanMade,
        HandoffPartitionsClosing,
        HandoffPartitionsClosed,
        HandoffPartitionsGranted,
        HandoffPartitionsStarted,
    )
}


# -- consumer groups (KIP-848; docs/engine.md, "Consumer groups") ----------------------------------
# Partitions are [[topic, partition], ...] sorted (a topic whose name the engine does not know
# is shown by its id). A consumer group also emits StateChanged (its own state names; a move
# out of Empty or Stable carries the cause of the epoch bump behind it), MemberRemoved ("left",
# "session_timeout", "rebalance_timeout"), StaticMemberReplaced and GroupRemoved. Their own
# types are kept in CONSUMER_EVENT_TYPES / CONSUMER_EVENT_SCHEMAS.


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerMemberJoined(GroupEvent):
    """A member joined a consumer group (epoch 0 under a new member id)."""

    type: ClassVar[str] = "ConsumerMemberJoined"
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    server_assignor: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupEpochBumped(GroupEvent):
    """The group epoch went up: a new target assignment is due. `cause` is a
    `RebalanceCause` value, `cause_member_id` the member behind it (None for a topic change)."""

    type: ClassVar[str] = "ConsumerGroupEpochBumped"
    epoch: int
    cause: str
    cause_member_id: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerTargetAssignmentComputed(GroupEvent):
    """The server-side assignor computed the target assignment of `epoch`: member id →
    partitions (every member, changed or not)."""

    type: ClassVar[str] = "ConsumerTargetAssignmentComputed"
    epoch: int
    assignor: str
    assignment: dict[str, list[list[Any]]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerMemberStateChanged(GroupEvent):
    """A member's reconciliation state or epoch changed (Kafka's `MemberState`: STABLE,
    UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN)."""

    type: ClassVar[str] = "ConsumerMemberStateChanged"
    member_id: str
    from_state: str
    to_state: str
    member_epoch: int
    previous_member_epoch: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerPartitionsRevoked(GroupEvent):
    """`member_id` must revoke these partitions (they left its assignment); they go to their
    new owner once its heartbeat no longer lists them."""

    type: ClassVar[str] = "ConsumerPartitionsRevoked"
    member_id: str
    member_epoch: int
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerPartitionsAssigned(GroupEvent):
    """`member_id` was given these partitions (nobody else holds them any more)."""

    type: ClassVar[str] = "ConsumerPartitionsAssigned"
    member_id: str
    member_epoch: int
    partitions: list[list[Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerStaticMemberLeft(GroupEvent):
    """A static member left for a while (epoch -2): it keeps its assignment, and its instance
    id may come back under a new member id without an epoch bump."""

    type: ClassVar[str] = "ConsumerStaticMemberLeft"
    member_id: str
    instance_id: str


CONSUMER_EVENT_TYPES: dict[str, type[GroupEvent]] = {
    cls.type: cls
    for cls in (
        ConsumerMemberJoined,
        ConsumerGroupEpochBumped,
        ConsumerTargetAssignmentComputed,
        ConsumerMemberStateChanged,
        ConsumerPartitionsRevoked,
        ConsumerPartitionsAssigned,
        ConsumerStaticMemberLeft,
    )
}


def _json_type(hint: Any) -> Any:
    """A JSON Schema fragment for a field's type hint."""
    text = str(hint)
    if hint is str:
        return {"type": "string"}
    if hint is int:
        return {"type": "integer"}
    if hint is bool:
        return {"type": "boolean"}
    if text == "str | None":
        return {"type": ["string", "null"]}
    if text == "list[str]":
        return {"type": "array", "items": {"type": "string"}}
    if text == "dict[str, str]":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if text.startswith("list[list["):
        return {"type": "array", "items": {"type": "array"}}
    if text.startswith("dict[str, list[list[") and text.endswith("| None"):
        return {"type": ["object", "null"], "additionalProperties": {"type": "array"}}
    if text.startswith("dict[str, list[list["):
        return {"type": "object", "additionalProperties": {"type": "array"}}
    raise TypeError(f"no JSON schema for field type {text}")


def _schema(cls: type[GroupEvent]) -> dict[str, Any]:
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {"type": {"const": cls.type}}
    for f in dataclasses.fields(cls):
        properties[f.name] = _json_type(hints[f.name])
    return {
        "title": cls.type,
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }


#: JSON Schema (draft 2020-12 subset) of every event type, keyed by its `type`.
EVENT_SCHEMAS: dict[str, dict[str, Any]] = {name: _schema(cls) for name, cls in EVENT_TYPES.items()}
#: The same for the handoff groups' own event types.
HANDOFF_EVENT_SCHEMAS: dict[str, dict[str, Any]] = {
    name: _schema(cls) for name, cls in HANDOFF_EVENT_TYPES.items()
}
#: The same for the consumer groups' own event types.
CONSUMER_EVENT_SCHEMAS: dict[str, dict[str, Any]] = {
    name: _schema(cls) for name, cls in CONSUMER_EVENT_TYPES.items()
}


def event_from_json(data: dict[str, Any]) -> GroupEvent:
    """Rebuild an event from `to_json()` output; ValueError names what does not fit."""
    kind = data.get("type")
    cls = (
        EVENT_TYPES.get(kind) or HANDOFF_EVENT_TYPES.get(kind) or CONSUMER_EVENT_TYPES.get(kind)
        if isinstance(kind, str)
        else None
    )
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    fields = dataclasses.fields(cls)
    names = {f.name for f in fields}
    extra = set(data) - names - {"type"}
    # A field added to a type later has a default: an event stored before it still reads.
    missing = {f.name for f in fields if f.default is dataclasses.MISSING} - set(data)
    if extra or missing:
        raise ValueError(
            f"{kind}: unexpected fields {sorted(extra)}, missing fields {sorted(missing)}"
        )
    return cls(**{name: data[name] for name in names if name in data})
