"""``manage.py consume``'s pieces (its output lines, its consumption) and the websocket
transport under it, against a tiny websocket server that answers what each test needs.
The whole command, in processes, is exercised by ``test_e2e.py``."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from django.core.management import call_command
from django.core.management.base import CommandError
from websockets.asyncio.server import ServerConnection, serve

from coordinator_engine import HeartbeatRequest
from coordinator_engine.client import (
    CommitCompleted,
    ConsumerConfig,
    GroupClient,
    JoinedGroup,
    LeftGroup,
    MemberStateChanged,
    PartitionsAssigned,
    PartitionsRevoked,
)
from coordinator_engine.responses import HeartbeatResponse
from webapp.management.commands.consume import (
    Consumption,
    EventLines,
    format_offsets,
    format_partitions,
    line,
    monotonic_ms,
    parse_offsets,
    parse_partitions,
)
from webapp.simulation.client_driver import ClientDriver, WebsocketTransport


def fields(text: str) -> tuple[str, dict[str, str]]:
    event, *pairs = shlex.split(text)
    return event, dict(pair.split("=", 1) for pair in pairs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"assignor": "fastest"}, "unknown ['fastest']"),
        ({"heartbeat_interval_ms": 50_000}, "heartbeat_interval_ms must be lower"),
        ({"url": "http://127.0.0.1:8000/"}, "--url must be a ws:// or wss:// URL"),
        ({"consume_rate": float("nan")}, "--consume-rate must be a number >= 0"),
        ({"poll_interval_ms": 0}, "--poll-interval-ms must be > 0"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("consume", group="g", topics="t", **options)


def test_partition_lists_read_back_even_when_topic_names_hold_dashes() -> None:
    pairs = [("orders-eu", 10), ("orders-eu", 2), ("a", 0)]
    assert format_partitions(pairs) == "a-0,orders-eu-2,orders-eu-10"
    assert parse_partitions(format_partitions(pairs)) == sorted(pairs)
    offsets = {("orders-eu", 3): 120, ("b", 0): 0}
    assert format_offsets(offsets) == "b-0:0,orders-eu-3:120"
    assert parse_offsets(format_offsets(offsets)) == offsets
    assert parse_partitions("") == [] and parse_offsets("") == {}


def test_a_line_quotes_values_with_spaces_and_keeps_empty_lists() -> None:
    text = line("left", member="m-1", leave_group_sent=True, reason="the consumer is closing")
    assert text == 'left member=m-1 leave_group_sent=true reason="the consumer is closing"'
    assert fields(text)[1]["reason"] == "the consumer is closing"
    assert fields(line("assigned", generation=2, member="m", partitions="", added="")) == (
        "assigned",
        {"generation": "2", "member": "m", "partitions": "", "added": ""},
    )


def test_lines_name_the_member_and_generation_the_event_happened_in() -> None:
    # The client resets its generation right after revoking and leaving, before the host
    # drains the events: the lines follow the events, not the client's state at drain time.
    lines = EventLines()
    events = [
        JoinedGroup(at_ms=0, generation=3, member_id="m-1", leader="m-0", protocol_name="range"),
        PartitionsAssigned(
            at_ms=0, generation=3, partitions=(("t", 1),), assignment=(("t", 0), ("t", 1))
        ),
        CommitCompleted(at_ms=0, offsets={("t", 0): 5}, auto=True),
        PartitionsRevoked(at_ms=0, partitions=(("t", 0), ("t", 1))),
        LeftGroup(at_ms=0, member_id="m-1", reason="closing", leave_group_sent=True),
        MemberStateChanged(at_ms=0, from_state="STABLE", to_state="UNJOINED", reason="left"),
        CommitCompleted(at_ms=0, offsets={}, auto=False),
    ]
    printed = [fields(text) for e in events if (text := lines.describe(e)) is not None]
    assert printed == [
        (
            "joined",
            {
                "generation": "3",
                "member": "m-1",
                "leader": "m-0",
                "role": "follower",
                "protocol": "range",
            },
        ),
        ("assigned", {"generation": "3", "member": "m-1", "partitions": "t-0,t-1", "added": "t-1"}),
        ("committed", {"generation": "3", "member": "m-1", "offsets": "t-0:5", "auto": "true"}),
        ("revoked", {"generation": "3", "member": "m-1", "partitions": "t-0,t-1"}),
        ("left", {"member": "m-1", "leave_group_sent": "true", "reason": "closing"}),
    ]


class FakeClient:
    """What ``Consumption`` reads and writes of a GroupClient."""

    def __init__(self, positions: dict[tuple[str, int], int]) -> None:
        self.positions = positions

    def record_consumed(self, topic: str, partition: int, next_offset: int) -> None:
        self.positions[topic, partition] = next_offset


def test_consumption_advances_owned_positions_at_the_rate_carrying_fractions() -> None:
    client = FakeClient({("t", 0): 100, ("t", 1): -1})
    consumption = Consumption(rate_per_s=5, now_ms=0)
    for now in range(100, 1001, 100):  # ten steps of 0.5 record each
        consumption.step(client, now)  # type: ignore[arg-type]
    assert client.positions == {("t", 0): 105, ("t", 1): -1}  # -1: no position to start from


# ---------------------------------------------------------------- the websocket transport

Handler = Callable[[dict[str, Any]], Any]


@pytest_asyncio.fixture
async def ws_server() -> AsyncIterator[Callable[[Handler], Any]]:
    """Start a websocket server whose replies ``handler(frame)`` decides (None: no reply)."""
    servers = []

    async def start(handler: Handler) -> str:
        async def session(socket: ServerConnection) -> None:
            async for message in socket:
                reply = handler(json.loads(message))
                if reply is not None:
                    await socket.send(reply if isinstance(reply, str) else json.dumps(reply))

        server = await serve(session, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}/"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def call(transport: WebsocketTransport, request: Any) -> tuple[str, Any]:
    done: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
    transport.send(
        request,
        lambda response: done.set_result(("response", response)),
        lambda reason: done.set_result(("failure", reason)),
    )
    return await asyncio.wait_for(done, 5)


HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")


@pytest.mark.asyncio
async def test_a_reply_that_does_not_decode_fails_its_request_and_keeps_the_socket(
    ws_server: Callable[[Handler], Any],
) -> None:
    replies = iter(
        [
            {"api": "Heartbeat", "response": {"error_code": "zero"}},
            {"api": "Heartbeat", "response": {"error_code": 0}},
        ]
    )
    url = await ws_server(lambda frame: {"id": frame["id"], **next(replies)})
    transport = WebsocketTransport(url)
    await transport.start()
    await transport.wait_connected(5)
    outcome, reason = await call(transport, HEARTBEAT)
    assert outcome == "failure" and "malformed Heartbeat reply" in reason
    assert await call(transport, HEARTBEAT) == ("response", HeartbeatResponse(error_code=0))
    assert transport.connections == 1
    await transport.close()


@pytest.mark.asyncio
async def test_a_request_fails_at_once_while_disconnected_and_close_fails_what_is_pending(
    ws_server: Callable[[Handler], Any],
) -> None:
    url = await ws_server(lambda frame: None)  # never answers
    transport = WebsocketTransport(url)
    assert await call(transport, HEARTBEAT) == ("failure", "not connected")
    await transport.start()
    await transport.wait_connected(5)
    pending = asyncio.ensure_future(call(transport, HEARTBEAT))
    await asyncio.sleep(0.05)
    await transport.close(drain_timeout_s=0.1)
    assert await pending == ("failure", "transport closed")


@pytest.mark.asyncio
async def test_a_consumer_client_over_the_transport_finds_its_coordinator(
    ws_server: Callable[[Handler], Any],
) -> None:
    coordinator = {
        "error_code": 0,
        "node_id": 0,
        "host": "h",
        "port": 1,
        "coordinator_partition": 0,
    }
    metadata = {"topics": [{"name": "t", "error_code": 0, "partitions": 1}]}
    answers = {"FindCoordinator": coordinator, "Metadata": metadata}
    url = await ws_server(
        lambda f: (
            {"id": f["id"], "api": f["api"], "response": answers[f["api"]]}
            if f["api"] in answers
            else None
        )
    )
    transport = WebsocketTransport(url)
    await transport.start()
    await transport.wait_connected(5)
    seen: list[str] = []
    client = GroupClient(ConsumerConfig("g", ("t",)), monotonic_ms())
    driver = ClientDriver(client, transport, monotonic_ms, lambda e: seen.append(e.type))
    driver.poll()
    for _ in range(100):
        if client.coordinator is not None and client.metadata:
            break
        await asyncio.sleep(0.02)
    assert client.coordinator is not None and client.coordinator.host == "h"
    assert client.metadata == {"t": 1}
    assert "CoordinatorDiscovered" in seen
    driver.stop()
    await transport.close(drain_timeout_s=0)
