"""The Kafka APIs the listener serves: each decoded request (kio's body, any supported version)
becomes the engine's request, goes to the runtime, and its answer becomes kio's response of the
same version.

The version ranges (``SUPPORTED``) start as low as kio has schemas and reach as far as
librdkafka 2.16, kafka-python 3.x and aiokafka 0.14 ask (docs/kafka.md), capped where a later
version would need what this broker does not have yet: FindCoordinator at 3 (v4 batches keys),
OffsetFetch at 9 (v10 names topics by id). A response is built from the fields its version has
(``_make`` drops the others), so one handler serves every version; what a version lacks on the
request side has Kafka's meaning (JoinGroup v0 has no rebalance timeout: the session timeout is
used, as Kafka's broker does).

Topic ids (KIP-516): every topic of the registry has one (``TopicSpec.topic_id``). Metadata
answers them from v10 and looks topics up by them from v12 (an unknown id: UNKNOWN_TOPIC_ID);
Fetch names its topics by id alone from v13. Metadata is advertised 0–13 in one range, never
capped at 10 or 11: librdkafka aborts on an assertion when it holds topic ids and the broker's
highest Metadata version is below 12.

Kafka semantics that live here rather than in the engine: JoinGroup v4 and later ask a new
dynamic member to rejoin with the id it is given (MEMBER_ID_REQUIRED, KIP-394); before v7,
JoinGroup's ``protocol_name`` is not nullable, so an error reply carries ``""``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import time
import typing
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from functools import cache, lru_cache
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine import (
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Errors,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OwnedTopicPartitions,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.client import new_member_id
from coordinator_engine.cluster import FindCoordinatorRequest, MetadataRequest
from coordinator_engine.requests import FieldError
from coordinator_engine.responses import OffsetData, PartitionResult, TopicAssignment
from webapp.runtime.api import RuntimeAPI
from webapp.runtime.cluster import NODE_ID
from webapp.runtime.topics import TopicRegistry, TopicSpec

from .codec import Request, encode_response_as, response_schema
from .mechanisms import Principal
from .records import MAX_RECORDS_PER_BATCH, RECORD_BYTES_ESTIMATE, produced_at_ms, simulated_batch
from .store import BadBatch, RecordStore, split_batches

__all__ = ["API_VERSIONS", "CLUSTER_ID", "SUPPORTED", "SUSPENDS", "Context", "handle"]

API_VERSIONS = 18
METADATA = 3
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
LIST_OFFSETS = 2
FETCH = 1
PRODUCE = 0
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

#: ListOffsets' timestamps that ask for the first and the next offset.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1

#: api_key → (lowest, highest) version served.
SUPPORTED: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 3),
    # Topic ids from v10, lookups by id from v12 (KIP-516), a top-level error code in v13.
    METADATA: (0, 13),
    FIND_COORDINATOR: (0, 3),
    JOIN_GROUP: (0, 7),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 4),
    # OffsetCommit v0–1 and OffsetFetch v0 are gone from Kafka 4 (KIP-896) and from kio's
    # schemas. OffsetCommit v9 is v8 for the consumer protocol's members (KIP-848); OffsetFetch
    # v8 batches groups, v9 adds the member id and epoch.
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 9),
    LIST_OFFSETS: (1, 7),
    # RecordBatch v2 (magic 2) came with Fetch v4; older versions would need down-conversion.
    # Topics by id from v13; librdkafka 2.16 asks up to v16.
    FETCH: (4, 16),
    # librdkafka sends no Fetch unless Produce >= 3 is advertised (kafka-wire.md).
    PRODUCE: (3, 9),
    DESCRIBE_GROUPS: (0, 5),
    # v5: the group type and its filter (KIP-848).
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 2),
    OFFSET_DELETE: (0, 0),
    # KIP-848's consumer protocol; librdkafka 2.16 joins only when v1 is advertised.
    CONSUMER_GROUP_HEARTBEAT: (0, 1),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    # Always listed, as Kafka lists them on every listener; served before authentication by
    # ``authenticator`` when KAFKA_SASL is required, and refused (ILLEGAL_SASL_STATE) here.
    SASL_HANDSHAKE: (0, 1),
    SASL_AUTHENTICATE: (0, 2),
}

#: APIs whose answer may wait (a JoinGroup parked until the rebalance completes, a SyncGroup
#: until the leader's, a long-poll Fetch): answers ready before one are sent first.
MAY_WAIT = frozenset({JOIN_GROUP, SYNC_GROUP, FETCH})

#: APIs whose handler may suspend (await something not ready yet): those that may wait, and
#: Produce, which keeps its partitions' new log-end offsets in Django's database before it
#: answers (``CoordinatorRuntime.append_records``). Every other handler answers without
#: suspending, so the listener handles runs of them inside a group commit
#: (``listener.KafkaListener._answer_run``); a handler that changes this must be listed here.
SUSPENDS = MAY_WAIT | {PRODUCE}

#: APIs whose answers come back the same again and again (a Heartbeat's, an OffsetCommit's of
#: the same partitions), so the codec remembers their encoding.
REPEATED_ANSWERS = frozenset({HEARTBEAT, OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT})

CLUSTER_ID = "rebalance-lab"
#: How often a waiting Fetch looks again for records (a simulated log grows with time).
FETCH_POLL_S = 0.05
_NO_THROTTLE = datetime.timedelta(0)


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


# -- building kio responses -------------------------------------------------------------------


@cache
def _fields(cls: type) -> dict[str, Any]:
    return {field.name: field.type for field in dataclasses.fields(cls)}


@cache
def _item_type(cls: type, name: str) -> type:
    """The entity type of the items of ``cls``'s tuple field ``name``."""
    field_type = _fields(cls)[name]
    for candidate in (field_type, *typing.get_args(field_type)):
        for argument in typing.get_args(candidate) or (candidate,):
            if dataclasses.is_dataclass(argument):
                return typing.cast(type, argument)
    raise TypeError(f"{cls.__name__}.{name} holds no entities")


