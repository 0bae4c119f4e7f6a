"""SASL on the wire, frame by frame, against a listener that requires it: the order Kafka's
SaslServerAuthenticator enforces, both framings (SaslAuthenticate after a v1 handshake, raw
tokens after a v0 one), and bad input (garbage tokens, a wrong nonce, truncated and oversized
frames, requests out of turn), each answered as Kafka answers it or closed, never taking the
listener down."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kio.serial import entity_reader

from webapp.runtime.clock import WallClock
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.transports.kafka.authenticator import SaslConfig
from webapp.transports.kafka.listener import KafkaListener

from ...helpers import serving
from .conftest import SASL_USERS
from .test_wire import frame, request_frame

pytestmark = pytest.mark.asyncio

INVALID_SCRAM = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256"
)


class Connection:
    """A raw client connection: send frames, read size-prefixed answers."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation_id = 0

    @classmethod
    async def open(cls, listener: KafkaListener) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", listener.port))

    async def send(self, payload: bytes) -> None:
        self.writer.write(payload)
        await self.writer.drain()

    async def request(self, api_key: int, version: int, body: object) -> None:
        self.correlation_id += 1
        await self.send(request_frame(api_key, version, self.correlation_id, body))

    async def answer(self) -> bytes:
        """The next frame's bytes (without its size)."""
        (size,) = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 5))
        return await asyncio.wait_for(self.reader.readexactly(size), 5)

    async def closed(self) -> bool:
        """Whether the listener closes the connection (within 2 s) without sending more."""
        return await asyncio.wait_for(self.reader.read(1), 2) == b""

    def close(self) -> None:
        self.writer.close()


def read(schema: type, answer: bytes, header_bytes: int = 4) -> Any:
    """kio's ``schema`` from an answer (the correlation id, and a flexible header's tags)."""
    entity, _ = entity_reader(schema)(answer, header_bytes)
    return entity


async def handshake(connection: Connection, mechanism: str, version: int = 1) -> Any:
    from kio.index import load_request_schema, load_response_schema

    await connection.request(17, version, load_request_schema(17, version)(mechanism=mechanism))
    return read(load_response_schema(17, version), await connection.answer())


async def authenticate(connection: Connection, token: bytes) -> Any:
    """One SaslAuthenticate v1 round: kio's answer."""
    from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
    from kio.schema.sasl_authenticate.v1.response import SaslAuthenticateResponse

    await connection.request(36, 1, SaslAuthenticateRequest(auth_bytes=token))
    return read(SaslAuthenticateResponse, await connection.answer())


async def list_groups(connection: Connection) -> int:
    """A ListGroups v0's error code."""
    from kio.schema.list_groups.v0.request import ListGroupsRequest
    from kio.schema.list_groups.v0.response import ListGroupsResponse

    await connection.request(16, 0, ListGroupsRequest())
    return int(read(ListGroupsResponse, await connection.answer()).error_code)


def scram_client_final(password: str, client_first_bare: str, server_first: str) -> tuple[str, str]:
    """The client's side of RFC 5802, written out here: (client-final, the server-final the
    client expects)."""
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
    )
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = f"c={base64.b64encode(b'n,,').decode()},r={fields['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    verifier = base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()).decode()
    return f"{without_proof},p={base64.b64encode(proof).decode()}", f"v={verifier}"


async def scram_sign_in(connection: Connection, user: str, password: str | None = None) -> Any:
    """Handshake v1 and SCRAM-SHA-256 in SaslAuthenticate rounds; the last answer."""
    password = SASL_USERS[user][0] if password is None else password
    assert (await handshake(connection, "SCRAM-SHA-256")).error_code == 0
    bare = f"n={user},r=fyko+d2lbbFgONRv9qkxdawL"
    first = await authenticate(connection, f"n,,{bare}".encode())
    assert first.error_code == 0, first
    final, expected = scram_client_final(password, bare, first.auth_bytes.decode())
    last = await authenticate(connection, final.encode())
    if last.error_code == 0:
        assert last.auth_bytes.decode() == expected  # the server proved it knows the key
    return last


