"""Requests the coordinator handles: frozen keyword-only dataclasses, one per Kafka API.

Field names are the snake_case of Kafka's JSON schema fields (JoinGroupRequest.json, ...),
flattened where Kafka nests topics → partitions. Every request checks its fields' types and
ranges when it is built (`__post_init__`): a value outside its Kafka type (a negative partition,
a non-bytes metadata, a string longer than Kafka's int16 length prefix allows, an int outside
int32) raises `FieldTypeError` (a `TypeError`) or `FieldError` (a `ValueError`) naming the
field, before it can reach the engine; both carry the field's name and the problem apart, so
a decoder that knows where the field sits can name it by its path. A
request that is well-typed but that Kafka would refuse reaches `GroupCoordinator.handle`, which
answers Kafka's error code instead of raising.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: Kafka strings carry an int16 length prefix: at most 32767 bytes of UTF-8.
MAX_STRING_BYTES = 32767


class FieldError(ValueError):
    """A request field whose value its Kafka type cannot hold: ``field`` names it (within
    ``owner``, the request or struct class), ``problem`` says what is wrong with it."""

    def __init__(self, owner: str, field: str, problem: str) -> None:
        super().__init__(f"{owner}.{field} {problem}")
        self.field = field
        self.problem = problem


class FieldTypeError(TypeError):
    """A request field of the wrong Python type; ``field`` and ``problem`` as in FieldError."""

    def __init__(self, owner: str, field: str, problem: str) -> None:
        super().__init__(f"{owner}.{field} {problem}")
        self.field = field
        self.problem = problem


def _fail(owner: str, field: str, expected: str, value: Any) -> FieldTypeError:
    return FieldTypeError(
        owner, field, f"must be {expected}, got {type(value).__name__} {value!r:.80}"
    )


def _plain_str(value: Any) -> bool:
    """True for a str that certainly passes `check_str`: ASCII (a byte per character) and
    short enough. The requests' fast paths use it; anything else gets the full check."""
    return type(value) is str and len(value) <= MAX_STRING_BYTES and value.isascii()


def _plain_member(group_id: Any, member_id: Any, generation_id: Any, instance_id: Any) -> bool:
    """True when a request's member fields (group, member, generation, static instance id)
    certainly pass their full checks: the fast paths of the requests that carry them."""
    return (
        _plain_str(group_id)
        and _plain_str(member_id)
        and type(generation_id) is int
        and INT32_MIN <= generation_id <= INT32_MAX
        and (instance_id is None or _plain_str(instance_id))
    )


def check_str(owner: str, field: str, value: Any, *, nullable: bool = False) -> None:
    if type(value) is str and len(value) <= MAX_STRING_BYTES and value.isascii():
        return
    if value is None and nullable:
        return
    if type(value) is not str:
        raise _fail(owner, field, "a str or None" if nullable else "a str", value)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise FieldError(owner, field, f"is not valid Unicode text: {exc.reason}") from None
    if size > MAX_STRING_BYTES:
        raise FieldError(owner, field, f"is longer than {MAX_STRING_BYTES} bytes of UTF-8")


def check_int(owner: str, field: str, value: Any, lo: int = INT32_MIN, hi: int = INT32_MAX) -> None:
    if type(value) is not int:
        raise _fail(owner, field, "an int", value)
    if not lo <= value <= hi:
        raise FieldError(owner, field, f"must lie in {lo}..{hi}, got {value}")


def check_bytes(owner: str, field: str, value: Any) -> None:
    if type(value) is not bytes:
        raise _fail(owner, field, "bytes", value)
    if len(value) > INT32_MAX:
        raise FieldError(owner, field, "is longer than an int32 length allows")


def check_bool(owner: str, field: str, value: Any) -> None:
    if type(value) is not bool:
        raise _fail(owner, field, "a bool", value)


def check_tuple_of(owner: str, field: str, value: Any, item_type: type) -> None:
    if type(value) is not tuple:
        raise _fail(owner, field, f"a tuple of {item_type.__name__}", value)
    for item in value:
        if not isinstance(item, item_type):
            raise _fail(owner, field, f"a tuple of {item_type.__name__}", item)