def _make(cls: type, **values: Any) -> Any:
    """``cls`` from those ``values`` its version has (the others are not in this version)."""
    known = _fields(cls)
    return cls(**{name: value for name, value in values.items() if name in known})


def _response_schema(request: Request) -> type:
    """kio's response class for ``request``'s API and version."""
    return response_schema(request.api_key, request.api_version)


def _response(request: Request, **values: Any) -> Any:
    return _make(_response_schema(request), **values)


def answer(request: Request, **values: Any) -> Any:
    """kio's response to ``request`` (its API and version) from those ``values`` its version
    has."""
    return _response(request, **values)


def unsupported_api_versions(correlation_id: int) -> bytes:
    """ApiVersions v0 with UNSUPPORTED_VERSION and the ranges served (KIP-511)."""
    from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse
    from kio.static.primitive import i16

    body = ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersion(
                api_key=typing.cast(i16, key),
                min_version=typing.cast(i16, low),
                max_version=typing.cast(i16, high),
            )
            for key, (low, high) in sorted(SUPPORTED.items())
        ),
    )
    return encode_response_as(API_VERSIONS, 0, correlation_id, body)


def _ms(value: datetime.timedelta | int) -> int:
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


# -- cluster ---------------------------------------------------------------------------------


async def _api_versions(context: Context, request: Request) -> Any:
    schema = _response_schema(request)
    api_version = _item_type(schema, "api_keys")
    keys = tuple(
        _make(api_version, api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(SUPPORTED.items())
    )
    return _make(schema, error_code=ErrorCode.none, api_keys=keys, throttle_time=_NO_THROTTLE)


#: Metadata's and DescribeGroups' "authorized operations" when they were not asked for
#: (Kafka's INT32_MIN).
_NO_OPERATIONS = -(2**31)


async def _metadata(context: Context, request: Request) -> Any:
    """Kafka's ``handleTopicMetadataRequest``: every topic, the topics named, or (v12+) the
    topics of the ids given, by id alone when any id is given (names beside them are
    ignored, as Kafka ignores them); an unknown id is UNKNOWN_TOPIC_ID with a null name. A
    v10 or v11 request that gives an id or no name is refused as Kafka refuses it: each topic
    of it answers INVALID_REQUEST, and so does a request by name whose topic has no name."""
    version = request.api_version
    asked = request.body.topics
    schema = _response_schema(request)
    topic_type = _item_type(schema, "topics")
    registry = context.runtime.topics
    unknown_ids: list[uuid.UUID] = []
    # v0 asks for every topic with an empty list; later versions with null.
    everything = asked is None or (version == 0 and not asked)
    # The ids given (none before v10); kio reads Kafka's zero id, "no id", as None.
    given = () if everything else (getattr(t, "topic_id", None) for t in asked)
    ids = [topic_id for topic_id in given if topic_id is not None]
    if everything:
        names: tuple[str, ...] | None = None
    elif (version < 12 and ids) or (not ids and any(t.name is None for t in asked)):
        topics = tuple(
            _make(
                topic_type,
                error_code=ErrorCode.invalid_request,
                name=t.name or "",
                topic_id=getattr(t, "topic_id", None),
                is_internal=False,
                partitions=(),
                topic_authorized_operations=_NO_OPERATIONS,
            )
            for t in asked
        )
        return _metadata_answer(context, schema, topics)
    elif ids:
        known: list[str] = []
        for topic_id in dict.fromkeys(ids):
            spec = registry.get_by_id(topic_id)
            if spec is None:
                unknown_ids.append(topic_id)
            else:
                known.append(spec.name)
        names = tuple(known)
    else:
        names = tuple(t.name for t in asked)
    answer = context.runtime.metadata(MetadataRequest(topics=names))
    partition_type = _item_type(topic_type, "partitions")
    topics = tuple(
        _make(
            topic_type,
            error_code=ErrorCode.unknown_topic_id,
            name=None,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_NO_OPERATIONS,
        )
        for topic_id in unknown_ids
    ) + tuple(
        _make(
            topic_type,
            error_code=ErrorCode(topic.error_code),
            name=topic.name,
            # Zero (null here) for a topic that does not exist, as in Kafka.
            topic_id=_topic_id(registry, topic.name),
            is_internal=False,
            topic_authorized_operations=_NO_OPERATIONS,
            partitions=tuple(
                _make(
                    partition_type,
                    error_code=ErrorCode.none,
                    partition_index=index,
                    leader_id=NODE_ID,
                    leader_epoch=0,
                    replica_nodes=(NODE_ID,),
                    isr_nodes=(NODE_ID,),
                    offline_replicas=(),
                )
                for index in range(topic.partitions)
            ),
        )
        for topic in answer.topics
    )
    return _metadata_answer(context, schema, topics)


def _topic_id(registry: TopicRegistry, name: str) -> uuid.UUID | None:
    spec = registry.get(name)
    return None if spec is None else spec.topic_id


def _metadata_answer(context: Context, schema: type, topics: tuple[Any, ...]) -> Any:
    broker_type = _item_type(schema, "brokers")
    broker = _make(broker_type, node_id=NODE_ID, host=context.host, port=context.port, rack=None)
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        brokers=(broker,),
        cluster_id=CLUSTER_ID,
        controller_id=NODE_ID,
        topics=topics,
        cluster_authorized_operations=_NO_OPERATIONS,
        error_code=ErrorCode.none,
    )


