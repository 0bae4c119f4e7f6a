"""Benchmark: decoding a Kafka request, the listener's codec against kio's bare readers.

    .venv/bin/python bench/kafka_codec.py [--repeat R]

``webapp.transports.kafka.codec.decode_request`` is kio's native readers plus what the listener
adds before them: the header peeked, the API version checked, and the frame walked by its schema
so that no array announces more elements than the bytes left (``walk.check_arrays``). The peer
is kio alone on the same frames (``entity_reader`` of the header, then of the body), measured in
the same run: the ratio is what the listener's checks cost on top of the decode itself.

The frames are OffsetCommit v8 requests (the most frequent request with arrays: every consumer
commits), of 1 partition, 10 partitions in each of 3 topics, and 100 partitions, and a
Heartbeat v4 (no array: nothing to walk). Each figure is the best of ``--repeat`` (default 7)
timings of many decodes, in µs per request. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader, entity_writer

from webapp.transports.kafka.apis import SUPPORTED
from webapp.transports.kafka.codec import decode_request


def request(api_key: int, version: int, body: Any) -> bytes:
    """A request frame (without its size prefix) as a client writes it."""
    buffer = io.BytesIO()
    header = RequestHeader(
        request_api_key=api_key, request_api_version=version, correlation_id=1, client_id="c"
    )
    entity_writer(RequestHeader)(buffer, header)
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def commit(topics: int, partitions: int) -> bytes:
    return request(
        8,
        8,
        OffsetCommitRequest(
            group_id="bench-group",
            generation_id_or_member_epoch=3,
            member_id="consumer-1-4f1c",
            group_instance_id=None,
            topics=tuple(
                OffsetCommitRequestTopic(
                    name=f"topic-{t}",
                    partitions=tuple(
                        OffsetCommitRequestPartition(
                            partition_index=p,
                            committed_offset=1_000_000 + p,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                        for p in range(partitions)
                    ),
                )
                for t in range(topics)
            ),
        ),
    )


FRAMES = {
    "OffsetCommit v8, 1 partition": (commit(1, 1), OffsetCommitRequest),
    "OffsetCommit v8, 3 topics x 10": (commit(3, 10), OffsetCommitRequest),
    "OffsetCommit v8, 100 partitions": (commit(1, 100), OffsetCommitRequest),
    "Heartbeat v4": (
        request(
            12,
            4,
            HeartbeatRequest(
                group_id="bench-group",
                generation_id=3,
                member_id="consumer-1-4f1c",
                group_instance_id=None,
            ),
        ),
        HeartbeatRequest,
    ),
}


def best_us(call: Callable[[], object], repeat: int) -> float:
    """The best of ``repeat`` timings of ``call``, in µs per call."""
    number, _ = timeit.Timer(call).autorange()
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timings per figure (the best)")
    args = parser.parse_args()
    read_header = entity_reader(RequestHeader)
    rows = []
    for name, (frame, schema) in FRAMES.items():
        read_body = entity_reader(schema)

        def bare(frame: bytes = frame, read_body: Any = read_body) -> object:
            _, used = read_header(frame, 0)
            return read_body(frame, used)[0]

        assert decode_request(frame, SUPPORTED).body == bare()
        codec = best_us(lambda frame=frame: decode_request(frame, SUPPORTED), args.repeat)  # type: ignore[misc]
        kio = best_us(bare, args.repeat)
        rows.append({"request": name, "bytes": len(frame), "codec_us": codec, "kio_us": kio})
    print("| request | bytes | decode_request µs | kio alone µs | codec / kio |")
    print("|---|---|---|---|---|")
    for row in rows:
        ratio = row["codec_us"] / row["kio_us"]
        print(
            f"| {row['request']} | {row['bytes']} | {row['codec_us']:.2f} | {row['kio_us']:.2f}"
            f" | {ratio:.2f} |"
        )
    print(json.dumps({"decode": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
