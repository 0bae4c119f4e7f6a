"""Benchmark: where generate_history's CPU goes: the engine's share, and the clients'.

    .venv/bin/python bench/generate_share.py [--events N] [--seed S] [--clients]
        [--peer DIR [--repeat R | --instructions]] [--classic-catalogue]

``manage.py generate_history`` drives the real engine (``GroupCoordinator``) with the library's
consumer clients (``GroupClient``, ``HandoffClient``, ``ConsumerClient``) in virtual time. Its
speed has three parts: the engine answering the members' requests, which any generator of this
history must pay; the clients' own work (``outgoing``, ``receive``, ``poll``, ...), which any
host of these clients must pay; and the host around them (the members' applications, virtual
time, the rows). This runs ``webapp.simulation.history.generate_history`` in one process
(``jobs=1``, default 200,000 events into a temporary directory) with ``GroupCoordinator.handle``
wrapped in a timer (with ``--clients``, the clients' calls too), and prints the process's CPU
per event, the engine's share (the clients' too), and per request type and client call its
calls, µs per call and µs per event. Each bucket counts its own time only: a client's
``group_changed`` called by the engine's listeners inside ``handle()`` counts for the client,
and the measured cost of timing a nested call is taken off its caller's. The timers slow the run
(``--clients`` by about a third): the CPU figure to quote is one without ``--clients``.

The engine's µs per event is a floor for the generator on this machine: with ``jobs=2`` the
two coordinators run on two cores at best, so ``2 / (engine µs per event)`` is the most events
per second any simulation around this engine could reach here; the engine's and the clients'
µs per event together are the floor of any host of these clients. The last line is one JSON
object with every figure.

``--peer DIR`` instead times whole runs of this tree and of another checkout (a ``git worktree``
of an older commit, with ``.venv`` linked into it), each in a fresh process with no timers,
``--repeat`` times (default 3) with the trees interleaved, and prints both trees' CPU and wall
time per run, their events per second of CPU (median) and the ratio. ``--classic-catalogue``
runs only the applications a catalogue from before the consumer protocol (KIP-848) had: the
fourteen classic and handoff ones, the same workload in both trees, where the full catalogue
would give a tree with consumer-protocol groups a heavier history.

``--instructions`` (with ``--peer``) counts instead of timing: each tree's run under valgrind's
callgrind (``valgrind`` must be installed), which counts the instructions a run executes, the
same for the same run whatever else the machine is doing, where CPU seconds on a shared machine
vary by a fifth from run to run. Each tree runs twice, with ``--events`` and with none (its
imports only), the two trees side by side; the difference, per event, is the figure compared.
Under callgrind a run is about fifty times slower: 5,000 events is a good size.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _trees import run_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


#: The clients' calls a host makes, timed with ``--clients``.
CLIENT_CALLS = (
    "poll",
    "outgoing",
    "receive",
    "next_deadline_ms",
    "events",
    "group_changed",
    "record_consumed",
    "record_positions",
    "commit",
    "partitions_stopped",
    "close",
)


class ExclusiveTimer:
    """Wraps functions so that each bucket gets its own time, without the time of the timed
    calls made inside it (the engine's listeners call a client's ``group_changed`` from
    inside ``handle``, say). Each call's clock reads are measured (``calibrate``) and taken
    off."""

    def __init__(self) -> None:
        #: bucket -> [own seconds, calls, timed calls nested in them]
        self.spent: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0, 0])
        #: per timed call under way: [seconds of the timed calls inside it, how many]
        self.stack: list[list[float]] = []
        self.overhead = 0.0

    def wrap(self, function: Any, bucket: Any) -> Any:
        """``bucket(args)`` names the bucket of one call."""
        clock = time.perf_counter
        stack = self.stack
        spent = self.spent

        def timed(*args: Any, **named: Any) -> Any:
            stack.append([0.0, 0])
            began = clock()
            try:
                return function(*args, **named)
            finally:
                elapsed = clock() - began
                inner, nested = stack.pop()
                figures = spent[bucket(args)]
                figures[0] += elapsed - inner
                figures[1] += 1
                figures[2] += nested
                if stack:
                    stack[-1][0] += elapsed
                    stack[-1][1] += 1

        return timed

    def calibrate(self, calls: int = 200_000) -> None:
        """The time one wrapped call adds to its caller's bucket, measured on a no-op."""
        noop = self.wrap(lambda: None, lambda args: "calibration")
        began = time.perf_counter()
        for _ in range(calls):
            noop()
        total = time.perf_counter() - began
        own = self.spent.pop("calibration")[0]
        # What the caller's bucket would have counted, minus what the no-op's bucket kept.
        self.overhead = (total - own) / calls

    def seconds(self, name: str) -> float:
        """A bucket's time, the cost of timing the calls nested in it taken off."""
        own, _, nested = self.spent.get(name, (0.0, 0, 0))
        return own - nested * self.overhead


