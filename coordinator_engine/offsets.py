"""Committed offsets, for every group kind: Kafka's `OffsetMetadataManager`.

Kafka's group-coordinator module keeps offsets apart from groups: an `OffsetMetadataManager`
per coordinator shard holds every group's committed offsets, answers OffsetCommit, OffsetFetch
and OffsetDelete, expires offsets (KIP-211) and replays OffsetCommit records, whatever protocol
the group speaks; what depends on the group's kind (who may commit, which topics are still
subscribed, when the retention clock starts) it asks the group. `OffsetsManager` does the same,
asking through the `GroupKind` hooks (`context.py`), with the classic coordinator's rules of
Kafka 3.x (`GroupCoordinator.handleCommitOffsets`, `handleFetchOffsets`, `handleDeleteOffsets`
and `GroupMetadataManager.storeOffsets` / `cleanupGroupMetadata`).

Offsets change only by applying OffsetCommit records (`apply`), the same function live and at
replay. A group's life depends on its offsets, and those rules live here too:

- a commit into an unknown group (generation −1) creates it: an Empty group without protocol,
  used only for offsets (Kafka's simple group);
- removing offsets (expiry, OffsetDelete, DeleteGroups) that leaves an Empty group without
  offsets deletes the group in the same append (`remove_offsets_and_maybe_group`, Kafka's
  `cleanupGroupMetadata`);
- after a replay, a group whose offsets are left has a group, and a simple group whose offsets
  were all tombstoned is gone (`on_loaded`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .context import CoordinatorContext, Group, GroupKind, Handler, Record
from .errors import CoordinatorError, Errors, IllegalGenerationError, error_code_of
from .events import OffsetsCommitted, OffsetsRemoved
from .records import (
    OffsetCommitKey,
    OffsetCommitValue,
    offset_commit_records,
    offset_commit_tombstone,
)
from .reply import Reply
from .requests import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest
from .responses import (
    OffsetCommitResponse,
    OffsetData,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    PartitionResult,
)

NONE = Errors.NONE

#: One group's committed offsets: (topic, partition) → the value of its last commit record.
Offsets = dict[tuple[str, int], OffsetCommitValue]

_NO_OFFSETS: Offsets = {}


@lru_cache(maxsize=65536)
def _partition_result(topic: str, partition: int, code: Errors) -> PartitionResult:
    """A partition's result, shared (it is immutable): a group commits the same partitions
    again and again, and building one per partition per commit was a tenth of a commit."""
    return PartitionResult(topic=topic, partition=partition, error_code=code)


def _java_string_length(text: str) -> int:
    """Kafka measures commit metadata with Java's `String.length()`: UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


