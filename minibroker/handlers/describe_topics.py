"""DescribeTopicPartitions (KIP-966): the Java Admin's describeTopics, paged by partitions, as Kafka's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.describeTopicResponse answer it."""

from __future__ import annotations

from typing import Any

from minibroker.acls.operations import DESCRIBE, TOPIC
from minibroker.cluster.placements import NO_LEADER
from minibroker.handlers.registry import api
from minibroker.protocol.error_responses import error_response
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.primitives import ZERO_UUID
from minibroker.server.context import RequestContext
from minibroker.storage.log_manager import TopicInfo
from minibroker.storage.topic_names import is_internal, validate_topic_name

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default: a page's partitions at most


def partition_entries(ctx: RequestContext, info: TopicInfo, start: int, count: int) -> list[dict[str, Any]]:
    """Partitions ``start`` .. ``start + count - 1``: a partition without a live leader has leader -1 (no error, as
    KRaftMetadataCache answers); one broker has no eligible leader replicas (KIP-966: empty lists)."""
    placements = ctx.broker.placements
    live = ctx.broker.live_nodes
    entries = []
    for index in range(start, min(start + count, len(info.partitions))):
        placed = placements.of(info.name, index)
        entries.append({
            "error_code": ErrorCode.NONE,
            "partition_index": index,
            "leader_id": placed.leader if placed.leader in live else NO_LEADER,
            "leader_epoch": placed.leader_epoch,
            "replica_nodes": list(placed.replicas),
            "isr_nodes": [node for node in placed.replicas if node in live],
            "eligible_leader_replicas": [],
            "last_known_elr": [],
            "offline_replicas": [node for node in placed.replicas if node not in live],
        })
    return entries


def missing_topic(name: str, error: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": error, "name": name, "topic_id": ZERO_UUID, "is_internal": is_internal(name), "partitions": [],
    }


@api(75, 0, 0)
async def describe_topic_partitions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """Topics in name order from the cursor's (all topics when none are named), at most ResponsePartitionLimit
    partitions (capped at 2000, at least 1); NextCursor names where the next page starts. Named topics the principal
    may not DESCRIBE answer TOPIC_AUTHORIZATION_FAILED after the others; unnamed ones are left out. A cursor naming
    a topic the request does not, or a negative partition, is an INVALID_REQUEST of every named topic."""
    broker = ctx.broker
    cursor = body["cursor"]
    everything = not body["topics"]
    names = sorted(broker.logs.topics) if everything else sorted({t["name"] for t in body["topics"]})
    if cursor is not None:
        names = [name for name in names if name >= cursor["topic_name"]]
        problem = None
        if not everything and cursor["topic_name"] not in names:
            problem = f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {cursor['topic_name']}"
        elif cursor["partition_index"] < 0:
            problem = f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}"
        if problem is not None:
            return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.INVALID_REQUEST, problem)
    denied: list[str] = []
    if broker.authorizer is not None:
        allowed = ctx.allowed_names(DESCRIBE, TOPIC, set(names))
        denied = [] if everything else [name for name in names if name not in allowed]
        names = [name for name in names if name in allowed]
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, body["response_partition_limit"]), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if remaining == 0:  # the next page starts at this topic's first partition
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        info = broker.topic(name)
        if info is None:
            if not everything:
                error = ErrorCode.INVALID_TOPIC_EXCEPTION if validate_topic_name(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                operations = ctx.authorized_operations(TOPIC, name)
                topics.append({**missing_topic(name, error), "topic_authorized_operations": operations})
            continue
        start = cursor["partition_index"] if cursor is not None and name == cursor["topic_name"] else 0
        partitions = partition_entries(ctx, info, start, remaining)
        topics.append({
            "error_code": ErrorCode.NONE,
            "name": name,
            "topic_id": info.topic_id,
            "is_internal": is_internal(name),
            "partitions": partitions,
            "topic_authorized_operations": ctx.authorized_operations(TOPIC, name),
        })
        following = start + len(partitions)
        if following < len(info.partitions):
            next_cursor = {"topic_name": name, "partition_index": following}
            break
        remaining -= len(partitions)
    topics += [missing_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for name in denied]
    return {"topics": topics, "next_cursor": next_cursor}
