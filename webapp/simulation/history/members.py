"""The simulated members: the library's consumer clients, hosted in virtual time.

A classic group's member is a ``coordinator_engine.client.GroupClient``, a handoff group's a
``HandoffClient``, a consumer-protocol group's (KIP-848) a ``ConsumerClient``, all with
``quiet_heartbeats`` (the package docstring). This module is what a process running a Kafka
consumer adds around its client:

* **The network.** A request goes straight to this coordinator's engine and is answered at
  once, except a JoinGroup or SyncGroup the engine parks (delivered when it completes).
  FindCoordinator and Metadata, which a broker answers, are answered by the run from its
  cluster (``CoordinatorRun.find_coordinator``, ``CoordinatorRun.metadata``); the leader's
  Metadata for its assignment comes a few milliseconds late (``ASSIGN_DELAY_MS``), the time it
  computes the assignment in, so its SyncGroup follows its JoinGroup answer by as much.
* **The application.** It polls whenever its member wakes up (a heartbeat, a timeout), at the
  auto-commit's time, and within ``POLL_INTERVAL_MS`` of a rejoin waiting for a poll; it
  consumes ``RECORDS_PER_SECOND`` of every partition it owns (``consumed_offset``) and hands its
  positions to the client before a poll that may commit them. It can be too slow (``stall``:
  no poll for longer than ``max.poll.interval.ms``; a handoff member confirms no close, and a
  consumer-protocol member releases no partition, until its batch is done), crash (no
  LeaveGroup; at once, at its next rebalance or at its next join), be closed (``close``) or
  stop (``die``: a static member's process ends).

Each member wakes at the earlier of its client's ``next_deadline_ms()`` and its application's
next poll, runs the client until it has nothing more to send, and reads the client's events for
the summary (commits, generations, leaves, fatal errors).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Sequence
from typing import Any

from coordinator_engine import Errors, JoinGroupRequest
from coordinator_engine.client import (
    CLOSE_REASON,
    CONSUMER_CLOSE_REASON,
    CommitCompleted,
    ConsumerClient,
    ConsumerConfig,
    ConsumerMemberState,
    ConsumerProtocolConfig,
    FatalError,
    GroupClient,
    HandoffClient,
    HandoffConfig,
    LeftGroup,
    MemberEpochChanged,
    MemberState,
    PartitionsAssigned,
    PartitionsToClose,
)
from coordinator_engine.cluster import FindCoordinatorRequest, MetadataRequest
from coordinator_engine.reply import Reply

from .catalogue import SECOND_MS, START_MS
from .host import Group, Run

#: A member's poll loop: it acts on a rejoin request within this.
POLL_INTERVAL_MS = 500
#: Records a partition grows by per second (the offsets members commit).
RECORDS_PER_SECOND = 25
#: The leader computes its assignment in 2 + (members) + up to this many milliseconds.
ASSIGN_DELAY_MS = 20

NONE = Errors.NONE
STABLE = MemberState.STABLE
COMPLETING_REBALANCE = MemberState.COMPLETING_REBALANCE
CONSUMER_STABLE = ConsumerMemberState.STABLE


def consumed_offset(now: int) -> int:
    """What a member has consumed of a partition by ``now`` (offsets grow at a steady rate)."""
    return (now - START_MS) * RECORDS_PER_SECOND // SECOND_MS


class Process:
    """What every member shares: a client, woken when it or its application has something to
    do, whose requests go to the run's engine."""

    __slots__ = (
        "alive",
        "client",
        "crash_on",
        "due",
        "group",
        "instance_id",
        "poll_due",
        "run",
        "stalled_until",
    )

    #: The reason the client's LeftGroup gives when the application closed it.
    close_reason = CLOSE_REASON

    run: Run
    group: Group
    client: GroupClient | HandoffClient | ConsumerClient
    alive: bool
    crash_on: str | None
    due: int | None
    instance_id: str | None
    poll_due: int
    stalled_until: int

    def __init__(self, group: Group) -> None:
        self.group = group
        self.run = group.run
        self.alive = True
        self.crash_on = None  # "rebalance" or "join": dies at that step
        self.due = None
        self.poll_due = 0  # when the application's next poll() matters to the client
        self.stalled_until = 0

    @property
    def stalled(self) -> bool:
        return self.run.now < self.stalled_until

    # -- life ----------------------------------------------------------------------------------

    def start(self, delay_ms: int) -> None:
        """The process starts in ``delay_ms``: its application's first poll."""
        self.wake_at(self.run.now + delay_ms)

    def die(self) -> None:
        """The process ends (no LeaveGroup, no commit)."""
        self.alive = False
        self.due = None
        self.group.members.remove(self)

    def crash(self) -> None:
        self.group.summary.crashes += 1
        self.die()

    def close(self) -> None:
        """The application closes its consumer: it hands over its positions, the client
        commits them and leaves."""
        self.record_positions()
        self.client.close(self.run.now)
        self.pump()
        if self.alive:
            self.die()  # the client answered everything at once: it is closed

    def record_positions(self) -> None:
        """Hand the client what the application consumed of its partitions by now."""
        raise NotImplementedError

    def stall(self, duration_ms: int) -> None:
        """The application is stuck on one batch for ``duration_ms``: a classic member polls
        not at all meanwhile (KIP-62: its client leaves when the poll timer runs out); a
        handoff member heartbeats on (Kafka's heartbeat thread) but confirms no close until
        the batch is done."""
        run = self.run
        self.group.summary.slow_members += 1
        self.stalled_until = run.now + duration_ms
        run.at(self.stalled_until, self.unstall, self.stalled_until)

    def unstall(self, token: int) -> None:
        raise NotImplementedError

    def wake(self) -> None:
        """The group changed: the client heartbeats at its next regular tick."""
        client = self.client
        client.group_changed(self.run.now)
        deadline = client.next_deadline_ms()
        if deadline is not None and (self.due is None or deadline < self.due):
            self.wake_at(deadline)

    # -- running the client --------------------------------------------------------------------

    def wake_at(self, due: int) -> None:
        """Wake at ``due`` (the one wake-up that counts: earlier ones are dropped)."""
        self.due = due
        run = self.run
        heapq.heappush(run.heap, (due, next(run.order), self.wake_up, due))  # run.at, inlined

    def wake_up(self, due: int) -> None:
        if due != self.due or not self.alive:
            return
        self.due = None
        now = self.run.now
        if now >= self.poll_due and now >= self.stalled_until:
            self.poll(now)
        self.pump()

    def poll(self, now: int) -> None:
        raise NotImplementedError

    def pump(self) -> None:
        """Send what the client has to send until it has nothing more; read its events; wake
        at its next deadline or its application's next poll."""
        run = self.run
        now = run.now
        client = self.client
        handle: Callable[[Any, int], Reply[Any]] = run.coordinator.handle
        while self.alive:
            requests = client.outgoing(now)
            if not requests:
                break
            for request in requests:
                kind = type(request)
                if kind is FindCoordinatorRequest:
                    response: Any = run.find_coordinator(request)  # type: ignore[arg-type]
                elif kind is MetadataRequest:
                    response = run.metadata(request)  # type: ignore[arg-type]
                    if self.assigning():
                        delay = 2 + len(self.group.members) + run.rng.randrange(ASSIGN_DELAY_MS)
                        run.at(now + delay, self.answer, (request, response))
                        continue
                else:
                    reply = handle(request, now)
                    if not reply.done:
                        reply.add_done_callback(functools.partial(self.parked, request))
                        continue
                    response = reply.response
                    if kind is JoinGroupRequest and not self.joined(response):
                        return
                client.receive(request, response, now)  # type: ignore[arg-type]
        if self.alive:
            events = client.events()
            if events:
                self.read(events)
            if self.alive and not client.closed:
                self.schedule(now)

    def parked(self, request: Any, response: Any) -> None:
        """The engine completed a parked request: delivered after the step that completed it."""
        self.run.deliveries.append((self.answer, (request, response)))

    def answer(self, exchange: tuple[Any, Any]) -> None:
        """An answer that came later (a parked JoinGroup or SyncGroup, the leader's Metadata)."""
        if not self.alive:
            return
        request, response = exchange
        if type(request) is JoinGroupRequest and not self.joined(response):
            return
        self.client.receive(request, response, self.run.now)
        self.pump()

    def assigning(self) -> bool:
        """The leader's Metadata for its assignment is due (answered after a short delay)."""
        return False

    def joined(self, response: Any) -> bool:
        """A JoinGroup answer arrived; False if the process died of it."""
        return True

    def read(self, events: Sequence[Any]) -> None:
        summary = self.group.summary
        for event in events:
            kind = type(event)
            if kind is CommitCompleted:
                summary.commits += 1
            elif kind is PartitionsAssigned:
                self.assigned(event)
            elif kind is PartitionsToClose:
                self.stop(event.partitions)
            elif kind is LeftGroup:
                if (
                    event.leave_group_sent
                    and event.reason == self.close_reason
                    and self.instance_id is None
                ):
                    summary.leaves += 1
            elif kind is FatalError:
                summary.fatal_errors += 1
                self.die()
                return

    def assigned(self, event: PartitionsAssigned) -> None:
        """The client took an assignment: its generation completed (for this member)."""
        self.group.generation_completed(event.generation)

    def stop(self, partitions: Sequence[tuple[str, int]]) -> None:
        """The coordinator asked to close ``partitions`` (handoff members)."""

    def schedule(self, now: int) -> None:
        raise NotImplementedError


