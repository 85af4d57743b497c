"""Per-partition producer state for idempotent and transactional producers (Kafka's ProducerStateManager).

For every producer id the partition remembers its epoch, the metadata of its last five batches (enough to spot a
retried batch), the epoch of the last transaction coordinator that wrote a marker, and the first offset of its open
transaction. Client batches are checked against this from their headers alone; records are never decoded.

Rules (ProducerAppendInfo): an epoch below the known one is refused (INVALID_PRODUCER_EPOCH); a new epoch must start
at sequence 0 unless the producer is unknown; within an epoch each batch must continue the last sequence (with int32
wrap-around) unless the producer has no known epoch. A transactional batch opens a transaction if none is open, a
non-transactional one while a transaction is open is refused (INVALID_TXN_STATE), and a COMMIT/ABORT marker closes it.

The state is saved in ``<offset>.snapshot`` files (ProducerSnapshot.json, version 1, CRC-32C over bytes 6..end) and
rebuilt on open from the newest one plus the batch headers after it (see PartitionLog). Producers are never expired
(Kafka drops them after ``producer.id.expiration.ms``); state outlives the data it came from.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from ..protocol.crc import crc32c
from .errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateError,
    TransactionCoordinatorFencedError,
)

__all__ = [
    "ActiveProducer",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerAppend",
    "ProducerStateEntry",
    "ProducerStateError",
    "ProducerStateManager",
    "decode_snapshot",
    "encode_snapshot",
]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_COORDINATOR_EPOCH = -1
INT32_MAX = 2**31 - 1

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes, ProducerSnapshot.json field order
_CRC_START = 6  # Kafka's PRODUCER_ENTRIES_OFFSET: the CRC covers the count and the entries


class AppendOrigin(Enum):
    """Who is appending (Kafka's AppendOrigin): only CLIENT batches get sequence and duplicate checks."""

    CLIENT = "client"
    COORDINATOR = "coordinator"  # markers, group/transaction coordinator writes: epoch checks only
    REPLICATION = "replication"  # log recovery: no checks at all


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: int32 sequences wrap to 0 after Integer.MAX_VALUE."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT32_MAX)


def last_sequence_of(base_sequence: int, last_offset_delta: int) -> int:
    """DefaultRecordBatch.lastSequence."""
    if base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return increment_sequence(base_sequence, last_offset_delta)


@dataclass(slots=True)
class BatchMetadata:
    """What is kept of a producer's recent batch (Kafka's BatchMetadata)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    """The state of one producer id in one partition."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
            self.current_txn_first_offset, deque(self.batches),
        )

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new epoch forgets the batches of the old one."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        self.maybe_update_epoch(epoch)
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """One of the retained batches with the same epoch and sequence range (Kafka's findDuplicateBatch)."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.last_seq == last_seq and batch.first_seq == first_seq:
                return batch
        return None


class CompletedTxn(NamedTuple):
    """A transaction closed by a marker in this partition."""

    producer_id: int
    first_offset: int
    last_offset: int  # offset of the marker
    is_aborted: bool


class ActiveProducer(NamedTuple):
    """One row of DescribeProducers (-1 where Kafka sends -1: no sequence, no timestamp, no open transaction)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class ProducerAppend:
    """The producer-state changes of one append (Kafka's ProducerAppendInfo, for every producer in it).

    Each ``append_*`` call validates against the state as staged so far and stages the change; nothing touches the
    manager until ``ProducerStateManager.commit``, so a refused batch leaves the state as it was.
    """

    def __init__(self, manager: ProducerStateManager, origin: AppendOrigin) -> None:
        self._manager = manager
        self.origin = origin
        self.staged: dict[int, ProducerStateEntry] = {}
        self.completed: list[CompletedTxn] = []

    def _entry(self, producer_id: int) -> ProducerStateEntry:
        entry = self.staged.get(producer_id)
        if entry is None:
            current = self._manager.producers.get(producer_id)
            entry = current.copy() if current is not None else ProducerStateEntry(producer_id)
            self.staged[producer_id] = entry
        return entry

    def _check_epoch(self, entry: ProducerStateEntry, epoch: int, offset: int, what: str) -> None:
        if epoch < entry.producer_epoch and self.origin is not AppendOrigin.REPLICATION:
            raise InvalidProducerEpochError(
                f"Epoch of producer {entry.producer_id} at offset {offset} is {epoch}, which is smaller than the "
                f"last seen epoch {entry.producer_epoch} ({what})"
            )

    def _check_sequence(self, entry: ProducerStateEntry, epoch: int, first_seq: int, offset: int) -> None:
        known = self._manager.producers.get(entry.producer_id)
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {entry.producer_id} at offset {offset}: "
                    f"{epoch} (request epoch), {first_seq} (seq. number), {entry.producer_epoch} (current epoch)"
                )
            return
        # No known epoch (the state was lost, e.g. its data deleted): accept any sequence, as Kafka does.
        if known is None or known.producer_epoch == NO_PRODUCER_EPOCH:
            return
        if not in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {entry.producer_id} at offset {offset}: "
                f"{first_seq} (incoming seq. number), {entry.last_seq} (current end sequence number)"
            )

    def append_data_batch(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        timestamp: int,
        is_transactional: bool,
    ) -> None:
        """Validate and stage a data batch (offsets are the ones it will get)."""
        entry = self._entry(producer_id)
        self._check_epoch(entry, epoch, first_offset, "data batch")
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(entry, epoch, first_seq, first_offset)
        if entry.current_txn_first_offset is not None and not is_transactional:
            if self.origin is AppendOrigin.REPLICATION:
                return  # only a damaged log gets here; keep the transaction open
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {producer_id} at offset {first_offset}"
            )
        entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, timestamp)
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset

    def append_marker(
        self, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, offset: int, timestamp: int
    ) -> CompletedTxn | None:
        """Validate and stage a COMMIT/ABORT marker; the transaction it closes, if one was open here."""
        entry = self._entry(producer_id)
        self._check_epoch(entry, epoch, offset, "transaction marker")
        if entry.coordinator_epoch > coordinator_epoch and self.origin is not AppendOrigin.REPLICATION:
            raise TransactionCoordinatorFencedError(
                f"Invalid coordinator epoch for producer {producer_id} at offset {offset}: {coordinator_epoch} "
                f"(zombie), {entry.coordinator_epoch} (current)"
            )
        completed = None
        if entry.current_txn_first_offset is not None:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, not commit)
            self.completed.append(completed)
        entry.maybe_update_epoch(epoch)
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return completed


