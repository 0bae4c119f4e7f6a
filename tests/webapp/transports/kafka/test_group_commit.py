"""The listener's group commit (docs/kafka.md, "Group commit"): the OffsetCommits a client
pipelined are stored in one transaction and answered after it commits; a group commit that
fails answers none of them and the listener serves the other connections on; and what was
answered survives a ``kill -9`` of a real ``manage.py serve``."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import socket
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import LiveServer
from webapp.transports.kafka import apis
from webapp.transports.kafka.listener import KafkaListener

from .test_wire import api_versions_v0, read_response, request_frame

OFFSET_COMMIT = 8


def offset_commit(group_id: str, partition: int, offset: int, correlation_id: int) -> bytes:
    """OffsetCommit v8 of one partition of ``orders``, generation -1 (no member)."""
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return request_frame(
        OFFSET_COMMIT,
        8,
        correlation_id,
        OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(
                OffsetCommitRequestTopic(
                    name="orders",
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=partition,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        ),
                    ),
                ),
            ),
        ),
    )


def commit_answer(reply: bytes) -> tuple[int, list[int]]:
    """(correlation id, error code of each partition) of an OffsetCommit v8 answer."""
    from kio.schema.offset_commit.v8.response import OffsetCommitResponse
    from kio.serial import entity_reader

    (correlation_id,) = struct.unpack_from(">i", reply)
    # v8 answers carry a flexible header: the correlation id, then its tagged fields (none).
    answer, _ = entity_reader(OffsetCommitResponse)(reply, 5)
    return correlation_id, [p.error_code for t in answer.topics for p in t.partitions]


def refuse_records_of(log_path: Path, group_id: str) -> None:
    """From now on SQLite refuses to store any record of ``group_id`` (a storage fault the
    group commit meets)."""
    conn = sqlite3.connect(log_path)
    try:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON records WHEN instr(NEW.key, "
            f"x'{group_id.encode().hex()}') > 0 BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.asyncio
async def test_pipelined_commits_are_stored_in_one_transaction_then_answered(
    kafka: KafkaListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    client = writer.get_extra_info("socket")
    log = kafka.runtime.record_log
    writes: list[tuple[str, int, bool]] = []
    write = log._write

    def spied(batch: list[Any], what: str) -> None:
        # Has any answer reached the client's socket before this transaction commits?
        answered_before = bool(select.select([client], [], [], 0)[0])
        writes.append((what, len(batch), answered_before))
        write(batch, what)

    monkeypatch.setattr(log, "_write", spied)
    writer.write(b"".join(offset_commit("pipelined", p, 100 + p, p) for p in range(20)))
    answers = [commit_answer(await read_response(reader)) for _ in range(20)]
    writer.close()

    assert answers == [(p, [0]) for p in range(20)]
    assert writes == [("group commit", 20, False)]
    offsets = kafka.runtime.committed_offsets("pipelined")
    assert {p: offsets[("orders", p)].offset for p in range(20)} == {p: 100 + p for p in range(20)}


@pytest.mark.asyncio
async def test_a_failed_group_commit_answers_none_of_its_requests_and_the_listener_serves_on(
    kafka: KafkaListener, log_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = kafka.runtime
    # Another client, connected before the fault, keeps its connection.
    other_reader, other = await asyncio.open_connection("127.0.0.1", kafka.port)
    other.write(offset_commit("fine", 0, 1, 1))
    assert commit_answer(await read_response(other_reader)) == (1, [0])

    refuse_records_of(log_path, "doomed")
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(b"".join(offset_commit("doomed", p, 7, p) for p in range(10)))
    # Not one answer: the connection is closed, the client will reconnect and commit again.
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()

    assert runtime.engine_faults == 1
    assert runtime.last_engine_fault["during"] == "group commit"
    assert any("answers withheld" in r.getMessage() for r in caplog.records)
    assert runtime.reload_task is not None
    await runtime.reload_task
    assert runtime.committed_offsets("doomed") == {}
    other.write(offset_commit("fine", 0, 2, 2))
    assert commit_answer(await read_response(other_reader)) == (2, [0])
    assert runtime.committed_offsets("fine")[("orders", 0)].offset == 2
    other.close()


@pytest.mark.asyncio
async def test_a_handler_that_would_await_inside_a_run_closes_its_connection_only(
    kafka: KafkaListener, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A handler that awaits (one apis.SUSPENDS should have named) is not let suspend while
    # the group commit is open: its request fails, its connection closes, the batch of the
    # commit before it is stored and answered, and nothing else is disturbed.
    async def awaits(context: Any, request: Any) -> Any:
        await asyncio.sleep(0)

    monkeypatch.setitem(apis.HANDLERS, apis.API_VERSIONS, awaits)
    reader, writer = await asyncio.open_connection("127.0.0.1", kafka.port)
    writer.write(offset_commit("before", 0, 5, 1) + api_versions_v0(correlation_id=2))
    assert commit_answer(await read_response(reader)) == (1, [0])
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    assert any("awaited inside a group commit" in str(r.exc_info) for r in caplog.records)
    assert kafka.runtime.engine_faults == 0 and kafka.runtime.ready
    assert kafka.runtime.committed_offsets("before")[("orders", 0)].offset == 5


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(tmp_path)
    yield server
    server.kill()


def read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            more = sock.recv(n - len(data))
            assert more, "the server closed the connection"
            data += more
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def test_no_answered_commit_is_lost_to_a_kill_9_of_serve(server: LiveServer) -> None:
    server.start()
    server.post("/api/topics", {"name": "orders", "partitions": 4})
    sent, answered = 300, 150
    sockets = [socket.create_connection(("127.0.0.1", server.kafka_port)) for _ in range(4)]
    try:
        # Each connection pipelines its partition's commits 1..300 in one go (answered in
        # group commits of whatever each read brought), reads the first 150 answers, then the
        # server is killed (the rest may still be in flight).
        for partition, sock in enumerate(sockets):
            sock.settimeout(10)
            sock.sendall(
                b"".join(
                    offset_commit("durable", partition, offset, offset)
                    for offset in range(1, sent + 1)
                )
            )
        for sock in sockets:
            for expected in range(1, answered + 1):
                assert commit_answer(read_frame(sock)) == (expected, [0])
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        for sock in sockets:
            sock.close()

    server.start()
    with server.websocket() as ws:
        ws.send(json.dumps({"id": 1, "api": "OffsetFetch", "request": {"group_id": "durable"}}))
        fetched = json.loads(ws.recv(timeout=5))["response"]
    stored = {p["partition"]: p["offset"] for p in fetched["partitions"]}
    assert sorted(stored) == [0, 1, 2, 3]
    # Every answered commit is there (1..150 of each partition); some in flight may be too.
    assert all(answered <= stored[partition] <= sent for partition in range(4)), stored
    assert server.stop(signal.SIGTERM) == 0
