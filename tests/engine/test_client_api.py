"""The client's sans-IO surface, driven by hand: configuration, what goes out when, how answers
are matched, the JoinGroup it builds, events, and the member state table's
moves (docs/engine.md's copy of it: ``test_docs.py``)."""

from __future__ import annotations

import json

import pytest

from coordinator_engine.client import (
    ConsumerConfig,
    GroupClient,
    MemberState,
    PartitionsAssigned,
    RebalanceProtocol,
)
from coordinator_engine.client.state import check_transition
from coordinator_engine.cluster import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    TopicMetadata,
)
from coordinator_engine.consumer_protocol import (
    decode_cooperative_sticky_assignor_user_data,
    decode_subscription,
)
from coordinator_engine.errors import Errors, IllegalStateTransition
from coordinator_engine.requests import HeartbeatRequest, JoinGroupRequest
from coordinator_engine.responses import HeartbeatResponse, JoinGroupResponse


def make(**overrides: object) -> GroupClient:
    settings: dict[str, object] = {"assignors": ("cooperative-sticky", "range")}
    settings.update(overrides)
    return GroupClient(ConsumerConfig("g", ("t1", "t0"), **settings), now_ms=1000)  # type: ignore[arg-type]


def discovered(client: GroupClient, now: int = 1000) -> None:
    """Answer the first FindCoordinator and Metadata."""
    client.poll(now)
    find, metadata = client.outgoing(now)
    assert isinstance(find, FindCoordinatorRequest) and isinstance(metadata, MetadataRequest)
    client.receive(find, FindCoordinatorResponse(error_code=0, node_id=3, host="h", port=1), now)
    client.receive(
        metadata,
        MetadataResponse(
            topics=(
                TopicMetadata(name="t0", error_code=0, partitions=2),
                TopicMetadata(name="t1", error_code=0, partitions=3),
            )
        ),
        now,
    )


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"heartbeat_interval_ms": 45000}, "heartbeat_interval_ms must be lower"),
        ({"assignors": ("range", "magic")}, "unknown"),
        ({"assignors": ()}, "at least one assignor"),
        ({"group_instance_id": ""}, "group_instance_id"),
        ({"auto_offset_reset": "smallest"}, "auto_offset_reset"),
        ({"session_timeout_ms": 0}, "session_timeout_ms"),
    ],
)
def test_a_bad_consumer_config_is_refused_naming_the_setting(
    overrides: dict[str, object], error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        ConsumerConfig("g", ("t",), **overrides)  # type: ignore[arg-type]


def test_topics_must_be_a_collection_of_names_not_one_string() -> None:
    with pytest.raises(TypeError, match="topics"):
        ConsumerConfig("g", "payments")  # type: ignore[arg-type]
    assert ConsumerConfig("g", ["a", "b"]).topics == ("a", "b")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("assignors", "protocol"),
    [
        (("cooperative-sticky",), RebalanceProtocol.COOPERATIVE),
        (("cooperative-sticky", "range"), RebalanceProtocol.EAGER),
        (("range", "cooperative-sticky"), RebalanceProtocol.EAGER),
        (("sticky",), RebalanceProtocol.EAGER),
    ],
)
def test_the_protocol_is_cooperative_only_when_every_assignor_supports_it(
    assignors: tuple[str, ...], protocol: RebalanceProtocol
) -> None:
    config = ConsumerConfig("g", ("t",), assignors)
    assert config.rebalance_protocol is protocol
    assert config.rebalance_timeout_ms == config.max_poll_interval_ms == 300000


def test_nothing_is_sent_before_the_application_first_polls() -> None:
    client = make()
    assert client.outgoing(1000) == []
    assert client.next_deadline_ms() is None
    client.poll(1000)
    assert [type(r) for r in client.outgoing(1000)] == [FindCoordinatorRequest, MetadataRequest]
    assert client.outgoing(1000) == []  # one of each kind in flight