async def _find_coordinator(context: Context, request: Request) -> Any:
    body = request.body
    answer = context.runtime.find_coordinator(
        FindCoordinatorRequest(key=body.key, key_type=getattr(body, "key_type", 0))
    )
    found = answer.error_code == 0
    return _response(
        request,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        error_message=None,
        node_id=NODE_ID if found else -1,
        host=context.host if found else "",
        port=context.port if found else -1,
    )


# -- groups ----------------------------------------------------------------------------------


async def _join_group(context: Context, request: Request) -> Any:
    body = request.body
    session_timeout_ms = _ms(body.session_timeout)
    rebalance = getattr(body, "rebalance_timeout", None)
    answer = await context.runtime.submit(
        JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=session_timeout_ms if rebalance is None else _ms(rebalance),
            protocol_type=body.protocol_type,
            protocols=tuple(Protocol(name=p.name, metadata=p.metadata) for p in body.protocols),
            require_known_member_id=request.api_version >= 4,
            client_id=request.client_id or "",
            client_host=context.client_host,
        ),
        via="kafka",
    )
    schema = _response_schema(request)
    member_type = _item_type(schema, "members")
    nullable_name = request.api_version >= 7
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        generation_id=answer.generation_id,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name if nullable_name else (answer.protocol_name or ""),
        leader=answer.leader,
        skip_assignment=answer.skip_assignment,
        member_id=answer.member_id,
        members=tuple(
            _make(
                member_type,
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=member.metadata,
            )
            for member in answer.members
        ),
    )


def _member(body: Any) -> dict[str, Any]:
    """The group, generation and member a SyncGroup or Heartbeat speaks for (a static member's
    instance id from v3 on)."""
    return {
        "group_id": body.group_id,
        "generation_id": body.generation_id,
        "member_id": body.member_id,
        "group_instance_id": getattr(body, "group_instance_id", None),
    }


async def _sync_group(context: Context, request: Request) -> Any:
    body = request.body
    answer = await context.runtime.submit(
        SyncGroupRequest(
            **_member(body),
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple(
                Assignment(member_id=a.member_id, assignment=a.assignment) for a in body.assignments
            ),
        )
    )
    return _response(
        request,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name,
        assignment=answer.assignment,
    )


async def _heartbeat(context: Context, request: Request) -> Any:
    body = request.body
    answer = await context.runtime.submit(HeartbeatRequest(**_member(body)))
    return _response(request, throttle_time=_NO_THROTTLE, error_code=ErrorCode(answer.error_code))


async def _leave_group(context: Context, request: Request) -> Any:
    body = request.body
    if request.api_version < 3:
        members: tuple[MemberIdentity, ...] = (MemberIdentity(member_id=body.member_id),)
    else:
        members = tuple(
            MemberIdentity(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=getattr(m, "reason", None),
            )
            for m in body.members
        )
    answer = await context.runtime.submit(
        LeaveGroupRequest(group_id=body.group_id, members=members)
    )
    schema = _response_schema(request)
    error = answer.error_code
    if request.api_version < 3 and error == 0 and answer.members:
        # One member per request before v3: its own result is the answer.
        error = answer.members[0].error_code
    results = ()
    if request.api_version >= 3:
        result_type = _item_type(schema, "members")
        results = tuple(
            _make(
                result_type,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=ErrorCode(m.error_code),
            )
            for m in answer.members
        )
    return _make(schema, throttle_time=_NO_THROTTLE, error_code=ErrorCode(error), members=results)


# -- offsets ---------------------------------------------------------------------------------


def _by_topic(rows: Any) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        grouped[row.topic].append(row)
    return grouped


