"""UpdateFeatures: change finalized feature levels (DescribeFeatures is ApiVersions, as the Java Admin asks it)."""

from __future__ import annotations

from typing import Any

from minibroker.acls.model import CLUSTER_DENIED
from minibroker.acls.operations import ALTER, CLUSTER, CLUSTER_NAME
from minibroker.cluster.features import FeatureUpdate
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

FIRST_VERSION_WITHOUT_RESULTS = 2


@api(57, 0, 2)
async def update_features(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """As Kafka's controller answers (QuorumController.updateFeatures): all updates or none, a refusal naming the
    feature at fault in the top-level error; v0-1 list each feature's result on success. ALTER on the cluster."""
    if ctx.broker.authorizer is not None and not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_DENIED,
                "results": []}
    updates = [FeatureUpdate(u["feature"], u["max_version_level"], u["upgrade_type"]) for u in body["feature_updates"]]
    features = ctx.broker.features
    error, message = features.update(updates, body["validate_only"])
    if error != ErrorCode.NONE:
        message = f"The update failed for all features since the following feature had an error: {message}"
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "results": []}
    ctx.broker.api_versions_answers.clear()  # they carry the levels
    results = [] if ctx.api_version >= FIRST_VERSION_WITHOUT_RESULTS else [
        {"feature": u.name, "error_code": ErrorCode.NONE, "error_message": None} for u in updates
    ]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}
