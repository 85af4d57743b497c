"""ShareFetch (78) and ShareAcknowledge (79): the data path of share groups (KIP-932), as Kafka's KafkaApis handles
them over the SharePartitionManager (minibroker/share/manager.py).

A ShareFetch uses the member's share session on the node it was sent to (minibroker/share/sessions.py), applies the
acknowledgements it carries, then acquires records for the member from each partition of the session and answers them
with the log batches that hold them, waiting up to MaxWaitMs for records as Fetch does. v2 adds the record-limit
acquire mode (KIP-1206) and acknowledgements that renew a lock (KIP-1222). Membership is not checked here: Kafka's
ShareFetch does not ask the group coordinator whether the member is in the group.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Iterable

from minibroker.acls.operations import GROUP, READ, TOPIC
from minibroker.handlers.metadata import leader_endpoints
from minibroker.handlers.registry import api
from minibroker.handlers.share_groups import share_groups_enabled
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.share_state import SharePartitionKey
from minibroker.server.context import RequestContext
from minibroker.share.sessions import FINAL_EPOCH, SessionError

if TYPE_CHECKING:
    from minibroker.share.manager import Acquisition
    from minibroker.share.partition import AcquiredRange

RECORD_LIMIT_MODE = 1  # ShareAcquireMode: 0 batch-optimized, 1 record-limit (v2)
RENEW_VERSION = 2  # IsRenewAck and the renew acknowledge type, ShareAcknowledge's AcquisitionLockTimeoutMs
LEADER_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)

Partition = tuple[bytes, int]


NO_MAX_BYTES = "Request max bytes must be greater than 0"  # the message of Kafka's IllegalArgumentException
NO_LEADER = {"leader_id": 0, "leader_epoch": 0}  # what Kafka's PartitionData holds unless the partition moved


def fetched(index: int, error: ErrorCode = NO_ERROR, records: bytes = b"", acquired: list[AcquiredRange] = ()) -> dict[str, Any]:
    """A ShareFetch partition answer with every field (the acknowledgement result is set after)."""
    return {
        "partition_index": index, "error_code": error, "error_message": None, "acknowledge_error_code": NO_ERROR,
        "acknowledge_error_message": None, "current_leader": NO_LEADER, "records": records,
        "acquired_records": [
            {"first_offset": r.first_offset, "last_offset": r.last_offset, "delivery_count": r.delivery_count}
            for r in acquired
        ],
    }


def top_level_error(ctx: RequestContext, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"error_code": error, "error_message": message, "responses": [], "node_endpoints": []}
    if ctx.api_key == 78 or ctx.api_version >= RENEW_VERSION:
        answer["acquisition_lock_timeout_ms"] = 0
    return answer


def request_refusal(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    """What both APIs check first: share groups on (share.version), READ on the group, a member id."""
    if not share_groups_enabled(ctx):
        return top_level_error(ctx, ErrorCode.UNSUPPORTED_VERSION)
    if ctx.broker.authorizer is not None and not ctx.allowed(READ, GROUP, body["group_id"] or ""):
        return top_level_error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not body["member_id"]:
        return top_level_error(ctx, ErrorCode.INVALID_REQUEST, "The member id must be non-empty.")
    return None


def readable_topics(ctx: RequestContext, partitions: list[Partition]) -> tuple[dict[bytes, str | None], set[str]]:
    """The topic ids' names (None: no such topic) and the names the principal may not READ."""
    names = {topic_id: ctx.broker.topic_name(topic_id) for topic_id, _ in partitions}
    if ctx.broker.authorizer is None:
        return names, set()
    known = {name for name in names.values() if name is not None}
    return names, known - ctx.allowed_names(READ, TOPIC, known)


def batch_problem(batches: list[dict[str, Any]], max_type: int) -> bool:
    """KafkaApis.validateAcknowledgementBatches: ordered, non-overlapping ranges, one type or one per offset, known
    types (renew only in a renewing request)."""
    previous_end = -1
    for batch in batches:
        first, last, types = batch["first_offset"], batch["last_offset"], batch["acknowledge_types"]
        if first > last or first < previous_end or not types:
            return True
        if len(types) > 1 and last - first != len(types) - 1:
            return True
        if any(t < 0 or t > max_type for t in types):
            return True
        previous_end = last
    return False


