"""The broker's own topics (``__consumer_offsets``, ``__transaction_state``): create, append, replay.

Coordinators keep their state as keyed records in compacted internal topics, as Kafka does; this
module is the one path they use to write such records and to read them back at start-up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterator, Sequence

from protocol.records import BatchHeader, Record, RecordInput, build_batch, decode_batch, iter_batches, parse_header
from storage.log_manager import TopicInfo
from storage.partition_log import AppendInfo, PartitionLog
from storage.producer_state import AppendOrigin

if TYPE_CHECKING:
    from minibroker.broker import Broker

log = logging.getLogger(__name__)

INTERNAL_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024), "compression.type": "producer"}
REPLAY_CHUNK = 1 << 20


def ensure_internal_topic(broker: Broker, name: str, partitions: int) -> TopicInfo:
    """The internal topic ``name``, created (compacted) on first use."""
    info = broker.topic(name)
    if info is None:
        info = broker.logs.create_topic(name, partitions, dict(INTERNAL_TOPIC_CONFIGS))
        log.info("created internal topic %s with %d partitions", name, partitions)
    return info


def append_records(
    broker: Broker, topic: str, partition: int, records: Sequence[tuple[bytes, bytes | None]], **batch_options: int | bool
) -> AppendInfo:
    """Append ``(key, value)`` records as one batch (``batch_options`` go to ``build_batch``)."""
    partition_log = broker.partition(topic, partition)
    if partition_log is None:
        raise LookupError(f"no partition {topic}-{partition}")
    batch = bytearray(build_batch([RecordInput(key, value) for key, value in records], **batch_options))
    info = partition_log.append(batch, [parse_header(batch)], origin=AppendOrigin.COORDINATOR)
    broker.notify_append((topic, partition))
    return info


def replay(partition_log: PartitionLog) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of a partition in offset order, with the header of its batch (control batches included)."""
    offset = partition_log.log_start_offset
    while offset < partition_log.log_end_offset:
        data = partition_log.read(offset, REPLAY_CHUNK)
        if not data:
            break
        for header in iter_batches(data):
            if header.last_offset < offset:
                continue
            for record in decode_batch(data, header):
                if record.offset >= offset:
                    yield header, record
            offset = header.last_offset + 1
