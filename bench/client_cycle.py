"""Benchmark: the consumer client's hot path (heartbeats, auto-commits, their answers), against
the engine, in virtual time, old tree against new.

    .venv/bin/python bench/client_cycle.py [--members N] [--seconds S] [--repeat R] [--peer DIR]

``GROUPS`` (4) groups of ``--members`` (default 20) ``GroupClient``s each (range and
cooperative-sticky, auto-commit every 5 s of virtual time, heartbeats every 3 s) join a
``GroupCoordinator`` and then run ``--seconds`` (default 3,600) virtual seconds of steady state.
The host is the smallest one the sans-IO API allows: at each client's ``next_deadline_ms()`` it
calls ``poll``, sends what ``outgoing`` returns to the engine (FindCoordinator and Metadata it
answers itself), feeds the answers to ``receive`` until ``outgoing`` is empty, drains
``events`` and records one consumed offset per owned partition. Only the steady state is timed.

It prints, per tree, the best and median of ``--repeat`` runs (default 3, the trees
interleaved) of: client cycles per second, µs per cycle, and the share of the time spent in the
engine's ``handle`` (which the client cannot make faster). ``--peer DIR`` runs the same
measurement in another checkout (a ``git worktree`` of an older commit, say) in a subprocess,
so both sides run the same host code. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _trees import run_json

GROUPS = (
    ("bench-range", ("range",)),
    ("bench-coop", ("cooperative-sticky",)),
    ("bench-range-2", ("range",)),
    ("bench-coop-2", ("cooperative-sticky",)),
)
TOPICS = {"orders": 24, "payments": 12}


def measure(members: int, seconds: int) -> dict[str, Any]:
    """One run in this process, over whatever ``coordinator_engine`` is first on the path."""
    from coordinator_engine import CoordinatorConfig, GroupCoordinator
    from coordinator_engine.client import ConsumerConfig, GroupClient, MemberState
    from coordinator_engine.cluster import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        MetadataRequest,
        MetadataResponse,
        TopicMetadata,
    )

    coordinator = GroupCoordinator(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    found = FindCoordinatorResponse(error_code=0, node_id=0, host="localhost", port=9092)
    metadata = MetadataResponse(
        topics=tuple(
            TopicMetadata(name=name, error_code=0, partitions=count)
            for name, count in TOPICS.items()
        )
    )
    engine_s = 0.0
    clock = time.perf_counter
    now = 0
    clients = [
        GroupClient(
            ConsumerConfig(
                group_id,
                tuple(TOPICS),
                assignors,
                client_id=f"{group_id}-{n}",
                auto_commit_interval_ms=5000,
            ),
            now_ms=0,
        )
        for group_id, assignors in GROUPS
        for n in range(members)
    ]
    parked: list[tuple[Any, Any, Any]] = []

    def drive(client: Any, now: int) -> None:
        nonlocal engine_s
        client.poll(now)
        requests = client.outgoing(now)
        while requests:
            for request in requests:
                if type(request) is FindCoordinatorRequest:
                    client.receive(request, found, now)
                elif type(request) is MetadataRequest:
                    client.receive(request, metadata, now)
                else:
                    began = clock()
                    reply = coordinator.handle(request, now)
                    engine_s += clock() - began
                    if reply.done:
                        client.receive(request, reply.response, now)
                    else:
                        reply.add_done_callback(
                            lambda response, c=client, r=request: parked.append((c, r, response))
                        )
            requests = client.outgoing(now)
        client.events()
        for topic, partition in client.assignment:
            client.record_consumed(topic, partition, now // 10 + partition)

    due_of = [0] * len(clients)
    agenda = [(0, i) for i in range(len(clients))]

    def plan(index: int) -> None:
        due = clients[index].next_deadline_ms()
        due = now + 100 if due is None else max(due, now)
        if due != due_of[index]:
            due_of[index] = due
            heapq.heappush(agenda, (due, index))

    def run_until(end: int) -> int:
        """Drive the clients and the engine up to ``end``; the cycles run."""
        nonlocal now
        cycles = 0
        while agenda and agenda[0][0] <= end:
            deadline = coordinator.next_deadline_ms()
            if deadline is not None and deadline < agenda[0][0]:
                now = max(now, deadline)
                coordinator.advance(now)
            else:
                due, index = heapq.heappop(agenda)
                if due != due_of[index]:
                    continue  # superseded
                now = max(now, due)
                due_of[index] = -1
                drive(clients[index], now)
                cycles += 1
                plan(index)
            while parked:
                client, request, response = parked.pop(0)
                client.receive(request, response, now)
                drive(client, now)
                plan(clients.index(client))
        return cycles

    # Joining: until every member is Stable (not timed).
    end = 0
    while not all(c.state is MemberState.STABLE for c in clients):
        end += 1000
        run_until(end)
        if end > 600_000:
            raise RuntimeError("the members did not settle")
    engine_s = 0.0
    cpu = time.process_time()
    began = clock()
    cycles = run_until(end + seconds * 1000)
    wall = clock() - began
    cpu = time.process_time() - cpu
    return {"cycles": cycles, "wall_s": wall, "cpu_s": cpu, "engine_s": engine_s}


def run_in(tree: Path, members: int, seconds: int) -> dict[str, Any]:
    """``measure`` in a subprocess whose path starts at ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--one", f"--members={members}", f"--seconds={seconds}"]
    result: dict[str, Any] = run_json(command, tree, env)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=20, help="members per group (20)")
    parser.add_argument("--seconds", type=int, default=3600, help="virtual seconds (3,600)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tree (3)")
    parser.add_argument("--peer", type=Path, help="another checkout to measure alongside")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.members, args.seconds)))
        return 0
    trees = {"this": Path(__file__).resolve().parents[1]}
    if args.peer is not None:
        trees["peer"] = args.peer.resolve()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for _ in range(args.repeat):
        for name, tree in trees.items():
            runs[name].append(run_in(tree, args.members, args.seconds))
    print(f"\nclient cycles, {len(GROUPS)} groups × {args.members} members, {args.seconds:,} s\n")
    print("| tree | cycles | best cycles/s | median cycles/s | µs per cycle (best) | engine |")
    print("|---|---|---|---|---|---|")
    figures: dict[str, Any] = {}
    for name, results in runs.items():
        rates = [r["cycles"] / r["cpu_s"] for r in results]
        best = max(rates)
        share = min(r["engine_s"] / r["cpu_s"] for r in results)
        figures[name] = {
            "tree": str(trees[name]),
            "cycles": results[0]["cycles"],
            "best_cycles_per_s": best,
            "median_cycles_per_s": statistics.median(rates),
            "runs": results,
        }
        print(
            f"| {name} | {results[0]['cycles']:,} | {best:,.0f} | "
            f"{statistics.median(rates):,.0f} | {1e6 / best:.1f} | {share:.0%} |"
        )
    if "peer" in figures:
        ratio = figures["this"]["best_cycles_per_s"] / figures["peer"]["best_cycles_per_s"]
        figures["ratio"] = ratio
        print(f"\nthis / peer (best cycles/s): {ratio:.2f}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
