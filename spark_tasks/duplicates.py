"""Duplicate consumption: records a partition's next owner processes again.

Theory of operation
===================

A consumer commits the position it has processed up to; a partition's next owner starts from
the last commit. When the old owner gives the partition up itself — an eager member commits
and revokes before it rejoins, a cooperative one commits what it revokes, a handoff member
commits and then confirms the close, a member that leaves commits first — the next owner
starts where it stopped: nothing is processed twice. When the coordinator *removes* a member
holding partitions instead (``FORCED_REMOVALS``: its session expired, it missed the join
phase or the sync, an admin removed it, or its poll loop was too slow and it left with Kafka's
poll-timeout reason), whatever it processed after its last commit of a partition is processed
again by the partition's next owner: a **duplicate-consumption window**.

Each window is one (removed member, partition it held): the partitions it held are those of
the last ``AssignmentStored`` before its removal (classic groups) or those granted to it and
not closed (handoff groups, ``spark_tasks.handoff.handoff_holdings``). The window runs from its
last commit of the partition before the removal (or, if it never committed it, from when it got
the partition) to the last moment it is known to have been alive: its removal, or for a
session timeout its last heartbeat (the removal less its session timeout; clamped at the
window's start). ``records`` estimates what was processed twice: the window times the rate at
which its own last two commits of the partition advanced (null with fewer than two).

A static member replaced by its own restart (``fenced``) is not counted: its partitions pass
to its next incarnation with the committed offsets, the old process being gone.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from coordinator_engine import CoordinatorConfig
from coordinator_engine.client import POLL_TIMEOUT_REASON
from coordinator_engine.events import RemovalReason

from .events import assignments_of, is_type, last_where, so_far

__all__ = [
    "CONSUMER_SESSION_TIMEOUT_MS",
    "FORCED_REMOVALS",
    "classic_holdings",
    "duplicate_windows",
    "forced_removals",
]

#: A consumer-protocol member's session timeout: the coordinator's, as the engine sets it by
#: default (the history does not say another).
CONSUMER_SESSION_TIMEOUT_MS = CoordinatorConfig().consumer_group_session_timeout_ms

FORCED_REMOVALS = tuple(
    reason.value
    for reason in (
        RemovalReason.SESSION_TIMEOUT,
        RemovalReason.JOIN_TIMEOUT,
        RemovalReason.REBALANCE_TIMEOUT,
        RemovalReason.SYNC_TIMEOUT,
        RemovalReason.REMOVED_BY_ADMIN,
    )
)


def forced_removals(history: DataFrame) -> DataFrame:
    """The removals that open windows: (group_id, member_id, seq, at_ms, reason)."""
    forced = F.col("reason").isin(*FORCED_REMOVALS) | (
        (F.col("reason") == RemovalReason.LEFT.value) & (F.col("detail") == POLL_TIMEOUT_REASON)
    )
    return history.where((F.col("type") == "MemberRemoved") & forced).select(
        "group_id", "member_id", "seq", "at_ms", "reason"
    )


def classic_holdings(history: DataFrame, removals: DataFrame) -> DataFrame:
    """What each removed member of a classic group held: its partitions in the group's last
    ``AssignmentStored`` before its removal. Columns as ``handoff_holdings``: group_id,
    member_id, topic, partition, granted_ms (when that assignment was stored), and the
    removal's seq, at_ms and reason. Each removal is joined to the assignment it follows
    before that is exploded into rows (a broadcast: removals are few), so only the assignments
    some removal follows are exploded, and only the removed member's rows kept."""
    stored = history.where(is_type("AssignmentStored"))
    bounds = (
        removals.select(
            "group_id",
            "seq",
            F.struct("member_id", "seq", "at_ms", "reason").alias("_removal"),
        )
        .unionByName(
            stored.select("group_id", "seq", F.lit(None).alias("_removal")),
            allowMissingColumns=True,
        )
        .withColumn(
            "_stored_seq",
            last_where(F.col("_removal").isNull(), F.col("seq"), so_far()),
        )
        .where(F.col("_removal").isNotNull() & F.col("_stored_seq").isNotNull())
        .select("group_id", F.col("_stored_seq").alias("seq"), "_removal")
    )
    followed = stored.join(F.broadcast(bounds), ["group_id", "seq"])
    return (
        assignments_of(followed, "_removal")
        .where(F.col("member_id") == F.col("_removal.member_id"))
        .select(
            "group_id",
            "member_id",
            "topic",
            "partition",
            F.col("at_ms").alias("granted_ms"),
            F.col("_removal.seq").alias("seq"),
            F.col("_removal.at_ms").alias("at_ms"),
            F.col("_removal.reason").alias("reason"),
        )
    )


