"""One log segment: a ``.log`` of concatenated V2 batches, its sparse ``.index`` and ``.timeindex``, and the
``.txnindex`` of the transactions aborted in it (created on the first abort).

The ``.log`` is written with ``os.pwrite`` at its known size and read with ``os.pread``, so no file
position is shared between the event loop and the thread that fsyncs duplicated descriptors.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import NamedTuple

from ..protocol.records import BATCH_HEADER_SIZE, BatchHeader, batch_crc_ok, parse_header
from .index import OffsetIndex, TimeIndex
from .transaction_index import TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

log = logging.getLogger(__name__)

INT32_MAX = 2**31 - 1
_LOG_OVERHEAD = 12
MAX_RECENT_BATCHES = 1024  # 16 bytes each: a partition of tiny batches keeps at most 16 KiB of them
_MAGIC_POSITION = 16
_MIN_FRAMING = _MAGIC_POSITION + 1  # enough to see batchLength and magic
_BATCH_LENGTH = struct.Struct(">i")  # at position 8, after baseOffset
_VERIFY_CHUNK = 1024 * 1024
_HEADER_CHUNK = 8 * 1024


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    """Kafka's file name: the base offset zero-padded to 20 digits plus the suffix."""
    return directory / f"{base_offset:020d}{suffix}"


