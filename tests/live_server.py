"""A real ``manage.py serve`` for the tests that need one (tests/webapp/management/test_serve.py,
test_e2e.py, tests/webapp/housekeeping, tests/browser): its own record log, database and output
under a directory of the test's, the in-memory channel layer unless told otherwise; and a
throwaway redis-server for those that need the real channel layer.
When the run itself is on PostgreSQL (``make test``'s second pass, ``scripts/with-postgres.sh``),
a server's database is one of its own on that PostgreSQL instead of a SQLite file
(``server_database``).

A server may be killed and started again on the same ports, so its ports must stay free while
it is down. A port of the kernel's ephemeral range does not: any process's outgoing connection
may be given it meanwhile (CI once lost a restart of ``serve`` that way). So every server
started here listens on a port of ``own_ports``: outside the ephemeral range, which neither
``connect()`` nor a bind to port 0 draws from, and apart from the other pytest workers' ports,
each handed out once. Nothing else on the machine picks those ports, so a restart finds its
ports free. A port that must refuse connections is held bound, never listening, for as long as
it is needed (``closed_port``)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from websockets.sync.client import ClientConnection, connect

from tests import ROOT

T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """``check()``'s first true result, polled every 0.2 s; AssertionError naming ``what``
    after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.2)


class RedisServer:
    """A throwaway redis-server: no snapshots, no append-only file. redis-server cannot listen
    on a port of the system's choosing and say which, so it starts ``on_a_free_port``."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        assert self.port, "the redis-server has not started yet"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it (on the port it had before, if it ran already) and wait until it answers."""
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is not installed (make system installs it)"
        # No snapshots, no append-only file: a channel layer and a Celery broker need neither.
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]

        def start_on(port: int) -> bool:
            self.process = subprocess.Popen(
                [binary, "--port", str(port), *options],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            client = redis.Redis(port=port, socket_connect_timeout=1)
            try:
                wait_for(lambda: self._exited() or _pings(client), 10, "redis-server to answer")
            finally:
                client.close()
            return self.process.poll() is None

        if self.port:
            assert start_on(self.port), f"redis-server could not listen on {self.port} again"
        else:
            self.port = on_a_free_port(start_on, "redis-server")

    def _exited(self) -> bool:
        assert self.process is not None
        return self.process.poll() is not None

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A started redis-server, killed after the test."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


#: The kernel's ephemeral ports: those it gives an outgoing connection or a bind to port 0.
EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")


#: How many ports each process running tests has: far more than a whole run's servers take.
PORTS_EACH = 1000

#: How many xdist workers each pytest run may have: ``make test`` runs two at once (its SQLite
#: and PostgreSQL passes), the second with ``TEST_RUN=1``, and each run's workers take slots of
#: their own.
WORKERS_EACH_RUN = 8


def own_ports() -> range:
    """The ports this process may hand to its servers: ``PORTS_EACH`` of the larger of the two
    stretches outside the ephemeral range (below it from 10000, clear of the usual services'
    ports, or above it); the first ``PORTS_EACH`` for a process outside pytest-xdist (a
    benchmark), the next for xdist's worker gw0 of run 0 (``TEST_RUN``, 0 unless set), and so
    on: run 1's gw0 comes after run 0's ``WORKERS_EACH_RUN`` workers."""
    low, high = (int(bound) for bound in EPHEMERAL_PORTS.read_text().split())
    stretch = max(range(10_000, low), range(high + 1, 65_536), key=len)
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", … under xdist
    slot = 0
    if worker is not None:
        index = int(worker.removeprefix("gw"))
        assert index < WORKERS_EACH_RUN, (
            f"{worker}: a pytest run has at most {WORKERS_EACH_RUN} workers with ports of their own"
        )
        slot = 1 + int(os.environ.get("TEST_RUN", "0")) * WORKERS_EACH_RUN + index
    ports = stretch[slot * PORTS_EACH : (slot + 1) * PORTS_EACH]
    assert len(ports) == PORTS_EACH, (
        f"net.ipv4.ip_local_port_range ({low}-{high}) leaves no {PORTS_EACH} ports outside it"
        f" for {worker or 'this process'}: the tests' servers need them to restart safely"
    )
    return ports


_unused_ports = iter(own_ports())


def free_port() -> int:
    """A port of ``own_ports`` not handed out before and free now (one a process outside the
    tests holds is passed over)."""
    for port in _unused_ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"every port of {own_ports()} was handed out")


def on_a_free_port(start: Callable[[int], bool], what: str, attempts: int = 5) -> int:
    """``start(port)`` on a ``free_port``, and on another while it returns False (a process
    outside the tests took that port before the server bound it); the port it started on."""
    for _ in range(attempts):
        port = free_port()
        if start(port):
            return port
    raise RuntimeError(f"{what} did not start on a free port in {attempts} tries")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 where nothing listens, for the whole test: it is held bound and
    never listening, so a connection to it is refused and no other process can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def on_postgres(url: str) -> bool:
    """Whether the DATABASE ``url`` names PostgreSQL (else SQLite)."""
    return urlsplit(url).scheme in ("postgres", "postgresql")


