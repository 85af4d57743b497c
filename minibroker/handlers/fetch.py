"""Fetch, ListOffsets and OffsetForLeaderEpoch: reading the logs.

Fetch serves segment bytes as they are on disk, whole batches, without decoding them. A fetch
that finds fewer than ``min_bytes`` waits until an append to one of its partitions wakes it or
``max_wait_ms`` passes. Incremental fetch sessions are declined (session id 0), which Kafka's
protocol allows: clients then send full fetch requests.
"""

from __future__ import annotations

import time
from typing import Any

from minibroker.acl_operations import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, DESCRIBE, READ, TOPIC
from minibroker.context import LEADER_ERRORS, RequestContext
from minibroker.handlers.registry import api
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.primitives import FileRegion
from minibroker.protocol.records import iter_batches
from minibroker.storage.errors import OffsetOutOfRangeError
from minibroker.storage.partition_log import PartitionLog

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
READ_COMMITTED = 1
LEADER_EPOCH_LIST_OFFSETS_VERSION = 4  # ListOffsets answers carry the offset's leader epoch from v4


def aborted_in(partition_log: PartitionLog, offset: int, data: bytes | FileRegion, end: int | None = None) -> list[dict[str, int]]:
    """The aborted transactions a read_committed client needs to filter the returned batches; ``end`` (at or
    above the offset after the last returned batch) spares reading it from ``data``."""
    if not data:
        return []
    if end is None:
        end = max(header.last_offset for header in iter_batches(data)) + 1
    return [
        {"producer_id": producer_id, "first_offset": first_offset}
        for producer_id, first_offset in partition_log.aborted_transactions(offset, end)
    ]


def error_partition(index: int, error: ErrorCode) -> dict[str, Any]:
    """A partition that cannot be read, answered as Kafka does: empty records, never null (librdkafka refuses a
    null record set: "invalid MessageSetSize -1")."""
    return {"partition_index": index, "error_code": error, "high_watermark": -1, "records": b""}


def refused_topics(ctx: RequestContext, names: set[str], operation: int) -> set[str]:
    """The topics the principal may not read (Fetch: READ) or describe (ListOffsets, OffsetForLeaderEpoch: DESCRIBE);
    none without an authorizer."""
    if ctx.broker.authorizer is None:
        return set()
    return names - ctx.allowed_names(operation, TOPIC, names)