def trusted_constructor(cls: Callable[..., _T]) -> Callable[..., _T]:
    """A constructor of the frozen slots dataclass ``cls`` that skips ``__post_init__``: the
    same keyword arguments and defaults as ``cls(...)``, and no checks.

    For code that builds requests from values that fit their Kafka types by construction (the
    consumer clients: their validated config, offsets they checked on the way in, ids and
    generations read from decoded answers, ints they computed), where the checks would run
    on every heartbeat and commit of every simulated member. Anything built from outside
    input uses the class itself. Generated as the dataclass's own ``__init__`` is: one slot
    store per field, nothing else.
    """
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params = []
    for f in fields:
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} has a default factory")
        else:
            params.append(f.name)
    stores = "".join(f"    _set_{f.name}(obj, {f.name})\n" for f in fields)
    exec(
        f"def build(*, {', '.join(params)}):\n    obj = _new(_cls)\n{stores}    return obj\n",
        namespace,
    )
    build: Callable[..., _T] = namespace["build"]
    return build


@dataclass(frozen=True, kw_only=True, slots=True)
class Protocol:
    """One assignment protocol a member supports: its name and opaque metadata (for the
    `consumer` protocol type, a ConsumerProtocolSubscription)."""

    name: str
    metadata: bytes = b""

    def __post_init__(self) -> None:
        check_str("Protocol", "name", self.name)
        check_bytes("Protocol", "metadata", self.metadata)


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupRequest:
    """JoinGroup: a member (re)joins its group.

    member_id: "" for a member joining for the first time (dynamic members then get
        MEMBER_ID_REQUIRED with their new id when `require_known_member_id`, KIP-394).
    group_instance_id: set for a static member (KIP-345).
    session_timeout_ms / rebalance_timeout_ms: liveness and join-phase bounds for this member.
    protocol_type / protocols: the member's protocol family and its protocols in preference order.
    reason: why the member joins (KIP-800), for the history only.
    """

    group_id: str
    member_id: str = ""
    group_instance_id: str | None = None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    require_known_member_id: bool = True
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None

    def __post_init__(self) -> None:
        # Fast path: fields that plainly pass every check below.
        instance_id = self.group_instance_id
        reason = self.reason
        session = self.session_timeout_ms
        rebalance = self.rebalance_timeout_ms
        protocols = self.protocols
        if (
            _plain_str(self.group_id)
            and _plain_str(self.member_id)
            and (instance_id is None or _plain_str(instance_id))
            and type(session) is int
            and INT32_MIN <= session <= INT32_MAX
            and type(rebalance) is int
            and INT32_MIN <= rebalance <= INT32_MAX
            and _plain_str(self.protocol_type)
            and type(protocols) is tuple
            and all(type(p) is Protocol for p in protocols)
            and type(self.require_known_member_id) is bool
            and _plain_str(self.client_id)
            and _plain_str(self.client_host)
            and (reason is None or _plain_str(reason))
        ):
            return
        o = "JoinGroupRequest"
        check_str(o, "group_id", self.group_id)
        check_str(o, "member_id", self.member_id)
        check_str(o, "group_instance_id", self.group_instance_id, nullable=True)
        check_int(o, "session_timeout_ms", self.session_timeout_ms)
        check_int(o, "rebalance_timeout_ms", self.rebalance_timeout_ms)
        check_str(o, "protocol_type", self.protocol_type)
        check_tuple_of(o, "protocols", self.protocols, Protocol)
        check_bool(o, "require_known_member_id", self.require_known_member_id)
        check_str(o, "client_id", self.client_id)
        check_str(o, "client_host", self.client_host)
        check_str(o, "reason", self.reason, nullable=True)


