"""Dashboard benchmark: a group of 200 members over 1,000 partitions under continuous churn,
rendered live in headless Chromium. How smoothly does the group page animate, and how long
does an engine event take to reach the DOM?

    .venv/bin/python bench/dashboard.py [--members 200] [--partitions 1000] [--seconds 30]

Setup: a fresh `manage.py serve` (Daphne, the Redis channel layer on a redis-server this script
starts, `make run`'s settings otherwise) with five topics sharing `--partitions` partitions, and
`--members` consumers in group `bench`: the real client stack (`GroupClient` over its own
websocket, eager `range`, auto-commit every second), run by this process as external consumers
would be, so the server does what it does in production: coordinate, store, publish. Each
member consumes 10 records per partition every 100 ms (the members' polls staggered over the
100 ms, as independent processes' would be, not in lockstep). Churn: every `--churn-s` seconds one
member closes (LeaveGroup) and a new one joins, so the group rebalances over and over and its
offsets move all the time; every member's commits, joins and assignment changes reach the page.

Measured in Debian's Chromium (`/usr/bin/chromium`, headless, 1280×800) on /groups/bench/ over
`--seconds` seconds once every member is in:
- fps: animation frames the page produced per second (requestAnimationFrame callbacks; the
  browser skips frames when the page's main thread is busy).
- event → DOM latency: for every engine event the page applied, the wall time from the
  engine's timestamp (`at_ms`, the coordinator's clock) to the end of the first frame whose
  DOM reflects it (the page's `window.__rebalanceLab.latenciesMs`): p50, p99, max. Beside it,
  "arrival": the same clock to the moment a probe in a process of its own (a plain websocket
  client on the same feed) receives the event — the server's share of the latency.

There is no peer: no other Kafka tool renders a group live (kafka-ui, AKHQ and Redpanda Console
poll snapshots), so the targets are the project's (≥ 30 fps, p99 ≤ 100 ms). Ends with one JSON
line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from pathlib import Path

from _live import (
    LabServer,
    Member,
    RedisServer,
    close_all,
    connect_all,
    percentile,
    print_table,
    raise_open_files_limit,
)
from playwright.sync_api import sync_playwright

from coordinator_engine.client import ConsumerConfig
from tests.chromium import launch_chromium

GROUP = "bench"
TOPICS = 5
SLICES = 10  # members poll in ten staggered slices
TARGET_FPS = 30.0
TARGET_P99_MS = 100.0


class Members(threading.Thread):
    """The group's members on an event loop of their own (Playwright's sync API owns this
    thread): they join, consume, commit, and churn every `churn_s` once `churning` is set."""

    def __init__(self, url: str, count: int, topics: list[str], churn_s: float) -> None:
        super().__init__(daemon=True)
        self.url, self.count, self.topics, self.churn_s = url, count, topics, churn_s
        self.churning = threading.Event()
        self.stopping = threading.Event()
        self.failed: BaseException | None = None
        self.made = 0

    def new_member(self) -> Member:
        self.made += 1
        config = ConsumerConfig(
            group_id=GROUP,
            topics=tuple(self.topics),
            client_id=f"bench-{self.made}",
            auto_commit_interval_ms=1000,
        )
        return Member(self.url, config)

    def run(self) -> None:
        try:
            asyncio.run(self.main())
        except BaseException as exc:  # reported by the main thread
            self.failed = exc

    async def main(self) -> None:
        members = [self.new_member() for _ in range(self.count)]
        await connect_all(members)
        next_churn = None
        tick = 0
        while not self.stopping.is_set():
            # Each member polls every 100 ms, one tenth of them every 10 ms: independent
            # consumer processes do not poll (and auto-commit) in lockstep.
            for member in members[tick % SLICES :: SLICES]:
                client = member.client
                for (topic, partition), position in client.positions.items():
                    if position >= 0:
                        client.record_consumed(topic, partition, position + 10)
                member.driver.poll()
            tick += 1
            now = time.monotonic()
            if self.churning.is_set():
                if next_churn is None:
                    next_churn = now
                if now >= next_churn:
                    next_churn = now + self.churn_s
                    leaving = members.pop(0)
                    asyncio.get_running_loop().create_task(self.leave(leaving))
                    joining = self.new_member()
                    await connect_all([joining])
                    members.append(joining)
            await asyncio.sleep(0.1 / SLICES)
        await close_all(members)

    async def leave(self, member: Member) -> None:
        await member.driver.close()
        await member.transport.close()


FRAME_COUNTER = """() => {
    const lab = window.__rebalanceLab;
    lab.latenciesMs.length = 0;
    window.__benchFrames = 0;
    const count = () => { window.__benchFrames += 1; requestAnimationFrame(count); };
    requestAnimationFrame(count);
}"""


def probe(url: str, seconds: float, out: str) -> None:
    """`--probe`: receive the feed for `seconds`, write each event's arrival latency (ms)."""
    from websockets.sync.client import connect

    latencies = []
    deadline = time.monotonic() + seconds
    with connect(url, origin=None) as socket:
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = json.loads(socket.recv(timeout=left))
            except TimeoutError:
                break
            if message["type"] == "events":
                now_ms = time.time() * 1000
                latencies += [now_ms - event["at_ms"] for event in message["events"]]
    Path(out).write_text(json.dumps(latencies))


