"""The topic registry (webapp.runtime.topics): partition counts and lazily growing log-end
offsets."""

from __future__ import annotations

import uuid

import pytest

from webapp.runtime.topics import (
    InvalidTopicError,
    TopicExistsError,
    TopicRegistry,
    UnknownTopicError,
    topic_id_text,
)

T0 = 1_000_000


def test_log_end_offsets_grow_at_the_produce_rate_from_creation() -> None:
    topics = TopicRegistry()
    spec = topics.create("orders", 2, produce_rate_per_s=10, now_ms=T0)
    assert spec.partitions == 2
    assert spec.log_end_offsets(T0) == [0, 0]
    assert spec.log_end_offsets(T0 + 1_050) == [10, 10]
    assert topics.log_end_offset("orders", 1, T0 + 60_000) == 600


def test_a_topic_without_a_rate_stays_empty_and_time_before_creation_counts_as_none() -> None:
    topics = TopicRegistry()
    topics.create("quiet", 1, now_ms=T0)
    assert topics.log_end_offset("quiet", 0, T0 + 10**9) == 0
    topics.create("busy", 1, produce_rate_per_s=5, now_ms=T0)
    assert topics.log_end_offset("busy", 0, T0 - 5_000) == 0


def test_added_partitions_start_empty_and_old_ones_keep_their_offsets() -> None:
    topics = TopicRegistry()
    topics.create("orders", 1, produce_rate_per_s=2, now_ms=T0)
    spec = topics.set_partitions("orders", 3, now_ms=T0 + 10_000)
    assert spec.log_end_offsets(T0 + 10_000) == [20, 0, 0]
    assert spec.log_end_offsets(T0 + 15_000) == [30, 10, 10]


def test_partitions_can_be_added_but_never_removed() -> None:
    topics = TopicRegistry()
    topics.create("orders", 3, now_ms=T0)
    with pytest.raises(
        InvalidTopicError,
        match="has 3 partitions, which is more than the "
        "requested 2: partitions can be added, never removed",
    ):
        topics.set_partitions("orders", 2, now_ms=T0)
    assert topics.get("orders").partitions == 3  # type: ignore[union-attr]


def test_changing_the_rate_keeps_what_was_produced() -> None:
    topics = TopicRegistry()
    topics.create("orders", 1, produce_rate_per_s=10, now_ms=T0)
    spec = topics.set_produce_rate("orders", 1, now_ms=T0 + 5_000)
    assert spec.log_end_offset(0, T0 + 5_000) == 50
    assert spec.log_end_offset(0, T0 + 7_000) == 52


def test_appended_records_take_the_next_offsets_and_the_rate_goes_on_after_them() -> None:
    topics = TopicRegistry()
    topics.create("orders", 2, produce_rate_per_s=10, now_ms=T0)
    spec, base = topics.append("orders", 1, 25, now_ms=T0 + 2_000)
    assert base == 20
    assert spec.log_end_offsets(T0 + 2_000) == [20, 45]
    assert spec.log_end_offsets(T0 + 3_000) == [30, 55]
    with pytest.raises(UnknownTopicError, match="has no partition 2"):
        topics.append("orders", 2, 1, now_ms=T0)
    with pytest.raises(InvalidTopicError, match="cannot append 0 records"):
        topics.append("orders", 0, 0, now_ms=T0)


def test_delete_get_all_and_unknown_topics() -> None:
    topics = TopicRegistry()
    topics.create("b", 1, now_ms=T0)
    topics.create("a", 2, now_ms=T0)
    assert [spec.name for spec in topics.all()] == ["a", "b"]
    assert topics.delete("a").name == "a"
    assert topics.get("a") is None
    assert topics.log_end_offset("a", 0, T0) is None
    assert topics.log_end_offset("b", 1, T0) is None  # no such partition
    with pytest.raises(UnknownTopicError, match="no topic 'a'"):
        topics.delete("a")
    with pytest.raises(UnknownTopicError):
        topics.set_partitions("a", 3, now_ms=T0)
    with pytest.raises(TopicExistsError, match="topic 'b' already exists"):
        topics.create("b", 1, now_ms=T0)


@pytest.mark.parametrize(
    ("name", "partitions", "rate", "message"),
    [
        ("", 1, 0, "topic name cannot be ''"),
        ("..", 1, 0, "topic name cannot be '..'"),
        ("a b", 1, 0, "topic name 'a b' is illegal"),
        ("x" * 250, 1, 0, "topic name is longer than 249 characters"),
        (7, 1, 0, "topic name must be a string, got int"),
        ("t", 0, 0, r"partitions must lie in 1\.\.10000, got 0"),
        ("t", True, 0, "partitions must be an integer, got bool"),
        ("t", 1.0, 0, "partitions must be an integer, got float"),
        ("t", 1, -1, "produce_rate_per_s must lie in 0..1e\\+09, got -1"),
        ("t", 1, float("inf"), "produce_rate_per_s must lie in"),
        ("t", 1, "5", "produce_rate_per_s must be a number, got str"),
    ],
)
def test_bad_names_counts_and_rates_are_refused(
    name: object, partitions: object, rate: object, message: str
) -> None:
    with pytest.raises(InvalidTopicError, match=message):
        TopicRegistry().create(name, partitions, rate, now_ms=T0)  # type: ignore[arg-type]


def test_every_topic_gets_its_own_id_and_is_found_by_it() -> None:
    topics = TopicRegistry()
    orders = topics.create("orders", 2, now_ms=T0)
    audit = topics.create("audit", 1, now_ms=T0)
    assert orders.topic_id != audit.topic_id
    assert orders.topic_id.version == 4  # a random UUID, as Kafka's controller draws one
    assert topics.get_by_id(orders.topic_id) == orders
    assert topics.get_by_id(uuid.uuid4()) is None


def test_a_topic_keeps_its_id_through_every_change() -> None:
    topics = TopicRegistry()
    topic_id = topics.create("orders", 1, now_ms=T0).topic_id
    topics.set_partitions("orders", 3, now_ms=T0)
    topics.set_produce_rate("orders", 5, now_ms=T0)
    spec, _ = topics.append("orders", 0, 10, now_ms=T0)
    assert spec.topic_id == topic_id
    assert topics.get_by_id(topic_id) == topics.get("orders") == spec


def test_a_topic_deleted_and_created_again_gets_a_new_id_and_the_old_one_is_unknown() -> None:
    topics = TopicRegistry()
    old = topics.create("orders", 1, now_ms=T0).topic_id
    topics.delete("orders")
    assert topics.get_by_id(old) is None
    new = topics.create("orders", 1, now_ms=T0).topic_id
    assert new != old
    assert topics.get_by_id(old) is None
    assert topics.get_by_id(new) == topics.get("orders")


def test_a_topic_id_reads_as_kafka_s_tools_print_it() -> None:
    topic_id = uuid.UUID("32167a60-0fdf-4c77-a8fc-0c7d6c4fb0a8")
    # Kafka's Uuid.toString: the 16 bytes as URL-safe base64 without padding.
    assert topic_id_text(topic_id) == "MhZ6YA_fTHeo_Ax9bE-wqA"
    topics = TopicRegistry()
    spec = topics.create("orders", 1, now_ms=T0)
    assert spec.to_json(T0)["topic_id"] == topic_id_text(spec.topic_id)
