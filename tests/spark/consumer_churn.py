"""Random churn in consumer groups (KIP-848) through the real engine: members join (some
static), leave, crash (their session runs out), stall (they never revoke, so their rebalance
timeout fences them), restart as static members under a new member id, commit; topics grow;
the clock moves in steps of 0 to 1,000 ms, so that several engine calls often share a
millisecond. Deterministic for a seed. The events, as a history, are what the report and the
benchmark's peers must read alike."""

from __future__ import annotations

import random

from coordinator_engine import (
    ConsumerGroupHeartbeatRequest,
    CoordinatorConfig,
    GroupCoordinator,
    MemoryLog,
    OffsetCommitRequest,
    OwnedTopicPartitions,
    PartitionOffset,
)
from coordinator_engine.events import GroupEvent

from .scenarios import T0


class _Member:
    def __init__(self, group: str, member_id: str, instance: str | None, topics: tuple[str, ...]):
        self.group, self.member_id, self.instance, self.topics = group, member_id, instance, topics
        self.epoch = 0
        self.owned: dict[str, tuple[int, ...]] = {}
        self.joined = False
        self.alive = True
        self.stalled = False


class _Churn:
    def __init__(self, seed: int, groups: int) -> None:
        self.rng = random.Random(seed)
        self.now = T0
        self.events: list[GroupEvent] = []
        self.coord = GroupCoordinator(CoordinatorConfig(), MemoryLog(), self.now)
        self.coord.add_listener(self.events.append)
        self.topics = {f"t{i}": self.rng.randint(2, 6) for i in range(3)}
        for topic, count in self.topics.items():
            self.coord.set_topic_partitions(topic, count, self.now)
        self.groups: dict[str, list[_Member]] = {f"g{i}": [] for i in range(groups)}
        self.serial = 0

    def heartbeat(self, member: _Member, epoch: int | None = None) -> None:
        fields: dict[str, object] = {}
        if member.joined:
            fields["topic_partitions"] = tuple(
                OwnedTopicPartitions(topic=t, partitions=p) for t, p in sorted(member.owned.items())
            )
        else:
            fields.update(
                rebalance_timeout_ms=3_000,
                subscribed_topic_names=member.topics,
                topic_partitions=(),
            )
        request = ConsumerGroupHeartbeatRequest(
            group_id=member.group,
            member_id=member.member_id,
            member_epoch=member.epoch if epoch is None else epoch,
            instance_id=member.instance,
            **fields,  # type: ignore[arg-type]
        )
        response = self.coord.handle(request, self.now).response
        assert response is not None
        if response.error_code != 0:  # fenced meanwhile: the process is gone
            member.alive = False
            return
        member.joined = True
        member.epoch = response.member_epoch
        if response.assignment is None:
            return
        given = {t: p for t, p in response.assignment.items() if p}
        if member.stalled:  # it never gives anything up
            for topic, partitions in member.owned.items():
                given[topic] = tuple(sorted({*partitions, *given.get(topic, ())}))
        member.owned = given

    def new_member(self, group: str, instance: str | None, topics: tuple[str, ...]) -> _Member:
        self.serial += 1
        member = _Member(group, f"m{self.serial}", instance, topics)
        self.groups[group].append(member)
        return member

    def step(self, step: int) -> None:
        rng = self.rng
        self.now += rng.choice([0, 0, 1, 50, 100, 250, 1_000])
        self.coord.advance(self.now)
        group = rng.choice(sorted(self.groups))
        alive = [m for m in self.groups[group] if m.alive]
        roll = rng.random()
        if roll < 0.08 or not alive:
            instance = f"{group}-host{self.serial % 5}" if rng.random() < 0.3 else None
            if instance is None or all(m.instance != instance for m in alive):
                topics = tuple(sorted(rng.sample(sorted(self.topics), rng.randint(1, 2))))
                self.heartbeat(self.new_member(group, instance, topics))
        elif roll < 0.11:
            member = rng.choice(alive)
            self.heartbeat(member, -1)
            member.alive = False
        elif roll < 0.13:
            rng.choice(alive).alive = False  # crashed: its session will run out
        elif roll < 0.14:
            rng.choice(alive).stalled = True
        elif roll < 0.15 and any(m.instance for m in alive):
            old = rng.choice([m for m in alive if m.instance])
            self.heartbeat(old, -2)
            old.alive = False
            new = self.new_member(group, old.instance, old.topics)
            new.owned = dict(old.owned)
            self.now += rng.choice([0, 100, 2_000])
            self.coord.advance(self.now)
            self.heartbeat(new)
        elif roll < 0.155:
            topic = rng.choice(sorted(self.topics))
            self.topics[topic] += 1
            self.coord.set_topic_partitions(topic, self.topics[topic], self.now)
        elif roll < 0.25:
            member = rng.choice(alive)
            if member.owned:
                topic = rng.choice(sorted(member.owned))
                offset = PartitionOffset(
                    topic=topic, partition=rng.choice(member.owned[topic]), offset=step
                )
                self.coord.handle(
                    OffsetCommitRequest(
                        group_id=group,
                        generation_id=member.epoch,
                        member_id=member.member_id,
                        offsets=(offset,),
                    ),
                    self.now,
                )
        else:
            for member in alive:
                if rng.random() < 0.6:
                    self.heartbeat(member)

    def settle(self) -> None:
        for _ in range(200):
            self.now += 500
            self.coord.advance(self.now)
            for members in self.groups.values():
                for member in members:
                    if member.alive:
                        self.heartbeat(member)


def consumer_churn(seed: int, groups: int, steps: int) -> list[GroupEvent]:
    """The events of ``steps`` random steps over ``groups`` consumer groups, then a settling
    period in which every live member heartbeats."""
    churn = _Churn(seed, groups)
    for step in range(steps):
        churn.step(step)
    churn.settle()
    return churn.events
