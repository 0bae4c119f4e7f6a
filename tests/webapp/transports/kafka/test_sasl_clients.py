"""Real Kafka clients against a listener that requires SASL: librdkafka (SCRAM-SHA-256 and
PLAIN), kafka-python and aiokafka sign in with the right password and consume and commit; a
wrong password is refused with each client's authentication error; DeleteGroups and
OffsetDelete are refused to a user who is not staff and done for one who is."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from webapp.transports.kafka.listener import KafkaListener

from .clients import until
from .conftest import SASL_USERS, bootstrap

pytestmark = pytest.mark.asyncio

TOPIC = "orders"


def sasl(mechanism: str, user: str, password: str | None = None) -> dict[str, str]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": SASL_USERS[user][0] if password is None else password,
    }


def librdkafka(listener: KafkaListener, group: str, **config: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap(listener),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            **config,
        }
    )


def consume_and_commit(consumer: Consumer) -> tuple[int, int]:
    """Poll until a record arrives, commit after it; (partition, committed offset) read back."""
    for _ in range(200):
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            break
    else:
        raise AssertionError("no record within 40 s")
    partition, offset = message.partition(), message.offset() + 1
    consumer.commit(offsets=[TopicPartition(TOPIC, partition, offset)], asynchronous=False)
    (committed,) = consumer.committed([TopicPartition(TOPIC, partition)], timeout=10)
    return partition, committed.offset


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
async def test_librdkafka_signs_in_consumes_and_commits(
    sasl_kafka: KafkaListener, mechanism: str
) -> None:
    await sasl_kafka.runtime.create_topic(TOPIC, 2, produce_rate_per_s=50)
    consumer = librdkafka(sasl_kafka, "billing", **sasl(mechanism, "alice"))
    consumer.subscribe([TOPIC])
    try:
        partition, committed = await asyncio.to_thread(consume_and_commit, consumer)
    finally:
        await asyncio.to_thread(consumer.close)
    assert committed > 0
    offsets = await sasl_kafka.runtime.submit(_offset_fetch("billing"))
    assert {(o.partition, o.offset) for o in offsets.partitions} >= {(partition, committed)}


async def test_a_consumer_protocol_member_signs_in_and_is_assigned(
    sasl_kafka: KafkaListener,
) -> None:
    """KIP-848's ConsumerGroupHeartbeat is served to an authenticated user who is not staff,
    as every consumer API is."""
    await sasl_kafka.runtime.create_topic(TOPIC, 2)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap(sasl_kafka),
            "group.id": "modern",
            "group.protocol": "consumer",
            **sasl("SCRAM-SHA-256", "alice"),
        }
    )
    consumer.subscribe([TOPIC])

    def assigned() -> set[int]:
        for _ in range(150):
            consumer.poll(0.2)
            owned = {tp.partition for tp in consumer.assignment()}
            if owned == {0, 1}:
                return owned
        return {tp.partition for tp in consumer.assignment()}

    try:
        assert await asyncio.to_thread(assigned) == {0, 1}
    finally:
        await asyncio.to_thread(consumer.close)


def _offset_fetch(group: str) -> Any:
    from coordinator_engine import OffsetFetchRequest

    return OffsetFetchRequest(group_id=group)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
async def test_librdkafka_with_a_wrong_password_gets_an_authentication_error(
    sasl_kafka: KafkaListener, mechanism: str
) -> None:
    errors: list[KafkaError] = []
    failed = threading.Event()

    def on_error(error: KafkaError) -> None:
        errors.append(error)
        if error.code() == KafkaError._AUTHENTICATION:
            failed.set()

    consumer = librdkafka(
        sasl_kafka, "billing", error_cb=on_error, **sasl(mechanism, "alice", "wrong")
    )
    consumer.subscribe([TOPIC])
    try:

        def poll_until_failed() -> None:
            for _ in range(100):
                consumer.poll(0.1)
                if failed.is_set():
                    return

        await asyncio.to_thread(poll_until_failed)
    finally:
        await asyncio.to_thread(consumer.close)
    refusal = next(e for e in errors if e.code() == KafkaError._AUTHENTICATION)
    expected = (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
        if mechanism == "SCRAM-SHA-256"
        else "Authentication failed: Invalid username or password"
    )
    assert expected in refusal.str()
    assert sasl_kafka.runtime.group("billing") is None  # it never reached the coordinator


async def test_librdkafka_without_sasl_is_not_served(sasl_kafka: KafkaListener) -> None:
    """A client that skips SASL sends ApiVersions, then Metadata: the connection is closed."""
    await sasl_kafka.runtime.create_topic(TOPIC, 1)
    consumer = librdkafka(sasl_kafka, "sneaky")
    consumer.subscribe([TOPIC])
    try:
        await asyncio.to_thread(lambda: [consumer.poll(0.2) for _ in range(10)])
        assert consumer.assignment() == []
    finally:
        await asyncio.to_thread(consumer.close)
    assert sasl_kafka.runtime.group("sneaky") is None


async def test_kafka_python_signs_in_consumes_and_commits(sasl_kafka: KafkaListener) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPartition
    from kafka.structs import OffsetAndMetadata

    await sasl_kafka.runtime.create_topic(TOPIC, 1, produce_rate_per_s=50)

    def run() -> tuple[int, int]:
        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap(sasl_kafka),
            group_id="ledger",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="root",
            sasl_plain_password="root-secret",
        )
        try:
            records: list[Any] = []
            for _ in range(40):
                for batch in consumer.poll(timeout_ms=500).values():
                    records.extend(batch)
                if records:
                    break
            assert records, "no record"
            partition = KafkaPartition(TOPIC, 0)
            consumer.commit({partition: OffsetAndMetadata(records[-1].offset + 1, "", -1)})
            return records[-1].offset + 1, consumer.committed(partition)
        finally:
            consumer.close()

    sent, committed = await asyncio.to_thread(run)
    assert committed == sent > 0


async def test_kafka_python_with_a_wrong_password_gets_its_authentication_error(
    sasl_kafka: KafkaListener, caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python fails the connection with SaslAuthenticationFailedError and Kafka's
    message, and keeps trying to bootstrap (as it does against Kafka)."""
    from kafka import KafkaConsumer

    def run() -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap(sasl_kafka),
            group_id="ledger",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
            api_version=(3, 7),  # no version probe in the constructor
        )
        try:
            consumer.subscribe([TOPIC])
            for _ in range(20):
                consumer.poll(timeout_ms=200)
                if refusals():
                    return
        finally:
            consumer.close()

    def refusals() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("kafka.") and "SaslAuthenticationFailedError" in r.getMessage()
        ]

    with caplog.at_level("WARNING", logger="kafka"):
        await asyncio.to_thread(run)
    assert refusals(), "kafka-python reported no SaslAuthenticationFailedError"
    assert all("Authentication failed: Invalid username or password" in m for m in refusals())
    assert sasl_kafka.runtime.group("ledger") is None


