"""``python manage.py consume --url ws://HOST:PORT/ws/consumer/ --group G --topics a,b``: one
consumer in a process of its own, over the websocket consumer protocol.

The consumer is the sans-IO ``GroupClient`` (``coordinator_engine.client``) on a
``WebsocketTransport``, driven by ``ClientDriver`` (``webapp.simulation.client_driver``); this
command is its application: every ``--poll-interval-ms`` it calls ``poll()`` and "consumes".
The lab has no Fetch API, so consuming means advancing each owned partition's position by
``--consume-rate`` records per second (``record_consumed``); the client auto-commits those
positions every ``--auto-commit-interval-ms`` and before it gives a partition up. Nor does
the protocol carry log-end offsets (no ListOffsets), so a rate above the topic's produce rate
runs ahead of its log end; the JSON API shows such a partition's lag as 0.

It prints one line per event that matters, flushed at once, ``<event> key=value ...``; lists
are comma-separated (``orders-0,orders-3``, Kafka's ``TopicPartition`` spelling; offsets as
``orders-0:120``), a value with spaces is a JSON string, ``shlex.split`` reads a line back::

    started group=orders-app topics=orders client=consume-4242 url=ws://127.0.0.1:8000/ws/consumer/
    coordinator node=0 host=127.0.0.1 port=8000
    joined generation=1 member=consume-4242-… leader=consume-4242-… role=leader protocol=range
    assigned generation=1 member=consume-4242-… partitions=orders-0,orders-1 added=orders-0,orders-1
    fetched positions=orders-0:0,orders-1:0
    committed generation=1 member=consume-4242-… offsets=orders-0:50,orders-1:50
    closed member=consume-4242-…

and also ``coordinator-lost``, ``rebalancing``, ``revoked``, ``lost``, ``commit-failed``,
``left`` and ``fatal`` (then the exit status is 1).

``--protocol`` chooses the group protocol: ``classic`` (the default, above), ``handoff`` or
``consumer``; ``--handoff`` is the same as ``--protocol handoff``.

``--protocol handoff`` makes it a member of a handoff group instead: the sans-IO
``HandoffClient`` (docs/engine.md, "The handoff client"), which draws its own member id. It
consumes only what the coordinator let it start, and when asked to close a partition it stops
it at once and hands its position over: the client commits it, then confirms. Its lines::

    joined member=Xq3…  epoch=1
    start partitions=orders-0,orders-1 positions=orders-0:0,orders-1:0
    start-confirmed partitions=orders-0,orders-1
    close partitions=orders-1
    committed member=Xq3… offsets=orders-1:120
    close-confirmed partitions=orders-1

and ``lost``, ``commit-failed``, ``coordinator-lost``, ``left``, ``fatal`` as above.
``--assignor``, ``--instance-id``, ``--max-poll-interval-ms`` and ``--auto-commit-interval-ms``
do not apply (the coordinator plans; a handoff member commits when it closes). Closing its
socket makes the server remove the member at once (the discovery, docs/protocol.md).

``--protocol consumer`` makes it a member of a KIP-848 consumer group (Kafka 4's
``group.protocol=consumer``): the sans-IO ``ConsumerClient`` (docs/engine.md, "The
consumer-protocol client"), which draws its own member id and speaks ConsumerGroupHeartbeat.
The coordinator assigns (``--assignor`` names its server assignor, ``uniform`` or ``range``;
none: the coordinator's default); ``--max-poll-interval-ms`` is the rebalance timeout; the
coordinator's heartbeat interval applies (``--heartbeat-interval-ms`` does not), and
``--session-timeout-ms`` is what the client takes the coordinator's session to be. Each
assignment change is printed: the member epoch, what it revoked (committed first), what it
owns and what is new::

    epoch member=Xq3… epoch=1 previous=0
    assigned generation=1 member=Xq3… partitions=orders-0,orders-1 added=orders-0,orders-1
    fetched positions=orders-0:0,orders-1:0
    revoked generation=1 member=Xq3… partitions=orders-1
    assigned generation=1 member=Xq3… partitions=orders-0 added=
    epoch member=Xq3… epoch=2 previous=1

and ``committed``, ``lost`` (fenced: everything goes without a commit, then it joins again),
``commit-failed``, ``coordinator-lost``, ``left`` and ``fatal`` as above.

SIGTERM or SIGINT closes the consumer the way Kafka's ``close()`` does (commit, revoke,
LeaveGroup for a dynamic member; a handoff member commits, then leaves with epoch -1; a
consumer-protocol member commits, revokes, then leaves with epoch -1, or -2 if static) and exits
0; a second signal stops at once. The command touches no database: it needs no migrations.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import time
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError, CommandParser

from coordinator_engine import Errors
from coordinator_engine.assignors import ASSIGNOR_NAMES, TopicPartitionPair
from coordinator_engine.client import (
    ClientEvent,
    CloseConfirmed,
    CommitCompleted,
    CommitFailed,
    ConsumerClient,
    ConsumerConfig,
    ConsumerProtocolConfig,
    CoordinatorDiscovered,
    CoordinatorLost,
    FatalError,
    GroupClient,
    HandoffClient,
    HandoffConfig,
    HandoffJoined,
    JoinedGroup,
    LeftGroup,
    MemberEpochChanged,
    MemberState,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsToClose,
    PartitionsToStart,
    RebalanceStarted,
    StartConfirmed,
)
from coordinator_engine.server_assignors import SERVER_ASSIGNORS
from webapp.simulation.client_driver import ClientDriver, WebsocketTransport

#: How long a graceful close may take before the command gives up on its commit.
CLOSE_TIMEOUT_MS = 10_000
#: The group protocols the command speaks (``--protocol``).
PROTOCOLS = ("classic", "handoff", "consumer")

AnyClient = GroupClient | HandoffClient | ConsumerClient
AnyConfig = ConsumerConfig | HandoffConfig | ConsumerProtocolConfig


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


# ---------------------------------------------------------------- the output format


def format_partitions(partitions: Iterable[TopicPartitionPair]) -> str:
    return ",".join(f"{topic}-{partition}" for topic, partition in sorted(partitions))


def format_offsets(offsets: Mapping[TopicPartitionPair, int]) -> str:
    return ",".join(f"{t}-{p}:{offset}" for (t, p), offset in sorted(offsets.items()))


def parse_partitions(value: str) -> list[TopicPartitionPair]:
    """``orders-0,orders-3`` back into pairs (a topic name may hold ``-`` itself)."""
    pairs = []
    for item in filter(None, value.split(",")):
        topic, _, partition = item.rpartition("-")
        pairs.append((topic, int(partition)))
    return pairs


def parse_offsets(value: str) -> dict[TopicPartitionPair, int]:
    """``orders-0:120,orders-3:7`` back into ``{(topic, partition): offset}``."""
    offsets = {}
    for item in filter(None, value.split(",")):
        partition, _, offset = item.rpartition(":")
        ((topic, number),) = parse_partitions(partition)
        offsets[topic, number] = int(offset)
    return offsets


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return json.dumps(text) if not text or any(c in text for c in " \"\\'") else text


#: Fields whose value is an already joined list, printed as is (empty when the list is).
_LIST_FIELDS = frozenset({"topics", "partitions", "added", "positions", "offsets"})


def line(event: str, **fields: Any) -> str:
    """``event key=value ...``; a list field is passed already joined (it may be empty)."""
    parts = [event]
    for key, value in fields.items():
        text = value if key in _LIST_FIELDS else _value(value)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def _error_name(code: int | None) -> str:
    return "none" if code is None else Errors.name_of(code)


class EventLines:
    """Client events → output lines. Events are drained after the fact (the client may have
    left its generation by then), so the member id and generation a line names are followed
    through the events themselves, in order."""

    def __init__(self) -> None:
        self.member = "-"
        self.generation = -1

    def describe(self, event: ClientEvent) -> str | None:
        """The line for an event, None for those that do not matter here."""
        match event:
            case CoordinatorDiscovered():
                return line("coordinator", node=event.node_id, host=event.host, port=event.port)
            case CoordinatorLost():
                return line("coordinator-lost", reason=event.reason)
            case RebalanceStarted():
                return line("rebalancing", member=self.member, reason=event.reason)
            case JoinedGroup():
                self.member, self.generation = event.member_id, event.generation
                return line(
                    "joined",
                    generation=event.generation,
                    member=event.member_id,
                    leader=event.leader,
                    role="leader" if event.is_leader else "follower",
                    protocol=event.protocol_name or "-",
                )
            case PartitionsAssigned():
                return line(
                    "assigned",
                    generation=event.generation,
                    member=self.member,
                    partitions=format_partitions(event.assignment),
                    added=format_partitions(event.partitions),
                )
            case PartitionsRevoked():
                return line(
                    "revoked",
                    generation=self.generation,
                    member=self.member,
                    partitions=format_partitions(event.partitions),
                )
            case PartitionsLost():
                partitions = format_partitions(event.partitions)
                return line("lost", member=self.member, partitions=partitions)
            case OffsetsFetched():
                return line("fetched", positions=format_offsets(event.positions))
            case CommitCompleted() if event.offsets:
                return line(
                    "committed",
                    generation=self.generation,
                    member=self.member,
                    offsets=format_offsets(event.offsets),
                    auto=event.auto,
                )
            case CommitFailed():
                return line(
                    "commit-failed",
                    member=self.member,
                    error=_error_name(event.error_code),
                    offsets=format_offsets(event.offsets),
                    reason=event.reason,
                )
            case MemberStateChanged() if event.to_state == MemberState.UNJOINED.value:
                self.generation = -1  # out of the generation; the member id may be kept
            case LeftGroup():
                self.member, self.generation = "-", -1
                return line(
                    "left",
                    member=event.member_id,
                    leave_group_sent=event.leave_group_sent,
                    reason=event.reason,
                )
            case FatalError():
                return line("fatal", error=_error_name(event.error_code), reason=event.reason)
            case HandoffJoined():
                self.member = event.member_id
                return line("joined", member=event.member_id, epoch=event.epoch)
            case MemberEpochChanged():
                self.member, self.generation = event.member_id, event.epoch
                return line(
                    "epoch",
                    member=event.member_id,
                    epoch=event.epoch,
                    previous=event.previous_epoch,
                )
            case PartitionsToStart():
                return line(
                    "start",
                    partitions=format_partitions(event.partitions),
                    positions=format_offsets(event.positions),
                )
            case StartConfirmed():
                return line("start-confirmed", partitions=format_partitions(event.partitions))
            case PartitionsToClose():
                return line("close", partitions=format_partitions(event.partitions))
            case CloseConfirmed():
                return line("close-confirmed", partitions=format_partitions(event.partitions))
        return None


# ---------------------------------------------------------------- the application


class Consumption:
    """The application's "processing": each owned partition's position moves on at
    ``rate_per_s`` records per second (fractions carry over to the next step)."""

    def __init__(self, rate_per_s: float, now_ms: int) -> None:
        self.rate_per_s = rate_per_s
        self._last_ms = now_ms
        self._carry: dict[TopicPartitionPair, float] = {}

    def step(self, client: AnyClient, now_ms: int) -> None:
        elapsed_ms, self._last_ms = now_ms - self._last_ms, now_ms
        positions = client.positions  # owned partitions whose position is known
        if isinstance(client, ConsumerClient):
            fetchable = client.fetchable  # not those being revoked
            positions = {tp: o for tp, o in positions.items() if tp in fetchable}
        self._carry = {tp: c for tp, c in self._carry.items() if tp in positions}
        if self.rate_per_s <= 0 or elapsed_ms <= 0:
            return
        for (topic, partition), position in positions.items():
            if position < 0:
                continue  # "latest"/"none" without a committed offset: nothing to start from
            due = self._carry.get((topic, partition), 0.0) + self.rate_per_s * elapsed_ms / 1000
            records = int(due)
            self._carry[topic, partition] = due - records
            if records:
                client.record_consumed(topic, partition, position + records)


class Command(BaseCommand):
    help = "Run one consumer of a group over the websocket consumer protocol (docs/protocol.md)."

    # No database, no system checks: a consumer process runs without migrations.
    requires_system_checks: ClassVar[list[str]] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url",
            default="ws://127.0.0.1:8000/ws/consumer/",
            help="the server's consumer websocket (default ws://127.0.0.1:8000/ws/consumer/)",
        )
        parser.add_argument("--group", required=True, help="group.id")
        parser.add_argument("--topics", required=True, help="comma-separated topics to subscribe")
        parser.add_argument(
            "--protocol",
            choices=PROTOCOLS,
            default=None,
            help="the group protocol: classic (the default: JoinGroup/SyncGroup), handoff (seed "
            "004) or consumer (KIP-848, Kafka 4's group.protocol=consumer)",
        )
        parser.add_argument(
            "--assignor",
            default=None,
            help="classic: partition.assignment.strategy, comma-separated, in preference order "
            f"({', '.join(ASSIGNOR_NAMES)}; default range); consumer: the coordinator's "
            f"assignor ({', '.join(SERVER_ASSIGNORS)}; default: the coordinator's)",
        )
        parser.add_argument(
            "--instance-id", default=None, help="group.instance.id (a static member, KIP-345)"
        )
        parser.add_argument("--client-id", default=None, help="client.id (default consume-<pid>)")
        parser.add_argument("--session-timeout-ms", type=int, default=45_000)
        parser.add_argument("--heartbeat-interval-ms", type=int, default=3_000)
        parser.add_argument("--max-poll-interval-ms", type=int, default=300_000)
        parser.add_argument("--auto-commit-interval-ms", type=int, default=5_000)
        parser.add_argument(
            "--consume-rate",
            type=float,
            default=10.0,
            help="records consumed per second from each owned partition (default 10)",
        )
        parser.add_argument(
            "--handoff",
            action="store_true",
            help="the same as --protocol handoff: be a member of a handoff group: the "
            "coordinator plans, a partition is closed (committed) by its owner before another "
            "member starts it",
        )
        parser.add_argument(
            "--poll-interval-ms",
            type=int,
            default=200,
            help="time between the application's poll() calls (default 200)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        client_id = options["client_id"] or f"consume-{os.getpid()}"
        protocol = options.get("protocol") or "classic"
        if options["handoff"]:
            if options.get("protocol") not in (None, "handoff"):
                raise CommandError(f"--handoff and --protocol {protocol} contradict each other")
            protocol = "handoff"
        config: AnyConfig
        try:
            if protocol == "handoff":
                if options["instance_id"] is not None:
                    raise ValueError("--instance-id does not apply to --protocol handoff")
                config = HandoffConfig(
                    group_id=options["group"],
                    topics=tuple(t.strip() for t in options["topics"].split(",") if t.strip()),
                    client_id=client_id,
                    session_timeout_ms=options["session_timeout_ms"],
                    heartbeat_interval_ms=options["heartbeat_interval_ms"],
                )
            elif protocol == "consumer":
                config = self._consumer_config(options, client_id)
            else:
                config = self._classic_config(options, client_id)
        except (TypeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        url = options["url"]
        if urlsplit(url).scheme not in ("ws", "wss"):
            raise CommandError(f"--url must be a ws:// or wss:// URL, got {url!r}")
        if not math.isfinite(options["consume_rate"]) or options["consume_rate"] < 0:
            raise CommandError("--consume-rate must be a number >= 0")
        if options["poll_interval_ms"] <= 0:
            raise CommandError("--poll-interval-ms must be > 0")
        fatal = asyncio.run(
            self.run(
                config,
                url,
                consume_rate=options["consume_rate"],
                poll_interval_ms=options["poll_interval_ms"],
            )
        )
        if fatal is not None:
            raise CommandError(f"the consumer stopped: {fatal}")

    @staticmethod
    def _classic_config(options: dict[str, Any], client_id: str) -> ConsumerConfig:
        assignors = options["assignor"] or "range"
        return ConsumerConfig(
            group_id=options["group"],
            topics=tuple(t.strip() for t in options["topics"].split(",") if t.strip()),
            assignors=tuple(a.strip() for a in assignors.split(",") if a.strip()),
            group_instance_id=options["instance_id"],
            client_id=client_id,
            session_timeout_ms=options["session_timeout_ms"],
            heartbeat_interval_ms=options["heartbeat_interval_ms"],
            max_poll_interval_ms=options["max_poll_interval_ms"],
            auto_commit_interval_ms=options["auto_commit_interval_ms"],
        )

    @staticmethod
    def _consumer_config(options: dict[str, Any], client_id: str) -> ConsumerProtocolConfig:
        assignor = options["assignor"]
        if assignor is not None and assignor not in SERVER_ASSIGNORS:
            raise ValueError(
                f"--assignor {assignor!r} is not one of the coordinator's assignors "
                f"({', '.join(SERVER_ASSIGNORS)}) for --protocol consumer"
            )
        return ConsumerProtocolConfig(
            group_id=options["group"],
            topics=tuple(t.strip() for t in options["topics"].split(",") if t.strip()),
            group_instance_id=options["instance_id"],
            server_assignor=assignor,
            rebalance_timeout_ms=options["max_poll_interval_ms"],
            client_id=client_id,
            auto_commit_interval_ms=options["auto_commit_interval_ms"],
            session_timeout_ms=options["session_timeout_ms"],
        )

    def emit(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    async def run(
        self,
        config: AnyConfig,
        url: str,
        *,
        consume_rate: float,
        poll_interval_ms: int,
    ) -> str | None:
        """Consume until a signal (then close gracefully) or a fatal error (returned)."""
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            stopping.set()
            if signals > 1:
                driver.stop()  # a second signal: no more waiting for the close

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)

        fatal: list[str] = []
        lines = EventLines()

        def on_event(event: ClientEvent) -> None:
            text = lines.describe(event)
            if text is not None:
                self.emit(text)
            if isinstance(event, FatalError):
                fatal.append(f"{_error_name(event.error_code)}: {event.reason}")
                stopping.set()
            elif isinstance(event, PartitionsToClose) and isinstance(client, HandoffClient):
                # Stop at once: what was consumed up to now is committed, then confirmed.
                consumption.step(client, monotonic_ms())
                positions = client.positions
                client.partitions_stopped({tp: positions.get(tp, -1) for tp in event.partitions})
                driver.kick()

        transport = WebsocketTransport(url)
        client: AnyClient
        if isinstance(config, HandoffConfig):
            client = HandoffClient(config, monotonic_ms())
        elif isinstance(config, ConsumerProtocolConfig):
            client = ConsumerClient(config, monotonic_ms())
        else:
            client = GroupClient(config, monotonic_ms())
        driver = ClientDriver(client, transport, monotonic_ms, on_event)
        consumption = Consumption(consume_rate, monotonic_ms())
        self.emit(
            line(
                "started",
                group=config.group_id,
                topics=",".join(config.topics),
                client=config.client_id,
                url=url,
                pid=os.getpid(),
            )
        )
        await transport.start()
        connections = 0
        try:
            while not stopping.is_set():
                if isinstance(client, HandoffClient):
                    # The server removes a handoff member as soon as its socket ends: a dropped
                    # (or replaced) socket means everything held is someone else's now.
                    if not transport.connected or transport.connections != connections:
                        client.connection_lost(monotonic_ms())
                    connections = transport.connections
                consumption.step(client, monotonic_ms())
                driver.poll()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), poll_interval_ms / 1000)
            if not fatal:
                consumption.step(client, monotonic_ms())
                member = client.member_id or "-"
                await driver.close(CLOSE_TIMEOUT_MS)
                self.emit(line("closed", member=member))
        finally:
            driver.stop()
            await transport.close()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        return fatal[0] if fatal else None
