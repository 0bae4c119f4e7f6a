"""The durable record log: MemoryLog and SqliteLog."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_engine.log import LogAppendError, MemoryLog, RecordLog, SqliteLog, compacted
from tests.log_files import records_in_database_file

REPO_ROOT = Path(__file__).resolve().parents[2]

Entry = tuple[bytes, bytes | None]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "log.sqlite3"


@pytest.fixture(params=["memory", "sqlite"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of empty logs of either kind (SqliteLogs are closed afterwards)."""
    opened: list[SqliteLog] = []

    def make() -> MemoryLog | SqliteLog:
        if request.param == "memory":
            return MemoryLog()
        log = SqliteLog(tmp_path / f"log-{len(opened)}.sqlite3")
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def replayed(entries: list[Entry]) -> dict[bytes, bytes]:
    """The state a replay builds: the latest value per key, a tombstone deletes."""
    state: dict[bytes, bytes] = {}
    for key, value in entries:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value
    return state


# ---------------------------------------------------------------------------------------------
# Both logs


def test_both_logs_satisfy_the_record_log_protocol(make_log: Callable[[], Any]) -> None:
    log: RecordLog = make_log()
    log.append([(b"k", b"v")])
    assert list(log.read()) == [(b"k", b"v")]


def test_reads_return_entries_in_append_order(make_log: Callable[[], Any]) -> None:
    log = make_log()
    log.append([(b"a", b"1"), (b"b", b"2")])
    log.append([(b"a", None)])
    log.append([])
    log.append([(b"c", b""), (b"a", b"3")])
    assert list(log.read()) == [
        (b"a", b"1"),
        (b"b", b"2"),
        (b"a", None),
        (b"c", b""),
        (b"a", b"3"),
    ]


def test_empty_value_and_tombstone_stay_distinct(make_log: Callable[[], Any]) -> None:
    log = make_log()
    log.append([(b"", b""), (b"k", None)])
    assert [(k, v) for k, v in log.read()] == [(b"", b""), (b"k", None)]
    assert [type(v) for _, v in log.read()] == [bytes, type(None)]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("k", b"v")], r"entries\[0\]: key must be bytes, got str"),
        ([(b"k", "v")], r"entries\[0\]: value must be bytes or None \(tombstone\), got str"),
        ([(b"k", b"v"), (None, b"v")], r"entries\[1\]: key must be bytes, got NoneType"),
        ([(bytearray(b"k"), b"v")], r"key must be bytes, got bytearray"),
        ([(b"k", memoryview(b"v"))], r"value must be bytes or None \(tombstone\), got memoryview"),
        ([[b"k", b"v"]], r"entries\[0\] must be a \(key, value\) tuple, got list"),
        (
            [(b"k", b"v", b"x")],
            r"entries\[0\] must be a \(key, value\) tuple, got tuple of length 3",
        ),
        ([b"kv"], r"entries\[0\] must be a \(key, value\) tuple, got bytes"),
        (b"kv", r"entries must be a sequence of \(key, value\) tuples, got bytes"),
        (None, r"entries must be a sequence of \(key, value\) tuples, got NoneType"),
    ],
)
def test_append_rejects_malformed_entries_and_stores_nothing(
    make_log: Callable[[], Any], entries: Any, message: str
) -> None:
    log = make_log()
    log.append([(b"before", b"1")])
    with pytest.raises(TypeError, match=message):
        log.append(entries)
    assert list(log.read()) == [(b"before", b"1")]


def test_append_accepts_any_iterable_of_pairs(make_log: Callable[[], Any]) -> None:
    log = make_log()
    log.append(tuple((bytes([i]), b"v") for i in range(3)))
    log.append(iter([(b"x", None)]))
    assert list(log.read()) == [(b"\x00", b"v"), (b"\x01", b"v"), (b"\x02", b"v"), (b"x", None)]


