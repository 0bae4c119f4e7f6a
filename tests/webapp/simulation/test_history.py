"""``generate_history``: a synthetic history from the real engine in virtual time
(webapp.simulation.history and ``manage.py generate_history``).

One history of 25,000 events (seed 1) is generated once for the module; the tests read it back
with pyarrow's dataset reader, as a Spark job would, and check it against the schema, the
layout, what must occur in it, and the generator's own summary."""

from __future__ import annotations

import datetime
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command

from coordinator_engine import GroupCoordinator, SqliteLog
from coordinator_engine.client import CLOSE_REASON
from coordinator_engine.events import CONSUMER_EVENT_TYPES, HANDOFF_EVENT_TYPES
from spark_tasks.schema import HISTORY_SCHEMA, table_of
from tests import ROOT
from tests.spark.consumer_churn import consumer_churn
from webapp.analysis.export import HistoryDirError
from webapp.simulation.history import (
    GeneratedHistory,
    coordinator_configs,
    generate_history,
    record_log_path,
)
from webapp.simulation.history.rows import HistoryRows

EVENTS = 25_000
EVENT_TYPES = {
    "StateChanged",
    "GenerationStarted",
    "MemberJoined",
    "MemberRemoved",
    "StaticMemberReplaced",
    "PendingMemberAdded",
    "PendingMemberRemoved",
    "AssignmentStored",
    "OffsetsCommitted",
    "OffsetsRemoved",
    "GroupRemoved",
    *HANDOFF_EVENT_TYPES,
    *CONSUMER_EVENT_TYPES,
}
ADMIN_REBALANCE = "an admin requested a rebalance"


def read_back(directory: Path) -> pa.Table:
    dataset = ds.dataset(directory, format="parquet", partitioning="hive")
    return dataset.to_table().sort_by("seq")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GeneratedHistory]:
    directory = tmp_path_factory.mktemp("generated") / "history"
    return directory, generate_history(directory, EVENTS, seed=1, jobs=1)


@pytest.fixture(scope="module")
def rows(generated: tuple[Path, GeneratedHistory]) -> list[dict[str, Any]]:
    return read_back(generated[0]).to_pylist()  # type: ignore[no-any-return]


def test_the_history_has_at_least_the_events_asked_for_numbered_in_time_order(
    generated: tuple[Path, GeneratedHistory], rows: list[dict[str, Any]]
) -> None:
    _, history = generated
    # At least N: the coordinators stop acting at their share of N, then let every group
    # settle, which adds a few events.
    assert EVENTS <= len(rows) <= EVENTS + 200
    assert history.events == history.last_seq == len(rows)
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    times = [r["at_ms"] for r in rows]
    assert times == sorted(times)
    last_of_group: dict[str, int] = {}
    for r in rows:
        assert r["prev_seq"] == last_of_group.get(r["group_id"], 0), r
        last_of_group[r["group_id"]] = r["seq"]


def test_the_files_follow_the_history_schema_partitioned_by_day(
    generated: tuple[Path, GeneratedHistory], rows: list[dict[str, Any]]
) -> None:
    directory, history = generated
    files = sorted(directory.glob("day=*/*.parquet"))
    assert len(files) == history.files
    for path in files:
        assert re.fullmatch(r"day=\d{4}-\d\d-\d\d", path.parent.name)
        first, last = map(int, re.fullmatch(r"part-(\d{12})-(\d{12})\.parquet", path.name).groups())  # type: ignore[union-attr]
        table = pq.read_table(path)
        assert table.schema.equals(HISTORY_SCHEMA)
        assert table.schema.metadata == HISTORY_SCHEMA.metadata
        seqs = table.column("seq").to_pylist()
        assert (min(seqs), max(seqs)) == (first, last)
    for r in rows:
        moment = datetime.datetime.fromtimestamp(r["at_ms"] / 1000, tz=datetime.UTC)
        assert r["day"] == moment.date().isoformat()
    days = sorted({r["day"] for r in rows})
    assert list(history.days) == days
    assert days[0] == "2026-03-02"
    assert len(days) >= 4


def test_every_event_type_assignor_and_way_to_leave_a_group_occurs(
    rows: list[dict[str, Any]],
) -> None:
    assert {r["type"] for r in rows} == EVENT_TYPES

    def reasons(kind: str) -> set[str]:
        return {r["reason"] for r in rows if r["type"] == kind}

    assert {
        r["protocol_name"] for r in rows if r["type"] == "GenerationStarted" and r["protocol_name"]
    } == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    assert reasons("MemberRemoved") >= {
        "left",
        "session_timeout",
        "rebalance_timeout",
        "sync_timeout",
        "fenced",
        "removed_by_admin",
    }
    assert reasons("OffsetsRemoved") == {"expired", "deleted", "group_deleted"}
    assert reasons("GroupRemoved") == {"expired", "deleted", "offsets_deleted"}
    assert ADMIN_REBALANCE in reasons("StateChanged")
    assert any(r["type"] == "MemberJoined" and r["group_instance_id"] for r in rows)
    commits = [r for r in rows if r["type"] == "OffsetsCommitted"]
    assert {r["generation_id"] for r in commits if not r["member_id"]} == {-1}


