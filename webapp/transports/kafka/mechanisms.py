"""The SASL mechanisms of the Kafka listener: SCRAM-SHA-256 (RFC 5802, RFC 7677, as Kafka
uses it, KIP-84) and PLAIN (RFC 4616). Sans-IO: a mechanism takes the client's token and
returns the server's, looking its user up through an awaitable ``CredentialSource``.

Credentials are SCRAM's, never a password (Kafka's ``ScramCredential``, kept by
``ScramFormatter``'s rules): a random salt, the iteration count (at least 4096, Kafka's
minimum for SCRAM-SHA-256), ``StoredKey = H(ClientKey)`` and ``ServerKey``, where
``SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, iterations)``,
``ClientKey = HMAC(SaltedPassword, "Client Key")`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``. The password is the UTF-8 bytes as given
(Kafka applies no SASLprep either).

SCRAM (Kafka's ``ScramSaslServer``): two rounds.

1. client-first ``n,[a=authzid],n=user,r=cnonce[,ext]``: the user's credential is looked up;
   an unknown user fails here. The answer is server-first ``r=cnonce+snonce,s=salt,i=N``.
2. client-final ``c=biws,r=cnonce+snonce,p=proof``: the nonce must be the server-first's;
   ``ClientKey = proof XOR HMAC(StoredKey, AuthMessage)`` must hash to StoredKey. The answer is
   server-final ``v=HMAC(ServerKey, AuthMessage)``, which proves to the client that the server
   knew the credential.

PLAIN (Kafka's ``PlainSaslServer``): one token ``[authzid] NUL user NUL password``, checked
against the same SCRAM credential (PBKDF2 over the password with the stored salt), so one
stored credential serves both mechanisms.

A refusal is ``SaslFailed``. Kafka tells the client the message of a
``SaslAuthenticationException`` and, for any other ``SaslException`` (bad proof, unknown
user, malformed message), only that the credentials were invalid, so that nothing about the
existence of a user leaks: ``SaslFailed.public`` says which.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "MIN_ITERATIONS",
    "PLAIN",
    "SCRAM_SHA_256",
    "CredentialSource",
    "PlainServer",
    "Principal",
    "SaslFailed",
    "SaslServer",
    "ScramCredential",
    "ScramServer",
    "StoredUser",
    "scram_credential",
]

SCRAM_SHA_256 = "SCRAM-SHA-256"
PLAIN = "PLAIN"
#: Kafka's ``ScramMechanism.SCRAM_SHA_256.minIterations()``.
MIN_ITERATIONS = 4096
_HASH = "sha256"
_SALT_BYTES = 32


class SaslFailed(Exception):
    """The exchange failed. ``public``: the message may go to the client as it is (Kafka's
    ``SaslAuthenticationException``); otherwise the client is told only that its credentials
    were invalid (Kafka's ``SaslException``)."""

    def __init__(self, message: str, *, public: bool = False) -> None:
        super().__init__(message)
        self.public = public


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What is stored for a user: never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class StoredUser:
    """A user of the listener: principal ``User:name``; ``is_staff`` may delete groups and
    offsets."""

    name: str
    credential: ScramCredential
    is_staff: bool


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a connection authenticated as: Kafka's ``KafkaPrincipal`` of type User."""

    name: str
    is_staff: bool

    def __str__(self) -> str:
        return f"User:{self.name}"


CredentialSource = Callable[[str], Awaitable[StoredUser | None]]


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, _HASH).digest()


def _salted_password(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_HASH, password.encode("utf-8"), salt, iterations)


def scram_credential(
    password: str, *, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """The SCRAM-SHA-256 credential of ``password`` (a random salt unless given)."""
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}, got {iterations}")
    salt = secrets.token_bytes(_SALT_BYTES) if salt is None else salt
    salted = _salted_password(password, salt, iterations)
    return ScramCredential(
        salt=salt,
        stored_key=_stored_key(salted),
        server_key=_hmac(salted, b"Server Key"),
        iterations=iterations,
    )


def _stored_key(salted_password: bytes) -> bytes:
    return hashlib.new(_HASH, _hmac(salted_password, b"Client Key")).digest()


class SaslServer(Protocol):
    """One mechanism's side of one exchange."""

    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def user(self) -> StoredUser:
        """The authenticated user (once complete)."""
        ...

    async def evaluate(self, token: bytes) -> bytes:
        """The server's token answering the client's; SaslFailed to refuse."""
        ...


# -- SCRAM ------------------------------------------------------------------------------------