def test_compaction_keeps_the_latest_entry_per_key_and_drops_finished_tombstones(
    make_log: Callable[[], Any],
) -> None:
    log = make_log()
    log.append(
        [
            (b"a", b"1"),
            (b"b", b"1"),
            (b"a", b"2"),
            (b"c", b"1"),
            (b"b", None),  # deletes b: b's older entry goes, and so does the tombstone
            (b"d", None),  # a tombstone with nothing to delete
            (b"c", b"2"),
            (b"e", None),
            (b"e", b"1"),  # re-created after its tombstone
            (b"a", b"3"),
        ]
    )
    assert log.compact() == 7
    assert list(log.read()) == [(b"c", b"2"), (b"e", b"1"), (b"a", b"3")]
    assert log.compact() == 0
    log.append([(b"c", None), (b"f", b"1")])
    assert list(log.read()) == [
        (b"c", b"2"),
        (b"e", b"1"),
        (b"a", b"3"),
        (b"c", None),
        (b"f", b"1"),
    ]
    assert log.compact() == 2
    assert list(log.read()) == [(b"e", b"1"), (b"a", b"3"), (b"f", b"1")]


def test_compacting_an_empty_log_drops_nothing(make_log: Callable[[], Any]) -> None:
    log = make_log()
    assert log.compact() == 0
    assert list(log.read()) == []


entry_lists = st.lists(
    st.tuples(st.sampled_from([b"a", b"b", b"c", b"d"]), st.none() | st.binary(max_size=2)),
    max_size=30,
)


@given(entries=entry_lists)
def test_replaying_a_compacted_log_gives_the_same_state(entries: list[Entry]) -> None:
    survivors = compacted(entries)
    assert replayed(survivors) == replayed(entries)
    assert all(value is not None for _, value in survivors)
    assert len({key for key, _ in survivors}) == len(survivors)
    # Survivors keep their relative order.
    positions = [max(i for i, e in enumerate(entries) if e == s) for s in survivors]
    assert positions == sorted(positions)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=entry_lists)
def test_sqlite_compaction_agrees_with_memory_compaction(
    tmp_path: Path, entries: list[Entry]
) -> None:
    memory = MemoryLog()
    memory.append(entries)
    memory.compact()
    path = tmp_path / "compact.sqlite3"
    path.unlink(missing_ok=True)
    with SqliteLog(path) as log:
        log.append(entries)
        log.compact()
        assert list(log.read()) == memory.entries == compacted(entries)


# ---------------------------------------------------------------------------------------------
# MemoryLog


def test_memory_log_entries_lists_the_appended_pairs() -> None:
    log = MemoryLog()
    assert log.entries == []
    log.append([(b"k", b"v"), (b"k", None)])
    assert log.entries == [(b"k", b"v"), (b"k", None)]


def test_memory_log_read_is_a_snapshot() -> None:
    log = MemoryLog([(b"a", b"1")])
    reader = iter(log.read())
    log.append([(b"b", b"2")])
    assert list(reader) == [(b"a", b"1")]


# ---------------------------------------------------------------------------------------------
# SqliteLog


def test_sqlite_log_creates_one_table_in_wal_mode(db_path: Path) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"k", b"v")])
        assert log.synchronous == "NORMAL"
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = [
            (name, kind, notnull, pk)
            for _, name, kind, notnull, _, pk in conn.execute("PRAGMA table_info(records)")
        ]
        assert columns == [
            ("offset", "INTEGER", 0, 1),
            ("key", "BLOB", 1, 0),
            ("value", "BLOB", 0, 0),
        ]
        assert conn.execute('SELECT "offset", key, value FROM records').fetchall() == [
            (1, b"k", b"v")
        ]
    finally:
        conn.close()


def test_sqlite_log_reopened_after_close_reads_everything_back(db_path: Path) -> None:
    entries = [
        (f"key-{i % 7}".encode(), None if i % 5 == 0 else f"v{i}".encode()) for i in range(10_000)
    ]
    log = SqliteLog(db_path)
    log.append(entries[:1])
    log.append(entries[1:9_000])  # one big transaction
    for entry in entries[9_000:]:
        log.append([entry])
    log.close()
    log.close()  # idempotent
    with SqliteLog(db_path, synchronous="FULL") as reopened:
        assert reopened.synchronous == "FULL"
        assert list(reopened.read()) == entries  # across several read pages
        reopened.append([(b"more", b"1")])
    with SqliteLog(db_path) as again:
        assert list(again.read()) == [*entries, (b"more", b"1")]


def test_sqlite_log_accepts_str_paths_and_lowercase_synchronous(db_path: Path) -> None:
    with SqliteLog(str(db_path), synchronous="full") as log:
        assert log.synchronous == "FULL"
        assert log.path == str(db_path)


