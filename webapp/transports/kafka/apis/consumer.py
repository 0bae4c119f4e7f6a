"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: Kafka 4's consumer protocol (KIP-848)."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    OwnedTopicPartitions,
)
from coordinator_engine.client import new_member_id
from coordinator_engine.responses import TopicAssignment
from webapp.runtime.topics import TopicRegistry

from ..codec import Request
from .context import Context
from .responses import NO_OPERATIONS, NO_THROTTLE, item_type, make, milliseconds, schema_of


async def consumer_group_heartbeat(context: Context, request: Request) -> Any:
    """KIP-848's ConsumerGroupHeartbeat: a join (epoch 0), a heartbeat, a leave (-1, or -2 for a
    static member). The wire names topics by id, the engine by name: owned partitions of an
    id the registry does not know (a deleted topic) are left out, as nothing of such a topic
    can be assigned; the assignment's topics go out with their ids. v0 lets the coordinator
    draw the id of a member joining without one, as Kafka's does (v1 members draw their own,
    KIP-1082). Never parked: the engine answers at once."""
    body = request.body
    registry = context.runtime.topics
    member_id = body.member_id
    if request.api_version == 0 and not member_id and body.member_epoch == 0:
        member_id = new_member_id()
    owned: tuple[OwnedTopicPartitions, ...] | None = None
    if body.topic_partitions is not None:
        named = (
            (registry.get_by_id(t.topic_id) if t.topic_id is not None else None, t.partitions)
            for t in body.topic_partitions
        )
        owned = tuple(
            OwnedTopicPartitions(topic=spec.name, partitions=tuple(partitions))
            for spec, partitions in named
            if spec is not None
        )
    names = body.subscribed_topic_names
    answer = await context.runtime.submit(
        ConsumerGroupHeartbeatRequest(
            group_id=body.group_id,
            member_id=member_id,
            member_epoch=body.member_epoch,
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=milliseconds(body.rebalance_timeout),
            subscribed_topic_names=None if names is None else tuple(names),
            subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
            server_assignor=body.server_assignor,
            topic_partitions=owned,
            client_id=request.client_id or "",
            client_host=context.client_host,
        ),
        via="kafka",
    )
    schema = schema_of(request)
    assignment = None
    if answer.assignment is not None:
        assignment_type = item_type(schema, "assignment")
        assignment = make(
            assignment_type,
            topic_partitions=_topic_partitions(
                registry, item_type(assignment_type, "topic_partitions"), answer.assignment
            ),
        )
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=answer.heartbeat_interval_ms),
        assignment=assignment,
    )


def _topic_partitions(
    registry: TopicRegistry, item_type: type, assignment: TopicAssignment
) -> tuple[Any, ...]:
    """An assignment by topic name as the wire's topic-id lists (ConsumerGroupDescribe's carry
    the name too), in name order; a topic the registry no longer has is left out."""
    items = []
    for name in sorted(assignment):
        topic_id = registry.topic_id(name)
        if topic_id is not None:
            items.append(
                make(
                    item_type,
                    topic_id=topic_id,
                    topic_name=name,
                    partitions=tuple(sorted(assignment[name])),
                )
            )
    return tuple(items)


async def consumer_group_describe(context: Context, request: Request) -> Any:
    """KIP-848's ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for a group that is not a consumer
    group (librdkafka's admin client then asks DescribeGroups, as it does of Kafka)."""
    body = request.body
    answer = await context.runtime.submit(
        ConsumerGroupDescribeRequest(
            group_ids=tuple(body.group_ids),
            include_authorized_operations=body.include_authorized_operations,
        )
    )
    registry = context.runtime.topics
    schema = schema_of(request)
    group_type = item_type(schema, "groups")
    member_type = item_type(group_type, "members")
    assignment_type = item_type(member_type, "assignment")
    partitions_type = item_type(assignment_type, "topic_partitions")

    def assignment(topics: TopicAssignment) -> Any:
        return make(
            assignment_type,
            topic_partitions=_topic_partitions(registry, partitions_type, topics),
        )

    return make(
        schema,
        throttle_time=NO_THROTTLE,
        groups=tuple(
            make(
                group_type,
                error_code=ErrorCode(g.error_code),
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(
                    make(
                        member_type,
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=m.member_type,
                    )
                    for m in g.members
                ),
                authorized_operations=NO_OPERATIONS,
            )
            for g in answer.groups
        ),
    )