class PollingMember(Process):
    """What a classic and a consumer-protocol member share: an application that polls (the
    auto-commit, a rejoin waiting for a poll, ``max.poll.interval.ms``) and, stalled, does not
    poll at all (KIP-62: its client leaves when the poll timer runs out and joins again at the
    next poll)."""

    __slots__ = ("max_poll_ms", "session_ms")

    client: GroupClient | ConsumerClient
    max_poll_ms: int
    session_ms: int

    @property
    def stable(self) -> bool:
        """Its client is in the group and holds its whole assignment."""
        raise NotImplementedError

    @property
    def settled(self) -> bool:
        """Stable, and nothing pending: no rejoin waiting for a poll, no stalled batch."""
        raise NotImplementedError

    @property
    def generation(self) -> int:
        """The generation (classic) or member epoch (consumer protocol) its client is at."""
        raise NotImplementedError

    def rebalancing(self) -> bool:
        """A rebalance asks something of the application at this poll (a crash_on "rebalance"
        member dies of it)."""
        raise NotImplementedError

    def poll(self, now: int) -> None:
        """The application's poll(). The application polls all the time; the client hears of
        it when it matters (``poll_due``): the auto-commit is due, a rejoin waits for a poll,
        or ``max.poll.interval.ms`` would run out. It hands over its positions first when the
        poll may commit them (the auto-commit, or a rejoin: eager members commit before they
        revoke)."""
        client = self.client
        awaiting = client.awaiting_poll
        if self.crash_on == "rebalance" and self.rebalancing():
            self.crash()
            return
        if awaiting or now >= client.auto_commit_due_ms:
            self.record_positions()
        client.poll(now)
        self.poll_due = min(client.auto_commit_due_ms, now + self.max_poll_ms)

    def schedule(self, now: int) -> None:
        client = self.client
        wake = client.next_deadline_ms()
        if now >= self.stalled_until:
            poll_due = self.poll_due
            if client.awaiting_poll and poll_due > now + POLL_INTERVAL_MS:
                poll_due = self.poll_due = now + self.run.rng.randrange(1, POLL_INTERVAL_MS)
            if wake is None or poll_due < wake:
                wake = poll_due
        if wake is not None and wake != self.due:
            self.wake_at(wake)

    def stall(self, duration_ms: int) -> None:
        """The batch it is stuck on came from a poll just now, so its poll timer runs out
        ``max.poll.interval.ms`` after the stall begins (KIP-62), not after whichever poll the
        client last heard of (a rejoin waiting for a poll still waits for the stall's end)."""
        if not self.client.awaiting_poll:
            self.poll(self.run.now)
        super().stall(duration_ms)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            self.poll(self.run.now)
            if self.alive:
                self.pump()


