"""Consumer groups (KIP-848): Kafka's consumer-group tests of `GroupMetadataManagerTest` /
`GroupMetadataManagerConsumerGroupTest`, ported by name (each test says which), driving a
`GroupCoordinator` with a fake clock: exact answers, exact records, and a coordinator rebuilt
from the log holding the same group."""

from __future__ import annotations

import uuid
from typing import NoReturn

import pytest

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupState,
    CoordinatorConfig,
    Errors,
    MemberState,
    MemoryLog,
    OwnedTopicPartitions,
)
from coordinator_engine.consumer import target
from coordinator_engine.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicMetadata,
    TopicPartitions,
    current_assignment_record,
    current_assignment_tombstone,
    epoch_record,
    epoch_tombstone,
    member_subscription_record,
    member_subscription_tombstone,
    target_assignment_epoch_record,
    target_assignment_record,
)
from coordinator_engine.events import (
    ConsumerGroupEpochBumped,
    MemberRemoved,
    StateChanged,
)
from coordinator_engine.requests import FieldError, FieldTypeError
from coordinator_engine.server_assignors import UnsupportedAssignorError

from .consumer_harness import GROUP, REBALANCE_TIMEOUT, ConsumerContext, owned

INVALID = Errors.INVALID_REQUEST


def stable_group_of(
    ctx: ConsumerContext, *members: str, topics: tuple[str, ...] = ("foo",)
) -> None:
    """Members join one after the other and heartbeat, reporting what they own, until the
    group is Stable."""
    for member_id in members:
        ctx.join(member_id, topics)
    settle(ctx)


def settle(ctx: ConsumerContext, rounds: int = 6) -> None:
    """Every member heartbeats, reporting exactly what it was last given, a few times over."""
    for _ in range(rounds):
        for member_id, member in sorted(ctx.group().members.items()):
            ctx.heartbeat(
                member_id=member_id,
                member_epoch=member.member_epoch,
                topic_partitions=owned(**{t: p for t, p in member.assigned.items()}),
            )
    assert ctx.group().state is ConsumerGroupState.STABLE


# ------------------------------------------------------------------ request validation


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        (dict(member_id="", member_epoch=0), INVALID, "MemberId can't be empty."),
        (dict(group_id=" ", member_epoch=0), INVALID, "GroupId can't be empty."),
        (dict(instance_id="", member_epoch=0), INVALID, "InstanceId can't be empty."),
        (dict(rack_id=" ", member_epoch=0), INVALID, "RackId can't be empty."),
        (
            dict(member_epoch=0, rebalance_timeout_ms=-1),
            INVALID,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            dict(member_epoch=0, topic_partitions=None),
            INVALID,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            dict(member_epoch=0, topic_partitions=owned(foo=(0,))),
            INVALID,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            dict(member_epoch=0, subscribed_topic_names=(), subscribed_topic_regex=""),
            INVALID,
            "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
        ),
        (
            dict(member_epoch=0, subscribed_topic_names=None),
            INVALID,
            "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
        ),
        (dict(member_epoch=-2), INVALID, "InstanceId can't be null."),
        (dict(member_epoch=-3), INVALID, "MemberEpoch is invalid."),
        (
            dict(member_epoch=0, server_assignor="bar"),
            Errors.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor bar is not supported. Supported assignors: uniform, range.",
        ),
        (
            dict(member_epoch=0, subscribed_topic_regex="(foo"),
            Errors.INVALID_REGULAR_EXPRESSION,
            "SubscribedTopicRegex `(foo` is not a valid regular expression",
        ),
        (
            dict(member_epoch=0, subscribed_topic_regex="(a)\\1"),
            Errors.INVALID_REGULAR_EXPRESSION,
            "backreferences",
        ),
        (
            dict(member_epoch=0, subscribed_topic_regex="foo(?!bar)"),
            Errors.INVALID_REGULAR_EXPRESSION,
            "lookaround",
        ),
    ],
)
def test_consumer_heartbeat_request_validation(
    fields: dict[str, object], code: Errors, message: str
) -> None:
    """testConsumerHeartbeatRequestValidation: INVALID_REQUEST names the field; an unknown
    assignor is UNSUPPORTED_ASSIGNOR; a regex RE2 refuses is INVALID_REGULAR_EXPRESSION."""
    ctx = ConsumerContext({"foo": 3})
    request = dict(
        member_id="m1",
        rebalance_timeout_ms=REBALANCE_TIMEOUT,
        subscribed_topic_names=("foo",),
        topic_partitions=(),
    )
    request.update(fields)
    response = ctx.heartbeat(**request)
    assert response.error_code == code
    assert response.error_message is not None and message in response.error_message
    assert ctx.coord.group(GROUP) is None
    assert ctx.log.entries == []


