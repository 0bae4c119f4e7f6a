"""The base of this site's websocket handlers that talk to their socket and to the runtime
only: the consumer protocol (``webapp.transports.websocket``) and the dashboard's feeds
(``webapp.dashboard.feeds``), and the close codes they use.

Close codes: Daphne (autobahn) lets an application close a websocket with 1000 or a code in
3000–4999 only; it answers any other code with an exception, a logged traceback and a 1011 to
the client. So every code this site closes with is its own, in 4000–4999, numbered after the
HTTP status that means the same (docs/protocol.md and docs/dashboard.md list them), and
:meth:`SocketOnly.close` refuses any other before it reaches Daphne.
"""

from __future__ import annotations

import logging
from typing import Any

from autobahn.exception import Disconnected
from channels.exceptions import StopConsumer

from webapp.runtime.coordinator_runtime import CoordinatorRuntime, get_runtime

logger = logging.getLogger(__name__)

#: Sign in first (the dashboard's feeds, with ``REBALANCE_LAB_ANONYMOUS_READ`` off).
CLOSE_LOGIN_REQUIRED = 4401
#: A page of another site opened the socket (its Origin is not this Host; the dashboard's feeds).
CLOSE_FOREIGN_ORIGIN = 4403
#: More than the allowed malformed frames in a window (the consumer protocol).
CLOSE_TOO_MANY_MALFORMED_FRAMES = 4429
#: The coordinator runtime cannot serve: its start failed, or it is reloading its state.
CLOSE_RUNTIME_UNAVAILABLE = 4503

#: The codes Daphne lets an application send: 1000 (normal) and 3000–4999.
_SENDABLE = frozenset((1000, *range(3000, 5000)))


class SocketOnly:
    """For consumers that talk to their socket and to the runtime only: no channel layer.
    Two of Channels' hops per message are skipped:

    * its dispatch loop waits on the socket *and* a channel layer, through a new task and an
      ``asyncio.wait`` per message; here the loop awaits the socket, and with no channel layer
      there is no Redis receive loop per connection either;
    * its ``dispatch`` closes stale database connections in a worker thread before every
      message (a thread round trip per frame). A handler that does read the database must
      therefore do it through ``channels.db.database_sync_to_async``, which closes them
      around the query itself.

    A frame sent after the client closed its socket is dropped (``socket_closed`` then
    says so): between the client's close and Channels' ``websocket.disconnect``, Daphne's
    send raises autobahn's ``Disconnected``, and the frame has nowhere to go, as a Kafka
    broker's response to a closed connection.
    """

    #: The socket is closed: websocket.disconnect came, or a send found it closing.
    socket_closed = False
    #: The process's coordinator runtime (``connect_runtime``).
    runtime: CoordinatorRuntime

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
            # A mixin: send is the Channels consumer's it is mixed into.
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)  # type: ignore[misc]
        except Disconnected:
            self.socket_closed = True

    async def connect_runtime(self) -> bool:
        """From ``connect``: True with the process's runtime in ``self.runtime``; or, when it
        cannot serve, False with the socket refused with 4503 (the cause is logged once, by
        the runtime; here one line per refused socket)."""
        try:
            self.runtime = await get_runtime()
        except Exception as exc:
            logger.warning(
                "%s %s closed with %d: the coordinator runtime is not available (%s)",
                type(self).__name__,
                self.scope.get("client"),
                CLOSE_RUNTIME_UNAVAILABLE,
                exc,
            )
            await self.refuse(CLOSE_RUNTIME_UNAVAILABLE)
            return False
        return True

    async def refuse(self, code: int) -> None:
        """Turn the connection away with ``code``, from ``connect``: the handshake is accepted
        and the socket closed at once. (A close before the accept reaches the client as an
        HTTP 403 to its handshake, with no code to tell why.)"""
        await self.accept()  # type: ignore[attr-defined]
        await self.close(code=code)

    async def close(self, code: int | None = None, reason: str | None = None) -> None:
        if code is not None and code is not True and code not in _SENDABLE:
            raise ValueError(
                f"close code {code} cannot be sent through Daphne: use 1000 or one of this "
                "site's codes in 4000-4999 (webapp.sockets)"
            )
        await super().close(code=code, reason=reason)  # type: ignore[misc]
