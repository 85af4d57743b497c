"""Sparse .index and .timeindex files: in-memory arrays mirrored entry by entry to the files.

Kafka preallocates and memory-maps these files; we only append exactly ``entries * ENTRY_SIZE`` bytes,
which is the same content Kafka leaves after trimming an index on roll or close.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable
from itertools import islice
from operator import le, lt
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


def _increasing(values: array, ordered: Callable[[int, int], bool]) -> bool:
    """Whether each neighbouring pair of ``values`` satisfies ``ordered`` (C-speed for big indexes)."""
    return all(map(ordered, values, islice(values, 1, None)))


class _IndexFile:
    """One index file, its entries held in memory; entries are written at ``count * ENTRY_SIZE``."""

    ENTRY_SIZE = 0

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // self.ENTRY_SIZE
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.file_size = os.fstat(self.fd).st_size
            self._load(self._read_whole_entries())
        finally:
            os.close(self.fd)
            self.fd = -1

    def __len__(self) -> int:
        raise NotImplementedError

    def _load(self, data: bytes) -> None:
        raise NotImplementedError

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries  # both kinds keep an offset per entry; asked at every append

    def _writable_fd(self) -> int:
        """The descriptor, opened on the first write after a release: only segments being written hold one."""
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_RDWR)
        return self.fd

    def _read_whole_entries(self) -> bytes:
        size = self.file_size - self.file_size % self.ENTRY_SIZE
        return os.pread(self.fd, size, 0) if size else b""

    def _write_entry(self, packed: bytes) -> None:
        position = (len(self) - 1) * self.ENTRY_SIZE
        written = 0
        while written < len(packed):  # a short write (a disk filling up) is followed by the error, if any
            written += os.pwrite(self._writable_fd(), packed[written:], position + written)
        self.file_size = position + self.ENTRY_SIZE

    def _size_problem(self) -> str | None:
        if self.file_size % self.ENTRY_SIZE:
            return f"size {self.file_size} is not a multiple of {self.ENTRY_SIZE}"
        return None

    def _clear(self) -> None:
        raise NotImplementedError

    def truncate_entries(self, count: int) -> None:
        """Keep only the first ``count`` entries, in memory and in the file (undoing an append that failed)."""
        self._keep_first(count)
        size = count * self.ENTRY_SIZE
        if self.file_size > size:
            os.ftruncate(self._writable_fd(), size)
            self.file_size = size

    def _keep_first(self, count: int) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Drop every entry (the index is about to be rebuilt from the log)."""
        self._clear()
        os.ftruncate(self._writable_fd(), 0)
        self.file_size = 0

    def close(self) -> None:
        """Trim the file to the valid entries and close the descriptor; the entries stay in memory and a later
        write reopens the file. Segments that are not written hold no index descriptor, so a broker with
        thousands of partitions needs about one descriptor per partition."""
        valid = len(self) * self.ENTRY_SIZE
        if self.file_size != valid:
            os.ftruncate(self._writable_fd(), valid)
            self.file_size = valid
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class OffsetIndex(_IndexFile):
    """Maps the last offset of some batches to the byte position where that batch starts."""

    ENTRY_SIZE = _OFFSET_ENTRY.size

    def _load(self, data: bytes) -> None:
        raw = array("i", data)
        if sys.byteorder == "little":
            raw.byteswap()
        self._offsets = raw[0::2]
        self._positions = raw[1::2]

    def __len__(self) -> int:
        return len(self._offsets)

    def _clear(self) -> None:
        self._offsets = array("i")
        self._positions = array("i")

    def _keep_first(self, count: int) -> None:
        del self._offsets[count:]
        del self._positions[count:]

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._offsets and relative <= self._offsets[-1]:
            raise ValueError(f"index offset {offset} is not above the last entry of {self.path}")
        self._offsets.append(relative)
        self._positions.append(position)
        self._write_entry(_OFFSET_ENTRY.pack(relative, position))

    def lookup(self, offset: int) -> int:
        """Start position for a scan to ``offset``: the greatest entry <= offset, else the segment start."""
        slot = bisect_right(self._offsets, offset - self.base_offset) - 1
        return self._positions[slot] if slot >= 0 else 0

    def floor_by_position(self, position: int) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry at or before ``position``: a batch that starts there."""
        slot = bisect_right(self._positions, position) - 1
        return (self.base_offset + self._offsets[slot], self._positions[slot]) if slot >= 0 else None

    def last_entry(self) -> tuple[int, int] | None:
        """(absolute offset, position) of the last entry."""
        if not self._offsets:
            return None
        return self.base_offset + self._offsets[-1], self._positions[-1]

    def problem(self, log_size: int) -> str | None:
        """Why this index cannot be trusted for a log of ``log_size`` bytes, or None."""
        reason = self._size_problem()
        if reason:
            return reason
        if self._offsets and self._offsets[0] < 0:
            return "negative relative offset"
        if not (_increasing(self._offsets, lt) and _increasing(self._positions, lt)):
            return "entries are not increasing"
        if self._positions and (self._positions[0] < 0 or self._positions[-1] >= log_size):
            return f"position points outside the {log_size}-byte log"
        return None


class TimeIndex(_IndexFile):
    """Maps increasing max timestamps seen in the segment to the last offset of the batch carrying them."""

    ENTRY_SIZE = _TIME_ENTRY.size

    def _load(self, data: bytes) -> None:
        flat = struct.unpack(">" + "qi" * (len(data) // self.ENTRY_SIZE), data)  # one C call, not a loop
        self._timestamps = array("q", flat[0::2])
        self._offsets = array("i", flat[1::2])

    def __len__(self) -> int:
        return len(self._timestamps)

    def _clear(self) -> None:
        self._timestamps = array("q")
        self._offsets = array("i")

    def _keep_first(self, count: int) -> None:
        del self._timestamps[count:]
        del self._offsets[count:]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Append only when ``timestamp`` is above the last entry's (and above -1 for an empty index)."""
        if timestamp <= (self._timestamps[-1] if self._timestamps else -1):
            return
        relative = offset - self.base_offset
        if self._offsets and relative < self._offsets[-1]:
            raise ValueError(f"time index offset {offset} is below the last entry of {self.path}")
        self._timestamps.append(timestamp)
        self._offsets.append(relative)
        self._write_entry(_TIME_ENTRY.pack(timestamp, relative))

    def lookup(self, timestamp: int) -> int:
        """Offset to start searching for ``timestamp``: the greatest entry <= it, else the segment base."""
        slot = bisect_right(self._timestamps, timestamp) - 1
        return self.base_offset + self._offsets[slot] if slot >= 0 else self.base_offset

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, absolute offset) of the last entry."""
        if not self._timestamps:
            return None
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def problem(self, next_offset: int) -> str | None:
        """Why this index cannot be trusted for a segment ending before ``next_offset``, or None."""
        reason = self._size_problem()
        if reason:
            return reason
        if self._offsets and self._offsets[0] < 0:
            return "negative relative offset"
        if not (_increasing(self._timestamps, lt) and _increasing(self._offsets, le)):
            return "entries are not increasing"
        if self._offsets and self.base_offset + self._offsets[-1] >= next_offset:
            return "entry points past the end of the log"
        return None
