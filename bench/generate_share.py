"""Benchmark: where generate_history's CPU goes, and how much of it is the engine's own.

    .venv/bin/python bench/generate_share.py [--events N] [--seed S]

``manage.py generate_history`` drives the real engine (``GroupCoordinator``) with simulated
members. Its speed has two parts: the engine answering the members' requests, which any
generator of this history must pay, and the simulation around it (the members, virtual time,
the rows). This runs ``webapp.simulation.history.generate_history`` in one process (``jobs=1``,
default 200,000 events into a temporary directory) with ``GroupCoordinator.handle`` wrapped in
a timer, and prints the process's CPU per event, the engine's share, and per request type its
calls, µs per call and µs per event. The wrapper's own cost (two clock reads per call, about
0.1 µs each) is counted in the engine's time.

The engine's µs per event is a floor for the generator on this machine: with ``jobs=2`` the
two coordinators run on two cores at best, so ``2 / (engine µs per event)`` is the most events
per second any simulation around this engine could reach here. There is no peer. The last line
is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events (default 200,000)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    args = parser.parse_args()

    from coordinator_engine import coordinator
    from webapp.simulation.history import generate_history

    handle = coordinator.GroupCoordinator.handle
    spent: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    clock = time.perf_counter

    def timed_handle(self: Any, request: Any, *rest: Any, **named: Any) -> Any:
        began = clock()
        try:
            return handle(self, request, *rest, **named)
        finally:
            figures = spent[type(request).__name__]
            figures[0] += clock() - began
            figures[1] += 1

    coordinator.GroupCoordinator.handle = timed_handle  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="generate-share-") as scratch:
        cpu_before = time.process_time()
        generated = generate_history(Path(scratch) / "history", args.events, seed=args.seed, jobs=1)
        cpu = time.process_time() - cpu_before
    events = generated.events
    engine = sum(seconds for seconds, _ in spent.values())

    def per_event(seconds: float) -> float:
        return seconds / events * 1e6

    print(f"\ngenerate_history, {events:,} events, seed {args.seed}, one process\n")
    print(f"CPU {cpu:.1f} s: {per_event(cpu):.1f} µs per event, of which the engine's handle()")
    print(f"{engine:.1f} s ({engine / cpu:.0%}): {per_event(engine):.1f} µs per event")
    print(f"most events/s on two cores with this engine: {2 / (engine / events):,.0f}\n")
    print("| request | calls | µs per call | µs per event |")
    print("|---|---|---|---|")
    rows = sorted(spent.items(), key=lambda item: -item[1][0])
    for name, (seconds, calls) in rows:
        print(
            f"| {name} | {int(calls):,} | {seconds / calls * 1e6:.1f} | {per_event(seconds):.1f} |"
        )
    print(
        json.dumps(
            {
                "events": events,
                "seed": args.seed,
                "cpu_s": cpu,
                "cpu_us_per_event": per_event(cpu),
                "engine_s": engine,
                "engine_us_per_event": per_event(engine),
                "engine_bound_events_per_s_two_cores": 2 / (engine / events),
                "requests": {
                    name: {"calls": int(calls), "seconds": seconds}
                    for name, (seconds, calls) in rows
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