def acknowledge_partition(
    ctx: RequestContext, group_id: str, member_id: str, topic_id: bytes, index: int, batches: list[dict[str, Any]],
    names: dict[bytes, str | None], denied: set[str], max_type: int,
) -> dict[str, Any]:
    """One partition's acknowledgements applied: its answer (partition_index, error_code, error_message and, when
    the partition moved, current_leader)."""
    answer: dict[str, Any] = {
        "partition_index": index, "error_code": NO_ERROR, "error_message": None, "current_leader": NO_LEADER,
    }
    name = names.get(topic_id)
    if name is None:
        answer["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID
    elif batch_problem(batches, max_type):
        answer["error_code"] = ErrorCode.INVALID_REQUEST
    elif name in denied:
        answer["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif batches:
        partition_log, error = ctx.led_partition(name, index)
        if partition_log is None:
            answer["error_code"] = error
            leader_of(ctx, answer, name, index)
        else:
            key = SharePartitionKey(group_id, topic_id, index)
            from minibroker.share.partition import AckBatch  # the data path is imported when share groups are used

            ack_batches = [AckBatch(b["first_offset"], b["last_offset"], tuple(b["acknowledge_types"])) for b in batches]
            answer["error_code"], answer["error_message"] = ctx.broker.share_partitions.acknowledge(key, member_id, ack_batches)
    return answer


def leader_of(ctx: RequestContext, answer: dict[str, Any], name: str, index: int) -> None:
    """A moved partition's answer names its leader (Kafka's getCurrentLeader)."""
    if answer["error_code"] in LEADER_ERRORS:
        placed = ctx.broker.placements.of(name, index)
        answer["current_leader"] = {"leader_id": placed.leader, "leader_epoch": placed.leader_epoch}


def with_endpoints(ctx: RequestContext, answer: dict[str, Any], partitions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """KIP-951: the endpoints of the nodes leading the partitions that moved (Kafka's NodeEndpoints)."""
    leaders = {
        p["current_leader"]["leader_id"] for p in partitions
        if p["error_code"] in LEADER_ERRORS or p.get("acknowledge_error_code") in LEADER_ERRORS
    }
    answer["node_endpoints"] = leader_endpoints(ctx, leaders) if leaders else []
    return answer


def max_acknowledge_type(ctx: RequestContext, body: dict[str, Any]) -> int:
    from minibroker.share.partition import AcknowledgeType

    return AcknowledgeType.RENEW if ctx.api_version >= RENEW_VERSION and body.get("is_renew_ack") else AcknowledgeType.REJECT


def by_topic(answers: dict[Partition, dict[str, Any]]) -> list[dict[str, Any]]:
    """Partition answers grouped by topic id, in the order first answered."""
    topics: dict[bytes, list[dict[str, Any]]] = {}
    for (topic_id, _), answer in answers.items():
        topics.setdefault(topic_id, []).append(answer)
    return [{"topic_id": topic_id, "partitions": partitions} for topic_id, partitions in topics.items()]


# ---- ShareFetch ----


@api(78, 1, 2)
async def share_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = request_refusal(ctx, body)
    if refused is not None:
        return refused
    renewing = ctx.api_version >= RENEW_VERSION and body["is_renew_ack"]
    if renewing and any(body[field] for field in ("max_bytes", "min_bytes", "max_records", "max_wait_ms")):
        return top_level_error(ctx, ErrorCode.INVALID_REQUEST, "A renewing ShareFetch must not fetch.")
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    manager = ctx.broker.share_partitions
    await manager.ready()
    wanted = [(t["topic_id"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
    forgotten = [(t["topic_id"], index) for t in body["forgotten_topics_data"] for index in t["partitions"]]
    acknowledging = [
        ((t["topic_id"], p["partition_index"]), p["acknowledgement_batches"])
        for t in body["topics"] for p in t["partitions"] if p["acknowledgement_batches"]
    ]
    try:
        fetching, _ = manager.sessions(ctx.node_id).for_fetch(
            group_id, member_id, epoch, wanted, forgotten, bool(acknowledging), ctx.connection,
        )
    except SessionError as exc:
        if exc.error == ErrorCode.SHARE_SESSION_LIMIT_REACHED:  # Kafka answers after MaxWaitMs, not in a busy loop
            await asyncio.sleep(max(body["max_wait_ms"], 0) / 1000)
        return top_level_error(ctx, exc.error)
    names, denied = readable_topics(ctx, wanted + fetching)
    acknowledged: dict[Partition, dict[str, Any]] = {}
    max_type = max_acknowledge_type(ctx, body)
    for (topic_id, index), batches in acknowledging:
        acknowledged[(topic_id, index)] = acknowledge_partition(
            ctx, group_id, member_id, topic_id, index, batches, names, denied, max_type,
        )
    if acknowledged:
        await manager.flush()
    answers: dict[Partition, dict[str, Any]] = {}
    if not renewing and epoch != FINAL_EPOCH:
        answers = await fetch_partitions(ctx, body, fetching, names, denied, full=epoch == 0)
    for part, ack in acknowledged.items():
        answer = answers.setdefault(part, fetched(part[1]))
        answer["acknowledge_error_code"] = ack["error_code"]
        answer["acknowledge_error_message"] = ack["error_message"]
        if answer["current_leader"] is NO_LEADER:
            answer["current_leader"] = ack["current_leader"]
    if epoch == FINAL_EPOCH:
        manager.release_session(ctx.node_id, group_id, member_id)
        await manager.flush()
    answer = {
        "error_code": NO_ERROR, "error_message": None,
        "acquisition_lock_timeout_ms": manager.lock_duration_ms(group_id), "responses": by_topic(answers),
        "node_endpoints": [],
    }
    return with_endpoints(ctx, answer, answers.values())


async def fetch_partitions(
    ctx: RequestContext, body: dict[str, Any], fetching: list[Partition], names: dict[bytes, str | None],
    denied: set[str], full: bool,
) -> dict[Partition, dict[str, Any]]:
    """Acquire records from the session's partitions, waiting up to MaxWaitMs for some (Kafka's DelayedShareFetch):
    each partition's answer; an incremental session answers only the partitions with records or an error."""
    answers: dict[Partition, dict[str, Any]] = {}
    readable: list[tuple[Partition, str]] = []
    for topic_id, index in fetching:
        name = names.get(topic_id)
        error = NO_ERROR
        if name is None:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        elif name in denied:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            partition_log, error = ctx.led_partition(name, index)
            if partition_log is not None:
                readable.append(((topic_id, index), name))
                continue
        answers[(topic_id, index)] = fetched(index, error)
        if name is not None:
            leader_of(ctx, answers[(topic_id, index)], name, index)
    if body["max_bytes"] <= 0:
        answers.update(refuse_without_bytes(ctx, body["group_id"], readable))
        return answers
    deadline = time.monotonic() + max(body["max_wait_ms"], 0) / 1000
    record_limit = ctx.api_version >= RENEW_VERSION and body["share_acquire_mode"] == RECORD_LIMIT_MODE
    loaded = ctx.broker.share_partitions.partitions
    initializing = {part for part, _ in readable if SharePartitionKey(body["group_id"], *part) not in loaded}
    while True:
        got = acquire_all(ctx, body, readable, record_limit, initializing)
        initializing = set()  # initialized by the first pass
        if any(a.acquired for a in got.values()) or not readable:
            break
        keys = [(name, index) for (_, index), name in readable]
        if not await ctx.broker.wait_for_append(keys, deadline - time.monotonic()):
            got = acquire_all(ctx, body, readable, record_limit)  # records released while the wait ended
            break
    for (part, _), acquisition in zip(readable, got.values()):
        if acquisition.acquired or acquisition.error != NO_ERROR or full:
            answers[part] = fetched(part[1], acquisition.error, acquisition.records, acquisition.acquired)
    return answers


def refuse_without_bytes(
    ctx: RequestContext, group_id: str, readable: list[tuple[Partition, str]],
) -> dict[Partition, dict[str, Any]]:
    """MaxBytes 0 in a fetching ShareFetch: Kafka's PartitionMaxBytesStrategy throws IllegalArgumentException for
    the partitions it could read, answered at once as UNKNOWN_SERVER_ERROR with its message; nothing is acquired."""
    answers: dict[Partition, dict[str, Any]] = {}
    for (topic_id, index), name in readable:
        partition_log, _ = ctx.led_partition(name, index)
        leader_epoch = ctx.broker.placements.of(name, index).leader_epoch
        key = SharePartitionKey(group_id, topic_id, index)
        if partition_log is not None and ctx.broker.share_partitions.can_acquire(key, partition_log, leader_epoch):
            answers[(topic_id, index)] = fetched(index, ErrorCode.UNKNOWN_SERVER_ERROR)
            answers[(topic_id, index)]["error_message"] = NO_MAX_BYTES
    return answers


def acquire_all(
    ctx: RequestContext, body: dict[str, Any], readable: list[tuple[Partition, str]], record_limit: bool,
    initializing: set[Partition] = frozenset(),
) -> dict[Partition, Acquisition]:
    """One pass over the partitions: records acquired within MaxRecords and MaxBytes for the whole request (only the
    first partition with records may exceed MaxBytes, as in Fetch).

    Share partitions this fetch makes (``initializing``) become ready one after another, as Kafka's do when each
    reads its state from the share coordinator: the DelayedShareFetch completes with the first of them that has
    records, so the others are made but give nothing until the next fetch."""
    from minibroker.share.manager import Acquisition

    manager = ctx.broker.share_partitions
    records_left, bytes_left = body["max_records"], body["max_bytes"]
    got: dict[Partition, Acquisition] = {}
    initialized_with_records = False
    for (topic_id, index), name in readable:
        partition_log, _ = ctx.led_partition(name, index)
        if partition_log is None or records_left <= 0 or (bytes_left <= 0 and got):
            got[(topic_id, index)] = Acquisition([], b"")
            continue
        key = SharePartitionKey(body["group_id"], topic_id, index)
        leader_epoch = ctx.broker.placements.of(name, index).leader_epoch
        if initialized_with_records and (topic_id, index) in initializing:
            manager.can_acquire(key, partition_log, leader_epoch)
            got[(topic_id, index)] = Acquisition([], b"")
            continue
        acquisition = manager.acquire(
            key, partition_log, leader_epoch, body["member_id"], records_left, max(body["batch_size"], 1), record_limit,
            max(bytes_left, 1),
        )
        got[(topic_id, index)] = acquisition
        initialized_with_records = initialized_with_records or (
            (topic_id, index) in initializing and bool(acquisition.acquired)
        )
        records_left -= sum(r.last_offset - r.first_offset + 1 for r in acquisition.acquired)
        bytes_left -= len(acquisition.records)
    return got


# ---- ShareAcknowledge ----


@api(79, 1, 2)
async def share_acknowledge(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    refused = request_refusal(ctx, body)
    if refused is not None:
        return refused
    group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    manager = ctx.broker.share_partitions
    await manager.ready()
    try:
        manager.sessions(ctx.node_id).for_acknowledge(group_id, member_id, epoch)
    except SessionError as exc:
        return top_level_error(ctx, exc.error)
    parts = [(t["topic_id"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
    names, denied = readable_topics(ctx, parts)
    max_type = max_acknowledge_type(ctx, body)
    answers: dict[Partition, dict[str, Any]] = {}
    for topic in body["topics"]:
        for partition in topic["partitions"]:
            index = partition["partition_index"]
            answers[(topic["topic_id"], index)] = acknowledge_partition(
                ctx, group_id, member_id, topic["topic_id"], index, partition["acknowledgement_batches"], names, denied,
                max_type,
            )
    if epoch == FINAL_EPOCH:
        manager.release_session(ctx.node_id, group_id, member_id)
    await manager.flush()
    answer = {"error_code": NO_ERROR, "error_message": None, "responses": by_topic(answers), "node_endpoints": []}
    if ctx.api_version >= RENEW_VERSION:
        answer["acquisition_lock_timeout_ms"] = manager.lock_duration_ms(group_id)
    return with_endpoints(ctx, answer, answers.values())
