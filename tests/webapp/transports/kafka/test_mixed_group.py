"""One group, four kinds of member: librdkafka, kafka-python, aiokafka (all three over the
Kafka listener) and a simulated consumer (in the runtime's process) share one topic with the
range assignor; the coordinator sees each with its client id, and their assignments are
disjoint and complete."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.coordinator.assignors.range import RangePartitionAssignor

from coordinator_engine import DescribeGroupsRequest
from coordinator_engine.consumer_protocol import decode_assignment
from webapp.simulation.consumer import ConsumerSpec
from webapp.simulation.manager import Simulation
from webapp.transports.kafka.listener import KafkaListener

from .clients import Member, Polling, until
from .conftest import bootstrap

pytestmark = pytest.mark.asyncio

GROUP = "mixed"
TOPIC = "orders"


async def test_librdkafka_kafka_python_aiokafka_and_a_simulated_consumer_share_one_group(
    kafka: KafkaListener,
) -> None:
    runtime = kafka.runtime
    await runtime.create_topic(TOPIC, 8, 10.0)
    simulation = Simulation(runtime)
    librdkafka = Polling(kafka, GROUP, "librdkafka-member", TOPIC)
    kafka_python = await asyncio.to_thread(Member, kafka, GROUP, "kafka-python-member")
    kafka_python.start(TOPIC)
    aio = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap(kafka),
        group_id=GROUP,
        client_id="aiokafka-member",
        # aiokafka's default is roundrobin only: the common assignor is range.
        partition_assignment_strategy=(RangePartitionAssignor,),
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )
    await aio.start()
    simulation.spawn(
        ConsumerSpec(group_id=GROUP, topics=(TOPIC,), heartbeat_interval_ms=500),
        name="simulated-member",
    )
    clients = {"librdkafka-member", "kafka-python-member", "aiokafka-member", "simulated-member"}
    owners: dict[str, set[tuple[str, int]]] = {}
    connections: dict[str, str | None] = {}

    async def described() -> bool:
        (group,) = (await runtime.submit(DescribeGroupsRequest(group_ids=(GROUP,)))).groups
        if group.group_state != "Stable":
            return False
        owners.clear()
        connections.clear()
        for member in group.members:
            partitions = decode_assignment(member.member_assignment).assigned_partitions
            owners[member.client_id] = set(partitions)
            connections[member.client_id] = runtime.connection_of(GROUP, member.member_id)
        return set(owners) == clients

    try:
        deadline = time.monotonic() + 40
        while not (await described() and all(owners.values())):
            assert time.monotonic() < deadline, (
                f"no stable group of the four: {owners} {simulation.to_json()}"
            )
            await asyncio.sleep(0.2)
        assert connections == {
            "librdkafka-member": "kafka",
            "kafka-python-member": "kafka",
            "aiokafka-member": "kafka",
            "simulated-member": "simulated",
        }
        everything = [tp for partitions in owners.values() for tp in partitions]
        assert sorted(everything) == [(TOPIC, p) for p in range(8)]
        # Each client agrees with the coordinator about its own partitions.
        await until(
            lambda: (
                {(tp.topic, tp.partition) for tp in aio.assignment()} == owners["aiokafka-member"]
            ),
            "aiokafka's own view",
            timeout_s=30,
        )
        await until(
            lambda: kafka_python.assignment() == owners["kafka-python-member"],
            "kafka-python's own view",
            timeout_s=30,
        )
    finally:
        await aio.stop()
        await asyncio.to_thread(kafka_python.close)
        await asyncio.to_thread(librdkafka.close)
        await simulation.stop_all()
