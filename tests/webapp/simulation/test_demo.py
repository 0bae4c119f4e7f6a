"""The live demo (`make run`): its three groups, the third a handoff group (seed 004)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

from coordinator_engine import CoordinatorConfig
from coordinator_engine.handoff import HandoffGroupView
from tests.webapp.helpers import serving
from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.simulation.consumer import Behaviour
from webapp.simulation.demo import GROUPS, TOPICS, demo_specs, run_demo
from webapp.simulation.manager import Simulation


def test_the_demo_has_a_handoff_group_beside_the_classic_ones() -> None:
    specs = demo_specs()
    assert GROUPS == ("orders-eager", "payments-coop", "inventory-handoff")
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
    assert all(
        spec.protocol == "classic" for _, spec in specs if spec.group_id != "inventory-handoff"
    )
    assert "inventory" in TOPICS


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_demo_starts_its_handoff_group_on_its_own_topic(
    make_runtime: Callable[..., CoordinatorRuntime],
) -> None:
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    async with serving(make_runtime(clock=WallClock(), config=config)) as runtime:
        simulation = Simulation(runtime)
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
        finally:
            demo.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await demo
            await simulation.stop_all()
