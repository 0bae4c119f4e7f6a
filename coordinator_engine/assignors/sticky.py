"""The ``sticky`` assignor, and the sticky logic it shares with ``cooperative-sticky``.

Follows Kafka's ``org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor`` (the
common algorithm) and ``org.apache.kafka.clients.consumer.StickyAssignor`` (the eager protocol),
without the rack-aware passes, which need replica placement this engine does not have.

Theory of operation
===================

Two goals, the first taking precedence:

1. **Balance.** When every member subscribes to the same topics, member partition counts differ
   by at most one. Otherwise the assignment is as balanced as the subscriptions allow: no member
   holds two or more partitions more than another member that subscribes to the topic of one of
   them (Kafka's ``isBalanced``).
2. **Stickiness.** As many partitions as possible stay with the member that owned them.

Previous owners
---------------
Each member reports the partitions it owned and the generation it owned them in (the
``owned_partitions`` and ``generation_id`` of :class:`Subscription`; an eager ``sticky`` client
carries them in its StickyAssignorUserData, which the caller decodes). Claims are cleaned first:

* partitions of topics that are not subscribed by anyone or have no metadata, or whose number is
  out of range, are ignored;
* when several members claim one partition, the member with the highest generation keeps the
  claim and the others lose it (they were stale); a generation of ``-1`` means "unknown" and loses
  to any known one;
* when two or more members claim it **in the same, highest generation**, nobody keeps it: the
  claim is invalid, and the partition is handed out fresh (the cooperative assignor treats it as
  still owned and hands it out only in the follow-up rebalance);
* a member's claims from an older generation than the group's newest are still kept when nobody
  newer claims them (Kafka's ``allSubscriptionsEqual``).

Constrained path: all members subscribe to the same topics
----------------------------------------------------------
With ``P`` partitions and ``M`` members every member gets ``min_quota = P // M`` partitions and
``P % M`` of them one more (``max_quota``). Members are visited in member id order:

1. A member keeps its owned partitions (sorted by partition number, then topic) up to its quota:
   all of them when it owns fewer than ``min_quota``; ``max_quota`` of them while fewer than
   ``P % M`` members have been granted the extra partition; ``min_quota`` otherwise. What it
   owns beyond that is given back.
2. The remaining partitions, in (topic, partition) order, are dealt round-robin to the members
   still under ``min_quota`` (in member id order, each dropping out of the deal when it reaches
   ``min_quota``), then one each to members at exactly ``min_quota`` until ``P % M`` members hold
   ``max_quota`` (the members that were already at ``min_quota`` first, in member id order, then
   the others in the order they reached it).

The deal is computed with strided slices of the unassigned list rather than one partition at a
time, so 1,000,000 partitions cost a few passes over flat lists of ints.

General path: subscriptions differ
----------------------------------
1. Each member keeps its owned partitions of topics it still subscribes to.
2. The other partitions are visited topic by topic (topics with the fewest subscribers first,
   then by name), and each goes to the subscriber holding the fewest partitions (member id breaks
   ties). Within a topic this greedy choice is a *water-fill*: the subscribers sorted by
   (count, member id) are raised level by level, so a topic costs one sort of its subscribers
   plus one step per partition.
3. Balancing: the partitions of topics with two or more subscribers are visited in the same
   order; a partition whose owner holds two or more partitions more than the least-loaded
   subscriber of its topic moves to that subscriber, or back to its owner in an older generation
   when that owner is at least two partitions lighter. Passes repeat until none moves a
   partition. Newly assigned partitions are balanced first, so owned ones move only when that is
   not enough (when a member dropped a topic, that first pass is skipped, as in Kafka).
   A topic whose heaviest owner is within one partition of its lightest subscriber is skipped
   with two C-level ``max``/``min`` calls; only topics that really move partitions keep a heap of
   their subscribers' counts.
4. When a partition moving from ``A`` to ``B`` would undo an earlier move of the same topic from
   ``B`` (through ``A``'s source), the earlier partition moves back instead (Kafka's
   ``PartitionMovements``), so that two members do not trade partitions of one topic.

Every move takes a partition from a member holding at least two more than the receiver, so the
sum of squared counts drops at each move and balancing always ends. (Kafka may substitute a
partition whose move does not improve the balance; here such a substitution is skipped and the
original partition moves instead.) For the same reason the sum over all member pairs of their
count difference drops at each move, so Kafka's last step, undoing the balancing when that sum
did not drop, never applies and is left out.

Output order: a member's list holds the partitions it kept, in the order kept, then the ones it
received, in the order received.

Worked example
==============

Members ``C0``, ``C1``, ``C2`` subscribe to ``t0``..``t3``, 2 partitions each (8 in all: quotas 2
and 3, two members get 3)::

    deal, round 1:   t0p0 -> C0   t0p1 -> C1   t1p0 -> C2
    deal, round 2:   t1p1 -> C0   t2p0 -> C1   t2p1 -> C2     (all at min_quota 2)
    extras:          t3p0 -> C0   t3p1 -> C1

    C0: [t0p0, t1p1, t3p0]   C1: [t0p1, t2p0, t3p1]   C2: [t1p0, t2p1]

``C1`` leaves. ``C0`` and ``C2`` keep everything they own (4 each is the new quota) and only
``C1``'s partitions move::

    C0: [t0p0, t3p0, t1p1, t0p1]   C2: [t1p0, t2p1, t2p0, t3p1]

``roundrobin`` would instead deal ``C0: [t0p0, t1p0, t2p0, t3p0]``, moving 4 partitions that did
not need to move.

Differing subscriptions: ``t0``, ``t1``, ``t2`` with 1, 2, 3 partitions; ``C0`` subscribes to
``t0``, ``C1`` to ``t0, t1``, ``C2`` to all three. Topics go fewest subscribers first: ``t2``
(only ``C2``), then ``t1`` (``C1`` holds 0, ``C2`` 3: both to ``C1``), then ``t0`` (to ``C0``, the
lightest). Nothing can move to improve it::

    C0: [t0p0]   C1: [t1p0, t1p1]   C2: [t2p0, t2p1, t2p2]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from heapq import heapify, heappop, heappush
from typing import ClassVar

from coordinator_engine.assignors._common import (
    GroupAssignment,
    Subscription,
    TopicPartitionPair,
    java_string_key,
    subscribed_partition_counts,
)

#: The generation of a member that does not know its generation (Kafka's ``DEFAULT_GENERATION``).
DEFAULT_GENERATION = -1


class _Group:
    """The assignment problem in integer form.

    Members are numbered in member id order (Java string order), topics in name order, and every
    partition has a global number: topic ``t``'s partition ``p`` is ``base[t] + p``. Everything
    after this class works on lists indexed by these numbers.
    """

    __slots__ = (
        "all_equal",
        "base",
        "claims",
        "generations",
        "member_ids",
        "member_topics",
        "pairs",
        "sizes",
        "topic_of",
        "total",
    )

    def __init__(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> None:
        self.member_ids = sorted(subscriptions, key=java_string_key)
        counts = subscribed_partition_counts(partitions_per_topic, subscriptions)
        topics = list(counts)
        self.sizes = list(counts.values())
        self.base: list[int] = []
        self.topic_of: list[int] = []
        self.pairs: list[TopicPartitionPair] = []
        for index, (topic, size) in enumerate(counts.items()):
            self.base.append(len(self.pairs))
            self.topic_of.extend([index] * size)
            self.pairs.extend([(topic, p) for p in range(size)])
        self.total = len(self.pairs)
        topic_index = {topic: index for index, topic in enumerate(topics)}
        subs = [subscriptions[m] for m in self.member_ids]
        self.generations = [s.generation_id for s in subs]
        # Members of one group usually share a handful of subscriptions: build each set once.
        known: dict[tuple[str, ...], tuple[frozenset[str], frozenset[int]]] = {}
        raw_topics: list[frozenset[str]] = []
        self.member_topics: list[frozenset[int]] = []
        for s in subs:
            key = tuple(s.topics)
            sets = known.get(key)
            if sets is None:
                raw = frozenset(key)
                sets = known[key] = (
                    raw,
                    frozenset(topic_index[t] for t in raw if t in topic_index),
                )
            raw_topics.append(sets[0])
            self.member_topics.append(sets[1])
        # Kafka compares the raw subscriptions, topics without metadata included.
        self.all_equal = all(t == raw_topics[0] for t in raw_topics)
        base_of = {topic: self.base[index] for index, topic in enumerate(topics)}
        self.claims = [self._claims(s.owned_partitions, base_of, counts) for s in subs]

    @staticmethod
    def _claims(
        owned: Iterable[TopicPartitionPair], base_of: Mapping[str, int], counts: Mapping[str, int]
    ) -> list[int]:
        """A member's owned partitions as global numbers, unknown ones dropped, duplicates once."""
        numbers = [
            base_of[topic] + partition
            for topic, partition in owned
            if topic in base_of and 0 <= partition < counts[topic]
        ]
        return list(dict.fromkeys(numbers)) if numbers else numbers

    def resolve_ownership(self) -> tuple[list[list[int]], set[int]]:
        """Each member's valid owned partitions, and the partitions claimed in a tie.

        The highest generation keeps a claimed partition; a tie at the highest generation
        invalidates it for everyone.
        """
        member_count = len(self.member_ids)
        if not any(self.claims):
            return [[] for _ in range(member_count)], set()
        best = [-1] * self.total  # the winning member; -2 while tied
        best_generation = [0] * self.total
        tied: list[int] = []
        for member, claims in enumerate(self.claims):
            generation = self.generations[member]
            for g in claims:
                holder = best[g]
                if holder == -1 or generation > best_generation[g]:
                    best[g] = member
                    best_generation[g] = generation
                elif generation == best_generation[g]:
                    best[g] = -2
                    tied.append(g)
        owned = [
            [g for g in claims if best[g] == member] for member, claims in enumerate(self.claims)
        ]
        return owned, {g for g in tied if best[g] == -2}

    def to_assignment(
        self, lists: Sequence[Sequence[int]], transfers: Mapping[int, int]
    ) -> GroupAssignment:
        """Member lists of global numbers as ``{member_id: [(topic, partition), ...]}``.

        ``transfers`` (partition -> receiving member) are left out: the cooperative protocol
        hands them out only after their owner has revoked them.
        """
        pairs = self.pairs
        result: GroupAssignment = {}
        for member, member_id in enumerate(self.member_ids):
            numbers = lists[member]
            if transfers:
                numbers = [g for g in numbers if transfers.get(g) != member]
            result[member_id] = [pairs[g] for g in numbers]
        return result


