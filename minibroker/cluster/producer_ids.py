"""Producer ids for InitProducerId, never reused across restarts.

Ids are handed out from blocks; the end of the current block is persisted before any id of it
is used, so after a crash the broker continues past every id it may have given out (the same
idea as Kafka's ProducerIdManager blocks).
"""

from __future__ import annotations

import os

from minibroker.storage.checkpoint import StrPath, read_text, write_atomically

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdAllocator:
    def __init__(self, data_dir: StrPath) -> None:
        self.path = os.path.join(data_dir, FILE_NAME)
        self.next_id = int(read_text(self.path).strip()) if os.path.exists(self.path) else 0
        self.block_end = self.next_id

    def allocate(self) -> int:
        if self.next_id >= self.block_end:
            self.block_end = self.next_id + BLOCK_SIZE
            self._persist(self.block_end)
        producer_id = self.next_id
        self.next_id += 1
        return producer_id

    def _persist(self, value: int) -> None:
        write_atomically(self.path, f"{value}\n".encode())
