"""ElectLeaders (v0-2), AlterPartitionReassignments (v0-1) and ListPartitionReassignments (v0), as Kafka's
ControllerApis and ReplicationControlManager answer them.

A partition's data is stored once, so its in-sync replicas are its live ones: a preferred election moves the
leadership to the first replica when that node is live (the same broker operation as the control API's leader
move), and a reassignment completes at once unless it adds a stopped node (see ``minibroker.cluster.placements``). With the
authorizer on, ElectLeaders and AlterPartitionReassignments need ALTER on the cluster, ListPartitionReassignments
DESCRIBE, else the whole request is refused with CLUSTER_AUTHORIZATION_FAILED (Kafka's authorizeClusterOperation).
"""

from __future__ import annotations

from typing import Any

from minibroker.acls.operations import ALTER, DESCRIBE
from minibroker.cluster.placements import NO_LEADER, first_live
from minibroker.handlers.acls import not_authorized
from minibroker.handlers.admin import manual_assignment_problem
from minibroker.handlers.registry import api
from minibroker.protocol.error_responses import error_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

PREFERRED, UNCLEAN = 0, 1
ELECTION_ERRORS = {  # ApiError(error): the error's own message
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def refused(ctx: RequestContext, body: dict[str, Any], operation: int) -> dict[str, Any] | None:
    """The request's getErrorResponse when the cluster operation is not allowed, else None."""
    if ctx.broker.authorizer is None:
        return None
    message = not_authorized(ctx, operation)
    if message is None:
        return None
    return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)


def partition_count(ctx: RequestContext, topic: str) -> int | None:
    info = ctx.broker.topic(topic)
    return None if info is None else len(info.partitions)


def elect(ctx: RequestContext, topic: str, partition: int, election: int) -> tuple[ErrorCode, str | None]:
    """One partition's election (ReplicationControlManager.electLeader)."""
    count = partition_count(ctx, topic)
    if count is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= partition < count:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    broker = ctx.broker
    placed = broker.placements.of(topic, partition)
    if (election == PREFERRED and placed.leader == placed.replicas[0]) or (election == UNCLEAN and placed.leader in broker.live_nodes):
        error = ErrorCode.ELECTION_NOT_NEEDED
    else:
        leader = placed.replicas[0] if election == PREFERRED else first_live(placed.replicas, broker.live_nodes)
        if leader != NO_LEADER and leader in broker.live_nodes:
            broker.move_leader(topic, partition, leader)
            return ErrorCode.NONE, None
        error = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election == PREFERRED else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    return error, ELECTION_ERRORS[error]


@api(43, 0, 2)
async def elect_leaders(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    answer = refused(ctx, body, ALTER)
    if answer is not None:
        return answer
    election = body.get("election_type", PREFERRED)
    if election not in (PREFERRED, UNCLEAN):
        return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.INVALID_REQUEST, f"Unknown election type {election}")
    results = []
    if body["topic_partitions"] is None:  # every partition; those that need no election are left out
        for name, info in sorted(ctx.broker.logs.topics.items()):
            answers = [(index, *elect(ctx, name, index, election)) for index in range(len(info.partitions))]
            results.append({"topic": name, "partition_result": [
                {"partition_id": index, "error_code": error, "error_message": message}
                for index, error, message in answers if error != ErrorCode.ELECTION_NOT_NEEDED
            ]})
    else:
        for topic in body["topic_partitions"]:
            results.append({"topic": topic["topic"], "partition_result": [
                {"partition_id": index, **dict(zip(("error_code", "error_message"), elect(ctx, topic["topic"], index, election)))}
                for index in topic["partitions"]
            ]})
    return {"error_code": ErrorCode.NONE, "replica_election_results": results}


def reassign(ctx: RequestContext, topic: str, request: dict[str, Any], allow_factor_change: bool) -> tuple[ErrorCode, str | None]:
    """One partition's reassignment or cancellation (ReplicationControlManager.alterPartitionReassignment)."""
    index, target = request["partition_index"], request["replicas"]
    count = partition_count(ctx, topic)
    if count is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= index < count:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
    broker = ctx.broker
    if target is not None:
        problem = manual_assignment_problem(target, broker.node_ids, None)
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        placed = broker.placements.of(topic, index)
        factor = len(placed.replicas) - len(placed.adding)
        if not allow_factor_change and len(target) != factor:
            return ErrorCode.INVALID_REPLICATION_FACTOR, (
                f"The replication factor is changed from {factor} to {len(target)}"
            )
    try:
        broker.reassign(topic, index, None if target is None else tuple(target))
    except LookupError:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    return ErrorCode.NONE, None


@api(45, 0, 1)
async def alter_partition_reassignments(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    answer = refused(ctx, body, ALTER)
    if answer is not None:
        return answer
    allow = body.get("allow_replication_factor_change", True)
    responses = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            error, message = reassign(ctx, topic["name"], request, allow)
            partitions.append({"partition_index": request["partition_index"], "error_code": error, "error_message": message})
        responses.append({"name": topic["name"], "partitions": partitions})
    return {"allow_replication_factor_change": allow, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": responses}


@api(46, 0, 0)
async def list_partition_reassignments(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    answer = refused(ctx, body, DESCRIBE)
    if answer is not None:
        return answer
    ongoing = ctx.broker.placements.reassigning()
    if body["topics"] is None:
        wanted = sorted(ongoing)
    else:
        wanted = [(topic["name"], index) for topic in body["topics"] for index in topic["partition_indexes"]]
    topics: dict[str, list[dict[str, Any]]] = {}
    for name, index in wanted:
        placed = ongoing.get((name, index))
        if placed is not None and ctx.broker.topic(name) is not None:
            topics.setdefault(name, []).append({
                "partition_index": index, "replicas": list(placed.replicas),
                "adding_replicas": list(placed.adding), "removing_replicas": list(placed.removing),
            })
    return {"error_code": ErrorCode.NONE, "error_message": None,
            "topics": [{"name": name, "partitions": partitions} for name, partitions in topics.items()]}
