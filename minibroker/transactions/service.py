"""The transaction coordinator wired to the broker: ``__transaction_state``, markers, timeouts, recovery.

The coordinator writes synchronously; request handlers await ``flush`` before answering, so what the flush
policy says must be durable (its ``__transaction_state`` records and the markers) is fsynced first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING, Iterable

from minibroker.cluster.coordinators import PartitionOwnership
from minibroker.cluster.features import TRANSACTION_VERSION
from minibroker.cluster.internal_topics import InternalTopic, PendingFlushes, internal_replication_factor, replay
from minibroker.protocol.coordinator_records import capped
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.messages import TRANSACTION_LOG_VALUE
from minibroker.protocol.txn_log_records import TransactionLogValue, decode_key, decode_value, encode_key, encode_value
from minibroker.storage.topic_names import TRANSACTION_STATE_TOPIC
from minibroker.transactions.coordinator import TransactionCoordinator
from minibroker.transactions.markers import TopicPartition, write_markers

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)

CRASH_POINT_ENV = "MINIBROKER_TEST_CRASH_POINT"
RECORDS_PER_YIELD = 1000


class TransactionService:
    """One transaction coordinator per node, each owning the ``__transaction_state`` partitions its node leads; it
    implements their storage and marker interfaces on top of the broker."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.flushes = PendingFlushes(broker)
        self.topic = InternalTopic(
            broker, TRANSACTION_STATE_TOPIC, broker.config.transaction_state_log_num_partitions,
            internal_replication_factor(
                broker, "transaction.state.log.replication.factor", broker.config.transaction_state_log_replication_factor,
            ),
            self.flushes,
        )
        self.ownership: PartitionOwnership[TransactionCoordinator] = PartitionOwnership(
            broker, TRANSACTION_STATE_TOPIC, self._make_coordinator, self._load,
        )

    @property
    def coordinators(self) -> dict[int, TransactionCoordinator]:
        return self.ownership.coordinators

    def _make_coordinator(self, node: int) -> TransactionCoordinator:
        return TransactionCoordinator(
            log_writer=self,
            markers=self,
            allocate_producer_id=self.broker.producer_ids.allocate,
            clock=self.broker.clock,
            max_timeout_ms=self.broker.config.transaction_max_timeout_ms,
            crash_hook=self.crash_hook if os.environ.get(CRASH_POINT_ENV) else None,
            owned=(),
        )

    def start(self) -> None:
        """Each node's coordinator takes over the partitions its node leads: their transactional ids are loaded and
        commits and aborts a crash left half-completed are finished."""
        self.ownership.start()

    def stop(self) -> None:
        self.ownership.stop()

    def coordinator_node(self, key: str) -> int:
        """The node coordinating ``key``: the leader of its partition (NO_LEADER while it has none)."""
        return self.ownership.leader_of(self.partition_for(key))

    def coordinator_of(self, node: int) -> TransactionCoordinator:
        """The coordinator of the node a request was sent to."""
        return self.ownership.coordinator(node)

    def owner_of(self, transactional_id: str) -> TransactionCoordinator | None:
        """The coordinator of ``transactional_id``: its partition's leader's (None while it has no leader)."""
        return self.ownership.owner(self.partition_for(transactional_id))

    async def _load(self, coordinator: TransactionCoordinator, partition: int, partition_log: PartitionLog) -> None:
        records = []
        for header, record in replay(partition_log):
            if header.is_control or record.key is None:
                continue
            records.append((decode_key(record.key), decode_value(record.value)))
            if len(records) % RECORDS_PER_YIELD == 0:
                await asyncio.sleep(0)
        coordinator.load(records)
        log.info("loaded %d transactional id(s) of %s-%d", len({key for key, _ in records}), TRANSACTION_STATE_TOPIC,
                 partition)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.topic.num_partitions)

    def write(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Version 1 of the value while transaction.version is 1 or more (TransactionVersion.transactionLogValueVersion),
        capped at what an emulated release wrote."""
        version = capped(TRANSACTION_LOG_VALUE, 1 if self.broker.features.level(TRANSACTION_VERSION) >= 1 else 0,
                         self.broker.record_caps)
        record = (encode_key(transactional_id), None if value is None else encode_value(value, version))
        self.topic.append(self.partition_for(transactional_id), [record])

    def write_markers(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """The markers carry the coordinator epoch: the leader epoch of the id's partition, as Kafka's coordinator
        writes them."""
        coordinator_epoch = self.broker.placements.of(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id)).leader_epoch
        return write_markers(
            self.broker, producer_id, producer_epoch, coordinator_epoch, committed, partitions, self.flushes
        )

    async def flush(self) -> None:
        await self.flushes.flush()

    async def expire_transactional_ids(self) -> None:
        """transactional.id.expiration.ms: tombstones for ids idle that long, flushed as a request's writes would be."""
        expiration_ms = self.broker.config.transactional_id_expiration_ms
        expired = [tid for c in self.coordinators.values() for tid in c.expire_transactional_ids(expiration_ms)]
        if expired:
            log.info("forgot %d transactional id(s) idle for transactional.id.expiration.ms", len(expired))
            await self.flush()

    async def abort_timed_out(self) -> None:
        """The periodic abort of transactions past their timeout, flushed as a request's writes would be."""
        for coordinator in self.coordinators.values():
            coordinator.abort_timed_out()
        await self.flush()

    @staticmethod
    def crash_hook(point: str) -> None:
        """Fault injection for recovery tests: die like ``kill -9`` at the named point (set in the environment the
        broker starts with)."""
        if os.environ.get(CRASH_POINT_ENV) == point:
            log.warning("test crash point %s reached: killing the broker", point)
            os.kill(os.getpid(), signal.SIGKILL)
