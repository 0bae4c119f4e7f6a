"""The ``uniform`` server-side assignor: balanced first, then sticky (KIP-848's default).

Follows Kafka's ``org.apache.kafka.coordinator.group.assignor.UniformAssignor``, which picks one
of two builders by the group's subscription type: ``UniformHomogeneousAssignmentBuilder`` (first
named ``OptimizedUniformAssignmentBuilder``) when every member subscribes to the same topics,
``UniformHeterogeneousAssignmentBuilder`` otherwise. Both put balance before stickiness. Racks are
not read: Kafka took rack awareness out of its server-side assignors (KAFKA-16694).

Orders
======

Members are numbered in member-id order and topics are taken in name order (both as Java compares
strings); a member's partitions are read topic by topic, each in ascending order. Kafka iterates
hash maps at these places, so where its tests show one of several balanced answers this module
may show another, equally balanced and equally sticky (``tests/engine/test_server_assignors.py``
says where).

Homogeneous groups
==================

With ``P`` partitions over ``M`` members every member gets ``P // M`` (its quota), and
``P % M`` of them one more. Each member first keeps what it had, up to its quota; the rest of
the partitions go to the members below their quota, in member order, each taking the next run
of the unassigned partitions (ascending by topic, then partition), so fresh partitions arrive as
contiguous ranges.

Kafka gives the extra partitions to the first members it iterates; this module gives them first
to the members that already hold more than ``P // M`` valid partitions, so no member gives up a
partition only for another to get one more: the number of partitions moved is the least possible
(every member keeps ``min(held, quota)`` of the partitions it held, and the quotas are chosen
to make that sum largest).

Worked example: ``t0`` with 4 partitions, ``t1`` with 2, members ``A`` (had ``t0: 0 1 2``),
``B`` (had ``t0: 3, t1: 0 1``) and the new ``C``. Quota 2 each. ``A`` keeps ``t0: 0 1``, ``B``
keeps ``t0: 3, t1: 0``; ``t0-2`` and ``t1-1`` are free, and ``C`` gets both.

Heterogeneous groups
====================

Kafka's three phases, with its orders made explicit:

1. **Keep.** Every member keeps all its partitions of topics it still subscribes to (no quota
   here: balance is restored in phase 3).
2. **Hand out.** Topics are taken by partitions per subscriber (descending), then subscriber
   count (ascending), then name; each unassigned partition of a topic goes to its least loaded
   subscriber (fewest partitions in total, then member order), spreading a topic's partitions
   over the subscribers that tie.
3. **Balance.** Topic by topic in the same order, partitions move from the most loaded
   subscribers of the topic (each giving its highest-numbered partition of that topic) to the
   least loaded, until the subscribers' totals differ by at most one or the most loaded have
   nothing of the topic to give. The topics are gone round again until a whole round moves
   nothing, at most 16 rounds. With overlapping subscriptions the result is close to balanced
   but may not be the best possible, as in Kafka.

Cost: phase 1 and 2 are linear in the partitions (plus a sort of each topic's subscribers);
each balancing pass sorts one topic's subscribers and partitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from coordinator_engine.assignors._common import java_string_key
from coordinator_engine.server_assignors._common import (
    GroupTargetAssignment,
    MemberSpec,
    SubscriptionType,
    assignable_topics,
    effective_subscriptions,
    frozen,
    subscribers_by_topic,
    subscription_type,
)

#: The most rounds of the heterogeneous balancing phase (Kafka's ``MAX_ITERATION_COUNT``).
MAX_BALANCE_ROUNDS = 16

#: The assignor's name, as members send it in ConsumerGroupHeartbeat's ServerAssignor.
NAME = "uniform"


def assign_uniform(
    members: Mapping[str, MemberSpec],
    partitions: Mapping[str, int],
    *,
    builder: SubscriptionType | None = None,
) -> GroupTargetAssignment:
    """The ``uniform`` target assignment of ``members`` over the topics of ``partitions``.

    ``builder`` picks the builder as Kafka's ``GroupSpec.subscriptionType()`` does; ``None``
    (what :func:`..assign` passes) derives it from the subscriptions. The heterogeneous builder
    accepts any group; ``HOMOGENEOUS`` for members that subscribe to different topics raises
    ``ValueError``.
    """
    counts = assignable_topics(members, partitions)
    subscriptions = effective_subscriptions(members, counts)
    actual = subscription_type(subscriptions)
    if builder is None:
        builder = actual
    elif builder is SubscriptionType.HOMOGENEOUS and actual is not builder:
        raise ValueError("the homogeneous builder needs members that subscribe to the same topics")
    if builder is SubscriptionType.HOMOGENEOUS:
        return _HomogeneousBuilder(members, subscriptions, counts).build()
    return _HeterogeneousBuilder(members, subscriptions, counts).build()


class _Builder:
    """What both builders start from: the members, numbered in member-id order, their
    assignable subscriptions and the partition counts of the topics they subscribe to."""

    def __init__(
        self,
        members: Mapping[str, MemberSpec],
        subscriptions: Mapping[str, frozenset[str]],
        counts: Mapping[str, int],
    ) -> None:
        self.members = members
        self.member_ids = sorted(members, key=java_string_key)
        self.subscriptions = [subscriptions[m] for m in self.member_ids]
        self.counts = counts


class _HomogeneousBuilder(_Builder):
    """Kafka's ``UniformHomogeneousAssignmentBuilder`` (see the module's docstring)."""

    def __init__(
        self,
        members: Mapping[str, MemberSpec],
        subscriptions: Mapping[str, frozenset[str]],
        counts: Mapping[str, int],
    ) -> None:
        super().__init__(members, subscriptions, counts)
        topics = self.subscriptions[0] if self.subscriptions else frozenset()
        self.topics = sorted(topics, key=java_string_key)
        self.rank = {topic: index for index, topic in enumerate(self.topics)}

    def build(self) -> GroupTargetAssignment:
        if not self.topics:
            return {member_id: {} for member_id in self.member_ids}
        counts = self.counts
        taken = {topic: bytearray(counts[topic]) for topic in self.topics}

        # What each member can keep: its partitions of subscribed topics that still exist and
        # that no member before it claims too, in (topic, partition) order.
        kept: list[list[tuple[str, list[int]]]] = []
        untouched: list[bool] = []  # the member's assignment is exactly what it keeps
        sizes: list[int] = []
        for member_id in self.member_ids:
            runs, size, whole = self._keepable(self.members[member_id].assignment, taken)
            kept.append(runs)
            untouched.append(whole)
            sizes.append(size)

        total = sum(counts[topic] for topic in self.topics)
        floor, extra = divmod(total, len(self.member_ids))
        quotas = [floor] * len(self.member_ids)
        # The extra partitions go first to members holding more than the floor: each of those
        # keeps one partition more than it would otherwise, which moves no partition.
        for index, size in enumerate(sizes):
            if extra == 0:
                break
            if size > floor:
                quotas[index] += 1
                extra -= 1
        for index in range(len(quotas)):
            if extra == 0:
                break
            if quotas[index] == floor:
                quotas[index] += 1
                extra -= 1

        # Revoke past the quota: the last topics' highest partitions go back.
        for index, quota in enumerate(quotas):
            surplus = sizes[index] - quota
            if surplus <= 0:
                continue
            untouched[index] = False
            runs = kept[index]
            while surplus > 0:
                topic, parts = runs[-1]
                drop = min(surplus, len(parts))
                flags = taken[topic]
                for partition in parts[len(parts) - drop :]:
                    flags[partition] = 0
                del parts[len(parts) - drop :]
                if not parts:
                    runs.pop()
                surplus -= drop
            sizes[index] = quota

        # Hand the rest out in runs, member by member.
        free = _Unassigned(self.topics, taken)
        result: GroupTargetAssignment = {}
        for index, member_id in enumerate(self.member_ids):
            wanted = quotas[index] - sizes[index]
            if wanted <= 0 and untouched[index]:
                result[member_id] = _as_is(self.members[member_id].assignment)
                continue
            assignment: dict[str, set[int] | frozenset[int]] = {
                topic: set(parts) for topic, parts in kept[index]
            }
            if wanted > 0:
                for topic, parts in free.take(wanted):
                    current = assignment.get(topic)
                    if current is None:
                        assignment[topic] = set(parts)
                    else:
                        assert isinstance(current, set)
                        current.update(parts)
            result[member_id] = frozen(assignment)
        if free.left():
            raise AssertionError("uniform: partitions were left unassigned")
        return result

    def _keepable(
        self, assignment: Mapping[str, frozenset[int]], taken: Mapping[str, bytearray]
    ) -> tuple[list[tuple[str, list[int]]], int, bool]:
        rank = self.rank
        topics = sorted((t for t in assignment if t in rank), key=rank.__getitem__)
        whole = len(topics) == len(assignment)
        runs: list[tuple[str, list[int]]] = []
        size = 0
        for topic in topics:
            flags = taken[topic]
            count = len(flags)
            parts = []
            for partition in sorted(assignment[topic]):
                if 0 <= partition < count and not flags[partition]:
                    flags[partition] = 1
                    parts.append(partition)
            if len(parts) != len(assignment[topic]):
                whole = False
            if parts:
                runs.append((topic, parts))
                size += len(parts)
        return runs, size, whole


def _as_is(assignment: Mapping[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    """An assignment kept whole: the caller's frozensets, without copying them."""
    return {topic: parts for topic, parts in assignment.items() if parts}


