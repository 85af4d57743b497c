"""The log of one partition (``<topic>-<partition>`` directory): append, read, recovery, retention, flushing.

Everything here runs synchronously on the broker's event loop; writes only reach the page cache. The
single blocking step, fsync, is split out: ``prepare_flush`` (loop) → ``FlushTicket.run`` (executor
thread) → ``complete_flush`` (loop), so the loop never waits for the disk.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    Record,
    assign_offsets,
    decode_batch,
    parse_header,
    set_log_append_time,
)
from storage.checkpoint import fsync_dir, read_partition_metadata, write_partition_metadata
from storage.config import LogConfig
from storage.errors import InconsistentTopicIdError, OffsetOutOfRangeError
from storage.segment import (
    INT32_MAX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    LogSegment,
    remove_segment_files,
)

log = logging.getLogger(__name__)

Clock = Callable[[], int]
HIGH_WATERMARK = -1  # DeleteRecords' "up to the high watermark" marker
_LEFTOVER_SUFFIXES = (".cleaned", ".swap", ".deleted")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What Produce needs back: assigned offsets, the LogAppendTime used (-1 for CreateTime), log start."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass
class FlushTicket:
    """Duplicated descriptors of the dirty files and the offset they make durable.

    ``run`` is blocking and touches nothing but its own descriptors, so an executor thread may run it.
    """

    offset: int
    dir_generation: int
    fds: list[int] = field(default_factory=list)

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
    """Kafka's UnifiedLog for a single local replica, minus replication and producer state."""

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
        if self._log_start_offset > self.log_end_offset:
            log.warning("%s: log start offset %d is beyond the log end %d; starting an empty log there",
                        directory, self._log_start_offset, self.log_end_offset)
            self._truncate_fully_and_start_at(self._log_start_offset)
        self._recovery_point = min(max(recovery_point, self._log_start_offset), self.log_end_offset)
        self._topic_id = read_partition_metadata(directory)

    def _clean_directory(self) -> list[int]:
        """Remove leftovers of interrupted cleaning/deletion and orphan indexes; return segment base offsets."""
        bases: list[int] = []
        index_files: list[Path] = []
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith(_LEFTOVER_SUFFIXES):
                log.info("Removing leftover file %s", path)
                path.unlink()
                continue
            stem, _, suffix = name.partition(".")
            if not stem.isdigit():
                continue
            if "." + suffix == LOG_SUFFIX:
                bases.append(int(stem))
            elif "." + suffix in SEGMENT_SUFFIXES:
                index_files.append(path)
        known = set(bases)
        for path in index_files:
            if int(path.name.partition(".")[0]) not in known:
                log.info("Removing orphan index file %s", path)
                path.unlink()
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

    def append(self, buf: bytearray, headers: list[BatchHeader], *, leader_epoch: int = 0) -> AppendInfo:
        """Assign offsets (and LogAppendTime) in place, roll if needed, write ``buf`` with one pwrite.

        ``headers`` are the parsed batches of ``buf`` (positions relative to it), covering it exactly.
        """
        if not headers or sum(header.size for header in headers) != len(buf):
            raise ValueError("headers must describe every batch of the buffer")
        now = self._clock()
        next_offset = self.log_end_offset
        for header in headers:
            assign_offsets(buf, header, next_offset, leader_epoch)
            next_offset = header.last_offset + 1
        append_time = -1
        if self._config.log_append_time:
            append_time = now
            for header in headers:
                set_log_append_time(buf, header, now)
        max_timestamp = max(header.max_timestamp for header in headers)
        segment = self._maybe_roll(len(buf), max_timestamp, headers[-1].last_offset, now)
        segment.append(buf, headers, self._config.index_interval_bytes)
        return AppendInfo(headers[0].base_offset, headers[-1].last_offset, append_time, self._log_start_offset)

    def _maybe_roll(self, size: int, max_timestamp: int, last_offset: int, now: int) -> LogSegment:
        """Kafka's LogSegment.shouldRoll; an empty segment never rolls."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        config = self._config
        rolling_ts = active.first_batch_timestamp
        waited = max_timestamp - rolling_ts if rolling_ts is not None and rolling_ts >= 0 else now - active.created_ms
        roll_ms = config.segment_ms
        if config.compact and config.max_compaction_lag_ms > 0:
            roll_ms = min(roll_ms, config.max_compaction_lag_ms)
        if (
            active.size > config.segment_size - size
            or waited > roll_ms - active.roll_jitter_ms
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
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self.log_end_offset)
        if upper_offset is not None and offset >= upper_offset:
            return b""
        for segment in self._segments[self._segment_slot(offset):]:
            if offset >= segment.next_offset:
                continue
            first = segment.find_batch(offset)
            if first is None:
                continue
            if upper_offset is not None and first.base_offset >= upper_offset:
                return b""
            length = max(first.size, min(max_bytes, segment.size - first.position))
            data = segment.read(first.position, length)
            return data[:_whole_batches_end(data, first.size, upper_offset)]
        return b""

    def _segment_slot(self, offset: int) -> int:
        return max(bisect_right(self._base_offsets, offset) - 1, 0)

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
        return self._log_start_offset

    def enforce_retention(self) -> int:
        """Delete old segments by log start offset, retention.bytes and retention.ms; returns how many.

        Like Kafka's deleteOldSegments, but the active segment is never deleted.
        """
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
        segment = self._segments.pop(0)
        self._base_offsets.pop(0)
        segment.delete()
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        log.info("Deleted segment %s (%s); log start offset is now %d", segment.log_path, reason,
                 self._log_start_offset)

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._base_offsets.clear()
        self._create_segment(offset)

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
                    ticket.fds.extend(os.dup(fd) for fd in segment.fds())
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
        self._last_flush_ms = self._clock()

    def flush_now(self) -> None:
        """The three flush steps synchronously (shutdown, tests)."""
        ticket = self.prepare_flush()
        if ticket is not None:
            ticket.run()
            self.complete_flush(ticket)

    # ---- lifecycle ----

    def close(self) -> None:
        """Finish the time indexes, trim and close every file (no fsync: flush first if needed)."""
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _whole_batches_end(data: bytes, first_size: int, upper_offset: int | None) -> int:
    """Length of the prefix of ``data`` made of whole batches (the first is always kept)."""
    end = first_size
    while end + BATCH_HEADER_SIZE <= len(data):
        header = parse_header(data, end)
        if end + header.size > len(data) or (upper_offset is not None and header.base_offset >= upper_offset):
            break
        end += header.size
    return end
