"""Every request the Kafka listener serves, with field values hypothesis chooses, sent to the
real listener over a socket.

The values are any the wire format can carry, which no client sends: negative timeouts and
epochs, empty or long names in any script, arrays of any length, corrupt record batches.
Each request is encoded with kio, as a client would encode it. The listener must do one of
three things, as Kafka's broker does: answer it (with an error code where the values are
wrong), refuse it as bad input (a warning, the connection closed), or hold it (a JoinGroup,
SyncGroup or Fetch that waits). It must never fail inside a handler (logged as an ERROR),
and it must keep serving: an ApiVersions request pipelined behind each one is answered on a
connection that is still open.
"""

from __future__ import annotations

import logging
import socket
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.static.primitive import Records

from webapp.transports.kafka.apis import API_NAMES, SUPPORTED, SUSPENDS
from webapp.transports.kafka.listener import KafkaListener

from .test_wire import answers_api_versions, api_versions_v0, request_frame

pytestmark = pytest.mark.asyncio

# A Produce's record batches: any bytes (a corrupt batch is refused, as the broker refuses it).
st.register_type_strategy(Records, st.binary(max_size=300).map(Records.parse))

#: The correlation ids of the request under test and of the ApiVersions behind it.
UNDER_TEST, BEHIND = 1, 99
UNKNOWN_TOPIC_OR_PARTITION = 3
#: Examples per API, spread over its versions (hypothesis, derandomized: the same every run).
EXAMPLES = 30
#: How long a request that is not held may take to be answered or refused.
ANSWER_S = 10.0
#: How long a request that may be held is watched before the next one.
HELD_S = 0.3


def read_frames(sock: socket.socket, until: float) -> tuple[list[int], bool]:
    """The correlation ids of the response frames read until BEHIND's answer arrives, the
    listener closes the connection, or ``until`` seconds pass; and whether it closed."""
    sock.settimeout(until)
    buffer = b""
    ids: list[int] = []
    try:
        while BEHIND not in ids:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return ids, True
            buffer += chunk
            while len(buffer) >= 8:
                size = struct.unpack_from(">i", buffer)[0]
                if len(buffer) < 4 + size:
                    break
                ids.append(struct.unpack_from(">i", buffer, 4)[0])
                buffer = buffer[4 + size :]
    except TimeoutError:
        pass
    except ConnectionResetError:
        return ids, True
    return ids, False


def corrupted(frame: bytes, data: Any) -> bytes:
    """``frame`` with some of its body's bytes changed, or its body cut short, its size prefix
    kept true (a frame the listener reads whole). The API key and the correlation id stay:
    the answer, if any, is still this request's, and a request that is not held stays so."""
    body = bytearray(frame[4:])
    keep = {0, 1, 4, 5, 6, 7}  # the API key and the correlation id
    for _ in range(data.draw(st.integers(1, 4), label="changes")):
        at = data.draw(st.integers(2, len(body) - 1), label="at")
        if at not in keep:
            body[at] = data.draw(st.integers(0, 255), label="byte")
    if data.draw(st.booleans(), label="cut"):
        body = body[: data.draw(st.integers(8, len(body)), label="length")]
    return struct.pack(">i", len(body)) + bytes(body)


def drawn_request(data: Any, api_key: int) -> tuple[Any, Any, bytes]:
    """A request of ``api_key`` that hypothesis draws (a served version, any field values): its
    schema, its body and its frame (with the size); a value kio will not encode is rejected,
    as no client could send it either."""
    low, high = SUPPORTED[api_key]
    version = data.draw(st.integers(low, high), label="version")
    schema = load_request_schema(api_key, version)
    body = data.draw(st.from_type(schema), label="body")
    try:
        return schema, body, request_frame(api_key, version, UNDER_TEST, body)
    except Exception:
        reject()