def test_unknown_member_id_joins_consumer_group() -> None:
    """testUnknownMemberIdJoinsConsumerGroup."""
    ctx = ConsumerContext({"foo": 3})
    ctx.join("m1", ("foo", "bar"))
    response = ctx.heartbeat(
        member_id="m2",
        member_epoch=1,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=("foo", "bar"),
        topic_partitions=(),
    )
    assert response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert response.error_message == f"Member m2 is not a member of group {GROUP}."


def test_a_heartbeat_to_an_unknown_group_with_a_nonzero_epoch_is_group_id_not_found() -> None:
    ctx = ConsumerContext({"foo": 3})
    response = ctx.heartbeat(member_id="m1", member_epoch=3)
    assert response.error_code == Errors.GROUP_ID_NOT_FOUND


def test_consumer_group_member_epoch_validation() -> None:
    """testConsumerGroupMemberEpochValidation: a greater epoch, a smaller one, and the previous
    epoch without partitions are fenced; the previous epoch owning a subset of the assignment
    is a lost response, answered with the current epoch."""
    ctx = ConsumerContext({"foo": 3})
    ctx.join("m1")
    ctx.set_topic("foo", 6)  # epoch 2
    response = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1, 2)))
    assert (response.member_epoch, response.assignment) == (2, {"foo": (0, 1, 2, 3, 4, 5)})
    member = ctx.group().members["m1"]
    assert (member.member_epoch, member.previous_member_epoch) == (2, 1)

    for epoch in (3, 200):
        assert ctx.heartbeat(member_id="m1", member_epoch=epoch).error_code == (
            Errors.FENCED_MEMBER_EPOCH
        )
    response = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert response.error_message is not None and "smaller member epoch (1)" in (
        response.error_message
    )
    response = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(7,)))
    assert response.error_code == Errors.FENCED_MEMBER_EPOCH
    response = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(1, 2)))
    assert (response.error_code, response.member_epoch) == (Errors.NONE, 2)


def test_member_can_rejoin_with_epoch_zero_in_stable_state() -> None:
    """testMemberCanRejoinWithEpochZeroInStableState (KAFKA-19233): a known member sending
    epoch 0 (librdkafka after being fenced, same member id) is not fenced; with the same
    subscription the epoch does not move and the whole assignment comes back."""
    ctx = ConsumerContext({"foo": 3})
    stable_group_of(ctx, "m1")
    mark = ctx.mark()
    response = ctx.join("m1")
    assert (response.error_code, response.member_epoch) == (Errors.NONE, 1)
    assert response.assignment == {"foo": (0, 1, 2)}
    assert ctx.records_since(mark) == []
    assert ctx.group().group_epoch == 1


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state() -> None:
    """testMemberCanRejoinWithEpochZeroInUnrevokedPartitionsState: rejoining owning nothing
    counts as having revoked, so the member moves to the target epoch."""
    ctx = ConsumerContext({"foo": 4})
    stable_group_of(ctx, "m1")
    ctx.join("m2")  # epoch 2: m1 must revoke two partitions
    response = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert ctx.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert response.assignment == {"foo": (0, 1)}
    response = ctx.join("m1")
    assert (response.member_epoch, response.assignment) == (2, {"foo": (0, 1)})
    assert ctx.group().members["m1"].state is MemberState.STABLE


