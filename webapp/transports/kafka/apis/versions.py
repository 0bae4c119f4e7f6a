"""The Kafka APIs served: their keys, the versions served of each, their names, and how the
listener may order and encode their answers."""

from __future__ import annotations

API_VERSIONS = 18
METADATA = 3
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
LIST_OFFSETS = 2
FETCH = 1
PRODUCE = 0
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


#: api_key → (lowest, highest) version served.
SUPPORTED: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 3),
    # Topic ids from v10, lookups by id from v12 (KIP-516), a top-level error code in v13.
    METADATA: (0, 13),
    FIND_COORDINATOR: (0, 3),
    JOIN_GROUP: (0, 7),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 4),
    # OffsetCommit v0–1 and OffsetFetch v0 are gone from Kafka 4 (KIP-896) and from kio's
    # schemas. OffsetCommit v9 is v8 for the consumer protocol's members (KIP-848); OffsetFetch
    # v8 batches groups, v9 adds the member id and epoch.
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 9),
    LIST_OFFSETS: (1, 7),
    # RecordBatch v2 (magic 2) came with Fetch v4; older versions would need down-conversion.
    # Topics by id from v13; librdkafka 2.16 asks up to v16.
    FETCH: (4, 16),
    # librdkafka sends no Fetch unless Produce >= 3 is advertised (kafka-wire.md).
    PRODUCE: (3, 9),
    DESCRIBE_GROUPS: (0, 5),
    # v5: the group type and its filter (KIP-848).
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 2),
    OFFSET_DELETE: (0, 0),
    # KIP-848's consumer protocol; librdkafka 2.16 joins only when v1 is advertised.
    CONSUMER_GROUP_HEARTBEAT: (0, 1),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    # Always listed, as Kafka lists them on every listener; served before authentication by
    # ``authenticator`` when KAFKA_SASL is required, and refused (ILLEGAL_SASL_STATE) here.
    SASL_HANDSHAKE: (0, 1),
    SASL_AUTHENTICATE: (0, 2),
}

#: APIs whose answer may wait (a JoinGroup parked until the rebalance completes, a SyncGroup
#: until the leader's, a long-poll Fetch): answers ready before one are sent first.
MAY_WAIT = frozenset({JOIN_GROUP, SYNC_GROUP, FETCH})

#: APIs whose handler may suspend (await something not ready yet): those that may wait, and
#: Produce, which keeps its partitions' new log-end offsets in Django's database before it
#: answers (``CoordinatorRuntime.append_records``). Every other handler answers without
#: suspending, so the listener handles runs of them inside a group commit
#: (``listener.KafkaListener._answer_run``); a handler that changes this must be listed here.
SUSPENDS = MAY_WAIT | {PRODUCE}

#: APIs whose answers come back the same again and again (a Heartbeat's, an OffsetCommit's of
#: the same partitions), so the codec remembers their encoding.
REPEATED_ANSWERS = frozenset({HEARTBEAT, OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT})


#: Kafka's name of each API served (``/metrics`` counts requests by it).
API_NAMES: dict[int, str] = {
    API_VERSIONS: "ApiVersions",
    METADATA: "Metadata",
    FIND_COORDINATOR: "FindCoordinator",
    JOIN_GROUP: "JoinGroup",
    SYNC_GROUP: "SyncGroup",
    HEARTBEAT: "Heartbeat",
    LEAVE_GROUP: "LeaveGroup",
    OFFSET_COMMIT: "OffsetCommit",
    OFFSET_FETCH: "OffsetFetch",
    LIST_OFFSETS: "ListOffsets",
    FETCH: "Fetch",
    PRODUCE: "Produce",
    DESCRIBE_GROUPS: "DescribeGroups",
    LIST_GROUPS: "ListGroups",
    DELETE_GROUPS: "DeleteGroups",
    OFFSET_DELETE: "OffsetDelete",
    CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat",
    CONSUMER_GROUP_DESCRIBE: "ConsumerGroupDescribe",
    SASL_HANDSHAKE: "SaslHandshake",
    SASL_AUTHENTICATE: "SaslAuthenticate",
}
