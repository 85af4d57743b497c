"""What a test asserts on, read from the broker as its clients would see it: a partition's records and offsets, a
group as its coordinator describes it with its committed offsets, a transactional id's state, and waits for a
condition. The control API serves them to any language; ``minibroker.testing.Broker`` to Python tests."""

from __future__ import annotations

import asyncio
import time
from itertools import islice
from typing import TYPE_CHECKING, Any

from minibroker.cluster.internal_topics import read_batches, replay
from minibroker.cluster.placements import NO_LEADER
from minibroker.control.batch_views import batch_fields, json_ready, record_fields
from minibroker.protocol.records import BatchHeader, Record, iter_records
from minibroker.storage.topic_names import TRANSACTION_STATE_TOPIC
from minibroker.storage.uuid import uuid_to_str

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.groups.coordinator import GroupCoordinator
    from minibroker.storage.partition_log import PartitionLog

POLL_S = 0.01
TIMELINE_ENTRIES = 200


class NoCoordinator(Exception):
    """The group's __consumer_offsets partition has no leader (its replicas are all stopped)."""


def partition_log(broker: Broker, topic: str, partition: int | str) -> PartitionLog:
    found = broker.partition(topic, int(partition)) if str(partition).isdigit() else None
    if found is None:
        raise LookupError(f"no partition {partition} of topic {topic!r}")
    return found


def partition_records(
    broker: Broker, topic: str, partition: int | str, offset: int = 0, limit: int = 100, *,
    timestamp: int | None = None, value_bytes: int | None = None,
) -> dict[str, Any]:
    """The partition's offsets and its batches from ``offset`` (or from the first record at or after ``timestamp``),
    at most ``limit`` records, as ``minibroker dump --json`` shows them (keys, values and headers as UTF-8 text or
    base64; control records flagged), each batch flagged ``aborted`` when it belongs to an aborted transaction.
    ``value_bytes`` cuts longer values (``value_truncated``); ``next_offset`` is where the next page starts."""
    log = partition_log(broker, topic, partition)
    if timestamp is not None:
        found = log.offset_for_timestamp(timestamp)
        offset = found[0] if found is not None else log.log_end_offset
    offset = max(offset, log.log_start_offset)
    batches: list[dict[str, Any]] = []
    count, next_offset = 0, offset
    for data, header in read_batches(log, offset) if limit > 0 else ():
        batch = batch_fields(data, header)
        wanted = limit - count
        records = list(islice(iter_records(data, header, offset), wanted))
        batch["records"] = [shown_record(header, r, value_bytes) for r in records]
        batches.append(batch)
        count += len(records)
        next_offset = records[-1].offset + 1 if len(records) == wanted else header.last_offset + 1
        if count >= limit:
            break
    mark_aborted(log, batches, offset, next_offset)
    return json_ready({
        "log_start_offset": log.log_start_offset, "high_watermark": log.log_end_offset,
        "last_stable_offset": log.last_stable_offset, "next_offset": next_offset, "batches": batches,
    })


def shown_record(header: BatchHeader, record: Record, value_bytes: int | None) -> dict[str, Any]:
    fields = record_fields(header, record, None)
    value = fields["value"]
    fields["value_truncated"] = value_bytes is not None and value is not None and len(value) > value_bytes
    if fields["value_truncated"]:
        fields["value"] = utf8_prefix(value, value_bytes)
    return fields


def utf8_prefix(value: bytes, size: int) -> bytes:
    """The first ``size`` bytes, ending on a character boundary when the value is UTF-8 text (so it stays text)."""
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return value[:size]
    return value[:size].decode("utf-8", "ignore").encode("utf-8")