def test_the_generators_own_counts_agree_with_the_events(
    generated: tuple[Path, GeneratedHistory], rows: list[dict[str, Any]]
) -> None:
    directory, history = generated
    assert json.loads((directory / "_generated.json").read_text()) == json.loads(
        json.dumps(history.to_json())
    )
    per_group: dict[str, Counter[Any]] = {}
    for r in rows:
        counts = per_group.setdefault(r["group_id"], Counter())
        counts[r["type"]] += 1
        counts[r["type"], r["reason"]] += 1
        if r["type"] == "MemberRemoved" and r["reason"] == "left":
            counts["left", r["detail"]] += 1
    assert len(history.groups) == 17
    for group in history.groups:
        counts = per_group[group.group_id]
        assert group.fatal_errors == 0
        if group.consumer:
            # Epochs at which a member held its whole target: not every epoch reaches one
            # before the next (an epoch bumped again while its members reconcile).
            assert 0 < group.generations <= counts["ConsumerGroupEpochBumped"], group.group_id
            # A member joins again (epoch 0) after its poll timeout, and a static one that
            # came back after its session expired.
            joined = counts["ConsumerMemberJoined"]
            assert group.joins <= joined <= group.joins + group.slow_members + group.static_restarts
            assert group.commits == counts["OffsetsCommitted"], group.group_id
            # Members that closed, and the slow ones that left on their poll timeout.
            assert group.leaves + group.slow_members >= counts["MemberRemoved", "left"] > 0
            # A static member's process ends with a leave at epoch -2; most come back within
            # the session and take over their assignment without a new epoch.
            replaced = counts["StaticMemberReplaced"]
            assert replaced <= group.static_restarts <= counts["ConsumerStaticMemberLeft"]
            assert (replaced > 0) == (group.static_members > 0), group.group_id
            assert counts["AssignmentStored"] == counts["GenerationStarted"] == 0
            continue
        if group.handoff:
            # Epochs a member was told were Stable: some plans settle between two heartbeats.
            assert 0 < group.generations <= counts["HandoffPlanMade"], group.group_id
            assert group.joins == counts["HandoffMemberJoined"], group.group_id
            assert group.leaves == counts["MemberRemoved", "left"], group.group_id
            assert group.commits == counts["OffsetsCommitted"], group.group_id
            assert counts["AssignmentStored"] == counts["GenerationStarted"] == 0
            continue
        assert group.generations == counts["AssignmentStored"], group.group_id
        assert group.commits == counts["OffsetsCommitted"], group.group_id
        assert group.admin_rebalances == counts["StateChanged", ADMIN_REBALANCE]
        assert group.admin_removals == counts["MemberRemoved", "removed_by_admin"]
        assert group.leaves == counts["left", CLOSE_REASON]
        assert group.offset_deletions == counts["OffsetsRemoved", "deleted"]
        assert group.group_deletions == counts["GroupRemoved", "deleted"]
    classic_groups = [
        g for g in history.groups if g.assignor is not None and not g.handoff and not g.consumer
    ]
    assert {g.assignor for g in classic_groups} == {
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
    }
    assert {g.cooperative for g in classic_groups} == {True, False}
    for field in ("joins", "leaves", "crashes", "slow_members", "admin_rebalances", "generations"):
        assert all(getattr(g, field) > 0 for g in classic_groups), field
    for field in ("static_restarts", "admin_removals"):
        assert all(getattr(g, field) > 0 for g in classic_groups if g.static_members), field
    assert sum(g.partition_changes for g in classic_groups) > 0
    assert history.cleanups > 0 and history.offsets_expired > 0 and history.groups_expired > 0
    handoff_groups = [g for g in history.groups if g.handoff]
    assert {g.group_id for g in handoff_groups} == {"orders-handoff", "inventory-handoff"}
    for field in ("joins", "leaves", "crashes", "slow_members", "generations", "commits"):
        assert all(getattr(g, field) > 0 for g in handoff_groups), field
    protocol_groups = [g for g in history.groups if g.consumer]
    assert {(g.group_id, g.assignor) for g in protocol_groups} == {
        ("orders-consumer", "range"),
        ("inventory-consumer", "uniform"),
        ("shipments-consumer", "uniform"),
    }
    for field in ("joins", "leaves", "crashes", "slow_members", "generations", "commits"):
        assert all(getattr(g, field) > 0 for g in protocol_groups), field
    assert all(g.static_restarts > 0 for g in protocol_groups if g.static_members)


