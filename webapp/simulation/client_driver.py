"""Running the sans-IO consumer clients (`coordinator_engine.client.GroupClient`,
`HandoffClient` for handoff groups and `ConsumerClient` for KIP-848 consumer groups, all
driven by the same calls) on asyncio.

Theory of operation
-------------------
`GroupClient` only changes state; `ClientDriver` turns that state into traffic. After every
call into the client (a `poll()`, an answer, a failure, a close) the driver *pumps*: it sends
whatever `client.outgoing(now)` returns through a `Transport` and arms one loop timer at
`client.next_deadline_ms()`, so heartbeats, retries and timeouts happen on time. Answers come
back through the transport's callbacks and are fed to `client.receive`, followed by another
pump. Pumps are coalesced (`call_soon`), so an answer that arrives while a pump runs — the
in-process transport may answer before `send` returns — never re-enters the client.

Two transports:
- `InProcessTransport(runtime)`: the coordinator runtime of this process (simulated consumers);
  a request is handled on the spot by the engine, durable before its answer.
- `WebsocketTransport(url)`: the websocket consumer protocol (docs/protocol.md), for consumers in
  other processes (`manage.py consume`). Requests on one socket are answered out of order; a lost
  connection fails every request in flight (the client looks the coordinator up again) and the
  transport reconnects with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from coordinator_engine.client import ClientEvent, ConsumerClient, GroupClient, HandoffClient
from webapp.runtime.api import RuntimeAPI
from webapp.runtime.metrics import api_name
from webapp.transports.websocket.codec import FrameError, decode_response, request_frame

logger = logging.getLogger(__name__)

#: How long `ClientDriver.close` waits beyond the client's close timeout for its LeaveGroup.
CLOSE_GRACE_MS = 500
#: How often `ClientDriver.close` looks whether the client has closed.
CLOSE_POLL_S = 0.01

OnResponse = Callable[[Any], None]
OnFailure = Callable[[str], None]


class Transport(Protocol):
    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        """Send one request; exactly one of the callbacks is called later (or at once)."""


class InProcessTransport:
    """Requests go straight to this process's coordinator runtime. ``connection`` is what the
    runtime's discovery registers a handoff member under (the simulated consumer): when it ends,
    the consumer calls ``runtime.connection_closed(connection)``."""

    def __init__(self, runtime: RuntimeAPI, connection: object | None = None) -> None:
        self.runtime = runtime
        self.connection = connection

    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        api = api_name(type(request))
        count = self.runtime.metrics.count

        def answered(response: Any) -> None:
            count(api, "simulated", response)
            on_response(response)

        def failed(reason: str) -> None:
            count(api, "simulated", None)
            on_failure(reason)

        try:
            self.runtime.submit_nowait(
                request, answered, failed, via="simulated", connection=self.connection
            )
        except Exception as exc:  # the runtime is stopping, not started, or reloading
            on_failure(str(exc))


class WebsocketTransport:
    """The websocket consumer protocol, with reconnection. `await start()` before use.

    One socket per transport, as a Kafka client holds one connection per broker. While it is
    down, `send` fails at once ("not connected"): the client backs off and retries, as Kafka's
    does when its coordinator is unreachable. A reply that does not decode fails its request
    only; the socket stays up.
    """

    def __init__(
        self,
        url: str,
        *,
        reconnect_backoff_ms: int = 500,
        open_timeout_s: float = 30.0,
        ping_interval_s: float | None = 20.0,
    ) -> None:
        self.url = url
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.open_timeout_s = open_timeout_s
        self.ping_interval_s = ping_interval_s
        #: How many times a connection was established (1 after the first).
        self.connections = 0
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, OnResponse, OnFailure]] = {}
        self._socket: Any = None
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"websocket {self.url}")

    async def close(self, drain_timeout_s: float = 1.0) -> None:
        """Close the socket once the requests in flight are answered (a LeaveGroup sent by a
        closing client, say), or after ``drain_timeout_s``; what is still unanswered fails."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_timeout_s
        while self._pending and self.connected and loop.time() < deadline:
            await asyncio.sleep(0.01)
        self._closed = True
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._fail_all("transport closed")

    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        socket = self._socket
        if socket is None or not self._connected.is_set():
            on_failure("not connected")
            return
        frame_id = next(self._ids)
        frame = request_frame(frame_id, request)
        self._pending[frame_id] = (frame["api"], on_response, on_failure)
        # Bound to this socket: if the connection is lost before the write runs, the request
        # has failed with it already and must not go out on the next connection.
        asyncio.get_running_loop().create_task(self._write(socket, frame_id, json.dumps(frame)))

    async def _write(self, socket: Any, frame_id: int, text: str) -> None:
        try:
            await socket.send(text)
        except Exception as exc:
            entry = self._pending.pop(frame_id, None)
            if entry is not None:
                _call(entry[2], f"send failed: {exc}")

    async def _run(self) -> None:
        from websockets.asyncio.client import connect

        failures = 0
        while not self._closed:
            try:
                async with connect(
                    self.url,
                    max_size=8 * 1024 * 1024,
                    open_timeout=self.open_timeout_s,
                    ping_interval=self.ping_interval_s,
                    compression=None,  # small JSON frames: deflate costs more than it saves
                ) as socket:
                    self._socket = socket
                    self.connections += 1
                    failures = 0
                    self._connected.set()
                    async for message in socket:
                        self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # Said once per outage: a server that is down for a while is tried every
                # backoff, and each refused attempt would otherwise log a line.
                failures += 1
                log = logger.info if failures == 1 else logger.debug
                log("websocket %s: %s", self.url, exc)
            self._connected.clear()
            self._socket = None
            self._fail_all("transport closed" if self._closed else "connection lost")
            if not self._closed:
                await asyncio.sleep(self.reconnect_backoff_ms / 1000)

    def _dispatch(self, message: str | bytes) -> None:
        try:
            frame = json.loads(message)
        except ValueError:
            logger.warning("websocket %s: a reply that is not JSON: %.200r", self.url, message)
            return
        frame_id = frame.get("id") if isinstance(frame, dict) else None
        entry = self._pending.pop(frame_id, None) if isinstance(frame_id, int) else None
        if entry is None:
            logger.warning("websocket %s: reply to no request: %.200s", self.url, message)
            return
        api, on_response, on_failure = entry
        if "error" in frame:
            error = frame["error"] if isinstance(frame["error"], dict) else {}
            _call(on_failure, f"{error.get('code')}: {error.get('message')}")
            return
        try:
            response = decode_response(api, frame.get("response"))
        except FrameError as exc:
            logger.warning("websocket %s: malformed %s reply: %s", self.url, api, exc.message)
            _call(on_failure, f"malformed {api} reply: {exc.message}")
            return
        _call(on_response, response)

    def _fail_all(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for _, _, on_failure in pending.values():
            _call(on_failure, reason)

    async def wait_connected(self, timeout_s: float | None = None) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout_s)