def pread_fully(fd: int, length: int, position: int) -> bytes:
    """Read ``length`` bytes at ``position`` (fewer only at end of file)."""
    data = os.pread(fd, length, position)
    if len(data) == length or not data:
        return data
    parts = [data]
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def pwrite_fully(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


class _ChunkReader:
    """Sequential reads of a .log through one reusable chunk, so scanning costs few syscalls."""

    def __init__(self, fd: int, end: int, chunk_size: int) -> None:
        self._fd = fd
        self._end = end
        self._chunk_size = chunk_size
        self._buf = b""
        self._start = 0

    def get(self, position: int, length: int) -> tuple[bytes, int] | None:
        """(buffer, offset in buffer) holding ``length`` bytes at ``position``, or None past the end."""
        if not (self._start <= position and position + length <= self._start + len(self._buf)):
            size = min(max(length, self._chunk_size), self._end - position)
            self._buf = pread_fully(self._fd, size, position)
            self._start = position
            if len(self._buf) < length:
                return None
        return self._buf, position - self._start


class BatchScanner:
    """Walks the batches of a .log between two positions and stops at the first torn or invalid one.

    Yielded headers carry absolute file positions. Afterwards ``valid_end`` is where the good data ends
    and ``problem`` says why the walk stopped early (None when it reached ``end`` cleanly).
    """

    def __init__(self, fd: int, start: int, end: int, *, base_offset: int, verify_crc: bool) -> None:
        self._reader = _ChunkReader(fd, end, _VERIFY_CHUNK if verify_crc else _HEADER_CHUNK)
        self._start = start
        self._end = end
        self._base_offset = base_offset
        self._verify_crc = verify_crc
        self.valid_end = start
        self.problem: str | None = None

    def __iter__(self) -> Iterator[BatchHeader]:
        position = self._start
        previous_last = self._base_offset - 1
        while position < self._end:
            header = self._next(position, previous_last)
            if header is None:
                return
            yield header
            previous_last = header.last_offset
            position += header.size
            self.valid_end = position

    def _next(self, position: int, previous_last: int) -> BatchHeader | None:
        remaining = self._end - position
        if remaining < _MIN_FRAMING:
            return self._stop(f"{remaining} trailing bytes at position {position}")
        chunk = self._reader.get(position, min(remaining, BATCH_HEADER_SIZE))
        if chunk is None:
            return self._stop(f"file ends before position {self._end}")
        buf, at = chunk
        (batch_length,) = _BATCH_LENGTH.unpack_from(buf, at + 8)
        magic = buf[at + _MAGIC_POSITION]
        if magic != 2:
            return self._stop(f"invalid magic {magic} at position {position}")
        if batch_length < BATCH_HEADER_SIZE - _LOG_OVERHEAD:
            return self._stop(f"invalid batch length {batch_length} at position {position}")
        size = batch_length + _LOG_OVERHEAD
        if size > remaining:
            return self._stop(f"partial batch at position {position}: {remaining} of {size} bytes")
        chunk = self._reader.get(position, size if self._verify_crc else BATCH_HEADER_SIZE)
        if chunk is None:
            return self._stop(f"file ends inside the batch at position {position}")
        buf, at = chunk
        header = parse_header(buf, at)
        if self._verify_crc and not batch_crc_ok(buf, header):
            return self._stop(f"CRC mismatch in batch at position {position}")
        header.position = position
        if header.last_offset_delta < 0 or header.base_offset <= previous_last:
            return self._stop(f"batch at position {position} has out-of-order offsets {header.base_offset}..")
        if header.last_offset - self._base_offset > INT32_MAX:
            return self._stop(f"batch at position {position} overflows the segment's relative offsets")
        return header

    def _stop(self, reason: str) -> None:
        self.problem = reason
        return None


class LoadProblem(NamedTuple):
    """Why a segment must be fully recovered; ``in_index`` when only its indexes are to blame."""

    reason: str
    in_index: bool


class LogSegment:
    """A segment's files and the in-memory state Kafka keeps for it (next offset, max timestamp...)."""

    def __init__(self, directory: Path, base_offset: int, *, max_index_bytes: int, created_ms: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path = segment_file(directory, base_offset, LOG_SUFFIX)
        index_path = segment_file(directory, base_offset, INDEX_SUFFIX)
        time_index_path = segment_file(directory, base_offset, TIME_INDEX_SUFFIX)
        self.indexes_existed = index_path.exists() and time_index_path.exists()
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.index = OffsetIndex(index_path, base_offset, max_index_bytes)
        self.time_index = TimeIndex(time_index_path, base_offset, max_index_bytes)
        self.txn_index = TransactionIndex(segment_file(directory, base_offset, TXN_INDEX_SUFFIX))
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        # Kafka's rollingBasedTimestamp: the max timestamp of the first append, None while empty.
        self.first_batch_timestamp: int | None = None
        self.created_ms = created_ms
        self.roll_jitter_ms = 0
        self.bytes_since_last_index_entry = 0
        # The last offsets and positions of the batches this broker appended last, up to the end of the file: a
        # read near the end (a consumer at the tail) finds its batch here instead of scanning from an index entry.
        self._recent_last_offsets = array("q")
        self._recent_positions = array("q")

    # ---- loading ----

    def index_problem(self) -> LoadProblem | None:
        """Why the offset index can't be trusted before walking the log, or None."""
        if not self.indexes_existed and self.size:
            return LoadProblem("index files are missing", True)
        reason = self.index.problem(self.size)
        if reason:
            return LoadProblem(f"offset index: {reason}", True)
        return None

    def load_trusted(self) -> LoadProblem | None:
        """Derive the in-memory state from the indexes and the tail after the last index entry.

        Returns why the segment needs a full recovery instead (torn tail, index disagreeing with the log),
        or None. This reads only a few headers, which is what keeps opening flushed segments cheap.
        """
        last = self.index.last_entry()
        start = last[1] if last else 0
        timestamp_entry = self.time_index.last_entry()
        if timestamp_entry:
            self.max_timestamp, self.offset_of_max_timestamp = timestamp_entry
        scanner = BatchScanner(self.fd, start, self.size, base_offset=self.base_offset, verify_crc=False)
        for header in scanner:
            if last and header.position == start and header.last_offset != last[0]:
                return LoadProblem(f"offset index entry {last} disagrees with the log", True)
            self._track_max_timestamp(header)
            self.next_offset = header.last_offset + 1
        if scanner.problem:
            return LoadProblem(scanner.problem, False)
        reason = self.time_index.problem(self.next_offset)
        if reason:
            return LoadProblem(f"time index: {reason}", True)
        self._load_first_batch_timestamp()
        return None

    def recover(self, index_interval_bytes: int) -> tuple[int, str | None]:
        """Kafka's LogSegment.recover: check every batch, rebuild both indexes, truncate at the first bad batch.

        Returns (bytes truncated, why).
        """
        self.index.reset()
        self.time_index.reset()
        self._forget_recent()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        last_index_position = 0
        scanner = BatchScanner(self.fd, 0, self.size, base_offset=self.base_offset, verify_crc=True)
        for header in scanner:
            self._track_max_timestamp(header)
            if header.position - last_index_position > index_interval_bytes:
                self.index.append(header.last_offset, header.position)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                last_index_position = header.position
            self.next_offset = header.last_offset + 1
        truncated = self.size - scanner.valid_end
        if truncated:
            os.ftruncate(self.fd, scanner.valid_end)
            self.size = scanner.valid_end
        # A cleanly closed segment always ends its time index with the largest timestamp; so does recovery.
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.bytes_since_last_index_entry = 0
        self._load_first_batch_timestamp()
        self.index.close()
        self.time_index.close()
        return truncated, scanner.problem

    def _load_first_batch_timestamp(self) -> None:
        if self.size >= BATCH_HEADER_SIZE:
            self.first_batch_timestamp = parse_header(pread_fully(self.fd, BATCH_HEADER_SIZE, 0)).max_timestamp
        else:
            self.first_batch_timestamp = None

    def _track_max_timestamp(self, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset

    # ---- writing ----

    def append(self, buf: bytearray, headers: list[BatchHeader], index_interval_bytes: int) -> None:
        """Write whole batches at the end of the file, then add index entries at Kafka's cadence.

        ``headers`` carry offsets already assigned and positions relative to ``buf``. All or nothing: if a write
        fails (a full disk, an I/O error) the file and indexes are cut back to what they were, so no torn batch
        is left for reads or recovery, and the OSError is raised.
        """
        start = self.size
        before = (self.first_batch_timestamp, self.max_timestamp, self.offset_of_max_timestamp,
                  self.bytes_since_last_index_entry)
        entries = None  # the indexes' entry counts before this append's first entry, if it adds any
        try:
            pwrite_fully(self.fd, buf, start)
            if start == 0:
                self.first_batch_timestamp = max(header.max_timestamp for header in headers)
            for header in headers:
                self._track_max_timestamp(header)
                if self.bytes_since_last_index_entry > index_interval_bytes:
                    if entries is None:
                        entries = (len(self.index), len(self.time_index))
                    self.index.append(header.last_offset, start + header.position)
                    self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                    self.bytes_since_last_index_entry = 0
                    self._forget_recent()  # the index entry now bounds any scan to this batch
                self.bytes_since_last_index_entry += header.size
                self._recent_last_offsets.append(header.last_offset)
                self._recent_positions.append(start + header.position)
        except OSError:
            self._forget_recent()
            self._undo_append(start, before, entries)
            raise
        if len(self._recent_positions) > MAX_RECENT_BATCHES:
            self._forget_recent()
        self.size = start + len(buf)
        self.next_offset = headers[-1].last_offset + 1

    def _undo_append(
        self, start: int, before: tuple[int | None, int, int, int], entries: tuple[int, int] | None,
    ) -> None:
        """Forget a failed append. If even the truncation fails, the stray bytes lie past ``size``: never read, and
        overwritten by the next append or cut by recovery."""
        (self.first_batch_timestamp, self.max_timestamp, self.offset_of_max_timestamp,
         self.bytes_since_last_index_entry) = before
        undos = [partial(os.ftruncate, self.fd, start)]
        if entries is not None:  # memory first, then the file: never half-undone
            undos[:0] = [partial(self.index.truncate_entries, entries[0]),
                         partial(self.time_index.truncate_entries, entries[1])]
        for undo in undos:
            try:
                undo()
            except OSError as exc:
                log.error("%s: undoing a failed append at position %d: %s", self.log_path, start, exc)

    def on_become_inactive(self) -> None:
        """On roll and close Kafka makes sure the time index ends with the segment's max timestamp; the index
        descriptors are closed then (they reopen if the segment is written again, as truncation may do)."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.close()
        self.time_index.close()

    # ---- reading ----

    def headers_from(self, position: int) -> Iterator[BatchHeader]:
        """Batch headers from ``position`` to the end (the data was validated when loaded or appended)."""
        return iter(BatchScanner(self.fd, position, self.size, base_offset=self.base_offset, verify_crc=False))

    def _forget_recent(self) -> None:
        del self._recent_last_offsets[:]
        del self._recent_positions[:]

    def find_batch(self, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset``: among the recent appends when it is one of them
        after the first (every batch before that one ends below ``offset``), else scanning from the offset index
        floor entry."""
        recent = self._recent_last_offsets
        if recent and recent[0] < offset <= recent[-1]:
            position = self._recent_positions[bisect_left(recent, offset)]
            header = parse_header(pread_fully(self.fd, BATCH_HEADER_SIZE, position))
            header.position = position
            return header
        for header in self.headers_from(self.index.lookup(offset)):
            if header.last_offset >= offset:
                return header
        return None

    def read(self, position: int, length: int) -> bytes:
        return pread_fully(self.fd, min(length, self.size - position), position)

    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: the max record timestamp, else the file's mtime."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def last_modified_ms(self) -> int:
        """The log file's modification time (Kafka's LogSegment.lastModified), by which ListOffsets v0 finds offsets."""
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    def open_for_sync(self) -> list[int]:
        """New descriptors of every file of this segment, for an fsync elsewhere (the caller closes them): index
        files whose descriptor was closed are opened again by path."""
        fds = [os.dup(self.fd)]
        try:
            for index in (self.index, self.time_index):
                fds.append(os.dup(index.fd) if index.fd >= 0 else os.open(index.path, os.O_RDONLY))
            if self.txn_index.exists:
                fds.append(os.dup(self.txn_index.fd))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    # ---- lifecycle ----

    def close(self) -> None:
        if self.fd < 0:
            return
        self.on_become_inactive()
        self.txn_index.close()
        os.close(self.fd)
        self.fd = -1

    def delete(self) -> None:
        """Close and remove every file of this segment."""
        if self.fd >= 0:
            self.index.close()
            self.time_index.close()
            self.txn_index.close()
            os.close(self.fd)
            self.fd = -1
        remove_segment_files(self.directory, self.base_offset)


def remove_segment_files(directory: Path, base_offset: int) -> int:
    """Delete a segment's files by name; returns how many .log bytes went with them."""
    size = 0
    for suffix in SEGMENT_SUFFIXES:
        path = segment_file(directory, base_offset, suffix)
        try:
            if suffix == LOG_SUFFIX:
                size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            pass
    return size
