"""Benchmark: the Spark rebalance report on generated histories, beside pandas and DuckDB.

Run ``.venv/bin/python bench/spark_report.py`` (1M and 10M events: about 12 minutes once the
histories are cached; generating the 10M one took 18 minutes on a busy two-core machine),
``--quick`` (100k events, under a minute once cached, two the first time),
``--sizes 1000000,10000000`` to choose, ``--cluster`` to also run the report on a standalone
Spark cluster, ``--workdir DIR`` (default ``/tmp/rebalance-lab-bench``) for the histories and
reports.

What is measured, per size:

* ``generate``: ``webapp.simulation.history.generate_history(DIR, N, seed=S)`` (the code behind
  ``manage.py generate_history``, default ``jobs``: two processes from 200k events), wall time
  and events/s. Histories are **cached** in the workdir, keyed by size and seed
  (``history-<N>-seed<S>``, complete once ``_generated.json`` exists), with the generation's
  own timing beside it (``history-<N>-seed<S>.timing.json``): a rerun reuses both and the table
  says ``cached`` (the figure is then the one measured when the history was made). The key
  does not cover the generator's code: delete the workdir after changing it.
* ``spark``: ``.venv/bin/python -m spark_tasks rebalance_report --input DIR --output OUT
  --master local[2] --no-ui`` as a whole process, wall time INCLUDING the Python and JVM start
  and Spark's shutdown, and events/s. With ``--progress-file`` the benchmark follows the job's
  phases (the file is rewritten every 0.5 s, so each phase's time is good to about 0.5 s; the
  report runs independent steps side by side, so a phase's time is until the next step
  started, and a step that started and ended between two reads of the file is not seen);
  ``start`` is the time until the session exists (Python, PySpark, the JVM), ``stop`` after
  ``done`` (Spark's shutdown, the process's exit). Also: the driver's peak memory (``spark
  MB``: the resident memory of the job's process and its descendants, the driver JVM with
  local mode's executors, sampled every 50 ms), and how many jobs and stages Spark ran (its
  status tracker's count in the last progress file; stages Spark skipped are not counted).
  The job sizes its settings to the history (``spark_tasks.tuning``).
* ``pandas`` and ``duckdb``: the peers in ``bench/report_peers.py`` (``pandas_report``,
  ``duckdb_report``; the rules they follow are in its docstring), each in a fresh process
  (``python bench/report_peers.py pandas|duckdb DIR``): ``wall`` is that whole process, like
  Spark's figure (the ratios use it), ``compute`` the function alone (reading the Parquet
  included), ``rss`` the process's peak resident memory. DuckDB runs with two threads (the
  machine's cores), pandas on one.
* equality: every classic and consumer group's figures (``PEER_FIGURES``: ``rebalances``,
  ``completed``, ``duration_ms`` p50/p95/max, ``partitions_moved``, ``stickiness_mean``, ``causes``,
  ``unavailable_partition_s``, ``storms``) from Spark's ``summary.json`` against each peer's:
  integers and texts exactly, a peer's float within half a unit of the last digit summary.json
  keeps (3 decimals, stickiness 4) plus 1e-6 relative; pandas against DuckDB unrounded, 1e-6
  relative. Any mismatch is printed and the benchmark exits with status 1. The peers implement
  Kafka's protocols, the classic one and the consumer protocol (KIP-848; the report's
  ``rebalances`` table counts how many groups rebalance by it, ``consumer_groups``): the
  handoff groups (those the report's ``rebalances`` table counts as ``handoff``) and
  the duplicate-consumption figures are the Spark job's alone, not compared, and Spark's time
  includes that work while the peers' does not.
* ``--cluster``: a standalone master and two workers (one core, 2 GB each) started from
  PySpark's own distribution (``SPARK_HOME`` = the pyspark package, ``bin/spark-class
  org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``) on 127.0.0.1 (port
  7077, or a free one if taken), the report submitted with ``bin/spark-submit --master
  spark://127.0.0.1:7077 --executor-memory 2g spark_tasks/__main__.py rebalance_report ...``
  (``PYSPARK_PYTHON`` = the venv's Python): wall time, and its summary.json against the local
  run's (all of it, except ``generated_at`` and ``input.path``; floats to 1e-6 relative). The
  cluster's processes are stopped when the benchmark ends, also on Ctrl-C or failure.
* growth from the smallest to the largest size: (time ratio) / (size ratio), 1.0 being linear;
  and each size's target met or not: a demo-sized history (up to 10,000 events) in at most 15 s
  wall, Spark's start included; 1M events in at most 10x DuckDB's wall time, 10M in at most 8x.

Memory: at 10M events the pandas peer peaks at about 13 GB and DuckDB at about 9 GB (measured
on a 24 GB machine): feasible there, not on a small one. Nothing is skipped silently: a peer
that fails (out of memory, say) is reported as failed with its message, and the ratios
involving it are left out.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spark_tasks.tuning import tuning_for_history  # noqa: E402

PYTHON = sys.executable
#: The report's targets (docs/analysis.md, "Benchmark"): a demo-sized history (up to
#: ``DEMO_EVENTS``) in at most ``DEMO_SECONDS`` wall, Spark's start included; from 1M events,
#: at most this many times DuckDB's wall time in the same run.
DEMO_EVENTS = 10_000
DEMO_SECONDS = 15.0
DUCKDB_RATIOS = {1_000_000: 10.0, 10_000_000: 8.0}
DEFAULT_SIZES = (1_000_000, 10_000_000)
QUICK_SIZES = (100_000,)
DEFAULT_WORKDIR = Path("/tmp/rebalance-lab-bench")
RELATIVE_TOLERANCE = 1e-6
#: How summary.json rounds each float figure (rebalance_report._number).
ROUNDING = {"stickiness_mean": 4}
DEFAULT_DIGITS = 3


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- generating ------------------------------------------------------------------------------


def history(workdir: Path, size: int, seed: int) -> dict[str, Any]:
    """The history of ``size`` events and ``seed`` in ``workdir``, generated unless cached."""
    from webapp.simulation.history import generate_history

    directory = workdir / f"history-{size}-seed{seed}"
    timing_file = workdir / f"history-{size}-seed{seed}.timing.json"
    if (directory / "_generated.json").exists() and timing_file.exists():
        timing = json.loads(timing_file.read_text())
        timing["cached"] = True
        timing["dir"] = str(directory)
        return timing
    if directory.exists():  # an interrupted generation: start again
        shutil.rmtree(directory)
    log(f"generating {size:,} events (seed {seed}) into {directory} ...")
    last = [0.0]

    def progress(events: int, at_ms: int) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            log(f"  ... {events:,} events")

    started = time.perf_counter()
    generated = generate_history(directory, size, seed=seed, progress=progress)
    wall = time.perf_counter() - started
    timing = {
        "requested": size,
        "seed": seed,
        "events": generated.events,
        "files": generated.files,
        "wall_s": wall,
    }
    timing_file.write_text(json.dumps(timing))
    timing["cached"] = False
    timing["dir"] = str(directory)
    return timing


def directory_mb(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.rglob("*.parquet")) / 1e6


# -- running a process -----------------------------------------------------------------------


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants (MB), from /proc; 0 if it is gone.

    A child still running its parent's executable is skipped: it is a fork or spawn that has
    not exec'd yet, whose pages are its parent's (the JVM spawns ``rm`` and ``bash`` through
    ``posix_spawn``, and caught in that instant the driver would be counted twice)."""
    total, pending = 0, [(pid, "")]
    while pending:
        current, parent_exe = pending.pop()
        with contextlib.suppress(OSError, ValueError):
            exe = os.readlink(f"/proc/{current}/exe")
            if exe == parent_exe:
                continue
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text().split()
                pending += [(int(child), exe) for child in children]
    return total / 1024