def keep_classic_catalogue() -> None:
    """Run only the catalogue's classic and handoff applications (``--classic-catalogue``)."""
    import importlib

    # The module itself: the package's attribute of that name is its function catalogue().
    catalogue: Any = importlib.import_module("webapp.simulation.history.catalogue")
    catalogue.GROUPS = tuple(s for s in catalogue.GROUPS if not getattr(s, "consumer", False))


def plain_run(events: int, seed: int) -> dict[str, Any]:
    """One generation with no timers: its events, CPU and wall time (none: the imports only)."""
    from webapp.simulation.history import generate_history

    if events == 0:
        return {"events": 0, "cpu_s": time.process_time(), "wall_s": 0.0}
    with tempfile.TemporaryDirectory(prefix="generate-share-") as scratch:
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        generated = generate_history(Path(scratch) / "history", events, seed=seed, jobs=1)
        cpu, wall = time.process_time() - cpu_before, time.perf_counter() - wall_before
    return {"events": generated.events, "cpu_s": cpu, "wall_s": wall}


def plain_command(tree: Path, args: argparse.Namespace, events: int) -> list[str]:
    """The command of a ``plain_run`` in a fresh process whose imports come from ``tree``."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        f"--one={tree}",
        f"--events={events}",
        f"--seed={args.seed}",
    ]
    if args.classic_catalogue:
        command.append("--classic-catalogue")
    return command


def run_in(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``plain_run`` in a fresh process whose imports come from ``tree``."""
    result: dict[str, Any] = run_json(plain_command(tree, args, args.events), tree)
    return result


def instructions_in(tree: Path, args: argparse.Namespace, events: int) -> dict[str, int]:
    """The events and the instructions of one ``plain_run`` in ``tree``, counted by callgrind
    (the process's start and imports included)."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            *plain_command(tree, args, events),
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    counted = re.search(r"Collected : (\d+)", done.stderr)
    if counted is None:
        raise RuntimeError(f"callgrind counted nothing in {tree}:\n{done.stderr[-2000:]}")
    generated = json.loads(done.stdout.strip().splitlines()[-1])
    return {"events": generated["events"], "instructions": int(counted.group(1))}


def compared_trees(args: argparse.Namespace) -> dict[str, Path]:
    """This checkout and ``--peer``'s, by the names the tables give them."""
    return {"this": Path(__file__).resolve().parents[1], "peer": args.peer.resolve()}


def print_heading(args: argparse.Namespace, measured: str) -> None:
    """What both trees ran, and how it was ``measured``."""
    catalogue = "classic and handoff applications only" if args.classic_catalogue else "full"
    print(f"\ngenerate_history, {args.events:,} events asked, seed {args.seed}, one process,")
    print(f"catalogue: {catalogue}; {measured}\n")


def print_ratio(figures: dict[str, Any], ratio: float, by: str) -> int:
    """The last lines: the ratio of this tree's speed to the peer's, and every figure as JSON
    (``this_over_peer`` added); the exit status."""
    figures["this_over_peer"] = ratio
    print(f"\nthis / peer ({by}): {ratio:.2f}")
    print(json.dumps(figures))
    return 0


