"""The ACL APIs: DescribeAcls, CreateAcls and DeleteAcls, as Kafka's AclApis and AclControlManager answer them.

Without an authorizer (``authorizer.class.name`` empty, the default) they answer SECURITY_DISABLED. With one, the
caller needs DESCRIBE (DescribeAcls) or ALTER (the others) on the cluster; each creation is checked on its own
(INVALID_REQUEST with Kafka's message), a binding that exists already is not added twice, and every filter of a
DeleteAcls is matched against the bindings as they were before the request. Changes are written to the data
directory before the answer. Codes Kafka's enums do not know make Kafka's request classes refuse the request, and
Kafka then closes the connection: so does this.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from minibroker.acls import store
from minibroker.acls.model import Acl, AclFilter, creation_problem, unknown_code
from minibroker.acls.operations import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from minibroker.handlers.registry import UnreadableRequest, api
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

log = logging.getLogger(__name__)

NO_AUTHORIZER = "No Authorizer is configured."


def not_authorized(ctx: RequestContext, operation: int) -> str | None:
    """Kafka's authorizeClusterOperation: the message of the CLUSTER_AUTHORIZATION_FAILED answer, or None."""
    if ctx.allowed(operation, CLUSTER, CLUSTER_NAME):
        return None
    return f"Request from {ctx.principal} ({ctx.host}) is not authorized."


def request_filter(item: dict[str, Any], prefix: str = "") -> AclFilter:
    """A DescribeAcls request or a DeleteAcls filter as an AclFilter; UnreadableRequest for UNKNOWN codes."""
    codes = (item["resource_type_filter"], item["pattern_type_filter"], item["operation"], item["permission_type"])
    if unknown_code(*codes):
        raise UnreadableRequest(f"{prefix}filter contains UNKNOWN elements: {item}")
    return AclFilter(
        item["resource_type_filter"], item["resource_name_filter"], item["pattern_type_filter"],
        item["principal_filter"], item["host_filter"], item["operation"], item["permission_type"],
    )


def acl_fields(acl: Acl) -> dict[str, Any]:
    return {
        "resource_type": acl.resource_type, "resource_name": acl.name, "pattern_type": acl.pattern_type,
        "principal": acl.principal, "host": acl.host, "operation": acl.operation, "permission_type": acl.permission,
    }


async def store_acls(ctx: RequestContext, change: Callable[[tuple[Acl, ...]], list[Acl]]) -> tuple[tuple[Acl, ...], tuple[Acl, ...]]:
    """Apply ``change`` (current bindings -> new bindings) durably, one change at a time: (before, after)."""
    broker = ctx.broker
    async with broker.acl_changes:
        before = broker.authorizer.acls
        after = tuple(change(before))
        if after != before:
            await asyncio.to_thread(store.save, broker.config.data_dir, list(after))
            broker.authorizer.replace(after)
    return before, after


@api(29, 1, 3, oldest=0)
async def describe_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if ctx.broker.authorizer is None:
        return {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": "No Authorizer is configured on the broker",
                "resources": []}
    refused = not_authorized(ctx, DESCRIBE)
    if refused is not None:
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": refused, "resources": []}
    wanted = request_filter(body, "DescribeAclsRequest ")
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in ctx.broker.authorizer.acls:
        if wanted.matches(acl):
            resources.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(
                {"principal": acl.principal, "host": acl.host, "operation": acl.operation, "permission_type": acl.permission}
            )
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resources": [
            {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": entries}
            for (kind, name, pattern), entries in resources.items()
        ],
    }


@api(30, 1, 3, oldest=0)
async def create_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    creations = body["creations"]
    if ctx.broker.authorizer is None:
        return {"results": [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER}] * len(creations)}
    refused = not_authorized(ctx, ALTER)
    if refused is not None:
        return {"results": [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": refused}] * len(creations)}
    acls = []
    for item in creations:
        if unknown_code(item["resource_type"], item["resource_pattern_type"], item["operation"], item["permission_type"]):
            raise UnreadableRequest(f"CreatableAcls contain unknown elements: {item}")
        acls.append(Acl(
            item["resource_type"], item["resource_name"], item["resource_pattern_type"], item["principal"], item["host"],
            item["operation"], item["permission_type"],
        ))
    problems = [creation_problem(acl) for acl in acls]
    valid = [acl for acl, problem in zip(acls, problems) if problem is None]

    def add(current: tuple[Acl, ...]) -> list[Acl]:
        return list(dict.fromkeys((*current, *valid)))

    try:
        before, _ = await store_acls(ctx, add)
    except OSError as exc:
        log.error("ACLs not stored: %s", exc)
        failed = {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": f"ACLs not stored: {exc}"}
        return {"results": [failed if p is None else {"error_code": ErrorCode.INVALID_REQUEST, "error_message": p}
                            for p in problems]}
    known = set(before)
    for acl in dict.fromkeys(valid):
        if acl not in known:
            log.info("ACL created by %s: %s", ctx.principal, acl.describe())
    return {"results": [
        {"error_code": ErrorCode.NONE if p is None else ErrorCode.INVALID_REQUEST, "error_message": p} for p in problems
    ]}


@api(31, 1, 3, oldest=0)
async def delete_acls(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    filters = body["filters"]
    if ctx.broker.authorizer is None:
        failed = {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []}
        return {"filter_results": [failed] * len(filters)}
    refused = not_authorized(ctx, ALTER)
    if refused is not None:
        failed = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": refused, "matching_acls": []}
        return {"filter_results": [failed] * len(filters)}
    wanted = [request_filter(item, "DeleteAclsRequest ") for item in filters]
    matched: list[list[Acl]] = []

    def remove(current: tuple[Acl, ...]) -> list[Acl]:
        matched[:] = [[acl for acl in current if f.matches(acl)] for f in wanted]
        gone = {acl for acls in matched for acl in acls}
        return [acl for acl in current if acl not in gone]

    try:
        await store_acls(ctx, remove)
    except OSError as exc:
        log.error("ACLs not stored: %s", exc)
        failed = {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": f"ACLs not stored: {exc}", "matching_acls": []}
        return {"filter_results": [failed] * len(filters)}
    for acl in dict.fromkeys(acl for acls in matched for acl in acls):
        log.info("ACL deleted by %s: %s", ctx.principal, acl.describe())
    return {"filter_results": [
        {"error_code": ErrorCode.NONE, "error_message": None,
         "matching_acls": [{"error_code": ErrorCode.NONE, "error_message": None, **acl_fields(acl)} for acl in acls]}
        for acls in matched
    ]}
