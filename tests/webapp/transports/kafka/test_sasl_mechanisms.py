"""SCRAM-SHA-256 and PLAIN on their own, without sockets: RFC 7677's worked example byte for
byte, and every way a client's token can be wrong refused with Kafka's message."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from webapp.transports.kafka.mechanisms import (
    PlainServer,
    SaslFailed,
    ScramCredential,
    ScramServer,
    StoredUser,
    scram_credential,
)

pytestmark = pytest.mark.asyncio

# RFC 7677, section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def users(**stored: StoredUser) -> object:
    async def lookup(name: str) -> StoredUser | None:
        return stored.get(name)

    return lookup


def rfc_user() -> StoredUser:
    credential = scram_credential("pencil", salt=RFC_SALT, iterations=4096)
    return StoredUser(name="user", credential=credential, is_staff=False)


def rfc_server() -> ScramServer:
    return ScramServer(users(user=rfc_user()), nonce=lambda: RFC_SERVER_NONCE)  # type: ignore[arg-type]


async def test_scram_sha_256_answers_rfc_7677s_example_byte_for_byte() -> None:
    server = rfc_server()
    assert await server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert await server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.user.name == "user"


async def test_the_stored_credential_is_salt_stored_key_and_server_key_never_the_password() -> None:
    credential = scram_credential("pencil", salt=RFC_SALT, iterations=4096)
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    assert credential == ScramCredential(
        salt=RFC_SALT,
        stored_key=hashlib.sha256(client_key).digest(),
        server_key=hmac.new(salted, b"Server Key", "sha256").digest(),
        iterations=4096,
    )
    assert b"pencil" not in repr(credential).encode()
    with pytest.raises(ValueError, match="at least 4096"):
        scram_credential("pencil", iterations=4095)
    # A new salt each time: the same password is stored differently.
    assert scram_credential("pencil").stored_key != scram_credential("pencil").stored_key


@pytest.mark.parametrize(
    ("client_final", "why"),
    [
        pytest.param(
            RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc"), "Invalid client credentials", id="proof"
        ),
        pytest.param(
            RFC_CLIENT_FINAL.replace(b"k0,p=", b"k1,p="),
            "Invalid client nonce in the final client message.",
            id="nonce",
        ),
        pytest.param(
            RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "Invalid channel binding", id="binding"
        ),
        pytest.param(b"p=abc", "Invalid SCRAM client final message format", id="garbage"),
        pytest.param(b"\xff\xfe", "not UTF-8", id="not utf-8"),
        pytest.param(RFC_CLIENT_FINAL[:-10], "Invalid base64 proof", id="truncated proof"),
    ],
)
async def test_a_wrong_client_final_message_fails_the_exchange(
    client_final: bytes, why: str
) -> None:
    server = rfc_server()
    await server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslFailed, match=why) as failed:
        await server.evaluate(client_final)
    assert not failed.value.public  # the client is told only "invalid credentials"
    assert not server.complete
    with pytest.raises(SaslFailed, match="Unexpected challenge"):
        await server.evaluate(RFC_CLIENT_FINAL)  # a failed exchange stays failed


@pytest.mark.parametrize(
    ("client_first", "why", "public"),
    [
        (b"n,,n=nobody,r=abc", "Invalid user credentials", False),
        (b"p=tls-unique,,n=user,r=abc", "Invalid SCRAM client first message format", False),
        (b"n,,n=user", "Invalid SCRAM client first message format", False),
        (b"n,,n=us=er,r=abc", "Invalid username", False),
        (b"", "Invalid SCRAM client first message format", False),
        (b"n,a=admin,n=user,r=abc", "authorization id that is different from username", True),
        (b"n,,n=user,r=abc,tokenauth=true", "Token Authentication failed", False),
    ],
)
async def test_a_wrong_client_first_message_fails_the_exchange(
    client_first: bytes, why: str, public: bool
) -> None:
    with pytest.raises(SaslFailed, match=why) as failed:
        await rfc_server().evaluate(client_first)
    assert failed.value.public is public


async def test_plain_checks_the_password_against_the_scram_credential() -> None:
    server = PlainServer(users(user=rfc_user()))  # type: ignore[arg-type]
    assert await server.evaluate(b"\0user\0pencil") == b""
    assert server.complete and server.user.name == "user"
    assert await PlainServer(users(user=rfc_user())).evaluate(b"user\0user\0pencil") == b""  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0user\0pen", "Authentication failed: Invalid username or password"),
        (b"\0nobody\0pencil", "Authentication failed: Invalid username or password"),
        (b"user\0pencil", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0\0pencil", "Authentication failed: username not specified"),
        (b"\0user\0", "Authentication failed: password not specified"),
        (b"admin\0user\0pencil", "authorization id that is different from username"),
        (b"\0user\0\xff", "Invalid SASL/PLAIN response: not UTF-8"),
    ],
)
async def test_plain_refuses_with_kafkas_message(token: bytes, message: str) -> None:
    with pytest.raises(SaslFailed, match=message) as failed:
        await PlainServer(users(user=rfc_user())).evaluate(token)  # type: ignore[arg-type]
    assert failed.value.public
