"""The dashboard's staff actions (``POST /api/admin/<action>``, docs/dashboard.md): staff only,
CSRF-checked, answered in words, each leaving an ``AdminAction`` audit row; and the JSON API's
writes closed to anonymous callers unless ``REBALANCE_LAB_OPEN_API``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import AsyncClient

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupView,
    HandoffGroupView,
    OffsetCommitRequest,
    PartitionOffset,
)
from tests.webapp.helpers import Client, stable_group
from webapp.models import AdminAction
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.simulation.manager import simulation_for

pytestmark = pytest.mark.asyncio


async def make_user(username: str, *, staff: bool) -> User:
    return await sync_to_async(User.objects.create_user)(
        username=username, password="pw-" + username, is_staff=staff
    )


async def signed_in(username: str, *, staff: bool = True) -> AsyncClient:
    """A client with a session and the CSRF checks on, as a browser."""
    await make_user(username, staff=staff)
    client = AsyncClient(enforce_csrf_checks=True)
    assert await client.alogin(username=username, password="pw-" + username)
    page = await client.get("/")  # sets the csrftoken cookie
    assert page.status_code == 200
    return client


async def act(client: AsyncClient, action: str, body: Any, *, csrf: bool = True) -> Any:
    headers = {"X-CSRFToken": client.cookies["csrftoken"].value} if csrf else {}
    return await client.post(
        f"/api/admin/{action}",
        data=json.dumps(body),
        content_type="application/json",
        headers=headers,
    )


async def audit() -> list[AdminAction]:
    return await sync_to_async(list)(AdminAction.objects.order_by("id"))


async def test_a_staff_user_triggers_a_rebalance_and_it_is_audited(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    staff = await signed_in("ops")
    response = await act(staff, "rebalance", {"group_id": "my-group"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "ok": True,
        "result": "group 'my-group' is rebalancing (it was Stable)",
    }
    view = runtime.group("my-group")
    assert view is not None and view.state.value == "PreparingRebalance"
    again = await act(staff, "rebalance", {"group_id": "my-group"})
    assert again.status_code == 409
    assert again.json()["error"] == "group 'my-group' is already preparing a rebalance"
    rows = await audit()
    assert [(r.username, r.action, r.group_id, r.ok) for r in rows] == [
        ("ops", "rebalance", "my-group", True),
        ("ops", "rebalance", "my-group", False),
    ]
    assert rows[1].result == "group 'my-group' is already preparing a rebalance"
    assert rows[0].parameters == {"group_id": "my-group"}


async def test_the_audit_log_is_listed_in_the_django_admin(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    staff = await signed_in("ops")
    assert (await act(staff, "rebalance", {"group_id": "my-group"})).status_code == 200
    assert (await act(staff, "delete-group", {"group_id": "my-group"})).status_code == 409
    # The admin `manage.py staffuser` makes is a superuser: it reads the audit in /admin/.
    await sync_to_async(User.objects.create_superuser)(username="root", password="pw-root")
    admin = AsyncClient()
    assert await admin.alogin(username="root", password="pw-root")
    page = await admin.get("/admin/webapp/adminaction/")
    assert page.status_code == 200
    listing = page.content.decode()
    assert "group &#x27;my-group&#x27; is rebalancing (it was Stable)" in listing
    assert "NON_EMPTY_GROUP" in listing
    assert listing.count('<td class="field-username">ops</td>') == 2
    # Read-only: nobody adds or edits an audit record.
    assert (await admin.get("/admin/webapp/adminaction/add/")).status_code == 403


async def test_anonymous_and_non_staff_callers_are_refused_and_nothing_happens(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    anonymous = AsyncClient(enforce_csrf_checks=True)
    refused = await anonymous.post(
        "/api/admin/rebalance", data={"group_id": "my-group"}, content_type="application/json"
    )
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "login_required"
    viewer = await signed_in("viewer", staff=False)
    forbidden = await act(viewer, "rebalance", {"group_id": "my-group"})
    assert forbidden.status_code == 403
    assert forbidden.json()["error"] == {
        "code": "staff_only",
        "message": "viewer is not a staff user",
    }
    view = runtime.group("my-group")
    assert view is not None and view.state.value == "Stable"


async def test_an_action_without_the_csrf_token_is_refused(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    staff = await signed_in("ops")
    response = await act(staff, "rebalance", {"group_id": "my-group"}, csrf=False)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "csrf_failed"
    view = runtime.group("my-group")
    assert view is not None and view.state.value == "Stable"


async def test_removing_a_member_is_a_leave_with_the_admins_reason(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    member_id = await stable_group(ws)
    staff = await signed_in("ops")
    removed: list[Any] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if item.event.type == "MemberRemoved" else None
    )
    response = await act(staff, "remove-member", {"group_id": "my-group", "member_id": member_id})
    assert response.status_code == 200, response.content
    assert [(e.member_id, e.reason) for e in removed] == [(member_id, "removed_by_admin")]
    missing = await act(staff, "remove-member", {"group_id": "my-group", "member_id": "nobody"})
    assert missing.status_code == 404
    assert missing.json()["error"] == "group 'my-group' has no member 'nobody'"


async def test_deleting_a_group_needs_it_empty_as_kafka(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    member_id = await stable_group(ws)
    staff = await signed_in("ops")
    busy = await act(staff, "delete-group", {"group_id": "my-group"})
    assert busy.status_code == 409
    assert busy.json()["error"] == (
        "NON_EMPTY_GROUP: group 'my-group' is Stable; only an Empty group is deleted"
    )
    await ws.call("LeaveGroup", {"group_id": "my-group", "members": [{"member_id": member_id}]})
    done = await act(staff, "delete-group", {"group_id": "my-group"})
    assert done.status_code == 200, done.content
    assert runtime.group("my-group") is None or runtime.group("my-group").state.value == "Dead"
    counted = runtime.metrics.requests  # both were DeleteGroups requests, the page's own
    assert counted.request_counts()[("DeleteGroups", "dashboard")] == 2
    errors = counted.error_counts()
    assert (errors[("DeleteGroups", "NON_EMPTY_GROUP")], errors[("DeleteGroups", "NONE")]) == (1, 1)


async def test_offsets_of_an_empty_group_are_reset_and_deleted(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", partitions=2)
    member_id = await stable_group(ws)
    sync = {"group_id": "my-group", "generation_id": 1, "member_id": member_id}
    offsets = [{"topic": "orders", "partition": p, "offset": 5} for p in (0, 1)]
    await ws.call("OffsetCommit", {**sync, "offsets": offsets})
    staff = await signed_in("ops")
    busy = await act(staff, "reset-offsets", {"group_id": "my-group", "to": "earliest"})
    assert busy.status_code == 409
    assert "needs an Empty group" in busy.json()["error"]
    await ws.call("LeaveGroup", {"group_id": "my-group", "members": [{"member_id": member_id}]})
    reset = await act(staff, "reset-offsets", {"group_id": "my-group", "to": "earliest"})
    assert reset.status_code == 200, reset.content
    assert reset.json()["result"] == "reset 2 partitions of orders to earliest in 'my-group'"
    committed = runtime.committed_offsets("my-group")
    assert {tp: v.offset for tp, v in committed.items()} == {("orders", 0): 0, ("orders", 1): 0}
    bad = await act(staff, "reset-offsets", {"group_id": "my-group", "to": "yesterday"})
    assert bad.status_code == 400
    deleted = await act(staff, "delete-offsets", {"group_id": "my-group"})
    assert deleted.status_code == 200, deleted.content
    assert runtime.committed_offsets("my-group") == {}


async def test_spawn_partitions_cleanup_and_bad_input(runtime: CoordinatorRuntime) -> None:
    await runtime.create_topic("orders", partitions=2)
    staff = await signed_in("ops")
    spawned = await act(
        staff,
        "spawn",
        {"group_id": "g", "topics": ["orders"], "behaviour": "steady", "count": 2},
    )
    assert spawned.status_code == 200, spawned.content
    names = spawned.json()["names"]
    assert len(names) == 2
    paused = await act(staff, "simulation", {"name": names[0], "do": "pause"})
    assert paused.status_code == 200, paused.content
    assert paused.json()["result"] == f"pause: {names[0]} is now paused"
    for name in names:
        await act(staff, "simulation", {"name": name, "do": "kill"})
    grown = await act(staff, "partitions", {"topic": "orders", "partitions": 4})
    assert grown.status_code == 200
    assert grown.json()["result"].startswith("topic 'orders' has 4 partitions (was 2)")
    shrink = await act(staff, "partitions", {"topic": "orders", "partitions": 1})
    assert shrink.status_code == 400
    assert "never removed" in shrink.json()["error"]
    cleaned = await act(staff, "cleanup", {})
    assert cleaned.status_code == 200
    assert cleaned.json()["result"].startswith("offset cleanup: ")
    too_many = await act(staff, "spawn", {"group_id": "g", "topics": ["orders"], "count": 51})
    assert too_many.status_code == 400
    unknown = await act(staff, "explode", {})
    assert unknown.status_code == 404
    not_json = await staff.post(
        "/api/admin/cleanup",
        data="{",
        content_type="application/json",
        headers={"X-CSRFToken": staff.cookies["csrftoken"].value},
    )
    assert not_json.status_code == 400
    assert not_json.json()["error"].startswith("the body is not JSON")
    assert [r.ok for r in await audit()][-3:] == [False, False, False]


async def test_spawn_refuses_consumers_of_the_other_kind_and_takes_the_pages_instance_id(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", partitions=2)
    await stable_group(ws)  # a classic group, my-group
    staff = await signed_in("ops")
    simulation = simulation_for(runtime)
    try:
        refused = await act(
            staff,
            "spawn",
            {"group_id": "my-group", "topics": ["orders"], "protocol": "handoff", "count": 2},
        )
        assert refused.status_code == 409, refused.content
        error = refused.json()["error"]
        assert error.startswith("INCONSISTENT_GROUP_PROTOCOL: group 'my-group' is a classic group")
        assert simulation.consumers == {}, "nothing was started"

        started = await act(
            staff,
            "spawn",
            {"group_id": "h", "topics": ["orders"], "protocol": "handoff", "behaviour": "steady"},
        )
        assert started.status_code == 200, started.content
        for _ in range(200):
            if isinstance(runtime.group("h"), HandoffGroupView):
                break
            await asyncio.sleep(0.02)
        assert isinstance(runtime.group("h"), HandoffGroupView)
        classic = await act(staff, "spawn", {"group_id": "h", "topics": ["orders"]})
        assert classic.status_code == 409, classic.content
        assert "group 'h' is a handoff group" in classic.json()["error"]

        # The page's spawn form names a static member's id `instance_id`.
        static = await act(
            staff,
            "spawn",
            {"group_id": "s", "topics": ["orders"], "count": 2, "instance_id": "box"},
        )
        assert static.status_code == 200, static.content
        ids = sorted(simulation.get(n).spec.group_instance_id for n in static.json()["names"])
        assert ids == ["box-1", "box-2"]
        assert [r.ok for r in await audit()] == [False, True, False, True]
    finally:
        await simulation.stop_all()


async def test_removing_a_consumer_group_member_fences_it_as_the_admins(
    runtime: CoordinatorRuntime,
) -> None:
    await runtime.create_topic("orders", partitions=2)
    for member_id in ("m1", "m2"):
        joined = await runtime.submit(
            ConsumerGroupHeartbeatRequest(
                group_id="kip848",
                member_id=member_id,
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=("orders",),
                topic_partitions=(),
            )
        )
        assert joined.error_code == 0
    staff = await signed_in("ops")
    removed: list[Any] = []
    runtime.add_listener(
        lambda item: removed.append(item.event) if item.event.type == "MemberRemoved" else None
    )
    response = await act(staff, "remove-member", {"group_id": "kip848", "member_id": "m2"})
    assert response.status_code == 200, response.content
    assert response.json()["result"] == "m2 was removed from 'kip848'; the group epoch goes up"
    assert [(e.member_id, e.reason) for e in removed] == [("m2", "removed_by_admin")]
    view = runtime.group("kip848")
    assert isinstance(view, ConsumerGroupView) and list(view.members) == ["m1"]
    missing = await act(staff, "remove-member", {"group_id": "kip848", "member_id": "m2"})
    assert missing.status_code == 404


async def test_offsets_of_an_empty_consumer_group_are_reset_and_deleted(
    runtime: CoordinatorRuntime,
) -> None:
    await runtime.create_topic("orders", partitions=2)

    async def beat(epoch: int) -> int:
        joining = epoch == 0
        answer = await runtime.submit(
            ConsumerGroupHeartbeatRequest(
                group_id="kip848",
                member_id="m1",
                member_epoch=epoch,
                rebalance_timeout_ms=30_000 if joining else -1,
                subscribed_topic_names=("orders",) if joining else None,
                topic_partitions=() if joining else None,
            )
        )
        assert answer.error_code == 0
        return int(answer.member_epoch)

    epoch = await beat(0)
    offsets = tuple(PartitionOffset(topic="orders", partition=p, offset=5) for p in (0, 1))
    committed = await runtime.submit(
        OffsetCommitRequest(group_id="kip848", generation_id=epoch, member_id="m1", offsets=offsets)
    )
    assert [p.error_code for p in committed.partitions] == [0, 0]
    staff = await signed_in("ops")
    busy = await act(staff, "reset-offsets", {"group_id": "kip848", "to": "latest"})
    assert busy.status_code == 409
    assert busy.json()["error"].startswith("group 'kip848' is Stable: resetting offsets needs")
    await beat(-1)
    reset = await act(staff, "reset-offsets", {"group_id": "kip848", "to": "earliest"})
    assert reset.status_code == 200, reset.content
    committed_now = runtime.committed_offsets("kip848")
    assert {tp: v.offset for tp, v in committed_now.items()} == {("orders", 0): 0, ("orders", 1): 0}
    deleted = await act(staff, "delete-offsets", {"group_id": "kip848"})
    assert deleted.status_code == 200, deleted.content
    assert runtime.committed_offsets("kip848") == {}


async def test_spawn_keeps_consumer_protocol_members_and_the_other_kinds_apart(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", partitions=2)
    await stable_group(ws)  # a classic group, my-group
    staff = await signed_in("ops")
    simulation = simulation_for(runtime)
    try:
        refused = await act(
            staff, "spawn", {"group_id": "my-group", "topics": ["orders"], "protocol": "consumer"}
        )
        assert refused.status_code == 409, refused.content
        assert refused.json()["error"] == (
            "INCONSISTENT_GROUP_PROTOCOL: group 'my-group' is a classic group and kinds do not "
            "mix; spawn classic consumers there, or consumer ones in another group"
        )
        assert simulation.consumers == {}, "nothing was started"

        started = await act(
            staff,
            "spawn",
            {
                "group_id": "k",
                "topics": ["orders"],
                "protocol": "consumer",
                "behaviour": "slow_revoke",
                "assignor": "uniform",
                "count": 2,
            },
        )
        assert started.status_code == 200, started.content
        assert started.json()["result"].startswith("started 2 slow_revoke consumers in 'k'")
        for _ in range(200):
            if isinstance(runtime.group("k"), ConsumerGroupView):
                break
            await asyncio.sleep(0.02)
        assert isinstance(runtime.group("k"), ConsumerGroupView)
        for protocol in ("classic", "handoff"):
            other = await act(
                staff, "spawn", {"group_id": "k", "topics": ["orders"], "protocol": protocol}
            )
            assert other.status_code == 409, other.content
            assert other.json()["error"].startswith(
                "INCONSISTENT_GROUP_PROTOCOL: group 'k' is a consumer group and kinds do not mix"
            )
        bad = await act(
            staff,
            "spawn",
            {"group_id": "k", "topics": ["orders"], "protocol": "consumer", "assignor": "sticky"},
        )
        assert (
            bad.status_code == 400
            and "does not apply to protocol 'consumer'" in (bad.json()["error"])
        )
        assert len(simulation.consumers) == 2
    finally:
        await simulation.stop_all()


async def test_the_apis_writes_need_staff_unless_opened(
    runtime: CoordinatorRuntime, settings: Any
) -> None:
    settings.REBALANCE_LAB_OPEN_API = False
    anonymous = AsyncClient()
    body = json.dumps({"name": "orders", "partitions": 2})
    refused = await anonymous.post("/api/topics", data=body, content_type="application/json")
    assert refused.status_code == 401
    assert (await anonymous.get("/api/topics")).status_code == 200  # reading stays open
    staff = await signed_in("ops")
    created = await staff.post(
        "/api/topics",
        data=body,
        content_type="application/json",
        headers={"X-CSRFToken": staff.cookies["csrftoken"].value},
    )
    assert created.status_code == 201, created.content
    settings.REBALANCE_LAB_ANONYMOUS_READ = False
    assert (await anonymous.get("/api/topics")).status_code == 401
    page = await anonymous.get("/groups/orders/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")


async def test_run_task_names_the_tasks_and_says_when_the_broker_refuses(
    transactional_db: None, settings: Any, closed_port: int
) -> None:
    """No runtime is needed to queue a housekeeping task; an unknown task or a broker that
    does not answer is refused in words (tests/webapp/housekeeping runs the task for real)."""
    staff = await signed_in("ops")
    unknown = await act(staff, "run-task", {"task": "defragment"})
    assert unknown.status_code == 400
    assert unknown.json()["error"] == (
        "no housekeeping task 'defragment'; one of expire-offsets, compact-log, rebalance-report"
    )
    from webapp.housekeeping.celery_app import app

    saved = {key: app.conf[key] for key in ("broker_url", "task_publish_retry")}
    app.conf.update(broker_url=f"redis://127.0.0.1:{closed_port}/0", task_publish_retry=False)
    try:
        refused = await act(staff, "run-task", {"task": "compact-log"})
    finally:
        app.conf.update(saved)
        app.close()  # its connection pool was made for the closed port
    assert refused.status_code == 503
    assert refused.json()["error"].startswith("the Celery broker did not take the task: ")
    assert [(r.action, r.ok) for r in await audit()] == [("run-task", False), ("run-task", False)]
