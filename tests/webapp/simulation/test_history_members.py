"""The generator's members (webapp.simulation.history.members) in one coordinator's run, driven
step by step in virtual time: what a single member does, timed to the millisecond, which a
whole generated history cannot show."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator_engine import partition_for
from coordinator_engine.client import POLL_TIMEOUT_REASON
from coordinator_engine.events import GroupEvent, MemberRemoved
from webapp.simulation.history.catalogue import SECOND_MS, START_MS, GroupSpec
from webapp.simulation.history.coordinator_run import MAX_COMMIT_INTERVAL_MS, CoordinatorRun, Plan

#: Virtual time a member runs Stable before it stalls, so its last poll lies well behind.
SETTLED_FOR_MS = 100 * SECOND_MS
CLASSIC = GroupSpec(
    group_id="stall-classic", assignors=("range",), topics=("orders",), dynamic=(2, 2)
)
CONSUMER = GroupSpec(
    group_id="stall-consumer",
    assignors=("uniform",),
    topics=("orders",),
    dynamic=(2, 2),
    consumer=True,
)


def run_of(spec: GroupSpec) -> tuple[CoordinatorRun, list[MemberRemoved]]:
    """A run of ``spec``'s group alone (no churn, no cleanup) and the removals it reports. Its
    quota of one event paces the auto-commit at its slowest (``MAX_COMMIT_INTERVAL_MS``), so
    a member polls only when its poll timer needs it."""
    plan = Plan(
        index=0,
        seed=0,
        groups=(spec,),
        owned_partitions=frozenset({partition_for(spec.group_id)}),
        quota=1,
        partition_changes=(),
    )
    run = CoordinatorRun(plan)
    assert run.commit_interval_ms == MAX_COMMIT_INTERVAL_MS
    removed: list[MemberRemoved] = []

    def on_event(event: GroupEvent) -> None:
        if type(event) is MemberRemoved:
            removed.append(event)

    run.coordinator.add_listener(on_event)
    return run, removed


def run_until(run: CoordinatorRun, done: Callable[[], bool]) -> None:
    for _ in range(100_000):
        if done():
            return
        assert run.step(run.coordinator), "the run ran out of things to do"
    pytest.fail("the run never got there")


@pytest.mark.parametrize("spec", [CLASSIC, CONSUMER], ids=["classic", "consumer-protocol"])
def test_a_stalled_member_leaves_max_poll_interval_after_its_stall_begins(
    spec: GroupSpec,
) -> None:
    """KIP-62: the batch a member is stuck on came from a poll at the stall's start, so its
    poll timer runs out ``max.poll.interval.ms`` after it, however long ago the client last
    heard of a poll before that."""
    run, removed = run_of(spec)
    group = run.groups[spec.group_id]
    group.startup()
    run_until(run, lambda: len(group.members) == 2 and all(m.settled for m in group.members))
    settled_at = run.now
    run_until(run, lambda: run.now >= settled_at + SETTLED_FOR_MS)
    assert not removed and all(m.settled for m in group.members)

    member = group.members[0]
    member_id = member.client.member_id
    stalled_at = run.now
    member.stall(2 * spec.max_poll_interval_ms)
    run_until(run, lambda: bool(removed))

    (leave,) = removed
    assert (leave.member_id, leave.reason) == (member_id, "left")
    assert leave.at_ms == stalled_at + spec.max_poll_interval_ms
    if not spec.consumer:
        assert leave.detail == POLL_TIMEOUT_REASON
    assert stalled_at > START_MS + SETTLED_FOR_MS
