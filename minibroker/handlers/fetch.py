"""Fetch, ListOffsets and OffsetForLeaderEpoch: reading the logs.

Fetch serves segment bytes as they are on disk, whole batches, without decoding them. A fetch
that finds fewer than ``min_bytes`` waits until an append to one of its partitions wakes it or
``max_wait_ms`` passes. Incremental fetch sessions (KIP-227) are kept as Kafka keeps them (fetch_sessions.py), and
from v13 topics are named by id (KIP-516). A consumer's fetch (v11+) is served by followers too, and with Kafka's
rack-aware replica selector the leader sends a consumer to the replica in its rack (KIP-392, racks.py).
"""

from __future__ import annotations

import time
from typing import Any, Iterable, NamedTuple

from minibroker.acls.operations import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, DESCRIBE, READ, TOPIC
from minibroker.cluster.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    FetchSession,
    PartitionKey,
    Wanted,
    next_epoch,
)
from minibroker.handlers.metadata import leader_endpoints
from minibroker.handlers.registry import api
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.primitives import ZERO_UUID, FileRegion
from minibroker.protocol.records import iter_batches
from minibroker.server.context import RequestContext
from minibroker.storage.errors import OffsetOutOfRangeError
from minibroker.storage.partition_log import PartitionLog

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5  # v9 (KIP-1005)
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # v11 (KIP-1023)
# The first ListOffsets version each special timestamp may be asked in (Kafka's ReplicaManager): earlier, or another
# negative timestamp, answers UNSUPPORTED_VERSION.
TIMESTAMP_MIN_VERSION = {
    LATEST_TIMESTAMP: 1, EARLIEST_TIMESTAMP: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL_TIMESTAMP: 8, LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}
