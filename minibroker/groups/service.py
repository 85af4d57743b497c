"""The group coordinator wired to the broker: ``__consumer_offsets``, loading at start-up, offset expiry.

Each node has its coordinator, which owns the partitions of ``__consumer_offsets`` its node leads; a request
for a group of another partition is answered NOT_COORDINATOR. A partition a coordinator takes over (at start-up,
or when its leader moves) is loading until a task has replayed it in offset order (its groups answer
COORDINATOR_LOAD_IN_PROGRESS), yielding to the event loop now and then so a large partition does not stall the
broker. Transactional offset commits are replayed honouring the markers that follow them (COMMIT applies
them, ABORT drops them, none yet leaves them pending). Markers the transaction coordinator writes to
``__consumer_offsets`` reach the coordinator through ``broker.marker_listeners``, except on a partition still
loading: the loader reads to the log end, so it meets those markers itself. That includes the markers
``TransactionService.start()`` writes for transactions a crash left half-completed, which the broker writes
before this service starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Awaitable, Iterable, Sequence

from minibroker.cluster.clock import VirtualClock, every
from minibroker.cluster.coordinators import PartitionOwnership
from minibroker.cluster.internal_topics import InternalTopic, PendingFlushes, internal_replication_factor, replay
from minibroker.groups.assignors import TopicSpec
from minibroker.groups.config import MINUTE_MS, GroupConfig
from minibroker.groups.coordinator import CoordinatorWriteError, GroupCoordinator
from minibroker.groups.timer import ClockTimer, LoopTimer
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import UnknownRecordTypeError
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.primitives import ProtocolError
from minibroker.protocol.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    BatchHeader,
    ControlRecordType,
    InvalidRecordError,
    Record,
    parse_control_record,
)
from minibroker.storage.errors import ProducerStateError, StorageError
from minibroker.storage.log_manager import TopicInfo
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.config.settings import BrokerConfig
    from minibroker.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)

RECORDS_PER_YIELD = 1000
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


def group_config(config: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        max_size=config.group_max_size,
        offsets_retention_ms=config.offsets_retention_minutes * MINUTE_MS,
        offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
        consumer_heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
        consumer_session_timeout_ms=config.group_consumer_session_timeout_ms,
        consumer_max_size=config.group_consumer_max_size,
        consumer_assignors=_assignors(config.group_consumer_assignors),
        consumer_protocol_enabled="consumer" in _names(config.group_coordinator_rebalance_protocols),
        consumer_migration_policy=config.group_consumer_migration_policy.strip().lower(),
        share_max_size=config.group_share_max_size,
    )


def _names(value: str) -> tuple[str, ...]:
    """A Kafka LIST setting's items; Kafka's assignor class names count by their short name."""
    names = []
    for item in value.split(","):
        item = item.strip()
        if item:
            short = item.rsplit(".", 1)[-1].removesuffix("Assignor").lower()
            names.append(short if "." in item else item)
    return tuple(names)


def _assignors(value: str) -> tuple[str, ...]:
    from minibroker.config.settings import ConfigError
    from minibroker.groups.assignors import ASSIGNORS

    names = _names(value)
    unknown = [name for name in names if name not in ASSIGNORS]
    if unknown:
        raise ConfigError(f"group.consumer.assignors: unknown assignor(s) {', '.join(unknown)} (known: {', '.join(ASSIGNORS)})")
    return names


class OffsetsTopic:
    """The coordinator's ``RecordLog``: ``__consumer_offsets`` (offsets.topic.num.partitions, compacted) written
    through the internal-topic path, with failures turned into the Kafka errors of a failed append."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.internal = InternalTopic(
            broker, CONSUMER_OFFSETS_TOPIC, broker.config.offsets_topic_num_partitions,
            internal_replication_factor(
                broker, "offsets.topic.replication.factor", broker.config.offsets_topic_replication_factor,
            ),
            PendingFlushes(broker),
        )

    @property
    def num_partitions(self) -> int:
        return self.internal.num_partitions

    async def create(self) -> TopicInfo:
        return await self.internal.create()

    def append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]], producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> int:
        try:
            info = self.internal.append(
                partition, records, base_timestamp=self.broker.clock(), producer_id=producer_id,
                producer_epoch=producer_epoch, is_transactional=producer_id != NO_PRODUCER_ID,
            )
        except LookupError as exc:
            raise CoordinatorWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from exc
        except ProducerStateError as exc:
            raise CoordinatorWriteError(ErrorCode(exc.error_code), str(exc)) from exc
        except (OSError, StorageError) as exc:
            raise CoordinatorWriteError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc
        return info.base_offset

    async def flush(self) -> None:
        """fsync what the flush policy says must be durable before clients hear about it."""
        await self.internal.flushes.flush()


