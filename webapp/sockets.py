"""The base of this site's websocket handlers that talk to their socket and to the runtime
only: the consumer protocol (``webapp.transports.websocket``) and the dashboard's feeds
(``webapp.dashboard.feeds``)."""

from __future__ import annotations

from typing import Any

from autobahn.exception import Disconnected
from channels.exceptions import StopConsumer


class SocketOnly:
    """For consumers that talk to their socket and to the runtime only: no channel layer, no
    database in their handlers. Two of Channels' hops per message are skipped:

    * its dispatch loop waits on the socket *and* a channel layer, through a new task and an
      ``asyncio.wait`` per message; here the loop awaits the socket, and with no channel layer
      there is no Redis receive loop per connection either;
    * its ``dispatch`` closes stale database connections in a worker thread before every
      message (a thread round trip per frame).

    A frame sent after the client closed its socket is dropped (``socket_closed`` then
    says so): between the client's close and Channels' ``websocket.disconnect``, Daphne's
    send raises autobahn's ``Disconnected``, and the frame has nowhere to go, as a Kafka
    broker's response to a closed connection.
    """

    #: The socket is closed: websocket.disconnect came, or a send found it closing.
    socket_closed = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope = scope
        self.channel_layer = None
        self.base_send = send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] == "websocket.disconnect":
            self.socket_closed = True
        handler = getattr(self, message["type"].replace(".", "_"), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        if self.socket_closed:
            return
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except Disconnected:
            self.socket_closed = True