async def test_scram_in_saslauthenticate_rounds_then_the_connection_is_served(
    sasl_kafka: KafkaListener,
) -> None:
    from kio.schema.api_versions.v0.request import ApiVersionsRequest
    from kio.schema.api_versions.v0.response import ApiVersionsResponse

    connection = await Connection.open(sasl_kafka)
    try:
        await connection.request(18, 0, ApiVersionsRequest())
        versions = read(ApiVersionsResponse, await connection.answer())
        ranges = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert ranges[17] == (0, 1) and ranges[36] == (0, 2)
        answer = await scram_sign_in(connection, "alice")
        assert (answer.error_code, answer.session_lifetime) == (0, datetime.timedelta(0))
        assert await list_groups(connection) == 0
        # Authenticated: a new handshake is out of turn (Kafka's KafkaApis), and harmless.
        assert (await handshake(connection, "PLAIN")).error_code == 34  # ILLEGAL_SASL_STATE
        again = await authenticate(connection, b"\0alice\0alice-secret")
        assert again.error_code == 34
        assert (
            again.error_message
            == "SaslAuthenticate request received after successful authentication"
        )
        assert await list_groups(connection) == 0
    finally:
        connection.close()


async def test_a_request_before_the_handshake_closes_the_connection_unanswered(
    sasl_kafka: KafkaListener,
) -> None:
    from kio.schema.list_groups.v0.request import ListGroupsRequest

    connection = await Connection.open(sasl_kafka)
    await connection.request(16, 0, ListGroupsRequest())
    assert await connection.closed()


async def test_a_second_api_versions_before_the_handshake_closes_the_connection(
    sasl_kafka: KafkaListener,
) -> None:
    from kio.schema.api_versions.v0.request import ApiVersionsRequest

    connection = await Connection.open(sasl_kafka)
    await connection.request(18, 0, ApiVersionsRequest())
    await connection.answer()
    await connection.request(18, 0, ApiVersionsRequest())
    assert await connection.closed()