@pytest.mark.parametrize("synchronous", ["OFF", "EXTRA", "", 2])
def test_sqlite_log_rejects_other_synchronous_modes(db_path: Path, synchronous: Any) -> None:
    with pytest.raises(ValueError, match="synchronous must be 'NORMAL' or 'FULL'"):
        SqliteLog(db_path, synchronous=synchronous)


def test_sqlite_log_refuses_an_in_memory_database() -> None:
    with pytest.raises(ValueError, match="WAL"):
        SqliteLog(":memory:")


@pytest.mark.parametrize("autocheckpoint", [True, False])
def test_appends_checkpoint_only_when_autocheckpoint_is_on(
    db_path: Path, tmp_path: Path, autocheckpoint: bool
) -> None:
    entries = [(f"k{i}".encode(), b"v" * 600) for i in range(3_000)]  # > 1,000 WAL pages
    with SqliteLog(db_path, autocheckpoint=autocheckpoint) as log:
        for entry in entries:
            log.append([entry])
        stored = records_in_database_file(db_path, tmp_path)
        if autocheckpoint:
            # SQLite checkpointed inside appends: most records reached the database file.
            assert len(stored) > 1_000
            assert stored == entries[: len(stored)]
        else:
            assert stored == []
        assert list(log.read()) == entries  # readable either way, through the WAL


def test_checkpoint_copies_the_write_ahead_log_into_the_database_file(
    db_path: Path, tmp_path: Path
) -> None:
    entries = [(b"k", b"1"), (b"j", None), (b"k", b"2")]
    with SqliteLog(db_path, autocheckpoint=False) as log:
        log.append(entries[:2])
        log.append(entries[2:])
        assert records_in_database_file(db_path, tmp_path) == []
        assert log.checkpoint() is True
        assert records_in_database_file(db_path, tmp_path) == entries
        log.append([(b"after", b"3")])  # the log restarts its WAL and goes on
        assert list(log.read()) == [*entries, (b"after", b"3")]


def test_checkpoint_from_a_thread_while_the_owner_appends(db_path: Path, tmp_path: Path) -> None:
    entries = [(f"k{i % 50}".encode(), f"v{i}".encode()) for i in range(4_000)]
    with SqliteLog(db_path, autocheckpoint=False) as log:
        done = threading.Event()
        results: list[bool] = []
        errors: list[BaseException] = []

        def checkpoint_until_done() -> None:
            try:
                while not done.is_set():
                    results.append(log.checkpoint())
            except BaseException as exc:  # reported below
                errors.append(exc)

        worker = threading.Thread(target=checkpoint_until_done)
        worker.start()
        try:
            for entry in entries:
                log.append([entry])
        finally:
            done.set()
            worker.join()
        assert not errors
        assert len(results) > 1
        assert log.checkpoint() is True  # nothing appends now: the whole log is copied
        assert records_in_database_file(db_path, tmp_path) == entries
        assert list(log.read()) == entries


def test_checkpoint_of_a_deleted_log_file_fails_and_creates_nothing(db_path: Path) -> None:
    with SqliteLog(db_path, autocheckpoint=False) as log:
        log.append([(b"k", b"v")])
        db_path.unlink()
        with pytest.raises(LogAppendError, match="checkpoint failed"):
            log.checkpoint()
        assert not db_path.exists()


def install_failing_trigger(db_path: Path, bad_key: bytes) -> None:
    conn = sqlite3.connect(db_path)
    try:
        conn.execute(
            "CREATE TRIGGER fail_on_bad_key BEFORE INSERT ON records "
            f"WHEN NEW.key = x'{bad_key.hex()}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        )
        conn.commit()
    finally:
        conn.close()


def test_sqlite_append_is_all_or_nothing(db_path: Path) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"before", b"1")])
        install_failing_trigger(db_path, b"bad")
        with pytest.raises(LogAppendError, match="append of 3 entries failed") as info:
            log.append([(b"a", b"1"), (b"b", None), (b"bad", b"x")])
        assert isinstance(info.value.__cause__, sqlite3.Error)
        assert "injected failure" in str(info.value)
        with pytest.raises(LogAppendError, match="append of 1 entries failed"):
            log.append([(b"bad", None)])
        # Nothing of the failed batches was stored, and the log still works.
        log.append([(b"after", b"2"), (b"after", b"3")])
        assert list(log.read()) == [(b"before", b"1"), (b"after", b"2"), (b"after", b"3")]
    with SqliteLog(db_path) as reopened:
        assert list(reopened.read()) == [(b"before", b"1"), (b"after", b"2"), (b"after", b"3")]


