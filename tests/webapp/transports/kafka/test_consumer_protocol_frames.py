"""KIP-848's two APIs as raw frames over real sockets: ConsumerGroupHeartbeat v0–v1 (topic ids
both ways, Kafka's error codes for wrong epochs, unknown members and invalid fields) and
ConsumerGroupDescribe v0–v1; malformed and hostile frames close only their own connection."""

from __future__ import annotations

import asyncio
import datetime
import struct
import uuid
from typing import Any

import pytest

from webapp.transports.kafka.listener import KafkaListener

from .test_new_versions import ask, made, offset_commit_v9, request_class, truncated
from .test_wire import answers_api_versions, exchange, frame, read_response, request_frame

pytestmark = pytest.mark.asyncio

HEARTBEAT = 68
DESCRIBE = 69
UNKNOWN_MEMBER_ID = 25
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128


def heartbeat(
    version: int,
    member_id: str,
    epoch: int,
    *,
    group: str = "g",
    topics: tuple[str, ...] | None = ("orders",),
    owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = (),
    timeout_ms: int = 300000,
    regex: str | None = "",
    assignor: str | None = None,
    instance_id: str | None = None,
) -> Any:
    request = request_class(HEARTBEAT, version, "ConsumerGroupHeartbeatRequest")
    owned_type = request_class(HEARTBEAT, version, "TopicPartitions")
    return made(
        request,
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        instance_id=instance_id,
        rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=timeout_ms),
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions=None
        if owned is None
        else tuple(owned_type(topic_id=i, partitions=p) for i, p in owned),
    )


def describe(version: int, *groups: str) -> Any:
    request = request_class(DESCRIBE, version, "ConsumerGroupDescribeRequest")
    return request(group_ids=groups, include_authorized_operations=False)


def assigned(answer: Any) -> dict[uuid.UUID, tuple[int, ...]]:
    assert answer.assignment is not None
    return {t.topic_id: tuple(t.partitions) for t in answer.assignment.topic_partitions}


@pytest.mark.parametrize("version", [0, 1])
async def test_a_member_joins_acknowledges_and_leaves_with_topic_ids(
    kafka: KafkaListener, version: int
) -> None:
    orders = await kafka.runtime.create_topic("orders", 3)
    joined = await ask(kafka, HEARTBEAT, version, heartbeat(version, "m-1", 0))
    assert (joined.error_code, joined.member_id, joined.member_epoch) == (0, "m-1", 1)
    assert joined.heartbeat_interval > datetime.timedelta(0)
    assert assigned(joined) == {orders.topic_id: (0, 1, 2)}

    # The next heartbeat lists what it owns (by topic id); the one after sends nulls.
    acked = await ask(
        kafka,
        HEARTBEAT,
        version,
        heartbeat(version, "m-1", 1, owned=((orders.topic_id, (0, 1, 2)),)),
    )
    assert (acked.error_code, acked.member_epoch) == (0, 1)
    quiet = await ask(
        kafka,
        HEARTBEAT,
        version,
        heartbeat(version, "m-1", 1, topics=None, owned=None, timeout_ms=-1, regex=None),
    )
    assert (quiet.error_code, quiet.member_epoch, quiet.assignment) == (0, 1, None)
    view = kafka.runtime.group("g")
    assert view is not None and view.state.value == "Stable"

    left = await ask(kafka, HEARTBEAT, version, heartbeat(version, "m-1", -1, owned=None))
    assert (left.error_code, left.member_epoch) == (0, -1)
    view = kafka.runtime.group("g")
    assert view is not None and not view.members


