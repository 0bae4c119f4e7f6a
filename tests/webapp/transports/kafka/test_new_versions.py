"""The versions that bring topic ids and KIP-848's fields, as raw frames over real sockets:
Metadata v10–v13 (ids in answers, lookups by id), Fetch v13–v16 (topics by id), OffsetCommit
v9 and OffsetFetch v8–v9 for classic groups, ListGroups v5 (group types and their filter), and
malformed frames of these versions, which close only their own connection."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.serial import entity_reader

from coordinator_engine import JoinGroupRequest, Protocol, SyncGroupRequest
from webapp.transports.kafka.apis import SUPPORTED
from webapp.transports.kafka.codec import response_schema
from webapp.transports.kafka.listener import KafkaListener

from .test_wire import answers_api_versions, exchange, frame, read_response, request_frame

pytestmark = pytest.mark.asyncio

UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100


async def ask(listener: KafkaListener, api_key: int, version: int, body: Any) -> Any:
    """Send one request (kio's ``body`` of that version); kio's decoded answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(request_frame(api_key, version, 9, body))
        reply = await read_response(reader)
    finally:
        writer.close()
    assert struct.unpack(">i", reply[:4])[0] == 9
    schema: Any = response_schema(api_key, version)
    start = 5 if schema.__header_schema__.__flexible__ else 4  # an empty tag section
    answer, used = entity_reader(schema)(reply, start)
    assert start + used == len(reply)
    return answer


def request_class(api_key: int, version: int, name: str) -> Any:
    """kio's request entity ``name`` of that API version (a nested one by its class name)."""
    schema = load_request_schema(api_key, version)
    module = __import__(schema.__module__, fromlist=[name])
    return getattr(module, name)


def made(cls: Any, **values: Any) -> Any:
    """``cls`` from those ``values`` its version has."""
    known = {field.name for field in dataclasses.fields(cls)}
    return cls(**{name: value for name, value in values.items() if name in known})


# -- Metadata ---------------------------------------------------------------------------------


def metadata_request(version: int, topics: list[tuple[uuid.UUID | None, str | None]] | None) -> Any:
    request = request_class(3, version, "MetadataRequest")
    topic = request_class(3, version, "MetadataRequestTopic")
    return made(
        request,
        topics=None if topics is None else tuple(topic(topic_id=i, name=n) for i, n in topics),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


@pytest.mark.parametrize("version", [10, 11, 12, 13])
async def test_metadata_answers_every_topic_with_its_id(kafka: KafkaListener, version: int) -> None:
    orders = await kafka.runtime.create_topic("orders", 3)
    audit = await kafka.runtime.create_topic("audit", 1)
    answer = await ask(kafka, 3, version, metadata_request(version, None))
    assert [(t.name, t.topic_id, len(t.partitions), t.error_code) for t in answer.topics] == [
        ("audit", audit.topic_id, 1, 0),
        ("orders", orders.topic_id, 3, 0),
    ]
    named = await ask(kafka, 3, version, metadata_request(version, [(None, "orders")]))
    assert [(t.name, t.topic_id) for t in named.topics] == [("orders", orders.topic_id)]


@pytest.mark.parametrize("version", [12, 13])
async def test_metadata_looks_topics_up_by_id_and_an_unknown_id_is_unknown_topic_id(
    kafka: KafkaListener, version: int
) -> None:
    orders = await kafka.runtime.create_topic("orders", 3)
    await kafka.runtime.create_topic("audit", 1)
    stranger = uuid.uuid4()
    answer = await ask(
        kafka, 3, version, metadata_request(version, [(orders.topic_id, None), (stranger, None)])
    )
    by_id = {t.topic_id: t for t in answer.topics}
    assert set(by_id) == {orders.topic_id, stranger}
    found = by_id[orders.topic_id]
    assert (found.error_code, found.name, len(found.partitions)) == (0, "orders", 3)
    unknown = by_id[stranger]
    assert (unknown.error_code, unknown.name, unknown.partitions) == (UNKNOWN_TOPIC_ID, None, ())
    if version >= 13:
        assert answer.error_code == 0


async def test_metadata_by_name_gives_an_unknown_topic_a_null_id(kafka: KafkaListener) -> None:
    answer = await ask(kafka, 3, 12, metadata_request(12, [(None, "missing")]))
    ((topic),) = answer.topics
    assert (topic.name, topic.topic_id, topic.error_code) == (
        "missing",
        None,
        UNKNOWN_TOPIC_OR_PARTITION,
    )


async def test_a_deleted_topic_s_id_is_unknown_and_the_topic_created_again_has_a_new_one(
    kafka: KafkaListener,
) -> None:
    old = (await kafka.runtime.create_topic("orders", 2)).topic_id
    await kafka.runtime.delete_topic("orders")
    new = (await kafka.runtime.create_topic("orders", 2)).topic_id
    answer = await ask(kafka, 3, 12, metadata_request(12, [(old, None), (new, None)]))
    assert {(t.topic_id, t.name, t.error_code) for t in answer.topics} == {
        (old, None, UNKNOWN_TOPIC_ID),
        (new, "orders", 0),
    }


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize(
    "topic", [pytest.param("by id", id="a topic id"), pytest.param("no name", id="no name")]
)
async def test_metadata_v10_and_v11_refuse_lookups_by_id_as_kafka_does(
    kafka: KafkaListener, version: int, topic: str
) -> None:
    orders = await kafka.runtime.create_topic("orders", 3)
    asked = [(orders.topic_id, "orders")] if topic == "by id" else [(None, None)]
    answer = await ask(kafka, 3, version, metadata_request(version, asked))
    assert [(t.error_code, t.partitions) for t in answer.topics] == [(INVALID_REQUEST, ())]


# -- Fetch ------------------------------------------------------------------------------------


def fetch_request(version: int, topics: list[tuple[Any, int, int]]) -> Any:
    """Fetch of ``(topic name or id, partition, offset)``, answered at once if nothing."""
    request = request_class(1, version, "FetchRequest")
    topic_type = request_class(1, version, "FetchTopic")
    partition_type = request_class(1, version, "FetchPartition")
    key = "topic_id" if version >= 13 else "topic"
    return made(
        request,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=0),
        min_bytes=1,
        topics=tuple(
            topic_type(
                **{key: topic},
                partitions=(
                    partition_type(
                        partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20
                    ),
                ),
            )
            for topic, partition, offset in topics
        ),
        forgotten_topics_data=(),
    )


@pytest.mark.parametrize("version", [13, 16])
async def test_fetch_reads_a_topic_by_its_id_and_an_unknown_id_is_unknown_topic_id(
    kafka: KafkaListener, version: int
) -> None:
    orders = await kafka.runtime.create_topic("orders", 2, produce_rate_per_s=1000)
    await asyncio.sleep(0.05)
    stranger = uuid.uuid4()
    answer = await ask(
        kafka, 1, version, fetch_request(version, [(orders.topic_id, 1, 0), (stranger, 0, 0)])
    )
    assert answer.error_code == 0
    found, unknown = answer.responses
    assert found.topic_id == orders.topic_id
    ((partition),) = found.partitions
    assert (partition.partition_index, partition.error_code) == (1, 0)
    assert partition.high_watermark > 0 and partition.records
    assert unknown.topic_id == stranger
    ((missing),) = unknown.partitions
    assert (missing.error_code, missing.high_watermark, missing.records) == (
        UNKNOWN_TOPIC_ID,
        -1,
        b"",
    )


async def test_fetch_by_id_gives_the_same_records_as_fetch_by_name(kafka: KafkaListener) -> None:
    orders = await kafka.runtime.create_topic("orders", 1, produce_rate_per_s=1000)
    await asyncio.sleep(0.05)
    by_name = await ask(kafka, 1, 12, fetch_request(12, [("orders", 0, 0)]))
    by_id = await ask(kafka, 1, 16, fetch_request(16, [(orders.topic_id, 0, 0)]))
    (named,) = by_name.responses[0].partitions
    (identified,) = by_id.responses[0].partitions
    assert by_name.responses[0].topic == "orders"
    # The same log from offset 0: a batch with base offset 0 whose first record is 0:0.
    for records in (named.records, identified.records):
        assert records[:8] == bytes(8) and b"\x060:0\x14orders/0/0" in records


async def test_fetch_by_a_deleted_topic_s_id_is_unknown_topic_id(kafka: KafkaListener) -> None:
    old = (await kafka.runtime.create_topic("orders", 1)).topic_id
    await kafka.runtime.delete_topic("orders")
    await kafka.runtime.create_topic("orders", 1)
    answer = await ask(kafka, 1, 16, fetch_request(16, [(old, 0, 0)]))
    assert [p.error_code for p in answer.responses[0].partitions] == [UNKNOWN_TOPIC_ID]


async def test_the_zero_topic_id_names_no_topic(kafka: KafkaListener) -> None:
    """Kafka's ZERO_UUID means "no id": a Fetch by it finds nothing, and a Metadata topic with
    neither a name nor an id is an invalid request."""
    await kafka.runtime.create_topic("orders", 1)
    fetched = await ask(kafka, 1, 16, fetch_request(16, [(uuid.UUID(int=0), 0, 0)]))
    assert [p.error_code for p in fetched.responses[0].partitions] == [UNKNOWN_TOPIC_ID]
    described = await ask(kafka, 3, 12, metadata_request(12, [(uuid.UUID(int=0), None)]))
    assert [t.error_code for t in described.topics] == [INVALID_REQUEST]


async def test_a_topic_created_again_has_none_of_the_old_topic_s_produced_records(
    kafka: KafkaListener,
) -> None:
    from confluent_kafka import Producer

    await kafka.runtime.create_topic("payments", 1)
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{kafka.port}", "linger.ms": 5})
    for n in range(5):
        producer.produce("payments", value=f"old {n}".encode(), partition=0)
    assert await asyncio.to_thread(producer.flush, 10) == 0
    old = kafka.runtime.topics.get("payments").topic_id  # type: ignore[union-attr]
    before = await ask(kafka, 1, 16, fetch_request(16, [(old, 0, 0)]))
    assert b"old 0" in before.responses[0].partitions[0].records

    await kafka.runtime.delete_topic("payments")
    new = (await kafka.runtime.create_topic("payments", 1)).topic_id
    for asked in (
        fetch_request(16, [(new, 0, 0)]),
        fetch_request(12, [("payments", 0, 0)]),
    ):
        answer = await ask(kafka, 1, asked.__version__, asked)
        ((partition),) = answer.responses[0].partitions
        assert (partition.error_code, partition.high_watermark, partition.records) == (0, 0, b"")


async def test_a_record_store_from_before_topic_ids_gives_its_batches_to_the_topics_of_their_names(
    tmp_path: Path,
) -> None:
    import sqlite3

    from webapp.transports.kafka.store import RecordStore

    path = tmp_path / "records.db"
    with sqlite3.connect(path) as legacy:
        legacy.execute(
            "CREATE TABLE batches (topic TEXT NOT NULL, partition INTEGER NOT NULL,"
            " base_offset INTEGER NOT NULL, last_offset INTEGER NOT NULL,"
            " appended_ms INTEGER NOT NULL, data BLOB NOT NULL,"
            " PRIMARY KEY (topic, partition, base_offset)) WITHOUT ROWID"
        )
        legacy.executemany(
            "INSERT INTO batches VALUES (?, ?, ?, ?, ?, ?)",
            [("payments", 0, 0, 2, 1, b"kept"), ("deleted", 0, 0, 0, 1, b"dropped")],
        )
    payments = uuid.uuid4()
    store = RecordStore(path)
    try:
        assert store.adopt_named({"payments": payments, "audit": uuid.uuid4()}) == 1
        assert [b.data for b in store.read(payments, 0, 0, 1 << 20)] == [b"kept"]
        assert store.adopt_named({"payments": payments}) == 0  # once
    finally:
        store.close()
    with sqlite3.connect(path) as after:
        tables = {name for (name,) in after.execute("SELECT name FROM sqlite_master")}
        assert "batches" not in tables
        assert after.execute("SELECT COUNT(*) FROM produced_batches").fetchone() == (1,)


# -- OffsetCommit v9, OffsetFetch v8 and v9 ----------------------------------------------------


async def classic_member(listener: KafkaListener, group: str) -> tuple[str, int]:
    """A Stable one-member classic group; (member id, generation)."""
    runtime = listener.runtime
    joined = await runtime.submit(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=(Protocol(name="range", metadata=b""),),
            require_known_member_id=False,
        )
    )
    assert joined.error_code == 0
    synced = await runtime.submit(
        SyncGroupRequest(
            group_id=group, generation_id=joined.generation_id, member_id=joined.member_id
        )
    )
    assert synced.error_code == 0
    return joined.member_id, joined.generation_id


