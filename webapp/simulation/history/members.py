"""The simulated members: a classic group's consumer and a handoff group's, in virtual time.

See the package docstring for what they do and the one liberty taken (quiet heartbeats).
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coordinator_engine import (
    Errors,
    HandoffHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    PartitionOffset,
    SyncGroupRequest,
    TopicPartition,
)
from coordinator_engine.assignors import TopicPartitionPair
from coordinator_engine.client import CLOSE_REASON, POLL_TIMEOUT_REASON
from coordinator_engine.client.protocol import AssignorState, assigned_partitions, join_protocols
from coordinator_engine.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from coordinator_engine.requests import Assignment
from coordinator_engine.responses import JoinGroupResponse, SyncGroupResponse

from .catalogue import SECOND_MS, START_MS

if TYPE_CHECKING:
    from .churn import GroupRun
    from .coordinator_run import CoordinatorRun

#: A member's poll loop: it acts on a rejoin request within this.
POLL_INTERVAL_MS = 500
#: Records a partition grows by per second (the offsets members commit).
RECORDS_PER_SECOND = 25

NONE = Errors.NONE


class _State(enum.Enum):
    """A simulated member's place in the protocol (Kafka's ``MemberState``, coarser)."""

    UNJOINED = "unjoined"  # must join at its next poll
    JOINING = "joining"  # JoinGroup sent, answer awaited
    SYNCING = "syncing"  # JoinGroup answered, SyncGroup to send or answer awaited
    STABLE = "stable"
    DEAD = "dead"


UNJOINED, JOINING, SYNCING, STABLE, DEAD = _State


def consumed_offset(now: int) -> int:
    """What a member has consumed of a partition by ``now`` (offsets grow at a steady rate)."""
    return (now - START_MS) * RECORDS_PER_SECOND // SECOND_MS


class Process:
    """What a classic and a handoff member share: their commit ticks' start, their heartbeats'
    schedule, waking up when the group changes (quiet heartbeats: see the module docstring),
    and dying."""

    __slots__ = (
        "alive",
        "commit_due",
        "group",
        "hb_due",
        "hb_last",
        "heartbeat_ms",
        "member_id",
        "run",
    )

    run: CoordinatorRun
    group: GroupRun
    alive: bool
    hb_due: int | None
    hb_last: int
    heartbeat_ms: int
    commit_due: int
    member_id: str

    @property
    def in_group(self) -> bool:
        """Heartbeating in the group (woken by its changes)."""
        raise NotImplementedError

    def heartbeat(self, due: int) -> None:
        raise NotImplementedError

    def commit_tick(self, due: int) -> None:
        raise NotImplementedError

    def schedule_commits(self, delay_ms: int) -> None:
        """The first commit tick, at a random point of the first interval."""
        run = self.run
        interval = run.commit_interval_ms
        self.commit_due = run.now + delay_ms + run.rng.randrange(interval // 2, interval + 1)
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    def schedule_heartbeat(self, due: int) -> None:
        self.hb_due = due
        run = self.run
        heapq.heappush(run.heap, (due, next(run.order), self.heartbeat, due))  # run.at, inlined

    def wake(self) -> None:
        """The group changed: heartbeat at the next regular tick, where a member learns of it."""
        due = self.hb_due
        if due is not None and self.in_group:
            last = self.hb_last
            tick = last + ((self.run.now - last) // self.heartbeat_ms + 1) * self.heartbeat_ms
            if tick < due:
                self.schedule_heartbeat(tick)

    def commit_positions(
        self,
        partitions: Sequence[TopicPartitionPair],
        generation_id: int,
        instance_id: str | None,
    ) -> None:
        """Commit what it consumed of ``partitions``, in that order, with its member id; a
        commit stored without error counts in the summary."""
        run = self.run
        position = consumed_offset(run.now)
        response = run.handle(
            OffsetCommitRequest(
                group_id=self.group.spec.group_id,
                generation_id=generation_id,
                member_id=self.member_id,
                group_instance_id=instance_id,
                offsets=tuple(
                    [
                        PartitionOffset(
                            topic=topic, partition=partition, offset=position + partition
                        )
                        for topic, partition in partitions
                    ]
                ),
            )
        )
        if all(result.error_code == NONE for result in response.partitions):
            self.group.summary.commits += 1

    def die(self) -> None:
        self.alive = False
        self.hb_due = None
        self.group.members.remove(self)  # type: ignore[arg-type]

    def crash(self) -> None:
        self.group.summary.crashes += 1
        self.die()


class Member(Process):
    """One consumer process of a group (see the module docstring for what it does)."""

    __slots__ = (
        "assignor_state",
        "client_host",
        "client_id",
        "crash_on",
        "generation",
        "hb_request",
        "instance_id",
        "max_poll_ms",
        "owned",
        "protocol",
        "quiet_heartbeat_ms",
        "rejoin_reason",
        "session_ms",
        "stalled_until",
        "state",
    )

    def __init__(self, group: GroupRun, client_id: str, instance_id: str | None, host: int) -> None:
        spec = group.spec
        self.group = group
        self.run = group.run
        self.client_id = client_id
        self.client_host = f"/10.{group.run.index}.{group.number}.{host}"
        self.instance_id = instance_id
        self.session_ms = (
            spec.static_session_timeout_ms if instance_id is not None else spec.session_timeout_ms
        )
        self.heartbeat_ms = spec.heartbeat_interval_ms
        self.max_poll_ms = spec.max_poll_interval_ms
        # A quiet group's member heartbeats once per this (the last regular tick before its
        # session would expire).
        self.quiet_heartbeat_ms = max(1, (self.session_ms - 1) // self.heartbeat_ms) * (
            self.heartbeat_ms
        )
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.state = UNJOINED
        self.owned: tuple[TopicPartitionPair, ...] = ()
        self.assignor_state = AssignorState()
        self.alive = True
        self.rejoin_reason: str | None = "joining the group"
        self.stalled_until = 0
        self.crash_on: str | None = None  # "rebalance" or "join": dies at that step
        self.hb_last = 0
        self.hb_due: int | None = None
        self.hb_request: HeartbeatRequest | None = None
        self.commit_due = 0

    # -- life ----------------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        return self.state is STABLE

    def start(self, delay_ms: int) -> None:
        run = self.run
        run.at(run.now + delay_ms, self.poll, None)
        self.schedule_commits(delay_ms)

    def die(self) -> None:
        self.state = DEAD
        super().die()

    def fail(self) -> None:
        self.group.summary.fatal_errors += 1
        self.die()

    def close(self) -> None:
        """Kafka's ``close()``: commit, and LeaveGroup for a dynamic member in the group."""
        if self.state is STABLE:
            self.commit(self.owned)
        if self.instance_id is None and self.member_id and self.state is not UNJOINED:
            response = self.run.handle(
                LeaveGroupRequest(
                    group_id=self.group.spec.group_id,
                    members=(MemberIdentity(member_id=self.member_id, reason=CLOSE_REASON),),
                )
            )
            if response.error_code == NONE and response.members[0].error_code == NONE:
                self.group.summary.leaves += 1
        self.die()

    @property
    def stalled(self) -> bool:
        return self.run.now < self.stalled_until

    # -- joining -------------------------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        """Rejoin at the next poll (Kafka's ``requestRejoin``)."""
        if self.rejoin_reason is None:
            self.rejoin_reason = reason
            if self.state is STABLE and not self.stalled:
                self.schedule_poll()

    def schedule_poll(self) -> None:
        run = self.run
        run.at(run.now + run.rng.randrange(1, POLL_INTERVAL_MS), self.poll, None)

    def poll(self, _: Any) -> None:
        """The application's poll(): a pending rejoin starts here."""
        if not self.alive or self.rejoin_reason is None or self.stalled:
            return
        if self.state is STABLE:
            if self.crash_on == "rebalance":
                self.crash()
                return
            if not self.group.spec.cooperative and self.owned:
                self.commit(self.owned)  # onJoinPrepare: commit, then revoke everything
                self.owned = ()
            self.join()
        elif self.state is UNJOINED:
            self.join()

    def reset(self, reason: str, *, member_id: bool) -> None:
        """Out of the group (Kafka's ``resetStateAndRejoin``): its partitions are lost."""
        if member_id:
            self.member_id = ""
        self.generation = -1
        self.protocol = None
        self.owned = ()
        self.state = UNJOINED
        self.hb_due = None
        self.rejoin_reason = reason
        if not self.stalled:
            self.schedule_poll()

    def join(self) -> None:
        spec = self.group.spec
        reason = self.rejoin_reason
        self.rejoin_reason = None
        self.state = JOINING
        self.hb_due = None
        request = JoinGroupRequest(
            group_id=spec.group_id,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            session_timeout_ms=self.session_ms,
            rebalance_timeout_ms=self.max_poll_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=join_protocols(
                spec.assignors, spec.topics, self.owned, self.generation, self.assignor_state
            ),
            client_id=self.client_id,
            client_host=self.client_host,
            reason=reason,
        )
        self.run.send(request, self.on_join)

    def on_join(self, response: JoinGroupResponse) -> None:
        if not self.alive or self.state is not JOINING:
            return
        code = response.error_code
        if code == NONE:
            if self.crash_on == "join":
                self.crash()
                return
            run = self.run
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.protocol = response.protocol_name
            self.state = SYNCING
            if response.leader == self.member_id and not response.skip_assignment:
                assert self.protocol is not None
                assignments = run.assign(self.protocol, response.members)
                delay = 2 + len(response.members) + run.rng.randrange(20)
                run.at(run.now + delay, self.sync, (self.generation, assignments))
            else:
                self.sync((self.generation, ()))
        elif code == Errors.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self.rejoin_reason = f"rejoining with the member id {response.member_id}"
            self.join()
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            self.owned = ()
            self.rejoin_reason = "JoinGroup answered UNKNOWN_MEMBER_ID"
            self.join()
        elif code in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
            self.rejoin_reason = f"JoinGroup answered {Errors.name_of(code)}"
            self.join()
        else:
            self.fail()

    def sync(self, work: tuple[int, tuple[Assignment, ...]]) -> None:
        generation, assignments = work
        if not self.alive or self.state is not SYNCING or self.generation != generation:
            return
        self.run.send(
            SyncGroupRequest(
                group_id=self.group.spec.group_id,
                generation_id=generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=self.protocol,
                assignments=assignments,
            ),
            self.on_sync,
        )

    def on_sync(self, response: SyncGroupResponse) -> None:
        if not self.alive or self.state is not SYNCING:
            return
        code = response.error_code
        if code == NONE:
            self.stable(assigned_partitions(response.assignment) or ())
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.state = JOINING
            self.rejoin_reason = "the group began another rebalance"
            self.join()
        elif code in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self.generation = -1
            self.owned = ()
            self.rejoin_reason = f"SyncGroup answered {Errors.name_of(code)}"
            self.join()
        else:
            self.fail()

    def stable(self, assigned: Sequence[TopicPartitionPair]) -> None:
        """Kafka's ``onJoinComplete``."""
        run = self.run
        group = self.group
        group.generation_completed(self.generation)
        self.state = STABLE
        revoked = set(self.owned).difference(assigned)
        self.owned = tuple(sorted(assigned))
        self.assignor_state = AssignorState(
            previous_assignment=self.owned, generation=self.generation
        )
        self.hb_request = HeartbeatRequest(
            group_id=group.spec.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        self.hb_last = run.now
        self.schedule_heartbeat(run.now + self.heartbeat_ms)
        if revoked:
            # Cooperative: give up what moved (committing it first), then the second round.
            self.commit(tuple(sorted(revoked)))
            self.rejoin_reason = "need to revoke partitions and re-join"
            self.join()
        elif self.rejoin_reason is not None and not self.stalled:
            self.schedule_poll()

    # -- heartbeats ----------------------------------------------------------------------------

    def heartbeat(self, due: int) -> None:
        if not self.alive or self.state is not STABLE or due != self.hb_due:
            return
        assert self.hb_request is not None
        now = self.run.now
        # run.handle inlined (a heartbeat is always answered at once): heartbeats are most of
        # the simulation's steps.
        reply = self.run.coordinator.handle(self.hb_request, now)
        code = reply.response.error_code  # type: ignore[union-attr]
        if code == NONE:
            self.hb_last = now
            self.schedule_heartbeat(now + self.quiet_heartbeat_ms)
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.hb_last = now
            self.schedule_heartbeat(now + self.heartbeat_ms)
            self.request_rejoin("the group is rebalancing")
        elif code == Errors.ILLEGAL_GENERATION:
            self.reset("Heartbeat answered ILLEGAL_GENERATION", member_id=False)
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.reset("Heartbeat answered UNKNOWN_MEMBER_ID", member_id=True)
        else:
            self.fail()

    # -- commits -------------------------------------------------------------------------------

    def commit(self, partitions: Sequence[TopicPartitionPair]) -> None:
        """Commit the consumed position of ``partitions`` (with generation and member id)."""
        if partitions and self.member_id:
            self.commit_positions(partitions, self.generation, self.instance_id)

    def commit_tick(self, due: int) -> None:
        """Auto-commit, every ``commit_interval_ms`` of its coordinator's pace."""
        run = self.run
        if not self.alive or due != self.commit_due or run.draining:
            return
        if self.state is STABLE:
            self.commit(self.owned)
        self.commit_due = run.now + run.commit_interval_ms
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    # -- slowness ------------------------------------------------------------------------------

    def stall(self, duration_ms: int) -> None:
        """The application spends ``duration_ms`` (> max.poll.interval.ms) on one batch."""
        run = self.run
        self.group.summary.slow_members += 1
        self.stalled_until = run.now + duration_ms
        run.at(run.now + self.max_poll_ms, self.poll_timeout, self.stalled_until)
        run.at(self.stalled_until, self.unstall, self.stalled_until)

    def poll_timeout(self, token: int) -> None:
        """KIP-62: the heartbeat thread gives up on the application; a dynamic member leaves."""
        if not self.alive or token != self.stalled_until or self.state is not STABLE:
            return
        if self.instance_id is None:
            self.run.handle(
                LeaveGroupRequest(
                    group_id=self.group.spec.group_id,
                    members=(MemberIdentity(member_id=self.member_id, reason=POLL_TIMEOUT_REASON),),
                )
            )
        self.reset("consumer pro-actively leaving the group", member_id=True)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            self.poll(None)


class HandoffMember(Process):
    """One consumer process of a handoff group (seed 004): it speaks only HandoffHeartbeat.

    It joins with epoch 0 under an id of its own (KIP-1082), consumes exactly the partitions it
    was granted and confirmed, and answers a ``close`` as the seed's consumer does: it stops the
    partition, commits its position, and confirms in its next heartbeat (at once, unless its
    processing is stalled: then when the stall ends). Quiet heartbeats as ``Member``'s."""

    __slots__ = (
        "client_host",
        "client_id",
        "closed",
        "closing",
        "consuming",
        "epoch",
        "quiet_heartbeat_ms",
        "quiet_request",
        "session_ms",
        "stalled_until",
        "started",
    )

    instance_id = None

    def __init__(self, group: GroupRun, client_id: str, host: int) -> None:
        spec = group.spec
        self.group = group
        self.run = group.run
        self.client_id = client_id
        self.client_host = f"/10.{group.run.index}.{group.number}.{host}"
        self.member_id = self.new_id()
        self.session_ms = spec.session_timeout_ms
        self.heartbeat_ms = spec.heartbeat_interval_ms
        self.quiet_heartbeat_ms = max(1, (self.session_ms - 1) // self.heartbeat_ms) * (
            self.heartbeat_ms
        )
        self.epoch = 0
        self.alive = True
        self.consuming: set[TopicPartitionPair] = set()
        self.closing: set[TopicPartitionPair] = set()  # asked to close, not confirmed yet
        self.closed: set[TopicPartitionPair] = set()  # closes to confirm at the next heartbeat
        self.started: set[TopicPartitionPair] = set()  # starts to confirm at the next heartbeat
        self.stalled_until = 0
        self.hb_last = 0
        self.hb_due: int | None = None
        self.commit_due = 0
        self.quiet_request: HandoffHeartbeatRequest | None = None

    def new_id(self) -> str:
        return f"{self.client_id}-{self.run.rng.getrandbits(48):012x}"

    @property
    def stalled(self) -> bool:
        return self.run.now < self.stalled_until

    @property
    def settled(self) -> bool:
        return self.epoch > 0 and not (self.closing or self.closed or self.started)

    # -- life ----------------------------------------------------------------------------------

    @property
    def in_group(self) -> bool:
        return self.epoch > 0

    def start(self, delay_ms: int) -> None:
        self.schedule_heartbeat(self.run.now + delay_ms)
        self.schedule_commits(delay_ms)

    def close(self) -> None:
        """Commit what it consumes, then leave (epoch -1): its partitions are free at once."""
        self.commit(self.consuming)
        if self.epoch > 0:
            response = self.run.handle(self.request(-1))
            if response.error_code == NONE:
                self.group.summary.leaves += 1
        self.die()

    def stall(self, duration_ms: int) -> None:
        """Its processing is stuck for ``duration_ms``: heartbeats go on (Kafka's heartbeat
        thread), but a close is confirmed only once the batch is done."""
        self.group.summary.slow_members += 1
        self.stalled_until = self.run.now + duration_ms
        self.run.at(self.stalled_until, self.unstall, self.stalled_until)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            self.confirm_closes()

    # -- heartbeats ----------------------------------------------------------------------------

    def request(self, epoch: int) -> HandoffHeartbeatRequest:
        if not (self.closed or self.started):  # most heartbeats: the same request as before
            quiet = self.quiet_request
            if quiet is None or quiet.member_epoch != epoch or quiet.member_id != self.member_id:
                quiet = self.quiet_request = self.new_request(epoch)
            return quiet
        return self.new_request(epoch)

    def new_request(self, epoch: int) -> HandoffHeartbeatRequest:
        return HandoffHeartbeatRequest(
            group_id=self.group.spec.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            session_timeout_ms=self.session_ms,
            topics=self.group.spec.topics,
            closed=topic_partitions(self.closed),
            started=topic_partitions(self.started),
            client_id=self.client_id,
            client_host=self.client_host,
        )

    def heartbeat(self, due: int) -> None:
        if not self.alive or due != self.hb_due:
            return
        run = self.run
        now = run.now
        closed, started = self.closed, self.started
        response = run.handle(self.request(self.epoch))
        code = response.error_code
        self.hb_last = now
        if code == NONE:
            self.epoch = response.member_epoch
            closed.clear()
            started.clear()
            # Every partition asked is confirmed, started or not (a grant can be taken back
            # before the member started it: it must still confirm, docs/engine.md).
            self.closing.update((tp.topic, tp.partition) for tp in response.close)
            for topic_partition in response.start:
                tp = (topic_partition.topic, topic_partition.partition)
                if tp not in self.consuming:
                    self.consuming.add(tp)
                    started.add(tp)
            if response.group_state == "Stable":
                self.group.generation_completed(self.epoch)
            self.confirm_closes()
            if self.hb_due == due:  # nothing to confirm: the next regular or quiet tick
                busy = response.group_state != "Stable" or self.closing
                self.schedule_heartbeat(
                    now + (self.heartbeat_ms if busy else self.quiet_heartbeat_ms)
                )
        elif code == Errors.UNKNOWN_MEMBER_ID:
            # Removed (its session expired while it was away): it lost everything.
            self.consuming.clear()
            self.closing.clear()
            closed.clear()
            started.clear()
            self.member_id = self.new_id()
            self.epoch = 0
            self.schedule_heartbeat(now + self.heartbeat_ms)
        else:
            self.group.summary.fatal_errors += 1
            self.die()

    def confirm_closes(self) -> None:
        """Stop the partitions asked to close, commit their positions, confirm at once (the
        seed's consumer), unless the processing is stalled. A start to confirm goes at once
        too (after the OffsetFetch a real consumer makes first)."""
        if self.closing and not self.stalled:
            closing = self.closing
            self.commit(closing & self.consuming)
            self.consuming -= closing
            self.closed |= closing
            self.closing = set()
        if self.closed or self.started:
            self.schedule_heartbeat(self.run.now + 1 + self.run.rng.randrange(20))

    # -- commits -------------------------------------------------------------------------------

    def commit(self, partitions: set[TopicPartitionPair]) -> None:
        if partitions and self.epoch > 0:
            self.commit_positions(sorted(partitions), self.epoch, None)

    def commit_tick(self, due: int) -> None:
        run = self.run
        if not self.alive or due != self.commit_due or run.draining:
            return
        if not self.stalled:
            self.commit(self.consuming - self.closing)
        self.commit_due = run.now + run.commit_interval_ms
        run.at(self.commit_due, self.commit_tick, self.commit_due)


def topic_partitions(partitions: set[TopicPartitionPair]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic=topic, partition=p) for topic, p in sorted(partitions))