def mark_aborted(log: PartitionLog, batches: list[dict[str, Any]], start: int, end: int) -> None:
    """Flag the data batches of aborted transactions: a transactional batch of a producer between the first offset of
    one of its aborted transactions and that transaction's ABORT marker."""
    aborted = log.aborted_entries(start, end) if batches else []
    for batch in batches:
        batch["aborted"] = not batch["isControl"] and batch["isTransactional"] and any(
            entry.producer_id == batch["producerId"] and entry.first_offset <= batch["baseOffset"] < entry.last_offset
            for entry in aborted
        )


def group_coordinator(broker: Broker, group_id: str) -> tuple[int, GroupCoordinator]:
    node = broker.groups.coordinator_node(group_id)
    if node == NO_LEADER:
        raise NoCoordinator(f"group {group_id!r} has no coordinator: its __consumer_offsets partition has no leader")
    return node, broker.groups.coordinator_of(node)


def group_view(broker: Broker, group_id: str) -> dict[str, Any]:
    """The group as its coordinator answers ConsumerGroupDescribe (a consumer group) or DescribeGroups (classic)
    (``group``), and its committed offsets as OffsetFetch answers them (``offsets``); with the same for either
    protocol: its state, members and their assignments, and the lag of each committed partition."""
    node, coordinator = group_coordinator(broker, group_id)
    if group_id in coordinator.share.groups:
        return share_group_view(broker, node, coordinator, group_id)
    consumer = coordinator.consumer_describe(group_id)
    is_consumer = consumer["error_code"] == 0
    described = consumer if is_consumer else coordinator.describe_group(group_id)
    offsets = coordinator.fetch_offsets(group_id, None)
    members = [consumer_member(m) for m in described["members"]] if is_consumer else [
        classic_member(m) for m in described["members"]]
    return json_ready({
        "group_id": group_id, "coordinator": node, "protocol": "consumer" if is_consumer else "classic",
        "state": described["group_state"], "members": members, "lag": lag(broker, offsets),
        "group": described, "offsets": offsets,
    })


def share_group_view(broker: Broker, node: int, coordinator: GroupCoordinator, group_id: str) -> dict[str, Any]:
    """A share group as ShareGroupDescribe answers it (``group``) and its share partitions as their leaders hold them
    (``partitions``: start and end offsets, lag, and the in-flight records as ranges of one state, delivery count,
    owning member and lock deadline on the broker's clock); ``lag`` has the same rows as the other protocols', with
    the share-partition start offset where they have the committed offset."""
    described = coordinator.share.describe(group_id)
    partitions = [{**p, "topic_id": uuid_to_str(p["topic_id"])} for p in broker.share_partitions.describe(group_id)]
    return json_ready({
        "group_id": group_id, "coordinator": node, "protocol": "share", "state": described["group_state"],
        "members": [consumer_member({**m, "instance_id": None}) for m in described["members"]],
        "lag": [share_lag(broker, p) for p in partitions], "group": described, "partitions": partitions,
    })


def share_lag(broker: Broker, described: dict[str, Any]) -> dict[str, Any]:
    found = broker.partition(described["topic"], described["partition"]) if described["topic"] else None
    return {
        "topic": described["topic"], "partition": described["partition"], "committed": described["start_offset"],
        "high_watermark": found.log_end_offset if found is not None else None, "lag": described["lag"],
    }


def consumer_member(member: dict[str, Any]) -> dict[str, Any]:
    return {
        "member_id": member["member_id"], "group_instance_id": member["instance_id"], "client_id": member["client_id"],
        "client_host": member["client_host"],
        "assignment": [{"topic": t["topic_name"], "partitions": t["partitions"]}
                       for t in member["assignment"]["topic_partitions"]],
    }


def classic_member(member: dict[str, Any]) -> dict[str, Any]:
    """A classic member; its assignment decoded when it is the consumer protocol's (else shown as none)."""
    from minibroker.groups.classic_members import decode_assignment
    from minibroker.protocol.primitives import ProtocolError

    try:
        assigned = decode_assignment(member["member_assignment"])
    except (ProtocolError, ValueError):
        assigned = {}
    return {
        "member_id": member["member_id"], "group_instance_id": member["group_instance_id"],
        "client_id": member["client_id"], "client_host": member["client_host"],
        "assignment": [{"topic": topic, "partitions": sorted(parts)} for topic, parts in sorted(assigned.items())],
    }