def offset_commit_v9(group: str, member: str, generation: int, offsets: dict[int, int]) -> Any:
    from kio.schema.offset_commit.v9.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=(
            OffsetCommitRequestTopic(
                name="orders",
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata="m"
                    )
                    for p, o in offsets.items()
                ),
            ),
        ),
    )


async def test_offset_commit_v9_fences_a_classic_member_by_its_generation_as_before(
    kafka: KafkaListener,
) -> None:
    member, generation = await classic_member(kafka, "g")
    answer = await ask(kafka, 8, 9, offset_commit_v9("g", member, generation, {0: 5, 1: 7}))
    assert [(p.partition_index, p.error_code) for p in answer.topics[0].partitions] == [
        (0, 0),
        (1, 0),
    ]
    stale = await ask(kafka, 8, 9, offset_commit_v9("g", member, generation + 1, {0: 9}))
    assert [p.error_code for p in stale.topics[0].partitions] == [ILLEGAL_GENERATION]
    committed = kafka.runtime.committed_offsets("g")
    assert (committed[("orders", 0)].offset, committed[("orders", 1)].offset) == (5, 7)


@pytest.mark.parametrize("version", [8, 9])
async def test_offset_fetch_v8_and_v9_answer_each_group_of_the_batch(
    kafka: KafkaListener, version: int
) -> None:
    member, generation = await classic_member(kafka, "g")
    await ask(kafka, 8, 9, offset_commit_v9("g", member, generation, {0: 5, 1: 7}))
    await ask(kafka, 8, 9, offset_commit_v9("simple", "", -1, {2: 11}))
    request = request_class(9, version, "OffsetFetchRequest")
    group_type = request_class(9, version, "OffsetFetchRequestGroup")
    topic_type = request_class(9, version, "OffsetFetchRequestTopics")
    # v9's member fields, as librdkafka sends them (a null member, epoch -1) and with a member.
    member_fields = (
        [{"member_id": None, "member_epoch": -1}, {"member_id": member, "member_epoch": 1}]
        if version >= 9
        else [{}, {}]
    )
    answer = await ask(
        kafka,
        9,
        version,
        request(
            groups=(
                group_type(
                    group_id="g",
                    topics=(topic_type(name="orders", partition_indexes=(0, 1, 3)),),
                    **member_fields[0],
                ),
                group_type(group_id="simple", topics=None, **member_fields[1]),
                group_type(group_id="nobody", topics=None),
            ),
            require_stable=True,
        ),
    )

    def offsets(group: Any) -> list[tuple[str, int, int, int]]:
        return [
            (t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch)
            for t in group.topics
            for p in t.partitions
        ]

    g, simple, nobody = answer.groups
    assert (g.group_id, g.error_code) == ("g", 0)
    assert offsets(g) == [("orders", 0, 5, -1), ("orders", 1, 7, -1), ("orders", 3, -1, -1)]
    assert (simple.group_id, simple.error_code, offsets(simple)) == (
        "simple",
        0,
        [("orders", 2, 11, -1)],
    )
    assert (nobody.group_id, nobody.error_code, nobody.topics) == ("nobody", 0, ())