def read_partitions(ctx: RequestContext, body: dict[str, Any], denied: set[str]) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the requested partitions: (topic responses, bytes found, whether any partition erred); the
    partitions of ``denied`` topics answer TOPIC_AUTHORIZATION_FAILED."""
    budget = body["max_bytes"]
    total = 0
    erred = False
    responses = []
    for topic in body["topics"]:
        name = topic["topic"]
        partitions = []
        for request in topic["partitions"]:
            index = request["partition"]
            if denied and name in denied:
                erred = True
                partitions.append(error_partition(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            partition_log, error = ctx.led_partition(name, index, request["current_leader_epoch"])
            if partition_log is None:
                erred = True
                answer = error_partition(index, error)
                if error in LEADER_ERRORS:
                    answer["current_leader"] = ctx.current_leader(name, index)
                partitions.append(answer)
                continue
            read_committed = body["isolation_level"] == READ_COMMITTED
            stable = partition_log.last_stable_offset
            answer = {
                "partition_index": index,
                "error_code": ErrorCode.NONE,
                "high_watermark": partition_log.log_end_offset,
                "last_stable_offset": stable,
                "log_start_offset": partition_log.log_start_offset,
                "aborted_transactions": None,
                "records": b"",
            }
            limit = min(request["partition_max_bytes"], max(budget - total, 0))
            offset = request["fetch_offset"]
            try:
                data, end = b"", None
                if limit > 0 or total == 0:
                    # Large answers are FileRegions: the connection sends them from the segment file with sendfile.
                    data, end = partition_log.read_region(offset, limit, upper_offset=stable if read_committed else None)
            except OffsetOutOfRangeError:
                erred = True
                partitions.append(error_partition(index, ErrorCode.OFFSET_OUT_OF_RANGE))
                continue
            if data and total > 0 and len(data) > limit:
                data = b""  # only the first partition with data may exceed the limits (KIP-74)
            if read_committed:
                answer["aborted_transactions"] = aborted_in(partition_log, offset, data, end)
            total += len(data)
            answer["records"] = data
            partitions.append(answer)
        responses.append({"topic": name, "partitions": partitions})
    return responses, total, erred


def fetch_refusals(ctx: RequestContext, body: dict[str, Any]) -> set[str]:
    """KafkaApis.handleFetchRequest: a follower (replica_id >= 0) needs CLUSTER_ACTION on the cluster, else none of
    its topics may be read; a consumer needs READ on each topic."""
    names = {t["topic"] for t in body["topics"]}
    if ctx.broker.authorizer is None or body["replica_id"] < 0:
        return refused_topics(ctx, names, READ)
    return set() if ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME) else names


@api(1, 4, 12)
async def fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + max(body["max_wait_ms"], 0) / 1000
    keys = [(t["topic"], p["partition"]) for t in body["topics"] for p in t["partitions"]]
    denied = fetch_refusals(ctx, body)
    while True:
        responses, total, erred = read_partitions(ctx, body, denied)
        if total >= body["min_bytes"] or erred or not keys:
            break
        if not await ctx.broker.wait_for_append(keys, deadline - time.monotonic()):
            break
    return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}


def list_offset(
    ctx: RequestContext, topic: str, request: dict[str, Any], isolation_level: int, denied: set[str],
) -> dict[str, Any]:
    index = request["partition_index"]
    if denied and topic in denied:
        return {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "timestamp": -1, "offset": -1}
    partition_log, error = ctx.led_partition(topic, index, request["current_leader_epoch"])
    if partition_log is None:
        return {"partition_index": index, "error_code": error}
    timestamp = request["timestamp"]
    found: tuple[int, int] | None
    leader_epoch = ctx.broker.placements.of(topic, index).leader_epoch
    if timestamp == LATEST_TIMESTAMP:
        latest = partition_log.last_stable_offset if isolation_level == READ_COMMITTED else partition_log.log_end_offset
        found = (latest, -1)
    elif timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # the epoch of the first offset (Kafka's log)
        found = (partition_log.log_start_offset, -1)
        leader_epoch = partition_log.epoch_for_offset(partition_log.log_start_offset)
    elif timestamp == MAX_TIMESTAMP:
        found = partition_log.max_timestamp_entry()
    else:
        found = partition_log.offset_for_timestamp(timestamp)
    offset, found_timestamp = found if found is not None else (-1, -1)
    answer = {"partition_index": index, "error_code": ErrorCode.NONE, "timestamp": found_timestamp, "offset": offset}
    if offset >= 0 and ctx.api_version >= LEADER_EPOCH_LIST_OFFSETS_VERSION:  # as Kafka's ReplicaManager.fetchOffset
        answer["leader_epoch"] = leader_epoch
    return answer


@api(2, 1, 7)
async def list_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    denied = refused_topics(ctx, {t["name"] for t in body["topics"]}, DESCRIBE)
    topics = [
        {"name": t["name"], "partitions": [list_offset(ctx, t["name"], p, body["isolation_level"], denied) for p in t["partitions"]]}
        for t in body["topics"]
    ]
    return {"topics": topics}


@api(23, 2, 4)
async def offset_for_leader_epoch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """Where a leader epoch ends, from the partition's leader-epoch cache (Kafka's Partition.lastOffsetForLeaderEpoch,
    KIP-320): an epoch the cache does not know (undefined, or newer than its latest) answers NONE with epoch and end
    offset -1."""
    denied: set[str] = set()
    if ctx.broker.authorizer is not None and not ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME, log_denied=False):
        denied = refused_topics(ctx, {t["topic"] for t in body["topics"]}, DESCRIBE)  # KIP-320: consumers ask too
    topics = []
    for topic in body["topics"]:
        partitions = []
        for request in topic["partitions"]:
            index = request["partition"]
            if denied and topic["topic"] in denied:
                partitions.append({"partition": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
                continue
            partition_log, error = ctx.led_partition(topic["topic"], index, request["current_leader_epoch"])
            if partition_log is None:
                partitions.append({"partition": index, "error_code": error})
                continue
            answer = {"partition": index, "error_code": ErrorCode.NONE}
            found = partition_log.end_offset_for_epoch(request["leader_epoch"])
            if found is not None:
                answer["leader_epoch"], answer["end_offset"] = found
            partitions.append(answer)
        topics.append({"topic": topic["topic"], "partitions": partitions})
    return {"topics": topics}