def lag(broker: Broker, offsets: dict[str, Any]) -> list[dict[str, Any]]:
    """Per committed partition: the committed offset, the high watermark and the lag (None without a commit)."""
    rows = []
    for topic in offsets["topics"]:
        for answer in topic["partitions"]:
            found = broker.partition(topic["name"], answer["partition_index"])
            committed = answer["committed_offset"]
            high_watermark = found.log_end_offset if found is not None else None
            rows.append({
                "topic": topic["name"], "partition": answer["partition_index"], "committed": committed,
                "high_watermark": high_watermark,
                "lag": max(high_watermark - committed, 0) if high_watermark is not None and committed >= 0 else None,
            })
    return rows


def group_state(broker: Broker, group_id: str) -> str:
    try:
        return group_view(broker, group_id)["group"]["group_state"]
    except NoCoordinator:
        return ""


def transaction_view(broker: Broker, transactional_id: str) -> dict[str, Any]:
    """A transactional id's state, producer and partitions, and its history: one ``timeline`` entry per record of it
    in ``__transaction_state`` (begin, partitions added, prepare and complete), the newest TIMELINE_ENTRIES."""
    owner = broker.transactions.owner_of(transactional_id)
    txn = owner.transactions.get(transactional_id) if owner is not None else None
    if txn is None:
        raise LookupError(f"no transactional id {transactional_id!r}")
    return {
        "transactional_id": txn.transactional_id, "state": txn.state.kafka_name, "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch, "timeout_ms": txn.timeout_ms, "start_ms": txn.start_ms,
        "partitions": sorted([topic, partition] for topic, partition in txn.partitions),
        "timeline": transaction_timeline(broker, transactional_id),
    }


def transaction_timeline(broker: Broker, transactional_id: str) -> list[dict[str, Any]]:
    from minibroker.protocol.txn_log_records import decode_key, decode_value
    from minibroker.transactions.metadata import TxnState

    log = broker.partition(TRANSACTION_STATE_TOPIC, broker.transactions.partition_for(transactional_id))
    timeline: list[dict[str, Any]] = []
    for header, record in replay(log) if log is not None else ():
        if header.is_control or record.key is None or decode_key(record.key) != transactional_id:
            continue
        value = decode_value(record.value)
        if value is None:
            continue
        timeline.append({
            "offset": record.offset, "time_ms": value.last_update_ms, "state": TxnState(value.status).kafka_name,
            "producer_id": value.producer_id, "producer_epoch": value.producer_epoch,
            "partitions": sorted([topic, p] for topic, parts in value.partitions.items() for p in parts),
        })
    return timeline[-TIMELINE_ENTRIES:]


async def wait_for(
    broker: Broker, timeout_ms: int, *, group_stable: str | None = None,
    high_watermark: tuple[str, int, int] | None = None,
) -> str:
    """Wait until the group is Stable or the partition's high watermark reaches the number given; returns what was
    waited for; TimeoutError after ``timeout_ms`` (real time)."""
    if group_stable is not None:
        what = f"group {group_stable} stable"

        def condition() -> bool:
            return group_state(broker, group_stable) == "Stable"
    elif high_watermark is not None:
        topic, partition, at_least = high_watermark
        log = partition_log(broker, topic, partition)
        what = f"{topic}-{partition} high watermark at least {at_least}"

        def condition() -> bool:
            return log.log_end_offset >= at_least
    else:
        raise ValueError("wait for group_stable or high_watermark")
    deadline = time.monotonic() + timeout_ms / 1000
    while not condition():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_ms} ms waiting for {what}")
        await asyncio.sleep(POLL_S)
    return what
