"""Two peers of the Spark rebalance report for ``bench/spark_report.py``: pandas and DuckDB SQL.

Both read the same Parquet history (``DIR/day=YYYY-MM-DD/*.parquet``) and compute, per group,
the figures of ``summary.json``'s ``groups`` entries, by the rules of
``spark_tasks/rebalance_report.py``'s and ``spark_tasks/consumer.py``'s module docstrings (and
docs/analysis.md, "The rules"), for classic and consumer groups (handoff groups and the
duplicate-consumption figures are the report's alone):
``rebalances``, ``completed``, ``duration_ms`` (exact p50 and p95, linear interpolation as
numpy's default, and max), ``partitions_moved``, ``stickiness_mean``, ``causes`` (cause ->
count), ``unavailable_partition_s`` and ``storms``. Neither imports the report's code: they are
independent readings of the same rules, so that equal results say something.

The rules as both peers apply them, per group, over the group's events of the six types the
report reads (StateChanged, GenerationStarted, MemberJoined, MemberRemoved,
StaticMemberReplaced, AssignmentStored), in ``seq`` order:

* a rebalance starts at a StateChanged Stable/Empty -> PreparingRebalance (its id: that seq);
  every event belongs to the last start at or before it; the rebalance ends at its first
  StateChanged to Stable (completed), Empty or Dead; its events run from its start up to the
  next state change after its end (so the GenerationStarted / AssignmentStored emitted right
  after the end move count);
* the cause: the start's ``cause`` as the engine says it, under the report's names
  (``REPORT_CAUSES``; none: ``other``);
* before = the last AssignmentStored before the start (empty from Empty; unknown if none), after
  = the rebalance's own last AssignmentStored when completed, empty when it ended Empty or Dead,
  unknown when open; owners compared by ``group_instance_id`` for the member ids the history
  ties to one (MemberJoined/MemberRemoved/StaticMemberReplaced rows, the fenced old id too), by
  member id otherwise;
* revoked: every partition owned before for an eager protocol (the last generation's assignor,
  else the previous generation's; anything but ``cooperative-sticky``); for a cooperative or
  unknown protocol, those owned before that the after assignment does not keep; a revocation
  ends at the group's next AssignmentStored that holds the partition, unless a move to Empty or
  Dead comes first (it ends there), and is not summed while open;
* storms: a rebalance is in a storm when its start lies in a window [s, s + W] (s a start of
  the group) holding at least K starts; storms are maximal chains of such windows.

Consumer groups (Kafka 4's consumer protocol, KIP-848; ``spark_tasks/consumer.py``'s docstring
and docs/analysis.md, "The rules"): a group is one when the history holds one of its
``Consumer*`` events; both peers read its ``Consumer*`` events, its ``MemberRemoved`` and its
``StateChanged`` between two of Empty, Assigning, Reconciling, Stable and Dead, in ``seq``
order (and its StaticMemberReplaced, for the member ids of a static member), an engine call
being the group's events of one ``at_ms``:

* the group's state at an event is the last StateChanged's ``to_state`` at or before it; an
  event is *terminal* when it is a StateChanged to Stable, Empty or Dead, or when it is the last
  event of a call that bumped the epoch (ConsumerGroupEpochBumped) with no StateChanged after
  its last bump, the group's state there being Stable or Empty; a rebalance is *open* before an
  event when the group's last bump before it comes after its last terminal event before it;
* a rebalance starts at a bump with none open (its id: that seq); an event belongs to the open
  rebalance (the last start before it), else to the first start at or after it in its call; the
  rebalance ends at its first terminal event: completed when the state there (the StateChanged's
  ``to_state``, else the state so far) is Stable; its cause is the start's under the report's
  names, as for classic groups;
* before = the last ConsumerTargetAssignmentComputed before the start (empty when the state
  before the start is Empty, Dead or none; unknown if there is no target), after = the
  rebalance's own last target (else the one before) when completed, empty when it ended Empty
  or Dead, unknown when open; owners compared by ``group_instance_id`` for the member ids the
  group's events tie to one (a row naming both, or either id of a StaticMemberReplaced), by
  member id otherwise; moved, kept and stickiness as for classic groups;
* revoked: each partition of a ConsumerPartitionsRevoked, and each partition a removed member
  (MemberRemoved) held: its owner's last ConsumerPartitionsRevoked/Assigned of the partition
  before the removal, and after the owner's previous removal, was an assignment; each
  revocation, at its event's seq and time and in its event's rebalance, runs to the group's next
  ConsumerPartitionsAssigned of the partition; revocations of one partition in one rebalance
  with the same next assignment are one interval, from the first; it ends at that assignment
  when it comes no later than the rebalance's end, else at the rebalance's end, and is not
  summed while open;
* the consumer groups' rebalances join the classic groups' for the storms and the figures.

``pandas_report`` reads with pyarrow (only the columns needed, only the six types; then the
consumer groups' events) and works in pandas; ``duckdb_report`` reads the Parquet files itself
(``read_parquet``) with two threads.
Both return ``{group_id: figures}`` for every group of the history, unrounded. Run one alone
(the benchmark does, in a fresh process, to measure it): ``python bench/report_peers.py
pandas|duckdb DIR [--storm-count K] [--storm-window-ms W]`` prints one JSON line
``{"seconds": ..., "groups": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.dataset as ds

__all__ = ["CAUSES", "duckdb_report", "pandas_report"]

USED_TYPES = (
    "StateChanged",
    "GenerationStarted",
    "MemberJoined",
    "MemberRemoved",
    "StaticMemberReplaced",
    "AssignmentStored",
)
COLUMNS = (
    "group_id",
    "seq",
    "at_ms",
    "type",
    "from_state",
    "to_state",
    "reason",
    "member_id",
    "old_member_id",
    "group_instance_id",
    "cause",
    "protocol_name",
    "assignment",
)

CAUSES = (
    "member_joined",
    "member_left",
    "session_timeout",
    "poll_timeout",
    "static_member_replaced",
    "admin_action",
    "metadata_change",
    "other",
)
#: The engine's causes the report names otherwise (spark_tasks.events.REPORT_CAUSES).
REPORT_CAUSES = {
    "partitions_changed": "metadata_change",
    "outage_ended": "metadata_change",
    "coordinator": "other",
}
COOPERATIVE = ("cooperative-sticky",)

#: A consumer group's (KIP-848) events; a group with one of them is a consumer group.
CONSUMER_TYPES = (
    "ConsumerMemberJoined",
    "ConsumerGroupEpochBumped",
    "ConsumerTargetAssignmentComputed",
    "ConsumerMemberStateChanged",
    "ConsumerPartitionsRevoked",
    "ConsumerPartitionsAssigned",
    "ConsumerStaticMemberLeft",
)
CONSUMER_COLUMNS = (
    "group_id",
    "seq",
    "at_ms",
    "type",
    "from_state",
    "to_state",
    "cause",
    "member_id",
    "old_member_id",
    "group_instance_id",
    "assignment",
    "partitions",
)
#: A consumer group's states (the StateChanged rows of a consumer group read are those between
#: two of them).
CONSUMER_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")


def _no_rebalances() -> dict[str, Any]:
    return {
        "rebalances": 0,
        "completed": 0,
        "duration_ms": {"p50": None, "p95": None, "max": None},
        "partitions_moved": 0,
        "stickiness_mean": None,
        "causes": {},
        "unavailable_partition_s": 0.0,
        "storms": 0,
    }


def _float_or_none(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


# -- pandas ----------------------------------------------------------------------------------


def _history_dataset(history_dir: str | Path) -> ds.Dataset:
    # The files Spark reads: every Parquet file under the day folders (hidden ones excluded).
    return ds.dataset(
        str(history_dir),
        format="parquet",
        partitioning="hive",
        exclude_invalid_files=False,
        ignore_prefixes=[".", "_"],
    )


def _pairs(column: Any, parents: Any, kind: str) -> pd.DataFrame:
    """One row per item of a list<struct> column: ``row`` (its event's position), and the
    struct's fields (``member_id`` for an assignment)."""
    column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    flat = pc.list_flatten(column)
    frame = pd.DataFrame(
        {
            "row": parents[pc.list_parent_indices(column).to_numpy()],
            "topic": flat.field("topic").to_numpy(zero_copy_only=False),
            "partition": flat.field("partition").to_numpy(zero_copy_only=False),
        }
    )
    if kind == "assignment":
        frame["member_id"] = flat.field("member_id").to_numpy(zero_copy_only=False)
    return frame


def _pandas_consumer(dataset: ds.Dataset) -> pd.DataFrame:
    """The consumer groups' rebalances (KIP-848), one row each: group_id, rebalance_id,
    start_ms, completed, duration_ms, cause, partitions_moved, stickiness,
    unavailable_partition_ms."""
    groups = pc.unique(
        dataset.to_table(
            columns=["group_id"], filter=pc.field("type").isin(list(CONSUMER_TYPES))
        ).column("group_id")
    )
    table = dataset.to_table(
        columns=list(CONSUMER_COLUMNS),
        filter=pc.field("group_id").isin(groups)
        & pc.field("type").isin(
            [*CONSUMER_TYPES, "StateChanged", "MemberRemoved", "StaticMemberReplaced"]
        ),
    ).sort_by([("group_id", "ascending"), ("seq", "ascending")])
    ev = table.drop_columns(["assignment", "partitions"]).to_pandas()
    moved_between = (ev["type"] != "StateChanged") | (
        ev["from_state"].isin(CONSUMER_STATES) & ev["to_state"].isin(CONSUMER_STATES)
    )
    keep = moved_between.to_numpy()
    positions = np.flatnonzero(keep)
    ev = ev[keep].reset_index(drop=True)
    # Item tables keyed by the kept events' positions.
    position_of = np.full(len(keep), -1, dtype=np.int64)
    position_of[positions] = np.arange(len(positions))
    targets = _pairs(table.column("assignment"), position_of, "assignment")
    items = _pairs(table.column("partitions"), position_of, "partitions")
    targets = targets[targets["row"] >= 0]
    items = items[items["row"] >= 0]

    g = pd.Series(pd.factorize(ev["group_id"])[0], index=ev.index)
    call = [g, ev["at_ms"]]
    kind, seq = ev["type"], ev["seq"].astype(np.int64)
    bump = kind == "ConsumerGroupEpochBumped"
    move = kind == "StateChanged"
    state = ev["to_state"].where(move).groupby(g).ffill()
    call_last = seq.groupby(call).transform("max")
    call_bump = seq.where(bump).groupby(call).transform("max")
    call_move = seq.where(move).groupby(call).transform("max")
    settled = (
        (seq == call_last)
        & call_bump.notna()
        & (call_move.isna() | (call_move < call_bump))
        & state.isin(["Stable", "Empty"])
    )
    terminal = (move & ev["to_state"].isin(["Stable", "Empty", "Dead"])) | settled

    def last_before(values: pd.Series) -> pd.Series:
        return values.groupby(g).shift(1).groupby(g).ffill()

    bump_before = last_before(seq.where(bump))
    terminal_before = last_before(seq.where(terminal))
    open_before = bump_before.notna() & (terminal_before.isna() | (bump_before > terminal_before))
    start = bump & ~open_before
    start_before = last_before(seq.where(start))
    start_ahead = seq.where(start).groupby(call).bfill()
    ev["rebalance_id"] = start_before.where(open_before, start_ahead)
    ev["terminal"] = terminal
    ev["state_after"] = ev["to_state"].where(move, state)
    ev["state_before"] = state.groupby(g).shift(1)
    row = pd.Series(np.arange(len(ev)), index=ev.index)
    ev["previous_target_row"] = last_before(row.where(kind == "ConsumerTargetAssignmentComputed"))

    rb = ev[start].set_index("rebalance_id")
    inside = ev[ev["rebalance_id"].notna()]
    ends = inside[inside["terminal"]].drop_duplicates("rebalance_id").set_index("rebalance_id")
    last_target = (
        inside[inside["type"] == "ConsumerTargetAssignmentComputed"]
        .assign(row=lambda f: row[f.index])
        .groupby("rebalance_id")["row"]
        .max()
    )
    out = pd.DataFrame(index=rb.index)
    out["group_id"] = rb["group_id"]
    out["rebalance_id"] = rb.index.to_numpy()
    out["start_ms"] = rb["at_ms"]
    out["end_seq"] = ends["seq"]
    out["end_ms"] = ends["at_ms"]
    end_state = ends["state_after"].reindex(out.index)
    out["completed"] = (end_state == "Stable").fillna(False).astype(bool)
    out["duration_ms"] = (out["end_ms"] - out["start_ms"]).where(out["completed"])
    out["cause"] = rb["cause"].map(lambda c: REPORT_CAUSES.get(c, c) if c else "other")
    from_empty = rb["state_before"].isna() | rb["state_before"].isin(["Empty", "Dead"])
    before_row = rb["previous_target_row"].where(~from_empty)
    before_known = from_empty | rb["previous_target_row"].notna()
    after_known = out["completed"] | end_state.isin(["Empty", "Dead"])
    after_row = last_target.reindex(out.index).where(
        last_target.reindex(out.index).notna(), before_row
    )
    after_row = after_row.where(out["completed"])

    # Owners: the instance id of the member ids tied to one (by a join with it, or as either
    # id of a StaticMemberReplaced), else the member id.
    replaced = ev.loc[kind == "StaticMemberReplaced", ["group_id", "old_member_id"]]
    instances = (
        pd.concat(
            [
                ev.loc[
                    ev["group_instance_id"].notna(), ["group_id", "member_id", "group_instance_id"]
                ],
                replaced.rename(columns={"old_member_id": "member_id"}).assign(
                    group_instance_id=ev.loc[replaced.index, "group_instance_id"]
                ),
            ]
        )
        .dropna(subset=["member_id"])
        .groupby(["group_id", "member_id"])["group_instance_id"]
        .min()
    )

    def owners(frame: pd.DataFrame) -> pd.Series:
        named = frame.join(instances, on=["group_id", "member_id"])["group_instance_id"]
        return named.where(named.notna(), frame["member_id"])

    targets["group_id"] = ev["group_id"].to_numpy()[targets["row"].to_numpy()]
    targets["owner"] = owners(targets)

    def side(rows: pd.Series, name: str) -> pd.DataFrame:
        links = pd.DataFrame({"rebalance_id": rows.index, "row": rows.to_numpy()}).dropna()
        links["row"] = links["row"].astype(np.int64)
        return links.merge(targets, on="row")[
            ["rebalance_id", "topic", "partition", "owner"]
        ].rename(columns={"owner": f"owner_{name}"})

    both = before_known & after_known
    changes = side(before_row[both], "before").merge(
        side(after_row[both], "after"), on=["rebalance_id", "topic", "partition"], how="outer"
    )
    has_before, has_after = changes["owner_before"].notna(), changes["owner_after"].notna()
    same = (changes["owner_before"] == changes["owner_after"]) | (~has_before & ~has_after)
    changes["moved"] = ~same
    changes["kept"] = same & has_before
    changes["both"] = has_before & has_after
    counts = changes.groupby("rebalance_id")[["moved", "kept", "both"]].sum().reindex(out.index)
    counts = counts.fillna(0)
    out["partitions_moved"] = counts["moved"].where(both)
    out["stickiness"] = (counts["kept"] / counts["both"]).where(both & (counts["both"] > 0))

    # Revocations: told to revoke, or removed holding it (its last word on the partition before
    # the removal an assignment); each ends at the group's next assignment of it.
    items["group_id"] = ev["group_id"].to_numpy()[items["row"].to_numpy()]
    for column in ("seq", "at_ms", "member_id", "type", "rebalance_id"):
        items[column] = ev[column].to_numpy()[items["row"].to_numpy()]
    revoked = items[items["type"] == "ConsumerPartitionsRevoked"]
    assigned = items[items["type"] == "ConsumerPartitionsAssigned"]
    removals = ev.loc[kind == "MemberRemoved", ["group_id", "member_id", "seq", "rebalance_id"]]
    removals = removals.assign(owner=owners(removals)).drop(columns="member_id")
    # Each removal ends what its owner held: the next one counts only what came after it.
    removals["previous_removed"] = (
        removals.sort_values("seq").groupby(["group_id", "owner"])["seq"].shift(1).fillna(0)
    )
    words = items.assign(owner=owners(items)).merge(
        removals, on=["group_id", "owner"], suffixes=("", "_removed")
    )
    since_last_removal = words["seq"] > words["previous_removed"]
    words = words[(words["seq"] < words["seq_removed"]) & since_last_removal]
    last_words = words.sort_values("seq").drop_duplicates(
        ["group_id", "owner", "topic", "partition", "seq_removed"], keep="last"
    )
    held = last_words[last_words["type"] == "ConsumerPartitionsAssigned"]
    held = held[["group_id", "topic", "partition", "seq_removed", "rebalance_id_removed"]]
    held = held.rename(columns={"seq_removed": "seq", "rebalance_id_removed": "rebalance_id"})
    held["at_ms"] = held["seq"].map(ev.set_index("seq")["at_ms"])
    revocations = pd.concat(
        [revoked[["group_id", "topic", "partition", "seq", "at_ms", "rebalance_id"]], held]
    ).dropna(subset=["rebalance_id"])
    nxt = pd.merge_asof(
        revocations.sort_values("seq"),
        assigned[["group_id", "topic", "partition", "seq", "at_ms"]]
        .rename(columns={"at_ms": "assigned_ms"})
        .assign(assigned_seq=lambda f: f["seq"])
        .sort_values("seq"),
        on="seq",
        by=["group_id", "topic", "partition"],
        direction="forward",
        allow_exact_matches=False,
    )
    nxt["assigned_seq"] = nxt["assigned_seq"].fillna(-1)
    first = nxt.sort_values("seq").drop_duplicates(
        ["group_id", "topic", "partition", "rebalance_id", "assigned_seq"]
    )
    first = first.join(out[["end_seq", "end_ms"]], on="rebalance_id")
    in_time = (first["assigned_seq"] >= 0) & (
        first["end_seq"].isna() | (first["assigned_seq"] <= first["end_seq"])
    )
    available = first["assigned_ms"].where(in_time, first["end_ms"])
    first["unavailable_ms"] = available - first["at_ms"]
    unavailable = first.groupby("rebalance_id")["unavailable_ms"].sum(min_count=1)
    out["unavailable_partition_ms"] = unavailable.reindex(out.index).fillna(0).where(before_known)
    return out.reset_index(drop=True)


def pandas_report(
    history_dir: str | Path, storm_count: int = 3, storm_window_ms: int = 60_000
) -> dict[str, dict[str, Any]]:
    """Per-group figures of the history under ``history_dir``, in pandas."""
    dataset = _history_dataset(history_dir)
    group_ids = sorted(
        pc.unique(dataset.to_table(columns=["group_id"]).column("group_id")).to_pylist()
    )
    table = dataset.to_table(
        columns=list(COLUMNS), filter=pc.field("type").isin(list(USED_TYPES))
    ).sort_by([("group_id", "ascending"), ("seq", "ascending")])
    # The assignments, one row per (event, partition), apart; the rest as a DataFrame.
    assignment = table.column("assignment").combine_chunks()
    assignment_null = assignment.is_null().to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(assignment)
    owned = pd.DataFrame(
        {
            "row": pc.list_parent_indices(assignment).to_numpy(),
            "member_id": flat.field("member_id").to_numpy(zero_copy_only=False),
            "topic": flat.field("topic").to_numpy(zero_copy_only=False),
            "partition": flat.field("partition").to_numpy(zero_copy_only=False),
        }
    )
    ev = table.drop_columns(["assignment"]).to_pandas()
    ev["assignment_null"] = assignment_null
    n = len(ev)
    ev["row"] = np.arange(n)
    ev["g"] = pd.factorize(ev["group_id"])[0]
    g = ev["g"]
    kind = ev["type"]
    changed = kind == "StateChanged"
    seq = ev["seq"]

    # Rebalance ids, state context.
    is_start = (
        changed
        & (ev["to_state"] == "PreparingRebalance")
        & ev["from_state"].isin(["Stable", "Empty"])
    )
    ev["rebalance_id"] = seq.where(is_start).groupby(g).ffill()
    ev["state_seq"] = seq.where(changed).groupby(g).ffill()
    # The start is a StateChanged: "at or before" the start is "before" it for these two.
    ev["prev_generation_row"] = ev["row"].where(kind == "GenerationStarted").groupby(g).ffill()
    ev["prev_assignment_row"] = ev["row"].where(kind == "AssignmentStored").groupby(g).ffill()
    emptied = changed & ev["to_state"].isin(["Empty", "Dead"])
    ev["next_emptied_row"] = ev["row"].where(emptied).groupby(g).bfill()

    # Ends: the first move to Stable/Empty/Dead after the start.
    terminal = (
        changed & ev["to_state"].isin(["Stable", "Empty", "Dead"]) & ev["rebalance_id"].notna()
    )
    ends = (
        ev[terminal]
        .drop_duplicates("rebalance_id")
        .set_index("rebalance_id")[["seq", "at_ms", "to_state"]]
        .rename(columns={"seq": "end_seq", "at_ms": "end_ms", "to_state": "end_state"})
    )
    ev = ev.join(ends, on="rebalance_id")
    in_rebalance = ev["rebalance_id"].notna() & (
        ev["end_seq"].isna() | (ev["state_seq"] <= ev["end_seq"])
    )
    inside = ev[in_rebalance]
    last_generation_row = (
        inside[inside["type"] == "GenerationStarted"].groupby("rebalance_id")["row"].max()
    )
    stored_row = inside[inside["type"] == "AssignmentStored"].groupby("rebalance_id")["row"].max()

    # One row per rebalance.
    rb = ev[is_start][
        [
            "g",
            "group_id",
            "rebalance_id",
            "at_ms",
            "from_state",
            "reason",
            "cause",
            "end_ms",
            "end_state",
            "prev_generation_row",
            "prev_assignment_row",
            "next_emptied_row",
        ]
    ].rename(columns={"at_ms": "start_ms"})
    rb.index = pd.Index(rb["rebalance_id"].to_numpy())
    rb["last_generation_row"] = last_generation_row
    rb["stored_row"] = stored_row
    rb["completed"] = rb["end_state"] == "Stable"
    rb["duration_ms"] = (rb["end_ms"] - rb["start_ms"]).where(rb["completed"])
    protocol_of = ev["protocol_name"].to_numpy()

    def at_rows(values: np.ndarray, rows: pd.Series) -> pd.Series:
        present = rows.notna()
        out = pd.Series(None, index=rows.index, dtype=object)
        out[present] = values[rows[present].astype(np.int64).to_numpy()]
        return out

    protocol = at_rows(protocol_of, rb["last_generation_row"])
    protocol = protocol.where(protocol.notna(), at_rows(protocol_of, rb["prev_generation_row"]))
    rb["rebalance_protocol"] = np.where(
        protocol.isna(), None, np.where(protocol.isin(COOPERATIVE), "cooperative", "eager")
    )

    # Causes: the engine's, under the report's names.
    rb["cause"] = rb["cause"].map(lambda c: REPORT_CAUSES.get(c, c) if c else "other")

    # Assignments before and after: known or not, and their rows.
    def has_assignment(rows: pd.Series) -> np.ndarray:
        """Whether each row position names an AssignmentStored with an assignment."""
        values = rows.to_numpy(dtype=float)
        present = ~np.isnan(values)
        known = np.zeros(len(values), dtype=bool)
        known[present] = ~assignment_null[values[present].astype(np.int64)]
        return known

    from_empty = rb["from_state"] == "Empty"
    before_known = from_empty | has_assignment(rb["prev_assignment_row"])
    ended_empty = rb["end_state"].isin(["Empty", "Dead"])
    after_known = ended_empty | (
        rb["completed"] & has_assignment(rb["stored_row"].where(rb["completed"]))
    )
    rb["before_known"] = before_known
    rb["after_known"] = after_known

    # Owners: by group_instance_id where the history ties the member id to one.
    named = ev.loc[ev["group_instance_id"].notna(), ["g", "member_id", "group_instance_id"]]
    fenced = ev.loc[kind == "StaticMemberReplaced", ["g", "old_member_id", "group_instance_id"]]
    instances = (
        pd.concat([named, fenced.rename(columns={"old_member_id": "member_id"})])
        .dropna(subset=["member_id"])
        .groupby(["g", "member_id"])["group_instance_id"]
        .min()
    )
    owned["g"] = ev["g"].to_numpy()[owned["row"].to_numpy()]
    owned = owned.join(instances, on=["g", "member_id"])
    owned["owner"] = owned["group_instance_id"].where(
        owned["group_instance_id"].notna(), owned["member_id"]
    )

    def side(rows: pd.Series, name: str) -> pd.DataFrame:
        links = pd.DataFrame({"rebalance_id": rows.index, "row": rows.to_numpy()}).dropna()
        links["row"] = links["row"].astype(np.int64)
        frame = links.merge(owned, on="row")
        return frame[["rebalance_id", "topic", "partition", "member_id", "owner"]].rename(
            columns={"member_id": f"member_{name}", "owner": f"owner_{name}"}
        )

    known_before = rb[rb["before_known"] & ~from_empty]
    before = side(known_before["prev_assignment_row"], "before")
    known_after = rb[rb["before_known"] & rb["after_known"] & rb["completed"]]
    after = side(known_after["stored_row"], "after")
    changes = before.merge(after, on=["rebalance_id", "topic", "partition"], how="outer")
    changes = changes.join(
        rb[["g", "start_ms", "rebalance_protocol", "after_known", "next_emptied_row"]],
        on="rebalance_id",
    )
    has_before = changes["owner_before"].notna()
    has_after = changes["owner_after"].notna()
    same = (changes["owner_before"] == changes["owner_after"]) | (~has_before & ~has_after)
    changes["moved"] = changes["after_known"] & ~same
    changes["kept"] = changes["after_known"] & same & has_before
    changes["both"] = changes["after_known"] & has_before & has_after

    per_rebalance = changes.groupby("rebalance_id")[["moved", "kept", "both"]].sum()
    both_known = rb["before_known"] & rb["after_known"]
    per_rebalance = per_rebalance.reindex(rb.index).fillna(0)
    rb["partitions_moved"] = per_rebalance["moved"].where(both_known)
    rb["stickiness"] = (per_rebalance["kept"] / per_rebalance["both"]).where(
        both_known & (per_rebalance["both"] > 0)
    )

    # Revocations and when each ended.
    eager = changes["rebalance_protocol"] == "eager"
    revoked = changes[has_before & (eager | (changes["after_known"] & ~changes["kept"]))]
    revoked = revoked[
        ["rebalance_id", "g", "topic", "partition", "start_ms", "next_emptied_row"]
    ].copy()
    stored = owned[["row", "g", "topic", "partition"]].copy()
    stored["seq"] = ev["seq"].to_numpy()[stored["row"].to_numpy()]
    stored["at_ms"] = ev["at_ms"].to_numpy()[stored["row"].to_numpy()]
    revoked["seq"] = revoked["rebalance_id"].astype(np.int64)
    nxt = pd.merge_asof(
        revoked.sort_values("seq"),
        stored[["g", "topic", "partition", "seq", "at_ms"]]
        .rename(columns={"at_ms": "assigned_ms"})
        .assign(assigned_seq=lambda f: f["seq"])
        .sort_values("seq"),
        on="seq",
        by=["g", "topic", "partition"],
        direction="forward",
        allow_exact_matches=False,
    )
    emptied_row = nxt["next_emptied_row"]
    emptied_present = emptied_row.notna()
    emptied_seq = pd.Series(np.nan, index=nxt.index)
    emptied_ms = pd.Series(np.nan, index=nxt.index)
    rows = emptied_row[emptied_present].astype(np.int64).to_numpy()
    emptied_seq[emptied_present] = ev["seq"].to_numpy()[rows]
    emptied_ms[emptied_present] = ev["at_ms"].to_numpy()[rows]
    assigned_first = nxt["assigned_seq"].notna() & (
        emptied_seq.isna() | (nxt["assigned_seq"] < emptied_seq)
    )
    ended_ms = nxt["assigned_ms"].where(assigned_first, emptied_ms)
    nxt["unavailable_ms"] = ended_ms - nxt["start_ms"]
    unavailable = nxt.groupby("rebalance_id")["unavailable_ms"].sum(min_count=1)
    rb["unavailable_partition_ms"] = (
        unavailable.reindex(rb.index).fillna(0).where(rb["before_known"])
    )

    # The consumer groups' rebalances (KIP-848) join the classic ones for the storms and the
    # per-group figures.
    per_rebalance = (
        "group_id",
        "rebalance_id",
        "start_ms",
        "completed",
        "duration_ms",
        "cause",
        "partitions_moved",
        "stickiness",
        "unavailable_partition_ms",
    )
    rb = pd.concat(
        [
            rb[list(per_rebalance)].reset_index(drop=True),
            _pandas_consumer(dataset)[list(per_rebalance)],
        ],
        ignore_index=True,
    )
    rb["completed"] = rb["completed"].astype(bool)
    rb["g"] = pd.factorize(rb["group_id"])[0]

    # Storms.
    rb = rb.sort_values(["g", "start_ms", "rebalance_id"])
    span = np.int64(1) << np.int64(44)  # more than any at_ms: keys of two groups never overlap
    key = rb["g"].to_numpy(np.int64) * span + rb["start_ms"].to_numpy(np.int64)
    first = np.searchsorted(key, key, side="left")
    past = np.searchsorted(key, key + storm_window_ms, side="right")
    reach = np.where(past - first >= storm_count, key[past - 1] - (key - rb["start_ms"]), np.nan)
    rb["reach"] = reach
    covered_until = rb["reach"].fillna(-np.inf).groupby(rb["g"]).cummax()
    covered_before = covered_until.groupby(rb["g"]).shift(1)
    in_storm = covered_until >= rb["start_ms"]
    begins = in_storm & (covered_before.isna() | (covered_before < rb["start_ms"]))
    storm_id = rb["rebalance_id"].where(begins).groupby(rb["g"]).ffill()
    rb["storm_id"] = storm_id.where(in_storm)

    # Per group.
    result = {group_id: _no_rebalances() for group_id in group_ids}
    by_group = rb.groupby("group_id")
    quantiles = by_group["duration_ms"].quantile([0.5, 0.95]).unstack()
    figures = pd.DataFrame(
        {
            "rebalances": by_group.size(),
            "completed": by_group["completed"].sum(),
            "duration_max": by_group["duration_ms"].max(),
            "partitions_moved": by_group["partitions_moved"].sum(),
            "stickiness_mean": by_group["stickiness"].mean(),
            "unavailable_ms": by_group["unavailable_partition_ms"].sum(),
            "storms": by_group["storm_id"].nunique(),
        }
    ).join(quantiles)
    cause_counts = rb.groupby(["group_id", "cause"]).size()
    for group_id, row in figures.iterrows():
        result[group_id] = {
            "rebalances": int(row["rebalances"]),
            "completed": int(row["completed"]),
            "duration_ms": {
                "p50": _float_or_none(row[0.5]),
                "p95": _float_or_none(row[0.95]),
                "max": _int_or_none(row["duration_max"]),
            },
            "partitions_moved": int(row["partitions_moved"]),
            "stickiness_mean": _float_or_none(row["stickiness_mean"]),
            "causes": {
                cause: int(count) for cause, count in sorted(cause_counts[group_id].items())
            },
            "unavailable_partition_s": float(row["unavailable_ms"]) / 1000.0,
            "storms": int(row["storms"]),
        }
    return result


# -- DuckDB ----------------------------------------------------------------------------------


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join("'" + value.replace("'", "''") + "'" for value in values)


def _duckdb_sql(storm_count: int, storm_window_ms: int) -> list[str]:
    renamed = " ".join(f"WHEN '{cause}' THEN '{name}'" for cause, name in REPORT_CAUSES.items())
    return [
        # The events in group order, with their rebalance and state.
        f"""
        CREATE TEMP TABLE ev AS
        SELECT *,
            last_value(CASE WHEN is_start THEN seq END IGNORE NULLS) OVER so_far AS rebalance_id,
            last_value(CASE WHEN type = 'StateChanged' THEN seq END IGNORE NULLS)
                OVER so_far AS state_seq,
            last_value(CASE WHEN type = 'GenerationStarted' THEN seq END IGNORE NULLS)
                OVER so_far AS prev_generation_seq,
            last_value(CASE WHEN type = 'AssignmentStored' THEN seq END IGNORE NULLS)
                OVER so_far AS prev_assignment_seq,
            first_value(CASE WHEN type = 'StateChanged' AND to_state IN ('Empty', 'Dead')
                THEN seq END IGNORE NULLS) OVER later AS next_emptied_seq
        FROM (
            SELECT group_id, seq, at_ms, type, from_state, to_state, reason, cause, member_id,
                old_member_id, group_instance_id, protocol_name, assignment,
                coalesce(type = 'StateChanged' AND to_state = 'PreparingRebalance'
                    AND from_state IN ('Stable', 'Empty'), false) AS is_start
            FROM history
            WHERE type IN ({_sql_list(USED_TYPES)})
        )
        WINDOW so_far AS (PARTITION BY group_id ORDER BY seq
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
               later AS (PARTITION BY group_id ORDER BY seq
                         ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
        """,
        """
        CREATE TEMP TABLE ends AS
        SELECT rebalance_id, arg_min(seq, seq) AS end_seq, arg_min(at_ms, seq) AS end_ms,
            arg_min(to_state, seq) AS end_state
        FROM ev
        WHERE type = 'StateChanged' AND to_state IN ('Stable', 'Empty', 'Dead')
            AND rebalance_id IS NOT NULL
        GROUP BY rebalance_id
        """,
        """
        CREATE TEMP TABLE inside AS
        SELECT ev.rebalance_id,
            max(seq) FILTER (WHERE type = 'GenerationStarted') AS last_generation_seq,
            max(seq) FILTER (WHERE type = 'AssignmentStored') AS stored_seq
        FROM ev LEFT JOIN ends USING (rebalance_id)
        WHERE ev.rebalance_id IS NOT NULL
            AND (ends.end_seq IS NULL OR ev.state_seq <= ends.end_seq)
        GROUP BY ev.rebalance_id
        """,
        # One row per rebalance.
        f"""
        CREATE TEMP TABLE rb AS
        SELECT s.group_id, s.rebalance_id, s.at_ms AS start_ms, s.from_state,
            e.end_ms, e.end_state,
            coalesce(e.end_state = 'Stable', false) AS completed,
            CASE WHEN e.end_state = 'Stable' THEN e.end_ms - s.at_ms END AS duration_ms,
            coalesce(CASE s.cause {renamed} END, s.cause, 'other') AS cause,
            CASE
                WHEN coalesce(lg.protocol_name, pg.protocol_name) IS NULL THEN NULL
                WHEN coalesce(lg.protocol_name, pg.protocol_name) IN ({_sql_list(COOPERATIVE)})
                    THEN 'cooperative'
                ELSE 'eager'
            END AS rebalance_protocol,
            CASE WHEN s.from_state = 'Empty' THEN NULL ELSE s.prev_assignment_seq END
                AS before_seq,
            s.from_state = 'Empty' OR (pa.seq IS NOT NULL AND pa.assignment IS NOT NULL)
                AS before_known,
            CASE WHEN e.end_state = 'Stable' THEN i.stored_seq END AS after_seq,
            coalesce(e.end_state IN ('Empty', 'Dead'), false)
                OR (coalesce(e.end_state = 'Stable', false) AND st.assignment IS NOT NULL)
                AS after_known,
            ne.seq AS next_emptied_seq, ne.at_ms AS next_emptied_ms
        FROM ev s
        LEFT JOIN ends e ON e.rebalance_id = s.seq
        LEFT JOIN inside i ON i.rebalance_id = s.seq
        LEFT JOIN ev lg ON lg.seq = i.last_generation_seq
        LEFT JOIN ev pg ON pg.seq = s.prev_generation_seq
        LEFT JOIN ev pa ON pa.seq = s.prev_assignment_seq
        LEFT JOIN ev st ON st.seq = i.stored_seq AND e.end_state = 'Stable'
        LEFT JOIN ev ne ON ne.seq = s.next_emptied_seq
        WHERE s.is_start
        """,
        # Owners: by group_instance_id for the member ids tied to one.
        """
        CREATE TEMP TABLE instances AS
        SELECT group_id, member_id, min(group_instance_id) AS group_instance_id
        FROM (
            SELECT group_id, member_id, group_instance_id FROM ev
            WHERE group_instance_id IS NOT NULL
            UNION ALL
            SELECT group_id, old_member_id, group_instance_id FROM ev
            WHERE type = 'StaticMemberReplaced'
        )
        WHERE member_id IS NOT NULL
        GROUP BY group_id, member_id
        """,
        """
        CREATE TEMP TABLE owned AS
        SELECT o.group_id, o.seq, o.at_ms, o.topic, o.part, o.member_id,
            coalesce(i.group_instance_id, o.member_id) AS owner
        FROM (
            SELECT group_id, seq, at_ms, struct_extract(a, 'member_id') AS member_id,
                struct_extract(a, 'topic') AS topic, struct_extract(a, 'partition') AS part
            FROM (SELECT group_id, seq, at_ms, unnest(assignment) AS a FROM ev
                  WHERE type = 'AssignmentStored')
        ) o
        LEFT JOIN instances i USING (group_id, member_id)
        """,
        """
        CREATE TEMP TABLE changes AS
        WITH before_side AS (
            SELECT r.rebalance_id, o.topic, o.part, o.owner AS owner_before
            FROM rb r JOIN owned o ON o.seq = r.before_seq
            WHERE r.before_known
        ), after_side AS (
            SELECT r.rebalance_id, o.topic, o.part, o.owner AS owner_after
            FROM rb r JOIN owned o ON o.seq = r.after_seq
            WHERE r.before_known AND r.after_known
        )
        SELECT coalesce(b.rebalance_id, a.rebalance_id) AS rebalance_id,
            coalesce(b.topic, a.topic) AS topic,
            coalesce(b.part, a.part) AS part,
            b.owner_before, a.owner_after,
            r.group_id, r.start_ms, r.rebalance_protocol, r.after_known,
            r.next_emptied_seq, r.next_emptied_ms,
            r.after_known AND b.owner_before IS DISTINCT FROM a.owner_after AS moved,
            r.after_known AND b.owner_before IS NOT DISTINCT FROM a.owner_after
                AND b.owner_before IS NOT NULL AS kept,
            r.after_known AND b.owner_before IS NOT NULL AND a.owner_after IS NOT NULL AS both_owned
        FROM before_side b
        FULL OUTER JOIN after_side a
            ON a.rebalance_id = b.rebalance_id AND a.topic = b.topic
            AND a.part = b.part
        JOIN rb r ON r.rebalance_id = coalesce(b.rebalance_id, a.rebalance_id)
        """,
        """
        CREATE TEMP TABLE revoked AS
        SELECT c.rebalance_id, c.group_id, c.topic, c.part, c.start_ms,
            c.next_emptied_seq, c.next_emptied_ms, nxt.seq AS assigned_seq,
            nxt.at_ms AS assigned_ms
        FROM (
            SELECT * FROM changes
            WHERE owner_before IS NOT NULL
                AND (rebalance_protocol = 'eager' OR (after_known AND NOT kept))
        ) c
        ASOF LEFT JOIN owned nxt
            ON nxt.group_id = c.group_id AND nxt.topic = c.topic
            AND nxt.part = c.part AND nxt.seq > c.rebalance_id
        """,
        """
        CREATE TEMP TABLE unavailable AS
        SELECT rebalance_id, sum(
            CASE WHEN assigned_seq IS NOT NULL
                    AND (next_emptied_seq IS NULL OR assigned_seq < next_emptied_seq)
                THEN assigned_ms ELSE next_emptied_ms END - start_ms) AS unavailable_ms
        FROM revoked GROUP BY rebalance_id
        """,
        """
        CREATE TEMP TABLE moves AS
        SELECT rebalance_id, sum(moved::int) AS moved, sum(kept::int) AS kept,
            sum(both_owned::int) AS both_owned
        FROM changes GROUP BY rebalance_id
        """,
        *_duckdb_consumer_sql(renamed),
        # Storms, over the rebalances of both kinds.
        f"""
        CREATE TEMP TABLE stormy AS
        WITH reach AS (
            SELECT rebalance_id, group_id, start_ms,
                CASE WHEN count(*) OVER ahead >= {storm_count} THEN max(start_ms) OVER ahead
                END AS reach
            FROM (SELECT rebalance_id, group_id, start_ms FROM rb
                  UNION ALL SELECT rebalance_id, group_id, start_ms FROM crb)
            WINDOW ahead AS (PARTITION BY group_id ORDER BY start_ms
                             RANGE BETWEEN CURRENT ROW AND {storm_window_ms} FOLLOWING)
        ), covered AS (
            SELECT *,
                max(reach) OVER (PARTITION BY group_id ORDER BY start_ms, rebalance_id
                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS until,
                max(reach) OVER (PARTITION BY group_id ORDER BY start_ms, rebalance_id
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
            FROM reach
        ), flagged AS (
            SELECT *, coalesce(until >= start_ms, false) AS in_storm,
                coalesce(until >= start_ms, false)
                    AND coalesce(before < start_ms, true) AS begins
            FROM covered
        )
        SELECT rebalance_id, CASE WHEN in_storm THEN last_value(
                CASE WHEN begins THEN rebalance_id END IGNORE NULLS) OVER (
                PARTITION BY group_id ORDER BY start_ms, rebalance_id
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS storm_id
        FROM flagged
        """,
        """
        CREATE TEMP TABLE per_rebalance AS
        SELECT r.group_id, r.rebalance_id, r.completed, r.duration_ms, r.cause,
            CASE WHEN r.before_known AND r.after_known THEN coalesce(m.moved, 0) END
                AS partitions_moved,
            CASE WHEN r.before_known AND r.after_known AND m.both_owned > 0
                THEN m.kept / m.both_owned END AS stickiness,
            CASE WHEN r.before_known THEN coalesce(u.unavailable_ms, 0) END
                AS unavailable_partition_ms,
            s.storm_id
        FROM rb r
        LEFT JOIN moves m USING (rebalance_id)
        LEFT JOIN unavailable u USING (rebalance_id)
        LEFT JOIN stormy s USING (rebalance_id)
        UNION ALL
        SELECT r.group_id, r.rebalance_id, r.completed, r.duration_ms, r.cause,
            CASE WHEN r.before_known AND r.after_known THEN coalesce(m.moved, 0) END,
            CASE WHEN r.before_known AND r.after_known AND m.both_owned > 0
                THEN m.kept / m.both_owned END,
            CASE WHEN r.before_known THEN coalesce(u.unavailable_ms, 0) END,
            s.storm_id
        FROM crb r
        LEFT JOIN cmoves m USING (rebalance_id)
        LEFT JOIN cunavailable u USING (rebalance_id)
        LEFT JOIN stormy s USING (rebalance_id)
        """,
    ]


def _duckdb_consumer_sql(renamed: str) -> list[str]:
    """The consumer groups' rebalances (KIP-848): ``crb`` one row each, ``cmoves`` and
    ``cunavailable`` their partition figures."""
    states = _sql_list(CONSUMER_STATES)
    return [
        f"""
        CREATE TEMP TABLE cev0 AS
        SELECT group_id, seq, at_ms, type, from_state, to_state, cause, member_id,
            old_member_id, group_instance_id, assignment, partitions,
            type = 'ConsumerGroupEpochBumped' AS bump, type = 'StateChanged' AS move
        FROM history
        WHERE group_id IN (SELECT DISTINCT group_id FROM history
                           WHERE type IN ({_sql_list(CONSUMER_TYPES)}))
            AND type IN ({
            _sql_list((*CONSUMER_TYPES, "StateChanged", "MemberRemoved", "StaticMemberReplaced"))
        })
            AND (type <> 'StateChanged' OR (from_state IN ({states}) AND to_state IN ({states})))
        """,
        """
        CREATE TEMP TABLE cev1 AS
        SELECT *,
            last_value(CASE WHEN move THEN to_state END IGNORE NULLS) OVER so_far AS state,
            max(seq) OVER call AS call_last,
            max(CASE WHEN bump THEN seq END) OVER call AS call_bump,
            max(CASE WHEN move THEN seq END) OVER call AS call_move
        FROM cev0
        WINDOW so_far AS (PARTITION BY group_id ORDER BY seq
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
               call AS (PARTITION BY group_id, at_ms)
        """,
        """
        CREATE TEMP TABLE cev2 AS
        SELECT *,
            coalesce((move AND to_state IN ('Stable', 'Empty', 'Dead'))
                OR (seq = call_last AND call_bump IS NOT NULL
                    AND (call_move IS NULL OR call_move < call_bump)
                    AND state IN ('Stable', 'Empty')), false) AS terminal
        FROM cev1
        """,
        """
        CREATE TEMP TABLE cev3 AS
        SELECT *, bump AND NOT open_before AS is_start
        FROM (
            SELECT *,
                coalesce(last_value(CASE WHEN bump THEN seq END IGNORE NULLS) OVER before_it
                    > coalesce(last_value(CASE WHEN terminal THEN seq END IGNORE NULLS)
                        OVER before_it, -1), false) AS open_before,
                last_value(CASE WHEN type = 'ConsumerTargetAssignmentComputed' THEN seq END
                    IGNORE NULLS) OVER before_it AS previous_target_seq
            FROM cev2
            WINDOW before_it AS (PARTITION BY group_id ORDER BY seq
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
        )
        """,
        """
        CREATE TEMP TABLE cev AS
        SELECT *,
            CASE WHEN open_before
                THEN last_value(CASE WHEN is_start THEN seq END IGNORE NULLS) OVER before_it
                ELSE first_value(CASE WHEN is_start THEN seq END IGNORE NULLS) OVER ahead
            END AS rebalance_id
        FROM cev3
        WINDOW before_it AS (PARTITION BY group_id ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
               ahead AS (PARTITION BY group_id, at_ms ORDER BY seq
                         ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
        """,
        f"""
        CREATE TEMP TABLE crb AS
        WITH ends AS (
            SELECT rebalance_id, arg_min(seq, seq) AS end_seq, arg_min(at_ms, seq) AS end_ms,
                arg_min(CASE WHEN move THEN to_state ELSE state END, seq) AS end_state
            FROM cev WHERE terminal AND rebalance_id IS NOT NULL GROUP BY rebalance_id
        ), last_targets AS (
            SELECT rebalance_id, max(seq) AS last_target_seq FROM cev
            WHERE type = 'ConsumerTargetAssignmentComputed' AND rebalance_id IS NOT NULL
            GROUP BY rebalance_id
        ), starts AS (
            SELECT s.group_id, s.seq AS rebalance_id, s.at_ms AS start_ms,
                coalesce(s.state, 'Empty') IN ('Empty', 'Dead') AS from_empty,
                s.previous_target_seq,
                coalesce(CASE s.cause {renamed} END, s.cause, 'other') AS cause,
                e.end_seq, e.end_ms, coalesce(e.end_state = 'Stable', false) AS completed,
                coalesce(e.end_state IN ('Empty', 'Dead'), false) AS ended_empty,
                t.last_target_seq
            FROM cev s
            LEFT JOIN ends e ON e.rebalance_id = s.seq
            LEFT JOIN last_targets t ON t.rebalance_id = s.seq
            WHERE s.is_start
        )
        SELECT group_id, rebalance_id, start_ms, cause, end_seq, end_ms, completed,
            CASE WHEN completed THEN end_ms - start_ms END AS duration_ms,
            from_empty OR previous_target_seq IS NOT NULL AS before_known,
            CASE WHEN NOT from_empty THEN previous_target_seq END AS before_seq,
            completed OR ended_empty AS after_known,
            CASE WHEN completed THEN coalesce(last_target_seq,
                CASE WHEN NOT from_empty THEN previous_target_seq END) END AS after_seq
        FROM starts
        """,
        """
        CREATE TEMP TABLE cinstances AS
        SELECT group_id, member_id, min(group_instance_id) AS group_instance_id
        FROM (
            SELECT group_id, member_id, group_instance_id FROM cev
            WHERE group_instance_id IS NOT NULL
            UNION ALL
            SELECT group_id, old_member_id, group_instance_id FROM cev
            WHERE type = 'StaticMemberReplaced'
        )
        WHERE member_id IS NOT NULL
        GROUP BY group_id, member_id
        """,
        """
        CREATE TEMP TABLE ctargets AS
        SELECT t.group_id, t.seq, t.topic, t.part,
            coalesce(i.group_instance_id, t.member_id) AS owner
        FROM (
            SELECT group_id, seq, struct_extract(a, 'member_id') AS member_id,
                struct_extract(a, 'topic') AS topic, struct_extract(a, 'partition') AS part
            FROM (SELECT group_id, seq, unnest(assignment) AS a FROM cev
                  WHERE type = 'ConsumerTargetAssignmentComputed')
        ) t
        LEFT JOIN cinstances i USING (group_id, member_id)
        """,
        """
        CREATE TEMP TABLE cmoves AS
        WITH before_side AS (
            SELECT r.rebalance_id, t.topic, t.part, t.owner AS owner_before
            FROM crb r JOIN ctargets t ON t.seq = r.before_seq
            WHERE r.before_known AND r.after_known
        ), after_side AS (
            SELECT r.rebalance_id, t.topic, t.part, t.owner AS owner_after
            FROM crb r JOIN ctargets t ON t.seq = r.after_seq
            WHERE r.before_known AND r.after_known
        )
        SELECT coalesce(b.rebalance_id, a.rebalance_id) AS rebalance_id,
            sum((b.owner_before IS DISTINCT FROM a.owner_after)::int) AS moved,
            sum((b.owner_before IS NOT DISTINCT FROM a.owner_after
                AND b.owner_before IS NOT NULL)::int) AS kept,
            sum((b.owner_before IS NOT NULL AND a.owner_after IS NOT NULL)::int) AS both_owned
        FROM before_side b
        FULL OUTER JOIN after_side a
            ON a.rebalance_id = b.rebalance_id AND a.topic = b.topic AND a.part = b.part
        GROUP BY ALL
        """,
        """
        CREATE TEMP TABLE citems AS
        SELECT c.group_id, c.seq, c.at_ms, c.type, c.rebalance_id,
            coalesce(i.group_instance_id, c.member_id) AS owner,
            struct_extract(c.p, 'topic') AS topic, struct_extract(c.p, 'partition') AS part
        FROM (SELECT *, unnest(partitions) AS p FROM cev
              WHERE type IN ('ConsumerPartitionsRevoked', 'ConsumerPartitionsAssigned')) c
        LEFT JOIN cinstances i USING (group_id, member_id)
        """,
        """
        CREATE TEMP TABLE cunavailable AS
        WITH removals AS (
            SELECT group_id, owner, seq, at_ms, rebalance_id,
                lag(seq, 1, 0) OVER (PARTITION BY group_id, owner ORDER BY seq) AS previous_seq
            FROM (
                SELECT c.group_id, coalesce(i.group_instance_id, c.member_id) AS owner, c.seq,
                    c.at_ms, c.rebalance_id
                FROM cev c LEFT JOIN cinstances i USING (group_id, member_id)
                WHERE c.type = 'MemberRemoved'
            )
        ), held AS (
            SELECT r.group_id, i.topic, i.part, r.seq, any_value(r.at_ms) AS at_ms,
                any_value(r.rebalance_id) AS rebalance_id, arg_max(i.type, i.seq) AS last_word
            FROM removals r
            JOIN citems i ON i.group_id = r.group_id AND i.owner = r.owner AND i.seq < r.seq
                AND i.seq > r.previous_seq
            GROUP BY r.group_id, r.owner, i.topic, i.part, r.seq
        ), revocations AS (
            SELECT group_id, topic, part, seq, at_ms, rebalance_id FROM citems
            WHERE type = 'ConsumerPartitionsRevoked'
            UNION ALL
            SELECT group_id, topic, part, seq, at_ms, rebalance_id FROM held
            WHERE last_word = 'ConsumerPartitionsAssigned'
        ), assigned AS (
            SELECT group_id, topic, part, seq, at_ms FROM citems
            WHERE type = 'ConsumerPartitionsAssigned'
        ), following AS (
            SELECT c.*, nxt.seq AS assigned_seq, nxt.at_ms AS assigned_ms
            FROM (SELECT * FROM revocations WHERE rebalance_id IS NOT NULL) c
            ASOF LEFT JOIN assigned nxt
                ON nxt.group_id = c.group_id AND nxt.topic = c.topic AND nxt.part = c.part
                AND nxt.seq > c.seq
        ), intervals AS (
            SELECT rebalance_id, assigned_seq, any_value(assigned_ms) AS assigned_ms,
                arg_min(at_ms, seq) AS revoked_ms
            FROM following
            GROUP BY group_id, topic, part, rebalance_id, assigned_seq
        )
        SELECT i.rebalance_id, sum(
            CASE WHEN i.assigned_seq IS NOT NULL
                    AND (r.end_seq IS NULL OR i.assigned_seq <= r.end_seq)
                THEN i.assigned_ms ELSE r.end_ms END - i.revoked_ms) AS unavailable_ms
        FROM intervals i JOIN crb r USING (rebalance_id)
        GROUP BY i.rebalance_id
        """,
    ]


def duckdb_report(
    history_dir: str | Path, storm_count: int = 3, storm_window_ms: int = 60_000
) -> dict[str, dict[str, Any]]:
    """Per-group figures of the history under ``history_dir``, in DuckDB SQL."""
    import duckdb

    connection = duckdb.connect(config={"threads": 2})
    try:
        pattern = str(Path(history_dir) / "*" / "*.parquet").replace("'", "''")
        connection.execute(
            f"CREATE TEMP VIEW history AS SELECT * FROM read_parquet('{pattern}', "
            "hive_partitioning = false)"
        )
        for statement in _duckdb_sql(storm_count, storm_window_ms):
            connection.execute(statement)
        group_ids = [
            row[0] for row in connection.execute("SELECT DISTINCT group_id FROM history").fetchall()
        ]
        result = {group_id: _no_rebalances() for group_id in sorted(group_ids)}
        rows = connection.execute(
            """
            SELECT group_id, count(*), sum(completed::int),
                quantile_cont(duration_ms, 0.5), quantile_cont(duration_ms, 0.95),
                max(duration_ms), sum(partitions_moved), avg(stickiness),
                sum(unavailable_partition_ms), count(DISTINCT storm_id)
            FROM per_rebalance GROUP BY group_id
            """
        ).fetchall()
        causes: dict[str, dict[str, int]] = {}
        for group_id, cause, count in connection.execute(
            "SELECT group_id, cause, count(*) FROM per_rebalance GROUP BY ALL ORDER BY cause"
        ).fetchall():
            causes.setdefault(group_id, {})[cause] = count
    finally:
        connection.close()
    for group_id, count, completed, p50, p95, longest, moved, sticky, unavailable, storms in rows:
        result[group_id] = {
            "rebalances": count,
            "completed": int(completed),
            "duration_ms": {
                "p50": _float_or_none(p50),
                "p95": _float_or_none(p95),
                "max": _int_or_none(longest),
            },
            "partitions_moved": int(moved or 0),
            "stickiness_mean": _float_or_none(sticky),
            "causes": causes.get(group_id, {}),
            "unavailable_partition_s": float(unavailable or 0) / 1000.0,
            "storms": storms,
        }
    return result


PEERS = {"pandas": pandas_report, "duckdb": duckdb_report}


def main() -> None:
    parser = argparse.ArgumentParser(description="Run one peer of the rebalance report.")
    parser.add_argument("peer", choices=sorted(PEERS))
    parser.add_argument("history", help="the history directory")
    parser.add_argument("--storm-count", type=int, default=3)
    parser.add_argument("--storm-window-ms", type=int, default=60_000)
    args = parser.parse_args()
    started = time.perf_counter()
    groups = PEERS[args.peer](args.history, args.storm_count, args.storm_window_ms)
    seconds = time.perf_counter() - started
    print(json.dumps({"peer": args.peer, "seconds": seconds, "groups": groups}))


if __name__ == "__main__":
    sys.exit(main())
