"""``manage.py serve`` end to end: a real Daphne process, a real websocket client, ``kill -9``,
and a restart that replays the log."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from .helpers import assignment, subscription

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "CHANNEL_LAYER": "memory",
            "REBALANCE_LAB_OPEN_API": "1",
            "REBALANCE_LAB_LOG_PATH": str(tmp_path / "coordinator.db"),
            "DATABASE": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        }
        self.output = tmp_path / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--port", str(self.port), "-v", "0"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output.read_text()
            try:
                if self.get("/healthz")["status"] == "ok":
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"serve did not become healthy:\n{self.output.read_text()}")

    def get(self, path: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())

    def post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def websocket(self) -> ClientConnection:
        return connect(f"ws://127.0.0.1:{self.port}/ws/consumer/", open_timeout=5)

    def stop(self, sig: int) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout=20)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path)
    yield server
    if server.process is not None and server.process.poll() is None:
        server.process.kill()
        server.process.wait()


def call(ws: ClientConnection, frame_id: int, api: str, request: dict[str, Any]) -> Any:
    ws.send(json.dumps({"id": frame_id, "api": api, "request": request}))
    reply = json.loads(ws.recv(timeout=5))
    assert reply["id"] == frame_id, reply
    return reply["response"]


def join(group_id: str, member_id: str = "") -> dict[str, Any]:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "session_timeout_ms": 30_000,
        "rebalance_timeout_ms": 30_000,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription("orders")}],
        "client_id": "c1",
    }


def test_serve_replays_the_log_after_kill_9(server: Server) -> None:
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 2})
    with server.websocket() as ws:
        coordinator = call(ws, 1, "FindCoordinator", {"key": "my-group"})
        assert (coordinator["host"], coordinator["port"]) == ("127.0.0.1", server.port)
        member_id = call(ws, 2, "JoinGroup", join("my-group"))["member_id"]
        joined = call(ws, 3, "JoinGroup", join("my-group", member_id))
        assert joined["generation_id"] == 1
        mine = assignment(("orders", 0), ("orders", 1))
        sync = {"group_id": "my-group", "generation_id": 1, "member_id": member_id}
        synced = call(
            ws,
            4,
            "SyncGroup",
            {**sync, "assignments": [{"member_id": member_id, "assignment": mine}]},
        )
        assert synced["assignment"] == mine
        offsets = [{"topic": "orders", "partition": 1, "offset": 1234}]
        committed = call(ws, 5, "OffsetCommit", {**sync, "offsets": offsets})
        assert committed == {"partitions": [{"topic": "orders", "partition": 1, "error_code": 0}]}
    # The reply above left only after the commit was durable: SIGKILL cannot lose it.
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL

    server.start()
    assert server.get("/healthz")["groups"] == 1
    assert [topic["name"] for topic in server.get("/api/topics")["topics"]] == ["orders"]
    with server.websocket() as ws:
        fetched = call(ws, 1, "OffsetFetch", {"group_id": "my-group"})
        assert [(p["partition"], p["offset"]) for p in fetched["partitions"]] == [(1, 1234)]
        described = call(ws, 2, "DescribeGroups", {"group_ids": ["my-group"]})["groups"][0]
        assert described["group_state"] == "Stable"
        assert described["members"][0]["member_assignment"] == mine
        assert call(ws, 3, "Heartbeat", sync) == {"error_code": 0}
    group = server.get("/api/groups/my-group")
    assert group["members"][0]["assignment"] == [["orders", 0], ["orders", 1]]
    assert group["offsets"][0]["offset"] == 1234
    assert server.stop(signal.SIGTERM) == 0


def test_serve_refuses_a_log_another_process_owns(server: Server, tmp_path: Path) -> None:
    import fcntl

    lock_path = tmp_path / "coordinator.db.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242")
        lock.flush()
        with pytest.raises(AssertionError):
            server.start()
        assert server.process is not None
        assert server.process.wait(timeout=20) == 1
    output = server.output.read_text()
    assert "the coordinator runtime could not start" in output
    assert "is in use by pid 4242" in output


def test_replies_to_closed_sockets_are_dropped_quietly(server: Server) -> None:
    """Clients that close their socket with requests in flight: the replies have nowhere to
    go. The server drops them without an error or a "Task exception was never retrieved",
    and goes on serving."""
    server.start()
    burst = [
        json.dumps({"id": n, "api": "DescribeGroups", "request": {"group_ids": ["g"]}})
        for n in range(200)
    ]
    for _ in range(20):
        with server.websocket() as ws:
            for frame in burst:
                ws.send(frame)
    with server.websocket() as ws:
        assert call(ws, 1, "ListGroups", {})["error_code"] == 0
    server.stop(signal.SIGTERM)
    output = server.output.read_text()
    assert "never retrieved" not in output, output
    assert "Traceback" not in output, output
