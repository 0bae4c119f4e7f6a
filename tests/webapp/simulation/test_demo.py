"""The live demo (`make run`): its four groups, the third a handoff group, the fourth
a consumer group (KIP-848) on the topic of the first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from coordinator_engine import ConsumerGroupView, CoordinatorConfig
from coordinator_engine.handoff import HandoffGroupView
from tests.webapp.helpers import serving
from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.simulation.consumer import Behaviour
from webapp.simulation.demo import GROUPS, TOPICS, demo_specs, run_demo
from webapp.simulation.manager import Simulation


def test_the_demo_has_a_handoff_group_and_a_consumer_group_beside_the_classic_ones() -> None:
    specs = demo_specs()
    assert GROUPS == ("orders-eager", "payments-coop", "inventory-handoff", "orders-consumer")
    assert {spec.group_id for _, spec in specs} == set(GROUPS)
    assert len({name for name, _ in specs}) == len(specs)
    handoff = {name: spec for name, spec in specs if spec.group_id == "inventory-handoff"}
    assert all(spec.protocol == "handoff" for spec in handoff.values())
    assert all(spec.topics == ("inventory",) for spec in handoff.values())
    assert {spec.behaviour for spec in handoff.values()} == {
        Behaviour.STEADY,
        Behaviour.SLOW_CLOSE,
        Behaviour.FLAPPING,
        Behaviour.CRASH,
    }
    consumer = {name: spec for name, spec in specs if spec.group_id == "orders-consumer"}
    assert all(spec.protocol == "consumer" for spec in consumer.values())
    assert all(spec.topics == ("orders",) for spec in consumer.values())
    # orders-eager's churn, payments-coop's static restart, and a member slow to revoke.
    eager = {spec.behaviour for _, spec in specs if spec.group_id == "orders-eager"}
    assert eager < {spec.behaviour for spec in consumer.values()}
    assert {spec.behaviour for spec in consumer.values()} - eager == {
        Behaviour.STATIC_RESTART,
        Behaviour.SLOW_REVOKE,
    }
    assert all(
        spec.protocol == "classic"
        for _, spec in specs
        if spec.group_id in ("orders-eager", "payments-coop")
    )
    assert "inventory" in TOPICS


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_demo_starts_its_handoff_group_and_its_consumer_group_rebalancing(
    make_runtime: Callable[..., CoordinatorRuntime],
) -> None:
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    async with serving(make_runtime(clock=WallClock(), config=config)) as runtime:
        simulation = Simulation(runtime)
        moves: list[tuple[str, str]] = []
        runtime.add_listener(
            lambda item: (
                moves.append((item.event.from_state, item.event.to_state))
                if item.event.type == "StateChanged" and item.event.group_id == "orders-consumer"
                else None
            )
        )
        demo = asyncio.create_task(run_demo(runtime, simulation))
        try:
            deadline = asyncio.get_running_loop().time() + 15
            while True:
                view = runtime.group("inventory-handoff")
                if isinstance(view, HandoffGroupView) and len(view.members) == 4:
                    break
                assert asyncio.get_running_loop().time() < deadline, "no handoff group of 4"
                await asyncio.sleep(0.05)
            assert runtime.topics.get("inventory") is not None
            assert {m.client_host for m in view.members.values()} == {"simulated"}
            assert set(GROUPS) <= set(runtime.group_ids())

            # The consumer group: its seven members joined, each join bumping the epoch, and
            # it is reconciling them (the coordinator's 5 s heartbeats set its pace).
            consumer = runtime.group("orders-consumer")
            assert isinstance(consumer, ConsumerGroupView)
            while len(consumer.members) < 7 or not any(to == "Reconciling" for _, to in moves):
                assert asyncio.get_running_loop().time() < deadline + 15, (consumer, moves)
                await asyncio.sleep(0.05)
                consumer = runtime.group("orders-consumer")
                assert isinstance(consumer, ConsumerGroupView)
            assert consumer.group_epoch >= 7
            assert {m.client_host for m in consumer.members.values()} == {"simulated"}
            assert moves[0] == ("Empty", "Stable")
        finally:
            demo.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await demo
            await simulation.stop_all()
