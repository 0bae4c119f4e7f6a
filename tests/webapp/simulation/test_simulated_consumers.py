"""Simulated consumers really consume, on the real runtime and a wall clock: they reach Stable
with a complete, disjoint assignment, move positions through the topic registry's growing
logs, commit, and each behaviour triggers what it should."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio

from coordinator_engine import ConsumerGroupView, CoordinatorConfig, GroupState
from coordinator_engine.consumer_protocol import decode_assignment
from coordinator_engine.events import MemberRemoved
from coordinator_engine.handoff import HandoffGroupView, HandoffState
from tests.webapp.helpers import serving
from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.simulation.consumer import Behaviour, ConsumerSpec
from webapp.simulation.manager import Simulation, SimulationError, spec_from_json

FAST = CoordinatorConfig(
    group_min_session_timeout_ms=100,
    group_initial_rebalance_delay_ms=0,
    # Consumer groups (KIP-848): the coordinator's session and heartbeat interval.
    consumer_group_session_timeout_ms=1_000,
    consumer_group_min_session_timeout_ms=1_000,
    consumer_group_heartbeat_interval_ms=100,
    consumer_group_min_heartbeat_interval_ms=100,
)
QUICK = dict(
    session_timeout_ms=800,
    heartbeat_interval_ms=100,
    max_poll_interval_ms=600,
    auto_commit_interval_ms=100,
    metadata_max_age_ms=300,
    idle_poll_ms=20,
    record_processing_ms=0.01,
)


@pytest_asyncio.fixture
async def live(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime]
) -> AsyncIterator[tuple[CoordinatorRuntime, Simulation]]:
    async with serving(make_runtime(clock=WallClock(), config=FAST)) as runtime:
        await runtime.create_topic("orders", 6, 500.0)
        simulation = Simulation(runtime)
        yield runtime, simulation
        await simulation.stop_all()


def spec(**overrides: Any) -> ConsumerSpec:
    fields: dict[str, Any] = {"group_id": "g", "topics": ("orders",), **QUICK}
    fields.update(overrides)
    return ConsumerSpec(**fields)


async def until(predicate: Callable[[], bool], timeout_s: float = 8.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def stable_with(runtime: CoordinatorRuntime, group_id: str, members: int) -> bool:
    view = runtime.group(group_id)
    return (
        view is not None
        and view.state is GroupState.STABLE
        and len(view.members) == members
        and all(m.assignment for m in view.members.values())
    )


def owners(runtime: CoordinatorRuntime, group_id: str) -> dict[tuple[str, int], str]:
    view = runtime.group(group_id)
    assert view is not None
    out: dict[tuple[str, int], str] = {}
    for member in view.members.values():
        for tp in decode_assignment(member.assignment).assigned_partitions:
            assert tp not in out, f"{tp} owned twice"
            out[tp] = member.member_id
    return out


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_steady_consumers_share_every_partition_consume_and_commit(live: Any) -> None:
    runtime, simulation = live
    consumers = [simulation.spawn(spec(), f"c{i}") for i in range(3)]
    await until(lambda: stable_with(runtime, "g", 3))
    assert sorted(owners(runtime, "g")) == [("orders", p) for p in range(6)]
    await until(lambda: all(c.stats.consumed > 0 for c in consumers))
    await until(lambda: len(runtime.committed_offsets("g")) == 6)
    committed = runtime.committed_offsets("g")
    now = runtime.now_ms()
    for (topic, partition), value in committed.items():
        assert 0 < value.offset <= runtime.topics.log_end_offset(topic, partition, now)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_crashed_consumer_is_removed_on_session_timeout_and_its_partitions_move(
    live: Any,
) -> None:
    runtime, simulation = live
    removed: list[MemberRemoved] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if isinstance(item.event, MemberRemoved) else None
    )
    simulation.spawn(spec(), "steady")
    crasher = simulation.spawn(spec(behaviour=Behaviour.CRASH, period_ms=1_500), "crasher")
    await until(lambda: stable_with(runtime, "g", 2))
    await until(lambda: crasher.done)
    await until(lambda: stable_with(runtime, "g", 1))
    assert [e.reason for e in removed] == ["session_timeout"]
    assert len(set(owners(runtime, "g").values())) == 1
    assert len(owners(runtime, "g")) == 6


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_static_member_restart_causes_no_rebalance(live: Any) -> None:
    runtime, simulation = live
    simulation.spawn(spec(assignor="cooperative-sticky"), "steady")
    static = simulation.spawn(
        spec(
            assignor="cooperative-sticky",
            behaviour=Behaviour.STATIC_RESTART,
            group_instance_id="static-1",
            period_ms=1_000,
        ),
        "static",
    )
    await until(lambda: stable_with(runtime, "g", 2))
    view = runtime.group("g")
    assert view is not None
    generation, partitions_before = view.generation_id, owners(runtime, "g")
    await until(lambda: static.stats.restarts >= 2)
    await until(lambda: stable_with(runtime, "g", 2))
    view = runtime.group("g")
    assert view is not None
    assert view.generation_id == generation
    # Same partitions per owner (the static member's id changed, its partitions did not).
    assert sorted(partitions_before) == sorted(owners(runtime, "g"))


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_consumer_slower_than_max_poll_interval_leaves_and_rejoins(live: Any) -> None:
    runtime, simulation = live
    removed: list[MemberRemoved] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if isinstance(item.event, MemberRemoved) else None
    )
    simulation.spawn(spec(), "steady")
    slow = simulation.spawn(spec(behaviour=Behaviour.SLOW, period_ms=800), "slow")
    await until(lambda: stable_with(runtime, "g", 2))
    await until(lambda: any(e.reason == "left" for e in removed), timeout_s=10)
    await until(lambda: stable_with(runtime, "g", 2), timeout_s=10)
    assert slow.stats.history  # it did misbehave


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_more_partitions_make_the_members_rejoin_and_take_them(live: Any) -> None:
    runtime, simulation = live
    for i in range(2):
        simulation.spawn(spec(), f"c{i}")
    await until(lambda: stable_with(runtime, "g", 2))
    await runtime.update_topic("orders", partitions=9)
    await until(lambda: stable_with(runtime, "g", 2) and len(owners(runtime, "g")) == 9)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_flapping_and_graceful_leave_behaviours(live: Any) -> None:
    runtime, simulation = live
    simulation.spawn(spec(), "steady")
    flapper = simulation.spawn(spec(behaviour=Behaviour.FLAPPING, period_ms=700), "flapper")
    leaver = simulation.spawn(spec(behaviour=Behaviour.GRACEFUL_LEAVE, period_ms=700), "leaver")
    await until(lambda: flapper.stats.restarts >= 1 and leaver.done, timeout_s=10)
    await until(lambda: stable_with(runtime, "g", 2), timeout_s=10)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_consumer_the_coordinator_refuses_stops_and_says_why(live: Any) -> None:
    # As Kafka's consumer throws InconsistentGroupProtocolException from poll(): the group
    # speaks range, the newcomer only cooperative-sticky.
    runtime, simulation = live
    simulation.spawn(spec(), "range")
    await until(lambda: stable_with(runtime, "g", 1))
    refused = simulation.spawn(spec(assignor="cooperative-sticky"), "coop")
    await until(lambda: refused.done)
    shown = refused.to_json()
    assert shown["status"] == "failed"
    assert "INCONSISTENT_GROUP_PROTOCOL" in shown["error"]
    assert stable_with(runtime, "g", 1)


def test_a_spawn_request_with_bad_fields_names_them() -> None:
    with pytest.raises(SimulationError, match="behaviour must be one of"):
        spec_from_json({"group_id": "g", "topics": ["t"], "behaviour": "lazy"})
    with pytest.raises(SimulationError, match="unknown fields"):
        spec_from_json({"group_id": "g", "topics": ["t"], "colour": "red"})
    with pytest.raises(SimulationError, match="needs a group_instance_id"):
        spec_from_json({"group_id": "g", "topics": ["t"], "behaviour": "static_restart"})
    with pytest.raises(SimulationError, match="missing field 'topics'"):
        spec_from_json({"group_id": "g"})
    assert dataclasses.asdict(spec_from_json({"group_id": "g", "topics": ["t"]}))["topics"] == (
        "t",
    )


# -- handoff mode -------------------------------------------------------------------------------


def handoff_members(runtime: CoordinatorRuntime, group_id: str) -> dict[str, list[int]]:
    view = runtime.group(group_id)
    if not isinstance(view, HandoffGroupView):
        return {}
    return {m: [tp.partition for tp in v.owned] for m, v in view.members.items()}


def handoff_stable_with(runtime: CoordinatorRuntime, group_id: str, members: int) -> bool:
    view = runtime.group(group_id)
    return (
        isinstance(view, HandoffGroupView)
        and view.state is HandoffState.STABLE
        and len(view.members) == members
        and all(m.owned for m in view.members.values())
    )


async def watch_fetchers(consumers: list[Any], doubled: list[Any], stop: asyncio.Event) -> None:
    """Every 5 ms: no partition is in two consumers' fetchers (consumed by two at once)."""
    while not stop.is_set():
        seen: dict[Any, str] = {}
        for consumer in consumers:
            for tp in consumer.fetcher.assignment:
                if tp in seen:
                    doubled.append((tp, seen[tp], consumer.name))
                seen[tp] = consumer.name
        await asyncio.sleep(0.005)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_handoff_consumers_move_partitions_closed_and_committed_first(live: Any) -> None:
    runtime, simulation = live
    first = simulation.spawn(spec(protocol="handoff"), "h1")
    await until(lambda: handoff_stable_with(runtime, "g", 1))
    await until(lambda: first.stats.consumed > 0)
    doubled: list[Any] = []
    stop = asyncio.Event()
    consumers = [first]
    watcher = asyncio.create_task(watch_fetchers(consumers, doubled, stop))
    consumers.append(simulation.spawn(spec(protocol="handoff"), "h2"))
    await until(lambda: handoff_stable_with(runtime, "g", 2))
    await until(lambda: all(c.stats.consumed > 0 for c in consumers))
    stop.set()
    await watcher
    assert doubled == []
    owned = handoff_members(runtime, "g")
    assert sorted(p for parts in owned.values() for p in parts) == list(range(6))
    assert all(len(parts) == 3 for parts in owned.values())
    # The moved partitions were committed by h1 when it closed them.
    moved = {("orders", p) for p in owned[consumers[1].driver.client.member_id]}
    committed = runtime.committed_offsets("g")
    assert moved <= set(committed) and all(committed[tp].offset > 0 for tp in moved)
    shown = consumers[1].to_json()
    assert shown["spec"]["protocol"] == "handoff"
    assert sorted(tuple(tp) for tp in shown["assignment"]) == sorted(moved)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_slow_close_holds_the_handoff_group_in_closing(live: Any) -> None:
    runtime, simulation = live
    simulation.spawn(spec(protocol="handoff", behaviour=Behaviour.SLOW_CLOSE, period_ms=1500), "s")
    await until(lambda: handoff_stable_with(runtime, "g", 1))
    simulation.spawn(spec(protocol="handoff"), "n")
    await until(lambda: getattr(runtime.group("g"), "state", None) is HandoffState.CLOSING)
    closing_since = asyncio.get_running_loop().time()
    await until(lambda: handoff_stable_with(runtime, "g", 2))
    assert asyncio.get_running_loop().time() - closing_since > 1.0


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_killed_handoff_consumer_is_removed_at_once_by_the_discovery(live: Any) -> None:
    runtime, simulation = live
    removed: list[MemberRemoved] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if isinstance(item.event, MemberRemoved) else None
    )
    simulation.spawn(spec(protocol="handoff", session_timeout_ms=30_000), "a")
    simulation.spawn(spec(protocol="handoff", session_timeout_ms=30_000), "b")
    await until(lambda: handoff_stable_with(runtime, "g", 2))
    await simulation.act("b", "kill")
    # Its session (30 s) is far away: the discovery removed it.
    assert len(handoff_members(runtime, "g")) == 1
    assert [e.reason for e in removed] == ["left"]
    await until(lambda: handoff_members(runtime, "g") and handoff_stable_with(runtime, "g", 1))
    assert sorted(next(iter(handoff_members(runtime, "g").values()))) == list(range(6))


