"""One transactional id's state, as Kafka's TransactionMetadata keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from minibroker.protocol.txn_log_records import TransactionLogValue

TopicPartition = tuple[str, int]
MAX_EPOCH = 32766  # Short.MAX_VALUE - 1: past it a producer gets a new id


class TxnState(IntEnum):
    """Kafka's TransactionState ids, as stored in ``__transaction_state``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


COMPLETING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})  # markers being written


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    prev_producer_id: int = -1  # the producer id before the last state change
    next_producer_id: int = -1  # TV2: the id an exhausted epoch moves to when the transaction completes
    client_transaction_version: int = 0  # TV2 when the client ends its transactions with EndTxn v5

    @property
    def completing(self) -> bool:
        return self.state in COMPLETING

    def to_log_value(self) -> TransactionLogValue:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(partition)
        # By position, in the fields' order: built at every state change, and ten keywords cost twice the call.
        return TransactionLogValue(
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            int(self.state),  # status
            {topic: tuple(ids) for topic, ids in by_topic.items()},  # partitions
            self.last_update_ms,
            self.start_ms,
            self.prev_producer_id,
            self.next_producer_id,
            self.client_transaction_version,
        )

    @classmethod
    def from_log_value(cls, transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
        return cls(
            transactional_id=transactional_id,
            producer_id=value.producer_id,
            producer_epoch=value.producer_epoch,
            timeout_ms=value.timeout_ms,
            state=TxnState(value.status),
            partitions={(topic, p) for topic, ids in value.partitions.items() for p in ids},
            start_ms=value.start_ms,
            last_update_ms=value.last_update_ms,
            prev_producer_id=value.prev_producer_id,
            next_producer_id=value.next_producer_id,
            client_transaction_version=value.client_transaction_version,
        )