#: A partition index a topic cannot have. Kafka's broker answers a commit or an offset delete
#: of a partition its metadata does not hold with UNKNOWN_TOPIC_OR_PARTITION before its
#: coordinator sees it (``KafkaApis.handleOffsetCommitRequest`` / ``handleOffsetDeleteRequest``),
#: and a fetch of one with no offset (-1); the engine's requests refuse such an index outright.
def _no_such_partition(index: int) -> bool:
    return index < 0


def _asked(topics: Any) -> list[tuple[str, int]]:
    """(topic, partition index) of each partition of a request's ``topics``, in order."""
    return [(topic.name, p.partition_index) for topic in topics for p in topic.partitions]


def _in_request_order(
    wanted: Sequence[tuple[str, int]], answered: Sequence[Any], missing: Callable[[str, int], Any]
) -> tuple[Any, ...]:
    """The engine's ``answered`` rows (one per partition of ``wanted`` it was asked about, in
    order) with ``missing(topic, index)`` in the place of each partition it was not asked
    about (``_no_such_partition``)."""
    rows = iter(answered)
    return tuple(
        missing(topic, index) if _no_such_partition(index) else next(rows)
        for topic, index in wanted
    )


def _unknown_partition(topic: str, index: int) -> PartitionResult:
    return PartitionResult(
        topic=topic, partition=index, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION
    )


def _no_offset(topic: str, index: int) -> OffsetData:
    return OffsetData(
        topic=topic, partition=index, offset=-1, metadata="", leader_epoch=-1, error_code=0
    )


def _partition_results(schema: type, results: Any) -> tuple[Any, ...]:
    """The engine's per-partition error codes as ``schema``'s topics (OffsetCommit's and
    OffsetDelete's answers)."""
    topic_type = _item_type(schema, "topics")
    partition_type = _item_type(topic_type, "partitions")
    return tuple(
        _make(
            topic_type,
            name=name,
            partitions=tuple(
                _make(
                    partition_type,
                    partition_index=r.partition,
                    error_code=ErrorCode(r.error_code),
                )
                for r in rows
            ),
        )
        for name, rows in _by_topic(results).items()
    )


async def _offset_commit(context: Context, request: Request) -> Any:
    """v9 is v8 for the consumer protocol's members (KIP-848): its
    ``generation_id_or_member_epoch`` is a classic member's generation or a consumer member's
    epoch, and goes to the engine as ``generation_id`` either way; the group's kind reads it
    (``validate_offset_commit``: a classic group fences generations, as today)."""
    body = request.body
    generation: int | None = getattr(body, "generation_id_or_member_epoch", None)
    if generation is None:
        generation = getattr(body, "generation_id", -1)
    asked: list[tuple[str, int]] | None = None
    try:
        offsets = _commit_offsets(body.topics)
    except FieldError:
        # The engine refuses a partition index no topic has; Kafka answers it (below).
        asked = _asked(body.topics)
        if not any(_no_such_partition(index) for _, index in asked):
            raise
        offsets = _commit_offsets(body.topics, known_only=True)
    results: tuple[PartitionResult, ...] = ()
    if asked is None or offsets:  # partitions no topic has only: answered without the engine
        answer = await context.runtime.submit(
            OffsetCommitRequest(
                group_id=body.group_id,
                generation_id=generation,
                member_id=getattr(body, "member_id", ""),
                group_instance_id=getattr(body, "group_instance_id", None),
                offsets=offsets,
                api_version=request.api_version,
            )
        )
        results = answer.partitions
    if asked is not None:
        results = _in_request_order(asked, results, _unknown_partition)
    return _offset_commit_answer(_response_schema(request), results)


def _commit_offsets(topics: Any, *, known_only: bool = False) -> tuple[PartitionOffset, ...]:
    """The engine's offsets of an OffsetCommit's ``topics``; ``known_only``: without the
    partitions no topic has (``_no_such_partition``), which the engine refuses."""
    return tuple(
        PartitionOffset(
            topic=topic.name,
            partition=p.partition_index,
            offset=p.committed_offset,
            metadata=p.committed_metadata,
            leader_epoch=getattr(p, "committed_leader_epoch", -1),
        )
        for topic in topics
        for p in topic.partitions
        if not (known_only and _no_such_partition(p.partition_index))
    )


@lru_cache(maxsize=4096)
def _offset_commit_answer(schema: type, partitions: tuple[Any, ...]) -> Any:
    """kio's OffsetCommit answer of ``schema``'s version: built once per set of partitions
    and codes (most commits of a consumer get the same answer, and kio's entities are
    immutable), as the codec encodes it once (``REPEATED_ANSWERS``)."""
    return _make(schema, throttle_time=_NO_THROTTLE, topics=_partition_results(schema, partitions))


