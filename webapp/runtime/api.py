"""What code outside the runtime may call on it: the typed face of
:class:`~webapp.runtime.coordinator_runtime.CoordinatorRuntime`.

Transports (``webapp.transports``) and the simulation (``webapp.simulation``) are written
against :class:`RuntimeAPI`, Celery's control messages (``webapp.runtime.control``) against
:class:`HousekeepingAPI`; neither imports the runtime class, so a test can hand them any object
of that shape and the runtime's own modules depend on this one, never the other way round.
The errors callers catch live here too.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, overload

from coordinator_engine import (
    CleanupResult,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HandoffHeartbeatRequest,
    HandoffHeartbeatResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SqliteLog,
    SyncGroupRequest,
    SyncGroupResponse,
)
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from coordinator_engine.requests import Request

from .metrics import RuntimeMetrics
from .topics import TopicRegistry, TopicSpec
from .turns import TurnBudget

__all__ = [
    "AnyRequest",
    "GroupCommitFailed",
    "HousekeepingAPI",
    "RuntimeAPI",
    "RuntimeNotReady",
]

#: What :meth:`RuntimeAPI.submit` takes: an engine request, or one of the two cluster requests
#: the runtime answers itself.
AnyRequest = Request | FindCoordinatorRequest | MetadataRequest


class RuntimeNotReady(RuntimeError):
    """The runtime is not serving (not started yet, stopped, reloading after an engine fault,
    or called from another thread). Transports answer it as "unavailable"; clients retry."""


class GroupCommitFailed(RuntimeNotReady):
    """The COMMIT of a :meth:`RuntimeAPI.batch` failed: nothing the batch's engine calls wrote
    is stored, none of their answers may be sent, and the engine reloads."""


class RuntimeAPI(Protocol):
    """What transports and simulated consumers call on the runtime, on its loop thread.

    ``submit`` is typed per request, as ``GroupCoordinator.handle`` is: a JoinGroupRequest gives
    a JoinGroupResponse. ``via`` names the transport a joining member came by (``kafka``,
    ``websocket``, ``simulated``); ``connection`` the connection a handoff member heartbeats on
    (its departure makes the member leave). See the runtime's docstring for both.
    """

    @property
    def config(self) -> CoordinatorConfig:
        """The engine's configuration (a consumer-protocol member's client is told the
        coordinator's session, which it does not choose)."""

    @property
    def metrics(self) -> RuntimeMetrics:
        """What ``/metrics`` counts; a transport counts each request as it sends its response
        (``metrics.count(api, transport, response)``)."""

    @property
    def turns(self) -> TurnBudget:
        """Fair shares of the loop for bursts of requests (``webapp.runtime.turns``)."""

    @property
    def topics(self) -> TopicRegistry:
        """The topic registry (read it; change topics through the ``*_topic`` methods)."""

    def now_ms(self) -> int:
        """The runtime's clock (epoch milliseconds, never decreasing)."""

    @overload
    async def submit(
        self, request: JoinGroupRequest, *, via: str | None = ..., connection: object | None = ...
    ) -> JoinGroupResponse: ...
    @overload
    async def submit(
        self, request: SyncGroupRequest, *, via: str | None = ..., connection: object | None = ...
    ) -> SyncGroupResponse: ...
    @overload
    async def submit(
        self, request: HeartbeatRequest, *, via: str | None = ..., connection: object | None = ...
    ) -> HeartbeatResponse: ...
    @overload
    async def submit(
        self,
        request: LeaveGroupRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> LeaveGroupResponse: ...
    @overload
    async def submit(
        self,
        request: OffsetCommitRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> OffsetCommitResponse: ...
    @overload
    async def submit(
        self,
        request: OffsetFetchRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> OffsetFetchResponse: ...
    @overload
    async def submit(
        self,
        request: OffsetDeleteRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> OffsetDeleteResponse: ...
    @overload
    async def submit(
        self,
        request: DescribeGroupsRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> DescribeGroupsResponse: ...
    @overload
    async def submit(
        self,
        request: ListGroupsRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> ListGroupsResponse: ...
    @overload
    async def submit(
        self,
        request: DeleteGroupsRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> DeleteGroupsResponse: ...
    @overload
    async def submit(
        self,
        request: HandoffHeartbeatRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> HandoffHeartbeatResponse: ...
    @overload
    async def submit(
        self,
        request: FindCoordinatorRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> FindCoordinatorResponse: ...
    @overload
    async def submit(
        self,
        request: MetadataRequest,
        *,
        via: str | None = ...,
        connection: object | None = ...,
    ) -> MetadataResponse: ...
    @overload
    async def submit(
        self, request: AnyRequest, *, via: str | None = ..., connection: object | None = ...
    ) -> Any: ...
    async def submit(
        self, request: AnyRequest, *, via: str | None = None, connection: object | None = None
    ) -> Any:
        """Handle one request; its response once the records behind it are durable."""

    def submit_nowait(
        self,
        request: AnyRequest,
        callback: Callable[[Any], None],
        on_failure: Callable[[str], None] | None = None,
        *,
        via: str | None = None,
        connection: object | None = None,
    ) -> None:
        """Handle one request and call ``callback(response)`` when it is answered (maybe
        before this returns), or ``on_failure(reason)`` if the engine is dropped first."""

    def batch(self) -> AbstractContextManager[None]:
        """A group commit: the records of every call made in the (synchronous) block are
        stored in one transaction; send the answers only after the block."""

    def connection_closed(self, connection: object) -> None:
        """``connection`` ended: its handoff members leave."""

    def find_coordinator(self, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        """FindCoordinator, answered by the host (the engine knows no brokers)."""

    def metadata(self, request: MetadataRequest) -> MetadataResponse:
        """Metadata (partition counts), answered from the topic registry."""

    async def create_topic(
        self, name: str, partitions: int, produce_rate_per_s: float = 0
    ) -> TopicSpec:
        """Create a topic, stored in the database before this returns."""

    async def append_records(self, topic: str, partition: int, count: int) -> int:
        """Offsets for ``count`` records a producer sent; the first of them."""


class HousekeepingAPI(Protocol):
    """What the control messages (``webapp.runtime.control``) run on the runtime."""

    @property
    def record_log(self) -> SqliteLog:
        """The record log while serving (RuntimeNotReady otherwise)."""

    @property
    def last_seq(self) -> int:
        """The sequence number of the latest event."""

    @property
    def metrics(self) -> RuntimeMetrics:
        """What ``/metrics`` counts (a compaction reports itself)."""

    def cleanup(self) -> CleanupResult:
        """Kafka's offset expiry and group cleanup, now."""

    def group_ids(self) -> list[str]:
        """The ids of the groups the engine holds."""
