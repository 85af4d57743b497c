"""SaslHandshake (v0-1) and SaslAuthenticate (v0-2): authentication on SASL_PLAINTEXT and SASL_SSL listeners.

The connection's SaslSession holds the state; the dispatcher already refused requests the phase does not
allow. Outside the authentication phase (any other listener, or once authenticated) both APIs answer
ILLEGAL_SASL_STATE, as Kafka's request handler does. A refused mechanism or failed authentication is
answered, logged without credentials, and the connection closed. SessionLifetimeMs is connections.max.reauth.ms
(KIP-368; 0: none); the dispatcher turns a SaslHandshake on such a session into a re-authentication.
"""

from __future__ import annotations

import logging
from typing import Any

from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.sasl.mechanism import AuthenticationFailed
from minibroker.server.context import RequestContext

log = logging.getLogger(__name__)


@api(17, 0, 1)
async def sasl_handshake(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    connection = ctx.connection
    session = connection.sasl if connection is not None else None
    if session is None or session.authenticated:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    mechanisms = list(session.authority.mechanisms)
    if not session.handshake(body["mechanism"], raw_tokens=ctx.api_version == 0):
        ctx.broker.repeated_logs.warning(
            log, "closing %s: SASL mechanism %r is not enabled on listener %s (enabled: %s)",
            ctx.peer, body["mechanism"], connection.listener.name, ", ".join(mechanisms),
        )
        connection.close_after_answer = True
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": mechanisms}
    return {"error_code": ErrorCode.NONE, "mechanisms": mechanisms}


def authenticate_answer(
    error: ErrorCode, message: str | None, auth_bytes: bytes = b"", lifetime_ms: int = 0,
) -> dict[str, Any]:
    return {"error_code": error, "error_message": message, "auth_bytes": auth_bytes, "session_lifetime_ms": lifetime_ms}


@api(36, 0, 2)
async def sasl_authenticate(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    connection = ctx.connection
    session = connection.sasl if connection is not None else None
    if session is None or session.authenticated:
        return authenticate_answer(
            ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication"
        )
    again = session.reauthenticating
    try:
        answer = session.authenticate(bytes(body["auth_bytes"]))
    except AuthenticationFailed as exc:
        ctx.broker.repeated_logs.warning(
            log, "closing %s: SASL %s %s on listener %s failed: %s", ctx.peer, session.mechanism,
            "re-authentication" if again else "authentication", connection.listener.name, exc.reason,
        )
        connection.close_after_answer = True
        return authenticate_answer(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
    if session.authenticated:
        (log.debug if again else log.info)(
            "%s %s as %r with SASL %s on listener %s", ctx.peer, "re-authenticated" if again else "authenticated",
            session.username, session.mechanism, connection.listener.name,
        )
    return authenticate_answer(ErrorCode.NONE, None, answer, session.lifetime_ms if session.authenticated else 0)
