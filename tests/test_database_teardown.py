"""The run's end on PostgreSQL: pytest-django drops the test database, which PostgreSQL refuses
while any session is connected to it. An async test that reaches the database through
``sync_to_async`` leaves a connection open in asgiref's database thread, which outlives the
test; ``tests/conftest.py`` closes that thread's connections before the drop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests import ROOT

pytestmark = pytest.mark.database

#: A test that leaves the database thread's connection open, and checks that it did.
LEAVES_A_CONNECTION_OPEN = """
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import connection


def still_connected() -> bool:
    return connection.connection is not None


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_connection_left_in_the_database_thread() -> None:
    assert await sync_to_async(User.objects.count)() == 0
    assert await sync_to_async(still_connected)()
"""


def test_a_connection_an_async_test_left_open_does_not_keep_the_test_database(
    tmp_path: Path,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's sessions: make test's PostgreSQL pass runs this")
    (tmp_path / "test_leaves_a_connection_open.py").write_text(LEAVES_A_CONNECTION_OPEN)
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    # A run of its own, outside xdist: its test database is not this worker's.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            *("--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")),
            str(tmp_path / "test_leaves_a_connection_open.py"),
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "teardown test databases" not in done.stdout, done.stdout