def test_member_joins_empty_consumer_group() -> None:
    """testMemberJoinsEmptyConsumerGroup: the answer and the exact records, in Kafka's order
    (member subscription, subscription metadata, group epoch, target assignment, target
    epoch, current assignment)."""
    ctx = ConsumerContext({"foo": 6, "bar": 3})
    foo, bar = ctx.coord.topic_id("foo"), ctx.coord.topic_id("bar")
    response = ctx.join("m1", ("foo", "bar"), client_id="client", client_host="/127.0.0.1")
    assert response.error_code == Errors.NONE
    assert response.member_id == "m1"
    assert response.member_epoch == 1
    assert response.heartbeat_interval_ms == 5000
    assert response.assignment == {"bar": (0, 1, 2), "foo": (0, 1, 2, 3, 4, 5)}
    assigned = tuple(
        sorted(
            (
                TopicPartitions(topic_id=foo, partitions=(0, 1, 2, 3, 4, 5)),
                TopicPartitions(topic_id=bar, partitions=(0, 1, 2)),
            ),
            key=lambda t: t.topic_id,
        )
    )
    assert ctx.records_since(0) == [
        (
            ConsumerGroupMemberMetadataKey(group=GROUP, member_id="m1"),
            ConsumerGroupMemberMetadataValue(
                instance_id=None,
                rack_id=None,
                client_id="client",
                client_host="/127.0.0.1",
                subscribed_topic_names=("foo", "bar"),
                subscribed_topic_regex=None,
                rebalance_timeout_ms=5000,
                server_assignor=None,
            ),
        ),
        (
            ConsumerGroupPartitionMetadataKey(group=GROUP),
            ConsumerGroupPartitionMetadataValue(
                topics=(
                    TopicMetadata(topic_id=bar, topic_name="bar", num_partitions=3),
                    TopicMetadata(topic_id=foo, topic_name="foo", num_partitions=6),
                )
            ),
        ),
        (ConsumerGroupMetadataKey(group=GROUP), ConsumerGroupMetadataValue(epoch=1)),
        (
            ConsumerGroupTargetAssignmentMemberKey(group=GROUP, member_id="m1"),
            ConsumerGroupTargetAssignmentMemberValue(topic_partitions=assigned),
        ),
        (
            ConsumerGroupTargetAssignmentMetadataKey(group=GROUP),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=1),
        ),
        (
            ConsumerGroupCurrentMemberAssignmentKey(group=GROUP, member_id="m1"),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=1,
                previous_member_epoch=0,
                state=0,
                assigned_partitions=assigned,
                partitions_pending_revocation=(),
            ),
        ),
    ]
    assert ctx.group().state is ConsumerGroupState.STABLE
    assert ctx.replayed().group(GROUP) == ctx.group()


def test_new_joining_member_triggers_new_target_assignment() -> None:
    """testNewJoiningMemberTriggersNewTargetAssignment: a third member bumps the epoch and
    gets a share of the partitions; records are written only for members whose target
    changed."""
    ctx = ConsumerContext({"foo": 6})
    stable_group_of(ctx, "m1", "m2")
    assert ctx.group().group_epoch == 2
    mark = ctx.mark()
    response = ctx.join("m3")
    assert response.member_epoch == 3
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (3, 3)
    targets = {m: v.target.get("foo", ()) for m, v in group.members.items()}
    assert sorted(len(t) for t in targets.values()) == [2, 2, 2]
    assert sorted(p for t in targets.values() for p in t) == list(range(6))
    kinds = [type(k).__name__ for k, _ in ctx.records_since(mark)]
    assert kinds == [
        "ConsumerGroupMemberMetadataKey",
        "ConsumerGroupMetadataKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupCurrentMemberAssignmentKey",
    ]
    # m3's partitions are still owned by m1 and m2: it waits for them.
    assert group.members["m3"].state is MemberState.UNRELEASED_PARTITIONS
    assert response.assignment == {}
    assert group.state is ConsumerGroupState.RECONCILING


def test_updating_subscription_triggers_new_target_assignment() -> None:
    """testUpdatingSubscriptionTriggersNewTargetAssignment."""
    ctx = ConsumerContext({"foo": 3, "bar": 2})
    stable_group_of(ctx, "m1")
    mark = ctx.mark()
    response = ctx.heartbeat(member_id="m1", member_epoch=1, subscribed_topic_names=("foo", "bar"))
    assert response.member_epoch == 2
    assert response.assignment == {"bar": (0, 1), "foo": (0, 1, 2)}
    kinds = [type(k).__name__ for k, _ in ctx.records_since(mark)]
    assert kinds == [
        "ConsumerGroupMemberMetadataKey",
        "ConsumerGroupPartitionMetadataKey",
        "ConsumerGroupMetadataKey",
        "ConsumerGroupTargetAssignmentMemberKey",
        "ConsumerGroupTargetAssignmentMetadataKey",
        "ConsumerGroupCurrentMemberAssignmentKey",
    ]
    bump = ctx.events_of(ConsumerGroupEpochBumped)[-1]
    assert (bump.epoch, bump.cause, bump.cause_member_id) == (2, "metadata_change", "m1")


