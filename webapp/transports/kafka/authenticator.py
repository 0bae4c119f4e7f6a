"""SASL authentication of a Kafka connection before it is served, as Kafka's
``SaslServerAuthenticator`` does it (KIP-43, KIP-152).

Theory of operation
===================

A connection to a listener with ``KAFKA_SASL=required`` starts unauthenticated. Until the
exchange completes, its frames go to one ``SaslServerAuthenticator`` instead of the APIs, and
only three requests are accepted, in this order:

1. ApiVersions (optional, once): answered as usual, so the client learns the SASL versions.
   A version not served gets the v0 UNSUPPORTED_VERSION answer, and may be asked again.
2. SaslHandshake (API 17): the mechanism. An enabled one is answered with the enabled list;
   any other gets UNSUPPORTED_SASL_MECHANISM (33) with the list, and the connection closes.
3. The mechanism's tokens (``mechanisms``: SCRAM-SHA-256 in two rounds, PLAIN in one). After a
   SaslHandshake v1 each token comes in a SaslAuthenticate request (API 36) and its answer
   carries the server's token; a refusal is SASL_AUTHENTICATION_FAILED (58) with a message,
   then the connection closes. After a SaslHandshake v0 (clients before KIP-152) the tokens
   are raw frames, a size and the token's bytes, and so are the answers; a refusal just
   closes the connection (there is no header to carry an error).

Anything else closes the connection, as in Kafka: any other request before the handshake
(Kafka's ``InvalidRequestException``, no answer), any request but SaslAuthenticate after a
v1 handshake (its API's error answer with ILLEGAL_SASL_STATE, 34, when it has a top-level
error code, then the close), a frame over ``MAX_RECEIVE_BYTES`` (Kafka's
``sasl.server.max.receive.size``, 512 KiB) or one that does not decode. Once the exchange is
complete, the connection is served as any other, with the principal ``User:<name>``; a later
SaslHandshake or SaslAuthenticate is answered ILLEGAL_SASL_STATE by ``apis``, as Kafka's
``KafkaApis`` answers it (no re-authentication, KIP-368: the session lifetime is 0).

Kafka's classes followed: ``SaslServerAuthenticator`` (states, answers, the messages),
``ScramSaslServer`` and ``PlainSaslServer`` (``mechanisms``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from kio.schema.errors import ErrorCode

from . import apis, codec
from .mechanisms import (
    PLAIN,
    SCRAM_SHA_256,
    CredentialSource,
    PlainServer,
    Principal,
    SaslFailed,
    SaslServer,
    ScramServer,
)

__all__ = [
    "FAILED_AUTHENTICATION_DELAY_S",
    "MAX_RECEIVE_BYTES",
    "MECHANISMS",
    "SaslConfig",
    "SaslServerAuthenticator",
    "Step",
]

logger = logging.getLogger(__name__)

#: Kafka's ``sasl.server.max.receive.size`` default: no frame of an unauthenticated client
#: may be larger.
MAX_RECEIVE_BYTES = 524288

#: The mechanisms this listener can serve, by name.
MECHANISMS: dict[str, Callable[[CredentialSource], SaslServer]] = {
    SCRAM_SHA_256: ScramServer,
    PLAIN: PlainServer,
}

#: Kafka's ``connection.failed.authentication.delay.ms`` (KIP-306): a connection whose
#: authentication failed is closed this long after its answer was sent (sooner if the client
#: closes it), which slows down the guessing of passwords, and lets the client read the
#: answer before it sees the connection end.
FAILED_AUTHENTICATION_DELAY_S = 0.1

_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class SaslConfig:
    """A listener's SASL: the mechanisms enabled (in the order the handshake lists them) and
    where users' credentials come from."""

    mechanisms: tuple[str, ...]
    credentials: CredentialSource

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(
                f"SASL mechanisms must be some of {', '.join(MECHANISMS)}, got "
                f"{', '.join(self.mechanisms) or 'none'}"
            )


@dataclass(frozen=True, slots=True)
class Step:
    """What one frame brought: the bytes to send (b"" for none), and why the connection closes
    after them (None: it stays open). ``failed_authentication``: the close is an
    authentication failure, which Kafka delays (``FAILED_AUTHENTICATION_DELAY_S``)."""

    reply: bytes = b""
    close: str | None = None
    failed_authentication: bool = False


class _State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake or versions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


#: Before the handshake: the requests Kafka accepts, and their versions.
_BEFORE_HANDSHAKE = {
    apis.API_VERSIONS: apis.SUPPORTED[apis.API_VERSIONS],
    apis.SASL_HANDSHAKE: apis.SUPPORTED[apis.SASL_HANDSHAKE],
}


