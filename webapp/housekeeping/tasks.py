"""The housekeeping tasks. Each is a thin adapter. Offset expiry and compaction ask the
coordinator runtime to run one control command (``webapp.runtime.control``) and return the
runtime's numbers, which django-celery-results keeps as the task's result; the rebalance report
runs a :class:`~webapp.models.ReportRun` (``webapp.analysis.reports``: export, spark-submit).

Every task is idempotent (expiring or compacting twice changes nothing more), so Celery may
run one again after a lost worker (``acks_late``). While no runtime answers (it is starting,
restarting, or reloading its engine after a fault) a task retries with exponential backoff,
``HOUSEKEEPING_RETRY_BACKOFF_S`` doubling up to a minute, ``HOUSEKEEPING_RETRIES`` times, then
fails with :class:`HousekeepingFailed`, whose message says what it asked, how often, and the
runtime's last answer in words.

The report's module (``webapp.analysis.reports``, with the export's pyarrow and PySpark's
launcher behind it) is imported when a report runs, not with this one: every Django process
imports the tasks (the pages send them), and most never run a report.
"""

from __future__ import annotations

from typing import Any

from celery import Task
from django.conf import settings

from webapp.runtime.control import RuntimeUnavailable, call_runtime

from .celery_app import app

__all__ = ["HousekeepingFailed", "compact_log", "expire_offsets", "rebalance_report"]

#: A compaction of a long log takes longer than a cleanup: its own wait for the answer.
_COMPACTION_TIMEOUT_FACTOR = 10


class HousekeepingFailed(Exception):
    """A housekeeping task gave up; the message says why."""


def _backoff_s(retries: int) -> float:
    return float(min(60.0, settings.HOUSEKEEPING_RETRY_BACKOFF_S * 2**retries))


def _on_runtime(task: Task, command: str, timeout_s: float) -> dict[str, Any]:
    try:
        return call_runtime(command, timeout_s=timeout_s)
    except RuntimeUnavailable as exc:
        retries = task.request.retries
        if retries >= settings.HOUSEKEEPING_RETRIES:
            raise HousekeepingFailed(
                f"{command}: gave up after {retries + 1} attempts: {exc}"
            ) from None
        raise task.retry(
            exc=exc, countdown=_backoff_s(retries), max_retries=settings.HOUSEKEEPING_RETRIES
        ) from None


@app.task(bind=True, name="housekeeping.expire_offsets")
def expire_offsets(self: Task) -> dict[str, Any]:
    """Kafka's ``cleanupGroupMetadata``: committed offsets past their retention (KIP-211) are
    removed, and an Empty group left without offsets goes Dead, its tombstones written.
    Returns ``offsets_expired`` and ``groups_tombstoned``."""
    return _on_runtime(self, "expire_offsets", settings.HOUSEKEEPING_CONTROL_TIMEOUT_S)


@app.task(bind=True, name="housekeeping.compact_log")
def compact_log(self: Task) -> dict[str, Any]:
    """Compact the record log as Kafka's log cleaner compacts ``__consumer_offsets``: each
    key's latest record stays, superseded records and spent tombstones go. Returns
    ``records_before``, ``records_dropped``, ``records_after`` and ``took_ms``."""
    timeout_s = settings.HOUSEKEEPING_CONTROL_TIMEOUT_S * _COMPACTION_TIMEOUT_FACTOR
    return _on_runtime(self, "compact_log", timeout_s)


@app.task(name="analysis.rebalance_report")
def rebalance_report(run_id: int | None = None, trigger: str = "schedule") -> dict[str, Any]:
    """Export the new history and run the Spark rebalance report on it (``run_id``: a
    :class:`~webapp.models.ReportRun` made by whoever queued it; beat's runs make their own).
    Returns the run's id and totals; a failed run raises
    :class:`~webapp.analysis.reports.ReportFailed` with its reason. Not retried: the next
    scheduled run is the retry, and a run that failed says why."""
    from webapp.analysis.reports import ReportFailed, create_run, run_report

    if run_id is None:
        run_id = create_run(trigger).pk
    run = run_report(run_id)
    if run.status != run.Status.SUCCEEDED:
        raise ReportFailed(f"report #{run.pk}: {run.error}")
    totals = (run.summary or {}).get("totals", {})
    return {"run_id": run.pk, "events": run.events_total, **totals}
