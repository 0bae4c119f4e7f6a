"""The listener against bytes no client should send, and the ApiVersions handshake, over real
sockets: each bad connection is closed (or answered, where Kafka answers) and the listener
keeps serving the others."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from webapp.transports.kafka.apis import API_NAMES, HANDLERS, SUPPORTED
from webapp.transports.kafka.listener import KafkaListener

pytestmark = pytest.mark.asyncio


async def exchange(listener: KafkaListener, payload: bytes) -> bytes:
    """Send ``payload`` and end the sending side; everything the listener sends back until it
    closes (at most 2 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(payload)
        writer.write_eof()
        await writer.drain()
        return await asyncio.wait_for(reader.read(1 << 20), 2)
    finally:
        writer.close()


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def offset_commit_v8(partitions: bytes) -> bytes:
    """An OffsetCommit v8 frame (without its size) of group "g" (generation -1) whose one
    topic, "t", has ``partitions`` (their count and whatever follows it)."""
    return (
        struct.pack(">hhih", 8, 8, 1, 1)
        + b"t\x00"  # the header's client id and tags
        + b"\x02g"
        + struct.pack(">i", -1)
        + b"\x01\x00"  # group, generation, member, instance
        + b"\x02\x02t"  # one topic, "t"
        + partitions
    )


def api_versions_v0(correlation_id: int = 7) -> bytes:
    # api_key 18, version 0, correlation id, client id "t"
    return frame(struct.pack(">hhih", 18, 0, correlation_id, 1) + b"t")


def api_versions_v0_body(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    """(error_code, {api_key: (min, max)}) of an ApiVersions v0 response body, read by hand."""
    error_code, count = struct.unpack_from(">hi", body)
    ranges = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", body, 6 + 6 * index)
        ranges[key] = (low, high)
    assert len(body) == 6 + 6 * count
    return error_code, ranges


async def answers_api_versions(listener: KafkaListener) -> bool:
    reply = await exchange(listener, api_versions_v0())
    return len(reply) > 8 and struct.unpack(">ii", reply[:8])[1] == 7


async def test_api_versions_v0_lists_every_api_served(kafka: KafkaListener) -> None:
    reply = await exchange(kafka, api_versions_v0())
    size, correlation_id = struct.unpack(">ii", reply[:8])
    assert size == len(reply) - 4 and correlation_id == 7
    assert api_versions_v0_body(reply[8:]) == (0, SUPPORTED)


async def test_an_api_versions_version_not_served_gets_a_v0_answer_with_the_ranges(
    kafka: KafkaListener,
) -> None:
    payload = frame(struct.pack(">hhih", 18, 99, 5, 1) + b"t")
    reply = await exchange(kafka, payload)
    assert struct.unpack(">i", reply[4:8])[0] == 5
    assert api_versions_v0_body(reply[8:]) == (35, SUPPORTED)  # UNSUPPORTED_VERSION


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x7f\xff\xff\xff" + b"x" * 100, id="a 2 GB size prefix"),
        pytest.param(frame(b"\x00\x01"), id="a frame too short for a header"),
        pytest.param(frame(struct.pack(">hhih", 18, 3, 1, 1))[:-1], id="a truncated frame"),
        pytest.param(frame(struct.pack(">hhih", 999, 0, 1, -1)), id="an unknown API key"),
        pytest.param(
            frame(struct.pack(">hhih", 11, 42, 1, -1)), id="a JoinGroup version not served"
        ),
        pytest.param(frame(struct.pack(">hhih", 11, 5, 1, -1) + b"\xff" * 9), id="garbage body"),
        pytest.param(bytes(range(256)) * 4, id="random bytes"),
        # Kafka's readers refuse a null where the schema has a non-nullable array; kio reads it.
        pytest.param(
            frame(struct.pack(">hhih", 15, 5, 1, 1) + b"t\x00" + b"\x00\x00\x00"),
            id="a DescribeGroups v5 whose groups are null",
        ),
        pytest.param(
            frame(offset_commit_v8(b"\x00\x00\x00")),  # null partitions, the tags of both
            id="an OffsetCommit v8 topic whose partitions are null",
        ),
        # kio sizes an array by its count before reading it: four billion partitions in a
        # small frame asked for 34 GB, and the process aborted (walk.py).
        pytest.param(
            frame(offset_commit_v8(b"\xff\xff\xff\xff\x0f" + b"\x00" * 40)),  # 2**32 - 2 of them
            id="an OffsetCommit v8 topic of four billion partitions in a 70-byte frame",
        ),
        pytest.param(
            frame(struct.pack(">hhih", 15, 0, 1, -1) + struct.pack(">i", 2**31 - 1) + b"x" * 20),
            id="a DescribeGroups v0 of two billion groups",
        ),
        # The array check stops at the count of the last array: kio refuses what is missing.
        pytest.param(
            frame(struct.pack(">hhih", 15, 0, 1, -1) + struct.pack(">i", 2) + b"\x00\x01a"),
            id="a DescribeGroups v0 that ends inside its groups",
        ),
    ],
)
async def test_a_bad_request_closes_its_connection_and_the_listener_serves_on(
    kafka: KafkaListener, payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    assert await exchange(kafka, payload) == b""
    assert await answers_api_versions(kafka)
    # Refused as bad input (a warning), not failed in a handler (an error).
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


# -- clients that go away mid-request ---------------------------------------------------------


def request_frame(api_key: int, version: int, correlation_id: int, body: object) -> bytes:
    """A request frame written with kio (the real clients' own encoders are tested elsewhere)."""
    import io

    from kio.index import load_request_schema
    from kio.serial import entity_writer

    schema = load_request_schema(api_key, version)
    header = schema.__header_schema__
    buffer = io.BytesIO()
    entity_writer(header)(
        buffer,
        header(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="raw",
        ),
    )
    entity_writer(schema)(buffer, body)
    return frame(buffer.getvalue())


def join_group(member_id: str) -> bytes:
    import datetime

    from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol

    return request_frame(
        11,
        5,
        1,
        JoinGroupRequest(
            group_id="parked",
            session_timeout=datetime.timedelta(seconds=10),
            rebalance_timeout=datetime.timedelta(seconds=30),
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(
                JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00"),
            ),
        ),
    )


async def read_response(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))[0]
    return await reader.readexactly(size)


