"""The topic service: changes to topics, kept in Django's database and told to the engine.

The registry (:class:`~webapp.runtime.topics.TopicRegistry`) is the runtime's in-memory view;
a change is made there first, then stored (``Topic`` rows), and undone in the registry if it
could not be stored, so the two never disagree for longer than the write. The registry is also
the partition store of handoff groups, whose plans wait for the counts of the topics
they subscribe to: a change in a topic's partition count is told to the engine
(:meth:`TopicService.report_partitions`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from .database import in_database_thread
from .topics import TopicRegistry, TopicSpec, UnknownTopicError

__all__ = ["TopicService", "stored_topics"]


def stored_topics() -> list[TopicSpec]:
    """Every topic kept in Django's database (``Topic`` rows), by name."""
    from webapp.models import Topic

    return [
        TopicSpec(
            name=topic.name,
            topic_id=topic.topic_id,
            produce_rate_per_s=topic.produce_rate_per_s,
            origins=tuple((int(base), int(since)) for base, since in topic.origins),
        )
        for topic in Topic.objects.all()
    ]


def _save_topic(spec: TopicSpec) -> None:
    from webapp.models import Topic

    fields = {
        "topic_id": spec.topic_id,
        "produce_rate_per_s": spec.produce_rate_per_s,
        "origins": [list(origin) for origin in spec.origins],
    }
    # One INSERT ... ON CONFLICT DO UPDATE, not update_or_create's SELECT then write in one
    # transaction: in WAL mode a transaction that has read cannot start writing once another
    # connection committed meanwhile (SQLite fails it at once, "database is locked", without
    # waiting), and the history writer commits many times a second under a stream of commits.
    Topic.objects.bulk_create(
        [Topic(name=spec.name, **fields)],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=list(fields),
    )


def _delete_topic(name: str) -> None:
    from webapp.models import Topic

    Topic.objects.filter(name=name).delete()


class TopicService:
    """Topic changes for one runtime. ``check_serving()`` raises RuntimeNotReady when the
    runtime does not serve; ``now()`` is its clock; ``set_partitions(topic, count, topic_id)``
    tells the engine a topic's partition count (0: deleted) and its id (None: deleted)."""

    def __init__(
        self,
        registry: TopicRegistry,
        *,
        check_serving: Callable[[], None],
        now: Callable[[], int],
        set_partitions: Callable[[str, int, uuid.UUID | None], None],
    ) -> None:
        self.registry = registry
        self._check_serving = check_serving
        self._now = now
        self._set_partitions = set_partitions

    async def create(self, name: str, partitions: int, produce_rate_per_s: float = 0) -> TopicSpec:
        self._check_serving()
        spec = self.registry.create(name, partitions, produce_rate_per_s, now_ms=self._now())
        try:
            await in_database_thread(_save_topic, spec)
        except BaseException:
            self.registry.delete(name)
            raise
        self.report_partitions(name)
        return spec

    async def update(
        self,
        name: str,
        *,
        partitions: int | None = None,
        produce_rate_per_s: float | None = None,
    ) -> TopicSpec:
        """Grow the partition count and/or change the produce rate (all or nothing)."""
        self._check_serving()
        before = self.registry.get(name)
        if before is None:
            raise UnknownTopicError(f"no topic {name!r}")
        now = self._now()
        try:
            spec = before
            if partitions is not None:
                spec = self.registry.set_partitions(name, partitions, now_ms=now)
            if produce_rate_per_s is not None:
                spec = self.registry.set_produce_rate(name, produce_rate_per_s, now_ms=now)
            await in_database_thread(_save_topic, spec)
        except BaseException:
            self.registry.restore(before)
            raise
        if spec.partitions != before.partitions:
            self.report_partitions(name)
        return spec

    async def append_records(self, topic: str, partition: int, count: int) -> int:
        """Offsets for ``count`` records a producer sent (``TopicRegistry.append``), kept in the
        database before this returns; the first of them. TopicError if there is no such
        partition."""
        self._check_serving()
        before = self.registry.get(topic)
        if before is None:
            raise UnknownTopicError(f"no topic {topic!r}")
        spec, base = self.registry.append(topic, partition, count, now_ms=self._now())
        try:
            await in_database_thread(_save_topic, spec)
        except BaseException:
            self.registry.restore(before)
            raise
        return base

    async def delete(self, name: str) -> TopicSpec:
        self._check_serving()
        spec = self.registry.delete(name)
        try:
            await in_database_thread(_delete_topic, name)
        except BaseException:
            self.registry.restore(spec)
            raise
        self.report_partitions(name)
        return spec

    def report_partitions(self, *names: str) -> None:
        """Tell the engine the partition counts and ids of these topics (all when none are
        named; 0 for a deleted one)."""
        for name in names or [spec.name for spec in self.registry.all()]:
            spec = self.registry.get(name)
            if spec is None:
                self._set_partitions(name, 0, None)
            else:
                self._set_partitions(name, spec.partitions, spec.topic_id)
