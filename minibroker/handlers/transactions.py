"""InitProducerId for idempotent producers (transactional ids come with the transaction coordinator)."""

from __future__ import annotations

from typing import Any

from minibroker.context import RequestContext
from minibroker.handlers.registry import api
from protocol.errors import ErrorCode


@api(22, 0, 4)
async def init_producer_id(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    if body["transactional_id"] is not None:
        return {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}
    return {"error_code": ErrorCode.NONE, "producer_id": ctx.broker.producer_ids.allocate(), "producer_epoch": 0}
