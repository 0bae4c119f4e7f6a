"""Handoff groups' manager: the handoff rebalance mode, a group kind beside the classic one.

Theory of operation
-------------------
In a classic rebalance a partition may be consumed twice while it moves (the new owner may
fetch before the old one committed). A handoff group's coordinator decides the assignment
itself and moves a partition in two confirmed steps: the old owner **closes** it (stops,
commits, confirms) and only then may the new owner **start** it. The group walks the states
Initial → Starting → Stable → Closing (→ Starting → Stable) of `state.py`.

Members speak one request, `HandoffHeartbeatRequest`, modelled on KIP-848's
ConsumerGroupHeartbeat: it carries the member's subscription and its confirmations (`closed`,
`started`) and is answered with what it must close and what it may start. Per member the group
keeps four sets: `assignment` (the plan's target), `owned` (what it may be consuming: started,
or granted and not confirmed; **a partition is in at most one member's `owned`**), `to_close`
(owned − assignment, and what it was asked to close and has not confirmed) and `to_start`
(assignment not yet confirmed started; granted, i.e. added to `owned`, only once no
`to_close` is left in the group). The state follows from the
sets (`_settle`). A plan (`plan`) is sticky and deterministic, made whenever members, their
topics or the partition counts changed, unless the partition store or the service discovery
is unavailable (the two switches), in which case the current assignment is kept.

Records are the source of truth: every durable change builds the group's next state on a copy
(`_Draft`), encodes it as one HandoffGroup record (key version 1004, `records.py` here), appends it,
and only then installs it with `apply`, the very function the replay calls. Timers
(`("handoff-session", group, member)`) are soft and re-armed at load. See docs/engine.md,
"Handoff groups".
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, NoReturn

from ..consumer_protocol import ConsumerProtocolAssignment, encode_assignment
from ..context import CoordinatorContext, Handler, Record, TimerKey
from ..errors import (
    CoordinatorError,
    Errors,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    UnknownMemberIdError,
    error_code_of,
)
from ..events import (
    REMOVAL_CAUSES,
    GroupEvent,
    HandoffMemberJoined,
    HandoffPartitionsClosed,
    HandoffPartitionsClosing,
    HandoffPartitionsGranted,
    HandoffPartitionsStarted,
    HandoffPlanMade,
    MemberRemoved,
    RebalanceCause,
    RemovalReason,
    StateChanged,
)
from ..records import RecordType
from ..reply import Reply
from ..requests import (
    HandoffHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from ..responses import DescribedGroup, DescribedMember, HandoffHeartbeatResponse, ListedGroup
from .group import PROTOCOL_TYPE, TP, HandoffGroup, HandoffMember, group_value, topic_partitions
from .records import (
    HANDOFF_GROUP,
    HandoffGroupKey,
    HandoffGroupValue,
    handoff_group_record,
    handoff_group_tombstone,
)
from .state import Closing, Dead, Initial, Stable, Starting, check_transition

__all__ = ["TIMER_KINDS", "HandoffGroupManager", "plan"]

#: The timer kinds this manager arms (the façade routes them here).
TIMER_KINDS = ("handoff-session",)
NONE = Errors.NONE


def _changes_nothing(
    member: HandoffMember, req: HandoffHeartbeatRequest, topics: tuple[str, ...]
) -> bool:
    """A heartbeat that confirms nothing it was asked and keeps its topics and session."""
    return (
        member.topics == topics
        and member.session_timeout_ms == req.session_timeout_ms
        and not (req.closed and member.to_close)
        and not (req.started and member.granted_starts())
    )


@functools.lru_cache(maxsize=4096)
def _answer_of(
    member_id: str,
    epoch: int,
    state: str,
    to_close: frozenset[TP],
    starts: frozenset[TP],
    assignment: frozenset[TP],
) -> Reply[HandoffHeartbeatResponse]:
    """A heartbeat's answer, remembered: a member's sets change at handoffs only, and every
    heartbeat between them gets the same answer (a done reply and its frozen response are
    never changed, so one object serves them all)."""
    return Reply.of(
        HandoffHeartbeatResponse(
            error_code=NONE,
            member_id=member_id,
            member_epoch=epoch,
            group_state=state,
            close=topic_partitions(to_close),
            start=topic_partitions(starts),
            assignment=topic_partitions(assignment),
        )
    )


def _json_tps(partitions: Iterable[TP]) -> list[list[Any]]:
    return [[t, p] for t, p in sorted(partitions)]


def plan(
    members: Mapping[str, HandoffMember], partition_counts: Mapping[str, int]
) -> dict[str, frozenset[TP]]:
    """The sticky, deterministic plan: topic by topic (in name order) the members subscribing
    to it (in member-id order) share its partitions, ⌊n/k⌋ or ⌈n/k⌉ each; a member keeps the
    partitions of its current assignment up to its quota, the larger quotas going first to the
    members that hold the most (ties: member id); the rest go, in partition order, to the
    member with the fewest (ties: member id) still under its quota.

    >>> m = {i: HandoffMember(i, "", "", 1, ("t",)) for i in ("a", "b")}
    >>> sorted(plan(m, {"t": 3})["a"]), sorted(plan(m, {"t": 3})["b"])
    ([('t', 0), ('t', 2)], [('t', 1)])
    """
    result: dict[str, set[TP]] = {member_id: set() for member_id in sorted(members)}
    for topic in sorted({t for m in members.values() for t in m.topics}):
        subscribers = sorted(m for m in members if topic in members[m].topics)
        n = partition_counts[topic]
        base, extra = divmod(n, len(subscribers))
        held = {
            m: sorted(p for t, p in members[m].assignment if t == topic and p < n)
            for m in subscribers
        }
        order = sorted(subscribers, key=lambda m: (-len(held[m]), m))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
        count = dict.fromkeys(subscribers, 0)
        taken: set[int] = set()
        for m in order:
            for p in held[m]:
                if count[m] < quota[m] and p not in taken:
                    taken.add(p)
                    count[m] += 1
                    result[m].add((topic, p))
        for p in range(n):
            if p in taken:
                continue
            m = min((s for s in subscribers if count[s] < quota[s]), key=lambda s: (count[s], s))
            count[m] += 1
            result[m].add((topic, p))
    return {member_id: frozenset(parts) for member_id, parts in result.items()}


class _Draft:
    """A group's next state, built on copies before its record is written; `events` are
    emitted once the record is durable."""

    __slots__ = (
        "cause",
        "cause_member_id",
        "epoch",
        "events",
        "group_id",
        "members",
        "state",
        "state_timestamp",
    )

    def __init__(
        self, group_id: str, group: HandoffGroup | None, now: int, cause: RebalanceCause | None
    ) -> None:
        self.group_id = group_id
        self.events: list[GroupEvent] = []
        #: Why a rebalance this change starts would start: the first membership change made
        #: in it, or what the caller says (a partition count, an outage's end).
        self.cause = cause
        self.cause_member_id: str | None = None
        if group is None:
            self.state, self.epoch, self.state_timestamp = Initial, 0, now
            self.members: dict[str, HandoffMember] = {}
        else:
            self.state, self.epoch = group.state, group.epoch
            self.state_timestamp = group.state_timestamp_ms
            self.members = {k: dataclasses.replace(m) for k, m in group.members.items()}

    def value(self) -> HandoffGroupValue:
        return group_value(self.state, self.epoch, self.state_timestamp, self.members)

    def caused_by(self, cause: RebalanceCause, member_id: str) -> None:
        """`member_id` changed the group for `cause`, unless an earlier change did already."""
        if self.cause is None:
            self.cause, self.cause_member_id = cause, member_id


class HandoffGroupManager:
    """The handoff groups of one coordinator: their heartbeat, session timers, plans, records
    and replay, and the `GroupKind` hooks the offsets manager asks of them."""

    kind: ClassVar[str] = HandoffGroup.kind
    timer_kinds: ClassVar[tuple[str, ...]] = TIMER_KINDS
    record_types: ClassVar[tuple[RecordType, ...]] = (HANDOFF_GROUP,)

    def __init__(self, ctx: CoordinatorContext) -> None:
        self._ctx = ctx
        self.config = ctx.config
        self._groups = ctx.groups
        self._timers = ctx.timers
        #: The partition store's answers (host facts, not records), shared by every kind.
        self._topics = ctx.topics
        self.partition_store_available = True
        self.discovery_available = True

    def handlers(self) -> dict[type, Handler]:
        return {HandoffHeartbeatRequest: self._heartbeat}

    # ---------------------------------------------------------------- façade entry points

    def handoff_groups(self) -> list[HandoffGroup]:
        """Every handoff group, in group id order."""
        return [g for _, g in sorted(self._groups.items()) if isinstance(g, HandoffGroup)]

    def fire(self, key: TimerKey, now: int) -> None:
        """A member's session expired: it is removed, its partitions released."""
        _, group_id, member_id = key
        group = self._groups.get(group_id)
        if not isinstance(group, HandoffGroup) or member_id not in group.members:
            return

        def expire(draft: _Draft) -> None:
            self._remove_member(draft, member_id, "session_timeout", None, now)

        if not self._change(group_id, group, now, expire):
            # The log refused: the member stays; try again after another session.
            member = group.members[member_id]
            self._timers.schedule(key, now + member.session_timeout_ms)

    def on_topic_changed(self, topic: str, now: int) -> None:
        """The partition store reported a new partition count of `topic` (the context's topic
        image holds it); the groups subscribing re-plan."""
        for group in self.handoff_groups():
            if topic in group.subscribed_topics():
                self._change(
                    group.group_id,
                    group,
                    now,
                    lambda draft: None,
                    RebalanceCause.PARTITIONS_CHANGED,
                )

    def set_available(self, *, store: bool | None, discovery: bool | None, now: int) -> None:
        """Switch the partition store or the discovery on or off; back on, every group is
        planned once from its members as they are now."""
        before = self._planning_allowed_globally()
        if store is not None:
            self.partition_store_available = store
        if discovery is not None:
            self.discovery_available = discovery
        if self._planning_allowed_globally() and not before:
            for group in self.handoff_groups():
                self._change(
                    group.group_id, group, now, lambda draft: None, RebalanceCause.OUTAGE_ENDED
                )

    # ---------------------------------------------------------------- the heartbeat

    def _heartbeat(self, req: HandoffHeartbeatRequest, now: int) -> Reply[HandoffHeartbeatResponse]:
        cfg = self.config
        try:
            self._ctx.validate_group(req.group_id, allow_empty_id=False)
            if req.member_id == "":
                raise UnknownMemberIdError("a handoff member chooses its own non-empty id")
            group = self._groups.get(req.group_id)
            if group is not None and not isinstance(group, HandoffGroup):
                raise InconsistentGroupProtocolError(req.group_id)
            if req.member_epoch == -1:
                return self._leave(group, req, now)
            if (
                not cfg.group_min_session_timeout_ms
                <= req.session_timeout_ms
                <= cfg.group_max_session_timeout_ms
            ):
                raise InvalidSessionTimeoutError(str(req.session_timeout_ms))
            known = group is not None and req.member_id in group.members
            if req.member_epoch != 0 and not known:
                raise UnknownMemberIdError(req.member_id)
        except CoordinatorError as exc:
            return Reply.of(
                HandoffHeartbeatResponse(error_code=error_code_of(exc), member_id=req.member_id)
            )
        topics = tuple(sorted(set(req.topics)))
        if (
            group is not None
            and req.member_epoch != 0
            and _changes_nothing(group.members[req.member_id], req, topics)
        ):
            # Most heartbeats: nothing to record, nothing to plan (every change re-settles
            # the group when it happens), so no draft of the group is made.
            return self._answer(group, req.member_id, now)

        def update(draft: _Draft) -> None:
            member = draft.members.get(req.member_id)
            if req.member_epoch == 0 and member is not None:
                # A known member joining again has restarted: it holds nothing any more.
                self._remove_member(draft, req.member_id, "left", "rejoined with epoch 0", now)
                member = None
            if member is None:
                member = HandoffMember(
                    member_id=req.member_id,
                    client_id=req.client_id,
                    client_host=req.client_host,
                    session_timeout_ms=req.session_timeout_ms,
                    topics=topics,
                )
                draft.members[req.member_id] = member
                draft.caused_by(RebalanceCause.MEMBER_JOINED, member.member_id)
                draft.events.append(
                    HandoffMemberJoined(
                        group_id=draft.group_id,
                        at_ms=now,
                        member_id=member.member_id,
                        client_id=member.client_id,
                        client_host=member.client_host,
                        session_timeout_ms=member.session_timeout_ms,
                        topics=list(topics),
                    )
                )
                return
            if member.topics != topics:
                draft.caused_by(RebalanceCause.METADATA_CHANGE, member.member_id)
            member.topics = topics
            member.session_timeout_ms = req.session_timeout_ms
            closed = member.to_close.intersection((p.topic, p.partition) for p in req.closed)
            if closed:
                member.to_close -= closed
                member.owned -= closed
                draft.events.append(
                    HandoffPartitionsClosed(
                        group_id=draft.group_id,
                        at_ms=now,
                        member_id=member.member_id,
                        partitions=_json_tps(closed),
                    )
                )
            started = member.granted_starts().intersection(
                (p.topic, p.partition) for p in req.started
            )
            if started:
                member.to_start -= started
                draft.events.append(
                    HandoffPartitionsStarted(
                        group_id=draft.group_id,
                        at_ms=now,
                        member_id=member.member_id,
                        partitions=_json_tps(started),
                    )
                )

        if not self._change(req.group_id, group, now, update):
            return Reply.of(
                HandoffHeartbeatResponse(
                    error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=req.member_id
                )
            )
        stored = self._groups[req.group_id]
        assert isinstance(stored, HandoffGroup)
        return self._answer(stored, req.member_id, now)

    def _answer(
        self, group: HandoffGroup, member_id: str, now: int
    ) -> Reply[HandoffHeartbeatResponse]:
        """A heartbeat's answer from the group as it now is; the member's session re-armed."""
        member = group.members[member_id]
        self._timers.schedule(
            ("handoff-session", group.group_id, member_id), now + member.session_timeout_ms
        )
        return _answer_of(
            member_id,
            group.epoch,
            group.state.value,
            member.to_close,
            member.granted_starts(),
            member.assignment,
        )

    def _leave(
        self, group: HandoffGroup | None, req: HandoffHeartbeatRequest, now: int
    ) -> Reply[HandoffHeartbeatResponse]:
        """KIP-848's leave heartbeat (epoch −1): the member goes, its partitions released."""
        if group is None or req.member_id not in group.members:
            raise UnknownMemberIdError(req.member_id)

        def leave(draft: _Draft) -> None:
            self._remove_member(draft, req.member_id, "left", None, now)

        if not self._change(req.group_id, group, now, leave):
            code = Errors.COORDINATOR_NOT_AVAILABLE
        else:
            code = NONE
            self._timers.cancel(("handoff-session", req.group_id, req.member_id))
        return Reply.of(
            HandoffHeartbeatResponse(error_code=code, member_id=req.member_id, member_epoch=-1)
        )

    # ---------------------------------------------------------------- changing a group

    @staticmethod
    def _remove_member(
        draft: _Draft, member_id: str, reason: str, detail: str | None, now: int
    ) -> None:
        del draft.members[member_id]
        draft.caused_by(REMOVAL_CAUSES[RemovalReason(reason)], member_id)
        if not draft.members:
            draft.state_timestamp = now  # the retention clock of its offsets starts
        draft.events.append(
            MemberRemoved(
                group_id=draft.group_id,
                at_ms=now,
                member_id=member_id,
                group_instance_id=None,
                reason=reason,
                detail=detail,
            )
        )

    def _planning_allowed_globally(self) -> bool:
        return self.partition_store_available and self.discovery_available

    def _change(
        self,
        group_id: str,
        group: HandoffGroup | None,
        now: int,
        mutate: Callable[[_Draft], None],
        cause: RebalanceCause | None = None,
    ) -> bool:
        """Build the group's next state (`mutate`, then `_settle`), write its record and apply
        it; False (nothing applied) when the log refused. Writes nothing when nothing changed.
        `cause`: why, when no membership change in `mutate` says so."""
        draft = _Draft(group_id, group, now, cause)
        mutate(draft)
        self._settle(draft, now)
        value = draft.value()
        if group is not None and value == group.value():
            return True
        if not self._ctx.append([handoff_group_record(group_id, value)]):
            return False
        self.apply(group_id, value)
        for event in draft.events:
            self._ctx.emit(event)
        return True

    def _settle(self, draft: _Draft, now: int) -> None:
        """Plan if allowed and needed, grant what may start, and derive the state."""
        members = draft.members
        topics = {t for m in members.values() for t in m.topics}
        image = self._topics
        if self._planning_allowed_globally() and all(image.reported(t) for t in topics):
            target = plan(members, {t: image.partitions(t) for t in topics})
            first = draft.state is Initial and bool(members)
            if first or any(target[k] != m.assignment for k, m in members.items()):
                draft.epoch += 1
                draft.events.append(
                    HandoffPlanMade(
                        group_id=draft.group_id,
                        at_ms=now,
                        epoch=draft.epoch,
                        assignment={k: _json_tps(v) for k, v in target.items()},
                    )
                )
                for member_id, member in members.items():
                    assignment = target[member_id]
                    new_close = member.owned - assignment - member.to_close
                    # A partition asked to be closed stays so until confirmed, even if this
                    # plan gives it back: the member may have stopped it already, so it is
                    # closed, then started again.
                    member.to_close |= new_close
                    member.assignment = assignment
                    confirmed = member.owned - member.to_start - member.to_close
                    member.to_start = assignment - confirmed
                    if new_close:
                        draft.events.append(
                            HandoffPartitionsClosing(
                                group_id=draft.group_id,
                                at_ms=now,
                                member_id=member_id,
                                partitions=_json_tps(new_close),
                            )
                        )
        if not any(m.to_close for m in members.values()):
            for member_id, member in members.items():
                grant = member.to_start - member.owned
                if grant:
                    member.owned |= grant
                    draft.events.append(
                        HandoffPartitionsGranted(
                            group_id=draft.group_id,
                            at_ms=now,
                            member_id=member_id,
                            partitions=_json_tps(grant),
                        )
                    )
        if any(m.to_close for m in members.values()):
            state = Closing
        elif any(m.to_start for m in members.values()):
            state = Starting
        elif draft.state is Initial and draft.epoch == 0:
            state = Initial
        else:
            state = Stable
        if state is not draft.state:
            reason = check_transition(draft.state, state)
            # A move into Closing or Starting from rest starts a rebalance; Starting → Closing
            # restarts it (a new plan before the last one was started).
            starts = (draft.state in (Initial, Stable) and state in (Closing, Starting)) or (
                draft.state is Starting and state is Closing
            )
            draft.events.append(
                StateChanged.of_move(
                    draft.group_id,
                    now,
                    draft.state.value,
                    state.value,
                    reason,
                    starts=starts,
                    cause=draft.cause,
                    cause_member_id=draft.cause_member_id,
                )
            )
            draft.state = state
            draft.state_timestamp = now

    # ---------------------------------------------------------------- records

    def apply(self, group_id: str, value: HandoffGroupValue | None) -> None:
        """Install a HandoffGroup record: live after its append, and at replay. A tombstone
        removes the group."""
        if value is None:
            if isinstance(self._groups.get(group_id), HandoffGroup):
                del self._groups[group_id]
            return
        self._groups[group_id] = HandoffGroup(group_id, value)

    def replay(self, key: HandoffGroupKey, value: HandoffGroupValue | None, now: int) -> None:
        """Apply a HandoffGroup record at load; a later record of another kind for the same id
        replaces it (the group was deleted and created again as the other kind)."""
        group_id = key.group
        if value is None:
            self.apply(group_id, None)
        else:
            self._groups.pop(group_id, None)
            self.apply(group_id, value)

    def on_loaded(self, now: int) -> None:
        """Re-arm every member's session timer (as Kafka's `onLoaded`); no plan is made at
        load (the partition counts come from the host again)."""
        for group in self.handoff_groups():
            for member in group.members.values():
                self._timers.schedule(
                    ("handoff-session", group.group_id, member.member_id),
                    now + member.session_timeout_ms,
                )

    # ---------------------------------------------------------------- GroupKind hooks

    def create_simple_group(self, group_id: str, now: int) -> NoReturn:  # pragma: no cover
        raise AssertionError("a simple group is always a classic group")

    def is_simple(self, group: HandoffGroup) -> bool:
        return False

    def is_empty(self, group: HandoffGroup) -> bool:
        return not group.members

    def validate_offset_fetch(self, group: HandoffGroup, req: OffsetFetchRequest) -> None:
        """A handoff member fetches with any identity."""

    def validate_offset_commit(
        self, group: HandoffGroup, req: OffsetCommitRequest, now: int
    ) -> None:
        """A member commits with its member id, any generation (it commits before confirming a
        close, when the epoch may have moved on); the commit refreshes its session. Without a
        member id, generation −1, only while the group has no members (admin tools)."""
        member = group.members.get(req.member_id)
        if member is not None:
            self._timers.schedule(
                ("handoff-session", group.group_id, member.member_id),
                now + member.session_timeout_ms,
            )
            return
        if req.member_id == "" and req.generation_id < 0 and not group.members:
            return
        raise UnknownMemberIdError(req.member_id)

    def offset_delete_subscribed(self, group: HandoffGroup, topics: Iterable[str]) -> set[str]:
        subscribed = group.subscribed_topics()
        return {topic for topic in topics if topic in subscribed}

    def offset_expiration_condition(
        self, group: HandoffGroup
    ) -> tuple[int | None, frozenset[str]] | None:
        """Without members the retention clock started when the last one went; with members,
        offsets of topics nobody subscribes to expire after their last commit."""
        if not group.members:
            return group.state_timestamp_ms, frozenset()
        return None, group.subscribed_topics()

    def group_tombstones(self, group: HandoffGroup) -> list[Record]:
        return [handoff_group_tombstone(group.group_id)]

    def remove_group(self, group: HandoffGroup, now: int, reason: str, *, tombstoned: bool) -> None:
        cause = check_transition(group.state, Dead)
        del self._groups[group.group_id]
        self._ctx.emit_removal(
            group.group_id,
            now,
            from_state=group.state.value,
            to_state=Dead.value,
            cause=cause,
            reason=reason,
            generation_id=group.epoch,
            tombstoned=tombstoned,
        )
        group.state = Dead

    # ---------------------------------------------------------------- admin APIs

    @staticmethod
    def describe(group: HandoffGroup) -> DescribedGroup:
        """DescribeGroups for a handoff group: its state's name, protocol type "handoff", and
        each member's target as a ConsumerProtocolAssignment."""
        return DescribedGroup(
            error_code=NONE,
            group_id=group.group_id,
            group_state=group.state.value,
            protocol_type=PROTOCOL_TYPE,
            protocol_data="",
            members=tuple(
                DescribedMember(
                    member_id=m.member_id,
                    group_instance_id=None,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=b"",
                    member_assignment=encode_assignment(
                        ConsumerProtocolAssignment(assigned_partitions=tuple(sorted(m.assignment)))
                    ),
                )
                for m in group.members.values()
            ),
        )

    def listed_groups(self, states: set[str]) -> list[ListedGroup]:
        """ListGroups' entries for handoff groups (`states` lower-cased; empty = all)."""
        return [
            ListedGroup(
                group_id=g.group_id,
                protocol_type=PROTOCOL_TYPE,
                group_state=g.state.value,
                group_type=PROTOCOL_TYPE,
            )
            for g in self.handoff_groups()
            if not states or g.state.value.lower() in states
        ]