READ_COMMITTED = 1
CONSUMER_REPLICA_ID = -1  # ListOffsets from a client
DEBUGGING_REPLICA_ID = -2  # ListOffsets that any replica may answer
LEADER_EPOCH_LIST_OFFSETS_VERSION = 4  # ListOffsets answers carry the offset's leader epoch from v4
MAX_VERSION = 0x7FFF
TOPIC_ID_VERSION = 13  # Fetch names topics by id (KIP-516)
NODE_ENDPOINTS_VERSION = 16  # Fetch answers a moved partition's leader and its endpoint (KIP-951)
CLIENT_METADATA_VERSION = 11  # Fetch carries the consumer's rack, and followers serve consumers (KIP-392)
NO_PREFERRED_REPLICA = -1  # preferred_read_replica's default: read from the node asked
UNRESOLVED = (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
LAST_MESSAGE_SET_VERSION = 3  # Fetch v0-3 read message sets of magic 0 and 1 (served only under --kafka-version)


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
    return {"partition_index": index, "error_code": error, "high_watermark": -1, "aborted_transactions": None, "records": b""}


def refused_topics(ctx: RequestContext, names: set[str], operation: int) -> set[str]:
    """The topics the principal may not read (Fetch: READ) or describe (ListOffsets, OffsetForLeaderEpoch: DESCRIBE);
    none without an authorizer."""
    if ctx.broker.authorizer is None:
        return set()
    return names - ctx.allowed_names(operation, TOPIC, names)


class FetchScope(NamedTuple):
    """What a fetch may be answered, the same for each of its partitions."""

    read_committed: bool
    any_replica: bool  # a consumer's fetch with client metadata (v11+): a follower serves it too (Kafka's FetchParams)
    client_rack: str  # the consumer's rack when the leader picks a preferred read replica for it, else ""


def fetch_scope(ctx: RequestContext, body: dict[str, Any]) -> FetchScope:
    """Kafka's FetchParams: from v11 a consumer's fetch may be served by any replica, and with the rack-aware selector
    configured its rack picks the replica (a broker's own fetch is led by the leader, without selection)."""
    consumer = replica_id(body) < 0 and ctx.api_version >= CLIENT_METADATA_VERSION
    selects = consumer and bool(ctx.broker.config.replica_selector_class)  # start-up allows Kafka's rack-aware one
    rack = (body.get("rack_id") or "") if selects else ""
    return FetchScope(body["isolation_level"] == READ_COMMITTED, consumer, rack)


def settled(answer: dict[str, Any]) -> bool:
    """A partition answer waiting cannot change (an error, or a preferred read replica to go to): the fetch is
    answered at once, as Kafka's ReplicaManager.fetchMessages answers these without delay."""
    return answer["error_code"] != NO_ERROR or answer.get("preferred_read_replica", NO_PREFERRED_REPLICA) >= 0


def read_partitions(
    ctx: RequestContext, body: dict[str, Any], parts: list[Wanted], denied: set[str],
) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the partitions of a session fetch: (their answers, bytes found, whether any partition is
    settled); the partitions of ``denied`` topics answer TOPIC_AUTHORIZATION_FAILED, those of an id no topic has
    UNKNOWN_TOPIC_ID."""
    budget = body["max_bytes"]
    total = 0
    urgent = False
    answers = []
    scope = fetch_scope(ctx, body)
    for wanted in parts:
        answer = read_wanted(ctx, wanted, denied, max(budget - total, 0), total, scope)
        if settled(answer):
            urgent = True
        total += len(answer["records"])
        answers.append(answer)
    return answers, total, urgent


def read_wanted(
    ctx: RequestContext, wanted: Wanted, denied: set[str], budget: int, total: int, scope: FetchScope,
) -> dict[str, Any]:
    """A session partition's answer: read_partition's, unless its topic is unknown, refused, or (a session's partition
    of a re-created topic) now has another id."""
    index, name = wanted.index, wanted.name
    if name is None:
        return error_partition(index, ErrorCode.UNKNOWN_TOPIC_ID)
    if denied and name in denied:
        return error_partition(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if wanted.topic_id != ZERO_UUID:
        info = ctx.broker.topic(name)
        if info is not None and info.topic_id != wanted.topic_id:  # a session's partition of a re-created topic
            return error_partition(index, ErrorCode.INCONSISTENT_TOPIC_ID)
    return read_partition(ctx, name, index, wanted.request, budget, total, scope)


def read_topics(
    ctx: RequestContext, body: dict[str, Any], names: list[str | None], denied: set[str],
) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the topics of a sessionless fetch, answered topic by topic as the request names them (``names``:
    each topic's name, None for an id no topic has): (topic responses, bytes found, whether any partition is
    settled)."""
    budget = body["max_bytes"]
    total = 0
    urgent = False
    scope = fetch_scope(ctx, body)
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    responses: list[dict[str, Any]] = []
    last = None
    for topic, name in zip(body["topics"], names):
        if name is None or (denied and name in denied):
            error = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            partitions = [error_partition(request["partition"], error) for request in topic["partitions"]]
            urgent = True
        else:
            partitions = []
            for request in topic["partitions"]:
                answer = read_partition(ctx, name, request["partition"], request, max(budget - total, 0), total, scope)
                if settled(answer):
                    urgent = True
                total += len(answer["records"])
                partitions.append(answer)
        key = topic["topic_id"] if by_id else name
        if key == last:  # a topic named twice in a row is answered once, as topic_responses groups them
            responses[-1]["partitions"] += partitions
        else:
            responses.append({"topic_id": key, "partitions": partitions} if by_id else {"topic": key, "partitions": partitions})
            last = key
    return responses, total, urgent


def read_partition(
    ctx: RequestContext, name: str, index: int, request: dict[str, Any], budget: int, total: int, scope: FetchScope,
) -> dict[str, Any]:
    """A named partition's answer: its records from ``request["fetch_offset"]`` within ``budget`` bytes (``total``:
    those already found, so only the first partition with data may exceed the limits), or why it cannot be read. A
    follower serves a consumer as the leader does, up to the high watermark (the same log: every follower is caught
    up); a leader that prefers another replica for the consumer's rack names it and returns no records."""
    partition_log, error = ctx.led_partition(name, index, request["current_leader_epoch"], not scope.any_replica)
    if partition_log is None:
        return ctx.with_current_leader(error_partition(index, error), name, index, NODE_ENDPOINTS_VERSION)
    stable = partition_log.last_stable_offset
    offset = request["fetch_offset"]
    preferred = NO_PREFERRED_REPLICA
    if scope.client_rack:
        preferred = read_replica(ctx, name, index, offset, partition_log, scope.client_rack)
    answer = {
        "partition_index": index,
        "error_code": NO_ERROR,
        "high_watermark": partition_log.log_end_offset,
        "last_stable_offset": stable,
        "log_start_offset": partition_log.log_start_offset,
        "aborted_transactions": None,
        "records": b"",
    }
    if preferred != NO_PREFERRED_REPLICA:
        answer["preferred_read_replica"] = preferred
        return answer
    limit = min(request["partition_max_bytes"], budget)
    try:
        data, end = b"", None
        if limit > 0 or total == 0:
            # Large answers are FileRegions: the connection sends them from the segment file with sendfile.
            data, end = partition_log.read_region(offset, limit, upper_offset=stable if scope.read_committed else None)
    except OffsetOutOfRangeError:
        return error_partition(index, ErrorCode.OFFSET_OUT_OF_RANGE)
    if data and total > 0 and len(data) > limit:
        data = b""  # only the first partition with data may exceed the limits (KIP-74)
    if scope.read_committed:
        answer["aborted_transactions"] = aborted_in(partition_log, offset, data, end)
    if ctx.api_version <= LAST_MESSAGE_SET_VERSION and data:
        return down_converted(ctx, answer, data, offset)
    answer["records"] = data
    return answer


def down_converted(ctx: RequestContext, answer: dict[str, Any], data: bytes | FileRegion, offset: int) -> dict[str, Any]:
    """``answer`` with the fetched batches as the message set Kafka's down-conversion sends Fetch v0-1 (magic 0) and
    v2-3 (magic 1); a first batch it cannot convert (zstd) answers UNSUPPORTED_COMPRESSION_TYPE."""
    from minibroker.protocol.message_sets import down_convert  # only for the old versions (--kafka-version)
    from minibroker.protocol.records import InvalidRecordError

    raw = data
    if isinstance(data, FileRegion):
        raw = data.read()
        data.close()
    try:
        answer["records"] = down_convert(raw, 0 if ctx.api_version <= 1 else 1, offset)
    except InvalidRecordError as exc:
        return error_partition(answer["partition_index"], ErrorCode(exc.error_code))
    return answer


def read_replica(
    ctx: RequestContext, name: str, index: int, offset: int, partition_log: PartitionLog, client_rack: str,
) -> int:
    """Kafka's ReplicaManager.findPreferredReadReplica, on the leader only: among the in-sync (live) replicas that
    hold ``offset`` (all of them or none: the log is shared), the one the rack-aware selector picks for
    ``client_rack``; NO_PREFERRED_REPLICA when it is the leader."""
    from minibroker.cluster.racks import preferred_read_replica  # only with the selector configured

    placed = ctx.broker.placements.of(name, index)
    if placed.leader != ctx.node_id:
        return NO_PREFERRED_REPLICA
    held = partition_log.log_start_offset <= offset <= partition_log.log_end_offset
    live = ctx.broker.live_nodes
    in_sync = [node for node in placed.replicas if node in live] if held else []
    return preferred_read_replica(client_rack, placed.leader, in_sync, ctx.broker.racks)


def replica_id(body: dict[str, Any]) -> int:
    """The fetching broker (-1: a consumer); v15 moved it into ReplicaState (KIP-903)."""
    state = body.get("replica_state")
    return state["replica_id"] if state else body["replica_id"]


def fetch_refusals(ctx: RequestContext, body: dict[str, Any], named: Iterable[str | None]) -> set[str]:
    """KafkaApis.handleFetchRequest: a follower (replica_id >= 0) needs CLUSTER_ACTION on the cluster, else none of
    its topics may be read; a consumer needs READ on each topic (``named``: the request's topic names, None for an id
    no topic has)."""
    if ctx.broker.authorizer is None:
        return set()
    names = {name for name in named if name is not None}
    if replica_id(body) < 0:
        return refused_topics(ctx, names, READ)
    return set() if ctx.allowed(CLUSTER_ACTION, CLUSTER, CLUSTER_NAME) else names


def requested(ctx: RequestContext, body: dict[str, Any]) -> tuple[list[Wanted], list[PartitionKey]]:
    """The request's partitions and forgotten partitions; from v13 topics are named by id (KIP-516), and an id no
    topic has stays unnamed (answered UNKNOWN_TOPIC_ID)."""
    broker = ctx.broker
    if ctx.api_version < TOPIC_ID_VERSION:
        wanted = [Wanted(ZERO_UUID, t["topic"], p["partition"], p) for t in body["topics"] for p in t["partitions"]]
        forgotten = [(t["topic"], index) for t in body["forgotten_topics_data"] for index in t["partitions"]]
        return wanted, forgotten
    wanted = []
    for topic in body["topics"]:
        name = broker.topic_name(topic["topic_id"])
        wanted += [Wanted(topic["topic_id"], name, p["partition"], p) for p in topic["partitions"]]
    forgotten = [(t["topic_id"], index) for t in body["forgotten_topics_data"] for index in t["partitions"]]
    return wanted, forgotten


def session_parts(
    ctx: RequestContext, body: dict[str, Any], wanted: list[Wanted], forgotten: list[PartitionKey],
) -> tuple[list[Wanted], FetchSession | None, ErrorCode]:
    """Kafka's FetchManager.newContext: the partitions to read, the incremental session they come from (None: a
    full or sessionless fetch), or a session error."""
    sessions = ctx.broker.fetch_sessions
    session_id, epoch = body["session_id"], body["session_epoch"]
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            sessions.remove(session_id)  # a full request closes the session it names
        return wanted, None, NO_ERROR
    session = sessions.get(session_id)
    if session is None:
        return [], None, ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    if session.epoch != epoch:
        return [], None, ErrorCode.INVALID_FETCH_SESSION_EPOCH
    if session.uses_ids != (ctx.api_version >= TOPIC_ID_VERSION):
        return [], None, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    session.update(wanted, forgotten)
    if not session.partitions:
        sessions.remove(session.id)
        return wanted, None, NO_ERROR
    sessions.touch(session)
    session.epoch = next_epoch(session.epoch)
    return session.cached(ctx.broker.topic_name), session, NO_ERROR


def topic_responses(ctx: RequestContext, parts: list[Wanted], answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers grouped by topic, consecutive partitions of a topic together (Kafka's FetchResponse.of): named by
    id from v13, by name before."""
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    responses: list[dict[str, Any]] = []
    last: tuple[bytes, str | None] | None = None
    for wanted, answer in zip(parts, answers):
        topic = (wanted.topic_id, wanted.name)
        if topic != last:
            responses.append({"topic_id": wanted.topic_id} if by_id else {"topic": wanted.name})
            responses[-1]["partitions"] = []
            last = topic
        responses[-1]["partitions"].append(answer)
    return responses


def unresolved_last(by_id: bool, responses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A sessionless answer with the partitions that could not be named or read at all moved after the others (as
    Kafka adds them), consecutive partitions of a topic grouped again as topic_responses groups them."""
    field = "topic_id" if by_id else "topic"
    flat = [(topic[field], answer) for topic in responses for answer in topic["partitions"]]
    if not any(answer["error_code"] in UNRESOLVED for _, answer in flat):
        return responses
    flat.sort(key=lambda item: item[1]["error_code"] in UNRESOLVED)
    regrouped: list[dict[str, Any]] = []
    for key, answer in flat:
        if not regrouped or regrouped[-1][field] != key:
            regrouped.append({field: key, "partitions": []})
        regrouped[-1]["partitions"].append(answer)
    return regrouped


def with_endpoints(ctx: RequestContext, answer: dict[str, Any], partitions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """KIP-951: ``answer`` with the endpoints of the nodes that lead the partitions that moved, if any did."""
    leaders = {p["current_leader"]["leader_id"] for p in partitions if "current_leader" in p}
    if leaders:
        answer["node_endpoints"] = leader_endpoints(ctx, leaders)
    return answer


@api(1, 4, 18, oldest=0)
async def fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """Sessions and topic ids as Kafka's KafkaApis.handleFetchRequest; what a partition is answered is the same
    whether it is named by id or by name, in a session or not. A fetch outside any session (session id 0, epoch -1:
    what most clients send) is read topic by topic, without a session's bookkeeping of each partition."""
    quotas = ctx.broker.quota_state
    if quotas is not None and quotas.active:
        from minibroker.quotas.charge import within_fetch_quota  # only with quotas configured

        body = within_fetch_quota(ctx, body)
    if body["session_id"] != INVALID_SESSION_ID or body["session_epoch"] != FINAL_EPOCH:
        return await session_fetch(ctx, body)
    topics = body["topics"]
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    names = [ctx.broker.topic_name(t["topic_id"]) for t in topics] if by_id else [t["topic"] for t in topics]
    deadline = time.monotonic() + max(body["max_wait_ms"], 0) / 1000
    denied = fetch_refusals(ctx, body, names)
    keys = None
    while True:
        responses, total, urgent = read_topics(ctx, body, names, denied)
        if total >= body["min_bytes"] or urgent:
            break
        if keys is None:
            keys = [(name, p["partition"]) for t, name in zip(topics, names) if name is not None for p in t["partitions"]]
        if not keys or not await ctx.broker.wait_for_append(keys, deadline - time.monotonic()):
            break
    answer = {"error_code": NO_ERROR, "session_id": INVALID_SESSION_ID, "responses": responses}
    if urgent:
        answer["responses"] = unresolved_last(by_id, responses)
        with_endpoints(ctx, answer, (p for t in responses for p in t["partitions"]))
    return answer


async def session_fetch(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """A fetch that opens, uses or closes an incremental session (Kafka's FetchManager.newContext)."""
    wanted, forgotten = requested(ctx, body)
    parts, session, error = session_parts(ctx, body, wanted, forgotten)
    if error != NO_ERROR:
        return {"error_code": error, "session_id": INVALID_SESSION_ID, "responses": []}
    deadline = time.monotonic() + max(body["max_wait_ms"], 0) / 1000
    denied = fetch_refusals(ctx, body, (wanted.name for wanted in parts))
    keys = None
    while True:
        answers, total, urgent = read_partitions(ctx, body, parts, denied)
        if total >= body["min_bytes"] or urgent:
            break
        if keys is None:
            keys = [(w.name, w.index) for w in parts if w.name is not None]
        if not keys or not await ctx.broker.wait_for_append(keys, deadline - time.monotonic()):
            break
    if urgent:  # partitions that could not be named or read at all come last, as Kafka adds them after the others
        order = sorted(range(len(parts)), key=lambda i: answers[i]["error_code"] in UNRESOLVED)
        parts, answers = [parts[i] for i in order], [answers[i] for i in order]
    if session is not None:
        kept = session.answered(parts, answers)
        parts, answers = [parts[i] for i in kept], [answers[i] for i in kept]
        session_id = session.id
    elif body["session_epoch"] == INITIAL_EPOCH:
        for wanted, answer in zip(parts, answers):
            wanted.must_respond(answer, update=True)
        uses_ids = ctx.api_version >= TOPIC_ID_VERSION
        session_id = ctx.broker.fetch_sessions.create(parts, uses_ids, privileged=replica_id(body) >= 0)
    else:
        session_id = INVALID_SESSION_ID
    answer = {"error_code": NO_ERROR, "session_id": session_id, "responses": topic_responses(ctx, parts, answers)}
    return with_endpoints(ctx, answer, answers) if urgent else answer


def list_offset(
    ctx: RequestContext, topic: str, request: dict[str, Any], isolation_level: int, denied: set[str],
) -> dict[str, Any]:
    index = request["partition_index"]
    if denied and topic in denied:
        return {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "timestamp": -1, "offset": -1}
    timestamp = request["timestamp"]
    if timestamp < 0 and ctx.api_version < TIMESTAMP_MIN_VERSION.get(timestamp, MAX_VERSION + 1):
        return {"partition_index": index, "error_code": ErrorCode.UNSUPPORTED_VERSION}
    partition_log, error = ctx.led_partition(topic, index, request["current_leader_epoch"])
    if partition_log is None:
        return {"partition_index": index, "error_code": error}
    found: tuple[int, int] | None
    leader_epoch = ctx.broker.placements.of(topic, index).leader_epoch
    if timestamp == LATEST_TIMESTAMP:
        latest = partition_log.last_stable_offset if isolation_level == READ_COMMITTED else partition_log.log_end_offset
        found = (latest, -1)
    elif timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # the epoch of the first offset (Kafka's log)
        found = (partition_log.log_start_offset, -1)
        leader_epoch = partition_log.epoch_for_offset(partition_log.log_start_offset)
    elif timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        found = None  # nothing is tiered: Kafka's UnifiedLog answers offset -1 without remote storage
    elif timestamp == MAX_TIMESTAMP:
        found = partition_log.max_timestamp_entry()
    else:
        found = partition_log.offset_for_timestamp(timestamp)
    offset, found_timestamp = found if found is not None else (-1, -1)
    answer = {"partition_index": index, "error_code": ErrorCode.NONE, "timestamp": found_timestamp, "offset": offset}
    if offset >= 0 and ctx.api_version >= LEADER_EPOCH_LIST_OFFSETS_VERSION:  # as Kafka's ReplicaManager.fetchOffset
        answer["leader_epoch"] = leader_epoch
    return answer


def legacy_list_offset(ctx: RequestContext, topic: str, request: dict[str, Any], replica: int, denied: set[str]) -> dict[str, Any]:
    """ListOffsets v0 (Kafka 3.9's handleListOffsetRequestV0): up to MaxNumOffsets segment base offsets at or before
    the timestamp, newest first; a consumer (replica id -1) sees none beyond the high watermark, which takes their
    place. Errors answer an empty offsets array."""
    index = request["partition_index"]
    if denied and topic in denied:
        return {"partition_index": index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "old_style_offsets": []}
    partition_log, error = ctx.led_partition(topic, index, require_leader=replica != DEBUGGING_REPLICA_ID)
    if partition_log is None:
        return {"partition_index": index, "error_code": error, "old_style_offsets": []}
    if request["max_num_offsets"] < 0:  # Kafka sizes an array by it, and answers the exception
        return {"partition_index": index, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "old_style_offsets": []}
    offsets = partition_log.offsets_before(request["timestamp"], request["max_num_offsets"])
    high_watermark = partition_log.log_end_offset
    if replica == CONSUMER_REPLICA_ID and any(offset > high_watermark for offset in offsets):
        offsets = [high_watermark, *(offset for offset in offsets if offset <= high_watermark)]
    return {"partition_index": index, "error_code": ErrorCode.NONE, "old_style_offsets": offsets}


@api(2, 1, 11, oldest=0)
async def list_offsets(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """v0 (served only when emulating a release before 4.0) answers offset arrays; later versions one offset."""
    denied = refused_topics(ctx, {t["name"] for t in body["topics"]}, DESCRIBE)
    if ctx.api_version == 0:
        topics = [
            {"name": t["name"], "partitions": [
                legacy_list_offset(ctx, t["name"], p, body["replica_id"], denied) for p in t["partitions"]
            ]}
            for t in body["topics"]
        ]
        topics.sort(key=lambda topic: bool(denied) and topic["name"] in denied)  # Kafka: authorized topics first
        return {"topics": topics}
    topics = [
        {"name": t["name"], "partitions": [list_offset(ctx, t["name"], p, body["isolation_level"], denied) for p in t["partitions"]]}
        for t in body["topics"]
    ]
    return {"topics": topics}


@api(23, 2, 4, oldest=0)
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
