"""The websocket protocol's codec (webapp.transports.websocket.codec), without a socket:
generic decoding from the dataclasses' type hints, errors that name the field, generic encoding
of responses."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_engine import (
    ConsumerGroupHeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    ListGroupsRequest,
    OffsetFetchRequest,
)
from tests.webapp.helpers import SAMPLES
from webapp.transports.websocket import codec
from webapp.transports.websocket.codec import (
    APIS,
    MAX_FRAME_BYTES,
    FrameError,
    parse_frame,
    to_json,
)


def frame(api: str, request: Any, frame_id: Any = 1) -> str:
    return json.dumps({"id": frame_id, "api": api, "request": request})


def error_of(data: str | bytes) -> tuple[str, str, int | None]:
    with pytest.raises(FrameError) as caught:
        parse_frame(data)
    return caught.value.code, caught.value.message, caught.value.frame_id


def test_every_api_has_a_sample_and_the_table_names_request_classes() -> None:
    assert set(SAMPLES) == set(APIS)
    for api, cls in APIS.items():
        assert type(SAMPLES[api]) is cls


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_request_encoded_as_json_decodes_to_the_same_request(api: str) -> None:
    request = SAMPLES[api]
    decoded = parse_frame(frame(api, to_json(request), frame_id=42))
    assert decoded == codec.Frame(id=42, api=api, request=request)


def test_fields_with_defaults_may_be_left_out() -> None:
    decoded = parse_frame(frame("ListGroups", {}))
    assert decoded.request == ListGroupsRequest()
    fetch = parse_frame(frame("OffsetFetch", {"group_id": "g", "partitions": None}))
    assert fetch.request == OffsetFetchRequest(group_id="g", partitions=None)


def test_bytes_are_base64_and_nested_dataclasses_are_objects() -> None:
    assert to_json(SAMPLES["JoinGroup"])["protocols"] == [{"name": "range", "metadata": "AAH/"}]
    response = JoinGroupResponse(
        error_code=0,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader="m",
        member_id="m",
        members=(JoinGroupMember(member_id="m", group_instance_id=None, metadata=b"\x01"),),
    )
    assert codec.response_frame(5, "JoinGroup", response) == {
        "id": 5,
        "api": "JoinGroup",
        "response": {
            "error_code": 0,
            "generation_id": 1,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": "m",
            "member_id": "m",
            "members": [{"member_id": "m", "group_instance_id": None, "metadata": "AQ=="}],
            "skip_assignment": False,
        },
    }


HEARTBEAT = {"group_id": "g", "generation_id": 1, "member_id": "m"}
CONSUMER_HEARTBEAT = {"group_id": "c", "member_id": "m", "member_epoch": 1}
HANDOFF_HEARTBEAT = {
    "group_id": "h",
    "member_id": "m",
    "member_epoch": 1,
    "session_timeout_ms": 10_000,
}


@pytest.mark.parametrize(
    ("data", "code", "message", "frame_id"),
    [
        (
            "{",
            "invalid_json",
            "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            None,
        ),
        (b"\xff{}", "invalid_json", "frame is not UTF-8 text: invalid start byte", None),
        ('{"id": 1, "id": 2}', "invalid_json", "not JSON: duplicate key 'id'", None),
        ('{"id": NaN}', "invalid_json", "not JSON: NaN is not a JSON number", None),
        ("[" * 100_000 + "]" * 100_000, "invalid_json", "not JSON: nested too deeply", None),
        ("[1]", "invalid_frame", "a frame must be a JSON object, got array", None),
        ('"Heartbeat"', "invalid_frame", "a frame must be a JSON object, got string", None),
        ('{"api": "Heartbeat", "request": {}}', "invalid_frame", "missing id", None),
        (
            frame("Heartbeat", HEARTBEAT, "1"),
            "invalid_frame",
            'id must be an integer in -9007199254740991..9007199254740991, got string "1"',
            None,
        ),
        (
            frame("Heartbeat", HEARTBEAT, True),
            "invalid_frame",
            "id must be an integer in -9007199254740991..9007199254740991, got boolean true",
            None,
        ),
        (
            frame("Heartbeat", HEARTBEAT, 1.5),
            "invalid_frame",
            "id must be an integer in -9007199254740991..9007199254740991, got number 1.5",
            None,
        ),
        (
            frame("Heartbeat", HEARTBEAT, 2**53),
            "invalid_frame",
            "id must be an integer in -9007199254740991..9007199254740991, "
            "got number 9007199254740992",
            None,
        ),
        (
            '{"id": 3, "api": "Heartbeat", "request": {}, "extra": 1}',
            "invalid_frame",
            "unknown key 'extra' (a frame has id, api and request)",
            3,
        ),
        ('{"id": 3, "request": {}}', "invalid_frame", "missing api", 3),
        (
            '{"id": 3, "api": 7, "request": {}}',
            "invalid_frame",
            "api must be a string, got number",
            3,
        ),
        ('{"id": 3, "api": "Heartbeat"}', "invalid_frame", "missing request", 3),
        (
            frame("Produce", {}, 3),
            "unknown_api",
            "unknown api 'Produce' (known: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, "
            "OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups, "
            "HandoffHeartbeat, ConsumerGroupHeartbeat, ConsumerGroupDescribe, FindCoordinator, "
            "Metadata)",
            3,
        ),
        (
            frame("Heartbeat", [], 3),
            "invalid_request",
            "request: expected an object (HeartbeatRequest), got array",
            3,
        ),
        (
            frame("Heartbeat", {"group_id": "g", "member_id": "m"}, 3),
            "invalid_request",
            "request.generation_id: missing required field",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "generation_id": "1"}, 3),
            "invalid_request",
            'request.generation_id: expected an integer, got string "1"',
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "generation_id": 1.0}, 3),
            "invalid_request",
            "request.generation_id: expected an integer, got number 1.0",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "group_id": None}, 3),
            "invalid_request",
            "request.group_id: expected a string, got null",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "generation": 1}, 3),
            "invalid_request",
            "request.generation: unknown field (HeartbeatRequest has group_id, generation_id, "
            "member_id, group_instance_id)",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "generation_id": 2**31}, 3),
            "invalid_request",
            "request.generation_id: must lie in -2147483648..2147483647, got 2147483648",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "generation_id": 10**30}, 3),
            "invalid_request",
            "request.generation_id: must lie in -2147483648..2147483647, "
            "got 1000000000000000000000000000000",
            3,
        ),
        (
            frame(
                "SyncGroup",
                {**HEARTBEAT, "assignments": [{"member_id": "m", "assignment": "not base64!"}]},
                3,
            ),
            "invalid_request",
            "request.assignments[0].assignment: not valid base64 (Only base64 data is allowed)",
            3,
        ),
        (
            frame("SyncGroup", {**HEARTBEAT, "assignments": {"m": "AA=="}}, 3),
            "invalid_request",
            "request.assignments: expected an array, got object",
            3,
        ),
        (
            frame("SyncGroup", {**HEARTBEAT, "assignments": ["AA=="]}, 3),
            "invalid_request",
            'request.assignments[0]: expected an object (Assignment), got string "AA=="',
            3,
        ),
        (
            frame(
                "OffsetCommit",
                {"group_id": "g", "offsets": [{"topic": "t", "partition": -1, "offset": 0}]},
                3,
            ),
            "invalid_request",
            "request.offsets[0].partition: must lie in 0..2147483647, got -1",
            3,
        ),
        (
            frame(
                "HandoffHeartbeat",
                {**HANDOFF_HEARTBEAT, "started": [{"topic": "t", "partition": -1}]},
                3,
            ),
            "invalid_request",
            "request.started[0].partition: must lie in 0..2147483647, got -1",
            3,
        ),
        (
            frame("HandoffHeartbeat", {**HANDOFF_HEARTBEAT, "member_epoch": 2**31}, 3),
            "invalid_request",
            "request.member_epoch: must lie in -2147483648..2147483647, got 2147483648",
            3,
        ),
        (
            frame(
                "ConsumerGroupHeartbeat",
                {**CONSUMER_HEARTBEAT, "topic_partitions": [{"topic": "t", "partitions": [0, -1]}]},
                3,
            ),
            "invalid_request",
            "request.topic_partitions[0].partitions: must lie in 0..2147483647, got -1",
            3,
        ),
        (
            frame(
                "ConsumerGroupHeartbeat",
                {**CONSUMER_HEARTBEAT, "topic_partitions": [{"topic": "t", "partitions": "0"}]},
                3,
            ),
            "invalid_request",
            'request.topic_partitions[0].partitions: expected an array, got string "0"',
            3,
        ),
        (
            frame(
                "ConsumerGroupHeartbeat", {**CONSUMER_HEARTBEAT, "subscribed_topic_names": "t"}, 3
            ),
            "invalid_request",
            'request.subscribed_topic_names: expected an array, got string "t"',
            3,
        ),
        (
            frame("ConsumerGroupHeartbeat", {**CONSUMER_HEARTBEAT, "member_epoch": None}, 3),
            "invalid_request",
            "request.member_epoch: expected an integer, got null",
            3,
        ),
        (
            frame("ConsumerGroupHeartbeat", {"group_id": "c", "member_epoch": 0}, 3),
            "invalid_request",
            "request.member_id: missing required field",
            3,
        ),
        (
            frame("ConsumerGroupHeartbeat", {**CONSUMER_HEARTBEAT, "assignment": {}}, 3),
            "invalid_request",
            "request.assignment: unknown field (ConsumerGroupHeartbeatRequest has group_id, "
            "member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms, "
            "subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions, "
            "client_id, client_host)",
            3,
        ),
        (
            frame("ConsumerGroupDescribe", {"group_ids": ["g", 7]}, 3),
            "invalid_request",
            "request.group_ids[1]: expected a string, got number 7",
            3,
        ),
        (
            frame(
                "JoinGroup",
                {
                    "group_id": "g",
                    "session_timeout_ms": 1,
                    "rebalance_timeout_ms": 1,
                    "protocol_type": "consumer",
                    "protocols": [{"name": "x"}],
                    "require_known_member_id": 1,
                },
                3,
            ),
            "invalid_request",
            "request.require_known_member_id: expected true or false, got number 1",
            3,
        ),
        (
            frame("DescribeGroups", {"group_ids": "g"}, 3),
            "invalid_request",
            'request.group_ids: expected an array, got string "g"',
            3,
        ),
        (
            frame("FindCoordinator", {"key": "g", "key_type": 128}, 3),
            "invalid_request",
            "request.key_type: must lie in -128..127, got 128",
            3,
        ),
        (
            frame("Heartbeat", {**HEARTBEAT, "group_id": "x" * 40_000}, 3),
            "invalid_request",
            "request.group_id: is longer than 32767 bytes of UTF-8",
            3,
        ),
    ],
)
def test_a_malformed_frame_raises_a_frame_error_naming_the_problem(
    data: str | bytes, code: str, message: str, frame_id: int | None
) -> None:
    assert error_of(data) == (code, message, frame_id)


def test_a_frame_over_one_mebibyte_is_too_large_in_bytes_not_characters() -> None:
    assert error_of("x" * (MAX_FRAME_BYTES + 1))[:2] == (
        "frame_too_large",
        "a frame may hold at most 1048576 bytes",
    )
    assert error_of(b"x" * (MAX_FRAME_BYTES + 1))[0] == "frame_too_large"
    # 300,000 three-byte characters: under the limit in characters, over it in bytes.
    assert error_of('"' + "€" * 350_000 + '"')[0] == "frame_too_large"
    # Exactly at the limit is fine (as far as size goes).
    padded = frame("ListGroups", {})
    padded = padded[:-1] + " " * (MAX_FRAME_BYTES - len(padded)) + "}"
    assert len(padded.encode()) == MAX_FRAME_BYTES
    assert parse_frame(padded).request == ListGroupsRequest()


def test_a_huge_integer_is_refused_by_the_json_parser() -> None:
    code, message, _ = error_of('{"id": ' + "9" * 5000 + "}")
    assert code == "invalid_json"
    assert "digits" in message


def test_an_error_message_quoting_a_lone_surrogate_still_encodes() -> None:
    text = frame("Heartbeat", {**HEARTBEAT, "\ud800": 1}, 3)
    code, message, frame_id = error_of(text)
    encoded = codec.dumps(codec.error_frame(frame_id, code, message))
    encoded.encode("utf-8")  # no UnicodeEncodeError: the reply can go on the wire
    assert json.loads(encoded)["error"]["code"] == "invalid_request"


def test_a_consumer_group_heartbeat_answer_carries_its_assignment_as_an_object_both_ways() -> None:
    response = ConsumerGroupHeartbeatResponse(
        error_code=0,
        member_id="m",
        member_epoch=4,
        heartbeat_interval_ms=5000,
        assignment={"orders": (0, 3), "payments": ()},
    )
    wire = codec.response_frame(7, "ConsumerGroupHeartbeat", response)["response"]
    assert wire == {
        "error_code": 0,
        "error_message": None,
        "member_id": "m",
        "member_epoch": 4,
        "heartbeat_interval_ms": 5000,
        "assignment": {"orders": [0, 3], "payments": []},
    }
    assert codec.decode_response("ConsumerGroupHeartbeat", json.loads(json.dumps(wire))) == (
        response
    )
    for assignment, message in [
        ({"orders": "0"}, 'response.assignment.orders: expected an array, got string "0"'),
        ([["orders", 0]], "response.assignment: expected an object, got array"),
    ]:
        with pytest.raises(FrameError) as caught:
            codec.decode_response("ConsumerGroupHeartbeat", {**wire, "assignment": assignment})
        assert caught.value.message == message


def test_the_decoder_is_built_from_the_type_hints_of_every_request_field() -> None:
    for cls in APIS.values():
        for field in dataclasses.fields(cls):
            # Every field type has a decoder (no TypeError when building the table).
            assert codec._dataclass_decoder(cls) is not None, field.name


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=200).map(bytes))
def test_arbitrary_text_or_bytes_gives_a_frame_or_a_frame_error(data: str | bytes) -> None:
    try:
        parse_frame(data)
    except FrameError as error:
        assert error.code in {"invalid_json", "invalid_frame", "unknown_api", "invalid_request"}


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(APIS)),
    st.dictionaries(
        st.sampled_from(
            [
                "group_id",
                "member_id",
                "generation_id",
                "protocols",
                "offsets",
                "partitions",
                "group_ids",
                "topics",
                "key",
                "members",
                "assignments",
                "states_filter",
                "other",
            ]
        ),
        json_values,
        max_size=5,
    ),
)
def test_any_json_request_object_gives_a_request_or_an_invalid_request_error(
    api: str, request: dict[str, Any]
) -> None:
    try:
        decoded = parse_frame(frame(api, request, 9))
    except FrameError as error:
        assert (error.code, error.frame_id) == ("invalid_request", 9)
        assert error.message.startswith("request")
    else:
        assert type(decoded.request) is APIS[api]
