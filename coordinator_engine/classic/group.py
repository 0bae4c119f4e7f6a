"""A classic group's in-memory metadata (Kafka's `GroupMetadata` / `MemberMetadata`).

The classic-group manager (`manager.py`) owns these objects and is the only one to change
them; the outside world sees frozen `GroupView` / `MemberView` snapshots. Member order is the
order members entered the group (a dict's insertion order, replayed from the order of the stored
member list): every choice that Kafka leaves to hash-map order (the new leader, protocol-vote
ties) uses it, so the engine is deterministic. See docs/engine.md, "Deterministic choices".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ..consumer_protocol import CONSUMER_PROTOCOL_TYPE, ConsumerProtocolError, subscribed_topics
from ..context import GroupSummary
from .state import GroupState

if TYPE_CHECKING:
    from ..reply import Reply
    from ..responses import JoinGroupResponse, SyncGroupResponse


class Member:
    """One member. `join_reply`/`sync_reply` are set while its JoinGroup/SyncGroup is parked."""

    __slots__ = (
        "assignment",
        "client_host",
        "client_id",
        "group_instance_id",
        "is_new",
        "join_reply",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "sync_reply",
        "timer_key",
    )

    def __init__(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.join_reply: Reply[JoinGroupResponse] | None = None
        self.sync_reply: Reply[SyncGroupResponse] | None = None
        self.is_new = False
        self.timer_key: tuple[str, ...] = ()  # its session timer's key, set by the coordinator

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_reply is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_reply is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Same protocols with the same metadata, in the same order (Kafka's `matches`)."""
        return self.protocols == protocols

    def view(self, protocol_name: str | None) -> MemberView:
        metadata = b""
        if protocol_name is not None and protocol_name in self.protocol_names():
            metadata = self.metadata(protocol_name)
        return MemberView(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            metadata=metadata,
            assignment=self.assignment,
        )

    def vote(self, candidates: set[str]) -> str:
        """This member's preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


class ClassicGroup:
    """One group's metadata: durable part (generation, protocol, leader, members, assignments)
    and soft part (state, pending members, parked replies). Its committed offsets are kept by
    the offsets manager (`offsets.py`)."""

    kind: ClassVar[str] = "classic"

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.state_timestamp_ms: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group_instance_id → member_id
        self.pending_members: dict[str, None] = {}  # KIP-394 ids handed out, not yet joined
        self.pending_sync: set[str] = set()
        self.supported_protocols: dict[str, int] = {}
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.subscribed_topics: frozenset[str] | None = None
        # The initial delayed join (Kafka's InitialDelayedJoin) while one is armed: its
        # (delay_ms, remaining_ms). None while a plain join phase (DelayedJoin) runs.
        self.initial_join: tuple[int, int] | None = None
        # When the current join phase started (for events).
        self.join_started_ms = now_ms

    # -- membership -------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        for name, _ in member.protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member or pending member; a removed leader hands over to the first member."""
        member = self.members.pop(member_id, None)
        if member is not None:
            for name, _ in member.protocols:
                self.supported_protocols[name] -= 1
                if not self.supported_protocols[name]:
                    del self.supported_protocols[name]
            if member.join_reply is not None:
                self.num_awaiting_join -= 1
            instance_id = member.group_instance_id
            if instance_id is not None and self.static_members.get(instance_id) == member_id:
                del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        return member

    def update_protocols(self, member: Member, protocols: tuple[tuple[str, bytes], ...]) -> None:
        for name, _ in member.protocols:
            self.supported_protocols[name] -= 1
            if not self.supported_protocols[name]:
                del self.supported_protocols[name]
        member.protocols = protocols
        for name, _ in protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1

    def set_join_reply(self, member: Member, reply: Reply[JoinGroupResponse] | None) -> None:
        if member.join_reply is None and reply is not None:
            self.num_awaiting_join += 1
        elif member.join_reply is not None and reply is None:
            self.num_awaiting_join -= 1
        member.join_reply = reply

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_reply is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's `supportsProtocols`: an empty group takes any non-empty protocol list; a
        non-empty one needs the same protocol type and one protocol every member supports."""
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(n, 0) == size for n in names
        )

    def select_protocol(self) -> str:
        """The protocol vote. Each member votes for its most preferred protocol that every
        member supports; most votes win. Kafka breaks ties by hash-map order; here a tie goes to
        the protocol the longest-standing member (first in member order) prefers."""
        size = len(self.members)
        candidates = {n for n, count in self.supported_protocols.items() if count == size}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        first = next(iter(self.members.values()))
        for name in first.protocol_names():
            if votes.get(name) == best:
                return name
        raise AssertionError("protocol vote found no winner")  # pragma: no cover

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to, for a `consumer` group whose subscriptions all parse
        (Kafka's `computeSubscribedTopics`); None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(subscribed_topics(member.metadata(self.protocol_name)))
            except (ConsumerProtocolError, KeyError):
                return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's `isSubscribedToTopic`: while the subscriptions are unknown (None) every topic
        counts as subscribed, to be safe."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # -- views ------------------------------------------------------------------------------

    def summary(self) -> GroupSummary:
        return GroupSummary(
            group_id=self.group_id,
            kind=self.kind,
            state=self.state.value,
            generation_id=self.generation_id,
            protocol=self.protocol_name,
            member_count=len(self.members),
        )

    def view(self) -> GroupView:
        return GroupView(
            group_id=self.group_id,
            state=self.state,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            members={m.member_id: m.view(self.protocol_name) for m in self.members.values()},
            pending_member_ids=frozenset(self.pending_members),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    metadata: bytes  # the member's metadata for the group's selected protocol (b"" if none)
    assignment: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupView:
    """A read-only snapshot of one group."""

    group_id: str
    state: GroupState
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: Mapping[str, MemberView] = field(default_factory=dict)
    pending_member_ids: frozenset[str] = frozenset()
