"""The dashboard's live feeds (docs/dashboard.md, "Live feeds"): a snapshot on connect, then the
ordered events of the runtime's feed, then periodic offsets / lag.

Ordering: a consumer subscribes to its Channels group *before* it takes the snapshot, and
Channels hands it messages only after ``connect`` returns, so every event is either reflected
in the snapshot (``seq <= S``, dropped) or sent after it, in order. The runtime's
``group_last_seq`` / ``last_seq`` are read on the loop in the same step as the state, so ``S``
is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from .access import may_read
from .consumers import DirectDispatch
from .feed import ALL_GROUPS_CHANNEL_GROUP, group_channel_group
from .models import GroupEvent
from .runtime import CoordinatorRuntime, get_runtime
from .views import group_detail_json, group_summary, offsets_json

logger = logging.getLogger(__name__)

#: Close code for a visitor who must sign in first (REBALANCE_LAB_ANONYMOUS_READ off).
CLOSE_LOGIN_REQUIRED = 4401
#: Close code for a page of another site (its Origin is not this Host).
CLOSE_FOREIGN_ORIGIN = 4403
#: Close code when the coordinator runtime cannot serve (RFC 6455: internal error).
CLOSE_INTERNAL_ERROR = 1011

OFFSETS_INTERVAL_S = 1.0
LAG_INTERVAL_S = 2.0
SPARKLINE_BUCKETS = 12
SPARKLINE_BUCKET_MS = 5 * 60 * 1000


def same_origin(scope: dict[str, Any]) -> bool:
    """True unless a browser opened the socket from a page of another site: the Origin header,
    when there is one, names this request's Host. (A session cookie goes with any page's
    websocket, so without this another site could read the feeds as a signed-in visitor.)"""
    headers = dict(scope.get("headers", ()))
    origin = headers.get(b"origin")
    if origin is None:
        return True  # not a browser: it carries no visitor's cookie by accident
    host = headers.get(b"host", b"").decode("latin-1").lower()
    return urlsplit(origin.decode("latin-1")).netloc.lower() == host


def subscribed_topics(runtime: CoordinatorRuntime, group: dict[str, Any]) -> dict[str, int]:
    """Partition counts of every topic the group's members subscribe to, are assigned, or hold
    committed offsets of (a topic the registry does not know counts what is seen of it)."""
    seen: dict[str, int] = {}
    for member in group["members"]:
        for topic in member["subscription"] or ():
            seen.setdefault(topic, 0)
        for topic, partition in member["assignment"] or ():
            seen[topic] = max(seen.get(topic, 0), partition + 1)
    for row in group["offsets"]:
        seen[row["topic"]] = max(seen.get(row["topic"], 0), row["partition"] + 1)
    counts = {}
    for topic, lower_bound in sorted(seen.items()):
        spec = runtime.topics.get(topic)
        counts[topic] = max(spec.partitions if spec is not None else 0, lower_bound)
    return counts


def rebalance_buckets(now_ms: int, group_ids: list[str]) -> dict[str, list[int]]:
    """Generations started per group in each of the last twelve five-minute buckets, oldest
    first (sync: ORM)."""
    start = now_ms - SPARKLINE_BUCKETS * SPARKLINE_BUCKET_MS
    counts: Counter[tuple[str, int]] = Counter()
    rows = GroupEvent.objects.filter(type="GenerationStarted", at_ms__gt=start).values_list(
        "group_id", "at_ms"
    )
    for group_id, at_ms in rows:
        bucket = min((at_ms - start - 1) // SPARKLINE_BUCKET_MS, SPARKLINE_BUCKETS - 1)
        counts[group_id, bucket] += 1
    return {g: [counts[g, b] for b in range(SPARKLINE_BUCKETS)] for g in group_ids}


class _Feed(DirectDispatch, AsyncWebsocketConsumer):
    """What both feeds share: the read check, the runtime, the Channels group, a periodic
    task, and dropping events the snapshot already reflects."""

    channel_group: str
    snapshot_seq = 0
    runtime: CoordinatorRuntime

    async def connect(self) -> None:
        self._ticker: asyncio.Task[None] | None = None
        if not same_origin(self.scope):
            await self.close(code=CLOSE_FOREIGN_ORIGIN)
            return
        if not may_read(self.scope.get("user")):
            await self.close(code=CLOSE_LOGIN_REQUIRED)
            return
        try:
            self.runtime = await get_runtime()
        except Exception:
            logger.exception("dashboard feed: the coordinator runtime is not available")
            await self.close(code=CLOSE_INTERNAL_ERROR)
            return
        self.channel_group = self.feed_channel_group()
        await self.channel_layer.group_add(self.channel_group, self.channel_name)
        await self.accept()
        await self.send_json(await self.snapshot())
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def disconnect(self, code: int) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        if getattr(self, "channel_group", None):
            await self.channel_layer.group_discard(self.channel_group, self.channel_name)

    async def group_events(self, message: dict[str, Any]) -> None:
        events = [e for e in message["events"] if e["seq"] > self.snapshot_seq]
        if events:
            await self.send_json({"type": "events", "events": events})

    async def send_json(self, body: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(body, separators=(",", ":")))

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval_s)
            if self.runtime.ready:
                await self.send_json(self.tick())

    # -- what each feed defines
    tick_interval_s: float

    def feed_channel_group(self) -> str:
        raise NotImplementedError

    async def snapshot(self) -> dict[str, Any]:
        raise NotImplementedError

    def tick(self) -> dict[str, Any]:
        raise NotImplementedError


class GroupFeedConsumer(_Feed):
    """``/ws/dashboard/groups/<group_id>/``: one group."""

    tick_interval_s = OFFSETS_INTERVAL_S

    def feed_channel_group(self) -> str:
        self.group_id: str = self.scope["url_route"]["kwargs"]["group_id"]
        return group_channel_group(self.group_id)

    async def snapshot(self) -> dict[str, Any]:
        runtime = self.runtime
        self.snapshot_seq = runtime.group_last_seq(self.group_id)
        view = runtime.group(self.group_id)
        group = (
            None
            if view is None
            else group_detail_json(
                view, runtime.committed_offsets(self.group_id), runtime.topics, runtime.now_ms()
            )
        )
        topics = {} if group is None else subscribed_topics(runtime, group)
        return {"type": "snapshot", "seq": self.snapshot_seq, "group": group, "topics": topics}

    def tick(self) -> dict[str, Any]:
        runtime = self.runtime
        rows, total_lag = offsets_json(
            runtime.committed_offsets(self.group_id), runtime.topics, runtime.now_ms()
        )
        topics = {row["topic"] for row in rows}
        return {
            "type": "offsets",
            "offsets": rows,
            "total_lag": total_lag,
            "topics": {
                t: spec.partitions for t in sorted(topics) if (spec := runtime.topics.get(t))
            },
        }


class OverviewFeedConsumer(_Feed):
    """``/ws/dashboard/groups/``: every group."""

    tick_interval_s = LAG_INTERVAL_S

    def feed_channel_group(self) -> str:
        return ALL_GROUPS_CHANNEL_GROUP

    async def snapshot(self) -> dict[str, Any]:
        runtime = self.runtime
        # The sparkline counts come from the history table: store what is pending first.
        await runtime.flush_history()
        now_ms = runtime.now_ms()
        group_ids = runtime.group_ids()
        buckets = await sync_to_async(rebalance_buckets)(now_ms, group_ids)
        # State read in one step, after the last await: S is exact for it.
        self.snapshot_seq = runtime.last_seq
        lags = self._lags()
        groups = []
        for group_id in runtime.group_ids():
            view = runtime.group(group_id)
            if view is None:
                continue
            groups.append(
                {
                    **group_summary(view),
                    "total_lag": lags.get(group_id, 0),
                    "rebalances": buckets.get(group_id, [0] * SPARKLINE_BUCKETS),
                }
            )
        return {"type": "snapshot", "seq": self.snapshot_seq, "now_ms": now_ms, "groups": groups}

    def _lags(self) -> dict[str, int]:
        runtime = self.runtime
        now_ms = runtime.now_ms()
        return {
            group_id: offsets_json(runtime.committed_offsets(group_id), runtime.topics, now_ms)[1]
            for group_id in runtime.group_ids()
        }

    def tick(self) -> dict[str, Any]:
        return {"type": "lag", "total_lag": self._lags()}
