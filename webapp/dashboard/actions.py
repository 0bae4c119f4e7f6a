"""The dashboard's staff actions: ``POST /api/admin/<action>`` (docs/dashboard.md, "Staff
actions").

Each action is a coroutine ``(runtime, body) -> Outcome`` that asks the coordinator what a Kafka
operator's tool would (LeaveGroup with an admin's reason, DeleteGroups, OffsetCommit for an
Empty group as ``kafka-consumer-groups --reset-offsets`` does, OffsetDelete) and says what
happened in words. Every call, refused or not, leaves an ``AdminAction`` audit row.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse

from coordinator_engine import (
    ConsumerGroupView,
    DeleteGroupsRequest,
    Errors,
    GroupState,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    PartitionOffset,
    TopicPartition,
)
from webapp.housekeeping.status import TASKS, run_now
from webapp.models import AdminAction
from webapp.runtime.api import RuntimeNotReady
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, get_runtime
from webapp.runtime.metrics import api_name
from webapp.runtime.topics import InvalidTopicError, UnknownTopicError
from webapp.simulation.manager import ACTIONS, SimulationError, simulation_for, spec_from_json

from .access import staff_view
from .api import group_summary

__all__ = ["ACTION_NAMES", "admin_action"]

#: Most simulated consumers one spawn action starts.
MAX_SPAWN = 50
#: The reason a removal carries: the engine records it as ``removed_by_admin``.
ADMIN_LEAVE_REASON = "removed by admin"


@dataclass
class Outcome:
    ok: bool
    result: str
    status: int = 200
    extra: dict[str, Any] = field(default_factory=dict)


class Refused(Exception):
    """An action that cannot be done, in words, with its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _submit(runtime: CoordinatorRuntime, request: Any) -> Any:
    """``runtime.submit(request)``, counted for ``/metrics`` as the ``dashboard`` transport's."""
    response = None
    try:
        response = await runtime.submit(request)
        return response
    finally:
        runtime.metrics.count(api_name(type(request)), "dashboard", response)


def _str(body: dict[str, Any], name: str, *, required: bool = True) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise Refused(400, f"{name} must be a non-empty string")
    return value


def _group(runtime: CoordinatorRuntime, body: dict[str, Any]) -> tuple[str, Any]:
    group_id = _str(body, "group_id")
    view = runtime.group(group_id)
    if view is None:
        raise Refused(404, f"there is no group {group_id!r}")
    return group_id, view


def _require_empty(group_id: str, view: Any, what: str) -> None:
    # A classic or a consumer group's Empty (each kind has its own state enum; a handoff
    # group has no Empty).
    if view.state.value != GroupState.EMPTY.value:
        raise Refused(
            409,
            f"group {group_id!r} is {view.state.value}: {what} needs an Empty group "
            "(stop its consumers first, as Kafka requires)",
        )


# ---------------------------------------------------------------- the actions