def test_leaving_member_bumps_group_epoch() -> None:
    """testLeavingMemberBumpsGroupEpoch: tombstones of the member's current assignment, target
    and subscription, the subscription metadata without it, then the bump."""
    ctx = ConsumerContext({"foo": 3, "bar": 2})
    ctx.join("m1", ("foo",))
    ctx.join("m2", ("foo", "bar"))
    settle(ctx)
    mark = ctx.mark()
    response = ctx.heartbeat(member_id="m2", member_epoch=-1)
    assert (response.error_code, response.member_id, response.member_epoch) == (
        Errors.NONE,
        "m2",
        -1,
    )
    foo = ctx.coord.topic_id("foo")
    assert ctx.records_since(mark) == [
        (ConsumerGroupCurrentMemberAssignmentKey(group=GROUP, member_id="m2"), None),
        (ConsumerGroupTargetAssignmentMemberKey(group=GROUP, member_id="m2"), None),
        (ConsumerGroupMemberMetadataKey(group=GROUP, member_id="m2"), None),
        (
            ConsumerGroupPartitionMetadataKey(group=GROUP),
            ConsumerGroupPartitionMetadataValue(
                topics=(TopicMetadata(topic_id=foo, topic_name="foo", num_partitions=3),)
            ),
        ),
        (ConsumerGroupMetadataKey(group=GROUP), ConsumerGroupMetadataValue(epoch=3)),
    ]
    assert ctx.group().state is ConsumerGroupState.ASSIGNING
    removed = ctx.events_of(MemberRemoved)[-1]
    assert (removed.member_id, removed.reason) == ("m2", "left")
    assert ctx.replayed().group(GROUP) == ctx.group()


def test_reconciliation_process() -> None:
    """testReconciliationProcess: three members; a third joining moves partitions from the first
    two, who revoke (UNREVOKED_PARTITIONS, at their old epoch, the answer without the revoked
    partitions), then the newcomer gets them (UNRELEASED_PARTITIONS → STABLE)."""
    ctx = ConsumerContext({"foo": 6, "bar": 3})
    stable_group_of(ctx, "m1", "m2", topics=("foo", "bar"))
    before = {m: v.assigned for m, v in ctx.group().members.items()}
    assert ctx.group().group_epoch == 2

    response = ctx.join("m3", ("foo", "bar"))
    assert (response.member_epoch, response.assignment) == (3, {})
    assert ctx.group().members["m3"].state is MemberState.UNRELEASED_PARTITIONS

    # m1 learns of the new target: it must revoke what went to m3, at its old epoch.
    response = ctx.heartbeat(member_id="m1", member_epoch=2)
    m1 = ctx.group().members["m1"]
    assert m1.state is MemberState.UNREVOKED_PARTITIONS
    assert m1.member_epoch == 2
    assert response.member_epoch == 2
    assert response.assignment == m1.assigned
    assert m1.pending_revocation and m1.assigned != before["m1"]

    # A heartbeat still listing a revoked partition changes nothing.
    response = ctx.heartbeat(
        member_id="m1", member_epoch=2, topic_partitions=owned(**dict(before["m1"]))
    )
    assert response.assignment is None
    assert ctx.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS

    # m1 revokes: epoch 3, Stable.
    response = ctx.heartbeat(member_id="m1", member_epoch=2, topic_partitions=owned(**m1.assigned))
    assert (response.member_epoch, ctx.group().members["m1"].state) == (3, MemberState.STABLE)

    # m3 gets what m1 released, and still waits for m2's.
    response = ctx.heartbeat(member_id="m3", member_epoch=3, topic_partitions=owned())
    m3 = ctx.group().members["m3"]
    assert m3.state is MemberState.UNRELEASED_PARTITIONS
    assert response.assignment == m3.assigned and m3.assigned

    # m2 revokes in two heartbeats, then m3 gets everything.
    ctx.heartbeat(member_id="m2", member_epoch=2)
    m2 = ctx.group().members["m2"]
    assert m2.state is MemberState.UNREVOKED_PARTITIONS
    ctx.heartbeat(member_id="m2", member_epoch=2, topic_partitions=owned(**m2.assigned))
    response = ctx.heartbeat(member_id="m3", member_epoch=3, topic_partitions=owned(**m3.assigned))
    group = ctx.group()
    assert group.members["m3"].state is MemberState.STABLE
    assert response.assignment == group.members["m3"].target
    assert group.state is ConsumerGroupState.STABLE
    assert all(m.assigned == m.target for m in group.members.values())
    assert ctx.replayed().group(GROUP) == group


def test_consumer_group_heartbeat_full_response() -> None:
    """testConsumerGroupHeartbeatFullResponse: the assignment is sent when the request is full
    (epoch 0, or timeout, names and owned partitions all set) or the assignment changed."""
    ctx = ConsumerContext({"foo": 2})
    assert ctx.join("m1").assignment == {"foo": (0, 1)}
    assert ctx.heartbeat(member_id="m1", member_epoch=1).assignment is None
    full = ctx.heartbeat(
        member_id="m1",
        member_epoch=1,
        rebalance_timeout_ms=REBALANCE_TIMEOUT,
        subscribed_topic_names=("foo",),
        topic_partitions=owned(foo=(0, 1)),
    )
    assert full.assignment == {"foo": (0, 1)}
    partial = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    assert partial.assignment is None
    ctx.set_topic("foo", 3)
    changed = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert (changed.member_epoch, changed.assignment) == (2, {"foo": (0, 1, 2)})


