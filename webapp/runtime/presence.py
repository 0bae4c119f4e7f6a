"""Presence: how each member is connected, and which handoff members' connections ended.

* **How each member is connected.** The engine knows a member's client id and host, as Kafka
  does, not the wire it came over. Transports say it when they submit (``via``: ``kafka``,
  ``websocket``, ``simulated``); a JoinGroup that makes a member remembers it for that member
  until a MemberRemoved or GroupRemoved event ends it (:meth:`Presence.connection_of`).
  Members replayed from the log after a restart are unknown (None) until they rejoin.

* **Discovery: a handoff member lives as long as its connection** (the handoff
  coordinator reads the live consumers from its service discovery, where each is an ephemeral
  node). A transport names the connection a request came by (``connection``: the websocket
  socket, the simulated consumer); every answered HandoffHeartbeat registers its member under that
  connection. When the connection ends (:meth:`Presence.connection_closed`: a socket closed, a
  simulated consumer stopped, killed or crashed) each of its handoff members is marked
  departed; the runtime makes each leave at once (a HandoffHeartbeat with epoch −1 on its
  behalf; the MemberRemoved event says ``left``), so its partitions go to the others without
  waiting for its session timeout. While the engine's discovery is switched off
  (``GroupCoordinator.set_discovery_available``) nobody learns of departures: they stay in
  :attr:`Presence.departed` until the runtime's next engine call that finds it back on.
  Classic members are never removed this way: as in Kafka, their sessions time out.

The registry lives in the runtime, not the engine: it survives an engine reload, and after a
restart members are registered again by their next heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard, cast

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    HandoffHeartbeatRequest,
    JoinGroupRequest,
)

__all__ = ["Presence", "heartbeats", "joins"]

MemberKey = tuple[str, str]


def joins(
    request: object,
) -> TypeGuard[JoinGroupRequest | HandoffHeartbeatRequest | ConsumerGroupHeartbeatRequest]:
    """Whether ``request`` makes its sender a member (a JoinGroup, a handoff or consumer
    group's heartbeat with epoch 0): the transport it came by is remembered for the member."""
    kind = type(request)
    if kind is HandoffHeartbeatRequest or kind is ConsumerGroupHeartbeatRequest:
        heartbeat = cast(HandoffHeartbeatRequest | ConsumerGroupHeartbeatRequest, request)
        return heartbeat.member_epoch == 0
    return kind is JoinGroupRequest


def heartbeats(request: object) -> TypeGuard[HandoffHeartbeatRequest]:
    """Whether ``request`` is a handoff member's heartbeat that keeps it in its group (not a
    leave): its member is registered under the connection it came by."""
    return type(request) is HandoffHeartbeatRequest and request.member_epoch != -1


class Presence:
    """The connection registry: (group_id, member_id) → how the member joined, and which
    connection each handoff member heartbeats on."""

    __slots__ = ("_handoff_connections", "_via", "departed")

    def __init__(self) -> None:
        #: (group_id, member_id) → the transport the member joined through.
        self._via: dict[MemberKey, str] = {}
        #: (group_id, member_id) of a handoff member → the connection it heartbeats by.
        self._handoff_connections: dict[MemberKey, object] = {}
        #: The handoff members whose connection ended, not yet made to leave.
        self.departed: set[MemberKey] = set()

    def remember_via(self, group_id: str, via: str) -> Callable[[Any], None]:
        """A callback for a join's response: it remembers ``via`` for the member it made."""
        members = self._via

        def remember(response: Any) -> None:
            if response.error_code == 0 and response.member_id:
                members[(group_id, response.member_id)] = via

        return remember

    def register_handoff(
        self, request: HandoffHeartbeatRequest, connection: object
    ) -> Callable[[Any], None]:
        """A callback for a handoff heartbeat's response: an answered one registers its member
        under ``connection``."""
        key = (request.group_id, request.member_id)

        def register(response: Any) -> None:
            if response.error_code == 0:
                self._handoff_connections[key] = connection
                self.departed.discard(key)

        return register

    def connection_of(self, group_id: str, member_id: str) -> str | None:
        """How the member joined (``kafka``, ``websocket``, ``simulated``), if known."""
        return self._via.get((group_id, member_id))

    def connection_closed(self, connection: object) -> bool:
        """``connection`` ended: its handoff members are departed. Whether any is departed."""
        gone = [key for key, c in self._handoff_connections.items() if c is connection]
        for key in gone:
            del self._handoff_connections[key]
            self.departed.add(key)
        return bool(self.departed)

    def member_removed(self, group_id: str, member_id: str) -> None:
        """A MemberRemoved event: the member is forgotten."""
        key = (group_id, member_id)
        self._via.pop(key, None)
        self._handoff_connections.pop(key, None)
        self.departed.discard(key)

    def group_removed(self, group_id: str) -> None:
        """A GroupRemoved event: its members are forgotten."""
        for key in [key for key in self._via if key[0] == group_id]:
            del self._via[key]
        for key in [key for key in self._handoff_connections if key[0] == group_id]:
            del self._handoff_connections[key]
        self.departed = {key for key in self.departed if key[0] != group_id}
