"""Writing COMMIT/ABORT markers: one path for the coordinator and for WriteTxnMarkers requests."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.storage.errors import StorageError

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.cluster.internal_topics import PendingFlushes

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def write_markers(
    broker: Broker, producer_id: int, producer_epoch: int, coordinator_epoch: int, committed: bool,
    partitions: Iterable[TopicPartition], flushes: PendingFlushes,
) -> dict[TopicPartition, ErrorCode]:
    """Append one control batch per partition; listeners (the group coordinator) learn of each marker, and
    ``flushes`` of the partitions the flush policy wants fsynced before the caller answers."""
    results: dict[TopicPartition, ErrorCode] = {}
    for topic, partition in partitions:
        partition_log = broker.partition(topic, partition)
        if partition_log is None:
            results[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        try:
            partition_log.append_control(
                commit=committed, producer_id=producer_id, producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch,
                leader_epoch=broker.placements.of(topic, partition).leader_epoch,
            )
        except StorageError as exc:
            results[(topic, partition)] = ErrorCode(getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
            log.warning("marker for producer %d not written to %s-%d: %s", producer_id, topic, partition, exc)
            continue
        except OSError as exc:
            results[(topic, partition)] = ErrorCode.KAFKA_STORAGE_ERROR
            log.error("marker for producer %d not written to %s-%d: %s", producer_id, topic, partition, exc)
            continue
        broker.notify_append((topic, partition))
        flushes.note(partition_log)
        for listener in broker.marker_listeners:
            listener(topic, partition, producer_id, committed)
        results[(topic, partition)] = NO_ERROR
    return results