class _Unassigned:
    """The partitions nobody keeps, handed out in (topic, partition) order."""

    def __init__(self, topics: list[str], taken: Mapping[str, bytearray]) -> None:
        self.topics = topics
        self.taken = taken
        self.topic_index = 0
        self.position = 0  # the next partition of the current topic to look at

    def take(self, wanted: int) -> list[tuple[str, list[int]]]:
        runs: list[tuple[str, list[int]]] = []
        while wanted > 0 and self.topic_index < len(self.topics):
            topic = self.topics[self.topic_index]
            flags = self.taken[topic]
            parts: list[int] = []
            position = self.position
            while wanted > 0:
                position = flags.find(0, position)
                if position < 0:
                    break
                flags[position] = 1
                parts.append(position)
                position += 1
                wanted -= 1
            if parts:
                runs.append((topic, parts))
            if wanted > 0:
                self.topic_index += 1
                self.position = 0
            else:
                self.position = position
        return runs

    def left(self) -> bool:
        return any(0 in self.taken[t] for t in self.topics[self.topic_index :])


class _HeterogeneousBuilder(_Builder):
    """Kafka's ``UniformHeterogeneousAssignmentBuilder`` (see the module's docstring).

    Members are numbered in member-id order; ``owners[topic][p]`` is the number of the member
    that partition ``p`` goes to (-1: nobody yet) and ``sizes[m]`` the partitions member ``m``
    holds in total. The phases move partitions in ``owners`` only and note whose share of a
    topic changed (``changed``); those shares alone are rebuilt at the end, the others are the
    caller's frozensets, kept as they are.
    """

    def __init__(
        self,
        members: Mapping[str, MemberSpec],
        subscriptions: Mapping[str, frozenset[str]],
        counts: Mapping[str, int],
    ) -> None:
        super().__init__(members, subscriptions, counts)
        self.subscribers = subscribers_by_topic(self.subscriptions)
        self.owners = {topic: [-1] * count for topic, count in counts.items()}
        self.sizes = [0] * len(self.member_ids)
        self.targets: list[dict[str, frozenset[int]]] = []
        self.changed: dict[str, set[int]] = {topic: set() for topic in counts}

    def build(self) -> GroupTargetAssignment:
        self._keep()
        self._hand_out()
        self._balance()
        targets = self.targets
        for topic, members in self.changed.items():
            if not members:
                continue
            shares: dict[int, list[int]] = {member: [] for member in members}
            for partition, owner in enumerate(self.owners[topic]):
                share = shares.get(owner)
                if share is not None:
                    share.append(partition)
            for member, share in shares.items():
                if share:
                    targets[member][topic] = frozenset(share)
                else:
                    targets[member].pop(topic, None)
        return dict(zip(self.member_ids, targets, strict=True))

    def _topic_order(self, topics: list[str]) -> list[str]:
        """Partitions per subscriber (descending), subscriber count, then name."""

        def key(topic: str) -> tuple[Fraction, int, bytes]:
            subscribers = len(self.subscribers[topic])
            return (Fraction(-self.counts[topic], subscribers), subscribers, java_string_key(topic))

        return sorted(topics, key=key)

    def _keep(self) -> None:
        owners, sizes = self.owners, self.sizes
        for index, member_id in enumerate(self.member_ids):
            subscribed = self.subscriptions[index]
            target: dict[str, frozenset[int]] = {}
            for topic, parts in self.members[member_id].assignment.items():
                if topic not in subscribed or not parts:
                    continue
                topic_owners = owners[topic]
                count = len(topic_owners)
                if all(0 <= p < count and topic_owners[p] == -1 for p in parts):
                    target[topic] = parts
                    for partition in parts:
                        topic_owners[partition] = index
                    sizes[index] += len(parts)
                    continue
                mine = []
                for partition in sorted(parts):
                    if 0 <= partition < count and topic_owners[partition] == -1:
                        topic_owners[partition] = index
                        mine.append(partition)
                if mine:
                    target[topic] = frozenset(mine)
                    sizes[index] += len(mine)
            self.targets.append(target)

    def _hand_out(self) -> None:
        owners, sizes = self.owners, self.sizes
        unassigned = {
            topic: [p for p, owner in enumerate(topic_owners) if owner == -1]
            for topic, topic_owners in owners.items()
        }
        balancer = _Balancer(sizes)
        for topic in self._topic_order([t for t, parts in unassigned.items() if parts]):
            balancer.start(self.subscribers[topic])
            topic_owners, changed = owners[topic], self.changed[topic]
            for partition in unassigned[topic]:
                member = balancer.least_loaded()
                topic_owners[partition] = member
                sizes[member] += 1
                changed.add(member)

    def _balance(self) -> None:
        topics = self._topic_order([t for t, s in self.subscribers.items() if len(s) >= 2])
        if not topics:
            return
        balancer = _Balancer(self.sizes)
        last_moved = -1  # the last topic that moved a partition
        for _ in range(MAX_BALANCE_ROUNDS):
            for index, topic in enumerate(topics):
                if index == last_moved:
                    return  # a whole round without a move
                if self._balance_topic(topic, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def _balance_topic(self, topic: str, balancer: _Balancer) -> int:
        """Move partitions of ``topic`` from its most loaded subscribers to its least loaded."""
        if balancer.start(self.subscribers[topic]) <= 1:
            return 0
        topic_owners = self.owners[topic]
        # The topic's partitions grouped by owner, so a member's last one is found at once.
        order = sorted(range(len(topic_owners)), key=topic_owners.__getitem__)
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for position, partition in enumerate(order):
            owner = topic_owners[partition]
            start.setdefault(owner, position)
            end[owner] = position + 1
        moved = 0
        while not balancer.balanced():
            giver = balancer.most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_most_loaded()
                giver = balancer.most_loaded()
            if giver == -1:
                break  # nobody loaded has a partition of this topic left to give
            end[giver] -= 1
            partition = order[end[giver]]
            taker = balancer.least_loaded()
            if balancer.balanced():
                break
            topic_owners[partition] = taker
            self.sizes[giver] -= 1
            self.sizes[taker] += 1
            self.changed[topic].update((giver, taker))
            moved += 1
        return moved


class _Balancer:
    """Kafka's ``MemberAssignmentBalancer``: the least and the most loaded of a set of members.

    The members are sorted by load (``sizes``, then number). Two ranges grow from the ends: the
    least loaded range ``[0, least_end)`` holds the members at the lowest level, and
    :meth:`least_loaded` cycles through it, each pick counting as one partition more; when every
    member of the range has had one, the level rises by one and the members above that now
    match it join the range. The most loaded range ``[most_start, most_end)`` does the same
    downwards for :meth:`most_loaded`, each pick counting as one partition less; a member with
    nothing left to give is swapped out of it (:meth:`exclude_most_loaded`). The members are
    balanced when the two levels differ by at most one.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = 0
        self.least_level = 0
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_level = 0
        self.next_most = -1

    def start(self, members: list[int]) -> int:
        """Take ``members`` (in ascending number) and return the spread of their loads."""
        sizes = self.sizes
        self.members = ordered = sorted(
            members, key=sizes.__getitem__
        )  # stable: number breaks ties
        count = len(ordered)
        self.least_end = 0
        self.least_level = sizes[ordered[0]] - 1
        self.next_least = 0
        self.most_start = count
        self.most_end = count
        self.most_level = sizes[ordered[-1]] + 1
        self.next_most = count - 1
        return sizes[ordered[-1]] - sizes[ordered[0]]

    def least_loaded(self) -> int:
        """The member to give the next partition to."""
        members, sizes = self.members, self.sizes
        if self.next_least >= self.least_end:
            self.least_level += 1
            while (
                self.least_end < len(members) and sizes[members[self.least_end]] == self.least_level
            ):
                self.least_end += 1
            self.next_least = 0
        member = members[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        """The member to take the next partition from, -1 when none is left."""
        members, sizes = self.members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Every member of the range was excluded: restart from the next one down.
                self.most_level = sizes[members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member :meth:`most_loaded` returned last from the most loaded range."""
        members = self.members
        position = self.next_most + 1
        members[position], members[self.most_end - 1] = (
            members[self.most_end - 1],
            members[position],
        )
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_level - self.least_level <= 1