def test_a_handoff_spawn_request_names_what_does_not_apply() -> None:
    with pytest.raises(SimulationError, match="protocol must be one of classic, handoff, consumer"):
        spec_from_json({"group_id": "g", "topics": ["t"], "protocol": "eager"})
    with pytest.raises(SimulationError, match="'slow' does not apply to protocol 'handoff'"):
        spec_from_json(
            {"group_id": "g", "topics": ["t"], "protocol": "handoff", "behaviour": "slow"}
        )
    with pytest.raises(SimulationError, match="'static_restart' does not apply"):
        spec_from_json(
            {"group_id": "g", "topics": ["t"], "protocol": "handoff", "behaviour": "static_restart"}
        )
    with pytest.raises(SimulationError, match="'slow_close' does not apply to protocol 'classic'"):
        spec_from_json({"group_id": "g", "topics": ["t"], "behaviour": "slow_close"})
    made = spec_from_json({"group_id": "g", "topics": ["t"], "protocol": "handoff"})
    assert made.protocol == "handoff" and made.to_json()["protocol"] == "handoff"


# -- consumer groups (KIP-848) -----------------------------------------------------------------


def consumer_owners(runtime: CoordinatorRuntime, group_id: str) -> dict[str, list[int]]:
    view = runtime.group(group_id)
    if not isinstance(view, ConsumerGroupView):
        return {}
    return {
        m.member_id: sorted(p for parts in m.assigned.values() for p in parts)
        for m in view.members.values()
    }


