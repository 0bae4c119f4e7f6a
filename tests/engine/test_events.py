"""Every event type the coordinator emits, as produced by real scenarios: each instance
round-trips through `to_json()` -> JSON text -> `event_from_json` unchanged, and validates
against its declared `EVENT_SCHEMAS` entry (checked by the small validator below, which knows
exactly the JSON Schema keywords those schemas use). Every reason a member, a pending member,
offsets or a group can be removed for is produced by the scenario that causes it (the way
Zulip's `test_events.py` checks each event against `event_schema.py`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from coordinator_engine import CoordinatorConfig, Errors, MemberIdentity
from coordinator_engine.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_engine.events import (
    EVENT_SCHEMAS,
    EVENT_TYPES,
    AssignmentStored,
    GroupEvent,
    GroupRemoved,
    MemberRemoved,
    OffsetsRemoved,
    PendingMemberRemoved,
    RemovalReason,
    StateChanged,
    StaticMemberReplaced,
    event_from_json,
)
from tests.engine.harness import (
    FOLLOWER_INSTANCE,
    GROUP,
    LEADER_INSTANCE,
    PROTOCOL_SUPERSET,
    TEST_CONFIG,
    Context,
)

# -- a validator for the JSON Schema subset EVENT_SCHEMAS uses ------------------------------------

KNOWN_KEYWORDS = frozenset(
    {"title", "type", "properties", "required", "additionalProperties", "const", "items"}
)
JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def schema_errors(instance: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """What makes `instance` invalid against `schema` (empty when valid). A keyword outside the
    known subset fails loudly rather than being ignored."""
    unknown = set(schema) - KNOWN_KEYWORDS
    if unknown:
        raise AssertionError(f"{path}: the validator does not know {sorted(unknown)}")
    if "const" in schema and instance != schema["const"]:
        return [f"{path}: {instance!r} is not {schema['const']!r}"]
    if "type" in schema:
        types = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(JSON_TYPES[t](instance) for t in types):
            return [f"{path}: {instance!r} is not of type {' or '.join(types)}"]
    errors: list[str] = []
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        errors += [
            f"{path}: missing {name!r}"
            for name in schema.get("required", ())
            if name not in instance
        ]
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if not isinstance(name, str):
                errors.append(f"{path}: key {name!r} is not a string")
            elif name in properties:
                errors += schema_errors(value, properties[name], f"{path}.{name}")
            elif extra is False:
                errors.append(f"{path}: unexpected {name!r}")
            elif isinstance(extra, dict):
                errors += schema_errors(value, extra, f"{path}.{name}")
    if isinstance(instance, list) and "items" in schema:
        for index, item in enumerate(instance):
            errors += schema_errors(item, schema["items"], f"{path}[{index}]")
    return errors


def test_the_validator_reports_what_is_wrong() -> None:
    schema = EVENT_SCHEMAS["GroupRemoved"]
    good = {
        "type": "GroupRemoved",
        "group_id": "g",
        "at_ms": 1,
        "reason": "deleted",
        "generation_id": 2,
        "tombstoned": True,
    }
    assert schema_errors(good, schema) == []
    assert schema_errors({**good, "type": "Other"}, schema) == [
        "$.type: 'Other' is not 'GroupRemoved'"
    ]
    assert schema_errors({**good, "at_ms": True}, schema) == [
        "$.at_ms: True is not of type integer"
    ]
    assert schema_errors({**good, "tombstoned": 1}, schema) == [
        "$.tombstoned: 1 is not of type boolean"
    ]
    assert schema_errors({**good, "extra": 1}, schema) == ["$: unexpected 'extra'"]
    missing = dict(good)
    del missing["reason"]
    assert schema_errors(missing, schema) == ["$: missing 'reason'"]
    partitions = EVENT_SCHEMAS["AssignmentStored"]["properties"]["partitions"]
    assert schema_errors(None, partitions) == []
    assert schema_errors({"m": [["t", 0]]}, partitions) == []
    assert schema_errors({"m": "t-0"}, partitions) == ["$.m: 't-0' is not of type array"]
    with pytest.raises(AssertionError, match="does not know"):
        schema_errors(1, {"minimum": 0})


# -- scenarios -----------------------------------------------------------------------------------


def subscribing(*topics: str) -> tuple[tuple[str, bytes], ...]:
    return (("range", encode_subscription(ConsumerProtocolSubscription(topics=topics))),)


def assigning(*partitions: tuple[str, int]) -> bytes:
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=partitions))


def consumer_group_life() -> list[GroupEvent]:
    """A consumer group from its first member to its deletion: pending member, join, a real
    consumer assignment, commits, a leave, offset deletion, group deletion."""
    ctx = Context()
    partial = ctx.join(require_known_member_id=True, protocols=subscribing("orders"))
    assert partial.response is not None
    member_id = partial.response.member_id
    ctx.join(member_id, protocols=subscribing("orders"), reason="first start")
    ctx.sleep(50)
    ctx.sync(member_id, 1, {member_id: assigning(("orders", 0), ("orders", 1))})
    ctx.commit({("orders", 0): 10, ("audit", 0): 3}, member_id=member_id, generation_id=1)
    ctx.delete_offsets([("audit", 0)])
    ctx.leave(MemberIdentity(member_id=member_id, reason="shutting down"))
    ctx.delete_groups(GROUP)
    return ctx.events


def static_member_life() -> list[GroupEvent]:
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    ctx.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    return ctx.events


def offsets_expire() -> list[GroupEvent]:
    ctx = Context(dataclasses.replace(TEST_CONFIG, offsets_retention_ms=1000))
    ctx.commit({("t", 0): 1})
    ctx.sleep(1000)
    ctx.coord.cleanup(ctx.now)
    return ctx.events


@cache
def every_scenario() -> tuple[GroupEvent, ...]:
    return tuple(consumer_group_life() + static_member_life() + offsets_expire())


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_event_type_round_trips_through_json_and_matches_its_schema(event_type: str) -> None:
    events = [e for e in every_scenario() if e.type == event_type]
    assert events, f"no scenario produced a {event_type}"
    for event in events:
        data = json.loads(json.dumps(event.to_json()))
        assert event_from_json(data) == event
        assert schema_errors(data, EVENT_SCHEMAS[event_type]) == []


def test_every_event_type_has_a_schema_and_nothing_else_does() -> None:
    assert set(EVENT_SCHEMAS) == set(EVENT_TYPES)
    for name, cls in EVENT_TYPES.items():
        fields = {f.name for f in dataclasses.fields(cls)} | {"type"}
        assert set(EVENT_SCHEMAS[name]["properties"]) == fields
        assert EVENT_SCHEMAS[name]["required"] == sorted(fields)


def test_consumer_assignment_event_decodes_the_partitions() -> None:
    stored = [e for e in every_scenario() if isinstance(e, AssignmentStored)]
    consumer = stored[0]
    (member_id,) = consumer.assignments
    assert consumer.partitions == {member_id: [["orders", 0], ["orders", 1]]}
    assert bytes.fromhex(consumer.assignments[member_id]) == assigning(("orders", 0), ("orders", 1))


def test_event_from_json_refuses_unknown_types_and_fields() -> None:
    event = every_scenario()[0]
    data = event.to_json()
    with pytest.raises(ValueError, match="unknown event type"):
        event_from_json({**data, "type": "Nope"})
    with pytest.raises(ValueError, match="unexpected fields"):
        event_from_json({**data, "extra": 1})
    incomplete = dict(data)
    del incomplete["group_id"]
    with pytest.raises(ValueError, match="missing fields"):
        event_from_json(incomplete)


# -- removal reasons -----------------------------------------------------------------------------


def removed_for_leaving() -> Context:
    ctx = Context()
    member_id, _ = ctx.stable_group_of_one()
    ctx.leave(MemberIdentity(member_id=member_id))
    return ctx


def removed_for_its_session() -> Context:
    ctx = Context()
    ctx.stable_group_of_one()
    ctx.sleep(500)
    return ctx


def removed_for_a_join_past_the_new_member_join_timeout() -> Context:
    ctx = Context(dataclasses.replace(TEST_CONFIG, new_member_join_timeout_ms=1000))
    first, generation = ctx.stable_group_of_one(session_timeout=5000, rebalance_timeout=5000)
    ctx.join(session_timeout=5000, rebalance_timeout=5000)
    for _ in range(3):
        ctx.sleep(400)
        assert ctx.heartbeat(first, generation) == Errors.REBALANCE_IN_PROGRESS
    return ctx


def removed_for_not_rejoining() -> Context:
    ctx = Context()
    leader_id, _, _ = ctx.stable_group_of_two(session_timeout=5000)
    ctx.join(leader_id)
    ctx.sleep(500)
    return ctx


def removed_for_not_syncing() -> Context:
    ctx = Context()
    (leader,) = ctx.join_with_n_members(1)
    ctx.sleep(250)
    assert ctx.heartbeat(leader.member_id, 1) == Errors.NONE  # alive, but never syncs
    ctx.sleep(250)
    return ctx


def removed_by_an_admin() -> Context:
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    ctx.leave(MemberIdentity(group_instance_id=FOLLOWER_INSTANCE))
    return ctx


def removed_for_the_group_max_size() -> Context:
    ctx = Context(dataclasses.replace(TEST_CONFIG, group_max_size=2))
    leader_id, follower_id, _ = ctx.stable_group_of_two()
    ctx.join(leader_id)  # one member awaiting
    ctx.join()  # a newcomer is admitted: two awaiting, the group's limit
    ctx.join(follower_id)  # the follower rejoins too late
    return ctx


REMOVAL_SCENARIOS: dict[RemovalReason, Callable[[], Context]] = {
    RemovalReason.LEFT: removed_for_leaving,
    RemovalReason.SESSION_TIMEOUT: removed_for_its_session,
    RemovalReason.JOIN_TIMEOUT: removed_for_a_join_past_the_new_member_join_timeout,
    RemovalReason.REBALANCE_TIMEOUT: removed_for_not_rejoining,
    RemovalReason.SYNC_TIMEOUT: removed_for_not_syncing,
    RemovalReason.REMOVED_BY_ADMIN: removed_by_an_admin,
    RemovalReason.GROUP_MAX_SIZE: removed_for_the_group_max_size,
}


@pytest.mark.parametrize("reason", list(REMOVAL_SCENARIOS), ids=lambda r: r.value)
def test_member_removal_reason_is_produced_by_its_scenario(reason: RemovalReason) -> None:
    ctx = REMOVAL_SCENARIOS[reason]()
    removed = ctx.events_of(MemberRemoved)
    assert [e.reason for e in removed] == [reason.value]
    data = json.loads(json.dumps(removed[0].to_json()))
    assert event_from_json(data) == removed[0]
    assert schema_errors(data, EVENT_SCHEMAS["MemberRemoved"]) == []


def removed_by_a_static_replacement() -> Context:
    ctx = Context()
    ctx.static_members_join_and_rebalance()
    ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    return ctx


REMOVAL_SCENARIOS[RemovalReason.FENCED] = removed_by_a_static_replacement


def test_every_removal_reason_has_a_scenario() -> None:
    assert set(RemovalReason) == set(REMOVAL_SCENARIOS)


def test_static_member_replacement_links_the_ids_fences_the_old_and_joins_the_new() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    mark = len(ctx.events)
    reply = ctx.join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    new_id = reply.response.member_id
    events = ctx.events[mark:]
    assert [type(e).__name__ for e in events] == [
        "StaticMemberReplaced",
        "MemberRemoved",
        "MemberJoined",
    ]
    assert events[0] == StaticMemberReplaced(
        group_id=GROUP,
        at_ms=100,
        group_instance_id=LEADER_INSTANCE,
        old_member_id=result.leader_id,
        new_member_id=new_id,
    )
    assert (events[1].member_id, events[1].reason) == (result.leader_id, "fenced")
    assert (events[2].member_id, events[2].group_instance_id, events[2].rejoined) == (
        new_id,
        LEADER_INSTANCE,
        False,
    )


def pending_joined() -> Context:
    ctx = Context()
    partial = ctx.join(require_known_member_id=True).response
    assert partial is not None
    ctx.join(partial.member_id)
    return ctx


def pending_expired() -> Context:
    ctx = Context()
    ctx.join(require_known_member_id=True)
    ctx.sleep(500)
    return ctx


def pending_left() -> Context:
    ctx = Context()
    partial = ctx.join(require_known_member_id=True).response
    assert partial is not None
    ctx.leave(MemberIdentity(member_id=partial.member_id))
    return ctx


def pending_refused_by_group_max_size() -> Context:
    ctx = Context(CoordinatorConfig(group_min_session_timeout_ms=10, group_max_size=1))
    first = ctx.join(require_known_member_id=True).response
    second = ctx.join(require_known_member_id=True).response
    assert first is not None and second is not None
    ctx.join(first.member_id)
    ctx.join(second.member_id)
    return ctx


@pytest.mark.parametrize(
    ("reasons", "scenario"),
    [
        (["joined"], pending_joined),
        (["session_timeout"], pending_expired),
        (["left"], pending_left),
        (["joined", "group_max_size"], pending_refused_by_group_max_size),
    ],
    ids=["joined", "session_timeout", "left", "group_max_size"],
)
def test_pending_member_removal_reason_is_produced_by_its_scenario(
    reasons: list[str], scenario: Callable[[], Context]
) -> None:
    removed = scenario().events_of(PendingMemberRemoved)
    assert [e.reason for e in removed] == reasons
    for event in removed:
        assert schema_errors(event.to_json(), EVENT_SCHEMAS["PendingMemberRemoved"]) == []


def test_offset_and_group_removal_reasons_are_produced_by_their_scenarios() -> None:
    events = every_scenario()
    assert [e.reason for e in events if isinstance(e, OffsetsRemoved)] == [
        "deleted",  # OffsetDelete
        "group_deleted",  # DeleteGroups
        "expired",  # cleanup
    ]
    assert [e.reason for e in events if isinstance(e, GroupRemoved)] == ["deleted", "expired"]
    ctx = Context()
    ctx.commit({("t", 0): 1})
    ctx.delete_offsets([("t", 0)])
    assert [e.reason for e in ctx.events_of(GroupRemoved)] == ["offsets_deleted"]


def test_a_state_change_stored_before_causes_were_said_still_reads() -> None:
    """Events the runtime stored before ``cause`` existed lack it: they read with none."""
    stored = {
        "type": "StateChanged",
        "group_id": "g",
        "at_ms": 1,
        "from_state": "Stable",
        "to_state": "PreparingRebalance",
        "reason": "removing member m on heartbeat expiration",
    }
    event = event_from_json(stored)
    assert isinstance(event, StateChanged)
    assert (event.cause, event.cause_member_id) == (None, None)
    with pytest.raises(ValueError, match="missing fields"):
        event_from_json({k: v for k, v in stored.items() if k != "reason"})
