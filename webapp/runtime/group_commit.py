"""Group commit: several requests' records in one transaction of the log.

A transport that has several requests in hand at once (the Kafka listener: the requests a
client pipelined, read in one chunk) handles them inside ``runtime.batch()``
(:meth:`GroupCommit.batch`): their records go into one SQLite transaction
(``SqliteLog.batch``), committed when the block ends, and nothing they caused leaves before that
COMMIT: the transport sends the answers after the block; the engine's events, and the answers
to other callers' parked replies, are held (:class:`HeldBatch`) until then.

The invariant that makes this safe: **no other task runs while the transaction is open**.
Everything is on the loop thread, and the block never awaits (the listener handles the run in a
plain function that drives each handler without letting it suspend; ``batch`` itself notices a
block that awaited and raises). So nobody can read, or answer from, a state the log does not
hold yet, and to every other caller the batch looks like one engine call. A COMMIT that fails
stores nothing of the batch: an engine fault (``webapp.runtime.faults``), and the transport
closes the connections whose answers it held. Other transports (the websocket, simulated
consumers) keep one transaction per request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from coordinator_engine import GroupEvent, LogAppendError, SqliteLog

from .api import GroupCommitFailed

__all__ = ["GroupCommit", "HeldBatch"]


class HeldBatch:
    """What an open batch holds back until its COMMIT: the engine's events, and the answers to
    other callers' replies that completed inside the batch (each with how to fail it if the
    COMMIT fails)."""

    __slots__ = ("events", "released", "yielded")

    def __init__(self) -> None:
        self.events: list[GroupEvent] = []
        self.released: list[tuple[Callable[[], None], Callable[[str], None] | None]] = []
        #: Set by a callback scheduled at the batch's start: the loop ran it, so the block
        #: awaited something (a bug the batch reports when it ends).
        self.yielded = False

    def mark_yielded(self) -> None:
        self.yielded = True


class GroupCommit:
    """The runtime's group commits: the engine's events pass through :meth:`on_event` (held
    while a batch is open, else published at once), and :attr:`open` is the open batch, which
    holds the answers to parked replies that complete inside it.

    ``publish(event)`` numbers and sends an event on; ``engine_failed(during, exc)`` is the
    runtime's fault handler; ``unavailable_reason()`` says why the runtime does not serve.
    """

    __slots__ = ("_engine_failed", "_publish", "_unavailable_reason", "open")

    def __init__(
        self,
        *,
        publish: Callable[[GroupEvent], None],
        engine_failed: Callable[[str, Exception], None],
        unavailable_reason: Callable[[], str],
    ) -> None:
        self._publish = publish
        self._engine_failed = engine_failed
        self._unavailable_reason = unavailable_reason
        #: The open batch, if any.
        self.open: HeldBatch | None = None

    def on_event(self, event: GroupEvent) -> None:
        """The engine's listener: an event is published now, or after the open batch's COMMIT."""
        held = self.open
        if held is not None:
            held.events.append(event)
            return
        self._publish(event)

    @contextlib.contextmanager
    def batch(
        self, log: SqliteLog | None, loop: asyncio.AbstractEventLoop | None
    ) -> Iterator[None]:
        """A group commit over ``log`` (None: the runtime does not serve; nothing is held or
        committed, and the engine calls inside raise RuntimeNotReady).

        The block must be synchronous: it must not await (no other task may run while the
        transaction is open, or it could answer from state not yet durable). Enter it, make
        the calls (``submit`` of a request answered at once returns without suspending),
        leave it, and only then send the answers ``submit`` returned inside.

        * While it is open, the engine's events, and the answers to other callers whose
          parked replies completed (a ``submit`` awaited elsewhere, a ``submit_nowait``
          callback), are held; after the COMMIT they are released, events first.
        * The COMMIT fails (or an append inside it failed): nothing of the batch is stored.
          That is an engine fault (the engine's memory holds what the log does not): the
          engine is dropped and reloaded from the log, the held answers fail with
          RuntimeNotReady, the held events are dropped, and GroupCommitFailed (a
          RuntimeNotReady) is raised here, so the owner sends none of its answers either.
        * The block raises: the transaction is rolled back, and that too is an engine fault.
        * It does not nest (RuntimeError), and it refuses a block that awaited: it commits
          (whatever others were told meanwhile stays true), releases, then raises
          RuntimeError.
        """
        if self.open is not None:
            raise RuntimeError("runtime.batch(): a batch is already open (batches do not nest)")
        held = self.open = HeldBatch()
        sentinel = loop.call_soon(held.mark_yielded) if loop is not None else None
        try:
            if log is None:
                yield
            else:
                try:
                    with log.batch():
                        yield
                except LogAppendError as exc:
                    self.open = None
                    self._failed(held, "group commit", exc)
                    raise GroupCommitFailed(
                        f"{self._unavailable_reason()} (the group commit failed: {exc})"
                    ) from exc
        except BaseException as exc:
            if self.open is held and isinstance(exc, Exception):
                self.open = None
                self._failed(held, "a batch that raised", exc)
            raise
        finally:
            self.open = None
            if sentinel is not None:
                sentinel.cancel()
        # Events first: an answer's callback may call the engine again (a simulated consumer
        # sends its next request), and its events must come after the batch's in the sequence.
        for event in held.events:
            self._publish(event)
        for release, _ in held.released:
            release()
        if held.yielded:
            raise RuntimeError(
                "runtime.batch(): the block awaited while the batch was open; it was "
                "committed, but others may have been answered from records not yet durable"
            )

    def _failed(self, held: HeldBatch, during: str, exc: Exception) -> None:
        """Nothing of ``held``'s batch is stored: an engine fault, and none of its answers."""
        self._engine_failed(during, exc)
        reason = self._unavailable_reason()
        for _, fail in held.released:
            if fail is not None:
                fail(reason)
        held.released.clear()
        held.events.clear()
