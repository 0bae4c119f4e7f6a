"""The JSON API and /healthz (webapp.dashboard.api), through Django's async test client."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import AsyncClient

from tests.webapp.helpers import (
    START_MS,
    Client,
    commit_offsets,
    hold_the_reload,
    inject_engine_fault,
    stable_group,
    subscription,
)
from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, install_runtime
from webapp.runtime.topics import topic_id_text

pytestmark = pytest.mark.asyncio


@pytest.fixture
def http() -> AsyncClient:
    return AsyncClient()


async def send_json(http: AsyncClient, method: str, path: str, body: Any) -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return await getattr(http, method)(path, data=data, content_type="application/json")


async def test_healthz_is_ok_once_the_runtime_serves(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient, log_path: Path
) -> None:
    await stable_group(ws)
    response = await http.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    # Whether a Celery worker and beat answer: asked in the background, so what this process
    # knows so far (tests/webapp/housekeeping/test_supervision.py asks real ones).
    housekeeping = body.pop("housekeeping")
    assert set(housekeeping) == {"worker", "beat", "checked_at", "error"}
    assert body == {
        "status": "ok",
        "groups": 1,
        "log_path": str(log_path),
        "listeners": {},  # a Kafka listener is the host's to open (serve does)
        "handoff_switches": {"partition_store": True, "discovery": True},
        "engine_faults": 0,
    }


async def test_healthz_says_recovering_while_the_engine_reloads_after_a_fault(
    runtime: CoordinatorRuntime,
    ws: Client,
    http: AsyncClient,
    log_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await stable_group(ws)

    reload_may_finish = hold_the_reload(monkeypatch, runtime)  # until the test has looked
    inject_engine_fault(monkeypatch, runtime, "advance")
    runtime.tick()
    response = await http.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert (body["status"], body["engine_faults"]) == ("recovering", 1)
    assert body["last_engine_fault"]["during"] == "advance"
    assert "injected engine fault" in body["last_engine_fault"]["error"]
    groups = await http.get("/api/groups")
    assert groups.status_code == 503
    assert "reloading" in groups.json()["error"]["message"]

    reload_may_finish.set()
    assert runtime.reload_task is not None
    await runtime.reload_task
    response = await http.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["groups"], body["engine_faults"]) == ("ok", 1, 1)
    assert body["last_engine_fault"]["reloaded_in_ms"] >= 0


async def test_healthz_says_starting_until_the_log_is_replayed(
    transactional_db: None,
    make_runtime: Callable[..., CoordinatorRuntime],
    http: AsyncClient,
    log_path: Path,
) -> None:
    runtime = make_runtime()
    install_runtime(runtime)
    try:
        response = await http.get("/healthz")  # starts the runtime, does not wait for it
        assert response.status_code == 503
        assert response.json() == {"status": "starting", "log_path": str(log_path)}
        await runtime.start()
        assert (await http.get("/healthz")).json()["status"] == "ok"
    finally:
        await runtime.stop()
        install_runtime(None)


async def test_healthz_reports_a_runtime_that_could_not_start(
    transactional_db: None,
    make_runtime: Callable[..., CoordinatorRuntime],
    http: AsyncClient,
    tmp_path: Path,
) -> None:
    runtime = make_runtime(log_path=tmp_path)  # a directory: SQLite cannot open it
    install_runtime(runtime)
    try:
        with pytest.raises(Exception, match="unable to open database file"):
            await runtime.start()
        response = await http.get("/healthz")
        assert response.status_code == 503
        assert response.json()["status"] == "failed"
        assert "unable to open database file" in response.json()["error"]
        groups = await http.get("/api/groups")
        assert groups.status_code == 503
        assert groups.json()["error"]["code"] == "unavailable"
    finally:
        await runtime.stop()
        install_runtime(None)


async def test_the_runtime_starts_on_the_first_api_request(
    transactional_db: None, log_path: Path, http: AsyncClient, settings: Any
) -> None:
    install_runtime(None)
    response = await http.get("/api/groups")
    assert response.status_code == 200
    assert response.json() == {"groups": []}
    from webapp.runtime.coordinator_runtime import current_runtime

    runtime = current_runtime()
    assert runtime is not None and runtime.ready and runtime.log_path == log_path
    await runtime.stop()
    install_runtime(None)


async def test_groups_lists_every_group_with_its_summary(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    member_id = await stable_group(ws, "b-group")
    await ws.call(
        "OffsetCommit",
        {"group_id": "a-group", "offsets": [{"topic": "orders", "partition": 0, "offset": 1}]},
    )
    response = await http.get("/api/groups")
    assert response.status_code == 200
    assert response.json() == {
        "groups": [
            {
                "group_id": "a-group",
                "kind": "classic",
                "state": "Empty",
                "generation_id": 0,
                "protocol_type": None,
                "protocol": None,
                "leader": None,
                "member_count": 0,
            },
            {
                "group_id": "b-group",
                "kind": "classic",
                "state": "Stable",
                "generation_id": 1,
                "protocol_type": "consumer",
                "protocol": "range",
                "leader": member_id,
                "member_count": 1,
            },
        ]
    }


async def test_a_group_shows_members_decoded_assignments_and_lag_per_partition(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient, clock: ManualClock
) -> None:
    await runtime.create_topic("orders", 2, produce_rate_per_s=10)
    member_id = await stable_group(ws)
    await commit_offsets(
        ws,
        member_id,
        [
            {"topic": "orders", "partition": 0, "offset": 30},
            {"topic": "gone", "partition": 0, "offset": 5},
        ],
    )
    clock.advance(5_000)  # 50 messages produced per partition since the topic was created
    response = await http.get("/api/groups/my-group")
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "group_id": "my-group",
        "kind": "classic",
        "state": "Stable",
        "generation_id": 1,
        "protocol_type": "consumer",
        "protocol": "range",
        "leader": member_id,
        "member_count": 1,
        "members": [
            {
                "member_id": member_id,
                "group_instance_id": None,
                "client_id": "c1",
                "client_host": "",
                "connection": "websocket",  # it joined through the websocket transport
                "session_timeout_ms": 10_000,
                "rebalance_timeout_ms": 20_000,
                "is_leader": True,
                "subscription": ["orders"],
                "assignment": [["orders", 0], ["orders", 1]],
                "metadata_base64": subscription("orders"),
                "assignment_base64": body["members"][0]["assignment_base64"],
            }
        ],
        "pending_member_ids": [],
        "offsets": [
            {
                "topic": "gone",
                "partition": 0,
                "offset": 5,
                "metadata": "",
                "leader_epoch": -1,
                "commit_timestamp_ms": START_MS,
                "expire_timestamp_ms": -1,
                "log_end_offset": None,
                "lag": None,
            },
            {
                "topic": "orders",
                "partition": 0,
                "offset": 30,
                "metadata": "",
                "leader_epoch": -1,
                "commit_timestamp_ms": START_MS,
                "expire_timestamp_ms": -1,
                "log_end_offset": 50,
                "lag": 20,
            },
        ],
        "total_lag": 20,
    }


async def test_an_unknown_group_is_a_404(runtime: CoordinatorRuntime, http: AsyncClient) -> None:
    response = await http.get("/api/groups/nope")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "group_not_found", "message": "no group 'nope'"}}


async def test_group_events_are_the_stored_history_after_a_sequence_number(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    member_id = await stable_group(ws)
    response = await http.get("/api/groups/my-group/events")
    assert response.status_code == 200
    body = response.json()
    assert body["group_id"] == "my-group"
    assert body["last_seq"] == 8
    assert [event["seq"] for event in body["events"]] == list(range(1, 9))
    assert body["events"][0] == {
        "seq": 1,
        "prev_seq": 0,
        "type": "PendingMemberAdded",
        "group_id": "my-group",
        "at_ms": START_MS,
        "member_id": member_id,
    }
    later = (await http.get("/api/groups/my-group/events?after=6&limit=1")).json()
    assert [event["type"] for event in later["events"]] == ["StateChanged"]
    assert later["last_seq"] == 7
    done = (await http.get("/api/groups/my-group/events?after=8")).json()
    assert done == {"group_id": "my-group", "events": [], "last_seq": 8}
    bad = await http.get("/api/groups/my-group/events?after=x")
    assert bad.status_code == 400
    assert bad.json() == {
        "error": {"code": "invalid_request", "message": "after must be an integer, got 'x'"}
    }
    too_many = await http.get("/api/groups/my-group/events?limit=100000")
    assert too_many.status_code == 400


async def test_a_group_id_with_a_slash_is_addressable(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    await stable_group(ws, "team/orders")
    assert (await http.get("/api/groups/team/orders")).json()["group_id"] == "team/orders"
    events = (await http.get("/api/groups/team/orders/events")).json()
    assert events["group_id"] == "team/orders" and len(events["events"]) == 8


async def test_topics_can_be_created_listed_grown_and_deleted(
    runtime: CoordinatorRuntime, http: AsyncClient, clock: ManualClock
) -> None:
    created = await send_json(
        http, "post", "/api/topics", {"name": "orders", "partitions": 2, "produce_rate_per_s": 4}
    )
    assert created.status_code == 201
    topic_id = runtime.topics.get("orders").topic_id  # type: ignore[union-attr]
    assert created.json() == {
        "name": "orders",
        "topic_id": topic_id_text(topic_id),
        "partitions": 2,
        "produce_rate_per_s": 4.0,
        "log_end_offsets": [0, 0],
    }
    clock.advance(1_000)
    grown = await send_json(http, "patch", "/api/topics/orders", {"partitions": 3})
    assert grown.status_code == 200
    assert grown.json()["log_end_offsets"] == [4, 4, 0]
    slower = await send_json(http, "patch", "/api/topics/orders", {"produce_rate_per_s": 0})
    assert slower.json()["produce_rate_per_s"] == 0.0
    await send_json(http, "post", "/api/topics", {"name": "audit", "partitions": 1})
    listed = await http.get("/api/topics")
    assert [topic["name"] for topic in listed.json()["topics"]] == ["audit", "orders"]
    assert (await http.get("/api/topics/orders")).json()["partitions"] == 3
    deleted = await http.delete("/api/topics/orders")
    assert deleted.status_code == 204
    assert runtime.topics.get("orders") is None
    assert (await http.get("/api/topics/orders")).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code", "message"),
    [
        ("post", "/api/topics", "{", 400, "invalid_json", "the body is not JSON"),
        ("post", "/api/topics", "[]", 400, "invalid_request", "the body must be a JSON object"),
        ("post", "/api/topics", {"name": "t"}, 400, "invalid_request", "missing required field"),
        (
            "post",
            "/api/topics",
            {"name": "t", "partitions": 1, "replicas": 3},
            400,
            "invalid_request",
            "unknown field 'replicas' (known: name, partitions, produce_rate_per_s)",
        ),
        (
            "post",
            "/api/topics",
            {"name": "a b", "partitions": 1},
            400,
            "invalid_topic",
            "topic name 'a b' is illegal",
        ),
        (
            "post",
            "/api/topics",
            {"name": "t", "partitions": "3"},
            400,
            "invalid_topic",
            "partitions must be an integer",
        ),
        (
            "post",
            "/api/topics",
            {"name": "existing", "partitions": 1},
            409,
            "topic_exists",
            "topic 'existing' already exists",
        ),
        (
            "patch",
            "/api/topics/existing",
            {"partitions": 1},
            400,
            "invalid_topic",
            "topic 'existing' has 2 partitions, which is more than the requested 1",
        ),
        ("patch", "/api/topics/existing", {}, 400, "invalid_request", "nothing to change"),
        (
            "patch",
            "/api/topics/existing",
            {"partitions": None},
            400,
            "invalid_request",
            "partitions cannot be null",
        ),
        ("patch", "/api/topics/missing", {"partitions": 3}, 404, "topic_not_found", "no topic"),
        ("delete", "/api/topics/missing", None, 404, "topic_not_found", "no topic 'missing'"),
        ("put", "/api/topics/existing", {}, 405, "method_not_allowed", "PUT is not allowed"),
        ("post", "/api/groups", {}, 405, "method_not_allowed", "POST is not allowed here"),
    ],
)
async def test_bad_topic_requests_get_json_errors(
    runtime: CoordinatorRuntime,
    http: AsyncClient,
    method: str,
    path: str,
    body: Any,
    status: int,
    code: str,
    message: str,
) -> None:
    await runtime.create_topic("existing", 2)
    if body is None:
        response = await getattr(http, method)(path)
    else:
        response = await send_json(http, method, path, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert message in error["message"]
    assert runtime.topics.get("existing").partitions == 2  # type: ignore[union-attr]
