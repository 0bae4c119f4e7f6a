"""End to end: a real Redis, a real ``manage.py serve``, 20 ``manage.py consume`` processes in
one group, ``kill -9`` of the server mid-run and a restart on the same port, log and database.

What must hold: the group settles (Stable, 20 members, every partition owned by exactly one
member, each consumer's printed assignment the server's); the offsets get committed; after the
kill the replayed group has the generation it had and the offsets it had committed (or newer);
the consumers find the coordinator again and carry on (the group is Stable with all 20 again and
the committed offsets keep growing); SIGTERM closes every consumer cleanly (exit 0, LeaveGroup).
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests import ROOT
from tests.live_server import LiveServer, RedisServer, wait_for

pytestmark = pytest.mark.slow

GROUP = "e2e-orders"
TOPIC = "orders"
PARTITIONS = 40
CONSUMERS = 20

T = TypeVar("T")


class Consumer:
    """One ``manage.py consume`` process and the lines it printed."""

    def __init__(self, index: int, url: str, tmp_path: Path, env: dict[str, str]) -> None:
        self.output = tmp_path / f"consumer-{index}.log"
        with self.output.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "consume",
                    "--url",
                    url,
                    "--group",
                    GROUP,
                    "--topics",
                    TOPIC,
                    "--client-id",
                    f"e2e-{index}",
                    "--session-timeout-ms",
                    "10000",
                    "--heartbeat-interval-ms",
                    "500",
                    "--auto-commit-interval-ms",
                    "1000",
                    "--consume-rate",
                    "20",
                    "--poll-interval-ms",
                    "100",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def lines(self) -> list[tuple[str, dict[str, str]]]:
        """``(event, fields)`` of every complete line that is an event line."""
        parsed = []
        text = self.output.read_text(encoding="utf-8", errors="replace")
        for raw in text.splitlines(keepends=True):
            if not raw.endswith("\n") or "=" not in raw:
                continue
            try:
                event, *fields = shlex.split(raw)
            except ValueError:
                continue
            if all("=" in field for field in fields):
                parsed.append((event, dict(field.split("=", 1) for field in fields)))
        return parsed

    def last(self, event: str) -> dict[str, str] | None:
        found = [fields for name, fields in self.lines() if name == event]
        return found[-1] if found else None


def partitions_of(value: str) -> set[tuple[str, int]]:
    pairs = set()
    for item in filter(None, value.split(",")):
        topic, _, partition = item.rpartition("-")
        pairs.add((topic, int(partition)))
    return pairs


def settled(server: LiveServer, consumers: list[Consumer]) -> dict[str, Any] | None:
    """The group's view once Stable with every consumer in it, each partition owned exactly
    once, and every consumer's last printed assignment the server's; else None."""
    try:
        group = server.get(f"/api/groups/{GROUP}")
    except OSError:
        return None
    if group["state"] != "Stable" or group["member_count"] != CONSUMERS:
        return None
    if group["pending_member_ids"]:
        return None
    owned = [(t, p) for member in group["members"] for t, p in member["assignment"]]
    expected = {(TOPIC, p) for p in range(PARTITIONS)}
    if len(owned) != len(set(owned)) or set(owned) != expected:
        return None
    assignments = {m["member_id"]: {(t, p) for t, p in m["assignment"]} for m in group["members"]}
    for consumer in consumers:
        printed = consumer.last("assigned")
        if printed is None or int(printed["generation"]) != group["generation_id"]:
            return None
        if assignments.get(printed["member"]) != partitions_of(printed["partitions"]):
            return None
    return group


def committed(group: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(row["topic"], row["partition"]): row["offset"] for row in group["offsets"]}


def all_committed_beyond(
    server: LiveServer, floor: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int] | None:
    """The committed offsets once every partition's is above ``floor`` (0 when absent)."""
    try:
        offsets = committed(server.get(f"/api/groups/{GROUP}"))
    except OSError:
        return None
    expected = [(TOPIC, p) for p in range(PARTITIONS)]
    if all(offsets.get(tp, -1) > floor.get(tp, 0) for tp in expected):
        return offsets
    return None


def test_consumers_survive_a_kill_9_of_the_server(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    server = LiveServer(
        tmp_path,
        CHANNEL_LAYER="redis",
        REDIS_URL=redis_server.url,
        # Long enough for the 20 processes' first joins to land in one rebalance.
        COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="1000",
    )
    consumers: list[Consumer] = []
    try:
        server.start()
        server.post("/api/topics", {"name": TOPIC, "partitions": PARTITIONS})
        url = f"ws://127.0.0.1:{server.port}/ws/consumer/"
        consumers = [Consumer(i, url, tmp_path, server.env) for i in range(CONSUMERS)]

        before = wait_for(lambda: settled(server, consumers), 60, "a settled group of 20")
        offsets_before = wait_for(
            lambda: all_committed_beyond(server, {}), 20, "offsets of every partition"
        )
        generation = before["generation_id"]
        members = {m["member_id"] for m in before["members"]}
        assert all(c.process.poll() is None for c in consumers)

        # The commits acknowledged so far are durable: SIGKILL must not lose them.
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL
        server.start()
        replayed = server.get(f"/api/groups/{GROUP}")
        assert replayed["generation_id"] == generation
        assert {m["member_id"] for m in replayed["members"]} == members
        offsets_after = committed(replayed)
        assert all(offsets_after[tp] >= offset for tp, offset in offsets_before.items())

        # The consumers find the coordinator again and carry on in the same group.
        wait_for(lambda: settled(server, consumers), 30, "the group to settle again")
        wait_for(
            lambda: all_committed_beyond(server, offsets_after),
            30,
            "commits beyond the offsets replayed",
        )
        for consumer in consumers:
            events = [name for name, _ in consumer.lines()]
            assert "coordinator-lost" in events, consumer.output.read_text()
            assert events.count("coordinator") >= 2, consumer.output.read_text()

        for consumer in consumers:
            consumer.process.send_signal(signal.SIGTERM)
        for consumer in consumers:
            assert consumer.process.wait(timeout=20) == 0, consumer.output.read_text()
            left = consumer.last("left")
            assert left is not None and left["leave_group_sent"] == "true"
        final = server.get(f"/api/groups/{GROUP}")
        assert final["state"] == "Empty"
        assert server.stop(signal.SIGTERM) == 0
        assert "Traceback" not in server.output.read_text()
    finally:
        for consumer in consumers:
            if consumer.process.poll() is None:
                consumer.process.kill()
            consumer.process.wait()
        server.kill()
