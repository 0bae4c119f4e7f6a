"""Housekeeping for real: a Redis, ``manage.py serve`` on the Redis channel layer, a Celery
worker and Celery beat (django-celery-beat's database scheduler), all separate processes as
``make run`` starts them.

What must hold: with the schedules set to every second (as staff would in the admin), beat
sends both tasks, the worker asks the running runtime over the channel layer, offsets past
their retention expire, the empty group is tombstoned and the log loses its superseded
records; the Housekeeping API reports the runs. With no runtime, a task retries with backoff
and then fails with the reason in words.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import ROOT
from tests.live_server import LiveServer, RedisServer, wait_for

# database: the schedules, task results and report runs are rows of the server's database.
pytestmark = [pytest.mark.slow, pytest.mark.database]

GROUP = "expiring"


class Celery:
    """``celery -A webapp.housekeeping.celery_app <args>`` with the server's settings."""

    def __init__(self, server: LiveServer, name: str, *args: str) -> None:
        self.output = server.output.parent / f"{name}.log"
        with self.output.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "webapp.housekeeping.celery_app", *args],
                cwd=ROOT,
                env=server.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def task_results(server: LiveServer, task: str, status: str) -> list[Any]:
    """The stored results of ``task`` with ``status`` (django-celery-results' table)."""
    rows = server.query(
        "SELECT result FROM django_celery_results_taskresult"
        " WHERE task_name = %s AND status = %s ORDER BY id",
        (task, status),
    )
    return [json.loads(row["result"]) for row in rows]


def log_records(server: LiveServer) -> int:
    with sqlite3.connect(server.env["REBALANCE_LAB_LOG_PATH"]) as log:
        return int(log.execute("SELECT COUNT(*) FROM records").fetchone()[0])


@pytest.fixture
def server(tmp_path: Path, redis_server: RedisServer) -> Iterator[LiveServer]:
    live = LiveServer(
        tmp_path,
        CHANNEL_LAYER="redis",
        REDIS_URL=redis_server.url,
        COORDINATOR_OFFSETS_RETENTION_MS="3000",
        HOUSEKEEPING_RETRIES="2",
        HOUSEKEEPING_RETRY_BACKOFF_S="1",
        HOUSEKEEPING_CONTROL_TIMEOUT_S="2",
        REPORT_AFTER_START_S="0",
    )
    try:
        yield live
    finally:
        live.kill()


def every_second(server: LiveServer) -> None:
    """Both schedules every second, edited through the models as the admin does."""
    server.manage(
        "shell",
        "-c",
        "from django_celery_beat.models import IntervalSchedule, PeriodicTask\n"
        "second, _ = IntervalSchedule.objects.get_or_create(every=1, period='seconds')\n"
        "for task in PeriodicTask.objects.filter(task__startswith='housekeeping.'):\n"
        "    task.interval = second\n"
        "    task.save()\n",
    )


