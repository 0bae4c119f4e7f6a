"""The churn: what happens to each application's members, one action at a time.

A ``GroupRun`` (a classic application), ``HandoffGroupRun`` (a handoff one) or
``ConsumerGroupRun`` (a consumer-protocol one, KIP-848) starts and stops its members, runs its
day (daily applications shut down every evening; an admin tidies the emptied group up), and
takes one churn action when its coordinator's churn picks it: a member joins, leaves, crashes,
is too slow, restarts (static), or an admin rebalances or removes a static member. ``settled``
says whether the group has come to rest (the end of a history).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator_engine import (
    ConsumerGroupState,
    ConsumerGroupView,
    DeleteGroupsRequest,
    Errors,
    GroupState,
    GroupView,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    PartitionOffset,
    TopicPartition,
)
from coordinator_engine.classic import ADMIN_REMOVAL_REASONS
from coordinator_engine.handoff import HandoffGroupView, HandoffState

from .catalogue import HOUR_MS, MINUTE_MS, SECOND_MS, GroupSpec
from .host import Run
from .members import ConsumerMember, HandoffMember, Member, PollingMember, consumed_offset
from .summary import GroupSummary

#: What an admin does with a daily application's emptied group, one a night, in turn from
#: its ``GroupSpec.first_chore``.
NIGHTLY_CHORES = (
    "delete one topic's offsets",
    "delete all offsets",
    "delete the group",
    "leave it be",
)

NONE = Errors.NONE
ADMIN_REMOVAL_REASON = ADMIN_REMOVAL_REASONS[0]  # Kafka's AdminClient says this (KIP-800)


class GroupRun:
    """One application of the catalogue: its members and what happens to them."""

    #: Its members' kind, made as ``member_kind(group, client_id, instance_id, host)``.
    member_kind: Callable[[GroupRun, str, str | None, int], PollingMember] = Member
    #: Whether an admin may trigger a rebalance of the group (Kafka's consumer protocol has no
    #: such thing) and remove a static member (LeaveGroup by instance id).
    admin_actions = True
    #: Whether members join again at every rebalance (a crash may wait for their next join); a
    #: consumer-protocol member joins once, and dies at the next epoch it is given instead.
    members_rejoin = True

    def __init__(self, run: Run, spec: GroupSpec, number: int) -> None:
        self.run = run
        self.spec = spec
        self.number = number
        self.members: list[PollingMember] = []
        self.up = False
        self.started = 0
        self.restarting: set[str] = set()
        self.nights = 0
        self.last_generation = 0
        self.static_ids = tuple(f"{spec.group_id}-static-{n}" for n in range(spec.static))
        self.summary = GroupSummary(
            group_id=spec.group_id,
            coordinator=run.index,
            assignor=spec.assignors[0] if spec.assignors else "handoff" if spec.handoff else None,
            cooperative=spec.cooperative,
            static_members=spec.static,
            handoff=spec.handoff,
            consumer=spec.consumer,
        )

    # -- membership ----------------------------------------------------------------------------

    def start_member(self, instance_id: str | None, delay_ms: int, *, restart: bool) -> None:
        spec = self.spec
        if instance_id is None:
            self.started += 1
            client_id = f"{spec.group_id}-{self.started}"
        else:
            client_id = instance_id
            self.restarting.discard(instance_id)
        if not restart:
            self.summary.joins += 1
        member = self.member_kind(self, client_id, instance_id, len(self.members) + 1)
        self.members.append(member)
        member.start(delay_ms)

    def comeback(self, instance_id: str) -> None:
        if self.up:
            self.start_member(instance_id, 0, restart=True)
        else:
            self.restarting.discard(instance_id)

    def generation_completed(self, generation: int) -> None:
        if generation != self.last_generation:
            self.last_generation = generation
            self.summary.generations += 1

    def wake(self) -> None:
        for member in self.members:
            member.wake()

    # -- the day -------------------------------------------------------------------------------

    def startup(self, _: Any = None) -> None:
        run = self.run
        if run.draining:
            return
        self.up = True
        self.last_generation = 0
        if self.spec.offsets_only:
            self.job(run.now + run.rng.randrange(HOUR_MS, 5 * HOUR_MS))
            return
        low, high = self.spec.dynamic
        for _ in range((low + high + 1) // 2):
            self.start_member(None, run.rng.randrange(5 * SECOND_MS), restart=False)
        for instance_id in self.static_ids:
            self.start_member(instance_id, run.rng.randrange(5 * SECOND_MS), restart=False)
        if self.spec.daily:
            run.at(run.now + run.rng.randrange(10 * HOUR_MS, 13 * HOUR_MS), self.shutdown)

    def shutdown(self, _: Any = None) -> None:
        """The evening: dynamic members close (LeaveGroup), static ones stop and are removed by
        an admin; later an admin may delete offsets or the group; the next start is 10 to 40
        hours away."""
        run = self.run
        if run.draining:
            return
        self.up = False
        self.summary.shutdowns += 1
        stopped = []
        for member in list(self.members):
            if member.instance_id is None:
                member.close()
            else:
                stopped.append(member.instance_id)
                member.die()
        if stopped:
            run.at(run.now + run.rng.randrange(5 * SECOND_MS, MINUTE_MS), self.remove, stopped)
        run.at(run.now + run.rng.randrange(30 * MINUTE_MS, 3 * HOUR_MS), self.tidy_up)
        run.at(run.now + run.rng.randrange(10 * HOUR_MS, 40 * HOUR_MS), self.startup)

    def tidy_up(self, _: Any = None) -> None:
        """The admin's night, one of ``NIGHTLY_CHORES`` in turn: delete the offsets of one
        topic the emptied group has offsets for, or of all of them (which removes the group,
        KIP-496), or delete the group (DeleteGroups), or leave it be (its offsets expire if it
        stays down for a day)."""
        run = self.run
        if run.draining or self.up:
            return
        rng = run.rng
        chore = NIGHTLY_CHORES[(self.spec.first_chore + self.nights) % len(NIGHTLY_CHORES)]
        self.nights += 1
        group_id = self.spec.group_id
        topics = sorted({topic for topic, _ in run.coordinator.committed_offsets(group_id)})
        if chore in ("delete one topic's offsets", "delete all offsets") and topics:
            if chore == "delete one topic's offsets":
                topics = [topics[rng.randrange(len(topics))]]
            response = run.handle(
                OffsetDeleteRequest(
                    group_id=group_id,
                    partitions=tuple(
                        TopicPartition(topic=topic, partition=p)
                        for topic in topics
                        for p in range(run.partitions[topic])
                    ),
                )
            )
            if response.error_code == NONE and all(
                p.error_code == NONE for p in response.partitions
            ):
                self.summary.offset_deletions += 1
        elif chore == "delete the group" and run.coordinator.group(group_id) is not None:
            response = run.handle(DeleteGroupsRequest(group_ids=(group_id,)))
            if response.results[0].error_code == NONE:
                self.summary.group_deletions += 1

    def job(self, until_ms: int) -> None:
        """The offsets-only job: commit (generation -1) every commit interval until ``until_ms``,
        then start again 16 to 40 hours later."""
        run = self.run
        if run.draining:
            return
        if run.now >= until_ms:
            self.up = False
            run.at(run.now + run.rng.randrange(16 * HOUR_MS, 40 * HOUR_MS), self.startup)
            return
        topic = self.spec.topics[0]
        position = consumed_offset(run.now)
        response = run.handle(
            OffsetCommitRequest(
                group_id=self.spec.group_id,
                offsets=tuple(
                    PartitionOffset(topic=topic, partition=p, offset=position)
                    for p in range(run.partitions[topic])
                ),
            )
        )
        if all(result.error_code == NONE for result in response.partitions):
            self.summary.commits += 1
        run.at(run.now + run.commit_interval_ms, self.job, until_ms)

    # -- churn ---------------------------------------------------------------------------------

    @property
    def churnable(self) -> bool:
        return self.up and not self.spec.offsets_only

    def act(self) -> None:
        """One churn action, chosen at random among those that fit the group now."""
        run = self.run
        rng = run.rng
        members = self.members
        dynamic = [m for m in members if m.instance_id is None]
        static = [m for m in members if m.instance_id is not None]
        present = {m.instance_id for m in static}
        missing = [i for i in self.static_ids if i not in present and i not in self.restarting]
        stable = [m for m in members if m.stable and not m.stalled]
        low, high = self.spec.dynamic
        choices: list[tuple[Callable[[], None], int]] = []
        if len(dynamic) < high:
            choices.append(
                (lambda: self.start_member(None, 0, restart=False), 12 if len(dynamic) < low else 5)
            )
        if missing:
            choices.append((lambda: self.start_member(missing[0], 0, restart=False), 6))
        if dynamic:
            choices.append((lambda: self.leave(dynamic), 5 if len(dynamic) > low else 1))
        if members:
            choices.append((lambda: self.crash(members), 4))
            if self.admin_actions:
                choices.append((self.admin_rebalance, 2))
        if stable:
            choices.append((lambda: self.slow(stable), 3))
        if static:
            choices.append((lambda: self.restart(static), 7))
            if self.admin_actions:
                choices.append((lambda: self.admin_remove(static), 1))
        if not choices:  # every member is a static one between two lives
            return
        actions = [action for action, _ in choices]
        (action,) = rng.choices(actions, weights=[weight for _, weight in choices])
        action()

    def leave(self, dynamic: list[PollingMember]) -> None:
        dynamic[self.run.rng.randrange(len(dynamic))].close()

    def crash(self, members: list[PollingMember]) -> None:
        rng = self.run.rng
        member = members[rng.randrange(len(members))]
        draw = rng.random()
        if draw < 0.6 or member.crash_on is not None:
            member.crash()
        else:
            member.crash_on = "join" if draw >= 0.85 and self.members_rejoin else "rebalance"

    def slow(self, stable: list[PollingMember]) -> None:
        rng = self.run.rng
        member = stable[rng.randrange(len(stable))]
        member.stall(int(member.max_poll_ms * (1.1 + 0.5 * rng.random())))

    def restart(self, static: list[PollingMember]) -> None:
        run = self.run
        rng = run.rng
        member = static[rng.randrange(len(static))]
        assert member.instance_id is not None
        self.summary.static_restarts += 1
        self.stop_static(member)
        self.restarting.add(member.instance_id)
        if rng.random() < 0.85:  # back within its session: replaced without a rebalance
            downtime = rng.randrange(2 * SECOND_MS, member.session_ms // 2)
        else:
            downtime = int(member.session_ms * (1.2 + rng.random()))
        run.at(run.now + downtime, self.comeback, member.instance_id)

    def stop_static(self, member: PollingMember) -> None:
        """A static member's process ends (a classic one sends no LeaveGroup, KIP-345)."""
        member.die()

    def admin_rebalance(self) -> None:
        run = self.run
        if run.coordinator.trigger_rebalance(self.spec.group_id, run.now) == NONE:
            self.summary.admin_rebalances += 1

    def admin_remove(self, static: list[PollingMember]) -> None:
        member = static[self.run.rng.randrange(len(static))]
        assert member.instance_id is not None
        self.remove([member.instance_id])

    def remove(self, instance_ids: list[str]) -> None:
        """LeaveGroup by instance id with the AdminClient's reason (a removal by an admin)."""
        response = self.run.handle(
            LeaveGroupRequest(
                group_id=self.spec.group_id,
                members=tuple(
                    MemberIdentity(group_instance_id=i, reason=ADMIN_REMOVAL_REASON)
                    for i in instance_ids
                ),
            )
        )
        self.summary.admin_removals += sum(m.error_code == NONE for m in response.members)

    # -- the end -------------------------------------------------------------------------------

    def settled(self) -> bool:
        """Whether the group has come to rest: without members, gone or empty; with them, the
        coordinator counts exactly them, and each is settled in the group's current round."""
        view = self.run.coordinator.group(self.spec.group_id)
        if not self.members:
            return view is None or self.emptied(view)
        return view is not None and len(view.members) == len(self.members) and self.at_rest(view)

    def emptied(self, view: Any) -> bool:
        """A group without members' processes is empty: nobody joining either."""
        assert isinstance(view, GroupView), "a classic group's run"
        return (
            not view.members
            and not view.pending_member_ids
            and view.state in (GroupState.EMPTY, GroupState.DEAD)
        )

    def at_rest(self, view: Any) -> bool:
        """Stable, nobody joining, every member settled in the current generation."""
        assert isinstance(view, GroupView), "a classic group's run"
        return (
            view.state is GroupState.STABLE
            and not view.pending_member_ids
            and all(m.settled and m.generation == view.generation_id for m in self.members)
        )


