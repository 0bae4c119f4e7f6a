"""The report reads the real engine's events: a coordinator (tests/engine/harness.py) is driven
through one scenario per cause, and each rebalance it starts is attributed as the scenario
says. This guards the report's coupling to the engine's event order and reason texts."""

from __future__ import annotations

from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from coordinator_engine import MemberIdentity
from spark_tasks.rebalance_report import prepared_events, rebalances_of
from tests.engine.harness import REBALANCE_TIMEOUT, Context

from .scenarios import History


def joined_pair(ctx: Context, group: str, *, session: int = 500) -> tuple[str, str]:
    """Two dynamic members join an empty group together: (leader, follower); not yet synced."""
    leader_reply = ctx.join(group_id=group, session_timeout=session)
    follower_reply = ctx.join(group_id=group, session_timeout=session)
    while not (leader_reply.done and follower_reply.done):  # the initial delay, extended once
        ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
    leader, follower = leader_reply.response, follower_reply.response
    assert leader is not None and follower is not None
    return leader.member_id, follower.member_id


def stable_pair(ctx: Context, group: str) -> tuple[str, str]:
    leader, follower = joined_pair(ctx, group)
    generation = ctx.group(group).generation_id
    ctx.sync(leader, generation, {}, group_id=group)
    ctx.sync(follower, generation, group_id=group)
    return leader, follower


def a_member_joins_a_stable_group(ctx: Context) -> list[Row]:
    first, _ = ctx.stable_group_of_one(group_id="joins")
    second = ctx.join(group_id="joins")
    assert second.response is None  # parked until the first member rejoins
    ctx.join(first, group_id="joins")
    (_, second_id) = ctx.group("joins").members
    return [
        Row(group_id="joins", cause="member_joined", cause_member_id=first),
        Row(group_id="joins", cause="member_joined", cause_member_id=second_id),
    ]


def a_follower_leaves(ctx: Context) -> list[Row]:
    leader, follower = stable_pair(ctx, "leaves")
    ctx.leave(MemberIdentity(member_id=follower, reason="shutting down"), group_id="leaves")
    return [
        Row(group_id="leaves", cause="member_joined", cause_member_id=leader),
        Row(group_id="leaves", cause="member_left", cause_member_id=follower),
    ]


def a_follower_rejoins_with_other_metadata(ctx: Context) -> list[Row]:
    leader, follower = stable_pair(ctx, "changes")
    ctx.join(follower, group_id="changes", protocols=(("range", b"other topics"),))
    return [
        Row(group_id="changes", cause="member_joined", cause_member_id=leader),
        Row(group_id="changes", cause="metadata_change", cause_member_id=follower),
    ]


def an_admin_asks_for_a_rebalance(ctx: Context) -> list[Row]:
    alone, _ = ctx.stable_group_of_one(group_id="admin")
    ctx.coord.trigger_rebalance("admin", ctx.now)
    return [
        Row(group_id="admin", cause="member_joined", cause_member_id=alone),
        Row(group_id="admin", cause="admin_action", cause_member_id=None),
    ]


def a_static_member_returns_with_other_protocols(ctx: Context) -> list[Row]:
    both = (("range", b""), ("roundrobin", b""))
    first = ctx.join_now(group_id="static", instance_id="worker-1", protocols=both)
    ctx.sync(first.member_id, first.generation_id, {}, group_id="static")
    # Preferring roundrobin now changes the group's protocol, which takes a rebalance.
    ctx.join(group_id="static", instance_id="worker-1", protocols=both[::-1])
    (new_id,) = ctx.group("static").members
    assert new_id != first.member_id
    return [
        Row(group_id="static", cause="member_joined", cause_member_id=first.member_id),
        Row(group_id="static", cause="static_member_replaced", cause_member_id=new_id),
    ]


def a_static_member_is_removed_by_instance_id(ctx: Context) -> list[Row]:
    member = ctx.join_now(group_id="evicted", instance_id="worker-2")
    ctx.sync(member.member_id, member.generation_id, {}, group_id="evicted")
    ctx.leave(MemberIdentity(group_instance_id="worker-2"), group_id="evicted")
    return [
        Row(group_id="evicted", cause="member_joined", cause_member_id=member.member_id),
        Row(group_id="evicted", cause="admin_action", cause_member_id=member.member_id),
    ]


def a_follower_never_syncs(ctx: Context) -> list[Row]:
    # Sessions outlast the rebalance timeout, so the sync expiry is what removes the follower.
    leader, follower = joined_pair(ctx, "slow-sync", session=5_000)
    ctx.sync(leader, ctx.group("slow-sync").generation_id, {}, group_id="slow-sync")
    ctx.sleep(REBALANCE_TIMEOUT)
    return [
        Row(group_id="slow-sync", cause="member_joined", cause_member_id=leader),
        Row(group_id="slow-sync", cause="poll_timeout", cause_member_id=follower),
    ]


def a_member_stops_heartbeating(ctx: Context) -> list[Row]:
    member, _ = ctx.stable_group_of_one(group_id="times-out")
    ctx.sleep(5_000)
    return [
        Row(group_id="times-out", cause="member_joined", cause_member_id=member),
        Row(group_id="times-out", cause="session_timeout", cause_member_id=member),
    ]


SCENARIOS = (
    a_member_joins_a_stable_group,
    a_follower_leaves,
    a_follower_rejoins_with_other_metadata,
    an_admin_asks_for_a_rebalance,
    a_static_member_returns_with_other_protocols,
    a_static_member_is_removed_by_instance_id,
    a_follower_never_syncs,
    a_member_stops_heartbeating,
)


def test_every_rebalance_the_engine_starts_gets_the_cause_behind_it(spark: SparkSession) -> None:
    history = History()
    expected: list[Row] = []
    for scenario in SCENARIOS:
        ctx = Context()  # one coordinator each: one scenario's clock never times out another's
        expected += scenario(ctx)
        history.add(*ctx.events)
    rebalances = history.frame(spark).transform(prepared_events).transform(rebalances_of)
    assertDataFrameEqual(rebalances.select("group_id", "cause", "cause_member_id"), expected)
