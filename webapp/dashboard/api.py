"""The JSON API and the health check.

Async views: under Daphne they run on the event loop that hosts the coordinator runtime, so
they read its state directly, between two engine calls (no lock, no copy across threads).
Errors are JSON, ``{"error": {"code": ..., "message": ...}}``, with 400, 404, 405, 409 or 503.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, JsonResponse

from coordinator_engine import (
    ConsumerGroupView,
    GroupView,
    HandoffGroupView,
    MemberView,
    TopicPartition,
)
from coordinator_engine.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    subscribed_topics,
)
from coordinator_engine.records import OffsetCommitValue
from webapp.analysis.results import analysis_json
from webapp.housekeeping.liveness import LIVENESS
from webapp.housekeeping.status import housekeeping_status
from webapp.runtime.api import RuntimeNotReady
from webapp.runtime.coordinator_runtime import (
    CoordinatorRuntime,
    ensure_runtime_started,
    get_runtime,
)
from webapp.runtime.history import events_after
from webapp.runtime.topics import (
    InvalidTopicError,
    TopicExistsError,
    TopicRegistry,
    UnknownTopicError,
)
from webapp.simulation.manager import ACTIONS, SimulationError, simulation_for, spec_from_json

from .access import api_view

EVENTS_PAGE_DEFAULT = 1000
EVENTS_PAGE_MAX = 10_000


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def response(self) -> JsonResponse:
        return error_response(self.status, self.code, self.message)


def error_response(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _method_not_allowed(request: HttpRequest, allowed: tuple[str, ...]) -> JsonResponse:
    response = error_response(
        405,
        "method_not_allowed",
        f"{request.method} is not allowed here; use {', '.join(allowed)}",
    )
    response["Allow"] = ", ".join(allowed)
    return response


async def _runtime() -> CoordinatorRuntime:
    try:
        return await get_runtime()
    except Exception as exc:
        raise ApiError(
            503, "unavailable", f"the coordinator runtime is not available: {exc}"
        ) from exc


def _json_body(request: HttpRequest, allowed: frozenset[str]) -> dict[str, Any]:
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
    if type(body) is not dict:
        raise ApiError(400, "invalid_request", "the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ApiError(
            400,
            "invalid_request",
            f"unknown field {unknown[0]!r} (known: {', '.join(sorted(allowed))})",
        )
    return body


# ---------------------------------------------------------------- JSON views of the state


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def group_summary(view: GroupView | HandoffGroupView | ConsumerGroupView) -> dict[str, Any]:
    """A group in a line: ``kind`` is ``classic`` (Kafka's protocol), ``handoff`` (a handoff
    group, whose ``generation_id`` is its plan's epoch and which has no leader) or ``consumer``
    (KIP-848, whose ``generation_id`` is its group epoch and which has no leader)."""
    if isinstance(view, ConsumerGroupView):
        return {
            "group_id": view.group_id,
            "kind": "consumer",
            "state": view.state.value,
            "generation_id": view.group_epoch,
            "protocol_type": view.protocol_type,
            "protocol": None,
            "leader": None,
            "member_count": len(view.members),
        }
    if isinstance(view, HandoffGroupView):
        return {
            "group_id": view.group_id,
            "kind": "handoff",
            "state": view.state.value,
            "generation_id": view.epoch,
            "protocol_type": view.protocol_type,
            "protocol": None,
            "leader": None,
            "member_count": len(view.members),
        }
    return {
        "group_id": view.group_id,
        "kind": "classic",
        "state": view.state.value,
        "generation_id": view.generation_id,
        "protocol_type": view.protocol_type,
        "protocol": view.protocol_name,
        "leader": view.leader_id,
        "member_count": len(view.members),
    }


def _pairs(partitions: Iterable[TopicPartition]) -> list[list[Any]]:
    return [[tp.topic, tp.partition] for tp in partitions]


def _handoff_members(
    view: HandoffGroupView, connection_of: Callable[[str], str | None]
) -> list[dict[str, Any]]:
    """A handoff group's members with their four sets (docs/engine.md, "Handoff groups"):
    ``assignment`` the plan's target, ``owned`` what it may be consuming, ``to_start`` and
    ``to_close`` the handoffs under way."""
    return [
        {
            "member_id": member.member_id,
            "group_instance_id": None,
            "client_id": member.client_id,
            "client_host": member.client_host,
            "connection": connection_of(member.member_id),
            "session_timeout_ms": member.session_timeout_ms,
            "is_leader": False,
            "subscription": sorted(member.topics),
            "assignment": _pairs(member.assignment),
            "owned": _pairs(member.owned),
            "to_start": _pairs(member.to_start),
            "to_close": _pairs(member.to_close),
        }
        for member in view.members.values()
    ]


def _subscribed_topics(member: MemberView, consumer: bool) -> list[str] | None:
    if not consumer:
        return None
    try:
        return sorted(subscribed_topics(member.metadata))
    except ConsumerProtocolError:
        return None


def _assigned_partitions(member: MemberView, consumer: bool) -> list[list[Any]] | None:
    if not consumer:
        return None
    if not member.assignment:
        return []  # no assignment (yet): Kafka's clients read empty bytes as none
    try:
        pairs = decode_assignment(member.assignment).assigned_partitions
    except ConsumerProtocolError:
        return None
    return [[topic, partition] for topic, partition in sorted(pairs)]


def partition_lag(log_end: int | None, offset: int) -> int | None:
    """How far a committed offset is behind its log end; None when either is unknown (an
    unknown topic or partition, or offset -1)."""
    return max(0, log_end - offset) if log_end is not None and offset >= 0 else None


def offsets_json(
    offsets: Mapping[tuple[str, int], OffsetCommitValue], topics: TopicRegistry, now_ms: int
) -> tuple[list[dict[str, Any]], int]:
    """Committed offsets with the log-end offset and lag from the topic registry (None for an
    unknown topic), and the total lag."""
    rows = []
    total_lag = 0
    for (topic, partition), value in sorted(offsets.items()):
        log_end = topics.log_end_offset(topic, partition, now_ms)
        lag = partition_lag(log_end, value.offset)
        total_lag += lag or 0
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "offset": value.offset,
                "metadata": value.metadata,
                "leader_epoch": value.leader_epoch,
                "commit_timestamp_ms": value.commit_timestamp,
                "expire_timestamp_ms": value.expire_timestamp,
                "log_end_offset": log_end,
                "lag": lag,
            }
        )
    return rows, total_lag


def log_end_offsets(
    offsets: Mapping[tuple[str, int], OffsetCommitValue], topics: TopicRegistry, now_ms: int
) -> dict[str, list[int]]:
    """The log-end offset of every partition of each topic with committed offsets (topics the
    registry does not know are left out): what changes about a group's offsets between its
    OffsetsCommitted events."""
    ends: dict[str, list[int]] = {}
    for topic, _ in offsets:
        if topic not in ends and (spec := topics.get(topic)) is not None:
            ends[topic] = spec.log_end_offsets(now_ms)
    return dict(sorted(ends.items()))


def total_lag(
    offsets: Mapping[tuple[str, int], OffsetCommitValue], topics: TopicRegistry, now_ms: int
) -> int:
    """A group's total lag: the sum of its partitions' `partition_lag` (unknown ones count 0)."""
    return sum(
        partition_lag(topics.log_end_offset(topic, partition, now_ms), value.offset) or 0
        for (topic, partition), value in offsets.items()
    )


def _consumer_members(
    view: ConsumerGroupView, connection_of: Callable[[str], str | None]
) -> list[dict[str, Any]]:
    """A consumer group's members (docs/engine.md, "Consumer groups"): epochs, reconciliation
    state, subscription, and assigned, pending revocation and target partitions."""

    def pairs(partitions: Mapping[str, tuple[int, ...]]) -> list[list[Any]]:
        return [[t, p] for t, parts in partitions.items() for p in parts]

    return [
        {
            "member_id": m.member_id,
            "group_instance_id": m.instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "connection": connection_of(m.member_id),
            "member_epoch": m.member_epoch,
            "previous_member_epoch": m.previous_member_epoch,
            "member_state": m.state.name,
            "subscription": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": pairs(m.assigned),
            "pending_revocation": pairs(m.pending_revocation),
            "target": pairs(m.target),
        }
        for m in view.members.values()
    ]


def group_detail_json(
    view: GroupView | HandoffGroupView | ConsumerGroupView,
    offsets: Mapping[tuple[str, int], OffsetCommitValue],
    topics: TopicRegistry,
    now_ms: int,
    connection_of: Callable[[str], str | None] = lambda member_id: None,
    switches: Mapping[str, bool] | None = None,
) -> dict[str, Any]:
    """The whole group: members with their decoded subscription and assignment (``consumer``
    protocol type; None where the bytes are not the consumer protocol) and how each is
    connected (``connection_of(member_id)``: ``kafka``, ``websocket``, ``simulated``, None
    when unknown), and committed offsets with the log-end offset and lag from the topic
    registry (None for an unknown topic). A consumer group also shows its target
    ``assignment_epoch`` (its ``generation_id`` is the group epoch). A handoff group also
    shows the outage ``switches`` (``CoordinatorRuntime.handoff_switches``; both up when not
    given)."""
    rows, total_lag = offsets_json(offsets, topics, now_ms)
    if isinstance(view, ConsumerGroupView):
        return {
            **group_summary(view),
            "assignment_epoch": view.assignment_epoch,
            "members": _consumer_members(view, connection_of),
            "pending_member_ids": [],
            "offsets": rows,
            "total_lag": total_lag,
        }
    if isinstance(view, HandoffGroupView):
        return {
            **group_summary(view),
            "members": _handoff_members(view, connection_of),
            "pending_member_ids": [],
            "offsets": rows,
            "total_lag": total_lag,
            "switches": dict(switches or {"partition_store": True, "discovery": True}),
        }
    consumer = view.protocol_type == CONSUMER_PROTOCOL_TYPE
    members = [
        {
            "member_id": member.member_id,
            "group_instance_id": member.group_instance_id,
            "client_id": member.client_id,
            "client_host": member.client_host,
            "connection": connection_of(member.member_id),
            "session_timeout_ms": member.session_timeout_ms,
            "rebalance_timeout_ms": member.rebalance_timeout_ms,
            "is_leader": member.member_id == view.leader_id,
            "subscription": _subscribed_topics(member, consumer),
            "assignment": _assigned_partitions(member, consumer),
            "metadata_base64": _b64(member.metadata),
            "assignment_base64": _b64(member.assignment),
        }
        for member in view.members.values()
    ]
    return {
        **group_summary(view),
        "members": members,
        "pending_member_ids": sorted(view.pending_member_ids),
        "offsets": rows,
        "total_lag": total_lag,
    }


# ---------------------------------------------------------------- views


async def healthz(request: HttpRequest) -> HttpResponse:
    """200 ``{"status": "ok", ...}`` once the runtime serves; 503 before (``starting``), if its
    start failed (``failed``, with the error), or while it reloads the engine from the log
    after an engine fault (``recovering``). ``engine_faults`` counts those faults and
    ``last_engine_fault`` describes the latest; ``handoff_switches`` says whether the handoff
    groups' partition store and service discovery are up; ``housekeeping`` whether a Celery
    worker and beat answer (``webapp.housekeeping.liveness``; the status stays ``ok`` without
    them: the coordinator serves)."""
    if request.method not in ("GET", "HEAD"):
        return _method_not_allowed(request, ("GET",))
    try:
        runtime = ensure_runtime_started()
    except RuntimeNotReady as exc:
        return JsonResponse({"status": "unavailable", "error": str(exc)}, status=503)
    log_path = str(runtime.log_path)
    faults: dict[str, Any] = {"engine_faults": runtime.engine_faults}
    if runtime.last_engine_fault is not None:
        faults["last_engine_fault"] = runtime.last_engine_fault
    if runtime.ready:
        body: dict[str, Any] = {
            "status": "ok",
            "groups": len(runtime.group_ids()),
            "log_path": log_path,
            "listeners": runtime.listeners,
            "handoff_switches": runtime.handoff_switches,
            "housekeeping": LIVENESS.snapshot(),
            **faults,
        }
        if runtime.engine_profile is not None:
            body["engine_profile"] = runtime.engine_profile.to_json()
        return JsonResponse(body)
    if runtime.recovering:
        return JsonResponse({"status": "recovering", "log_path": log_path, **faults}, status=503)
    task = runtime.start_task
    if task is not None and task.done():
        error = task.exception() if not task.cancelled() else None
        return JsonResponse(
            {
                "status": "failed" if error else "stopped",
                "error": str(error or ""),
                "log_path": log_path,
            },
            status=503,
        )
    return JsonResponse({"status": "starting", "log_path": log_path}, status=503)


@api_view
async def housekeeping(request: HttpRequest) -> HttpResponse:
    """``GET /api/housekeeping``: each housekeeping task's schedules, last run and whether one
    is queued or running (``webapp.housekeeping.status``). Needs no runtime: it reads the
    database that Celery beat and the results backend write."""
    if request.method != "GET":
        return _method_not_allowed(request, ("GET",))
    tasks = await sync_to_async(housekeeping_status)()
    return JsonResponse({"tasks": tasks, "processes": LIVENESS.snapshot()})


@api_view
async def analysis(request: HttpRequest, group_id: str | None = None) -> HttpResponse:
    """``GET /api/analysis`` and ``/api/analysis/groups/<id>``: the newest Spark report run
    (its progress while it runs) and the newest report's findings
    (``webapp.analysis.results``)."""
    if request.method != "GET":
        return _method_not_allowed(request, ("GET",))
    return JsonResponse(await sync_to_async(analysis_json)(group_id))


@api_view
async def groups(request: HttpRequest) -> HttpResponse:
    """``GET /api/groups``: every group, sorted by id."""
    if request.method != "GET":
        return _method_not_allowed(request, ("GET",))
    try:
        runtime = await _runtime()
    except ApiError as error:
        return error.response()
    views = (runtime.group(group_id) for group_id in runtime.group_ids())
    return JsonResponse({"groups": [group_summary(view) for view in views if view is not None]})


@api_view
async def group_detail(request: HttpRequest, group_id: str) -> HttpResponse:
    """``GET /api/groups/<id>``: the whole group (see :func:`group_detail_json`)."""
    if request.method != "GET":
        return _method_not_allowed(request, ("GET",))
    try:
        runtime = await _runtime()
    except ApiError as error:
        return error.response()
    view = runtime.group(group_id)
    if view is None:
        return error_response(404, "group_not_found", f"no group {group_id!r}")
    body = group_detail_json(
        view,
        runtime.committed_offsets(group_id),
        runtime.topics,
        runtime.now_ms(),
        lambda member_id: runtime.connection_of(group_id, member_id),
        runtime.handoff_switches,
    )
    return JsonResponse(body)


def _int_param(request: HttpRequest, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(
            400, "invalid_request", f"{name} must be an integer, got {raw[:40]!r}"
        ) from None
    if not lo <= value <= hi:
        raise ApiError(400, "invalid_request", f"{name} must lie in {lo}..{hi}, got {value}")
    return value


@api_view
async def group_events(request: HttpRequest, group_id: str) -> HttpResponse:
    """``GET /api/groups/<id>/events?after=<seq>&limit=<n>``: the group's stored history after
    ``seq``, oldest first, at most ``limit`` (default 1000); ``last_seq`` is where to continue.
    The history of a deleted group stays readable."""
    if request.method != "GET":
        return _method_not_allowed(request, ("GET",))
    try:
        after = _int_param(request, "after", 0, 0, 2**63 - 1)
        limit = _int_param(request, "limit", EVENTS_PAGE_DEFAULT, 1, EVENTS_PAGE_MAX)
        runtime = await _runtime()
    except ApiError as error:
        return error.response()
    # Read your writes: events buffered for the next batch are stored first.
    await runtime.flush_history()
    events = await sync_to_async(events_after)(group_id, after, limit)
    last_seq = events[-1]["seq"] if events else after
    return JsonResponse({"group_id": group_id, "events": events, "last_seq": last_seq})


_TOPIC_CREATE_FIELDS = frozenset({"name", "partitions", "produce_rate_per_s"})
_TOPIC_UPDATE_FIELDS = frozenset({"partitions", "produce_rate_per_s"})


def _topic_error(error: Exception) -> JsonResponse:
    if isinstance(error, UnknownTopicError):
        return error_response(404, "topic_not_found", str(error))
    if isinstance(error, TopicExistsError):
        return error_response(409, "topic_exists", str(error))
    return error_response(400, "invalid_topic", str(error))


@api_view
async def topics(request: HttpRequest) -> HttpResponse:
    """``GET /api/topics`` (every topic) and ``POST /api/topics`` ``{"name", "partitions",
    "produce_rate_per_s"?}`` (201 with the topic)."""
    if request.method not in ("GET", "POST"):
        return _method_not_allowed(request, ("GET", "POST"))
    try:
        runtime = await _runtime()
        if request.method == "GET":
            now = runtime.now_ms()
            return JsonResponse({"topics": [spec.to_json(now) for spec in runtime.topics.all()]})
        body = _json_body(request, _TOPIC_CREATE_FIELDS)
        for field in ("name", "partitions"):
            if field not in body:
                raise ApiError(400, "invalid_request", f"missing required field {field!r}")
        spec = await runtime.create_topic(
            body["name"], body["partitions"], body.get("produce_rate_per_s", 0)
        )
    except ApiError as error:
        return error.response()
    except (InvalidTopicError, TopicExistsError) as error:
        return _topic_error(error)
    return JsonResponse(spec.to_json(runtime.now_ms()), status=201)


@api_view
async def topic_detail(request: HttpRequest, name: str) -> HttpResponse:
    """``GET``, ``PATCH`` ``{"partitions"?, "produce_rate_per_s"?}`` (partitions only grow)
    and ``DELETE`` (204) of one topic."""
    allowed = ("GET", "PATCH", "DELETE")
    if request.method not in allowed:
        return _method_not_allowed(request, allowed)
    try:
        runtime = await _runtime()
        if request.method == "GET":
            spec = runtime.topics.get(name)
            if spec is None:
                raise UnknownTopicError(f"no topic {name!r}")
        elif request.method == "PATCH":
            body = _json_body(request, _TOPIC_UPDATE_FIELDS)
            if not body:
                raise ApiError(
                    400,
                    "invalid_request",
                    "nothing to change: give partitions or produce_rate_per_s",
                )
            for field, value in body.items():
                if value is None:
                    raise ApiError(400, "invalid_request", f"{field} cannot be null")
            spec = await runtime.update_topic(
                name,
                partitions=body.get("partitions"),
                produce_rate_per_s=body.get("produce_rate_per_s"),
            )
        else:
            await runtime.delete_topic(name)
            return HttpResponse(status=204)
    except ApiError as error:
        return error.response()
    except (InvalidTopicError, TopicExistsError, UnknownTopicError) as error:
        return _topic_error(error)
    return JsonResponse(spec.to_json(runtime.now_ms()))


# ---------------------------------------------------------------- simulated consumers


@api_view
async def simulations(request: HttpRequest) -> HttpResponse:
    """``GET /api/simulations`` (every simulated consumer) and ``POST /api/simulations``
    ``{"group_id", "topics", "behaviour"?, "assignor"?, "group_instance_id"?, ...}`` (201),
    the fields of ``webapp.simulation.consumer.ConsumerSpec``."""
    if request.method not in ("GET", "POST"):
        return _method_not_allowed(request, ("GET", "POST"))
    try:
        simulation = simulation_for(await _runtime())
        if request.method == "GET":
            return JsonResponse({"consumers": simulation.to_json()})
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, "invalid_json", f"the body is not JSON: {exc}") from None
        name = body.pop("name", None) if isinstance(body, dict) else None
        if name is not None and (not isinstance(name, str) or not name):
            raise ApiError(400, "invalid_request", "name must be a non-empty string")
        consumer = simulation.spawn(spec_from_json(body), name)
    except ApiError as error:
        return error.response()
    except SimulationError as error:
        return error_response(400, "invalid_simulation", str(error))
    return JsonResponse(consumer.to_json(), status=201)


@api_view
async def simulation_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    """``POST /api/simulations/<name>/<pause|resume|stop|kill>``: stop closes the consumer
    (commit + LeaveGroup), kill stops it dead (its session times out)."""
    if request.method != "POST":
        return _method_not_allowed(request, ("POST",))
    try:
        simulation = simulation_for(await _runtime())
        if action not in ACTIONS:
            raise ApiError(404, "unknown_action", f"unknown action {action!r}; one of {ACTIONS}")
        consumer = await simulation.act(name, action)
    except ApiError as error:
        return error.response()
    except SimulationError as error:
        return error_response(404, "simulation_not_found", str(error))
    return JsonResponse(consumer.to_json())
