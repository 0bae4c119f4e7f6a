"""What a generation did, counted by the generator itself: per group, per coordinator, in all.

``GeneratedHistory`` is what ``generate_history`` returns and writes to ``_generated.json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True, slots=True)
class GroupSummary:
    """What the generator did to one group, counted by the generator itself.

    assignor: the protocol its members agree on (their first assignor); ``handoff`` for a
        handoff group (the coordinator plans), the coordinator's assignor for a consumer-
        protocol group, None for the offsets-only job. cooperative: whether its members
        rebalance cooperatively. handoff: a handoff group. consumer: a
        consumer-protocol group (KIP-848).
    joins: member processes started (first starts, replacements, daily starts; not restarts).
    leaves: dynamic members that closed and sent LeaveGroup (daily shutdowns included).
    crashes: members that died without LeaveGroup (now, on the next rebalance, or between
        their JoinGroup answer and their SyncGroup).
    slow_members: members whose processing outlasted ``max.poll.interval.ms`` (in a handoff
        group: whose processing held up the closes asked of it for as long; in a consumer-
        protocol group, the revocations asked of it too).
    static_restarts: static members restarted with the same ``group.instance.id``.
    partition_changes: partition count changes of a subscribed topic a member acted on
        (rejoined for).
    admin_rebalances: ``trigger_rebalance`` calls that started a rebalance.
    admin_removals: static members an admin removed (LeaveGroup by instance id).
    commits: OffsetCommit requests stored without error.
    offset_deletions: OffsetDelete requests (of an emptied daily group) that succeeded.
    group_deletions: DeleteGroups (of an emptied daily group) that succeeded.
    shutdowns: daily shutdowns (every member stopped).
    generations: distinct generations its members saw complete (SyncGroup answered NONE); in
        a handoff group, distinct epochs (plans) a member was told were Stable; in a consumer-
        protocol group, distinct epochs at which a member held its whole target.
    fatal_errors: members stopped by an error Kafka's consumer does not retry (expected 0).
    """

    group_id: str
    coordinator: int
    assignor: str | None
    cooperative: bool
    static_members: int
    handoff: bool = False
    consumer: bool = False
    joins: int = 0
    leaves: int = 0
    crashes: int = 0
    slow_members: int = 0
    static_restarts: int = 0
    partition_changes: int = 0
    admin_rebalances: int = 0
    admin_removals: int = 0
    commits: int = 0
    offset_deletions: int = 0
    group_deletions: int = 0
    shutdowns: int = 0
    generations: int = 0
    fatal_errors: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class CoordinatorSummary:
    """What one coordinator's run did: its groups, its ``cleanup`` results, its last time."""

    index: int
    groups: tuple[GroupSummary, ...]
    cleanups: int
    offsets_expired: int
    groups_expired: int
    events: int
    end_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratedHistory:
    """A generated history (``DIR/_generated.json`` holds ``to_json()``).

    events, files, last_seq: what was written (events ≥ requested, see the module docstring).
    requested, seed: the arguments. coordinators: engines in the simulated cluster.
    days: the day partitions written. first_at_ms, last_at_ms: the history's time range.
    cleanups, offsets_expired, groups_expired: ``cleanup`` passes and what they removed.
    groups: per group, what the generator did (``GroupSummary``), in catalogue order.
    """

    events: int
    files: int
    last_seq: int
    requested: int
    seed: int
    coordinators: int
    days: tuple[str, ...]
    first_at_ms: int
    last_at_ms: int
    cleanups: int
    offsets_expired: int
    groups_expired: int
    groups: tuple[GroupSummary, ...]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
