"""``python -m spark_tasks <job> [options]``: the one entry point of the Spark jobs.

The same file is a ``spark-submit`` application::

    spark-submit --master "$SPARK_MASTER" spark_tasks/__main__.py rebalance_report \\
        --input var/history --output var/reports/latest

Run as a file, Python puts ``spark_tasks/`` itself first on ``sys.path`` (where its modules
could shadow others) and not the repository; the lines below swap the one for the other, so no
PYTHONPATH is needed. Imports are absolute for the same reason.

Exit status: 0 done; 1 the job failed (bad input, a Spark error), with one line on stderr naming
the problem; 2 a usage error (unknown job, bad option), argparse's convention.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file (spark-submit), not with -m
    _HERE = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]
    sys.path.insert(0, str(_HERE.parent))

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spark_tasks.history import HistoryError, check_history
from spark_tasks.session import DEFAULT_DRIVER_MEMORY

PROG = "python -m spark_tasks"


@dataclass(frozen=True, slots=True)
class Job:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _not_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _memory_size(text: str) -> str:
    """A JVM memory size as Spark takes it: a number and an optional unit (k, m, g, t)."""
    if not re.fullmatch(r"[1-9][0-9]*[kmgtKMGT]?", text):
        raise argparse.ArgumentTypeError(f"must be a size such as 512m or 4g, got {text!r}")
    return text


def _rebalance_report_arguments(parser: argparse.ArgumentParser) -> None:
    from spark_tasks.rebalance_report import DEFAULT_STORM_COUNT, DEFAULT_STORM_WINDOW_MS

    parser.add_argument("--input", required=True, help="the history: DIR/day=YYYY-MM-DD/*.parquet")
    parser.add_argument(
        "--output", required=True, help="the report directory (replaced whole when done)"
    )
    parser.add_argument(
        "--storm-count",
        type=_positive,
        default=DEFAULT_STORM_COUNT,
        help="rebalances of one group within the window that make a storm (default %(default)s)",
    )
    parser.add_argument(
        "--storm-window-ms",
        type=_not_negative,
        default=DEFAULT_STORM_WINDOW_MS,
        help="the storm window in milliseconds (default %(default)s)",
    )
    _session_arguments(parser)


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master", help="Spark master (default: $SPARK_MASTER, spark-submit's, else local[*])"
    )
    parser.add_argument(
        "--driver-memory",
        type=_memory_size,
        help="the driver's heap, e.g. 4g (default: $SPARK_DRIVER_MEMORY, else "
        f"{DEFAULT_DRIVER_MEMORY}; under spark-submit, its own --driver-memory)",
    )
    parser.add_argument("--no-ui", action="store_true", help="do not start the Spark UI")
    parser.add_argument(
        "--log-level",
        default="FATAL",
        choices=("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"),
        help="Spark's log level (default %(default)s: a failure is reported as one line; "
        "WARN or ERROR show Spark's own account of it)",
    )
    parser.add_argument(
        "--progress-file",
        help="write progress JSON here (default: $SPARK_TASKS_PROGRESS_FILE, if set)",
    )


def _run_rebalance_report(args: argparse.Namespace) -> int:
    from spark_tasks.progress import track_progress
    from spark_tasks.rebalance_report import run
    from spark_tasks.session import build_session
    from spark_tasks.tuning import history_events, tuning_for

    # Fail fast, before the JVM starts, which is launched as the history's size calls for.
    tuning = tuning_for(history_events(check_history(args.input)))
    spark = build_session(
        "rebalance_report",
        master=args.master,
        ui_enabled=False if args.no_ui else None,
        log_level=args.log_level,
        memory=args.driver_memory,
        java_options=tuning.java_options,
        conf=tuning.launch,
    )
    try:
        with track_progress(spark, args.progress_file) as progress:
            summary = run(
                spark,
                args.input,
                args.output,
                storm_count=args.storm_count,
                storm_window_ms=args.storm_window_ms,
                on_phase=progress.set_phase,
            )
    finally:
        spark.stop()
    totals = summary["totals"]
    print(
        f"rebalance_report: {summary['input']['events']} events, {totals['groups']} groups, "
        f"{totals['rebalances']} rebalances, {totals['storms']} storms -> {args.output}"
    )
    return 0


JOBS: dict[str, Job] = {
    "rebalance_report": Job(
        help="rebalances per group: durations, causes, partition moves, unavailability, storms",
        add_arguments=_rebalance_report_arguments,
        run=_run_rebalance_report,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Spark jobs of Rebalance Lab.")
    jobs = parser.add_subparsers(dest="job", metavar="job", required=True)
    for name, job in JOBS.items():
        job.add_arguments(jobs.add_parser(name, help=job.help, description=job.help))
    return parser


def spark_error_text(exc: BaseException) -> str:
    """One line for a Spark failure: the JVM exception's class and message, not its trace."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return JOBS[args.job].run(args)
    except (HistoryError, OSError) as exc:
        print(f"{args.job}: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from py4j.protocol import Py4JError  # type: ignore[import-untyped]
        from pyspark.errors import PySparkException

        if not isinstance(exc, Py4JError | PySparkException):
            raise
        print(f"{args.job}: error: Spark failed: {spark_error_text(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
