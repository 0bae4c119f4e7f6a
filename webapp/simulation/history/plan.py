"""The plan: which coordinator runs which groups, owns which partitions, emits how many events.

Groups go to coordinators by their coordinator partition (``partition_for``), heaviest first to
the least loaded, as Kafka spreads groups over brokers; ``events`` is shared in proportion to
the members each coordinator runs.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from pathlib import Path

from coordinator_engine import CoordinatorConfig, partition_for

from .catalogue import GroupSpec, catalogue, partition_changes
from .coordinator_run import COORDINATORS, Plan, engine_config


def group_coordinators(groups: Sequence[GroupSpec]) -> dict[str, int]:
    """Each group's coordinator: the groups' coordinator partitions, heaviest first, each to
    the coordinator with the least load so far (ties: the lower index)."""
    load_of_partition: dict[int, int] = {}
    for spec in groups:
        partition = partition_for(spec.group_id)
        load_of_partition[partition] = load_of_partition.get(partition, 0) + spec.weight
    loads = [0] * COORDINATORS
    owner: dict[int, int] = {}
    for partition, load in sorted(load_of_partition.items(), key=lambda item: (-item[1], item[0])):
        index = loads.index(min(loads))
        owner[partition] = index
        loads[index] += load
    return {spec.group_id: owner[partition_for(spec.group_id)] for spec in groups}


def owned_partitions(coordinator_of: dict[str, int]) -> list[frozenset[int]]:
    """The 50 coordinator partitions shared out: the groups' ones to their coordinator, the
    others round robin."""
    owner = {partition_for(group_id): index for group_id, index in coordinator_of.items()}
    owned: list[set[int]] = [set() for _ in range(COORDINATORS)]
    for partition in range(CoordinatorConfig().offsets_topic_num_partitions):
        owned[owner.get(partition, partition % COORDINATORS)].add(partition)
    return [frozenset(p) for p in owned]


def share_out(events: int, weights: list[int]) -> list[int]:
    """``events`` shared in proportion to ``weights`` (largest remainders; they add up)."""
    total = sum(weights)
    exact = [events * w / total for w in weights]
    quotas = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: (quotas[i] - exact[i], i))
    for i in by_remainder[: events - sum(quotas)]:
        quotas[i] += 1
    return quotas


def coordinator_configs(events: int) -> list[CoordinatorConfig]:
    """The engines' settings in a history of ``events`` events, by coordinator: what an engine
    rebuilt from one of its ``record_logs`` needs (the partitions it owns, above all: a
    record of a group it does not own is skipped at replay)."""
    owned = owned_partitions(group_coordinators(catalogue(events)))
    return [engine_config(partitions) for partitions in owned]


def record_log_path(directory: str | os.PathLike[str], index: int) -> Path:
    """Where ``record_logs`` puts coordinator ``index``'s records."""
    return Path(directory) / f"coordinator-{index}.db"


def make_plans(
    groups: Sequence[GroupSpec], events: int, seed: int, record_logs: Path | None = None
) -> list[Plan]:
    coordinator_of = group_coordinators(groups)
    owned = owned_partitions(coordinator_of)
    shares = [[s for s in groups if coordinator_of[s.group_id] == i] for i in range(COORDINATORS)]
    quotas = share_out(events, [sum(s.weight for s in share) or 1 for share in shares])
    changes = partition_changes(random.Random(f"rebalance-lab/{seed}/topics"))
    return [
        Plan(
            index=i,
            seed=seed,
            groups=tuple(shares[i]),
            owned_partitions=owned[i],
            quota=quotas[i],
            partition_changes=changes,
            record_log=None if record_logs is None else str(record_log_path(record_logs, i)),
        )
        for i in range(COORDINATORS)
    ]
