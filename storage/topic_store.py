"""Topic metadata Kafka keeps in its metadata log, kept here in ``<data_dir>/topic-configs.json``.

It records each topic's id, partition count and config overrides, so a restart restores them and a
crash in the middle of creating a topic can be completed on the next open.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoint import write_atomically
from .errors import CorruptFileError
from .uuid import uuid_from_str, uuid_to_str

TOPIC_STORE_FILE = "topic-configs.json"
TOPIC_STORE_VERSION = 1


@dataclass
class StoredTopic:
    topic_id: bytes
    partitions: int
    overrides: dict[str, str] = field(default_factory=dict)


def read_topic_store(path: Path) -> dict[str, StoredTopic]:
    """The stored topics, {} when the file does not exist yet."""
    try:
        document = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise CorruptFileError(f"{path}: {exc}") from exc
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


def write_topic_store(path: Path, topics: dict[str, StoredTopic]) -> None:
    document = {
        "version": TOPIC_STORE_VERSION,
        "topics": {
            name: {
                "topic_id": uuid_to_str(topic.topic_id),
                "partitions": topic.partitions,
                "configs": dict(sorted(topic.overrides.items())),
            }
            for name, topic in sorted(topics.items())
        },
    }
    write_atomically(path, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
