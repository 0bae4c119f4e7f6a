"""Benchmark: the sticky assignors on Kafka's large groups, and beside kafka-python's sticky.

Run ``python bench/assignors.py`` (a minute or two) or ``python bench/assignors.py --quick``
(seconds).

Cases (sizes from Kafka's ``AbstractStickyAssignorTest``):

* ``uniform``: 500 topics x 2,000 partitions (1,000,000), 2,000 consumers all subscribed to all
  topics (``testLargeAssignmentAndGroupWithUniformSubscription``; Kafka's bound: 30 s).
* ``non-equal``: the same, but the last consumer subscribes to the first topic only
  (``testLargeAssignmentAndGroupWithNonEqualSubscription``; Kafka's bound: 90 s).
* ``halves``: 100 topics x 200 partitions, 500 consumers; every fourth consumer subscribes to
  the first half of the topics, the others to the second half
  (``testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout``).
* ``peer-*``: 20 topics x 100 partitions with 50 and 200 consumers, uniform and halves, run by
  ``sticky``, ``cooperative-sticky`` and kafka-python's ``StickyPartitionAssignor`` on the same
  input (kafka-python needs minutes for the halves case at 500 consumers, so the shared inputs
  stop at this size).

Each case runs two rounds: ``first`` (nobody owns anything) and ``reassign`` (every consumer
owns what it got in the first round, generation 1, and a few consumers have left). kafka-python
gets the same previous assignment through its StickyAssignorUserData. Every timed assignment is
checked before its figure is kept: complete (except the partitions a cooperative round leaves
out on purpose), disjoint, only subscribed topics, balanced for ours, and no partition handed
from one owner to another in one cooperative round. ``moved`` counts partitions taken from a
consumer that stayed in the group.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator_engine.assignors import Subscription, get_assignor
from coordinator_engine.assignors._validation import (
    assignment_problems,
    balance_problems,
    handover_problems,
)

Assignment = dict[str, list[tuple[str, int]]]
R = TypeVar("R")
PEER = "kafka-python sticky"


@dataclass(frozen=True)
class Case:
    name: str
    topics: int
    partitions: int
    consumers: int
    kind: str  # "uniform", "non-equal" or "halves"
    leaving: int  # consumers gone in the reassign round
    peer: bool  # also run kafka-python's sticky assignor
    repeats: int  # best of this many runs

    def topic_names(self) -> list[str]:
        width = len(str(self.topics))
        return [f"t{i:0{width}d}" for i in range(self.topics)]

    def member(self, i: int) -> str:
        return f"c{i:0{len(str(self.consumers))}d}"

    def subscribed(self, i: int, names: list[str]) -> list[str]:
        if self.kind == "non-equal" and i == self.consumers - 1:
            return names[:1]
        if self.kind == "halves":
            return names[: self.topics // 2] if i % 4 == 0 else names[self.topics // 2 :]
        return names

    def leavers(self) -> set[int]:
        step = self.consumers // self.leaving
        return {7 + k * step for k in range(self.leaving)}


def cases(quick: bool) -> list[Case]:
    if quick:
        return [
            Case("uniform", 50, 200, 200, "uniform", 3, False, 1),
            Case("non-equal", 50, 200, 200, "non-equal", 3, False, 1),
            Case("halves", 20, 100, 100, "halves", 2, False, 1),
            Case("peer-uniform-20", 10, 50, 20, "uniform", 2, True, 1),
            Case("peer-halves-50", 10, 50, 50, "halves", 2, True, 1),
        ]
    return [
        Case("uniform", 500, 2_000, 2_000, "uniform", 5, False, 1),
        Case("non-equal", 500, 2_000, 2_000, "non-equal", 5, False, 1),
        Case("halves", 100, 200, 500, "halves", 5, False, 1),
        Case("peer-uniform-50", 20, 100, 50, "uniform", 2, True, 3),
        Case("peer-uniform-200", 20, 100, 200, "uniform", 5, True, 3),
        Case("peer-halves-50", 20, 100, 50, "halves", 2, True, 3),
        Case("peer-halves-200", 20, 100, 200, "halves", 5, True, 1),
    ]


# -- kafka-python, called the way its ConsumerCoordinator calls it --------------------------------


class _Cluster:
    """The two ClusterMetadata methods kafka-python's sticky assignor uses."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._partitions = partitions_per_topic

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._partitions.get(topic)
        return None if count is None else set(range(count))


@dataclass(frozen=True)
class _Member:
    member_id: str
    metadata: Any


