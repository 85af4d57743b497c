"""The log cleaner's heavy half, run in an executor thread: the offset map of the dirty range, and the filtering of
a group of segments into one ``.cleaned`` segment (Kafka's Cleaner.buildOffsetMap, cleanSegments and cleanInto).

Nothing here touches a PartitionLog: segments are read through the duplicated descriptors of ``SegmentSource``
and the only files written are the ``.cleaned`` ones, so the event loop can go on serving the same log meanwhile.
The swap into the log happens afterwards, on the loop (PartitionLog.replace_segments).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..protocol.records import (
    LOG_OVERHEAD,
    BatchHeader,
    InvalidRecordError,
    Record,
    decode_batch,
    iter_batches,
    parse_control_record,
    parse_header,
)
from .cleaner_batches import NO_TIMESTAMP, delete_horizon_of, empty_batch, rebuild_batch
from .cleaner_plan import LONG_MAX, SegmentSource
from .cleaner_txn import CleanedTransactions
from .index import OffsetIndex, TimeIndex
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, pread_fully, pwrite_fully
from .segment_swap import CLEANED_SUFFIX, remove_files, temp_segment_file
from .transaction_index import AbortedTxn, TransactionIndex

READ_CHUNK = 1 << 20
WRITE_CHUNK = 1 << 20
_UNKNOWN_CONTROL_TYPE = -1


class CleaningAborted(Exception):
    """The cleaner is stopping (Kafka's LogCleaningAbortedException); partial output has been removed."""


class CorruptSegmentError(Exception):
    """A segment holds bytes that are not a whole batch; the log is left alone (marked uncleanable)."""


@dataclass
class OffsetMap:
    """Key -> offset of its latest record in the dirty range (Kafka's SkimpyOffsetMap, exact keys instead of MD5
    hashes). ``latest_offset`` is the last offset mapped; records after it are kept as they are."""

    capacity: int
    offsets: dict[bytes, int] = field(default_factory=dict)
    latest_offset: int = -1


@dataclass(frozen=True)
class CleaningRound:
    """What stays fixed while one log is cleaned."""

    directory: Path
    now: int
    delete_retention_ms: int
    upper_bound: int  # the first uncleanable offset: the batch ending just before it is always kept
    last_records: Mapping[int, tuple[int | None, int]]  # PartitionLog.last_records_of_active_producers
    index_interval_bytes: int
    max_index_bytes: int
    abort: threading.Event


@dataclass
class CleanedSegment:
    """What one group became: its ``.cleaned`` files and the figures for the cleaner's log line."""

    base_offset: int
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0


def build_offset_map(sources: list[SegmentSource], start: int, capacity: int, abort: threading.Event) -> OffsetMap:
    """Map the keys of the dirty segments from offset ``start``, skipping aborted transactions; stop early (with
    ``latest_offset`` marking how far it got) when ``capacity`` keys are mapped."""
    offset_map = OffsetMap(capacity)
    offsets = offset_map.offsets
    txns = CleanedTransactions()
    for source in sources:
        txns.add_aborted(source.aborted)
        for header, buf in _batches(source, abort):
            if header.is_control:
                txns.on_control_batch(header, _control_type(decode_batch(buf, header)))
            elif not txns.on_data_batch(header):
                for record in decode_batch(buf, header):
                    if record.key is None or record.offset < start:
                        continue
                    if len(offsets) >= capacity and record.key not in offsets:
                        return offset_map
                    offsets[record.key] = record.offset
            if header.last_offset >= start:
                offset_map.latest_offset = header.last_offset
    return offset_map


def clean_group(
    sources: list[SegmentSource], offset_map: OffsetMap, txns: CleanedTransactions, cleaning: CleaningRound
) -> CleanedSegment:
    """Filter the segments of one group into ``<first base>.*.cleaned`` files, fsynced, indexes included."""
    result = CleanedSegment(sources[0].base_offset)
    writer = _CleanedSegmentWriter(cleaning, result.base_offset)
    try:
        for source in sources:
            txns.add_aborted(source.aborted)
            for header, buf in _batches(source, cleaning.abort):
                result.bytes_read += header.size
                result.records_read += max(header.records_count, 0)
                kept = _filter_batch(header, buf, offset_map, txns, cleaning)
                for entry in txns.kept_aborts:
                    writer.add_aborted(entry)
                txns.kept_aborts.clear()
                if kept is not None:
                    batch, count = kept
                    writer.append(batch)
                    result.records_kept += count
        if cleaning.abort.is_set():
            raise CleaningAborted()
        writer.finish(sources[-1].last_modified_ns)
    except BaseException:
        writer.discard()
        raise
    result.bytes_written = writer.size
    return result


def _filter_batch(
    header: BatchHeader, buf: bytes, offset_map: OffsetMap, txns: CleanedTransactions, cleaning: CleaningRound
) -> tuple[bytes, int] | None:
    """Kafka's cleaner RecordFilter and MemoryRecords.filterTo for one batch: (bytes to write, records kept) or None.

    The batch goes as it is when every record stays and no delete horizon must be set; it is rebuilt with the kept
    records otherwise, and reduced to an empty header when none stays but the batch must (an active producer's
    last batch, or the batch ending the cleaned range).
    """
    records: list[Record] | None = None
    horizon = delete_horizon_of(header)
    if header.is_control:
        records = decode_batch(buf, header)
        can_discard = txns.on_control_batch(header, _control_type(records))
        discard_records = can_discard and horizon is not None and horizon <= cleaning.now
    else:
        can_discard = txns.on_data_batch(header)
        discard_records = can_discard
    retain_empty = (header.producer_id >= 0 and _is_last_batch_of_producer(header, cleaning.last_records)) or (
        header.last_offset + 1 == cleaning.upper_bound
    )
    if discard_records and not retain_empty:
        return None
    kept: list[Record] = []
    if not discard_records:
        if records is None:
            records = decode_batch(buf, header)
        kept = records if header.is_control else [
            record for record in records if _keep_record(record, horizon, offset_map, cleaning.now)
        ]
    if kept:
        tombstones = not header.is_control and any(record.value is None for record in kept)
        needs_horizon = horizon is None and (tombstones or (can_discard and header.is_control))
        if len(kept) == len(records or ()) and not needs_horizon:
            return bytes(buf[header.position:header.position + header.size]), len(kept)
        if needs_horizon:
            horizon = min(cleaning.now + cleaning.delete_retention_ms, LONG_MAX)
        return rebuild_batch(header, kept, NO_TIMESTAMP if horizon is None else horizon), len(kept)
    if retain_empty:
        return empty_batch(header), 0
    return None


def _keep_record(record: Record, horizon: int | None, offset_map: OffsetMap, now: int) -> bool:
    """Kafka's Cleaner.shouldRetainRecord: the key's latest record stays; a tombstone only until its horizon."""
    if record.offset > offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    if record.offset < offset_map.offsets.get(record.key, -1):
        return False
    return record.value is not None or horizon is None or now < horizon


def _is_last_batch_of_producer(header: BatchHeader, last_records: Mapping[int, tuple[int | None, int]]) -> bool:
    """The batch holding an active producer's last sequence, or the marker carrying its latest epoch."""
    last = last_records.get(header.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset is not None:
        return header.last_offset == last_data_offset
    return header.is_control and header.producer_epoch == epoch


def _control_type(records: list[Record]) -> int | None:
    """The control record type of a control batch's records; None when it was emptied by an earlier cleaning."""
    if not records:
        return None
    try:
        return parse_control_record(records[0])[0]
    except InvalidRecordError:
        return _UNKNOWN_CONTROL_TYPE


def _batches(source: SegmentSource, abort: threading.Event) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch of ``source`` from its start position, read in large chunks; headers are relative to the chunk."""
    position = source.start_position
    while position < source.size:
        length = min(READ_CHUNK, source.size - position)
        chunk = pread_fully(source.fd, length, position)
        if len(chunk) >= LOG_OVERHEAD:
            needed = int.from_bytes(chunk[8:12], "big", signed=True) + LOG_OVERHEAD
            if len(chunk) < needed <= source.size - position:
                chunk = pread_fully(source.fd, needed, position)
        end = 0
        for header in iter_batches(chunk):
            if abort.is_set():
                raise CleaningAborted()
            yield header, chunk
            end = header.position + header.size
        if end == 0:
            raise CorruptSegmentError(f"no whole batch at position {position} of segment {source.base_offset}")
        position += end


class _CleanedSegmentWriter:
    """Writes ``<base>.log.cleaned`` with its offset, time and transaction indexes, as LogSegment.append would."""

    def __init__(self, cleaning: CleaningRound, base_offset: int) -> None:
        directory = cleaning.directory
        self._directory = directory
        self._base_offset = base_offset
        self._index_interval_bytes = cleaning.index_interval_bytes
        remove_files(directory, base_offset, CLEANED_SUFFIX)
        self._log_path = temp_segment_file(directory, base_offset, LOG_SUFFIX, CLEANED_SUFFIX)
        self._fd = os.open(self._log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self._index = OffsetIndex(
            temp_segment_file(directory, base_offset, INDEX_SUFFIX, CLEANED_SUFFIX), base_offset,
            cleaning.max_index_bytes,
        )
        self._time_index = TimeIndex(
            temp_segment_file(directory, base_offset, TIME_INDEX_SUFFIX, CLEANED_SUFFIX), base_offset,
            cleaning.max_index_bytes,
        )
        self._txn_index = TransactionIndex(temp_segment_file(directory, base_offset, TXN_INDEX_SUFFIX, CLEANED_SUFFIX))
        self._pending = bytearray()
        self._written = 0
        self.size = 0
        self._max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self._bytes_since_index_entry = 0

    def append(self, batch: bytes) -> None:
        header = parse_header(batch)
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        if self._bytes_since_index_entry > self._index_interval_bytes:
            self._index.append(header.last_offset, self.size)
            self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += len(batch)
        self._pending += batch
        self.size += len(batch)
        if len(self._pending) >= WRITE_CHUNK:
            self._write_pending()

    def add_aborted(self, entry: AbortedTxn) -> None:
        self._txn_index.append(entry)

    def finish(self, last_modified_ns: int) -> None:
        """Write the rest, end the time index with the max timestamp, keep the old mtime (retention uses it when
        records carry no timestamps), fsync and close."""
        self._write_pending()
        self._time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        os.utime(self._fd, ns=(last_modified_ns, last_modified_ns))
        for fd in (self._fd, self._index.fd, self._time_index.fd, self._txn_index.fd):
            if fd >= 0:
                os.fsync(fd)
        self._close()

    def discard(self) -> None:
        self._close()
        remove_files(self._directory, self._base_offset, CLEANED_SUFFIX)

    def _write_pending(self) -> None:
        if self._pending:
            pwrite_fully(self._fd, self._pending, self._written)
            self._written += len(self._pending)
            self._pending = bytearray()

    def _close(self) -> None:
        self._index.close()
        self._time_index.close()
        self._txn_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
