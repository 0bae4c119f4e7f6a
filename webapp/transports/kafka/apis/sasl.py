"""SaslHandshake and SaslAuthenticate on a connection already authenticated, or on a
listener without SASL (the listener's ``authenticator`` serves them before authentication)."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from ..codec import Request
from .context import Context
from .responses import response_to


async def sasl_handshake(context: Context, request: Request) -> Any:
    """A handshake on a connection that is authenticated, or on a listener without SASL:
    Kafka's ``handleSaslHandshakeRequest`` answers ILLEGAL_SASL_STATE (the listener's
    ``authenticator`` serves the handshake before authentication)."""
    return response_to(request, error_code=ErrorCode.illegal_sasl_state, mechanisms=())


async def sasl_authenticate(context: Context, request: Request) -> Any:
    """As Kafka's ``handleSaslAuthenticateRequest``: ILLEGAL_SASL_STATE, with its message."""
    return response_to(
        request,
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(0),
    )
