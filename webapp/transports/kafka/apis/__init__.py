"""The Kafka APIs the listener serves: each decoded request (kio's body, any supported version)
becomes the engine's request, goes to the runtime, and its answer becomes kio's response of the
same version.

The version ranges (``SUPPORTED``) start as low as kio has schemas and reach as far as
librdkafka 2.16, kafka-python 3.x and aiokafka 0.14 ask (docs/kafka.md), capped where a later
version would need what this broker does not have yet: FindCoordinator at 3 (v4 batches keys),
OffsetFetch at 9 (v10 names topics by id). A response is built from the fields its version has
(``responses.make`` drops the others), so one handler serves every version; what a version
lacks on the request side has Kafka's meaning.

The handlers, by the part of Kafka they serve (each module says which Kafka semantics live in
it rather than in the engine):

* ``cluster``: ApiVersions, Metadata, FindCoordinator;
* ``groups``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (the classic protocol);
* ``offsets``: OffsetCommit, OffsetFetch, OffsetDelete;
* ``admin``: DescribeGroups, ListGroups, DeleteGroups;
* ``consumer``: ConsumerGroupHeartbeat, ConsumerGroupDescribe (KIP-848);
* ``log``: ListOffsets, Fetch, Produce;
* ``sasl``: SaslHandshake and SaslAuthenticate once a connection is authenticated.

Beside them: ``versions`` (the keys, version ranges and names of the APIs served),
``context`` (what a handler is given besides its request) and ``responses`` (building kio's
responses).
"""

from __future__ import annotations

from typing import Any

from ..codec import Request
from . import admin, cluster, consumer, groups, log, offsets, sasl
from .cluster import CLUSTER_ID, unsupported_api_versions
from .context import NO_RESPONSE, Context, Handler
from .responses import response_to
from .versions import (
    API_NAMES,
    API_VERSIONS,
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    LIST_OFFSETS,
    MAY_WAIT,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    PRODUCE,
    REPEATED_ANSWERS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SUPPORTED,
    SUSPENDS,
    SYNC_GROUP,
)

__all__ = [
    "API_NAMES",
    "API_VERSIONS",
    "CLUSTER_ID",
    "CONSUMER_GROUP_DESCRIBE",
    "CONSUMER_GROUP_HEARTBEAT",
    "DELETE_GROUPS",
    "DESCRIBE_GROUPS",
    "FETCH",
    "FIND_COORDINATOR",
    "HANDLERS",
    "HEARTBEAT",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_GROUPS",
    "LIST_OFFSETS",
    "MAY_WAIT",
    "METADATA",
    "NO_RESPONSE",
    "OFFSET_COMMIT",
    "OFFSET_DELETE",
    "OFFSET_FETCH",
    "PRODUCE",
    "REPEATED_ANSWERS",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SUPPORTED",
    "SUSPENDS",
    "SYNC_GROUP",
    "Context",
    "Handler",
    "handle",
    "response_to",
    "unsupported_api_versions",
]

HANDLERS: dict[int, Handler] = {
    API_VERSIONS: cluster.api_versions,
    METADATA: cluster.metadata,
    FIND_COORDINATOR: cluster.find_coordinator,
    JOIN_GROUP: groups.join_group,
    SYNC_GROUP: groups.sync_group,
    HEARTBEAT: groups.heartbeat,
    LEAVE_GROUP: groups.leave_group,
    OFFSET_COMMIT: offsets.offset_commit,
    OFFSET_FETCH: offsets.offset_fetch,
    OFFSET_DELETE: offsets.offset_delete,
    DESCRIBE_GROUPS: admin.describe_groups,
    LIST_GROUPS: admin.list_groups,
    DELETE_GROUPS: admin.delete_groups,
    CONSUMER_GROUP_HEARTBEAT: consumer.consumer_group_heartbeat,
    CONSUMER_GROUP_DESCRIBE: consumer.consumer_group_describe,
    LIST_OFFSETS: log.list_offsets,
    FETCH: log.fetch,
    PRODUCE: log.produce,
    SASL_HANDSHAKE: sasl.sasl_handshake,
    SASL_AUTHENTICATE: sasl.sasl_authenticate,
}


async def handle(context: Context, request: Request) -> Any:
    """kio's response body to ``request``, counted (with its error codes) as a ``kafka``
    request of its API; a request whose handler failed is counted without codes."""
    body = None
    try:
        body = await HANDLERS[request.api_key](context, request)
        return body
    finally:
        context.runtime.metrics.count(API_NAMES[request.api_key], "kafka", body)
