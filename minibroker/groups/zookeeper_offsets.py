"""The offsets OffsetCommit v0 stores when a ZooKeeper-mode release (2.1-3.2) is emulated.

Kafka's ZooKeeper-mode broker kept them in ZooKeeper (``/consumers/<group>/offsets/<topic>/<partition>``), apart
from the group coordinator's offsets: only OffsetFetch v0 reads them, without metadata, and they outlive the broker.
Here they are one JSON file in the data directory, written whole (atomically, as every JSON file of the data directory) on every commit: these
are old clients' commits, few and small.
"""

from __future__ import annotations

import os

from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

FILE_NAME = "zookeeper-consumer-offsets.json"


class ZooKeeperOffsets:
    def __init__(self, data_dir: StrPath) -> None:
        self.path = os.path.join(data_dir, FILE_NAME)
        self.offsets: dict[str, dict[str, int]] = read_json(self.path) or {}  # group -> "topic:partition" -> offset

    def commit(self, group: str, commits: list[tuple[str, int, int]]) -> None:
        """Store ``(topic, partition, offset)`` commits of ``group``, durably before returning."""
        stored = self.offsets.setdefault(group, {})
        for topic, partition, offset in commits:
            stored[f"{topic}:{partition}"] = offset
        write_json_atomically(self.path, self.offsets)

    def get(self, group: str, topic: str, partition: int) -> int | None:
        return self.offsets.get(group, {}).get(f"{topic}:{partition}")
