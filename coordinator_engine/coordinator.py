"""The group coordinator façade: Kafka's `GroupCoordinatorShard`, as a sans-IO state machine.

Theory of operation
-------------------
`handle(request, now_ms)` validates a request, changes the group and answers with a `Reply`.
JoinGroup and SyncGroup may park (Kafka's purgatory): their reply completes when the join phase
ends or the leader's assignment is stored. Timers are keyed data in a `TimerQueue`; the host asks
`next_deadline_ms()` and calls `advance(now_ms)`; `handle` also fires whatever is already due
before it looks at the request (so a late host never sees a request overtake an expiry) and
whatever the request made due, so after any call every timer left lies in the future.

Durable state is what Kafka stores in `__consumer_offsets`: committed offsets and each group's
metadata record (generation, protocol, leader, members, assignments), written at the moments
Kafka writes it. Every such change is first encoded as records and appended to the `RecordLog`;
only when `append` returned are the records applied and replies released. Replies and events
produced while handling one call are delivered when the call's work is done (replies first), so
a callback that calls back into the coordinator never sees a half-changed group.

Layout
------
As in Kafka's group-coordinator module, where a `GroupCoordinatorShard` routes each request of
its partition to a `GroupMetadataManager` or the `OffsetMetadataManager`, `GroupCoordinator`
keeps the public API and routes, by tables built once from `GROUP_KINDS` (each kind's manager
declares its requests, timer kinds and record types; no entry may be claimed twice):

- each group kind's requests, timers and records to the manager of its package: `classic/`
  (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance timers, GroupMetadata records),
  `handoff/` (HandoffHeartbeat, the handoff session timers, HandoffGroup records, and the
  host facts: `set_partition_store_available`, `set_discovery_available`) and `consumer/`
  (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe, the session and rebalance timers,
  Kafka's consumer group records); the host's topics (`set_topic_partitions`,
  `delete_topic`) go to the handoff groups and, through the topic image, to the consumer
  groups;
- OffsetCommit, OffsetFetch, OffsetDelete, expiry and OffsetCommit records to the
  `OffsetsManager` (`offsets.py`), which asks the manager of a group's kind (by the group's
  `kind`) through the `GroupKind` hooks;
- and does itself what spans the managers, as Kafka's shard does: DescribeGroups and ListGroups
  (each manager describes and lists its own groups), `cleanup` (Kafka's
  `cleanupGroupMetadata`), DeleteGroups (`deleteGroups`) and the replay of the log, record by
  record to the manager of its record type (`replay`, then each manager's `on_loaded`).

A kind never imports another, and only this module (and the package root) imports the kinds.
The managers share one `CoordinatorContext` (`context.py`): config, log, timers, the groups,
the reply and event queues. See docs/engine.md, "Layout".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast, overload

from .classic import ClassicGroupManager, GroupView
from .config import CoordinatorConfig
from .consumer import ConsumerGroupManager, ConsumerGroupView
from .context import (
    CoordinatorContext,
    Group,
    GroupManager,
    GroupSummary,
    Handler,
    Record,
    TimerKey,
)
from .errors import CoordinatorError, Errors, ReplayError, error_code_of
from .events import GroupEvent
from .handoff import HandoffGroupManager, HandoffGroupView
from .log import MemoryLog, RecordLog
from .offsets import OffsetsManager
from .records import (
    OFFSET_COMMIT,
    CorruptRecordError,
    OffsetCommitValue,
    RecordType,
    UnknownRecordTypeError,
    key_decoder,
)
from .reply import Reply
from .requests import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    Request,
    SyncGroupRequest,
)
from .responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    HandoffHeartbeatResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

__all__ = ["CleanupResult", "GroupCoordinator", "decode_key"]

NONE = Errors.NONE

#: The group kinds, each a package with its manager (docs/engine.md, "Adding a group kind").
#: The façade builds its routing tables from them once, at construction.
GROUP_KINDS: tuple[type[GroupManager[Any]], ...] = (
    ClassicGroupManager,
    HandoffGroupManager,
    ConsumerGroupManager,
)
#: The kind of a group that only offsets made (Kafka's simple group is a classic group).
SIMPLE_GROUP_KIND = ClassicGroupManager.kind
#: Every record type of the log: the offsets', then each kind's.
RECORD_TYPES: tuple[RecordType, ...] = (
    OFFSET_COMMIT,
    *(record_type for kind in GROUP_KINDS for record_type in kind.record_types),
)
#: The log's key decoder: a record key of any of `RECORD_TYPES`, chosen by its version.
decode_key = key_decoder(RECORD_TYPES)


@dataclass(frozen=True, kw_only=True, slots=True)
class CleanupResult:
    """What one `cleanup` pass removed."""

    offsets_removed: int
    groups_removed: int


class _GroupKinds:
    """The `GroupKind` the offsets manager is given: each call goes to the manager of the
    group's kind (a simple group, made only by offsets, is of `SIMPLE_GROUP_KIND`)."""

    def __init__(self, managers: dict[str, GroupManager[Any]]) -> None:
        self._managers = managers
        self._simple = managers[SIMPLE_GROUP_KIND]

    def create_simple_group(self, group_id: str, now: int) -> Group:
        return self._simple.create_simple_group(group_id, now)

    def is_simple(self, group: Group) -> bool:
        return self._managers[group.kind].is_simple(group)

    def is_empty(self, group: Group) -> bool:
        return self._managers[group.kind].is_empty(group)

    def validate_offset_commit(self, group: Group, req: OffsetCommitRequest, now: int) -> None:
        self._managers[group.kind].validate_offset_commit(group, req, now)

    def validate_offset_fetch(self, group: Group, req: OffsetFetchRequest) -> None:
        self._managers[group.kind].validate_offset_fetch(group, req)

    def offset_delete_subscribed(self, group: Group, topics: Sequence[str]) -> set[str] | None:
        return self._managers[group.kind].offset_delete_subscribed(group, topics)

    def offset_expiration_condition(self, group: Group) -> tuple[int | None, frozenset[str]] | None:
        return self._managers[group.kind].offset_expiration_condition(group)

    def group_tombstones(self, group: Group) -> list[Record]:
        return self._managers[group.kind].group_tombstones(group)

    def remove_group(self, group: Group, now: int, reason: str, *, tombstoned: bool) -> None:
        self._managers[group.kind].remove_group(group, now, reason, tombstoned=tombstoned)


