"""Engine benchmark: heartbeats/s, durable offset commits/s, full-rebalance wall time.

    .venv/bin/python bench/engine.py [--quick]

Everything runs in one process on one core, in virtual time (the clock is an argument):

- heartbeats: members of Stable groups heartbeat round-robin through `handle()`; the request
  objects are built once (a real client resends the same heartbeat), the clock moves 1 ms every
  1,000 heartbeats so session timers are really extended.
- commits: OffsetCommit through a `SqliteLog` (WAL, synchronous=NORMAL: a commit survives a
  process kill once acknowledged) in a temporary directory: one partition per request (one
  append, one SQLite transaction each), and 100 partitions per request (one append per batch).
- rebalance: N members join an Empty group through the full KIP-394 flow (JoinGroup →
  MEMBER_ID_REQUIRED → JoinGroup), the leader assigns with the `range` assignor over their real
  ConsumerProtocolSubscription metadata, every member syncs: the wall time of all of it; then a
  rebalance of the Stable group triggered by one more member (everyone rejoins and syncs).

There is no peer to run in the same process (Kafka's coordinator is JVM code), so the table has
no ratio column. It ends with one JSON line of the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coordinator_engine import (
    Assignment,
    CoordinatorConfig,
    Errors,
    GroupCoordinator,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    PartitionOffset,
    Protocol,
    SqliteLog,
    SyncGroupRequest,
)
from coordinator_engine.assignors import Subscription, get_assignor
from coordinator_engine.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

CONFIG = CoordinatorConfig()
TOPICS = {f"topic-{i}": 64 for i in range(16)}
METADATA = encode_subscription(ConsumerProtocolSubscription(topics=tuple(TOPICS)))
SESSION_MS = 45_000
REBALANCE_MS = 300_000


def join_request(group_id: str, member_id: str, client: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id,
        member_id=member_id,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="consumer",
        protocols=(Protocol(name="range", metadata=METADATA),),
        client_id=client,
    )


def rebalance(
    coord: GroupCoordinator, group_id: str, clients: list[str], member_ids: dict[str, str], now: int
) -> int:
    """Every client (re)joins, the leader assigns, everyone syncs. Returns the generation."""
    replies = {}
    for client in clients:
        member_id = member_ids.get(client, "")
        reply = coord.handle(join_request(group_id, member_id, client), now)
        if reply.done and reply.response.error_code == Errors.MEMBER_ID_REQUIRED:
            member_id = reply.response.member_id
            reply = coord.handle(join_request(group_id, member_id, client), now)
        member_ids[client] = member_id
        replies[client] = reply
    # The first join phase of an Empty group waits group.initial.rebalance.delay.ms, again
    # after each delay in which new members joined: let virtual time run until it ends.
    while not all(r.done for r in replies.values()):
        deadline = coord.next_deadline_ms()
        assert deadline is not None
        now = deadline
        coord.advance(now)
    responses = [r.response for r in replies.values()]
    assert all(r is not None and r.error_code == Errors.NONE for r in responses), responses[:3]
    leader = next(r for r in responses if r.leader == r.member_id)
    plan = get_assignor("range").assign(
        TOPICS,
        {
            m.member_id: Subscription(topics=decode_subscription(m.metadata).topics)
            for m in leader.members
        },
    )
    assignments = tuple(
        Assignment(
            member_id=m,
            assignment=encode_assignment(
                ConsumerProtocolAssignment(assigned_partitions=tuple(tps))
            ),
        )
        for m, tps in plan.items()
    )
    generation = leader.generation_id
    for r in responses:
        coord.handle(
            SyncGroupRequest(
                group_id=group_id,
                generation_id=generation,
                member_id=r.member_id,
                assignments=assignments if r.member_id == leader.member_id else (),
            ),
            now,
        )
    view = coord.group(group_id)
    assert (
        view is not None and view.state is GroupState.STABLE and len(view.members) == len(clients)
    )
    return generation


def bench_heartbeats(members: int, beats: int) -> float:
    coord = GroupCoordinator(CONFIG)
    requests = []
    per_group = 100
    for g in range(members // per_group):
        group_id = f"hb-group-{g}"
        ids: dict[str, str] = {}
        generation = rebalance(coord, group_id, [f"c{i}" for i in range(per_group)], ids, 0)
        requests += [
            HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=m)
            for m in ids.values()
        ]
    handle = coord.handle
    n = len(requests)
    start = time.perf_counter()
    now = 0
    for i in range(beats):
        if i % 1000 == 0:
            now += 1
        reply = handle(requests[i % n], now)
    elapsed = time.perf_counter() - start
    assert reply.response is not None and reply.response.error_code == Errors.NONE
    return beats / elapsed


def bench_commits(commits: int, batch: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        log = SqliteLog(Path(tmp) / "offsets.db")
        coord = GroupCoordinator(CONFIG, log)
        requests = [
            OffsetCommitRequest(
                group_id="commit-group",
                offsets=tuple(
                    PartitionOffset(topic="t", partition=(i * batch + j) % 1000, offset=i)
                    for j in range(batch)
                ),
            )
            for i in range(max(1, commits // batch))
        ]
        start = time.perf_counter()
        for now, request in enumerate(requests):
            reply = coord.handle(request, now)
        elapsed = time.perf_counter() - start
        assert reply.response is not None
        assert all(p.error_code == Errors.NONE for p in reply.response.partitions)
        stored = sum(1 for _ in log.read())
        assert stored == len(requests) * batch, stored
        log.close()
    return len(requests) * batch / elapsed


def bench_rebalance(members: int) -> tuple[float, float]:
    coord = GroupCoordinator(CONFIG)
    clients = [f"c{i}" for i in range(members)]
    ids: dict[str, str] = {}
    start = time.perf_counter()
    rebalance(coord, "big-group", clients, ids, 0)
    first = time.perf_counter() - start
    start = time.perf_counter()
    # The newcomer joins first; the members learn of the rebalance and rejoin.
    rebalance(coord, "big-group", ["newcomer", *clients], ids, 10_000)
    second = time.perf_counter() - start
    return first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller run (a smoke test)")
    args = parser.parse_args()
    beats = 200_000 if args.quick else 2_000_000
    commits = 5_000 if args.quick else 50_000

    rows = []
    heartbeats = bench_heartbeats(1_000, beats)
    rows.append(
        ("heartbeats/s (1,000 members, 10 Stable groups)", f"{heartbeats:,.0f}", "≥ 200,000")
    )
    single = bench_commits(commits, 1)
    rows.append(("durable commits/s, one per append (SqliteLog)", f"{single:,.0f}", "≥ 20,000"))
    batched = bench_commits(commits * 4, 100)
    rows.append(("durable commits/s, 100 per append (SqliteLog)", f"{batched:,.0f}", ""))
    figures: dict[str, float] = {
        "heartbeats_per_s": round(heartbeats),
        "durable_commits_per_s_single": round(single),
        "durable_commits_per_s_batch100": round(batched),
    }
    for members in (100, 1_000):
        first, second = bench_rebalance(members)
        rows.append((f"first rebalance of {members:,} members, wall s", f"{first:.3f}", ""))
        rows.append((f"rebalance of {members:,} members + 1 joiner, wall s", f"{second:.3f}", ""))
        figures[f"rebalance_{members}_first_s"] = round(first, 4)
        figures[f"rebalance_{members}_plus_one_s"] = round(second, 4)

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>12}  target")
    print(f"{'-' * width}  {'-' * 12}  ------")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>12}  {target}")
    print(json.dumps({"bench": "engine", "python": sys.version.split()[0], **figures}))


if __name__ == "__main__":
    main()
