"""FindCoordinator and Metadata, answered by the host: the engine knows groups, not brokers or
topics (``coordinator_engine.cluster``).

This process is node :data:`NODE_ID` at the advertised address, and it coordinates every
consumer group whose coordinator partition (``partition_for``) it owns, all of them unless
``CoordinatorConfig.owned_partitions`` says otherwise; it is no transaction coordinator. The
partition counts come from the topic registry; topics are never auto-created.
"""

from __future__ import annotations

from coordinator_engine import CoordinatorConfig, Errors, partition_for
from coordinator_engine.cluster import (
    KEY_TYPE_GROUP,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)

from .topics import TopicRegistry

__all__ = ["NODE_ID", "find_coordinator", "metadata"]

#: This process's node id in FindCoordinator answers.
NODE_ID = 0


def find_coordinator(
    request: FindCoordinatorRequest, config: CoordinatorConfig, host: str, port: int
) -> FindCoordinatorResponse:
    """This node at ``host:port`` for a group of a partition it owns; COORDINATOR_NOT_AVAILABLE
    for one it does not; INVALID_REQUEST for any other key type."""
    if request.key_type != KEY_TYPE_GROUP:
        return FindCoordinatorResponse(error_code=Errors.INVALID_REQUEST)
    partition = partition_for(request.key, config.offsets_topic_num_partitions)
    owned = config.owned_partitions
    if owned is not None and partition not in owned:
        return FindCoordinatorResponse(
            error_code=Errors.COORDINATOR_NOT_AVAILABLE, coordinator_partition=partition
        )
    return FindCoordinatorResponse(
        error_code=Errors.NONE,
        node_id=NODE_ID,
        host=host,
        port=port,
        coordinator_partition=partition,
    )


def metadata(request: MetadataRequest, topics: TopicRegistry) -> MetadataResponse:
    """Partition counts from ``topics``; an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION."""
    names = (
        [spec.name for spec in topics.all()]
        if request.topics is None
        else list(dict.fromkeys(request.topics))
    )
    answers = []
    for name in names:
        spec = topics.get(name)
        if spec is None:
            answers.append(
                TopicMetadata(name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, partitions=0)
            )
        else:
            answers.append(
                TopicMetadata(name=name, error_code=Errors.NONE, partitions=spec.partitions)
            )
    return MetadataResponse(topics=tuple(answers))