class GroupCoordinator:
    """Kafka's group coordinator: classic groups, handoff groups and KIP-848 consumer groups.
    See the module docstring and docs/engine.md."""

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        log: RecordLog | None = None,
        now_ms: int = 0,
    ) -> None:
        self.config = config if config is not None else CoordinatorConfig()
        self.log: RecordLog = log if log is not None else MemoryLog()
        ctx = self._ctx = CoordinatorContext(self.config, self.log)
        self._groups = ctx.groups
        self._timers = ctx.timers
        managers = [kind(ctx) for kind in GROUP_KINDS]
        self._managers: dict[str, GroupManager[Any]] = _merge(
            "group kind", [{m.kind: m} for m in managers]
        )
        self._kinds = _GroupKinds(self._managers)
        ctx.kinds = self._kinds
        self._offsets = OffsetsManager(ctx, self._kinds)
        # The façade's own API reaches two kinds by name: trigger_rebalance (classic groups)
        # and the host facts of handoff groups.
        self._classic = self._manager(ClassicGroupManager)
        self._handoff = self._manager(HandoffGroupManager)
        self._consumer = self._manager(ConsumerGroupManager)
        # Routing tables, built once: by request type, by a timer key's first element, by a
        # record key's class. No two kinds may claim the same entry (nor the same name).
        own: dict[type, Handler] = {
            DescribeGroupsRequest: self._describe_groups,
            ListGroupsRequest: self._list_groups,
            DeleteGroupsRequest: self._delete_groups,
        }
        self._handlers: dict[type, Handler] = _merge(
            "request", [*(m.handlers() for m in managers), self._offsets.handlers(), own]
        )
        self._timer_routes: dict[str, Callable[[TimerKey, int], None]] = _merge(
            "timer kind", [dict.fromkeys(m.timer_kinds, m.fire) for m in managers]
        )
        replays: list[dict[type, tuple[RecordType, Callable[[Any, Any, int], None]]]] = [
            {OFFSET_COMMIT.key_class: (OFFSET_COMMIT, self._offsets.replay)}
        ]
        for m in managers:
            replays.append({t.key_class: (t, m.replay) for t in m.record_types})
        self._record_routes = _merge("record type", replays)
        self._replay(now_ms)

    def _manager(self, kind: type[_M]) -> _M:
        manager = self._managers[kind.kind]
        assert isinstance(manager, kind)
        return manager

    # ---------------------------------------------------------------- public API

    @overload
    def handle(self, request: JoinGroupRequest, now_ms: int) -> Reply[JoinGroupResponse]: ...
    @overload
    def handle(self, request: SyncGroupRequest, now_ms: int) -> Reply[SyncGroupResponse]: ...
    @overload
    def handle(self, request: HeartbeatRequest, now_ms: int) -> Reply[HeartbeatResponse]: ...
    @overload
    def handle(self, request: LeaveGroupRequest, now_ms: int) -> Reply[LeaveGroupResponse]: ...
    @overload
    def handle(self, request: OffsetCommitRequest, now_ms: int) -> Reply[OffsetCommitResponse]: ...
    @overload
    def handle(self, request: OffsetFetchRequest, now_ms: int) -> Reply[OffsetFetchResponse]: ...
    @overload
    def handle(self, request: OffsetDeleteRequest, now_ms: int) -> Reply[OffsetDeleteResponse]: ...
    @overload
    def handle(
        self, request: DescribeGroupsRequest, now_ms: int
    ) -> Reply[DescribeGroupsResponse]: ...
    @overload
    def handle(self, request: ListGroupsRequest, now_ms: int) -> Reply[ListGroupsResponse]: ...
    @overload
    def handle(self, request: DeleteGroupsRequest, now_ms: int) -> Reply[DeleteGroupsResponse]: ...
    @overload
    def handle(
        self, request: HandoffHeartbeatRequest, now_ms: int
    ) -> Reply[HandoffHeartbeatResponse]: ...

    @overload
    def handle(
        self, request: ConsumerGroupHeartbeatRequest, now_ms: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]: ...
    @overload
    def handle(
        self, request: ConsumerGroupDescribeRequest, now_ms: int
    ) -> Reply[ConsumerGroupDescribeResponse]: ...

    def handle(self, request: Request, now_ms: int) -> Reply[Any]:
        """Handle one request at `now_ms`; the reply is done now or completes later."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"not a coordinator request: {type(request).__name__}")
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        if self._timers.may_be_due(now_ms):
            self._fire_due(now_ms)
        reply = handler(request, now_ms)
        # A handler may arm a timer that is already due (a rebalance timeout of 0 once the
        # last member left): fire it now, so that no due timer outlives the call.
        if self._timers.may_be_due(now_ms):
            self._fire_due(now_ms)
        ctx = self._ctx
        if ctx.completions or ctx.events:
            ctx.drain()
        return reply

    def advance(self, now_ms: int) -> None:
        """Fire every timer whose deadline is ≤ now_ms, in deadline order."""
        self._fire_due(now_ms)
        self._ctx.drain()

    def next_deadline_ms(self) -> int | None:
        """When the coordinator next needs `advance`, or None when no timer is armed."""
        return self._timers.next_deadline()

    def may_be_due(self, now_ms: int) -> bool:
        """False when no timer is due at `now_ms`, for a host with an agenda of its own that
        asks before each step: it costs a comparison, where `next_deadline_ms` first settles
        the deadlines that heartbeats pushed later (True may still mean none is due)."""
        return self._timers.may_be_due(now_ms)

    def group(self, group_id: str) -> GroupView | HandoffGroupView | ConsumerGroupView | None:
        """A snapshot of a group: a `GroupView` for a classic group, a `HandoffGroupView` for
        a handoff group (docs/engine.md, "Handoff groups"), a `ConsumerGroupView` for a
        consumer group ("Consumer groups")."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        return cast(GroupView | HandoffGroupView | ConsumerGroupView, group.view())

    # ---------------------------------------------------------------- topics, host facts

    def set_topic_partitions(
        self, topic: str, num_partitions: int, now_ms: int, *, topic_id: uuid.UUID | None = None
    ) -> None:
        """The host's topic registry reports `topic`: its partition count (0: the topic is
        gone, as `delete_topic`) and its id. Without `topic_id` the id is the one reported
        before, else one derived from the name, `uuid5(topics.TOPIC_ID_NAMESPACE, topic)`
        (the same in every process). The handoff groups that subscribe to it re-plan; the
        consumer groups that subscribe to it (by name or regular expression) bump their epoch
        when its creation, deletion or growth changes what they subscribe to. Not a record:
        the host tells it again after a restart (a topic not reported since is taken as it
        was stored, docs/engine.md, "Consumer groups")."""
        if type(num_partitions) is not int or num_partitions < 0:
            raise ValueError(f"num_partitions must be an int >= 0, got {num_partitions!r}")
        if topic_id is not None and not isinstance(topic_id, uuid.UUID):
            raise TypeError(f"topic_id must be a uuid.UUID or None, got {topic_id!r}")
        self._fire_due(now_ms)
        if self._ctx.topics.update(topic, num_partitions, topic_id):
            self._handoff.on_topic_changed(topic, now_ms)
            self._consumer.on_topics_changed({topic}, now_ms)
        self._ctx.drain()

    def delete_topic(self, topic: str, now_ms: int) -> None:
        """The host's topic registry deleted `topic`: `set_topic_partitions(topic, 0, now_ms)`."""
        self.set_topic_partitions(topic, 0, now_ms)

    def topic_id(self, topic: str) -> uuid.UUID:
        """The id the engine uses for `topic` (reported, else derived from the name)."""
        return self._ctx.topics.topic_id(topic)

    def set_partition_store_available(self, available: bool, now_ms: int) -> None:
        """The handoff groups' partition store is reachable or not. While it (or the
        discovery) is not, no handoff group makes a new plan: the current assignments are
        kept; when both are back, every handoff group is planned once."""
        self._fire_due(now_ms)
        self._handoff.set_available(store=bool(available), discovery=None, now=now_ms)
        self._ctx.drain()

    def set_discovery_available(self, available: bool, now_ms: int) -> None:
        """The handoff groups' service discovery is reachable or not; see
        `set_partition_store_available`."""
        self._fire_due(now_ms)
        self._handoff.set_available(store=None, discovery=bool(available), now=now_ms)
        self._ctx.drain()

    @property
    def discovery_available(self) -> bool:
        """Whether the handoff groups' service discovery is reachable (`set_discovery_available`):
        a host that learns of departures from its discovery acts on them only while it is."""
        return self._handoff.discovery_available

    @property
    def partition_store_available(self) -> bool:
        """Whether the handoff groups' partition store is reachable
        (`set_partition_store_available`)."""
        return self._handoff.partition_store_available

    def group_kind(self, group_id: str) -> str | None:
        """The kind of a group (``classic``, ``handoff``, ``consumer``); None if there is none."""
        group = self._groups.get(group_id)
        return None if group is None else group.kind

    def group_summaries(self, group_ids: Iterable[str] | None = None) -> list[GroupSummary]:
        """Every group in one line (`GroupSummary`: kind, state, generation, protocol, member
        count), in the order the groups were made, or those of `group_ids` that exist, in
        that order: what a host reads of many groups at once, without copying their members as
        `group` does."""
        if group_ids is None:
            return [group.summary() for group in self._groups.values()]
        groups = self._groups
        return [groups[g].summary() for g in group_ids if g in groups]

    def group_ids(self) -> list[str]:
        """Ids of every group this coordinator holds, sorted."""
        return sorted(self._groups)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetCommitValue]:
        """A copy of a group's committed offsets, keyed by (topic, partition)."""
        return self._offsets.committed(group_id)

    def add_listener(self, fn: Callable[[GroupEvent], None]) -> None:
        """Call `fn(event)` for every event, after the records behind it are durable."""
        self._ctx.listeners.append(fn)

    def remove_listener(self, fn: Callable[[GroupEvent], None]) -> None:
        self._ctx.listeners.remove(fn)

    def trigger_rebalance(
        self, group_id: str, now_ms: int, reason: str = "an admin requested a rebalance"
    ) -> Errors:
        """Start a rebalance of a group that has members, as Kafka's coordinator does when a
        member's subscription changes: Stable or CompletingRebalance → PreparingRebalance
        (a CompletingRebalance group's parked syncs get REBALANCE_IN_PROGRESS), and the
        members learn of it from their next heartbeat. Kafka has no such API (its operators
        restart or remove a member); the dashboard's staff action uses this.

        Returns NONE when the rebalance started; REBALANCE_IN_PROGRESS when one is already
        being prepared; GROUP_ID_NOT_FOUND for an unknown, Dead or Empty group (nobody to
        rebalance); NOT_COORDINATOR for a group this coordinator does not own."""
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        owns = self._ctx.owns
        if owns is not None and not owns(group_id):
            return Errors.NOT_COORDINATOR
        self._fire_due(now_ms)
        code = self._classic.trigger_rebalance(group_id, now_ms, reason)
        self._ctx.drain()
        return code

    def remove_consumer_member(self, group_id: str, member_id: str, now_ms: int) -> Errors:
        """Remove a member of a consumer group (KIP-848), as an admin's LeaveGroup to a
        consumer group does in Kafka: the member is fenced with reason `removed_by_admin` and
        the group epoch goes up. (Here LeaveGroup stays the classic protocol's request.) The
        dashboard's staff action uses this.

        Returns NONE when the member was removed; UNKNOWN_MEMBER_ID when the group has no such
        member; GROUP_ID_NOT_FOUND for a group that is not a consumer group; NOT_COORDINATOR
        for a group this coordinator does not own; COORDINATOR_NOT_AVAILABLE when the log
        refused the change."""
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int, got {type(now_ms).__name__}")
        owns = self._ctx.owns
        if owns is not None and not owns(group_id):
            return Errors.NOT_COORDINATOR
        self._fire_due(now_ms)
        code = self._consumer.remove_member(group_id, member_id, now_ms)
        self._ctx.drain()
        return code

    def cleanup(self, now_ms: int) -> CleanupResult:
        """Kafka's `cleanupGroupMetadata` (KIP-211): expire offsets, and turn Empty groups with
        no offsets left Dead, writing offset tombstones and, for a group that ever had a
        generation, a group tombstone."""
        self._fire_due(now_ms)
        offsets_removed = groups_removed = 0
        for group_id in sorted(self._groups):
            removed, dead = self._offsets.expire(self._groups[group_id], now_ms)
            if removed >= 0:  # else the log refused: nothing changed, the next pass retries
                offsets_removed += removed
                groups_removed += dead
        self._ctx.drain()
        return CleanupResult(offsets_removed=offsets_removed, groups_removed=groups_removed)

    # ---------------------------------------------------------------- routing

    def _fire_due(self, now_ms: int) -> None:
        """Hand every due timer, in deadline order, to the manager that armed it."""
        pop_due = self._timers.pop_due
        routes = self._timer_routes
        while (key := pop_due(now_ms)) is not None:
            routes[key[0]](key, now_ms)

    def _describe_groups(
        self, req: DescribeGroupsRequest, now: int
    ) -> Reply[DescribeGroupsResponse]:
        """Kafka's `handleDescribeGroup`: each group described by the manager of its kind; an
        unknown group is described as Dead."""
        out = []
        for group_id in req.group_ids:
            try:
                self._ctx.validate_group(group_id, allow_empty_id=True)
            except CoordinatorError as exc:
                code, group = error_code_of(exc), None
            else:
                code, group = NONE, self._groups.get(group_id)
            if group is not None:
                out.append(self._managers[group.kind].describe(group))
                continue
            out.append(
                DescribedGroup(
                    error_code=code,
                    group_id=group_id,
                    group_state="Dead" if code is NONE else "",
                    protocol_type="",
                    protocol_data="",
                )
            )
        return Reply.of(DescribeGroupsResponse(groups=tuple(out)))

    def _list_groups(self, req: ListGroupsRequest, now: int) -> Reply[ListGroupsResponse]:
        """Kafka's `handleListGroups` (KIP-518 state filter, KIP-848 type filter, both
        case-insensitive): every kind, by id."""
        states = {state.lower() for state in req.states_filter}
        types = {kind.lower() for kind in req.types_filter}
        listed = [
            g
            for m in self._managers.values()
            for g in m.listed_groups(states)
            if not types or g.group_type in types
        ]
        listed.sort(key=lambda g: g.group_id)
        return Reply.of(ListGroupsResponse(error_code=NONE, groups=tuple(listed)))

    def _delete_groups(self, req: DeleteGroupsRequest, now: int) -> Reply[DeleteGroupsResponse]:
        """Kafka's `handleDeleteGroups`: only Empty groups (NON_EMPTY_GROUP otherwise); their
        offsets and metadata are tombstoned."""
        results = []
        for group_id in dict.fromkeys(req.group_ids):
            try:
                self._ctx.validate_group(group_id, allow_empty_id=True)
            except CoordinatorError as exc:
                results.append(DeleteGroupResult(group_id=group_id, error_code=error_code_of(exc)))
                continue
            group = self._groups.get(group_id)
            if group is None:
                code = Errors.GROUP_ID_NOT_FOUND
            elif not self._kinds.is_empty(group):
                code = Errors.NON_EMPTY_GROUP
            elif self._offsets.remove_all(group, now):
                code = NONE
            else:
                code = Errors.COORDINATOR_NOT_AVAILABLE
            results.append(DeleteGroupResult(group_id=group_id, error_code=code))
        return Reply.of(DeleteGroupsResponse(results=tuple(results)))

    def _replay(self, now: int) -> None:
        """Rebuild durable state from the log (Kafka's `loadGroupsAndOffsets` +
        `onGroupLoaded`): each record goes to the manager of its kind, through the same apply
        path as live records; then each manager finishes the load (`on_loaded`: offsets first,
        as they decide which groups exist, then the groups re-arm their timers). Records of
        unknown types are skipped, as Kafka's loader skips an `UnknownKey`; any other
        undecodable record raises `ReplayError`."""
        owns = self._ctx.owns
        routes = self._record_routes
        for position, (key, value) in enumerate(self.log.read()):
            kind = "key"
            try:
                record_key = decode_key(key)
                record_type, replay = routes[type(record_key)]
                kind = record_type.name
                if owns is not None and not owns(record_key.group):
                    continue
                decoded = None if value is None else record_type.decode_value(value)
                replay(record_key, decoded, now)
            except UnknownRecordTypeError:
                # Kafka's loader skips keys it does not know (share or streams group records,
                # a left-over of an aborted upgrade) with a warning; so does this one.
                continue
            except CorruptRecordError as exc:
                raise ReplayError(position, kind if kind != "key" else exc.kind, str(exc)) from exc
        self._offsets.on_loaded(now)
        for manager in self._managers.values():
            manager.on_loaded(now)
        self._ctx.events.clear()


_M = TypeVar("_M", bound=GroupManager[Any])
_V = TypeVar("_V")


def _merge(what: str, tables: Sequence[dict[Any, _V]]) -> dict[Any, _V]:
    """One routing table from the tables of several managers; an entry claimed twice is a
    registration error."""
    merged: dict[Any, _V] = {}
    for table in tables:
        for key, value in table.items():
            if key in merged:
                raise ValueError(f"{what} {key!r} is registered twice")
            merged[key] = value
    return merged
