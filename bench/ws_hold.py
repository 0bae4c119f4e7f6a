"""Websocket hold benchmark: the most consumers one server keeps in their groups, heartbeating,
for a while without a single false session expiry.

    .venv/bin/python bench/ws_hold.py [--quick] [--duration 300] [--sizes 1000,2000,5000]

Purpose: a coordinator's steady-state job is answering heartbeats in time; when it falls
behind, live members are removed as if they had died (a "false" session expiry) and their
groups rebalance for nothing. This finds how many members the server holds before that
happens. For each size N of the ramp (1,000, 2,000, 5,000, 7,500, 10,000, 15,000 by default;
it stops at the first size that fails, and at what the open-file limit allows) it starts a fresh
`manage.py serve` (Daphne, the Redis channel layer on a redis-server this script starts, a
SQLite record log, `REBALANCE_LAB_PROFILE_ENGINE=1`) and N consumers in this process spread
over 100 groups (one topic of 100 partitions, the `range` assignor), each the real client stack
with its own websocket (`GroupClient` + `WebsocketTransport` + `ClientDriver`): session timeout
10 s, heartbeat every 3 s, auto-commit off (the load is membership alone), `poll()` every 30 s
(spread over the period) to stay within `max.poll.interval.ms`. The groups start in 10 waves of
10, each once the previous wave is Stable, as applications start at different times: the members
of a group heartbeat in step (they joined together), different waves do not. Once every member
is Stable the hold begins and lasts `--duration` seconds. Thousands of consumers share this
process's heap, where each would have a small one of its own: the objects of the setup are
frozen out of the garbage collector's full passes (`gc.freeze()`) before the hold.

A size is held when no member was removed for a session timeout during the whole run (counted
from the server's event history, `GET /api/groups/<id>/events`: MemberRemoved with reason
`session_timeout`) and every member is still Stable at the end. The table also shows the
rebalances during the hold, the clients' view (coordinator lost, rejoins), the heartbeat
round trip as the clients measured it, the CPU of both processes (which share the machine's
cores), the engine's share of the server's CPU (`coordinator.handle`/`advance`; the rest is
Daphne, Channels and the JSON codec) and the server's memory.

Ends with one JSON line: the largest size held and every size's figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from _live import (
    LabServer,
    Member,
    RedisServer,
    close_all,
    connect_all,
    heartbeat_figures,
    own_cpu_s,
    own_rss_mb,
    print_table,
    raise_open_files_limit,
)

from coordinator_engine import HeartbeatRequest
from coordinator_engine.client import ClientEvent, ConsumerConfig, MemberState
from webapp.simulation.client_driver import OnFailure, OnResponse, WebsocketTransport

GROUPS = 100
TOPIC = "hold"
PARTITIONS = 100
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 3_000
POLL_PERIOD_S = 30.0
DEFAULT_SIZES = (1_000, 2_000, 5_000, 7_500, 10_000, 15_000)
#: Groups start in this many waves (each once the previous one is Stable), as applications
#: start at different times; members of one group join together.
WAVES = 10
WAVE_TIMEOUT_S = 120
#: Sockets beyond the consumers' that a process needs (files, Redis, HTTP checks).
SPARE_FILES = 200


class TimedTransport(WebsocketTransport):
    """A websocket transport that records each heartbeat's round trip into `samples`."""

    samples: ClassVar[list[float]] = []

    def send(self, request: Any, on_response: OnResponse, on_failure: OnFailure) -> None:
        if type(request) is HeartbeatRequest:
            sent = time.perf_counter()
            samples = self.samples

            def answered(response: Any) -> None:
                samples.append(time.perf_counter() - sent)
                on_response(response)

            super().send(request, answered, on_failure)
        else:
            super().send(request, on_response, on_failure)


def all_stable(members: list[Member]) -> bool:
    stable = MemberState.STABLE
    if any(m.client.state is not stable for m in members):
        return False
    generations: dict[str, int] = {}
    for m in members:
        group = m.client.config.group_id
        if generations.setdefault(group, m.client.generation) != m.client.generation:
            return False
    return True


