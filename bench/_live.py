"""What the live benchmarks (`ws_join.py`, `ws_hold.py`) share: a redis-server and a real
`manage.py serve` process in a temporary directory, and consumers that are the real client
stack — one `GroupClient` + `WebsocketTransport` (its own socket) + `ClientDriver` each — many of
them on this process's event loop.

Not a benchmark itself (no table, no JSON line).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from coordinator_engine.client import ClientEvent, ConsumerConfig, GroupClient  # noqa: E402
from tests.live_server import RedisServer, on_a_free_port  # noqa: E402, F401 (the benchmarks' too)
from webapp.simulation.client_driver import ClientDriver, WebsocketTransport  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def raise_open_files_limit() -> int:
    """Raise this process's (and its children's) open-file limit to the hard limit: one
    socket per consumer here, one per consumer in the server. Returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def percentile(values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def heartbeat_figures(samples: list[float], seconds: float) -> dict[str, float]:
    """Heartbeats answered per second over ``seconds``, and their round trips' p50, p99 and
    max in milliseconds (``samples`` in seconds)."""
    return {
        "heartbeats_per_s": len(samples) / seconds,
        "heartbeat_p50_ms": 1000 * percentile(samples, 0.5),
        "heartbeat_p99_ms": 1000 * percentile(samples, 0.99),
        "heartbeat_max_ms": 1000 * max(samples, default=0.0),
    }


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_rss_mb(pid: int) -> float:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    return 0.0


def own_rss_mb() -> float:
    return process_rss_mb(os.getpid())


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class LabServer:
    """`manage.py serve` with its own log, database and output under `workdir`, the Redis
    channel layer, and `REBALANCE_LAB_PROFILE_ENGINE=1` (engine time in /healthz)."""

    def __init__(self, workdir: Path, redis_url: str, **settings: str) -> None:
        self.workdir = workdir
        #: Its site's and Kafka listener's ports, which the system picks when it starts.
        self.port = 0
        self.kafka_port = 0
        self.ports_file = workdir / "ports.json"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "CHANNEL_LAYER": "redis",
            # The benchmarks create topics through the JSON API, without a staff session.
            "REBALANCE_LAB_OPEN_API": "1",
            "REDIS_URL": redis_url,
            "REBALANCE_LAB_LOG_PATH": str(workdir / "coordinator.db"),
            "KAFKA_RECORDS_PATH": str(workdir / "records.db"),
            "DATABASE": f"sqlite:///{workdir / 'db.sqlite3'}",
            "REBALANCE_LAB_PROFILE_ENGINE": "1",
            "KAFKA_PORT": "0",
            **settings,
        }
        self.output = workdir / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        """The consumer protocol's websocket URL (once started)."""
        return f"ws://127.0.0.1:{self.port}/ws/consumer/"

    def start(self, timeout_s: float = 60) -> None:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "manage.py", "serve", "--port", "0", "-v", "0"),
                    *("--ports-file", str(self.ports_file)),
                ],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"serve exited:\n{self.output.read_text()}")
            if not self.ports_file.exists():
                time.sleep(0.05)
                continue
            ports = json.loads(self.ports_file.read_text())
            self.port, self.kafka_port = ports["http"], ports["kafka"]
            try:
                if self.get("/healthz")["status"] == "ok":
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.05)
        raise SystemExit(f"serve did not become healthy:\n{self.output.read_text()}")

    def get(self, path: str, timeout_s: float = 30) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return json.loads(response.read())

    def post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def engine_s(self) -> float:
        """Seconds spent inside the engine's handle() and advance() so far."""
        profile = self.get("/healthz")["engine_profile"]
        return float(profile["handle_s"] + profile["advance_s"])

    def gc_s(self) -> tuple[int, float]:
        """The server's garbage collections so far, and the seconds they stopped it for."""
        profile = self.get("/healthz")["engine_profile"]
        return int(profile["gc_collections"]), float(profile["gc_s"])

    def cpu_s(self) -> float:
        return process_cpu_s(self.pid)

    def removals(self, group_ids: Iterable[str]) -> Counter[str]:
        """MemberRemoved events of these groups in the server's event history, by reason
        (a false session expiry is one with reason ``session_timeout``)."""
        reasons: Counter[str] = Counter()
        for group_id in group_ids:
            after = 0
            while True:
                page = self.get(f"/api/groups/{group_id}/events?after={after}&limit=10000")
                for event in page["events"]:
                    if event["type"] == "MemberRemoved":
                        reasons[event["reason"]] += 1
                if not page["events"]:
                    break
                after = page["last_seq"]
        return reasons

    def rss_mb(self) -> float:
        return process_rss_mb(self.pid)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Member:
    """One consumer as a real client process runs it: its own socket, its own driver."""

    __slots__ = ("client", "driver", "transport")

    def __init__(
        self,
        url: str,
        config: ConsumerConfig,
        on_event: Callable[[Member, ClientEvent], None] | None = None,
        transport: WebsocketTransport | None = None,
    ) -> None:
        self.transport = transport if transport is not None else WebsocketTransport(url)
        self.client = GroupClient(config, monotonic_ms())
        callback = None if on_event is None else (lambda event: on_event(self, event))
        self.driver = ClientDriver(self.client, self.transport, monotonic_ms, callback)


async def connect_all(members: Iterable[Member], concurrency: int = 1024) -> None:
    """Open every member's socket, at most `concurrency` handshakes at a time (`serve`
    listens with a backlog of 1,024)."""
    gate = asyncio.Semaphore(concurrency)

    async def connect(member: Member) -> None:
        async with gate:
            await member.transport.start()
            await member.transport.wait_connected(120)

    await asyncio.gather(*(connect(member) for member in members))


async def close_all(members: Iterable[Member]) -> None:
    """Stop every member at once (no LeaveGroup) and close its socket."""
    members = list(members)
    for member in members:
        member.driver.stop()
    await asyncio.gather(*(m.transport.close(drain_timeout_s=0) for m in members))


def print_table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    cells = [tuple(str(c) for c in row) for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        pairs = enumerate(zip(row, widths, strict=True))
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in pairs))
        if n == 0:
            print("  ".join("-" * w for w in widths))
