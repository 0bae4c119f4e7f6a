"""librdkafka consumers with ``group.protocol=consumer`` (KIP-848) join consumer groups through
the listener: ConsumerGroupHeartbeat v1, topic ids resolved with Metadata v12+, commits with
OffsetCommit v9 carrying the member epoch; the admin client describes and lists them."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from confluent_kafka import Consumer, TopicPartition

from coordinator_engine.consumer import ConsumerGroupView
from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.transports.kafka.listener import KafkaListener

from ...helpers import TEST_CONFIG, serving
from .conftest import bootstrap

pytestmark = pytest.mark.asyncio

TOPIC = "orders"
#: Heartbeats every 300 ms (Kafka's floor is a broker setting, 5 s by default), sessions of 6 s.
FAST = dataclasses.replace(
    TEST_CONFIG,
    consumer_group_min_heartbeat_interval_ms=100,
    consumer_group_heartbeat_interval_ms=300,
    consumer_group_min_session_timeout_ms=6000,
    consumer_group_session_timeout_ms=6000,
)


#: The consumers a test opened, closed after it if it did not (a failed test, say).
OPENED: list[Consumer] = []


@pytest_asyncio.fixture
async def kafka(
    transactional_db: None, make_runtime: Callable[..., CoordinatorRuntime], tmp_path: Path
) -> AsyncIterator[KafkaListener]:
    async with serving(make_runtime(clock=WallClock(), config=FAST)) as runtime:
        listener = KafkaListener(
            runtime, host="127.0.0.1", port=0, records_path=tmp_path / "records.db"
        )
        await listener.start()
        try:
            yield listener
        finally:
            while OPENED:
                with contextlib.suppress(RuntimeError):  # closed by the test already
                    await asyncio.to_thread(OPENED.pop().close)
            await listener.stop()


def opened(consumer: Consumer) -> Consumer:
    OPENED.append(consumer)
    return consumer


class Tracking:
    """A consumer's incremental rebalance callbacks, as librdkafka reports them."""

    def __init__(self) -> None:
        self.assigned: list[set[tuple[str, int]]] = []
        self.revoked: list[set[tuple[str, int]]] = []
        self.lost: list[set[tuple[str, int]]] = []

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned.append({(tp.topic, tp.partition) for tp in partitions})

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revoked.append({(tp.topic, tp.partition) for tp in partitions})

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.lost.append({(tp.topic, tp.partition) for tp in partitions})

    def revoked_partitions(self) -> set[tuple[str, int]]:
        return set().union(*self.revoked)


def member(
    listener: KafkaListener, group: str, name: str, topics: list[str], **extra: Any
) -> tuple[Consumer, Tracking]:
    consumer = opened(
        Consumer(
            {
                "bootstrap.servers": bootstrap(listener),
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
                **extra,
            }
        )
    )
    tracking = Tracking()
    consumer.subscribe(
        topics,
        on_assign=tracking.on_assign,
        on_revoke=tracking.on_revoke,
        on_lost=tracking.on_lost,
    )
    return consumer, tracking


