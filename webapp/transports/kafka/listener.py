"""The Kafka listener: a TCP server on the coordinator runtime's event loop.

Theory of operation
===================

Kafka's broker answers one connection's requests one at a time, in order: it stops reading a
connection while a request of it is in flight (``SocketServer`` mutes the channel). This
listener does the same, so a JoinGroup parked until the rebalance completes holds up only its
own connection; every other connection is served by its own task. Clients know this and keep a
separate connection to the coordinator for the group's requests. The requests a client
pipelined arrive together; their answers leave together, in one write (``_answer``).

Group commit (docs/kafka.md, "Group commit"): the requests of one read that are answered at
once are handled inside ``runtime.batch()``, so their records (an OffsetCommit's) are stored in
one transaction, and their answers are written only after it committed. The run is handled by
a plain function (``_answer_run``) that drives each handler without an event loop: nothing
else runs on the loop while the transaction is open, so nobody is answered from records that
are not durable yet. If the transaction fails, none of the run is answered: the connection is
closed, as when the runtime is reloading.

With SASL (``sasl``, ``KAFKA_SASL=required``), a connection's frames go to its
``SaslServerAuthenticator`` until it has authenticated (``_authenticate``; Kafka's
``SaslServerAuthenticator``, docs/kafka.md "Authentication"), then are served as above with
the principal in the handlers' context; a refusal is answered, then the connection closed.

What cannot be served closes the connection with one log line naming the client and the
problem, never the listener: a size prefix under 8 bytes or over ``MAX_FRAME_BYTES`` (checked
before anything is read), a frame that ends early, bytes that do not decode, an unknown API key
or a version outside ``SUPPORTED``. ApiVersions is the exception Kafka makes (KIP-511): a
version it does not serve gets a v0 answer with UNSUPPORTED_VERSION and the supported ranges, so
the client can retry with one it knows. While the runtime is starting or reloading its log, the
connection is closed too: the client reconnects and asks again, as it does when a broker
restarts. So is a request whose values the engine's requests cannot hold (``FieldError``: a
string over Kafka's 32,767 bytes, which Kafka's readers refuse too). A client that goes away
while its request is in flight (a parked JoinGroup) changes nothing for the group: its member
stays until its session times out, as in Kafka.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from coordinator_engine.requests import FieldError
from webapp.runtime.api import RuntimeAPI, RuntimeNotReady

from . import apis, codec
from .authenticator import (
    FAILED_AUTHENTICATION_DELAY_S,
    MAX_RECEIVE_BYTES,
    SaslConfig,
    SaslServerAuthenticator,
)
from .store import DEFAULT_RETENTION_MS, RecordStore

__all__ = ["KafkaListener"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How much one read takes from a connection; the frames in it are answered together.
_READ_CHUNK = 256 * 1024


class KafkaListener:
    """Serves Kafka clients on ``host:port`` for ``runtime``, advertising
    ``advertised_host:advertised_port`` (the port actually bound when ``port`` is 0)."""

    def __init__(
        self,
        runtime: RuntimeAPI,
        *,
        host: str,
        port: int,
        records_path: str | Path,
        advertised_host: str | None = None,
        retention_ms: int = DEFAULT_RETENTION_MS,
        sasl: SaslConfig | None = None,
    ) -> None:
        self.runtime = runtime
        #: None: every connection is served at once (no SASL); otherwise each authenticates.
        self.sasl = sasl
        self.store = RecordStore(records_path, retention_ms=retention_ms)
        self.host = host
        self.port = port
        self.advertised_host = advertised_host or host
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        return f"{self.advertised_host}:{self.port}"

    async def start(self) -> None:
        """Listen (the runtime serves: its topic registry is loaded)."""
        adopted = self.store.adopt_named(
            {spec.name: spec.topic_id for spec in self.runtime.topics.all()}
        )
        if adopted:
            logger.info("Kafka record store: %d batches kept by topic name now by id", adopted)
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info(
            "Kafka listener on %s:%d (advertised %s; SASL %s)",
            self.host,
            self.port,
            self.address,
            "off" if self.sasl is None else "required: " + ", ".join(self.sasl.mechanisms),
        )

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task
        await self._server.wait_closed()
        self._server = None
        self.store.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        client = f"{peer[0]}:{peer[1]}" if peer else "unknown"
        context = apis.Context(
            runtime=self.runtime,
            host=self.advertised_host,
            port=self.port,
            client_host=f"/{peer[0]}" if peer else "",
            store=self.store,
        )
        try:
            await self._answer(reader, writer, context, client)
        except ConnectionError:
            pass  # the client went away; nothing of the group depends on this socket
        except asyncio.CancelledError:
            # stop(): the connection task ends here, quietly (asyncio's server would log a
            # cancelled connection callback as an error).
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        context: apis.Context,
        client: str,
    ) -> None:
        """Answer the connection's requests in order until it ends or must be closed.

        What arrives is read in chunks and cut into frames here. The requests of a chunk are
        answered in runs: each run of requests answered at once is handled in one group commit
        (``runtime.batch()``, by :meth:`_answer_run`, which cannot await), so its records are
        one transaction, and its answers are kept until that transaction has committed. A
        request that may wait (a parked JoinGroup, a long-poll Fetch, a Produce storing its
        batches) ends a run and is awaited outside any batch. The answers go out in one write
        per chunk (a client that pipelines, as librdkafka does, costs one send per chunk
        rather than one per request), except that what is ready is written before a request
        that may wait (a parked JoinGroup must not hold up the Heartbeat answered before it),
        and before the connection is closed. A group commit that fails answers none of its
        run: the connection is closed (what earlier runs answered still goes out)."""
        buffer = bytearray()
        replies: list[bytes] = []
        authenticator = (
            None
            if self.sasl is None
            else SaslServerAuthenticator(
                self.sasl,
                # ApiVersions before authentication is answered as after it.
                lambda request: self._encoded(request, _result_now(apis.handle(context, request))),
            )
        )

        def flush() -> None:
            if replies:
                writer.write(b"".join(replies))
                replies.clear()

        try:
            while True:
                chunk = await reader.read(_READ_CHUNK)
                if not chunk:
                    if buffer:
                        logger.info(
                            "Kafka client %s: closed in the middle of a frame (%d bytes)",
                            client,
                            len(buffer),
                        )
                    return
                buffer += chunk
                start = 0
                if authenticator is not None and not authenticator.complete:
                    used = await self._authenticate(buffer, authenticator, replies, client)
                    if used is None:
                        return
                    if used < 0:  # a failed authentication: answered, then closed a bit later
                        flush()
                        await writer.drain()
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(FAILED_AUTHENTICATION_DELAY_S):
                                while await reader.read(_READ_CHUNK):
                                    pass  # what the client still sends is not read
                        return
                    start = used
                    if not authenticator.complete:
                        del buffer[:start]
                        flush()
                        await writer.drain()
                        continue
                    context = dataclasses.replace(context, principal=authenticator.principal)
                    logger.info("Kafka client %s: authenticated as %s", client, context.principal)
                while True:
                    answered: list[bytes] = []
                    try:
                        with self.runtime.batch():
                            start, answered, then = self._answer_run(buffer, start, context, client)
                    except RuntimeNotReady as exc:
                        logger.warning(
                            "Kafka client %s: %s; %d answers withheld, closing the connection",
                            client,
                            exc,
                            len(answered),
                        )
                        return
                    replies += answered
                    if then is None:
                        break  # every complete frame of the buffer is answered
                    if then is _CLOSE:
                        return
                    assert isinstance(then, codec.Request)
                    if then.api_key in apis.MAY_WAIT:
                        flush()
                    reply = await self._reply(then, context, client)
                    if reply is None:
                        return
                    if reply:  # b"": a request Kafka does not answer (Produce, acks=0)
                        replies.append(reply)
                del buffer[:start]
                if replies:
                    flush()
                    await writer.drain()
        finally:
            flush()  # what was answered before the connection ends still goes out

    async def _authenticate(
        self,
        buffer: bytearray,
        authenticator: SaslServerAuthenticator,
        replies: list[bytes],
        client: str,
    ) -> int | None:
        """Hand the complete frames of ``buffer`` to ``authenticator`` until the connection is
        authenticated; where the next frame starts, or None to close the connection (the
        answers so far are in ``replies``), or -1 when that close is a failed authentication's
        (Kafka delays it). Its frames are checked against Kafka's limit for
        an unauthenticated client (``MAX_RECEIVE_BYTES``), and may be raw SASL tokens of any
        size from 0 (after a SaslHandshake v0)."""
        start = 0
        while not authenticator.complete and len(buffer) - start >= 4:
            size = int.from_bytes(buffer[start : start + 4], "big", signed=True)
            if not 0 <= size <= MAX_RECEIVE_BYTES:
                logger.warning(
                    "Kafka client %s: frame size %d before authentication (at most %d); "
                    "closing the connection",
                    client,
                    size,
                    MAX_RECEIVE_BYTES,
                )
                return None
            if len(buffer) - start - 4 < size:
                break
            frame = bytes(buffer[start + 4 : start + 4 + size])
            start += 4 + size
            try:
                step = await authenticator.receive(frame)
            except Exception:  # the users could not be read (the database): a fault, not a refusal
                logger.exception(
                    "Kafka client %s: authentication failed; closing the connection", client
                )
                return None
            if step.reply:
                replies.append(step.reply)
            if step.close is not None:
                logger.info("Kafka client %s: %s; closing the connection", client, step.close)
                return -1 if step.failed_authentication else None
        return start

    def _answer_run(
        self, buffer: bytearray, start: int, context: apis.Context, client: str
    ) -> tuple[int, list[bytes], codec.Request | object | None]:
        """Decode and answer the complete frames of ``buffer`` from ``start`` on, up to the
        first request that may suspend (``apis.SUSPENDS``), which is decoded but not answered.

        Returns where the next frame starts, the answers, and what comes next: None (no
        complete frame left), the request that may suspend, or ``_CLOSE`` (a frame that cannot
        be served, or a request that failed: the connection is closed after the answers).
        A plain function, called inside ``runtime.batch()``: nothing in it can await, so no
        other task runs before the batch has committed."""
        answered: list[bytes] = []
        while len(buffer) - start >= 4:
            try:
                size = codec.frame_size(bytes(buffer[start : start + 4]))
                if len(buffer) - start - 4 < size:
                    break
                frame = bytes(buffer[start + 4 : start + 4 + size])
                start += 4 + size
                request = codec.decode_request(frame, apis.SUPPORTED)
            except codec.BadFrame as bad:
                if isinstance(bad, codec.UnsupportedRequest) and bad.api_key == apis.API_VERSIONS:
                    answered.append(apis.unsupported_api_versions(bad.correlation_id))
                    continue
                logger.warning("Kafka client %s: %s; closing the connection", client, bad)
                return start, answered, _CLOSE
            if request.api_key in apis.SUSPENDS:
                return start, answered, request
            try:
                body = _result_now(apis.handle(context, request))
            except Exception as exc:
                self._failed(exc, request, client)
                return start, answered, _CLOSE
            reply = self._encoded(request, body)
            if reply:
                answered.append(reply)
        return start, answered, None

    async def _reply(
        self, request: codec.Request, context: apis.Context, client: str
    ) -> bytes | None:
        """The encoded answer to ``request``; b"" for none; None to close the connection."""
        try:
            body = await apis.handle(context, request)
        except Exception as exc:
            self._failed(exc, request, client)
            return None
        return self._encoded(request, body)

    @staticmethod
    def _encoded(request: codec.Request, body: Any) -> bytes:
        if body is apis.NO_RESPONSE:
            return b""
        return codec.encode_response(
            request, body, repeated=request.api_key in apis.REPEATED_ANSWERS
        )

    @staticmethod
    def _failed(exc: Exception, request: codec.Request, client: str) -> None:
        """Say why a request closes its connection."""
        if isinstance(exc, RuntimeNotReady):
            logger.info("Kafka client %s: %s; closing the connection", client, exc)
            return
        if isinstance(exc, FieldError):
            # A value Kafka's own readers refuse (a string over 32,767 bytes in a flexible
            # version, whose compact strings could hold more): bad bytes, not a bug here.
            logger.warning(
                "Kafka client %s: API %d v%d request refused (%s); closing the connection",
                client,
                request.api_key,
                request.api_version,
                exc,
            )
            return
        logger.error(
            "Kafka client %s: API %d v%d failed; closing the connection",
            client,
            request.api_key,
            request.api_version,
            exc_info=exc,
        )


#: What :meth:`KafkaListener._answer_run` returns to close the connection.
_CLOSE = object()


def _result_now(handler: Coroutine[Any, Any, T]) -> T:
    """Run a request handler to its end without letting it suspend (it is inside a group
    commit); RuntimeError if it tries to await something that is not ready."""
    try:
        handler.send(None)
    except StopIteration as finished:
        result: T = finished.value
        return result
    handler.close()
    raise RuntimeError("a request handler awaited inside a group commit (apis.SUSPENDS misses it)")
