"""The dashboard's live feeds (docs/dashboard.md): snapshot on connect, then ordered events with
``prev_seq``, then periodic offsets / lag; anonymous reading as the setting says."""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import pytest
from autobahn.exception import Disconnected
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from tests.webapp.helpers import (
    Client,
    commit_offsets,
    inject_engine_fault,
    join_new_member,
    stable_group,
)
from webapp.asgi import application
from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime

pytestmark = pytest.mark.asyncio

HEADERS = [(b"origin", b"http://testserver"), (b"host", b"testserver")]


async def open_feed(path: str) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    communicator = WebsocketCommunicator(application, path, headers=HEADERS)
    connected, code = await communicator.connect()
    assert connected, code
    return communicator, json.loads(await communicator.receive_from(2))


async def next_message(communicator: WebsocketCommunicator, kind: str) -> dict[str, Any]:
    while True:
        message = json.loads(await communicator.receive_from(3))
        if message["type"] == kind:
            return message


async def next_events(communicator: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    """The next `count` events, whatever batches they came in."""
    events: list[dict[str, Any]] = []
    while len(events) < count:
        events += (await next_message(communicator, "events"))["events"]
    return events


async def test_the_group_feed_sends_a_snapshot_then_only_later_events_in_order(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    member_id = await stable_group(ws)
    feed, snapshot = await open_feed("/ws/dashboard/groups/my-group/")
    try:
        assert snapshot["type"] == "snapshot"
        assert snapshot["seq"] == runtime.group_last_seq("my-group") == 8
        group = snapshot["group"]
        assert (group["state"], group["generation_id"]) == ("Stable", 1)
        assert group["members"][0]["assignment"] == [["orders", 0], ["orders", 1]]
        assert snapshot["topics"] == {"orders": 2}
        # The events of the group before the snapshot never follow it.
        await ws.call("LeaveGroup", {"group_id": "my-group", "members": [{"member_id": member_id}]})
        events = (await next_events(feed, 3))[:3]
        assert [e["type"] for e in events] == ["MemberRemoved", "StateChanged", "StateChanged"]
        assert events[0]["reason"] == "left"
        assert events[0]["prev_seq"] == 8
        assert [e["prev_seq"] for e in events[1:]] == [e["seq"] for e in events[:-1]]
    finally:
        await feed.disconnect()


async def test_events_of_other_groups_do_not_reach_a_group_feed(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    feed, _ = await open_feed("/ws/dashboard/groups/my-group/")
    try:
        await join_new_member(ws, "other-group")  # a PendingMemberAdded of another group
        await stable_group(ws, "third")
        offsets = await next_message(feed, "offsets")  # the first message after the snapshot
        assert offsets == {"type": "offsets", "log_end_offsets": {}}
    finally:
        await feed.disconnect()


async def test_the_offsets_tick_carries_the_log_ends_the_api_shows(
    runtime: CoordinatorRuntime, ws: Client, async_client: AsyncClient, clock: ManualClock
) -> None:
    await runtime.create_topic("orders", 2, produce_rate_per_s=10)
    member_id = await stable_group(ws)
    await commit_offsets(
        ws,
        member_id,
        [
            {"topic": "orders", "partition": 0, "offset": 30},
            {"topic": "gone", "partition": 0, "offset": 5},  # a topic nobody knows
        ],
    )
    clock.advance(5_000)  # 50 records produced per partition since the topic was created
    feed, _ = await open_feed("/ws/dashboard/groups/my-group/")
    try:
        offsets = await next_message(feed, "offsets")
        assert offsets == {"type": "offsets", "log_end_offsets": {"orders": [50, 50]}}
        api = (await async_client.get("/api/groups/my-group")).json()
        assert [(row["topic"], row["log_end_offset"], row["lag"]) for row in api["offsets"]] == [
            ("gone", None, None),
            ("orders", 50, 20),
        ]
    finally:
        await feed.disconnect()
    # The overview's total lag is the API's.
    overview, snapshot = await open_feed("/ws/dashboard/groups/")
    try:
        assert [g["total_lag"] for g in snapshot["groups"]] == [api["total_lag"]] == [20]
        lag = await next_message(overview, "lag")
        assert lag["total_lag"] == {"my-group": 20}
    finally:
        await overview.disconnect()


async def test_a_feed_of_a_group_that_does_not_exist_yet_follows_its_birth(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    feed, snapshot = await open_feed("/ws/dashboard/groups/a%2Fb/")
    try:
        assert snapshot == {"type": "snapshot", "seq": 0, "group": None, "topics": {}}
        await join_new_member(ws, "a/b")
        (event, *_) = await next_events(feed, 1)
        assert (event["type"], event["group_id"], event["prev_seq"]) == (
            "PendingMemberAdded",
            "a/b",
            0,
        )
    finally:
        await feed.disconnect()


async def test_the_overview_feed_sends_every_group_with_lag_and_rebalances(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    await stable_group(ws, "second")
    feed, snapshot = await open_feed("/ws/dashboard/groups/")
    try:
        assert snapshot["seq"] == runtime.last_seq
        by_id = {g["group_id"]: g for g in snapshot["groups"]}
        assert sorted(by_id) == ["my-group", "second"]
        assert by_id["second"]["state"] == "Stable"
        assert by_id["second"]["total_lag"] == 0
        # One generation started in the last five minutes (the manual clock's time).
        assert by_id["second"]["rebalances"] == [0] * 11 + [1]
        await join_new_member(ws, "third")
        (event, *_) = await next_events(feed, 1)
        assert event["group_id"] == "third"
        lag = await next_message(feed, "lag")
        assert lag["total_lag"] == {"my-group": 0, "second": 0, "third": 0}
    finally:
        await feed.disconnect()


async def test_anonymous_visitors_are_refused_when_reading_needs_a_login(
    runtime: CoordinatorRuntime, settings: Any
) -> None:
    settings.REBALANCE_LAB_ANONYMOUS_READ = False
    communicator = WebsocketCommunicator(application, "/ws/dashboard/groups/", headers=HEADERS)
    assert (await communicator.connect())[0]  # accepted, so that the code reaches the client
    assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": 4401}


async def test_a_feed_refuses_a_page_of_another_site(runtime: CoordinatorRuntime) -> None:
    headers = [(b"origin", b"http://evil.example"), (b"host", b"testserver")]
    communicator = WebsocketCommunicator(application, "/ws/dashboard/groups/", headers=headers)
    assert (await communicator.connect())[0]  # accepted, so that the code reaches the client
    assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": 4403}


async def test_a_closed_page_stops_listening_to_the_runtime(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    """A feed listens to the runtime of its process (not the channel layer); closing the
    page must take its listener away, or every visit would leave a queue filling forever."""
    listening = len(runtime._listeners)
    feeds = [
        (await open_feed(path))[0] for path in ("/ws/dashboard/groups/", "/ws/dashboard/groups/g/")
    ]
    assert len(runtime._listeners) == listening + 2
    for feed in feeds:
        await feed.disconnect()
    assert len(runtime._listeners) == listening
    await stable_group(ws, "g")  # events after the pages closed go nowhere, quietly


async def test_events_sent_to_a_page_that_is_closing_are_dropped_quietly(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    """Between the page's close and Channels' websocket.disconnect, Daphne's send raises
    autobahn's ``Disconnected``: the feed drops the batch, its sender lives on, and the
    disconnect ends the feed cleanly (it used to re-raise the sender's death)."""
    loop = asyncio.get_running_loop()
    problems: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: problems.append(context))
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[str] = []
    refused: list[str] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] != "websocket.send":
            return
        if not sent:
            sent.append(message["text"])  # the snapshot goes out; then the page is closing
            return
        refused.append(message["text"])
        raise Disconnected("Attempt to send on a closed protocol")

    scope = {
        "type": "websocket",
        "path": "/ws/dashboard/groups/g/",
        "headers": HEADERS,
        "query_string": b"",
        "subprotocols": [],
        "client": ["127.0.0.1", 5000],
        "server": ["testserver", 80],
    }
    listening = len(runtime._listeners)
    feed = asyncio.create_task(application(scope, inbox.get, send))
    try:
        await inbox.put({"type": "websocket.connect"})
        for _ in range(500):
            if sent:
                break
            await asyncio.sleep(0.01)
        assert json.loads(sent[0])["type"] == "snapshot"
        await stable_group(ws, "g")
        for _ in range(500):
            if refused:
                break
            await asyncio.sleep(0.01)
        await stable_group(ws, "h")  # runtime events the feed ignores: nothing more tried
        await inbox.put({"type": "websocket.disconnect", "code": 1001})
        await asyncio.wait_for(feed, 5)  # ends, without raising
        gc.collect()  # a task that died of the exception would report it as it goes
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert len(refused) == 1  # the first refused batch marks the socket closed
    assert problems == []
    assert len(runtime._listeners) == listening


async def test_a_feed_closes_with_4503_when_the_engine_is_reloaded_and_the_page_starts_over(
    runtime: CoordinatorRuntime, ws: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an engine fault the engine is rebuilt from its log: a page may hold state the log
    never had, so its feed closes; a new connection gets a snapshot of the reloaded engine."""
    await stable_group(ws)
    feed, _ = await open_feed("/ws/dashboard/groups/my-group/")
    try:
        inject_engine_fault(monkeypatch, runtime, "advance")
        runtime.tick()
        while True:  # offsets ticks may come first; the close follows within a tick
            output = await feed.receive_output(timeout=3)
            if output["type"] == "websocket.close":
                break
        assert output == {"type": "websocket.close", "code": 4503}
    finally:
        await feed.disconnect()
    assert runtime.reload_task is not None
    await runtime.reload_task
    fresh, snapshot = await open_feed("/ws/dashboard/groups/my-group/")
    try:
        assert snapshot["group"]["state"] == "Stable"
    finally:
        await fresh.disconnect()


async def test_the_overview_reads_the_history_through_channels_database_path(
    runtime: CoordinatorRuntime, ws: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feeds skip Channels' per-message close_old_connections (webapp.sockets): the
    overview's query must run through ``channels.db.database_sync_to_async``, which closes
    stale database connections (past CONN_MAX_AGE, or broken by a database restart) in the
    worker thread before and after it. Observed on Channels' own class, which still runs."""
    import channels.db

    await stable_group(ws)
    through_channels: list[str] = []
    thread_handler = channels.db.DatabaseSyncToAsync.thread_handler

    def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        through_channels.append(self.func.__name__)
        return thread_handler(self, *args, **kwargs)

    monkeypatch.setattr(channels.db.DatabaseSyncToAsync, "thread_handler", observed)
    feed, snapshot = await open_feed("/ws/dashboard/groups/")
    try:
        assert [g["group_id"] for g in snapshot["groups"]] == ["my-group"]
        assert snapshot["groups"][0]["rebalances"][-1] == 1
        assert "rebalance_buckets" in through_channels
    finally:
        await feed.disconnect()
