"""Committed offsets, by group, topic and partition (Kafka's OffsetMetadataManager store).

The store only changes by replaying ``__consumer_offsets`` records (at load and after each successful
write), so what is in memory is always what the log says. Each offset keeps the log offset of its record: when a
transaction's offsets are committed, the newer of a transactional and a plain commit wins (Kafka compares them so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from minibroker.protocol.group_records import NO_TIMESTAMP, OffsetCommitValue


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None  # only from OffsetCommit v2-v4 with a retention time
    record_offset: int  # where its record is in __consumer_offsets

    @classmethod
    def from_record(cls, value: OffsetCommitValue, record_offset: int) -> OffsetAndMetadata:
        expire = None if value.expire_timestamp == NO_TIMESTAMP else value.expire_timestamp
        return cls(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, expire, record_offset)


class OffsetStore:
    def __init__(self) -> None:
        self._by_group: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}

    def get(self, group: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._by_group.get(group, {}).get(topic, {}).get(partition)

    def put(self, group: str, topic: str, partition: int, offset: OffsetAndMetadata) -> None:
        self._by_group.setdefault(group, {}).setdefault(topic, {})[partition] = offset

    def remove(self, group: str, topic: str, partition: int) -> None:
        topics = self._by_group.get(group)
        if topics is None:
            return
        partitions = topics.get(topic)
        if partitions is None:
            return
        partitions.pop(partition, None)
        if not partitions:
            del topics[topic]
        if not topics:
            del self._by_group[group]

    def forget(self, selects: Callable[[str], bool]) -> None:
        """Drop the offsets of the groups ``selects`` picks (their partition moved to another coordinator)."""
        for group in [g for g in self._by_group if selects(g)]:
            del self._by_group[group]

    def group_offsets(self, group: str) -> dict[str, dict[int, OffsetAndMetadata]]:
        """A group's offsets by topic and partition (a view: do not change it)."""
        return self._by_group.get(group, {})
