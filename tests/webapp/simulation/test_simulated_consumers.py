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

from coordinator_engine import CoordinatorConfig, GroupState
from coordinator_engine.consumer_protocol import decode_assignment
from coordinator_engine.events import MemberRemoved
from tests.webapp.helpers import serving
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, WallClock
from webapp.simulation.consumer import Behaviour, ConsumerSpec
from webapp.simulation.manager import Simulation, SimulationError, spec_from_json

FAST = CoordinatorConfig(group_min_session_timeout_ms=100, group_initial_rebalance_delay_ms=0)
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