def run_process(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    progress_file: Path | None = None,
) -> dict[str, Any]:
    """Run ``command`` to its end: wall seconds, exit status, stdout, stderr's tail, peak RSS
    (MB: the process itself, and ``tree_peak_rss_mb`` the process with its descendants, a
    driver JVM included, sampled every 50 ms), and when ``progress_file`` is given the time
    each phase was first seen in it (seconds since the start) and its last content."""
    phases: dict[str, float] = {}
    last_progress: dict[str, Any] = {}
    tree_peak = 0.0
    started = time.perf_counter()
    with (
        open(os.devnull, "rb") as stdin,
        subprocess.Popen(
            command,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if env is None else {**os.environ, **env},
            cwd=ROOT,
        ) as process,
    ):
        output: dict[str, bytes] = {}

        def drain(name: str, stream: Any) -> None:
            output[name] = stream.read()

        readers = [
            threading.Thread(target=drain, args=("out", process.stdout), daemon=True),
            threading.Thread(target=drain, args=("err", process.stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            while True:
                if progress_file is not None:
                    with contextlib.suppress(OSError, ValueError):
                        last_progress = json.loads(progress_file.read_text())
                        phases.setdefault(last_progress["phase"], time.perf_counter() - started)
                tree_peak = max(tree_peak, _tree_rss_mb(process.pid))
                finished, status, usage = os.wait4(process.pid, os.WNOHANG)
                if finished:
                    break
                time.sleep(0.05)
        except BaseException:
            process.kill()
            raise
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        for reader in readers:
            reader.join()
    return {
        "wall_s": wall,
        "status": process.returncode,
        "stdout": output.get("out", b"").decode(errors="replace"),
        "stderr": output.get("err", b"").decode(errors="replace")[-2000:],
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "tree_peak_rss_mb": tree_peak,
        "phases": phases,
        "progress": last_progress,
    }


def phase_times(phases: Mapping[str, float], wall: float) -> dict[str, float]:
    """Seconds per phase: ``start`` until the first phase seen, each phase until the next,
    ``stop`` from ``done`` to the process's end."""
    ordered = sorted(phases.items(), key=lambda item: item[1])
    out: dict[str, float] = {}
    if not ordered:
        return {"total": wall}
    out["start"] = ordered[0][1]
    for (name, at), (_, following) in zip(ordered, [*ordered[1:], ("end", wall)], strict=True):
        out["stop" if name == "done" else name] = following - at
    return out


def load() -> float:
    """The 1-minute load average (other work on the machine skews every figure)."""
    return round(os.getloadavg()[0], 2)


def spark_local(history_dir: Path, output: Path, progress: Path) -> dict[str, Any]:
    progress.unlink(missing_ok=True)
    result = run_process(
        [
            PYTHON,
            "-m",
            "spark_tasks",
            "rebalance_report",
            "--input",
            str(history_dir),
            "--output",
            str(output),
            "--master",
            "local[2]",
            "--no-ui",
            "--progress-file",
            str(progress),
        ],
        progress_file=progress,
    )
    result["phase_s"] = phase_times(result.pop("phases"), result["wall_s"])
    with contextlib.suppress(OSError, ValueError):  # the job's last word, after the last poll
        result["progress"] = json.loads(progress.read_text())
    return result


def peer(name: str, history_dir: Path) -> dict[str, Any]:
    result = run_process([PYTHON, str(ROOT / "bench" / "report_peers.py"), name, str(history_dir)])
    result.pop("phases")
    if result["status"] == 0:
        answer = json.loads(result["stdout"].strip().splitlines()[-1])
        result["compute_s"] = answer["seconds"]
        result["groups"] = answer["groups"]
    return result


# -- comparing -------------------------------------------------------------------------------


def _same_as_rounded(key: str, rounded: Any, exact: Any) -> bool:
    """``rounded`` (summary.json's, rounded as it rounds ``key``) is ``exact`` (a peer's):
    within half a unit of the last digit kept, plus the tolerance (a value on a rounding tie,
    summed in another order, may round either way)."""
    if not isinstance(exact, float) or not isinstance(rounded, int | float):
        return _same(rounded, exact)
    half_unit = 0.5 * 10 ** -ROUNDING.get(key.rsplit(".", 1)[-1], DEFAULT_DIGITS)
    tolerance = RELATIVE_TOLERANCE * max(abs(rounded), abs(exact))
    return abs(rounded - exact) <= half_unit + tolerance


def _flat(entry: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, Mapping) and key != "causes":
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = dict(value) if isinstance(value, Mapping) else value
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= RELATIVE_TOLERANCE * max(abs(a), abs(b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


#: What the peers compute (bench/report_peers.py): these figures of summary.json, for the
#: groups that rebalance by Kafka's protocols (classic and consumer groups). A handoff group's
#: rebalances and the duplicate-consumption figures are the Spark report's alone, so
#: they are not compared.
PEER_FIGURES = (
    "rebalances",
    "completed",
    "duration_ms",
    "partitions_moved",
    "stickiness_mean",
    "causes",
    "unavailable_partition_s",
    "storms",
)


def groups_of_protocol(report: Path, protocol: str) -> set[str]:
    """The groups whose rebalances the report counts as ``protocol`` ones (its rebalances
    table)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(report / "rebalances", columns=["group_id", "rebalance_protocol"])
    of_protocol = table.filter(pc.equal(table["rebalance_protocol"], protocol))
    return set(of_protocol["group_id"].to_pylist())


def handoff_groups(report: Path) -> set[str]:
    """The groups whose rebalances the report counts as handoff ones (its rebalances table)."""
    return groups_of_protocol(report, "handoff")


def peer_figures(groups: Mapping[str, Any], handoff: set[str]) -> dict[str, Any]:
    """``groups`` (summary.json's, or a peer's) cut to what the peers compute."""
    return {
        group: {key: entry.get(key) for key in PEER_FIGURES}
        for group, entry in groups.items()
        if group not in handoff
    }


def differences(
    left: Mapping[str, Any], right: Mapping[str, Any], *, round_right: bool = False
) -> list[str]:
    """Where two ``{key: entry}`` mappings differ, one line each (empty: equal)."""
    lines = []
    for key in sorted(set(left) | set(right)):
        if key not in left or key not in right:
            lines.append(f"{key}: only in {'right' if key not in left else 'left'}")
            continue
        a, b = _flat(left[key]), _flat(right[key])
        for field in sorted(set(a) | set(b)):
            if field not in a or field not in b:
                equal = False
            elif round_right:
                equal = _same_as_rounded(field, a[field], b[field])
            else:
                equal = _same(a[field], b[field])
            if not equal:
                lines.append(f"{key} {field}: {a.get(field)!r} != {b.get(field)!r}")
    return lines


def summary_differences(local: Mapping[str, Any], other: Mapping[str, Any]) -> list[str]:
    """Two summary.json files compared whole, but for ``generated_at`` and ``input.path``."""

    def cleaned(summary: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in summary.items() if k != "generated_at"}
        out["input"] = {k: v for k, v in summary["input"].items() if k != "path"}
        return out

    a, b = cleaned(local), cleaned(other)
    lines = []
    for key in sorted(set(a) | set(b)):
        if key == "groups":
            lines.extend(differences(a[key], b[key]))
        elif not _same(a.get(key), b.get(key)):
            lines.append(f"{key}: {a.get(key)!r} != {b.get(key)!r}")
    return lines


# -- the standalone cluster ------------------------------------------------------------------


#: The standalone cluster's workers, one core each (the machine's two cores).
WORKERS = 2


class Cluster:
    """A standalone Spark master and its workers on 127.0.0.1, from PySpark's distribution."""

    def __init__(self, workdir: Path) -> None:
        import pyspark

        self.spark_home = Path(pyspark.__file__).resolve().parent
        self.dir = workdir / "cluster"
        self.dir.mkdir(parents=True, exist_ok=True)
        #: The master's URL and its web UI's port, as the master logs them once listening:
        #: every port is 0, the system's choice, so no two can be the same.
        self.url = ""
        self.master_ui = 0
        self.processes: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SPARK_HOME": str(self.spark_home), "PYSPARK_PYTHON": PYTHON}

    def _start(self, name: str, *arguments: str) -> None:
        log_file = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 (kept open while it runs)
        self.processes.append(
            subprocess.Popen(
                [str(self.spark_home / "bin" / "spark-class"), *arguments],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.dir,
                start_new_session=True,  # Ctrl-C is ours to handle: stop() ends them
            )
        )
        log_file.close()

    def start(self) -> float:
        """Start the master and ``WORKERS`` workers (one core, 2 GB each), wait until every worker
        is registered; seconds taken."""
        started = time.perf_counter()
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--webui-port",
            "0",
        )
        self._await_master()
        for worker in range(1, WORKERS + 1):
            self._start(
                f"worker-{worker}",
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--cores",
                "1",
                "--memory",
                "2g",
                "--webui-port",
                "0",
                "--work-dir",
                str(self.dir / f"work-{worker}"),
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"a cluster process ended with status {process.returncode}; "
                        f"see {self.dir}/*.log"
                    )
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.master_ui}/json/", timeout=2
                ) as answer:
                    state = json.load(answer)
                alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) == WORKERS:
                    return time.perf_counter() - started
            time.sleep(0.5)
        raise RuntimeError(f"the cluster's workers did not register in 90 s; see {self.dir}/*.log")

    def _await_master(self) -> None:
        """Read the master's URL and its web UI's port from its log, once it says them."""
        log_path = self.dir / "master.log"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.processes[0].poll() is not None:
                raise RuntimeError(f"the master ended; see {log_path}")
            text = log_path.read_text(errors="replace")
            url = re.search(r"Starting Spark master at (spark://\S+)", text)
            ui = re.search(
                r"MasterWebUI: Bound MasterWebUI to \S+, and started at http://\S+:(\d+)", text
            )
            if url and ui:
                self.url, self.master_ui = url[1], int(ui[1])
                return
            time.sleep(0.2)
        raise RuntimeError(f"the master did not say where it listens in 60 s; see {log_path}")

    def submit(self, history_dir: Path, output: Path, progress: Path) -> dict[str, Any]:
        progress.unlink(missing_ok=True)
        result = run_process(
            [
                str(self.spark_home / "bin" / "spark-submit"),
                "--master",
                self.url,
                "--executor-memory",
                "2g",
                # The driver as the Celery task launches it (webapp.analysis.reports).
                *tuning_for_history(history_dir).submit_options(),
                str(ROOT / "spark_tasks" / "__main__.py"),
                "rebalance_report",
                "--input",
                str(history_dir),
                "--output",
                str(output),
                "--no-ui",
                "--progress-file",
                str(progress),
            ],
            env={"SPARK_HOME": str(self.spark_home), "PYSPARK_PYTHON": PYTHON},
            progress_file=progress,
        )
        result["phase_s"] = phase_times(result.pop("phases"), result["wall_s"])
        return result

    def stop(self) -> None:
        """SIGTERM to each process's own session (spark-class execs the JVM in it), then
        SIGKILL after 15 s."""
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()


@contextlib.contextmanager
def terminated_on_sigterm() -> Iterator[None]:
    """SIGTERM raises SystemExit here, so that ``finally`` blocks (the cluster's stop) run."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the table -------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [tuple(header), *[tuple(row) for row in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for index, line in enumerate(lines):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else round(a / b, 3)


# -- main ------------------------------------------------------------------------------------


def measure(
    size: int, seed: int, workdir: Path, cluster: Cluster | None
) -> tuple[dict[str, Any], list[str]]:
    """Every figure of one size, and the mismatches found."""
    generated = history(workdir, size, seed)
    history_dir = Path(generated["dir"])
    events = generated["events"]
    figures: dict[str, Any] = {
        "size": size,
        "events": events,
        "parquet_mb": round(directory_mb(history_dir), 1),
        "generate": {
            "wall_s": round(generated["wall_s"], 2),
            "events_per_s": round(events / generated["wall_s"]),
            "cached": generated["cached"],
        },
    }
    problems: list[str] = []

    figures["load_before"] = {"spark": load()}
    log(f"spark local[2] on {events:,} events ...")
    output = workdir / f"report-{size}-seed{seed}-local"
    spark = spark_local(history_dir, output, workdir / f"progress-{size}-local.json")
    if spark["status"] != 0:
        raise RuntimeError(f"the Spark report failed ({spark['status']}): {spark['stderr']}")
    summary = json.loads((output / "summary.json").read_text())
    figures["spark"] = {
        "wall_s": round(spark["wall_s"], 2),
        "events_per_s": round(events / spark["wall_s"]),
        "phase_s": {k: round(v, 2) for k, v in spark["phase_s"].items()},
        # The driver (JVM and Python, local mode's executors inside it) at its peak.
        "peak_rss_mb": round(spark["tree_peak_rss_mb"]),
        # What Spark ran (its status tracker, through the progress file).
        "jobs": spark["progress"].get("jobs_done"),
        "stages": spark["progress"].get("stages_done"),
        "tasks": spark["progress"].get("tasks_done"),
        "rebalances": summary["totals"]["rebalances"],
        "groups": summary["totals"]["groups"],
    }

    handoff = handoff_groups(output)
    figures["spark"]["handoff_groups"] = len(handoff)
    figures["spark"]["consumer_groups"] = len(groups_of_protocol(output, "consumer"))
    peers: dict[str, dict[str, Any]] = {}
    for name in ("pandas", "duckdb"):
        figures["load_before"][name] = load()
        log(f"{name} on {events:,} events ...")
        result = peer(name, history_dir)
        entry: dict[str, Any] = {
            "ok": result["status"] == 0,
            "wall_s": round(result["wall_s"], 2),
            "peak_rss_mb": round(result["peak_rss_mb"]),
        }
        if result["status"] == 0:
            entry["compute_s"] = round(result["compute_s"], 2)
            found = differences(
                peer_figures(summary["groups"], handoff),
                peer_figures(result["groups"], handoff),
                round_right=True,
            )
            entry["equal_to_spark"] = not found
            problems.extend(f"spark vs {name}: {line}" for line in found)
            peers[name] = result
        else:
            entry["error"] = result["stderr"].strip().splitlines()[-1:] or [
                f"exit status {result['status']}"
            ]
            problems.append(f"{name} failed: {entry['error']}")
        figures[name] = entry
    if len(peers) == 2:
        found = differences(
            peer_figures(peers["pandas"]["groups"], handoff),
            peer_figures(peers["duckdb"]["groups"], handoff),
        )
        figures["pandas_equal_to_duckdb"] = not found
        problems.extend(f"pandas vs duckdb: {line}" for line in found)
    figures["spark_over_pandas"] = _ratio(
        figures["spark"]["wall_s"], figures["pandas"]["wall_s"] if "pandas" in peers else None
    )
    figures["spark_over_duckdb"] = _ratio(
        figures["spark"]["wall_s"], figures["duckdb"]["wall_s"] if "duckdb" in peers else None
    )

    if cluster is not None:
        figures["load_before"]["cluster"] = load()
        log(f"spark standalone cluster on {events:,} events ...")
        output_cluster = workdir / f"report-{size}-seed{seed}-cluster"
        submitted = cluster.submit(
            history_dir, output_cluster, workdir / f"progress-{size}-cluster.json"
        )
        entry = {"ok": submitted["status"] == 0, "wall_s": round(submitted["wall_s"], 2)}
        if submitted["status"] == 0:
            other = json.loads((output_cluster / "summary.json").read_text())
            found = summary_differences(summary, other)
            entry["equal_to_local"] = not found
            entry["phase_s"] = {k: round(v, 2) for k, v in submitted["phase_s"].items()}
            entry["over_local"] = _ratio(submitted["wall_s"], spark["wall_s"])
            problems.extend(f"cluster vs local: {line}" for line in found)
        else:
            entry["error"] = submitted["stderr"].strip().splitlines()[-3:]
            problems.append(f"cluster run failed: {entry['error']}")
        figures["cluster"] = entry
    return figures, problems


def growth(results: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """(time ratio) / (size ratio) from the smallest size to the largest; 1.0 is linear."""
    if len(results) < 2:
        return None
    first, last = results[0], results[-1]
    if not (first.get(key, {}).get("ok", True) and last.get(key, {}).get("ok", True)):
        return None
    time_ratio = last[key]["wall_s"] / first[key]["wall_s"]
    return round(time_ratio / (last["events"] / first["events"]), 3)


def target_of(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The target a size has (module docstring), whether the run met it; None: no target."""
    events, wall = result["events"], result["spark"]["wall_s"]
    if result["size"] <= DEMO_EVENTS:
        return {
            "events": events,
            "goal": f"<= {DEMO_SECONDS:.0f} s wall",
            "met": wall <= DEMO_SECONDS,
            "measured": f"{wall:.1f} s",
        }
    limit = DUCKDB_RATIOS.get(result["size"])
    ratio = result.get("spark_over_duckdb")
    if limit is None or ratio is None:
        return None
    return {
        "events": events,
        "goal": f"<= {limit:.0f}x DuckDB",
        "met": ratio <= limit,
        "measured": f"{ratio}x",
    }


def report(results: Sequence[Mapping[str, Any]], cluster_start_s: float | None) -> None:
    def peer_cell(r: Mapping[str, Any], name: str) -> str:
        entry = r[name]
        if not entry["ok"]:
            return "FAILED"
        return f"{entry['wall_s']:.1f} ({entry['compute_s']:.1f})"

    rows = []
    for r in results:
        rows.append(
            (
                f"{r['events']:,}",
                f"{r['parquet_mb']:.0f}",
                f"{r['generate']['wall_s']:.1f}" + (" cached" if r["generate"]["cached"] else ""),
                f"{r['generate']['events_per_s']:,}",
                _seconds(r["spark"]["wall_s"]),
                f"{r['spark']['events_per_s']:,}",
                f"{r['spark']['peak_rss_mb']:,}",
                f"{r['spark']['jobs']}/{r['spark']['stages']}",
                peer_cell(r, "pandas"),
                f"{r['pandas']['peak_rss_mb']:,}",
                peer_cell(r, "duckdb"),
                f"{r['duckdb']['peak_rss_mb']:,}",
                "-" if r["spark_over_pandas"] is None else f"{r['spark_over_pandas']}x",
                "-" if r["spark_over_duckdb"] is None else f"{r['spark_over_duckdb']}x",
                _seconds(r["cluster"]["wall_s"]) if "cluster" in r else "-",
            )
        )
    print(
        table(
            (
                "events",
                "MB",
                "generate s",
                "gen ev/s",
                "spark s",
                "spark ev/s",
                "spark MB",
                "jobs/stages",
                "pandas s (compute)",
                "pandas MB",
                "duckdb s (compute)",
                "duckdb MB",
                "spark/pandas",
                "spark/duckdb",
                "cluster s",
            ),
            rows,
        )
    )
    print()
    phases: list[str] = []
    for r in results:
        for run in ("spark", "cluster"):
            for name in r.get(run, {}).get("phase_s", {}):
                if name not in phases:
                    phases.append(name)
    phase_rows = []
    for r in results:
        for run in ("spark", "cluster"):
            if "phase_s" not in r.get(run, {}):
                continue
            phase_rows.append(
                (
                    f"{r['events']:,}",
                    "local[2]" if run == "spark" else "cluster",
                    *[_seconds(r[run]["phase_s"].get(name)) for name in phases],
                )
            )
    print("Spark's time by phase (s; from the progress file, +-0.5 s; until the next one started):")
    print(table(("events", "master", *phases), phase_rows))
    print()
    for r in results:
        print(
            f"{r['events']:,} events: 1-minute load average before each run: "
            + ", ".join(f"{k} {v}" for k, v in r["load_before"].items())
            + f" (on {os.cpu_count()} cores)"
        )
    for r in results:
        checks = [
            f"spark=pandas {r['pandas'].get('equal_to_spark', 'n/a')}",
            f"spark=duckdb {r['duckdb'].get('equal_to_spark', 'n/a')}",
            f"pandas=duckdb {r.get('pandas_equal_to_duckdb', 'n/a')}",
        ]
        if "cluster" in r:
            checks.append(f"cluster=local {r['cluster'].get('equal_to_local', 'n/a')}")
        print(
            f"{r['events']:,} events, {r['spark']['groups']} groups, "
            f"{r['spark']['rebalances']:,} rebalances: " + ", ".join(checks)
        )
        for name in ("pandas", "duckdb"):
            if not r[name]["ok"]:
                print(f"  {name} FAILED: {r[name].get('error')}")
    if cluster_start_s is not None:
        print(f"cluster (master + worker) started in {cluster_start_s:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(size) for size in DEFAULT_SIZES),
        help="history sizes in events, comma-separated (default %(default)s)",
    )
    parser.add_argument("--quick", action="store_true", help="100k events only (a smoke run)")
    parser.add_argument("--cluster", action="store_true", help="also on a standalone cluster")
    parser.add_argument(
        "--cluster-sizes",
        help="with --cluster: the sizes to run on the cluster (default: every size)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help="histories (cached), reports and logs (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the histories' seed (default 0)")
    args = parser.parse_args()
    sizes = list(QUICK_SIZES) if args.quick else [int(s) for s in args.sizes.split(",")]
    sizes.sort()
    cluster_sizes = (
        set(sizes) if not args.cluster_sizes else {int(s) for s in args.cluster_sizes.split(",")}
    )
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    results: list[dict[str, Any]] = []
    problems: list[str] = []
    cluster: Cluster | None = None
    cluster_start_s: float | None = None
    with terminated_on_sigterm():
        try:
            if args.cluster:
                cluster = Cluster(workdir)
                log(f"starting a standalone cluster at {cluster.url} ...")
                cluster_start_s = cluster.start()
            for size in sizes:
                on_cluster = cluster if size in cluster_sizes else None
                figures, found = measure(size, args.seed, workdir, on_cluster)
                results.append(figures)
                problems.extend(f"{size:,}: {line}" for line in found)
        finally:
            if cluster is not None:
                log("stopping the cluster ...")
                cluster.stop()

    report(results, cluster_start_s)
    targets = [target_of(r) for r in results]
    growth_factors = {key: growth(results, key) for key in ("spark", "pandas", "duckdb")}
    if len(results) >= 2:
        print(
            f"growth {results[0]['events']:,} -> {results[-1]['events']:,} events "
            "(time ratio / size ratio, 1.0 = linear): "
            + ", ".join(f"{k} {v}" for k, v in growth_factors.items())
        )
    for target in targets:
        if target is not None:
            print(
                f"target, {target['events']:,} events: {target['goal']}: "
                f"{'MET' if target['met'] else 'NOT MET'} ({target['measured']})"
            )
    if problems:
        print(f"MISMATCHES ({len(problems)}):")
        for line in problems[:200]:
            print(f"  {line}")
    else:
        print(
            "all equal: Spark, pandas and DuckDB per group"
            + (", cluster and local summary.json" if args.cluster else "")
        )
    print(
        json.dumps(
            {
                "bench": "spark_report",
                "quick": args.quick,
                "seed": args.seed,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "results": results,
                "growth": growth_factors,
                "targets": [target for target in targets if target is not None],
                "cluster_start_s": None if cluster_start_s is None else round(cluster_start_s, 2),
                "equal": not problems,
            },
            separators=(",", ":"),
        )
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