async def rebalance(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    group_id, view = _group(runtime, body)
    code = runtime.trigger_rebalance(group_id)
    if code == Errors.NONE:
        return Outcome(True, f"group {group_id!r} is rebalancing (it was {view.state.value})")
    if code == Errors.REBALANCE_IN_PROGRESS:
        raise Refused(409, f"group {group_id!r} is already preparing a rebalance")
    if code == Errors.GROUP_ID_NOT_FOUND:
        raise Refused(409, f"group {group_id!r} is {view.state.value}: it has no members")
    raise Refused(409, f"the coordinator refused: {Errors.name_of(code)}")


async def remove_member(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    group_id, view = _group(runtime, body)
    member_id = _str(body, "member_id")
    member = view.members.get(member_id)
    if member is None:
        raise Refused(404, f"group {group_id!r} has no member {member_id!r}")
    if isinstance(view, ConsumerGroupView):
        # Kafka serves an admin's LeaveGroup to a consumer group; here it is its own call.
        code = runtime.remove_consumer_member(group_id, member_id)
        if code:
            raise Refused(409, f"the coordinator refused the removal: {Errors.name_of(code)}")
        return Outcome(True, f"{member_id} was removed from {group_id!r}; the group epoch goes up")
    identity = MemberIdentity(
        member_id=member_id, group_instance_id=member.group_instance_id, reason=ADMIN_LEAVE_REASON
    )
    response = await _submit(runtime, LeaveGroupRequest(group_id=group_id, members=(identity,)))
    code = response.error_code or (response.members[0].error_code if response.members else 0)
    if code:
        raise Refused(409, f"the coordinator refused the LeaveGroup: {Errors.name_of(code)}")
    return Outcome(True, f"{member_id} was removed from {group_id!r}; the group rebalances")


async def spawn(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    fields = dict(body)
    count = fields.pop("count", 1)
    if type(count) is not int or not 1 <= count <= MAX_SPAWN:
        raise Refused(400, f"count must be an integer from 1 to {MAX_SPAWN}")
    # The page sends `instance_id` (docs/dashboard.md); the spawn body's own name is taken too.
    instance_id = fields.pop("instance_id", None) or fields.pop("group_instance_id", None) or None
    simulation = simulation_for(runtime)
    specs = []
    for n in range(count):
        if instance_id is not None:
            fields["group_instance_id"] = instance_id if count == 1 else f"{instance_id}-{n + 1}"
        try:
            specs.append(spec_from_json(fields))
        except SimulationError as exc:
            raise Refused(400, str(exc)) from None
    _require_kind(runtime, specs[0].group_id, specs[0].protocol)
    names = [simulation.spawn(spec).name for spec in specs]
    behaviour = specs[0].behaviour.value
    return Outcome(
        True,
        f"started {count} {behaviour} consumer{'s' if count > 1 else ''} in "
        f"{specs[0].group_id!r}: {', '.join(names)}",
        extra={"names": names},
    )


def _require_kind(runtime: CoordinatorRuntime, group_id: str, protocol: str) -> None:
    """Kinds do not mix (docs/engine.md, "Handoff groups", "Consumer groups"): consumers of
    another protocol would each be refused with INCONSISTENT_GROUP_PROTOCOL and stop, so none
    is started. (An Empty classic or consumer group may be taken over by the other protocol's
    join, as in Kafka; the action still keeps to the group's kind, as the page does.)"""
    view = runtime.group(group_id)
    if view is None:
        return
    kind = group_summary(view)["kind"]
    if kind != protocol:
        raise Refused(
            409,
            f"INCONSISTENT_GROUP_PROTOCOL: group {group_id!r} is a {kind} group and kinds do "
            f"not mix; spawn {kind} consumers there, or {protocol} ones in another group",
        )


async def simulation(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    name = _str(body, "name")
    do = _str(body, "do")
    if do not in ACTIONS:
        raise Refused(400, f"do must be one of {', '.join(ACTIONS)}")
    try:
        consumer = await simulation_for(runtime).act(name, do)
    except SimulationError as exc:
        raise Refused(404, str(exc)) from None
    return Outcome(True, f"{do}: {name} is now {consumer.to_json()['status']}")


async def partitions(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    topic = _str(body, "topic")
    count = body.get("partitions")
    if type(count) is not int:
        raise Refused(400, "partitions must be an integer")
    before = runtime.topics.get(topic)
    try:
        spec = await runtime.update_topic(topic, partitions=count)
    except UnknownTopicError as exc:
        raise Refused(404, str(exc)) from None
    except InvalidTopicError as exc:
        raise Refused(400, str(exc)) from None
    was = before.partitions if before is not None else 0
    return Outcome(
        True,
        f"topic {topic!r} has {spec.partitions} partitions (was {was}); "
        "its consumers rejoin at their next metadata refresh",
    )


async def delete_group(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    group_id = _str(body, "group_id")
    response = await _submit(runtime, DeleteGroupsRequest(group_ids=(group_id,)))
    code = response.results[0].error_code
    if code == Errors.NON_EMPTY_GROUP:
        view = runtime.group(group_id)
        state = view.state.value if view is not None else "not Empty"
        raise Refused(
            409, f"NON_EMPTY_GROUP: group {group_id!r} is {state}; only an Empty group is deleted"
        )
    if code == Errors.GROUP_ID_NOT_FOUND:
        raise Refused(404, f"GROUP_ID_NOT_FOUND: there is no group {group_id!r}")
    if code:
        raise Refused(409, f"the coordinator refused: {Errors.name_of(code)}")
    return Outcome(True, f"group {group_id!r} was deleted (its offsets with it)")


def _topic_filter(body: dict[str, Any]) -> str:
    return _str(body, "topic", required=False)


async def reset_offsets(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    group_id, view = _group(runtime, body)
    _require_empty(group_id, view, "resetting offsets")
    to = body.get("to")
    if to not in ("earliest", "latest") and type(to) is not int:
        raise Refused(400, "to must be 'earliest', 'latest' or an offset (an integer)")
    only = _topic_filter(body)
    committed = runtime.committed_offsets(group_id)
    topics = sorted({t for t, _ in committed if not only or t == only} | ({only} - {""}))
    if not topics:
        raise Refused(404, f"group {group_id!r} has no committed offsets to reset")
    now_ms = runtime.now_ms()
    offsets = []
    for topic in topics:
        spec = runtime.topics.get(topic)
        if spec is None:
            raise Refused(404, f"there is no topic {topic!r}")
        for partition in range(spec.partitions):
            end = spec.log_end_offset(partition, now_ms)
            # As Kafka's tool: an offset outside the log is moved to its nearest end.
            offset = 0 if to == "earliest" else end if to == "latest" else min(max(to, 0), end)
            offsets.append(PartitionOffset(topic=topic, partition=partition, offset=offset))
    response = await _submit(
        runtime, OffsetCommitRequest(group_id=group_id, offsets=tuple(offsets))
    )
    failed = sorted({Errors.name_of(p.error_code) for p in response.partitions if p.error_code})
    if failed:
        raise Refused(409, f"the coordinator refused the commit: {', '.join(failed)}")
    return Outcome(
        True, f"reset {len(offsets)} partitions of {', '.join(topics)} to {to} in {group_id!r}"
    )


async def delete_offsets(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    group_id, view = _group(runtime, body)
    _require_empty(group_id, view, "deleting offsets")
    only = _topic_filter(body)
    chosen = sorted(tp for tp in runtime.committed_offsets(group_id) if not only or tp[0] == only)
    if not chosen:
        raise Refused(404, f"group {group_id!r} has no committed offsets to delete")
    request = OffsetDeleteRequest(
        group_id=group_id,
        partitions=tuple(TopicPartition(topic=t, partition=p) for t, p in chosen),
    )
    response = await _submit(runtime, request)
    failed = sorted({Errors.name_of(p.error_code) for p in response.partitions if p.error_code})
    if response.error_code or failed:
        codes = [Errors.name_of(response.error_code)] if response.error_code else failed
        raise Refused(409, f"the coordinator refused: {', '.join(codes)}")
    return Outcome(True, f"deleted the offsets of {len(chosen)} partitions of {group_id!r}")


async def cleanup(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    result = runtime.cleanup()
    return Outcome(
        True,
        f"offset cleanup: {result.offsets_removed} expired offsets removed, "
        f"{result.groups_removed} groups removed",
    )


#: The handoff groups' outage switches, as the action's body and the runtime name them.
HANDOFF_SWITCHES = {"partition_store": "partition store", "discovery": "discovery"}


async def handoff_switches(runtime: CoordinatorRuntime, body: dict[str, Any]) -> Outcome:
    """Switch the handoff groups' partition store or service discovery down or up for every handoff
    group (``partition_store`` and/or ``discovery``: true up, false down); ``group_id`` is
    only the page it was done from, for the audit."""
    wanted = {name: body[name] for name in HANDOFF_SWITCHES if name in body}
    if not wanted:
        raise Refused(400, "give partition_store or discovery (true: up, false: down)")
    for name, value in wanted.items():
        if type(value) is not bool:
            raise Refused(400, f"{name} must be true (up) or false (down)")
    _str(body, "group_id", required=False)
    switches = runtime.set_handoff_switches(**wanted)
    said = "; ".join(
        f"{words}: {'up' if switches[name] else 'down'}" for name, words in HANDOFF_SWITCHES.items()
    )
    if all(switches.values()):
        effect = "handoff groups plan again"
    else:
        effect = "handoff groups keep their current assignment until both are up"
    return Outcome(True, f"{said}: {effect}", extra={"switches": switches})


async def run_task(body: dict[str, Any]) -> Outcome:
    """Queue one run of a housekeeping task now (docs/operations.md, "Housekeeping"): a Celery
    worker runs it as beat would. Needs no runtime here (the task waits for one)."""
    key = body.get("task")
    if not isinstance(key, str) or key not in TASKS:
        raise Refused(400, f"no housekeeping task {key!r}; one of {', '.join(TASKS)}")
    try:
        task_id = await sync_to_async(run_now)(key)
    except Exception as exc:  # kombu's errors: the broker is down or refuses
        raise Refused(503, f"the Celery broker did not take the task: {exc}") from exc
    return Outcome(True, f"{TASKS[key].title}: queued (task {task_id})", extra={"task_id": task_id})


Action = Callable[[CoordinatorRuntime, dict[str, Any]], Awaitable[Outcome]]

_ACTIONS: dict[str, Action] = {
    "rebalance": rebalance,
    "remove-member": remove_member,
    "spawn": spawn,
    "simulation": simulation,
    "partitions": partitions,
    "delete-group": delete_group,
    "reset-offsets": reset_offsets,
    "delete-offsets": delete_offsets,
    "cleanup": cleanup,
    "handoff-switches": handoff_switches,
}
#: Actions that do not go through the coordinator runtime.
_OFF_RUNTIME: dict[str, Callable[[dict[str, Any]], Awaitable[Outcome]]] = {"run-task": run_task}
ACTION_NAMES = (*_ACTIONS, *_OFF_RUNTIME)


def _audit(request: HttpRequest, action: str, body: dict[str, Any], outcome: Outcome) -> None:
    user = request.user
    group_id = body.get("group_id")
    AdminAction.objects.create(
        user=user if user.is_authenticated else None,
        username=user.get_username(),
        action=action,
        group_id=group_id if isinstance(group_id, str) else "",
        parameters=body,
        ok=outcome.ok,
        result=outcome.result,
    )


async def _run(request: HttpRequest, action: str) -> tuple[dict[str, Any], Outcome]:
    if request.method != "POST":
        return {}, Outcome(False, f"{request.method} is not allowed here; use POST", 405)
    handler = _ACTIONS.get(action)
    if handler is None and action not in _OFF_RUNTIME:
        return {}, Outcome(False, f"no action {action!r}; one of {', '.join(ACTION_NAMES)}", 404)
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, RecursionError) as exc:
        return {}, Outcome(False, f"the body is not JSON: {exc}", 400)
    if not isinstance(body, dict):
        return {}, Outcome(False, "the body must be a JSON object", 400)
    try:
        if handler is None:
            return body, await _OFF_RUNTIME[action](body)
        return body, await handler(await get_runtime(), body)
    except Refused as exc:
        return body, Outcome(False, str(exc), exc.status)
    except RuntimeNotReady as exc:
        return body, Outcome(False, f"the coordinator is not serving: {exc}", 503)


@staff_view
async def admin_action(request: HttpRequest, action: str) -> HttpResponse:
    body, outcome = await _run(request, action)
    await sync_to_async(_audit)(request, action, body, outcome)
    if outcome.ok:
        return JsonResponse({"ok": True, "result": outcome.result, **outcome.extra})
    return JsonResponse({"ok": False, "error": outcome.result}, status=outcome.status)