def join_answer(reply: bytes) -> object:
    """kio's JoinGroup v5 response in ``reply`` (after its correlation id)."""
    from kio.schema.join_group.v5.response import JoinGroupResponse
    from kio.serial import entity_reader

    answer, _ = entity_reader(JoinGroupResponse)(reply, 4)
    return answer


async def test_a_client_gone_during_a_parked_join_leaves_its_member_and_the_listener_serves(
    kafka: KafkaListener, caplog: pytest.LogCaptureFixture
) -> None:
    from coordinator_engine import GroupState

    # A joins alone: its JoinGroup v5 first gets MEMBER_ID_REQUIRED (79) and an id.
    reader, first = await asyncio.open_connection("127.0.0.1", kafka.port)
    first.write(join_group(""))
    required = join_answer(await read_response(reader))
    assert required.error_code == 79
    first.write(join_group(required.member_id))
    assert join_answer(await read_response(reader)).generation_id == 1
    # B's JoinGroup parks until A rejoins; B's client goes away meanwhile.
    reader_b, second = await asyncio.open_connection("127.0.0.1", kafka.port)
    second.write(join_group(""))
    member_b = join_answer(await read_response(reader_b)).member_id
    second.write(join_group(member_b))
    await asyncio.sleep(0.2)
    second.close()
    assert await answers_api_versions(kafka)
    view = kafka.runtime.group("parked")
    assert view is not None and view.state is GroupState.PREPARING_REBALANCE
    # B stays a member (its session runs on), as in Kafka; nothing failed on the server.
    assert set(view.members) == {required.member_id, member_b}
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    first.close()


