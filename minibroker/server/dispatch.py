"""From one request frame to its response: header checks, handler lookup, body codec.

An unknown API key, an unsupported version (other than ApiVersions, which gets Kafka's v0
fallback answer) or a body that does not parse is answered by closing the connection with one
log line, as Kafka does (a client's repeats of that line are counted, not logged each time:
``minibroker.server.repeated_logs``); known and supported mean in the broker's API table (``Broker.apis``, capped by
kafka.version); a handler failure is logged with its traceback and closes it too. On a SASL
listener, requests the authentication phase does not allow close the connection the same way, and in
the KIP-43 v0 flow a frame is a bare SASL token, answered with a bare token.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING, Any

from minibroker.handlers.registry import Handler, UnreadableRequest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import (
    API_VERSIONS_KEY,
    EncodedAnswer,
    decode_request_body,
    encode_response,
    parse_request_header,
)
from minibroker.protocol.messages import THROTTLED_APIS
from minibroker.protocol.primitives import FileRegion, ProtocolError
from minibroker.server.context import InjectedFault, RequestContext

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.sasl.session import SaslSession
    from minibroker.server.connection import KafkaConnection

log = logging.getLogger(__name__)

LEADER_APIS = frozenset({0, 1, 2, 21, 23})  # Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch: they
# ask each partition's leader (RequestContext.led_partition), so an injected error is per partition it names

Parts = list[bytes | bytearray | memoryview]


class Disconnect(Exception):
    """The request cannot be answered; the connection must be closed (the reason is already logged)."""


def unsupported_api_versions_answer(handler: Handler, correlation_id: int) -> Parts:
    """KIP-511: an ApiVersions request above our range gets a v0 body naming our ApiVersions range."""
    body = {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": handler.min_version, "max_version": handler.max_version}],
    }
    return encode_response(API_VERSIONS_KEY, 0, correlation_id, body)


def raw_sasl_answer(broker: Broker, session: SaslSession, frame: memoryview, peer: str) -> Parts:
    """KIP-43 v0 flow: the frame is a bare token; a failure closes the connection without an answer, as in Kafka."""
    from minibroker.sasl.mechanism import AuthenticationFailed  # SASL listeners only

    try:
        answer = session.authenticate(bytes(frame))
    except AuthenticationFailed as exc:
        broker.repeated_logs.warning(
            log, "closing %s: SASL %s authentication failed: %s", peer, session.mechanism, exc.reason
        )
        raise Disconnect from None
    if session.authenticated:
        log.info("%s authenticated as %r with SASL %s (v0 flow)", peer, session.username, session.mechanism)
    return [struct.pack(">i", len(answer)), answer]


async def dispatch(broker: Broker, frame: memoryview, peer: str, connection: KafkaConnection | None = None) -> Parts | None:
    """Answer one request frame; ``None`` means no response is due (Produce with acks=0)."""
    session = connection.sasl if connection is not None else None
    if session is not None and session.raw_tokens:
        return raw_sasl_answer(broker, session, frame, peer)
    try:
        header = parse_request_header(frame)
    except ProtocolError as exc:
        broker.repeated_logs.warning(log, "closing %s: unreadable request header (%s)", peer, exc)
        raise Disconnect from None
    if session is not None and session.expires_ms is not None and session.must_close(header.api_key):
        broker.repeated_logs.warning(
            log, "closing %s: its SASL session ended (connections.max.reauth.ms) without re-authentication (client %r)",
            peer, header.client_id,
        )
        raise Disconnect
    refusal = session.refusal(header.api_key) if session is not None else None
    if refusal is not None:
        broker.repeated_logs.warning(
            log, "closing %s: %s on listener %s (client %r)", peer, refusal, connection.listener.name, header.client_id
        )
        raise Disconnect
    handler = broker.apis.get(header.api_key)
    if handler is None:
        broker.repeated_logs.warning(
            log, "closing %s: unknown API key %d (client %r)", peer, header.api_key, header.client_id
        )
        raise Disconnect
    broker.request_counts[header.api_key] += 1
    if not handler.min_version <= header.api_version <= handler.max_version:
        if header.api_key == API_VERSIONS_KEY:
            log.info("%s sent ApiVersions v%d: answering with the v0 fallback", peer, header.api_version)
            return unsupported_api_versions_answer(handler, header.correlation_id)
        broker.repeated_logs.warning(
            log, "closing %s: API key %d version %d is outside the supported %d-%d (client %r)",
            peer, header.api_key, header.api_version, handler.min_version, handler.max_version, header.client_id,
        )
        raise Disconnect
    try:
        body = decode_request_body(header, frame)
    except ProtocolError as exc:
        broker.repeated_logs.warning(
            log, "closing %s: malformed API key %d v%d request (%s)", peer, header.api_key, header.api_version, exc
        )
        raise Disconnect from None
    ctx = RequestContext(broker, header.api_key, header.api_version, header.correlation_id, header.client_id, peer, connection)
    started = time.perf_counter() if broker.transcript is not None else 0.0
    quotas_on = broker.quota_state is not None and broker.quota_state.active and connection is not None
    cpu_started = time.thread_time() if quotas_on else 0.0
    fault = None
    response = None
    outcome = "disconnected"
    try:
        if broker.faults is not None and broker.faults.faults:
            fault = broker.faults.match(
                header.api_key, header.api_version, ctx.node_id, header.client_id, body, broker.topic_name)
            response = await apply_fault(fault, ctx, body, peer) if fault is not None else None
        if response is None:
            try:
                response = await handler.fn(ctx, body)
            except UnreadableRequest as exc:
                broker.repeated_logs.warning(
                    log, "closing %s: API key %d v%d request refused: %s", peer, header.api_key, header.api_version, exc
                )
                raise Disconnect from None
            except Exception:
                log.exception("closing %s: handler for API key %d v%d failed", peer, header.api_key, header.api_version)
                raise Disconnect from None
        throttle_ms = 0
        if quotas_on:
            from minibroker.quotas.charge import charge  # only with quotas configured

            throttle_ms = charge(ctx, len(frame), time.thread_time() - cpu_started, response is not None)
        if response is None:
            if throttle_ms:
                connection.mute(throttle_ms, answered_first=True)
            outcome = "no answer"
            return None
        if fault is not None and fault.action == "throttle":
            response = {**answer_body(response), "throttle_time_ms": fault.throttle_ms}
        elif throttle_ms and header.api_key in THROTTLED_APIS:
            response = {**answer_body(response), "throttle_time_ms": throttle_ms}
        elif header.api_key in THROTTLED_APIS and type(response) is dict:
            # Every answer that carries ThrottleTimeMs gets it (0 when no quota throttles it), as Kafka's request
            # channel sets it for its quotas.
            response.setdefault("throttle_time_ms", 0)
        outcome = "answered"
        parts = encode_response(header.api_key, header.api_version, header.correlation_id, response)
        if quotas_on:
            parts = quota_answer(ctx, header.correlation_id, response, parts, throttle_ms)
        return parts
    finally:
        if broker.transcript is not None:
            broker.transcript.note(
                header.api_key, header.api_version, header.correlation_id, header.client_id, peer, ctx.node_id,
                body, None if response is None else answer_body(response), broker.clock(),
                (time.perf_counter() - started) * 1000,
                None if fault is None else fault.id, outcome, broker.topic_name,
            )


def quota_answer(ctx: RequestContext, correlation_id: int, response: dict[str, Any] | EncodedAnswer, parts: Parts,
                 throttle_ms: int) -> Parts:
    """With quotas configured: a Fetch is charged its answer's size (a throttled one answers without data), and a
    throttled answer mutes the connection (sent first where the client waits out the throttle itself, KIP-219)."""
    from minibroker.quotas.charge import FETCH_KEY, charge_fetch, client_throttles, throttled_fetch

    if ctx.api_key == FETCH_KEY:
        size = sum(len(part) for part in parts) - 4
        fetch_throttle_ms = charge_fetch(ctx, size, throttle_ms)
        if fetch_throttle_ms:
            for part in parts:
                if type(part) is FileRegion:
                    part.close()
            throttle_ms = fetch_throttle_ms
            parts = encode_response(ctx.api_key, ctx.api_version, correlation_id,
                                    throttled_fetch(answer_body(response), throttle_ms))
    if throttle_ms:
        ctx.connection.mute(throttle_ms, answered_first=client_throttles(ctx.api_key, ctx.api_version))
    return parts


def answer_body(response: dict[str, Any] | EncodedAnswer) -> dict[str, Any]:
    return response.body if isinstance(response, EncodedAnswer) else response


async def apply_fault(
    fault: InjectedFault, ctx: RequestContext, body: dict[str, Any], peer: str,
) -> dict[str, Any] | None:
    """What an injected fault does before the handler runs: an answer of its own, or None to go on (after a delay,
    once a stall is cleared, or with the fault on the context for the partitions it names)."""
    if fault.action == "disconnect":
        log.info("closing %s: injected by fault %d", peer, fault.id)
        raise Disconnect
    if fault.action == "stall":
        await fault.cleared.wait()
    elif fault.action == "delay":
        await asyncio.sleep(fault.delay_s())
    elif fault.action == "error":
        from minibroker.protocol.error_responses import error_response  # only when errors are injected

        if ctx.api_key in LEADER_APIS:
            ctx.fault = fault
        else:
            return error_response(ctx.api_key, ctx.api_version, body, fault.error, f"injected by minibroker fault {fault.id}")
    return None