def test_consumer_group_states() -> None:
    """testConsumerGroupStates: Empty → Stable → Assigning → Reconciling → Stable → Empty,
    each move a StateChanged, the ones that start a rebalance with their cause."""
    ctx = ConsumerContext({"foo": 4})
    ctx.join("m1")
    assert ctx.group().state is ConsumerGroupState.STABLE
    ctx.set_topic("foo", 6)
    assert ctx.group().state is ConsumerGroupState.ASSIGNING
    ctx.join("m2")
    assert ctx.group().state is ConsumerGroupState.RECONCILING
    settle(ctx)
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    ctx.heartbeat(member_id="m2", member_epoch=-1)
    assert ctx.group().state is ConsumerGroupState.EMPTY
    moves = [(e.from_state, e.to_state, e.cause) for e in ctx.events_of(StateChanged)]
    assert moves == [
        ("Empty", "Stable", None),
        ("Stable", "Assigning", "partitions_changed"),
        ("Assigning", "Reconciling", None),
        ("Reconciling", "Stable", None),
        ("Stable", "Assigning", "member_left"),
        ("Assigning", "Empty", None),
    ]


# ------------------------------------------------------------------ timeouts


def test_session_timeout_lifecycle() -> None:
    """testSessionTimeoutLifecycle: every heartbeat re-arms the session; a leave cancels it."""
    ctx = ConsumerContext({"foo": 3})
    ctx.join("m1")
    assert ctx.coord.next_deadline_ms() == 45000
    ctx.sleep(40000)
    ctx.heartbeat(member_id="m1", member_epoch=1)
    assert ctx.coord.next_deadline_ms() == 85000
    ctx.heartbeat(member_id="m1", member_epoch=-1)
    assert ctx.coord.next_deadline_ms() is None


def test_session_timeout_expiration() -> None:
    """testSessionTimeoutExpiration: the member is fenced, the epoch bumped."""
    ctx = ConsumerContext({"foo": 3})
    ctx.join("m1")
    ctx.sleep(45000)
    group = ctx.group()
    assert group.members == {} and group.group_epoch == 2
    assert group.state is ConsumerGroupState.EMPTY
    removed = ctx.events_of(MemberRemoved)[-1]
    assert (removed.member_id, removed.reason) == ("m1", "session_timeout")
    assert ctx.heartbeat(member_id="m1", member_epoch=1).error_code == Errors.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_lifecycle() -> None:
    """testRebalanceTimeoutLifecycle: armed when the member must revoke, cancelled when it did."""
    ctx = ConsumerContext({"foo": 2})
    stable_group_of(ctx, "m1")
    ctx.join("m2", rebalance_timeout_ms=12000)
    ctx.heartbeat(member_id="m1", member_epoch=1)
    assert ctx.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    key = ("consumer-rebalance", GROUP, "m1")
    assert ctx.coord._timers.deadline(key) == ctx.now + REBALANCE_TIMEOUT
    ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0,)))
    assert ctx.coord._timers.deadline(key) is None


def test_rebalance_timeout_expiration() -> None:
    """testRebalanceTimeoutExpiration: a member still at the epoch the timeout was armed at
    is fenced, and its partitions go to the others."""
    ctx = ConsumerContext({"foo": 2})
    stable_group_of(ctx, "m1")
    ctx.join("m2")
    ctx.heartbeat(member_id="m1", member_epoch=1)
    ctx.sleep(REBALANCE_TIMEOUT - 1)
    ctx.heartbeat(member_id="m2", member_epoch=2)
    assert "m1" in ctx.group().members
    ctx.sleep(1)
    group = ctx.group()
    assert set(group.members) == {"m2"}
    assert ctx.events_of(MemberRemoved)[-1].reason == "rebalance_timeout"
    response = ctx.heartbeat(member_id="m2", member_epoch=2)
    assert (response.member_epoch, response.assignment) == (3, {"foo": (0, 1)})


# ------------------------------------------------------------------ static membership


