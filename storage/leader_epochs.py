"""Kafka's leader-epoch cache of one partition and its ``leader-epoch-checkpoint`` file.

Each entry says from which offset a leader epoch's batches start. OffsetForLeaderEpoch answers from it where an
epoch ends, so a client that consumed up to some epoch (KIP-320) can tell whether the log it read was truncated.
The semantics follow Kafka's LeaderEpochFileCache; the file is LeaderEpochCheckpointFile: Kafka's checkpoint text
format (version ``0``, the entry count, then ``<epoch> <start offset>`` lines).
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from typing import NamedTuple

from .checkpoint import StrPath, read_checkpoint_lines, write_checkpoint_lines
from .errors import CorruptFileError

log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LEADER_EPOCH_CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
INITIAL_LEADER_EPOCH = 0  # a new partition's first leader's epoch, as Kafka's controller gives it
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    """A tuple: entries are unpacked and compared with (epoch, start offset) pairs. Made with the first partition,
    so this module is not loaded before a broker listens (a NamedTuple class costs start-up)."""

    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Entries with strictly ascending epochs and start offsets, in memory; mutators say whether anything changed,
    so the caller writes the file only then (``write``)."""

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        self._epochs: list[int] = []
        self.latest_epoch = UNDEFINED_EPOCH  # a plain attribute: the append path compares with it
        for entry in entries or []:
            self.assign(*entry)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; epochs not newer than the latest are ignored.

        As Kafka's assign, entries starting at or after the new start offset are dropped: their epochs never got
        data that stayed in the log (a leader elected but replaced before appending)."""
        if epoch <= self.latest_epoch:
            return False
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        dropped = []
        while self._entries and self._entries[-1].start_offset >= start_offset:
            dropped.append(self._entries[-1])
            self._pop()
        if len(dropped) > 1 or (dropped and dropped[0].start_offset != start_offset):
            log.warning("Leader epoch %d at offset %d dropped the conflicting entries %s", epoch, start_offset, dropped)
        self._entries.append(EpochEntry(epoch, start_offset))
        self._epochs.append(epoch)
        self.latest_epoch = epoch
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's endOffsetFor: (the largest epoch <= ``requested_epoch``, the start offset of the next higher
        epoch), the log end offset for the latest epoch, and (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) for an
        undefined or a later epoch. An epoch older than every entry answers itself with the first entry's start."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries and requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        end_offset = self._entries[higher].start_offset
        if higher == 0:
            return requested_epoch, end_offset
        return self._entries[higher - 1].epoch, end_offset

    def epoch_for_offset(self, offset: int) -> int:
        """Kafka's epochForOffset: the epoch of the entry with the largest start offset <= ``offset``
        (UNDEFINED_EPOCH before every entry)."""
        entry = bisect_right([e.start_offset for e in self._entries], offset)
        return self._entries[entry - 1].epoch if entry else UNDEFINED_EPOCH

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: the entry covering it starts there, older entries go (Kafka's
        truncateFromStart; an entry starting exactly there is kept)."""
        covering = bisect_right([entry.start_offset for entry in self._entries], start_offset)
        if covering == 0 or (covering == 1 and self._entries[0].start_offset == start_offset):
            return False
        epoch = self._entries[covering - 1].epoch
        del self._entries[:covering]
        del self._epochs[:covering]
        self._entries.insert(0, EpochEntry(epoch, start_offset))
        self._epochs.insert(0, epoch)
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """The log now ends before ``end_offset``: entries starting at or after it go (Kafka's truncateFromEnd)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return False
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._pop()
        return True

    def clear(self) -> bool:
        changed = bool(self._entries)
        self._entries.clear()
        self._epochs.clear()
        self.latest_epoch = UNDEFINED_EPOCH
        return changed

    def _pop(self) -> None:
        self._entries.pop()
        self._epochs.pop()
        self.latest_epoch = self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def write(self, directory: StrPath) -> None:
        """Replace the directory's leader-epoch-checkpoint atomically (fsynced, like every checkpoint)."""
        write_checkpoint_lines(
            os.path.join(directory, LEADER_EPOCH_CHECKPOINT), LEADER_EPOCH_CHECKPOINT_VERSION,
            [f"{entry.epoch} {entry.start_offset}" for entry in self._entries],
        )


def read_leader_epoch_checkpoint(directory: StrPath) -> list[EpochEntry] | None:
    """The entries of the directory's leader-epoch-checkpoint; None when it is missing or unusable (malformed, or
    not strictly ascending), so the caller rebuilds them from the log."""
    path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
    if not os.path.exists(path):
        return None
    try:
        entries = [_parse_entry(line) for line in read_checkpoint_lines(path, LEADER_EPOCH_CHECKPOINT_VERSION)]
        for previous, entry in zip(entries, entries[1:]):
            if entry.epoch <= previous.epoch or entry.start_offset <= previous.start_offset:
                raise CorruptFileError(f"{path}: entries out of order: {previous} then {entry}")
    except (CorruptFileError, OSError, UnicodeDecodeError) as exc:
        log.warning("Ignoring unusable %s: %s", path, exc)
        return None
    return entries


def _parse_entry(line: str) -> EpochEntry:
    """``<epoch> <start offset>`` separated by whitespace, as Kafka's formatter reads it."""
    fields = line.split()
    try:
        if len(fields) != 2:
            raise ValueError(line)
        entry = EpochEntry(int(fields[0]), int(fields[1]))
    except ValueError as exc:
        raise CorruptFileError(f"malformed leader epoch entry {line!r}") from exc
    if entry.epoch < 0 or entry.start_offset < 0:
        raise CorruptFileError(f"negative leader epoch entry {line!r}")
    return entry
