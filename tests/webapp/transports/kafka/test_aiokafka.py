"""aiokafka consumers (on the test's own event loop, beside the listener) join a group through
the listener: ApiVersions v0 first, assignment, records read, commits read back, and a leave
that hands the partitions to the member that stays."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from webapp.transports.kafka.listener import KafkaListener

from .clients import until
from .conftest import bootstrap

pytestmark = pytest.mark.asyncio

TOPIC = "orders"


def consumer(listener: KafkaListener, name: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap(listener),
        group_id="g3",
        client_id=name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        metadata_max_age_ms=1000,
    )


def owned(member: AIOKafkaConsumer) -> set[int]:
    return {tp.partition for tp in member.assignment()}


async def test_two_aiokafka_consumers_share_read_commit_and_one_leaves(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 4, produce_rate_per_s=20)
    first, second = consumer(kafka, "first"), consumer(kafka, "second")
    await first.start()
    await second.start()
    try:
        await until(
            lambda: (
                owned(first) | owned(second) == {0, 1, 2, 3}
                and not owned(first) & owned(second)
                and bool(owned(first))
            ),
            "an assignment",
        )
        batches = await first.getmany(timeout_ms=5000, max_records=5)
        records = [record for batch in batches.values() for record in batch]
        assert records
        record = records[0]
        assert record.value == f"{TOPIC}/{record.partition}/{record.offset}".encode()

        mine = sorted(owned(first))
        await first.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(3 + p, "") for p in mine})
        for p in mine:
            assert await first.committed(TopicPartition(TOPIC, p)) == 3 + p

        await second.stop()
        await until(lambda: owned(first) == {0, 1, 2, 3}, "the leave")
    finally:
        await first.stop()
        await second.stop()
