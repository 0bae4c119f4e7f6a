"""`Reply`: the answer to one request, available now or later.

JoinGroup and SyncGroup park until the join phase completes or the leader's assignment is
stored (Kafka's purgatory); every other request is answered at once. A host registers
`add_done_callback` to send the response when it exists; the engine completes a reply only after
the records the request produced were appended to the log, so a completed reply is always backed
by durable state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Reply(Generic[T]):
    __slots__ = ("_callbacks", "done", "response")

    def __init__(self) -> None:
        self.done = False
        self.response: T | None = None
        self._callbacks: list[Callable[[T], None]] | None = None

    @classmethod
    def of(cls, response: T) -> Reply[T]:
        """A reply that is already done."""
        reply: Reply[T] = cls()
        reply.done = True
        reply.response = response
        return reply

    def add_done_callback(self, fn: Callable[[T], None]) -> None:
        """Call `fn(response)` once the reply is done (at once if it already is)."""
        if self.done:
            fn(self.response)  # type: ignore[arg-type]
        elif self._callbacks is None:
            self._callbacks = [fn]
        else:
            self._callbacks.append(fn)

    def complete(self, response: T) -> None:
        if self.done:
            raise RuntimeError("reply completed twice")
        self.done = True
        self.response = response
        callbacks, self._callbacks = self._callbacks, None
        for fn in callbacks or ():
            fn(response)

    def __repr__(self) -> str:
        return f"Reply(done={self.done}, response={self.response!r})"