async def test_pipelined_requests_are_answered_in_order(kafka: KafkaListener) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(b"".join(api_versions_v0(correlation_id) for correlation_id in range(50)))
    answered = [struct.unpack(">i", (await read_response(reader))[:4])[0] for _ in range(50)]
    writer.close()
    assert answered == list(range(50))


async def test_answers_before_a_parked_join_are_not_held_up_by_it(kafka: KafkaListener) -> None:
    # A is a member; B's JoinGroup will park until A rejoins.
    reader_a, first = await asyncio.open_connection("127.0.0.1", kafka.port)
    first.write(join_group(""))
    member_a = join_answer(await read_response(reader_a)).member_id
    first.write(join_group(member_a))
    await read_response(reader_a)
    reader_b, second = await asyncio.open_connection("127.0.0.1", kafka.port)
    second.write(join_group(""))
    member_b = join_answer(await read_response(reader_b)).member_id
    # B pipelines an ApiVersions and its parking JoinGroup in one write: the ApiVersions is
    # answered at once, the JoinGroup when A rejoins.
    second.write(api_versions_v0(correlation_id=77) + join_group(member_b))
    early = await read_response(reader_b)
    assert struct.unpack(">i", early[:4])[0] == 77
    parked = asyncio.ensure_future(read_response(reader_b))
    await asyncio.sleep(0.2)
    assert not parked.done()
    first.write(join_group(member_a))
    assert join_answer(await parked).error_code == 0
    assert join_answer(await read_response(reader_a)).error_code == 0
    first.close()
    second.close()


async def test_a_client_gone_during_a_long_poll_fetch_costs_nothing_else(
    kafka: KafkaListener, caplog: pytest.LogCaptureFixture
) -> None:
    import datetime

    from kio.schema.fetch.v11.request import FetchPartition, FetchRequest, FetchTopic

    await kafka.runtime.create_topic("quiet", 1)  # no records: the fetch waits
    fetch = FetchRequest(
        max_wait=datetime.timedelta(seconds=1),
        min_bytes=1,
        topics=(
            FetchTopic(
                topic="quiet",
                partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024),),
            ),
        ),
        forgotten_topics_data=(),
    )
    _, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(request_frame(1, 11, 3, fetch))
    await asyncio.sleep(0.1)
    writer.close()
    assert await answers_api_versions(kafka)
    await asyncio.sleep(1.2)  # the fetch ends and finds no one to answer
    assert await answers_api_versions(kafka)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")]


async def test_a_produce_with_a_corrupt_batch_is_refused_and_stores_nothing(
    kafka: KafkaListener,
) -> None:
    import datetime

    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.schema.produce.v9.response import ProduceResponse
    from kio.serial import entity_reader

    await kafka.runtime.create_topic("payments", 1)
    produce = ProduceRequest(
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            TopicProduceData(
                name="payments",
                partition_data=(PartitionProduceData(index=0, records=b"\x00" * 70),),
            ),
            TopicProduceData(
                name="nowhere",
                partition_data=(PartitionProduceData(index=0, records=b"\x00" * 70),),
            ),
        ),
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(request_frame(0, 9, 4, produce))
    answer, _ = entity_reader(ProduceResponse)(await read_response(reader), 5)  # id, tags
    writer.close()
    (corrupt,), (unknown,) = (t.partition_responses for t in answer.responses)
    assert (corrupt.error_code, unknown.error_code) == (2, 3)  # CORRUPT_MESSAGE, UNKNOWN_TOPIC
    assert corrupt.error_message == "a batch length of 0 does not fit the 70 bytes"
    spec = kafka.runtime.topics.get("payments")
    assert spec is not None and spec.log_end_offset(0, kafka.runtime.now_ms()) == 0


