"""Offsets committed inside open transactions (TxnOffsetCommit), kept aside until their transaction ends.

As Kafka's OffsetMetadataManager (pendingTransactionalOffsets, openTransactions): they are in ``__consumer_offsets``
already, in a transactional batch, but OffsetFetch must not see them until the COMMIT marker of their producer
reaches the group's partition; an ABORT marker drops them. The index by group and partition answers OffsetFetch's
RequireStable and tells which tombstones a group deletion needs.
"""

from __future__ import annotations

from typing import Callable

from minibroker.groups.offsets import OffsetAndMetadata

TopicPartition = tuple[str, int]
GroupOffsets = dict[str, dict[TopicPartition, OffsetAndMetadata]]  # group -> (topic, partition) -> offset


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._by_producer: dict[int, GroupOffsets] = {}
        self._producers: dict[str, dict[TopicPartition, set[int]]] = {}  # group -> partition -> producers with one pending

    def put(self, producer_id: int, group: str, topic: str, partition: int, offset: OffsetAndMetadata) -> None:
        """A producer's later commit of the same partition in the same transaction replaces its earlier one."""
        self._by_producer.setdefault(producer_id, {}).setdefault(group, {})[(topic, partition)] = offset
        self._producers.setdefault(group, {}).setdefault((topic, partition), set()).add(producer_id)

    def is_pending(self, group: str, topic: str, partition: int) -> bool:
        return (topic, partition) in self._producers.get(group, {})

    def has_group(self, group: str) -> bool:
        return group in self._producers

    def partitions(self, group: str) -> list[TopicPartition]:
        return list(self._producers.get(group, {}))

    def discard(self, group: str, topic: str, partition: int) -> None:
        """A tombstone for the partition: every producer's pending commit of it is gone too."""
        by_partition = self._producers.get(group)
        if by_partition is None:
            return
        for producer_id in by_partition.pop((topic, partition), set()):
            self._remove(producer_id, group, (topic, partition))
        if not by_partition:
            del self._producers[group]

    def take(self, producer_id: int, selects: Callable[[str], bool]) -> GroupOffsets:
        """Remove and return the producer's pending offsets of the groups ``selects`` picks."""
        groups = self._by_producer.get(producer_id, {})
        taken = {group: offsets for group, offsets in groups.items() if selects(group)}
        for group, offsets in taken.items():
            del groups[group]
            by_partition = self._producers[group]
            for tp in offsets:
                producers = by_partition[tp]
                producers.discard(producer_id)
                if not producers:
                    del by_partition[tp]
            if not by_partition:
                del self._producers[group]
        if not groups:
            self._by_producer.pop(producer_id, None)
        return taken

    def forget(self, selects: Callable[[str], bool]) -> None:
        """Drop every producer's pending offsets of the groups ``selects`` picks (their partition moved away)."""
        for producer_id in list(self._by_producer):
            self.take(producer_id, selects)

    def _remove(self, producer_id: int, group: str, tp: TopicPartition) -> None:
        groups = self._by_producer[producer_id]
        offsets = groups[group]
        del offsets[tp]
        if not offsets:
            del groups[group]
        if not groups:
            del self._by_producer[producer_id]