def _session_timeouts(history: DataFrame, members: DataFrame) -> DataFrame:
    """The session timeout of each of ``members`` (group_id, member_id), from its latest join."""
    joins = history.where(F.col("type").isin("MemberJoined", "HandoffMemberJoined")).join(
        F.broadcast(members), ["group_id", "member_id"], "left_semi"
    )
    # A consumer group's members (KIP-848) all have the coordinator's session, whether they
    # joined or took a static member's place.
    consumer_groups = (
        history.where(F.col("type") == "ConsumerMemberJoined").select("group_id").distinct()
    )
    return (
        joins.groupBy("group_id", "member_id")
        .agg(F.max_by("session_timeout_ms", "seq").alias("session_timeout_ms"))
        .unionByName(
            members.join(consumer_groups, "group_id", "left_semi").withColumn(
                "session_timeout_ms", F.lit(CONSUMER_SESSION_TIMEOUT_MS)
            )
        )
        .groupBy("group_id", "member_id")
        .agg(F.max("session_timeout_ms").alias("session_timeout_ms"))
    )


def duplicate_windows(history: DataFrame, holdings: DataFrame, protocols: DataFrame) -> DataFrame:
    """One row per window (module docstring): group_id, rebalance_protocol (the group's, from
    ``protocols``: group_id → rebalance_protocol), member_id, reason, topic, partition,
    committed_ms (null: never committed), window_start_ms, window_end_ms, window_ms, records."""
    keys = ["group_id", "member_id", "topic", "partition"]
    # Each removal's seq, to keep the commits made before it: one row per removal (a row of
    # holdings per partition held, hence distinct), small enough to send to every task, so the
    # commits are filtered where they are read.
    removals = holdings.select("group_id", "member_id", F.col("seq").alias("_removed_seq"))
    removed_members = removals.select("group_id", "member_id").distinct()
    commits = (
        history.where(F.col("type") == "OffsetsCommitted")
        .join(F.broadcast(removals.distinct()), ["group_id", "member_id"])
        .where(F.col("seq") < F.col("_removed_seq"))
        .select(*keys[:2], "_removed_seq", "seq", "at_ms", F.explode("offsets").alias("_o"))
        .select(
            *keys[:2],
            F.col("_o.topic").alias("topic"),
            F.col("_o.partition").alias("partition"),
            "_removed_seq",
            "seq",
            "at_ms",
            F.col("_o.offset").alias("offset"),
        )
    )
    # The last two commits of each (member, partition) before its removal, newest first: a
    # top-two aggregate, which each task reduces to two rows per key before the shuffle. A
    # commit names a partition once, so seq orders them without ties. (Its buffer is no
    # fixed-width row, so Spark sorts each task's rows by the keys to aggregate them.)
    latest = F.max_by(F.struct("seq", "at_ms", "offset"), "seq", 2)
    last_commits = (
        commits.groupBy(*keys, "_removed_seq")
        .agg(latest.alias("_latest"))
        .select(
            *keys,
            "_removed_seq",
            F.col("_latest")[0].alias("_last"),
            F.get("_latest", 1).alias("_previous"),  # null with a single commit
        )
    )
    commit, previous = F.col("_last"), F.col("_previous")
    elapsed = commit["at_ms"] - previous["at_ms"]
    rate = F.when(elapsed > 0, (commit["offset"] - previous["offset"]) / elapsed)
    start = F.coalesce(commit["at_ms"], F.col("granted_ms"))
    alive_until = F.when(
        F.col("reason") == RemovalReason.SESSION_TIMEOUT.value,
        F.col("at_ms") - F.coalesce("session_timeout_ms", F.lit(0)),
    ).otherwise(F.col("at_ms"))
    end = F.greatest(alive_until, start)
    return (
        holdings.join(last_commits.withColumnRenamed("_removed_seq", "seq"), [*keys, "seq"], "left")
        .join(
            F.broadcast(_session_timeouts(history, removed_members)),
            ["group_id", "member_id"],
            "left",
        )
        .join(F.broadcast(protocols), "group_id", "left")
        .select(
            "group_id",
            "rebalance_protocol",
            "member_id",
            "reason",
            "topic",
            "partition",
            commit["at_ms"].alias("committed_ms"),
            start.alias("window_start_ms"),
            end.alias("window_end_ms"),
            (end - start).alias("window_ms"),
            F.round(rate * (end - start)).cast("long").alias("records"),
        )
    )