class Member(PollingMember):
    """One consumer process of a classic group: a ``GroupClient`` and its application."""

    __slots__ = ()

    client: GroupClient

    def __init__(self, group: Group, client_id: str, instance_id: str | None, host: int) -> None:
        super().__init__(group)
        spec = group.spec
        run = group.run
        self.instance_id = instance_id
        self.session_ms = (
            spec.static_session_timeout_ms if instance_id is not None else spec.session_timeout_ms
        )
        self.max_poll_ms = spec.max_poll_interval_ms
        self.client = GroupClient(
            ConsumerConfig(
                group_id=spec.group_id,
                topics=spec.topics,
                assignors=spec.assignors,
                group_instance_id=instance_id,
                client_id=client_id,
                client_host=f"/10.{run.index}.{group.number}.{host}",
                session_timeout_ms=self.session_ms,
                heartbeat_interval_ms=spec.heartbeat_interval_ms,
                max_poll_interval_ms=self.max_poll_ms,
                auto_commit_interval_ms=run.commit_interval_ms,
                metadata_max_age_ms=run.metadata_max_age_ms,
            ),
            run.now,
            quiet_heartbeats=True,
        )

    @property
    def state(self) -> MemberState:
        return self.client.state

    @property
    def stable(self) -> bool:
        return self.client.state is STABLE

    @property
    def generation(self) -> int:
        return self.client.generation

    @property
    def settled(self) -> bool:
        client = self.client
        return client.state is STABLE and not client.awaiting_poll and not self.stalled

    def rebalancing(self) -> bool:
        """A rejoin waits for this poll while the member is still Stable."""
        client = self.client
        return client.awaiting_poll and client.state is STABLE

    def record_positions(self) -> None:
        client = self.client
        position = consumed_offset(self.run.now)
        client.record_positions({tp: position + tp[1] for tp in client.assignment})

    def assigning(self) -> bool:
        client = self.client
        return client.is_leader and client.state is COMPLETING_REBALANCE

    def joined(self, response: Any) -> bool:
        if self.crash_on == "join" and response.error_code == NONE:
            self.read(self.client.events())  # what happened before, a commit say, counts
            self.crash()
            return False
        return True


