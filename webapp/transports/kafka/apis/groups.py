"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: the classic group protocol.

Kafka semantics that live here rather than in the engine: JoinGroup v4 and later ask a new
dynamic member to rejoin with the id it is given (MEMBER_ID_REQUIRED, KIP-394); before v7,
JoinGroup's ``protocol_name`` is not nullable, so an error reply carries ``""``; JoinGroup v0
has no rebalance timeout: the session timeout is used, as Kafka's broker does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator_engine import (
    Assignment,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    Protocol,
    SyncGroupRequest,
)

from ..codec import Request
from .context import Context
from .responses import NO_THROTTLE, item_type, make, milliseconds, response_to, schema_of


async def join_group(context: Context, request: Request) -> Any:
    body = request.body
    session_timeout_ms = milliseconds(body.session_timeout)
    rebalance = getattr(body, "rebalance_timeout", None)  # v0 has none: the session's
    rebalance_timeout_ms = session_timeout_ms if rebalance is None else milliseconds(rebalance)
    answer = await context.runtime.submit(
        JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=body.protocol_type,
            protocols=tuple(Protocol(name=p.name, metadata=p.metadata) for p in body.protocols),
            require_known_member_id=request.api_version >= 4,
            client_id=request.client_id or "",
            client_host=context.client_host,
        ),
        via="kafka",
    )
    schema = schema_of(request)
    member_type = item_type(schema, "members")
    nullable_name = request.api_version >= 7
    return make(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        generation_id=answer.generation_id,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name if nullable_name else (answer.protocol_name or ""),
        leader=answer.leader,
        skip_assignment=answer.skip_assignment,
        member_id=answer.member_id,
        members=tuple(
            make(
                member_type,
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=member.metadata,
            )
            for member in answer.members
        ),
    )


def _member(body: Any) -> dict[str, Any]:
    """The group, generation and member a SyncGroup or Heartbeat speaks for (a static member's
    instance id from v3 on)."""
    return {
        "group_id": body.group_id,
        "generation_id": body.generation_id,
        "member_id": body.member_id,
        "group_instance_id": getattr(body, "group_instance_id", None),
    }


async def sync_group(context: Context, request: Request) -> Any:
    body = request.body
    answer = await context.runtime.submit(
        SyncGroupRequest(
            **_member(body),
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple(
                Assignment(member_id=a.member_id, assignment=a.assignment) for a in body.assignments
            ),
        )
    )
    return response_to(
        request,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode(answer.error_code),
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name,
        assignment=answer.assignment,
    )


async def heartbeat(context: Context, request: Request) -> Any:
    body = request.body
    answer = await context.runtime.submit(HeartbeatRequest(**_member(body)))
    return response_to(request, throttle_time=NO_THROTTLE, error_code=ErrorCode(answer.error_code))


async def leave_group(context: Context, request: Request) -> Any:
    body = request.body
    if request.api_version < 3:
        members: tuple[MemberIdentity, ...] = (MemberIdentity(member_id=body.member_id),)
    else:
        members = tuple(
            MemberIdentity(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=getattr(m, "reason", None),
            )
            for m in body.members
        )
    answer = await context.runtime.submit(
        LeaveGroupRequest(group_id=body.group_id, members=members)
    )
    schema = schema_of(request)
    error = answer.error_code
    if request.api_version < 3 and error == 0 and answer.members:
        # One member per request before v3: its own result is the answer.
        error = answer.members[0].error_code
    results = ()
    if request.api_version >= 3:
        result_type = item_type(schema, "members")
        results = tuple(
            make(
                result_type,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=ErrorCode(m.error_code),
            )
            for m in answer.members
        )
    return make(schema, throttle_time=NO_THROTTLE, error_code=ErrorCode(error), members=results)
