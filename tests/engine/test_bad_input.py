"""Bad input: values outside their Kafka types are refused when a request is built, with an
error naming the field; any well-typed request — however odd — gets an answer from `handle`,
never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator_engine import (
    Assignment,
    CoordinatorConfig,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Errors,
    GroupCoordinator,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    PartitionOffset,
    Protocol,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.requests import FieldError, trusted_constructor

from .harness import Context


def join(**overrides: Any) -> JoinGroupRequest:
    fields: dict[str, Any] = {
        "group_id": "g",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "protocol_type": "consumer",
        "protocols": (Protocol(name="range", metadata=b""),),
    }
    fields.update(overrides)
    return JoinGroupRequest(**fields)


@pytest.mark.parametrize(
    ("build", "field", "error"),
    [
        (lambda: TopicPartition(topic="t", partition=-1), "TopicPartition.partition", ValueError),
        (
            lambda: PartitionOffset(topic="t", partition=-3, offset=0),
            "PartitionOffset.partition",
            ValueError,
        ),
        (
            lambda: PartitionOffset(topic="t", partition=0, offset=2**63),
            "PartitionOffset.offset",
            ValueError,
        ),
        (lambda: Protocol(name="range", metadata="text"), "Protocol.metadata", TypeError),
        (lambda: Protocol(name="range", metadata=bytearray(b"x")), "Protocol.metadata", TypeError),
        (lambda: join(group_id="g" * 32768), "JoinGroupRequest.group_id", ValueError),
        (lambda: join(group_id="é" * 16384), "JoinGroupRequest.group_id", ValueError),
        (lambda: join(group_id="\ud800"), "JoinGroupRequest.group_id", ValueError),
        (lambda: join(group_id=None), "JoinGroupRequest.group_id", TypeError),
        (lambda: join(session_timeout_ms=2**31), "JoinGroupRequest.session_timeout_ms", ValueError),
        (lambda: join(session_timeout_ms=1.5), "JoinGroupRequest.session_timeout_ms", TypeError),
        (lambda: join(session_timeout_ms=True), "JoinGroupRequest.session_timeout_ms", TypeError),
        (lambda: join(protocols=[Protocol(name="r")]), "JoinGroupRequest.protocols", TypeError),
        (lambda: join(protocols=(("range", b""),)), "JoinGroupRequest.protocols", TypeError),
        (
            lambda: join(require_known_member_id=1),
            "JoinGroupRequest.require_known_member_id",
            TypeError,
        ),
        (
            lambda: SyncGroupRequest(
                group_id="g",
                generation_id=1,
                member_id="m",
                assignments=(Assignment(member_id="m", assignment=b""), "x"),
            ),
            "SyncGroupRequest.assignments",
            TypeError,
        ),
        (
            lambda: HeartbeatRequest(group_id="g", generation_id="1", member_id="m"),
            "HeartbeatRequest.generation_id",
            TypeError,
        ),
        (
            lambda: LeaveGroupRequest(group_id="g", members=(MemberIdentity(member_id=7),)),
            "MemberIdentity.member_id",
            TypeError,
        ),
        (
            lambda: OffsetCommitRequest(
                group_id="g",
                offsets=(PartitionOffset(topic="t", partition=0, offset=1, metadata=b"m"),),
            ),
            "PartitionOffset.metadata",
            TypeError,
        ),
        (
            lambda: OffsetFetchRequest(group_id="g", partitions=[]),
            "OffsetFetchRequest.partitions",
            TypeError,
        ),
        (
            lambda: DescribeGroupsRequest(group_ids=("a", 1)),
            "DescribeGroupsRequest.group_ids",
            TypeError,
        ),
        (
            lambda: ListGroupsRequest(states_filter="Stable"),
            "ListGroupsRequest.states_filter",
            TypeError,
        ),
        (lambda: DeleteGroupsRequest(group_ids=["a"]), "DeleteGroupsRequest.group_ids", TypeError),
    ],
)
def test_a_value_outside_its_kafka_type_is_refused_naming_the_field(
    build: Any, field: str, error: type[Exception]
) -> None:
    with pytest.raises(error, match=field.replace(".", r"\.")):
        build()


def test_handle_refuses_what_is_not_a_request_and_a_time_that_is_not_an_int() -> None:
    coord = GroupCoordinator()
    with pytest.raises(TypeError, match="not a coordinator request: dict"):
        coord.handle({"api": "JoinGroup"}, 0)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="now_ms must be an int"):
        coord.handle(ListGroupsRequest(), 1.5)  # type: ignore[arg-type]


def test_a_kafka_rejection_is_an_error_code_not_an_exception() -> None:
    coord = GroupCoordinator()
    reply = coord.handle(join(group_id=""), 0)
    assert reply.response is not None and reply.response.error_code == Errors.INVALID_GROUP_ID
    reply = coord.handle(join(session_timeout_ms=1), 0)
    assert (
        reply.response is not None and reply.response.error_code == Errors.INVALID_SESSION_TIMEOUT
    )


# -- any well-typed request gets an answer ---------------------------------------------------

names = st.sampled_from(["", "g", "h", "member", "range", "consumer", "é", "x" * 300])
int32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([-1, 0, 1, 2, 6000, 10_000]))
small_bytes = st.binary(max_size=40)
partitions = st.builds(TopicPartition, topic=names, partition=st.integers(0, 2**31 - 1))
protocols = st.lists(st.builds(Protocol, name=names, metadata=small_bytes), max_size=3).map(tuple)

requests = st.one_of(
    st.builds(
        JoinGroupRequest,
        group_id=names,
        member_id=names,
        group_instance_id=st.none() | names,
        session_timeout_ms=int32,
        rebalance_timeout_ms=int32,
        protocol_type=names,
        protocols=protocols,
        require_known_member_id=st.booleans(),
        reason=st.none() | names,
    ),
    st.builds(
        SyncGroupRequest,
        group_id=names,
        generation_id=int32,
        member_id=names,
        group_instance_id=st.none() | names,
        protocol_type=st.none() | names,
        protocol_name=st.none() | names,
        assignments=st.lists(
            st.builds(Assignment, member_id=names, assignment=small_bytes), max_size=3
        ).map(tuple),
    ),
    st.builds(
        HeartbeatRequest,
        group_id=names,
        generation_id=int32,
        member_id=names,
        group_instance_id=st.none() | names,
    ),
    st.builds(
        LeaveGroupRequest,
        group_id=names,
        members=st.lists(
            st.builds(
                MemberIdentity,
                member_id=names,
                group_instance_id=st.none() | names,
                reason=st.none() | names,
            ),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(
        OffsetCommitRequest,
        group_id=names,
        generation_id=int32,
        member_id=names,
        group_instance_id=st.none() | names,
        offsets=st.lists(
            st.builds(
                PartitionOffset,
                topic=names,
                partition=st.integers(0, 2**31 - 1),
                offset=st.integers(-(2**63), 2**63 - 1),
                metadata=st.none() | st.text(max_size=20),
                leader_epoch=int32,
                expire_timestamp_ms=st.integers(-(2**63), 2**63 - 1),
            ),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(
        OffsetFetchRequest,
        group_id=names,
        partitions=st.none() | st.lists(partitions, max_size=3).map(tuple),
    ),
    st.builds(
        OffsetDeleteRequest, group_id=names, partitions=st.lists(partitions, max_size=3).map(tuple)
    ),
    st.builds(DescribeGroupsRequest, group_ids=st.lists(names, max_size=3).map(tuple)),
    st.builds(ListGroupsRequest, states_filter=st.lists(names, max_size=2).map(tuple)),
    st.builds(DeleteGroupsRequest, group_ids=st.lists(names, max_size=3).map(tuple)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(st.tuples(requests, st.integers(0, 20_000)), min_size=1, max_size=25))
def test_any_well_typed_request_sequence_gets_answers_and_never_an_exception(
    batch: list[tuple[Any, int]],
) -> None:
    ctx = Context(
        CoordinatorConfig(group_min_session_timeout_ms=1, group_initial_rebalance_delay_ms=5)
    )
    # Start from a group with a real member so requests meet every state.
    ctx.stable_group_of_one(group_id="g")
    now = ctx.now
    parked = []
    for request, step in batch:
        now += step
        reply = ctx.coord.handle(request, now)
        if reply.done:
            assert reply.response is not None
        else:
            assert isinstance(request, JoinGroupRequest | SyncGroupRequest)
            parked.append(reply)
    # Every parked reply is answered once every timeout has passed.
    for _ in range(3):
        now += 2**31
        ctx.coord.advance(now)
    assert all(reply.done for reply in parked)
    ctx.coord.cleanup(now + 10**12)


def test_a_trusted_constructor_builds_the_same_request_without_the_field_checks() -> None:
    build = trusted_constructor(PartitionOffset)

    assert build(topic="t", partition=1, offset=5) == PartitionOffset(
        topic="t", partition=1, offset=5
    )
    assert build(topic="t", partition=1, offset=5, metadata=None, leader_epoch=3) == (
        PartitionOffset(topic="t", partition=1, offset=5, metadata=None, leader_epoch=3)
    )
    with pytest.raises(FieldError):
        PartitionOffset(topic="t", partition=-1, offset=5)
    assert build(topic="t", partition=-1, offset=5).partition == -1  # not checked: trusted
    with pytest.raises(TypeError):
        build(topic="t", partition=1)  # a field without a default is still required
