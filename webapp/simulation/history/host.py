"""What the churn and the members see of the objects that host them, as two protocols.

A coordinator's run (``coordinator_run.CoordinatorRun``) makes its groups (``churn.GroupRun``),
and a group makes its members (``members``); each needs only a few things of the one above it:
a group and its members, the clock and agenda, the engine, the cluster's answers and a few
settings of their run; a member, also the summary and member list of its group. Typed by these
protocols rather than by those classes, the imports run one way (``coordinator_run`` →
``churn`` → ``members`` → ``host``), and what a member or a group may ask of its host is
written down in one place (mypy checks that ``CoordinatorRun`` and ``GroupRun`` provide it).
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from coordinator_engine import GroupCoordinator
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)

from .catalogue import GroupSpec
from .summary import GroupSummary
from .virtual_time import Action


class Run(Protocol):
    """One coordinator's run, as its groups and their members use it."""

    # The clock and the agenda (``virtual_time.VirtualTime``).
    now: int
    heap: list[Action]
    order: itertools.count[int]
    deliveries: deque[tuple[Callable[[Any], None], Any]]
    # The coordinator, its cluster and its settings.
    index: int
    coordinator: GroupCoordinator
    partitions: dict[str, int]
    rng: random.Random
    commit_interval_ms: int
    metadata_max_age_ms: int
    #: True once the run has emitted its share and only lets its groups settle.
    draining: bool

    def at(self, when: int, action: Callable[[Any], None], argument: Any = None) -> None: ...

    def handle(self, request: Any) -> Any: ...

    def find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse: ...

    def metadata(self, request: MetadataRequest) -> MetadataResponse: ...


class Group(Protocol):
    """One application's group, as its members use it."""

    run: Run
    spec: GroupSpec
    #: Its place in the run's catalogue (members' hosts are numbered by it).
    number: int
    summary: GroupSummary
    #: Its live members (``members.PollingMember`` or ``HandoffMember``).
    members: list[Any]

    def generation_completed(self, generation: int) -> None: ...
