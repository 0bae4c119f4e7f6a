"""``run`` end to end on a generated history (``webapp.simulation.history``, 10,000 events, a
fixed seed), its summary.json checked against what the generator counted itself
(``GeneratedHistory`` and its ``GroupSummary`` per group), not against figures recomputed from
the events by the report's own rules. Each check says why it must hold.

The generator's counts that matter here, and why they are independent of the report: the
generator counts ``generations`` when its simulated members get SyncGroup answered NONE for a
new generation, ``admin_rebalances`` when ``trigger_rebalance`` returns NONE,
``admin_removals`` when an admin's LeaveGroup by instance id removes a member,
``static_restarts`` when it restarts a static member; in a consumer-protocol group,
``generations`` counts the epochs at which one of its members held its whole target; the
events are the engine's.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from spark_tasks.rebalance_report import CAUSES
from webapp.simulation.history import GeneratedHistory, GroupSummary

from .generated import EVENTS, GeneratedReport

Generated = tuple[GeneratedHistory, dict[str, Any], Counter[tuple[str, str]]]

pytestmark = pytest.mark.slow  # the session's generated history and its report (conftest.py)


@pytest.fixture(scope="module")
def generated(generated_report: GeneratedReport) -> Generated:
    summary = generated_report.summary
    # What run() returns is what it wrote.
    assert json.loads((generated_report.output / "summary.json").read_text()) == summary
    return generated_report.history, summary, _raw_counts(generated_report.directory)


def _raw_counts(directory: Path) -> Counter[tuple[str, str]]:
    """(group, kind) -> events, straight from the Parquet files: AssignmentStored and
    ConsumerGroupEpochBumped events, and StateChanged events into Stable (kind ``Stable``),
    those from a handoff's Closing or Starting too (kind ``handoff Stable``)."""
    columns = ("group_id", "type", "from_state", "to_state")
    table = ds.dataset(directory, format="parquet", partitioning="hive").to_table(
        columns=list(columns)
    )
    counts: Counter[tuple[str, str]] = Counter()
    for group_id, kind, from_state, to_state in zip(
        *(table.column(c).to_pylist() for c in columns), strict=True
    ):
        if kind in ("AssignmentStored", "ConsumerGroupEpochBumped"):
            counts[group_id, kind] += 1
        elif kind == "StateChanged" and to_state == "Stable":
            counts[group_id, "Stable"] += 1
            if from_state in ("Closing", "Starting"):
                counts[group_id, "handoff Stable"] += 1
    return counts


def _groups(history: GeneratedHistory) -> dict[str, GroupSummary]:
    return {group.group_id: group for group in history.groups}


