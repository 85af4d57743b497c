"""Produce: validate each partition's batches (header and CRC only) and append them as they came."""

from __future__ import annotations

import logging
from typing import Any

from minibroker.acls.model import TRANSACTIONAL_ID_DENIED
from minibroker.acls.operations import TOPIC, TRANSACTIONAL_ID, WRITE
from minibroker.cluster.replicas import insync_problem
from minibroker.handlers.metadata import leader_endpoints
from minibroker.handlers.registry import api
from minibroker.protocol.compression import ZSTD
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.records import (
    BATCH_HEADER_SIZE,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
    InvalidRecordError,
    Record,
    decode_batch,
    parse_header,
    recompress_batch,
    validate_batches,
)
from minibroker.server.context import RequestContext
from minibroker.storage.config import LONG_MAX, LogConfig
from minibroker.storage.errors import ProducerStateError
from minibroker.storage.partition_log import PartitionLog
from minibroker.storage.topic_names import is_internal
from minibroker.transactions.produce_adds import FIRST_PRODUCE_ADDING_PARTITIONS, add_produced_partitions

log = logging.getLogger(__name__)

ZSTD_MIN_PRODUCE_VERSION = 7
TOPIC_ID_VERSION = 13  # Produce names topics by id (KIP-516)
ADMIN_CLIENT_ID = "__admin_client"  # Kafka lets only this client id append to internal topics
NODE_ENDPOINTS_VERSION = 10  # Produce answers a moved partition's leader and its endpoint (KIP-951)
NO_RECORD_ERRORS = ()  # the answer's RecordErrors when no single record was refused
LAST_MESSAGE_SET_VERSION = 2  # Produce v0-2 may carry message sets of magic 0 and 1 (served only under --kafka-version)


def partition_error(index: int, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"index": index, "error_code": error, "base_offset": -1, "record_errors": NO_RECORD_ERRORS, "error_message": message}


