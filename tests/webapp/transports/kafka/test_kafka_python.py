"""kafka-python consumers join a group through the listener: assignment, records read, commits
read back, and a leave that hands the partitions to the member that stays."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from webapp.transports.kafka.listener import KafkaListener

from .conftest import bootstrap

pytestmark = pytest.mark.asyncio

TOPIC = "orders"


class Member:
    """A kafka-python consumer polling in a thread of its own (a consumer blocks in poll while
    its group rebalances, so two in one thread would wait for each other)."""

    def __init__(self, listener: KafkaListener, group: str, name: str) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap(listener),
            group_id=group,
            client_id=name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            metadata_max_age_ms=1000,
        )
        self.records: list[Any] = []
        self._calls: queue.Queue[tuple[Callable[[KafkaConsumer], Any], Future[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, topic: str) -> None:
        self.consumer.subscribe([topic])
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            # An application's usual poll timeout. With 100 ms, kafka-python 3.0.12 sometimes
            # lost a SyncGroup answer that came after its poll had timed out mid-rebalance, and
            # its member then never heartbeated again (seen here, in its own debug log).
            for batch in self.consumer.poll(timeout_ms=1000).values():
                self.records.extend(batch)
            while not self._calls.empty():
                call, result = self._calls.get()
                try:
                    result.set_result(call(self.consumer))
                except Exception as exc:
                    result.set_exception(exc)

    def call(self, call: Callable[[KafkaConsumer], Any]) -> Any:
        """``call(consumer)`` on the member's own thread (a consumer is not thread-safe)."""
        result: Future[Any] = Future()
        self._calls.put((call, result))
        return result.result(timeout=20)

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def until(condition: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.05)


def complete(members: list[Member], partitions: int) -> bool:
    owned = [member.assignment() for member in members]
    return all(owned) and len(set().union(*owned)) == partitions == sum(map(len, owned))


async def test_two_kafka_python_consumers_share_read_commit_and_one_leaves(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 4, produce_rate_per_s=20)
    # The constructor bootstraps (a blocking exchange with the listener): off the loop.
    first = await asyncio.to_thread(Member, kafka, "g2", "first")
    second = await asyncio.to_thread(Member, kafka, "g2", "second")
    try:
        first.start(TOPIC)
        second.start(TOPIC)
        await asyncio.to_thread(until, lambda: complete([first, second], 4), "an assignment")
        assert first.assignment().isdisjoint(second.assignment())
        await asyncio.to_thread(until, lambda: len(first.records) >= 5, "records")
        record = first.records[0]
        assert record.value == f"{TOPIC}/{record.partition}/{record.offset}".encode()
        assert record.key == f"{record.partition}:{record.offset}".encode()

        mine = sorted(first.assignment())
        offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(2 + p, "", -1) for _, p in mine}
        await asyncio.to_thread(first.call, lambda consumer: consumer.commit(offsets))
        view = kafka.runtime.committed_offsets("g2")
        assert {p: view[(TOPIC, p)].offset for _, p in mine} == {p: 2 + p for _, p in mine}

        await asyncio.to_thread(second.close)
        await asyncio.to_thread(until, lambda: len(first.assignment()) == 4, "the leave")
    finally:
        await asyncio.to_thread(first.close)
        await asyncio.to_thread(second.close)