# -- ListGroups v5 ----------------------------------------------------------------------------


async def test_list_groups_v5_gives_each_group_its_type_and_filters_by_type(
    kafka: KafkaListener,
) -> None:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    await classic_member(kafka, "classic-group")
    await ask(kafka, 8, 9, offset_commit_v9("offsets-only", "", -1, {0: 1}))

    async def listed(types: tuple[str, ...], states: tuple[str, ...] = ()) -> list[Any]:
        answer = await ask(
            kafka, 16, 5, ListGroupsRequest(states_filter=states, types_filter=types)
        )
        assert answer.error_code == 0
        return [(g.group_id, g.group_type, g.group_state) for g in answer.groups]

    everything = [
        ("classic-group", "classic", "Stable"),
        ("offsets-only", "classic", "Empty"),
    ]
    assert await listed(()) == everything
    assert await listed(("Classic",)) == everything
    assert await listed(("consumer",)) == []
    assert await listed(("handoff",)) == []
    assert await listed(("classic",), ("Empty",)) == [("offsets-only", "classic", "Empty")]


# -- malformed frames of the new versions -------------------------------------------------------


def offset_fetch_v9(group_id: str) -> Any:
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup

    return OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id=group_id, topics=None),), require_stable=False
    )


def truncated(api_key: int, version: int, body: Any) -> bytes:
    """``body``'s frame cut 3 bytes short of its end, its size prefix saying so."""
    whole = request_frame(api_key, version, 1, body)[4:]
    return frame(whole[:-3])


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(
            truncated(3, 12, metadata_request(12, [(uuid.uuid4(), None)])),
            id="a Metadata v12 by id cut short",
        ),
        pytest.param(
            truncated(1, 16, fetch_request(16, [(uuid.uuid4(), 0, 0)])),
            id="a Fetch v16 cut short",
        ),
        pytest.param(
            truncated(8, 9, offset_commit_v9("g", "m", 1, {0: 1})),
            id="an OffsetCommit v9 cut short",
        ),
        pytest.param(
            frame(struct.pack(">hhih", 9, 9, 1, 3) + b"raw" + b"\x00" + b"\x02\x02g"),
            id="an OffsetFetch v9 cut inside its group",
        ),
        pytest.param(
            frame(struct.pack(">hhih", 16, 5, 1, 3) + b"raw" + b"\x00" + b"\x01\x7f"),
            id="a ListGroups v5 whose types filter runs past the frame",
        ),
        pytest.param(
            # Metadata v12: one topic whose id is cut after 5 of its 16 bytes.
            frame(struct.pack(">hhih", 3, 12, 1, 3) + b"raw" + b"\x00" + b"\x02" + b"\x11" * 5),
            id="a Metadata v12 topic id cut short",
        ),
        pytest.param(
            frame(struct.pack(">hhih", 1, 17, 1, 3) + b"raw" + b"\x00"),
            id="a Fetch version not served",
        ),
        pytest.param(
            request_frame(8, 9, 1, offset_commit_v9("g", "m" * 40_000, 1, {0: 1})),
            id="an OffsetCommit v9 member id longer than Kafka's strings",
        ),
        pytest.param(
            request_frame(9, 9, 1, offset_fetch_v9(group_id="g" * 40_000)),
            id="an OffsetFetch v9 group id longer than Kafka's strings",
        ),
    ],
)
async def test_a_malformed_frame_of_a_new_version_closes_only_its_connection(
    kafka: KafkaListener, payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    other_reader, other = await asyncio.open_connection("127.0.0.1", kafka.port)
    assert await exchange(kafka, payload) == b""
    # Refused as bytes that are not a request (one warning), not as a failed handler.
    assert [r.levelname for r in caplog.records if "closing the connection" in r.message] == [
        "WARNING"
    ]
    assert await answers_api_versions(kafka)
    # A connection opened before is served on.
    other.write(request_frame(16, 5, 4, request_class(16, 5, "ListGroupsRequest")()))
    assert struct.unpack(">i", (await read_response(other_reader))[:4])[0] == 4
    other.close()


async def test_every_version_advertised_has_kio_s_schemas_both_ways() -> None:
    from kio.index import load_response_schema

    for api_key, (low, high) in SUPPORTED.items():
        for version in range(low, high + 1):
            load_request_schema(api_key, version)
            load_response_schema(api_key, version)