def _postgres_connection(url: str) -> psycopg.Connection[dict[str, Any]]:
    """An autocommit connection to the PostgreSQL database ``url`` names."""
    # Not at the top: the benchmarks import this module without Django's settings.
    from webapp.settings import database_from_url

    config = database_from_url("DATABASE", url)
    parameters = {
        "dbname": config["NAME"],
        "user": config["USER"],
        "password": config["PASSWORD"],
        **config.get("OPTIONS", {}),
    }
    if config["HOST"]:
        parameters["host"] = config["HOST"]
    if config["PORT"]:
        parameters["port"] = config["PORT"]
    return psycopg.connect(autocommit=True, row_factory=dict_row, **parameters)


def server_database(workdir: Path) -> str:
    """The DATABASE of a server in ``workdir``: a SQLite file there; or, when this run's own
    DATABASE is PostgreSQL, a database of its own on the same PostgreSQL, named after
    ``workdir`` (a server started again in the same directory finds its data, as it would its
    SQLite file) and created the first time."""
    run = os.environ.get("DATABASE", "")
    if not on_postgres(run):
        return f"sqlite:///{workdir / 'db.sqlite3'}"
    name = "live_" + hashlib.sha256(str(workdir).encode()).hexdigest()[:20]
    with _postgres_connection(run) as db:
        if not db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return urlunsplit(urlsplit(run)._replace(path=f"/{name}"))


class LiveServer:
    """``manage.py serve -v 0`` in ``workdir``; ``settings`` are environment variables over
    the defaults (the JSON API's writes open: tests set topics up through it)."""

    def __init__(self, workdir: Path, **settings: str) -> None:
        #: Its site's and its Kafka listener's ports: 0 until the first start takes two
        #: ``free_port``s (unless ``KAFKA_PORT`` is set); a restart listens on the same ones.
        self.port = 0
        self.kafka_port = int(settings.get("KAFKA_PORT", 0))
        self.ports_file = workdir / "ports.json"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "CHANNEL_LAYER": "memory",
            "REBALANCE_LAB_OPEN_API": "1",
            "REBALANCE_LAB_LOG_PATH": str(workdir / "coordinator.db"),
            "KAFKA_RECORDS_PATH": str(workdir / "records.db"),
            "DATABASE": settings.get("DATABASE") or server_database(workdir),
            "ANALYSIS_DIR": str(workdir / "analysis"),
            "KAFKA_PORT": "0",
            **settings,
        }
        self.output = workdir / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> None:
        """Another management command on the same database."""
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, timeout=60
        )

    @property
    def url(self) -> str:
        assert self.port, "the server has not started yet: its port is the system's choice"
        return f"http://127.0.0.1:{self.port}"

    def start(self, *options: str) -> None:
        """Start serving (``options`` go to ``serve``) and wait until /healthz says ok."""
        self.ports_file.unlink(missing_ok=True)
        self.port = self.port or free_port()
        self.kafka_port = self.kafka_port or free_port()
        self.env["KAFKA_PORT"] = str(self.kafka_port)
        self.spawn(
            "manage.py",
            "serve",
            "--port",
            str(self.port),
            "--ports-file",
            str(self.ports_file),
            "-v",
            "0",
            *options,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process is not None
            assert self.process.poll() is None, self.output.read_text()
            if not self.ports_file.exists():  # written once both listen
                time.sleep(0.05)
                continue
            try:
                if self.get("/healthz")["status"] == "ok":
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"serve did not become healthy:\n{self.output.read_text()}")

    def spawn(self, *arguments: str) -> None:
        """Run ``python arguments...`` as this server, its output appended to ``output``."""
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, *arguments],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def query(self, query: str, parameters: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of the server's Django database (SQLite or PostgreSQL), as dicts; ``query``'s
        placeholders are ``%s``, as in Django's raw SQL. JSON columns are their text on both."""
        url = self.env["DATABASE"]
        if on_postgres(url):
            with _postgres_connection(url) as db:
                for json_type in ("json", "jsonb"):
                    db.adapters.register_loader(json_type, TextLoader)
                return db.execute(query.encode(), parameters).fetchall()
        with sqlite3.connect(url.removeprefix("sqlite:///")) as lite:
            lite.row_factory = sqlite3.Row
            return [dict(row) for row in lite.execute(query.replace("%s", "?"), parameters)]

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as response:
            return json.loads(response.read())

    def post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def websocket(self, **options: Any) -> ClientConnection:
        """A websocket to the consumer protocol (``options``: websockets' ``connect``'s)."""
        return connect(f"ws://127.0.0.1:{self.port}/ws/consumer/", open_timeout=5, **options)

    def stop(self, sig: int) -> int:
        """Send ``sig`` and return the exit status."""
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout=20)

    def kill(self) -> None:
        """Whatever happened in the test, leave no process behind."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
