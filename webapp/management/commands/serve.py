"""``python manage.py serve [--host 0.0.0.0] [--port 8000] [--kafka-port 9092]``: Daphne, the
coordinator runtime and the Kafka listener on one event loop.

Daphne runs no ASGI lifespan events, so this command starts the runtime itself, on the loop
Daphne serves on, as soon as the reactor runs: the socket listens at once and ``/healthz``
answers 503 "starting" while the log replays. SIGINT/SIGTERM stop Daphne, then the runtime
(events flushed, log closed). The Kafka listener (``webapp.transports.kafka``) opens on
``--host:--kafka-port`` once the runtime serves; a port already taken stops the command, saying
so. With ``CHANNEL_LAYER=redis`` (the default) Redis must answer at
``REDIS_URL`` before anything starts.

Kafka's SASL (``KAFKA_SASL=required``, docs/kafka.md "Authentication") is off by default, for
a listener on loopback; on any other address (``--host 0.0.0.0``) anyone who reaches the port
could delete any group and its offsets, so ``serve`` refuses to start unless SASL is required
or ``KAFKA_ALLOW_ANONYMOUS`` says to serve it open anyway.

Port 0 (``--port 0``, ``--kafka-port 0``) lets the system pick a free port; ``--ports-file``
then tells which: once everything listens, the file holds ``{"http": N, "kafka": M}`` (M null
with ``--kafka-port off``). Tests and benchmarks start servers this way, so no two of them can
ever be handed the same port.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import ipaddress
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Importing daphne.server installs Twisted's asyncio reactor; it must precede any import of
# twisted.internet.reactor (the daphne app in INSTALLED_APPS already imported it at setup).
import daphne.server
from daphne.access import AccessLogGenerator
from daphne.endpoints import build_endpoint_description_strings
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from webapp import secret_key
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, install_runtime
from webapp.settings import parse_kafka_port
from webapp.simulation.demo import run_demo
from webapp.simulation.manager import simulation_for
from webapp.transports.kafka.authenticator import SaslConfig
from webapp.transports.kafka.listener import KafkaListener
from webapp.transports.kafka.users import list_users, stored_user
from webapp.transports.websocket.codec import MAX_FRAME_BYTES

logger = logging.getLogger("webapp.serve")

# Twisted listens with a backlog of 50: when hundreds of consumers connect at once (a deploy,
# a restart) the overflow waits for SYN retransmits (1 s, then 3 s). The kernel caps this at
# net.core.somaxconn (4096 on current Linux).
LISTEN_BACKLOG = 1024


class Command(BaseCommand):
    help = "Serve Rebalance Lab: Daphne (HTTP + websockets) and the coordinator runtime."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
        parser.add_argument(
            "--port", type=int, default=8000, help="TCP port (default 8000; 0: any free port)"
        )
        parser.add_argument(
            "--kafka-port",
            type=kafka_port_option,
            default=None,
            help="Kafka protocol port (default $KAFKA_PORT, else 9092; 0: any free port; "
            "off: no Kafka listener)",
        )
        parser.add_argument(
            "--ports-file",
            type=Path,
            default=None,
            help='once serving, write {"http": N, "kafka": M} to this file (for port 0)',
        )
        parser.add_argument(
            "--demo",
            action="store_true",
            help="start the live demo: four groups of simulated consumers that keep rebalancing",
        )
        parser.add_argument(
            "--no-migrate",
            action="store_true",
            help="do not apply Django migrations before serving",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host: str = options["host"]
        port: int = options["port"]
        # None: no Kafka listener.
        kafka_port: int | None = (
            settings.KAFKA_PORT if options["kafka_port"] is None else options["kafka_port"].port
        )
        ports_file: Path | None = options["ports_file"]
        verbosity: int = options["verbosity"]
        try:
            secret_key.require()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        sasl = kafka_sasl(host, kafka_port)
        check_channel_layer()
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        if sasl is not None and not has_kafka_users():
            self.stderr.write(
                "KAFKA_SASL=required and no Kafka user yet: no Kafka client can connect until "
                "one is added (manage.py kafka_user add NAME [--staff])"
            )
        # FindCoordinator advertises where clients reach this process.
        if "ADVERTISED_PORT" not in os.environ:
            settings.ADVERTISED_PORT = port
        if "ADVERTISED_HOST" not in os.environ and host not in ("0.0.0.0", "::", ""):
            settings.ADVERTISED_HOST = host

        from twisted.internet import defer, reactor

        from webapp.asgi import application

        runtime = CoordinatorRuntime.from_settings()
        install_runtime(runtime)
        server = daphne.server.Server(
            application=application,
            endpoints=[
                f"{endpoint}:backlog={LISTEN_BACKLOG}"
                for endpoint in build_endpoint_description_strings(host=host, port=port)
            ],
            action_logger=AccessLogGenerator(sys.stdout) if verbosity >= 1 else None,
            # Frames up to 4 MiB reach the consumer, which refuses those over 1 MiB with a
            # frame_too_large reply; bigger ones are closed by Daphne (1009).
            # A consumer stays connected as long as it runs (Daphne's default is one day).
            websocket_timeout=-1,
            websocket_max_message_size=4 * MAX_FRAME_BYTES,
            websocket_max_frame_size=4 * MAX_FRAME_BYTES,
            verbosity=verbosity,
            ready_callable=lambda: asyncio.get_event_loop().create_task(start()),
        )
        failed: list[str] = []
        demo_tasks: list[asyncio.Task[None]] = []
        kafka = (
            KafkaListener(
                runtime,
                host=host,
                port=kafka_port,
                records_path=settings.KAFKA_RECORDS_PATH,
                retention_ms=settings.KAFKA_RETENTION_MS,
                advertised_host=settings.KAFKA_ADVERTISED_HOST or settings.ADVERTISED_HOST,
                sasl=sasl,
            )
            if kafka_port is not None
            else None
        )

        async def start() -> None:
            nonlocal port
            if port == 0:  # Daphne listened on the port the system picked
                port = int(server.listening_addresses[0][1])
                if "ADVERTISED_PORT" not in os.environ:
                    settings.ADVERTISED_PORT = runtime.advertised_port = port
            try:
                await runtime.start()
            except Exception as exc:  # the runtime logged it
                failed.append(f"the coordinator runtime could not start: {exc}")
                server.stop()
                return
            if kafka is not None:
                try:
                    await kafka.start()
                except OSError as exc:
                    failed.append(
                        f"the Kafka listener could not listen on {host}:{kafka_port}: {exc}"
                    )
                    server.stop()
                    return
                runtime.listeners["kafka"] = kafka.address
                self.stdout.write(
                    f"Kafka listener on {host}:{kafka.port} (bootstrap {kafka.address}; "
                    + ("no SASL" if sasl is None else "SASL " + ", ".join(sasl.mechanisms))
                    + ")"
                )
            if ports_file is not None:
                write_ports(ports_file, http=port, kafka=None if kafka is None else kafka.port)
            freeze_long_lived_objects()
            self.stdout.write(
                f"Rebalance Lab on http://{host}:{port}/ (websocket /ws/consumer/); "
                f"log {runtime.log_path}, {len(runtime.group_ids())} groups, "
                f"channel layer {settings.CHANNEL_LAYER}"
            )
            if options["demo"]:
                demo_tasks.append(
                    asyncio.get_running_loop().create_task(
                        run_demo(runtime, simulation_for(runtime)), name="demo"
                    )
                )
                self.stdout.write(
                    "Live demo: groups orders-eager, payments-coop, inventory-handoff and "
                    "orders-consumer are churning; "
                    f"open http://{host}:{port}/api/groups"
                )

        async def stop() -> None:
            for task in demo_tasks:
                task.cancel()
            if kafka is not None:
                await kafka.stop()
            await simulation_for(runtime).stop_all()
            await runtime.stop()

        # The shutdown runs in a context of its own: the trigger fires in whatever context the
        # signal that stopped the reactor interrupted (a Django view's, inside sync_to_async,
        # where asgiref refuses the history writer's last store as a deadlock).
        reactor.addSystemEventTrigger(
            "before",
            "shutdown",
            lambda: defer.Deferred.fromFuture(
                asyncio.get_event_loop().create_task(stop(), context=contextvars.Context())
            ),
        )
        self.stdout.write(f"Starting Rebalance Lab at {host}:{port} (log {runtime.log_path})")
        server.run()
        if failed:
            raise CommandError(failed[0])
        if server.abort_start:
            raise CommandError(f"could not listen on {host}:{port}")


def has_kafka_users() -> bool:
    """Whether any Kafka user exists (True when the database cannot say: ``--no-migrate`` on
    a database without the table; the listener then refuses every sign-in, saying why)."""
    try:
        return bool(list_users())
    except DatabaseError:
        return True


def is_loopback(host: str) -> bool:
    """Whether ``host`` (serve's ``--host``) is a loopback address, reachable from this machine
    only; a name other than ``localhost`` is not trusted to be one."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def kafka_sasl(host: str, kafka_port: int | None) -> SaslConfig | None:
    """The Kafka listener's SASL from the settings (None: off); CommandError when it would be
    off on an address beyond loopback without ``KAFKA_ALLOW_ANONYMOUS``, or is misconfigured."""
    if settings.KAFKA_SASL == "required":
        try:
            return SaslConfig(
                mechanisms=tuple(settings.KAFKA_SASL_MECHANISMS), credentials=stored_user
            )
        except ValueError as exc:
            raise CommandError(f"KAFKA_SASL_MECHANISMS: {exc}") from None
    if kafka_port is not None and not is_loopback(host) and not settings.KAFKA_ALLOW_ANONYMOUS:
        raise CommandError(
            f"refusing to serve the Kafka listener on {host} without authentication: anyone "
            "who reaches it could delete any group and its offsets. Set KAFKA_SASL=required "
            "(and add users: manage.py kafka_user add NAME [--staff]), or KAFKA_ALLOW_ANONYMOUS=on "
            "to serve it open anyway, or KAFKA_PORT=off, or serve on 127.0.0.1."
        )
    return None


@dataclass(frozen=True)
class KafkaPort:
    """``--kafka-port``'s value: a port (0: any free one), or None for ``off``."""

    port: int | None


def kafka_port_option(value: str) -> KafkaPort:
    try:
        return KafkaPort(parse_kafka_port(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def write_ports(path: Path, **ports: int | None) -> None:
    """Write ``ports`` as JSON to ``path`` at once (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(ports))
    partial.replace(path)


#: The collector's thresholds while serving (CPython's defaults: 700, 10, 10).
GC_THRESHOLDS = (20_000, 20, 20)


def freeze_long_lived_objects() -> None:
    """Move what exists once the runtime is up (Django, Twisted, the replayed groups: ~125,000
    objects that live as long as the process) out of the garbage collector's sight. A full
    collection walked them all, ~100 ms with the loop stopped, every few seconds under load;
    after the freeze it takes ~10 ms (bench/dashboard.py, event → page latency).

    Then collect less often (``GC_THRESHOLDS``): a request allocates a few dozen short-lived
    containers (the decoded request, the engine's request, record and response dataclasses),
    nearly all freed by their reference counts, so with CPython's 700 a young collection ran
    every ~20 requests for almost nothing. At 20,000 single OffsetCommits a second go ~15%
    higher (bench/kafka_wire.py, docs/kafka.md); a young collection then looks at up to
    20,000 objects, about a millisecond."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def check_channel_layer() -> None:
    """With the Redis channel layer, fail now, naming REDIS_URL, if Redis does not answer."""
    if settings.CHANNEL_LAYER != "redis":
        return
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        raise CommandError(
            f"cannot reach Redis at REDIS_URL={settings.REDIS_URL} ({exc}). Start Redis, point "
            "REDIS_URL at one, or set CHANNEL_LAYER=memory to serve without it (one process)."
        ) from None
    finally:
        client.close()
