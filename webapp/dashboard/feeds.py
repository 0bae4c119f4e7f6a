"""The dashboard's live feeds (docs/dashboard.md, "Live feeds"): a snapshot on connect, then the
ordered events of the runtime, then periodic offsets / lag.

Ordering: a feed subscribes to the runtime (``add_listener``) and reads the snapshot in the same
step of the event loop, so every event is either reflected in the snapshot (``seq <= S``) or
queued for sending after it, in order; ``S`` (``group_last_seq`` / ``last_seq``) is read in
that step too, so it is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from coordinator_engine import HandoffGroupView
from webapp.models import GroupEvent
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.runtime.events import SequencedEvent
from webapp.sockets import (
    CLOSE_FOREIGN_ORIGIN,
    CLOSE_LOGIN_REQUIRED,
    CLOSE_RUNTIME_UNAVAILABLE,
    SocketOnly,
)

from .access import may_read
from .api import group_detail_json, group_summary, log_end_offsets, total_lag

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


class _Feed(SocketOnly, AsyncWebsocketConsumer):
    """What both feeds share: the read check, the subscription to the runtime, the event
    sender, a periodic task.

    Events come from the runtime of this process (``CoordinatorRuntime.add_listener``), the one
    the snapshot is read from, not through the channel layer: the listener runs inside the
    engine's call and wakes this feed's sender, which writes them in the next loop turn. Through
    the channel layer an event took a dozen turns and Redis round trips to get here (the
    publisher's wake-up, four round trips per ``group_send``, the layer's receive loop,
    Channels' dispatch), ~100 ms at the median under churn; docs/dashboard.md.
    """

    async def connect(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._subscribed = False
        self._outbox: list[SequencedEvent] = []
        self._wake = asyncio.Event()
        if not same_origin(self.scope):
            await self.refuse(CLOSE_FOREIGN_ORIGIN)
            return
        if not may_read(self.scope.get("user")):
            await self.refuse(CLOSE_LOGIN_REQUIRED)
            return
        if not await self.connect_runtime():
            return
        await self.accept()
        await self.prepare()
        if not self.runtime.ready:  # an engine fault while prepare() awaited
            await self.close(code=CLOSE_RUNTIME_UNAVAILABLE)
            return
        # From here to the snapshot's send, one step: every event the runtime emitted before
        # it is reflected in the snapshot, every later one lands in the outbox.
        self.runtime.add_listener(self._on_event)
        self._subscribed = True
        self._engine_faults = self.runtime.engine_faults
        await self.send_json(self.snapshot())
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._send_events()),
            loop.create_task(self._tick_forever()),
        ]

    async def disconnect(self, code: int) -> None:
        if self._subscribed:
            self.runtime.remove_listener(self._on_event)
            self._subscribed = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _on_event(self, item: SequencedEvent) -> None:
        """The runtime's listener: inside the engine's call, so it only queues."""
        if self.wants(item.event.group_id):
            self._outbox.append(item)
            self._wake.set()

    async def _send_events(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._outbox = self._outbox, []
            await self.send_json({"type": "events", "events": [item.to_json() for item in batch]})

    async def send_json(self, body: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(body, separators=(",", ":")))

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval_s)
            if not self.runtime.ready or self.runtime.engine_faults != self._engine_faults:
                # The engine is being (or was) reloaded from its log: the page may hold state
                # the log never had. It reconnects and takes a new snapshot.
                await self.close(code=CLOSE_RUNTIME_UNAVAILABLE)
                return
            await self.send_json(self.tick())

    # -- what each feed defines
    tick_interval_s: float

    def wants(self, group_id: str) -> bool:
        raise NotImplementedError

    async def prepare(self) -> None:
        """Whatever the snapshot needs that takes awaiting (before the subscription)."""

    def snapshot(self) -> dict[str, Any]:
        """The snapshot frame, read in one step with the subscription."""
        raise NotImplementedError

    def tick(self) -> dict[str, Any]:
        raise NotImplementedError


class GroupFeedSocket(_Feed):
    """``/ws/dashboard/groups/<group_id>/``: one group."""

    tick_interval_s = OFFSETS_INTERVAL_S

    async def prepare(self) -> None:
        self.group_id: str = self.scope["url_route"]["kwargs"]["group_id"]

    def wants(self, group_id: str) -> bool:
        return group_id == self.group_id

    def snapshot(self) -> dict[str, Any]:
        runtime = self.runtime
        seq = runtime.group_last_seq(self.group_id)
        view = runtime.group(self.group_id)
        group = (
            None
            if view is None
            else group_detail_json(
                view,
                runtime.committed_offsets(self.group_id),
                runtime.topics,
                runtime.now_ms(),
                lambda member_id: runtime.connection_of(self.group_id, member_id),
                runtime.handoff_switches,
            )
        )
        topics = {} if group is None else subscribed_topics(runtime, group)
        return {"type": "snapshot", "seq": seq, "group": group, "topics": topics}

    def tick(self) -> dict[str, Any]:
        runtime = self.runtime
        ends = log_end_offsets(
            runtime.committed_offsets(self.group_id), runtime.topics, runtime.now_ms()
        )
        # No total: the page sums the lags it shows (committed offsets move between ticks).
        tick: dict[str, Any] = {"type": "offsets", "log_end_offsets": ends}
        if isinstance(runtime.group(self.group_id), HandoffGroupView):
            # The outage switches are host facts, not events: they follow with the tick.
            tick["switches"] = runtime.handoff_switches
        return tick


class OverviewFeedSocket(_Feed):
    """``/ws/dashboard/groups/``: every group."""

    tick_interval_s = LAG_INTERVAL_S

    def wants(self, group_id: str) -> bool:
        return True

    async def prepare(self) -> None:
        runtime = self.runtime
        # The sparkline counts come from the history table: store what is pending first.
        await runtime.flush_history()
        self.now_ms = runtime.now_ms()
        # Channels' database path: stale connections are closed before and after the query,
        # as Channels' own dispatch would (which SocketOnly skips; with PostgreSQL a
        # connection kept past CONN_MAX_AGE or broken by a server restart would be reused).
        self.buckets = await database_sync_to_async(rebalance_buckets)(
            self.now_ms, runtime.group_ids()
        )

    def snapshot(self) -> dict[str, Any]:
        runtime = self.runtime
        now_ms, buckets = self.now_ms, self.buckets
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
        return {"type": "snapshot", "seq": runtime.last_seq, "now_ms": now_ms, "groups": groups}

    def _lags(self) -> dict[str, int]:
        runtime = self.runtime
        now_ms = runtime.now_ms()
        lags = {}
        for group_id in runtime.group_ids():
            lags[group_id] = total_lag(runtime.committed_offsets(group_id), runtime.topics, now_ms)
        return lags

    def tick(self) -> dict[str, Any]:
        return {"type": "lag", "total_lag": self._lags()}