def _constrained(
    group: _Group, owned: list[list[int]], multi_claimed: set[int]
) -> tuple[list[list[int]], dict[int, int]]:
    """Kafka's ``ConstrainedAssignmentBuilder``: quotas, then a round-robin deal of the rest.

    Returns each member's partitions and the partitions transferring ownership (given back by a
    member, or claimed in a tie, and now given to another member).
    """
    member_count = len(group.member_ids)
    total = group.total
    min_quota, expected_over_min = divmod(total, member_count)
    max_quota = min_quota + (1 if expected_over_min else 0)
    over_min = 0
    topic_count = len(group.sizes)
    base, topic_of = group.base, group.topic_of

    lists: list[list[int]] = []
    under_min: list[int] = []  # members below min_quota, in member id order
    at_min: list[int] = []  # members at min_quota that may still take one more
    given_back: dict[int, int] = {}  # partition -> the member that owned but could not keep it
    taken = bytearray(total)
    for member in range(member_count):
        partitions = owned[member]
        if len(partitions) > 1:
            # Kafka keeps the lowest partition numbers first (sorted by partition, then topic).
            partitions = sorted(
                partitions, key=lambda g: (g - base[topic_of[g]]) * topic_count + topic_of[g]
            )
        if len(partitions) < min_quota:
            keep = partitions
            under_min.append(member)
        elif len(partitions) >= max_quota and over_min < expected_over_min:
            over_min += 1
            if over_min == expected_over_min:
                at_min.clear()
            keep = partitions[:max_quota]
        else:
            keep = partitions[:min_quota]
            if over_min < expected_over_min:
                at_min.append(member)
        for g in partitions[len(keep) :]:
            given_back[g] = member
        for g in keep:
            taken[g] = 1
        lists.append(list(keep))

    unassigned = [g for g in range(total) if not taken[g]]
    new_start = [len(lst) for lst in lists]

    # The deal to members under min_quota: round r visits, in member id order, the members that
    # still need more than r partitions. Rounds with the same visitors form one strided slice.
    deficit = {member: min_quota - len(lists[member]) for member in under_min}
    position = 0
    done_rounds = 0
    visitors = under_min
    for level in sorted(set(deficit.values())):
        rounds = level - done_rounds
        width = len(visitors)
        block = unassigned[position : position + rounds * width]
        if len(block) != rounds * width:
            raise AssertionError("sticky assignment bug: too few partitions for the quotas")
        for offset, member in enumerate(visitors):
            lists[member].extend(block[offset::width])
        position += rounds * width
        # Members reaching min_quota in the last round of the block join the at_min queue.
        at_min.extend(member for member in visitors if deficit[member] == level)
        visitors = [member for member in visitors if deficit[member] > level]
        done_rounds = level

    # The extras: one each to the members at min_quota, in queue order.
    rest = unassigned[position:]
    if len(rest) > len(at_min):
        raise AssertionError(
            f"sticky assignment bug: {len(rest)} partitions left for {len(at_min)} members"
        )
    for member, g in zip(at_min, rest, strict=False):
        lists[member].append(g)

    transfers: dict[int, int] = {}
    if given_back or multi_claimed:
        for member, lst in enumerate(lists):
            for g in lst[new_start[member] :]:
                previous = given_back.get(g)
                if (previous is not None and previous != member) or g in multi_claimed:
                    transfers[g] = member
    return lists, transfers


