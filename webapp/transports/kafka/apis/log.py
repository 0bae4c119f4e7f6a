"""ListOffsets, Fetch and Produce: the topics' logs (simulated records, and the batches
producers sent, kept by ``store``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kio.schema.errors import ErrorCode

from webapp.runtime.topics import TopicSpec

from ..codec import Request
from ..records import (
    MAX_RECORDS_PER_BATCH,
    RECORD_BYTES_ESTIMATE,
    produced_at_ms,
    simulated_batch,
)
from ..store import BadBatch, split_batches
from .context import NO_RESPONSE, Context
from .responses import NO_THROTTLE, item_type, make, milliseconds, schema_of

#: ListOffsets' timestamps that ask for the first and the next offset.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
#: How often a waiting Fetch looks again for records (a simulated log grows with time).
FETCH_POLL_S = 0.05


def _offset_for_timestamp(spec: TopicSpec, partition: int, timestamp: int, now_ms: int) -> int:
    """ListOffsets' answer: the first offset, the next one, or the first produced at or after
    ``timestamp`` (the next offset when none was)."""
    end = spec.log_end_offset(partition, now_ms)
    if timestamp == EARLIEST_TIMESTAMP:
        return 0
    if timestamp == LATEST_TIMESTAMP or timestamp >= now_ms:
        return end
    return min(end, spec.log_end_offset(partition, max(timestamp, 0) - 1) + 1)


async def list_offsets(context: Context, request: Request) -> Any:
    now_ms = context.runtime.now_ms()
    schema = schema_of(request)
    topic_type = item_type(schema, "topics")
    partition_type = item_type(topic_type, "partitions")

    def answer(name: str, partition: int, timestamp: int) -> Any:
        spec = context.runtime.topics.get(name)
        if spec is None or not 0 <= partition < spec.partitions:
            return make(
                partition_type,
                partition_index=partition,
                error_code=ErrorCode.unknown_topic_or_partition,
                timestamp=-1,
                offset=-1,
                leader_epoch=-1,
            )
        offset = _offset_for_timestamp(spec, partition, timestamp, now_ms)
        return make(
            partition_type,
            partition_index=partition,
            error_code=ErrorCode.none,
            timestamp=-1 if timestamp < 0 else produced_at_ms(spec, partition, offset),
            offset=offset,
            leader_epoch=0,
        )

    topics = tuple(
        make(
            topic_type,
            name=topic.name,
            partitions=tuple(
                answer(topic.name, p.partition_index, p.timestamp) for p in topic.partitions
            ),
        )
        for topic in request.body.topics
    )
    return make(schema, throttle_time=NO_THROTTLE, topics=topics)


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


async def fetch(context: Context, request: Request) -> Any:
    """Records from each partition asked for; with none to give, the fetch waits (long poll)
    until one of them has a record or ``max_wait`` has passed, as Kafka's purgatory does.
    From v13 topics are named by id alone: an id no topic has (never given, or a deleted
    topic's) is UNKNOWN_TOPIC_ID for each of its partitions, as in Kafka."""
    body = request.body
    deadline = time.monotonic() + milliseconds(body.max_wait) / 1000
    schema = schema_of(request)
    topic_type = item_type(schema, "responses")
    partition_type = item_type(topic_type, "partitions")
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
                    make(
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
                make(
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
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=0,  # no fetch sessions (KIP-227): every fetch names its partitions
        responses=tuple(topics),
    )


async def produce(context: Context, request: Request) -> Any:
    """Each partition's batches take offsets from its log-end offset on and are stored before
    the answer (``store``); acks=0 gets no answer, as in Kafka."""
    body = request.body
    schema = schema_of(request)
    topic_type = item_type(schema, "responses")
    partition_type = item_type(topic_type, "partition_responses")
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
                make(
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
        topics.append(make(topic_type, name=topic.name, partition_responses=tuple(partitions)))
    if body.acks == 0:
        return NO_RESPONSE
    return make(schema, responses=tuple(topics), throttle_time=NO_THROTTLE)


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
