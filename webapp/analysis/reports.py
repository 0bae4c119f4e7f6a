"""Running the Spark rebalance report and keeping what it found (docs/analysis.md, "Runs").

One run (:class:`~webapp.models.ReportRun`) goes through three steps, each written to its row as
it happens, so the analysis page can show where it is:

1. **export**: the events stored since the last export are appended to the Parquet history
   (``webapp.analysis.export``, incremental);
2. **Spark**: the history checked first as the job would check it (``check_history``: a
   missing, unreadable or foreign file fails the run at once in the job's own words, without
   starting a JVM to find out), then ``spark-submit --master $SPARK_MASTER --driver-memory
   $SPARK_DRIVER_MEMORY --driver-java-options … --conf … <as spark_tasks.tuning sizes them>
   spark_tasks/__main__.py rebalance_report`` in a process of its own (a JVM, and a Spark
   cluster if the master says so), its output in the run's log file, its progress (stages and
   tasks done, from Spark's status tracker) in a JSON file that this module copies into the row
   every second, with the Spark UI's address;
3. **result**: the report's ``summary.json`` into the row; the report's Parquet tables stay in
   the run's directory (the newest :data:`KEEP_REPORTS` are kept).

A run is idempotent (a finished run is not run again) and only one runs at a time: a run asked
for while another is under way fails at once, saying which. A failed run says why in words: the
history check's or the job's own one-line error (``rebalance_report: error: ...``), a timeout, or
an export error.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyspark
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from spark_tasks.history import HistoryError, check_history
from spark_tasks.tuning import Tuning, history_events, tuning_for
from webapp.models import ReportRun

from .export import HistoryDirError, export_history

logger = logging.getLogger(__name__)

__all__ = [
    "KEEP_REPORTS",
    "ReportFailed",
    "create_run",
    "refuse_run",
    "run_report",
    "spark_submit",
]

#: Report directories kept on disk (older runs keep their summary in the database).
KEEP_REPORTS = 5
#: How often a running report's progress file is copied into its row.
PROGRESS_EVERY_S = 1.0
#: A run whose row says running for longer than this is taken for dead (its worker was lost).
STALE_AFTER = timedelta(hours=2)

BASE_DIR = Path(settings.BASE_DIR)
JOB_FILE = BASE_DIR / "spark_tasks" / "__main__.py"


class ReportFailed(Exception):
    """A report run failed; the message says why."""


def spark_submit() -> Path:
    """PySpark's own ``spark-submit`` (the wheel carries Spark whole)."""
    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def create_run(trigger: str) -> ReportRun:
    run: ReportRun = ReportRun.objects.create(trigger=trigger, spark_master=settings.SPARK_MASTER)
    return run


def refuse_run(run_id: int, reason: str) -> None:
    """A run that could not be queued: failed, with the reason."""
    ReportRun.objects.filter(pk=run_id, status=ReportRun.Status.QUEUED).update(
        status=ReportRun.Status.FAILED, finished_at=timezone.now(), error=reason
    )


