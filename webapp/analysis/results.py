"""What the analysis page shows, read from the report runs (``/api/analysis``,
``/api/analysis/groups/<id>``): the newest run (a progress bar while it runs), the newest report
that succeeded (its ``summary.json`` from the database), and from that report's Parquet tables
the rebalances to plot (at most :data:`MAX_POINTS`, the most recent) and the storms.
Synchronous: the ORM and pyarrow.

pyarrow's dataset API (which loads pandas) is imported where a table is read, not with this
module: every Django process imports it through the URLs (``manage.py`` commands, ``serve``, the
Celery worker), and most of them never read a report (0.4 s of each start on a 2-core machine)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from webapp.models import ReportRun

__all__ = ["MAX_POINTS", "MAX_STORMS", "analysis_json", "latest_report", "run_json"]

#: Rebalances sent to the page's time chart (the most recent ones).
MAX_POINTS = 3_000
#: Storms listed (the most recent ones).
MAX_STORMS = 100

_POINT_COLUMNS = (
    "group_id",
    "start_ms",
    "duration_ms",
    "join_ms",
    "sync_ms",
    "cause",
    "cause_member_id",
    "protocol_name",
    "rebalance_protocol",
    "members_before",
    "members_after",
    "partitions_moved",
    "unavailable_partition_ms",
    "completed",
)
_STORM_COLUMNS = (
    "group_id",
    "first_start_ms",
    "last_start_ms",
    "rebalances",
    "member_ids",
    "rebalancing_ms",
    "unavailable_partition_s",
    "span_ms",
)


def run_json(run: ReportRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "status": run.status,
        "trigger": run.trigger,
        "spark_master": run.spark_master,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "events_exported": run.events_exported,
        "events_total": run.events_total,
        "progress": run.progress,
        "spark_ui_url": run.spark_ui_url or None,
        "error": run.error or None,
    }


@functools.lru_cache(maxsize=64)
def _rows(
    directory: Path, columns: tuple[str, ...], group_id: str | None, order: str, limit: int
) -> list[dict[str, Any]]:
    """The newest ``limit`` rows of a report table, oldest first. A succeeded report's tables
    never change, so each (table, group, limit) is read once, not at every poll of the page
    (every two seconds while a newer run is under way). Callers do not modify the result."""
    if not directory.is_dir():
        return []
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    dataset = ds.dataset(directory, format="parquet")
    wanted = [name for name in columns if name in dataset.schema.names]
    condition = ds.field("group_id") == group_id if group_id is not None else None
    table = dataset.to_table(columns=wanted, filter=condition)
    if table.num_rows > limit:
        newest = pc.sort_indices(table, sort_keys=[(order, "descending")])[:limit]
        table = table.take(newest)
    return sorted(table.to_pylist(), key=lambda row: row[order] or 0)


def latest_report() -> ReportRun | None:
    """The newest run that succeeded."""
    run: ReportRun | None = ReportRun.objects.filter(status=ReportRun.Status.SUCCEEDED).first()
    return run


def analysis_json(group_id: str | None = None) -> dict[str, Any]:
    """The page's data: ``run`` (the newest run), ``report`` (the newest succeeded one:
    ``run_id``, ``finished_at``, ``summary``; for a group, ``summary`` keeps the report's
    parameters and input and holds the group's own entry as ``group``), ``rebalances`` and
    ``storms`` (of the group, or of all groups)."""
    newest = ReportRun.objects.first()
    report = latest_report()
    body: dict[str, Any] = {
        "run": run_json(newest) if newest is not None else None,
        "report": None,
        "rebalances": [],
        "storms": [],
    }
    if report is None or not report.summary:
        return body
    summary = dict(report.summary)
    if group_id is not None:
        summary = {
            key: summary.get(key) for key in ("generated_at", "input", "parameters", "job")
        } | {"group": (report.summary.get("groups") or {}).get(group_id)}
    body["report"] = {
        "run_id": report.pk,
        "finished_at": report.finished_at.isoformat() if report.finished_at else None,
        "summary": summary,
    }
    output = Path(report.output_dir)
    body["rebalances"] = _rows(
        output / "rebalances", _POINT_COLUMNS, group_id, "start_ms", MAX_POINTS
    )
    body["storms"] = _rows(
        output / "storms", _STORM_COLUMNS, group_id, "first_start_ms", MAX_STORMS
    )
    return body
