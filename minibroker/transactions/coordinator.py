"""The transaction coordinator's state machine (Kafka's TransactionCoordinator, transactions V1 and V2).

Transactions V2 (KIP-890 part 2) are decided by request version, as in Kafka: a Produce v12+ or TxnOffsetCommit v5+
adds its partition itself (``add_partitions`` with TV2), and EndTxn v5 (``end_transaction_v2``) bumps the producer
epoch of every transaction, its markers carrying the bumped epoch; an exhausted epoch moves to a new producer id when
the transaction completes. Old-protocol clients keep the V1 rules on the same coordinator.

Every state change is written to ``__transaction_state`` through ``TxnLogWriter`` before the
client is answered; commit and abort are two-phase: PrepareCommit/PrepareAbort is written, then
the markers go to every partition of the transaction (``MarkerWriter``), then
CompleteCommit/CompleteAbort. After a crash between the phases, ``complete_pending`` finishes the
job at start-up. Time comes from an injected clock, so tests drive timeouts without sleeping.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from minibroker.cluster.coordinators import ServedPartitions
from minibroker.cluster.features import TV2
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.txn_log_records import TransactionLogValue
from minibroker.transactions.metadata import MAX_EPOCH, TopicPartition, TransactionMetadata, TxnState

log = logging.getLogger(__name__)


class TxnLogWriter(Protocol):
    def write(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Persist the new state of ``transactional_id`` (None: a tombstone)."""

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition of ``transactional_id``."""


class MarkerWriter(Protocol):
    def write_markers(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Append a COMMIT or ABORT control batch of ``transactional_id``'s transaction to each partition."""


class CrashHook(Protocol):
    def __call__(self, point: str) -> None:
        """Called at named points of the two-phase commit (tests simulate a crash there)."""


