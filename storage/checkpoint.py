"""Kafka's small text files: offset checkpoints, meta.properties and partition.metadata; and the JSON files in which
minibroker keeps what Kafka keeps in its metadata log.

Every write is atomic the way Kafka does it: write ``<file>.tmp``, fsync it, rename it over the
original, then fsync the directory so the rename itself survives a crash.

Paths are strings or ``os.PathLike`` (``pathlib.Path``), handled with ``os.path``: these files are read and written
while a broker starts, and pathlib (with the urllib.parse and ipaddress it imports) would cost that start-up more than
any other module.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .errors import CorruptFileError
from .uuid import uuid_from_str, uuid_to_str

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"

OFFSET_CHECKPOINT_VERSION = 0
META_PROPERTIES_VERSION = 1
PARTITION_METADATA_VERSION = 0

StrPath = str | os.PathLike[str]


def read_text(path: StrPath) -> str:
    """A whole UTF-8 file (FileNotFoundError when there is none)."""
    with open(path, encoding="utf-8") as file:
        return file.read()


def fsync_dir(directory: StrPath) -> None:
    """Make renames and new files in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: StrPath, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content (a new file gets ``mode``)."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def read_json(path: StrPath) -> Any:
    """A JSON file of the data directory, None when it does not exist. A new data directory has none, and json is
    then never loaded: a default start-up does without it. OSError or ValueError when it cannot be read."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        return None
    import json

    return json.loads(text)


def write_json_atomically(path: StrPath, document: Any, mode: int = 0o644, **json_options: Any) -> None:
    """``document`` as JSON (``json.dumps`` options), written as ``write_atomically`` writes."""
    import json

    write_atomically(path, json.dumps(document, **json_options).encode(), mode)


def checkpoint_bytes(version: int, entries: list[str]) -> bytes:
    """Kafka's CheckpointFile format: version line, entry count line, one line per entry."""
    return (f"{version}\n{len(entries)}\n" + "".join(f"{entry}\n" for entry in entries)).encode("utf-8")


def write_checkpoint_lines(path: StrPath, version: int, entries: list[str]) -> None:
    write_atomically(path, checkpoint_bytes(version, entries))


def read_checkpoint_lines(path: StrPath, version: int) -> list[str]:
    """The entry lines of a checkpoint file; [] when the file does not exist."""
    try:
        lines = read_text(path).split("\n")
    except FileNotFoundError:
        return []
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or lines[0].strip() != str(version):
        raise CorruptFileError(f"{path}: unrecognised checkpoint version or missing header")
    try:
        count = int(lines[1].strip())
    except ValueError as exc:
        raise CorruptFileError(f"{path}: malformed entry count {lines[1]!r}") from exc
    entries = lines[2:]
    if count != len(entries):
        raise CorruptFileError(f"{path}: expected {count} entries but found {len(entries)}")
    return entries


def offset_checkpoint_bytes(offsets: dict[tuple[str, int], int]) -> bytes:
    """``topic partition offset`` lines (sorted, for stable files) in Kafka's format."""
    entries = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    return checkpoint_bytes(OFFSET_CHECKPOINT_VERSION, entries)


def write_offset_checkpoint(path: StrPath, offsets: dict[tuple[str, int], int]) -> None:
    write_atomically(path, offset_checkpoint_bytes(offsets))


def read_offset_checkpoint(path: StrPath) -> dict[tuple[str, int], int]:
    """Parse an offset checkpoint; a missing file is an empty map, a malformed one an error."""
    offsets: dict[tuple[str, int], int] = {}
    for line in read_checkpoint_lines(path, OFFSET_CHECKPOINT_VERSION):
        parts = line.split(" ")
        try:
            if len(parts) != 3:
                raise ValueError(line)
            offsets[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError as exc:
            raise CorruptFileError(f"{path}: malformed line {line!r}") from exc
    return offsets


class MetaProperties:
    """The identity of a KRaft data directory (meta.properties, version 1). (A plain class: a NamedTuple compiles
    its constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("cluster_id", "node_id", "directory_id")

    def __init__(self, cluster_id: str, node_id: int, directory_id: bytes) -> None:
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.directory_id = directory_id

    def __eq__(self, other: object) -> bool:
        if type(other) is not MetaProperties:
            return NotImplemented
        return (self.cluster_id, self.node_id, self.directory_id) == (other.cluster_id, other.node_id, other.directory_id)


def _properties_text(pairs: list[tuple[str, str]], now: float) -> str:
    """Java Properties.store output: an empty comment line, the date line, then key=value lines."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now))
    return "#\n#" + stamp + "\n" + "".join(f"{key}={value}\n" for key, value in pairs)


def _parse_properties(text: str) -> dict[str, str]:
    """Java properties subset: comments, blank lines and key=value / key:value (our values need no escapes)."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            props[line] = ""
        else:
            props[line[:cut].strip()] = line[cut + 1:].strip()
    return props


def write_meta_properties(path: StrPath, meta: MetaProperties) -> None:
    pairs = [
        ("node.id", str(meta.node_id)),
        ("directory.id", uuid_to_str(meta.directory_id)),
        ("version", str(META_PROPERTIES_VERSION)),
        ("cluster.id", meta.cluster_id),
    ]
    write_atomically(path, _properties_text(pairs, time.time()).encode("utf-8"))


def read_meta_properties(path: StrPath) -> MetaProperties | None:
    """The directory's identity, or None if it has no meta.properties yet."""
    try:
        props = _parse_properties(read_text(path))
    except FileNotFoundError:
        return None
    if props.get("version") != str(META_PROPERTIES_VERSION):
        raise CorruptFileError(f"{path}: unsupported meta.properties version {props.get('version')!r}")
    try:
        return MetaProperties(
            cluster_id=props["cluster.id"],
            node_id=int(props["node.id"]),
            directory_id=uuid_from_str(props["directory.id"]),
        )
    except (KeyError, ValueError) as exc:
        raise CorruptFileError(f"{path}: {exc}") from exc


def write_partition_metadata(directory: StrPath, topic_id: bytes) -> None:
    """``version: 0\\ntopic_id: <uuid>`` with no trailing newline, exactly like PartitionMetadataFile."""
    text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_str(topic_id)}"
    write_atomically(os.path.join(directory, PARTITION_METADATA), text.encode("utf-8"))


def read_partition_metadata(directory: StrPath) -> bytes | None:
    """The topic id stored in a partition directory, or None when there is no partition.metadata."""
    path = os.path.join(directory, PARTITION_METADATA)
    try:
        lines = read_text(path).split("\n")
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    if fields.get("version") != str(PARTITION_METADATA_VERSION) or "topic_id" not in fields:
        raise CorruptFileError(f"{path}: malformed partition metadata")
    try:
        return uuid_from_str(fields["topic_id"].strip())
    except ValueError as exc:
        raise CorruptFileError(f"{path}: {exc}") from exc