def test_a_handoff_groups_partition_is_never_held_by_two_members(
    rows: list[dict[str, Any]],
) -> None:
    """Seed 004's promise, read back from the generated events: a partition is granted only
    once its previous holder closed it or was removed; the plans carry the epoch."""
    held: dict[str, dict[tuple[str, int], str]] = {}
    states: set[str] = set()
    for r in rows:
        group = held.setdefault(r["group_id"], {})
        partitions = [(p["topic"], p["partition"]) for p in r["partitions"] or ()]
        if r["type"] == "HandoffPartitionsGranted":
            for tp in partitions:
                assert tp not in group, (r, group[tp])
                group[tp] = r["member_id"]
        elif r["type"] == "HandoffPartitionsClosed":
            for tp in partitions:
                assert group.pop(tp) == r["member_id"], r
        elif r["type"] == "MemberRemoved":
            for tp in [tp for tp, member in group.items() if member == r["member_id"]]:
                del group[tp]
        elif r["type"] == "HandoffPlanMade":
            assert r["generation_id"] > 0 and r["assignment"] is not None, r
        elif r["type"] == "StateChanged" and r["group_id"].endswith("-handoff"):
            states.add(r["to_state"])
    assert states >= {"Starting", "Stable", "Closing"}
    assert sum(r["type"] == "HandoffPartitionsGranted" for r in rows) > 0


def test_a_consumer_groups_partition_is_assigned_only_once_its_owner_let_it_go(
    rows: list[dict[str, Any]],
) -> None:
    """KIP-848's promise, read back from the generated events: a partition is assigned to a
    member only when nobody owns it, or its owner was asked to revoke it and has not been
    given it back since (the coordinator waits for the release); a removed member owns
    nothing; a static member's next process takes over what it owned. Every target
    assignment covers each partition at most once."""
    owner: dict[str, dict[tuple[str, int], str]] = {}
    revoking: dict[str, set[tuple[str, int]]] = {}
    states: set[str] = set()
    for r in rows:
        if not r["group_id"].endswith("-consumer"):
            continue
        group = owner.setdefault(r["group_id"], {})
        partitions = [(p["topic"], p["partition"]) for p in r["partitions"] or ()]
        member = r["member_id"]
        if r["type"] == "ConsumerPartitionsRevoked":
            for tp in partitions:
                assert group.get(tp) == member, (r, group.get(tp))
                revoking.setdefault(member, set()).add(tp)
        elif r["type"] == "ConsumerPartitionsAssigned":
            for tp in partitions:
                previous = group.get(tp)
                assert previous is None or tp in revoking.get(previous, ()), (r, previous)
                if previous is not None:
                    revoking[previous].discard(tp)
                group[tp] = member
        elif r["type"] == "MemberRemoved":
            for tp in [tp for tp, m in group.items() if m == member]:
                del group[tp]
            revoking.pop(member, None)
        elif r["type"] == "StaticMemberReplaced":  # the new process takes over what it owned
            for tp in [tp for tp, m in group.items() if m == r["old_member_id"]]:
                group[tp] = member
            revoking[member] = revoking.pop(r["old_member_id"], set())
        elif r["type"] == "ConsumerTargetAssignmentComputed":
            targets = [(a["topic"], a["partition"]) for a in r["assignment"]]
            assert len(targets) == len(set(targets)), r
        elif r["type"] == "StateChanged":
            states.add(r["to_state"])
    assert states == {"Empty", "Assigning", "Reconciling", "Stable"}
    assert sum(r["type"] == "ConsumerPartitionsRevoked" for r in rows) > 0


def test_the_same_seed_gives_the_same_history_whatever_the_jobs(
    generated: tuple[Path, GeneratedHistory], tmp_path: Path
) -> None:
    directory, history = generated
    again = generate_history(tmp_path / "again", EVENTS, seed=1, jobs=2)
    assert again == history
    assert read_back(tmp_path / "again").equals(read_back(directory))
    assert (tmp_path / "again" / "_generated.json").read_bytes() == (
        directory / "_generated.json"
    ).read_bytes()


def test_another_seed_gives_another_history(tmp_path: Path) -> None:
    one = generate_history(tmp_path / "one", 300, seed=1)
    two = generate_history(tmp_path / "two", 300, seed=2)
    assert one.groups != two.groups
    assert not read_back(tmp_path / "one").equals(read_back(tmp_path / "two"))


