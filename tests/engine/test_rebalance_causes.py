"""Rebalance causes are data: the state change that starts (or restarts) a rebalance carries
``cause``, a ``RebalanceCause`` value, and the member behind it, said by the engine where it
decides to rebalance; every other state change carries neither. One test per place the engine
decides, classic groups first, then handoff groups."""

from __future__ import annotations

from coordinator_engine import Errors, MemberIdentity, RebalanceCause
from coordinator_engine.events import StateChanged

from .harness import FOLLOWER_INSTANCE, Context, FlakyLog
from .test_handoff import HandoffContext, stable_pair

PREPARING = "PreparingRebalance"


def starts(events: list[object]) -> list[tuple[str, str | None, str | None]]:
    """(from state, cause, member) of every move into PreparingRebalance."""
    return [
        (e.from_state, e.cause, e.cause_member_id)
        for e in events
        if isinstance(e, StateChanged) and e.to_state == PREPARING
    ]


def test_only_moves_into_a_rebalance_carry_a_cause() -> None:
    ctx = Context()
    ctx.stable_group_of_one()
    for event in ctx.events_of(StateChanged):
        if event.to_state == PREPARING:
            assert event.cause is not None and event.reason
        else:
            assert (event.cause, event.cause_member_id) == (None, None), event


def test_a_new_member_joining_an_empty_group_then_a_stable_one() -> None:
    ctx = Context()
    leader, follower, _ = ctx.stable_group_of_two()
    joined = RebalanceCause.MEMBER_JOINED.value
    # The leader's own rejoin in generation 2 finds the group already rebalancing: no start.
    assert starts(ctx.events) == [("Empty", joined, leader), ("Stable", joined, follower)]


def test_a_leaving_member_and_an_admin_removal() -> None:
    ctx = Context()
    _, follower, _ = ctx.stable_group_of_two()
    ctx.events.clear()
    ctx.leave(MemberIdentity(member_id=follower))
    assert starts(ctx.events) == [("Stable", RebalanceCause.MEMBER_LEFT.value, follower)]

    ctx = Context()
    _, follower, _ = ctx.stable_group_of_two()
    ctx.events.clear()
    ctx.leave(MemberIdentity(member_id=follower, reason="member was removed by an admin"))
    assert starts(ctx.events) == [("Stable", RebalanceCause.ADMIN_ACTION.value, follower)]


def test_a_session_timeout_names_the_silent_member() -> None:
    ctx = Context()
    leader, follower, generation = ctx.stable_group_of_two()
    ctx.events.clear()
    for _ in range(4):  # the leader keeps heartbeating, the follower is silent
        ctx.sleep(200)
        ctx.heartbeat(leader, generation)
    assert starts(ctx.events) == [("Stable", RebalanceCause.SESSION_TIMEOUT.value, follower)]


def test_a_member_that_never_syncs_is_a_poll_timeout() -> None:
    ctx = Context()
    leader, follower, _generation = ctx.stable_group_of_two()
    ctx.join(leader)  # the leader rejoins: a new generation in which the follower is slow
    ctx.join(follower)
    ctx.events.clear()
    new_generation = ctx.group().generation_id
    ctx.sync(leader, new_generation, {leader: b"l", follower: b"f"})
    for _ in range(3):  # both heartbeat, the follower never syncs: past the rebalance timeout
        ctx.sleep(200)
        ctx.heartbeat(leader, new_generation)
        ctx.heartbeat(follower, new_generation)
    assert starts(ctx.events) == [("Stable", RebalanceCause.POLL_TIMEOUT.value, follower)]


def test_the_leader_rejoining_is_a_metadata_change() -> None:
    ctx = Context()
    leader, _follower, _generation = ctx.stable_group_of_two()
    ctx.events.clear()
    ctx.join(leader)
    assert starts(ctx.events) == [("Stable", RebalanceCause.METADATA_CHANGE.value, leader)]


