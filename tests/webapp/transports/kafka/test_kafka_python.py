"""kafka-python consumers join a group through the listener: assignment, records read, commits
read back, and a leave that hands the partitions to the member that stays."""

from __future__ import annotations

import asyncio

import pytest
from kafka import TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.live_server import wait_for
from webapp.transports.kafka.apis import OFFSET_COMMIT, OFFSET_FETCH
from webapp.transports.kafka.listener import KafkaListener

from .clients import Member

pytestmark = pytest.mark.asyncio

TOPIC = "orders"


def complete(members: list[Member], partitions: int) -> bool:
    owned = [member.assignment() for member in members]
    return all(owned) and len(set().union(*owned)) == partitions == sum(map(len, owned))


async def test_two_kafka_python_consumers_share_read_commit_and_one_leaves(
    kafka: KafkaListener, highest_versions: dict[int, int]
) -> None:
    await kafka.runtime.create_topic(TOPIC, 4, produce_rate_per_s=20)
    # The constructor bootstraps (a blocking exchange with the listener): off the loop.
    first = await asyncio.to_thread(Member, kafka, "g2", "first")
    second = await asyncio.to_thread(Member, kafka, "g2", "second")
    try:
        first.start(TOPIC)
        second.start(TOPIC)
        await asyncio.to_thread(wait_for, lambda: complete([first, second], 4), 20, "an assignment")
        assert first.assignment().isdisjoint(second.assignment())
        await asyncio.to_thread(wait_for, lambda: len(first.records) >= 5, 20, "records")
        record = first.records[0]
        assert record.value == f"{TOPIC}/{record.partition}/{record.offset}".encode()
        assert record.key == f"{record.partition}:{record.offset}".encode()

        mine = sorted(first.assignment())
        offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(2 + p, "", -1) for _, p in mine}
        await asyncio.to_thread(first.call, lambda consumer: consumer.commit(offsets))
        view = kafka.runtime.committed_offsets("g2")
        assert {p: view[(TOPIC, p)].offset for _, p in mine} == {p: 2 + p for _, p in mine}
        read_back = await asyncio.to_thread(
            first.call,
            lambda consumer: {p: consumer.committed(TopicPartition(TOPIC, p)) for _, p in mine},
        )
        assert read_back == {p: 2 + p for _, p in mine}
        # kafka-python 3.0 commits with OffsetCommit v8 and reads back with the batched v8.
        assert (highest_versions[OFFSET_COMMIT], highest_versions[OFFSET_FETCH]) == (8, 8)

        await asyncio.to_thread(second.close)
        await asyncio.to_thread(wait_for, lambda: len(first.assignment()) == 4, 20, "the leave")
    finally:
        await asyncio.to_thread(first.close)
        await asyncio.to_thread(second.close)