class HandoffMember(Process):
    """One consumer process of a handoff group: a ``HandoffClient`` and its
    application, which stops a partition asked to close at once (unless its processing is
    stalled: then when the stall ends) and commits its positions every commit interval."""

    __slots__ = ("commit_due",)

    client: HandoffClient
    instance_id = None

    def __init__(self, group: Group, client_id: str, host: int) -> None:
        super().__init__(group)
        spec = group.spec
        run = group.run
        self.commit_due = 0
        self.client = HandoffClient(
            HandoffConfig(
                group_id=spec.group_id,
                topics=spec.topics,
                client_id=client_id,
                client_host=f"/10.{run.index}.{group.number}.{host}",
                session_timeout_ms=spec.session_timeout_ms,
                heartbeat_interval_ms=spec.heartbeat_interval_ms,
            ),
            run.now,
            member_id_factory=lambda: f"{client_id}-{run.rng.getrandbits(48):012x}",
            quiet_heartbeats=True,
        )

    @property
    def settled(self) -> bool:
        client = self.client
        return (
            client.joined
            and client.group_state == "Stable"
            and not client.closing
            and not self.stalled
        )

    def start(self, delay_ms: int) -> None:
        super().start(delay_ms)
        run = self.run
        interval = run.commit_interval_ms
        self.commit_due = run.now + delay_ms + run.rng.randrange(interval // 2, interval + 1)
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    def poll(self, now: int) -> None:
        self.client.poll(now)

    def read(self, events: Sequence[Any]) -> None:
        super().read(events)
        client = self.client
        if self.alive and client.group_state == "Stable":
            self.group.generation_completed(client.epoch)

    def stop(self, partitions: Sequence[tuple[str, int]]) -> None:
        if not self.stalled:
            position = consumed_offset(self.run.now)
            self.client.partitions_stopped({tp: position + tp[1] for tp in partitions})

    def schedule(self, now: int) -> None:
        wake = self.client.next_deadline_ms()
        if wake is not None and wake != self.due:
            self.wake_at(wake)

    def record_positions(self) -> None:
        client = self.client
        position = consumed_offset(self.run.now)
        for topic, partition in client.consuming:
            client.record_consumed(topic, partition, position + partition)

    def commit_tick(self, due: int) -> None:
        """The application commits what it consumed, every commit interval."""
        run = self.run
        if not self.alive or due != self.commit_due or run.draining:
            return
        if not self.stalled and self.client.consuming:
            self.record_positions()
            self.client.commit()
            self.pump()
        self.commit_due = run.now + run.commit_interval_ms
        run.at(self.commit_due, self.commit_tick, self.commit_due)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.stalled_until = 0
            closing = self.client.closing
            if closing:
                self.stop(sorted(closing))
                self.pump()


class ConsumerMember(PollingMember):
    """One consumer process of a consumer-protocol group (KIP-848): a ``ConsumerClient`` and
    its application, which polls as a classic member's does. Stalled, it neither polls nor
    lets its revocations go (Kafka's new consumer runs ``onPartitionsRevoked`` in the
    application's ``poll()``): the member heartbeats on at its epoch, releasing nothing,
    until its batch is done, its poll timer runs out (it leaves) or the coordinator's
    rebalance timeout fences it. It learns of a rebalance from a heartbeat, which a
    crash_on member dies of: "join" at the answer that takes it into the group, "rebalance"
    at the first answer with a new epoch after that."""

    __slots__ = ()

    close_reason = CONSUMER_CLOSE_REASON
    client: ConsumerClient

    def __init__(self, group: Group, client_id: str, instance_id: str | None, host: int) -> None:
        super().__init__(group)
        spec = group.spec
        run = group.run
        self.instance_id = instance_id
        self.session_ms = run.coordinator.config.consumer_group_session_timeout_ms
        self.max_poll_ms = spec.max_poll_interval_ms
        self.client = ConsumerClient(
            ConsumerProtocolConfig(
                group_id=spec.group_id,
                topics=spec.topics,
                group_instance_id=instance_id,
                server_assignor=spec.assignors[0],
                rebalance_timeout_ms=self.max_poll_ms,
                client_id=client_id,
                client_host=f"/10.{run.index}.{group.number}.{host}",
                auto_commit_interval_ms=run.commit_interval_ms,
                session_timeout_ms=self.session_ms,
            ),
            run.now,
            member_id_factory=lambda: f"{client_id}-{run.rng.getrandbits(48):012x}",
            quiet_heartbeats=True,
        )

    @property
    def stable(self) -> bool:
        return self.client.state is CONSUMER_STABLE

    @property
    def generation(self) -> int:
        return self.client.epoch

    @property
    def settled(self) -> bool:
        client = self.client
        return (
            client.state is CONSUMER_STABLE
            and client.assignment == client.target
            and not client.awaiting_poll
            and not self.stalled
        )

    def rebalancing(self) -> bool:
        """Never at a poll: a consumer-protocol member learns of a rebalance from a
        heartbeat (``read``)."""
        return False

    def record_positions(self) -> None:
        client = self.client
        position = consumed_offset(self.run.now)
        for topic, partition in client.fetchable:
            client.record_consumed(topic, partition, position + partition)

    def assigned(self, event: PartitionsAssigned) -> None:
        """A step of a reconciliation (counted once the member is Stable: ``read``)."""

    def read(self, events: Sequence[Any]) -> None:
        crash_on = self.crash_on
        if crash_on is not None:
            for event in events:
                if type(event) is MemberEpochChanged and (event.previous_epoch == 0) == (
                    crash_on == "join"
                ):
                    super().read(events)  # what happened before, a commit say, counts
                    if self.alive:
                        self.crash()
                    return
        super().read(events)
        client = self.client
        if self.alive and client.state is CONSUMER_STABLE and client.assignment == client.target:
            self.group.generation_completed(client.epoch)

    def stall(self, duration_ms: int) -> None:
        super().stall(duration_ms)
        self.client.hold_revocations(True)

    def unstall(self, token: int) -> None:
        if self.alive and token == self.stalled_until:
            self.client.hold_revocations(False)
        super().unstall(token)