def with_tags(encoded: bytes, tags: dict[int, bytes]) -> bytes:
    """An empty tag section (``encoded``'s last byte, 0) replaced by ``tags``, as a newer
    client would send fields this listener has never heard of."""
    import io

    from kio.serial.writers import write_unsigned_varint

    assert encoded[-1] == 0
    section = io.BytesIO()
    write_unsigned_varint(section, len(tags))
    for tag, value in sorted(tags.items()):
        write_unsigned_varint(section, tag)
        write_unsigned_varint(section, len(value))
        section.write(value)
    return encoded[:-1] + section.getvalue()


async def test_tagged_fields_the_listener_does_not_know_are_skipped_as_kafka_skips_them(
    kafka: KafkaListener,
) -> None:
    import io

    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from kio.schema.offset_commit.v8.response import OffsetCommitResponse
    from kio.schema.request_header.v2.header import RequestHeader
    from kio.serial import entity_reader, entity_writer

    await kafka.runtime.create_topic("tagged", 1)

    def encode(entity: object) -> bytes:
        buffer = io.BytesIO()
        entity_writer(type(entity))(buffer, entity)
        return buffer.getvalue()

    partition = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=41, committed_leader_epoch=-1, committed_metadata="m"
    )
    # Unknown tags in the header, in a partition (nested two levels down) and in the body.
    partition_bytes = with_tags(encode(partition), {7: b"new"})
    body = encode(
        OffsetCommitRequest(
            group_id="tagged-group",
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(OffsetCommitRequestTopic(name="tagged", partitions=(partition,)),),
        )
    )
    body = with_tags(body.replace(encode(partition), partition_bytes), {3: b"\x01", 90: b""})
    header = with_tags(
        encode(
            RequestHeader(
                request_api_key=8, request_api_version=8, correlation_id=11, client_id="future"
            )
        ),
        {5: b"xyz"},
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(frame(header + body))
    reply = await read_response(reader)
    writer.close()
    assert struct.unpack(">i", reply[:4])[0] == 11
    answer, _ = entity_reader(OffsetCommitResponse)(reply, 5)  # id, empty header tags
    assert [p.error_code for t in answer.topics for p in t.partitions] == [0]
    committed = kafka.runtime.committed_offsets("tagged-group")
    assert committed[("tagged", 0)].offset == 41
    assert committed[("tagged", 0)].metadata == "m"


async def test_librdkafka_s_all_topics_metadata_request_is_answered_as_kafka_answers_it(
    kafka: KafkaListener,
) -> None:
    """The Metadata v9 request librdkafka 2.16 sends for "all topics", byte for byte: its null
    topic array sits in a 4-byte placeholder, so kio's reading of the body ends a byte before
    the frame does. Kafka ignores what follows a request's body; so does the listener."""
    from kio.schema.metadata.v9.response import MetadataResponse
    from kio.serial import entity_reader

    await kafka.runtime.create_topic("listed", 3)
    header = struct.pack(">hhih", 3, 9, 5, 7) + b"rdkafka" + b"\x00"
    body = bytes.fromhex("0000000001000000")
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(frame(header + body))
    reply = await read_response(reader)
    writer.close()
    assert struct.unpack(">i", reply[:4])[0] == 5
    answer, _ = entity_reader(MetadataResponse)(reply, 5)  # id, empty header tags
    assert [(topic.name, len(topic.partitions)) for topic in answer.topics] == [("listed", 3)]


async def test_each_request_is_counted_by_its_api_as_a_kafka_request(kafka: KafkaListener) -> None:
    assert set(API_NAMES) == set(HANDLERS) == set(SUPPORTED)
    assert await answers_api_versions(kafka)
    assert await answers_api_versions(kafka)
    assert kafka.runtime.metrics.requests.request_counts() == {("ApiVersions", "kafka"): 2}