class ProducerStateManager:
    """All producers of one partition and their open transactions."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def begin(self, origin: AppendOrigin) -> ProducerAppend:
        return ProducerAppend(self, origin)

    def find_duplicate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        entry = self.producers.get(producer_id)
        return entry.find_duplicate(epoch, first_seq, last_seq) if entry is not None else None

    def commit(self, append: ProducerAppend) -> None:
        for producer_id, entry in append.staged.items():
            self.producers[producer_id] = entry
            self._track(entry)

    def _track(self, entry: ProducerStateEntry) -> None:
        first = entry.current_txn_first_offset
        if first is None:
            self._ongoing.pop(entry.producer_id, None)
        else:
            self._ongoing[entry.producer_id] = first

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, or None."""
        return min(self._ongoing.values()) if self._ongoing else None

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of each open transaction."""
        return dict(self._ongoing)

    def stable_offset_after(self, txn: CompletedTxn) -> int:
        """The LSO once ``txn`` completes (Kafka's lastStableOffset(completedTxn)), for its .txnindex entry."""
        others = [first for producer_id, first in self._ongoing.items() if producer_id != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def clear(self) -> None:
        self.producers.clear()
        self._ongoing.clear()

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Kafka's removeExpiredProducers: forget producers without an open transaction whose last batch is at
        least ``expiration_ms`` old (by its timestamp); returns how many went."""
        expired = [
            producer_id for producer_id, entry in self.producers.items()
            if entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= expiration_ms
        ]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    def load(self, entries: list[ProducerStateEntry]) -> None:
        self.clear()
        for entry in entries:
            self.producers[entry.producer_id] = entry
            self._track(entry)

    def active_producers(self) -> list[ActiveProducer]:
        return [
            ActiveProducer(
                entry.producer_id, entry.producer_epoch, entry.last_seq, entry.last_timestamp, entry.coordinator_epoch,
                -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
            )
            for entry in sorted(self.producers.values(), key=lambda e: e.producer_id)
        ]

    def snapshot(self) -> bytes:
        return encode_snapshot(list(self.producers.values()))


# ---- <offset>.snapshot files ----


class CorruptSnapshotError(ValueError):
    """A snapshot file that does not parse or fails its CRC."""


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: list[ProducerStateEntry]) -> bytes:
    """Kafka's ProducerStateManager.writeSnapshot layout, entries sorted by producer id."""
    body = bytearray(_SNAPSHOT_HEADER.size)
    for entry in sorted(entries, key=lambda e: e.producer_id):
        body += _SNAPSHOT_ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            entry.last_seq,
            entry.last_data_offset,
            entry.last_offset_delta,
            entry.last_timestamp,
            entry.coordinator_epoch,
            -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
        )
    struct.pack_into(">i", body, _CRC_START, len(entries))
    crc = crc32c(memoryview(body)[_CRC_START:])
    struct.pack_into(">hI", body, 0, SNAPSHOT_VERSION, crc)
    return bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Parse a snapshot; only the last batch of each producer is in it (as in Kafka)."""
    if len(data) < _SNAPSHOT_HEADER.size:
        raise CorruptSnapshotError(f"{len(data)} bytes is too short for a snapshot")
    version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unsupported snapshot version {version}")
    computed = crc32c(memoryview(data)[_CRC_START:])
    if computed != crc:
        raise CorruptSnapshotError(f"CRC mismatch: stored {crc:#010x}, computed {computed:#010x}")
    if count < 0 or len(data) != _SNAPSHOT_HEADER.size + count * _SNAPSHOT_ENTRY.size:
        raise CorruptSnapshotError(f"{len(data)} bytes do not hold {count} entries")
    entries = []
    for position in range(_SNAPSHOT_HEADER.size, len(data), _SNAPSHOT_ENTRY.size):
        (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first_offset) = _SNAPSHOT_ENTRY.unpack_from(data, position)
        entry = ProducerStateEntry(
            producer_id, epoch, coordinator_epoch, timestamp, None if txn_first_offset < 0 else txn_first_offset
        )
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        entries.append(entry)
    return entries
