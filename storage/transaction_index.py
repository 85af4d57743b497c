"""A segment's ``.txnindex``: one 34-byte entry per transaction aborted in it (Kafka's TransactionIndex).

Entry (big-endian): int16 version (0), int64 producerId, int64 firstOffset, int64 lastOffset (the ABORT marker),
int64 lastStableOffset (the LSO once the abort completed). Entries are ordered by lastOffset. The file is created
on the first abort only, and the whole index is kept in memory (it holds one entry per aborted transaction).
"""

from __future__ import annotations

import logging
import os
import struct
from bisect import bisect_left
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def pack(self) -> bytes:
        return _ENTRY.pack(TXN_INDEX_VERSION, *self)


class TransactionIndex:
    """The aborted transactions of one segment; the file is opened (or created) only when needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1
        self.entries: list[AbortedTxn] = []
        try:
            self.fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return
        self._load()

    @property
    def exists(self) -> bool:
        return self.fd >= 0

    def _load(self) -> None:
        size = os.fstat(self.fd).st_size
        data = os.pread(self.fd, size, 0) if size else b""
        valid = 0
        previous = None
        for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, *fields = _ENTRY.unpack_from(data, position)
            entry = AbortedTxn(*fields)
            if version != TXN_INDEX_VERSION or (previous is not None and entry.last_offset <= previous):
                break
            self.entries.append(entry)
            previous = entry.last_offset
            valid = position + ENTRY_SIZE
        if valid != size:
            log.warning("%s: dropping %d bytes after %d valid entries", self.path, size - valid, len(self.entries))
            os.ftruncate(self.fd, valid)

    def _ensure_open(self) -> bool:
        """Open the file, creating it; True when it did not exist before."""
        if self.fd >= 0:
            return False
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return True

    def append(self, entry: AbortedTxn) -> bool:
        """Add an entry after the others (Kafka insists lastOffset increases); True if the file was created."""
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: aborted txn ending at {entry.last_offset} is not after {self.entries[-1].last_offset}"
            )
        created = self._ensure_open()
        os.pwrite(self.fd, entry.pack(), len(self.entries) * ENTRY_SIZE)
        self.entries.append(entry)
        return created

    def ensure(self, entry: AbortedTxn) -> bool:
        """Recovery: add ``entry`` unless one with its lastOffset is there; True if the file was created."""
        slot = bisect_left([e.last_offset for e in self.entries], entry.last_offset)
        if slot < len(self.entries) and self.entries[slot].last_offset == entry.last_offset:
            return False
        if slot == len(self.entries):
            return self.append(entry)
        log.warning("%s: re-creating the missing entry for the abort at offset %d", self.path, entry.last_offset)
        self.entries.insert(slot, entry)
        created = self._ensure_open()
        self._rewrite()
        return created

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of aborts at ``offset`` or later (Kafka's TransactionIndex.truncateTo)."""
        keep = bisect_left([e.last_offset for e in self.entries], offset)
        if keep == len(self.entries):
            return
        del self.entries[keep:]
        os.ftruncate(self.fd, keep * ENTRY_SIZE)

    def _rewrite(self) -> None:
        data = b"".join(entry.pack() for entry in self.entries)
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))

    def collect(self, fetch_offset: int, upper_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Kafka's collectAbortedTxns: entries overlapping [fetch_offset, upper_offset), and whether the search
        is complete (an entry's LSO reached ``upper_offset``, so later segments cannot matter)."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_offset:
                return found, True
        return found, False

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
