"""What the Housekeeping page shows (``/api/housekeeping``): for each housekeeping task, its
schedules (from django-celery-beat: interval, enabled, last run, next run), its latest result
(from django-celery-results) and whether one is queued or running. Synchronous: the ORM."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Task
from django.db.models import Count, Max
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_results.models import TaskResult

from . import tasks

__all__ = ["TASKS", "HousekeepingTask", "housekeeping_status", "run_now", "task_result_counts"]


def _staff_report() -> dict[str, Any]:
    from webapp.analysis.reports import create_run

    return {"run_id": create_run("staff").pk}


@dataclass(frozen=True, slots=True)
class HousekeepingTask:
    key: str  # what POST /api/admin/run-task names
    title: str
    task: Task
    #: The arguments of a run queued now (the report's run row is made first: tasks pass ids).
    arguments: Callable[[], dict[str, Any]] = dict


TASKS: dict[str, HousekeepingTask] = {
    item.key: item
    for item in (
        HousekeepingTask(
            "expire-offsets", "Offset expiry and group tombstoning", tasks.expire_offsets
        ),
        HousekeepingTask("compact-log", "Record log compaction", tasks.compact_log),
        HousekeepingTask(
            "rebalance-report", "Spark rebalance report", tasks.rebalance_report, _staff_report
        ),
    )
}


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _schedule(periodic: PeriodicTask, now: datetime.datetime) -> dict[str, Any]:
    next_run = None
    if periodic.enabled:
        since = periodic.last_run_at or periodic.date_changed or now
        remaining = periodic.schedule.remaining_estimate(since)
        next_run = max(now, now + remaining)
    return {
        "name": periodic.name,
        "enabled": periodic.enabled,
        "every": str(periodic.interval or periodic.crontab or periodic.clocked or ""),
        "last_run_at": _iso(periodic.last_run_at),
        "next_run_at": _iso(next_run),
        "total_run_count": periodic.total_run_count,
    }


def _result(row: TaskResult | None) -> dict[str, Any] | None:
    if row is None:
        return None
    try:
        value = json.loads(row.result) if row.result else None
    except ValueError:
        value = row.result
    return {
        "task_id": row.task_id,
        "status": row.status,
        "done_at": _iso(row.date_done),
        "created_at": _iso(row.date_created),
        "result": value if row.status == "SUCCESS" else None,
        "error": (value.get("exc_message") if isinstance(value, dict) else value)
        if row.status == "FAILURE"
        else None,
    }


def housekeeping_status() -> list[dict[str, Any]]:
    now = timezone.now()
    out = []
    for item in TASKS.values():
        schedules = PeriodicTask.objects.filter(task=item.task.name).select_related(
            "interval", "crontab", "clocked"
        )
        results = TaskResult.objects.filter(task_name=item.task.name).order_by("-date_created")
        latest = results.first()
        finished = results.filter(status__in=("SUCCESS", "FAILURE")).first()
        out.append(
            {
                "key": item.key,
                "title": item.title,
                "task": item.task.name,
                "schedules": [_schedule(periodic, now) for periodic in schedules],
                "last_run": _result(finished),
                "in_progress": latest is not None
                and latest.status in ("PENDING", "STARTED", "RETRY"),
                "latest": _result(latest),
            }
        )
    return out


def task_result_counts() -> list[tuple[str, str, int, datetime.datetime | None]]:
    """``(task name, status, runs, latest done_at)`` of every task run the results backend
    keeps (django-celery-results' rows: one per run, its status the outcome; Celery deletes
    rows older than ``result_expires``, a day), for ``/metrics``."""
    rows = (
        TaskResult.objects.values("task_name", "status")
        .annotate(runs=Count("id"), latest=Max("date_done"))
        .order_by("task_name", "status")
    )
    return [(row["task_name"] or "", row["status"], row["runs"], row["latest"]) for row in rows]


def run_now(key: str) -> str:
    """Queue one run of the task ``key`` now; its task id. KeyError for an unknown key.

    The result row is written as PENDING at once (the worker overwrites it as it goes), so
    the page shows the run as queued even before a worker takes it."""
    item = TASKS[key]
    task = item.task
    arguments = item.arguments()
    try:
        task_id = str(task.apply_async(kwargs=arguments).id)
    except Exception as exc:
        if "run_id" in arguments:  # the report's row says why it never ran
            from webapp.analysis.reports import refuse_run

            refuse_run(arguments["run_id"], f"the Celery broker did not take it: {exc}")
        raise
    TaskResult.objects.get_or_create(
        task_id=task_id, defaults={"task_name": task.name, "status": "PENDING"}
    )
    return task_id
