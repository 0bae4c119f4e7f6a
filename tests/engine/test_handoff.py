"""Handoff groups (docs/engine.md, "Handoff groups"): one scenario per case the seed
lists (a consumer joins, leaves, crashes mid-handoff, confirms slowly; the partition store or the
discovery is out; a restart in every state), plus the member protocol's errors, the records,
the listings, the offsets and the events."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from coordinator_engine import (
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Errors,
    GroupCoordinator,
    JoinGroupRequest,
    ListGroupsRequest,
    MemoryLog,
    OffsetCommitRequest,
    PartitionOffset,
    Protocol,
    TopicPartition,
)
from coordinator_engine.consumer_protocol import decode_assignment
from coordinator_engine.coordinator import decode_key
from coordinator_engine.events import (
    HANDOFF_EVENT_SCHEMAS,
    HANDOFF_EVENT_TYPES,
    GroupEvent,
    MemberRemoved,
    StateChanged,
    event_from_json,
)
from coordinator_engine.handoff import HandoffGroupView, HandoffState, plan
from coordinator_engine.handoff.records import (
    HandoffGroupKey,
    HandoffGroupValue,
    HandoffMemberValue,
    decode_handoff_group_value,
    encode_handoff_group_value,
    handoff_group_record,
)
from coordinator_engine.records import CorruptRecordError
from coordinator_engine.requests import HandoffHeartbeatRequest
from coordinator_engine.responses import HandoffHeartbeatResponse

from .harness import FlakyLog

GROUP = "handoff-group"
SESSION = 1_000
CONFIG = CoordinatorConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=60_000)

TPs = tuple[tuple[str, int], ...]


def tps(*pairs: tuple[str, int]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic=t, partition=p) for t, p in pairs)


def pairs(partitions: tuple[TopicPartition, ...]) -> TPs:
    return tuple((p.topic, p.partition) for p in partitions)


class HandoffContext:
    """A coordinator, its log and a fake clock, with the member's side of the protocol."""

    def __init__(
        self,
        log: MemoryLog | None = None,
        now: int = 0,
        counts: dict[str, int] | None = None,
    ) -> None:
        self.log = log if log is not None else MemoryLog()
        self.now = now
        self.coord = GroupCoordinator(CONFIG, self.log, now)
        self.events: list[GroupEvent] = []
        self.topics: dict[str, tuple[str, ...]] = {}
        self.coord.add_listener(self.events.append)
        for topic, n in (counts if counts is not None else {"t": 4}).items():
            self.coord.set_topic_partitions(topic, n, now)

    def sleep(self, ms: int) -> None:
        self.now += ms
        self.coord.advance(self.now)

    def hb(
        self,
        member_id: str,
        epoch: int = 1,
        *,
        topics: tuple[str, ...] | None = None,
        closed: TPs = (),
        started: TPs = (),
        group_id: str = GROUP,
    ) -> HandoffHeartbeatResponse:
        if topics is None:
            topics = self.topics.get(member_id, ("t",))
        self.topics[member_id] = topics
        reply = self.coord.handle(
            HandoffHeartbeatRequest(
                group_id=group_id,
                member_id=member_id,
                member_epoch=epoch,
                session_timeout_ms=SESSION,
                topics=topics,
                closed=tps(*closed),
                started=tps(*started),
            ),
            self.now,
        )
        assert reply.response is not None
        return reply.response

    def join(self, member_id: str, **kwargs: Any) -> HandoffHeartbeatResponse:
        return self.hb(member_id, 0, **kwargs)

    def settle(self, *member_ids: str) -> None:
        """Every member does what it is told (closes, then starts) until nothing is asked."""
        for _ in range(10):
            asked = False
            for member_id in member_ids:
                r = self.hb(member_id)
                if r.close:
                    asked = True
                    self.hb(member_id, closed=pairs(r.close))
                r = self.hb(member_id)
                if r.start:
                    asked = True
                    self.hb(member_id, started=pairs(r.start))
            if not asked:
                return
        raise AssertionError("the handoff did not settle")

    def view(self, group_id: str = GROUP) -> HandoffGroupView:
        view = self.coord.group(group_id)
        assert isinstance(view, HandoffGroupView)
        return view

    def state(self) -> HandoffState:
        return self.view().state

    def owned(self, member_id: str) -> TPs:
        return pairs(self.view().members[member_id].owned)

    def assignment(self, member_id: str) -> TPs:
        return pairs(self.view().members[member_id].assignment)

    def rebuilt(self) -> GroupCoordinator:
        coord = GroupCoordinator(CONFIG, MemoryLog(list(self.log.entries)), self.now)
        return coord

    def transitions(self) -> list[tuple[str, str]]:
        return [(e.from_state, e.to_state) for e in self.events if isinstance(e, StateChanged)]


