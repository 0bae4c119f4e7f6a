"""A synthetic rebalance history: the real engine, driven in virtual time by simulated members.

``generate_history(out_dir, events, seed=...)`` writes a history of (at least) ``events``
events to ``out_dir`` in the layout ``export_history`` writes (``webapp.analysis.export``), so
the Spark jobs can be tried, tested and measured on histories of any size without running a
cluster for days. Nothing here needs Django (a layout test keeps it so).

The modules, by concern: ``catalogue`` (the applications and topics), ``churn`` (what happens
to a group's members), ``members`` (the simulated consumers), ``host`` (what those two use of
the run and the group above them), ``virtual_time`` (the agenda), ``coordinator_run`` (one
engine and its groups), ``rows`` (events as history rows), ``plan``
(groups and events shared out over the coordinators), ``merge`` (running the coordinators and
merging their events), ``generate`` (``generate_history``), ``summary`` (what was done).

Theory of operation
===================

**The cluster.** ``COORDINATORS`` (2) ``GroupCoordinator`` engines, each owning a share of the
50 coordinator partitions (``CoordinatorConfig.owned_partitions``), as Kafka spreads groups
over brokers; the groups' partitions are shared out so that both carry a similar load. Each
engine runs with Kafka's broker defaults except ``offsets.retention.minutes``, one day instead
of seven, so that offsets expire within the history, and a record log that keeps each key's
latest record only (memory stays flat; with ``record_logs``, every record also goes to an
``SqliteLog`` file per coordinator, as a runtime's log would hold them before compaction).
Each coordinator's share of the work runs on its own (in a process of its own when ``jobs``
is 2); their events are merged into one history by time (ties: coordinator, then emission
order) and numbered from 1 (``seq``), each row with its group's previous ``seq``
(``prev_seq``), as the runtime numbers them. The result does not depend on ``jobs``.

**The members** (``members``) are the library's consumer clients, ``GroupClient`` for a classic
group, ``HandoffClient`` for a handoff group and ``ConsumerClient`` for a consumer-protocol group
(KIP-848), with the host a consumer process adds around one: requests go straight to the
coordinator's engine, FindCoordinator and Metadata are answered from the run's cluster, and the
application polls, consumes at a steady rate and commits (auto-commit for classic members,
``commit()`` every commit interval for handoff members). So the history shows what the library's
client does, as Kafka's consumer does it (``AbstractCoordinator`` / ``ConsumerCoordinator``):
JoinGroup with one protocol per assignor, MEMBER_ID_REQUIRED answered by joining again with the
given id (KIP-394), the leader running the real assignor over fresh metadata, followers an empty
SyncGroup, heartbeats, rejoins on REBALANCE_IN_PROGRESS at the next poll (eager members commit and
revoke everything first; cooperative members keep their partitions and rejoin at once after a sync
that took some away, KIP-429), ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID resets, an OffsetFetch for
new partitions, metadata refreshed every ``metadata.max.age.ms`` (a grown topic makes the member
rejoin), and commits with generation and member id.

**Virtual time.** A heap of timed actions and the engine's ``next_deadline_ms()`` decide what
happens next; nothing waits. Each member wakes at its client's ``next_deadline_ms()`` or its
application's next poll that matters (the auto-commit, a rejoin waiting for a poll, which comes
within half a second, ``max.poll.interval.ms`` running out). Answers arrive at once, except
that the leader's Metadata for its assignment comes a few milliseconds late (it computes the
assignment meanwhile) and a parked JoinGroup or SyncGroup is delivered when the engine
completes it. One liberty is taken with heartbeats: the clients run with ``quiet_heartbeats``,
so a member of a quiet group sends only the last heartbeat before its session would expire
instead of one every ``heartbeat.interval.ms``; the engine's state is the same (a heartbeat to a
Stable group only pushes the member's session deadline), and as soon as the group changes (any
StateChanged, GenerationStarted, MemberRemoved or StaticMemberReplaced event, a handoff plan,
close or grant, or a consumer group's epoch bump, member state change, revocation or assignment)
every member's client hears ``group_changed`` and heartbeats at its next regular tick, where it
would have learnt of the change.

**What happens.** The catalogue (``GROUPS``) runs seventeen applications: every assignor (range,
roundrobin, sticky, cooperative-sticky), eager and cooperative groups, static members, two
applications that run by day, one job that only commits offsets, and the handoff and
consumer-protocol groups on the workloads of some of them (docs/analysis.md has the table). A churn
process picks a group and one action at a time: a member joins; a dynamic member leaves
(LeaveGroup); a member crashes (no LeaveGroup; the engine notices on its session timeout, or at the
end of a join phase or sync that it missed); a member is too slow (its processing outlasts
``max.poll.interval.ms``, which runs out that long after the poll that fetched the batch: a dynamic
one leaves with Kafka's poll-timeout reason, a static one sends nothing, and both join again when
the processing ends); a static member restarts (it comes back with the same ``group.instance.id``
and a new member id, mostly within its session timeout: the engine replaces it without a
rebalance, StaticMemberReplaced); an admin triggers a rebalance (``trigger_rebalance``) or
removes a static member (LeaveGroup by instance id). Topics gain
partitions at random times (three times a day over the catalogue); every member of a group that
subscribes notices at its next metadata refresh (within ``metadata.max.age.ms``, five minutes) and
asks to rejoin; the first to poll starts the rebalance. The daily applications shut down every
evening (dynamic members leave, static ones stop and an admin removes them); then an admin does the
next of ``NIGHTLY_CHORES`` (each application starts at its own, so that the two with members do all
four in their first two nights): delete the offsets of one topic or of all (OffsetDelete; the latter
removes the group), delete the group (DeleteGroups), or nothing, and when the next start is more
than a day away ``cleanup`` (run every ``offsets.retention.check.interval.ms``) expires the group.
The offsets-only job commits with generation -1 for a few hours a day, and its offsets expire
between runs.

**Pace.** The history starts at ``START_MS`` (2026-03-02 00:00 UTC) and spreads over about
``SPAN_MS`` (four days) whatever ``events`` is: each coordinator has a share of ``events`` in
proportion to its members, the churn runs at the rate that meets it (with feedback: ahead of
schedule it slows down, behind it speeds up, never below ``MIN_CHURN_GAP_MS`` between actions)
and each member commits about every ``tempo × members / COMMIT_SHARE``, so commits are about
half of the events (in a real cluster they are nearly all). Timeouts stay Kafka's; only the
churn and the commits are paced.

**How ``events`` is honoured: at least ``events``.** A coordinator that has emitted its share
takes no new action (no churn, commits, admin actions, partition changes or cleanups) but runs
on until every group has settled (all its live members Stable in the group's current
generation, no member awaiting a timeout), so the history never ends in the middle of a
rebalance and every action counted in the summary has all its events. The surplus is that
settling: tens of events for a small history, about a hundred for a million.

**The summary** (``GeneratedHistory``, also written to ``DIR/_generated.json``) counts what the
generator did, in its own terms and independently of the engine's events, per group: the
actions above and the generations its members saw complete (distinct generation ids answered
NONE by SyncGroup), which an end-to-end test of a report can compare with what the report
finds in the events.

**Deterministic.** Every random choice comes from ``random.Random`` seeded with the seed and the
coordinator's index; member order is list order; the engine is deterministic. The same
``events`` and ``seed`` give the same files, row for row.
"""

from __future__ import annotations

from .catalogue import GROUPS, SPAN_MS, START_MS, GroupSpec, catalogue
from .coordinator_run import COORDINATORS
from .generate import generate_history
from .plan import coordinator_configs, record_log_path
from .summary import GeneratedHistory, GroupSummary

__all__ = [
    "COORDINATORS",
    "GROUPS",
    "SPAN_MS",
    "START_MS",
    "GeneratedHistory",
    "GroupSpec",
    "GroupSummary",
    "catalogue",
    "coordinator_configs",
    "generate_history",
    "record_log_path",
]
