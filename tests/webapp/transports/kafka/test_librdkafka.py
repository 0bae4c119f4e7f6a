"""librdkafka (confluent-kafka) consumers join a group through the listener: assignment,
commits read back, and a leave that hands the partitions to the member that stays."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from webapp.transports.kafka.listener import KafkaListener

from .conftest import bootstrap

pytestmark = pytest.mark.asyncio

TOPIC = "orders"


def consumer(listener: KafkaListener, group: str, name: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap(listener),
            "group.id": group,
            "client.id": name,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
            **extra,
        }
    )


def assignment_within(members: list[Consumer], expected: int, timeout_s: float = 20) -> list[set]:
    """Poll every member until their assignments are disjoint and cover ``expected``
    partitions; the assignments."""
    deadline = time.monotonic() + timeout_s
    while True:
        for member in members:
            member.poll(0.1)
        owned = [{(tp.topic, tp.partition) for tp in member.assignment()} for member in members]
        union = set().union(*owned)
        if len(union) == expected and sum(map(len, owned)) == expected and all(owned):
            return owned
        if time.monotonic() > deadline:
            raise AssertionError(f"no complete assignment after {timeout_s} s: {owned}")


def read(member: Consumer, count: int, timeout_s: float = 20) -> list[Any]:
    """The first ``count`` messages ``member`` polls (fewer if ``timeout_s`` runs out)."""
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        message = member.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message)
    return got


async def test_two_librdkafka_consumers_share_a_topic_commit_and_one_leaves(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 4)
    first = consumer(kafka, "g1", "first")
    second = consumer(kafka, "g1", "second")
    first.subscribe([TOPIC])
    second.subscribe([TOPIC])

    owned = await asyncio.to_thread(assignment_within, [first, second], 4)
    assert owned[0].isdisjoint(owned[1])

    mine = sorted(owned[0])
    offsets = [TopicPartition(TOPIC, partition, 10 + partition) for _, partition in mine]
    await asyncio.to_thread(first.commit, offsets=offsets, asynchronous=False)
    committed = await asyncio.to_thread(
        first.committed, [TopicPartition(TOPIC, p) for _, p in mine], 10
    )
    assert [(tp.partition, tp.offset) for tp in committed] == [(p, 10 + p) for _, p in mine]
    assert kafka.runtime.committed_offsets("g1")[(TOPIC, mine[0][1])].offset == 10 + mine[0][1]

    await asyncio.to_thread(second.close)
    (alone,) = await asyncio.to_thread(assignment_within, [first], 4)
    assert alone == {(TOPIC, p) for p in range(4)}
    view = kafka.runtime.group("g1")
    assert view is not None and len(view.members) == 1
    await asyncio.to_thread(first.close)


async def test_the_admin_client_lists_describes_and_deletes_groups(kafka: KafkaListener) -> None:
    from confluent_kafka import ConsumerGroupState, KafkaException
    from confluent_kafka.admin import AdminClient

    await kafka.runtime.create_topic(TOPIC, 2)
    member = consumer(kafka, "busy", "member")
    member.subscribe([TOPIC])
    await asyncio.to_thread(assignment_within, [member], 2)
    idle = consumer(kafka, "idle", "once")
    idle.subscribe([TOPIC])
    await asyncio.to_thread(assignment_within, [idle], 2)
    await asyncio.to_thread(idle.close)
    admin = AdminClient({"bootstrap.servers": bootstrap(kafka)})

    def listed() -> dict[str, Any]:
        result = admin.list_consumer_groups(request_timeout=10).result()
        return {g.group_id: g.state for g in result.valid}

    assert await asyncio.to_thread(listed) == {
        "busy": ConsumerGroupState.STABLE,
        "idle": ConsumerGroupState.EMPTY,
    }
    (described,) = (
        await asyncio.to_thread(
            lambda: admin.describe_consumer_groups(["busy"], request_timeout=10)["busy"].result()
        ),
    )
    assert described.state == ConsumerGroupState.STABLE
    assert described.partition_assignor == "range"
    ((client_id, owned),) = [
        (m.client_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
        for m in described.members
    ]
    assert (client_id, owned) == ("member", [0, 1])

    def delete(group: str) -> None:
        admin.delete_consumer_groups([group], request_timeout=10)[group].result()

    await asyncio.to_thread(delete, "idle")
    with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
        await asyncio.to_thread(delete, "busy")
    assert set(await asyncio.to_thread(listed)) == {"busy"}
    await asyncio.to_thread(member.close)


async def test_the_admin_client_lists_every_topic_with_its_partitions(kafka: KafkaListener) -> None:
    """AdminClient.list_topics(): Metadata v9 for all topics, the first thing a new user runs."""
    from confluent_kafka.admin import AdminClient

    await kafka.runtime.create_topic(TOPIC, 3)
    await kafka.runtime.create_topic("payments", 2)
    admin = AdminClient({"bootstrap.servers": bootstrap(kafka)})
    metadata = await asyncio.to_thread(admin.list_topics, timeout=10)
    assert {name: sorted(t.partitions) for name, t in metadata.topics.items()} == {
        TOPIC: [0, 1, 2],
        "payments": [0, 1],
    }
    assert [broker.port for broker in metadata.brokers.values()] == [kafka.port]


async def test_kcat_lists_the_brokers_and_every_topic(kafka: KafkaListener) -> None:
    """Debian's kcat (librdkafka inside) lists the cluster as it would a real one: ``kcat -L``."""
    import json
    import shutil
    import subprocess

    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is not installed (make system installs it)"
    await kafka.runtime.create_topic(TOPIC, 3)
    listed = await asyncio.to_thread(
        subprocess.run,
        [kcat, "-b", bootstrap(kafka), "-L", "-J", "-m", "10"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert listed.returncode == 0, listed.stderr
    metadata = json.loads(listed.stdout)
    assert [broker["name"] for broker in metadata["brokers"]] == [bootstrap(kafka)]
    assert [
        (topic["topic"], sorted(p["partition"] for p in topic["partitions"]))
        for topic in metadata["topics"]
    ] == [(TOPIC, [0, 1, 2])]


async def test_a_producer_s_records_reach_a_consumer_with_the_right_high_watermark(
    kafka: KafkaListener,
) -> None:
    from confluent_kafka import Producer

    await kafka.runtime.create_topic("payments", 1)  # no simulated records: rate 0
    producer = Producer({"bootstrap.servers": bootstrap(kafka), "linger.ms": 5})
    sent = [(f"k{n}".encode(), f"payment {n}".encode()) for n in range(25)]
    delivered: list[int] = []

    def report(error: Any, message: Any) -> None:
        assert error is None, error
        delivered.append(message.offset())

    for key, value in sent:
        producer.produce("payments", key=key, value=value, partition=0, on_delivery=report)
    assert await asyncio.to_thread(producer.flush, 10) == 0
    assert sorted(delivered) == list(range(25))

    reader = consumer(kafka, "readers", "reader", **{"auto.offset.reset": "earliest"})
    reader.subscribe(["payments"])

    got = await asyncio.to_thread(read, reader, 25)
    assert [(m.key(), m.value()) for m in got] == sent
    assert [m.offset() for m in got] == list(range(25))
    low, high = await asyncio.to_thread(
        reader.get_watermark_offsets, TopicPartition("payments", 0), 10, False
    )
    assert (low, high) == (0, 25)
    await asyncio.to_thread(reader.close)


async def test_librdkafka_reads_a_simulated_topic_s_records(kafka: KafkaListener) -> None:
    await kafka.runtime.create_topic("clicks", 1, produce_rate_per_s=200)
    await asyncio.sleep(0.3)
    reader = consumer(kafka, "clickers", "reader", **{"auto.offset.reset": "earliest"})
    reader.subscribe(["clicks"])

    got = await asyncio.to_thread(read, reader, 10)
    assert [m.offset() for m in got] == list(range(10))
    assert [m.value() for m in got] == [f"clicks/0/{n}".encode() for n in range(10)]
    await asyncio.to_thread(reader.close)


async def test_a_static_librdkafka_member_restarts_without_a_rebalance(
    kafka: KafkaListener,
) -> None:
    from coordinator_engine.events import StateChanged

    await kafka.runtime.create_topic(TOPIC, 4)
    static = {"group.instance.id": "billing-1", "session.timeout.ms": 10000}
    first = consumer(kafka, "statics", "a", **static)
    other = consumer(kafka, "statics", "b", **{"group.instance.id": "billing-2"})
    first.subscribe([TOPIC])
    other.subscribe([TOPIC])
    before = await asyncio.to_thread(assignment_within, [first, other], 4)
    generation = kafka.runtime.group("statics").generation_id
    changes: list[Any] = []
    kafka.runtime.add_listener(
        lambda e: changes.append(e.event) if isinstance(e.event, StateChanged) else None
    )
    # A static member's close does not leave the group (KIP-345): it comes back as itself.
    await asyncio.to_thread(first.close)
    again = consumer(kafka, "statics", "a", **static)
    again.subscribe([TOPIC])
    after = await asyncio.to_thread(assignment_within, [again, other], 4)
    assert after == before
    assert kafka.runtime.group("statics").generation_id == generation
    assert [c for c in changes if c.group_id == "statics"] == []
    await asyncio.to_thread(again.close)
    await asyncio.to_thread(other.close)


async def test_cooperative_sticky_librdkafka_members_rebalance_incrementally(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic(TOPIC, 6)
    cooperative = {"partition.assignment.strategy": "cooperative-sticky"}
    revoked: list[set[tuple[str, int]]] = []

    def on_revoke(_: Any, partitions: list[TopicPartition]) -> None:
        revoked.append({(tp.topic, tp.partition) for tp in partitions})

    first = consumer(kafka, "coop", "a", **cooperative)
    first.subscribe([TOPIC], on_revoke=on_revoke)
    (alone,) = await asyncio.to_thread(assignment_within, [first], 6)
    second = consumer(kafka, "coop", "b", **cooperative)
    second.subscribe([TOPIC])
    owned = await asyncio.to_thread(assignment_within, [first, second], 6)
    assert [len(o) for o in owned] == [3, 3]
    # Incremental: the first member gave up only the three partitions that moved, and kept
    # the other three throughout.
    assert revoked == [alone - owned[0]]
    assert kafka.runtime.group("coop").protocol_name == "cooperative-sticky"
    await asyncio.to_thread(second.close)
    await asyncio.to_thread(first.close)


async def test_produced_records_survive_a_restart_of_the_runtime_and_listener(
    kafka: KafkaListener, make_runtime: Any, tmp_path: Any
) -> None:
    from confluent_kafka import Producer

    from webapp.runtime.clock import WallClock

    from ...helpers import serving

    await kafka.runtime.create_topic("ledger", 1)
    producer = Producer({"bootstrap.servers": bootstrap(kafka)})
    for n in range(5):
        producer.produce("ledger", value=f"entry {n}".encode(), partition=0)
    assert await asyncio.to_thread(producer.flush, 10) == 0
    await kafka.stop()
    await kafka.runtime.stop()

    async with serving(make_runtime(clock=WallClock())) as runtime:
        again = KafkaListener(
            runtime, host="127.0.0.1", port=0, records_path=tmp_path / "records.db"
        )
        await again.start()
        try:
            reader = consumer(again, "auditors", "auditor", **{"auto.offset.reset": "earliest"})
            reader.subscribe(["ledger"])
            got = await asyncio.to_thread(read, reader, 5)
            assert [(m.offset(), m.value()) for m in got] == [
                (n, f"entry {n}".encode()) for n in range(5)
            ]
            spec = runtime.topics.get("ledger")
            assert spec is not None and spec.log_end_offset(0, runtime.now_ms()) == 5
            await asyncio.to_thread(reader.close)
        finally:
            await again.stop()


async def test_a_classic_librdkafka_consumer_works_over_the_newest_versions_it_speaks(
    kafka: KafkaListener, highest_versions: dict[int, int]
) -> None:
    """librdkafka 2.16 takes the highest version both sides speak: Metadata 12+ with topic
    ids, Fetch 13+ by topic id, OffsetCommit 9 and OffsetFetch 9. A classic consumer joins,
    reads, commits and reads its commits back over them."""
    from webapp.transports.kafka import apis

    await kafka.runtime.create_topic("clicks", 2, produce_rate_per_s=200)
    await asyncio.sleep(0.3)
    reader = consumer(kafka, "newest", "reader", **{"auto.offset.reset": "earliest"})
    reader.subscribe(["clicks"])

    got = await asyncio.to_thread(read, reader, 20)
    assert len(got) == 20
    assert all(m.value() == f"clicks/{m.partition()}/{m.offset()}".encode() for m in got)
    ends = {m.partition(): m.offset() + 1 for m in got}
    offsets = [TopicPartition("clicks", p, end) for p, end in sorted(ends.items())]
    await asyncio.to_thread(reader.commit, offsets=offsets, asynchronous=False)
    committed = await asyncio.to_thread(
        reader.committed, [TopicPartition("clicks", p) for p in sorted(ends)], 10
    )
    assert [(tp.partition, tp.offset) for tp in committed] == sorted(ends.items())
    await asyncio.to_thread(reader.close)
    assert highest_versions[apis.METADATA] >= 12
    assert highest_versions[apis.FETCH] >= 13
    assert (highest_versions[apis.OFFSET_COMMIT], highest_versions[apis.OFFSET_FETCH]) == (9, 9)


async def test_the_admin_client_lists_groups_by_type(kafka: KafkaListener) -> None:
    """ListGroups v5 (KIP-848): the type of each group, and the filter by type. A handoff
    group (type and protocol type ``handoff``) is left out by librdkafka, as before: it lists
    only groups of protocol type ``consumer``."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    from coordinator_engine import HandoffHeartbeatRequest

    await kafka.runtime.create_topic(TOPIC, 2)
    joined = await kafka.runtime.submit(
        HandoffHeartbeatRequest(
            group_id="handing-off",
            member_id="h1",
            member_epoch=0,
            session_timeout_ms=30_000,
            topics=(TOPIC,),
        )
    )
    assert joined.error_code == 0
    member = consumer(kafka, "busy", "member")
    member.subscribe([TOPIC])
    await asyncio.to_thread(assignment_within, [member], 2)
    admin = AdminClient({"bootstrap.servers": bootstrap(kafka)})

    def listed(**filters: Any) -> dict[str, Any]:
        result = admin.list_consumer_groups(request_timeout=10, **filters).result()
        assert not result.errors
        return {g.group_id: (g.type, g.state) for g in result.valid}

    stable = (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE)
    assert await asyncio.to_thread(listed) == {"busy": stable}
    assert await asyncio.to_thread(listed, types={ConsumerGroupType.CLASSIC}) == {"busy": stable}
    assert await asyncio.to_thread(listed, types={ConsumerGroupType.CONSUMER}) == {}
    assert (
        await asyncio.to_thread(
            listed, types={ConsumerGroupType.CLASSIC}, states={ConsumerGroupState.EMPTY}
        )
        == {}
    )
    await asyncio.to_thread(member.close)