#: How these tests run hypothesis: the same examples every run, no example database.
SAME_EXAMPLES = settings(
    deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


def check(port: int, api_key: int, corrupt: bool) -> None:
    """Run hypothesis over requests of ``api_key`` (its served versions, any field values;
    with ``corrupt``, bytes changed too) against the listener on ``port``."""
    held = api_key in SUSPENDS

    @settings(SAME_EXAMPLES, max_examples=EXAMPLES)
    @given(data=st.data())
    def one_request(data: Any) -> None:
        _, _, payload = drawn_request(data, api_key)
        if corrupt:
            payload = corrupted(payload, data)
        with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_S) as sock:
            sock.sendall(payload + api_versions_v0(BEHIND))
            ids, closed = read_frames(sock, HELD_S if held else ANSWER_S)
        if closed:
            return  # refused as bad input (the log says why)
        if held and BEHIND not in ids:
            return  # held: parked in a join or a long poll
        # Answered, or sent without an answer (a Produce with acks=0), and still serving.
        assert ids in ([UNDER_TEST, BEHIND], [BEHIND]), ids
        assert ids == [UNDER_TEST, BEHIND] or api_key == 0 or corrupt, ids

    one_request()


@pytest.mark.parametrize("corrupt", [False, True], ids=["values", "bytes"])
@pytest.mark.parametrize("api_key", sorted(SUPPORTED), ids=lambda key: API_NAMES[key])
async def test_no_request_breaks_a_handler_and_the_listener_serves_on(
    kafka: KafkaListener, caplog: pytest.LogCaptureFixture, api_key: int, corrupt: bool
) -> None:
    """Any field values (``values``), and the same requests with bytes changed or cut short
    (``bytes``): each is answered, refused as bad input or held; no decoder or handler
    fails, and the listener serves on."""
    import asyncio

    caplog.set_level(logging.WARNING, logger="webapp")
    await asyncio.to_thread(check, kafka.port, api_key, corrupt)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, "\n".join(r.getMessage() for r in failures)
    assert await answers_api_versions(kafka)


# -- what the fuzzing found: a partition index no topic has -----------------------------------


async def test_a_partition_index_no_topic_has_is_answered_as_kafka_answers_it(
    kafka: KafkaListener, caplog: pytest.LogCaptureFixture
) -> None:
    """A negative partition index closed the connection. Kafka's broker answers a commit or an
    offset delete of it with UNKNOWN_TOPIC_OR_PARTITION (its metadata has no such partition),
    without its coordinator, and a fetch of it with no offset; the other partitions of the
    same request are served."""
    from kio.schema.offset_commit.v8 import request as commit_v8
    from kio.schema.offset_delete.v0 import request as delete_v0
    from kio.schema.offset_fetch.v7 import request as fetch_v7

    from .test_new_versions import ask

    caplog.set_level(logging.WARNING, logger="webapp")

    def commit(*offsets: tuple[int, int]) -> Any:
        partitions = tuple(
            commit_v8.OffsetCommitRequestPartition(
                partition_index=index,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata="",
            )
            for index, offset in offsets
        )
        return commit_v8.OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(commit_v8.OffsetCommitRequestTopic(name="t", partitions=partitions),),
        )

    def codes(answer: Any) -> list[tuple[str, int, int]]:
        return [
            (topic.name, p.partition_index, int(p.error_code))
            for topic in answer.topics
            for p in topic.partitions
        ]

    answer = await ask(kafka, 8, 8, commit((-1, 5), (0, 7)))
    assert codes(answer) == [("t", -1, UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, 0)]
    assert kafka.runtime.committed_offsets("g")[("t", 0)].offset == 7
    answer = await ask(kafka, 8, 8, commit((-3, 1)))
    assert codes(answer) == [("t", -3, UNKNOWN_TOPIC_OR_PARTITION)]

    request = fetch_v7.OffsetFetchRequest(
        group_id="g",
        topics=(fetch_v7.OffsetFetchRequestTopic(name="t", partition_indexes=(0, -1)),),
        require_stable=False,
    )
    answer = await ask(kafka, 9, 7, request)
    assert int(answer.error_code) == 0
    assert [
        (p.partition_index, p.committed_offset, int(p.error_code))
        for topic in answer.topics
        for p in topic.partitions
    ] == [(0, 7, 0), (-1, -1, 0)]

    request = delete_v0.OffsetDeleteRequest(
        group_id="g",
        topics=(
            delete_v0.OffsetDeleteRequestTopic(
                name="t",
                partitions=(
                    delete_v0.OffsetDeleteRequestPartition(partition_index=-1),
                    delete_v0.OffsetDeleteRequestPartition(partition_index=0),
                ),
            ),
        ),
    )
    answer = await ask(kafka, 47, 0, request)
    assert int(answer.error_code) == 0
    assert codes(answer) == [("t", -1, UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, 0)]
    assert ("t", 0) not in kafka.runtime.committed_offsets("g")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
