"""A job's progress, from Spark's status tracker, as a small JSON file a web page can poll.

Theory of operation
===================

``SparkContext.statusTracker()`` answers from the driver's in-memory status store (the same one
the Spark UI reads, kept even with ``spark.ui.enabled=false``): which jobs exist, each job's
stage ids, and for each stage its task count and completed tasks. A job only exists once an
action runs, and a job lists all its stages up front, so the totals are "as known": they grow
as the report runs its next action, and ``stages_done == stages_total`` means the known work is
done, not the report (``state`` says that).

``ProgressReporter`` is a daemon thread that polls every ``interval_s`` (0.5 s) and, when it has
a path, rewrites the file atomically (``spark_tasks.output.write_json_atomically``)::

    {"state": "running", "phase": "partition unavailability",
     "stages_done": 7, "stages_total": 9, "tasks_done": 12, "tasks_total": 15,
     "jobs_done": 5, "jobs_total": 6, "ui_url": "http://host:4040", "updated_at": "...Z"}

``state`` is ``running`` while the thread lives, then ``done`` or ``failed`` (with ``error``).
A stage counts as done when all its tasks completed, or when its job finished without running
it (Spark skips a stage whose shuffle output it already has); a skipped stage's tasks count in
neither total. Jobs that existed before the reporter started are not counted, so a session
shared by several reports (tests) reports each on its own.

``track_progress(spark)`` is what callers use: a reporter writing to ``SPARK_TASKS_PROGRESS_FILE``
when that is set, a reporter that only keeps the numbers (``snapshot()``) otherwise.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from .output import write_json_atomically

__all__ = ["PROGRESS_FILE_ENV", "ProgressReporter", "track_progress"]

PROGRESS_FILE_ENV = "SPARK_TASKS_PROGRESS_FILE"

_FINISHED = frozenset({"SUCCEEDED", "FAILED"})


@dataclass(frozen=True, slots=True)
class _StageTally:
    done: bool
    skipped: bool
    tasks_total: int
    tasks_done: int


class ProgressReporter:
    """Polls the status tracker of ``context`` and writes a progress file to ``path``, if any."""

    def __init__(
        self, context: SparkContext, path: str | Path | None = None, *, interval_s: float = 0.5
    ) -> None:
        self._context = context
        self._tracker = context.statusTracker()
        self._path = None if path is None else Path(path)
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._phase = "starting"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._baseline = set(self._all_job_ids())
        # A finished job's stages never change again: tally them once, and keep the tally when
        # Spark forgets the job (it keeps spark.ui.retainedJobs of them).
        self._finished: dict[int, list[_StageTally]] = {}
        self._last: dict[str, Any] = {}

    # -- the caller's side ---------------------------------------------------------------------

    def set_phase(self, phase: str) -> None:
        """Name what the job is doing now (shown on the page as text)."""
        with self._lock:
            self._phase = phase

    def start(self) -> ProgressReporter:
        self._publish("running")
        self._thread = threading.Thread(target=self._loop, name="spark-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, error: str | None = None) -> dict[str, Any]:
        """Stop polling and publish the final state (``failed`` when ``error`` is given)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if error is None:
            self.set_phase("done")
        return self._publish("done" if error is None else "failed", error=error)

    def snapshot(self) -> dict[str, Any]:
        """The last published progress."""
        with self._lock:
            return dict(self._last)

    # -- the thread ----------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            with contextlib.suppress(Exception):  # a poll racing the session's end: skip it
                self._publish("running")

    def _all_job_ids(self) -> list[int]:
        ids = set(self._tracker.getJobIdsForGroup(None))
        ids.update(self._tracker.getActiveJobsIds())
        return sorted(ids)

    def _stage_tally(self, stage_id: int, job_finished: bool) -> _StageTally:
        info = self._tracker.getStageInfo(stage_id)
        if info is None:  # forgotten (beyond spark.ui.retainedStages) or not yet known
            return _StageTally(done=job_finished, skipped=job_finished, tasks_total=0, tasks_done=0)
        complete = info.numTasks > 0 and info.numCompletedTasks >= info.numTasks
        skipped = job_finished and not complete
        return _StageTally(
            done=complete or job_finished,
            skipped=skipped,
            tasks_total=0 if skipped else info.numTasks,
            tasks_done=0 if skipped else min(info.numCompletedTasks, info.numTasks),
        )

    def _tallies(self) -> tuple[int, int, list[_StageTally]]:
        jobs_total = jobs_done = 0
        stages: list[_StageTally] = []
        for job_id in sorted(set(self._all_job_ids()) | self._finished.keys()):
            if job_id in self._baseline:
                continue
            jobs_total += 1
            if job_id in self._finished:
                jobs_done += 1
                stages.extend(self._finished[job_id])
                continue
            info = self._tracker.getJobInfo(job_id)
            if info is None:
                continue
            finished = info.status in _FINISHED
            tallies = [self._stage_tally(stage_id, finished) for stage_id in list(info.stageIds)]
            if finished:
                jobs_done += 1
                self._finished[job_id] = tallies
            stages.extend(tallies)
        return jobs_total, jobs_done, stages

    def _publish(self, state: str, *, error: str | None = None) -> dict[str, Any]:
        jobs_total, jobs_done, stages = self._tallies()
        with self._lock:
            progress: dict[str, Any] = {
                "state": state,
                "phase": self._phase,
                "stages_done": sum(stage.done for stage in stages),
                "stages_total": len(stages),
                "tasks_done": sum(stage.tasks_done for stage in stages),
                "tasks_total": sum(stage.tasks_total for stage in stages),
                "jobs_done": jobs_done,
                "jobs_total": jobs_total,
                "ui_url": self._context.uiWebUrl,
                "updated_at": datetime.datetime.now(datetime.UTC).isoformat(
                    timespec="milliseconds"
                ),
            }
            if error is not None:
                progress["error"] = error
            self._last = progress
            if self._path is not None:
                write_json_atomically(self._path, progress)
        return progress


@contextlib.contextmanager
def track_progress(
    spark: SparkSession, path: str | Path | None = None, *, interval_s: float = 0.5
) -> Iterator[ProgressReporter]:
    """A running reporter for the block; the file is ``path``, else ``$SPARK_TASKS_PROGRESS_FILE``
    (no file when neither is set). The final state is ``failed`` if the block raised."""
    target = path if path is not None else os.environ.get(PROGRESS_FILE_ENV) or None
    reporter = ProgressReporter(spark.sparkContext, target, interval_s=interval_s).start()
    try:
        yield reporter
    except BaseException as exc:
        reporter.stop(error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise
    reporter.stop()