async def test_an_unsupported_mechanism_gets_the_enabled_list_then_the_close(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    answer = await handshake(connection, "GSSAPI")
    assert answer.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
    assert answer.mechanisms == ("SCRAM-SHA-256", "PLAIN")
    assert await connection.closed()


async def test_a_request_out_of_turn_after_the_handshake_gets_illegal_sasl_state(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    await handshake(connection, "PLAIN")
    assert await list_groups(connection) == 34  # ILLEGAL_SASL_STATE
    assert await connection.closed()


async def test_a_wrong_password_is_refused_with_kafkas_message_then_the_close(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    answer = await scram_sign_in(connection, "alice", "not-alice-secret")
    assert (answer.error_code, answer.error_message) == (58, INVALID_SCRAM)
    assert await connection.closed()


async def test_a_wrong_nonce_in_the_client_final_message_is_refused(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    await handshake(connection, "SCRAM-SHA-256")
    bare = "n=alice,r=abcdef"
    first = await authenticate(connection, f"n,,{bare}".encode())
    server_first = first.auth_bytes.decode()
    final, _ = scram_client_final("alice-secret", bare, server_first)
    nonce = server_first.split(",")[0][2:]
    # A proof made for another nonce (a replay of another exchange's final message).
    other = nonce[:-1] + ("X" if nonce[-1] != "X" else "Y")
    forged = final.replace(f"r={nonce}", f"r={other}")
    assert forged != final
    answer = await authenticate(connection, forged.encode())
    assert (answer.error_code, answer.error_message) == (58, INVALID_SCRAM)
    assert await connection.closed()


@pytest.mark.parametrize(
    ("mechanism", "token", "message"),
    [
        ("SCRAM-SHA-256", b"\x00\xff\xfe garbage", INVALID_SCRAM),
        ("SCRAM-SHA-256", b"", INVALID_SCRAM),
        ("SCRAM-SHA-256", b"n,,n=alice", INVALID_SCRAM),
        ("SCRAM-SHA-256", b"n,,n=nobody,r=abc", INVALID_SCRAM),  # the same as a bad password
        ("SCRAM-SHA-256", b"n,,n=ali\x00ce,r=abc", INVALID_SCRAM),  # not a name to look up
        (
            "PLAIN",
            b"\x00nob\xc3\xa9dy\x00pw",
            "Authentication failed: Invalid username or password",
        ),
        ("PLAIN", b"\xff" * 3000, "Invalid SASL/PLAIN response: not UTF-8"),
        ("PLAIN", b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    ],
)
async def test_a_garbage_token_is_refused_and_the_listener_serves_on(
    sasl_kafka: KafkaListener, mechanism: str, token: bytes, message: str
) -> None:
    connection = await Connection.open(sasl_kafka)
    await handshake(connection, mechanism)
    answer = await authenticate(connection, token)
    assert (answer.error_code, answer.error_message) == (58, message)
    assert await connection.closed()
    fresh = await Connection.open(sasl_kafka)
    try:
        assert (await scram_sign_in(fresh, "root")).error_code == 0
    finally:
        fresh.close()


async def test_after_a_v0_handshake_the_tokens_are_raw_frames(sasl_kafka: KafkaListener) -> None:
    connection = await Connection.open(sasl_kafka)
    try:
        assert (await handshake(connection, "SCRAM-SHA-256", version=0)).error_code == 0
        bare = "n=root,r=rawnonce"
        await connection.send(frame(f"n,,{bare}".encode()))
        server_first = (await connection.answer()).decode()
        assert server_first.startswith("r=rawnonce")
        final, expected = scram_client_final("root-secret", bare, server_first)
        await connection.send(frame(final.encode()))
        assert (await connection.answer()).decode() == expected
        assert await list_groups(connection) == 0
    finally:
        connection.close()


async def test_plain_after_a_v0_handshake_is_answered_with_an_empty_frame(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    try:
        await handshake(connection, "PLAIN", version=0)
        await connection.send(frame(b"\0alice\0alice-secret"))
        assert await connection.answer() == b""
        assert await list_groups(connection) == 0
    finally:
        connection.close()


async def test_a_wrong_raw_token_closes_the_connection_unanswered(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    await handshake(connection, "PLAIN", version=0)
    await connection.send(frame(b"\0a\0b"))  # 4 bytes: shorter than any Kafka header
    assert await connection.closed()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">i", 524289) + b"x" * 64, id="over 512 KiB"),
        pytest.param(struct.pack(">i", -1), id="a negative size"),
        pytest.param(frame(b"\x00\x11\x00\x01\x00\x00"), id="a header cut short"),
        pytest.param(frame(struct.pack(">hhih", 17, 1, 1, -1) + b"\x00\x40ab"), id="a cut body"),
        pytest.param(
            frame(struct.pack(">hhih", 17, 7, 1, -1)), id="a handshake version not served"
        ),
    ],
)
async def test_malformed_frames_before_authentication_close_only_their_connection(
    sasl_kafka: KafkaListener, payload: bytes
) -> None:
    connection = await Connection.open(sasl_kafka)
    await connection.send(payload)
    assert await connection.closed()
    fresh = await Connection.open(sasl_kafka)
    try:
        assert (await scram_sign_in(fresh, "alice")).error_code == 0
    finally:
        fresh.close()


async def test_a_connection_that_ends_mid_frame_during_authentication_changes_nothing(
    sasl_kafka: KafkaListener,
) -> None:
    connection = await Connection.open(sasl_kafka)
    await handshake(connection, "SCRAM-SHA-256")
    await connection.send(request_frame(36, 1, 9, _token(b"n,,n=alice,r=abc"))[:-5])
    connection.writer.write_eof()
    assert await connection.closed()
    fresh = await Connection.open(sasl_kafka)
    try:
        assert (await scram_sign_in(fresh, "alice")).error_code == 0
    finally:
        fresh.close()


def _token(token: bytes) -> object:
    from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest

    return SaslAuthenticateRequest(auth_bytes=token)


async def test_users_that_cannot_be_read_close_the_connection_and_the_listener_serves_on(
    transactional_db: None,
    make_runtime: Callable[..., CoordinatorRuntime],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A credential store that fails (the database is gone) is a fault: that connection is
    closed with the error in the log, the next is read again."""
    calls: list[str] = []

    async def failing_then_none(name: str) -> None:
        calls.append(name)
        if len(calls) == 1:
            raise RuntimeError("no such table: webapp_kafkauser")

    async with serving(make_runtime(clock=WallClock())) as runtime:
        listener = KafkaListener(
            runtime,
            host="127.0.0.1",
            port=0,
            records_path=tmp_path / "records.db",
            sasl=SaslConfig(mechanisms=("PLAIN",), credentials=failing_then_none),
        )
        await listener.start()
        try:
            first = await Connection.open(listener)
            await handshake(first, "PLAIN")
            await first.request(36, 1, _token(b"\0alice\0alice-secret"))
            assert await first.closed()
            assert "no such table" in caplog.text
            second = await Connection.open(listener)
            await handshake(second, "PLAIN")
            answer = await authenticate(second, b"\0alice\0alice-secret")
            assert answer.error_code == 58  # read again: no such user
            second.close()
        finally:
            await listener.stop()
    assert calls == ["alice", "alice"]


async def test_without_sasl_a_handshake_is_illegal_and_the_connection_served_on(
    kafka: KafkaListener,
) -> None:
    """A listener without SASL answers a handshake as Kafka's PLAINTEXT listener does."""
    connection = await Connection.open(kafka)
    try:
        answer = await handshake(connection, "SCRAM-SHA-256")
        assert (answer.error_code, answer.mechanisms) == (34, ())  # ILLEGAL_SASL_STATE
        assert await list_groups(connection) == 0
    finally:
        connection.close()
