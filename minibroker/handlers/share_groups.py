"""Share group membership APIs (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe.

As KafkaApis: with ``share.version`` below 1 share groups are off and every share API answers UNSUPPORTED_VERSION
(``share_version_refusal``, for the share data path's handlers too), before any ACL check; then READ (heartbeat) or
DESCRIBE (describe) on the group, and DESCRIBE on the topics a member subscribes to or a described group is assigned
(KAFKA-18813). The rules themselves are the coordinator's (``minibroker.share.groups``).
"""

from __future__ import annotations

from typing import Any

from minibroker.acls.operations import DESCRIBE, GROUP, NO_AUTHORIZED_OPERATIONS, READ
from minibroker.cluster.features import SHARE_VERSION
from minibroker.handlers.groups import (
    HIDDEN_TOPICS,
    UNSUPPORTED_VERSION_MESSAGE,
    client_host,
    coordinator,
    refusal,
    refused_topics,
)
from minibroker.handlers.registry import api
from minibroker.protocol.error_responses import error_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


def share_groups_enabled(ctx: RequestContext) -> bool:
    """Kafka's isShareGroupProtocolEnabled: ``share.version`` finalized at 1 or more."""
    return ctx.broker.features.level(SHARE_VERSION) >= 1


def share_version_refusal(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer of a share API while share groups are off (UNSUPPORTED_VERSION for everything asked); else None."""
    if share_groups_enabled(ctx):
        return None
    return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_VERSION_MESSAGE)


@api(76, 1, 1)
async def share_group_heartbeat(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = share_version_refusal(ctx, body) or refusal(ctx, body, READ, GROUP, body["group_id"])
    if refused is not None:
        return refused
    names = set(body["subscribed_topic_names"] or ())
    if names and refused_topics(ctx, names, DESCRIBE):
        return error_response(ctx.api_key, ctx.api_version, {}, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    from minibroker.share.groups import ShareHeartbeat  # the group coordinator is imported when groups are used

    request = ShareHeartbeat(
        group_id=body["group_id"],
        member_id=body["member_id"],
        member_epoch=body["member_epoch"],
        rack_id=body["rack_id"],
        subscribed_topic_names=body["subscribed_topic_names"],
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
    )
    response = coordinator(ctx).share_heartbeat(request)
    await ctx.broker.groups.flush()
    return response


@api(77, 1, 1)
async def share_group_describe(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = share_version_refusal(ctx, body)
    if refused is not None:
        return refused
    from minibroker.groups.coordinator import described_error

    include = body["include_authorized_operations"]
    groups = []
    for group_id in body["group_ids"]:
        if ctx.broker.authorizer is not None and not ctx.allowed(DESCRIBE, GROUP, group_id):
            groups.append(described_error(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        described = coordinator(ctx).share_describe(group_id)
        assigned = {
            topic["topic_name"] for member in described["members"] for topic in member["assignment"]["topic_partitions"]
        }
        if refused_topics(ctx, assigned, DESCRIBE):
            groups.append(described_error(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPICS))
            continue
        ok = described["error_code"] == ErrorCode.NONE
        described["authorized_operations"] = (
            ctx.authorized_operations(GROUP, group_id) if include and ok else NO_AUTHORIZED_OPERATIONS
        )
        groups.append(described)
    return {"groups": groups}
