"""What a test asserts on, read from the broker as its clients would see it: a partition's records and offsets, a
group as its coordinator describes it with its committed offsets, a transactional id's state, and waits for a
condition. The control API serves them to any language; ``minibroker.testing.Broker`` to Python tests."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from minibroker.cluster import NO_LEADER
from minibroker.dump import batch_fields, json_ready, record_fields
from minibroker.internal_topics import read_batches
from minibroker.protocol.records import decode_batch

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.groups.coordinator import GroupCoordinator
    from minibroker.storage.partition_log import PartitionLog

POLL_S = 0.01


class NoCoordinator(Exception):
    """The group's __consumer_offsets partition has no leader (its replicas are all stopped)."""


def partition_log(broker: Broker, topic: str, partition: int | str) -> PartitionLog:
    found = broker.partition(topic, int(partition)) if str(partition).isdigit() else None
    if found is None:
        raise LookupError(f"no partition {partition} of topic {topic!r}")
    return found


def partition_records(broker: Broker, topic: str, partition: int | str, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """The partition's offsets and its batches from ``offset``, at most ``limit`` records, as ``minibroker dump
    --json`` shows them (keys, values and headers as UTF-8 text or base64; control records flagged)."""
    log = partition_log(broker, topic, partition)
    offset = max(offset, log.log_start_offset)
    batches: list[dict[str, Any]] = []
    count = 0
    for data, header in read_batches(log, offset) if limit > 0 else ():
        batch = batch_fields(data, header)
        batch["records"] = [record_fields(header, r, None) for r in decode_batch(data, header) if r.offset >= offset]
        batches.append(batch)
        count += len(batch["records"])
        if count >= limit:
            break
    return json_ready({
        "log_start_offset": log.log_start_offset, "high_watermark": log.log_end_offset,
        "last_stable_offset": log.last_stable_offset, "batches": batches,
    })


def group_coordinator(broker: Broker, group_id: str) -> tuple[int, GroupCoordinator]:
    node = broker.groups.coordinator_node(group_id)
    if node == NO_LEADER:
        raise NoCoordinator(f"group {group_id!r} has no coordinator: its __consumer_offsets partition has no leader")
    return node, broker.groups.coordinator_of(node)


def group_view(broker: Broker, group_id: str) -> dict[str, Any]:
    """The group as its coordinator answers ConsumerGroupDescribe (a consumer group) or DescribeGroups (classic), and
    its committed offsets as OffsetFetch answers them."""
    node, coordinator = group_coordinator(broker, group_id)
    consumer = coordinator.consumer_describe(group_id)
    described = consumer if consumer["error_code"] == 0 else coordinator.describe_group(group_id)
    return json_ready({"coordinator": node, "group": described, "offsets": coordinator.fetch_offsets(group_id, None)})


def group_state(broker: Broker, group_id: str) -> str:
    try:
        return group_view(broker, group_id)["group"]["group_state"]
    except NoCoordinator:
        return ""


def transaction_view(broker: Broker, transactional_id: str) -> dict[str, Any]:
    owner = broker.transactions.owner_of(transactional_id)
    txn = owner.transactions.get(transactional_id) if owner is not None else None
    if txn is None:
        raise LookupError(f"no transactional id {transactional_id!r}")
    return {
        "transactional_id": txn.transactional_id, "state": txn.state.kafka_name, "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch, "timeout_ms": txn.timeout_ms, "start_ms": txn.start_ms,
        "partitions": sorted([topic, partition] for topic, partition in txn.partitions),
    }


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