async def _offset_fetch(context: Context, request: Request) -> Any:
    """One group before v8; from v8 several, each answered on its own (Kafka's
    ``fetchOffsetsForGroups``); v9's member id and epoch go to the engine with the group."""
    body = request.body
    schema = _response_schema(request)
    if request.api_version < 8:
        answer = await _fetch_offsets(context, body.group_id, body.topics, None, -1)
        return _make(
            schema,
            throttle_time=_NO_THROTTLE,
            topics=_fetched_offsets(schema, request.api_version, answer),
            error_code=ErrorCode(answer.error_code),
        )
    group_type = _item_type(schema, "groups")
    groups = []
    for group in body.groups:
        answer = await _fetch_offsets(
            context,
            group.group_id,
            group.topics,
            getattr(group, "member_id", None),
            getattr(group, "member_epoch", -1),
        )
        groups.append(
            _make(
                group_type,
                group_id=group.group_id,
                topics=_fetched_offsets(group_type, request.api_version, answer),
                error_code=ErrorCode(answer.error_code),
            )
        )
    return _make(schema, throttle_time=_NO_THROTTLE, groups=tuple(groups))


async def _fetch_offsets(
    context: Context, group_id: str, topics: Any, member_id: str | None, member_epoch: int
) -> Any:
    """The engine's OffsetFetch answer for one group (``topics`` None: every partition)."""
    wanted = (
        None
        if topics is None
        else [(topic.name, index) for topic in topics for index in topic.partition_indexes]
    )
    partitions = (
        None
        if wanted is None
        else tuple(
            TopicPartition(topic=topic, partition=index)
            for topic, index in wanted
            if not _no_such_partition(index)
        )
    )
    answer = await context.runtime.submit(
        OffsetFetchRequest(
            group_id=group_id,
            partitions=partitions,
            member_id=member_id,
            member_epoch=member_epoch,
        )
    )
    if wanted is None or partitions is None or len(partitions) == len(wanted) or answer.error_code:
        return answer
    return dataclasses.replace(
        answer, partitions=_in_request_order(wanted, answer.partitions, _no_offset)
    )


def _fetched_offsets(owner: type, api_version: int, answer: Any) -> tuple[Any, ...]:
    """The engine's OffsetFetch ``answer`` as the topics of ``owner`` (the response before v8,
    a group of it from v8)."""
    topic_type = _item_type(owner, "topics")
    partition_type = _item_type(topic_type, "partitions")
    error = answer.error_code
    return tuple(
        _make(
            topic_type,
            name=name,
            partitions=tuple(
                _make(
                    partition_type,
                    partition_index=d.partition,
                    committed_offset=d.offset,
                    # -1: librdkafka then skips offset validation (kafka-wire.md).
                    committed_leader_epoch=-1,
                    metadata=d.metadata,
                    # Before v2 there is no top-level error: each partition carries it.
                    error_code=ErrorCode(d.error_code or (error if api_version < 2 else 0)),
                )
                for d in data
            ),
        )
        for name, data in _by_topic(answer.partitions).items()
    )


# -- administration (AdminClient) -------------------------------------------------------------


async def _describe_groups(context: Context, request: Request) -> Any:
    answer = await context.runtime.submit(
        DescribeGroupsRequest(group_ids=tuple(request.body.groups))
    )
    schema = _response_schema(request)
    group_type = _item_type(schema, "groups")
    member_type = _item_type(group_type, "members")
    groups = tuple(
        _make(
            group_type,
            error_code=ErrorCode(group.error_code),
            group_id=group.group_id,
            group_state=group.group_state,
            protocol_type=group.protocol_type,
            protocol_data=group.protocol_data,
            members=tuple(
                _make(
                    member_type,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.member_metadata,
                    member_assignment=m.member_assignment,
                )
                for m in group.members
            ),
            authorized_operations=_NO_OPERATIONS,
        )
        for group in answer.groups
    )
    return _make(schema, throttle_time=_NO_THROTTLE, groups=groups)


async def _list_groups(context: Context, request: Request) -> Any:
    """v4's state filter (KIP-518), v5's type filter and each group's type (KIP-848): the
    engine's kind of the group, ``classic`` or ``handoff``."""
    states = tuple(getattr(request.body, "states_filter", ()))
    types = tuple(getattr(request.body, "types_filter", ()))
    answer = await context.runtime.submit(
        ListGroupsRequest(states_filter=states, types_filter=types)
    )
    schema = _response_schema(request)
    listed_type = _item_type(schema, "groups")
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        groups=tuple(
            _make(
                listed_type,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in answer.groups
        ),
    )


async def _delete_groups(context: Context, request: Request) -> Any:
    """Kafka's ``handleDeleteGroupsRequest``: a group the principal may not delete is
    GROUP_AUTHORIZATION_FAILED, each on its own; the others go to the coordinator."""
    schema = _response_schema(request)
    result_type = _item_type(schema, "results")
    names = tuple(request.body.groups_names)
    if context.may_administer():
        deleted = await context.runtime.submit(DeleteGroupsRequest(group_ids=names))
        results = [(r.group_id, ErrorCode(r.error_code)) for r in deleted.results]
    else:
        results = [(name, ErrorCode.group_authorization_failed) for name in dict.fromkeys(names)]
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        results=tuple(_make(result_type, group_id=name, error_code=code) for name, code in results),
    )


