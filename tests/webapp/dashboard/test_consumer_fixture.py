"""The dashboard's Node tests fold a consumer group's events recorded from the real engine
(``static/dashboard/tests/fixtures/consumer.json``). This test replays the same scenario through
the engine now and checks the file still holds exactly what it emits, so the fixture cannot
drift from the engine's events.

Regenerate after a deliberate change of the engine's events with
``python -m tests.webapp.dashboard.test_consumer_fixture``.

The file: ``events``, each as ``GET /api/groups/<id>/events`` returns it (``seq``, ``prev_seq``,
``type``, ``group_id``, ``at_ms``, the fields), and ``views``: after each engine call, the
``seq`` of its last event and the group as the engine then held it (``state``, ``group_epoch``,
``assignment_epoch``, each member's ``member_epoch``, ``member_state``, ``assignment``,
``pending_revocation`` and ``target`` as in ``/api/groups/<id>``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupView,
    CoordinatorConfig,
    GroupCoordinator,
    MemoryLog,
    OwnedTopicPartitions,
)
from coordinator_engine.events import GroupEvent

FIXTURE = (
    Path(__file__).resolve().parents[3]
    / "static"
    / "dashboard"
    / "tests"
    / "fixtures"
    / "consumer.json"
)
GROUP = "g"


def _pairs(partitions: Mapping[str, tuple[int, ...]]) -> list[list[Any]]:
    return [[t, p] for t, parts in sorted(partitions.items()) for p in sorted(parts)]


def record() -> dict[str, Any]:
    """Three members share topic "t" (6 partitions) through every consumer group state: a
    alone (Empty → Stable); b joins (a must revoke 3-5, b waits for them unreleased, a
    revokes, b gets them); c joins (a and b each revoke one for c); b leaves (its partitions
    are nobody's until a and c take them at their next heartbeats)."""
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
        assert isinstance(view, ConsumerGroupView)
        views.append(
            {
                "seq": len(events),
                "state": view.state.value,
                "group_epoch": view.group_epoch,
                "assignment_epoch": view.assignment_epoch,
                "members": {
                    m.member_id: {
                        "member_epoch": m.member_epoch,
                        "member_state": m.state.name,
                        "assignment": _pairs(m.assigned),
                        "pending_revocation": _pairs(m.pending_revocation),
                        "target": _pairs(m.target),
                    }
                    for m in view.members.values()
                },
            }
        )

    def beat(member: str, epoch: int, owned: tuple[int, ...] | None = None) -> None:
        nonlocal now
        now += 100
        joining = epoch == 0
        coord.handle(
            ConsumerGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member,
                member_epoch=epoch,
                rebalance_timeout_ms=30_000 if joining else -1,
                subscribed_topic_names=("t",) if joining else None,
                topic_partitions=(OwnedTopicPartitions(topic="t", partitions=owned),)
                if owned is not None
                else ()
                if joining
                else None,
                client_id=f"client-{member}",
                client_host="/127.0.0.1",
            ),
            now,
        )
        note()

    coord.set_topic_partitions("t", 6, now)
    beat("a", 0)  # Empty → Stable at epoch 1: a gets everything
    beat("b", 0)  # epoch 2 → Reconciling: b waits for 3-5 (unreleased)
    beat("a", 1, (0, 1, 2, 3, 4, 5))  # a must revoke 3-5 (unrevoked, still epoch 1)
    beat("a", 1, (0, 1, 2))  # a revoked them: epoch 2, Stable
    beat("b", 2, ())  # b gets 3-5: the group is Stable
    beat("c", 0)  # epoch 3: c waits for 2 and 5
    beat("a", 2, (0, 1, 2))  # a must revoke 2
    beat("b", 2, (3, 4, 5))  # b must revoke 5
    beat("a", 2, (0, 1))  # a revoked 2: epoch 3
    beat("c", 3, ())  # c gets 2, still waits for 5
    beat("b", 2, (3, 4))  # b revoked 5: epoch 3
    beat("c", 3, (2,))  # c gets 5: Stable
    beat("b", -1)  # b leaves: epoch 4, its 3 and 4 are nobody's
    beat("a", 3, (0, 1))  # a takes 3
    beat("c", 3, (2, 5))  # c takes 4: Stable
    return {"events": events, "views": views}


def test_the_dashboards_consumer_fixture_is_what_the_engine_emits() -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert recorded == record(), (
        "static/dashboard/tests/fixtures/consumer.json is stale: regenerate it with "
        "python -m tests.webapp.dashboard.test_consumer_fixture"
    )


if __name__ == "__main__":
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(record(), indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {FIXTURE}\n")
