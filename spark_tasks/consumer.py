"""Consumer groups (Kafka 4's consumer protocol, KIP-848) in the rebalance report, measured as
the classic and handoff groups are.

Theory of operation
===================

A consumer group (docs/engine.md, "Consumer groups") has no join/sync barrier: the coordinator
(Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``) bumps the *group epoch*
(``ConsumerGroupEpochBumped``, with its ``cause`` and member), computes a target assignment
(``TargetAssignmentBuilder``; ``ConsumerTargetAssignmentComputed``: the epoch in
``generation_id``, the server-side assignor in ``protocol_name``, every member's target in
``assignment``), and each member reconciles to it at its own heartbeats, as Kafka's
``CurrentAssignmentBuilder`` moves it: it first revokes what left its assignment
(``ConsumerPartitionsRevoked``; it stays in UNREVOKED_PARTITIONS at its old epoch until its
heartbeat no longer lists them), then gets what others released
(``ConsumerPartitionsAssigned``; UNRELEASED_PARTITIONS while it waits). The
group's state is derived after every change (Kafka's ``ConsumerGroup.maybeUpdateGroupState``):
Empty, Assigning (the epoch is ahead of the target), Reconciling (a member is not Stable at the
target epoch), Stable; Dead at deletion. This module turns those events into rows of the
report's own tables, so that the four ways to rebalance (eager, cooperative, handoff, consumer)
are compared on the same figures.

- **A consumer rebalance** starts at a group epoch bump while none is open (its id is the
  bump's ``seq``) and ends when the group is Stable again (every member Stable at the target
  epoch: completed) or Empty or Dead: at the first ``StateChanged`` to one of those at or
  after its start, or, when the bump's own engine call leaves the group in Stable or Empty
  without a move (a lone member that got its new target at once), at that call's last event.
  A bump while a rebalance is open *restarts* it (``restarts`` counts them: the target moved
  before the members reached it); ``generations`` counts the target assignments computed in
  it, ``generation_id`` is its last epoch, ``protocol_name`` the assignor of its last target
  (else of the target before it), ``rebalance_protocol`` is ``consumer``. ``join_ms`` is its
  time in Assigning, ``sync_ms`` its time in Reconciling.
- **Which rebalance an event belongs to.** One engine call emits its events together, the
  group's ``StateChanged`` last (a member joined or was removed, the bump, the target, the
  members' moves, then the state). An event belongs to the rebalance open before it, else to
  the one a bump in its own call starts. Calls are told apart by ``at_ms``, as for handoff
  groups.
- **Cause**: the bump's own ``cause`` and ``cause_member_id`` under the report's names
  (``events.report_cause``); ``reason`` is the text of the rebalance's first state change.
  ``from_state`` is the group's state before the bump (Stable or Empty; Reconciling while a
  static member is away at epoch -2, which moves the group without a bump and is no rebalance;
  a group deleted, Dead, and made again starts Empty).
- **Partitions**: its before assignment is the last target before its start (known and empty
  when it started from Empty), its after assignment its last target when completed (every
  member then holds its target), empty when it ended Empty or Dead, unknown when open. Owners
  are compared by ``group_instance_id`` for static members (a static member back under a new
  member id takes its old assignment over), by member id otherwise; ``members_before`` /
  ``members_after`` count the members those targets give partitions to.
- **Unavailability**: a partition is *revoked* when its owner is told to revoke it
  (``ConsumerPartitionsRevoked``) or when its owner is removed holding it (assigned and not
  revoked since: a fenced member's partitions are released at once); it is unavailable until
  the next ``ConsumerPartitionsAssigned`` of it in the group (``assigned``: the new owner holds
  it), or until the rebalance ends without handing it out (``group_emptied``: nobody subscribes
  to it any more), or it stays open at the end of the history. Several revocations of a
  partition in one rebalance before one assignment (told to revoke, then fenced past its
  rebalance timeout) are one interval, from the first.
- **Holdings** (for duplicate consumption, ``spark_tasks.duplicates``): what a removed member
  held: the partitions assigned to it and not revoked since, and those it was told to revoke
  but had not released (it released them when it left UNREVOKED_PARTITIONS, or dropped them
  when it left for a while as a static member, epoch -2). A static member is followed under
  every member id of its instance (one that comes back under a new member id takes its old
  assignment over, with ``StaticMemberReplaced`` and no assignment event; it holds them from
  then); a removal ends what it held (its instance's next removal counts only what it was
  assigned since) and opens revocations for what it held that was not revoked already. A
  member removed while away at epoch -2 (its session ran out) closed cleanly, committing what
  it processed: it opens no duplicate-consumption window.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from coordinator_engine.consumer.state import ConsumerGroupState, MemberState

from .events import (
    before,
    in_group,
    is_type,
    last_where,
    member_partitions,
    planned_assignments,
    report_cause,
    so_far,
    unavailable_intervals,
    with_member_counts,
)

__all__ = [
    "CONSUMER_PROTOCOL",
    "consumer_events",
    "consumer_generations",
    "consumer_holdings",
    "consumer_partition_changes",
    "consumer_rebalances",
    "consumer_unavailability",
]

CONSUMER_PROTOCOL = "consumer"

EMPTY = ConsumerGroupState.EMPTY.value
ASSIGNING = ConsumerGroupState.ASSIGNING.value
RECONCILING = ConsumerGroupState.RECONCILING.value
STABLE = ConsumerGroupState.STABLE.value
DEAD = ConsumerGroupState.DEAD.value
_GROUP_STATES = tuple(state.value for state in ConsumerGroupState)
UNREVOKED = MemberState.UNREVOKED_PARTITIONS.name

_CONSUMER_TYPES = (
    "ConsumerMemberJoined",
    "ConsumerGroupEpochBumped",
    "ConsumerTargetAssignmentComputed",
    "ConsumerMemberStateChanged",
    "ConsumerPartitionsRevoked",
    "ConsumerPartitionsAssigned",
    "ConsumerStaticMemberLeft",
)
_TYPES = (*_CONSUMER_TYPES, "StateChanged", "MemberRemoved", "StaticMemberReplaced")


def _is_bump() -> Column:
    return is_type("ConsumerGroupEpochBumped")


def _is_target() -> Column:
    return is_type("ConsumerTargetAssignmentComputed")


def _is_move() -> Column:
    return is_type("StateChanged")


def consumer_events(history: DataFrame) -> DataFrame:
    """The events of consumer groups this module reads (a group is a consumer group when the
    history holds a consumer event of it; of its state changes, those between consumer group
    states), each with ``state`` (the group's state so far, null before its first move),
    ``terminal`` (the event ends any rebalance open at it), ``is_start``, ``rebalance_id`` (see
    the module docstring; null outside a rebalance) and ``previous_target`` (seq,
    protocol_name) before it."""
    groups = history.where(F.col("type").isin(*_CONSUMER_TYPES)).select("group_id").distinct()
    moves_between_consumer_states = ~_is_move() | (
        F.col("from_state").isin(*_GROUP_STATES) & F.col("to_state").isin(*_GROUP_STATES)
    )
    events = (
        history.where(F.col("type").isin(*_TYPES) & moves_between_consumer_states)
        .join(F.broadcast(groups), "group_id", "left_semi")
        .select(
            "group_id",
            "seq",
            "at_ms",
            "type",
            "from_state",
            "to_state",
            "reason",
            "cause",
            "cause_member_id",
            "member_id",
            "old_member_id",
            "group_instance_id",
            "generation_id",
            "protocol_name",
            "assignment",
            "partitions",
        )
    )
    call = Window.partitionBy("group_id", "at_ms")
    in_call_ahead = call.orderBy("seq").rowsBetween(Window.currentRow, Window.unboundedFollowing)
    last_bump_in_call = F.max(F.when(_is_bump(), F.col("seq"))).over(call)
    last_move_in_call = F.max(F.when(_is_move(), F.col("seq"))).over(call)
    # A bump whose call leaves the group Stable or Empty without moving it ends at that call's
    # last event.
    settled_at_once = (
        (F.col("seq") == F.max("seq").over(call))
        & last_bump_in_call.isNotNull()
        & F.coalesce(last_move_in_call < last_bump_in_call, F.lit(True))
        & F.col("state").isin(STABLE, EMPTY)
    )
    ended = _is_move() & F.col("to_state").isin(STABLE, EMPTY, DEAD)
    open_before = F.coalesce(
        last_where(_is_bump(), F.col("seq"), before())
        > F.coalesce(last_where(F.col("terminal"), F.col("seq"), before()), F.lit(-1)),
        F.lit(False),
    )
    start = F.when(F.col("is_start"), F.col("seq"))
    return (
        events.withColumn("state", last_where(_is_move(), F.col("to_state"), so_far()))
        .withColumn("terminal", F.coalesce(ended | settled_at_once, F.lit(False)))
        .withColumn("_open", open_before)
        .withColumn("is_start", _is_bump() & ~F.col("_open"))
        .withColumns(
            {
                "rebalance_id": F.when(
                    F.col("_open"), F.last(start, ignorenulls=True).over(before())
                ).otherwise(F.first(start, ignorenulls=True).over(in_call_ahead)),
                "previous_target": last_where(
                    _is_target(), F.struct("seq", "protocol_name"), before()
                ),
            }
        )
        .drop("_open")
    )


def _targets(events: DataFrame) -> DataFrame:
    """Every target's (group_id, seq, member_id, topic, partition) rows."""
    return planned_assignments(events, _is_target())


def consumer_rebalances(events: DataFrame) -> DataFrame:
    """One row per consumer rebalance (``consumer_events`` in), with the rebalance table's
    columns up to ``members_after`` and ``before_known``, ``after_known``, ``before_seq``,
    ``after_seq`` (the targets that bound it) and ``end_seq``."""
    inside = events.where(F.col("rebalance_id").isNotNull())
    lasted = events.where(_is_move()).select(
        "group_id",
        "seq",
        (F.lead("at_ms").over(in_group()) - F.col("at_ms")).alias("_lasted_ms"),
    )
    with_lasted = inside.join(lasted, ["group_id", "seq"], "left")
    ended_in = F.when(_is_move(), F.col("to_state")).otherwise(F.col("state"))
    grouped = with_lasted.groupBy("group_id", "rebalance_id").agg(
        F.first(
            F.when(
                F.col("is_start"),
                F.struct(
                    "at_ms",
                    F.when(F.col("state").isNull() | (F.col("state") == DEAD), F.lit(EMPTY))
                    .otherwise(F.col("state"))
                    .alias("from_state"),
                    report_cause(F.col("cause")).alias("cause"),
                    "cause_member_id",
                    "previous_target",
                ),
            ),
            ignorenulls=True,
        ).alias("start"),
        F.min(F.when(_is_move(), F.struct("seq", "reason"))).alias("_first_move"),
        F.min(F.when(F.col("terminal"), F.struct("seq", "at_ms", ended_in.alias("state")))).alias(
            "end"
        ),
        F.sum(F.when(_is_move() & (F.col("to_state") == ASSIGNING), F.col("_lasted_ms"))).alias(
            "join_ms"
        ),
        F.sum(F.when(_is_move() & (F.col("to_state") == RECONCILING), F.col("_lasted_ms"))).alias(
            "sync_ms"
        ),
        F.sum(_is_bump().cast("int")).alias("_bumps"),
        F.sum(_is_target().cast("int")).alias("generations"),
        F.max(F.when(_is_bump(), F.col("generation_id"))).alias("generation_id"),
        F.max(F.when(_is_target(), F.struct("seq", "protocol_name"))).alias("_last_target"),
    )
    completed = F.coalesce(F.col("end.state") == STABLE, F.lit(False))
    ended_empty = F.coalesce(F.col("end.state").isin(EMPTY, DEAD), F.lit(False))
    from_empty = F.col("start.from_state") == EMPTY
    previous = F.col("start.previous_target")
    before_seq = F.when(~from_empty, previous["seq"])
    rebalances = grouped.where(F.col("start").isNotNull()).select(
        "group_id",
        "rebalance_id",
        F.col("start.at_ms").alias("start_ms"),
        F.col("start.from_state").alias("from_state"),
        F.col("_first_move.reason").alias("reason"),
        F.col("start.cause").alias("cause"),
        F.col("start.cause_member_id").alias("cause_member_id"),
        F.col("end.at_ms").alias("end_ms"),
        F.col("end.state").alias("end_state"),
        completed.alias("completed"),
        F.when(completed, F.col("end.at_ms") - F.col("start.at_ms")).alias("duration_ms"),
        F.coalesce("join_ms", F.lit(0)).cast("long").alias("join_ms"),
        F.coalesce("sync_ms", F.lit(0)).cast("long").alias("sync_ms"),
        (F.col("_bumps") - 1).cast("int").alias("restarts"),
        F.col("generations").cast("int").alias("generations"),
        F.col("generation_id").cast("int").alias("generation_id"),
        F.coalesce("_last_target.protocol_name", previous["protocol_name"]).alias("protocol_name"),
        F.lit(CONSUMER_PROTOCOL).alias("rebalance_protocol"),
        (from_empty | previous.isNotNull()).alias("before_known"),
        before_seq.alias("before_seq"),
        (completed | ended_empty).alias("after_known"),
        F.when(completed, F.coalesce("_last_target.seq", before_seq)).alias("after_seq"),
        F.col("end.seq").alias("end_seq"),
    )
    return rebalances.transform(with_member_counts, _targets(events)).withColumns(
        {
            "members_before": F.when(F.col("before_known"), F.coalesce("members_before", F.lit(0))),
            "members_after": F.when(F.col("after_known"), F.coalesce("members_after", F.lit(0))),
        }
    )


def consumer_generations(rebalances: DataFrame, events: DataFrame) -> DataFrame:
    """One row per target assignment a consumer rebalance computed, with the columns of the
    report's ``generations`` table: its epoch (``generation_id``), assignor
    (``protocol_name``), no ``leader_id`` (the coordinator assigns), the members it gives
    partitions to (``members``, ``member_ids`` sorted), ``join_started_ms`` (the bump to its
    epoch), ``join_completed_ms`` (when it was computed), ``join_ms`` (between them),
    ``sync_ms`` (from it until what ended it) and ``ended_in``: the rebalance's end state
    (Stable, Empty, Dead) for its last target, ``Assigning`` for one a later bump overtook
    (the members were to reconcile to a newer epoch), null while open."""
    inside = events.where(F.col("rebalance_id").isNotNull())
    keys = ["group_id", "rebalance_id"]
    targets = inside.where(_is_target()).select(
        *keys,
        "seq",
        "at_ms",
        "generation_id",
        "protocol_name",
        F.array_sort(F.array_distinct(F.col("assignment.member_id"))).alias("member_ids"),
    )
    bumps = inside.where(_is_bump()).select(
        *keys,
        F.col("seq").alias("_bump_seq"),
        F.col("at_ms").alias("_bump_ms"),
        F.col("generation_id").alias("_bump_epoch"),
    )
    started = (
        targets.join(bumps, keys)
        .where(
            (F.col("_bump_epoch") == F.col("generation_id")) & (F.col("_bump_seq") < F.col("seq"))
        )
        .groupBy(*keys, "seq")
        .agg(F.max(F.struct("_bump_seq", "_bump_ms")).alias("_started"))
    )
    overtaken = (
        targets.join(bumps, keys)
        .where(F.col("_bump_seq") > F.col("seq"))
        .groupBy(*keys, "seq")
        .agg(F.min(F.struct("_bump_seq", "_bump_ms")).alias("_overtaken"))
    )
    ends = rebalances.select(*keys, "end_ms", "end_state", "rebalance_protocol")
    join_started = F.col("_started._bump_ms")
    ended_ms = F.coalesce(F.col("_overtaken._bump_ms"), F.col("end_ms"))
    return (
        targets.join(started, [*keys, "seq"], "left")
        .join(overtaken, [*keys, "seq"], "left")
        .join(ends, keys)
        .select(
            *keys,
            F.col("generation_id").cast("int").alias("generation_id"),
            "protocol_name",
            "rebalance_protocol",
            F.lit(None).cast("string").alias("leader_id"),
            F.size("member_ids").cast("int").alias("members"),
            "member_ids",
            join_started.alias("join_started_ms"),
            F.col("at_ms").alias("join_completed_ms"),
            (F.col("at_ms") - join_started).alias("join_ms"),
            (ended_ms - F.col("at_ms")).alias("sync_ms"),
            F.when(F.col("_overtaken").isNotNull(), F.lit(ASSIGNING))
            .otherwise(F.col("end_state"))
            .alias("ended_in"),
        )
    )


def _member_instances(events: DataFrame) -> DataFrame:
    """(group_id, member_id, group_instance_id) of every static member id of the groups: those
    that joined with an instance id, and both ids of a ``StaticMemberReplaced`` (the member id
    that takes an instance over emits no join of its own)."""
    named = events.where(F.col("group_instance_id").isNotNull()).select(
        "group_id", "member_id", "group_instance_id"
    )
    replaced = events.where(is_type("StaticMemberReplaced")).select(
        "group_id", F.col("old_member_id").alias("member_id"), "group_instance_id"
    )
    return (
        named.unionByName(replaced)
        .where(F.col("member_id").isNotNull())
        .groupBy("group_id", "member_id")
        .agg(F.min("group_instance_id").alias("group_instance_id"))
    )


def consumer_partition_changes(rebalances: DataFrame, events: DataFrame) -> DataFrame:
    """Per consumer rebalance whose before and after assignments are known, each partition's
    member before and after (null: none), with ``moved`` and ``kept`` (owners compared), the
    columns of ``rebalance_report.partition_changes``."""
    instances = F.broadcast(_member_instances(events))
    targets = (
        _targets(events)
        .join(instances, ["group_id", "member_id"], "left")
        .withColumn("owner", F.coalesce("group_instance_id", "member_id"))
    )
    bounds = rebalances.where(F.col("before_known") & F.col("after_known")).select(
        "group_id", "rebalance_id", "before_seq", "after_seq"
    )
    keys = ["group_id", "rebalance_id", "topic", "partition"]
    owned_before = bounds.join(
        targets.select(
            "group_id",
            F.col("seq").alias("before_seq"),
            "topic",
            "partition",
            F.col("member_id").alias("member_before"),
            F.col("owner").alias("owner_before"),
        ),
        ["group_id", "before_seq"],
    ).select(*keys, "member_before", "owner_before")
    owned_after = bounds.join(
        targets.select(
            "group_id",
            F.col("seq").alias("after_seq"),
            "topic",
            "partition",
            F.col("member_id").alias("member_after"),
            F.col("owner").alias("owner_after"),
        ),
        ["group_id", "after_seq"],
    ).select(*keys, "member_after", "owner_after")
    same = F.col("owner_before").eqNullSafe(F.col("owner_after"))
    return owned_before.join(owned_after, keys, "full_outer").select(
        *keys,
        "member_before",
        "member_after",
        (~same).alias("moved"),
        (same & F.col("owner_before").isNotNull()).alias("kept"),
    )


def consumer_holdings(events: DataFrame) -> DataFrame:
    """The partitions each member held when it was removed (module docstring), with
    ``pending`` (it had been told to revoke it): ``group_id``, ``member_id``, ``topic``,
    ``partition``, ``granted_ms`` (when it was assigned it), ``pending``, and the removal's
    ``seq``, ``at_ms``, ``rebalance_id``, ``reason``, ``away`` (the member had left for a while
    at epoch -2 and not joined since: its session ran out while it was away). A static
    member's partitions are followed under every member id of its instance: one that comes
    back under a new member id takes its old assignment over without an assignment event;
    each removal of the instance ends what it held."""
    instances = F.broadcast(_member_instances(events))

    def by_owner(frame: DataFrame) -> DataFrame:
        return (
            frame.join(instances, ["group_id", "member_id"], "left")
            .withColumn("_owner", F.coalesce("group_instance_id", "member_id"))
            .drop("group_instance_id")
        )

    moves = by_owner(
        member_partitions(events, "ConsumerPartitionsAssigned")
        .withColumn("_assigned", F.lit(True))
        .unionByName(
            member_partitions(events, "ConsumerPartitionsRevoked").withColumn(
                "_assigned", F.lit(False)
            )
        )
    ).drop("member_id")
    # A member id away at epoch -2 (it left for a while as a static member, committing first)
    # that did not join again before its removal: it held nothing it had not committed.
    presence = (
        events.where(is_type("ConsumerStaticMemberLeft"))
        .select("group_id", "member_id", "seq", F.lit(True).alias("_away"))
        .unionByName(
            events.where(is_type("ConsumerMemberJoined")).select(
                "group_id", "member_id", "seq", F.lit(False).alias("_away")
            )
        )
    )
    removed = events.where(is_type("MemberRemoved")).select(
        "group_id", "member_id", "seq", "at_ms", "rebalance_id", "reason"
    )
    away = (
        removed.select("group_id", "member_id", F.col("seq").alias("_removed_seq"))
        .join(presence, ["group_id", "member_id"])
        .where(F.col("seq") < F.col("_removed_seq"))
        .groupBy("group_id", "member_id", "_removed_seq")
        .agg(F.max_by("_away", "seq").alias("away"))
        .withColumnRenamed("_removed_seq", "seq")
    )
    # Each removal ends what its owner held: the owner's next removal counts only what it was
    # assigned after this one (a static instance comes back, fresh, after its session expired).
    removals = by_owner(
        removed.join(away, ["group_id", "member_id", "seq"], "left").withColumn(
            "away", F.coalesce("away", F.lit(False))
        )
    ).withColumn(
        "_previous_removed_seq",
        F.coalesce(
            F.lag("seq").over(Window.partitionBy("group_id", "_owner").orderBy("seq")), F.lit(0)
        ),
    )
    # A member releases everything it was told to revoke when it leaves UNREVOKED_PARTITIONS,
    # and drops it when it leaves for a while as a static member (epoch -2).
    releases = by_owner(
        events.where(
            (
                is_type("ConsumerMemberStateChanged")
                & (F.col("from_state") == UNREVOKED)
                & (F.col("to_state") != UNREVOKED)
            )
            | is_type("ConsumerStaticMemberLeft")
        ).select("group_id", "member_id", F.col("seq").alias("_released_seq"))
    ).drop("member_id")
    keys = ["group_id", "_owner", "topic", "partition"]
    last = (
        moves.join(
            removals.select(
                "group_id", "_owner", F.col("seq").alias("_removed_seq"), "_previous_removed_seq"
            ),
            ["group_id", "_owner"],
        )
        .where(
            (F.col("seq") < F.col("_removed_seq")) & (F.col("seq") > F.col("_previous_removed_seq"))
        )
        .groupBy(*keys, "_removed_seq")
        .agg(
            F.max(F.struct("seq", "_assigned")).alias("_last"),
            F.max(F.when(F.col("_assigned"), F.col("at_ms"))).alias("granted_ms"),
        )
    )
    # A member id that took a static instance over got its partitions then, not before.
    took_over = (
        events.where(is_type("StaticMemberReplaced"))
        .groupBy("group_id", "member_id")
        .agg(F.max("at_ms").alias("_took_over_ms"))
    )
    released = (
        last.where(~F.col("_last._assigned"))
        .join(releases, ["group_id", "_owner"])
        .where(
            (F.col("_released_seq") > F.col("_last.seq"))
            & (F.col("_released_seq") < F.col("_removed_seq"))
        )
        .select(*keys, "_removed_seq")
        .distinct()
    )
    return (
        last.join(released, [*keys, "_removed_seq"], "left_anti")
        .join(
            removals.withColumnRenamed("seq", "_removed_seq"),
            ["group_id", "_owner", "_removed_seq"],
        )
        .join(F.broadcast(took_over), ["group_id", "member_id"], "left")
        .select(
            "group_id",
            "member_id",
            "topic",
            "partition",
            F.greatest(
                "granted_ms",
                F.when(F.col("_took_over_ms") < F.col("at_ms"), F.col("_took_over_ms")),
            ).alias("granted_ms"),
            (~F.col("_last._assigned")).alias("pending"),
            F.col("_removed_seq").alias("seq"),
            "at_ms",
            "rebalance_id",
            "reason",
            "away",
        )
    )


def consumer_unavailability(
    rebalances: DataFrame, events: DataFrame, holdings: DataFrame
) -> DataFrame:
    """Each revoked partition's unavailable interval (module docstring), with the columns of
    ``rebalance_report.partition_unavailability``."""
    tp = ["group_id", "topic", "partition"]
    columns = ["group_id", "seq", "at_ms", "member_id", "rebalance_id", "topic", "partition"]
    revoked = (
        member_partitions(events, "ConsumerPartitionsRevoked")
        .unionByName(holdings.where(~F.col("pending")).select(*columns))
        .withColumn("_assign", F.lit(False))
    )
    assigned_rows = member_partitions(events, "ConsumerPartitionsAssigned").withColumn(
        "_assign", F.lit(True)
    )
    later = (
        Window.partitionBy(*tp)
        .orderBy(F.col("seq").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    timeline = revoked.unionByName(assigned_rows).withColumn(
        "_next_assign",
        F.last(F.when(F.col("_assign"), F.struct("seq", "at_ms", "member_id")), True).over(later),
    )
    revocations = (
        timeline.where(~F.col("_assign") & F.col("rebalance_id").isNotNull())
        .groupBy(*tp, "rebalance_id", F.col("_next_assign.seq").alias("_assign_seq"))
        .agg(
            F.min(F.struct("seq", "at_ms", "member_id")).alias("_first"),
            F.first("_next_assign").alias("_next"),
        )
    )
    return unavailable_intervals(revocations, rebalances)