def test_sqlite_append_after_close_raises_log_append_error(db_path: Path) -> None:
    log = SqliteLog(db_path)
    log.close()
    with pytest.raises(LogAppendError) as info:
        log.append([(b"k", b"v")])
    assert isinstance(info.value.__cause__, sqlite3.Error)


def test_sqlite_log_in_a_missing_directory_creates_it(tmp_path: Path) -> None:
    log = SqliteLog(tmp_path / "var" / "new" / "log.sqlite3")
    log.append([(b"k", b"v")])
    log.close()
    assert list(SqliteLog(tmp_path / "var" / "new" / "log.sqlite3").read()) == [(b"k", b"v")]


def test_sqlite_log_under_a_file_fails_to_open(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_bytes(b"")
    with pytest.raises(OSError):
        SqliteLog(tmp_path / "plain-file" / "log.sqlite3")


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=entry_lists, later=entry_lists, data=st.data())
def test_any_prefix_of_a_compaction_plan_replays_to_the_same_state(
    tmp_path: Path, entries: list[Entry], later: list[Entry], data: st.DataObject
) -> None:
    """The runtime drops a plan in slices while it goes on appending: after any slice (a
    crash may come between two), and with appends made after the plan was read, the log
    replays to what it held."""
    path = tmp_path / "plan.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with SqliteLog(path) as log:
        log.append(entries)
        plan = log.compaction_plan()
        assert plan == sorted(plan)
        log.append(later)
        cut = data.draw(st.integers(0, len(plan)), label="slice dropped")
        assert log.drop(plan[:cut]) == cut
        assert replayed(list(log.read())) == replayed(entries + later)
        assert log.drop(plan[cut:]) == len(plan) - cut
        assert replayed(list(log.read())) == replayed(entries + later)
        assert log.count() == len(compacted(entries)) + len(later)


def test_a_compaction_plan_is_read_while_the_owner_appends(db_path: Path) -> None:
    """The plan is read on a connection of its own: from another thread, with the owner's
    appends going on, it sees the entries that were there when it started."""
    with SqliteLog(db_path) as log:
        log.append([(b"a", b"1"), (b"a", b"2"), (b"b", None)])
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            plan = pool.submit(log.compaction_plan)
            log.append([(b"a", b"3")])
            assert plan.result() in ([1, 3], [1, 2, 3])
        assert log.count() == 4


def test_sqlite_appends_after_compaction_come_after_the_survivors(db_path: Path) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"a", b"1"), (b"b", b"1"), (b"b", None)])
        log.compact()
        log.append([(b"c", b"1")])
    with SqliteLog(db_path) as reopened:
        assert list(reopened.read()) == [(b"a", b"1"), (b"c", b"1")]


WRITER = textwrap.dedent(
    """
    import sys
    from coordinator_engine.log import SqliteLog

    log = SqliteLog(sys.argv[1])
    batch = 0
    while True:
        # Three entries per append: after the kill the log must hold whole batches only.
        log.append([(f"{batch}-{j}".encode(), f"value-{batch}-{j}".encode()) for j in range(3)])
        print(batch, flush=True)  # acknowledged: append returned
        batch += 1
    """
)

READER = textwrap.dedent(
    """
    import json, sys
    from coordinator_engine.log import SqliteLog

    with SqliteLog(sys.argv[1]) as log:
        print(json.dumps([[k.decode(), v.decode()] for k, v in log.read()]))
    """
)