def start_probe(port: int, seconds: float, out: Path) -> subprocess.Popen[bytes]:
    url = f"ws://127.0.0.1:{port}/ws/dashboard/groups/{GROUP}/"
    command = [sys.executable, __file__, "--probe", url, "--seconds", str(seconds)]
    return subprocess.Popen([*command, "--out", str(out)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--churn-s", type=float, default=2.0)
    parser.add_argument(
        "--channel-layer",
        choices=("redis", "memory"),
        default="redis",
        help="the server's channel layer (redis, as make run; memory: one process, no Redis)",
    )
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe, args.seconds, args.out)
        return

    raise_open_files_limit()
    redis = RedisServer()
    redis.start()
    tmp = tempfile.TemporaryDirectory(prefix="bench-dashboard-")
    server = LabServer(Path(tmp.name), redis.url, CHANNEL_LAYER=args.channel_layer)
    server.start()
    members: Members | None = None
    try:
        topics = [f"topic-{n}" for n in range(TOPICS)]
        for n, topic in enumerate(topics):
            share = args.partitions // TOPICS + (1 if n < args.partitions % TOPICS else 0)
            server.post("/api/topics", {"name": topic, "partitions": share})
        started = time.monotonic()
        members = Members(server.url, args.members, topics, args.churn_s)
        members.start()
        while True:
            try:
                group = server.get(f"/api/groups/{GROUP}")
            except urllib.error.HTTPError as exc:  # 404 until the first member joined
                group = {"state": f"HTTP {exc.code}", "member_count": 0}
            if group["state"] == "Stable" and group["member_count"] == args.members:
                break
            if members.failed is not None or time.monotonic() - started > 180:
                raise SystemExit(f"the group did not settle: {members.failed or group}")
            time.sleep(0.5)
        print(f"{args.members} members Stable after {time.monotonic() - started:.1f} s")

        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"http://127.0.0.1:{server.port}/groups/{GROUP}/")
            page.wait_for_function(
                "n => document.querySelectorAll('[data-testid^=\"member-\"]').length >= n",
                arg=args.members,
                timeout=60_000,
            )
            members.churning.set()
            time.sleep(2)  # the first churn round under way
            arrivals_file = Path(tmp.name) / "arrivals.json"
            prober = start_probe(server.port, args.seconds, arrivals_file)
            page.evaluate(FRAME_COUNTER)
            window_start = time.monotonic()
            server_cpu_before = server.cpu_s()
            generation_before = int(page.inner_text("[data-testid=group-generation]"))
            time.sleep(args.seconds)
            elapsed = time.monotonic() - window_start
            server_cpu = (server.cpu_s() - server_cpu_before) / elapsed
            frames = page.evaluate("window.__benchFrames")
            # Whole milliseconds (Date.now() against the engine's at_ms), as floats for the JSON.
            latencies = [
                float(ms) for ms in page.evaluate("window.__rebalanceLab.latenciesMs.slice()")
            ]
            prober.wait(timeout=60)
            arrivals: list[float] = json.loads(arrivals_file.read_text())
            generation_after = int(page.inner_text("[data-testid=group-generation]"))
            tiles = page.evaluate(
                "document.querySelectorAll('[data-testid^=\"partition-\"]').length"
            )
            browser.close()
    finally:
        if members is not None:
            members.stopping.set()
            members.join(timeout=30)
        server.stop()
        redis.stop()
        tmp.cleanup()

    if not latencies or not arrivals:
        raise SystemExit("the page applied no events in the window")
    fps = frames / elapsed
    p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
    rows = [
        (
            f"{args.members}",
            f"{tiles}",
            f"{generation_after - generation_before}",
            f"{len(latencies) / elapsed:,.0f}",
            f"{fps:.1f}",
            f"{p50:.1f}",
            f"{p99:.1f}",
            f"{max(latencies):.1f}",
            f"{statistics.median(arrivals):.1f}",
            f"{percentile(arrivals, 0.99):.1f}",
            f"{100 * server_cpu:.0f}%",
            f"fps ≥ {TARGET_FPS:g}, p99 ≤ {TARGET_P99_MS:g} ms",
        )
    ]
    print(
        f"window {elapsed:.1f} s, churn every {args.churn_s:g} s, channel layer "
        f"{args.channel_layer}, Chromium headless 1280×800"
    )
    print_table(
        (
            "members",
            "tiles",
            "rebalances",
            "events/s",
            "fps",
            "p50 ms",
            "p99 ms",
            "max ms",
            "arrival p50",
            "arrival p99",
            "server CPU",
            "target",
        ),
        rows,
    )
    print(
        json.dumps(
            {
                "bench": "dashboard",
                "python": sys.version.split()[0],
                "members": args.members,
                "channel_layer": args.channel_layer,
                "partitions": tiles,
                "window_s": round(elapsed, 2),
                "rebalances": generation_after - generation_before,
                "events_per_s": round(len(latencies) / elapsed, 1),
                "fps": round(fps, 1),
                "latency_p50_ms": round(p50, 1),
                "latency_p99_ms": round(p99, 1),
                "latency_max_ms": round(max(latencies), 1),
                "arrival_p50_ms": round(statistics.median(arrivals), 1),
                "arrival_p99_ms": round(percentile(arrivals, 0.99), 1),
                "server_cpu_pct": round(100 * server_cpu, 1),
                "fps_target_met": fps >= TARGET_FPS,
                "p99_target_met": p99 <= TARGET_P99_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
