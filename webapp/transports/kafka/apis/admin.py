"""DescribeGroups, ListGroups and DeleteGroups: what an AdminClient asks of the groups
(OffsetDelete, the admin's other request, is in ``offsets``)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest

from ..codec import Request
from .context import Context
from .responses import NO_OPERATIONS, NO_THROTTLE, item_type, make, schema_of


async def describe_groups(context: Context, request: Request) -> Any:
    answer = await context.runtime.submit(
        DescribeGroupsRequest(group_ids=tuple(request.body.groups))
    )
    schema = schema_of(request)
    group_type = item_type(schema, "groups")
    member_type = item_type(group_type, "members")
    groups = tuple(
        make(
            group_type,
            error_code=ErrorCode(group.error_code),
            group_id=group.group_id,
            group_state=group.group_state,
            protocol_type=group.protocol_type,
            protocol_data=group.protocol_data,
            members=tuple(
                make(
                    member_type,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.member_metadata,
                    member_assignment=m.member_assignment,
                )
                for m in group.members
            ),
            authorized_operations=NO_OPERATIONS,
        )
        for group in answer.groups
    )
    return make(schema, throttle_time=NO_THROTTLE, groups=groups)


async def list_groups(context: Context, request: Request) -> Any:
    """v4's state filter (KIP-518), v5's type filter and each group's type (KIP-848): the
    engine's kind of the group, ``classic`` or ``handoff``."""
    states = tuple(getattr(request.body, "states_filter", ()))
    types = tuple(getattr(request.body, "types_filter", ()))
    answer = await context.runtime.submit(
        ListGroupsRequest(states_filter=states, types_filter=types)
    )
    schema = schema_of(request)
    listed_type = item_type(schema, "groups")
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        groups=tuple(
            make(
                listed_type,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in answer.groups
        ),
    )


async def delete_groups(context: Context, request: Request) -> Any:
    """Kafka's ``handleDeleteGroupsRequest``: a group the principal may not delete is
    GROUP_AUTHORIZATION_FAILED, each on its own; the others go to the coordinator."""
    schema = schema_of(request)
    result_type = item_type(schema, "results")
    names = tuple(request.body.groups_names)
    if context.may_administer():
        deleted = await context.runtime.submit(DeleteGroupsRequest(group_ids=names))
        results = [(r.group_id, ErrorCode(r.error_code)) for r in deleted.results]
    else:
        results = [(name, ErrorCode.group_authorization_failed) for name in dict.fromkeys(names)]
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        results=tuple(make(result_type, group_id=name, error_code=code) for name, code in results),
    )