def test_beat_expires_offsets_and_compacts_the_log_through_the_runtime(
    server: LiveServer,
) -> None:
    server.start()
    with server.websocket() as ws:
        for offset in range(5):  # five records of one key: four are superseded
            ws.send(
                json.dumps(
                    {
                        "id": offset,
                        "api": "OffsetCommit",
                        "request": {
                            "group_id": GROUP,
                            "offsets": [{"topic": "orders", "partition": 0, "offset": offset}],
                        },
                    }
                )
            )
            assert json.loads(ws.recv(timeout=5))["response"]["partitions"][0]["error_code"] == 0
    assert server.get(f"/api/groups/{GROUP}")["state"] == "Empty"
    every_second(server)
    worker = Celery(server, "worker", "worker", "--pool", "solo", "--loglevel", "INFO")
    beat = Celery(
        server,
        "beat",
        "beat",
        "--max-interval",
        "1",
        "--pidfile=",
        "--loglevel",
        "INFO",
    )
    try:
        expired = wait_for(
            lambda: [
                r
                for r in task_results(server, "housekeeping.expire_offsets", "SUCCESS")
                if r["offsets_expired"]
            ],
            40,
            "beat's offset expiry to expire the committed offset",
        )
        assert expired[0] == {"offsets_expired": 1, "groups_tombstoned": 1}
        groups = server.get("/api/groups")["groups"]
        assert GROUP not in [group["group_id"] for group in groups]

        # The group's records and its tombstones are all spent: compaction drops them all.
        compacted = wait_for(
            lambda: [
                r
                for r in task_results(server, "housekeeping.compact_log", "SUCCESS")
                if r["records_after"] == 0
            ],
            40,
            "beat's compaction to drop the expired group's records",
        )
        assert compacted[0]["records_before"] == compacted[0]["records_dropped"]
        # Five commits and the expiry's tombstone, dropped over however many runs it took
        # (a run between the commits and the expiry drops the four superseded commits).
        runs = task_results(server, "housekeeping.compact_log", "SUCCESS")
        assert sum(run["records_dropped"] for run in runs) == 6
        assert log_records(server) == 0

        status = {task["key"]: task for task in server.get("/api/housekeeping")["tasks"]}
        assert set(status) == {"expire-offsets", "compact-log", "rebalance-report"}
        for task in (status["expire-offsets"], status["compact-log"]):
            assert task["last_run"]["status"] == "SUCCESS"
            (schedule,) = task["schedules"]
            assert schedule["enabled"] and schedule["every"] == "every second"
            assert schedule["total_run_count"] >= 1
        assert set(status["compact-log"]["last_run"]["result"]) == {
            "records_before",
            "records_dropped",
            "records_after",
            "took_ms",
        }
    finally:
        beat.stop()
        worker.stop()
    assert server.stop(signal.SIGTERM) == 0
    for process in (worker, beat):
        assert "Traceback" not in process.output.read_text(), process.output.read_text()


def test_a_task_without_a_runtime_retries_then_fails_in_words(server: LiveServer) -> None:
    server.manage("migrate", "--noinput", "-v", "0")  # no serve: nobody reads the channel
    worker = Celery(server, "worker", "worker", "--pool", "solo", "--loglevel", "INFO")
    try:
        started = time.monotonic()
        server.manage(
            "shell",
            "-c",
            "from webapp.housekeeping.status import run_now\nrun_now('expire-offsets')\n",
        )
        (failure,) = wait_for(
            lambda: task_results(server, "housekeeping.expire_offsets", "FAILURE"),
            60,
            "the task to give up",
        )
        took_s = time.monotonic() - started
    finally:
        worker.stop()
    assert failure["exc_type"] == "HousekeepingFailed"
    assert failure["exc_message"] == [
        "expire_offsets: gave up after 3 attempts: no coordinator runtime answered "
        "'expire_offsets' within 2 s (is `manage.py serve` running on the same channel layer?)"
    ]
    # Three waits of 2 s and two backoffs (1 s, then 2 s) before giving up.
    assert took_s >= 9
    log = (ROOT / worker.output).read_text()
    assert log.count("Retry in") == 2, log


def test_beat_sends_a_report_soon_after_it_starts(server: LiveServer) -> None:
    """A new installation gets a report without waiting for the hourly run: beat sends one
    ``REPORT_AFTER_START_S`` after it starts (here 1 s; with no history yet, the run fails
    saying so, before any Spark work)."""
    server.env["REPORT_AFTER_START_S"] = "1"
    server.manage("migrate", "--noinput", "-v", "0")
    worker = Celery(server, "worker", "worker", "--pool", "solo", "--loglevel", "INFO")
    beat = Celery(server, "beat", "beat", "--max-interval", "1", "--pidfile=")
    try:
        (run,) = wait_for(lambda: report_runs(server), 60, "the report beat sends at its start")
        wait_for(lambda: report_runs(server)[0]["status"] == "failed", 30, "the run to end")
    finally:
        beat.stop()
        worker.stop()
    (run,) = report_runs(server)
    assert run["trigger"] == "start"
    assert run["error"] == "no history to analyse yet: the coordinator has stored no events"


def report_runs(server: LiveServer) -> list[dict[str, Any]]:
    """The report runs (``ReportRun`` rows), oldest first."""
    return server.query("SELECT * FROM webapp_reportrun ORDER BY id")
