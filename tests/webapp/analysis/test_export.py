"""``export_history``: the stored events as day-partitioned Parquet, written incrementally
(webapp.analysis.export and ``manage.py export_history``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from coordinator_engine.events import (
    AssignmentStored,
    GenerationStarted,
    GroupEvent,
    GroupRemoved,
    MemberJoined,
    MemberRemoved,
    OffsetsCommitted,
    OffsetsRemoved,
    PendingMemberAdded,
    StateChanged,
    StaticMemberReplaced,
)
from spark_tasks.schema import HISTORY_SCHEMA
from tests import ROOT
from webapp.analysis import export
from webapp.analysis.export import ExportResult, HistoryDirError, export_history
from webapp.models import GroupEvent as StoredEvent

# 2026-03-02 23:59:59.500 UTC, half a second before midnight.
EVENING = 1_772_495_999_500
# 2026-03-04 10:00:00 UTC.
LATER = 1_772_618_400_000

FIRST_EVENTS: list[tuple[int, int, GroupEvent]] = [
    (
        1,
        0,
        StateChanged(
            group_id="orders",
            at_ms=EVENING,
            from_state="Empty",
            to_state="PreparingRebalance",
            reason="Adding new member c-1",
        ),
    ),
    (
        2,
        1,
        MemberJoined(
            group_id="orders",
            at_ms=EVENING + 250,
            member_id="c-1",
            group_instance_id=None,
            client_id="c",
            client_host="/10.0.0.1",
            session_timeout_ms=45000,
            rebalance_timeout_ms=300000,
            protocols=["range", "roundrobin"],
            rejoined=False,
            reason="joining the group",
        ),
    ),
    (
        3,
        2,
        GenerationStarted(
            group_id="orders",
            at_ms=EVENING + 3500,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="range",
            leader_id="c-1",
            member_ids=["c-1"],
            join_started_ms=EVENING,
        ),
    ),
    (
        4,
        3,
        AssignmentStored(
            group_id="orders",
            at_ms=EVENING + 3510,
            generation_id=1,
            assignments={"c-1": "0003"},
            partitions={"c-1": [["orders", 0], ["orders", 1]]},
        ),
    ),
    (
        5,
        0,
        StaticMemberReplaced(
            group_id="payments",
            at_ms=EVENING + 4000,
            group_instance_id="p-0",
            old_member_id="p-0-a",
            new_member_id="p-0-b",
        ),
    ),
    (
        6,
        5,
        MemberRemoved(
            group_id="payments",
            at_ms=EVENING + 4000,
            member_id="p-0-a",
            group_instance_id="p-0",
            reason="fenced",
            detail="static member p-0 rejoined as p-0-b",
        ),
    ),
    (
        7,
        4,
        OffsetsCommitted(
            group_id="orders",
            at_ms=EVENING + 6000,
            member_id="c-1",
            generation_id=1,
            offsets=[["orders", 0, 42], ["orders", 1, 7]],
        ),
    ),
]

LATER_EVENTS: list[tuple[int, int, GroupEvent]] = [
    (
        8,
        7,
        OffsetsRemoved(
            group_id="orders",
            at_ms=LATER,
            reason="expired",
            partitions=[["orders", 0], ["orders", 1]],
        ),
    ),
    (
        9,
        8,
        GroupRemoved(
            group_id="orders", at_ms=LATER, reason="expired", generation_id=1, tombstoned=True
        ),
    ),
    (10, 6, PendingMemberAdded(group_id="payments", at_ms=LATER + 1, member_id="p-9")),
]


def row(**columns: Any) -> dict[str, Any]:
    """An expected row: the columns given, every other one null."""
    return {name: None for name in [*HISTORY_SCHEMA.names, "day"]} | columns


EXPECTED_FIRST = [
    row(
        seq=1,
        prev_seq=0,
        group_id="orders",
        type="StateChanged",
        at_ms=EVENING,
        from_state="Empty",
        to_state="PreparingRebalance",
        reason="Adding new member c-1",
        day="2026-03-02",
    ),
    row(
        seq=2,
        prev_seq=1,
        group_id="orders",
        type="MemberJoined",
        at_ms=EVENING + 250,
        member_id="c-1",
        client_id="c",
        client_host="/10.0.0.1",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        protocols=["range", "roundrobin"],
        rejoined=False,
        reason="joining the group",
        day="2026-03-02",
    ),
    row(
        seq=3,
        prev_seq=2,
        group_id="orders",
        type="GenerationStarted",
        at_ms=EVENING + 3500,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="c-1",
        member_ids=["c-1"],
        join_started_ms=EVENING,
        day="2026-03-03",
    ),
    row(
        seq=4,
        prev_seq=3,
        group_id="orders",
        type="AssignmentStored",
        at_ms=EVENING + 3510,
        generation_id=1,
        assignment=[
            {"member_id": "c-1", "topic": "orders", "partition": 0},
            {"member_id": "c-1", "topic": "orders", "partition": 1},
        ],
        day="2026-03-03",
    ),
    row(
        seq=5,
        prev_seq=0,
        group_id="payments",
        type="StaticMemberReplaced",
        at_ms=EVENING + 4000,
        member_id="p-0-b",
        old_member_id="p-0-a",
        group_instance_id="p-0",
        day="2026-03-03",
    ),
    row(
        seq=6,
        prev_seq=5,
        group_id="payments",
        type="MemberRemoved",
        at_ms=EVENING + 4000,
        member_id="p-0-a",
        group_instance_id="p-0",
        reason="fenced",
        detail="static member p-0 rejoined as p-0-b",
        day="2026-03-03",
    ),
    row(
        seq=7,
        prev_seq=4,
        group_id="orders",
        type="OffsetsCommitted",
        at_ms=EVENING + 6000,
        member_id="c-1",
        generation_id=1,
        offsets=[
            {"topic": "orders", "partition": 0, "offset": 42},
            {"topic": "orders", "partition": 1, "offset": 7},
        ],
        day="2026-03-03",
    ),
]

EXPECTED_LATER = [
    row(
        seq=8,
        prev_seq=7,
        group_id="orders",
        type="OffsetsRemoved",
        at_ms=LATER,
        reason="expired",
        partitions=[{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}],
        day="2026-03-04",
    ),
    row(
        seq=9,
        prev_seq=8,
        group_id="orders",
        type="GroupRemoved",
        at_ms=LATER,
        reason="expired",
        generation_id=1,
        tombstoned=True,
        day="2026-03-04",
    ),
    row(
        seq=10,
        prev_seq=6,
        group_id="payments",
        type="PendingMemberAdded",
        at_ms=LATER + 1,
        member_id="p-9",
        day="2026-03-04",
    ),
]


def store(events: Iterable[tuple[int, int, GroupEvent]]) -> None:
    """Store events as the runtime's history writer does: the envelope in columns, the rest
    in the payload."""
    StoredEvent.objects.bulk_create(
        StoredEvent(
            seq=seq,
            prev_seq=prev_seq,
            group_id=event.group_id,
            type=event.type,
            at_ms=event.at_ms,
            payload={
                key: value
                for key, value in event.to_json().items()
                if key not in ("type", "group_id", "at_ms")
            },
        )
        for seq, prev_seq, event in events
    )


def read_back(directory: Path) -> list[dict[str, Any]]:
    dataset = ds.dataset(directory, format="parquet", partitioning="hive")
    return dataset.to_table().sort_by("seq").to_pylist()  # type: ignore[no-any-return]


def part_files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.glob("day=*/*"))


def manifest(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "_export.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_the_export_holds_every_stored_event_as_a_row_partitioned_by_day(tmp_path: Path) -> None:
    store(FIRST_EVENTS)
    result = export_history(tmp_path / "history")
    assert result == ExportResult(events=7, files=2, last_seq=7, total_events=7)
    assert read_back(tmp_path / "history") == EXPECTED_FIRST
    assert part_files(tmp_path / "history") == [
        "day=2026-03-02/part-000000000001-000000000002.parquet",
        "day=2026-03-03/part-000000000003-000000000007.parquet",
    ]
    for path in (tmp_path / "history").glob("day=*/*.parquet"):
        schema = pq.read_schema(path)
        assert schema.equals(HISTORY_SCHEMA)  # lists' items are named "element" in Parquet
        assert schema.metadata == {b"rebalance_lab.history_schema": b"3"}
    assert manifest(tmp_path / "history") == {
        "schema_version": 3,
        "last_seq": 7,
        "events": 7,
        "files": 2,
    }


@pytest.mark.django_db
def test_a_second_export_writes_only_the_events_stored_since(tmp_path: Path) -> None:
    directory = tmp_path / "history"
    store(FIRST_EVENTS)
    export_history(directory)
    store(LATER_EVENTS)
    assert export_history(directory) == ExportResult(
        events=3, files=1, last_seq=10, total_events=10
    )
    assert read_back(directory) == EXPECTED_FIRST + EXPECTED_LATER
    assert len(part_files(directory)) == 3
    assert manifest(directory)["last_seq"] == 10
    assert manifest(directory)["events"] == 10
    assert export_history(directory) == ExportResult(
        events=0, files=0, last_seq=10, total_events=10
    )
    assert len(part_files(directory)) == 3


@pytest.mark.django_db
def test_an_export_pages_through_the_events_in_batches(tmp_path: Path) -> None:
    store(FIRST_EVENTS + LATER_EVENTS)
    seen: list[tuple[int, int]] = []
    result = export_history(
        tmp_path, batch_size=4, progress=lambda events, last: seen.append((events, last))
    )
    assert seen == [(4, 4), (8, 8), (10, 10)]
    assert result == ExportResult(events=10, files=5, last_seq=10, total_events=10)
    assert read_back(tmp_path) == EXPECTED_FIRST + EXPECTED_LATER


@pytest.mark.django_db
def test_files_of_an_export_that_crashed_are_written_again_not_counted_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store(FIRST_EVENTS)
    writes = []

    def crash_on_the_third_manifest(path: Path, data: dict[str, Any]) -> None:
        writes.append(data)
        if len(writes) == 3:
            raise KeyboardInterrupt  # the process dies after page 2's files are in place
        real_write_json(path, data)

    real_write_json = export.write_json_atomically
    monkeypatch.setattr(export, "write_json_atomically", crash_on_the_third_manifest)
    with pytest.raises(KeyboardInterrupt):
        export_history(tmp_path, batch_size=3)
    monkeypatch.undo()
    assert manifest(tmp_path)["last_seq"] == 3
    assert "day=2026-03-03/part-000000000004-000000000006.parquet" in part_files(tmp_path)
    (tmp_path / "day=2026-03-03" / ".part-000000000007-000000000007.parquet.tmp").write_text("")

    assert export_history(tmp_path, batch_size=3) == ExportResult(
        events=4, files=2, last_seq=7, total_events=7
    )
    assert read_back(tmp_path) == EXPECTED_FIRST
    assert manifest(tmp_path) == {"schema_version": 3, "last_seq": 7, "events": 7, "files": 4}
    assert not list(tmp_path.glob("day=*/.*"))


@pytest.mark.django_db
def test_an_empty_history_exports_nothing_and_marks_the_directory(tmp_path: Path) -> None:
    assert export_history(tmp_path / "new") == ExportResult(
        events=0, files=0, last_seq=0, total_events=0
    )
    assert part_files(tmp_path / "new") == []
    assert manifest(tmp_path / "new")["last_seq"] == 0


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda d: d.write_text("x"), "is a file, not a directory"),
        (lambda d: (d.mkdir(), (d / "notes.txt").write_text("x")), "not an export's directory"),
        (
            lambda d: (d.mkdir(), (d / "_generated.json").write_text("{}")),
            "holds a generated history",
        ),
        (lambda d: (d.mkdir(), (d / "_export.json").write_text("{not json")), "is corrupt"),
        (
            lambda d: (d.mkdir(), (d / "_export.json").write_text('{"last_seq": 3}')),
            "is corrupt",
        ),
        (
            lambda d: (
                d.mkdir(),
                (d / "_export.json").write_text(
                    '{"schema_version": 2, "last_seq": 0, "events": 0, "files": 0}'
                ),
            ),
            "is of history schema version 2; this export writes version 3",
        ),
    ],
)
def test_a_directory_that_cannot_take_the_export_is_refused_in_words(
    tmp_path: Path, prepare: Any, message: str
) -> None:
    directory = tmp_path / "out"
    prepare(directory)
    with pytest.raises(HistoryDirError, match=message):
        export_history(directory)


def test_a_directory_that_is_not_writable_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, for whom every directory is writable: ask os.access to say no.
    monkeypatch.setattr(export.os, "access", lambda path, mode: False)
    with pytest.raises(HistoryDirError, match="is not writable"):
        export_history(tmp_path)


def test_a_directory_under_a_file_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(HistoryDirError, match="cannot create the directory"):
        export_history(tmp_path / "file" / "history")


@pytest.mark.django_db
def test_the_command_reports_progress_and_a_summary_line(tmp_path: Path) -> None:
    store(FIRST_EVENTS)
    out, err = io.StringIO(), io.StringIO()
    call_command("export_history", str(tmp_path), "--batch-size", "5", stdout=out, stderr=err)
    assert out.getvalue() == f"Exported 7 events in 3 files to {tmp_path} (last seq 7).\n"
    assert err.getvalue().splitlines() == [
        "exported 5 events (up to seq 5)",
        "exported 7 events (up to seq 7)",
    ]
    again = io.StringIO()
    call_command("export_history", str(tmp_path), stdout=again, stderr=io.StringIO())
    assert again.getvalue().startswith("Nothing new to export")


@pytest.mark.django_db
def test_the_command_refuses_a_bad_batch_size_and_a_bad_directory(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--batch-size: must be at least 1"):
        call_command("export_history", str(tmp_path), "--batch-size", "0")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is a file"):
        call_command("export_history", str(tmp_path / "file"))


def test_the_command_exits_non_zero_naming_the_problem(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "SECRET_KEY": "test",
        "DATABASE": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    finished = subprocess.run(
        [sys.executable, "manage.py", "export_history", str(tmp_path / "file")],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 1
    assert f"CommandError: {tmp_path / 'file'} is a file, not a directory" in finished.stderr
