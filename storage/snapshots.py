"""Named copies of a data directory's files, so a test can put a broker back to a state it saved.

A snapshot holds the directory's files as they are: segment files, indexes, checkpoints, producer state snapshots,
leader-epoch checkpoints and topic metadata. Taken between two writes (the broker's event loop does no other work
meanwhile), it is what a broker that stopped at that moment would leave. Files a crash would leave half-written (a
cleaner's output, a temporary checkpoint) and directories being deleted are left out, and the ``keep`` files (the
lock, and state that must only move forward, such as producer id blocks) are neither saved nor replaced.

Snapshots are held in memory: reading a file costs microseconds where creating one costs a tenth of a millisecond,
and a broker's hundred internal partitions are hundreds of files. They are meant for what tests set up, so one is
limited to ``MAX_SNAPSHOT_BYTES``. A restore rewrites only the files that differ and removes those the snapshot
does not have, so the untouched partitions cost a comparison.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .log_manager import DELETE_DIR_SUFFIX, LOCK_FILE

NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
TRANSIENT_SUFFIXES = (".cleaned", ".swap", ".tmp", ".deleted", DELETE_DIR_SUFFIX)
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024


class SnapshotError(Exception):
    """A snapshot name that is not allowed or not known, or a directory too large to snapshot."""


@dataclass(frozen=True)
class SnapshotInfo:
    name: str
    files: int
    bytes: int


@dataclass(frozen=True)
class Snapshot:
    info: SnapshotInfo
    directories: frozenset[str]  # relative paths, so empty directories come back too
    files: dict[str, bytes] = field(repr=False)  # relative path -> content


class SnapshotStore:
    """The snapshots of one data directory."""

    def __init__(self, keep: tuple[str, ...] = (), max_bytes: int = MAX_SNAPSHOT_BYTES) -> None:
        self.keep = {LOCK_FILE, *keep}
        self.max_bytes = max_bytes
        self.snapshots: dict[str, Snapshot] = {}

    def save(self, name: str, data_dir: str | os.PathLike[str], replace: Mapping[str, bytes] | None = None) -> SnapshotInfo:
        """Save ``data_dir`` as snapshot ``name`` (replacing one of that name); ``replace`` gives the content of
        some files instead of what the directory holds (checkpoints that describe the saved state)."""
        if not NAME.fullmatch(name):
            raise SnapshotError(f"snapshot name {name!r}: 1 to 100 letters, digits, '.', '_' or '-'")
        data_dir = Path(data_dir)
        directories, paths = self._walk(data_dir)
        total = sum((data_dir / path).stat().st_size for path in paths)
        if total > self.max_bytes:
            raise SnapshotError(f"{data_dir} holds {total} bytes: snapshots are kept in memory, up to {self.max_bytes}")
        files = {path: (data_dir / path).read_bytes() for path in paths}
        files.update(replace or {})
        info = SnapshotInfo(name, len(files), sum(len(data) for data in files.values()))
        self.snapshots[name] = Snapshot(info, frozenset(directories), files)
        return info

    def get(self, name: str) -> SnapshotInfo:
        """The snapshot called ``name``; SnapshotError naming those there are when there is none."""
        snapshot = self.snapshots.get(name)
        if snapshot is None:
            known = f"the snapshots are {sorted(self.snapshots)}" if self.snapshots else "none was taken"
            raise SnapshotError(f"no snapshot {name!r}: {known}")
        return snapshot.info

    def load(self, name: str, data_dir: str | os.PathLike[str]) -> SnapshotInfo:
        """Make ``data_dir`` (closed by its owner first) hold exactly snapshot ``name``'s files."""
        self.get(name)
        snapshot = self.snapshots[name]
        data_dir = Path(data_dir)
        directories, paths = self._walk(data_dir)
        for path in paths:
            if path not in snapshot.files:
                os.unlink(data_dir / path)
        for directory in sorted(directories - snapshot.directories, reverse=True):
            shutil.rmtree(data_dir / directory, ignore_errors=True)
        for directory in sorted(snapshot.directories - directories):
            (data_dir / directory).mkdir(parents=True, exist_ok=True)
        for path, data in snapshot.files.items():
            target = data_dir / path
            if path in paths and _holds(target, data):
                continue
            target.write_bytes(data)
        return snapshot.info

    def delete(self, name: str) -> None:
        self.get(name)
        del self.snapshots[name]

    def _walk(self, data_dir: Path) -> tuple[set[str], set[str]]:
        """The directories and files under ``data_dir`` a snapshot covers, as relative paths."""
        directories: set[str] = set()
        files: set[str] = set()
        for root, dir_names, file_names in os.walk(data_dir):
            dir_names[:] = [d for d in dir_names if not self._left_out(d)]
            relative = os.path.relpath(root, data_dir)
            prefix = "" if relative == "." else relative + os.sep
            directories.update(prefix + d for d in dir_names)
            files.update(prefix + f for f in file_names if not self._left_out(f))
        return directories, files

    def _left_out(self, name: str) -> bool:
        return name in self.keep or name.endswith(TRANSIENT_SUFFIXES)


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file already has exactly ``data`` (its size first: most files that differ, differ in size)."""
    if path.stat().st_size != len(data):
        return False
    return not data or path.read_bytes() == data
