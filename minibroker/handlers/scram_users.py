"""DescribeUserScramCredentials (v0) and AlterUserScramCredentials (v0): SCRAM users managed over the wire, as
Kafka's KafkaApis (describe) and ControllerApis with ScramControlManager (alter) answer them.

With the authorizer on, describing needs DESCRIBE on the cluster and altering ALTER, else every result is
CLUSTER_AUTHORIZATION_FAILED. An alteration is written to the data directory, then put in force for every SASL
listener of every node before the answer, so the next login meets it. Neither the request's salted passwords nor
the stored keys are ever logged: the log names users and mechanisms only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minibroker.acls.operations import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from minibroker.handlers.acls import not_authorized
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.sasl import credential_file
from minibroker.sasl.user_admin import alteration, description, result
from minibroker.server.context import RequestContext

log = logging.getLogger(__name__)


@api(50, 0, 0)
async def describe_user_scram_credentials(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    users = body["users"]
    if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
        # Kafka's getErrorResponse: the error per named user, without the name, and no message (the error's own)
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"error_code": denied, "error_message": None,
                "results": [{"user": "", "error_code": denied, "error_message": None, "credential_infos": []}
                            for _ in users or []]}
    names = None if users is None else [user["name"] for user in users]
    return {"error_code": ErrorCode.NONE, "error_message": None, "results": description(ctx.broker.scram_credentials, names)}


@api(51, 0, 0)
async def alter_user_scram_credentials(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    deletions, upsertions = body["deletions"], body["upsertions"]
    refused = None if ctx.broker.authorizer is None else not_authorized(ctx, ALTER)
    if refused is not None:
        named = sorted({item["name"] for item in (*deletions, *upsertions)})
        return {"results": [result(name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, refused) for name in named]}
    broker = ctx.broker
    async with broker.scram_changes:
        store = broker.scram_credentials
        decided = alteration(store, deletions, upsertions)
        if decided.changes:
            overrides = {**store.overrides, **decided.changes}
            try:
                await asyncio.to_thread(credential_file.save, broker.config.data_dir, overrides)
            except OSError as exc:
                log.error("SCRAM credentials not stored: %s", exc)
                failed = {name for name, _ in decided.changes}
                return {"results": [
                    result(r["user"], ErrorCode.UNKNOWN_SERVER_ERROR, None) if r["user"] in failed else r
                    for r in decided.results
                ]}
            store.overrides = overrides
            log.info("SCRAM credentials changed by %s: %s", ctx.principal, ", ".join(
                f"{'deleted' if credential is None else 'set'} {user!r} {mechanism}"
                for (user, mechanism), credential in decided.changes.items()
            ))
    return {"results": decided.results}
