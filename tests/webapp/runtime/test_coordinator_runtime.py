"""The coordinator runtime (webapp.runtime.coordinator_runtime): restart replay, the timer,
events with sequence numbers to listeners, the history table and the Channels groups,
in-process submission."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from coordinator_engine import (
    CleanupResult,
    CoordinatorConfig,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    Protocol,
)
from coordinator_engine.cluster import FindCoordinatorRequest
from tests.log_files import records_in_database_file
from tests.webapp.helpers import (
    START_MS,
    Client,
    assignment,
    commit_offsets,
    connect,
    serving,
    stable_group,
    subscription,
)
from webapp.models import GroupEvent
from webapp.runtime.api import RuntimeNotReady
from webapp.runtime.clock import ManualClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, install_runtime
from webapp.runtime.events import SequencedEvent, group_channel_group

pytestmark = pytest.mark.asyncio


async def test_a_restarted_runtime_replays_groups_generations_assignments_and_offsets(
    runtime: CoordinatorRuntime,
    ws: Client,
    make_runtime: Callable[..., CoordinatorRuntime],
    clock: ManualClock,
) -> None:
    member_id = await stable_group(ws)
    await commit_offsets(
        ws, member_id, [{"topic": "orders", "partition": 1, "offset": 99, "metadata": "m"}]
    )
    await runtime.create_topic("orders", 2, produce_rate_per_s=1)
    last_seq = runtime.last_seq
    await runtime.stop()

    clock.advance(2_000)
    restarted = make_runtime()
    install_runtime(restarted)
    await restarted.start()
    try:
        assert restarted.last_seq == last_seq  # numbering continues from the history
        view = restarted.group("my-group")
        assert view is not None
        assert (view.state.value, view.generation_id, view.leader_id) == ("Stable", 1, member_id)
        assert view.members[member_id].assignment == bytes.fromhex(
            "0003000000010006" + "6f7264657273" + "000000020000000000000001" + "ffffffff"
        )
        assert restarted.topics.get("orders").partitions == 2  # type: ignore[union-attr]
        client, communicator = await connect()
        try:
            assert await client.call("DescribeGroups", {"group_ids": ["my-group"]}) == {
                "groups": [
                    {
                        "error_code": 0,
                        "group_id": "my-group",
                        "group_state": "Stable",
                        "protocol_type": "consumer",
                        "protocol_data": "range",
                        "members": [
                            {
                                "member_id": member_id,
                                "group_instance_id": None,
                                "client_id": "c1",
                                "client_host": "",
                                "member_metadata": subscription("orders"),
                                "member_assignment": assignment(("orders", 0), ("orders", 1)),
                            }
                        ],
                    }
                ]
            }
            assert await client.call("OffsetFetch", {"group_id": "my-group"}) == {
                "error_code": 0,
                "partitions": [
                    {
                        "topic": "orders",
                        "partition": 1,
                        "offset": 99,
                        "metadata": "m",
                        "leader_epoch": -1,
                        "error_code": 0,
                    }
                ],
            }
            # The member carries on in its generation: its session was re-armed from now.
            heartbeat = {"group_id": "my-group", "generation_id": 1, "member_id": member_id}
            assert await client.call("Heartbeat", heartbeat) == {"error_code": 0}
            assert restarted.coordinator.next_deadline_ms() == clock.now_ms + 10_000
        finally:
            await communicator.disconnect()
    finally:
        await restarted.stop()


async def test_the_runtime_checkpoints_the_record_log_every_interval(
    transactional_db: None,
    make_runtime: Callable[..., CoordinatorRuntime],
    log_path: Path,
    tmp_path: Path,
) -> None:
    async with serving(make_runtime(checkpoint_interval_s=0.05)):
        client, communicator = await connect()
        await stable_group(client)
        await communicator.disconnect()
        # The group's records reach the database file while the runtime serves.
        for _ in range(100):
            if records_in_database_file(log_path, tmp_path):
                break
            await asyncio.sleep(0.02)
        assert records_in_database_file(log_path, tmp_path)


async def test_appends_leave_checkpoints_to_the_runtime_which_checkpoints_at_stop(
    transactional_db: None,
    make_runtime: Callable[..., CoordinatorRuntime],
    log_path: Path,
    tmp_path: Path,
) -> None:
    async with serving(make_runtime(checkpoint_interval_s=3600)):
        client, communicator = await connect()
        member_id = await stable_group(client)
        await commit_offsets(
            client, member_id, [{"topic": "orders", "partition": 0, "offset": 7, "metadata": ""}]
        )
        await communicator.disconnect()
        assert records_in_database_file(log_path, tmp_path) == []  # all still in the WAL
    assert len(records_in_database_file(log_path, tmp_path)) >= 2  # the group and the offset


async def test_a_second_runtime_cannot_open_a_log_in_use(
    runtime: CoordinatorRuntime, make_runtime: Callable[..., CoordinatorRuntime]
) -> None:
    second = make_runtime()
    with pytest.raises(RuntimeError, match="is in use by pid"):
        await second.start()
    assert not second.ready
    with pytest.raises(RuntimeError, match="is in use"):
        await second.start()  # a failed start fails again, the same way


async def test_the_runtimes_own_timer_expires_a_session_with_the_wall_clock(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime]
) -> None:
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=1)
    runtime = make_runtime(config=config, clock=None)  # the default clock: wall time
    await runtime.start()
    try:
        join = JoinGroupRequest(
            group_id="short",
            session_timeout_ms=50,
            rebalance_timeout_ms=50,
            protocol_type="consumer",
            protocols=(Protocol(name="range"),),
            require_known_member_id=False,
        )
        response = await runtime.submit(join)
        assert response.error_code == 0
        assert list(runtime.group("short").members) == [response.member_id]  # type: ignore[union-attr]
        for _ in range(100):
            await asyncio.sleep(0.01)
            if not runtime.group("short").members:  # type: ignore[union-attr]
                break
        assert runtime.group("short").state.value == "Empty"  # type: ignore[union-attr]
    finally:
        await runtime.stop()


async def test_listeners_get_every_event_with_consecutive_sequence_numbers(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    seen: list[SequencedEvent] = []
    runtime.add_listener(seen.append)
    await stable_group(ws)
    assert [item.seq for item in seen] == list(range(1, len(seen) + 1))
    assert [item.event.type for item in seen] == [
        "PendingMemberAdded",
        "PendingMemberRemoved",
        "MemberJoined",
        "StateChanged",
        "StateChanged",
        "GenerationStarted",
        "StateChanged",
        "AssignmentStored",
    ]
    assert all(item.event.at_ms == START_MS for item in seen)


async def test_a_failing_listener_is_logged_and_the_engine_carries_on(
    runtime: CoordinatorRuntime, ws: Client, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(item: SequencedEvent) -> None:
        raise ValueError("listener bug")

    runtime.add_listener(broken)
    with caplog.at_level(logging.ERROR, logger="webapp.runtime.coordinator_runtime"):
        await stable_group(ws)
    assert "event listener" in caplog.text
    runtime.remove_listener(broken)


async def test_events_are_published_to_the_group_and_to_the_global_channels_group(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    layer = get_channel_layer()
    assert layer is not None
    mine = await layer.new_channel()
    everything = await layer.new_channel()
    await layer.group_add(group_channel_group("my-group"), mine)
    await layer.group_add("groups", everything)
    await stable_group(ws)
    assert runtime.publisher is not None
    await runtime.publisher.drain()
    mine_events = (await layer.receive(mine))["events"]
    everything_message = await layer.receive(everything)
    assert everything_message["type"] == "group.events"
    assert (
        everything_message["events"][0]
        == mine_events[0]
        == {
            "seq": 1,
            "prev_seq": 0,
            "type": "PendingMemberAdded",
            "group_id": "my-group",
            "at_ms": START_MS,
            "member_id": mine_events[0]["member_id"],
        }
    )
    seqs = [e["seq"] for e in mine_events]
    assert seqs == list(range(1, len(seqs) + 1))  # in order, nothing skipped


async def test_events_are_stored_in_the_history_in_batches(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await stable_group(ws)
    for _ in range(100):  # the writer stores within its interval (0.1 s) without being asked
        if await sync_to_async(GroupEvent.objects.count)() == runtime.last_seq:
            break
        await asyncio.sleep(0.02)
    rows = await sync_to_async(list)(GroupEvent.objects.order_by("seq"))
    assert [row.seq for row in rows] == list(range(1, 9))
    assert rows[0].to_json()["type"] == "PendingMemberAdded"
    assert rows[-1].type == "AssignmentStored"
    assert list(rows[-1].payload["partitions"].values()) == [[["orders", 0], ["orders", 1]]]


async def test_submit_nowait_calls_back_in_process_and_survives_a_failing_callback(
    runtime: CoordinatorRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[Any] = []
    runtime.submit_nowait(ListGroupsRequest(), answers.append)
    runtime.submit_nowait(FindCoordinatorRequest(key="my-group"), answers.append)
    assert answers[0] == ListGroupsResponse(error_code=0, groups=())
    assert answers[1].coordinator_partition == 12

    def broken(response: Any) -> None:
        raise ValueError("callback bug")

    with caplog.at_level(logging.ERROR, logger="webapp.runtime.coordinator_runtime"):
        runtime.submit_nowait(ListGroupsRequest(), broken)
    assert "reply callback" in caplog.text


async def test_submit_threadsafe_serves_other_threads_and_direct_calls_from_them_fail(
    runtime: CoordinatorRuntime,
) -> None:
    heartbeat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")

    def from_a_thread() -> Any:
        with pytest.raises(RuntimeNotReady, match="event loop thread"):
            runtime.submit_nowait(heartbeat, print)
        return runtime.submit_threadsafe(heartbeat).result(timeout=5)

    assert await asyncio.to_thread(from_a_thread) == HeartbeatResponse(error_code=25)


async def test_the_runtimes_clock_never_goes_backwards(runtime: CoordinatorRuntime) -> None:
    clock = runtime.clock
    assert isinstance(clock, ManualClock)
    clock.advance(5)
    assert runtime.now_ms() == START_MS + 5
    clock.advance(-100)
    assert runtime.now_ms() == START_MS + 5


async def test_a_stopped_runtime_refuses_requests(runtime: CoordinatorRuntime) -> None:
    await runtime.stop()
    with pytest.raises(RuntimeNotReady):
        await runtime.submit(ListGroupsRequest())
    with pytest.raises(RuntimeNotReady):
        await runtime.start()


async def test_cleanup_expires_offsets_of_an_empty_group_and_removes_it(
    runtime: CoordinatorRuntime, ws: Client, clock: ManualClock
) -> None:
    await ws.call(
        "OffsetCommit",
        {"group_id": "simple", "offsets": [{"topic": "orders", "partition": 0, "offset": 5}]},
    )
    assert runtime.cleanup() == CleanupResult(offsets_removed=0, groups_removed=0)
    clock.advance(runtime.config.offsets_retention_ms)
    assert runtime.cleanup() == CleanupResult(offsets_removed=1, groups_removed=1)
    assert runtime.group("simple") is None


async def test_a_database_without_tables_fails_the_start_naming_migrate(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime], monkeypatch: Any
) -> None:
    from django.db import OperationalError

    from webapp.runtime import coordinator_runtime as runtime_module

    def no_tables() -> dict[str, int]:
        raise OperationalError("no such table: webapp_groupevent")

    monkeypatch.setattr(runtime_module, "last_stored_seq_per_group", no_tables)
    runtime = make_runtime()
    with pytest.raises(RuntimeError, match=r"run `python manage\.py migrate`"):
        await runtime.start()
    # The failed start released the log: another runtime may open it.
    second = make_runtime()
    monkeypatch.undo()
    await second.start()
    await second.stop()
