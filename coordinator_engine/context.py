"""What the group managers share: the plumbing of Kafka's `GroupCoordinatorShard`.

In Kafka's group-coordinator module a `GroupCoordinatorShard` owns one `__consumer_offsets`
partition and hands its requests to a `GroupMetadataManager` (the groups) and an
`OffsetMetadataManager` (the offsets). Both return their records and responses to the
`CoordinatorRuntime`, which appends the records and only then completes the responses, and the
shard's timer drives the group manager's timeouts. `CoordinatorContext` is that common ground
here, one object every manager is given at construction:

- `config`, the `RecordLog` (`append`: durable or refused, nothing in between) and which groups
  this coordinator owns (`owns`, `validate_group`);
- the `TimerQueue` every manager arms its keyed timers in (the façade fires them and hands each
  due key to the manager that registered its first element);
- `groups`, every group this coordinator holds, keyed by id, one map for all group kinds as in
  Kafka; a `Group` names its kind, and the façade hands it to that kind's manager;
- `topics`, the topics the host reports (names, ids, partition counts), and `kinds`, the
  façade's `GroupKind`, through which a manager asks about a group of another kind;
- the queues of completed replies and events of the current call, which `drain` releases
  (replies first, then events) once the call's work is done.

Managers reach each other only through this object and the `GroupKind` hooks below, never
through each other's private state. `GroupManager` is what the façade asks of the manager of a
group kind. This module names no kind: the kinds' packages import it, never the other way.
See docs/engine.md, "Layout".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Protocol, TypeVar

from .config import CoordinatorConfig
from .errors import InvalidGroupIdError, NotCoordinatorError
from .events import GroupEvent, GroupRemoved, StateChanged
from .hashing import partition_for
from .log import LogAppendError, RecordLog
from .records import RecordType
from .reply import Reply
from .requests import OffsetCommitRequest, OffsetFetchRequest
from .responses import DescribedGroup, ListedGroup
from .timers import TimerQueue
from .topics import TopicImage


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupSummary:
    """A group in one line, whatever its kind: what a host reads of every group at once (a
    metrics scrape of thousands of groups), without the members a view copies.

    kind: ``classic``, ``handoff`` or ``consumer``. state: the kind's state name.
    generation_id: a classic group's generation, a handoff group's plan epoch, a consumer
    group's group epoch. protocol: a classic group's selected protocol (the assignor its
    members chose), a consumer group's server assignor, None for a handoff group (or a classic
    group without one). member_count: its members (not counting KIP-394 pending ones)."""

    group_id: str
    kind: str
    state: str
    generation_id: int
    protocol: str | None
    member_count: int


class Group(Protocol):
    """The metadata of one group, whatever its kind (each kind's ``group`` module): what the
    shared code reads of it. ``kind`` names the group's kind, and so the manager the façade
    hands it to."""

    @property
    def group_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    def view(self) -> object:
        """A frozen snapshot for the host (`GroupCoordinator.group`)."""
        ...

    def summary(self) -> GroupSummary:
        """The group in one line (`GroupCoordinator.group_summaries`)."""
        ...


#: A timer's key: its first element names the timer's kind (and so its manager), the second
#: its group.
TimerKey = tuple[Any, ...]
#: One record as appended to the log: Kafka's key and value bytes, a None value a tombstone.
Record = tuple[bytes, bytes | None]
#: A request handler: the request and the time, to a reply (done now or later).
Handler = Callable[[Any, int], Reply[Any]]

G = TypeVar("G", contravariant=True)


class CoordinatorContext:
    """The state and plumbing the managers of one coordinator share."""

    __slots__ = (
        "completions",
        "config",
        "draining",
        "events",
        "groups",
        "kinds",
        "listeners",
        "log",
        "owns",
        "timers",
        "topics",
    )

    def __init__(self, config: CoordinatorConfig, log: RecordLog) -> None:
        self.config = config
        self.log = log
        self.groups: dict[str, Group] = {}
        self.timers: TimerQueue[TimerKey] = TimerQueue()
        #: The topics the host reports (`GroupCoordinator.set_topic_partitions`).
        self.topics = TopicImage()
        #: The façade's `GroupKind`, through which a manager may ask another kind's manager
        #: about a group of that kind (KIP-848 takes over an empty classic group's id).
        self.kinds: GroupKind | None = None
        self.listeners: list[Callable[[GroupEvent], None]] = []
        self.completions: list[tuple[Reply[Any], Any]] = []
        self.events: list[GroupEvent] = []
        self.draining = False
        #: None when this coordinator owns every partition, else whether it owns a group's.
        self.owns: Callable[[str], bool] | None = None
        owned = config.owned_partitions
        num_partitions = config.offsets_topic_num_partitions
        if owned is not None:

            @lru_cache(maxsize=65536)
            def owns(group_id: str) -> bool:
                return partition_for(group_id, num_partitions) in owned

            self.owns = owns

    # -- writing --------------------------------------------------------------------------

    def append(self, records: Sequence[Record]) -> bool:
        """Append durably; False if the log refused (nothing was written, nothing changes)."""
        try:
            self.log.append(records)
        except LogAppendError:
            return False
        return True

    # -- replies and events ---------------------------------------------------------------

    def complete(self, reply: Reply[Any], response: Any) -> None:
        """Complete `reply` with `response` when the current call's work is done."""
        self.completions.append((reply, response))

    def emit(self, event: GroupEvent) -> None:
        """Deliver `event` to the listeners when the current call's work is done."""
        if self.listeners:
            self.events.append(event)

    def emit_removal(
        self,
        group_id: str,
        now: int,
        *,
        from_state: str,
        to_state: str,
        cause: str,
        reason: str,
        generation_id: int,
        tombstoned: bool,
    ) -> None:
        """A group of a kind that removes it straight from any state: its last StateChanged
        (to the kind's Dead, `cause` from its transition table) and GroupRemoved."""
        self.emit(
            StateChanged(
                group_id=group_id,
                at_ms=now,
                from_state=from_state,
                to_state=to_state,
                reason=cause,
            )
        )
        self.emit(
            GroupRemoved(
                group_id=group_id,
                at_ms=now,
                reason=reason,
                generation_id=generation_id,
                tombstoned=tombstoned,
            )
        )

    def drain(self) -> None:
        """Release completed replies, then events, until neither is left."""
        if self.draining:
            return
        self.draining = True
        try:
            while self.completions or self.events:
                while self.completions:
                    batch, self.completions = self.completions, []
                    for reply, response in batch:
                        reply.complete(response)
                if self.events:
                    events, self.events = self.events, []
                    for event in events:
                        for listener in tuple(self.listeners):
                            listener(event)
        finally:
            self.draining = False

    # -- validation -----------------------------------------------------------------------

    def raise_if_not_coordinator(self, group_id: str) -> None:
        if self.owns is not None and not self.owns(group_id):
            raise NotCoordinatorError(group_id)

    def validate_group(self, group_id: str, *, allow_empty_id: bool) -> None:
        """Kafka's `validateGroupStatus`: Offset* and Describe/Delete accept the empty id."""
        if not allow_empty_id and group_id == "":
            raise InvalidGroupIdError("the group id is empty")
        self.raise_if_not_coordinator(group_id)


class GroupKind(Protocol):
    """What the offsets manager and the façade ask of the manager of a group's kind: the part
    of Kafka's `Group` interface (`validateOffsetCommit`, `validateOffsetDelete`,
    `isSubscribedToTopic`, `offsetExpirationCondition`, `isEmpty`,
    `createGroupTombstoneRecords`) and of its `GroupMetadataManager`
    (`getOrMaybeCreateClassicGroup`, group removal) that offsets depend on."""

    def create_simple_group(self, group_id: str, now: int) -> Group:
        """A new Empty group with no protocol, holding offsets only (Kafka's simple group)."""
        ...

    def is_simple(self, group: Group) -> bool:
        """Whether the group has never had a stored generation or protocol: it exists only
        because of its offsets."""
        ...

    def is_empty(self, group: Group) -> bool:
        """Whether the group is Empty (no members, no rebalance under way): only then do its
        offsets alone decide whether it lives."""
        ...

    def validate_offset_commit(self, group: Group, req: OffsetCommitRequest, now: int) -> None:
        """Raise the `CoordinatorError` that refuses this commit, if any; an accepted commit of
        a member counts as a sign of life of that member."""
        ...

    def validate_offset_fetch(self, group: Group, req: OffsetFetchRequest) -> None:
        """Raise the `CoordinatorError` that refuses this fetch, if any (Kafka's
        `validateOffsetFetch`: a consumer group's member fetches in its epoch)."""
        ...

    def offset_delete_subscribed(self, group: Group, topics: Sequence[str]) -> set[str] | None:
        """Of `topics`, those whose offsets OffsetDelete must keep (GROUP_SUBSCRIBED_TO_TOPIC);
        None when no offset of the group may be deleted (NON_EMPTY_GROUP)."""
        ...

    def offset_expiration_condition(self, group: Group) -> tuple[int | None, frozenset[str]] | None:
        """KIP-211: None when no offset of the group expires by retention now; else the time
        the retention clock started (None: each offset's own commit time) and the topics
        whose offsets are kept whatever their age."""
        ...

    def group_tombstones(self, group: Group) -> list[Record]:
        """The records that delete the group's metadata (none if it never stored any)."""
        ...

    def remove_group(self, group: Group, now: int, reason: str, *, tombstoned: bool) -> None:
        """Apply a deletion whose records (if any) are durable: the group goes Dead and is
        dropped, with its timers."""
        ...


class GroupManager(Protocol[G]):
    """What the façade needs of the manager of one group kind (G: the kind's group class), so
    that a kind is added by registering its manager (`coordinator.GROUP_KINDS`) and the façade
    routes by table, built once: by request type, by a timer key's first element, by a record
    key's class, by a group's ``kind``. The `GroupKind` hooks are the same as the offsets
    manager's, for the kind's own groups."""

    #: The kind's name: what its groups carry in ``kind``.
    kind: ClassVar[str]
    #: The first elements of the timer keys it arms.
    timer_kinds: ClassVar[tuple[str, ...]]
    #: The record types it writes and replays.
    record_types: ClassVar[tuple[RecordType, ...]]

    def __init__(self, ctx: CoordinatorContext) -> None: ...

    def handlers(self) -> dict[type, Handler]:
        """The requests it answers, by type."""
        ...

    def fire(self, key: TimerKey, now: int) -> None:
        """One of its timers is due."""
        ...

    def replay(self, key: Any, value: Any, now: int) -> None:
        """Apply one of its records at load (``value`` decoded; None for a tombstone)."""
        ...

    def on_loaded(self, now: int) -> None:
        """The log is read: re-arm its timers."""
        ...

    def describe(self, group: G) -> DescribedGroup:
        """One of its groups in a DescribeGroups answer."""
        ...

    def listed_groups(self, states: set[str]) -> list[ListedGroup]:
        """ListGroups' entries for its groups (``states`` lower-cased; empty: all)."""
        ...

    def create_simple_group(self, group_id: str, now: int) -> Group: ...
    def is_simple(self, group: G) -> bool: ...
    def is_empty(self, group: G) -> bool: ...
    def validate_offset_commit(self, group: G, req: OffsetCommitRequest, now: int) -> None: ...
    def validate_offset_fetch(self, group: G, req: OffsetFetchRequest) -> None: ...
    def offset_delete_subscribed(self, group: G, topics: Sequence[str]) -> set[str] | None: ...
    def offset_expiration_condition(self, group: G) -> tuple[int | None, frozenset[str]] | None: ...
    def group_tombstones(self, group: G) -> list[Record]: ...
    def remove_group(self, group: G, now: int, reason: str, *, tombstoned: bool) -> None: ...