async def _offset_delete(context: Context, request: Request) -> Any:
    """Kafka's ``handleOffsetDeleteRequest``: a principal that may not delete the group's
    offsets gets GROUP_AUTHORIZATION_FAILED for the whole request."""
    body = request.body
    if not context.may_administer():
        return _response(
            request,
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.group_authorization_failed,
            topics=(),
        )
    wanted = _asked(body.topics)
    partitions = tuple(
        TopicPartition(topic=topic, partition=index)
        for topic, index in wanted
        if not _no_such_partition(index)
    )
    answer = await context.runtime.submit(
        OffsetDeleteRequest(group_id=body.group_id, partitions=partitions)
    )
    results = answer.partitions
    if len(partitions) < len(wanted) and not answer.error_code:
        results = _in_request_order(wanted, results, _unknown_partition)
    schema = _response_schema(request)
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        topics=_partition_results(schema, results),
    )


# -- records ---------------------------------------------------------------------------------


def _offset_for_timestamp(spec: TopicSpec, partition: int, timestamp: int, now_ms: int) -> int:
    """ListOffsets' answer: the first offset, the next one, or the first produced at or after
    ``timestamp`` (the next offset when none was)."""
    end = spec.log_end_offset(partition, now_ms)
    if timestamp == EARLIEST_TIMESTAMP:
        return 0
    if timestamp == LATEST_TIMESTAMP or timestamp >= now_ms:
        return end
    return min(end, spec.log_end_offset(partition, max(timestamp, 0) - 1) + 1)


async def _list_offsets(context: Context, request: Request) -> Any:
    now_ms = context.runtime.now_ms()
    schema = _response_schema(request)
    topic_type = _item_type(schema, "topics")
    partition_type = _item_type(topic_type, "partitions")

    def answer(name: str, partition: int, timestamp: int) -> Any:
        spec = context.runtime.topics.get(name)
        if spec is None or not 0 <= partition < spec.partitions:
            return _make(
                partition_type,
                partition_index=partition,
                error_code=ErrorCode.unknown_topic_or_partition,
                timestamp=-1,
                offset=-1,
                leader_epoch=-1,
            )
        offset = _offset_for_timestamp(spec, partition, timestamp, now_ms)
        return _make(
            partition_type,
            partition_index=partition,
            error_code=ErrorCode.none,
            timestamp=-1 if timestamp < 0 else produced_at_ms(spec, partition, offset),
            offset=offset,
            leader_epoch=0,
        )

    topics = tuple(
        _make(
            topic_type,
            name=topic.name,
            partitions=tuple(
                answer(topic.name, p.partition_index, p.timestamp) for p in topic.partitions
            ),
        )
        for topic in request.body.topics
    )
    return _make(schema, throttle_time=_NO_THROTTLE, topics=topics)