def append_partition(
    ctx: RequestContext, topic: str, index: int, records: memoryview | None, acks: int,
    flush: list[tuple[PartitionLog, dict[str, Any]]],
) -> dict[str, Any]:
    broker = ctx.broker
    if is_internal(topic) and ctx.client_id != ADMIN_CLIENT_ID:  # coordinators own these (ReplicaManager's check)
        return partition_error(index, ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
    partition_log, error = ctx.led_partition(topic, index)
    if partition_log is None:
        return ctx.with_current_leader(partition_error(index, error), topic, index, NODE_ENDPOINTS_VERSION)
    config = partition_log.config
    placed = broker.placements.of(topic, index)
    in_sync = sum(1 for node in placed.replicas if node in broker.live_nodes)
    too_few = insync_problem(config.min_insync_replicas, in_sync, topic, index) if acks == -1 else None
    if too_few is not None:  # Partition.appendRecordsToLeader's check, before the batch is looked at
        return partition_error(index, ErrorCode.NOT_ENOUGH_REPLICAS, too_few)
    if ctx.api_version <= LAST_MESSAGE_SET_VERSION and records is not None and not is_record_batch(records):
        records, answer = from_message_set(ctx, topic, index, records, partition_log)
        if answer is not None:
            return answer
    try:
        headers = validate_batches(records if records is not None else b"")
    except InvalidRecordError as exc:
        return rejected(ctx, topic, index, partition_error(index, ErrorCode(exc.error_code), str(exc)))
    if len(headers) != 1:
        return partition_error(index, ErrorCode.INVALID_RECORD, "a Produce request carries exactly one batch per partition")
    if headers[0].compression == ZSTD and ctx.api_version < ZSTD_MIN_PRODUCE_VERSION:
        return partition_error(index, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
    too_large = oversized(index, headers[0], config.max_message_bytes)
    if too_large is not None:
        return too_large
    codec = config.stored_codec
    if codec is not None and codec != headers[0].compression:
        try:
            records, header = recompress_batch(records, headers[0], codec)
        except InvalidRecordError as exc:
            return rejected(ctx, topic, index, partition_error(index, ErrorCode(exc.error_code), str(exc)))
        headers = [header]
        too_large = oversized(index, header, config.max_message_bytes)
        if too_large is not None:
            return too_large
    now = broker.clock()
    before, after = config.timestamp_bounds  # the records are decoded only when one may be refused
    check_times = (headers[0].max_timestamp > now + after or before < LONG_MAX) and not config.log_append_time
    if check_times or config.compact or headers[0].attributes & TIMESTAMP_TYPE_FLAG:
        refused = refused_records(records, headers[0], config, now, check_times, topic, index)
        if refused is not None:
            return rejected(ctx, topic, index, refused)
    try:
        info = partition_log.append(records, headers, leader_epoch=placed.leader_epoch)
    except ProducerStateError as exc:
        log.info("refused batch for %s-%d from %s: %s", topic, index, ctx.peer, exc)
        return partition_error(index, ErrorCode(exc.error_code), str(exc))
    except OSError as exc:
        log.error("append to %s-%d failed: %s", topic, index, exc)
        return partition_error(index, ErrorCode.KAFKA_STORAGE_ERROR, str(exc))
    if not info.duplicate:
        broker.notify_append((topic, index))
    response = {
        "index": index,
        "error_code": NO_ERROR,
        "base_offset": info.base_offset,
        "log_append_time_ms": info.log_append_time_ms,
        "log_start_offset": info.log_start_offset,
        "record_errors": NO_RECORD_ERRORS,
    }
    if partition_log.needs_flush(now):
        flush.append((partition_log, response))
    return response


def is_record_batch(records: memoryview) -> bool:
    """Whether a Produce v0-2 partition's records start with a V2 batch (Kafka let those versions carry one) rather
    than a message set of magic 0 or 1."""
    return len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] == MAGIC_V2


def from_message_set(
    ctx: RequestContext, topic: str, index: int, records: memoryview, partition_log: PartitionLog,
) -> tuple[bytearray, dict[str, Any] | None]:
    """A message set of magic 0 or 1 (Produce v0-2) as the V2 batch Kafka's LogValidator converts it to, in the
    producer's codec (the V2 path then applies the topic's, after the zstd check that concerns only what the client
    sent), or the partition's answer instead: a refusal, or (no complete message in it) nothing appended and no
    offset, as Kafka."""
    from minibroker.protocol.message_sets import to_record_batch  # only for the old versions (--kafka-version)

    config = partition_log.config
    try:
        batch = to_record_batch(records, config.max_message_bytes)
    except InvalidRecordError as exc:
        return bytearray(), rejected(ctx, topic, index, partition_error(index, ErrorCode(exc.error_code), str(exc)))
    if batch is None:
        answer = {"index": index, "error_code": NO_ERROR, "base_offset": -1, "log_append_time_ms": -1,
                  "log_start_offset": partition_log.log_start_offset, "record_errors": NO_RECORD_ERRORS}
        return bytearray(), answer
    return batch, None


def rejected(ctx: RequestContext, topic: str, index: int, answer: dict[str, Any]) -> dict[str, Any]:
    """A partition answer refusing a batch whose bytes are wrong, logged once with its reason."""
    log.info("rejected batch for %s-%d from %s: %s", topic, index, ctx.peer, answer["error_message"])
    return answer


def oversized(index: int, header: BatchHeader, limit: int) -> dict[str, Any] | None:
    if header.size <= limit:
        return None
    return partition_error(index, ErrorCode.MESSAGE_TOO_LARGE, f"batch of {header.size} bytes exceeds max.message.bytes {limit}")


def refused_records(
    records: memoryview, header: BatchHeader, config: LogConfig, now: int, check_times: bool, topic: str, index: int,
) -> dict[str, Any] | None:
    """Kafka's LogValidator.validateRecord: a record without a key on a compacted topic (validateKey), else
    (validateTimestamp) on a CreateTime topic a timestamp further than message.timestamp.before.max.ms before the
    broker's clock ``now`` or message.timestamp.after.max.ms after it (``check_times``: this batch may cross them),
    and otherwise a batch the client marked LogAppendTime. The caller asks only when a record may fail: on a
    compacted topic, a batch marked LogAppendTime, or when the batch's max timestamp or a before bound could be out
    of range (not with the defaults and a timestamp within an hour from now), so other batches are never decoded. A
    batch that does not decode is refused as Kafka would."""
    before, after = config.timestamp_bounds
    try:
        decoded = decode_batch(records, header)
    except InvalidRecordError as exc:
        return partition_error(index, ErrorCode(exc.error_code), str(exc))
    keyless = f"Compacted topic cannot accept message without key in topic partition {topic}-{index}."
    errors, bad_time = [], False
    for position, record in enumerate(decoded):
        if config.compact and record.key is None:
            problem = keyless
        else:
            problem = timestamp_problem(record, header, config.log_append_time, check_times, now - before, now + after)
            bad_time = bad_time or problem is not None
        if problem is not None:
            errors.append({"batch_index": position, "batch_index_error_message": problem})
    if not errors:
        return None
    if bad_time:  # LogValidator.processRecordErrors: one timestamp refused names the whole batch's error
        response = partition_error(
            index, ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp")
    else:
        shown = ", ".join(f"RecordError(batchIndex={e['batch_index']}, message='{keyless}')" for e in errors[:3])
        response = partition_error(
            index, ErrorCode.INVALID_RECORD,
            f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing "
            f"the first three errors at most: [{shown}]",
        )
    response["record_errors"] = errors
    return response


def timestamp_problem(
    record: Record, header: BatchHeader, log_append_time: bool, check_times: bool, earliest: int, latest: int,
) -> str | None:
    """LogValidator.validateTimestamp: on a CreateTime topic a record timestamped outside [earliest, latest] (looked
    at only with ``check_times``); otherwise a batch the client marked LogAppendTime, which only the broker sets."""
    if record.timestamp != NO_TIMESTAMP and not log_append_time:
        if check_times and not earliest <= record.timestamp <= latest:
            return (f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. The "
                    f"timestamp should be within [{earliest}, {latest}]")
        return None
    if header.attributes & TIMESTAMP_TYPE_FLAG:
        return (f"Invalid timestamp type in message {record_text(record)}. Producer should not set timestamp type to "
                "LogAppendTime.")
    return None


def record_text(record: Record) -> str:
    """A record as Kafka's DefaultRecord.toString shows it in messages."""
    key = len(record.key) if record.key is not None else 0
    value = len(record.value) if record.value is not None else 0
    return f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, key={key} bytes, value={value} bytes)"


def has_transactional_records(body: dict[str, Any]) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: some partition's first batch is transactional."""
    for topic in body["topic_data"]:
        for partition in topic["partition_data"]:
            records = partition["records"]
            if records is None or len(records) < BATCH_HEADER_SIZE:
                continue
            header = parse_header(records)
            if header.magic == MAGIC_V2 and header.is_transactional:  # message sets (v0-2) are never transactional
                return True
    return False


def refused_topics(ctx: RequestContext, body: dict[str, Any], names: list[str | None]) -> set[str] | None:
    """With the authorizer on, as KafkaApis.handleProduceRequest: None when transactional records come without WRITE on
    their transactional id (the whole request is refused), else the topics the principal may not WRITE."""
    if has_transactional_records(body):
        transactional_id = body["transactional_id"]
        if transactional_id is None or not ctx.allowed(WRITE, TRANSACTIONAL_ID, transactional_id):
            return None
    known = {name for name in names if name is not None}
    return known - ctx.allowed_names(WRITE, TOPIC, known)


@api(0, 3, 13, oldest=0)
async def produce(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any] | None:
    acks = body["acks"]
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    # Each topic's name: from v13 it is named by id (KIP-516), and an id no topic has (a deleted topic's, even if one
    # of its name was made again) has none, answered UNKNOWN_TOPIC_ID.
    topics = body["topic_data"]
    names = [ctx.broker.topic_name(t["topic_id"]) for t in topics] if by_id else [t["name"] for t in topics]
    denied: set[str] = set()
    if ctx.broker.authorizer is not None:
        refused = refused_topics(ctx, body, names)
        if refused is None:
            from minibroker.protocol.error_responses import error_response

            answer = error_response(0, ctx.api_version, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_DENIED)
            return None if acks == 0 else answer
        denied = refused
    flush: list[tuple[PartitionLog, dict[str, Any]]] = []
    responses = []
    not_added = {}
    if ctx.api_version >= FIRST_PRODUCE_ADDING_PARTITIONS and acks in (-1, 0, 1):
        not_added = await add_produced_partitions(ctx, body, names, denied)  # transactions V2: no AddPartitionsToTxn
    for topic, name in zip(body["topic_data"], names):
        if name is None:
            results = [partition_error(p["index"], ErrorCode.UNKNOWN_TOPIC_ID) for p in topic["partition_data"]]
        elif denied and name in denied:
            results = [partition_error(p["index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic["partition_data"]]
        elif acks not in (-1, 0, 1):
            results = [partition_error(p["index"], ErrorCode.INVALID_REQUIRED_ACKS) for p in topic["partition_data"]]
        elif not_added:
            results = [
                partition_error(p["index"], *not_added[(name, p["index"])]) if (name, p["index"]) in not_added
                else append_partition(ctx, name, p["index"], p["records"], acks, flush)
                for p in topic["partition_data"]
            ]
        else:
            results = [append_partition(ctx, name, p["index"], p["records"], acks, flush) for p in topic["partition_data"]]
        if by_id:
            responses.append({"topic_id": topic["topic_id"], "partition_responses": results})
        else:
            responses.append({"name": name, "partition_responses": results})
    for partition_log, response in flush:
        try:
            await ctx.broker.flush_log(partition_log)
        except OSError as exc:
            log.error("fsync of %s failed: %s", partition_log.directory, exc)
            response.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, error_message=f"fsync failed: {exc}")
    if acks == 0:
        return None
    leaders = {
        p["current_leader"]["leader_id"] for t in responses for p in t["partition_responses"] if "current_leader" in p
    }
    endpoints = leader_endpoints(ctx, leaders) if leaders else []  # KIP-951
    return {"responses": responses, "node_endpoints": endpoints}