class BrokerTopics:
    """The broker's topics for consumer-protocol groups (``TopicCatalog``): what they subscribe and regexes match."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    @property
    def version(self) -> int:
        return self.broker.logs.catalog_version

    def by_name(self, name: str) -> TopicSpec | None:
        info = self.broker.logs.topics.get(name)
        return None if info is None else TopicSpec(info.topic_id, name, len(info.partitions))

    def by_id(self, topic_id: bytes) -> TopicSpec | None:
        for info in self.broker.logs.topics.values():
            if info.topic_id == topic_id:
                return TopicSpec(topic_id, info.name, len(info.partitions))
        return None

    def names(self) -> Iterable[str]:
        return [name for name in self.broker.logs.topics if name not in INTERNAL_TOPICS]


class GroupService:
    """One group coordinator per node, each owning the ``__consumer_offsets`` partitions its node leads (Kafka's
    coordinator follows partition leadership): a partition that changes leader is resigned by the old node's
    coordinator and loaded from the log by the new one's."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = group_config(broker.config)
        self.topic = OffsetsTopic(broker)
        self.catalog = BrokerTopics(broker)
        self.ownership: PartitionOwnership[GroupCoordinator] = PartitionOwnership(
            broker, CONSUMER_OFFSETS_TOPIC, self._make_coordinator, self._load,
        )
        self._timers: list[LoopTimer | ClockTimer] = []
        self._tasks: list[asyncio.Task] = []

    @property
    def coordinators(self) -> dict[int, GroupCoordinator]:
        return self.ownership.coordinators

    def _make_coordinator(self, node: int) -> GroupCoordinator:
        clock = self.broker.clock
        timer = ClockTimer(clock) if isinstance(clock, VirtualClock) else LoopTimer(asyncio.get_running_loop(), clock)
        self._timers.append(timer)
        return GroupCoordinator(
            self.config, timer, self.topic, self.catalog, owned=(), group_configs=self.broker.group_configs,
            share_group_deleted=self._share_group_deleted, record_caps=self.broker.record_caps,
        )

    def _share_group_deleted(self, group_id: str) -> None:
        self.broker.share_partitions.delete_group(group_id)



    def start(self) -> None:
        """Create the coordinators, take over the partitions each node leads and start expiry."""
        self.ownership.start()
        self._tasks.append(asyncio.get_running_loop().create_task(
            every(self.broker.clock, self.config.offsets_retention_check_interval_ms, self._expire)
        ))
        self.broker.marker_listeners.append(self._on_marker)

    def stop(self) -> None:
        if self._on_marker in self.broker.marker_listeners:
            self.broker.marker_listeners.remove(self._on_marker)
        self.ownership.stop()
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        for timer in self._timers:
            timer.close()

    def coordinator_node(self, key: str) -> int:
        """The node coordinating ``key``: the leader of its partition (NO_LEADER while it has none)."""
        return self.ownership.leader_of(self.partition_of(key))

    def coordinator_of(self, node: int) -> GroupCoordinator:
        """The coordinator of the node a request was sent to."""
        return self.ownership.coordinator(node)

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.topic.num_partitions)

    async def flush(self) -> None:
        await self.topic.flush()

    def delete_topic_offsets(self, topics: set[str]) -> int:
        return sum(coordinator.delete_topic_offsets(topics) for coordinator in self.coordinators.values())

    def _on_marker(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
        if topic == CONSUMER_OFFSETS_TOPIC:
            for coordinator in self.coordinators.values():
                coordinator.on_marker(partition, producer_id, committed)

    async def _load(self, coordinator: GroupCoordinator, partition: int, partition_log: PartitionLog) -> None:
        """Replay one partition into the coordinator that now owns it, yielding now and then so a large partition
        does not stall the broker."""
        started = time.monotonic()
        records = 0
        try:
            for header, record in replay(partition_log):
                if header.is_control:
                    self._replay_marker(coordinator, partition, header, record)
                    continue
                if record.key is None:
                    continue
                producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
                self._replay_one(coordinator, partition, record.offset, record.key, record.value, producer_id)
                records += 1
                if records % RECORDS_PER_YIELD == 0:
                    await asyncio.sleep(0)
        except InvalidRecordError as exc:
            log.error("%s-%d: unreadable batch, loading stopped there: %s", CONSUMER_OFFSETS_TOPIC, partition, exc)
        groups = sum(
            coordinator.partition_of(g) == partition
            for g in [*coordinator.groups, *coordinator.consumer.groups, *coordinator.share.groups]
        )
        log.log(logging.INFO if groups else logging.DEBUG, "loaded %d group(s) from %d record(s) of %s-%d in %.0f ms",
                groups, records, CONSUMER_OFFSETS_TOPIC, partition, (time.monotonic() - started) * 1000)

    @staticmethod
    def _replay_marker(coordinator: GroupCoordinator, partition: int, header: BatchHeader, record: Record) -> None:
        try:
            record_type, _ = parse_control_record(record)
        except InvalidRecordError as exc:
            log.warning("%s-%d offset %d: skipping unreadable control record: %s", CONSUMER_OFFSETS_TOPIC, partition,
                        record.offset, exc)
            return
        if record_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            coordinator.complete_transaction(partition, header.producer_id, record_type == ControlRecordType.COMMIT)

    @staticmethod
    def _replay_one(
        coordinator: GroupCoordinator, partition: int, offset: int, key: bytes, value: bytes | None, producer_id: int,
    ) -> None:
        try:
            coordinator.replay(key, value, offset, producer_id)
        except UnknownRecordTypeError as exc:
            log.debug("%s-%d offset %d: skipping record type %d", CONSUMER_OFFSETS_TOPIC, partition, offset, exc.record_type)
        except ProtocolError as exc:
            log.warning("%s-%d offset %d: skipping unreadable record: %s", CONSUMER_OFFSETS_TOPIC, partition, offset, exc)

    def _expire(self) -> Awaitable[None] | None:
        """Kafka's offsets retention check, every offsets.retention.check.interval.ms of the broker's clock."""
        removed = sum(coordinator.expire_offsets() for coordinator in self.coordinators.values())
        if not removed:
            return None
        log.info("offset expiration wrote %d tombstone(s)", removed)
        return self.flush()
