"""Every way this site closes a websocket, against a real Daphne server in its own process.

Daphne lets an application close with 1000 or 3000–4999 only; any other code became a
traceback in the server's log and a 1011 at the client. ``channels.testing``'s communicator does
not enforce that rule, so each close path is exercised here through a real server, and each
test checks both ends: the client receives exactly the documented code (docs/protocol.md,
docs/dashboard.md), and the server's output has no traceback.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests import ROOT
from tests.live_server import LiveServer, wait_for
from webapp.sockets import (
    CLOSE_FOREIGN_ORIGIN,
    CLOSE_LOGIN_REQUIRED,
    CLOSE_RUNTIME_UNAVAILABLE,
    CLOSE_TOO_MANY_MALFORMED_FRAMES,
)
from webapp.transports.websocket.connection import ConsumerProtocolSocket


def close_code(ws: ClientConnection, timeout_s: float = 10) -> int | None:
    """Read until the server closes; the code it closed with."""
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ws.recv(timeout=deadline - time.monotonic())
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    raise AssertionError("the server did not close the socket")


def assert_no_traceback(output: Path) -> None:
    text = output.read_text(errors="replace")
    assert "Traceback" not in text, text
    assert "invalid close code" not in text, text


def test_the_documented_close_codes_are_this_sites_own() -> None:
    codes = (
        CLOSE_LOGIN_REQUIRED,
        CLOSE_FOREIGN_ORIGIN,
        CLOSE_TOO_MANY_MALFORMED_FRAMES,
        CLOSE_RUNTIME_UNAVAILABLE,
    )
    assert codes == (4401, 4403, 4429, 4503)
    protocol = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    dashboard = (ROOT / "docs" / "dashboard.md").read_text(encoding="utf-8")
    for code in (CLOSE_TOO_MANY_MALFORMED_FRAMES, CLOSE_RUNTIME_UNAVAILABLE):
        assert f"| {code} |" in protocol
    for code in (CLOSE_LOGIN_REQUIRED, CLOSE_FOREIGN_ORIGIN, CLOSE_RUNTIME_UNAVAILABLE):
        assert f"| {code} |" in dashboard


# ---------------------------------------------------------------- a serving server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path, REBALANCE_LAB_ANONYMOUS_READ="0")
    try:
        server.start()
        yield server
    finally:
        server.kill()


def test_a_flood_of_malformed_frames_is_closed_with_4429_and_no_traceback(
    server: LiveServer,
) -> None:
    limit = ConsumerProtocolSocket.FLOOD_LIMIT
    with server.websocket() as ws:
        for _ in range(limit + 1):
            ws.send("{")
        errors = 0
        try:
            while True:
                reply = json.loads(ws.recv(timeout=10))
                assert reply["error"]["code"] == "invalid_json"
                errors += 1
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            assert closed.rcvd.code == CLOSE_TOO_MANY_MALFORMED_FRAMES
        assert errors == limit + 1  # every malformed frame was answered before the close
    # The server serves on.
    with server.websocket() as ws:
        ws.send(json.dumps({"id": 1, "api": "ListGroups", "request": {}}))
        assert json.loads(ws.recv(timeout=10))["response"] == {"error_code": 0, "groups": []}
    assert_no_traceback(server.output)


def test_a_feed_that_needs_a_login_is_closed_with_4401(server: LiveServer) -> None:
    with connect(f"ws://127.0.0.1:{server.port}/ws/dashboard/groups/", open_timeout=5) as ws:
        assert close_code(ws) == CLOSE_LOGIN_REQUIRED
    assert_no_traceback(server.output)


def test_a_feed_opened_by_another_sites_page_is_closed_with_4403(server: LiveServer) -> None:
    url = f"ws://127.0.0.1:{server.port}/ws/dashboard/groups/orders/"
    with connect(url, open_timeout=5, origin="http://evil.example") as ws:
        assert close_code(ws) == CLOSE_FOREIGN_ORIGIN
    assert_no_traceback(server.output)


# ---------------------------------------------------------------- a runtime that cannot start


@pytest.fixture
def unstartable(tmp_path: Path) -> Iterator[LiveServer]:
    """Daphne serving ``webapp.asgi`` directly (no ``manage.py serve``), the runtime starting on
    first use, over a record log it cannot open (a directory): the runtime never serves."""
    log_dir = tmp_path / "log-is-a-directory"
    log_dir.mkdir()
    server = LiveServer(tmp_path, REBALANCE_LAB_LOG_PATH=str(log_dir))
    server.manage("migrate", "-v", "0")
    daphne = ("-m", "daphne", "-b", "127.0.0.1", "-p", "0")  # the system picks the port
    server.spawn(*daphne, "webapp.asgi:application")
    try:
        server.port = wait_for(lambda: listening_port(server), 30, "Daphne to listen")
        deadline = time.monotonic() + 30
        while True:
            assert server.process is not None
            assert server.process.poll() is None, server.output.read_text()
            try:
                server.get("/healthz")
            except urllib.error.HTTPError as refused:
                if json.loads(refused.read())["status"] == "failed":
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, server.output.read_text()
            time.sleep(0.05)
        yield server
    finally:
        server.kill()


def listening_port(server: LiveServer) -> int | None:
    """The port Daphne says it listens on, once it says so (it logs the port it was given)."""
    assert server.process is not None
    output = server.output.read_text()
    assert server.process.poll() is None, output
    found = re.search(r"Listening on TCP address 127\.0\.0\.1:(\d+)", output)
    return int(found[1]) if found else None


def test_the_consumer_protocol_closes_with_4503_while_the_runtime_cannot_serve(
    unstartable: LiveServer,
) -> None:
    try:
        with unstartable.websocket() as ws:
            assert close_code(ws) == CLOSE_RUNTIME_UNAVAILABLE
    except InvalidStatus as refused:  # a close before accepting is a refused handshake
        raise AssertionError(f"the handshake was refused: {refused}") from None
    assert_no_traceback(unstartable.output)
    # The runtime's failed start is logged, with its cause, once; the refused sockets by a line.
    output = unstartable.output.read_text(errors="replace")
    failed_start = "ERROR webapp.runtime.coordinator_runtime: the coordinator runtime could not"
    assert output.count(failed_start) == 1, output
    assert "closed with 4503" in output, output


def test_a_feed_closes_with_4503_while_the_runtime_cannot_serve(unstartable: LiveServer) -> None:
    with connect(f"ws://127.0.0.1:{unstartable.port}/ws/dashboard/groups/", open_timeout=5) as ws:
        assert close_code(ws) == CLOSE_RUNTIME_UNAVAILABLE
    assert_no_traceback(unstartable.output)


@pytest.mark.asyncio
async def test_a_code_daphne_would_refuse_is_refused_before_it_reaches_daphne() -> None:
    socket = ConsumerProtocolSocket()
    for code in (1008, 1011, 2999, 5000):
        with pytest.raises(ValueError, match=f"close code {code} cannot be sent through Daphne"):
            await socket.close(code=code)
