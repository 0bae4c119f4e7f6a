"""Benchmark: KIP-848's server-side assignors (``uniform``, ``range``) on large groups.

Run ``python bench/server_assignors.py`` (about ten seconds) or ``python bench/server_assignors.py
--quick`` (seconds).

Cases: members x partitions (topics of equal size), each with

* ``homogeneous`` subscriptions: every member subscribes to every topic (``uniform`` runs its
  homogeneous builder);
* ``heterogeneous`` subscriptions: member ``i`` subscribes to the first two thirds of the topics
  when ``i % 3 == 0``, the last two thirds when ``i % 3 == 1``, and all of them otherwise
  (overlapping subscriptions: ``uniform`` runs its heterogeneous builder and balancing).

and two rounds: ``fresh`` (no member holds anything) and ``join`` (every member holds what it got
in the fresh round, and one new member, subscribed like member 0, joins; its id sorts in the
middle of the group's, as a random id would). Each figure is the best of a few runs, each started
after a full garbage collection; the cyclic collector stays on during the run, as in a server.
Every timed assignment is checked before its figure is kept: every subscribed partition owned
once, by a subscriber, and for ``uniform`` over homogeneous subscriptions every member at
``P // M`` partitions or one more. ``moved`` counts partitions taken from a member that stayed;
``spread`` is the largest minus the smallest member's partition count.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignors import timed  # bench/assignors.py, beside this file

from coordinator_engine.assignors import Subscription
from coordinator_engine.assignors._validation import assignment_problems
from coordinator_engine.server_assignors import (
    SERVER_ASSIGNORS,
    MemberSpec,
    assign,
    group_subscription_type,
)

Target = dict[str, dict[str, frozenset[int]]]


@dataclass(frozen=True)
class Case:
    members: int
    topics: int
    partitions_per_topic: int
    repeats: int

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    def topic_names(self) -> list[str]:
        return [f"topic-{i:0{len(str(self.topics))}d}" for i in range(self.topics)]

    def member_id(self, i: int) -> str:
        return f"member-{i:0{len(str(self.members))}d}"

    def joiner_id(self) -> str:
        """An id that sorts in the middle of the group's."""
        return self.member_id(self.members // 2) + "-joined"


def cases(quick: bool) -> list[Case]:
    if quick:
        return [Case(200, 20, 100, 3), Case(2_000, 100, 200, 1)]
    return [
        Case(200, 20, 100, 5),
        Case(200, 10, 1_000, 5),
        Case(2_000, 100, 200, 3),
        Case(20_000, 100, 1_000, 3),
    ]


def subscribed(kind: str, i: int, names: list[str]) -> frozenset[str]:
    if kind == "homogeneous":
        return frozenset(names)
    third = len(names) // 3
    return frozenset(names[: 2 * third] if i % 3 == 0 else names[third:] if i % 3 == 1 else names)


def check(
    label: str,
    assignor: str,
    members: Mapping[str, MemberSpec],
    partitions: Mapping[str, int],
    result: Target,
) -> None:
    """Refuse to report a figure from an invalid assignment."""
    subscriptions = {m: Subscription(sorted(spec.topics)) for m, spec in members.items()}
    pairs = {m: [(t, p) for t, parts in a.items() for p in parts] for m, a in result.items()}
    problems = assignment_problems(partitions, subscriptions, pairs)
    if assignor == "uniform" and label.startswith("homogeneous"):
        floor = sum(partitions.values()) // len(members)
        counts = {len(p) for p in pairs.values()}
        if not counts <= {floor, floor + 1}:
            problems.append(f"member sizes {sorted(counts)} are not {floor} or {floor + 1}")
    if problems:
        sys.exit(f"{label} / {assignor}: invalid assignment: {problems[:5]}")


def moved(previous: Target, result: Target) -> int:
    """Partitions taken from members that stayed in the group."""
    return sum(
        len(parts - result[m].get(t, frozenset()))
        for m, assignment in previous.items()
        if m in result
        for t, parts in assignment.items()
    )


def spread(result: Target) -> int:
    counts = [sum(map(len, a.values())) for a in result.values()]
    return max(counts) - min(counts)


def run_case(case: Case, kind: str) -> list[dict[str, Any]]:
    names = case.topic_names()
    partitions = dict.fromkeys(names, case.partitions_per_topic)
    fresh = {
        case.member_id(i): MemberSpec(subscribed(kind, i, names), {}) for i in range(case.members)
    }
    rows = []
    for assignor in SERVER_ASSIGNORS:
        previous: Target = {}
        for round_name in ("fresh", "join"):
            if round_name == "fresh":
                members = fresh
            else:
                members = {m: MemberSpec(s.topics, previous[m]) for m, s in fresh.items()}
                members[case.joiner_id()] = MemberSpec(subscribed(kind, 0, names), {})
            seconds, result = timed(
                lambda a=assignor, m=members: assign(a, m, partitions), case.repeats
            )
            check(f"{kind} {case.members}x{case.partitions} {round_name}", assignor, members,
                  partitions, result)  # fmt: skip
            rows.append(
                {
                    "members": len(members),
                    "partitions": case.partitions,
                    "topics": case.topics,
                    "subscriptions": kind,
                    "builder": group_subscription_type(members, partitions).value,
                    "assignor": assignor,
                    "round": round_name,
                    "ms": round(seconds * 1000, 2),
                    "moved": moved(previous, result),
                    "spread": spread(result),
                }
            )
            previous = result
            del result
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = (
        "members",
        "partitions",
        "subscriptions",
        "assignor",
        "round",
        "ms",
        "moved",
        "spread",
    )
    lines = [header]
    for r in rows:
        lines.append(
            (
                f"{r['members']:,}",
                f"{r['partitions']:,}",
                r["subscriptions"],
                r["assignor"],
                r["round"],
                f"{r['ms']:.2f}",
                f"{r['moved']:,}",
                str(r["spread"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    numeric = {0, 1, 5, 6, 7}
    out = []
    for index, line in enumerate(lines):
        cells = [
            cell.rjust(w) if i in numeric and index else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller groups (a few seconds)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for case in cases(args.quick):
        for kind in ("homogeneous", "heterogeneous"):
            print(
                f"running {case.members:,} members x {case.partitions:,} partitions "
                f"({case.topics} topics), {kind}...",
                file=sys.stderr,
                flush=True,
            )
            rows.extend(run_case(case, kind))
    print(table(rows))
    print(
        json.dumps(
            {
                "bench": "server_assignors",
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
