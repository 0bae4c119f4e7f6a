"""Real Kafka clients that poll in threads of their own, and waiting on the test's loop, for
the tests of this folder."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from confluent_kafka import Consumer
from kafka import KafkaConsumer

from webapp.transports.kafka.listener import KafkaListener

from .conftest import bootstrap


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


class Polling:
    """A librdkafka consumer polling in its own thread."""

    def __init__(self, listener: KafkaListener, group: str, name: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap(listener),
                "group.id": group,
                "client.id": name,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


async def until(condition: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    """Wait on the event loop (the listener's) until ``condition()``; AssertionError naming
    ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.05)