def run_env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def test_acknowledged_appends_survive_sigkill(db_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=run_env(),
    )
    assert writer.stdout is not None
    acknowledged = []
    try:
        for line in writer.stdout:
            acknowledged.append(int(line))
            if len(acknowledged) == 300:
                break
        writer.send_signal(signal.SIGKILL)
        acknowledged += [int(line) for line in writer.stdout]  # printed before the kill landed
    finally:
        writer.kill()
        writer.wait(timeout=10)
    assert writer.returncode == -signal.SIGKILL
    assert acknowledged == list(range(len(acknowledged)))
    assert len(acknowledged) >= 300

    reader = subprocess.run(
        [sys.executable, "-c", READER, str(db_path)],
        capture_output=True,
        text=True,
        env=run_env(),
        timeout=60,
        check=True,
    )
    stored = [tuple(pair) for pair in json.loads(reader.stdout)]
    batches = len(stored) // 3
    assert len(stored) == 3 * batches, "a batch was torn by the kill"
    assert batches >= len(acknowledged)  # every acknowledged append is there (maybe one more)
    assert batches <= len(acknowledged) + 1
    assert stored == [(f"{b}-{j}", f"value-{b}-{j}") for b in range(batches) for j in range(3)]


# ---------------------------------------------------------------------------------------------
# Group commit: batch()


def test_a_batch_stores_its_appends_together_when_it_ends(make_log: Callable[[], Any]) -> None:
    log = make_log()
    log.append([(b"before", b"0")])
    with log.batch():
        log.append([(b"a", b"1")])
        log.append([(b"b", b"2"), (b"a", None)])
        log.append([])
        # Not stored yet: the batch's owner holds back whatever depends on these.
        assert list(log.read()) == [(b"before", b"0")]
    assert list(log.read()) == [(b"before", b"0"), (b"a", b"1"), (b"b", b"2"), (b"a", None)]
    log.append([(b"after", b"3")])
    assert list(log.read())[-1] == (b"after", b"3")


def test_a_batch_whose_block_raises_stores_nothing(make_log: Callable[[], Any]) -> None:
    log = make_log()
    log.append([(b"before", b"0")])
    with pytest.raises(ValueError, match="the block failed"), log.batch():
        log.append([(b"a", b"1")])
        raise ValueError("the block failed")
    assert list(log.read()) == [(b"before", b"0")]
    with log.batch():
        log.append([(b"b", b"2")])
    assert list(log.read()) == [(b"before", b"0"), (b"b", b"2")]


def test_batches_do_not_nest(make_log: Callable[[], Any]) -> None:
    log = make_log()
    with log.batch():
        log.append([(b"a", b"1")])
        with pytest.raises(RuntimeError, match="do not nest"), log.batch():
            pass  # pragma: no cover
    assert list(log.read()) == [(b"a", b"1")]


def test_a_malformed_append_in_a_batch_is_refused_alone(make_log: Callable[[], Any]) -> None:
    log = make_log()
    with log.batch():
        log.append([(b"a", b"1")])
        with pytest.raises(TypeError):
            log.append([(b"bad", 1)])
    assert list(log.read()) == [(b"a", b"1")]


def test_a_sqlite_batch_is_one_transaction_other_connections_see_at_its_end(
    db_path: Path,
) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"before", b"0")])
        other = sqlite3.connect(db_path)
        try:
            with log.batch():
                for n in range(20):
                    log.append([(f"k{n}".encode(), b"v")])
                assert other.execute("SELECT COUNT(*) FROM records").fetchone() == (1,)
            assert other.execute("SELECT COUNT(*) FROM records").fetchone() == (21,)
        finally:
            other.close()


def test_a_sqlite_batch_that_fails_to_commit_stores_nothing_of_it(db_path: Path) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"before", b"1")])
        install_failing_trigger(db_path, b"bad")
        failed = pytest.raises(LogAppendError, match="group commit of 3 entries failed")
        with failed as info, log.batch():
            log.append([(b"a", b"1")])
            log.append([(b"bad", b"x")])  # only the COMMIT finds it out
            log.append([(b"c", b"1")])
        assert isinstance(info.value.__cause__, sqlite3.Error)
        # Nothing of the batch, also what came before the bad entry; the log still works.
        with log.batch():
            log.append([(b"after", b"2")])
        assert list(log.read()) == [(b"before", b"1"), (b"after", b"2")]
    with SqliteLog(db_path) as reopened:
        assert list(reopened.read()) == [(b"before", b"1"), (b"after", b"2")]


def test_sqlite_drop_is_refused_inside_a_batch(db_path: Path) -> None:
    with SqliteLog(db_path) as log:
        log.append([(b"a", b"1"), (b"a", b"2")])
        with log.batch(), pytest.raises(RuntimeError, match="inside a batch"):
            log.drop(log.compaction_plan())
        assert log.count() == 2
