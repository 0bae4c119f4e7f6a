"""ApiVersions, Metadata and FindCoordinator: what a client asks of any broker before it
speaks to its group's coordinator.

Topic ids (KIP-516): every topic of the registry has one (``TopicSpec.topic_id``). Metadata
answers them from v10 and looks topics up by them from v12 (an unknown id: UNKNOWN_TOPIC_ID).
Metadata is advertised 0–13 in one range, never capped at 10 or 11: librdkafka aborts on an
assertion when it holds topic ids and the broker's highest Metadata version is below 12.
"""

from __future__ import annotations

import typing
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine.cluster import FindCoordinatorRequest, MetadataRequest
from webapp.runtime.cluster import NODE_ID

from ..codec import Request, encode_response_as
from .context import Context
from .responses import NO_OPERATIONS, NO_THROTTLE, item_type, make, response_to, schema_of
from .versions import API_VERSIONS, SUPPORTED

CLUSTER_ID = "rebalance-lab"


def unsupported_api_versions(correlation_id: int) -> bytes:
    """ApiVersions v0 with UNSUPPORTED_VERSION and the ranges served (KIP-511)."""
    from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse
    from kio.static.primitive import i16

    body = ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersion(
                api_key=typing.cast(i16, key),
                min_version=typing.cast(i16, low),
                max_version=typing.cast(i16, high),
            )
            for key, (low, high) in sorted(SUPPORTED.items())
        ),
    )
    return encode_response_as(API_VERSIONS, 0, correlation_id, body)


async def api_versions(context: Context, request: Request) -> Any:
    schema = schema_of(request)
    api_version = item_type(schema, "api_keys")
    keys = tuple(
        make(api_version, api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(SUPPORTED.items())
    )
    return make(schema, error_code=ErrorCode.none, api_keys=keys, throttle_time=NO_THROTTLE)


async def metadata(context: Context, request: Request) -> Any:
    """Kafka's ``handleTopicMetadataRequest``: every topic, the topics named, or (v12+) the
    topics of the ids given, by id alone when any id is given (names beside them are
    ignored, as Kafka ignores them); an unknown id is UNKNOWN_TOPIC_ID with a null name. A
    v10 or v11 request that gives an id or no name is refused as Kafka refuses it: each topic
    of it answers INVALID_REQUEST, and so does a request by name whose topic has no name."""
    version = request.api_version
    asked = request.body.topics
    schema = schema_of(request)
    topic_type = item_type(schema, "topics")
    registry = context.runtime.topics
    unknown_ids: list[uuid.UUID] = []
    # v0 asks for every topic with an empty list; later versions with null.
    everything = asked is None or (version == 0 and not asked)
    # The ids given (none before v10); kio reads Kafka's zero id, "no id", as None.
    given = () if everything else (getattr(t, "topic_id", None) for t in asked)
    ids = [topic_id for topic_id in given if topic_id is not None]
    if everything:
        names: tuple[str, ...] | None = None
    elif (version < 12 and ids) or (not ids and any(t.name is None for t in asked)):
        topics = tuple(
            make(
                topic_type,
                error_code=ErrorCode.invalid_request,
                name=t.name or "",
                topic_id=getattr(t, "topic_id", None),
                is_internal=False,
                partitions=(),
                topic_authorized_operations=NO_OPERATIONS,
            )
            for t in asked
        )
        return _metadata_answer(context, schema, topics)
    elif ids:
        known: list[str] = []
        for topic_id in dict.fromkeys(ids):
            spec = registry.get_by_id(topic_id)
            if spec is None:
                unknown_ids.append(topic_id)
            else:
                known.append(spec.name)
        names = tuple(known)
    else:
        names = tuple(t.name for t in asked)
    answer = context.runtime.metadata(MetadataRequest(topics=names))
    partition_type = item_type(topic_type, "partitions")
    topics = tuple(
        make(
            topic_type,
            error_code=ErrorCode.unknown_topic_id,
            name=None,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=NO_OPERATIONS,
        )
        for topic_id in unknown_ids
    ) + tuple(
        make(
            topic_type,
            error_code=ErrorCode(topic.error_code),
            name=topic.name,
            # Zero (null here) for a topic that does not exist, as in Kafka.
            topic_id=registry.topic_id(topic.name),
            is_internal=False,
            topic_authorized_operations=NO_OPERATIONS,
            partitions=tuple(
                make(
                    partition_type,
                    error_code=ErrorCode.none,
                    partition_index=index,
                    leader_id=NODE_ID,
                    leader_epoch=0,
                    replica_nodes=(NODE_ID,),
                    isr_nodes=(NODE_ID,),
                    offline_replicas=(),
                )
                for index in range(topic.partitions)
            ),
        )
        for topic in answer.topics
    )
    return _metadata_answer(context, schema, topics)


def _metadata_answer(context: Context, schema: type, topics: tuple[Any, ...]) -> Any:
    broker_type = item_type(schema, "brokers")
    broker = make(broker_type, node_id=NODE_ID, host=context.host, port=context.port, rack=None)
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        brokers=(broker,),
        cluster_id=CLUSTER_ID,
        controller_id=NODE_ID,
        topics=topics,
        cluster_authorized_operations=NO_OPERATIONS,
        error_code=ErrorCode.none,
    )


async def find_coordinator(context: Context, request: Request) -> Any:
    body = request.body
    answer = context.runtime.find_coordinator(
        FindCoordinatorRequest(key=body.key, key_type=getattr(body, "key_type", 0))
    )
    found = answer.error_code == 0
    return response_to(
        request,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        error_message=None,
        node_id=NODE_ID if found else -1,
        host=context.host if found else "",
        port=context.port if found else -1,
    )
