"""Kafka's ``__consumer_offsets`` records: what this engine writes, and what any cluster wrote.

Theory of operation
===================

Every durable change of the group coordinator is a record: a key and a value, both
version-prefixed byte strings, exactly as Kafka lays them out in ``__consumer_offsets``.
The layouts follow Kafka's message schemas in the group-coordinator module
(``group-coordinator/src/main/resources/common/message/``: ``OffsetCommitKey.json``,
``OffsetCommitValue.json``, ``GroupMetadataKey.json``, ``GroupMetadataValue.json``); the choice of
versions follows ``GroupCoordinatorRecordHelpers`` / ``MetadataVersion.offsetCommitValueVersion`` /
``groupMetadataValueVersion``, and the reading rules follow ``GroupCoordinatorRecordSerde`` and
the Scala ``GroupMetadataManager.readMessageKey`` / ``readOffsetMessageValue`` /
``readGroupMessageValue``.

Keys: the version is the record type
------------------------------------
A key is ``int16 version`` followed by the key's fields. The key version says which kind of
record this is, so that offsets and group metadata never compact together:

====== ==================== ====================================================
key v  record kind          fields
====== ==================== ====================================================
0, 1   OffsetCommitKey      group: string, topic: string, partition: int32
2      GroupMetadataKey     group: string
3-8,16 ConsumerGroup*Key     KIP-848 consumer group records (``consumer.records``):
                            group: string, and member_id or regular_expression
other  (not handled here)   KIP-932 share group, KIP-1071 streams group records...;
                            decoding one raises :class:`UnknownRecordTypeError` so a
                            loader can skip it
1004   HandoffGroupKey      group: string (this engine's own: handoff groups, a type no
                            Kafka version uses; Kafka's loader would skip it)
====== ==================== ====================================================

This engine writes OffsetCommitKey v1 and GroupMetadataKey v2, as current Kafka does. A key
must end exactly where its fields end; a negative key version is corruption, not an unknown
record type.

Values: the version evolves the layout
--------------------------------------
A value is ``int16 version`` followed by the value's fields; ``None`` (a null value) is a
**tombstone**: the key's entity is deleted, and log compaction eventually drops the key.

The layouts of each version are in `schemas` (Kafka's) and in each kind's ``records``
module; the primitive encodings in `codec`.

Versions written and read
-------------------------
Written, as Kafka 2.3 and later write them:

* OffsetCommitValue **v3**, except **v1** when the commit carries an explicit expire timestamp
  (v1 is the only version with that field; like Kafka, the leader epoch is then not stored).
* GroupMetadataValue **v3** (the highest non-flexible version, which Kafka still writes).

Read: v0 to v4 of both values. Fields a version lacks take the schema
default (leader_epoch -1, expire_timestamp -1, current_state_timestamp -1, group_instance_id
None), except a v0 member's rebalance timeout, which takes its session timeout as
``readGroupMessageValue`` does. Encoding into an explicit older version drops the fields it
lacks: they are all "ignorable" in Kafka's schemas.

Reading is strict: truncation, a key or value with bytes after its last field (or, in flexible
versions, after its tagged fields), invalid UTF-8, a negative length (only -1, and only for a
nullable string, means null), an overlong varint or an unknown value version raise
:class:`CorruptRecordError`; nothing else escapes the decoders. Kafka's generated readers are
more lenient (they stop after the last field and replace invalid UTF-8 with U+FFFD); every
writer ends a record at its last field, and newer versions add data only as tagged fields, so
rejecting such bytes keeps a damaged log from being replayed silently.

Layout
------
``codec`` the generic struct codec and reader, and `RecordType` (a key version, its key and
value decoders); ``schemas`` Kafka's key/value schemas as data; ``offset_commit`` the offset
commit records every group kind shares. A group kind's own records live in its package
(``classic.records``: GroupMetadata; ``handoff.records``: HandoffGroup; ``consumer.records``:
Kafka's consumer group records 3-8 and 16), each with its fast paths; the façade gathers every
`RecordType` into the log's key decoder (``coordinator.decode_key``).
"""

from .codec import CorruptRecordError, RecordType, UnknownRecordTypeError, key_decoder
from .offset_commit import (
    OFFSET_COMMIT,
    decode_offset_commit_value,
    encode_offset_commit_value,
    offset_commit_record,
    offset_commit_records,
    offset_commit_tombstone,
)
from .schemas import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)

__all__ = [
    "OFFSET_COMMIT",
    "CorruptRecordError",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordType",
    "UnknownRecordTypeError",
    "decode_offset_commit_value",
    "encode_offset_commit_value",
    "key_decoder",
    "offset_commit_record",
    "offset_commit_records",
    "offset_commit_tombstone",
]
