"""The log of one partition (``<topic>-<partition>`` directory): append, read, recovery, retention, flushing,
and the producer state of idempotent and transactional producers (see storage.producer_state).

Everything here runs synchronously on the broker's event loop; writes only reach the page cache. The
single blocking step, fsync, is split out: ``prepare_flush`` (loop) → ``FlushTicket.run`` (executor
thread) → ``complete_flush`` (loop), so the loop never waits for the disk.
"""

from __future__ import annotations

import logging
import os
import random
from bisect import bisect_right, insort
from dataclasses import dataclass, field
from pathlib import Path

from ..protocol.primitives import FileRegion
from ..protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    ControlRecordType,
    Record,
    assign_offsets,
    build_control_batch,
    decode_batch,
    parse_control_record,
    parse_header,
    set_log_append_time,
)
from .checkpoint import fsync_dir, read_partition_metadata, write_atomically, write_partition_metadata
from .config import LogConfig
from .errors import InconsistentTopicIdError, InvalidProducerBatchError, OffsetOutOfRangeError
from .leader_epochs import (
    LEADER_EPOCH_CHECKPOINT,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochCache,
    read_leader_epoch_checkpoint,
)
from .producer_state import (
    SNAPSHOT_SUFFIX,
    ActiveProducer,
    AppendOrigin,
    CorruptSnapshotError,
    ProducerAppend,
    ProducerStateManager,
    decode_snapshot,
    last_sequence_of,
    snapshot_path,
)
from .segment import (
    INT32_MAX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    LogSegment,
    remove_segment_files,
)
from .segment_swap import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_SUFFIX,
    change_suffixes,
    recover_interrupted_swap,
    remove_files,
)
from .transaction_index import AbortedTxn
from .clock import Clock, wall_clock_ms  # noqa: F401  (re-exported: the clock of PartitionLog.open)

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1  # DeleteRecords' "up to the high watermark" marker
_LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted")
_SNAPSHOT_TMP_SUFFIX = SNAPSHOT_SUFFIX + ".tmp"
_EPOCHS_TMP = LEADER_EPOCH_CHECKPOINT + ".tmp"


@dataclass(slots=True)
class AppendInfo:
    """What Produce needs back: assigned offsets, the LogAppendTime used (-1 for CreateTime), log start (a value:
    not frozen only because a frozen dataclass costs four times as much to make, once per append).

    ``duplicate``: the batch repeated one of its producer's last five, so nothing was written; the offsets are those
    of the original, and ``log_append_time_ms`` is the original's max timestamp, as Kafka answers a retry.
    """

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    duplicate: bool = False


@dataclass
class FlushTicket:
    """Duplicated descriptors of the dirty files and the offset they make durable.

    ``run`` is blocking and touches nothing but its own descriptors, so an executor thread may run it.
    """

    offset: int
    dir_generation: int
    fds: list[int] = field(default_factory=list)
    snapshot_offsets: list[int] = field(default_factory=list)

    def run(self) -> None:
        """fsync every descriptor, then close them all (also when an fsync fails)."""
        try:
            for fd in self.fds:
                os.fsync(fd)
        finally:
            for fd in self.fds:
                os.close(fd)
            self.fds = []