@dataclass(frozen=True, kw_only=True, slots=True)
class Assignment:
    """The leader's assignment for one member, opaque bytes (a ConsumerProtocolAssignment)."""

    member_id: str
    assignment: bytes

    def __post_init__(self) -> None:
        check_str("Assignment", "member_id", self.member_id)
        check_bytes("Assignment", "assignment", self.assignment)


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncGroupRequest:
    """SyncGroup: every member asks for its assignment; the leader brings them all."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[Assignment, ...] = ()

    def __post_init__(self) -> None:
        # Fast path: fields that plainly pass every check below.
        generation_id = self.generation_id
        instance_id = self.group_instance_id
        protocol_type = self.protocol_type
        protocol_name = self.protocol_name
        assignments = self.assignments
        if (
            _plain_member(self.group_id, self.member_id, generation_id, instance_id)
            and (protocol_type is None or _plain_str(protocol_type))
            and (protocol_name is None or _plain_str(protocol_name))
            and type(assignments) is tuple
            and all(type(a) is Assignment for a in assignments)
        ):
            return
        o = "SyncGroupRequest"
        check_str(o, "group_id", self.group_id)
        check_int(o, "generation_id", self.generation_id)
        check_str(o, "member_id", self.member_id)
        check_str(o, "group_instance_id", self.group_instance_id, nullable=True)
        check_str(o, "protocol_type", self.protocol_type, nullable=True)
        check_str(o, "protocol_name", self.protocol_name, nullable=True)
        check_tuple_of(o, "assignments", self.assignments, Assignment)


@dataclass(frozen=True, kw_only=True, slots=True)
class HeartbeatRequest:
    """Heartbeat: a member says it is alive in `generation_id`."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        # Fast path: fields that plainly pass every check below (heartbeats are most requests).
        generation_id = self.generation_id
        instance_id = self.group_instance_id
        if _plain_member(self.group_id, self.member_id, generation_id, instance_id):
            return
        o = "HeartbeatRequest"
        check_str(o, "group_id", self.group_id)
        check_int(o, "generation_id", self.generation_id)
        check_str(o, "member_id", self.member_id)
        check_str(o, "group_instance_id", self.group_instance_id, nullable=True)


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberIdentity:
    """A member leaving: by member id, or by instance id alone (an admin removal, KIP-345)."""

    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        check_str("MemberIdentity", "member_id", self.member_id)
        check_str("MemberIdentity", "group_instance_id", self.group_instance_id, nullable=True)
        check_str("MemberIdentity", "reason", self.reason, nullable=True)


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupRequest:
    """LeaveGroup: one or more members leave (batch since v3)."""

    group_id: str
    members: tuple[MemberIdentity, ...]

    def __post_init__(self) -> None:
        check_str("LeaveGroupRequest", "group_id", self.group_id)
        check_tuple_of("LeaveGroupRequest", "members", self.members, MemberIdentity)


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __post_init__(self) -> None:
        check_str("TopicPartition", "topic", self.topic)
        check_int("TopicPartition", "partition", self.partition, 0)


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionOffset:
    """One committed position. `expire_timestamp_ms` ≥ 0 asks for an explicit expiry (the
    retention time of OffsetCommit v2–v4, kept by KIP-211 for old clients); −1 = broker
    retention."""

    topic: str
    partition: int
    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
    expire_timestamp_ms: int = -1

    def __post_init__(self) -> None:
        # Fast path: fields that plainly pass every check below (a commit carries many).
        topic = self.topic
        partition = self.partition
        offset = self.offset
        metadata = self.metadata
        leader_epoch = self.leader_epoch
        expire = self.expire_timestamp_ms
        if (
            type(topic) is str
            and len(topic) <= MAX_STRING_BYTES
            and topic.isascii()
            and type(partition) is int
            and 0 <= partition <= INT32_MAX
            and type(offset) is int
            and INT64_MIN <= offset <= INT64_MAX
            and (
                metadata is None
                or (type(metadata) is str and (not metadata or _plain_str(metadata)))
            )
            and type(leader_epoch) is int
            and INT32_MIN <= leader_epoch <= INT32_MAX
            and type(expire) is int
            and INT64_MIN <= expire <= INT64_MAX
        ):
            return
        o = "PartitionOffset"
        check_str(o, "topic", self.topic)
        check_int(o, "partition", self.partition, 0)
        check_int(o, "offset", self.offset, INT64_MIN, INT64_MAX)
        check_str(o, "metadata", self.metadata, nullable=True)
        check_int(o, "leader_epoch", self.leader_epoch)
        check_int(o, "expire_timestamp_ms", self.expire_timestamp_ms, INT64_MIN, INT64_MAX)


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitRequest:
    """OffsetCommit. A simple consumer (no group management) sends generation −1 and no member.
    `generation_id` is a consumer group member's epoch (OffsetCommit v9, KIP-848).
    `api_version`: the OffsetCommit version it came by over Kafka's wire (None: another
    transport); a consumer group's member must commit with 9 or later, as Kafka requires."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    offsets: tuple[PartitionOffset, ...]
    api_version: int | None = None

    def __post_init__(self) -> None:
        # Fast path: fields that plainly pass every check below.
        generation_id = self.generation_id
        instance_id = self.group_instance_id
        offsets = self.offsets
        if (
            _plain_member(self.group_id, self.member_id, generation_id, instance_id)
            and type(offsets) is tuple
            and (self.api_version is None or type(self.api_version) is int)
        ):
            for item in offsets:
                if type(item) is not PartitionOffset:
                    break
            else:
                return
        o = "OffsetCommitRequest"
        check_str(o, "group_id", self.group_id)
        check_int(o, "generation_id", self.generation_id)
        check_str(o, "member_id", self.member_id)
        check_str(o, "group_instance_id", self.group_instance_id, nullable=True)
        check_tuple_of(o, "offsets", self.offsets, PartitionOffset)
        if self.api_version is not None:
            check_int(o, "api_version", self.api_version, 0, 32767)


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchRequest:
    """OffsetFetch: the given partitions, or every committed one when `partitions` is None.

    member_id / member_epoch (v9, KIP-848): a consumer group's member fetching in its epoch
    (STALE_MEMBER_EPOCH on a mismatch, UNKNOWN_MEMBER_ID for an unknown member); None and -1
    (the default, and what librdkafka sends) fetch as any client."""

    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None
    member_id: str | None = None
    member_epoch: int = -1

    def __post_init__(self) -> None:
        check_str("OffsetFetchRequest", "group_id", self.group_id)
        if self.partitions is not None:
            check_tuple_of("OffsetFetchRequest", "partitions", self.partitions, TopicPartition)
        check_str("OffsetFetchRequest", "member_id", self.member_id, nullable=True)
        check_int("OffsetFetchRequest", "member_epoch", self.member_epoch)


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteRequest:
    """OffsetDelete (KIP-496): remove committed offsets of partitions the group no longer uses."""

    group_id: str
    partitions: tuple[TopicPartition, ...]

    def __post_init__(self) -> None:
        check_str("OffsetDeleteRequest", "group_id", self.group_id)
        check_tuple_of("OffsetDeleteRequest", "partitions", self.partitions, TopicPartition)


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        check_tuple_of("DescribeGroupsRequest", "group_ids", self.group_ids, str)


@dataclass(frozen=True, kw_only=True, slots=True)
class ListGroupsRequest:
    """ListGroups; `states_filter` keeps groups in those states (KIP-518), `types_filter`
    groups of those types (v5, KIP-848: "classic", "consumer", "handoff"); both compared
    case-insensitively, empty = all."""

    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_tuple_of("ListGroupsRequest", "states_filter", self.states_filter, str)
        check_tuple_of("ListGroupsRequest", "types_filter", self.types_filter, str)


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        check_tuple_of("DeleteGroupsRequest", "group_ids", self.group_ids, str)


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffHeartbeatRequest:
    """HandoffHeartbeat: a member of a handoff group reports and asks what to do,
    modelled on KIP-848's ConsumerGroupHeartbeat. See docs/engine.md, "Handoff groups".

    member_id: chosen by the member, never empty (KIP-1082).
    member_epoch: 0 joins (a known member sending 0 has restarted and holds nothing), -1
        leaves, anything else is an ordinary heartbeat.
    session_timeout_ms: the member's session; each heartbeat re-arms it.
    topics: the topics it subscribes to.
    closed: partitions it stopped consuming, its offsets committed (answers a `close`).
    started: partitions it started consuming (answers a `start`).
    """

    group_id: str
    member_id: str
    member_epoch: int
    session_timeout_ms: int
    topics: tuple[str, ...] = ()
    closed: tuple[TopicPartition, ...] = ()
    started: tuple[TopicPartition, ...] = ()
    client_id: str = ""
    client_host: str = ""

    def __post_init__(self) -> None:
        o = "HandoffHeartbeatRequest"
        check_str(o, "group_id", self.group_id)
        check_str(o, "member_id", self.member_id)
        check_int(o, "member_epoch", self.member_epoch)
        check_int(o, "session_timeout_ms", self.session_timeout_ms)
        check_tuple_of(o, "topics", self.topics, str)
        for topic in self.topics:
            check_str(o, "topics", topic)
        check_tuple_of(o, "closed", self.closed, TopicPartition)
        check_tuple_of(o, "started", self.started, TopicPartition)
        check_str(o, "client_id", self.client_id)
        check_str(o, "client_host", self.client_host)


@dataclass(frozen=True, kw_only=True, slots=True)
class OwnedTopicPartitions:
    """The partitions of one topic a consumer-group member reports it owns (the wire's
    TopicId is mapped to the topic's name before the engine sees it)."""

    topic: str
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        check_str("OwnedTopicPartitions", "topic", self.topic)
        check_tuple_of("OwnedTopicPartitions", "partitions", self.partitions, int)
        for partition in self.partitions:
            check_int("OwnedTopicPartitions", "partitions", partition, 0)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat (KIP-848, API key 68, v0-v1): a consumer group's member joins,
    heartbeats, reports what it owns, or leaves. See docs/engine.md, "Consumer groups".

    member_id: chosen by the member (KIP-1082), never empty here.
    member_epoch: 0 joins (or rejoins), -1 leaves, -2 a static member leaves for a while,
        otherwise the epoch of the member's last answer.
    instance_id: the static member's instance id (None: dynamic).
    rack_id: the member's rack (None: unchanged).
    rebalance_timeout_ms: -1 unchanged; required on a join.
    subscribed_topic_names: None unchanged.
    subscribed_topic_regex: None unchanged, "" no regular expression (librdkafka's join).
    server_assignor: None unchanged (the group then uses the default).
    topic_partitions: what the member owns; None unchanged (still owns what it owned).
    client_id / client_host: from the request's header and connection.
    """

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[OwnedTopicPartitions, ...] | None = None
    client_id: str = ""
    client_host: str = ""

    def __post_init__(self) -> None:
        o = "ConsumerGroupHeartbeatRequest"
        check_str(o, "group_id", self.group_id)
        check_str(o, "member_id", self.member_id)
        check_int(o, "member_epoch", self.member_epoch)
        check_str(o, "instance_id", self.instance_id, nullable=True)
        check_str(o, "rack_id", self.rack_id, nullable=True)
        check_int(o, "rebalance_timeout_ms", self.rebalance_timeout_ms)
        if self.subscribed_topic_names is not None:
            check_tuple_of(o, "subscribed_topic_names", self.subscribed_topic_names, str)
            for topic in self.subscribed_topic_names:
                check_str(o, "subscribed_topic_names", topic)
        check_str(o, "subscribed_topic_regex", self.subscribed_topic_regex, nullable=True)
        check_str(o, "server_assignor", self.server_assignor, nullable=True)
        if self.topic_partitions is not None:
            check_tuple_of(o, "topic_partitions", self.topic_partitions, OwnedTopicPartitions)
        check_str(o, "client_id", self.client_id)
        check_str(o, "client_host", self.client_host)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerGroupDescribeRequest:
    """ConsumerGroupDescribe (KIP-848, API key 69)."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False

    def __post_init__(self) -> None:
        check_tuple_of("ConsumerGroupDescribeRequest", "group_ids", self.group_ids, str)
        check_bool(
            "ConsumerGroupDescribeRequest",
            "include_authorized_operations",
            self.include_authorized_operations,
        )


Request = (
    JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | OffsetDeleteRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
    | DeleteGroupsRequest
    | HandoffHeartbeatRequest
    | ConsumerGroupHeartbeatRequest
    | ConsumerGroupDescribeRequest
)
