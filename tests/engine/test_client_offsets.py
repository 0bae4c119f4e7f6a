"""Offsets through the client: auto-commit, manual commit, starting positions, and the commit
before a partition changes owner (eager: before revoking all; cooperative: the revoked ones)."""

from __future__ import annotations

import pytest

from coordinator_engine.client import (
    CommitCompleted,
    CommitFailed,
    ConsumerConfig,
    ConsumerRebalanceListener,
    OffsetsFetched,
)
from coordinator_engine.client.events import Partitions
from coordinator_engine.requests import (
    OffsetCommitRequest,
    OffsetFetchRequest,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.responses import OffsetFetchResponse
from tests.engine.client_harness import ClientHarness, no_partition_owned_twice

GROUP = "orders"
TOPICS = {"payments": 4}


def config(*assignors: str, **overrides: object) -> ConsumerConfig:
    settings: dict[str, object] = {"session_timeout_ms": 10000, "heartbeat_interval_ms": 1000}
    settings.update(overrides)
    return ConsumerConfig(GROUP, ("payments",), assignors or ("range",), **settings)  # type: ignore[arg-type]


def committed_in_engine(harness: ClientHarness) -> dict[tuple[str, int], int]:
    reply = harness.coordinator.handle(OffsetFetchRequest(group_id=GROUP), harness.now)
    response = reply.response
    assert isinstance(response, OffsetFetchResponse)
    return {(d.topic, d.partition): d.offset for d in response.partitions}


def test_auto_commit_stores_the_consumed_positions_every_interval() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config(auto_commit_interval_ms=5000))
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client
    assert client.positions == {("payments", p): 0 for p in range(4)}  # "earliest"
    client.record_consumed("payments", 1, 17)
    client.record_consumed("payments", 3, 5)
    consumed_at = harness.now

    harness.run_until(lambda: bool(consumer.events_of(CommitCompleted)), within_ms=6000)

    (done,) = consumer.events_of(CommitCompleted)
    assert done.auto and done.at_ms - consumed_at <= 5000
    expected = {("payments", 0): 0, ("payments", 1): 17, ("payments", 2): 0, ("payments", 3): 5}
    assert done.offsets == expected
    assert committed_in_engine(harness) == expected
    assert client.committed == expected
    (commit,) = consumer.sent_of(OffsetCommitRequest)
    assert (commit.generation_id, commit.member_id) == (client.generation, client.member_id)


def test_record_positions_records_many_partitions_at_once_as_record_consumed_does() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config(auto_commit_interval_ms=5000))
    harness.run_until(harness.stable, within_ms=30000)
    client = consumer.client

    client.record_positions({("payments", 1): 17, ("payments", 3): 5})

    assert client.positions == {
        ("payments", 0): 0,
        ("payments", 1): 17,
        ("payments", 2): 0,
        ("payments", 3): 5,
    }
    with pytest.raises(ValueError, match=r"record_positions: partition .* is not assigned"):
        client.record_positions({("payments", 2): 9, ("other", 0): 1})
    assert client.positions[("payments", 2)] == 9  # in order, as record_consumed one by one
    with pytest.raises(ValueError, match="must be an int >= 0"):
        client.record_positions({("payments", 0): -1})


def test_a_manual_commit_is_stored_and_reported() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config(enable_auto_commit=False))
    harness.run_until(harness.stable, within_ms=30000)

    consumer.client.commit({("payments", 2): 99})
    harness.step()
    harness.run_for(20000)

    assert [(e.offsets, e.auto) for e in consumer.events_of(CommitCompleted)] == [
        ({("payments", 2): 99}, False)
    ]
    assert committed_in_engine(harness) == {("payments", 2): 99}
    assert consumer.client.committed[("payments", 2)] == 99


def test_a_commit_with_no_active_group_fails() -> None:
    harness = ClientHarness(TOPICS)
    consumer = harness.add("c0", config(enable_auto_commit=False))
    consumer.client.commit({("payments", 0): 1})
    harness.run_until(harness.stable, within_ms=30000)

    (failed,) = consumer.events_of(CommitFailed)
    assert failed.offsets == {("payments", 0): 1} and not failed.auto
    assert consumer.sent_of(OffsetCommitRequest) == []


@pytest.mark.parametrize("reset", ["earliest", "none"])
def test_new_partitions_start_from_the_committed_offset_or_the_reset_policy(reset: str) -> None:
    harness = ClientHarness(TOPICS)
    harness.coordinator.handle(
        OffsetCommitRequest(
            group_id=GROUP,
            offsets=(PartitionOffset(topic="payments", partition=0, offset=7),),
        ),
        0,
    )
    consumer = harness.add("c0", config(auto_offset_reset=reset, enable_auto_commit=False))
    harness.run_until(harness.stable, within_ms=30000)
    harness.step()

    unknown = 0 if reset == "earliest" else -1
    expected = {("payments", 0): 7} | {("payments", p): unknown for p in (1, 2, 3)}
    assert consumer.client.positions == expected
    (fetched,) = consumer.events_of(OffsetsFetched)
    assert fetched.positions == expected
    (fetch,) = consumer.sent_of(OffsetFetchRequest)
    assert fetch.partitions == tuple(
        TopicPartition(topic="payments", partition=p) for p in range(4)
    )


@pytest.mark.parametrize("assignor", ["range", "sticky", "cooperative-sticky"])
def test_a_partition_moves_to_its_new_owner_at_the_position_its_old_owner_consumed(
    assignor: str,
) -> None:
    harness = ClientHarness(TOPICS)
    harness.checks.append(no_partition_owned_twice)
    old = harness.add("c0", config(assignor, auto_commit_interval_ms=60000))
    harness.run_until(harness.stable, within_ms=30000)
    for partition in range(4):
        old.client.record_consumed("payments", partition, 100 + partition)

    new = harness.add("c1", config(assignor))
    harness.run_until(harness.stable, within_ms=30000)
    harness.step()

    moved = new.client.assignment
    assert len(moved) == 2
    assert new.client.positions == {tp: 100 + tp[1] for tp in moved}
    if assignor == "cooperative-sticky":
        # Besides the commit before rejoining, the revoked partitions are committed on their own.
        commits = [
            {(o.topic, o.partition) for o in r.offsets} for r in old.sent_of(OffsetCommitRequest)
        ]
        assert set(moved) in commits


def test_a_listener_hears_revocations_and_assignments_and_may_seek() -> None:
    calls: list[tuple[str, Partitions]] = []
    harness = ClientHarness(TOPICS)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, partitions: Partitions) -> None:
            calls.append(("revoked", partitions))

        def on_partitions_assigned(self, partitions: Partitions) -> None:
            calls.append(("assigned", partitions))
            for topic, partition in partitions:
                client.seek(topic, partition, 1000)

    consumer = harness.add("c0", config(), listener=Listener())
    client = consumer.client
    harness.run_until(harness.stable, within_ms=30000)
    harness.add("c1", config())
    harness.run_until(harness.stable, within_ms=30000)

    all_four = tuple(("payments", p) for p in range(4))
    assert calls == [
        ("assigned", all_four),
        ("revoked", all_four),
        ("assigned", tuple(sorted(client.assignment))),
    ]
    assert client.positions == dict.fromkeys(client.assignment, 1000)
    assert consumer.sent_of(OffsetFetchRequest) == []  # every position was set by seek
