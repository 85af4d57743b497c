"""DescribeLogDirs (v1-5) and AlterReplicaLogDirs (v1-2), as Kafka's KafkaApis and ReplicaManager answer them.

Each node answers for the replicas it holds, in its one log directory (``log.dirs``, its absolute path): every node
of a cluster in one process shares the data directory, where a partition's data is stored once, so each replica
of a partition reports that log's size (its segment files' bytes) with no offset lag, and the volume's total and
usable bytes. A replica can only be moved to the directory it is in (there is no other): a path that is not the
log directory is LOG_DIR_NOT_FOUND. With the authorizer on, describing needs DESCRIBE on the cluster and moving
ALTER, as in Kafka.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from minibroker.acls.operations import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


def log_dir(ctx: RequestContext) -> Path:
    return Path(ctx.broker.config.data_dir).absolute()


def hosts(ctx: RequestContext, topic: str, partition: int) -> bool:
    """Whether the node asked holds a replica of the partition."""
    return ctx.node_id in ctx.broker.placements.of(topic, partition).replicas


@api(35, 1, 5, oldest=0)
async def describe_log_dirs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    broker = ctx.broker
    if broker.authorizer is not None and not ctx.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    wanted = None if body["topics"] is None else {(t["topic"], p) for t in body["topics"] for p in t["partitions"]}
    topics = []
    for name, info in sorted(broker.logs.topics.items()):
        partitions = [
            {"partition_index": index, "partition_size": partition.size_bytes, "offset_lag": 0, "is_future_key": False}
            for index, partition in enumerate(info.partitions)
            if (wanted is None or (name, index) in wanted) and hosts(ctx, name, index)
        ]
        if partitions:
            topics.append({"name": name, "partitions": partitions})
    path = log_dir(ctx)
    result = {"error_code": ErrorCode.NONE, "log_dir": str(path), "topics": topics, "is_cordoned": False}
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, topics=[], total_bytes=-1, usable_bytes=-1)
    else:
        result.update(total_bytes=usage.total, usable_bytes=usage.free)
    return {"error_code": ErrorCode.NONE, "results": [result]}


def move_error(ctx: RequestContext, path: str, topic: str, partition: int) -> ErrorCode:
    """ReplicaManager.alterReplicaLogDirs for one partition: only its own directory is a configured one."""
    if Path(path).absolute() != log_dir(ctx):
        return ErrorCode.LOG_DIR_NOT_FOUND
    info = ctx.broker.topic(topic)
    if info is None or not 0 <= partition < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not hosts(ctx, topic, partition):
        return ErrorCode.REPLICA_NOT_AVAILABLE  # Kafka keeps this error here for NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE  # already there


@api(34, 1, 2, oldest=0)
async def alter_replica_log_dirs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    denied = ctx.broker.authorizer is not None and not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME)
    results: dict[str, list[dict[str, Any]]] = {}
    for directory in body["dirs"]:
        for topic in directory["topics"]:
            for partition in topic["partitions"]:
                error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if denied else move_error(
                    ctx, directory["path"], topic["name"], partition)
                results.setdefault(topic["name"], []).append({"partition_index": partition, "error_code": error})
    return {"results": [{"topic_name": name, "partitions": partitions} for name, partitions in results.items()]}
