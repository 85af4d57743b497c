"""Test doubles for the group coordinator: a manual clock with keyed timers, and an in-memory __consumer_offsets."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from minibroker.protocol.primitives import Writer
from minibroker.protocol.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from minibroker.protocol.schema import codec

from minibroker.groups.coordinator import CoordinatorWriteError, GroupCoordinator


class FakeTimer:
    """A ``Timer`` whose time moves only in ``advance``; due actions run in time order, as a real loop would."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now = now_ms
        self.pending: dict[str, tuple[int, int, Callable[[], None]]] = {}
        self._sequence = itertools.count()

    def now_ms(self) -> int:
        return self.now

    def schedule(self, key: str, delay_ms: int, action: Callable[[], None]) -> None:
        self.pending[key] = (self.now + max(delay_ms, 0), next(self._sequence), action)

    def cancel(self, key: str) -> None:
        self.pending.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self.pending

    def advance(self, ms: int = 0) -> None:
        target = self.now + ms
        while True:
            due = [(when, seq, key) for key, (when, seq, _) in self.pending.items() if when <= target]
            if not due:
                break
            when, _, key = min(due)
            action = self.pending.pop(key)[2]
            self.now = when
            action()
        self.now = target


@dataclass(frozen=True)
class Entry:
    """One record of a fake partition: data (``producer_id`` set if transactional) or a COMMIT/ABORT marker."""

    key: bytes | None
    value: bytes | None
    producer_id: int = NO_PRODUCER_ID
    marker: bool | None = None  # True: COMMIT, False: ABORT, None: data


class FakeRecordLog:
    """``RecordLog`` kept in memory per partition (an entry's index is its offset); ``fail_with`` makes the next
    appends fail."""

    def __init__(self, num_partitions: int = 50) -> None:
        self.num_partitions = num_partitions
        self.partitions: dict[int, list[Entry]] = defaultdict(list)
        self.fail_with: ErrorCode | None = None

    def append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]], producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> int:
        if self.fail_with is not None:
            raise CoordinatorWriteError(self.fail_with, "injected failure")
        entries = self.partitions[partition]
        base_offset = len(entries)
        entries.extend(Entry(key, value, producer_id) for key, value in records)
        return base_offset

    def write_marker(self, coordinator: GroupCoordinator, partition: int, producer_id: int, committed: bool) -> None:
        """What the transaction coordinator's marker writer does: append the marker, tell the listener."""
        self.partitions[partition].append(Entry(None, None, producer_id, committed))
        coordinator.on_marker(partition, producer_id, committed)

    def all_records(self) -> list[tuple[bytes, bytes | None]]:
        """The data records (markers left out) as (key, value)."""
        return [
            (entry.key, entry.value)
            for partition in sorted(self.partitions) for entry in self.partitions[partition] if entry.marker is None
        ]

    def load_into(self, coordinator: GroupCoordinator) -> None:
        """What the broker does at start-up: replay every partition, markers included, then let its groups go live."""
        coordinator.begin_loading(range(self.num_partitions))
        for partition in range(self.num_partitions):
            for offset, entry in enumerate(self.partitions.get(partition, [])):
                replay_entry(coordinator, partition, offset, entry)
            coordinator.finish_loading(partition)


def replay_entry(coordinator: GroupCoordinator, partition: int, offset: int, entry: Entry) -> None:
    """What the broker's loader does with one record of __consumer_offsets."""
    if entry.marker is not None:
        coordinator.complete_transaction(partition, entry.producer_id, entry.marker)
    else:
        coordinator.replay(entry.key, entry.value, offset, entry.producer_id)


class Answers:
    """Collects what a coordinator answers through a responder."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def __call__(self, response: dict[str, Any]) -> None:
        self.items.append(response)

    @property
    def last(self) -> dict[str, Any]:
        assert self.items, "no answer yet"
        return self.items[-1]


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0, as a Java consumer sends it in JoinGroup metadata."""
    writer = Writer()
    writer.int16(0)
    codec(CONSUMER_PROTOCOL_SUBSCRIPTION, 0).encode(writer, {"topics": list(topics), "user_data": None})
    return writer.getvalue()


def assignment(topic: str, *partitions: int) -> bytes:
    writer = Writer()
    writer.int16(0)
    codec(CONSUMER_PROTOCOL_ASSIGNMENT, 0).encode(
        writer, {"assigned_partitions": [{"topic": topic, "partitions": list(partitions)}], "user_data": None}
    )
    return writer.getvalue()
