"""The offsets OffsetCommit v0 stores when a ZooKeeper-mode release (2.1-3.2) is emulated.

Kafka's ZooKeeper-mode broker kept them in ZooKeeper (``/consumers/<group>/offsets/<topic>/<partition>``), apart
from the group coordinator's offsets: only OffsetFetch v0 reads them, without metadata, and they outlive the broker.
Here they are one JSON file in the data directory, written whole (through a temporary file) on every commit: these
are old clients' commits, few and small.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE_NAME = "zookeeper-consumer-offsets.json"


class ZooKeeperOffsets:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.offsets: dict[str, dict[str, int]] = {}  # group -> "topic:partition" -> offset
        if self.path.exists():
            self.offsets = json.loads(self.path.read_text())

    def commit(self, group: str, commits: list[tuple[str, int, int]]) -> None:
        """Store ``(topic, partition, offset)`` commits of ``group``, durably before returning."""
        stored = self.offsets.setdefault(group, {})
        for topic, partition, offset in commits:
            stored[f"{topic}:{partition}"] = offset
        scratch = self.path.with_suffix(".tmp")
        with open(scratch, "w") as out:
            json.dump(self.offsets, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(scratch, self.path)

    def get(self, group: str, topic: str, partition: int) -> int | None:
        return self.offsets.get(group, {}).get(f"{topic}:{partition}")