def owned(consumer: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


async def assignment_within(
    listener: KafkaListener,
    group: str,
    members: list[Consumer],
    expected: set[tuple[str, int]],
    timeout_s: float = 20,
) -> list[set[tuple[str, int]]]:
    """Poll every member until their assignments are disjoint, cover ``expected`` and none is
    empty, and the coordinator agrees the rebalance is over; the assignments.

    Covering the partitions is not enough: while a member joins, an old member may have released
    a partition the newcomer already holds before it releases the next (KIP-848 reconciles one
    step at a time). So a consumer group must also be Stable, each member holding exactly what
    the coordinator assigned it. A classic group's view holds its assignment as opaque bytes, so
    for one the consumers' own view is all there is."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = await asyncio.to_thread(poll_all, members)
        if set().union(*held) == expected and sum(map(len, held)) == len(expected) and all(held):
            view = listener.runtime.group(group)
            if not isinstance(view, ConsumerGroupView) or settled(view, held):
                return held
        if time.monotonic() > deadline:
            raise AssertionError(f"no settled assignment after {timeout_s} s: {held}")


def poll_all(members: list[Consumer]) -> list[set[tuple[str, int]]]:
    """Poll each member once, briefly; what each holds then."""
    for consumer in members:
        consumer.poll(0.05)
    return [owned(c) for c in members]


def settled(view: ConsumerGroupView, held: list[set[tuple[str, int]]]) -> bool:
    """Whether the group is Stable and its members hold what the coordinator assigned them."""
    assigned = [
        {(topic, p) for topic, ps in m.assigned.items() for p in ps} for m in view.members.values()
    ]
    return view.state.value == "Stable" and sorted(map(sorted, assigned)) == sorted(
        map(sorted, held)
    )


def group_view(listener: KafkaListener, group: str) -> ConsumerGroupView:
    view = listener.runtime.group(group)
    assert isinstance(view, ConsumerGroupView), view
    return view


def partitions(topic: str, count: int) -> set[tuple[str, int]]:
    return {(topic, p) for p in range(count)}


async def test_two_members_join_consume_commit_and_read_their_commits_back(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 6, produce_rate_per_s=50)
    first, _ = member(kafka, "g", "first", [TOPIC])
    second, _ = member(kafka, "g", "second", [TOPIC])
    held = await assignment_within(kafka, "g", [first, second], partitions(TOPIC, 6))
    assert sorted(map(len, held)) == [3, 3]
    view = group_view(kafka, "g")
    assert view.state.value == "Stable" and len(view.members) == 2

    def consume_one(consumer: Consumer) -> Any:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                return message
        raise AssertionError("nothing consumed")

    message = await asyncio.to_thread(consume_one, first)
    assert (message.topic(), message.partition()) in held[0]
    offsets = [TopicPartition(TOPIC, p, 7 + p) for _, p in sorted(held[0])]
    await asyncio.to_thread(first.commit, offsets=offsets, asynchronous=False)
    read_back = await asyncio.to_thread(
        first.committed, [TopicPartition(TOPIC, p) for _, p in sorted(held[0])], 10
    )
    assert [(tp.partition, tp.offset) for tp in read_back] == [
        (p, 7 + p) for _, p in sorted(held[0])
    ]
    await asyncio.to_thread(first.close)
    await asyncio.to_thread(second.close)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
async def test_a_member_joining_and_one_leaving_move_only_the_partitions_that_change_owner(
    kafka: KafkaListener, assignor: str
) -> None:
    await kafka.runtime.create_topic(TOPIC, 6)
    settings = {"group.remote.assignor": assignor}
    a, a_log = member(kafka, "moves", "a", [TOPIC], **settings)
    b, b_log = member(kafka, "moves", "b", [TOPIC], **settings)
    before = await assignment_within(kafka, "moves", [a, b], partitions(TOPIC, 6))
    assert {m.server_assignor for m in group_view(kafka, "moves").members.values()} == {assignor}
    a_log.revoked.clear()
    b_log.revoked.clear()

    c, c_log = member(kafka, "moves", "c", [TOPIC], **settings)
    after = await assignment_within(kafka, "moves", [a, b, c], partitions(TOPIC, 6))
    assert sorted(map(len, after)) == [2, 2, 2]
    # Only what moved was revoked (incremental callbacks), and nothing was lost.
    assert a_log.revoked_partitions() == before[0] - after[0]
    assert b_log.revoked_partitions() == before[1] - after[1]
    assert not (a_log.lost or b_log.lost or c_log.revoked)
    moved = (before[0] - after[0]) | (before[1] - after[1])
    assert after[2] <= moved
    if assignor == "uniform":  # sticky: the newcomer's share moves, nothing else
        assert moved == after[2]

    a_log.revoked.clear()
    b_log.revoked.clear()
    await asyncio.to_thread(c.close)
    final = await assignment_within(kafka, "moves", [a, b], partitions(TOPIC, 6))
    if assignor == "uniform":  # sticky: the leaver's partitions only
        assert final[0] >= after[0] and final[1] >= after[1]
        assert not (a_log.revoked_partitions() or b_log.revoked_partitions())
    assert a_log.revoked_partitions() == after[0] - final[0]
    assert b_log.revoked_partitions() == after[1] - final[1]
    view = group_view(kafka, "moves")
    assert view.state.value == "Stable" and len(view.members) == 2
    await asyncio.to_thread(a.close)
    await asyncio.to_thread(b.close)


async def test_a_static_member_restarts_and_gets_its_partitions_back_with_no_revocation(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 4)
    stays, stays_log = member(kafka, "static", "stays", [TOPIC], **{"group.instance.id": "s-1"})
    goes, _ = member(kafka, "static", "goes", [TOPIC], **{"group.instance.id": "s-2"})
    before = await assignment_within(kafka, "static", [stays, goes], partitions(TOPIC, 4))
    epoch = group_view(kafka, "static").group_epoch
    stays_log.revoked.clear()

    await asyncio.to_thread(goes.close)  # a static member leaves with epoch -2
    back, back_log = member(kafka, "static", "back", [TOPIC], **{"group.instance.id": "s-2"})
    after = await assignment_within(kafka, "static", [stays, back], partitions(TOPIC, 4))
    assert after == before
    assert not stays_log.revoked and not back_log.revoked
    view = group_view(kafka, "static")
    assert view.group_epoch == epoch
    assert sorted(m.instance_id or "" for m in view.members.values()) == ["s-1", "s-2"]
    await asyncio.to_thread(stays.close)
    await asyncio.to_thread(back.close)


async def test_a_regex_subscription_picks_up_a_topic_created_later(kafka: KafkaListener) -> None:
    await kafka.runtime.create_topic("logs-a", 2)
    await kafka.runtime.create_topic("metrics", 2)
    reader, _ = member(kafka, "logs", "reader", ["^logs-.*"])
    first = await assignment_within(kafka, "logs", [reader], partitions("logs-a", 2))
    assert first == [partitions("logs-a", 2)]

    await kafka.runtime.create_topic("logs-b", 3)
    grown = await assignment_within(
        kafka, "logs", [reader], partitions("logs-a", 2) | partitions("logs-b", 3)
    )
    assert grown == [partitions("logs-a", 2) | partitions("logs-b", 3)]
    (view_member,) = group_view(kafka, "logs").members.values()
    assert view_member.subscribed_topic_regex == "(^logs-.*)"
    await asyncio.to_thread(reader.close)


async def test_the_admin_client_describes_and_lists_consumer_groups_beside_classic_ones(
    kafka: KafkaListener,
) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    await kafka.runtime.create_topic(TOPIC, 4)
    modern, _ = member(kafka, "modern", "modern-1", [TOPIC])
    classic = opened(
        Consumer(
            {
                "bootstrap.servers": bootstrap(kafka),
                "group.id": "classic",
                "client.id": "classic-1",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
    )
    classic.subscribe([TOPIC])
    await assignment_within(kafka, "modern", [modern], partitions(TOPIC, 4))
    await assignment_within(kafka, "classic", [classic], partitions(TOPIC, 4))
    admin = AdminClient({"bootstrap.servers": bootstrap(kafka)})

    def describe(group: str) -> Any:
        return admin.describe_consumer_groups([group], request_timeout=10)[group].result()

    described = await asyncio.to_thread(describe, "modern")
    assert described.type == ConsumerGroupType.CONSUMER
    assert described.partition_assignor == "uniform"
    ((client_id, held),) = [
        (m.client_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
        for m in described.members
    ]
    assert (client_id, held) == ("modern-1", [0, 1, 2, 3])
    assert described.state == ConsumerGroupState.STABLE
    old_style = await asyncio.to_thread(describe, "classic")  # ConsumerGroupDescribe: 69
    assert old_style.type == ConsumerGroupType.CLASSIC
    assert old_style.state == ConsumerGroupState.STABLE

    def listed(**filters: Any) -> dict[str, Any]:
        result = admin.list_consumer_groups(request_timeout=10, **filters).result()
        return {g.group_id: g.type for g in result.valid}

    assert await asyncio.to_thread(listed) == {
        "modern": ConsumerGroupType.CONSUMER,
        "classic": ConsumerGroupType.CLASSIC,
    }
    consumer_only = await asyncio.to_thread(listed, types={ConsumerGroupType.CONSUMER})
    assert consumer_only == {"modern": ConsumerGroupType.CONSUMER}
    await asyncio.to_thread(modern.close)
    await asyncio.to_thread(classic.close)
