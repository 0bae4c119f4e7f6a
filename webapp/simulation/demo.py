"""The live demo `make run` starts: four groups that keep rebalancing.

- `orders-eager` (eager `range` over `orders`, 12 partitions): steady members, one that flaps
  (leaves and rejoins), one too slow for max.poll.interval.ms, one that crashes (session
  timeout) — a crashed or departed member is replaced, so the churn never stops.
- `payments-coop` (`cooperative-sticky` over `payments`, 8 partitions): three static members
  (KIP-345) that restart without causing a rebalance, a steady dynamic member, and one that
  leaves gracefully and comes back (incremental cooperative rebalances, KIP-429).
- `inventory-handoff` (a handoff group over `inventory`, 6 partitions): the
  coordinator plans and every moved partition is closed (committed) by its owner before its new
  owner starts it. A steady member, one slow to close (the group shows Closing for a while),
  one that flaps and one that crashes (the discovery removes it at once, without waiting for
  its session).
- `orders-consumer` (a consumer group, KIP-848's protocol, `uniform` over `orders`, beside
  `orders-eager` on the same topic): the coordinator assigns and each member revokes what it
  loses before another gets it. The churn of `orders-eager` (steady members, one that flaps,
  one too slow for max.poll.interval.ms, one that crashes: its session runs out) and of
  `payments-coop` (a static member that restarts, leaving with epoch -2: no rebalance), and one
  slow to revoke (it holds its revocation until the coordinator's rebalance timeout fences it;
  it loses everything and joins again).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from webapp.runtime.api import RuntimeAPI

from .consumer import Behaviour, ConsumerSpec
from .manager import Simulation

logger = logging.getLogger(__name__)

TOPICS = {"orders": (12, 200.0), "payments": (8, 60.0), "inventory": (6, 40.0)}
#: The demo's groups, in the order above.
GROUPS = ("orders-eager", "payments-coop", "inventory-handoff", "orders-consumer")


def demo_specs() -> list[tuple[str, ConsumerSpec]]:
    orders = ("orders",)
    payments = ("payments",)
    inventory = ("inventory",)

    def consumer(behaviour: Behaviour, period_ms: int = 30_000, **extra: Any) -> ConsumerSpec:
        return ConsumerSpec(
            group_id="orders-consumer",
            topics=orders,
            protocol="consumer",
            assignor="uniform",
            behaviour=behaviour,
            period_ms=period_ms,
            **extra,
        )

    def handoff(behaviour: Behaviour, period_ms: int = 30_000) -> ConsumerSpec:
        return ConsumerSpec(
            group_id="inventory-handoff",
            topics=inventory,
            protocol="handoff",
            behaviour=behaviour,
            period_ms=period_ms,
        )

    return [
        ("orders-steady-1", ConsumerSpec(group_id="orders-eager", topics=orders)),
        ("orders-steady-2", ConsumerSpec(group_id="orders-eager", topics=orders)),
        (
            "orders-flapping",
            ConsumerSpec(
                group_id="orders-eager",
                topics=orders,
                behaviour=Behaviour.FLAPPING,
                period_ms=45_000,
            ),
        ),
        (
            "orders-slow",
            ConsumerSpec(
                group_id="orders-eager",
                topics=orders,
                behaviour=Behaviour.SLOW,
                period_ms=70_000,
                max_poll_interval_ms=15_000,
            ),
        ),
        (
            "orders-crash",
            ConsumerSpec(
                group_id="orders-eager", topics=orders, behaviour=Behaviour.CRASH, period_ms=60_000
            ),
        ),
        *[
            (
                f"payments-static-{i}",
                ConsumerSpec(
                    group_id="payments-coop",
                    topics=payments,
                    assignor="cooperative-sticky",
                    behaviour=Behaviour.STATIC_RESTART,
                    group_instance_id=f"payments-{i}",
                    period_ms=period,
                ),
            )
            for i, period in ((1, 40_000), (2, 55_000), (3, 75_000))
        ],
        (
            "payments-steady",
            ConsumerSpec(group_id="payments-coop", topics=payments, assignor="cooperative-sticky"),
        ),
        (
            "payments-leaver",
            ConsumerSpec(
                group_id="payments-coop",
                topics=payments,
                assignor="cooperative-sticky",
                behaviour=Behaviour.GRACEFUL_LEAVE,
                period_ms=50_000,
            ),
        ),
        ("inventory-steady", handoff(Behaviour.STEADY)),
        ("inventory-slow-close", handoff(Behaviour.SLOW_CLOSE, 8_000)),
        ("inventory-flapping", handoff(Behaviour.FLAPPING, 40_000)),
        ("inventory-crash", handoff(Behaviour.CRASH, 65_000)),
        ("orders-consumer-steady-1", consumer(Behaviour.STEADY)),
        ("orders-consumer-steady-2", consumer(Behaviour.STEADY)),
        ("orders-consumer-flapping", consumer(Behaviour.FLAPPING, 45_000)),
        ("orders-consumer-slow", consumer(Behaviour.SLOW, 70_000, max_poll_interval_ms=15_000)),
        ("orders-consumer-crash", consumer(Behaviour.CRASH, 60_000)),
        (
            "orders-consumer-static",
            consumer(
                Behaviour.STATIC_RESTART, 40_000, group_instance_id="orders-consumer-static-1"
            ),
        ),
        (
            "orders-consumer-slow-revoke",
            consumer(Behaviour.SLOW_REVOKE, max_poll_interval_ms=15_000),
        ),
    ]


async def run_demo(
    runtime: RuntimeAPI, simulation: Simulation, *, respawn_after_s: float = 15
) -> None:
    """Create the demo topics (if absent), start the consumers, and replace any that crashed or
    left after `respawn_after_s`, forever."""
    for name, (partitions, rate) in TOPICS.items():
        if runtime.topics.get(name) is None:
            await runtime.create_topic(name, partitions, rate)
    specs = demo_specs()
    for name, spec in specs:
        simulation.spawn(spec, name)
    logger.info("demo: %d simulated consumers in %d groups", len(specs), len(GROUPS))
    while True:
        await asyncio.sleep(respawn_after_s)
        for name, spec in specs:
            consumer = simulation.consumers.get(name)
            if consumer is not None and consumer.done:
                simulation.spawn(spec, name)