def test_the_input_is_the_generated_history(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    # run() counts every row Spark reads; the generator counts every row it wrote.
    assert summary["input"]["events"] == history.events >= EVENTS
    # Both count the Parquet files (_generated.json is hidden from Spark by its underscore).
    assert summary["input"]["files"] == history.files
    # Every group of the catalogue emits events (its members join, or the offsets-only job
    # commits), so each is in the history, and the report lists every group of the history;
    # the history holds no other group.
    assert all(g.generations + g.commits > 0 for g in history.groups)
    assert sorted(summary["groups"]) == sorted(_groups(history))
    assert summary["totals"]["groups"] == len(history.groups)


def test_completed_rebalances_are_the_generations_the_members_saw(
    generated: Generated,
) -> None:
    history, summary, raw = generated
    for group_id, group in _groups(history).items():
        entry = summary["groups"][group_id]
        if group.consumer:
            # A consumer-protocol rebalance starts at an epoch bump when none is open (a bump
            # while one is open restarts it) and completes at the group's next move to Stable:
            # at most one per bump, and one per move to Stable. Members hold their whole
            # target at most at every epoch the group was bumped to.
            assert 0 < entry["rebalances"] <= raw[group_id, "ConsumerGroupEpochBumped"]
            assert 0 < entry["completed"] <= min(entry["rebalances"], raw[group_id, "Stable"])
            assert 0 < group.generations <= raw[group_id, "ConsumerGroupEpochBumped"]
            assert sum(entry["causes"].values()) == entry["rebalances"], group_id
            assert set(entry["causes"]) <= set(CAUSES), group_id
            assert entry["duration_ms"]["max"] is not None, group_id
            continue
        if group.handoff:
            # A handoff group enters Stable from Closing or Starting only at the end of a
            # handoff rebalance, which started when it left Stable (or Initial): each such
            # move ends one, completed. The members are told Stable for at most that many
            # plans (some settle between two heartbeats).
            assert entry["completed"] == raw[group_id, "handoff Stable"] > 0, group_id
            assert entry["rebalances"] >= entry["completed"], group_id
            assert 0 < group.generations <= entry["completed"], group_id
            assert sum(entry["causes"].values()) == entry["rebalances"], group_id
            continue
        # The premise below, checked on the raw events: one AssignmentStored per move to
        # Stable, and one per generation the members saw complete.
        assert raw[group_id, "AssignmentStored"] == raw[group_id, "Stable"], group_id
        assert raw[group_id, "AssignmentStored"] == group.generations, group_id
        # The engine moves a group CompletingRebalance -> Stable only when the leader's
        # SyncGroup stores the assignment (AssignmentStored, after which the members' syncs
        # are answered NONE: one generation seen complete). Stable is entered only from
        # CompletingRebalance, which is entered only inside a rebalance (after a Stable/Empty ->
        # PreparingRebalance start, or a restart of it), and a rebalance ends at its first move
        # to Stable: so each move to Stable ends exactly one rebalance, as completed, and each
        # is one generation the members saw complete. (The history starts with every group
        # new, so no rebalance began before it.)
        assert entry["completed"] == group.generations, group_id
        assert entry["rebalances"] >= entry["completed"], group_id
        assert sum(entry["causes"].values()) == entry["rebalances"], group_id
        assert set(entry["causes"]) <= set(CAUSES), group_id
        # A duration exists exactly for completed rebalances.
        assert (entry["duration_ms"]["max"] is None) == (group.generations == 0), group_id
    classic = [g for g in history.groups if not g.handoff and not g.consumer]
    assert summary["totals"]["completed"] == (
        sum(g.generations for g in classic)
        + sum(raw[g.group_id, "handoff Stable"] for g in history.groups if g.handoff)
        + sum(summary["groups"][g.group_id]["completed"] for g in history.groups if g.consumer)
    )


def test_the_offsets_only_job_never_rebalances(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    jobs = [g for g in history.groups if g.assignor is None]
    assert jobs  # the catalogue has one
    for group in jobs:
        # It commits with generation -1 and never sends JoinGroup: no state change at all.
        assert group.commits > 0
        entry = summary["groups"][group.group_id]
        assert entry["rebalances"] == 0
        assert entry["causes"] == {}
        assert entry["storms"] == 0


def test_admin_causes_are_bounded_by_the_admins_actions(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    for group_id, group in _groups(history).items():
        admin = summary["groups"][group_id]["causes"].get("admin_action", 0)
        # A rebalance gets admin_action from the admin's reason on its start (only
        # trigger_rebalance uses it; each call that started or restarted a rebalance is one
        # admin_rebalance) or from a MemberRemoved removed_by_admin first in its start's block
        # (each one an admin removal; blocks do not overlap). Not an equality: a trigger on a
        # CompletingRebalance group restarts the rebalance under way rather than starting one,
        # and a removal in a group already rebalancing starts nothing.
        assert admin <= group.admin_rebalances + group.admin_removals, group_id
    # A trigger on a Stable group does start one (the churn acts mostly on settled groups).
    assert sum(e["causes"].get("admin_action", 0) for e in summary["groups"].values()) > 0


def test_static_causes_only_where_static_members_restarted(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    for group_id, group in _groups(history).items():
        replaced = summary["groups"][group_id]["causes"].get("static_member_replaced", 0)
        # static_member_replaced needs a StaticMemberReplaced in the start's block, a fenced
        # MemberRemoved (emitted with the StaticMemberReplaced of the same call), or the
        # engine's "static member" reason: each comes from a static member's restart, which
        # the generator counts, and one restart's call starts at most one rebalance.
        assert replaced <= group.static_restarts, group_id
        if group.static_members == 0:
            assert group.static_restarts == 0
            assert replaced == 0, group_id


def test_every_assignor_and_both_protocols_are_compared(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    rebalancing = [
        g for g in history.groups if g.generations > 0 and not g.handoff and not g.consumer
    ]
    assignors = {g.assignor for g in rebalancing}
    assert assignors == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    handoff = [g for g in history.groups if g.handoff]
    # A handoff group's rebalances are keyed "handoff", as assignor and as protocol.
    assert summary["assignors"]["handoff"]["groups"] == len(handoff) == 2
    assert summary["protocols"]["handoff"]["groups"] == len(handoff)
    # A consumer group's, by the coordinator's assignor its members ask for, marked as the
    # consumer protocol's (KIP-848's range is not the classic range), and as "consumer".
    consumer = [g for g in history.groups if g.consumer]
    server_assignors = {f"{g.assignor} (consumer)" for g in consumer}
    assert server_assignors == {"range (consumer)", "uniform (consumer)"}
    for key in server_assignors:
        assert summary["assignors"][key]["groups"] == sum(
            1 for g in consumer if f"{g.assignor} (consumer)" == key
        ), key
    assert summary["protocols"]["consumer"]["groups"] == len(consumer) == 3
    named = assignors | {"handoff"} | server_assignors
    # A completed generation's GenerationStarted names the protocol the members agreed on,
    # their first assignor (GroupSummary.assignor); the report keys rebalances by it. Only a
    # rebalance with no generation before or in it has none ("unknown").
    assert named <= set(summary["assignors"]) <= named | {"unknown"}
    for assignor in assignors:
        # Every member of a group offers the same assignors, so all its generations use one.
        expected = sum(1 for g in rebalancing if g.assignor == assignor)
        assert summary["assignors"][assignor]["groups"] == expected, assignor
        assert summary["assignors"][assignor]["completed"] == sum(
            g.generations for g in rebalancing if g.assignor == assignor
        ), assignor
    for protocol, cooperative in (("eager", False), ("cooperative", True)):
        groups = [g for g in rebalancing if g.cooperative is cooperative]
        assert groups, protocol
        figures = summary["protocols"][protocol]
        assert figures["groups"] == len(groups), protocol
        assert figures["completed"] == sum(g.generations for g in groups), protocol


def test_the_four_modes_are_compared_on_the_same_workload(
    generated: Generated,
) -> None:
    history, summary, _ = generated
    workloads = (
        ("orders-range", "orders-handoff", "orders-consumer"),
        ("inventory-coop", "inventory-handoff", "inventory-consumer"),
    )
    groups = _groups(history)
    for workload in workloads:
        # The same topics, member counts and churn: all rebalance, all lose members.
        for group_id in workload:
            assert groups[group_id].crashes > 0, group_id
            assert summary["groups"][group_id]["rebalances"] > 0, group_id
    modes = {"eager", "cooperative", "handoff", "consumer"}
    # Besides the four, only rebalances no generation named a protocol for: a member that
    # joined an Empty group and died before its sync leaves it Empty again, never completed.
    assert modes <= set(summary["protocols"]) <= modes | {"unknown"}
    assert summary["protocols"].get("unknown", {"completed": 0})["completed"] == 0
    for mode in sorted(modes):
        figures = summary["protocols"][mode]
        assert figures["completed"] > 0, mode
        # Members crash in every mode, holding what they consumed since their last commit.
        assert figures["duplicate_windows"] > 0 and figures["duplicate_window_s"] > 0, mode
    assert summary["totals"]["duplicate_windows"] == sum(
        summary["protocols"][mode]["duplicate_windows"] for mode in summary["protocols"]
    )
