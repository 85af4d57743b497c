"""Which compacted log to clean and what to read, decided on the event loop (Kafka's LogCleanerManager and the
planning half of Cleaner.doClean).

Everything here reads the loop-owned state of a PartitionLog and returns plain values; ``SegmentSource`` carries a
duplicated descriptor so the executor thread can read a segment even if the loop closes or deletes it meanwhile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .partition_log import PartitionLog
from .segment import LogSegment
from .transaction_index import AbortedTxn

INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class LogToClean:
    """Kafka's LogToClean: the dirty range of one log and the sizes that make it worth cleaning."""

    key: PartitionKey
    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset
    need_compaction_now: bool
    clean_bytes: int
    cleanable_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def is_filthy(self) -> bool:
        """grabFilthiestCompactedLog's test: past min.cleanable.dirty.ratio, or past max.compaction.lag.ms."""
        if self.total_bytes <= 0:
            return False
        return (self.need_compaction_now and self.cleanable_bytes > 0) or (
            self.cleanable_ratio > self.log.config.min_cleanable_dirty_ratio
        )


@dataclass(frozen=True)
class SegmentSource:
    """One closed segment as the executor reads it; ``aborted`` are the aborted transactions overlapping the
    segment's offsets (from every .txnindex that may hold them)."""

    base_offset: int
    fd: int
    size: int
    last_modified_ns: int
    aborted: tuple[AbortedTxn, ...]
    start_position: int = 0

    def close(self) -> None:
        os.close(self.fd)


def log_to_clean(key: PartitionKey, log: PartitionLog, checkpoint: int | None, now: int) -> LogToClean:
    """Measure ``log``'s dirty range, given the first dirty offset saved in cleaner-offset-checkpoint."""
    first_dirty, uncleanable = cleanable_offsets(log, checkpoint, now)
    segments = log.segments
    active = segments[-1]
    first_uncleanable_segment = next(iter(segments_between(segments, uncleanable, active.base_offset)), active)
    first_uncleanable = first_uncleanable_segment.base_offset
    clean_bytes = sum(segment.size for segment in segments_between(segments, -1, first_dirty))
    cleanable = segments_between(segments, min(first_dirty, first_uncleanable), first_uncleanable)
    return LogToClean(
        key, log, first_dirty, first_uncleanable, max_compaction_delay(log, first_dirty, now) > 0,
        clean_bytes, sum(segment.size for segment in cleanable),
    )


def cleanable_offsets(log: PartitionLog, checkpoint: int | None, now: int) -> tuple[int, int]:
    """Kafka's cleanableOffsets: (first dirty offset, first offset that may not be cleaned yet).

    A checkpoint outside [log start, log end] restarts from the log start. Cleaning stops at the last stable offset,
    at the active segment and at the first segment with a record newer than min.compaction.lag.ms.
    """
    start = log.log_start_offset
    first_dirty = checkpoint if checkpoint is not None and start <= checkpoint <= log.log_end_offset else start
    segments = log.segments
    active = segments[-1]
    bounds = [log.last_stable_offset, active.base_offset]
    lag = max(log.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in segments_between(segments, first_dirty, active.base_offset):
            if segment.largest_timestamp() > now - lag:
                bounds.append(segment.base_offset)
                break
    return first_dirty, min(bounds)


def max_compaction_delay(log: PartitionLog, first_dirty: int, now: int) -> int:
    """How long the oldest dirty record has waited beyond max.compaction.lag.ms (0: not overdue)."""
    segments = log.segments
    stamps = [
        segment.first_batch_timestamp
        for segment in segments_between(segments, first_dirty, segments[-1].base_offset)
        if segment.first_batch_timestamp is not None and segment.first_batch_timestamp > 0
    ]
    if not stamps:
        return 0
    clean_until = now - max(log.config.max_compaction_lag_ms, 0)
    return max(clean_until - min(stamps), 0)


def segments_between(segments: list[LogSegment], start: int, end: int) -> list[LogSegment]:
    """Kafka's logSegments(from, to): the segments holding offsets in [start, end), by base offsets."""
    found = []
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else LONG_MAX
        if segment.base_offset < end and following > start:
            found.append(segment)
    return found


def group_segments_by_size(
    segments: list[LogSegment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose data and indexes fit one segment and whose offsets
    fit its int32 relative offsets; each group is cleaned into one new segment."""
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size, index_size, time_index_size = group[0].size, _index_bytes(group[0]), _time_index_bytes(group[0])
        while (
            rest
            and size + rest[0].size <= max_size
            and index_size + _index_bytes(rest[0]) <= max_index_size
            and time_index_size + _time_index_bytes(rest[0]) <= max_index_size
            and (rest[0].size == 0 or _last_offset_of_first(rest, first_uncleanable) - group[0].base_offset
                 <= INT32_MAX)
        ):
            segment = rest.pop(0)
            group.append(segment)
            size += segment.size
            index_size += _index_bytes(segment)
            time_index_size += _time_index_bytes(segment)
        groups.append(group)
    return groups


def _last_offset_of_first(segments: list[LogSegment], first_uncleanable: int) -> int:
    return segments[1].base_offset - 1 if len(segments) > 1 else first_uncleanable - 1


def _index_bytes(segment: LogSegment) -> int:
    return len(segment.index) * segment.index.ENTRY_SIZE


def _time_index_bytes(segment: LogSegment) -> int:
    return len(segment.time_index) * segment.time_index.ENTRY_SIZE


def collect_aborted(segments: list[LogSegment], start: int, upper: int) -> list[AbortedTxn]:
    """Kafka's collectAbortedTransactions: entries overlapping [start, upper) from the .txnindex of the segment
    holding ``start`` and of the later ones, until an entry's LSO reaches ``upper``."""
    found: list[AbortedTxn] = []
    for segment in segments_between(segments, start, LONG_MAX):
        entries, complete = segment.txn_index.collect(start, upper)
        found.extend(entries)
        if complete:
            break
    return found


def snapshot_segment(segments: list[LogSegment], segment: LogSegment, upper: int, start_offset: int | None = None
                     ) -> SegmentSource:
    """A SegmentSource for ``segment``, its aborted transactions collected over [its base, ``upper``)."""
    start_position = segment.index.lookup(start_offset) if start_offset is not None else 0
    fd = os.dup(segment.fd)
    try:
        return SegmentSource(
            segment.base_offset, fd, segment.size, os.fstat(fd).st_mtime_ns,
            tuple(collect_aborted(segments, max(segment.base_offset, start_offset or 0), upper)), start_position,
        )
    except BaseException:
        os.close(fd)
        raise
