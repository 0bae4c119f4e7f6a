"""``manage.py consume --handoff`` in processes, against a real ``manage.py serve``: two members
of a handoff group hand a partition over closed (committed) first; a member killed with -9 is
removed as soon as its socket dies (the discovery), long before its session would time out;
SIGTERM leaves cleanly."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests import ROOT
from tests.live_server import LiveServer, wait_for

GROUP = "stock-handoff"
TOPIC = "stock"


class HandoffConsumer:
    def __init__(self, name: str, url: str, tmp_path: Path, env: dict[str, str]) -> None:
        self.output = tmp_path / f"{name}.log"
        with self.output.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "consume",
                    "--handoff",
                    "--url",
                    url,
                    "--group",
                    GROUP,
                    "--topics",
                    TOPIC,
                    "--client-id",
                    name,
                    "--session-timeout-ms",
                    "60000",
                    "--heartbeat-interval-ms",
                    "300",
                    "--consume-rate",
                    "50",
                    "--poll-interval-ms",
                    "50",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def lines(self, event: str) -> list[dict[str, str]]:
        found = []
        for raw in self.output.read_text(encoding="utf-8", errors="replace").splitlines(True):
            if not raw.endswith("\n") or not raw.startswith(event + " "):
                continue
            name, *fields = shlex.split(raw)
            if name == event:
                found.append(dict(field.split("=", 1) for field in fields))
        return found

    def partitions(self, event: str) -> set[int]:
        return {
            int(item.rpartition("-")[2])
            for fields in self.lines(event)
            for item in filter(None, fields["partitions"].split(","))
        }

    def offsets(self, event: str, field: str) -> dict[int, int]:
        """The offsets by partition that its ``event`` lines gave in ``field`` (the latest of
        each)."""
        found: dict[int, int] = {}
        for fields in self.lines(event):
            found.update(offsets(fields[field]))
        return found

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def offsets(value: str) -> dict[int, int]:
    out = {}
    for item in filter(None, value.split(",")):
        partition, _, offset = item.rpartition(":")
        out[int(partition.rpartition("-")[2])] = int(offset)
    return out


def test_handoff_consumers_close_before_start_and_a_killed_one_is_removed_at_once(
    tmp_path: Path,
) -> None:
    server = LiveServer(tmp_path)
    consumers: list[HandoffConsumer] = []
    try:
        server.start()
        server.post("/api/topics", {"name": TOPIC, "partitions": 4})
        url = f"ws://127.0.0.1:{server.port}/ws/consumer/"
        a = HandoffConsumer("a", url, tmp_path, server.env)
        consumers.append(a)
        wait_for(lambda: a.partitions("start-confirmed") == {0, 1, 2, 3} or None, 30, "a starts")
        assert a.lines("joined")[0]["epoch"] == "1"

        b = HandoffConsumer("b", url, tmp_path, server.env)
        consumers.append(b)
        wait_for(lambda: len(b.partitions("start-confirmed")) == 2 or None, 30, "b starts two")
        moved = b.partitions("start")
        wait_for(lambda: a.partitions("close-confirmed") == moved or None, 10, "a's confirmation")
        assert a.partitions("close") == moved
        # b starts each moved partition where a committed it when closing it.
        committed = a.offsets("committed", "offsets")
        started = offsets(b.lines("start")[0]["positions"])
        assert started == {p: committed[p] for p in moved}
        assert all(offset > 0 for offset in started.values())

        # kill -9: no leave is sent, the session (60 s) is far away; the socket's death is
        # enough for the server to remove b, and a is granted its partitions again.
        confirmed_before = len(a.lines("start-confirmed"))
        b.kill()
        wait_for(
            lambda: len(a.lines("start-confirmed")) > confirmed_before or None,
            15,
            "a starts b's partitions again",
        )
        assert {
            int(i.rpartition("-")[2]) for i in a.lines("start")[-1]["partitions"].split(",")
        } == (moved)
        group = server.get(f"/api/groups/{GROUP}")
        assert group["kind"] == "handoff" and len(group["members"]) == 1

        a.process.send_signal(signal.SIGTERM)
        assert a.process.wait(timeout=20) == 0
        assert a.lines("left")
        wait_for(lambda: server.get(f"/api/groups/{GROUP}")["members"] == [] or None, 10, "empty")
    finally:
        for consumer in consumers:
            consumer.kill()
        server.kill()