async def hold(server: LabServer, size: int, duration_s: float) -> dict[str, Any]:
    events: Counter[str] = Counter()

    def on_event(member: Member, event: ClientEvent) -> None:
        events[event.type] += 1

    members = [
        Member(
            server.url,
            ConsumerConfig(
                group_id=f"hold-{i % GROUPS}",
                topics=(TOPIC,),
                client_id=f"hold-{i}",
                session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                enable_auto_commit=False,
            ),
            on_event,
            TimedTransport(server.url),
        )
        for i in range(size)
    ]
    try:
        started = time.perf_counter()
        await connect_all(members)
        connected = time.perf_counter()
        for wave in range(WAVES):
            joining = [m for i, m in enumerate(members) if i % GROUPS % WAVES == wave]
            for member in joining:
                member.driver.poll()
            wave_started = time.perf_counter()
            while not all_stable(joining):
                if time.perf_counter() - wave_started > WAVE_TIMEOUT_S:
                    stable = sum(m.client.state is MemberState.STABLE for m in members)
                    return {"size": size, "joined": False, "held": False, "stable": stable}
                await asyncio.sleep(0.1)
        stable = time.perf_counter()
        generations = [m.client.generation for m in members]
        # What this process allocated so far lives as long as the run: keep it out of the
        # collector's full passes (a real consumer's own process has a small heap).
        gc.collect()
        gc.freeze()

        # The hold: poll() a slice of the members every second, so each polls every 30 s.
        events.clear()
        TimedTransport.samples = samples = []
        server_cpu, client_cpu, engine = server.cpu_s(), own_cpu_s(), server.engine_s()
        hold_started = time.perf_counter()
        slices = max(1, int(POLL_PERIOD_S))
        tick = 0
        while (elapsed := time.perf_counter() - hold_started) < duration_s:
            for member in members[tick % slices :: slices]:
                member.driver.poll()
            tick += 1
            await asyncio.sleep(max(0.0, min(1.0, duration_s - elapsed)))
        held_s = time.perf_counter() - hold_started
        server_cpu = server.cpu_s() - server_cpu
        client_cpu = own_cpu_s() - client_cpu
        engine = server.engine_s() - engine
        still_stable = all_stable(members)
        rebalanced = sum(
            1 for m, g in zip(members, generations, strict=True) if m.client.generation != g
        )
        removed = server.removals(f"hold-{g}" for g in range(GROUPS))
        return {
            "size": size,
            "joined": True,
            "held": removed["session_timeout"] == 0 and still_stable,
            "connect_s": connected - started,
            "join_s": stable - connected,
            "hold_s": held_s,
            "session_timeouts": removed["session_timeout"],
            "other_removals": sum(removed.values()) - removed["session_timeout"],
            "members_in_new_generation": rebalanced,
            "coordinator_lost": events["CoordinatorLost"],
            "rejoins": events["RebalanceStarted"],
            **heartbeat_figures(samples, held_s),
            "server_cpu_pct": 100 * server_cpu / held_s,
            "engine_share_of_server_cpu": engine / server_cpu if server_cpu else 0.0,
            "client_cpu_pct": 100 * client_cpu / held_s,
            "server_rss_mb": server.rss_mb(),
            "client_rss_mb": own_rss_mb(),
        }
    finally:
        gc.unfreeze()
        await close_all(members)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 members held for 20 s")
    parser.add_argument("--duration", type=float, default=300.0, help="hold seconds (300)")
    parser.add_argument(
        "--sizes",
        default=",".join(str(n) for n in DEFAULT_SIZES),
        help="the ramp, comma-separated member counts",
    )
    args = parser.parse_args()
    sizes = [1_000] if args.quick else [int(n) for n in args.sizes.split(",")]
    duration = 20.0 if args.quick else args.duration
    files = raise_open_files_limit()

    redis = RedisServer()
    redis.start()
    results: list[dict[str, Any]] = []
    skipped: list[int] = []
    try:
        for size in sizes:
            if size + SPARE_FILES > files:
                skipped.append(size)
                continue
            with tempfile.TemporaryDirectory(prefix="ws-hold-") as tmp:
                server = LabServer(Path(tmp), redis.url)
                server.start()
                try:
                    server.post("/api/topics", {"name": TOPIC, "partitions": PARTITIONS})
                    result = asyncio.run(hold(server, size, duration))
                finally:
                    server.stop()
            results.append(result)
            print(f"# {size:,} members: {'held' if result['held'] else 'NOT held'}", flush=True)
            if not result["held"]:
                break
    finally:
        redis.stop()

    rows = []
    for r in results:
        if not r["joined"]:
            not_joined = f"NO: {r['stable']:,} Stable after {WAVE_TIMEOUT_S} s of a wave"
            rows.append((f"{r['size']:,}", not_joined, *[""] * 13))
            continue
        rows.append(
            (
                f"{r['size']:,}",
                "yes" if r["held"] else "NO",
                f"{r['join_s']:.1f}",
                f"{r['hold_s']:.0f}",
                r["session_timeouts"],
                r["members_in_new_generation"],
                r["coordinator_lost"],
                f"{r['heartbeats_per_s']:,.0f}",
                f"{r['heartbeat_p50_ms']:.1f}",
                f"{r['heartbeat_p99_ms']:.1f}",
                f"{r['heartbeat_max_ms']:.0f}",
                f"{r['server_cpu_pct']:.0f}%",
                f"{100 * r['engine_share_of_server_cpu']:.1f}%",
                f"{r['client_cpu_pct']:.0f}%",
                f"{r['server_rss_mb']:.0f}",
            )
        )
    print(
        f"{GROUPS} groups, session.timeout.ms={SESSION_TIMEOUT_MS}, "
        f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}, hold {duration:g} s per size, "
        f"open-file limit {files:,}"
        + (f" (sizes skipped for it: {', '.join(f'{n:,}' for n in skipped)})" if skipped else "")
    )
    print_table(
        (
            "members",
            "held",
            "join s",
            "hold s",
            "session expiries",
            "rebalanced",
            "coordinator lost",
            "heartbeats/s",
            "hb p50 ms",
            "hb p99 ms",
            "hb max ms",
            "server CPU",
            "engine/server CPU",
            "client CPU",
            "server RSS MB",
        ),
        rows,
    )
    held = [r["size"] for r in results if r["held"]]
    print(
        json.dumps(
            {
                "bench": "ws_hold",
                "python": sys.version.split()[0],
                "duration_s": duration,
                "largest_held": max(held, default=0),
                "target": 5000,
                "sizes": [
                    {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
                    for r in results
                ],
                "skipped_for_open_files": skipped,
            }
        )
    )


if __name__ == "__main__":
    main()
