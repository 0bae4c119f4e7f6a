"""What every handler is given besides its request (``Context``), and what it returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from webapp.runtime.api import RuntimeAPI

from ..codec import Request
from ..mechanisms import Principal
from ..store import RecordStore


@dataclasses.dataclass(frozen=True, slots=True)
class Context:
    """What a handler knows besides the request: the runtime, the address this listener
    advertises, the client's host, and who it authenticated as (None: the listener has no
    SASL, so anyone may do anything, as on Kafka's PLAINTEXT listener without an
    authorizer)."""

    runtime: RuntimeAPI
    host: str
    port: int
    client_host: str
    store: RecordStore
    principal: Principal | None = None

    def may_administer(self) -> bool:
        """Whether this connection may delete groups and offsets: with SASL, staff only
        (docs/kafka.md, "Authentication")."""
        return self.principal is None or self.principal.is_staff


#: What a handler returns when Kafka sends no response (Produce with acks=0).
NO_RESPONSE = object()


Handler = Callable[[Context, Request], Awaitable[Any]]
