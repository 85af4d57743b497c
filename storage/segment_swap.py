"""Crash-safe replacement of log segments by a cleaned one, with Kafka's file suffixes (LocalLog.replaceSegments).

The cleaner writes ``<base>.log.cleaned`` (and ``.index.cleaned``...), fsyncs it, then the swap renames it:

1. ``*.cleaned`` -> ``*.swap``: from here on the new segment wins after a crash;
2. the old segments' files -> ``*.deleted``, then unlinked;
3. ``*.swap`` -> the final names.

``recover_interrupted_swap`` runs when a partition directory is opened and finishes or undoes whatever a crash
interrupted, with Kafka's rules (LogLoader.removeTempFilesAndCollectSwapFiles): ``.deleted`` and ``.cleaned`` files
are removed, ``.swap`` files at or after the lowest ``.cleaned`` offset belong to an unfinished step 1 and are
removed too, and every other ``.log.swap`` completes its swap: the segment files it covers are deleted and the
``.swap`` suffixes dropped.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .segment import LOG_SUFFIX, SEGMENT_SUFFIXES, BatchScanner, segment_file

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"


def temp_segment_file(directory: Path, base_offset: int, suffix: str, temp_suffix: str) -> Path:
    """``<base>.log.cleaned`` and the like."""
    return segment_file(directory, base_offset, suffix + temp_suffix)


def change_suffixes(directory: Path, base_offset: int, old: str, new: str) -> None:
    """Rename every existing file of segment ``base_offset`` from ``<name><old>`` to ``<name><new>`` (.log first)."""
    for suffix in SEGMENT_SUFFIXES:
        source = segment_file(directory, base_offset, suffix + old)
        if source.exists():
            os.replace(source, segment_file(directory, base_offset, suffix + new))


def remove_files(directory: Path, base_offset: int, temp_suffix: str) -> None:
    """Delete segment ``base_offset``'s files carrying ``temp_suffix`` (an abandoned cleaning, retired files)."""
    for suffix in SEGMENT_SUFFIXES:
        temp_segment_file(directory, base_offset, suffix, temp_suffix).unlink(missing_ok=True)


def recover_interrupted_swap(directory: Path) -> None:
    """Finish or undo a swap interrupted by a crash, before the directory's segments are loaded."""
    min_cleaned: int | None = None
    swaps: list[Path] = []
    for path in directory.iterdir():
        base = _base_offset(path.name)
        if base is None:
            continue
        if path.name.endswith(DELETED_SUFFIX):
            log.info("Removing %s, left over from a segment deletion", path)
            path.unlink()
        elif path.name.endswith(CLEANED_SUFFIX):
            log.info("Removing %s, left over from an interrupted cleaning", path)
            path.unlink()
            min_cleaned = base if min_cleaned is None else min(min_cleaned, base)
        elif path.name.endswith(SWAP_SUFFIX):
            swaps.append(path)
    for path in sorted(swaps):
        base = _base_offset(path.name)
        if min_cleaned is not None and base is not None and base >= min_cleaned:
            log.info("Removing %s: its swap had not begun when the broker stopped", path)
            path.unlink()
        elif path.name.endswith(LOG_SUFFIX + SWAP_SUFFIX) and base is not None:
            _replace_covered_segments(directory, base, path)
    for path in sorted(directory.glob("*" + SWAP_SUFFIX)):
        os.replace(path, path.with_name(path.name[: -len(SWAP_SUFFIX)]))


def _replace_covered_segments(directory: Path, base: int, swap_log: Path) -> None:
    """Delete the segment files that the swapped-in segment ``[base, its next offset)`` replaces."""
    end = _next_offset(swap_log, base)
    log.info("Completing the interrupted swap of %s (offsets %d to %d)", swap_log, base, end)
    for path in directory.iterdir():
        name = path.name
        stem, _, suffix = name.partition(".")
        if stem.isdigit() and "." + suffix in SEGMENT_SUFFIXES and base <= int(stem) < max(end, base + 1):
            path.unlink()


def _next_offset(swap_log: Path, base: int) -> int:
    """The offset after the last batch of a (fsynced, so whole) swap file; ``base`` when it is empty."""
    fd = os.open(swap_log, os.O_RDONLY)
    try:
        end = base
        for header in BatchScanner(fd, 0, os.fstat(fd).st_size, base_offset=base, verify_crc=False):
            end = header.last_offset + 1
        return end
    finally:
        os.close(fd)


def _base_offset(name: str) -> int | None:
    stem = name.partition(".")[0]
    return int(stem) if stem.isdigit() else None
