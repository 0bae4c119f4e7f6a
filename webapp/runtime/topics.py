"""The topic registry: which topics exist, how many partitions each has, where each log ends.

Theory of operation
===================

The lab has no brokers holding data. A topic is a name, a partition count and a produce rate,
and each partition's log-end offset grows at that rate, computed lazily from the time asked
about: no timer, no background task. The coordinator's runtime answers MetadataRequest from
here, and the JSON API computes each committed offset's lag against it.

Each partition keeps an *origin* ``(base_offset, since_ms)``; its log-end offset at ``now_ms``
is ``base_offset + floor(rate * (now_ms - since_ms) / 1000)``. Changing the rate moves every
origin to ``now`` (offsets never jump), a partition added later starts at ``(0, now)``. Like
Kafka, a topic's partitions can be added but never removed (Kafka's
``InvalidPartitionsException``), and topic names follow Kafka's ``Topic.validate``.

Every topic has a topic id, a random UUID (version 4) drawn when it is created, as Kafka's
controller draws one (``Uuid.randomUuid``): it never changes while the topic lives, and a topic
deleted and created again under the same name gets a new one, so a client that still holds the
old id learns the topic is gone (UNKNOWN_TOPIC_ID) instead of reading another topic's log.
Topics can be looked up by name and by id. Kafka's clients print an id as the URL-safe base64
of its 16 bytes without padding (``Uuid.toString``): :func:`topic_id_text`.

Pure: every method that depends on time takes ``now_ms``; errors are ``TopicError``
subclasses naming the problem. Persistence (the ``Topic`` model) is the runtime's business.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "MAX_PARTITIONS",
    "MAX_PRODUCE_RATE_PER_S",
    "InvalidTopicError",
    "TopicError",
    "TopicExistsError",
    "TopicRegistry",
    "TopicSpec",
    "UnknownTopicError",
    "topic_id_text",
]

#: Kafka's limit on a topic name (``Topic.MAX_NAME_LENGTH``) and its legal characters.
MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
#: The lab's own bounds, to keep every topic's state small.
MAX_PARTITIONS = 10_000
MAX_PRODUCE_RATE_PER_S = 1e9
INT64_MAX = 2**63 - 1


class TopicError(ValueError):
    """A topic operation that cannot be done; the message says why."""


class InvalidTopicError(TopicError):
    """A bad name, partition count or rate."""


class UnknownTopicError(TopicError):
    """No topic of that name."""


class TopicExistsError(TopicError):
    """A topic of that name already exists."""


def topic_id_text(topic_id: uuid.UUID) -> str:
    """``topic_id`` as Kafka's tools print it (``Uuid.toString``: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def validate_name(name: Any) -> str:
    if type(name) is not str:
        raise InvalidTopicError(f"topic name must be a string, got {type(name).__name__}")
    if name in ("", ".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: use only ASCII letters, digits, '.', '_' and '-'"
        )
    return name


def validate_partitions(partitions: Any) -> int:
    if type(partitions) is not int:
        raise InvalidTopicError(
            f"partitions must be an integer, got {type(partitions).__name__} {partitions!r:.40}"
        )
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise InvalidTopicError(f"partitions must lie in 1..{MAX_PARTITIONS}, got {partitions}")
    return partitions


def validate_rate(rate: Any) -> float:
    if type(rate) not in (int, float):
        raise InvalidTopicError(
            f"produce_rate_per_s must be a number, got {type(rate).__name__} {rate!r:.40}"
        )
    if not (math.isfinite(rate) and 0 <= rate <= MAX_PRODUCE_RATE_PER_S):
        raise InvalidTopicError(
            f"produce_rate_per_s must lie in 0..{MAX_PRODUCE_RATE_PER_S:g}, got {rate!r}"
        )
    return float(rate)


@dataclass(frozen=True, kw_only=True, slots=True)
class TopicSpec:
    """One topic. ``topic_id`` is its id (for its whole life); ``origins[p]`` is partition
    p's ``(base_offset, since_ms)``."""

    name: str
    topic_id: uuid.UUID
    produce_rate_per_s: float
    origins: tuple[tuple[int, int], ...]

    @property
    def partitions(self) -> int:
        return len(self.origins)

    def log_end_offset(self, partition: int, now_ms: int) -> int:
        """Partition ``partition``'s log-end offset at ``now_ms`` (ValueError if no such)."""
        if not 0 <= partition < len(self.origins):
            raise ValueError(f"{self.name} has no partition {partition}")
        base, since = self.origins[partition]
        produced = math.floor(self.produce_rate_per_s * max(0, now_ms - since) / 1000)
        return min(INT64_MAX, base + produced)

    def log_end_offsets(self, now_ms: int) -> list[int]:
        return [self.log_end_offset(p, now_ms) for p in range(len(self.origins))]

    def to_json(self, now_ms: int) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic_id": topic_id_text(self.topic_id),
            "partitions": self.partitions,
            "produce_rate_per_s": self.produce_rate_per_s,
            "log_end_offsets": self.log_end_offsets(now_ms),
        }


