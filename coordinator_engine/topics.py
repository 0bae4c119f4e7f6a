"""The topics the host reports: name → (topic id, partition count), as Kafka's coordinator
reads them from its metadata image (`MetadataImage.topics()`).

The host feeds it through `GroupCoordinator.set_topic_partitions` and `delete_topic`; it is a
host fact, never a record (after a restart the host reports every topic again). A topic is
*reported* once the host has said anything of it since the coordinator was built: with a count
above 0 it exists, with 0 (or deleted) it is gone. A topic never reported is *unknown*: a group
kind that stored what it last knew of it (consumer groups' subscription metadata) keeps that
until the host speaks, so a restart does not read as every topic vanishing.

Topic ids are Kafka's (`Uuid`, here a `uuid.UUID`): the host gives them, or the engine derives
one from the name, `uuid5(TOPIC_ID_NAMESPACE, name)` (the same name gives the same id, in every
process; a topic deleted and created again under the same name keeps it, where Kafka would
draw a new one). The names of ids seen since the coordinator was built are remembered after
their topic is gone, so records naming a deleted topic's id still read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from uuid import UUID, uuid5

__all__ = ["TOPIC_ID_NAMESPACE", "TopicImage", "TopicInfo", "default_topic_id"]

#: The namespace of the topic ids the engine derives from names.
TOPIC_ID_NAMESPACE: Final = UUID("6f1c8f0e-3b8a-5d7e-9c41-2a7d0b5e8f13")


def default_topic_id(name: str) -> UUID:
    """The id of a topic the host gave none for: ``uuid5(TOPIC_ID_NAMESPACE, name)``."""
    return uuid5(TOPIC_ID_NAMESPACE, name)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A reported topic: its id and partition count (0: the topic is gone)."""

    topic_id: UUID
    num_partitions: int


class TopicImage:
    """The host's topics (see the module docstring)."""

    __slots__ = ("names", "topics", "version")

    def __init__(self) -> None:
        self.topics: dict[str, TopicInfo] = {}
        #: Every id seen since the coordinator was built, to its name.
        self.names: dict[UUID, str] = {}
        #: Bumped by every change (Kafka's metadata image offset, in spirit).
        self.version = 0

    def update(self, name: str, num_partitions: int, topic_id: UUID | None) -> bool:
        """Record what the host says of `name`; True when that changed anything. A topic
        reported gone forgets its count but not its id's name."""
        old = self.topics.get(name)
        if topic_id is None:
            topic_id = old.topic_id if old is not None else default_topic_id(name)
        info = TopicInfo(topic_id=topic_id, num_partitions=num_partitions)
        if info == old:
            return False
        self.topics[name] = info
        self.names[topic_id] = name
        self.version += 1
        return True

    def reported(self, name: str) -> bool:
        return name in self.topics

    def partitions(self, name: str) -> int:
        """The partition count of a reported topic (0: gone); 0 for an unknown one."""
        info = self.topics.get(name)
        return 0 if info is None else info.num_partitions

    def topic_id(self, name: str) -> UUID:
        """The id of `name`: the reported one, else the derived one."""
        info = self.topics.get(name)
        return default_topic_id(name) if info is None else info.topic_id

    def name_of(self, topic_id: UUID) -> str | None:
        return self.names.get(topic_id)

    def existing(self) -> list[str]:
        """Names of the topics that exist (reported with partitions), sorted."""
        return sorted(name for name, info in self.topics.items() if info.num_partitions > 0)
