"""Replaying the log (Kafka's `loadGroupsAndOffsets` + `onGroupLoaded`): a coordinator built on
a log that already holds records rebuilds groups, generations, assignments and offsets as of
their last stored record, re-arms every member's session timer, honours tombstones, refuses a
corrupt record with a `ReplayError` naming its position and kind, skips record types it does
not know, and skips groups of coordinator partitions it does not own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from coordinator_engine import (
    Errors,
    GroupCoordinator,
    GroupState,
    MemberIdentity,
    MemoryLog,
    ReplayError,
    SqliteLog,
    partition_for,
)
from coordinator_engine.classic.records import group_metadata_tombstone
from coordinator_engine.events import MemberRemoved
from coordinator_engine.records import OffsetCommitValue, offset_commit_record
from tests.engine.harness import (
    FOLLOWER_INSTANCE,
    GROUP,
    LEADER_INSTANCE,
    PROTOCOL_SUPERSET,
    TEST_CONFIG,
    Context,
)

NONE = Errors.NONE


def test_replay_rebuilds_a_stable_group_as_it_was() -> None:
    ctx = Context()
    ctx.stable_group_of_two()
    rebuilt = ctx.rebuilt()
    assert rebuilt.group(GROUP) == ctx.group()
    view = ctx.group()
    assert (view.state, view.generation_id) == (GroupState.STABLE, 2)
    assert [m.assignment for m in view.members.values()] == [b"leader", b"follower"]


def test_replay_rebuilds_committed_offsets() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("a", 0): 1, ("a", 1): 2}, member_id=member_id, generation_id=generation)
    ctx.commit({("a", 0): 3}, member_id=member_id, generation_id=generation, metadata="m")
    ctx.commit({("b", 0): 4}, group_id="offsets-only")
    rebuilt = ctx.rebuilt()
    for group_id in (GROUP, "offsets-only"):
        assert rebuilt.committed_offsets(group_id) == ctx.coord.committed_offsets(group_id)
    assert rebuilt.committed_offsets(GROUP)[("a", 0)] == OffsetCommitValue(
        offset=3, metadata="m", commit_timestamp=50
    )
    assert rebuilt.group_ids() == [GROUP, "offsets-only"]


def test_replay_rebuilds_an_empty_group_with_its_generation() -> None:
    ctx = Context()
    joined = ctx.join_now()
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    rebuilt = ctx.rebuilt()
    assert rebuilt.group(GROUP) == ctx.group()
    view = ctx.group()
    assert (view.state, view.generation_id, view.protocol_type) == (GroupState.EMPTY, 2, "consumer")


def test_replay_rebuilds_static_members_and_their_fencing() -> None:
    ctx = Context()
    result = ctx.static_members_join_and_rebalance()
    restarted = ctx.restarted()
    assert restarted.group() == ctx.group()
    assert restarted.heartbeat("someone-else", 1, instance_id=LEADER_INSTANCE) == (
        Errors.FENCED_INSTANCE_ID
    )
    reply = restarted.join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET)
    assert reply.response is not None
    assert (reply.response.error_code, reply.response.generation_id) == (NONE, 1)
    assert restarted.heartbeat(result.follower_id, 1, instance_id=FOLLOWER_INSTANCE) == (
        Errors.FENCED_INSTANCE_ID
    )


def test_replayed_member_that_does_not_heartbeat_times_out_after_its_session() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.sleep(100)
    restarted = ctx.restarted()  # t=150: the session timer restarts from the load
    assert restarted.coord.next_deadline_ms() == 650
    restarted.sleep(499)
    assert member_id in restarted.group().members
    restarted.sleep(1)
    assert restarted.events_of(MemberRemoved) == [
        MemberRemoved(
            group_id=GROUP,
            at_ms=650,
            member_id=member_id,
            group_instance_id=None,
            reason="session_timeout",
            detail=None,
        )
    ]
    view = restarted.group()
    assert (view.state, view.generation_id) == (GroupState.EMPTY, generation + 1)
    assert restarted.heartbeat(member_id, generation) == Errors.UNKNOWN_MEMBER_ID


def test_replayed_member_that_heartbeats_stays() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    restarted = ctx.restarted()
    for _ in range(10):
        restarted.sleep(400)
        assert restarted.heartbeat(leader_id, generation) == NONE
        assert restarted.heartbeat(follower_id, generation) == NONE
    assert restarted.group().state is GroupState.STABLE
    assert restarted.events == []


def test_replayed_members_can_sync_and_commit_in_their_generation() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    restarted = ctx.restarted()
    synced = restarted.sync(follower_id, generation)
    assert synced.response is not None
    assert (synced.response.error_code, synced.response.assignment) == (NONE, b"follower")
    assert restarted.commit({("t", 0): 9}, member_id=leader_id, generation_id=generation) == {
        ("t", 0): NONE
    }


def test_rebalance_in_progress_is_lost_and_the_last_stored_generation_is_loaded() -> None:
    ctx = Context()
    leader_id, follower_id, generation = ctx.stable_group_of_two()
    ctx.join(leader_id)
    ctx.join(follower_id)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.group().generation_id == generation + 1
    restarted = ctx.restarted()
    view = restarted.group()
    assert (view.state, view.generation_id) == (GroupState.STABLE, generation)
    assert restarted.heartbeat(follower_id, generation + 1) == Errors.ILLEGAL_GENERATION
    assert restarted.heartbeat(follower_id, generation) == NONE


def test_replay_writes_nothing_and_reports_no_events() -> None:
    ctx = Context()
    ctx.stable_group_of_two()
    entries = list(ctx.log.entries)
    restarted = ctx.restarted()
    assert restarted.log.entries == entries
    assert restarted.events == []


def test_group_tombstone_deletes_the_group_on_replay() -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("t", 0): 1}, member_id=member_id, generation_id=generation)
    ctx.leave(MemberIdentity(member_id=member_id))
    ctx.delete_groups(GROUP)
    rebuilt = ctx.rebuilt()
    assert rebuilt.group(GROUP) is None
    assert rebuilt.committed_offsets(GROUP) == {}


def test_offset_tombstone_deletes_the_offset_on_replay() -> None:
    ctx = Context()
    ctx.commit({("t", 0): 1, ("t", 1): 2})
    ctx.delete_offsets([("t", 0)])
    rebuilt = ctx.rebuilt()
    assert list(rebuilt.committed_offsets(GROUP)) == [("t", 1)]


def test_offsets_committed_after_a_group_tombstone_load_as_a_fresh_empty_group() -> None:
    ctx = Context()
    joined = ctx.join_now()
    ctx.leave(MemberIdentity(member_id=joined.member_id))
    ctx.delete_groups(GROUP)
    ctx.commit({("t", 0): 5})
    view = ctx.rebuilt().group(GROUP)
    assert view is not None
    assert (view.state, view.generation_id, view.protocol_type) == (GroupState.EMPTY, 0, None)


def test_tombstone_for_a_group_that_was_never_stored_is_ignored() -> None:
    log = MemoryLog(
        [
            group_metadata_tombstone(GROUP),
            offset_commit_record("g", "t", 0, OffsetCommitValue(offset=1, commit_timestamp=0)),
        ]
    )
    coord = GroupCoordinator(TEST_CONFIG, log)
    assert coord.group_ids() == ["g"]


def test_corrupt_key_raises_a_replay_error_naming_its_position() -> None:
    good = offset_commit_record(GROUP, "t", 0, OffsetCommitValue(offset=1, commit_timestamp=0))
    log = MemoryLog([good, (b"\x00\x01\x00", b"\x00")])
    with pytest.raises(ReplayError) as info:
        GroupCoordinator(TEST_CONFIG, log)
    assert (info.value.position, info.value.kind) == (1, "key")
    assert str(info.value).startswith("record #1 (key) cannot be replayed: ")


def test_corrupt_offset_commit_value_raises_a_replay_error_naming_its_kind() -> None:
    key, value = offset_commit_record(
        GROUP, "t", 0, OffsetCommitValue(offset=1, commit_timestamp=0)
    )
    log = MemoryLog([(key, value), (key, value[:-3])])
    with pytest.raises(ReplayError) as info:
        GroupCoordinator(TEST_CONFIG, log)
    assert (info.value.position, info.value.kind) == (1, "OffsetCommit")


def test_corrupt_group_metadata_value_raises_a_replay_error_naming_its_kind() -> None:
    ctx = Context()
    ctx.commit({("t", 0): 1})
    ctx.stable_group_of_one()
    key, value = ctx.log.entries[-1]
    assert value is not None
    log = MemoryLog([*ctx.log.entries, (key, value + b"\x00")])
    with pytest.raises(ReplayError) as info:
        GroupCoordinator(TEST_CONFIG, log)
    assert (info.value.position, info.value.kind) == (2, "GroupMetadata")


def test_records_of_unknown_types_are_skipped() -> None:
    """Kafka's loader skips an `UnknownKey` (e.g. KIP-932 share group records, key version
    11) with a warning; so does the engine."""
    ctx = Context()
    ctx.stable_group_of_one()
    share_group_record = (b"\x00\x0b\x00\x07groupId", b"\x00\x00anything")
    log = MemoryLog([share_group_record, *ctx.log.entries])
    assert GroupCoordinator(TEST_CONFIG, log).group(GROUP) == ctx.group()


def test_records_of_groups_of_other_coordinator_partitions_are_skipped() -> None:
    ctx = Context()
    ctx.stable_group_of_one()
    ctx.commit({("t", 0): 1}, group_id="my-group")
    ctx.commit({("t", 0): 1}, group_id="polygenelubricants")
    owns = frozenset({partition_for(GROUP), partition_for("my-group")})
    assert partition_for("polygenelubricants") not in owns
    coord = GroupCoordinator(
        dataclasses.replace(TEST_CONFIG, owned_partitions=owns), MemoryLog(list(ctx.log.entries))
    )
    assert coord.group_ids() == [GROUP, "my-group"]
    assert coord.group(GROUP) == ctx.group()


def test_replay_from_an_sqlite_log_rebuilds_the_same_state(tmp_path: Path) -> None:
    ctx = Context()
    member_id, generation = ctx.stable_group_of_one()
    ctx.commit({("t", 0): 3}, member_id=member_id, generation_id=generation)
    with SqliteLog(tmp_path / "log.sqlite") as log:
        log.append(list(ctx.log.entries))
    with SqliteLog(tmp_path / "log.sqlite") as log:
        coord = GroupCoordinator(TEST_CONFIG, log, ctx.now)
        assert coord.group(GROUP) == ctx.group()
        assert coord.committed_offsets(GROUP) == ctx.coord.committed_offsets(GROUP)