class _GeneralBuilder:
    """Kafka's ``GeneralAssignmentBuilder`` over flat lists of ints.

    State: ``owner[g]`` is the member holding partition ``g``; ``count[m]`` how many partitions
    member ``m`` holds; ``held[m]`` its partitions as an insertion-ordered dict, which keeps the
    order of Kafka's lists (kept ones first, then each one in the order it arrived).
    """

    def __init__(self, group: _Group, owned: list[list[int]]) -> None:
        self.group = group
        member_count = len(group.member_ids)
        topic_count = len(group.sizes)
        self.member_count = member_count
        self.subscribers: list[list[int]] = [[] for _ in range(topic_count)]
        for member, topics in enumerate(group.member_topics):
            for t in topics:
                self.subscribers[t].append(member)
        self.owner = owner = [-1] * group.total
        self.count = [0] * member_count
        self.held: list[dict[int, None]] = []
        self.revocation_required = False
        topic_of = group.topic_of
        for member, partitions in enumerate(owned):
            topics = group.member_topics[member]
            kept = [g for g in partitions if topic_of[g] in topics]
            if len(kept) < len(partitions):
                # The member dropped a topic it owned: it must revoke (Kafka then skips the
                # new-partitions-first balancing pass).
                self.revocation_required = True
            for g in kept:
                owner[g] = member
            self.count[member] = len(kept)
            self.held.append(dict.fromkeys(kept))
        self.previous_owner = self._previous_owners()
        # Topics with the fewest potential consumers first, then by name (Kafka's TopicComparator).
        self.topic_order = sorted(range(topic_count), key=lambda t: (len(self.subscribers[t]), t))
        # Set by build(): the members balancing may still move partitions to or from, and per
        # topic those of its subscribers.
        self.participating: list[bool] = []
        self.receivers: list[list[int]] = []
        # This balance phase's partition movements, for Kafka's PartitionMovements rule:
        # partition -> its (source, destination) pair, and per topic each pair's partitions.
        self.moved: dict[int, int] = {}
        self.topic_moves: dict[int, dict[int, list[int]]] = {}

    def _previous_owners(self) -> dict[int, int]:
        """Partition -> its owner in the newest generation older than the group's newest.

        Kafka's ``prevAssignment``: claims of members whose generation is below the maximum
        (ties go to the first member in member id order).
        """
        generations = self.group.generations
        newest = max([DEFAULT_GENERATION, *generations])
        previous: dict[int, int] = {}
        previous_generation: dict[int, int] = {}
        for member, claims in enumerate(self.group.claims):
            generation = generations[member]
            if generation >= newest:
                continue
            for g in claims:
                known = previous_generation.get(g)
                if known is None or generation > known:
                    previous_generation[g] = generation
                    previous[g] = member
        return previous

    def build(self) -> list[list[int]]:
        group = self.group
        owner, subscribers = self.owner, self.subscribers
        unassigned_by_topic: list[tuple[int, list[int]]] = []
        for t in self.topic_order:
            start = group.base[t]
            free = [g for g in range(start, start + group.sizes[t]) if owner[g] < 0]
            unassigned_by_topic.append((t, free))
            if free and subscribers[t]:
                self._water_fill(free, subscribers[t])

        # Narrow the balancing to what can move: topics with two or more potential consumers,
        # and members that are not already holding everything they could ever hold.
        sizes = group.sizes
        total_of: dict[frozenset[int], int] = {}  # members share their topic sets
        for topics in group.member_topics:
            if topics not in total_of:
                total_of[topics] = sum(sizes[t] for t in topics)
        max_size = [total_of[topics] for topics in group.member_topics]
        count = self.count
        participating = [
            count[m] < max_size[m]
            or any(len(subscribers[t]) >= 2 and sizes[t] > 0 for t in group.member_topics[m])
            for m in range(self.member_count)
        ]
        self.participating = participating
        self.receivers = [[m for m in subs if participating[m]] for subs in subscribers]
        movable = {t for t in range(len(sizes)) if len(subscribers[t]) >= 2}
        new_partitions = [(t, free) for t, free in unassigned_by_topic if t in movable]
        all_partitions: list[tuple[int, Sequence[int]]] = [
            (t, range(group.base[t], group.base[t] + sizes[t]))
            for t in self.topic_order
            if t in movable
        ]

        if not self.revocation_required:
            self._perform_reassignments(new_partitions)
        self._perform_reassignments(all_partitions)
        return self._member_lists()

    def _water_fill(self, partitions: list[int], subscribers: list[int]) -> None:
        """Give each partition, in order, to the subscriber with the fewest (then lowest id).

        Subscribers are raised level by level: at count ``L`` every subscriber holding ``L``
        takes one partition in member order, which is what picking the minimum one partition at
        a time does.
        """
        count, member_count, owner, held = self.count, self.member_count, self.owner, self.held
        keys = sorted(count[m] * member_count + m for m in subscribers)
        level = keys[0] // member_count
        active: list[int] = []
        next_key = 0
        position = 0
        remaining = len(partitions)
        while remaining:
            joining = []
            while next_key < len(keys) and keys[next_key] // member_count <= level:
                joining.append(keys[next_key] % member_count)
                next_key += 1
            if joining:
                active = sorted(active + joining) if active else joining
            take = min(len(active), remaining)
            for member, g in zip(
                active[:take], partitions[position : position + take], strict=True
            ):
                owner[g] = member
                held[member][g] = None
                count[member] += 1
            position += take
            remaining -= take
            level += 1

    def _perform_reassignments(
        self, partitions_by_topic: Sequence[tuple[int, Sequence[int]]]
    ) -> None:
        """Passes over the partitions until one moves none (Kafka's ``performReassignments``)."""
        owner, count, receivers = self.owner, self.count, self.receivers
        while True:
            modified = False
            for t, partitions in partitions_by_topic:
                if not partitions:
                    continue
                lightest = min(map(count.__getitem__, receivers[t]))
                heaviest = max(map(count.__getitem__, map(owner.__getitem__, partitions)))
                if heaviest > lightest + 1 and self._rebalance_topic(t, partitions):
                    modified = True
            if not modified:
                return

    def _rebalance_topic(self, t: int, partitions: Sequence[int]) -> bool:
        """One pass over a topic's partitions, moving each one its owner can spare.

        Hot loop: everything is bound to locals and the movement bookkeeping is inlined.
        Movement records (Kafka's ``PartitionMovements``) key a (source, destination) member pair
        as ``source * member_count + destination``; each pair keeps a lazy min-heap of the
        partitions whose current record it is, so the partition sent home is the lowest one.
        """
        owner, count, held = self.owner, self.count, self.held
        member_count = self.member_count
        previous_owner = self.previous_owner
        participating = self.participating
        member_topics = self.group.member_topics
        moved = self.moved
        topic_moves = self.topic_moves.setdefault(t, {})
        heap = [count[m] * member_count + m for m in self.receivers[t]]
        heapify(heap)
        modified = False
        for g in partitions:
            current = owner[g]
            while True:  # drop heap entries whose count is stale
                key = heap[0]
                lightest = key % member_count
                if count[lightest] * member_count + lightest == key:
                    break
                heappop(heap)
            if count[current] <= count[lightest] + 1:
                continue
            receiver = lightest
            previous = previous_owner.get(g)
            if (
                previous is not None
                and count[current] > count[previous] + 1
                and participating[previous]
                and t in member_topics[previous]
            ):
                receiver = previous
            if topic_moves:
                # If a partition of this topic already travelled from the receiver to where g
                # came from, send that one home instead of chaining g onward.
                earlier = moved.get(g)
                source = current if earlier is None else earlier // member_count
                reverse_key = receiver * member_count + source
                reverse = topic_moves.get(reverse_key)
                if reverse:
                    while reverse and moved.get(reverse[0]) != reverse_key:
                        heappop(reverse)
                    if reverse and count[owner[reverse[0]]] > count[receiver] + 1:
                        g = reverse[0]
            giver = owner[g]
            earlier = moved.pop(g, None)
            origin = giver if earlier is None else earlier // member_count
            if origin != receiver:  # a partition going home leaves no record
                pair = origin * member_count + receiver
                moved[g] = pair
                pending = topic_moves.get(pair)
                if pending is None:
                    topic_moves[pair] = [g]
                else:
                    heappush(pending, g)
            owner[g] = receiver
            del held[giver][g]
            held[receiver][g] = None
            count[giver] -= 1
            count[receiver] += 1
            heappush(heap, count[giver] * member_count + giver)
            heappush(heap, count[receiver] * member_count + receiver)
            modified = True
        return modified

    def _member_lists(self) -> list[list[int]]:
        return [list(partitions) for partitions in self.held]


