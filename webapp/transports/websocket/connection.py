"""The websocket consumer protocol at ``/ws/consumer/`` (docs/protocol.md).

A thin adapter: decode a frame (``codec``), submit the request to the runtime, send
the reply. Each request runs in its own task, so a JoinGroup parked for a rebalance never holds
up a Heartbeat on the same socket; replies therefore go out in completion order, matched to
their requests by ``id``.

A malformed frame gets an error reply and the connection stays open, unless the client sends
more than ``FLOOD_LIMIT`` malformed frames within ``FLOOD_WINDOW_S`` seconds: then the socket is
closed with 4429 (too many malformed frames; the close codes are in ``webapp.sockets``).
Closing the socket, or the socket dying, does nothing to a classic group: its members time
out like a Kafka client that went away. A handoff group's members that heartbeat on this socket
leave at once (the handoff groups' discovery sees the consumer vanish; the runtime's
"Discovery", which holds the departures back while the discovery is switched off).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from coordinator_engine import ConsumerGroupHeartbeatRequest, JoinGroupRequest
from webapp.runtime.api import RuntimeNotReady
from webapp.sockets import (
    CLOSE_TOO_MANY_MALFORMED_FRAMES,
    SocketOnly,
)

from . import codec

logger = logging.getLogger(__name__)

#: The requests whose empty ``client_host`` the socket fills from its connection.
_FILLS_CLIENT_HOST = (JoinGroupRequest, ConsumerGroupHeartbeatRequest)


class ConsumerProtocolSocket(SocketOnly, AsyncWebsocketConsumer):
    """One client's socket: frames in, requests to the runtime, replies out."""

    FLOOD_LIMIT = 200
    FLOOD_WINDOW_S = 10.0

    async def connect(self) -> None:
        if not await self.connect_runtime():
            return
        self._tasks: set[asyncio.Task[None]] = set()
        self._malformed: deque[float] = deque()
        self._closing = False
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self._closing:
            return
        data = text_data if text_data is not None else bytes_data
        try:
            frame = codec.parse_frame(data if data is not None else b"")
        except codec.FrameError as error:
            await self._send(codec.error_frame(error.frame_id, error.code, error.message))
            if self._flooded():
                self._closing = True
                logger.warning(
                    "websocket consumer %s: more than %d malformed frames in %g s; closing",
                    self.scope.get("client"),
                    self.FLOOD_LIMIT,
                    self.FLOOD_WINDOW_S,
                )
                await self.close(code=CLOSE_TOO_MANY_MALFORMED_FRAMES)
            return
        task = asyncio.get_running_loop().create_task(self._serve(frame))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _flooded(self) -> bool:
        now = time.monotonic()
        window = self._malformed
        window.append(now)
        while window and window[0] < now - self.FLOOD_WINDOW_S:
            window.popleft()
        return len(window) > self.FLOOD_LIMIT

    def _with_client_host(self, request: Any) -> Any:
        """Kafka takes a member's client host from its connection (``/127.0.0.1``); so does
        this socket, for a JoinGroup or ConsumerGroupHeartbeat that does not say."""
        if type(request) in _FILLS_CLIENT_HOST and not request.client_host:
            client = self.scope.get("client")
            if client:
                return dataclasses.replace(request, client_host=f"/{client[0]}")
        return request

    async def _serve(self, frame: codec.Frame) -> None:
        turns = self.runtime.turns
        response: Any = None
        try:
            # A burst of frames (a group's members all rejoining) takes its turn in shares.
            await turns.wait()
            response = await self.runtime.submit(
                self._with_client_host(frame.request), via="websocket", connection=self
            )
        except asyncio.CancelledError:
            raise
        except RuntimeNotReady as exc:
            # Starting (the log replays) or stopping: the client retries, as a Kafka client
            # told COORDINATOR_NOT_AVAILABLE looks for the coordinator again.
            reply = codec.error_frame(frame.id, codec.UNAVAILABLE, str(exc))
        except Exception:
            logger.exception("websocket consumer: %s request %d failed", frame.api, frame.id)
            reply = codec.error_frame(
                frame.id, codec.INTERNAL_ERROR, "the coordinator failed on this request"
            )
        else:
            reply = codec.response_frame(frame.id, frame.api, response)
        # Counted as answered (with the response's error codes; a failure without), as Kafka.
        self.runtime.metrics.count(frame.api, "websocket", response)
        # Parked replies complete together (one engine call answers a whole group's JoinGroups):
        # their encoding and sending is shared out too.
        await turns.wait()
        await self._send(reply)

    async def _send(self, frame: dict[str, Any]) -> None:
        text = codec.dumps(frame)
        if self.socket_closed:
            return
        await self.send(text_data=text)
        if self.socket_closed:
            logger.debug("websocket consumer: reply %s dropped, the socket closed", frame["id"])

    async def disconnect(self, code: int) -> None:
        # The requests in flight stay handled (a parked JoinGroup keeps its place in the
        # group, as in Kafka); only their replies have nowhere to go.
        for task in getattr(self, "_tasks", ()):
            task.cancel()
        runtime = getattr(self, "runtime", None)
        if runtime is not None:
            runtime.connection_closed(self)
