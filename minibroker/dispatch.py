"""From one request frame to its response: header checks, handler lookup, body codec.

An unknown API key, an unsupported version (other than ApiVersions, which gets Kafka's v0
fallback answer) or a body that does not parse is answered by closing the connection with one
log line, as Kafka does; a handler failure is logged with its traceback and closes it too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minibroker.context import RequestContext
from minibroker.handlers import HANDLERS
from protocol.errors import ErrorCode
from protocol.frames import API_VERSIONS_KEY, decode_request_body, encode_response, parse_request_header
from protocol.primitives import ProtocolError

if TYPE_CHECKING:
    from minibroker.broker import Broker

log = logging.getLogger(__name__)

Parts = list[bytes | bytearray | memoryview]


class Disconnect(Exception):
    """The request cannot be answered; the connection must be closed (the reason is already logged)."""


def unsupported_api_versions_answer(correlation_id: int) -> Parts:
    """KIP-511: an ApiVersions request above our range gets a v0 body naming our ApiVersions range."""
    handler = HANDLERS[API_VERSIONS_KEY]
    body = {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": handler.min_version, "max_version": handler.max_version}],
    }
    return encode_response(API_VERSIONS_KEY, 0, correlation_id, body)


async def dispatch(broker: Broker, frame: memoryview, peer: str) -> Parts | None:
    """Answer one request frame; ``None`` means no response is due (Produce with acks=0)."""
    try:
        header = parse_request_header(frame)
    except ProtocolError as exc:
        log.warning("closing %s: unreadable request header (%s)", peer, exc)
        raise Disconnect from None
    handler = HANDLERS.get(header.api_key)
    if handler is None:
        log.warning("closing %s: unknown API key %d (client %r)", peer, header.api_key, header.client_id)
        raise Disconnect
    if not handler.min_version <= header.api_version <= handler.max_version:
        if header.api_key == API_VERSIONS_KEY:
            log.info("%s sent ApiVersions v%d: answering with the v0 fallback", peer, header.api_version)
            return unsupported_api_versions_answer(header.correlation_id)
        log.warning(
            "closing %s: API key %d version %d is outside the supported %d-%d (client %r)",
            peer, header.api_key, header.api_version, handler.min_version, handler.max_version, header.client_id,
        )
        raise Disconnect
    try:
        body = decode_request_body(header, frame)
    except ProtocolError as exc:
        log.warning("closing %s: malformed API key %d v%d request (%s)", peer, header.api_key, header.api_version, exc)
        raise Disconnect from None
    ctx = RequestContext(broker, header.api_key, header.api_version, header.correlation_id, header.client_id, peer)
    try:
        response = await handler.fn(ctx, body)
    except Exception:
        log.exception("closing %s: handler for API key %d v%d failed", peer, header.api_key, header.api_version)
        raise Disconnect from None
    if response is None:
        return None
    return encode_response(header.api_key, header.api_version, header.correlation_id, response)
