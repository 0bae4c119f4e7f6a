"""``manage.py serve`` end to end: a real Daphne process, a real websocket client, ``kill -9``,
and a restart that replays the log."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from tests.live_server import LiveServer
from tests.webapp.helpers import assignment, subscription


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path, COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0")
    yield server
    server.kill()


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


def test_serve_replays_the_log_after_kill_9(server: LiveServer) -> None:
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


def test_serve_refuses_a_log_another_process_owns(server: LiveServer, tmp_path: Path) -> None:
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


def test_replies_to_closed_sockets_are_dropped_quietly(server: LiveServer) -> None:
    """Clients that close their socket with requests in flight: the replies have nowhere to
    go. The server drops them without an error or a "Task exception was never retrieved",
    and goes on serving."""
    server.start()
    burst = [
        json.dumps({"id": n, "api": "DescribeGroups", "request": {"group_ids": ["g"]}})
        for n in range(200)
    ]
    for _ in range(20):
        # The client reads none of its replies. With websockets' default max_queue it would
        # stop reading the socket after 16 of them, and its close would wait for the server's
        # close frame behind the rest until close_timeout (10 s).
        with server.websocket(max_queue=None) as ws:
            for frame in burst:
                ws.send(frame)
    with server.websocket() as ws:
        assert call(ws, 1, "ListGroups", {})["error_code"] == 0
    server.stop(signal.SIGTERM)
    output = server.output.read_text()
    assert "never retrieved" not in output, output
    assert "Traceback" not in output, output


def test_a_handoff_group_killed_mid_handoff_resumes_where_it_was(server: LiveServer) -> None:
    """Seed 004's handoff mode across ``kill -9``: a partition moving from a to b is still
    to be closed by a after the restart, b may not start it before, and the handoff then
    completes as if nothing had happened."""
    server.start()
    server.post("/api/topics", {"name": "events", "partitions": 2})

    def beat(ws: ClientConnection, frame_id: int, member: str, epoch: int, **more: Any) -> Any:
        request = {
            "group_id": "handoff",
            "member_id": member,
            "member_epoch": epoch,
            "session_timeout_ms": 30_000,
            "topics": ["events"],
            **more,
        }
        return call(ws, frame_id, "HandoffHeartbeat", request)

    both = [{"topic": "events", "partition": p} for p in (0, 1)]
    with server.websocket() as ws:
        first = beat(ws, 1, "a", 0)
        assert sorted(tp["partition"] for tp in first["start"]) == [0, 1]
        assert beat(ws, 2, "a", first["member_epoch"], started=both)["group_state"] == "Stable"
        joined = beat(ws, 3, "b", 0)
        assert joined["group_state"] == "Closing" and joined["start"] == []
        # Killed while the members' socket is open: closing it first would make the
        # discovery remove them (docs/protocol.md), which is not what this test is about.
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL

    server.start()
    group = server.get("/api/groups/handoff")
    assert (group["kind"], group["state"]) == ("handoff", "Closing")
    members = {m["member_id"]: m for m in group["members"]}
    assert members["a"]["to_close"] == [["events", 1]]
    assert members["b"]["to_start"] == [["events", 1]] and members["b"]["owned"] == []
    epoch = joined["member_epoch"]
    with server.websocket() as ws:
        assert beat(ws, 1, "b", epoch)["start"] == []  # a has not closed it yet
        assert beat(ws, 2, "a", epoch, closed=[both[1]])["error_code"] == 0
        granted = beat(ws, 3, "b", epoch)
        assert granted["start"] == [both[1]]
        assert beat(ws, 4, "b", epoch, started=[both[1]])["group_state"] == "Stable"
        assert server.get("/api/groups/handoff")["state"] == "Stable"
