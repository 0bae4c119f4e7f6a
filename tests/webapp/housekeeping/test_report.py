"""The Spark report for real: ``manage.py serve --demo`` stores a few seconds of rebalances, a
Celery worker takes the report task as the Housekeeping page's *Run now* queues it, exports
the history to Parquet and runs ``spark-submit spark_tasks/__main__.py rebalance_report`` on
it; the run's row follows it (progress from Spark's status tracker) and ends with the report's
summary, which ``/api/analysis`` serves. A history that cannot be read fails the run with the
job's reason in words."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import LiveServer, wait_for

from .test_celery import Celery, report_runs

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    live = LiveServer(
        tmp_path,
        COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
        SPARK_MASTER="local[2]",
        SPARK_UI="0",
    )
    try:
        yield live
    finally:
        live.kill()


def finished(server: LiveServer) -> list[dict[str, Any]] | None:
    done = [run for run in report_runs(server) if run["status"] in ("succeeded", "failed")]
    return done or None


def run_now(server: LiveServer) -> None:
    server.manage(
        "shell", "-c", "from webapp.housekeeping.status import run_now\nrun_now('rebalance-report')"
    )


def test_the_worker_runs_the_spark_report_on_the_exported_history(
    server: LiveServer, redis_server: Any
) -> None:
    server.env["CELERY_BROKER_URL"] = redis_server.url
    server.start("--demo")
    wait_for(
        lambda: (
            len(server.get("/api/groups")["groups"]) >= 2
            and all(group["generation_id"] >= 1 for group in server.get("/api/groups")["groups"])
        ),
        30,
        "both demo groups to complete a rebalance",
    )
    assert server.stop(signal.SIGTERM) == 0  # the history is flushed on the way out
    worker = Celery(server, "worker", "worker", "--pool", "solo", "--loglevel", "INFO")
    try:
        run_now(server)
        (run,) = wait_for(lambda: finished(server), 180, "the report to finish")
    finally:
        worker.stop()
    log = Path(run["log_path"]).read_text() if run["log_path"] else "(no log: Spark never ran)"
    assert run["status"] == "succeeded", (run["error"], log)
    assert run["trigger"] == "staff"
    assert run["events_exported"] == run["events_total"] > 0
    summary = json.loads(run["summary"])
    assert summary["input"]["events"] == run["events_total"]
    assert {"orders-eager", "payments-coop"} <= set(summary["groups"])
    for group_id in ("orders-eager", "payments-coop"):
        group = summary["groups"][group_id]
        assert group["rebalances"] >= 1
        assert group["causes"].get("member_joined", 0) >= 1
    progress = json.loads(run["progress"])
    assert progress["state"] == "done"
    assert progress["tasks_total"] > 0 and progress["tasks_done"] == progress["tasks_total"]
    assert (Path(run["output_dir"]) / "summary.json").is_file()
    assert "rebalance_report:" in Path(run["log_path"]).read_text()

    server.start()  # the page's API reads the run
    body = server.get("/api/analysis")
    assert body["run"]["id"] == run["id"] and body["report"]["run_id"] == run["id"]
    assert body["report"]["summary"]["groups"]["orders-eager"]["rebalances"] >= 1
    assert {row["group_id"] for row in body["rebalances"]} >= {"orders-eager", "payments-coop"}
    group = server.get("/api/analysis/groups/payments-coop")
    assert group["report"]["summary"]["group"] == summary["groups"]["payments-coop"]
    assert {row["group_id"] for row in group["rebalances"]} == {"payments-coop"}


# database: the worker claims, fails and reports runs in the server's database (the run that
# succeeds adds Spark's minute, not more of the database: SQLite's pass only).
@pytest.mark.database
def test_a_report_without_history_or_with_a_corrupt_file_fails_in_words(
    server: LiveServer, redis_server: Any, tmp_path: Path
) -> None:
    server.env["CELERY_BROKER_URL"] = redis_server.url
    server.manage("migrate", "--noinput", "-v", "0")
    worker = Celery(server, "worker", "worker", "--pool", "solo", "--loglevel", "INFO")
    try:
        run_now(server)
        (empty,) = wait_for(lambda: finished(server), 60, "the first report to finish")
        assert empty["status"] == "failed"
        assert empty["error"] == "no history to analyse yet: the coordinator has stored no events"

        day = tmp_path / "analysis" / "history" / "day=2026-11-24"
        day.mkdir(parents=True)
        (day / "part-broken.parquet").write_bytes(b"PAR1 this is not a Parquet file")
        server.manage(
            "shell",
            "-c",
            "from webapp.models import GroupEvent\n"
            "GroupEvent.objects.create(seq=1, group_id='g', type='StateChanged', at_ms=1,"
            " payload={'from_state': 'Empty', 'to_state': 'PreparingRebalance', 'reason': 'x'})",
        )
        run_now(server)
        second = wait_for(
            lambda: [run for run in report_runs(server)[1:] if run["status"] == "failed"],
            120,
            "the second report to fail",
        )[0]
    finally:
        worker.stop()
    assert "part-broken.parquet" in second["error"], second["error"]
    assert "Traceback" not in second["error"]
    # The task checked the history before spark-submit: no JVM was started to find that out.
    assert second["log_path"] == ""