class SaslServerAuthenticator:
    """One connection's authentication (see the module's docstring). ``api_versions`` answers
    an ApiVersions request (the encoded frame), as the listener does after authentication."""

    def __init__(self, config: SaslConfig, api_versions: Callable[[codec.Request], bytes]) -> None:
        self._config = config
        self._api_versions = api_versions
        self._state = _State.HANDSHAKE_OR_VERSIONS
        self._server: SaslServer | None = None
        self._raw_tokens = False
        self._principal: Principal | None = None

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def principal(self) -> Principal:
        if self._principal is None:
            raise RuntimeError("the connection is not authenticated")
        return self._principal

    async def receive(self, frame: bytes) -> Step:
        """Handle one frame (without its size prefix) of an unauthenticated connection."""
        if self._state in (_State.COMPLETE, _State.FAILED):
            raise RuntimeError(f"no SASL frame is expected in state {self._state.value}")
        try:
            if self._state is _State.AUTHENTICATE:
                if self._raw_tokens:
                    return await self._raw_token(frame)
                return await self._authenticate_request(frame)
            return self._handshake_or_versions(frame)
        except codec.BadFrame as bad:
            self._state = _State.FAILED
            return Step(close=str(bad))

    def _handshake_or_versions(self, frame: bytes) -> Step:
        api_key, _, correlation_id = codec.peek_header(frame)
        if api_key not in _BEFORE_HANDSHAKE:
            self._state = _State.FAILED
            return Step(close=f"unexpected Kafka request of API {api_key} during SASL handshake")
        if api_key == apis.API_VERSIONS and self._state is not _State.HANDSHAKE_OR_VERSIONS:
            self._state = _State.FAILED
            return Step(close="a second ApiVersions request during SASL handshake")
        try:
            request = codec.decode_request(frame, _BEFORE_HANDSHAKE)
        except codec.UnsupportedRequest as bad:
            if api_key == apis.API_VERSIONS:  # KIP-511: the client may ask again
                return Step(reply=apis.unsupported_api_versions(correlation_id))
            raise bad
        if request.api_key == apis.API_VERSIONS:
            self._state = _State.HANDSHAKE
            return Step(reply=self._api_versions(request))
        mechanism = request.body.mechanism
        enabled = self._config.mechanisms
        if mechanism not in enabled:
            self._state = _State.FAILED
            refusal = apis.response_to(
                request, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled
            )
            return Step(
                reply=codec.encode_response(request, refusal),
                close=f"unsupported SASL mechanism {mechanism!r}",
                failed_authentication=True,
            )
        logger.debug("SaslHandshake v%d: %s", request.api_version, mechanism)
        self._server = MECHANISMS[mechanism](self._config.credentials)
        self._raw_tokens = request.api_version == 0
        self._state = _State.AUTHENTICATE
        accepted = apis.response_to(request, error_code=ErrorCode.none, mechanisms=enabled)
        return Step(reply=codec.encode_response(request, accepted))

    async def _raw_token(self, token: bytes) -> Step:
        """A SASL token framed without a Kafka header (after SaslHandshake v0)."""
        assert self._server is not None
        try:
            answer = await self._server.evaluate(token)
        except SaslFailed as failed:
            self._state = _State.FAILED
            return Step(close=f"authentication failed: {failed}", failed_authentication=True)
        self._finish_if_complete()
        return Step(reply=_SIZE.pack(len(answer)) + answer)

    async def _authenticate_request(self, frame: bytes) -> Step:
        assert self._server is not None
        api_key, _, _ = codec.peek_header(frame)
        request = codec.decode_request(frame, apis.SUPPORTED)
        if api_key != apis.SASL_AUTHENTICATE:
            self._state = _State.FAILED
            refusal = _error_answer(request, ErrorCode.illegal_sasl_state)
            return Step(
                reply=b"" if refusal is None else codec.encode_response(request, refusal),
                close=f"unexpected Kafka request of API {api_key} during SASL authentication",
                failed_authentication=True,
            )
        logger.debug("SaslAuthenticate v%d", request.api_version)
        try:
            token = await self._server.evaluate(bytes(request.body.auth_bytes))
        except SaslFailed as failed:
            self._state = _State.FAILED
            message = (
                str(failed)
                if failed.public
                # Kafka's words: the reason (which may say that a user does not exist) stays
                # in the server's log.
                else "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self._server.mechanism}"
            )
            refusal = apis.response_to(
                request,
                error_code=ErrorCode.sasl_authentication_failed,
                error_message=message,
                auth_bytes=b"",
                session_lifetime=datetime.timedelta(0),
            )
            return Step(
                reply=codec.encode_response(request, refusal),
                close=f"authentication failed: {failed}",
                failed_authentication=True,
            )
        self._finish_if_complete()
        accepted = apis.response_to(
            request,
            error_code=ErrorCode.none,
            error_message=None,
            auth_bytes=token,
            session_lifetime=datetime.timedelta(0),  # no re-authentication (KIP-368)
        )
        return Step(reply=codec.encode_response(request, accepted))

    def _finish_if_complete(self) -> None:
        assert self._server is not None
        if self._server.complete:
            user = self._server.user
            self._principal = Principal(name=user.name, is_staff=user.is_staff)
            self._state = _State.COMPLETE
            logger.debug("authenticated %s with %s", self._principal, self._server.mechanism)


def _error_answer(request: codec.Request, code: ErrorCode) -> Any | None:
    """``request``'s API's answer with ``code`` as its top-level error, every other field
    empty; None when that API's answer has no top-level error code (Kafka's
    ``getErrorResponse`` then fills each item's, which is not worth it for a connection that
    is being closed)."""
    schema = codec.response_schema(request.api_key, request.api_version)
    fields = {field.name: field for field in dataclasses.fields(cast(Any, schema))}
    if "error_code" not in fields:
        return None
    values: dict[str, Any] = {}
    for name, field in fields.items():
        if field.default is not dataclasses.MISSING or name == "error_code":
            continue
        kind = str(field.type)
        if "tuple" in kind:
            values[name] = ()
        elif "None" in kind:
            values[name] = None
        elif "timedelta" in kind.lower():
            values[name] = datetime.timedelta(0)
        elif "str" in kind:
            values[name] = ""
        elif "bytes" in kind:
            values[name] = b""
        elif "bool" in kind:
            values[name] = False
        else:
            values[name] = 0
    try:
        return schema(error_code=code, **values)
    except TypeError:
        return None