def test_static_member_gets_back_assignment_upon_rejoin() -> None:
    """testStaticMemberGetsBackAssignmentUponRejoin: a static member that left with -2 comes
    back under a new member id with its assignment, at the same group epoch."""
    ctx = ConsumerContext({"foo": 4})
    ctx.join("m1", instance_id="i1")
    ctx.join("m2", instance_id="i2")
    settle(ctx)
    before = ctx.group()
    assigned = before.members["m1"].assigned
    response = ctx.heartbeat(member_id="m1", instance_id="i1", member_epoch=-2)
    assert (response.error_code, response.member_epoch) == (Errors.NONE, -2)
    mark = ctx.mark()
    response = ctx.join("m1b", instance_id="i1")
    assert response.error_code == Errors.NONE
    assert (response.member_epoch, response.assignment) == (before.group_epoch, assigned)
    group = ctx.group()
    assert set(group.members) == {"m1b", "m2"}
    assert group.group_epoch == before.group_epoch
    kinds = [(type(k).__name__, v is None) for k, v in ctx.records_since(mark)]
    assert kinds == [
        ("ConsumerGroupCurrentMemberAssignmentKey", True),
        ("ConsumerGroupTargetAssignmentMemberKey", True),
        ("ConsumerGroupMemberMetadataKey", True),
        ("ConsumerGroupMemberMetadataKey", False),
        ("ConsumerGroupTargetAssignmentMemberKey", False),
        ("ConsumerGroupCurrentMemberAssignmentKey", False),
        ("ConsumerGroupCurrentMemberAssignmentKey", False),
    ]
    assert ctx.replayed().group(GROUP) == group


def test_no_group_epoch_bump_when_static_member_temporarily_leaves() -> None:
    """testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves: -2 writes only the member's
    current assignment at epoch -2."""
    ctx = ConsumerContext({"foo": 4})
    ctx.join("m1", instance_id="i1")
    ctx.join("m2", instance_id="i2")
    settle(ctx)
    epoch = ctx.group().group_epoch
    mark = ctx.mark()
    ctx.heartbeat(member_id="m1", instance_id="i1", member_epoch=-2)
    records = ctx.records_since(mark)
    assert [type(k).__name__ for k, _ in records] == ["ConsumerGroupCurrentMemberAssignmentKey"]
    assert records[0][1].member_epoch == -2
    assert ctx.group().group_epoch == epoch
    assert ctx.group().members["m1"].assigned  # still held for its instance

    # The group is Reconciling meanwhile (a member is not at the target epoch), as Kafka's
    # ConsumerGroup.computeConsumerGroupState says; but nothing was rebalanced: the move has
    # no cause, and the return takes it back to Stable at the same epoch.
    moves = [e for e in ctx.events_of(StateChanged) if e.to_state == "Reconciling"]
    assert (moves[-1].from_state, moves[-1].cause, moves[-1].cause_member_id) == (
        "Stable",
        None,
        None,
    )
    ctx.join("m1b", instance_id="i1")
    back = ctx.events_of(StateChanged)[-1]
    assert (back.from_state, back.to_state) == ("Reconciling", "Stable")
    assert ctx.group().group_epoch == epoch


def test_fenced_instance_id_when_static_member_with_different_member_id_joins() -> None:
    """testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins: a
    heartbeat (epoch > 0) for an instance id held by another member id is FENCED_INSTANCE_ID;
    a leave too."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", instance_id="i1")
    response = ctx.heartbeat(member_id="other", instance_id="i1", member_epoch=1)
    assert response.error_code == Errors.FENCED_INSTANCE_ID
    response = ctx.heartbeat(member_id="other", instance_id="i1", member_epoch=-2)
    assert response.error_code == Errors.FENCED_INSTANCE_ID
    response = ctx.heartbeat(member_id="other", instance_id="nobody", member_epoch=1)
    assert response.error_code == Errors.UNKNOWN_MEMBER_ID


def test_static_member_joining_while_its_instance_is_active_gets_unreleased_instance_id() -> None:
    """testStaticMemberRejoinWithoutLeaving…: a new member id for an instance id whose member
    has not left with -2 is UNRELEASED_INSTANCE_ID (the new member's error, not the old's)."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", instance_id="i1")
    response = ctx.join("m1b", instance_id="i1")
    assert response.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert set(ctx.group().members) == {"m1"}


def test_static_member_rejoining_under_its_own_id_is_not_unreleased() -> None:
    """A fenced librdkafka member rejoins with epoch 0 under its own id (KAFKA-19233); for a
    static member that must not be UNRELEASED_INSTANCE_ID, which librdkafka treats as fatal."""
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", instance_id="i1")
    response = ctx.join("m1", instance_id="i1")
    assert (response.error_code, response.member_epoch) == (Errors.NONE, 1)


def test_static_member_leaving_with_minus_one_is_removed() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", instance_id="i1")
    response = ctx.heartbeat(member_id="m1", instance_id="i1", member_epoch=-1)
    assert response.member_epoch == -1
    assert ctx.group().members == {}
    assert ctx.join("m1b", instance_id="i1").error_code == Errors.NONE


# ------------------------------------------------------------------ topics


