"""Websocket join benchmark: how long 10, 100 and 500 consumers take to form one Stable group
through a real server, and how much of that time the engine accounts for.

    .venv/bin/python bench/ws_join.py [--quick] [--repeat 3] [--heartbeat-interval-ms 3000]

Purpose: the engine benchmark (`bench/engine.py`) times a rebalance inside one process in
virtual time; this one times what a user sees. Each run starts a fresh `manage.py serve`
(Daphne, the Redis channel layer on a redis-server this script starts, a SQLite record log,
`COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS=0`, `REBALANCE_LAB_PROFILE_ENGINE=1`) and N
consumers in this process, each the real client stack with its own websocket (`GroupClient` +
`WebsocketTransport` + `ClientDriver`, the `range` assignor, one topic of N partitions,
Kafka's default session and heartbeat settings). The two processes share the machine's cores.

- connect: from the first handshake until every socket is open (all at once: `serve`
  listens with a backlog of 1,024).
- join: from every consumer's first `poll()` until every consumer holds its SyncGroup
  assignment in the same generation (FindCoordinator, Metadata, JoinGroup twice (KIP-394),
  the leader's Metadata and assignment, SyncGroup); checked against `/api/groups/<id>`.
- generations: how many rebalances that took. With no initial delay, members whose JoinGroup
  arrives after a generation formed start another; the members already in learn of it from
  their next heartbeat, so `--heartbeat-interval-ms` bounds how fast the stragglers get in.
- engine: seconds inside `coordinator.handle`/`advance` during the join (the runtime's
  profile in `/healthz`), as a share of the join's wall time and of the server's CPU time.

The target (500 consumers Stable in under 2 s, initial delay 0) is read on the join column:
the time a rebalance takes for consumers that are up, as Kafka's own rebalance figures count
from the JoinGroup, not from the TCP connection to the broker. The connect column is reported
beside it: opening a websocket costs Daphne ~1.6 ms of server CPU (Twisted's HTTP parsing,
autobahn's handshake, the Channels application instance), so 500 fresh sockets add ~0.8 s.

There is no peer to run on the same machine (Kafka's coordinator is JVM code); the target
column is the project's. Ends with one JSON line of the figures (medians over the repeats).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _live import (
    LabServer,
    Member,
    RedisServer,
    close_all,
    connect_all,
    own_cpu_s,
    print_table,
    raise_open_files_limit,
)

from coordinator_engine.client import ConsumerConfig, MemberState

TOPIC = "orders"
TARGET_S = {500: 2.0}


async def one_run(server: LabServer, consumers: int, heartbeat_ms: int) -> dict[str, Any]:
    group = f"join-{consumers}"
    members = [
        Member(
            server.url,
            ConsumerConfig(
                group_id=group,
                topics=(TOPIC,),
                client_id=f"bench-{i}",
                heartbeat_interval_ms=heartbeat_ms,
                enable_auto_commit=False,
            ),
        )
        for i in range(consumers)
    ]
    started = time.perf_counter()
    await connect_all(members)
    connected = time.perf_counter()

    engine_before, server_cpu_before = server.engine_s(), server.cpu_s()
    client_cpu_before = own_cpu_s()
    joining = time.perf_counter()
    for member in members:
        member.driver.poll()
    stable = MemberState.STABLE
    while True:
        generations = {m.client.generation for m in members}
        if len(generations) == 1 and all(m.client.state is stable for m in members):
            break
        if time.perf_counter() - joining > 120:
            raise SystemExit(f"{consumers} consumers did not settle in 120 s")
        await asyncio.sleep(0.002)
    settled = time.perf_counter()
    client_cpu = own_cpu_s() - client_cpu_before
    engine = server.engine_s() - engine_before
    server_cpu = server.cpu_s() - server_cpu_before

    (generation,) = generations
    view = server.get(f"/api/groups/{group}")
    assert view["state"] == "Stable", view["state"]
    assert view["member_count"] == consumers and view["generation_id"] == generation, view
    owned = [tuple(p) for m in view["members"] for p in m["assignment"]]
    assert sorted(owned) == [(TOPIC, p) for p in range(consumers)], "assignment not complete"
    await close_all(members)
    join_s = settled - joining
    return {
        "consumers": consumers,
        "connect_s": connected - started,
        "join_s": join_s,
        "total_s": settled - started,
        "generations": generation,
        "engine_s": engine,
        "engine_share_of_wall": engine / join_s,
        "engine_share_of_server_cpu": engine / server_cpu if server_cpu else 0.0,
        "server_cpu_s": server_cpu,
        "client_cpu_s": client_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 consumers, one run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (default 3)")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=3000)
    parser.add_argument(
        "--sizes", type=lambda s: tuple(int(n) for n in s.split(",")), default=(10, 100, 500)
    )
    args = parser.parse_args()
    sizes = (10, 100) if args.quick else args.sizes
    repeat = 1 if args.quick else args.repeat
    raise_open_files_limit()

    redis = RedisServer()
    redis.start()
    results: list[dict[str, Any]] = []
    try:
        for consumers in sizes:
            for _ in range(repeat):
                with tempfile.TemporaryDirectory(prefix="ws-join-") as tmp:
                    server = LabServer(
                        Path(tmp),
                        redis.url,
                        COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
                    )
                    server.start()
                    try:
                        server.post("/api/topics", {"name": TOPIC, "partitions": consumers})
                        run = asyncio.run(one_run(server, consumers, args.heartbeat_interval_ms))
                    finally:
                        server.stop()
                results.append(run)
    finally:
        redis.stop()

    rows = []
    for r in results:
        target = TARGET_S.get(r["consumers"])
        rows.append(
            (
                f"{r['consumers']:,}",
                f"{r['connect_s']:.3f}",
                f"{r['join_s']:.3f}",
                f"{r['total_s']:.3f}",
                r["generations"],
                f"{r['engine_s']:.3f}",
                f"{100 * r['engine_share_of_wall']:.1f}%",
                f"{100 * r['engine_share_of_server_cpu']:.1f}%",
                f"{r['server_cpu_s']:.2f}",
                f"{r['client_cpu_s']:.2f}",
                f"join < {target:g} s" if target else "",
            )
        )
    print(
        f"heartbeat.interval.ms={args.heartbeat_interval_ms}, initial rebalance delay 0, "
        f"range assignor, {repeat} run(s) per size, fresh server per run"
    )
    print_table(
        (
            "consumers",
            "connect s",
            "join s",
            "total s",
            "generations",
            "engine s",
            "engine/wall",
            "engine/server CPU",
            "server CPU s",
            "client CPU s",
            "target",
        ),
        rows,
    )
    figures: dict[str, Any] = {}
    for consumers in sizes:
        runs = [r for r in results if r["consumers"] == consumers]
        for key in ("connect_s", "join_s", "total_s", "engine_share_of_wall"):
            figures[f"{key}_median_{consumers}"] = round(statistics.median(r[key] for r in runs), 4)
        figures[f"generations_max_{consumers}"] = max(r["generations"] for r in runs)
    print(
        json.dumps(
            {
                "bench": "ws_join",
                "python": sys.version.split()[0],
                "heartbeat_interval_ms": args.heartbeat_interval_ms,
                "runs_per_size": repeat,
                **figures,
            }
        )
    )


if __name__ == "__main__":
    main()
