"""``generate_history``: the plan, the coordinators' runs, the merge, the summary file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from spark_tasks.output import write_json_atomically
from webapp.analysis.export import GENERATED_NAME, HistoryDirError, _check_dir, prepare_empty_dir

from .catalogue import catalogue
from .coordinator_run import COORDINATORS, rare_collections
from .merge import InProcess, InSubprocess, write_merged
from .plan import make_plans, record_log_path
from .summary import GeneratedHistory

#: Below this many events, the coordinators run in this process (``jobs`` left unset).
PARALLEL_FROM_EVENTS = 200_000


def default_jobs(events: int) -> int:
    if events < PARALLEL_FROM_EVENTS:
        return 1
    return max(1, min(COORDINATORS, os.cpu_count() or 1))


def generate_history(
    out_dir: str | os.PathLike[str],
    events: int,
    *,
    seed: int = 0,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    record_logs: str | os.PathLike[str] | None = None,
) -> GeneratedHistory:
    """Generate a history of at least ``events`` events into ``out_dir`` (new or empty).

    ``jobs``: processes to run the coordinators in (1 or 2; default 2 from
    ``PARALLEL_FROM_EVENTS`` events on a machine with 2 cores or more); the output is the same
    either way. ``progress(events written so far, at_ms of the last one)`` is called after every
    write. ``record_logs``: a directory (created if need be) where each coordinator's full
    record stream also goes, as the ``SqliteLog`` ``coordinator-<n>.db`` (``record_log_path``)
    that a runtime would have after running the history, uncompacted; an engine built over
    one with ``coordinator_configs(events)[n]`` replays it. The history is the same with or
    without. Raises ValueError for bad arguments, HistoryDirError when ``out_dir`` cannot
    take the history or ``record_logs`` the logs (a directory that already holds one)."""
    if type(events) is not int or events < 1:
        raise ValueError(f"events must be an int >= 1, got {events!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be an int, got {seed!r}")
    if jobs is None:
        jobs = default_jobs(events)
    if type(jobs) is not int or not 1 <= jobs <= COORDINATORS:
        raise ValueError(f"jobs must be an int from 1 to {COORDINATORS}, got {jobs!r}")
    directory = Path(out_dir)
    logs = None if record_logs is None else Path(record_logs)
    if logs is not None:
        prepare_record_logs(logs)
    prepare_empty_dir(directory)
    groups = catalogue(events)
    plans = make_plans(groups, events, seed, logs)
    sources: list[InProcess | InSubprocess] = [
        InSubprocess(plan) if jobs > 1 else InProcess(plan) for plan in plans
    ]
    try:
        with rare_collections():
            written = write_merged(sources, directory, progress)
    except OSError as exc:
        raise HistoryDirError(
            f"cannot write {exc.filename or directory}: {exc.strerror or exc}"
        ) from exc
    finally:
        for source in sources:
            source.stop()
    summaries = [source.summary for source in sources]
    assert all(s is not None for s in summaries)
    by_group = {g.group_id: g for s in summaries if s is not None for g in s.groups}
    history = GeneratedHistory(
        events=written.events,
        files=written.files,
        last_seq=written.events,
        requested=events,
        seed=seed,
        coordinators=COORDINATORS,
        days=tuple(written.days),
        first_at_ms=written.first_at_ms,
        last_at_ms=written.last_at_ms,
        cleanups=sum(s.cleanups for s in summaries if s is not None),
        offsets_expired=sum(s.offsets_expired for s in summaries if s is not None),
        groups_expired=sum(s.groups_expired for s in summaries if s is not None),
        groups=tuple(by_group[spec.group_id] for spec in groups),
    )
    write_json_atomically(directory / GENERATED_NAME, history.to_json())
    return history


def prepare_record_logs(directory: Path) -> None:
    """A directory for the record logs, holding none yet (a log is never appended to twice)."""
    _check_dir(directory)
    for index in range(COORDINATORS):
        path = record_log_path(directory, index)
        if path.exists():
            raise HistoryDirError(f"{path} exists: give a directory without record logs")