def test_bad_arguments_are_refused_in_words(tmp_path: Path) -> None:
    for events in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="events must be an int >= 1"):
            generate_history(tmp_path / "x", events)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jobs must be an int from 1 to 2"):
        generate_history(tmp_path / "x", 10, jobs=3)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "data.csv").write_text("x")
    with pytest.raises(HistoryDirError, match="is not empty"):
        generate_history(tmp_path / "busy", 10)
    (tmp_path / "file").write_text("x")
    with pytest.raises(HistoryDirError, match="is a file"):
        generate_history(tmp_path / "file", 10)
    assert not (tmp_path / "x").exists()


def test_the_command_reports_progress_a_summary_line_and_a_table(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("generate_history", str(tmp_path / "h"), "--events", "300", stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    history = json.loads((tmp_path / "h" / "_generated.json").read_text())
    assert lines[0].startswith(
        f"Generated {history['events']} events in {history['files']} files to {tmp_path / 'h'} "
        f"(last seq {history['last_seq']}; days 2026-03-02 to {history['days'][-1]}) in "
    )
    assert lines[1].split()[:3] == ["group", "assignor", "coop"]
    assert [line.split()[0] for line in lines[2:]] == [g["group_id"] for g in history["groups"]]
    assert err.getvalue().splitlines()[-1].startswith(f"generated {history['events']} events")


def test_the_command_exits_non_zero_naming_the_problem(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "SECRET_KEY": "test",
        "DATABASE": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    command = [sys.executable, "manage.py", "generate_history", str(tmp_path)]
    finished = subprocess.run(
        [*command, "--events", "0"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode != 0
    assert "argument --events: must be at least 1, got 0" in finished.stderr


def test_record_logs_hold_each_coordinators_full_log_which_replays_to_its_groups(
    tmp_path: Path,
) -> None:
    events = 1000
    plain = generate_history(tmp_path / "plain", events, seed=3, jobs=1)
    logged = generate_history(
        tmp_path / "history", events, seed=3, jobs=2, record_logs=tmp_path / "logs"
    )
    # The logs change nothing in the history.
    assert logged == plain
    assert read_back(tmp_path / "history").equals(read_back(tmp_path / "plain"))
    configs = coordinator_configs(events)
    assert len(configs) == 2
    replayed_offsets = 0
    for index, config in enumerate(configs):
        path = record_log_path(tmp_path / "logs", index)
        assert path == tmp_path / "logs" / f"coordinator-{index}.db"
        with SqliteLog(path) as log:
            records = list(log.read())
            coord = GroupCoordinator(config, log, now_ms=logged.last_at_ms)
        # The full stream: superseded commits and tombstones are still there.
        assert len(records) > len({key for key, _ in records})
        assert any(value is None for _, value in records)
        mine = {g.group_id for g in logged.groups if g.coordinator == index}
        assert coord.group_ids() and set(coord.group_ids()) <= mine
        replayed_offsets += sum(len(coord.committed_offsets(g)) for g in coord.group_ids())
    assert replayed_offsets > 0
    # A log is never appended to twice.
    with pytest.raises(HistoryDirError, match=r"coordinator-0\.db exists"):
        generate_history(tmp_path / "again", events, record_logs=tmp_path / "logs")
    assert not (tmp_path / "again").exists()


def test_the_command_writes_record_logs_when_asked(tmp_path: Path) -> None:
    call_command(
        "generate_history",
        str(tmp_path / "h"),
        "--events",
        "300",
        "--record-logs",
        str(tmp_path / "logs"),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert sorted(p.name for p in (tmp_path / "logs").glob("*.db")) == [
        "coordinator-0.db",
        "coordinator-1.db",
    ]


def test_the_generators_rows_are_the_rows_row_of_makes() -> None:
    """``HistoryRows`` gathers rows a column at a time as events are emitted; they must be the
    rows ``spark_tasks.schema.row_of`` makes of the same events' JSON (the contract the report
    reads), consumer-protocol events included: their partitions, targets, epochs, instance
    ids and assignors."""
    events = consumer_churn(seed=5, groups=2, steps=400)
    assert {type(e).__name__ for e in events} >= set(CONSUMER_EVENT_TYPES)
    gathered = HistoryRows()
    for event in events:
        gathered.add(event)
    table = gathered.table(1)
    expected = table_of(
        {**event.to_json(), "seq": seq, "prev_seq": 0} for seq, event in enumerate(events, 1)
    )
    assert table.schema.equals(expected.schema)
    assert table.to_pylist() == expected.to_pylist()