def test_regex_subscription_picks_up_a_topic_created_later() -> None:
    """librdkafka's `(^a.*)|(b)` pattern; Kafka matches whole names (RE2)."""
    ctx = ConsumerContext({"alpha": 2, "beta": 1, "b": 1})
    response = ctx.join("m1", (), subscribed_topic_regex="(^a.*)|(b)")
    assert response.assignment == {"alpha": (0, 1), "b": (0,)}
    ctx.set_topic("apple", 1)
    bump = ctx.events_of(ConsumerGroupEpochBumped)[-1]
    assert (bump.epoch, bump.cause) == (2, "partitions_changed")
    response = ctx.heartbeat(member_id="m1", member_epoch=1)
    assert response.assignment == {"alpha": (0, 1), "apple": (0,), "b": (0,)}
    ctx.set_topic("zeta", 1)  # matches nothing: no bump
    assert ctx.group().group_epoch == 2
    assert ctx.replayed().group(GROUP) == ctx.group()


def test_topic_growth_and_deletion_bump_the_epoch_of_subscribed_groups_only() -> None:
    ctx = ConsumerContext({"foo": 2, "bar": 1})
    ctx.join("m1", ("foo",))
    ctx.set_topic("bar", 4)
    assert ctx.group().group_epoch == 1
    ctx.set_topic("foo", 3)
    assert ctx.group().group_epoch == 2
    ctx.coord.delete_topic("foo", ctx.now)
    assert ctx.group().group_epoch == 3
    response = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(foo=(0, 1)))
    assert ctx.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert response.assignment == {}
    response = ctx.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned())
    assert response.member_epoch == 3


def test_the_host_may_name_topic_ids_and_a_restart_keeps_what_it_has_not_reported_yet() -> None:
    """Records carry the host's topic ids; after a restart, before the host reports the topic
    again, the group keeps its stored metadata (no bump, the member keeps its partitions)."""
    foo_id = uuid.UUID("11111111-2222-3333-4444-555555555555")
    ctx = ConsumerContext()
    ctx.coord.set_topic_partitions("foo", 2, 0, topic_id=foo_id)
    ctx.join("m1")
    records = ctx.records_since(0)
    target = [v for k, v in records if isinstance(k, ConsumerGroupTargetAssignmentMemberKey)]
    assert target[0].topic_partitions == (TopicPartitions(topic_id=foo_id, partitions=(0, 1)),)
    restarted = ctx.replayed()
    view = restarted.group(GROUP)
    assert view == ctx.group()
    ctx.coord = restarted
    response = ctx.heartbeat(
        member_id="m1",
        member_epoch=1,
        rebalance_timeout_ms=REBALANCE_TIMEOUT,
        subscribed_topic_names=("foo",),
        topic_partitions=owned(foo=(0, 1)),
    )
    assert (response.member_epoch, response.assignment) == (1, {"foo": (0, 1)})
    restarted.set_topic_partitions("foo", 2, ctx.now, topic_id=foo_id)
    assert ctx.group().group_epoch == 1


# ------------------------------------------------------------------ kinds


def test_config_bounds_follow_kafka() -> None:
    with pytest.raises(ValueError, match="consumer_group_session_timeout_ms"):
        CoordinatorConfig(consumer_group_session_timeout_ms=30000)
    with pytest.raises(ValueError, match="consumer_group_heartbeat_interval_ms"):
        CoordinatorConfig(consumer_group_heartbeat_interval_ms=20000)
    config = CoordinatorConfig()
    assert (
        config.consumer_group_session_timeout_ms,
        config.consumer_group_heartbeat_interval_ms,
    ) == (
        45000,
        5000,
    )


# ------------------------------------------------------------------ more of Kafka's cases


def test_partition_assignor_exception_on_regular_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """testPartitionAssignorExceptionOnRegularHeartbeat: an assignor that fails answers
    UNKNOWN_SERVER_ERROR and nothing is written."""

    def failing(*args: object) -> NoReturn:
        raise UnsupportedAssignorError("boom")

    ctx = ConsumerContext({"foo": 2})
    monkeypatch.setattr(target, "assign", failing)
    response = ctx.join("m1")
    assert response.error_code == Errors.UNKNOWN_SERVER_ERROR
    assert response.error_message is not None
    assert "Failed to compute a new target assignment for epoch 1" in response.error_message
    assert ctx.log.entries == [] and ctx.coord.group(GROUP) is None


def test_consumer_group_max_size() -> None:
    ctx = ConsumerContext({"foo": 2}, config=CoordinatorConfig(consumer_group_max_size=1))
    ctx.join("m1")
    response = ctx.join("m2")
    assert response.error_code == Errors.GROUP_MAX_SIZE_REACHED
    assert ctx.join("m1").error_code == Errors.NONE