#: RFC 5802's client-first-message: a gs2 header without channel binding ("n", or "y": the
#: client could bind but believes the server cannot), an optional authzid, then the bare
#: message (no reserved "m=" attribute), with Kafka's optional extensions after the nonce.
_CLIENT_FIRST = re.compile(
    r"(?P<gs2>[ny],(?:a=(?P<authzid>[^,]*))?,)"
    r"(?P<bare>n=(?P<saslname>[^,]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<extensions>(?:,[^,]*)*))"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without_proof>c=(?P<binding>[A-Za-z0-9+/=]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
    r"(?:,[^,]*)*?),p=(?P<proof>[A-Za-z0-9+/=]+)"
)
_SASLNAME_ESCAPE = re.compile(r"=(?!2C|3D)")


def _username(saslname: str) -> str:
    """RFC 5802's saslname unescaped (``=2C`` is a comma, ``=3D`` an equals sign)."""
    if _SASLNAME_ESCAPE.search(saslname):
        raise SaslFailed(f"Invalid username: {saslname}")
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _extensions(text: str) -> dict[str, str]:
    extensions: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise SaslFailed(f"Invalid SCRAM extension: {item!r}")
        extensions[key] = value
    return extensions


class ScramServer:
    """SCRAM-SHA-256, as Kafka's ``ScramSaslServer`` (see the module's docstring)."""

    mechanism = SCRAM_SHA_256

    def __init__(
        self, credentials: CredentialSource, *, nonce: Callable[[], str] | None = None
    ) -> None:
        self._credentials = credentials
        self._nonce = nonce or (lambda: secrets.token_urlsafe(24))
        self._state = "client-first"
        self._user: StoredUser | None = None
        self._client_first_bare = ""
        self._gs2_header = ""
        self._server_first = ""
        self._nonce_expected = ""

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    @property
    def user(self) -> StoredUser:
        if not self.complete or self._user is None:
            raise RuntimeError("the SCRAM exchange has not completed")
        return self._user

    async def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "client-first":
                return await self._client_first(token)
            if self._state == "client-final":
                return self._client_final(token)
            raise SaslFailed(f"Unexpected challenge in SASL server state {self._state}")
        except SaslFailed:
            self._state = "failed"
            raise

    async def _client_first(self, token: bytes) -> bytes:
        message = _text(token, "client first")
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise SaslFailed(f"Invalid SCRAM client first message format: {message!r}")
        username = _username(match["saslname"])
        extensions = _extensions(match["extensions"])
        if extensions.get("tokenauth", "").lower() == "true":
            # Delegation tokens (KIP-48) are not served: no token can match.
            raise SaslFailed(f"Token Authentication failed: Invalid tokenId : {username}")
        user = await self._credentials(username)
        if user is None:
            raise SaslFailed("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and _username(authzid) != username:
            raise SaslFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username",
                public=True,
            )
        credential = user.credential
        if credential.iterations < MIN_ITERATIONS:
            raise SaslFailed(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{MIN_ITERATIONS} for {self.mechanism}"
            )
        self._user = user
        self._gs2_header = match["gs2"]
        self._client_first_bare = match["bare"]
        self._nonce_expected = match["nonce"] + self._nonce()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce_expected},s={salt},i={credential.iterations}"
        self._state = "client-final"
        return self._server_first.encode("ascii")

    def _client_final(self, token: bytes) -> bytes:
        message = _text(token, "client final")
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise SaslFailed(f"Invalid SCRAM client final message format: {message!r}")
        if match["nonce"] != self._nonce_expected:
            raise SaslFailed("Invalid client nonce in the final client message.")
        if _b64(match["binding"], "channel binding") != self._gs2_header.encode("utf-8"):
            raise SaslFailed("Invalid channel binding in the final client message.")
        proof = _b64(match["proof"], "proof")
        assert self._user is not None
        credential = self._user.credential
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match["without_proof"])
        ).encode("utf-8")
        client_signature = _hmac(credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise SaslFailed("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(_HASH, client_key).digest(), credential.stored_key):
            raise SaslFailed("Invalid client credentials")
        server_signature = _hmac(credential.server_key, auth_message)
        self._state = "complete"
        return b"v=" + base64.b64encode(server_signature)


def _text(token: bytes, what: str) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslFailed(f"Invalid SCRAM {what} message: not UTF-8") from None


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslFailed(f"Invalid base64 {what} in the final client message") from None


# -- PLAIN ------------------------------------------------------------------------------------


class PlainServer:
    """PLAIN, as Kafka's ``PlainSaslServer``: one round, the credential checked against the
    stored SCRAM credential."""

    mechanism = PLAIN

    def __init__(self, credentials: CredentialSource) -> None:
        self._credentials = credentials
        self._user: StoredUser | None = None

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def user(self) -> StoredUser:
        if self._user is None:
            raise RuntimeError("the PLAIN exchange has not completed")
        return self._user

    async def evaluate(self, token: bytes) -> bytes:
        if self._user is not None:
            raise SaslFailed("Unexpected challenge in SASL server state COMPLETE")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailed("Invalid SASL/PLAIN response: not UTF-8", public=True) from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}", public=True
            )
        authzid, username, password = tokens
        if not username:
            raise SaslFailed("Authentication failed: username not specified", public=True)
        if not password:
            raise SaslFailed("Authentication failed: password not specified", public=True)
        user = await self._credentials(username)
        if user is None or not _password_matches(password, user.credential):
            raise SaslFailed("Authentication failed: Invalid username or password", public=True)
        if authzid and authzid != username:
            raise SaslFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username",
                public=True,
            )
        self._user = user
        return b""


def _password_matches(password: str, credential: ScramCredential) -> bool:
    salted = _salted_password(password, credential.salt, credential.iterations)
    return hmac.compare_digest(_stored_key(salted), credential.stored_key)