class TopicRegistry:
    """The topics, by name and by topic id. Not thread-safe: the runtime calls it from its
    event loop."""

    def __init__(self, specs: tuple[TopicSpec, ...] | list[TopicSpec] = ()) -> None:
        self._topics: dict[str, TopicSpec] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self.load(specs)

    def load(self, specs: tuple[TopicSpec, ...] | list[TopicSpec]) -> None:
        """Replace every topic by ``specs`` (the runtime's start, from the database)."""
        self._topics = {spec.name: spec for spec in specs}
        self._names_by_id = {spec.topic_id: spec.name for spec in specs}

    def create(
        self, name: str, partitions: int, produce_rate_per_s: float = 0, *, now_ms: int
    ) -> TopicSpec:
        """A new topic, with a new random topic id."""
        validate_name(name)
        validate_partitions(partitions)
        rate = validate_rate(produce_rate_per_s)
        if name in self._topics:
            raise TopicExistsError(f"topic {name!r} already exists")
        spec = TopicSpec(
            name=name,
            topic_id=uuid.uuid4(),
            produce_rate_per_s=rate,
            origins=((0, now_ms),) * partitions,
        )
        return self._put(spec)

    def set_partitions(self, name: str, partitions: int, *, now_ms: int) -> TopicSpec:
        """Grow ``name`` to ``partitions`` partitions; the new ones start empty at ``now_ms``."""
        spec = self._get(name)
        validate_partitions(partitions)
        if partitions < spec.partitions:
            raise InvalidTopicError(
                f"topic {name!r} has {spec.partitions} partitions, which is more than the "
                f"requested {partitions}: partitions can be added, never removed"
            )
        added = ((0, now_ms),) * (partitions - spec.partitions)
        return self._put(replace(spec, origins=spec.origins + added))

    def set_produce_rate(self, name: str, produce_rate_per_s: float, *, now_ms: int) -> TopicSpec:
        """Change the rate from ``now_ms`` on; offsets produced so far stay."""
        spec = self._get(name)
        rate = validate_rate(produce_rate_per_s)
        origins = tuple((offset, now_ms) for offset in spec.log_end_offsets(now_ms))
        return self._put(replace(spec, produce_rate_per_s=rate, origins=origins))

    def append(
        self, name: str, partition: int, count: int, *, now_ms: int
    ) -> tuple[TopicSpec, int]:
        """Make room for ``count`` records a producer sent to ``partition``: they take the
        offsets from its log-end offset at ``now_ms`` on, which moves past them (the rate goes
        on from there). The new spec and the first of those offsets."""
        spec = self._get(name)
        if not 0 <= partition < spec.partitions:
            raise UnknownTopicError(f"topic {name!r} has no partition {partition}")
        if count < 1:
            raise InvalidTopicError(f"cannot append {count} records")
        base = spec.log_end_offset(partition, now_ms)
        origins = list(spec.origins)
        origins[partition] = (base + count, now_ms)
        return self._put(replace(spec, origins=tuple(origins))), base

    def delete(self, name: str) -> TopicSpec:
        spec = self._get(name)
        del self._topics[name]
        del self._names_by_id[spec.topic_id]
        return spec

    def restore(self, spec: TopicSpec) -> None:
        """Put ``spec`` back as it was (undo a change that could not be persisted)."""
        self._put(spec)

    def get(self, name: str) -> TopicSpec | None:
        return self._topics.get(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicSpec | None:
        """The topic whose id is ``topic_id``, or None (an id never given, or a deleted
        topic's)."""
        name = self._names_by_id.get(topic_id)
        return None if name is None else self._topics[name]

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The id of topic ``name``, or None when there is no such topic (Kafka's zero id)."""
        spec = self._topics.get(name)
        return None if spec is None else spec.topic_id

    def all(self) -> list[TopicSpec]:
        """Every topic, sorted by name."""
        return [self._topics[name] for name in sorted(self._topics)]

    def log_end_offset(self, topic: str, partition: int, now_ms: int) -> int | None:
        """The log-end offset, or None for an unknown topic or partition."""
        spec = self._topics.get(topic)
        if spec is None or not 0 <= partition < spec.partitions:
            return None
        return spec.log_end_offset(partition, now_ms)

    def __len__(self) -> int:
        return len(self._topics)

    def _get(self, name: str) -> TopicSpec:
        spec = self._topics.get(name)
        if spec is None:
            raise UnknownTopicError(f"no topic {name!r}")
        return spec

    def _put(self, spec: TopicSpec) -> TopicSpec:
        self._topics[spec.name] = spec
        self._names_by_id[spec.topic_id] = spec.name
        return spec