def consumer_stable_with(runtime: CoordinatorRuntime, group_id: str, members: int) -> bool:
    view = runtime.group(group_id)
    return (
        isinstance(view, ConsumerGroupView)
        and view.state.value == "Stable"
        and len(view.members) == members
        and all(m.assigned for m in view.members.values())
    )


def removals(runtime: CoordinatorRuntime) -> list[MemberRemoved]:
    removed: list[MemberRemoved] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if isinstance(item.event, MemberRemoved) else None
    )
    return removed


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_consumer_protocol_members_share_every_partition_without_consuming_one_twice(
    live: Any,
) -> None:
    runtime, simulation = live
    first = simulation.spawn(spec(protocol="consumer", assignor="uniform"), "k1")
    await until(lambda: consumer_stable_with(runtime, "g", 1))
    await until(lambda: first.stats.consumed > 0)
    doubled: list[Any] = []
    stop = asyncio.Event()
    consumers = [first]
    watcher = asyncio.create_task(watch_fetchers(consumers, doubled, stop))
    consumers.append(simulation.spawn(spec(protocol="consumer", assignor="uniform"), "k2"))
    await until(lambda: consumer_stable_with(runtime, "g", 2))
    await until(lambda: all(c.stats.consumed > 0 for c in consumers))
    stop.set()
    await watcher
    assert doubled == []
    owned = consumer_owners(runtime, "g")
    assert sorted(p for parts in owned.values() for p in parts) == list(range(6))
    assert sorted(len(parts) for parts in owned.values()) == [3, 3]
    # The second starts each partition it took where the first committed it on revoking it.
    committed = runtime.committed_offsets("g")
    assert len(committed) == 6 and all(value.offset > 0 for value in committed.values())
    shown = consumers[1].to_json()
    assert shown["spec"]["protocol"] == "consumer" and shown["state"] == "STABLE"
    assert shown["generation"] >= 2 and len(shown["assignment"]) == 3


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_consumer_slow_to_revoke_is_fenced_at_its_rebalance_timeout_and_rejoins(
    live: Any,
) -> None:
    runtime, simulation = live
    removed = removals(runtime)
    slow = simulation.spawn(spec(protocol="consumer", behaviour=Behaviour.SLOW_REVOKE), "slow")
    await until(lambda: consumer_stable_with(runtime, "g", 1))
    simulation.spawn(spec(protocol="consumer"), "other")
    reconciling_since = asyncio.get_running_loop().time()
    await until(lambda: any(e.reason == "rebalance_timeout" for e in removed), timeout_s=10)
    # Held in UNREVOKED for its whole rebalance timeout (max_poll_interval_ms, 600 ms).
    assert asyncio.get_running_loop().time() - reconciling_since > 0.5
    assert [e.member_id for e in removed] == [slow.driver.client.member_id]
    # Fenced, it lost everything and joined again under the same id: both share the topic.
    await until(lambda: consumer_stable_with(runtime, "g", 2), timeout_s=10)
    assert any("PartitionsLost" in line for line in slow.stats.history)
    assert slow.stats.status == "running" and slow.driver.client.member_id in consumer_owners(
        runtime, "g"
    )


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_consumer_protocol_static_restart_leaves_with_minus_two_and_bumps_no_epoch(
    live: Any,
) -> None:
    runtime, simulation = live
    simulation.spawn(spec(protocol="consumer"), "steady")
    static = simulation.spawn(
        spec(
            protocol="consumer",
            behaviour=Behaviour.STATIC_RESTART,
            group_instance_id="static-1",
            period_ms=1_000,
        ),
        "static",
    )
    await until(lambda: consumer_stable_with(runtime, "g", 2))
    view = runtime.group("g")
    assert isinstance(view, ConsumerGroupView)
    epoch, before = view.group_epoch, sorted(consumer_owners(runtime, "g").values())
    await until(lambda: static.stats.restarts >= 2, timeout_s=10)
    await until(lambda: consumer_stable_with(runtime, "g", 2))
    view = runtime.group("g")
    assert isinstance(view, ConsumerGroupView)
    assert view.group_epoch == epoch
    assert sorted(consumer_owners(runtime, "g").values()) == before
    assert static.stats.error is None


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_consumer_protocol_crash_flapping_slow_and_graceful_leave(live: Any) -> None:
    runtime, simulation = live
    removed = removals(runtime)
    simulation.spawn(spec(protocol="consumer"), "steady")
    # The crasher's rebalance timeout (its max.poll.interval.ms) lies far beyond the session:
    # should it die with a revocation pending (the group still settling, as on a busy machine),
    # the session still runs out first; with QUICK's 600 ms the rebalance timeout would, and
    # the coordinator would fence it for that instead.
    crasher = simulation.spawn(
        spec(
            protocol="consumer",
            behaviour=Behaviour.CRASH,
            period_ms=700,
            max_poll_interval_ms=5_000,
        ),
        "crasher",
    )
    flapper = simulation.spawn(
        spec(protocol="consumer", behaviour=Behaviour.FLAPPING, period_ms=700), "flapper"
    )
    slow = simulation.spawn(
        spec(protocol="consumer", behaviour=Behaviour.SLOW, period_ms=800), "slow"
    )
    leaver = simulation.spawn(
        spec(protocol="consumer", behaviour=Behaviour.GRACEFUL_LEAVE, period_ms=700), "leaver"
    )
    await until(lambda: crasher.done and leaver.done and flapper.stats.restarts >= 1, 10)
    await until(lambda: any(e.reason == "session_timeout" for e in removed), timeout_s=10)
    await until(lambda: any("slower than max.poll" in h for h in slow.stats.history), 10)
    await until(lambda: consumer_stable_with(runtime, "g", 3), timeout_s=10)
    reasons = {e.reason for e in removed}
    assert {"left", "session_timeout"} <= reasons
    assert sorted(p for parts in consumer_owners(runtime, "g").values() for p in parts) == list(
        range(6)
    )


def test_a_consumer_protocol_spawn_request_names_what_does_not_apply() -> None:
    with pytest.raises(SimulationError, match="'slow_revoke' does not apply to protocol 'classic'"):
        spec_from_json({"group_id": "g", "topics": ["t"], "behaviour": "slow_revoke"})
    with pytest.raises(SimulationError, match="'slow_close' does not apply to protocol 'consumer'"):
        spec_from_json(
            {"group_id": "g", "topics": ["t"], "protocol": "consumer", "behaviour": "slow_close"}
        )
    with pytest.raises(
        SimulationError,
        match=r"'cooperative-sticky' does not apply to protocol 'consumer'.*uniform, range",
    ):
        spec_from_json(
            {
                "group_id": "g",
                "topics": ["t"],
                "protocol": "consumer",
                "assignor": "cooperative-sticky",
            }
        )
    made = spec_from_json(
        {"group_id": "g", "topics": ["t"], "protocol": "consumer", "group_instance_id": "i"}
    )
    assert made.protocol == "consumer" and made.to_json()["protocol"] == "consumer"
    assert made.consumer_protocol_config("c", 45_000).server_assignor == "range"