async def test_v0_lets_the_coordinator_draw_the_id_of_a_member_joining_without_one(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic("orders", 1)
    joined = await ask(kafka, HEARTBEAT, 0, heartbeat(0, "", 0))
    assert joined.error_code == 0 and len(joined.member_id) == 22
    refused = await ask(kafka, HEARTBEAT, 1, heartbeat(1, "", 0))
    assert refused.error_code == INVALID_REQUEST and refused.error_message


@pytest.mark.parametrize(
    ("request_body", "code"),
    [
        pytest.param(heartbeat(1, "stranger", 4), UNKNOWN_MEMBER_ID, id="an unknown member"),
        pytest.param(heartbeat(1, "m-1", 7), FENCED_MEMBER_EPOCH, id="an epoch from the future"),
        pytest.param(heartbeat(1, "m-2", 0, timeout_ms=-1), INVALID_REQUEST, id="no timeout"),
        pytest.param(heartbeat(1, "m-2", 0, owned=None), INVALID_REQUEST, id="null owned"),
        pytest.param(
            heartbeat(1, "m-2", 0, topics=None, regex=None), INVALID_REQUEST, id="no subscription"
        ),
        pytest.param(heartbeat(1, "m-2", 0, group=""), INVALID_REQUEST, id="an empty group id"),
        pytest.param(
            heartbeat(1, "m-2", 0, assignor="sticky"), UNSUPPORTED_ASSIGNOR, id="a client assignor"
        ),
        pytest.param(
            heartbeat(1, "m-2", 0, topics=(), regex="(a)\\1"),
            INVALID_REGULAR_EXPRESSION,
            id="a backreference",
        ),
    ],
)
async def test_wrong_epochs_unknown_members_and_invalid_fields_get_kafka_s_codes(
    kafka: KafkaListener, request_body: Any, code: int
) -> None:
    await kafka.runtime.create_topic("orders", 2)
    joined = await ask(kafka, HEARTBEAT, 1, heartbeat(1, "m-1", 0))
    assert joined.error_code == 0
    answer = await ask(kafka, HEARTBEAT, 1, request_body)
    assert answer.error_code == code
    assert answer.error_message  # Kafka's ErrorMessage says what was wrong
    # The group and its member are as they were.
    view = kafka.runtime.group("g")
    assert view is not None and list(view.members) == ["m-1"]


async def test_owned_partitions_of_an_unknown_topic_id_count_for_nothing(
    kafka: KafkaListener,
) -> None:
    orders = await kafka.runtime.create_topic("orders", 2)
    await ask(kafka, HEARTBEAT, 1, heartbeat(1, "m-1", 0))
    answer = await ask(
        kafka,
        HEARTBEAT,
        1,
        heartbeat(1, "m-1", 1, owned=((orders.topic_id, (0, 1)), (uuid.uuid4(), (0, 5)))),
    )
    assert (answer.error_code, answer.member_epoch) == (0, 1)


@pytest.mark.parametrize("version", [0, 1])
async def test_describe_answers_consumer_groups_and_69_for_the_others(
    kafka: KafkaListener, version: int
) -> None:
    orders = await kafka.runtime.create_topic("orders", 2)
    await ask(kafka, HEARTBEAT, 1, heartbeat(1, "m-1", 0))
    answer = await ask(kafka, DESCRIBE, version, describe(version, "g", "nobody"))
    group, nobody = answer.groups
    assert (group.error_code, group.group_state, group.assignor_name) == (0, "Stable", "uniform")
    assert (group.group_epoch, group.assignment_epoch) == (1, 1)
    (one,) = group.members
    assert (one.member_id, one.member_epoch, one.subscribed_topic_names) == ("m-1", 1, ("orders",))
    assert [
        (t.topic_id, t.topic_name, t.partitions) for t in one.target_assignment.topic_partitions
    ] == [(orders.topic_id, "orders", (0, 1))]
    if version >= 1:
        assert one.member_type == 1
    assert nobody.error_code == GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(truncated(HEARTBEAT, 1, heartbeat(1, "m-1", 0)), id="a heartbeat cut short"),
        pytest.param(truncated(DESCRIBE, 1, describe(1, "g")), id="a describe cut short"),
        pytest.param(
            # ConsumerGroupHeartbeat v1: a group id whose compact length runs past the frame.
            frame(struct.pack(">hhih", HEARTBEAT, 1, 1, 3) + b"raw" + b"\x00" + b"\x7f" + b"g"),
            id="a group id longer than its frame",
        ),
        pytest.param(
            # One owned topic whose id stops after 5 of its 16 bytes.
            frame(
                struct.pack(">hhih", HEARTBEAT, 1, 1, 3)
                + b"raw\x00"
                + b"\x02g\x02m"
                + struct.pack(">i", 1)
                + b"\x00\x00"
                + struct.pack(">i", -1)
                + b"\x00\x00\x00"
                + b"\x02"
                + b"\x11" * 5
            ),
            id="an owned topic id cut short",
        ),
        pytest.param(
            frame(struct.pack(">hhih", HEARTBEAT, 2, 1, 3) + b"raw" + b"\x00"),
            id="a version not served",
        ),
    ],
)
async def test_a_malformed_heartbeat_or_describe_closes_only_its_connection(
    kafka: KafkaListener, payload: bytes
) -> None:
    await kafka.runtime.create_topic("orders", 2)
    other_reader, other = await asyncio.open_connection("127.0.0.1", kafka.port)
    assert await exchange(kafka, payload) == b""
    assert await answers_api_versions(kafka)
    # A connection opened before is served on: it joins a consumer group.
    other.write(request_frame(HEARTBEAT, 1, 4, heartbeat(1, "m-9", 0)))
    assert struct.unpack(">i", (await read_response(other_reader))[:4])[0] == 4
    other.close()
    view = kafka.runtime.group("g")
    assert view is not None and list(view.members) == ["m-9"]


def offset_commit_v8(group: str, member: str, generation: int, offsets: dict[int, int]) -> Any:
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name="orders",
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata=""
                    )
                    for p, o in offsets.items()
                ),
            ),
        ),
    )


async def test_a_member_commits_with_offset_commit_v9_in_its_epoch_and_v8_is_refused(
    kafka: KafkaListener,
) -> None:
    await kafka.runtime.create_topic("orders", 2)
    joined = await ask(kafka, HEARTBEAT, 1, heartbeat(1, "m-1", 0))
    assert joined.member_epoch == 1
    (done,) = (await ask(kafka, 8, 9, offset_commit_v9("g", "m-1", 1, {0: 5}))).topics
    assert [p.error_code for p in done.partitions] == [0]
    (stale,) = (await ask(kafka, 8, 9, offset_commit_v9("g", "m-1", 0, {0: 6}))).topics
    assert [p.error_code for p in stale.partitions] == [STALE_MEMBER_EPOCH]
    # Kafka: "OffsetCommit version 9 or above must be used by members using the modern group
    # protocol".
    (old,) = (await ask(kafka, 8, 8, offset_commit_v8("g", "m-1", 1, {0: 7}))).topics
    assert [p.error_code for p in old.partitions] == [UNSUPPORTED_VERSION]
    assert kafka.runtime.committed_offsets("g")[("orders", 0)].offset == 5