class HandoffGroupRun(GroupRun):
    """A handoff application: the same churn as a classic one where it applies (members join,
    leave, crash, are slow; the partition store reports topic growth itself), none of the
    static members' or assignors' actions, which the mode does not have."""

    members: list[HandoffMember]  # type: ignore[assignment]

    def start_member(self, instance_id: str | None, delay_ms: int, *, restart: bool) -> None:
        self.started += 1
        self.summary.joins += 1
        member = HandoffMember(self, f"{self.spec.group_id}-{self.started}", len(self.members) + 1)
        self.members.append(member)
        member.start(delay_ms)

    def act(self) -> None:
        rng = self.run.rng
        members = self.members
        low, high = self.spec.dynamic
        choices: list[tuple[Callable[[], None], int]] = []
        if len(members) < high:
            choices.append(
                (lambda: self.start_member(None, 0, restart=False), 12 if len(members) < low else 5)
            )
        if members:
            choices.append(
                (
                    lambda: members[rng.randrange(len(members))].close(),
                    5 if len(members) > low else 1,
                )
            )
            choices.append((lambda: members[rng.randrange(len(members))].crash(), 4))
            ready = [m for m in members if not m.stalled]
            if ready:
                member = ready[rng.randrange(len(ready))]
                choices.append(
                    (
                        lambda: member.stall(
                            int(self.spec.max_poll_interval_ms * (0.1 + 0.5 * rng.random()))
                        ),
                        3,
                    )
                )
        if not choices:
            return
        actions = [action for action, _ in choices]
        (action,) = rng.choices(actions, weights=[weight for _, weight in choices])
        action()

    def emptied(self, view: Any) -> bool:
        return not view.members

    def at_rest(self, view: Any) -> bool:
        return (
            isinstance(view, HandoffGroupView)
            and view.state is HandoffState.STABLE
            and all(m.settled and not m.stalled for m in self.members)
        )


class ConsumerGroupRun(GroupRun):
    """A consumer-protocol application (KIP-848): the same churn as a classic one (members
    join, leave, crash, are slow, static members restart), without the admin's actions,
    which Kafka's consumer protocol does not have. A static member's process ends with its
    client's close, which leaves with epoch -2: the coordinator keeps its assignment for the
    next process with the same instance id (one that did not leave so would hold the id, and
    its next process be refused with UNRELEASED_INSTANCE_ID until its session expired)."""

    member_kind = ConsumerMember
    admin_actions = False
    members_rejoin = False

    def __init__(self, run: Run, spec: GroupSpec, number: int) -> None:
        if spec.daily:
            raise ValueError(f"{spec.group_id}: a consumer-protocol application runs all day")
        super().__init__(run, spec, number)

    def stop_static(self, member: PollingMember) -> None:
        member.close()

    def emptied(self, view: Any) -> bool:
        return not view.members

    def at_rest(self, view: Any) -> bool:
        return (
            isinstance(view, ConsumerGroupView)
            and view.state is ConsumerGroupState.STABLE
            and all(m.settled and m.generation == view.group_epoch for m in self.members)
        )
