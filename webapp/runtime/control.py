"""Control messages: how processes without the engine (Celery workers) ask the runtime to run
its housekeeping, over the channel layer.

The runtime is the engine's only caller and the record log's only writer, so a worker never
opens the log: it sends a request to the named channel :data:`CONTROL_CHANNEL`, which the
serving runtime reads, and waits on a reply channel of its own for the answer. It is Kafka's
arrangement turned outward: there the broker runs ``cleanupGroupMetadata`` on its own
scheduler (every ``offsets.retention.check.interval.ms``) and the log cleaner compacts
``__consumer_offsets``; here Celery beat decides when, and the runtime does the work.

A request::

    {"type": "control.request", "command": "expire_offsets" | "compact_log" | "status",
     "request_id": "…", "reply_channel": "…", "deadline_ms": <wall-clock ms>}

and its reply, on ``reply_channel``::

    {"type": "control.reply", "request_id": "…", "ok": true, "result": {…}}
    {"type": "control.reply", "request_id": "…", "ok": false, "unavailable": bool,
     "error": "words"}

``unavailable`` says the runtime could not serve just now (starting, reloading its engine after
a fault): the caller retries. A request found past its ``deadline_ms`` (sent while no runtime
was serving, read later) is dropped unanswered: its sender has given up. Every command is
idempotent: expiring offsets twice expires nothing more, compacting a compacted log drops
nothing.

Compaction does not stop the loop for the whole log: the plan (which entries go) is read in a
worker thread on a connection of its own, then dropped :data:`COMPACTION_SLICE` entries at a
time, one short transaction each, with the loop free in between (``SqliteLog.compaction_plan``
explains why any prefix of a plan is safe).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import redis.exceptions
from asgiref.sync import async_to_sync

from coordinator_engine import LogAppendError

from .api import HousekeepingAPI, RuntimeNotReady

logger = logging.getLogger(__name__)

__all__ = [
    "COMMANDS",
    "COMPACTION_SLICE",
    "CONTROL_CHANNEL",
    "CompactionResult",
    "ControlError",
    "RuntimeUnavailable",
    "call_runtime",
    "serve_control",
]

#: The channel the serving runtime reads control requests from.
CONTROL_CHANNEL = "rebalance-lab.control"
#: What a control request may ask for.
COMMANDS = ("expire_offsets", "compact_log", "status")
#: Entries dropped per transaction while compacting (a few milliseconds of the loop each).
COMPACTION_SLICE = 2_000


class ControlError(Exception):
    """The runtime answered, and the command failed (the message says why)."""


class RuntimeUnavailable(ControlError):
    """No runtime answered in time, or it could not serve just now: worth retrying."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    records_before: int
    records_dropped: int
    records_after: int
    took_ms: float


# ---------------------------------------------------------------- the runtime's side


async def compact_log(runtime: HousekeepingAPI) -> CompactionResult:
    """Compact the runtime's record log without holding the loop for the whole of it."""
    log = runtime.record_log
    started = time.perf_counter()
    before = log.count()
    plan = await asyncio.to_thread(log.compaction_plan)
    dropped = 0
    for start in range(0, len(plan), COMPACTION_SLICE):
        # Checked before each slice: a runtime that stopped serving meanwhile keeps its log
        # as it is (what was dropped so far is a valid prefix).
        log = runtime.record_log
        dropped += log.drop(plan[start : start + COMPACTION_SLICE])
        await asyncio.sleep(0)
    runtime.metrics.compacted(dropped)
    return CompactionResult(
        records_before=before,
        records_dropped=dropped,
        records_after=before - dropped,
        took_ms=round((time.perf_counter() - started) * 1000, 1),
    )


