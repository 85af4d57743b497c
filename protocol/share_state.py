"""The persisted state of one share partition, as Kafka's share coordinator keeps it in ``__share_group_state``.

ShareSnapshot records carry the whole state, ShareUpdate records the batches that changed since; replaying the latest
snapshot and the updates after it gives the state back. Acquired records are persisted as available (a lock does not
survive a restart), so only the three durable delivery states appear here. Sans-IO like the rest of ``protocol``: the
broker's data path (``minibroker.share``) and the record codec (``share_records``) both work with these types.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class DeliveryState(IntEnum):
    """Kafka's RecordState ids, as written in StateBatches.DeliveryState."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Kafka's SharePartitionKey: whose state a ``__share_group_state`` record holds."""

    group_id: str
    topic_id: bytes
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Offsets ``first_offset``..``last_offset`` (inclusive) in one delivery state with one delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: DeliveryState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class PersistedShareState:
    """What survives a restart: the share-partition start offset and the finished or redelivered records after it."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1
