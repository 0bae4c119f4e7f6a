"""``STATE_DIR``: one setting moves all of a run's state, so two labs run side by side on one
machine. ``scripts/run.sh`` (what ``make run`` runs) is started for real with its own
``STATE_DIR`` and ports, and must write nothing under the checkout's ``var/``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.live_server import RedisServer, wait_for

pytestmark = pytest.mark.slow

#: The settings that would each move one file; STATE_DIR must move them all when none is set.
PATH_SETTINGS = (
    "REBALANCE_LAB_LOG_PATH",
    "KAFKA_RECORDS_PATH",
    "DATABASE",
    "ANALYSIS_DIR",
    "SECRET_KEY_FILE",
)


def clean_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PATH_SETTINGS}
    env.pop("SECRET_KEY", None)
    return {**env, "DJANGO_SETTINGS_MODULE": "webapp.settings", **settings}


def as_from_a_terminal() -> None:
    """In the child, before ``run.sh`` starts: SIGINT at its default action, as a shell on a
    terminal starts ``make run``. A command a non-interactive shell starts with ``&`` (as
    ``scripts/test-passes.sh`` starts its PostgreSQL pass, or ``bash script &``) runs with
    SIGINT and SIGQUIT ignored, and so do its children, pytest's workers among them, until
    something installs a handler (PySpark's context does); bash can neither trap nor reset a
    signal ignored when it started. So a pytest started that way once gave ``run.sh`` a Ctrl-C
    it could not hear, and the test waited in vain, leaving the whole lab running."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_every_state_path_defaults_to_a_file_in_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "lab-2"
    show = (
        "import json; from django.conf import settings as s; import django; django.setup(); "
        "print(json.dumps({'log': str(s.REBALANCE_LAB_LOG_PATH), "
        "'records': str(s.KAFKA_RECORDS_PATH), 'db': str(s.DATABASES['default']['NAME']), "
        "'analysis': str(s.ANALYSIS_DIR), 'state': str(s.STATE_DIR)}))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", show],
        cwd=ROOT,
        env=clean_env(STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout) == {
        "log": str(state / "coordinator.db"),
        "records": str(state / "records.db"),
        "db": str(state / "db.sqlite3"),
        "analysis": str(state / "analysis"),
        "state": str(state),
    }


def files_under(directory: Path) -> dict[str, int]:
    """Every file below ``directory`` with its modification time (ns)."""
    if not directory.exists():
        return {}
    return {str(p): p.stat().st_mtime_ns for p in directory.rglob("*") if p.is_file()}


def test_a_second_lab_keeps_all_its_state_in_its_own_state_dir(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    checkout_state = files_under(ROOT / "var")
    state = tmp_path / "second-lab"
    env = clean_env(
        STATE_DIR=str(state),
        PORT="0",
        KAFKA_PORT="0",
        REDIS_PORT=str(redis_server.port),
        REPORT_AFTER_START_S="0",
    )
    output = tmp_path / "run.log"
    with output.open("wb") as out:
        run = subprocess.Popen(
            ["scripts/run.sh"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=as_from_a_terminal,
        )
    try:
        ports_file = state / "ports.json"

        def serving() -> dict[str, int] | None:
            assert run.poll() is None, output.read_text()
            return json.loads(ports_file.read_text()) if ports_file.exists() else None

        ports = wait_for(serving, 90, "the second lab to serve")
        assert ports["http"] and ports["kafka"]
        written = {p.name for p in state.iterdir()}
        assert {
            "staff-password",
            "secret-key",
            "db.sqlite3",
            "coordinator.db",
            "celery-worker.log",
            "celery-beat.log",
        } <= written, written
        assert "using the Redis already listening" in output.read_text()
    finally:
        run.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            status = run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.terminate()  # its TERM trap stops what it started: the test leaves nothing running
            run.wait(timeout=60)
            raise
    assert status in (0, 130), output.read_text()
    assert files_under(ROOT / "var") == checkout_state
