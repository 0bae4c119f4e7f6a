"""The simulated consumers of this process: spawn, pause, resume, stop, kill, list.

One `Simulation` per coordinator runtime (`simulation_for(runtime)`); the JSON API and the demo
use it. Names are unique and stable (`<group>-<behaviour>-<n>`), so a person can follow one.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from webapp.runtime.api import RuntimeAPI

from .consumer import Behaviour, ConsumerSpec, SimulatedConsumer

ACTIONS = ("pause", "resume", "stop", "kill")


class SimulationError(ValueError):
    """An action the simulation cannot do; the message says why."""


class Simulation:
    def __init__(self, runtime: RuntimeAPI) -> None:
        self.runtime = runtime
        self.consumers: dict[str, SimulatedConsumer] = {}
        self._numbers = itertools.count(1)

    def spawn(self, spec: ConsumerSpec, name: str | None = None) -> SimulatedConsumer:
        if name is None:
            name = f"{spec.group_id}-{spec.behaviour.value}-{next(self._numbers)}"
        if name in self.consumers and not self.consumers[name].done:
            raise SimulationError(f"a simulated consumer named {name!r} is running")
        for topic in spec.topics:
            if self.runtime.topics.get(topic) is None:
                raise SimulationError(f"no topic {topic!r}: create it first")
        consumer = SimulatedConsumer(self.runtime, spec, name)
        self.consumers[name] = consumer
        consumer.start()
        return consumer

    def get(self, name: str) -> SimulatedConsumer:
        try:
            return self.consumers[name]
        except KeyError:
            raise SimulationError(f"no simulated consumer named {name!r}") from None

    async def act(self, name: str, action: str) -> SimulatedConsumer:
        consumer = self.get(name)
        if action == "pause":
            consumer.paused = True
        elif action == "resume":
            consumer.paused = False
        elif action == "stop":
            await consumer.stop(graceful=True)
        elif action == "kill":
            await consumer.stop(graceful=False)
        else:
            raise SimulationError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        return consumer

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for _, c in sorted(self.consumers.items())]

    async def stop_all(self) -> None:
        """Close every running consumer (commit + LeaveGroup), all at once."""
        running = [c for c in self.consumers.values() if not c.done]
        await asyncio.gather(*(c.stop(graceful=True) for c in running))


def spec_from_json(data: Any) -> ConsumerSpec:
    """A ConsumerSpec from the API's JSON; SimulationError names what is wrong."""
    if not isinstance(data, dict):
        raise SimulationError("the body must be a JSON object")
    fields = dict(data)
    try:
        topics = fields.pop("topics")
        group_id = fields.pop("group_id")
    except KeyError as exc:
        raise SimulationError(f"missing field {exc.args[0]!r}") from None
    if not isinstance(group_id, str) or not group_id:
        raise SimulationError("group_id must be a non-empty string")
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise SimulationError("topics must be a list of topic names")
    if "behaviour" in fields:
        try:
            fields["behaviour"] = Behaviour(fields["behaviour"])
        except ValueError:
            known = ", ".join(b.value for b in Behaviour)
            raise SimulationError(f"behaviour must be one of {known}") from None
    allowed = set(ConsumerSpec.__dataclass_fields__) - {"group_id", "topics"}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise SimulationError(f"unknown fields {unknown}")
    try:
        return ConsumerSpec(group_id=group_id, topics=tuple(topics), **fields)
    except (TypeError, ValueError) as exc:
        raise SimulationError(str(exc)) from None


_simulations: dict[int, Simulation] = {}


def simulation_for(runtime: RuntimeAPI) -> Simulation:
    """The simulation of a runtime (created on first use)."""
    key = id(runtime)
    simulation = _simulations.get(key)
    if simulation is None or simulation.runtime is not runtime:
        simulation = _simulations[key] = Simulation(runtime)
    return simulation