def _general(
    group: _Group, owned: list[list[int]], cooperative: bool
) -> tuple[list[list[int]], dict[int, int]]:
    builder = _GeneralBuilder(group, owned)
    lists = builder.build()
    if not cooperative:
        return lists, {}
    # Kafka's CooperativeStickyAssignor.computePartitionsTransferringOwnership: a partition some
    # member reported owning and lost, now given to a member that did not report owning it.
    owner = builder.owner
    revoked = {g for m, claims in enumerate(group.claims) for g in claims if owner[g] != m}
    if not revoked:
        return lists, {}
    reported = {(g, m) for m, claims in enumerate(group.claims) for g in claims if g in revoked}
    return lists, {g: owner[g] for g in revoked if (g, owner[g]) not in reported}


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    *,
    cooperative: bool,
) -> GroupAssignment:
    """The shared sticky algorithm (Kafka's ``AbstractStickyAssignor.assignPartitions``).

    With ``cooperative``, partitions that change owner in this round are left out of the new
    owner's list (Kafka's ``CooperativeStickyAssignor.adjustAssignment``).
    """
    if not subscriptions:
        return {}
    group = _Group(partitions_per_topic, subscriptions)
    owned, multi_claimed = group.resolve_ownership()
    if group.all_equal:
        lists, transfers = _constrained(group, owned, multi_claimed)
    else:
        lists, transfers = _general(group, owned, cooperative)
    result = group.to_assignment(lists, transfers if cooperative else {})
    return {member_id: result[member_id] for member_id in subscriptions}


class StickyAssignor:
    """Kafka's ``StickyAssignor`` (eager protocol): balanced first, then sticky.

    The eager protocol revokes everything before rejoining, so the previous assignment comes
    from the member's StickyAssignorUserData (see
    :func:`coordinator_engine.consumer_protocol.decode_sticky_assignor_user_data`), which the
    caller puts in ``owned_partitions`` and ``generation_id``.
    """

    name: ClassVar[str] = "sticky"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> GroupAssignment:
        return sticky_assign(partitions_per_topic, subscriptions, cooperative=False)