def t(*partitions: int) -> TPs:
    return tuple(("t", p) for p in partitions)


def stable_pair() -> HandoffContext:
    """a and b, Stable, a on t-0,1 and b on t-2,3."""
    ctx = HandoffContext()
    ctx.join("a")
    ctx.settle("a")
    ctx.join("b")
    ctx.settle("a", "b")
    assert ctx.state() is HandoffState.STABLE
    assert ctx.owned("a") == t(0, 1) and ctx.owned("b") == t(2, 3)
    return ctx


# -- the states and the protocol ---------------------------------------------------------------


def test_first_member_creates_the_group_and_is_granted_every_partition() -> None:
    ctx = HandoffContext()
    r = ctx.join("a")
    assert r.error_code == Errors.NONE
    assert (r.member_epoch, r.group_state) == (1, "Starting")
    assert pairs(r.start) == t(0, 1, 2, 3) and pairs(r.assignment) == t(0, 1, 2, 3)
    r = ctx.hb("a", started=t(0, 1, 2, 3))
    assert (r.group_state, r.start) == ("Stable", ())
    assert ctx.transitions() == [("Initial", "Starting"), ("Starting", "Stable")]


def test_a_joining_member_starts_only_after_the_old_owner_confirmed_its_close() -> None:
    ctx = HandoffContext()
    ctx.join("a")
    ctx.settle("a")
    r = ctx.join("b")
    assert (r.group_state, r.start, pairs(r.assignment)) == ("Closing", (), t(2, 3))
    r = ctx.hb("a")
    assert pairs(r.close) == t(2, 3) and pairs(r.assignment) == t(0, 1)
    # the old owner commits its positions (any generation: its member id is enough) ...
    commit = ctx.coord.handle(
        OffsetCommitRequest(
            group_id=GROUP,
            member_id="a",
            generation_id=r.member_epoch,
            offsets=(
                PartitionOffset(topic="t", partition=2, offset=10),
                PartitionOffset(topic="t", partition=3, offset=20),
            ),
        ),
        ctx.now,
    ).response
    assert commit is not None
    assert {p.error_code for p in commit.partitions} == {Errors.NONE}
    assert ctx.hb("b").start == ()  # still nothing to start before the close is confirmed
    # ... and confirms; only then is b granted them.
    r = ctx.hb("a", closed=t(2, 3))
    assert (r.group_state, r.close) == ("Starting", ())
    r = ctx.hb("b")
    assert pairs(r.start) == t(2, 3)
    ctx.hb("b", started=t(2, 3))
    assert ctx.state() is HandoffState.STABLE
    assert ctx.transitions()[-3:] == [
        ("Stable", "Closing"),
        ("Closing", "Starting"),
        ("Starting", "Stable"),
    ]
    assert ctx.coord.committed_offsets(GROUP)[("t", 2)].offset == 10