async def run_command(runtime: HousekeepingAPI, command: str) -> dict[str, Any]:
    """Run one control command on the runtime and return its result (JSON-ready).

    Raises RuntimeNotReady when the runtime does not serve, ControlError for an unknown
    command or a failure in words."""
    if command == "expire_offsets":
        cleaned = runtime.cleanup()
        return {
            "offsets_expired": cleaned.offsets_removed,
            "groups_tombstoned": cleaned.groups_removed,
        }
    if command == "compact_log":
        try:
            return asdict(await compact_log(runtime))
        except LogAppendError as exc:
            raise ControlError(str(exc)) from exc
    if command == "status":
        return {
            "groups": len(runtime.group_ids()),
            "records": runtime.record_log.count(),
            "last_seq": runtime.last_seq,
        }
    raise ControlError(f"unknown control command {command!r}; known: {', '.join(COMMANDS)}")


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _answer(runtime: HousekeepingAPI, layer: Any, message: Any) -> None:
    if not isinstance(message, dict) or not isinstance(message.get("reply_channel"), str):
        logger.warning("control: dropped a malformed request %r", message)
        return
    deadline = message.get("deadline_ms")
    if isinstance(deadline, int) and deadline < _now_ms():
        logger.info("control: dropped %r, its sender gave up waiting", message.get("command"))
        return
    command = message.get("command")
    reply: dict[str, Any] = {"type": "control.reply", "request_id": message.get("request_id")}
    try:
        result = await run_command(runtime, str(command))
    except RuntimeNotReady as exc:
        reply |= {"ok": False, "unavailable": True, "error": str(exc)}
    except ControlError as exc:
        reply |= {"ok": False, "unavailable": False, "error": str(exc)}
    except Exception as exc:
        logger.exception("control: %s failed", command)
        reply |= {"ok": False, "unavailable": False, "error": f"{type(exc).__name__}: {exc}"}
    else:
        reply |= {"ok": True, "result": result}
        logger.info("control: %s done: %s", command, result)
    try:
        await layer.send(message["reply_channel"], reply)
    except Exception:
        logger.exception("control: the reply to %s could not be sent", command)


async def serve_control(runtime: HousekeepingAPI, layer: Any) -> None:
    """Read :data:`CONTROL_CHANNEL` until cancelled, answering each request in turn (they are
    rare and short; one at a time also keeps two compactions from overlapping)."""
    failures = 0
    while True:
        try:
            message = await layer.receive(CONTROL_CHANNEL)
        except (TimeoutError, redis.exceptions.TimeoutError):
            # The layer's blocking pop (5 s) outlived its connection's read timeout: nothing
            # was popped, nothing is lost; ask again.
            continue
        except Exception as exc:
            failures += 1
            if failures == 1 or failures % 60 == 0:
                logger.warning(
                    "control: reading %s failed (%s: %s); retrying every second",
                    CONTROL_CHANNEL,
                    type(exc).__name__,
                    exc,
                )
            await asyncio.sleep(1)
            continue
        if failures:
            logger.info("control: reading %s works again", CONTROL_CHANNEL)
            failures = 0
        await _answer(runtime, layer, message)


# ---------------------------------------------------------------- the caller's side


async def _call(layer: Any, command: str, timeout_s: float) -> dict[str, Any]:
    reply_channel = await layer.new_channel("control-reply")
    request_id = uuid.uuid4().hex
    await layer.send(
        CONTROL_CHANNEL,
        {
            "type": "control.request",
            "command": command,
            "request_id": request_id,
            "reply_channel": reply_channel,
            "deadline_ms": _now_ms() + int(timeout_s * 1000),
        },
    )
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                reply = await layer.receive(reply_channel)
                if reply.get("request_id") == request_id:
                    break
    except TimeoutError:
        raise RuntimeUnavailable(
            f"no coordinator runtime answered {command!r} within {timeout_s:g} s "
            "(is `manage.py serve` running on the same channel layer?)"
        ) from None
    if reply.get("ok"):
        result = reply.get("result")
        return result if isinstance(result, dict) else {}
    error = str(reply.get("error") or "no reason given")
    if reply.get("unavailable"):
        raise RuntimeUnavailable(f"the coordinator runtime could not run {command!r}: {error}")
    raise ControlError(f"{command} failed: {error}")


def call_runtime(command: str, *, timeout_s: float = 30.0, layer: Any = None) -> dict[str, Any]:
    """Ask the serving runtime to run ``command`` and return its result (from synchronous
    code: a Celery task). Raises RuntimeUnavailable when no runtime answers in time or it is
    not serving, ControlError when the command failed, ValueError for an unknown command."""
    if command not in COMMANDS:
        raise ValueError(f"unknown control command {command!r}; known: {', '.join(COMMANDS)}")
    if layer is None:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            raise RuntimeUnavailable("no channel layer is configured (CHANNEL_LAYER)")
    return async_to_sync(_call)(layer, command, timeout_s)