def kafka_python_sticky(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> Callable[[], Assignment]:
    """A call of kafka-python's StickyPartitionAssignor on this input (built outside the timing)."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    members = []
    for member_id, subscription in subscriptions.items():
        user_data: Any = b""
        if subscription.owned_partitions:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in subscription.owned_partitions:
                by_topic.setdefault(topic, []).append(partition)
            user_data = StickyAssignorUserData(list(by_topic.items()), subscription.generation_id)
        metadata = ConsumerProtocolSubscription(0, list(subscription.topics), user_data)
        members.append(_Member(member_id, metadata))
    cluster = _Cluster(partitions_per_topic)

    def run() -> Assignment:
        result = StickyPartitionAssignor().assign(cluster, members)
        return {m: [(tp.topic, tp.partition) for tp in a.partitions()] for m, a in result.items()}

    return run


# -- measuring -----------------------------------------------------------------------------------


def timed(run: Callable[[], R], repeats: int) -> tuple[float, R]:
    """The best time of ``repeats`` runs, and the last run's result (also for
    ``bench/server_assignors.py``)."""
    best = float("inf")
    result: R | None = None
    for _ in range(repeats):
        result = None  # drop the last result before collecting
        gc.collect()  # start every run with the same heap: no garbage left from the last one
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def check(
    label: str,
    assignor: str,
    partitions: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    result: Assignment,
) -> None:
    """Refuse to report a figure from an invalid assignment."""
    cooperative = assignor == "cooperative-sticky"
    problems = assignment_problems(partitions, subscriptions, result, complete=not cooperative)
    if assignor == "sticky":
        problems += balance_problems(subscriptions, result)
    if cooperative:
        problems += handover_problems(subscriptions, result)
    if problems:
        sys.exit(f"{label} / {assignor}: invalid assignment: {problems[:5]}")


def moved(previous: Mapping[str, Sequence[tuple[str, int]]], result: Assignment) -> int:
    """Partitions taken away from consumers that stayed in the group."""
    return sum(len(set(previous[m]) - set(result[m])) for m in result if m in previous)


def run_case(case: Case) -> list[dict[str, Any]]:
    names = case.topic_names()
    partitions = dict.fromkeys(names, case.partitions)
    first = {
        case.member(i): Subscription(topics=case.subscribed(i, names))
        for i in range(case.consumers)
    }
    assignors = ["sticky", "cooperative-sticky"] + ([PEER] if case.peer else [])
    rows = []
    for assignor in assignors:
        previous: Assignment | None = None
        for round_name in ("first", "reassign"):
            if round_name == "first":
                subscriptions = first
            else:
                assert previous is not None
                gone = {case.member(i) for i in case.leavers()}
                subscriptions = {
                    m: Subscription(topics=s.topics, owned_partitions=previous[m], generation_id=1)
                    for m, s in first.items()
                    if m not in gone
                }
            if assignor == PEER:
                run = kafka_python_sticky(partitions, subscriptions)
            else:
                ours = get_assignor(assignor)
                run = lambda ours=ours, s=subscriptions: ours.assign(partitions, s)  # noqa: E731
            seconds, result = timed(run, case.repeats)
            check(f"{case.name} {round_name}", assignor, partitions, subscriptions, result)
            rows.append(
                {
                    "case": case.name,
                    "round": round_name,
                    "assignor": assignor,
                    "seconds": round(seconds, 4),
                    "partitions": case.topics * case.partitions,
                    "consumers": len(subscriptions),
                    "moved": 0 if previous is None else moved(previous, result),
                    "subscriptions": case.kind,
                }
            )
            previous = result
    by_key = {(r["case"], r["round"], r["assignor"]): r for r in rows}
    for row in rows:
        peer = by_key.get((row["case"], row["round"], PEER))
        if peer is not None and row["assignor"] != PEER:
            row["peer_ratio"] = round(peer["seconds"] / row["seconds"], 1)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = (
        "case",
        "round",
        "assignor",
        "seconds",
        "partitions",
        "consumers",
        "moved",
        "kafka-python/ours",
    )
    lines = [header]
    for r in rows:
        ratio = f"{r['peer_ratio']}x" if "peer_ratio" in r else ""
        lines.append(
            (
                r["case"],
                r["round"],
                r["assignor"],
                f"{r['seconds']:.4f}",
                f"{r['partitions']:,}",
                f"{r['consumers']:,}",
                f"{r['moved']:,}",
                ratio,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller groups (a few seconds)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for case in cases(args.quick):
        print(
            f"running {case.name} ({case.topics} topics x {case.partitions} partitions, "
            f"{case.consumers} consumers, {case.kind})...",
            file=sys.stderr,
            flush=True,
        )
        rows.extend(run_case(case))
    print(table(rows))
    print(
        json.dumps(
            {
                "bench": "assignors",
                "quick": args.quick,
                "python": platform.python_version(),
                "machine": platform.machine(),
                "results": rows,
            },
            separators=(",", ":"),
        )
    )


if __name__ == "__main__":
    main()