class OffsetsManager:
    """Every group's committed offsets. See the module docstring."""

    def __init__(self, ctx: CoordinatorContext, kinds: GroupKind) -> None:
        self._ctx = ctx
        self._groups = ctx.groups
        self._kinds = kinds
        # group id → its offsets; a group without offsets has no entry.
        self._offsets: dict[str, Offsets] = {}

    def handlers(self) -> dict[type, Handler]:
        """The requests this manager answers."""
        return {
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            OffsetDeleteRequest: self._offset_delete,
        }

    # ---------------------------------------------------------------- reading

    def committed(self, group_id: str) -> Offsets:
        """A copy of a group's committed offsets."""
        return dict(self._offsets.get(group_id, _NO_OFFSETS))

    def holds(self, group_id: str) -> bool:
        """Whether the group has committed offsets."""
        return group_id in self._offsets

    # ---------------------------------------------------------------- applying records

    def apply(
        self, group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
    ) -> None:
        """The only change to committed offsets: apply one OffsetCommit record (live or
        replayed); a None value is a tombstone."""
        if value is None:
            offsets = self._offsets.get(group_id)
            if offsets is not None:
                offsets.pop((topic, partition), None)
                if not offsets:
                    del self._offsets[group_id]
            return
        offsets = self._offsets.get(group_id)
        if offsets is None:
            offsets = self._offsets[group_id] = {}
        offsets[topic, partition] = value

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None, now: int) -> None:
        """Apply an OffsetCommit record at load."""
        self.apply(key.group, key.topic, key.partition, value)

    def _apply_batch(
        self, group_id: str, values: Sequence[tuple[str, int, OffsetCommitValue]]
    ) -> None:
        """`apply` of a batch of commit records of one group (what a commit appends)."""
        offsets = self._offsets.get(group_id)
        if offsets is None:
            offsets = self._offsets[group_id] = {}
        for topic, partition, value in values:
            offsets[topic, partition] = value

    def on_loaded(self, now: int) -> None:
        """After a replay: a group that holds offsets exists (a group tombstone followed by
        none for its offsets leaves a simple group holding them, as Kafka loads offsets of a
        group it has no metadata for); a simple group without offsets left is gone."""
        groups = self._groups
        kinds = self._kinds
        for group_id in self._offsets:
            if group_id not in groups:
                kinds.create_simple_group(group_id, now)
        for group_id, group in list(groups.items()):
            if group_id not in self._offsets and kinds.is_simple(group):
                del groups[group_id]

    # ---------------------------------------------------------------- OffsetCommit

    def _offset_commit(self, req: OffsetCommitRequest, now: int) -> Reply[OffsetCommitResponse]:
        """Kafka's `handleCommitOffsets` / `doCommitOffsets`: generation-fenced commits from
        members; simple consumers (generation −1, no member) only into an Empty group."""
        try:
            self._ctx.validate_group(req.group_id, allow_empty_id=True)
            group = self._groups.get(req.group_id)
            if group is None:
                if req.generation_id >= 0:
                    raise IllegalGenerationError(str(req.generation_id))
                # Not managed by the coordinator: a group used only to store offsets.
                group = self._kinds.create_simple_group(req.group_id, now)
            self._kinds.validate_offset_commit(group, req, now)
        except CoordinatorError as exc:
            return self._commit_error(req, error_code_of(exc))
        return Reply.of(self._store_offsets(req.group_id, req, now))

    @staticmethod
    def _commit_error(req: OffsetCommitRequest, code: Errors) -> Reply[OffsetCommitResponse]:
        return Reply.of(
            OffsetCommitResponse(
                partitions=tuple(
                    PartitionResult(topic=o.topic, partition=o.partition, error_code=code)
                    for o in req.offsets
                )
            )
        )

    def _store_offsets(
        self, group_id: str, req: OffsetCommitRequest, now: int
    ) -> OffsetCommitResponse:
        """Kafka's `storeOffsets`: oversized metadata is refused per partition, the rest is
        appended as one batch and applied once durable."""
        ctx = self._ctx
        max_metadata = ctx.config.offset_metadata_max_bytes
        values: list[tuple[str, int, OffsetCommitValue]] = []
        too_large: set[int] = set()
        for index, o in enumerate(req.offsets):
            metadata = o.metadata or ""
            # A Java length is at least the number of code points: measure only if it may fit.
            if len(metadata) > max_metadata or (
                not metadata.isascii() and _java_string_length(metadata) > max_metadata
            ):
                too_large.add(index)
                continue
            expire = o.expire_timestamp_ms
            value = OffsetCommitValue(
                offset=o.offset,
                leader_epoch=o.leader_epoch,
                metadata=metadata,
                commit_timestamp=now,
                expire_timestamp=expire if expire >= 0 else -1,
            )
            values.append((o.topic, o.partition, value))
        stored_code = NONE
        if values:
            if ctx.append(offset_commit_records(group_id, values)):
                self._apply_batch(group_id, values)
                if ctx.listeners:
                    ctx.emit(
                        OffsetsCommitted(
                            group_id=group_id,
                            at_ms=now,
                            member_id=req.member_id,
                            generation_id=req.generation_id,
                            offsets=[[t, p, v.offset] for t, p, v in values],
                        )
                    )
            else:
                stored_code = Errors.COORDINATOR_NOT_AVAILABLE
        if not too_large:
            return OffsetCommitResponse(
                partitions=tuple(
                    [_partition_result(o.topic, o.partition, stored_code) for o in req.offsets]
                )
            )
        return OffsetCommitResponse(
            partitions=tuple(
                PartitionResult(
                    topic=o.topic,
                    partition=o.partition,
                    error_code=Errors.OFFSET_METADATA_TOO_LARGE if i in too_large else stored_code,
                )
                for i, o in enumerate(req.offsets)
            )
        )

    # ---------------------------------------------------------------- OffsetFetch

    def _offset_fetch(self, req: OffsetFetchRequest, now: int) -> Reply[OffsetFetchResponse]:
        """Kafka's `handleFetchOffsets` / `getOffsets`: unknown partitions answer offset −1.
        `req.member_id` and `req.member_epoch` are not checked: a classic group ignores them
        (`ClassicGroup.validateOffsetFetch`); a kind that checks them (Kafka's
        `ConsumerGroup.validateOffsetFetch`) will do it here, through the group's kind."""
        try:
            self._ctx.validate_group(req.group_id, allow_empty_id=True)
            group = self._groups.get(req.group_id)
            if group is not None:
                self._kinds.validate_offset_fetch(group, req)
        except CoordinatorError as exc:
            return Reply.of(OffsetFetchResponse(error_code=error_code_of(exc)))
        offsets = self._offsets.get(req.group_id, _NO_OFFSETS)
        wanted = (
            sorted(offsets)
            if req.partitions is None
            else [(tp.topic, tp.partition) for tp in req.partitions]
        )
        out = []
        for topic, partition in wanted:
            value = offsets.get((topic, partition))
            if value is None:
                out.append(
                    OffsetData(
                        topic=topic,
                        partition=partition,
                        offset=-1,
                        metadata="",
                        leader_epoch=-1,
                        error_code=NONE,
                    )
                )
            else:
                out.append(
                    OffsetData(
                        topic=topic,
                        partition=partition,
                        offset=value.offset,
                        metadata=value.metadata,
                        leader_epoch=value.leader_epoch,
                        error_code=NONE,
                    )
                )
        return Reply.of(OffsetFetchResponse(error_code=NONE, partitions=tuple(out)))

    # ---------------------------------------------------------------- OffsetDelete

    def _offset_delete(self, req: OffsetDeleteRequest, now: int) -> Reply[OffsetDeleteResponse]:
        """Kafka's `handleDeleteOffsets` (KIP-496): any offset of an Empty group; in a consumer
        group with members, only topics it does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC)."""
        try:
            self._ctx.validate_group(req.group_id, allow_empty_id=False)
        except CoordinatorError as exc:
            return Reply.of(OffsetDeleteResponse(error_code=error_code_of(exc)))
        group = self._groups.get(req.group_id)
        if group is None:
            return Reply.of(OffsetDeleteResponse(error_code=Errors.GROUP_ID_NOT_FOUND))
        subscribed = self._kinds.offset_delete_subscribed(
            group, [tp.topic for tp in req.partitions]
        )
        if subscribed is None:
            return Reply.of(OffsetDeleteResponse(error_code=Errors.NON_EMPTY_GROUP))
        eligible = [(tp.topic, tp.partition) for tp in req.partitions if tp.topic not in subscribed]
        code = NONE
        if eligible:
            offsets = self._offsets.get(req.group_id, _NO_OFFSETS)
            present = [tp for tp in dict.fromkeys(eligible) if tp in offsets]
            removed, _ = self.remove_offsets_and_maybe_group(
                group, present, now, offsets_reason="deleted", group_reason="offsets_deleted"
            )
            if removed < 0:
                code = Errors.COORDINATOR_NOT_AVAILABLE
        return Reply.of(
            OffsetDeleteResponse(
                error_code=NONE,
                partitions=tuple(
                    PartitionResult(
                        topic=tp.topic,
                        partition=tp.partition,
                        error_code=Errors.GROUP_SUBSCRIBED_TO_TOPIC
                        if tp.topic in subscribed
                        else code,
                    )
                    for tp in req.partitions
                ),
            )
        )

    # ---------------------------------------------------------------- expiry and removal

    def expire(self, group: Group, now: int) -> tuple[int, int]:
        """Kafka's `cleanupGroupMetadata` with `removeExpiredOffsets` for one group: tombstone
        its expired offsets and, if that leaves an Empty group without offsets, the group.
        Returns what `remove_offsets_and_maybe_group` returns."""
        return self.remove_offsets_and_maybe_group(
            group,
            self._expired_offsets(group, now),
            now,
            offsets_reason="expired",
            group_reason="expired",
        )

    def remove_all(self, group: Group, now: int) -> bool:
        """DeleteGroups of an Empty group: tombstone all its offsets and the group. False if
        the log refused the write (nothing changed)."""
        removed, _ = self.remove_offsets_and_maybe_group(
            group,
            list(self._offsets.get(group.group_id, _NO_OFFSETS)),
            now,
            offsets_reason="group_deleted",
            group_reason="deleted",
        )
        return removed >= 0

    def _expired_offsets(self, group: Group, now: int) -> list[tuple[str, int]]:
        """Kafka's `removeExpiredOffsets` (KIP-211). The retention clock starts when the group
        says (`offset_expiration_condition`), else at each offset's commit; offsets of topics
        the group still subscribes to never expire. An explicit expire timestamp (old
        OffsetCommit versions) overrides all of it."""
        offsets = self._offsets.get(group.group_id)
        if offsets is None:
            return []
        condition = self._kinds.offset_expiration_condition(group)
        if condition is None:
            return []
        base, subscribed = condition
        retention = self._ctx.config.offsets_retention_ms
        expired = []
        for (topic, partition), value in offsets.items():
            if topic in subscribed:
                continue
            if value.expire_timestamp >= 0:
                if now >= value.expire_timestamp:
                    expired.append((topic, partition))
            elif now - (value.commit_timestamp if base is None else base) >= retention:
                expired.append((topic, partition))
        return expired

    def remove_offsets_and_maybe_group(
        self,
        group: Group,
        partitions: list[tuple[str, int]],
        now: int,
        *,
        offsets_reason: str,
        group_reason: str,
    ) -> tuple[int, int]:
        """Kafka's `cleanupGroupMetadata` for one group: tombstone the given offsets; an Empty
        group left without offsets goes Dead (tombstoned if it ever stored metadata), in the
        same append. Returns (offsets removed, groups removed), or (-1, 0) if the log refused
        the write."""
        group_id = group.group_id
        kinds = self._kinds
        remaining = len(self._offsets.get(group_id, _NO_OFFSETS)) - len(partitions)
        dead = remaining == 0 and kinds.is_empty(group)
        records: list[Record] = [
            offset_commit_tombstone(group_id, topic, partition) for topic, partition in partitions
        ]
        tombstones = kinds.group_tombstones(group) if dead else []
        records.extend(tombstones)
        if records and not self._ctx.append(records):
            return -1, 0
        for topic, partition in partitions:
            self.apply(group_id, topic, partition, None)
        if partitions:
            self._ctx.emit(
                OffsetsRemoved(
                    group_id=group_id,
                    at_ms=now,
                    reason=offsets_reason,
                    partitions=[[t, p] for t, p in partitions],
                )
            )
        if dead:
            kinds.remove_group(group, now, group_reason, tombstoned=bool(tombstones))
        return len(partitions), int(dead)
