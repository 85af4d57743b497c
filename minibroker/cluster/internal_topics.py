"""The broker's own topics (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``): create, append,
replay.

Coordinators keep their state as keyed records in compacted internal topics, as Kafka does; ``InternalTopic`` is
the one path they use to write such records, ``replay`` the one they use to read them back at start-up.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterator, Sequence

from minibroker.cluster.replicas import replication_problem
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import (
    BatchHeader,
    Record,
    decode_batch,
    iter_batches,
    new_batch,
    parse_header,
)
from minibroker.storage.errors import StorageError
from minibroker.storage.log_manager import TopicInfo
from minibroker.storage.partition_log import AppendInfo, PartitionLog
from minibroker.storage.producer_state import AppendOrigin
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC

if TYPE_CHECKING:
    from minibroker.broker import Broker

log = logging.getLogger(__name__)

INTERNAL_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024), "compression.type": "producer"}
MIN_SEGMENT_BYTES = 1024 * 1024  # segment.bytes' minimum (Kafka 4)
REPLAY_CHUNK = 1 << 20


class PendingFlushes:
    """Partitions a coordinator appended to whose flush policy (flush.messages, flush.ms) says they are due.

    Coordinators append synchronously on the event loop (their memory must match the log at every step), so they
    cannot fsync there; the request handler awaits ``flush`` before answering, as Produce does.
    """

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._due: set[PartitionLog] = set()

    def note(self, partition_log: PartitionLog) -> None:
        if partition_log.needs_flush(self.broker.clock()):
            self._due.add(partition_log)

    async def flush(self) -> None:
        while self._due:
            await self.broker.flush_log(self._due.pop())


class InternalTopic:
    """One internal topic as its coordinator writes it: created (compacted) on first use, one batch per append."""

    def __init__(
        self, broker: Broker, name: str, configured_partitions: int, replication_factor: int, flushes: PendingFlushes
    ) -> None:
        self.broker = broker
        self.name = name
        self.configured_partitions = configured_partitions
        self.replication_factor = replication_factor
        self.flushes = flushes

    @property
    def num_partitions(self) -> int:
        """The existing topic's partition count wins over the setting, as in Kafka."""
        info = self.broker.topic(self.name)
        return len(info.partitions) if info is not None else self.configured_partitions

    async def create(self) -> TopicInfo:
        """The topic, created (as CreateTopics does: partitions made off the event loop) unless it exists or is being
        created; raises StorageError when it cannot be made."""
        info = await self.broker.topic_created(self.name)
        if info is None:
            self._check_replication_factor()
            error, message = await self.broker.create_topic(
                self.name, self.configured_partitions, internal_topic_configs(self.broker, self.name),
                replication_factor=self.replication_factor,
            )
            if error == ErrorCode.NONE:  # the broker logged the creation
                log.debug("created internal topic %s with %d partitions", self.name, self.configured_partitions)
            info = await self.broker.topic_created(self.name)
        if info is None:
            log.warning("internal topic %s could not be created: %s %s", self.name, error.name, message)
            raise StorageError(f"internal topic {self.name} could not be created: {message}")
        return info

    def ensure(self) -> TopicInfo:
        """The topic, created on the spot if need be (coordinator writes are synchronous; requests that lead to
        them create the topic with ``create`` first, so this is a fallback)."""
        info = self.broker.topic(self.name)
        if info is None:
            self._check_replication_factor()
            info = self.broker.logs.create_topic(
                self.name, self.configured_partitions, internal_topic_configs(self.broker, self.name)
            )
            placements = self.broker.placements
            placements.put(
                self.name, placements.assign(self.configured_partitions, self.replication_factor, self.broker.live_nodes),
            )
            self.broker.leaders_changed(self.name)
            log.info("created internal topic %s with %d partitions", self.name, self.configured_partitions)
        return info

    def _check_replication_factor(self) -> None:
        """A replication factor the live brokers cannot reach leaves the topic uncreated, as in Kafka: its
        coordinator is then not available (offsets.topic.replication.factor, transaction.state.log.replication.factor)."""
        problem = replication_problem(self.replication_factor, len(self.broker.live_nodes))
        if problem is not None:
            log.warning("internal topic %s not created: %s", self.name, problem)
            raise StorageError(f"internal topic {self.name} could not be created: {problem}")

    def append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]], **batch_options: int | bool
    ) -> AppendInfo:
        """Append ``(key, value)`` records as one batch (``batch_options`` go to ``new_batch``); raises LookupError
        for a partition that does not exist, StorageError or OSError when the log refuses or fails."""
        broker = self.broker
        partition_log = broker.partition(self.name, partition)
        if partition_log is None:
            self.ensure()
            partition_log = broker.partition(self.name, partition)
            if partition_log is None:
                raise LookupError(f"no partition {self.name}-{partition}")
        batch = new_batch(records, **batch_options)
        info = partition_log.append(
            batch, [parse_header(batch)], origin=AppendOrigin.COORDINATOR,
            leader_epoch=broker.placements.of(self.name, partition).leader_epoch,
        )
        broker.notify_append((self.name, partition))
        self.flushes.note(partition_log)
        return info


KAFKA_INTERNAL_REPLICATION_FACTOR = 3


def internal_replication_factor(broker: Broker, setting: str, value: int) -> int:
    """An internal topic's replication factor: the setting if given, else Kafka's default of 3 as far as the cluster's
    nodes reach (1 on a single broker, so a cluster's coordinators survive a stopped node)."""
    if setting in dict(broker.config.given):
        return value
    return min(KAFKA_INTERNAL_REPLICATION_FACTOR, len(broker.node_ids))


def internal_topic_configs(broker: Broker, name: str) -> dict[str, str]:
    """The configs an internal topic is created with, as Kafka creates it: the coordinators' topics are compacted,
    except ``__share_group_state`` (KIP-932: cleanup.policy=delete, ShareCoordinatorService.shareGroupStateTopicConfigs).
    A test-sized segment size setting (below the 1 MiB minimum of segment.bytes) goes into internal.segment.bytes, as
    Kafka's own tests do."""
    config = broker.config
    if name == SHARE_GROUP_STATE_TOPIC:
        configs = {"cleanup.policy": "delete", "compression.type": "producer"}
        segment_bytes: int | None = config.share_coordinator_state_topic_segment_bytes
    else:
        configs = dict(INTERNAL_TOPIC_CONFIGS)
        segment_bytes = config.offsets_topic_segment_bytes if name == CONSUMER_OFFSETS_TOPIC else None
    if segment_bytes is not None:
        configs["internal.segment.bytes" if segment_bytes < MIN_SEGMENT_BYTES else "segment.bytes"] = str(segment_bytes)
    return configs


def read_batches(partition_log: PartitionLog, offset: int) -> Iterator[tuple[bytes, BatchHeader]]:
    """Every batch from the one holding ``offset`` to the log end, with the bytes it was read in."""
    while offset < partition_log.log_end_offset:
        data = partition_log.read(offset, REPLAY_CHUNK)
        if not data:
            break
        for header in iter_batches(data):
            if header.last_offset < offset:
                continue
            yield data, header
            offset = header.last_offset + 1


def replay(partition_log: PartitionLog) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of a partition in offset order, with the header of its batch (control batches included)."""
    start = partition_log.log_start_offset
    for data, header in read_batches(partition_log, start):
        for record in decode_batch(data, header):
            if record.offset >= start:
                yield header, record
