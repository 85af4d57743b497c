"""What a request costs against its client's quotas, and the throttle time it earns (KafkaApis' use of its quota
managers): Produce is charged its request size against ``producer_byte_rate``, Fetch its answer's size against
``consumer_byte_rate`` (a throttled Fetch answers empty and is not charged its data), every request but the
handshake ones its handler's thread time against ``request_percentage`` (not a Produce with acks=0: it has no
answer). The larger throttle time goes into the answer's ``throttle_time_ms``, and the connection reads no further
request for that long (server.KafkaConnection). A new connection is charged against its address's
``connection_creation_rate``: over it, the connection is closed after its throttle time, unserved."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from minibroker.quotas.enforce import EXEMPT_APIS, names

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.server.context import RequestContext

PRODUCE_KEY, FETCH_KEY = 0, 1
# KIP-219 (each response's shouldClientThrottle): from these versions the client waits out a throttle itself and the
# broker answers at once; below them, and for every API not named here, the broker holds the answer back instead.
CLIENT_THROTTLES_FROM = {
    PRODUCE_KEY: 6, FETCH_KEY: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2, 18: 2, 19: 3,
    20: 2, 21: 1, 22: 1, 24: 1, 25: 1, 26: 1, 28: 1, 29: 1, 30: 1, 31: 1, 32: 2, 33: 1, 34: 1, 35: 1, 37: 1, 42: 1,
    43: 0, 44: 0, 45: 0, 46: 0, 47: 0, 50: 0, 51: 0, 75: 0,
}


def charge(ctx: RequestContext, request_size: int, cpu_seconds: float, answered: bool) -> int:
    """Record the request (its size when a Produce, its time); the throttle time it earned in ms."""
    node = ctx.broker.quotas.node(ctx.node_id)
    client = names(ctx.principal, ctx.client_id)
    now = ctx.broker.clock()
    bandwidth = node.produce.record(client, request_size, now) if ctx.api_key == PRODUCE_KEY else 0
    request = 0
    if answered and ctx.api_key not in EXEMPT_APIS:
        request = node.request.record(client, cpu_seconds * 100, now)
    return max(bandwidth, request)


def charge_fetch(ctx: RequestContext, response_size: int, request_throttle_ms: int) -> int:
    """Record a Fetch answer's size; the throttle time it and the request time earned. When throttled, the data is
    not sent (``throttled_fetch``), so not charged either."""
    node = ctx.broker.quotas.node(ctx.node_id)
    client = names(ctx.principal, ctx.client_id)
    now = ctx.broker.clock()
    throttle = max(node.fetch.record(client, response_size, now), request_throttle_ms)
    if throttle:
        node.fetch.unrecord(client, response_size, now)
    return throttle


def within_fetch_quota(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """A Fetch asks for no more than its client's quota lets through in one window (Kafka's
    getMaxValueInQuotaWindow: quota x (samples - 1) x sample seconds), or every answer would be throttled."""
    quotas = ctx.broker.quotas
    resolved = quotas.node(ctx.node_id).fetch.resolve(*names(ctx.principal, ctx.client_id))
    if resolved is None:
        return body
    limit = int(resolved[1] * (quotas.count - 1) * quotas.window_ms / 1000)
    if body["max_bytes"] <= limit:
        return body
    return {**body, "max_bytes": limit, "min_bytes": min(body["min_bytes"], limit)}


def throttled_fetch(answer: dict[str, Any], throttle_ms: int) -> dict[str, Any]:
    """Kafka's FetchContext.getThrottledResponse: the session's answer without data."""
    return {**answer, "throttle_time_ms": throttle_ms, "responses": []}


def connection_throttle(broker: Broker, node_id: int, address: str) -> int:
    """Record a new connection from ``address`` (Kafka's ConnectionQuotas); the throttle time it earned, after which
    it is closed unserved. A refused connection does not count."""
    manager = broker.quotas.node(node_id).connections
    now = broker.clock()
    throttle = manager.record((address,), 1, now)
    if throttle:
        manager.unrecord((address,), 1, now)
    return throttle


def client_throttles(api_key: int, api_version: int) -> bool:
    first = CLIENT_THROTTLES_FROM.get(api_key)
    return first is not None and api_version >= first