async def test_aiokafka_signs_in_consumes_and_commits(sasl_kafka: KafkaListener) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioPartition
    from aiokafka.structs import OffsetAndMetadata

    await sasl_kafka.runtime.create_topic(TOPIC, 1, produce_rate_per_s=50)
    consumer = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap(sasl_kafka),
        group_id="audit",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
    )
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=10000, max_records=5)
        records = [r for batch in batches.values() for r in batch]
        assert records
        partition = AioPartition(TOPIC, 0)
        await consumer.commit({partition: OffsetAndMetadata(records[-1].offset + 1, "")})
        assert await consumer.committed(partition) == records[-1].offset + 1
    finally:
        await consumer.stop()


async def test_aiokafka_with_a_wrong_password_does_not_start(
    sasl_kafka: KafkaListener, caplog: pytest.LogCaptureFixture
) -> None:
    """aiokafka's bootstrap fails; what it logs is the SaslAuthenticationFailedError with
    Kafka's message."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError as AioKafkaError

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap(sasl_kafka),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password="wrong",
        request_timeout_ms=5000,
    )
    with caplog.at_level("ERROR", logger="aiokafka"), pytest.raises(AioKafkaError):
        await consumer.start()
    await consumer.stop()
    logged = " ".join(r.getMessage() for r in caplog.records if r.name.startswith("aiokafka"))
    assert "[Error 58] SaslAuthenticationFailed" in logged
    assert (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256" in logged
    )


async def _empty_group_with_offsets(listener: KafkaListener, group: str) -> None:
    """A group that is Empty and holds a committed offset (what an admin deletes)."""
    consumer = librdkafka(listener, group, **sasl("SCRAM-SHA-256", "alice"))
    consumer.subscribe([TOPIC])
    try:
        await asyncio.to_thread(consume_and_commit, consumer)
    finally:
        await asyncio.to_thread(consumer.close)
    await until(lambda: _state(listener, group) == "Empty", f"{group} empty")


def _state(listener: KafkaListener, group: str) -> str | None:
    view = listener.runtime.group(group)
    return None if view is None else view.state.value


async def test_deleting_a_group_is_refused_to_a_user_who_is_not_staff(
    sasl_kafka: KafkaListener,
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    await sasl_kafka.runtime.create_topic(TOPIC, 1, produce_rate_per_s=50)
    await _empty_group_with_offsets(sasl_kafka, "done")

    def delete(user: str) -> None:
        admin = AdminClient(
            {"bootstrap.servers": bootstrap(sasl_kafka), **sasl("SCRAM-SHA-256", user)}
        )
        admin.delete_consumer_groups(["done"], request_timeout=10)["done"].result()

    with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
        await asyncio.to_thread(delete, "alice")
    assert _state(sasl_kafka, "done") == "Empty"
    await asyncio.to_thread(delete, "root")
    assert _state(sasl_kafka, "done") in (None, "Dead")
    # The listener's refusal never reached the engine; /metrics counts it as sent.
    errors = sasl_kafka.runtime.metrics.requests.error_counts()
    assert errors[("DeleteGroups", "GROUP_AUTHORIZATION_FAILED")] == 1
    assert errors[("DeleteGroups", "NONE")] == 1


async def test_deleting_offsets_is_refused_to_a_user_who_is_not_staff(
    sasl_kafka: KafkaListener,
) -> None:
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KafkaPartition
    from kafka.errors import GroupAuthorizationFailedError

    await sasl_kafka.runtime.create_topic(TOPIC, 1, produce_rate_per_s=50)
    await _empty_group_with_offsets(sasl_kafka, "spent")

    def delete_offsets(user: str) -> Any:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap(sasl_kafka),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username=user,
            sasl_plain_password=SASL_USERS[user][0],
        )
        try:
            return admin.delete_group_offsets("spent", [KafkaPartition(TOPIC, 0)])
        finally:
            admin.close()

    with pytest.raises(GroupAuthorizationFailedError):
        await asyncio.to_thread(delete_offsets, "alice")
    kept = await sasl_kafka.runtime.submit(_offset_fetch("spent"))
    assert [p.partition for p in kept.partitions] == [0]
    await asyncio.to_thread(delete_offsets, "root")
    gone = await sasl_kafka.runtime.submit(_offset_fetch("spent"))
    assert [p.partition for p in gone.partitions] == []
