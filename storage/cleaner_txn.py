"""What the log cleaner knows about transactions while it walks a log in offset order (Kafka's
CleanedTransactionMetadata).

The aborted transactions of the walked range come from the ``.txnindex`` files. A transactional data batch is
discardable when its producer has an aborted transaction under way at that offset; otherwise its transaction is
treated as committed. An ABORT marker must stay while any batch of its transaction was seen in this walk (its
``.txnindex`` entry is then carried into the cleaned segment); a COMMIT marker must stay while any batch of its
transaction was seen. Markers of transactions with nothing left are discardable (the delete horizon then decides).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from ..protocol.records import BatchHeader, ControlRecordType
from .transaction_index import AbortedTxn


@dataclass(slots=True)
class _OngoingAbort:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactions:
    """Transaction state of one cleaner walk; ``kept_aborts`` collects the index entries of kept ABORT markers."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # min-heap on first offset
        self._known: set[AbortedTxn] = set()
        self._committed: set[int] = set()
        self._aborted: dict[int, _OngoingAbort] = {}
        self.kept_aborts: list[AbortedTxn] = []

    def add_aborted(self, entries: Iterable[AbortedTxn]) -> None:
        """Aborted transactions of the next range; one already added (found again from another segment) is ignored."""
        for entry in entries:
            if entry not in self._known:
                self._known.add(entry)
                heapq.heappush(self._pending, (entry.first_offset, len(self._known), entry))

    def on_data_batch(self, header: BatchHeader) -> bool:
        """Whether the data batch belongs to an aborted transaction (and may be discarded)."""
        self._start_aborts_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._aborted.get(header.producer_id)
        if ongoing is not None:
            ongoing.last_observed_batch_offset = header.last_offset
            return True
        self._committed.add(header.producer_id)
        return False

    def on_control_batch(self, header: BatchHeader, record_type: int | None) -> bool:
        """Whether the control batch may be discarded; ``record_type`` is None for an empty (already cleaned) one."""
        self._start_aborts_up_to(header.last_offset)
        if record_type is None:
            return True
        producer_id = header.producer_id
        if record_type == ControlRecordType.ABORT:
            ongoing = self._aborted.pop(producer_id, None)
            if ongoing is not None and ongoing.last_observed_batch_offset is not None:
                self.kept_aborts.append(ongoing.txn)
                return False
            return True
        if record_type == ControlRecordType.COMMIT:
            if producer_id in self._committed:
                self._committed.discard(producer_id)
                return False
            return True
        return False

    def _start_aborts_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            entry = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(entry.producer_id, _OngoingAbort(entry))