def _call(callback: Callable[[Any], None], argument: Any) -> None:
    """Run a reply callback; a bug in it is logged, never taken for a lost connection."""
    try:
        callback(argument)
    except Exception:
        logger.exception("websocket reply callback %r failed", callback)


class ClientDriver:
    """Drives one GroupClient, HandoffClient or ConsumerClient (the same calls) over a
    transport on the running asyncio loop."""

    def __init__(
        self,
        client: GroupClient | HandoffClient | ConsumerClient,
        transport: Transport,
        clock: Callable[[], int],
        on_event: Callable[[ClientEvent], None] | None = None,
    ) -> None:
        self.client = client
        self.transport = transport
        self.clock = clock
        self.on_event = on_event
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._pump_scheduled = False
        self.stopped = False

    def poll(self) -> None:
        """The application's poll()."""
        if not self.stopped:
            self.client.poll(self.clock())
            self.kick()

    def kick(self) -> None:
        """Pump soon (coalesced)."""
        if not self._pump_scheduled and not self.stopped:
            self._pump_scheduled = True
            self._loop.call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        if self.stopped:
            return
        now = self.clock()
        for request in self.client.outgoing(now):
            self.transport.send(
                request,
                functools.partial(self._answered, request),
                functools.partial(self._failed, request),
            )
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._hand_over_events()
        deadline = self.client.next_deadline_ms()
        if deadline is not None:
            delay_s = max(0, deadline - self.clock()) / 1000
            self._timer = self._loop.call_later(delay_s, self.kick)

    def _hand_over_events(self) -> None:
        """The client queues events until drained: every pump drains them, and so does
        ``close``."""
        for event in self.client.events():
            if self.on_event is not None:
                self.on_event(event)

    def _answered(self, request: Any, response: Any) -> None:
        if not self.stopped:
            self.client.receive(request, response, self.clock())
            self.kick()

    def _failed(self, request: Any, reason: str) -> None:
        if not self.stopped:
            self.client.fail(request, self.clock(), reason)
            self.kick()

    async def close(self, timeout_ms: int = 5000) -> None:
        """Close the client the way Kafka's consumer closes (commit, LeaveGroup for a dynamic
        member) and wait until it is done or `timeout_ms` passed; by then `on_event` has had
        every event the client produced (its LeftGroup too)."""
        if self.stopped:
            return
        self.client.close(self.clock(), timeout_ms)
        self.kick()
        # The client gives up on its commit at `timeout_ms` and only then sends LeaveGroup:
        # wait a little longer than that, or the LeaveGroup would be cut off.
        deadline = self.clock() + timeout_ms + CLOSE_GRACE_MS
        while not self.client.closed and not self.stopped and self.clock() < deadline:
            await asyncio.sleep(CLOSE_POLL_S)
        if not self.stopped:
            # The answer that closed the client may have come in this very loop turn: the
            # pump it kicked, which would hand over its events (the LeftGroup), has not run.
            self._hand_over_events()
        self.stop()

    def stop(self) -> None:
        """Stop all traffic at once, as a crashed process would: the coordinator only learns
        of it when the member's session times out."""
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
