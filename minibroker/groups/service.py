"""The group coordinator wired to the broker: ``__consumer_offsets``, loading at start-up, offset expiry.

Loading runs as a task after the broker starts: every partition of ``__consumer_offsets`` is marked
as loading first (so its groups answer COORDINATOR_LOAD_IN_PROGRESS), then replayed in offset order
and released one by one, yielding to the event loop now and then so a large topic does not stall
the broker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Sequence

from minibroker.groups.config import MINUTE_MS, GroupConfig
from minibroker.groups.coordinator import CoordinatorWriteError, GroupCoordinator
from minibroker.groups.timer import LoopTimer
from minibroker.internal_topics import append_records, ensure_internal_topic, replay
from protocol.errors import ErrorCode
from protocol.group_records import UnknownRecordTypeError
from protocol.primitives import ProtocolError
from protocol.records import InvalidRecordError
from storage.errors import StorageError
from storage.log_manager import TopicInfo
from storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.config import BrokerConfig

log = logging.getLogger(__name__)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
RECORDS_PER_YIELD = 1000


def group_config(config: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        max_size=config.group_max_size,
        offsets_retention_ms=config.offsets_retention_minutes * MINUTE_MS,
        offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
    )


class OffsetsTopic:
    """The coordinator's ``RecordLog``: one batch per write, appended on the event loop before anyone is answered."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.unflushed: set[PartitionLog] = set()

    @property
    def num_partitions(self) -> int:
        """The existing topic's partition count wins over the setting, as in Kafka."""
        info = self.broker.topic(CONSUMER_OFFSETS_TOPIC)
        return len(info.partitions) if info is not None else self.broker.config.offsets_topic_num_partitions

    def ensure(self) -> TopicInfo:
        """The topic, created (compacted, offsets.topic.num.partitions) on first use."""
        return ensure_internal_topic(self.broker, CONSUMER_OFFSETS_TOPIC, self.num_partitions)

    def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        try:
            self.ensure()
            append_records(self.broker, CONSUMER_OFFSETS_TOPIC, partition, records, base_timestamp=self.broker.clock())
        except LookupError as exc:
            raise CoordinatorWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from exc
        except (OSError, StorageError) as exc:
            raise CoordinatorWriteError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc
        partition_log = self.broker.partition(CONSUMER_OFFSETS_TOPIC, partition)
        if partition_log is not None and partition_log.needs_flush(self.broker.clock()):
            self.unflushed.add(partition_log)

    async def flush(self) -> None:
        """fsync what the flush policy says must be durable before clients hear about it."""
        while self.unflushed:
            await self.broker.flush_log(self.unflushed.pop())


class GroupService:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = group_config(broker.config)
        self.topic = OffsetsTopic(broker)
        self.timer: LoopTimer | None = None
        self.coordinator: GroupCoordinator | None = None
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        """Create the coordinator, mark existing partitions as loading and start loading and expiry."""
        loop = asyncio.get_running_loop()
        self.timer = LoopTimer(loop, self.broker.clock)
        self.coordinator = GroupCoordinator(self.config, self.timer, self.topic)
        info = self.broker.topic(CONSUMER_OFFSETS_TOPIC)
        if info is not None:
            self.coordinator.begin_loading(range(len(info.partitions)))
            self._tasks.append(loop.create_task(self._load(info)))
        self._tasks.append(loop.create_task(self._expire_periodically()))

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        if self.timer is not None:
            self.timer.close()

    async def flush(self) -> None:
        await self.topic.flush()

    async def _load(self, info: TopicInfo) -> None:
        started = time.monotonic()
        records = 0
        for partition, partition_log in enumerate(info.partitions):
            try:
                for header, record in replay(partition_log):
                    if header.is_control or header.is_transactional or record.key is None:
                        continue
                    self._replay_one(partition, record.offset, record.key, record.value)
                    records += 1
                    if records % RECORDS_PER_YIELD == 0:
                        await asyncio.sleep(0)
            except InvalidRecordError as exc:
                log.error("%s-%d: unreadable batch, loading stopped there: %s", CONSUMER_OFFSETS_TOPIC, partition, exc)
            self.coordinator.finish_loading(partition)
            await asyncio.sleep(0)
        log.info("loaded %d group(s) and their offsets from %d record(s) of %s in %.0f ms",
                 len(self.coordinator.groups), records, CONSUMER_OFFSETS_TOPIC, (time.monotonic() - started) * 1000)

    def _replay_one(self, partition: int, offset: int, key: bytes, value: bytes | None) -> None:
        try:
            self.coordinator.replay(key, value)
        except UnknownRecordTypeError as exc:
            log.debug("%s-%d offset %d: skipping record type %d", CONSUMER_OFFSETS_TOPIC, partition, offset, exc.record_type)
        except ProtocolError as exc:
            log.warning("%s-%d offset %d: skipping unreadable record: %s", CONSUMER_OFFSETS_TOPIC, partition, offset, exc)

    async def _expire_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            try:
                removed = self.coordinator.expire_offsets()
            except Exception:
                log.exception("offset expiration failed")
                continue
            if removed:
                log.info("offset expiration wrote %d tombstone(s)", removed)
                await self.flush()