def test_the_join_group_offers_one_protocol_per_assignor_in_preference_order() -> None:
    client = make(group_instance_id="box-1", session_timeout_ms=30000)
    discovered(client)

    (join,) = client.outgoing(1000)

    assert isinstance(join, JoinGroupRequest)
    assert client.state is MemberState.PREPARING_REBALANCE
    assert (join.group_id, join.member_id, join.group_instance_id) == ("g", "", "box-1")
    assert (join.session_timeout_ms, join.rebalance_timeout_ms) == (30000, 300000)
    assert join.protocol_type == "consumer"
    assert [p.name for p in join.protocols] == ["cooperative-sticky", "range"]
    cooperative, eager = (decode_subscription(p.metadata) for p in join.protocols)
    assert cooperative.topics == eager.topics == ("t0", "t1")
    assert cooperative.generation_id == -1 and cooperative.owned_partitions == ()
    assert cooperative.user_data is not None
    assert decode_cooperative_sticky_assignor_user_data(cooperative.user_data) == -1
    assert eager.user_data is None


def test_an_answer_to_a_request_the_client_gave_up_is_ignored() -> None:
    client = make()
    discovered(client)
    (join,) = client.outgoing(1000)
    client.fail(join, 1001)  # the connection dropped: coordinator unknown, join later
    assert client.coordinator is None

    client.receive(join, JoinGroupResponse(error_code=0, generation_id=1, member_id="m"), 1002)

    assert client.generation == -1 and client.state is MemberState.PREPARING_REBALANCE
    with pytest.raises(TypeError, match="answered by JoinGroupResponse"):
        client.receive(join, HeartbeatResponse(error_code=0), 1003)
    with pytest.raises(TypeError, match="not a request"):
        client.fail(HeartbeatResponse(error_code=0), 1003)  # type: ignore[arg-type]


def test_time_cannot_go_backwards() -> None:
    client = make()
    client.poll(2000)
    with pytest.raises(ValueError, match="backwards"):
        client.outgoing(1999)


def test_positions_are_only_for_owned_partitions() -> None:
    client = make()
    with pytest.raises(ValueError, match="not assigned"):
        client.record_consumed("t0", 0, 5)
    with pytest.raises(ValueError, match="pair"):
        client.commit({"t0": 1})  # type: ignore[dict-item]


def test_a_leader_assigns_with_fresh_metadata_and_heartbeats_while_it_syncs() -> None:
    client = make(assignors=("range",), heartbeat_interval_ms=1000)
    discovered(client)
    (join,) = client.outgoing(1000)
    client.receive(
        join,
        JoinGroupResponse(
            error_code=0,
            generation_id=5,
            protocol_type="consumer",
            protocol_name="range",
            leader="m1",
            member_id="m1",
            members=(),
        ),
        1500,
    )
    assert client.state is MemberState.COMPLETING_REBALANCE and client.is_leader
    (metadata,) = client.outgoing(1500)
    assert isinstance(metadata, MetadataRequest) and metadata.topics == ("t0", "t1")
    assert client.next_deadline_ms() == 2500  # the first heartbeat

    (heartbeat,) = client.outgoing(2500)
    assert isinstance(heartbeat, HeartbeatRequest)
    assert (heartbeat.generation_id, heartbeat.member_id) == (5, "m1")
    client.receive(heartbeat, HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS), 2500)
    assert client.state is MemberState.COMPLETING_REBALANCE  # ignored while syncing


def test_events_are_json_ready() -> None:
    event = PartitionsAssigned(
        at_ms=5, generation=2, partitions=(("t", 0),), assignment=(("t", 0), ("t", 1))
    )
    assert json.loads(json.dumps(event.to_json())) == {
        "type": "PartitionsAssigned",
        "at_ms": 5,
        "generation": 2,
        "partitions": [["t", 0]],
        "assignment": [["t", 0], ["t", 1]],
    }


def test_a_move_outside_the_member_state_table_is_a_bug() -> None:
    assert check_transition(MemberState.STABLE, MemberState.PREPARING_REBALANCE)
    with pytest.raises(IllegalStateTransition):
        check_transition(MemberState.UNJOINED, MemberState.STABLE)
