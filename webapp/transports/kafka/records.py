"""The records a simulated topic holds, as Kafka's RecordBatch v2 (kio writes the format).

A simulated topic stores nothing: partition ``p`` of topic ``t`` holds, at offset ``o``, the
record with key ``p:o`` and value ``t/p/o`` (UTF-8), produced when the topic's rate says
(``webapp.runtime.topics``: an offset the current origin covers was produced at
``since_ms + (o - base) / rate`` seconds; an older one, at the origin's ``since_ms``). So every
client that reads an offset reads the same bytes, and a consumer can check what it got.
"""

from __future__ import annotations

import datetime
import io
from typing import Final, cast

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from webapp.runtime.topics import TopicSpec

__all__ = ["MAX_RECORDS_PER_BATCH", "produced_at_ms", "simulated_batch"]

#: At most this many records in one partition's answer to one Fetch.
MAX_RECORDS_PER_BATCH = 500
#: A record's size in a batch, about (for the fetch size limits).
RECORD_BYTES_ESTIMATE = 48

# kio types the fields as its range-checked ints; these values are in range by construction
# (offsets are capped at int64, timestamps are after 1970), so they are cast, not re-parsed.
_NO_RECORD_ATTRIBUTES: Final = cast(i8, 0)
_NO_BATCH_ATTRIBUTES: Final = cast(i16, 0)
_NO_PRODUCER_ID: Final = cast(i64, -1)
_NO_PRODUCER_EPOCH: Final = cast(i16, -1)
_NO_SEQUENCE: Final = cast(i32, -1)


def produced_at_ms(spec: TopicSpec, partition: int, offset: int) -> int:
    """When the record at ``offset`` was produced, by the topic's rate."""
    base, since = spec.origins[partition]
    if offset < base or spec.produce_rate_per_s <= 0:
        return since
    return since + int((offset - base) * 1000 / spec.produce_rate_per_s)


def simulated_batch(spec: TopicSpec, partition: int, start: int, end: int) -> bytes:
    """One RecordBatch v2 holding the records ``start .. end - 1`` (``end > start``)."""
    records = tuple(
        Record(
            attributes=_NO_RECORD_ATTRIBUTES,
            timestamp=cast(
                TZAwareMicros,
                datetime.datetime.fromtimestamp(
                    produced_at_ms(spec, partition, offset) / 1000, tz=datetime.UTC
                ),
            ),
            offset=cast(i64, offset),
            key=f"{partition}:{offset}".encode(),
            value=f"{spec.name}/{partition}/{offset}".encode(),
            headers=(),
        )
        for offset in range(start, end)
    )
    buffer = io.BytesIO()
    write_batch(
        buffer,
        NewRecordBatch(
            producer_id=_NO_PRODUCER_ID,
            producer_epoch=_NO_PRODUCER_EPOCH,
            base_sequence=_NO_SEQUENCE,
            records=records,
            attributes=_NO_BATCH_ATTRIBUTES,
        ),
    )
    return buffer.getvalue()