def _fetched(
    context: Context, spec: TopicSpec | None, partition: int, offset: int, max_bytes: int
) -> tuple[ErrorCode, int, bytes]:
    """(error, high watermark, records) of one partition from ``offset``: the batches producers
    sent when one holds ``offset``, else simulated records up to the next stored batch. No
    records are empty bytes, never null (clients take the length of what they get)."""
    if spec is None or not 0 <= partition < spec.partitions:
        return ErrorCode.unknown_topic_or_partition, -1, b""
    end = spec.log_end_offset(partition, context.runtime.now_ms())
    if not 0 <= offset <= end:
        return ErrorCode.offset_out_of_range, end, b""
    stored = context.store.read(spec.topic_id, partition, offset, max_bytes)
    if stored:
        return ErrorCode.none, end, b"".join(batch.data for batch in stored)
    upto = min(end, context.store.next_stored(spec.topic_id, partition, offset) or end)
    count = min(upto - offset, MAX_RECORDS_PER_BATCH, max(1, max_bytes // RECORD_BYTES_ESTIMATE))
    records = simulated_batch(spec, partition, offset, offset + count) if count > 0 else b""
    return ErrorCode.none, end, records


async def _fetch(context: Context, request: Request) -> Any:
    """Records from each partition asked for; with none to give, the fetch waits (long poll)
    until one of them has a record or ``max_wait`` has passed, as Kafka's purgatory does.
    From v13 topics are named by id alone: an id no topic has (never given, or a deleted
    topic's) is UNKNOWN_TOPIC_ID for each of its partitions, as in Kafka."""
    body = request.body
    deadline = time.monotonic() + _ms(body.max_wait) / 1000
    schema = _response_schema(request)
    topic_type = _item_type(schema, "responses")
    partition_type = _item_type(topic_type, "partitions")
    by_id = request.api_version >= 13
    registry = context.runtime.topics
    while True:
        total = 0
        topics = []
        for topic in body.topics:
            if by_id:
                # Looked up on every pass: a spec is replaced as its log grows.
                spec = None if topic.topic_id is None else registry.get_by_id(topic.topic_id)
            else:
                spec = registry.get(topic.topic)
            partitions = []
            for p in topic.partitions:
                if by_id and spec is None:
                    error, end, records = ErrorCode.unknown_topic_id, -1, b""
                else:
                    error, end, records = _fetched(
                        context, spec, p.partition, p.fetch_offset, p.partition_max_bytes
                    )
                total += len(records)
                partitions.append(
                    _make(
                        partition_type,
                        partition_index=p.partition,
                        error_code=error,
                        high_watermark=end,
                        # No transactions here: everything below the high watermark is stable.
                        last_stable_offset=end,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=records,
                    )
                )
            topics.append(
                _make(
                    topic_type,
                    topic=getattr(topic, "topic", None),
                    topic_id=getattr(topic, "topic_id", None),
                    partitions=tuple(partitions),
                )
            )
        remaining = deadline - time.monotonic()
        if total or remaining <= 0:
            break
        await asyncio.sleep(min(remaining, FETCH_POLL_S))
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=0,  # no fetch sessions (KIP-227): every fetch names its partitions
        responses=tuple(topics),
    )


async def _produce(context: Context, request: Request) -> Any:
    """Each partition's batches take offsets from its log-end offset on and are stored before
    the answer (``store``); acks=0 gets no answer, as in Kafka."""
    body = request.body
    schema = _response_schema(request)
    topic_type = _item_type(schema, "responses")
    partition_type = _item_type(topic_type, "partition_responses")
    if body.transactional_id is not None:
        error: ErrorCode | None = ErrorCode.transactional_id_authorization_failed
    else:
        error = None
    topics = []
    for topic in body.topic_data:
        partitions = []
        for data in topic.partition_data:
            code, base, message = await _append(
                context, topic.name, data.index, data.records, error
            )
            partitions.append(
                _make(
                    partition_type,
                    index=data.index,
                    error_code=code,
                    base_offset=base,
                    log_append_time=None,
                    log_start_offset=0,
                    record_errors=(),
                    error_message=message,
                )
            )
        topics.append(_make(topic_type, name=topic.name, partition_responses=tuple(partitions)))
    if body.acks == 0:
        return NO_RESPONSE
    return _make(schema, responses=tuple(topics), throttle_time=_NO_THROTTLE)


async def _append(
    context: Context, topic: str, partition: int, records: bytes | None, refused: ErrorCode | None
) -> tuple[ErrorCode, int, str | None]:
    """(error, base offset, message) of one partition's part of a Produce."""
    if refused is not None:
        return refused, -1, "transactions are not supported"
    spec = context.runtime.topics.get(topic)
    if spec is None or not 0 <= partition < spec.partitions:
        return ErrorCode.unknown_topic_or_partition, -1, None
    try:
        batches = split_batches(bytes(records or b""))
    except BadBatch as exc:
        return ErrorCode.corrupt_message, -1, str(exc)
    base = await context.runtime.append_records(
        topic, partition, sum(count for count, _ in batches)
    )
    context.store.append(spec.topic_id, partition, base, batches, context.runtime.now_ms())
    return ErrorCode.none, base, None


# -- consumer groups (KIP-848) ----------------------------------------------------------------


async def _consumer_group_heartbeat(context: Context, request: Request) -> Any:
    """KIP-848's ConsumerGroupHeartbeat: a join (epoch 0), a heartbeat, a leave (-1, or -2 for a
    static member). The wire names topics by id, the engine by name: owned partitions of an
    id the registry does not know (a deleted topic) are left out, as nothing of such a topic
    can be assigned; the assignment's topics go out with their ids. v0 lets the coordinator
    draw the id of a member joining without one, as Kafka's does (v1 members draw their own,
    KIP-1082). Never parked: the engine answers at once."""
    body = request.body
    registry = context.runtime.topics
    member_id = body.member_id
    if request.api_version == 0 and not member_id and body.member_epoch == 0:
        member_id = new_member_id()
    owned: tuple[OwnedTopicPartitions, ...] | None = None
    if body.topic_partitions is not None:
        named = (
            (registry.get_by_id(t.topic_id) if t.topic_id is not None else None, t.partitions)
            for t in body.topic_partitions
        )
        owned = tuple(
            OwnedTopicPartitions(topic=spec.name, partitions=tuple(partitions))
            for spec, partitions in named
            if spec is not None
        )
    names = body.subscribed_topic_names
    answer = await context.runtime.submit(
        ConsumerGroupHeartbeatRequest(
            group_id=body.group_id,
            member_id=member_id,
            member_epoch=body.member_epoch,
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=_ms(body.rebalance_timeout),
            subscribed_topic_names=None if names is None else tuple(names),
            subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
            server_assignor=body.server_assignor,
            topic_partitions=owned,
            client_id=request.client_id or "",
            client_host=context.client_host,
        ),
        via="kafka",
    )
    schema = _response_schema(request)
    assignment = None
    if answer.assignment is not None:
        assignment_type = _item_type(schema, "assignment")
        assignment = _make(
            assignment_type,
            topic_partitions=_topic_partitions(
                registry, _item_type(assignment_type, "topic_partitions"), answer.assignment
            ),
        )
    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=answer.heartbeat_interval_ms),
        assignment=assignment,
    )