class PartitionLog:
    """Kafka's UnifiedLog for a single local replica, minus replication."""

    def __init__(self, directory: Path, config: LogConfig, clock: Clock) -> None:
        self.directory = directory
        self._config = config
        self._clock = clock
        self._segments: list[LogSegment] = []
        self._base_offsets: list[int] = []
        self._log_start_offset = 0
        self._recovery_point = 0
        self._last_flush_ms = clock()
        self._dir_generation = 0
        self._dir_synced_generation = 0
        self._topic_id: bytes | None = None
        self._producers = ProducerStateManager()
        self._producers_loaded = False
        self._snapshot_offsets: list[int] = []  # sorted offsets of the <offset>.snapshot files
        self._unsynced_snapshots: set[int] = set()  # written at roll, fsynced by the next flush
        self._epochs = LeaderEpochCache()
        self._epochs_on_disk: list[EpochEntry] = []  # what leader-epoch-checkpoint holds: written only to change it

    # ---- opening and recovery ----

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        clock: Clock = wall_clock_ms,
    ) -> PartitionLog:
        """Load (or create) the partition directory, recovering every segment that may hold unflushed data."""
        self = cls(directory, config, clock)
        if not directory.exists():
            directory.mkdir(parents=True)
            fsync_dir(directory.parent)
        try:
            self._load(recovery_point, log_start_offset)
        except BaseException:
            self.close()
            raise
        return self

    def _load(self, recovery_point: int, log_start_offset: int) -> None:
        """Open segments in offset order; the first truncation ends the log there."""
        directory = self.directory
        bases = self._clean_directory()
        for i, base in enumerate(bases):
            segment = self._new_segment_object(base)
            self._add_segment(segment)
            truncated, problem = self._load_segment(segment, recovery_point)
            if truncated or problem:
                later = bases[i + 1:]
                dropped = truncated + sum(remove_segment_files(directory, b) for b in later)
                log.warning(
                    "Recovery of %s truncated the log at offset %d (position %d): dropped %d bytes%s (%s)",
                    directory, segment.next_offset, segment.size, dropped,
                    f" including {len(later)} later segment(s)" if later else "", problem,
                )
                break
        if not self._segments:
            self._create_segment(log_start_offset)
        self._log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        emptied = self._log_start_offset > self.log_end_offset
        if emptied:
            log.warning("%s: log start offset %d is beyond the log end %d; starting an empty log there",
                        directory, self._log_start_offset, self.log_end_offset)
            self._truncate_fully_and_start_at(self._log_start_offset)
        self._recovery_point = min(max(recovery_point, self._log_start_offset), self.log_end_offset)
        for segment in self._segments:
            segment.txn_index.truncate_to(segment.next_offset)
        self._load_producer_state()
        self._load_leader_epochs(emptied)
        self._topic_id = read_partition_metadata(directory)

    def _clean_directory(self) -> list[int]:
        """Finish or undo an interrupted segment swap, remove other leftovers and orphan indexes; return segment base
        offsets."""
        bases: list[int] = []
        index_files: list[Path] = []
        recover_interrupted_swap(self.directory)
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith(_LEFTOVER_SUFFIXES + (_SNAPSHOT_TMP_SUFFIX,)) or name == _EPOCHS_TMP:
                log.info("Removing leftover file %s", path)
                path.unlink()
                continue
            stem, _, suffix = name.partition(".")
            if not stem.isdigit():
                continue
            if "." + suffix == LOG_SUFFIX:
                bases.append(int(stem))
            elif "." + suffix == SNAPSHOT_SUFFIX:
                self._snapshot_offsets.append(int(stem))
            elif "." + suffix in SEGMENT_SUFFIXES:
                index_files.append(path)
        known = set(bases)
        for path in index_files:
            if int(path.name.partition(".")[0]) not in known:
                log.info("Removing orphan index file %s", path)
                path.unlink()
        self._snapshot_offsets.sort()
        return sorted(bases)

    def _load_segment(self, segment: LogSegment, recovery_point: int) -> tuple[int, str | None]:
        """Trust flushed segments whose indexes check out; fully recover the others."""
        problem = segment.index_problem() or segment.load_trusted()
        if problem is None and segment.next_offset <= recovery_point:
            return 0, None
        if problem is not None and problem.in_index:
            level = logging.INFO if not segment.indexes_existed else logging.WARNING
            log.log(level, "Rebuilding the indexes of %s: %s", segment.log_path, problem.reason)
        return segment.recover(self._config.index_interval_bytes)

    def _load_producer_state(self) -> None:
        """Kafka's loadProducerState: the newest valid snapshot not beyond the log end, then the batches after it.

        Snapshots beyond the log end (its tail was lost) and corrupt ones are deleted. Without a snapshot the state
        is replayed from the first segment.
        """
        end = self.log_end_offset
        for offset in [offset for offset in self._snapshot_offsets if offset > end]:
            log.info("%s: deleting producer snapshot %d beyond the log end %d", self.directory, offset, end)
            self._delete_snapshot(offset)
        start = self._segments[0].base_offset
        while self._snapshot_offsets:
            offset = self._snapshot_offsets[-1]
            path = snapshot_path(self.directory, offset)
            try:
                self._producers.load(decode_snapshot(path.read_bytes()))
            except (FileNotFoundError, CorruptSnapshotError) as exc:
                log.warning("%s: deleting unusable producer snapshot %s: %s", self.directory, path.name, exc)
                self._delete_snapshot(offset)
                continue
            start = max(offset, start)
            break
        self._replay_producer_state(start)
        self._producers_loaded = True

    def _replay_producer_state(self, start: int) -> None:
        """Apply the headers of every batch from ``start`` to the log end, without validation (Kafka's origin
        REPLICATION). Aborts re-create their .txnindex entry if it is missing."""
        replayed = 0
        for segment in self._segments[self._segment_slot(start):]:
            position = segment.index.lookup(start) if segment.base_offset <= start else 0
            for header in segment.headers_from(position):
                if header.last_offset < start:
                    continue
                replayed += 1
                if header.producer_id < 0:
                    continue
                update = self._producers.begin(AppendOrigin.REPLICATION)
                if header.is_control:
                    marker = self._marker_of(segment.read(header.position, header.size), 0)
                    if marker is None:
                        continue
                    completed = update.append_marker(
                        header.producer_id, header.producer_epoch, marker[0], marker[1], header.base_offset,
                        header.max_timestamp,
                    )
                    if completed is not None and completed.is_aborted:
                        entry = AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                                           self._producers.stable_offset_after(completed))
                        if segment.txn_index.ensure(entry):
                            self._dir_generation += 1
                else:
                    update.append_data_batch(
                        header.producer_id, header.producer_epoch, header.base_sequence,
                        last_sequence_of(header.base_sequence, header.last_offset_delta), header.base_offset,
                        header.last_offset, header.max_timestamp, header.is_transactional,
                    )
                self._producers.commit(update)
        if replayed:
            log.info("%s: rebuilt producer state from offset %d (%d batches)", self.directory, start, replayed)

    def _load_leader_epochs(self, emptied: bool) -> None:
        """Kafka's leader-epoch cache at load: the checkpoint, plus the epochs of the batches past the recovery point
        (appended, perhaps never checkpointed: Kafka's recovery assigns them too), cut to the log's start and end.
        A missing or unusable checkpoint is rebuilt from every batch header; a log ``emptied`` at load (its start
        was past its end) has no epochs, as Kafka clears them then. Written back only if it changed."""
        saved = read_leader_epoch_checkpoint(self.directory)
        self._epochs = LeaderEpochCache(None if emptied else saved)
        start = self._segments[0].base_offset if saved is None else self._recovery_point
        scanned = 0
        for segment in self._segments[self._segment_slot(start):]:
            if segment.next_offset <= start:
                continue
            position = segment.index.lookup(start) if segment.base_offset <= start else 0
            for header in segment.headers_from(position):
                scanned += 1
                if header.last_offset >= start and header.partition_leader_epoch > self._epochs.latest_epoch:
                    self._epochs.assign(header.partition_leader_epoch, header.base_offset)
        self._epochs.truncate_from_end(self.log_end_offset)
        self._epochs.truncate_from_start(self._log_start_offset)
        if saved is None and scanned:
            log.info("%s: rebuilt the leader epochs from %d batches: %s", self.directory, scanned,
                     self._epochs.entries)
        self._epochs_on_disk = list(saved or [])
        if saved is None:  # a missing or unreadable file is rebuilt at once
            self._save_leader_epochs()
        # A readable one is not rewritten yet: the broker assigns the leader's epoch next, which often restores what
        # the file holds (an empty log loses its entry at the log end and gets it back); what changes is written then,
        # or at close.

    @staticmethod
    def _marker_of(data: bytes | bytearray, position: int) -> tuple[bool, int] | None:
        """(commit, coordinator epoch) of a control batch at ``position`` of ``data``; None if not COMMIT/ABORT."""
        batch = parse_header(data, position)
        records = decode_batch(data, batch)
        if not records:
            return None
        record_type, coordinator_epoch = parse_control_record(records[0])
        if record_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            return None
        return record_type == ControlRecordType.COMMIT, coordinator_epoch

    # ---- properties ----

    @property
    def config(self) -> LogConfig:
        return self._config

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign."""
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        """Offsets below this are known to be on disk (fsynced)."""
        return self._recovery_point

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def topic_id(self) -> bytes | None:
        return self._topic_id

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._base_offsets)

    @property
    def segments(self) -> list[LogSegment]:
        """The segments in offset order, the active one last (the cleaner plans from them, on the loop)."""
        return list(self._segments)

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO: the first offset of the oldest open transaction (not below the log start), or the high
        watermark (here the log end offset) when none is open. read_committed fetches stop there."""
        first_unstable = self._producers.first_unstable_offset
        end = self.log_end_offset
        if first_unstable is None:
            return end
        return min(max(first_unstable, self._log_start_offset), end)

    @property
    def latest_epoch(self) -> int | None:
        """The newest leader epoch with an entry in the leader-epoch cache (None before any)."""
        latest = self._epochs.latest_epoch
        return None if latest < 0 else latest

    @property
    def leader_epoch_entries(self) -> list[EpochEntry]:
        """The leader-epoch cache: (epoch, start offset) in ascending order."""
        return self._epochs.entries

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """OffsetForLeaderEpoch (Kafka's UnifiedLog.endOffsetForEpoch): (epoch, end offset) from the leader-epoch
        cache, None when the cache does not know the epoch (undefined, or newer than every entry)."""
        epoch, end_offset = self._epochs.end_offset_for(leader_epoch, self.log_end_offset)
        return None if end_offset == UNDEFINED_EPOCH_OFFSET else (epoch, end_offset)

    def epoch_for_offset(self, offset: int) -> int:
        """The leader epoch ``offset`` was written in, from the leader-epoch cache (-1: unknown)."""
        return self._epochs.epoch_for_offset(offset)

    def assign_leader_epoch(self, leader_epoch: int) -> None:
        """A new leader epoch starts at the log end (Kafka's Partition.makeLeader, before any append in that epoch);
        an epoch not newer than the latest is ignored."""
        if leader_epoch > self._epochs.latest_epoch:
            self._assign_epoch(leader_epoch, self.log_end_offset)

    def _assign_epoch(self, leader_epoch: int, start_offset: int) -> None:
        if self._epochs.assign(leader_epoch, start_offset):
            log.debug("%s: leader epoch %d starts at offset %d", self.directory, leader_epoch, start_offset)
            self._save_leader_epochs()

    def _save_leader_epochs(self) -> None:
        """Write leader-epoch-checkpoint now if the cache differs from it (fsynced; rare: a new epoch, a
        truncation). A failure is logged and the write retried at the next change or at close: the batches are
        already in the log, and a restart rebuilds the epochs of any batch past the recovery point."""
        entries = self._epochs.entries
        if entries == self._epochs_on_disk:
            return
        try:
            self._epochs.write(self.directory)
        except OSError as exc:
            log.error("%s: could not write %s: %s", self.directory, LEADER_EPOCH_CHECKPOINT, exc)
        else:
            self._epochs_on_disk = list(entries)

    def _truncate_epochs_from_start(self) -> None:
        """The log start moved (DeleteRecords, retention): Kafka's truncateFromStart."""
        if self._epochs.truncate_from_start(self._log_start_offset):
            self._save_leader_epochs()

    @property
    def snapshot_offsets(self) -> list[int]:
        """Offsets of the producer-state snapshot files (sorted)."""
        return list(self._snapshot_offsets)

    def remove_expired_producers(self, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` (producer.id.expiration.ms); the next snapshot leaves them out."""
        if not self._producers_loaded:
            return 0
        return self._producers.remove_expired(self._clock(), expiration_ms)

    def active_producers(self) -> list[ActiveProducer]:
        """DescribeProducers: every producer this partition knows, by producer id."""
        return self._producers.active_producers()

    def last_records_of_active_producers(self) -> dict[int, tuple[int | None, int]]:
        """Kafka's lastRecordsOfActiveProducers: producer id -> (offset of its last data batch, or None when its
        last write was a marker of a new epoch; its epoch). The cleaner keeps those batches, even emptied."""
        return {
            producer_id: (entry.last_data_offset if entry.last_data_offset >= 0 else None, entry.producer_epoch)
            for producer_id, entry in self._producers.producers.items()
        }

    def producer_epoch(self, producer_id: int) -> tuple[int, bool] | None:
        """The producer's last epoch here and whether it has a transaction open here (None: not known here); what
        Kafka's maybeStartTransactionVerification looks at before asking the transaction coordinator."""
        entry = self._producers.producers.get(producer_id)
        if entry is None:
            return None
        return entry.producer_epoch, entry.current_txn_first_offset is not None

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of each transaction open in this partition."""
        return self._producers.ongoing_transactions

    def update_config(self, config: LogConfig) -> None:
        """Apply a new topic config; like Kafka, index size changes only affect new segments."""
        self._config = config

    def assign_topic_id(self, topic_id: bytes) -> None:
        """Record the topic id in partition.metadata (once; a different id is an error, as in Kafka)."""
        if self._topic_id is not None:
            if self._topic_id != topic_id:
                raise InconsistentTopicIdError(f"{self.directory} already belongs to another topic id")
            return
        write_partition_metadata(self.directory, topic_id)
        self._topic_id = topic_id

    # ---- appending ----

    def append(
        self,
        buf: bytearray,
        headers: list[BatchHeader],
        *,
        leader_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Check producer state, assign offsets (and LogAppendTime) in place, roll if needed, write ``buf`` with one
        pwrite.

        ``headers`` are the parsed batches of ``buf`` (positions relative to it), covering it exactly. Every batch
        with a producer id is checked first (ProducerStateError and nothing written if one fails). A CLIENT batch
        repeating one of its producer's last five is not written again: the AppendInfo then has ``duplicate`` set
        and the original offsets. ``origin=COORDINATOR`` (broker-written batches) skips the sequence checks.
        """
        return self._append(buf, headers, leader_epoch, origin, None)

    def append_control(
        self,
        *,
        commit: bool,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        timestamp_ms: int | None = None,
        leader_epoch: int = 0,
    ) -> AppendInfo:
        """Write a COMMIT or ABORT marker for ``producer_id`` and end its transaction in this partition.

        An abort adds an entry to the active segment's .txnindex. A marker for a producer with no open transaction
        here is written all the same (as Kafka does). A marker from an older producer epoch raises
        InvalidProducerEpochError, one from an older coordinator epoch TransactionCoordinatorFencedError.
        """
        if producer_id < 0:
            raise ValueError(f"a transaction marker needs a producer id, not {producer_id}")
        timestamp = self._clock() if timestamp_ms is None else timestamp_ms
        buf = build_control_batch(
            commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch, timestamp=timestamp,
        )
        return self._append(buf, [parse_header(buf)], leader_epoch, AppendOrigin.COORDINATOR,
                            (commit, coordinator_epoch))

    def _append(
        self,
        buf: bytearray,
        headers: list[BatchHeader],
        leader_epoch: int,
        origin: AppendOrigin,
        marker: tuple[bool, int] | None,
    ) -> AppendInfo:
        if not headers or sum(header.size for header in headers) != len(buf):
            raise ValueError("headers must describe every batch of the buffer")
        now = self._clock()
        append_time = now if self._config.log_append_time else -1
        update = self._producers.begin(origin)
        next_offset = self.log_end_offset
        for header in headers:
            first_offset = next_offset
            next_offset = first_offset + header.last_offset_delta + 1
            duplicate = self._check_producer_batch(buf, header, first_offset, append_time, update, marker)
            if duplicate is not None:
                return duplicate
        next_offset = self.log_end_offset
        for header in headers:
            assign_offsets(buf, header, next_offset, leader_epoch)
            next_offset = header.last_offset + 1
        if self._config.log_append_time:
            for header in headers:
                set_log_append_time(buf, header, now)
        max_timestamp = max(header.max_timestamp for header in headers)
        segment = self._maybe_roll(len(buf), max_timestamp, headers[-1].last_offset, now)
        segment.append(buf, headers, self._config.index_interval_bytes)
        if update.completed:
            self._complete_transactions(segment, update)
        elif update.staged:
            self._producers.commit(update)
        if leader_epoch > self._epochs.latest_epoch:
            self._assign_epoch(leader_epoch, headers[0].base_offset)
        return AppendInfo(headers[0].base_offset, headers[-1].last_offset, append_time, self._log_start_offset)

    def _complete_transactions(self, segment: LogSegment, update: ProducerAppend) -> None:
        """Commit the state of an append holding markers; aborts go to the segment's .txnindex, with the LSO as
        it is once they complete (computed before the state changes)."""
        aborted = [
            AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, self._producers.stable_offset_after(txn))
            for txn in update.completed
            if txn.is_aborted
        ]
        self._producers.commit(update)
        for entry in aborted:
            if segment.txn_index.append(entry):
                self._dir_generation += 1

    def _check_producer_batch(
        self,
        buf: bytearray,
        header: BatchHeader,
        first_offset: int,
        append_time: int,
        update: ProducerAppend,
        marker: tuple[bool, int] | None,
    ) -> AppendInfo | None:
        """Validate one batch against producer state and stage its change; an AppendInfo if it is a duplicate."""
        client = update.origin is AppendOrigin.CLIENT
        if client and header.is_control:
            raise InvalidProducerBatchError("Clients are not allowed to write control records")
        producer_id = header.producer_id
        if producer_id < 0:
            return None
        last_sequence = last_sequence_of(header.base_sequence, header.last_offset_delta)
        if client:
            if header.base_sequence < 0:
                raise InvalidProducerBatchError(
                    f"Invalid sequence number {header.base_sequence} in record batch with producerId {producer_id}"
                )
            original = self._producers.find_duplicate(
                producer_id, header.producer_epoch, header.base_sequence, last_sequence
            )
            if original is not None:
                log.debug("%s: duplicate batch of producer %d (sequence %d..%d) stored at offset %d",
                          self.directory, producer_id, header.base_sequence, last_sequence, original.first_offset)
                return AppendInfo(original.first_offset, original.last_offset, original.timestamp,
                                  self._log_start_offset, duplicate=True)
        timestamp = append_time if self._config.log_append_time else header.max_timestamp
        if header.is_control:
            if marker is None:
                marker = self._marker_of(buf, header.position)
                if marker is None:
                    return None
            update.append_marker(producer_id, header.producer_epoch, marker[0], marker[1], first_offset, timestamp)
        else:
            update.append_data_batch(
                producer_id, header.producer_epoch, header.base_sequence, last_sequence, first_offset,
                first_offset + header.last_offset_delta, timestamp, header.is_transactional,
            )
        return None

    def _maybe_roll(self, size: int, max_timestamp: int, last_offset: int, now: int) -> LogSegment:
        """Kafka's LogSegment.shouldRoll; an empty segment never rolls."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        config = self._config
        rolling_ts = active.first_batch_timestamp
        waited = max_timestamp - rolling_ts if rolling_ts is not None and rolling_ts >= 0 else now - active.created_ms
        if (
            active.size > config.segment_size - size
            or waited > config.roll_ms - active.roll_jitter_ms
            or active.index.is_full
            or active.time_index.is_full
            or last_offset - active.base_offset > INT32_MAX
        ):
            return self.roll()
        return active

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (a no-op when the active one is empty)."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        active.on_become_inactive()
        segment = self._create_segment(self.log_end_offset)
        log.info("Rolled %s to a new segment at offset %d", self.directory, segment.base_offset)
        # Kafka snapshots the producer state at every roll, so recovery replays at most the newer segments.
        try:
            self._take_snapshot(sync=False)
        except OSError as exc:  # only makes a later recovery replay more
            log.error("%s: could not write the producer state snapshot: %s", self.directory, exc)
        self._delete_old_snapshots()
        return segment

    def _new_segment_object(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory, base_offset,
            max_index_bytes=self._config.segment_index_bytes, created_ms=self._clock(),
        )
        jitter = min(self._config.segment_jitter_ms, self._config.segment_ms)
        segment.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0
        return segment

    def _create_segment(self, base_offset: int) -> LogSegment:
        remove_segment_files(self.directory, base_offset)
        segment = self._new_segment_object(base_offset)
        self._add_segment(segment)
        self._dir_generation += 1
        return segment

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._base_offsets.append(segment.base_offset)

    # ---- reading ----

    def read(self, offset: int, max_bytes: int, *, upper_offset: int | None = None) -> bytes:
        """Whole batches from the one containing ``offset``, up to ``max_bytes`` but at least one batch.

        Batches whose base offset is >= ``upper_offset`` are left out; one segment is read per call.
        """
        found = self._locate(offset, upper_offset)
        if found is None:
            return b""
        segment, first = found
        return self._read_bytes(segment, first, max_bytes, _read_end(segment, upper_offset)[0])

    def _locate(self, offset: int, upper_offset: int | None) -> tuple[LogSegment, BatchHeader] | None:
        """The segment and the first batch a read from ``offset`` starts with; None when no batch below
        ``upper_offset`` holds or follows ``offset``."""
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self.log_end_offset)
        if upper_offset is not None and offset >= upper_offset:
            return None
        for segment in self._segments[self._segment_slot(offset):]:
            if offset >= segment.next_offset:
                continue
            first = segment.find_batch(offset)
            if first is None:
                continue
            if upper_offset is not None and first.base_offset >= upper_offset:
                return None
            return segment, first
        return None

    @staticmethod
    def _read_bytes(segment: LogSegment, first: BatchHeader, max_bytes: int, end: int) -> bytes:
        """Whole batches from ``first`` up to ``max_bytes`` (at least ``first``), none past position ``end`` (a batch
        boundary): cut only when ``max_bytes`` falls short of ``end``, and then at the last whole batch."""
        length = max(first.size, min(max_bytes, end - first.position))
        data = segment.read(first.position, length)
        if first.position + length >= end:
            return data
        return data[:_whole_batches_end(data, first.size)]

    def read_region(
        self, offset: int, max_bytes: int, *, upper_offset: int | None = None, min_region_bytes: int = 64 * 1024
    ) -> tuple[bytes | FileRegion, int | None]:
        """``read`` for Fetch: an answer of at least ``min_region_bytes`` is a FileRegion of the segment file (sent
        with sendfile, never copied through Python), smaller ones are bytes as ``read`` returns them.

        A region ends at a batch boundary known without reading the data: the segment end, the batch at
        ``upper_offset``, or the last offset-index entry within ``max_bytes`` (so it may stop up to one index
        interval short of the limit; the first batch is always whole). Returns (data, end) where ``end`` is an
        offset at or above the one after the last returned batch (None for bytes: read it from them).
        """
        found = self._locate(offset, upper_offset)
        if found is None:
            return b"", None
        segment, first = found
        start = first.position
        end, end_offset = _read_end(segment, upper_offset)
        limit = start + max(first.size, max_bytes)
        if end - start < min_region_bytes or limit - start < min_region_bytes:
            return self._read_bytes(segment, first, max_bytes, end), None
        if end > limit:
            entry = segment.index.floor_by_position(limit)
            if entry is not None and entry[1] > start + first.size:
                end, end_offset = entry[1], entry[0] + 1  # that entry's batch is left out: an upper bound
            else:
                end, end_offset = start + first.size, first.last_offset + 1
        return FileRegion(segment.fd, start, end - start), end_offset

    def _segment_slot(self, offset: int) -> int:
        return max(bisect_right(self._base_offsets, offset) - 1, 0)

    def aborted_transactions(self, fetch_offset: int, upper_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping [fetch_offset, upper_offset).

        Kafka's collectAbortedTransactions: the .txnindex of the segment holding ``fetch_offset`` and of the later
        ones, until an entry's LSO reaches ``upper_offset``. For a fetch, ``upper_offset`` is the offset after the
        last returned batch.
        """
        return [(entry.producer_id, entry.first_offset) for entry in self.aborted_entries(fetch_offset, upper_offset)]

    def aborted_entries(self, fetch_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """The .txnindex entries of the aborted transactions overlapping [fetch_offset, upper_offset), with the
        offset of each one's ABORT marker (``last_offset``)."""
        found: list[AbortedTxn] = []
        for segment in self._segments[self._segment_slot(fetch_offset):]:
            entries, complete = segment.txn_index.collect(fetch_offset, upper_offset)
            found.extend(entries)
            if complete:
                break
        return found

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """ListOffsets by timestamp: (offset, timestamp) of the first record with timestamp >= ``timestamp_ms``."""
        start_offset = self._log_start_offset
        for segment in self._segments:
            if segment.max_timestamp < timestamp_ms or segment.next_offset <= start_offset:
                continue
            scan_from = max(segment.time_index.lookup(timestamp_ms), start_offset)
            for header in segment.headers_from(segment.index.lookup(scan_from)):
                if header.max_timestamp < timestamp_ms or header.last_offset < start_offset:
                    continue
                for record in self._decode(segment, header):
                    if record.timestamp >= timestamp_ms and record.offset >= start_offset:
                        return record.offset, record.timestamp
        return None

    def offsets_before(self, timestamp_ms: int, max_count: int) -> list[int]:
        """ListOffsets v0 (Kafka's UnifiedLog.legacyFetchOffsetsBefore): the base offsets of the segments last modified
        at or before ``timestamp_ms`` (the log end offset, stamped now, stands for a non-empty active segment), newest
        first and at most ``max_count``; -1 asks for the latest alone, -2 for the earliest."""
        entries = [(max(segment.base_offset, self._log_start_offset), segment.last_modified_ms())
                   for segment in self._segments]
        if self._segments[-1].size > 0:
            entries.append((self.log_end_offset, self._clock()))
        if timestamp_ms == -1:
            start = len(entries) - 1
        elif timestamp_ms == -2:
            start = 0
        else:
            start = len(entries) - 1
            while start >= 0 and entries[start][1] > timestamp_ms:
                start -= 1
        count = min(max_count, start + 1)
        return sorted((entries[start - i][0] for i in range(count)), reverse=True)

    def max_timestamp_entry(self) -> tuple[int, int] | None:
        """ListOffsets MAX_TIMESTAMP (-3): (offset, timestamp) of the first record carrying the largest timestamp."""
        best = max(self._segments, key=lambda segment: segment.max_timestamp)
        target = best.max_timestamp
        for header in best.headers_from(best.index.lookup(best.offset_of_max_timestamp)):
            if header.max_timestamp == target:
                for record in self._decode(best, header):
                    if record.timestamp == target:
                        return record.offset, record.timestamp
        return None

    @staticmethod
    def _decode(segment: LogSegment, header: BatchHeader) -> list[Record]:
        data = segment.read(header.position, header.size)
        return decode_batch(data, parse_header(data, 0))

    # ---- deleting data ----

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: advance the log start offset (never past the high watermark); returns it."""
        high_watermark = self.log_end_offset
        if offset == HIGH_WATERMARK:
            offset = high_watermark
        if offset < 0 or offset > high_watermark:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, high_watermark)
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._delete_segments_below_log_start()
            self._truncate_epochs_from_start()
        return self._log_start_offset

    def enforce_retention(self) -> int:
        """Delete old segments by log start offset, retention.bytes and retention.ms; returns how many.

        Like Kafka's deleteOldSegments, but the active segment is never deleted.
        """
        deleted = self._delete_old_segments()
        if deleted:
            self._truncate_epochs_from_start()
        return deleted

    def _delete_old_segments(self) -> int:
        deleted = self._delete_segments_below_log_start()
        if not self._config.delete:
            return deleted
        retention_bytes = self._config.retention_bytes
        if retention_bytes >= 0:
            excess = self.size_bytes - retention_bytes
            while len(self._segments) > 1 and excess - self._segments[0].size >= 0:
                excess -= self._segments[0].size
                self._delete_oldest_segment("retention.bytes")
                deleted += 1
        retention_ms = self._config.retention_ms
        if retention_ms >= 0:
            now = self._clock()
            while len(self._segments) > 1 and now - self._segments[0].largest_timestamp() > retention_ms:
                self._delete_oldest_segment("retention.ms")
                deleted += 1
        return deleted

    def _delete_segments_below_log_start(self) -> int:
        deleted = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            self._delete_oldest_segment("log start offset")
            deleted += 1
        return deleted

    def _delete_oldest_segment(self, reason: str) -> None:
        """Delete the segment's files (.txnindex included) and the producer snapshots taken inside it; the
        producer state itself is kept."""
        segment = self._segments.pop(0)
        self._base_offsets.pop(0)
        segment.delete()
        for offset in [o for o in self._snapshot_offsets if o < self._segments[0].base_offset]:
            self._delete_snapshot(offset)
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        log.info("Deleted segment %s (%s); log start offset is now %d", segment.log_path, reason,
                 self._log_start_offset)

    def replace_segments(self, old: list[LogSegment]) -> LogSegment:
        """Swap in the segment the cleaner wrote as ``<first old base>.*.cleaned`` for ``old`` (consecutive, not the
        active one), in Kafka's crash-safe order (see storage.segment_swap); returns the new segment. Producer state
        and snapshots stay: the cleaner keeps the last batch of every producer."""
        first = next((i for i, segment in enumerate(self._segments) if segment is old[0]), -1)
        if first < 0 or self._segments[first:first + len(old)] != old or first + len(old) >= len(self._segments):
            raise ValueError(f"{self.directory}: the segments to replace are no longer all in the log")
        directory, base = self.directory, old[0].base_offset
        change_suffixes(directory, base, CLEANED_SUFFIX, SWAP_SUFFIX)
        for segment in old:
            segment.close()
            change_suffixes(directory, segment.base_offset, "", DELETED_SUFFIX)
        change_suffixes(directory, base, SWAP_SUFFIX, "")
        for segment in old:
            remove_files(directory, segment.base_offset, DELETED_SUFFIX)
        segment = self._new_segment_object(base)
        problem = segment.index_problem() or segment.load_trusted()
        if problem is not None:
            log.warning("%s: rebuilding the indexes of the cleaned segment %d: %s", directory, base, problem.reason)
            segment.recover(self._config.index_interval_bytes)
        self._segments[first:first + len(old)] = [segment]
        self._base_offsets[first:first + len(old)] = [base]
        self._dir_generation += 1
        return segment

    def empty(self) -> bool:
        """Nothing was ever written (or everything was removed): the log starts and ends at offset 0."""
        return self.log_end_offset == 0 and self._log_start_offset == 0

    def truncate_fully(self) -> None:
        """Make the log a new one: no records, starting at offset 0 (a broker reset keeps a partition this way
        instead of deleting and re-creating it)."""
        self._truncate_fully_and_start_at(0)
        self._log_start_offset = 0
        self._recovery_point = 0

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        """Kafka's truncateFullyAndStartAt: no data, no producer state, no snapshots."""
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._base_offsets.clear()
        self._create_segment(offset)
        self._producers.clear()
        for snapshot in list(self._snapshot_offsets):
            self._delete_snapshot(snapshot)
        if self._epochs.clear():
            self._save_leader_epochs()

    # ---- producer-state snapshots ----

    def _take_snapshot(self, *, sync: bool) -> None:
        """Write ``<log end>.snapshot`` unless the newest snapshot is already there.

        ``sync`` (clean close) fsyncs it at once; otherwise (roll, on the event loop) the next flush does.
        """
        offset = self.log_end_offset
        if self._snapshot_offsets and self._snapshot_offsets[-1] >= offset:
            return
        path = snapshot_path(self.directory, offset)
        data = self._producers.snapshot()
        if sync:
            write_atomically(path, data)
        else:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self._unsynced_snapshots.add(offset)
            self._dir_generation += 1
        insort(self._snapshot_offsets, offset)

    def _delete_snapshot(self, offset: int) -> None:
        snapshot_path(self.directory, offset).unlink(missing_ok=True)
        self._snapshot_offsets.remove(offset)
        self._unsynced_snapshots.discard(offset)

    def _delete_old_snapshots(self) -> None:
        """Kafka's deleteSnapshotsAfterRecoveryPointCheckpoint: keep the snapshots from the start of the segment
        before the active one, and from the segment holding the recovery point if that is older."""
        previous = self._segments[-2] if len(self._segments) > 1 else self._segments[-1]
        recovery_segment = self._segments[self._segment_slot(self._recovery_point)]
        keep_from = min(previous.base_offset, recovery_segment.base_offset)
        for offset in [o for o in self._snapshot_offsets if o < keep_from]:
            self._delete_snapshot(offset)

    # ---- flushing ----

    def needs_flush(self, now_ms: int) -> bool:
        """flush.messages / flush.ms say the unflushed tail should be fsynced now."""
        unflushed = self.log_end_offset - self._recovery_point
        if unflushed <= 0:
            return False
        return unflushed >= self._config.flush_messages or now_ms - self._last_flush_ms >= self._config.flush_ms

    def prepare_flush(self) -> FlushTicket | None:
        """Duplicate the descriptors of everything not yet durable; None when nothing is."""
        end = self.log_end_offset
        dir_dirty = self._dir_generation > self._dir_synced_generation
        if end <= self._recovery_point and not dir_dirty:
            return None
        ticket = FlushTicket(offset=end, dir_generation=self._dir_generation)
        try:
            for segment in self._segments:
                if segment.next_offset > self._recovery_point:
                    ticket.fds.extend(segment.open_for_sync())
            for offset in sorted(self._unsynced_snapshots):
                ticket.fds.append(os.open(snapshot_path(self.directory, offset), os.O_RDONLY))
                ticket.snapshot_offsets.append(offset)
            if dir_dirty:
                ticket.fds.append(os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY))
        except OSError:
            for fd in ticket.fds:
                os.close(fd)
            raise
        return ticket

    def complete_flush(self, ticket: FlushTicket) -> None:
        """After ``ticket.run()``: everything below ``ticket.offset`` is durable."""
        self._recovery_point = max(self._recovery_point, min(ticket.offset, self.log_end_offset))
        self._dir_synced_generation = max(self._dir_synced_generation, ticket.dir_generation)
        self._unsynced_snapshots.difference_update(ticket.snapshot_offsets)
        self._last_flush_ms = self._clock()
        self._delete_old_snapshots()

    def flush_now(self) -> None:
        """The three flush steps synchronously (shutdown, tests)."""
        ticket = self.prepare_flush()
        if ticket is not None:
            ticket.run()
            self.complete_flush(ticket)

    # ---- lifecycle ----

    def close(self, *, snapshot: bool = True) -> None:
        """Snapshot the producer state at the log end (fsynced; not when ``snapshot`` is False, e.g. before
        deleting the log), finish the time indexes, trim and close every file (no fsync of the log: flush first
        if needed)."""
        if snapshot and self._producers_loaded and self._segments and self._segments[-1].fd >= 0:
            try:
                self._take_snapshot(sync=True)
            except OSError as exc:
                log.error("%s: could not write the producer state snapshot: %s", self.directory, exc)
            self._save_leader_epochs()
        self._close_segments()

    def _close_segments(self) -> None:
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        self._close_segments()
        import shutil  # here: rarely needed, and not cheap to import at start-up

        shutil.rmtree(self.directory, ignore_errors=True)


def _read_end(segment: LogSegment, upper_offset: int | None) -> tuple[int, int]:
    """Where a read of ``segment`` stops, as (position, offset): the segment's end, or the boundary before the first
    batch at or past ``upper_offset`` (after the batch holding it, when it falls inside one)."""
    if upper_offset is not None and upper_offset < segment.next_offset:
        bound = segment.find_batch(upper_offset)
        if bound is not None:
            if bound.base_offset >= upper_offset:
                return bound.position, upper_offset
            return bound.position + bound.size, bound.last_offset + 1
    return segment.size, segment.next_offset


def _whole_batches_end(data: bytes, first_size: int) -> int:
    """Length of the prefix of ``data`` made of whole batches (the first is always kept)."""
    end = first_size
    while end + BATCH_HEADER_SIZE <= len(data):
        size = parse_header(data, end).size
        if end + size > len(data):
            break
        end += size
    return end
