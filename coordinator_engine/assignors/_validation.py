"""Checks of a group assignment against its inputs, independent of the assignor that made it.

Used by the tests and by ``bench/assignors.py`` (no figure is taken from a broken assignment),
and usable on the assignment a group leader sends in SyncGroup.

* :func:`assignment_problems`: validity. Every member is present, a member only gets existing
  partitions of topics it subscribes to, no partition goes to two members and, unless a
  cooperative round leaves some out on purpose, every partition of a subscribed topic is assigned.
* :func:`balance_problems`: Kafka's balance criterion for the sticky assignors
  (``AbstractStickyAssignor.isBalanced``): no member holds two or more partitions more than a
  member that subscribes to the topic of one of them. With equal subscriptions this is
  ``max - min <= 1``.
* :func:`handover_problems`: the cooperative rule, no partition goes to a new owner in the round
  its current owner has to revoke it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator_engine.assignors._common import Subscription, TopicPartitionPair

_MAX_PROBLEMS = 10


def assignment_problems(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Sequence[TopicPartitionPair]],
    *,
    complete: bool = True,
) -> list[str]:
    """What is wrong with ``assignment`` (at most a few problems), ``[]`` when it is valid."""
    problems: list[str] = []
    missing_members = subscriptions.keys() - assignment.keys()
    extra_members = assignment.keys() - subscriptions.keys()
    if missing_members:
        problems.append(f"members without an assignment: {sorted(missing_members)}")
    if extra_members:
        problems.append(f"assignment for members not in the group: {sorted(extra_members)}")
    owner: dict[TopicPartitionPair, str] = {}
    for member_id, partitions in assignment.items():
        subscription = subscriptions.get(member_id)
        topics = frozenset(subscription.topics) if subscription is not None else frozenset()
        for topic, partition in partitions:
            if len(problems) >= _MAX_PROBLEMS:
                return problems
            count = partitions_per_topic.get(topic)
            if count is None or not 0 <= partition < count:
                problems.append(f"{member_id!r} got {topic}-{partition}, which does not exist")
            elif topic not in topics:
                problems.append(
                    f"{member_id!r} got {topic}-{partition} without subscribing to {topic!r}"
                )
            previous = owner.setdefault((topic, partition), member_id)
            if previous != member_id:
                problems.append(
                    f"{topic}-{partition} is assigned to both {previous!r} and {member_id!r}"
                )
    if complete:
        subscribed = set().union(*(s.topics for s in subscriptions.values()))
        for topic in sorted(subscribed & partitions_per_topic.keys()):
            unassigned = [p for p in range(partitions_per_topic[topic]) if (topic, p) not in owner]
            if unassigned:
                problems.append(f"{topic} partitions {unassigned[:10]} are not assigned")
                if len(problems) >= _MAX_PROBLEMS:
                    break
    return problems


def balance_problems(
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Sequence[TopicPartitionPair]],
) -> list[str]:
    """Members that could give a partition to a member two or more partitions lighter."""
    counts = {member_id: len(partitions) for member_id, partitions in assignment.items()}
    heaviest: dict[str, str] = {}  # topic -> its owner holding the most partitions
    for member_id, partitions in assignment.items():
        for topic, _ in partitions:
            holder = heaviest.get(topic)
            if holder is None or counts[member_id] > counts[holder]:
                heaviest[topic] = member_id
    lightest: dict[str, str] = {}  # topic -> its subscriber holding the fewest partitions
    for member_id, subscription in subscriptions.items():
        for topic in subscription.topics:
            holder = lightest.get(topic)
            if holder is None or counts.get(member_id, 0) < counts.get(holder, 0):
                lightest[topic] = member_id
    problems = []
    for topic in sorted(heaviest):
        heavy = heaviest[topic]
        light = lightest.get(topic, heavy)
        if counts[heavy] > counts.get(light, 0) + 1:
            problems.append(
                f"{heavy!r} holds {counts[heavy]} partitions (some of {topic!r}) while "
                f"{light!r}, subscribed to {topic!r}, holds {counts.get(light, 0)}"
            )
    return problems


def handover_problems(
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Sequence[TopicPartitionPair]],
) -> list[str]:
    """Partitions given to a new owner in the round another member has to revoke them.

    The cooperative protocol forbids it (Kafka's ``CooperativeStickyAssignorTest``
    ``verifyCooperativeValidity``): a member keeps its partitions while it rejoins, so a
    partition can only move once its owner has given it up, in a follow-up rebalance.
    """
    added: dict[TopicPartitionPair, str] = {}
    revoked: set[TopicPartitionPair] = set()
    for member_id, partitions in assignment.items():
        subscription = subscriptions.get(member_id)
        owned = set(subscription.owned_partitions) if subscription is not None else set()
        now = set(partitions)
        for partition in now - owned:
            added[partition] = member_id
        revoked |= owned - now
    return [
        f"{topic}-{partition} goes to {added[(topic, partition)]!r} while another member "
        "still owns it"
        for topic, partition in sorted(added.keys() & revoked)
    ][:_MAX_PROBLEMS]
