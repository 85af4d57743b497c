"""DescribeClientQuotas (v0-1) and AlterClientQuotas (v0-1), as Kafka's KafkaApis and ClientQuotaControlManager
answer them.

With the authorizer on, describing needs DESCRIBE_CONFIGS on the cluster and altering ALTER_CONFIGS, else the
answer is CLUSTER_AUTHORIZATION_FAILED (for an alteration, on every entry). An alteration is written to the data
directory before the answer and enforced from the next request on, on every node.
"""

from __future__ import annotations

import logging
from typing import Any

from minibroker.acls.operations import ALTER_CONFIGS, CLUSTER, CLUSTER_NAME, DESCRIBE_CONFIGS
from minibroker.handlers.acls import not_authorized
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.quotas.store import QuotaError
from minibroker.server.context import RequestContext

log = logging.getLogger(__name__)


@api(48, 0, 1)
async def describe_client_quotas(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE_CONFIGS, CLUSTER, CLUSTER_NAME):
        # Kafka's getErrorResponse: the exception's message, Errors' own
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": "Cluster authorization failed.",
                "entries": None}
    try:
        found = ctx.broker.quotas.store.describe(body["components"], body["strict"])
    except QuotaError as exc:
        return {"error_code": exc.code, "error_message": str(exc), "entries": None}
    return {"error_code": ErrorCode.NONE, "error_message": None, "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "values": [{"key": key, "value": value} for key, value in values.items()]}
        for entity, values in found
    ]}


@api(49, 0, 1)
async def alter_client_quotas(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    entries = body["entries"]
    refused = None if ctx.broker.authorizer is None else not_authorized(ctx, ALTER_CONFIGS)
    if refused is not None:
        return {"entries": [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": refused,
                             "entity": entry["entity"]} for entry in entries]}
    quotas = ctx.broker.quotas
    try:
        results = quotas.store.alter(entries, body["validate_only"])
    except OSError as exc:
        log.error("client quotas not stored: %s", exc)
        return {"entries": [{"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": None,
                             "entity": entry["entity"]} for entry in entries]}
    quotas.changed()
    altered = [entry for entry, (_, code, _) in zip(entries, results) if code == ErrorCode.NONE]
    if altered and not body["validate_only"]:
        log.info("client quotas altered by %s: %s", ctx.principal, "; ".join(
            ",".join(f"{e['entity_type']}={e['entity_name'] or '<default>'}" for e in entry["entity"]) + " "
            + ",".join(f"{op['key']}={'(removed)' if op['remove'] else op['value']}" for op in entry["ops"])
            for entry in altered
        ))
    return {"entries": [{"error_code": code, "error_message": message, "entity": entity}
                        for entity, code, message in results]}