def test_a_leaving_member_releases_its_partitions_to_the_others_without_a_close() -> None:
    ctx = stable_pair()
    r = ctx.hb("b", -1)
    assert (r.error_code, r.member_epoch) == (Errors.NONE, -1)
    assert ctx.state() is HandoffState.STARTING
    assert pairs(ctx.hb("a").start) == t(2, 3)
    removed = [e for e in ctx.events if isinstance(e, MemberRemoved)]
    assert [(e.member_id, e.reason) for e in removed] == [("b", "left")]
    assert ctx.hb("b").error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_member_crashing_mid_handoff_counts_as_closed_and_the_group_replans() -> None:
    ctx = stable_pair()
    ctx.join("c")  # quotas 2, 1, 1: b must close t-3 for c
    assert ctx.state() is HandoffState.CLOSING
    assert pairs(ctx.hb("b").close) == t(3)
    # b crashes before confirming: a and c keep heartbeating, b's session expires.
    for _ in range(3):
        ctx.sleep(SESSION // 2)
        ctx.hb("a")
        ctx.hb("c")
    assert "b" not in ctx.view().members
    assert [e.reason for e in ctx.events if isinstance(e, MemberRemoved)] == ["session_timeout"]
    assert ctx.assignment("a") == t(0, 1) and ctx.assignment("c") == t(2, 3)
    assert ctx.state() is HandoffState.STARTING
    assert pairs(ctx.hb("c").start) == t(2, 3)
    ctx.settle("a", "c")
    assert ctx.state() is HandoffState.STABLE


def test_a_partition_granted_but_moved_before_its_start_is_closed_first() -> None:
    ctx = HandoffContext()
    ctx.join("a")
    ctx.settle("a")
    ctx.hb("a", -1)  # every partition released
    ctx.join("b")
    ctx.join("c")
    # b was granted everything (Starting); c's arrival re-plans before b confirmed.
    assert ctx.state() is HandoffState.CLOSING
    r = ctx.hb("b")
    assert r.close, "b may already consume what it was granted: it must close it first"
    assert ctx.hb("c").start == ()
    ctx.settle("b", "c")
    assert ctx.owned("b") == t(0, 1) and ctx.owned("c") == t(2, 3)


def test_a_slow_close_confirmation_holds_the_handoff_however_long_it_takes() -> None:
    ctx = HandoffContext()
    ctx.join("a")
    ctx.settle("a")
    ctx.join("b")
    for _ in range(20):
        ctx.sleep(SESSION // 2)
        assert pairs(ctx.hb("a").close) == t(2, 3)  # heartbeats without confirming
        assert ctx.hb("b").start == ()
    assert ctx.state() is HandoffState.CLOSING
    ctx.hb("a", closed=t(2))  # one at a time
    assert ctx.state() is HandoffState.CLOSING and ctx.hb("b").start == ()
    ctx.hb("a", closed=t(3))
    assert pairs(ctx.hb("b").start) == t(2, 3)


def test_confirmations_of_what_was_not_asked_are_ignored() -> None:
    ctx = stable_pair()
    records = len(ctx.log.entries)
    ctx.hb("a", closed=t(0, 2), started=t(3))
    assert ctx.owned("a") == t(0, 1) and ctx.owned("b") == t(2, 3)
    assert len(ctx.log.entries) == records  # nothing changed, nothing written


def test_a_known_member_joining_again_has_restarted_and_holds_nothing() -> None:
    ctx = stable_pair()
    r = ctx.join("b")
    assert pairs(r.assignment) == t(2, 3)
    assert ctx.state() is HandoffState.STARTING and pairs(r.start) == t(2, 3)


def test_a_topic_change_replans() -> None:
    ctx = HandoffContext(counts={"t": 2, "u": 2})
    ctx.join("a")
    ctx.settle("a")
    ctx.hb("a", topics=("t", "u"))
    ctx.settle("a")
    assert ctx.owned("a") == (("t", 0), ("t", 1), ("u", 0), ("u", 1))


def test_a_plan_waits_for_the_partition_count_of_every_subscribed_topic() -> None:
    ctx = HandoffContext(counts={})
    r = ctx.join("a")
    assert (r.group_state, r.start) == ("Initial", ())
    ctx.coord.set_topic_partitions("t", 2, ctx.now)
    assert pairs(ctx.hb("a").start) == t(0, 1)


def test_a_grown_topic_is_planned_and_a_shrunk_one_closed() -> None:
    ctx = stable_pair()
    ctx.coord.set_topic_partitions("t", 6, ctx.now)
    ctx.settle("a", "b")
    assert ctx.owned("a") + ctx.owned("b") == t(0, 1, 4, 2, 3, 5)
    ctx.coord.set_topic_partitions("t", 2, ctx.now)
    assert ctx.state() is HandoffState.CLOSING
    ctx.settle("a", "b")
    assert sorted(ctx.owned("a") + ctx.owned("b")) == list(t(0, 1))


# -- outages -------------------------------------------------------------------------------------


def test_while_the_partition_store_is_out_a_joining_member_gets_nothing_until_it_is_back() -> None:
    ctx = stable_pair()
    ctx.coord.set_partition_store_available(False, ctx.now)
    r = ctx.join("c")
    assert (r.group_state, r.assignment, r.start) == ("Stable", (), ())
    assert ctx.assignment("a") == t(0, 1) and ctx.assignment("b") == t(2, 3)
    ctx.coord.set_partition_store_available(True, ctx.now)
    assert ctx.state() is HandoffState.CLOSING
    ctx.settle("a", "b", "c")
    assert sorted(ctx.owned("a") + ctx.owned("b") + ctx.owned("c")) == list(t(0, 1, 2, 3))
    assert len(ctx.owned("c")) == 1


def test_the_facade_reports_each_switch_as_it_was_last_set() -> None:
    ctx = stable_pair()
    coord = ctx.coord
    assert (coord.partition_store_available, coord.discovery_available) == (True, True)
    coord.set_partition_store_available(False, ctx.now)
    assert (coord.partition_store_available, coord.discovery_available) == (False, True)
    coord.set_discovery_available(False, ctx.now)
    coord.set_partition_store_available(True, ctx.now)
    assert (coord.partition_store_available, coord.discovery_available) == (True, False)


def test_while_discovery_is_out_a_crashed_members_partitions_wait_for_it_to_come_back() -> None:
    ctx = stable_pair()
    ctx.coord.set_discovery_available(False, ctx.now)
    for _ in range(3):
        ctx.sleep(SESSION // 2)
        ctx.hb("a")
    assert "b" not in ctx.view().members
    assert ctx.assignment("a") == t(0, 1) and ctx.state() is HandoffState.STABLE
    ctx.coord.set_partition_store_available(False, ctx.now)
    ctx.coord.set_discovery_available(True, ctx.now)  # the store is still out
    assert ctx.assignment("a") == t(0, 1)
    ctx.coord.set_partition_store_available(True, ctx.now)
    assert pairs(ctx.hb("a").start) == t(2, 3)


def test_during_an_outage_the_handoff_in_progress_still_completes() -> None:
    ctx = HandoffContext()
    ctx.join("a")
    ctx.settle("a")
    ctx.join("b")
    ctx.coord.set_discovery_available(False, ctx.now)
    ctx.hb("a", closed=t(2, 3))
    ctx.settle("a", "b")
    assert ctx.owned("b") == t(2, 3) and ctx.state() is HandoffState.STABLE


# -- restart -------------------------------------------------------------------------------------


def restarted_in(state: HandoffState) -> HandoffContext:
    ctx = HandoffContext()
    if state is HandoffState.INITIAL:
        ctx.coord.set_partition_store_available(False, ctx.now)
        ctx.join("a")
        return ctx
    ctx.join("a")
    if state is HandoffState.STARTING:
        return ctx
    ctx.settle("a")
    if state is HandoffState.STABLE:
        return ctx
    ctx.join("b")
    return ctx


@pytest.mark.parametrize(
    "state",
    [HandoffState.INITIAL, HandoffState.STARTING, HandoffState.STABLE, HandoffState.CLOSING],
    ids=str,
)
def test_a_restart_rebuilds_the_group_in_every_state_and_the_handoff_goes_on(
    state: HandoffState,
) -> None:
    ctx = restarted_in(state)
    assert ctx.state() is state
    before = ctx.view()
    responses = {m: ctx.hb(m) for m in before.members}
    later = HandoffContext(MemoryLog(list(ctx.log.entries)), ctx.now, counts={})
    assert later.view() == before
    if state is HandoffState.INITIAL:  # the outage goes on across the restart
        later.coord.set_partition_store_available(False, later.now)
    later.coord.set_topic_partitions("t", 4, later.now)
    assert later.view() == before
    assert {m: later.hb(m) for m in before.members} == responses
    later.settle(*before.members)
    assert later.state() is (
        HandoffState.INITIAL if state is HandoffState.INITIAL else HandoffState.STABLE
    )


def test_after_a_restart_sessions_are_rearmed_and_a_silent_member_expires() -> None:
    ctx = stable_pair()
    later = HandoffContext(MemoryLog(list(ctx.log.entries)), ctx.now + 5_000)
    assert later.coord.next_deadline_ms() == later.now + SESSION
    later.sleep(SESSION // 2)
    later.hb("a")
    later.sleep(SESSION // 2)
    assert set(later.view().members) == {"a"}
    assert pairs(later.hb("a").start) == t(2, 3)


def test_a_refused_append_changes_nothing_and_answers_coordinator_not_available() -> None:
    log = FlakyLog()
    ctx = HandoffContext(log)
    ctx.join("a")
    ctx.settle("a")
    before = ctx.view()
    log.failing = True
    assert ctx.join("b").error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert ctx.hb("a", -1).error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert ctx.view() == before
    log.failing = False
    assert ctx.join("b").error_code == Errors.NONE


# -- group kinds, errors, listings, deletion ---------------------------------------------------


def test_classic_and_handoff_requests_do_not_mix() -> None:
    ctx = HandoffContext()
    ctx.join("a")
    join = ctx.coord.handle(
        JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=SESSION,
            rebalance_timeout_ms=SESSION,
            protocol_type="consumer",
            protocols=(Protocol(name="range"),),
        ),
        ctx.now,
    ).response
    assert join is not None and join.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.coord.trigger_rebalance(GROUP, ctx.now) == Errors.INCONSISTENT_GROUP_PROTOCOL
    ctx.coord.handle(
        JoinGroupRequest(
            group_id="classic",
            session_timeout_ms=SESSION,
            rebalance_timeout_ms=SESSION,
            protocol_type="consumer",
            protocols=(Protocol(name="range"),),
            require_known_member_id=False,
        ),
        ctx.now,
    )
    r = ctx.join("x", group_id="classic")
    assert r.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize(
    ("member_id", "epoch", "session", "code"),
    [
        ("", 0, SESSION, Errors.UNKNOWN_MEMBER_ID),
        ("ghost", 3, SESSION, Errors.UNKNOWN_MEMBER_ID),
        ("ghost", -1, SESSION, Errors.UNKNOWN_MEMBER_ID),
        ("a", 0, 1, Errors.INVALID_SESSION_TIMEOUT),
    ],
)
def test_bad_heartbeats_get_kafkas_error_codes(
    member_id: str, epoch: int, session: int, code: Errors
) -> None:
    ctx = HandoffContext()
    r = ctx.coord.handle(
        HandoffHeartbeatRequest(
            group_id=GROUP, member_id=member_id, member_epoch=epoch, session_timeout_ms=session
        ),
        0,
    ).response
    assert r is not None and r.error_code == code
    assert ctx.coord.group(GROUP) is None


def test_an_empty_group_id_is_invalid_and_bad_types_raise() -> None:
    ctx = HandoffContext()
    assert ctx.join("a", group_id="").error_code == Errors.INVALID_GROUP_ID
    with pytest.raises(TypeError, match=r"HandoffHeartbeatRequest\.topics"):
        HandoffHeartbeatRequest(
            group_id="g",
            member_id="a",
            member_epoch=0,
            session_timeout_ms=1,
            topics=["t"],  # type: ignore[arg-type]
        )


def test_describe_and_list_show_handoff_groups_with_their_state() -> None:
    ctx = stable_pair()
    ctx.join("c")
    described = ctx.coord.handle(DescribeGroupsRequest(group_ids=(GROUP,)), ctx.now).response
    assert described is not None
    (group,) = described.groups
    assert (group.group_state, group.protocol_type) == ("Closing", "handoff")
    assignments = {
        m.member_id: decode_assignment(m.member_assignment).assigned_partitions
        for m in group.members
    }
    assert assignments == {"a": t(0, 1), "b": t(2), "c": t(3)}
    listed = ctx.coord.handle(ListGroupsRequest(states_filter=("closing",)), ctx.now).response
    assert listed is not None
    assert [(g.group_id, g.protocol_type, g.group_state) for g in listed.groups] == [
        (GROUP, "handoff", "Closing")
    ]


def test_list_groups_gives_each_group_its_kind_as_its_type_and_filters_by_type() -> None:
    """KIP-848's type filter (ListGroups v5), case-insensitive as Kafka's `GroupType.parse`;
    a type no kind has matches no group, as Kafka's UNKNOWN."""
    ctx = stable_pair()
    ctx.coord.handle(
        OffsetCommitRequest(
            group_id="simple", offsets=(PartitionOffset(topic="t", partition=0, offset=1),)
        ),
        ctx.now,
    )

    def listed(*types: str) -> list[tuple[str, str]]:
        response = ctx.coord.handle(ListGroupsRequest(types_filter=types), ctx.now).response
        assert response is not None
        return [(g.group_id, g.group_type) for g in response.groups]

    both = [(GROUP, "handoff"), ("simple", "classic")]
    assert listed() == both
    assert listed("classic", "handoff") == both
    assert listed("classic") == [("simple", "classic")]
    assert listed("HANDOFF") == [(GROUP, "handoff")]
    assert listed("share") == []
    response = ctx.coord.handle(
        ListGroupsRequest(states_filter=("empty",), types_filter=("handoff", "classic")), ctx.now
    ).response
    assert response is not None
    assert [g.group_id for g in response.groups] == ["simple"]


def test_delete_groups_refuses_a_group_with_members_and_tombstones_an_empty_one() -> None:
    ctx = stable_pair()
    ctx.coord.handle(
        OffsetCommitRequest(
            group_id=GROUP,
            member_id="a",
            offsets=(PartitionOffset(topic="t", partition=0, offset=1),),
        ),
        ctx.now,
    )
    (result,) = delete_group(ctx)
    assert result.error_code == Errors.NON_EMPTY_GROUP
    ctx.hb("a", -1)
    ctx.hb("b", -1)
    (result,) = delete_group(ctx)
    assert result.error_code == Errors.NONE
    assert ctx.coord.group(GROUP) is None
    assert ctx.log.entries[-1] == (handoff_group_record(GROUP, _any_value())[0], None)
    assert ctx.rebuilt().group(GROUP) is None
    assert ctx.coord.committed_offsets(GROUP) == {}


def delete_group(ctx: HandoffContext) -> Any:
    response = ctx.coord.handle(DeleteGroupsRequest(group_ids=(GROUP,)), ctx.now).response
    assert response is not None
    return response.results


def _any_value() -> HandoffGroupValue:
    return HandoffGroupValue(state="Stable", epoch=1, state_timestamp=0)


def test_offsets_of_a_handoff_group_are_refused_to_strangers() -> None:
    ctx = stable_pair()
    r = ctx.coord.handle(
        OffsetCommitRequest(
            group_id=GROUP, offsets=(PartitionOffset(topic="t", partition=0, offset=1),)
        ),
        ctx.now,
    ).response
    assert r is not None and r.partitions[0].error_code == Errors.UNKNOWN_MEMBER_ID


# -- the plan ------------------------------------------------------------------------------------


def test_the_plan_is_balanced_sticky_and_deterministic() -> None:
    from coordinator_engine.handoff import HandoffMember

    def member(member_id: str, *held: int) -> HandoffMember:
        return HandoffMember(member_id, "", "", 1, ("t",), assignment=frozenset(t(*held)))

    members = {"b": member("b", 0, 1, 2, 3, 4), "a": member("a"), "c": member("c", 5)}
    result = plan(members, {"t": 6})
    assert {k: sorted(v) for k, v in result.items()} == {
        "a": list(t(2, 3)),
        "b": list(t(0, 1)),
        "c": list(t(4, 5)),
    }
    assert plan(dict(reversed(list(members.items()))), {"t": 6}) == result
    again = {k: member(k, *(p for _, p in v)) for k, v in result.items()}
    assert plan(again, {"t": 6}) == result  # a balanced plan is kept as it is


# -- records -------------------------------------------------------------------------------------


def test_the_handoff_record_round_trips_and_its_key_is_type_1004() -> None:
    value = HandoffGroupValue(
        state="Closing",
        epoch=7,
        state_timestamp=123,
        members=(
            HandoffMemberValue(
                member_id="a",
                client_id="c",
                client_host="/h",
                session_timeout=SESSION,
                topics=("t", "u"),
                assignment=t(0),
                owned=t(0, 1),
                to_start=(),
                to_close=t(1),
            ),
        ),
    )
    key, data = handoff_group_record("g", value)
    assert key == b"\x03\xec\x00\x01g"
    assert decode_key(key) == HandoffGroupKey(group="g")
    assert decode_handoff_group_value(data) == value
    assert encode_handoff_group_value(value) == data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x01", "unknown version 1"),
        (b"\x00\x00\x00\x06Stable\x00\x00\x00\x01", "state_timestamp: truncated"),
        (
            b"\x00\x00\x00\x06Stable" + bytes(4) + bytes(8) + b"\x7f\xff\xff\xff",
            "members: 2147483647 elements cannot fit",
        ),
        (b"\x00\x00\x00\x06Stable" + bytes(4) + bytes(8) + bytes(4) + b"\x00", "1 unexpected byte"),
    ],
)
def test_a_corrupt_handoff_value_names_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(CorruptRecordError, match=re.escape(message)) as info:
        decode_handoff_group_value(data)
    assert info.value.kind == "HandoffGroupValue"


# -- docs and events ------------------------------------------------------------------------------


def test_every_handoff_event_type_is_produced_and_round_trips_through_json() -> None:
    ctx = stable_pair()
    ctx.join("c")
    ctx.settle("a", "b", "c")
    ctx.hb("c", -1)
    seen = {e.type for e in ctx.events}
    assert set(HANDOFF_EVENT_TYPES) <= seen
    for event in ctx.events:
        data = json.loads(json.dumps(event.to_json()))
        assert event_from_json(data) == event
        schema = HANDOFF_EVENT_SCHEMAS.get(event.type)
        if schema is not None:
            assert set(data) == set(schema["properties"])


def test_a_partition_given_back_while_closing_is_closed_then_started_again() -> None:
    ctx = stable_pair()
    ctx.join("c")
    assert pairs(ctx.hb("b").close) == t(3)  # b stops t-3 at once ...
    ctx.hb("c", -1)  # ... and before it confirms, the plan gives t-3 back to b
    assert ctx.assignment("b") == t(2, 3)
    r = ctx.hb("b")
    assert (pairs(r.close), r.start) == (t(3), ())  # it may have stopped it: close first
    r = ctx.hb("b", closed=t(3))
    assert pairs(r.start) == t(3)
    ctx.hb("b", started=t(3))
    assert ctx.state() is HandoffState.STABLE and ctx.owned("b") == t(2, 3)


def test_cleanup_removes_a_handoff_group_without_members_once_its_offsets_expired() -> None:
    ctx = stable_pair()
    ctx.coord.handle(
        OffsetCommitRequest(
            group_id=GROUP,
            member_id="a",
            offsets=(PartitionOffset(topic="t", partition=0, offset=5),),
        ),
        ctx.now,
    )
    ctx.hb("a", -1)
    ctx.hb("b", -1)
    left_at = ctx.now
    assert ctx.coord.cleanup(left_at + CONFIG.offsets_retention_ms - 1).offsets_removed == 0
    result = ctx.coord.cleanup(left_at + CONFIG.offsets_retention_ms)
    assert (result.offsets_removed, result.groups_removed) == (1, 1)
    assert ctx.coord.group(GROUP) is None
    assert ctx.transitions()[-1] == ("Stable", "Dead")
    assert ctx.rebuilt().group(GROUP) is None


def test_a_handoff_group_of_a_partition_not_owned_gets_not_coordinator() -> None:
    from coordinator_engine import partition_for

    owned = frozenset({partition_for(GROUP)})
    config = CoordinatorConfig(group_min_session_timeout_ms=10, owned_partitions=owned)
    coord = GroupCoordinator(config)
    request = HandoffHeartbeatRequest(
        group_id="elsewhere-0", member_id="a", member_epoch=0, session_timeout_ms=SESSION
    )
    assert partition_for("elsewhere-0") not in owned
    response = coord.handle(request, 0).response
    assert response is not None and response.error_code == Errors.NOT_COORDINATOR


def test_the_public_package_exports_the_handoff_names() -> None:
    import coordinator_engine

    for name in ("HandoffHeartbeatRequest", "HandoffHeartbeatResponse", "HandoffState"):
        assert name in coordinator_engine.__all__


def test_the_switches_are_read_back_from_the_facade() -> None:
    coord = GroupCoordinator(CoordinatorConfig(), now_ms=0)
    assert coord.discovery_available and coord.partition_store_available
    coord.set_discovery_available(False, 10)
    coord.set_partition_store_available(False, 10)
    assert not coord.discovery_available and not coord.partition_store_available
    coord.set_discovery_available(True, 20)
    assert coord.discovery_available and not coord.partition_store_available
