"""Housekeeping that survives its broker (docs/operations.md, "Supervision"): the Celery worker
and beat run under supervisord with ``scripts/supervisord.conf``, as ``make run`` runs them,
beside a real Redis and ``manage.py serve``.

What must hold: the server says whether a worker and beat are alive by asking them (a ping,
beat's own announcement), not by reading schedules; a worker that dies is started again and
the restart is logged; with Redis killed under the running stack and started again on the
same port, the scheduled tasks run again and both processes answer again; and the live pages
lose nothing meanwhile."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from tests import ROOT
from tests.live_server import LiveServer, RedisServer, wait_for
from webapp.dashboard.metrics import parse_counts

from .test_celery import every_second

pytestmark = pytest.mark.slow

CONFIG = ROOT / "scripts" / "supervisord.conf"
GROUP = "through-the-outage"
MEMBER = "Ab3xq9Ul0kGo7wJd4nT1eQ"


class Supervisor:
    """``supervisord -c scripts/supervisord.conf`` with the server's settings, its state (log,
    socket, the programs' logs) in ``state_dir``."""

    def __init__(self, server: LiveServer, state_dir: Path) -> None:
        self.state_dir = state_dir
        state_dir.mkdir()
        self.env = {**server.env, "STATE_DIR": str(state_dir), "PYTHON": sys.executable}
        bin_dir = Path(sys.executable).parent
        self.supervisord = str(bin_dir / "supervisord")
        self.supervisorctl = str(bin_dir / "supervisorctl")
        with (state_dir / "supervisord.out").open("wb") as out:
            self.process = subprocess.Popen(
                [self.supervisord, "-c", str(CONFIG)],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def ctl(self, *args: str) -> str:
        result = subprocess.run(
            [self.supervisorctl, "-c", str(CONFIG), *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return result.stdout

    def pid(self, program: str) -> int | None:
        """The program's pid while it runs (supervisorctl says 0 otherwise)."""
        answer = self.ctl("pid", program).strip()
        return int(answer) if answer.isdigit() and int(answer) > 0 else None

    def log(self) -> str:
        return (self.state_dir / "supervisord.log").read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def stack(tmp_path: Path, redis_server: RedisServer) -> Iterator[tuple[LiveServer, Supervisor]]:
    server = LiveServer(
        tmp_path,
        CHANNEL_LAYER="redis",
        REDIS_URL=redis_server.url,
        HOUSEKEEPING_RETRIES="2",
        HOUSEKEEPING_RETRY_BACKOFF_S="1",
        HOUSEKEEPING_CONTROL_TIMEOUT_S="2",
        REPORT_AFTER_START_S="0",
    )
    supervisor = None
    try:
        server.start()
        every_second(server)
        supervisor = Supervisor(server, tmp_path / "state")
        yield server, supervisor
    finally:
        if supervisor is not None:
            supervisor.stop()
        server.kill()


def alive(server: LiveServer) -> dict[str, Any] | None:
    """/healthz's housekeeping when both the worker and beat answer."""
    processes = server.get("/healthz")["housekeeping"]
    if processes["worker"]["alive"] and processes["beat"]["alive"]:
        return dict(processes)
    return None


def up(server: LiveServer) -> dict[str, float]:
    """``rebalance_lab_housekeeping_up`` by process, from a scrape of /metrics."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
        counts = parse_counts(response.read().decode())
    return {
        dict(labels)["process"]: value
        for (name, labels), value in counts.items()
        if name == "rebalance_lab_housekeeping_up"
    }


def runs_since(server: LiveServer, moment: datetime.datetime) -> list[dict[str, Any]]:
    """Offset-expiry runs that succeeded after ``moment``."""
    rows = server.query(
        "SELECT date_done FROM django_celery_results_taskresult"
        " WHERE task_name = 'housekeeping.expire_offsets' AND status = 'SUCCESS'"
    )
    return [
        row
        for row in rows
        if datetime.datetime.fromisoformat(row["date_done"]).replace(tzinfo=datetime.UTC) > moment
    ]


def test_the_server_says_whether_worker_and_beat_answer(
    stack: tuple[LiveServer, Supervisor],
) -> None:
    server, supervisor = stack
    processes = wait_for(lambda: alive(server), 60, "the worker and beat to answer")
    assert processes["error"] is None
    (worker,) = processes["worker"]["names"]
    assert worker.startswith("celery@")
    assert processes["beat"]["seen"]["pid"] == supervisor.pid("celery-beat")
    # The Housekeeping page's API says the same, and so does /metrics (a loopback scrape).
    housekeeping = server.get("/api/housekeeping")["processes"]
    assert housekeeping["worker"]["alive"] and housekeeping["beat"]["alive"]
    assert up(server) == {"worker": 1.0, "beat": 1.0}

    # Beat stopped by hand: it is silent once its announcement expires.
    assert "celery-beat: stopped" in supervisor.ctl("stop", "celery-beat")
    wait_for(
        lambda: server.get("/healthz")["housekeeping"]["beat"]["alive"] is False,
        60,
        "beat to be reported silent",
    )
    assert server.get("/healthz")["housekeeping"]["worker"]["alive"]
    wait_for(lambda: up(server) == {"worker": 1.0, "beat": 0.0}, 30, "/metrics to say so")


def test_a_dead_worker_is_started_again_and_the_restart_logged(
    stack: tuple[LiveServer, Supervisor],
) -> None:
    server, supervisor = stack
    wait_for(lambda: alive(server), 60, "the worker and beat to answer")
    first = supervisor.pid("celery-worker")
    assert first is not None
    os.killpg(first, signal.SIGKILL)  # the worker and its pool, as an OOM kill would
    second = wait_for(
        lambda: (pid := supervisor.pid("celery-worker")) != first and pid,
        60,
        "supervisord to start the worker again",
    )
    assert second != first
    log = supervisor.log()
    assert "exited: celery-worker (terminated by SIGKILL" in log, log
    assert log.count("spawned: 'celery-worker'") == 2, log
    # The new worker answers, and runs the scheduled tasks.
    restarted = datetime.datetime.now(datetime.UTC)
    wait_for(lambda: alive(server), 60, "the new worker to answer")
    wait_for(lambda: runs_since(server, restarted), 60, "a scheduled run by the new worker")


def test_housekeeping_runs_again_after_redis_was_killed_and_came_back(
    stack: tuple[LiveServer, Supervisor], redis_server: RedisServer
) -> None:
    server, supervisor = stack
    wait_for(lambda: alive(server), 60, "the worker and beat to answer")
    before = datetime.datetime.now(datetime.UTC)
    wait_for(lambda: runs_since(server, before), 60, "a scheduled run before the outage")

    redis_server.stop()  # SIGKILL: as an OOM kill or a crash would
    down = wait_for(
        lambda: (h := server.get("/healthz")["housekeeping"])["error"] and h,
        30,
        "the health check to see the broker gone",
    )
    assert down["worker"]["alive"] is False and down["beat"]["alive"] is False
    assert "broker" in down["error"]
    # The coordinator serves on without its broker.
    assert server.get("/healthz")["status"] == "ok"
    # Down until the worker has given up on its connection three times (2, 4, 6 s of backoff)
    # or exited of it (kombu's error, which supervisord answers with a restart); then Redis
    # comes back on the same port.
    worker_log = supervisor.state_dir / "celery-worker.log"
    wait_for(
        lambda: (
            "Trying again in 6.00 seconds" in worker_log.read_text()
            or "exited: celery-worker" in supervisor.log()
        ),
        90,
        "the worker to retry its broker connection three times, or exit",
    )
    redis_server.start()
    back = datetime.datetime.now(datetime.UTC)

    wait_for(lambda: alive(server), 120, "the worker and beat to answer again")
    wait_for(lambda: runs_since(server, back), 120, "a scheduled run after Redis came back")
    assert supervisor.pid("celery-worker") is not None
    assert supervisor.pid("celery-beat") is not None


def test_the_live_pages_go_on_through_a_redis_outage(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """The dashboard's feeds and the members' websockets do not go through Redis (they listen
    to the runtime in the server's own process), so while Redis is down a group's page keeps
    every event, in order, with nothing to mend: each event's ``prev_seq`` is the one before,
    from the snapshot on, across the outage and after Redis is back."""
    server = LiveServer(tmp_path, CHANNEL_LAYER="redis", REDIS_URL=redis_server.url)
    try:
        server.start()
        server.post("/api/topics", {"name": "orders", "partitions": 2})
        feed = connect(
            f"ws://127.0.0.1:{server.port}/ws/dashboard/groups/{GROUP}/",
            open_timeout=5,
            origin=f"http://127.0.0.1:{server.port}",  # type: ignore[arg-type]
        )
        with feed, server.websocket() as member:
            snapshot = json.loads(feed.recv(timeout=5))
            assert snapshot["type"] == "snapshot"
            seq = snapshot["seq"]

            def heartbeat(epoch: int, **fields: Any) -> dict[str, Any]:
                member.send(
                    json.dumps(
                        {
                            "id": epoch,
                            "api": "ConsumerGroupHeartbeat",
                            "request": {
                                "group_id": GROUP,
                                "member_id": MEMBER,
                                "member_epoch": epoch,
                                "client_id": "outage-test",
                                **fields,
                            },
                        }
                    )
                )
                return dict(json.loads(member.recv(timeout=5))["response"])

            def events_until(last_type: str) -> list[dict[str, Any]]:
                """The feed's events until one of ``last_type`` came, checked in order."""
                nonlocal seq
                seen: list[dict[str, Any]] = []
                deadline = time.monotonic() + 20
                while last_type not in [event["type"] for event in seen]:
                    assert time.monotonic() < deadline, f"no {last_type} in {seen}"
                    message = json.loads(feed.recv(timeout=10))
                    if message["type"] != "events":
                        continue
                    for event in message["events"]:
                        assert event["prev_seq"] == seq, (event, seq)  # no gap, no repeat
                        seq = event["seq"]
                        seen.append(event)
                return seen

            redis_server.stop()
            joined = heartbeat(
                0,
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=["orders"],
                topic_partitions=[],
            )
            assert joined["error_code"] == 0 and joined["member_epoch"] > 0
            during = events_until("StateChanged")
            assert "ConsumerMemberJoined" in [e["type"] for e in during]

            redis_server.start()
            left = heartbeat(-1)
            assert left["error_code"] == 0 and left["member_epoch"] == -1
            after = events_until("MemberRemoved")
            (removed,) = [e for e in after if e["type"] == "MemberRemoved"]
            assert removed["member_id"] == MEMBER and removed["reason"] == "left"
        assert server.get("/healthz")["status"] == "ok"
    finally:
        server.kill()