def counted_side_by_side(args: argparse.Namespace) -> int:
    """``--peer --instructions``: each tree's instructions per event, and the ratio."""
    trees = compared_trees(args)
    runs = [(name, events) for name in trees for events in (args.events, 0)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counted = dict(
            zip(
                runs,
                pool.map(lambda run: instructions_in(trees[run[0]], args, run[1]), runs),
                strict=True,
            )
        )
    print_heading(args, "instructions counted by callgrind")
    print("| tree | events | instructions | imports only | per event |")
    print("|---|---|---|---|---|")
    figures: dict[str, Any] = {}
    for name, tree in trees.items():
        run, imports = counted[(name, args.events)], counted[(name, 0)]
        per_event = (run["instructions"] - imports["instructions"]) / run["events"]
        figures[name] = {
            "tree": str(tree),
            "events": run["events"],
            "instructions": run["instructions"],
            "imports_instructions": imports["instructions"],
            "instructions_per_event": per_event,
        }
        print(
            f"| {name} | {run['events']:,} | {run['instructions'] / 1e9:.2f} billion"
            f" | {imports['instructions'] / 1e9:.2f} billion | {per_event:,.0f} |"
        )
    ratio = figures["peer"]["instructions_per_event"] / figures["this"]["instructions_per_event"]
    return print_ratio(figures, ratio, "speed, by instructions per event")


def side_by_side(args: argparse.Namespace) -> int:
    """``--peer``: whole runs of both trees, interleaved; events/s of CPU and the ratio."""
    trees = compared_trees(args)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for round_ in range(1, args.repeat + 1):
        for name, tree in trees.items():
            result = run_in(tree, args)
            runs[name].append(result)
            print(
                f"round {round_}/{args.repeat}, {name}: {result['events']:,} events,"
                f" CPU {result['cpu_s']:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    print_heading(args, f"{args.repeat} runs per tree, interleaved")
    print("| tree | events | CPU s per run | wall s per run | events/s of CPU (median) |")
    print("|---|---|---|---|---|")
    figures: dict[str, Any] = {}
    for name, results in runs.items():
        rates = [r["events"] / r["cpu_s"] for r in results]
        figures[name] = {
            "tree": str(trees[name]),
            "median_events_per_cpu_s": statistics.median(rates),
            "runs": results,
        }
        cpu = " / ".join(f"{r['cpu_s']:.2f}" for r in results)
        wall = " / ".join(f"{r['wall_s']:.2f}" for r in results)
        print(
            f"| {name} | {results[0]['events']:,} | {cpu} | {wall} |"
            f" {statistics.median(rates):,.0f} |"
        )
    ratio = figures["this"]["median_events_per_cpu_s"] / figures["peer"]["median_events_per_cpu_s"]
    return print_ratio(figures, ratio, "median events/s of CPU")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events (default 200,000)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument(
        "--clients",
        action="store_true",
        help="time the consumer clients' calls too (slows the run: compare CPU without it)",
    )
    parser.add_argument(
        "--peer", type=Path, help="another checkout: time whole runs of both, side by side"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per tree with --peer (3)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --peer: count each tree's instructions per event (callgrind) instead of timing",
    )
    parser.add_argument(
        "--classic-catalogue",
        action="store_true",
        help="only the classic and handoff applications (an older catalogue's workload)",
    )
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a tree's plain run
    args = parser.parse_args()
    if args.one is not None:
        sys.path.insert(0, str(args.one))  # its imports come from that tree
    if args.peer is not None and args.clients:
        parser.error("--clients times the calls of one run: it does not go with --peer")
    if args.instructions and args.peer is None:
        parser.error("--instructions compares two trees: give the other with --peer")
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind (apt-get install valgrind)")
    if args.events < 1 and args.one is None:
        parser.error(f"--events must be at least 1, got {args.events}")
    if args.classic_catalogue:
        keep_classic_catalogue()
    if args.one is not None:
        print(json.dumps(plain_run(args.events, args.seed)))
        return 0
    if args.peer is not None:
        return counted_side_by_side(args) if args.instructions else side_by_side(args)

    from coordinator_engine import coordinator
    from coordinator_engine.client import ConsumerClient, GroupClient, HandoffClient
    from webapp.simulation.history import generate_history

    timer = ExclusiveTimer()
    timer.calibrate()
    engine_buckets: set[str] = set()

    def request_bucket(args: Any) -> str:
        name = type(args[1]).__name__
        engine_buckets.add(name)
        return name

    coordinator.GroupCoordinator.handle = timer.wrap(  # type: ignore[method-assign]
        coordinator.GroupCoordinator.handle, request_bucket
    )
    client_buckets: set[str] = set()
    if args.clients:
        for cls in (GroupClient, HandoffClient, ConsumerClient):
            for call in CLIENT_CALLS:
                if hasattr(cls, call):
                    name = f"{cls.__name__}.{call}"
                    client_buckets.add(name)
                    setattr(cls, call, timer.wrap(getattr(cls, call), lambda args, n=name: n))
    with tempfile.TemporaryDirectory(prefix="generate-share-") as scratch:
        cpu_before = time.process_time()
        generated = generate_history(Path(scratch) / "history", args.events, seed=args.seed, jobs=1)
        cpu = time.process_time() - cpu_before
    events = generated.events
    spent = timer.spent

    # The engine's listeners call clients (group_changed, next_deadline_ms) from inside
    # handle(): each bucket holds its own time only.
    engine = sum(timer.seconds(n) for n in engine_buckets)
    clients = sum(timer.seconds(n) for n in client_buckets)

    def per_event(seconds: float) -> float:
        return seconds / events * 1e6

    print(f"\ngenerate_history, {events:,} events, seed {args.seed}, one process\n")
    print(f"CPU {cpu:.1f} s: {per_event(cpu):.1f} µs per event, of which the engine's handle()")
    print(f"{engine:.1f} s ({engine / cpu:.0%}): {per_event(engine):.1f} µs per event")
    if args.clients:
        print(
            f"and the clients' own calls {clients:.1f} s: {per_event(clients):.1f} µs per event"
            f" (the timers add about {timer.overhead * 1e6:.2f} µs per call to the CPU, not to"
            " these figures)"
        )
    print(f"most events/s on two cores with this engine: {2 / (engine / events):,.0f}\n")
    print("| call | calls | µs per call | µs per event |")
    print("|---|---|---|---|")
    rows = sorted(
        ((n, timer.seconds(n), int(f[1])) for n, f in spent.items() if f[1]), key=lambda r: -r[1]
    )
    for name, seconds, calls in rows:
        print(f"| {name} | {calls:,} | {seconds / calls * 1e6:.2f} | {per_event(seconds):.2f} |")
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
                "clients_s": clients if args.clients else None,
                "clients_us_per_event": per_event(clients) if args.clients else None,
                "calls": {
                    name: {"calls": calls, "seconds": seconds} for name, seconds, calls in rows
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