def _save(run: ReportRun, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(run, name, value)
    run.save(update_fields=list(fields))


def _claim(run_id: int) -> ReportRun | None:
    """Mark the run as exporting, unless it is done or another run is under way (then fail it
    in words). None when there is nothing to do."""
    with transaction.atomic():
        run: ReportRun = ReportRun.objects.select_for_update().get(pk=run_id)
        if run.done:
            return None
        busy = (
            ReportRun.objects.filter(
                status__in=(ReportRun.Status.EXPORTING, ReportRun.Status.RUNNING),
                started_at__gt=timezone.now() - STALE_AFTER,
            )
            .exclude(pk=run.pk)
            .first()
        )
        if busy is not None:
            _save(
                run,
                status=ReportRun.Status.FAILED,
                finished_at=timezone.now(),
                error=f"report #{busy.pk} is still running "
                f"(started {busy.started_at:%H:%M:%S} UTC)",
            )
            return None
        _save(run, status=ReportRun.Status.EXPORTING, started_at=timezone.now())
        return run


def _fail(run: ReportRun, error: str) -> ReportRun:
    _save(run, status=ReportRun.Status.FAILED, finished_at=timezone.now(), error=error)
    logger.warning("report #%s failed: %s", run.pk, error)
    return run


def _job_error(log_path: Path, returncode: int) -> str:
    """The job's own one-line error if it printed one, else the log's last lines."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines):
        if line.startswith("rebalance_report: error: "):
            return line.removeprefix("rebalance_report: error: ")
    tail = " | ".join(line.strip() for line in lines[-5:] if line.strip())
    return f"spark-submit exited with status {returncode}: {tail or 'no output'} (log: {log_path})"


def _read_progress(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _prune(reports_dir: Path) -> None:
    runs = sorted(
        (p for p in reports_dir.glob("run-*") if p.is_dir()),
        key=lambda p: int(p.name.removeprefix("run-")) if p.name[4:].isdigit() else 0,
    )
    for old in runs[:-KEEP_REPORTS]:
        shutil.rmtree(old, ignore_errors=True)


def _on_this_machine(master: str) -> bool:
    return master.startswith("local") or master.split("://")[-1].split(":")[0] in (
        "127.0.0.1",
        "localhost",
    )


def _submit(run: ReportRun, history_dir: Path, reports_dir: Path, tuning: Tuning) -> ReportRun:
    output = reports_dir / f"run-{run.pk}"
    progress_file = reports_dir / f"run-{run.pk}.progress.json"
    log_path = reports_dir / f"run-{run.pk}.log"
    command = [
        str(spark_submit()),
        "--master",
        settings.SPARK_MASTER,
        "--driver-memory",
        settings.SPARK_DRIVER_MEMORY,
        # The driver as the history's size calls for (spark_tasks.tuning).
        *tuning.submit_options(),
        *(["--conf", "spark.ui.enabled=false"] if not settings.SPARK_UI else []),
        str(JOB_FILE),
        "rebalance_report",
        "--input",
        str(history_dir),
        "--output",
        str(output),
        "--progress-file",
        str(progress_file),
    ]
    env = {
        **os.environ,
        # The executors run the job's Python (a cluster's workers too): this virtualenv's.
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_MASTER": settings.SPARK_MASTER,
    }
    if _on_this_machine(settings.SPARK_MASTER):
        # The driver (and its UI, which the page links to) on the loopback address, not on
        # whatever address Spark would pick: a browser here can open it.
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    _save(run, status=ReportRun.Status.RUNNING, output_dir=str(output), log_path=str(log_path))
    logger.info("report #%s: %s", run.pk, " ".join(command))
    deadline = time.monotonic() + settings.REPORT_TIMEOUT_S
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            while True:
                try:
                    returncode = process.wait(timeout=PROGRESS_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                progress = _read_progress(progress_file)
                if progress is not None and progress != run.progress:
                    _save(run, progress=progress, spark_ui_url=progress.get("ui_url") or "")
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    return _fail(
                        run,
                        f"the Spark job did not finish within {settings.REPORT_TIMEOUT_S} s "
                        f"(log: {log_path})",
                    )
        finally:
            if process.poll() is None:  # the worker itself is going away
                process.kill()
                process.wait()
    progress = _read_progress(progress_file) or run.progress
    if returncode != 0:
        _save(run, progress=progress)
        return _fail(run, _job_error(log_path, returncode))
    try:
        summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _fail(run, f"the job finished but its summary.json cannot be read: {exc}")
    _save(
        run,
        status=ReportRun.Status.SUCCEEDED,
        finished_at=timezone.now(),
        progress=progress,
        summary=summary,
    )
    _prune(reports_dir)
    return run


def run_report(run_id: int) -> ReportRun:
    """Run report ``run_id`` (export, then Spark), unless it is done already; the run as it
    ended. A failure is in the row (``status`` failed, ``error`` in words), not raised."""
    run = _claim(run_id)
    if run is None:
        ended: ReportRun = ReportRun.objects.get(pk=run_id)
        return ended
    analysis_dir = Path(settings.ANALYSIS_DIR)
    history_dir = analysis_dir / "history"
    reports_dir = analysis_dir / "reports"
    try:
        exported = export_history(history_dir)
    except (HistoryDirError, OSError) as exc:
        return _fail(run, f"exporting the history failed: {exc}")
    _save(run, events_exported=exported.events, events_total=exported.total_events)
    if exported.total_events == 0:
        return _fail(run, "no history to analyse yet: the coordinator has stored no events")
    try:
        files = check_history(history_dir)
    except HistoryError as exc:
        return _fail(run, str(exc))
    reports_dir.mkdir(parents=True, exist_ok=True)
    return _submit(run, history_dir, reports_dir, tuning_for(history_events(files)))
