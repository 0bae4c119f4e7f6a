"""Metrics benchmark: what ``GET /metrics`` costs with thousands of groups, and what counting
costs the engine.

    .venv/bin/python bench/metrics.py [--quick]

Everything runs in one process, in virtual time, on the engine and the code ``/metrics`` runs
(``webapp.runtime.metrics``, ``webapp.dashboard.metrics``), without HTTP:

- scrape: 1,000 and 10,000 groups of 10 members each (classic, ``range``, Stable after two
  rebalances each: a first join of all ten, then an eleventh member), each with 10 committed
  offsets on a topic that grows, the rebalance counters fed by the engine's events. A scrape
  is the read of every group (``group_samples``: summaries, counters, lag; on the event loop
  in the server, 500 groups per turn of the loop), then the text of the per-group families
  (``write_groups``) and its gzip (level 1; both in a worker thread in the server): the time
  of each, the size of the text, plain and gzipped (Prometheus asks for gzip). At 1,000
  groups the same text through prometheus_client's ``generate_latest`` is timed beside it
  (the peer).
- overhead in the engine: heartbeats/s (1,000 members in 10 Stable groups) and offset
  commits/s (one partition per request, a ``MemoryLog``: the engine's CPU alone, so the
  counters' share is not hidden behind fsyncs), in CPU time, two ways side by side on one
  coordinator, in chunks of 5,000 requests taken in turn, medians: the engine with a listener
  of its own (the runtime always has one, so its events are built anyway), and the same plus
  the metrics listener (``RebalanceCounts.on_event``; target ≤ 3% slower). The engine's path
  counts nothing else: requests and their responses' error codes are counted by the
  transports.
- through the runtime: heartbeats and durable offset commits per CPU second through a started
  ``CoordinatorRuntime`` (``submit_nowait``, as in-process callers submit; its SqliteLog in a
  temporary directory) with the metrics listener on and off.
- through the Kafka transport: heartbeats (v4) per CPU second as the listener serves them,
  each frame decoded, handled (``apis.handle``) and its answer encoded, with every count on
  (the request, the response's error codes, the metrics listener) and off: what ``/metrics``
  costs a request from a real client.

It ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import gzip
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from engine import rebalance  # noqa: E402 (bench/engine.py: the full join and sync flow)

from coordinator_engine import (  # noqa: E402
    CoordinatorConfig,
    GroupCoordinator,
    HeartbeatRequest,
    MemoryLog,
    OffsetCommitRequest,
    PartitionOffset,
)

CONFIG = CoordinatorConfig()
MEMBERS = 10


def _django(state_dir: Path) -> None:
    """Django on a database of its own in ``state_dir`` (the runtime reads its topics there)."""
    import os

    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ["STATE_DIR"] = str(state_dir)
    os.environ["DATABASE"] = f"sqlite:///{state_dir / 'db.sqlite3'}"
    os.environ["CHANNEL_LAYER"] = "memory"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECRET_KEY", "bench-metrics-not-secret")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def build_groups(groups: int) -> tuple[GroupCoordinator, Any, Any, int]:
    """``groups`` Stable groups of ``MEMBERS`` members (two rebalances each), 10 committed
    offsets each; the coordinator, its counters, the topic registry and the time."""
    from webapp.runtime.metrics import RebalanceCounts
    from webapp.runtime.topics import TopicRegistry, TopicSpec

    coord = GroupCoordinator(CONFIG, MemoryLog())
    counts = RebalanceCounts(coord.group_kind)
    coord.add_listener(counts.on_event)
    for g in range(groups):
        group_id = f"group-{g:05d}"
        now = g * 20_000  # the first join phase waits group.initial.rebalance.delay.ms
        clients = [f"c{i}" for i in range(MEMBERS - 1)]
        ids: dict[str, str] = {}
        rebalance(coord, group_id, clients, ids, now)
        # The joiner first: the others learn of the rebalance and rejoin.
        generation = rebalance(coord, group_id, ["joiner", *clients], ids, now + 10_000)
        coord.handle(
            OffsetCommitRequest(
                group_id=group_id,
                generation_id=generation,
                member_id=ids["c0"],
                offsets=tuple(
                    PartitionOffset(topic="topic-0", partition=p, offset=100) for p in range(10)
                ),
            ),
            now + 15_000,
        )
    built = groups * 20_000
    spec = TopicSpec(
        name="topic-0",
        topic_id=uuid.uuid4(),
        produce_rate_per_s=1000,
        origins=tuple((0, built) for _ in range(64)),
    )
    topics = TopicRegistry([spec])
    return coord, counts, topics, built + 60_000


def bench_scrape(groups: int, with_peer: bool) -> dict[str, float]:
    from prometheus_client import generate_latest
    from prometheus_client.core import CollectorRegistry

    from webapp.dashboard.metrics import READ_SLICE, group_families, group_samples, write_groups

    coord, counts, topics, now = build_groups(groups)
    read_s, turn_s, write_s, gzip_s, size, zipped = [], [], [], [], 0, 0
    for _ in range(3):
        # As the server reads them: READ_SLICE groups per turn of the event loop.
        group_ids = coord.group_ids()
        samples, turns = [], []
        for start in range(0, len(group_ids), READ_SLICE):
            started = time.perf_counter()
            samples += group_samples(
                coord, counts.groups, topics, now, group_ids[start : start + READ_SLICE]
            )
            turns.append(time.perf_counter() - started)
        read_s.append(sum(turns))
        turn_s.append(max(turns))
        started = time.perf_counter()
        text = write_groups(samples)
        body = text.encode()
        write_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        zipped = len(gzip.compress(body, compresslevel=1))
        gzip_s.append(time.perf_counter() - started)
        size = len(body)
    assert len(samples) == groups and all(s.counts is not None for s in samples)
    # Each group's 10 partitions end at 60,000 (1,000 records/s for 60 s), committed at 100.
    assert all(s.lag == 10 * (60_000 - 100) for s in samples)
    figures = {
        "read_s": statistics.median(read_s),
        "turn_s": statistics.median(turn_s),
        "write_s": statistics.median(write_s),
        "gzip_s": statistics.median(gzip_s),
        "bytes": size,
        "gzip_bytes": zipped,
        "lines": text.count("\n"),
    }
    if with_peer:

        class Families:
            def collect(self) -> Any:
                return iter(group_families(samples))

        registry = CollectorRegistry(auto_describe=False)
        registry.register(Families())  # type: ignore[arg-type]
        started = time.perf_counter()
        peer = generate_latest(registry).decode()
        figures["generate_latest_s"] = time.perf_counter() - started
        assert peer == text
    return figures


def _timed(handle: Callable[[Any, int], Any], requests: list[Any], clock: list[int]) -> float:
    """Handle ``requests`` in order (the clock moves 1 ms every 100); the process's CPU
    seconds taken (the machine may be shared: CPU time is what the counters add to)."""
    now = clock[0]
    start = time.process_time()
    for i, request in enumerate(requests):
        if i % 100 == 0:
            now += 1
        reply = handle(request, now)
    elapsed = time.process_time() - start
    clock[0] = now
    assert reply.response is not None
    return elapsed


#: The two ways a chunk of requests is handled: the engine as the runtime hosts it (with a
#: listener of its own, which the runtime always has: the history and the feeds), and the
#: same plus the metrics listener.
MODES = ("engine", "listener")


def paired(coord: GroupCoordinator, chunks: list[list[Any]]) -> dict[str, float]:
    """Requests per CPU second in each of ``MODES``, on one coordinator: chunk after chunk in
    turn, the garbage collector run between chunks (not during), the median of each mode."""
    from webapp.runtime.metrics import RebalanceCounts

    coord.add_listener(lambda event: None)  # the runtime's own listener, standing in
    listener = RebalanceCounts(coord.group_kind).on_event
    clock = [0]
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for i, chunk in enumerate(chunks):
        mode = MODES[i % len(MODES)]
        gc.collect()
        gc.disable()
        try:
            if mode != "engine":
                coord.add_listener(listener)
            rates[mode].append(len(chunk) / _timed(coord.handle, chunk, clock))
            if mode != "engine":
                coord.remove_listener(listener)
        finally:
            gc.enable()
    return {mode: statistics.median(values) for mode, values in rates.items()}


def _kafka_heartbeats(runtime: Any, beats: list[Any], records: Path) -> list[bytes]:
    """``beats`` as Heartbeat v4 frames (without the size prefix, as the listener reads them)."""
    from _wire import encode_request
    from kio.schema.heartbeat.v4.request import HeartbeatRequest as WireHeartbeat
    from kio.schema.types import GroupId
    from kio.static.primitive import i32

    return [
        bytes(
            encode_request(
                12,
                4,
                WireHeartbeat(
                    group_id=GroupId(beat.group_id),
                    generation_id=i32(beat.generation_id),
                    member_id=beat.member_id,
                    group_instance_id=None,
                ),
            )[4:]
        )
        for beat in beats
    ]


async def runtime_rates(state_dir: Path, chunks: int, size: int) -> dict[str, dict[str, float]]:
    """Requests per CPU second through a started runtime, counting off and on, chunk after
    chunk in turn, medians: heartbeats and durable offset commits (one partition each, the
    runtime's SqliteLog) by ``submit_nowait`` (what in-process callers use; counting: the
    metrics listener), and heartbeats through the Kafka transport (counting: the request, the
    response's codes, the metrics listener). Off, each is replaced by a function that does
    nothing (its call, ~50 ns, stays)."""
    from webapp.runtime.clock import ManualClock
    from webapp.runtime.coordinator_runtime import CoordinatorRuntime
    from webapp.transports.kafka import apis, codec
    from webapp.transports.kafka.listener import _result_now
    from webapp.transports.kafka.store import RecordStore

    clock = ManualClock(0)
    runtime = CoordinatorRuntime(
        log_path=state_dir / "coordinator.db",
        config=CONFIG,
        clock=clock,
        channel_layer_alias=None,
    )
    await runtime.start()
    try:
        coord = runtime.coordinator
        beats: list[Any] = []
        for g in range(10):
            ids: dict[str, str] = {}
            generation = rebalance(coord, f"hb-group-{g}", [f"c{i}" for i in range(100)], ids, 0)
            beats += [
                HeartbeatRequest(group_id=f"hb-group-{g}", generation_id=generation, member_id=m)
                for m in ids.values()
            ]
        clock.advance(20_000)  # past the join phases (3 s each), well within the sessions
        commits = [
            OffsetCommitRequest(
                group_id="commit-group",
                offsets=(PartitionOffset(topic="t", partition=i % 1000, offset=i),),
            )
            for i in range(size)
        ]
        frames = _kafka_heartbeats(runtime, beats, state_dir)
        context = apis.Context(
            runtime=runtime,
            host="127.0.0.1",
            port=9092,
            client_host="127.0.0.1",
            store=RecordStore(state_dir / "records.db"),
        )
        metrics = runtime.metrics
        counting = (runtime._on_metrics_event, metrics.count)

        def nothing(*arguments: Any) -> None:
            pass

        def count(on: bool) -> None:
            runtime._on_metrics_event, metrics.count = counting if on else (nothing, nothing)

        answered: list[Any] = []
        rates: dict[str, dict[str, list[float]]] = {
            name: {"off": [], "on": []} for name in ("heartbeats", "commits", "kafka")
        }
        for i in range(chunks):
            mode = ("off", "on")[i % 2]
            count(mode == "on")
            for name, requests in (("heartbeats", beats), ("commits", commits)):
                chunk = [requests[(i * size + j) % len(requests)] for j in range(size)]
                gc.collect()
                gc.disable()
                started = time.process_time()
                for request in chunk:
                    runtime.submit_nowait(request, answered.append)
                elapsed = time.process_time() - started
                gc.enable()
                assert len(answered) == size and answered[-1] is not None
                answered.clear()
                rates[name][mode].append(size / elapsed)
            await runtime.flush_history()  # the events of the chunk stored, outside the timing
            wire = [frames[(i * size + j) % len(frames)] for j in range(size)]
            gc.collect()
            gc.disable()
            started = time.process_time()
            for frame in wire:
                request = codec.decode_request(frame, apis.SUPPORTED)
                answered.append(
                    codec.encode_response(request, _result_now(apis.handle(context, request)))
                )
            elapsed = time.process_time() - started
            gc.enable()
            # Every answer says NONE (the error code follows throttle_time in v4's body).
            assert all(reply[-3:-1] == b"\x00\x00" for reply in answered), answered[-1]
            answered.clear()
            rates["kafka"][mode].append(size / elapsed)
        count(True)
        return {
            name: {mode: statistics.median(values) for mode, values in modes.items()}
            for name, modes in rates.items()
        }
    finally:
        await runtime.stop()


def heartbeat_chunks(chunks: int, size: int) -> tuple[GroupCoordinator, list[list[Any]]]:
    """1,000 members in 10 Stable groups heartbeating round-robin."""
    coord = GroupCoordinator(CONFIG)
    requests = []
    for g in range(10):
        group_id = f"hb-group-{g}"
        ids: dict[str, str] = {}
        generation = rebalance(coord, group_id, [f"c{i}" for i in range(100)], ids, 0)
        requests += [
            HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=m)
            for m in ids.values()
        ]
    n = len(requests)
    return coord, [[requests[(c * size + i) % n] for i in range(size)] for c in range(chunks)]


def commit_chunks(chunks: int, size: int) -> tuple[GroupCoordinator, list[list[Any]]]:
    """Offset commits of one partition each (a group without members, as an admin's or a
    simple consumer's), through a MemoryLog."""
    coord = GroupCoordinator(CONFIG, MemoryLog())
    return coord, [
        [
            OffsetCommitRequest(
                group_id="commit-group",
                offsets=(PartitionOffset(topic="t", partition=i % 1000, offset=c * size + i),),
            )
            for i in range(size)
        ]
        for c in range(chunks)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run (a smoke test)")
    args = parser.parse_args()
    state = tempfile.TemporaryDirectory()
    _django(Path(state.name))
    sizes = (100, 1_000) if args.quick else (1_000, 10_000)
    rounds = 10 if args.quick else 60

    rows: list[tuple[str, str, str]] = []
    figures: dict[str, float] = {}
    for groups in sizes:
        scrape = bench_scrape(groups, with_peer=groups == sizes[0])
        label = f"{groups:,} groups of {MEMBERS}"
        total = scrape["read_s"] + scrape["write_s"] + scrape["gzip_s"]
        ms = {
            key: f"{scrape[key] * 1000:,.0f}" for key in ("read_s", "turn_s", "write_s", "gzip_s")
        }
        rows.append((f"scrape, {label}: read state, ms", ms["read_s"], "on the event loop"))
        rows.append(
            (f"scrape, {label}: read state, longest loop turn, ms", ms["turn_s"], "500 groups")
        )
        rows.append((f"scrape, {label}: write text, ms", ms["write_s"], "worker thread"))
        rows.append((f"scrape, {label}: gzip (level 1), ms", ms["gzip_s"], "worker thread"))
        rows.append((f"scrape, {label}: total, ms", f"{total * 1000:,.0f}", ""))
        rows.append(
            (
                f"scrape, {label}: size, KiB ({scrape['lines']:,.0f} lines)",
                f"{scrape['bytes'] / 1024:,.0f}",
                "",
            )
        )
        zipped = f"{scrape['gzip_bytes'] / 1024:,.0f}"
        rows.append((f"scrape, {label}: gzipped size, KiB", zipped, "what Prometheus receives"))
        figures[f"scrape_{groups}_read_ms"] = round(scrape["read_s"] * 1000, 1)
        figures[f"scrape_{groups}_read_turn_ms"] = round(scrape["turn_s"] * 1000, 1)
        figures[f"scrape_{groups}_gzip_ms"] = round(scrape["gzip_s"] * 1000, 1)
        figures[f"scrape_{groups}_gzip_bytes"] = scrape["gzip_bytes"]
        figures[f"scrape_{groups}_write_ms"] = round(scrape["write_s"] * 1000, 1)
        figures[f"scrape_{groups}_bytes"] = scrape["bytes"]
        if "generate_latest_s" in scrape:
            peer = scrape["generate_latest_s"]
            rows.append(
                (
                    f"same text via generate_latest, {label}, ms",
                    f"{peer * 1000:,.0f}",
                    f"{peer / scrape['write_s']:.1f}x write_groups",
                )
            )
            figures[f"scrape_{groups}_generate_latest_ms"] = round(peer * 1000, 1)

    chunk = 5_000
    heartbeats = paired(*heartbeat_chunks(3 * rounds, chunk))
    commits = paired(*commit_chunks(3 * rounds, chunk))
    for name, key, rates in (
        ("heartbeats/s", "heartbeats", heartbeats),
        ("offset commits/s (MemoryLog)", "commits", commits),
    ):
        base = rates["engine"]
        rows.append((f"{name}, engine", f"{base:,.0f}", ""))
        figures[f"{key}_per_s"] = round(base)
        slower = 1 - rates["listener"] / base
        rows.append(
            (
                f"{name}, + listener",
                f"{rates['listener']:,.0f}",
                f"{slower:+.1%} slower (target ≤ 3%)",
            )
        )
        figures[f"{key}_per_s_listener"] = round(rates["listener"])
        figures[f"{key}_slower_listener"] = round(slower, 4)

    through = asyncio.run(runtime_rates(Path(state.name), 2 * rounds, 2_000))
    for name, key in (
        ("heartbeats/s through the runtime", "heartbeats"),
        ("durable commits/s through the runtime", "commits"),
        ("heartbeats/s through the Kafka transport", "kafka"),
    ):
        off, on = through[key]["off"], through[key]["on"]
        slower = 1 - on / off
        rows.append((f"{name}, counting off", f"{off:,.0f}", ""))
        rows.append((f"{name}, counting on", f"{on:,.0f}", f"{slower:+.1%} slower (target ≤ 3%)"))
        figures[f"runtime_{key}_per_s_counting_off"] = round(off)
        figures[f"runtime_{key}_per_s_counting_on"] = round(on)
        figures[f"runtime_{key}_slower"] = round(slower, 4)
    state.cleanup()

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>12}  note")
    print(f"{'-' * width}  {'-' * 12}  ----")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")
    print(json.dumps({"bench": "metrics", "python": sys.version.split()[0], **figures}))


if __name__ == "__main__":
    main()
