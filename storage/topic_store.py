"""Topic metadata Kafka keeps in its metadata log, kept here in ``<data_dir>/topic-configs.json``.

It records each topic's id, partition count and config overrides, so a restart restores them and a
crash in the middle of creating a topic can be completed on the next open.
"""

from __future__ import annotations

from .checkpoint import StrPath, read_json, write_atomically
from .errors import CorruptFileError
from .uuid import uuid_from_str, uuid_to_str

TOPIC_STORE_FILE = "topic-configs.json"
TOPIC_STORE_VERSION = 1


class StoredTopic:
    """One topic's entry; replaced, never changed, so ``TopicStoreFile`` can keep each entry's encoded line. (A plain
    class: a NamedTuple compiles its constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("topic_id", "partitions", "overrides")

    def __init__(self, topic_id: bytes, partitions: int, overrides: dict[str, str]) -> None:
        self.topic_id = topic_id
        self.partitions = partitions
        self.overrides = overrides

    def __eq__(self, other: object) -> bool:
        if type(other) is not StoredTopic:
            return NotImplemented
        return (self.topic_id, self.partitions, self.overrides) == (other.topic_id, other.partitions, other.overrides)


def read_topic_store(path: StrPath) -> dict[str, StoredTopic]:
    """The stored topics, {} when the file does not exist yet."""
    try:
        document = read_json(path)
    except ValueError as exc:
        raise CorruptFileError(f"{path}: {exc}") from exc
    if document is None:
        return {}
    if not isinstance(document, dict) or document.get("version") != TOPIC_STORE_VERSION:
        raise CorruptFileError(f"{path}: unsupported topic store version")
    try:
        return {
            name: StoredTopic(
                topic_id=uuid_from_str(entry["topic_id"]),
                partitions=int(entry["partitions"]),
                overrides={str(k): str(v) for k, v in entry.get("configs", {}).items()},
            )
            for name, entry in document["topics"].items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptFileError(f"{path}: malformed topic entry ({exc})") from exc


class TopicStoreFile:
    """The store's file, rewritten whole at every change (a rename: never half-written), one topic per line. Each
    entry's line is encoded once and kept while the entry object is the same: a test session creates topics by the
    thousand, and re-encoding every topic at every CreateTopics made each slower than the last."""

    def __init__(self, path: StrPath) -> None:
        self.path = path
        self._lines: dict[str, tuple[StoredTopic, str]] = {}

    def write(self, topics: dict[str, StoredTopic]) -> None:
        lines = []
        for name, topic in sorted(topics.items()):
            cached = self._lines.get(name)
            if cached is None or cached[0] is not topic:
                cached = self._lines[name] = (topic, _entry_line(name, topic))
            lines.append(cached[1])
        if len(self._lines) > len(topics):
            self._lines = {name: cached for name, cached in self._lines.items() if name in topics}
        body = ",\n".join(lines)
        write_atomically(self.path, f'{{"version": {TOPIC_STORE_VERSION}, "topics": {{\n{body}\n}}}}\n'.encode())


def _entry_line(name: str, topic: StoredTopic) -> str:
    import json  # loaded when the first topic is stored

    entry = {"topic_id": uuid_to_str(topic.topic_id), "partitions": topic.partitions,
             "configs": dict(sorted(topic.overrides.items()))}
    return f"    {json.dumps(name)}: {json.dumps(entry)}"
