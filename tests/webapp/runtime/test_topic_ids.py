"""Topic ids are kept in Django's database with their topics: a restarted runtime has the same
ids, a topic created again after a delete gets a new one, and the migration that brought ids
gives one to every topic stored before it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.webapp.helpers import serving
from webapp.models import Topic
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.runtime.topic_service import stored_topics


@pytest.mark.asyncio
async def test_a_restarted_runtime_keeps_every_topic_id_and_a_recreated_topic_gets_a_new_one(
    runtime: CoordinatorRuntime, make_runtime: Callable[..., CoordinatorRuntime]
) -> None:
    orders = await runtime.create_topic("orders", 2)
    audit = await runtime.create_topic("audit", 1, produce_rate_per_s=3)
    await runtime.update_topic("orders", partitions=4)
    await runtime.stop()

    async with serving(make_runtime()) as restarted:
        assert restarted.topics.get_by_id(orders.topic_id).name == "orders"  # type: ignore[union-attr]
        assert restarted.topics.get("audit").topic_id == audit.topic_id  # type: ignore[union-attr]
        await restarted.delete_topic("orders")
        again = await restarted.create_topic("orders", 2)
        assert again.topic_id != orders.topic_id
        assert restarted.topics.get_by_id(orders.topic_id) is None

    async with serving(make_runtime()) as after:
        assert after.topics.get("orders").topic_id == again.topic_id  # type: ignore[union-attr]
        assert after.topics.get_by_id(orders.topic_id) is None


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_topic_stored_before_it_an_id_of_its_own() -> None:
    executor = MigrationExecutor(connection)
    before = [("webapp", "0004_report_runs")]
    executor.migrate(before)
    old_topic = executor.loader.project_state(before).apps.get_model("webapp", "Topic")
    for name in ("orders", "audit", "payments"):
        old_topic.objects.create(name=name, produce_rate_per_s=0.0, origins=[[0, 0]])

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    ids = dict(Topic.objects.values_list("name", "topic_id"))
    assert set(ids) == {"orders", "audit", "payments"}
    assert all(isinstance(value, uuid.UUID) and value.version == 4 for value in ids.values())
    assert len(set(ids.values())) == 3
    assert {spec.name: spec.topic_id for spec in stored_topics()} == ids
