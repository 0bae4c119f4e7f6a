"""OffsetCommit, OffsetFetch and OffsetDelete: a group's committed offsets.

A partition index no topic can have (a negative one) never reaches the engine, whose requests
refuse it: it is answered here as Kafka's broker answers it before its coordinator sees it.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine import (
    Errors,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.requests import FieldError
from coordinator_engine.responses import OffsetData, PartitionResult

from ..codec import Request
from .context import Context
from .responses import NO_THROTTLE, item_type, make, response_to, schema_of


def _topics(owner: type, rows: Any, partition: Callable[[Any], dict[str, Any]]) -> tuple[Any, ...]:
    """The engine's per-partition ``rows`` as ``owner``'s topics (each topic where its first row
    comes), a partition's fields being ``partition(row)``."""
    topic_type = item_type(owner, "topics")
    partition_type = item_type(topic_type, "partitions")
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_topic[row.topic].append(make(partition_type, **partition(row)))
    return tuple(
        make(topic_type, name=name, partitions=tuple(partitions))
        for name, partitions in by_topic.items()
    )


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
    return _topics(
        schema,
        results,
        lambda r: {"partition_index": r.partition, "error_code": ErrorCode(r.error_code)},
    )


async def offset_commit(context: Context, request: Request) -> Any:
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
    return _offset_commit_answer(schema_of(request), results)


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
    return make(schema, throttle_time=NO_THROTTLE, topics=_partition_results(schema, partitions))


async def offset_fetch(context: Context, request: Request) -> Any:
    """One group before v8; from v8 several, each answered on its own (Kafka's
    ``fetchOffsetsForGroups``); v9's member id and epoch go to the engine with the group."""
    body = request.body
    schema = schema_of(request)
    if request.api_version < 8:
        answer = await _fetch_offsets(context, body.group_id, body.topics, None, -1)
        return make(
            schema,
            throttle_time=NO_THROTTLE,
            topics=_fetched_offsets(schema, request.api_version, answer),
            error_code=ErrorCode(answer.error_code),
        )
    group_type = item_type(schema, "groups")
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
            make(
                group_type,
                group_id=group.group_id,
                topics=_fetched_offsets(group_type, request.api_version, answer),
                error_code=ErrorCode(answer.error_code),
            )
        )
    return make(schema, throttle_time=NO_THROTTLE, groups=tuple(groups))


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
    # Before v2 there is no top-level error: each partition carries it.
    error = answer.error_code if api_version < 2 else 0
    return _topics(
        owner,
        answer.partitions,
        lambda d: {
            "partition_index": d.partition,
            "committed_offset": d.offset,
            # -1: librdkafka then skips offset validation (kafka-wire.md).
            "committed_leader_epoch": -1,
            "metadata": d.metadata,
            "error_code": ErrorCode(d.error_code or error),
        },
    )


async def offset_delete(context: Context, request: Request) -> Any:
    """Kafka's ``handleOffsetDeleteRequest``: a principal that may not delete the group's
    offsets gets GROUP_AUTHORIZATION_FAILED for the whole request."""
    body = request.body
    if not context.may_administer():
        return response_to(
            request,
            throttle_time=NO_THROTTLE,
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
    schema = schema_of(request)
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        topics=_partition_results(schema, results),
    )
