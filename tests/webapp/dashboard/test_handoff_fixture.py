"""The dashboard's Node tests fold a handoff group's events recorded from the real engine
(``static/dashboard/tests/fixtures/handoff.json``). This test replays the same scenario through
the engine now and checks the file still holds exactly what it emits, so the fixture cannot
drift from the engine's events.

Regenerate after a deliberate change of the engine's events with
``python -m tests.webapp.dashboard.test_handoff_fixture``.

The file: ``events``, each as ``GET /api/groups/<id>/events`` returns it (``seq``, ``prev_seq``,
``type``, ``group_id``, ``at_ms``, the fields), and ``views``: after each engine call, the
``seq`` of its last event and the group as the engine then held it (``state``, ``epoch``, each
member's ``assignment``, ``owned``, ``to_start``, ``to_close`` as in ``/api/groups/<id>``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from coordinator_engine import (
    CoordinatorConfig,
    GroupCoordinator,
    HandoffGroupView,
    HandoffHeartbeatRequest,
    MemoryLog,
    TopicPartition,
)
from coordinator_engine.events import GroupEvent

FIXTURE = (
    Path(__file__).resolve().parents[3]
    / "static"
    / "dashboard"
    / "tests"
    / "fixtures"
    / "handoff.json"
)
GROUP = "g"
SESSION_MS = 10_000


def _tp(*partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic="t", partition=p) for p in partitions)


def _pairs(partitions: tuple[TopicPartition, ...]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in partitions]


def record() -> dict[str, Any]:
    """Three members share topic "t" (6 partitions) through every handoff state: a alone; b
    joins (a closes 3-5, b starts them); c joins (a closes 2 and b closes 5, a's close waits
    for b's before c is granted either); b leaves (its 3 and 4 go to a and c, granted at once,
    nothing to close)."""
    coord = GroupCoordinator(CoordinatorConfig(), MemoryLog(), 0)
    emitted: list[GroupEvent] = []
    coord.add_listener(emitted.append)
    events: list[dict[str, Any]] = []
    views: list[dict[str, Any]] = []
    now = 1_000

    def note() -> None:
        for event in emitted:
            seq = len(events) + 1
            events.append({"seq": seq, "prev_seq": seq - 1, **event.to_json()})
        emitted.clear()
        view = coord.group(GROUP)
        assert isinstance(view, HandoffGroupView)
        views.append(
            {
                "seq": len(events),
                "state": view.state.value,
                "epoch": view.epoch,
                "members": {
                    m.member_id: {
                        "assignment": _pairs(m.assignment),
                        "owned": _pairs(m.owned),
                        "to_start": _pairs(m.to_start),
                        "to_close": _pairs(m.to_close),
                    }
                    for m in view.members.values()
                },
            }
        )

    def beat(
        member: str, epoch: int = 1, *, closed: tuple[int, ...] = (), started: tuple[int, ...] = ()
    ) -> None:
        nonlocal now
        now += 100
        coord.handle(
            HandoffHeartbeatRequest(
                group_id=GROUP,
                member_id=member,
                member_epoch=epoch,
                session_timeout_ms=SESSION_MS,
                topics=("t",),
                closed=_tp(*closed),
                started=_tp(*started),
                client_id=f"client-{member}",
                client_host="/127.0.0.1",
            ),
            now,
        )
        note()

    coord.set_topic_partitions("t", 6, now)
    beat("a", 0)  # Initial → Starting: a is granted everything
    beat("a", started=(0, 1, 2, 3, 4, 5))  # → Stable
    beat("b", 0)  # → Closing: a must close 3, 4 and 5
    beat("a", closed=(3, 4, 5))  # → Starting: b is granted them
    beat("b", started=(3, 4, 5))  # → Stable
    beat("c", 0)  # → Closing: a closes 2, b closes 5
    beat("a", closed=(2,))  # still Closing: 2 waits for b's close of 5
    beat("b", closed=(5,))  # → Starting: c is granted 2 and 5
    beat("c", started=(2, 5))  # → Stable
    beat("b", -1)  # b leaves: 3 and 4 are granted to a and c at once → Starting
    beat("a", started=(3,))
    beat("c", started=(4,))  # → Stable
    return {"events": events, "views": views}


def test_the_dashboards_handoff_fixture_is_what_the_engine_emits() -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert recorded == record(), (
        "static/dashboard/tests/fixtures/handoff.json is stale: regenerate it with "
        "python -m tests.webapp.dashboard.test_handoff_fixture"
    )


if __name__ == "__main__":
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(record(), indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {FIXTURE}\n")