def test_a_member_rejoining_with_other_protocols_is_a_metadata_change() -> None:
    ctx = Context()
    _leader, follower, _generation = ctx.stable_group_of_two()
    ctx.events.clear()
    ctx.join(follower, protocols=(("range", b"other topics"),))
    assert starts(ctx.events) == [("Stable", RebalanceCause.METADATA_CHANGE.value, follower)]


def test_a_static_member_replaced_with_other_protocols() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    ctx.events.clear()
    rejoined = ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=(("roundrobin", b"changed"),))
    assert rejoined.done is False or rejoined.response is not None
    (start,) = starts(ctx.events)
    assert start[:2] == ("Stable", RebalanceCause.STATIC_MEMBER_REPLACED.value)
    assert start[2] not in (None, result.follower_id)  # the new member id


def test_an_admin_triggered_rebalance_names_no_member() -> None:
    ctx = Context()
    ctx.stable_group_of_two()
    ctx.events.clear()
    assert ctx.coord.trigger_rebalance("groupId", ctx.now) == Errors.NONE
    assert starts(ctx.events) == [("Stable", RebalanceCause.ADMIN_ACTION.value, None)]


def test_an_assignment_the_log_refused_is_the_coordinator_s_cause() -> None:
    log = FlakyLog()
    ctx = Context(log=log)
    joined = ctx.join_now()
    ctx.events.clear()
    log.failing = True
    ctx.sync(joined.member_id, joined.generation_id, {joined.member_id: b"a"})
    assert starts(ctx.events) == [("CompletingRebalance", RebalanceCause.COORDINATOR.value, None)]


# -- handoff groups -------------------------------------------------------------------------


def handoff_starts(ctx: HandoffContext) -> list[tuple[str, str, str | None, str | None]]:
    """(from, to, cause, member) of every state change that carries a cause."""
    return [
        (e.from_state, e.to_state, e.cause, e.cause_member_id)
        for e in ctx.events
        if isinstance(e, StateChanged) and e.cause is not None
    ]


def test_handoff_a_join_a_leave_and_a_crash() -> None:
    ctx = stable_pair()
    joined = RebalanceCause.MEMBER_JOINED.value
    # a joined the new group (Initial → Starting), then b joined it Stable (→ Closing).
    assert handoff_starts(ctx) == [
        ("Initial", "Starting", joined, "a"),
        ("Stable", "Closing", joined, "b"),
    ]
    ctx.events.clear()
    ctx.hb("b", -1)  # b leaves
    assert handoff_starts(ctx) == [("Stable", "Starting", RebalanceCause.MEMBER_LEFT.value, "b")]

    ctx = stable_pair()
    ctx.events.clear()
    for _ in range(3):  # a keeps heartbeating, b is silent past its session
        ctx.sleep(400)
        ctx.hb("a")
    (start,) = handoff_starts(ctx)
    assert start[2:] == (RebalanceCause.SESSION_TIMEOUT.value, "b")


def test_handoff_partitions_changed_and_an_outage_ended_name_no_member() -> None:
    ctx = stable_pair()
    ctx.events.clear()
    ctx.coord.set_topic_partitions("t", 6, ctx.now)
    assert [s[2:] for s in handoff_starts(ctx)] == [(RebalanceCause.PARTITIONS_CHANGED.value, None)]
    ctx.settle("a", "b")
    ctx.events.clear()
    ctx.coord.set_partition_store_available(False, ctx.now)
    ctx.join("c")
    assert handoff_starts(ctx) == []  # no plan while the store is out
    ctx.coord.set_partition_store_available(True, ctx.now)
    assert [s[2:] for s in handoff_starts(ctx)] == [(RebalanceCause.OUTAGE_ENDED.value, None)]


def test_handoff_a_member_changing_its_topics_is_a_metadata_change() -> None:
    ctx = HandoffContext(counts={"t": 4, "u": 2})
    ctx.join("a")
    ctx.settle("a")
    ctx.events.clear()
    ctx.hb("a", topics=("t", "u"))
    assert [s[2:] for s in handoff_starts(ctx)] == [(RebalanceCause.METADATA_CHANGE.value, "a")]
