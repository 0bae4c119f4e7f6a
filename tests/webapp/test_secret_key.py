"""A server refuses to start without a secret key of its own (``webapp.secret_key``): anyone who
knows the key can forge a staff session, so there is no built-in one to fall back to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT
from tests.live_server import LiveServer


@pytest.fixture
def keyless(tmp_path: Path) -> LiveServer:
    """A server's environment with no SECRET_KEY and a SECRET_KEY_FILE that does not exist."""
    server = LiveServer(tmp_path, SECRET_KEY_FILE=str(tmp_path / "no-such-key"))
    del server.env["SECRET_KEY"]
    return server


def run(server: LiveServer, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_refuses_to_start_without_a_secret_key(keyless: LiveServer) -> None:
    done = run(keyless, "manage.py", "serve", "--port", str(keyless.port), "--no-migrate")
    assert done.returncode == 1
    assert "no SECRET_KEY: the server will not start" in done.stderr
    assert "var/secret-key" in done.stderr
    assert "Traceback" not in done.stderr


def test_daphne_refuses_to_load_the_application_without_a_secret_key(
    keyless: LiveServer,
) -> None:
    done = run(keyless, "-m", "daphne", "-p", str(keyless.port), "webapp.asgi:application")
    assert done.returncode != 0
    assert "no SECRET_KEY: the server will not start" in done.stderr


def test_a_key_file_is_read_and_an_environment_key_wins_over_it(
    keyless: LiveServer, tmp_path: Path
) -> None:
    key_file = tmp_path / "secret-key"
    key_file.write_text("key-from-the-file\n")
    keyless.env["SECRET_KEY_FILE"] = str(key_file)
    show = (
        "manage.py",
        "shell",
        "-c",
        "from django.conf import settings; print(settings.SECRET_KEY)",
    )
    assert run(keyless, *show).stdout.splitlines()[-1] == "key-from-the-file"
    keyless.env["SECRET_KEY"] = "key-from-the-environment"
    assert run(keyless, *show).stdout.splitlines()[-1] == "key-from-the-environment"
