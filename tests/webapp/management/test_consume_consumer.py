"""``manage.py consume --protocol consumer`` in processes, against a real ``manage.py serve``:
two members of a KIP-848 consumer group; the second's join makes the first revoke half its
partitions (committed first), and the second starts them where the first committed; every
assignment change is a line (epoch, revoked, assigned); SIGTERM revokes, leaves with epoch -1
and gives the partitions back. Also the options: ``--handoff`` is ``--protocol handoff``, and
what does not apply is refused before anything starts."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests import ROOT
from tests.live_server import LiveServer, wait_for

from .test_consume_handoff import HandoffConsumer, offsets

GROUP = "stock-kip848"
TOPIC = "stock"


class ConsumerProtocolMember(HandoffConsumer):
    """A ``consume --protocol consumer`` process; reads its lines as the handoff one does."""

    def __init__(self, name: str, url: str, tmp_path: Path, env: dict[str, str]) -> None:
        self.output = tmp_path / f"{name}.log"
        with self.output.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "consume",
                    "--protocol",
                    "consumer",
                    "--url",
                    url,
                    "--group",
                    GROUP,
                    "--topics",
                    TOPIC,
                    "--client-id",
                    name,
                    "--assignor",
                    "uniform",
                    "--auto-commit-interval-ms",
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

    def owned(self) -> set[int]:
        """What the last ``assigned`` line says it owns."""
        assigned = self.lines("assigned")
        if not assigned:
            return set()
        return {int(i.rpartition("-")[2]) for i in assigned[-1]["partitions"].split(",") if i}


def test_consumer_protocol_members_revoke_before_the_other_starts_and_leave_cleanly(
    tmp_path: Path,
) -> None:
    server = LiveServer(
        tmp_path,
        COORDINATOR_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS="300",
        COORDINATOR_CONSUMER_GROUP_MIN_HEARTBEAT_INTERVAL_MS="300",
    )
    members: list[ConsumerProtocolMember] = []
    try:
        server.start()
        server.post("/api/topics", {"name": TOPIC, "partitions": 4})
        url = f"ws://127.0.0.1:{server.port}/ws/consumer/"
        a = ConsumerProtocolMember("a", url, tmp_path, server.env)
        members.append(a)
        wait_for(lambda: a.owned() == {0, 1, 2, 3} or None, 30, "a owns everything")
        (first_epoch,) = a.lines("epoch")[:1]
        assert (first_epoch["epoch"], first_epoch["previous"]) == ("1", "0")
        member_a = first_epoch["member"]
        assert len(member_a) == 22  # KIP-1082: the member's own id, a Kafka Uuid
        wait_for(lambda: a.lines("committed") or None, 10, "a commits")

        b = ConsumerProtocolMember("b", url, tmp_path, server.env)
        members.append(b)
        wait_for(lambda: len(b.owned()) == 2 or None, 30, "b takes two partitions")
        moved = b.owned()
        wait_for(lambda: a.owned() == {0, 1, 2, 3} - moved or None, 10, "a keeps the others")
        assert a.partitions("revoked") == moved
        # Revoked after a commit of each: b starts each where a committed it.
        revoked_at = next(
            i
            for i, raw in enumerate(a.output.read_text().splitlines())
            if raw.startswith("revoked ")
        )
        committed: dict[int, int] = {}
        for raw in a.output.read_text().splitlines()[:revoked_at]:
            if raw.startswith("committed "):
                committed.update(offsets(raw.split("offsets=")[1].split(" ")[0]))
        # b prints its positions once its OffsetFetch is answered, after its "assigned" line.
        started = wait_for(
            lambda: (fetched := b.offsets("fetched", "positions")).keys() >= moved and fetched,
            10,
            "b to fetch the positions of what it was assigned",
        )
        assert started == {p: committed[p] for p in moved}
        assert all(offset > 0 for offset in started.values())
        # Each change of a's assignment moved its epoch on.
        assert [e["epoch"] for e in a.lines("epoch")][:2] == ["1", "2"]

        group = server.get(f"/api/groups/{GROUP}")
        assert group["kind"] == "consumer" and group["state"] == "Stable"
        shown = {m["member_id"]: m for m in group["members"]}
        assert sorted(p for _, p in shown[member_a]["assignment"]) == sorted({0, 1, 2, 3} - moved)
        assert {m["connection"] for m in group["members"]} == {"websocket"}

        b.process.send_signal(signal.SIGTERM)
        assert b.process.wait(timeout=20) == 0
        assert b.partitions("revoked") == moved and b.lines("left") and b.lines("closed")
        wait_for(lambda: a.owned() == {0, 1, 2, 3} or None, 30, "a takes them back")
        assert len(server.get(f"/api/groups/{GROUP}")["members"]) == 1

        a.process.send_signal(signal.SIGTERM)
        assert a.process.wait(timeout=20) == 0
        wait_for(lambda: server.get(f"/api/groups/{GROUP}")["members"] == [] or None, 10, "empty")
    finally:
        for member in members:
            member.kill()
        server.kill()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"handoff": True, "protocol": "consumer"}, "--handoff and --protocol consumer contradict"),
        ({"protocol": "handoff", "instance_id": "i"}, "--instance-id does not apply to --protocol"),
        ({"handoff": True, "instance_id": "i"}, "--instance-id does not apply to --protocol"),
        (
            {"protocol": "consumer", "assignor": "cooperative-sticky"},
            "--assignor 'cooperative-sticky' is not one of the coordinator's assignors "
            "(uniform, range)",
        ),
        ({"protocol": "consumer", "max_poll_interval_ms": 0}, "rebalance_timeout_ms"),
    ],
)
def test_options_that_do_not_apply_to_the_protocol_are_refused(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("consume", group="g", topics="t", **options)