def _topic_partitions(
    registry: TopicRegistry, item_type: type, assignment: TopicAssignment
) -> tuple[Any, ...]:
    """An assignment by topic name as the wire's topic-id lists (ConsumerGroupDescribe's carry
    the name too), in name order; a topic the registry no longer has is left out."""
    items = []
    for name in sorted(assignment):
        topic_id = _topic_id(registry, name)
        if topic_id is not None:
            items.append(
                _make(
                    item_type,
                    topic_id=topic_id,
                    topic_name=name,
                    partitions=tuple(sorted(assignment[name])),
                )
            )
    return tuple(items)


async def _consumer_group_describe(context: Context, request: Request) -> Any:
    """KIP-848's ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for a group that is not a consumer
    group (librdkafka's admin client then asks DescribeGroups, as it does of Kafka)."""
    body = request.body
    answer = await context.runtime.submit(
        ConsumerGroupDescribeRequest(
            group_ids=tuple(body.group_ids),
            include_authorized_operations=body.include_authorized_operations,
        )
    )
    registry = context.runtime.topics
    schema = _response_schema(request)
    group_type = _item_type(schema, "groups")
    member_type = _item_type(group_type, "members")
    assignment_type = _item_type(member_type, "assignment")
    partitions_type = _item_type(assignment_type, "topic_partitions")

    def assignment(topics: TopicAssignment) -> Any:
        return _make(
            assignment_type,
            topic_partitions=_topic_partitions(registry, partitions_type, topics),
        )

    return _make(
        schema,
        throttle_time=_NO_THROTTLE,
        groups=tuple(
            _make(
                group_type,
                error_code=ErrorCode(g.error_code),
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(
                    _make(
                        member_type,
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=m.member_type,
                    )
                    for m in g.members
                ),
                authorized_operations=_NO_OPERATIONS,
            )
            for g in answer.groups
        ),
    )


async def _sasl_handshake(context: Context, request: Request) -> Any:
    """A handshake on a connection that is authenticated, or on a listener without SASL:
    Kafka's ``handleSaslHandshakeRequest`` answers ILLEGAL_SASL_STATE (the listener's
    ``authenticator`` serves the handshake before authentication)."""
    return _response(request, error_code=ErrorCode.illegal_sasl_state, mechanisms=())


async def _sasl_authenticate(context: Context, request: Request) -> Any:
    """As Kafka's ``handleSaslAuthenticateRequest``: ILLEGAL_SASL_STATE, with its message."""
    return _response(
        request,
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(0),
    )


HANDLERS: dict[int, Handler] = {
    API_VERSIONS: _api_versions,
    METADATA: _metadata,
    FIND_COORDINATOR: _find_coordinator,
    JOIN_GROUP: _join_group,
    SYNC_GROUP: _sync_group,
    HEARTBEAT: _heartbeat,
    LEAVE_GROUP: _leave_group,
    OFFSET_COMMIT: _offset_commit,
    OFFSET_FETCH: _offset_fetch,
    LIST_OFFSETS: _list_offsets,
    FETCH: _fetch,
    PRODUCE: _produce,
    DESCRIBE_GROUPS: _describe_groups,
    LIST_GROUPS: _list_groups,
    DELETE_GROUPS: _delete_groups,
    OFFSET_DELETE: _offset_delete,
    CONSUMER_GROUP_HEARTBEAT: _consumer_group_heartbeat,
    CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
    SASL_HANDSHAKE: _sasl_handshake,
    SASL_AUTHENTICATE: _sasl_authenticate,
}


#: Kafka's name of each API served (``/metrics`` counts requests by it).
API_NAMES: dict[int, str] = {
    API_VERSIONS: "ApiVersions",
    METADATA: "Metadata",
    FIND_COORDINATOR: "FindCoordinator",
    JOIN_GROUP: "JoinGroup",
    SYNC_GROUP: "SyncGroup",
    HEARTBEAT: "Heartbeat",
    LEAVE_GROUP: "LeaveGroup",
    OFFSET_COMMIT: "OffsetCommit",
    OFFSET_FETCH: "OffsetFetch",
    LIST_OFFSETS: "ListOffsets",
    FETCH: "Fetch",
    PRODUCE: "Produce",
    DESCRIBE_GROUPS: "DescribeGroups",
    LIST_GROUPS: "ListGroups",
    DELETE_GROUPS: "DeleteGroups",
    OFFSET_DELETE: "OffsetDelete",
    CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat",
    CONSUMER_GROUP_DESCRIBE: "ConsumerGroupDescribe",
    SASL_HANDSHAKE: "SaslHandshake",
    SASL_AUTHENTICATE: "SaslAuthenticate",
}


async def handle(context: Context, request: Request) -> Any:
    """kio's response body to ``request``, counted (with its error codes) as a ``kafka``
    request of its API; a request whose handler failed is counted without codes."""
    body = None
    try:
        body = await HANDLERS[request.api_key](context, request)
        return body
    finally:
        context.runtime.metrics.count(API_NAMES[request.api_key], "kafka", body)