@dataclass(frozen=True, slots=True)
class InitResult:
    """InitProducerId's answer, and EndTxn v5's (the producer id and epoch the client goes on with)."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(
        self,
        log_writer: TxnLogWriter,
        markers: MarkerWriter,
        allocate_producer_id: Callable[[], int],
        clock: Callable[[], int],
        max_timeout_ms: int,
        crash_hook: CrashHook | None = None,
        owned: Iterable[int] | None = None,
    ) -> None:
        self.log_writer = log_writer
        self.markers = markers
        self.allocate_producer_id = allocate_producer_id
        self.clock = clock
        self.max_timeout_ms = max_timeout_ms
        self.crash_hook = crash_hook or (lambda point: None)
        self.transactions: dict[str, TransactionMetadata] = {}
        self.partitions = ServedPartitions(owned)

    # partitions: owned, loading, resigned

    def availability(self, transactional_id: str) -> ErrorCode:
        """Whether this node serves the id's partition (Kafka's TransactionStateManager.getTransactionState)."""
        if self.partitions.owned is None:
            return NO_ERROR
        return self.partitions.status(self.log_writer.partition_for(transactional_id))

    def begin_loading(self, partitions: Iterable[int]) -> None:
        self.partitions.begin_loading(partitions)

    def finish_loading(self, partition: int) -> None:
        """The partition's ids are loaded: commits and aborts they left half-done are finished, then it serves."""
        self.partitions.finish_loading(partition)
        self.complete_pending()

    def resign(self, partition: int) -> None:
        """Another node leads the partition now: its transactional ids are forgotten here (they live on in the log)."""
        self.partitions.resign(partition)
        for transactional_id in [t for t in self.transactions if self.log_writer.partition_for(t) == partition]:
            del self.transactions[transactional_id]

    # loading

    def load(self, records: Iterable[tuple[str, TransactionLogValue | None]]) -> None:
        """Replay ``__transaction_state`` in offset order: the last value per id wins."""
        for transactional_id, value in records:
            if value is None:
                self.transactions.pop(transactional_id, None)
            else:
                self.transactions[transactional_id] = TransactionMetadata.from_log_value(transactional_id, value)

    def complete_pending(self) -> list[str]:
        """Finish transactions whose commit or abort was decided but whose markers may be missing."""
        finished = []
        for txn in list(self.transactions.values()):
            if txn.completing:
                log.info("completing %s of transactional id %s found when loading", txn.state.kafka_name, txn.transactional_id)
                self._write_markers_and_complete(txn)
                finished.append(txn.transactional_id)
        return finished

    # helpers

    def _persist(self, txn: TransactionMetadata, previous_id: int) -> None:
        """Write the new state; ``previous_id`` is the producer id before this change (PreviousProducerId, as Kafka's
        transitions record it)."""
        txn.last_update_ms = self.clock()
        txn.prev_producer_id = previous_id
        self.log_writer.write(txn.transactional_id, txn.to_log_value())

    def _bump_epoch(self, txn: TransactionMetadata) -> None:
        if txn.producer_epoch >= MAX_EPOCH:
            txn.producer_id = self.allocate_producer_id()
            txn.producer_epoch = 0
        else:
            txn.producer_epoch += 1

    def _bump_to_end(self, txn: TransactionMetadata) -> None:
        """The bump under which a transaction ends: a fence's or a timeout's abort (prepareFenceProducerEpoch), or any
        TV2 end (prepareAbortOrCommit). Its markers must carry the producer id of its data, so an exhausted epoch goes
        up to Short.MAX_VALUE under the same id (and, at Short.MAX_VALUE already, stays); a TV2 client moves to the
        next id when the transaction completes, a V1 client at its next InitProducerId."""
        if txn.producer_epoch >= MAX_EPOCH and txn.client_transaction_version >= TV2:
            txn.next_producer_id = self.allocate_producer_id()
        if txn.producer_epoch <= MAX_EPOCH:
            txn.producer_epoch += 1

    def _check(
        self, transactional_id: str, txn: TransactionMetadata | None, producer_id: int, producer_epoch: int,
    ) -> ErrorCode:
        """This node coordinates the id, and the producer is its current one."""
        unavailable = self.availability(transactional_id)
        if unavailable != NO_ERROR:
            return unavailable
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return NO_ERROR

    def _write_markers_and_complete(self, txn: TransactionMetadata) -> None:
        """The markers carry the epoch of the Prepare state (TV2: the bumped one); then an exhausted TV2 epoch moves
        to the next producer id, epoch 0 (TransactionMetadata.prepareComplete)."""
        committed = txn.state == TxnState.PREPARE_COMMIT
        self.crash_hook("before-markers")
        errors = self.markers.write_markers(
            txn.transactional_id, txn.producer_id, txn.producer_epoch, committed, txn.partitions,
        )
        failed = {tp: e for tp, e in errors.items() if e != NO_ERROR}
        if failed:
            log.warning("markers for %s not written to %s; partitions gone or unwritable", txn.transactional_id, failed)
        before = txn.producer_id
        if txn.client_transaction_version >= TV2 and txn.next_producer_id >= 0:
            txn.producer_id, txn.producer_epoch = txn.next_producer_id, 0
        txn.next_producer_id = -1
        txn.state = TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT
        txn.partitions = set()
        self._persist(txn, before)

    def _prepare_and_complete(self, txn: TransactionMetadata, commit: bool) -> None:
        txn.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        self._persist(txn, txn.producer_id)
        self.crash_hook("after-prepare")
        self._write_markers_and_complete(txn)

    def _prepare_and_complete_v2(self, txn: TransactionMetadata, commit: bool, empty: bool) -> InitResult:
        """TV2's end of a transaction (prepareAbortOrCommit): the epoch goes up by one, the next producer id is taken
        when the epoch is exhausted, and an abort with no partition added starts and ends now."""
        txn.client_transaction_version = TV2
        self._bump_to_end(txn)
        if empty:
            txn.start_ms = self.clock()
        self._prepare_and_complete(txn, commit)
        return InitResult(NO_ERROR, txn.producer_id, txn.producer_epoch)

    # requests

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1
    ) -> InitResult:
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        unavailable = self.availability(transactional_id)
        if unavailable != NO_ERROR:
            return InitResult(unavailable)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(transactional_id, self.allocate_producer_id(), 0, timeout_ms)
            self.transactions[transactional_id] = txn
            self._persist(txn, txn.producer_id)
            return InitResult(NO_ERROR, txn.producer_id, txn.producer_epoch)
        if producer_id >= 0 and (producer_id, producer_epoch) != (txn.producer_id, txn.producer_epoch):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.completing:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state == TxnState.ONGOING:
            # Fence the old producer: abort its transaction under a bumped epoch; the client retries.
            log.info("fencing producer %d epoch %d of %s: aborting its open transaction",
                     txn.producer_id, txn.producer_epoch, transactional_id)
            self._bump_to_end(txn)
            self._prepare_and_complete(txn, commit=False)
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        before = txn.producer_id
        self._bump_epoch(txn)
        txn.timeout_ms = timeout_ms
        txn.state = TxnState.EMPTY
        txn.partitions = set()
        txn.start_ms = -1
        self._persist(txn, before)
        return InitResult(NO_ERROR, txn.producer_id, txn.producer_epoch)

    def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[TopicPartition],
        exists: Callable[[TopicPartition], bool], client_transaction_version: int = 0,
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn (and AddOffsetsToTxn); with TV2, the partitions a Produce v12+ or TxnOffsetCommit v5+
        adds itself (Kafka's handleAddPartitionsToTransaction with the client's transaction version)."""
        txn = self.transactions.get(transactional_id)
        error = self._check(transactional_id, txn, producer_id, producer_epoch)
        if error == NO_ERROR and txn.completing:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error == NO_ERROR and txn.state == TxnState.PREPARE_EPOCH_FENCE:
            error = ErrorCode.PRODUCER_FENCED
        if error != NO_ERROR:
            return {tp: error for tp in partitions}
        unknown = [tp for tp in partitions if not exists(tp)]
        if unknown:
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in partitions}
        new = set(partitions) - txn.partitions
        if new or txn.state != TxnState.ONGOING:
            if txn.state != TxnState.ONGOING:
                txn.start_ms = self.clock()
                txn.state = TxnState.ONGOING
            txn.partitions |= new
            txn.client_transaction_version = client_transaction_version
            self._persist(txn, txn.producer_id)
        return {tp: NO_ERROR for tp in partitions}

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partition: TopicPartition
    ) -> ErrorCode:
        """May a broker-side write (TxnOffsetCommit) join this transaction in ``partition``? Only if the partition was
        added to the ongoing transaction, else its marker would never be written (Kafka's KIP-890 verification)."""
        txn = self.transactions.get(transactional_id)
        error = self._check(transactional_id, txn, producer_id, producer_epoch)
        if error != NO_ERROR:
            return error
        if txn.completing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if txn.state != TxnState.ONGOING or partition not in txn.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return NO_ERROR

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> ErrorCode:
        txn = self.transactions.get(transactional_id)
        error = self._check(transactional_id, txn, producer_id, producer_epoch)
        if error != NO_ERROR:
            return error
        state = txn.state
        if state == TxnState.ONGOING:
            txn.client_transaction_version = 0  # ended the V1 way, whatever began it
            self._prepare_and_complete(txn, commit)
            return NO_ERROR
        if state == TxnState.COMPLETE_COMMIT:
            return NO_ERROR if commit else ErrorCode.INVALID_TXN_STATE
        if state == TxnState.COMPLETE_ABORT:
            return NO_ERROR if not commit else ErrorCode.INVALID_TXN_STATE
        if state == TxnState.PREPARE_COMMIT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
        if state == TxnState.PREPARE_ABORT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if not commit else ErrorCode.INVALID_TXN_STATE
        return ErrorCode.INVALID_TXN_STATE

    def end_transaction_v2(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> InitResult:
        """EndTxn v5, as TransactionCoordinator.endTransaction with TV2: every end bumps the epoch, and a retry of an
        end that completed (the previous epoch, or the last one before an overflow's new producer id) answers success
        with the producer id and epoch the client goes on with."""
        unavailable = self.availability(transactional_id)
        if unavailable != NO_ERROR:
            return InitResult(unavailable)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        state = txn.state
        retry_on_overflow = txn.prev_producer_id == producer_id and producer_epoch == MAX_EPOCH and txn.producer_epoch == 0
        retry_on_bump = txn.producer_epoch == producer_epoch + 1
        is_retry = retry_on_bump or retry_on_overflow
        if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid_epoch = is_retry or producer_epoch == txn.producer_epoch
        else:
            valid_epoch = producer_epoch == txn.producer_epoch
        if txn.producer_id != producer_id and not retry_on_overflow:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid_epoch:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if state == TxnState.ONGOING:
            return self._prepare_and_complete_v2(txn, commit, empty=False)
        done = InitResult(NO_ERROR, txn.producer_id, txn.producer_epoch)  # a retry's answer
        if state == TxnState.COMPLETE_COMMIT:
            if commit:
                return done if is_retry else InitResult(ErrorCode.INVALID_TXN_STATE)
            return InitResult(ErrorCode.INVALID_TXN_STATE) if is_retry else self._prepare_and_complete_v2(txn, False, empty=True)
        if state == TxnState.COMPLETE_ABORT:
            if commit:
                return InitResult(ErrorCode.INVALID_TXN_STATE)
            return done if is_retry else self._prepare_and_complete_v2(txn, False, empty=True)
        if state == TxnState.EMPTY and not commit:
            return self._prepare_and_complete_v2(txn, False, empty=True)
        if txn.completing and commit == (state == TxnState.PREPARE_COMMIT):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        return InitResult(ErrorCode.INVALID_TXN_STATE)

    def expire_transactional_ids(self, expiration_ms: int) -> list[str]:
        """Kafka's removeExpiredTransactionalIds: ids with no transaction under way (Empty, CompleteCommit,
        CompleteAbort) and no state change for ``expiration_ms`` get a tombstone and are forgotten; a later
        InitProducerId for one starts afresh with a new producer id."""
        cutoff = self.clock() - expiration_ms
        idle = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        expired = [
            txn.transactional_id for txn in self.transactions.values()
            if txn.state in idle and txn.last_update_ms <= cutoff
        ]
        for transactional_id in expired:
            self.log_writer.write(transactional_id, None)
            del self.transactions[transactional_id]
        return expired

    def abort_timed_out(self) -> list[str]:
        """Abort Ongoing transactions older than their timeout, fencing their producer (bumped epoch)."""
        now = self.clock()
        aborted = []
        for txn in list(self.transactions.values()):
            if txn.state == TxnState.ONGOING and txn.start_ms >= 0 and now > txn.start_ms + txn.timeout_ms:
                log.info("aborting transaction of %s: open for %d ms, timeout %d ms",
                         txn.transactional_id, now - txn.start_ms, txn.timeout_ms)
                self._bump_to_end(txn)
                self._prepare_and_complete(txn, commit=False)
                aborted.append(txn.transactional_id)
        return aborted
