"""The consumer's Fetcher, modelled for simulated consumers (seed 002; Kafka's `Fetcher`).

Theory of operation
-------------------
A consumer reads its partitions through a queue of *completed fetches*: a fetch asks for every
*fetchable* partition — assigned, not paused, with no fetched data still buffered — in the
order of the partition queue, and each partition the broker returns data for becomes one
completed fetch appended to the buffer. `poll()` hands out at most `max_poll_records` records
from the head of the buffer, possibly from several partitions and leaving part of one behind.
When a partition's buffered data has been handed out completely, the partition moves to the end
of the partition queue, so the next fetch favours the others (the rotation that keeps one busy
partition from starving the rest). Fetches are *pipelined*: when `poll()` returned records, the
next fetch is sent before the application processes them, and its data is buffered by the next
`poll()`; only a `poll()` with nothing buffered fetches and waits.

Records are offsets here (a simulated partition is a counter): a poll returns `FetchedRange`s
`(topic, partition, start, end)` = the records `start .. end - 1`. The broker is a function
`fetch(partitions_with_offsets) -> {tp: end_offset}` so the same model serves the live
simulation (reading log-end offsets from the topic registry) and the worked example of seed 002
(tests/webapp/simulation/test_fetcher.py replays its eight polls).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from coordinator_engine.assignors import TopicPartitionPair

#: The broker: for each partition asked (with the offset to fetch from), the end offset of the
#: data it returns (absent or equal to the start: no data for that partition).
Broker = Callable[[list[tuple[TopicPartitionPair, int]]], Mapping[TopicPartitionPair, int]]


@dataclass(frozen=True, slots=True)
class FetchedRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return self.end - self.start


class _CompletedFetch:
    """Fetched data of one partition not yet handed out: offsets `next .. end - 1`."""

    __slots__ = ("end", "next", "tp")

    def __init__(self, tp: TopicPartitionPair, start: int, end: int) -> None:
        self.tp = tp
        self.next = start
        self.end = end


class Fetcher:
    def __init__(self, broker: Broker, *, max_poll_records: int = 500) -> None:
        if max_poll_records < 1:
            raise ValueError(f"max_poll_records must be >= 1, got {max_poll_records}")
        self._broker = broker
        self.max_poll_records = max_poll_records
        self._queue: list[TopicPartitionPair] = []  # the partition queue (assignment order)
        self._positions: dict[TopicPartitionPair, int] = {}  # next offset to hand out
        self._fetch_offsets: dict[TopicPartitionPair, int] = {}  # next offset to fetch
        self._completed: deque[_CompletedFetch] = deque()
        self._buffered: set[TopicPartitionPair] = set()
        self.paused: set[TopicPartitionPair] = set()

    # -- assignment ---------------------------------------------------------------------------

    def assign(self, positions: Mapping[TopicPartitionPair, int]) -> None:
        """Add partitions at the given positions (the committed offsets, or the reset ones)."""
        for tp, offset in positions.items():
            if tp not in self._positions:
                self._queue.append(tp)
            self._positions[tp] = offset
            self._fetch_offsets[tp] = offset
            self._drop_buffer(tp)

    def revoke(self, partitions: Iterable[TopicPartitionPair]) -> None:
        """Forget partitions, and whatever was fetched for them but not handed out."""
        for tp in partitions:
            if tp in self._positions:
                self._queue.remove(tp)
                del self._positions[tp]
                del self._fetch_offsets[tp]
                self._drop_buffer(tp)

    def _drop_buffer(self, tp: TopicPartitionPair) -> None:
        if tp in self._buffered:
            self._completed = deque(c for c in self._completed if c.tp != tp)
            self._buffered.discard(tp)

    @property
    def assignment(self) -> list[TopicPartitionPair]:
        """The partition queue, in fetch order."""
        return list(self._queue)

    @property
    def positions(self) -> dict[TopicPartitionPair, int]:
        """Next offset the application will receive, per partition (what it commits)."""
        return dict(self._positions)

    # -- fetching -----------------------------------------------------------------------------

    def fetchable(self) -> list[TopicPartitionPair]:
        return [tp for tp in self._queue if tp not in self._buffered and tp not in self.paused]

    def send_fetches(self) -> int:
        """Fetch every fetchable partition; returns how many partitions returned data."""
        asked = [(tp, self._fetch_offsets[tp]) for tp in self.fetchable()]
        if not asked:
            return 0
        answered = self._broker(asked)
        returned = 0
        for tp, start in asked:
            end = answered.get(tp, start)
            if end > start:
                self._completed.append(_CompletedFetch(tp, start, end))
                self._buffered.add(tp)
                self._fetch_offsets[tp] = end
                returned += 1
        return returned

    def poll(self) -> list[FetchedRange]:
        """Records for the application: at most `max_poll_records`, from buffered fetches first
        (fetching and waiting only when nothing is buffered), then the next fetch is sent."""
        records = self._drain()
        if not records:
            self.send_fetches()
            records = self._drain()
        if records:
            self.send_fetches()  # pipelined: ready for the next poll
        return records

    def _drain(self) -> list[FetchedRange]:
        out: list[FetchedRange] = []
        remaining = self.max_poll_records
        while remaining and self._completed:
            head = self._completed[0]
            take = min(remaining, head.end - head.next)
            out.append(FetchedRange(head.tp[0], head.tp[1], head.next, head.next + take))
            head.next += take
            self._positions[head.tp] = head.next
            remaining -= take
            if head.next == head.end:
                # Drained: the partition goes to the end of the queue (the rotation).
                self._completed.popleft()
                self._buffered.discard(head.tp)
                self._queue.remove(head.tp)
                self._queue.append(head.tp)
        return out
