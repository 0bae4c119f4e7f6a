"""The event feed's names and messages (webapp.runtime.events)."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from coordinator_engine.events import EVENT_SCHEMAS, StateChanged, event_from_json
from webapp.runtime.events import (
    EVENT_MESSAGE_SCHEMA,
    SequencedEvent,
    events_message,
    group_channel_group,
)

CHANNELS_GROUP_NAME = re.compile(r"^[a-zA-Z\d\-_.]{1,99}$")


def test_plain_group_ids_stay_readable() -> None:
    assert group_channel_group("orders-v2") == "group.orders-v2"
    assert group_channel_group("a.b_c") == "group.a_2eb_5fc"
    assert group_channel_group("é") == "group._c3_a9"


def test_a_long_group_id_maps_to_its_hash() -> None:
    name = group_channel_group("x" * 200)
    assert re.fullmatch(r"group\.h\.[0-9a-f]{64}", name)


@given(st.text(max_size=120))
def test_every_group_id_gets_a_valid_channels_group_name(group_id: str) -> None:
    assert CHANNELS_GROUP_NAME.match(group_channel_group(group_id))


@given(st.text(max_size=40), st.text(max_size=40))
def test_different_group_ids_get_different_channels_groups(a: str, b: str) -> None:
    if a != b:
        assert group_channel_group(a) != group_channel_group(b)


def test_the_published_message_round_trips_through_json() -> None:
    event = StateChanged(
        group_id="orders",
        at_ms=5,
        from_state="Empty",
        to_state="PreparingRebalance",
        reason="r",
        cause="member_joined",
        cause_member_id="m-1",
    )
    item = SequencedEvent(7, event, prev_seq=3)
    message = json.loads(json.dumps(events_message([item.to_json()])))
    assert message == {
        "type": "group.events",
        "events": [
            {
                "seq": 7,
                "prev_seq": 3,
                "type": "StateChanged",
                "group_id": "orders",
                "at_ms": 5,
                "from_state": "Empty",
                "to_state": "PreparingRebalance",
                "reason": "r",
                "cause": "member_joined",
                "cause_member_id": "m-1",
            }
        ],
    }
    assert set(message) == set(EVENT_MESSAGE_SCHEMA["required"])
    body = dict(message["events"][0])
    assert body.pop("seq") == 7
    assert body.pop("prev_seq") == 3
    assert set(body) == set(EVENT_SCHEMAS["StateChanged"]["properties"])
    assert event_from_json(body) == event