def test_a_group_of_another_coordinator_partition_is_not_coordinator() -> None:
    config = CoordinatorConfig(owned_partitions=frozenset({0}))
    ctx = ConsumerContext({"foo": 2}, config=config)
    assert ctx.join("m1").error_code == Errors.NOT_COORDINATOR


def test_the_heartbeat_interval_is_the_configured_one() -> None:
    config = CoordinatorConfig(consumer_group_heartbeat_interval_ms=7000)
    ctx = ConsumerContext({"foo": 2}, config=config)
    assert ctx.join("m1").heartbeat_interval_ms == 7000


def test_a_static_member_away_for_longer_than_its_session_is_removed() -> None:
    ctx = ConsumerContext({"foo": 2})
    ctx.join("m1", instance_id="i1")
    ctx.sleep(10000)
    ctx.heartbeat(member_id="m1", instance_id="i1", member_epoch=-2)
    ctx.sleep(35000)
    assert ctx.group().members == {}
    assert ctx.events_of(MemberRemoved)[-1].reason == "session_timeout"


def test_replay_of_records_naming_a_topic_id_nobody_reported_keeps_it_until_the_host_does() -> None:
    """A topic id the log names but neither the host nor the group's subscription metadata
    does (a compacted log, say) is kept; answers leave it out until the host reports it."""
    bar = uuid.UUID(int=7)
    log = MemoryLog(
        [
            member_subscription_record(
                GROUP,
                "m1",
                ConsumerGroupMemberMetadataValue(
                    instance_id=None,
                    rack_id=None,
                    client_id="c",
                    client_host="h",
                    subscribed_topic_names=("bar",),
                    subscribed_topic_regex=None,
                    rebalance_timeout_ms=5000,
                    server_assignor=None,
                ),
            ),
            epoch_record(GROUP, 4),
            target_assignment_record(GROUP, "m1", {bar: frozenset({0, 1})}),
            target_assignment_epoch_record(GROUP, 4),
            current_assignment_record(
                GROUP,
                "m1",
                ConsumerGroupCurrentMemberAssignmentValue(
                    member_epoch=4,
                    previous_member_epoch=3,
                    state=0,
                    assigned_partitions=(TopicPartitions(topic_id=bar, partitions=(0, 1)),),
                    partitions_pending_revocation=(),
                ),
            ),
        ]
    )
    ctx = ConsumerContext(log=log)
    assert ctx.group().members["m1"].assigned == {str(bar): (0, 1)}
    assert ctx.group().state is ConsumerGroupState.STABLE
    full = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("bar",))
    response = ctx.heartbeat(member_id="m1", member_epoch=4, topic_partitions=(), **full)
    assert (response.member_epoch, response.assignment) == (4, {})
    ctx.coord.set_topic_partitions("bar", 2, ctx.now, topic_id=bar)
    assert ctx.group().members["m1"].assigned == {"bar": (0, 1)}
    response = ctx.heartbeat(member_id="m1", member_epoch=4, topic_partitions=(), **full)
    assert response.assignment == {"bar": (0, 1)}


def test_a_tombstone_for_a_group_or_member_that_does_not_exist_is_ignored_at_replay() -> None:
    log_entries = [
        current_assignment_tombstone(GROUP, "ghost"),
        member_subscription_tombstone(GROUP, "ghost"),
        epoch_tombstone(GROUP),
    ]
    ctx = ConsumerContext(log=MemoryLog(log_entries))
    assert ctx.coord.group(GROUP) is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (dict(member_epoch="1"), "member_epoch"),
        (dict(member_epoch=2**31), "member_epoch"),
        (dict(subscribed_topic_names=["foo"]), "subscribed_topic_names"),
        (dict(subscribed_topic_names=("foo", 3)), "subscribed_topic_names"),
        (dict(topic_partitions=(("foo", (0,)),)), "topic_partitions"),
        (dict(instance_id=7), "instance_id"),
        (dict(rebalance_timeout_ms=1.5), "rebalance_timeout_ms"),
    ],
)
def test_a_heartbeat_request_checks_its_fields_when_built(
    fields: dict[str, object], field: str
) -> None:
    request: dict[str, object] = dict(group_id=GROUP, member_id="m1", member_epoch=0)
    request.update(fields)
    with pytest.raises((FieldError, FieldTypeError)) as info:
        ConsumerGroupHeartbeatRequest(**request)  # type: ignore[arg-type]
    assert info.value.field == field
    with pytest.raises(FieldError):
        OwnedTopicPartitions(topic="foo", partitions=(-1,))
