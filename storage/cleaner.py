"""Log compaction for topics with ``cleanup.policy=compact`` (and ``compact,delete``): Kafka's LogCleaner.

Each run cleans the logs that are due, filthiest first (see storage.cleaner_plan): the latest record of each key in
the closed segments below the first uncleanable offset stays, with its offset (so offsets get gaps); aborted
transactional records go, markers go once their transaction has nothing left and their delete horizon passed, and
tombstones go once the delete horizon that the first cleaning stamped on their batch (``delete.retention.ms`` later,
KIP-534) has passed. The first dirty offset of each log is kept in ``cleaner-offset-checkpoint``.

Why an executor thread and not slices on the loop: cleaning decodes, filters, re-encodes, recompresses and fsyncs
whole segments, which is long, blocking work with no natural small step; run on the loop it would stall every
client for the duration of a segment. So the reading and writing run in the default executor (storage.cleaner_work),
through duplicated descriptors and into ``.cleaned`` files nobody else uses, while everything that reads or
changes a log's in-memory state (planning, the swap, the checkpoint bookkeeping) stays on the loop thread, as the
broker's single-threaded design requires. Compression, file I/O and fsync release the GIL; pure-Python decoding
shares it, so the loop still gets the interpreter every switch interval (5 ms) while a log is being cleaned.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .checkpoint import fsync_dir, read_offset_checkpoint, write_offset_checkpoint
from .cleaner_plan import (
    LogToClean,
    PartitionKey,
    SegmentSource,
    group_segments_by_size,
    log_to_clean,
    segments_between,
    snapshot_segment,
)
from .cleaner_txn import CleanedTransactions
from .cleaner_work import (
    CleanedSegment,
    CleaningAborted,
    CleaningRound,
    OffsetMap,
    build_offset_map,
    clean_group,
)
from .errors import CorruptFileError
from .log_manager import LogManager
from .partition_log import Clock, PartitionLog
from .segment import LogSegment
from .segment_swap import CLEANED_SUFFIX, remove_files

log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DEFAULT_OFFSET_MAP_KEYS = 500_000  # bounds one pass's memory, as Kafka's log.cleaner.dedupe.buffer.size does

T = TypeVar("T")


@dataclass(frozen=True)
class CleanerStats:
    """The outcome of cleaning one log (what Kafka's cleaner logs as its stats)."""

    first_dirty_offset: int
    end_offset: int  # the new first dirty offset
    bytes_read: int
    bytes_written: int
    records_read: int
    records_kept: int
    segments_cleaned: int
    elapsed_ms: float


class LogCleaner:
    """Cleans the compacted logs of a LogManager; all its methods run on the broker's event loop."""

    def __init__(self, logs: LogManager, clock: Clock, *, offset_map_keys: int = DEFAULT_OFFSET_MAP_KEYS) -> None:
        self._logs = logs
        self._clock = clock
        self._offset_map_keys = offset_map_keys
        self._checkpoints: dict[PartitionKey, tuple[PartitionLog, int]] | None = None
        self._uncleanable: dict[PartitionKey, PartitionLog] = {}
        self._abort = threading.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    # ---- running ----

    async def clean_due_logs(self) -> int:
        """One run of Kafka's cleaner thread: clean every log that is due, filthiest first, each at most once;
        returns how many were cleaned."""
        if self._abort.is_set() or not self._idle.is_set():  # stopped, or a run is already under way
            return 0
        self._idle.clear()
        try:
            cleaned: set[PartitionKey] = set()
            while not self._abort.is_set():
                target = self.filthiest_log(exclude=cleaned)
                if target is None:
                    break
                cleaned.add(target.key)
                await self.clean(target)
            return len(cleaned)
        finally:
            self._idle.set()

    async def stop(self) -> None:
        """Abort the cleaning under way (its partial files are removed) and wait for it; no cleaning after this."""
        self._abort.set()
        await self._idle.wait()

    # ---- choosing ----

    def filthiest_log(self, exclude: set[PartitionKey] | frozenset[PartitionKey] = frozenset()) -> LogToClean | None:
        """Kafka's grabFilthiestCompactedLog: the compacted log with the highest dirty ratio among those due."""
        now = self._clock()
        best: LogToClean | None = None
        for topic, partition, partition_log in list(self._logs.logs()):
            key = (topic, partition)
            if key in exclude or not partition_log.config.compact or self._uncleanable.get(key) is partition_log:
                continue
            candidate = log_to_clean(key, partition_log, self.checkpoint_of(key, partition_log), now)
            if candidate.is_filthy and (best is None or candidate.cleanable_ratio > best.cleanable_ratio):
                best = candidate
        return best

    def checkpoint_of(self, key: PartitionKey, partition_log: PartitionLog) -> int | None:
        """The first dirty offset recorded for this log (None: never cleaned)."""
        entry = self._load_checkpoints().get(key)
        return entry[1] if entry is not None and entry[0] is partition_log else None

    # ---- cleaning one log ----

    async def clean(self, target: LogToClean) -> CleanerStats | None:
        """Kafka's Cleaner.clean: map the dirty range, clean the log below the end of the map group by group, then
        record the new first dirty offset. Returns None when the cleaning was aborted or failed."""
        partition_log = target.log
        started = time.monotonic()
        log.info("Beginning cleaning of %s-%d (dirty offsets %d to %d)", *target.key, target.first_dirty_offset,
                 target.first_uncleanable_offset)
        try:
            offset_map = await self._map_dirty_range(target)
            end_offset = offset_map.latest_offset + 1
            if end_offset <= target.first_dirty_offset:  # nothing dirty to map: only move the checkpoint on
                end_offset = max(target.first_dirty_offset, target.first_uncleanable_offset)
                cleaned: list[CleanedSegment] = []
            else:
                cleaned = await self._clean_segments(target, offset_map, end_offset)
        except CleaningAborted:
            log.info("Cleaning of %s-%d aborted", *target.key)
            return None
        except Exception:
            if self._logs.get_log(*target.key) is not partition_log:
                log.info("Cleaning of %s-%d stopped: the partition was deleted", *target.key)
                return None
            log.exception("Cleaning of %s-%d failed; it will not be cleaned again until restart", *target.key)
            self._uncleanable[target.key] = partition_log
            return None
        await self._save_checkpoint(target.key, partition_log, end_offset)
        stats = CleanerStats(
            target.first_dirty_offset, end_offset, sum(c.bytes_read for c in cleaned),
            sum(c.bytes_written for c in cleaned), sum(c.records_read for c in cleaned),
            sum(c.records_kept for c in cleaned), len(cleaned), (time.monotonic() - started) * 1000,
        )
        log.info(
            "Cleaned %s-%d up to offset %d in %.0f ms: %d segment(s), %d of %d bytes and %d of %d records kept",
            *target.key, end_offset, stats.elapsed_ms, stats.segments_cleaned, stats.bytes_written, stats.bytes_read,
            stats.records_kept, stats.records_read,
        )
        return stats

    async def _map_dirty_range(self, target: LogToClean) -> OffsetMap:
        segments = target.log.segments
        dirty = segments_between(segments, target.first_dirty_offset, target.first_uncleanable_offset)
        sources = self._sources(segments, dirty, target.first_uncleanable_offset, target.first_dirty_offset)
        return await self._in_thread(
            sources, build_offset_map, sources, target.first_dirty_offset, self._offset_map_keys, self._abort
        )

    async def _clean_segments(self, target: LogToClean, offset_map: OffsetMap, end_offset: int) -> list[CleanedSegment]:
        """Clean [log start, ``end_offset``) group by group, swapping each cleaned segment in as soon as it is
        written (Kafka's doClean and cleanSegments)."""
        partition_log = target.log
        config = partition_log.config
        cleaning = CleaningRound(
            partition_log.directory, self._clock(), config.delete_retention_ms, target.first_uncleanable_offset,
            partition_log.last_records_of_active_producers(), config.index_interval_bytes,
            config.segment_index_bytes, self._abort,
        )
        txns = CleanedTransactions()
        segments = partition_log.segments
        groups = group_segments_by_size(
            segments_between(segments, -1, end_offset), config.segment_size, config.segment_index_bytes,
            target.first_uncleanable_offset,
        )
        cleaned = []
        for group in groups:
            current = partition_log.segments
            if not {id(segment) for segment in group} <= {id(segment) for segment in current}:
                log.info("Segments of %s-%d were deleted during its cleaning", *target.key)
                raise CleaningAborted()
            sources = self._sources(current, group, None, None)
            result = await self._in_thread(sources, clean_group, sources, offset_map, txns, cleaning)
            self._swap(target, group)
            await self._in_thread([], fsync_dir, partition_log.directory)
            cleaned.append(result)
        return cleaned

    def _swap(self, target: LogToClean, group: list[LogSegment]) -> None:
        """Replace ``group`` by its cleaned segment, unless the log changed under the cleaning (deleted topic,
        segments removed by retention): then the cleaned files go and the cleaning stops."""
        partition_log = target.log
        try:
            if self._logs.get_log(*target.key) is not partition_log:
                raise ValueError("the partition was deleted")
            partition_log.replace_segments(group)
        except ValueError as exc:
            remove_files(partition_log.directory, group[0].base_offset, CLEANED_SUFFIX)
            log.info("Not swapping the cleaned segment %d of %s-%d in: %s", group[0].base_offset, *target.key, exc)
            raise CleaningAborted() from exc

    @staticmethod
    def _sources(segments: list[LogSegment], chosen: list[LogSegment], upper: int | None,
                 start_offset: int | None) -> list[SegmentSource]:
        """SegmentSources for consecutive ``chosen`` segments; each one's aborted transactions are collected up to the
        next chosen segment, and for the last up to ``upper`` (default: its next offset), as Kafka does."""
        sources: list[SegmentSource] = []
        try:
            for i, segment in enumerate(chosen):
                if i + 1 < len(chosen):
                    bound = chosen[i + 1].base_offset
                else:
                    bound = segment.next_offset if upper is None else min(upper, segment.next_offset)
                sources.append(snapshot_segment(segments, segment, bound, start_offset if i == 0 else None))
        except BaseException:
            for source in sources:
                source.close()
            raise
        return sources

    async def _in_thread(self, sources: list[SegmentSource], function: Callable[..., T], *args: Any) -> T:
        """Run ``function`` in the default executor; the thread closes ``sources`` (their descriptors are its own)."""

        def run() -> T:
            try:
                return function(*args)
            finally:
                for source in sources:
                    source.close()

        try:
            future = asyncio.get_running_loop().run_in_executor(None, run)
        except BaseException:
            for source in sources:
                source.close()
            raise
        return await future

    # ---- cleaner-offset-checkpoint ----

    def _load_checkpoints(self) -> dict[PartitionKey, tuple[PartitionLog, int]]:
        """Read the file once; each entry is tied to the log open at that time, so a re-created topic starts over."""
        if self._checkpoints is None:
            path = self._logs.path_of(CLEANER_OFFSET_CHECKPOINT)
            try:
                offsets = read_offset_checkpoint(path)
            except CorruptFileError as exc:
                log.warning("Ignoring %s: %s", path, exc)
                offsets = {}
            self._checkpoints = {}
            for key, offset in offsets.items():
                partition_log = self._logs.get_log(*key)
                if partition_log is not None:
                    self._checkpoints[key] = (partition_log, offset)
        return self._checkpoints

    async def _save_checkpoint(self, key: PartitionKey, partition_log: PartitionLog, offset: int) -> None:
        checkpoints = self._load_checkpoints()
        checkpoints[key] = (partition_log, offset)
        current = {
            entry_key: entry_offset
            for entry_key, (entry_log, entry_offset) in checkpoints.items()
            if self._logs.get_log(*entry_key) is entry_log
        }
        try:
            await self._in_thread([], write_offset_checkpoint, self._logs.path_of(CLEANER_OFFSET_CHECKPOINT), current)
        except OSError as exc:
            log.error("Could not write %s: %s", CLEANER_OFFSET_CHECKPOINT, exc)
