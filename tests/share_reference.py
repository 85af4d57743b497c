"""The per-offset share partition that ``SharePartition``'s ranges must agree with: one entry per offset in flight,
each rule applied offset by offset, as the first implementation kept them (and as Kafka's rules read offset by offset).
Only tests use it (tests/test_share_partition_model.py); it is slow by design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from minibroker.protocol.errors import ErrorCode
from minibroker.share.partition import (
    FINISHED,
    KNOWN_TYPES,
    AckBatch,
    AcknowledgeType,
    AcquiredRange,
    FetchedBatch,
    ShareError,
    ShareLimits,
)
from minibroker.protocol.share_state import DeliveryState, PersistedShareState, StateBatch


@dataclass(slots=True)
class InFlight:
    state: DeliveryState
    delivery_count: int
    member: str = ""
    deadline: int = -1


class OffsetModel:
    def __init__(
        self, start_offset: int, limits: ShareLimits, clock: Callable[[], int], *, state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.limits = limits
        self.clock = clock
        self.state_epoch = state_epoch
        self.leader_epoch = leader_epoch
        self.records: dict[int, InFlight] = {}
        self._dirty: set[int] = set()  # offsets changed since the last take_update
        self._start_moved = False

    # ---- persistence ----

    @classmethod
    def from_persisted(cls, state: PersistedShareState, limits: ShareLimits, clock: Callable[[], int]) -> OffsetModel:
        """The partition a restart finds: the persisted batches above the start offset, and the offsets between
        them (never delivered) available again."""
        partition = cls(state.start_offset, limits, clock, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch)
        for batch in state.batches:
            delivery_state = DeliveryState.AVAILABLE if batch.delivery_state == DeliveryState.ACQUIRED else batch.delivery_state
            for offset in range(max(batch.first_offset, state.start_offset), batch.last_offset + 1):
                partition.records[offset] = InFlight(DeliveryState(delivery_state), batch.delivery_count)
        if partition.records:
            partition.end_offset = max(partition.records) + 1
            for offset in range(partition.start_offset, partition.end_offset):
                partition.records.setdefault(offset, InFlight(DeliveryState.AVAILABLE, 0))
        partition._advance_start()
        return partition

    def to_persisted(self) -> PersistedShareState:
        """The whole state, as a ShareSnapshot carries it (acquired records as available: a lock is not kept)."""
        return self._state(sorted(self.records))

    def take_update(self) -> PersistedShareState | None:
        """The records changed since the last call, as a ShareUpdate carries them; None when nothing changed."""
        if not self._dirty and not self._start_moved:
            return None
        offsets = sorted(offset for offset in self._dirty if offset in self.records)
        self._dirty.clear()
        self._start_moved = False
        return self._state(offsets)

    def _state(self, offsets: Iterable[int]) -> PersistedShareState:
        batches: list[StateBatch] = []
        for offset in offsets:
            record = self.records[offset]
            state = DeliveryState.AVAILABLE if record.state == DeliveryState.ACQUIRED else record.state
            last = batches[-1] if batches else None
            if last is not None and last.last_offset == offset - 1 and (last.delivery_state, last.delivery_count) == (
                state, record.delivery_count,
            ):
                batches[-1] = StateBatch(last.first_offset, offset, state, record.delivery_count)
            else:
                batches.append(StateBatch(offset, offset, state, record.delivery_count))
        return PersistedShareState(self.state_epoch, self.leader_epoch, self.start_offset, tuple(batches))

    # ---- reading ----

    def next_fetch_offset(self) -> int:
        """Where the next read of the log starts: the first available record in flight, else the end."""
        for offset in range(self.start_offset, self.end_offset):
            record = self.records.get(offset)
            if record is not None and record.state == DeliveryState.AVAILABLE:
                return offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch could acquire anything: a record in flight is available, or there is room for new ones."""
        return self.next_fetch_offset() < self.end_offset or self.in_flight() < self.limits.max_in_flight

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def next_deadline(self) -> int | None:
        """When the earliest lock runs out (None: nothing acquired)."""
        deadlines = [r.deadline for r in self.records.values() if r.state == DeliveryState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def finished_count(self) -> int:
        return sum(1 for record in self.records.values() if record.state in FINISHED)

    # ---- acquiring ----

    def acquire(
        self, member: str, batches: Sequence[FetchedBatch], max_records: int, batch_size: int, record_limit: bool = False,
    ) -> list[AcquiredRange]:
        """Acquire for ``member`` the available records of ``batches`` (read from the log at next_fetch_offset) and
        new ones after the end, within the limits; returns the ranges acquired with their delivery counts."""
        if max_records <= 0:
            return []
        deadline = self.clock() + self.limits.lock_duration_ms
        taken: list[tuple[int, int, bool]] = []  # (offset, delivery count, first of its log batch)
        new_room = self.limits.max_in_flight - self.in_flight()
        full = False
        for batch in sorted(batches, key=lambda b: b.first_offset):
            if full or len(taken) >= max_records:
                break
            new_in_batch = False
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                if record_limit and len(taken) >= max_records:
                    break
                if offset >= self.end_offset:
                    if new_room <= 0 and (record_limit or not new_in_batch):
                        full = True
                        break
                    new_in_batch = True
                    record = self.records[offset] = InFlight(DeliveryState.AVAILABLE, 0)
                    self.end_offset = offset + 1
                    new_room -= 1
                else:
                    record = self.records.get(offset)
                    if record is None or record.state != DeliveryState.AVAILABLE:
                        continue
                record.delivery_count += 1
                if batch.aborted:  # acquired, then archived at once (Kafka's filterAbortedTransactionalAcquiredRecords)
                    record.state = DeliveryState.ARCHIVED
                    self._dirty.add(offset)
                    continue
                record.state = DeliveryState.ACQUIRED
                record.member = member
                record.deadline = deadline
                taken.append((offset, record.delivery_count, offset == batch.first_offset))
        self._advance_start()
        return _ranges(taken, batch_size)

    # ---- acknowledging ----

    def acknowledge(self, member: str, batches: Sequence[AckBatch]) -> None:
        """Apply ``member``'s acknowledgements, all or none: raises ShareError (nothing changed) as Kafka refuses
        them. ``batches`` are in order and do not overlap (the handler checks the request as KafkaApis does)."""
        plan: list[tuple[int, int]] = []
        for batch in batches:
            if batch.last_offset < self.start_offset:
                continue  # already finished
            if not self.records:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache.")
            if batch.first_offset >= self.end_offset:
                raise ShareError(ErrorCode.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records.")
            if batch.last_offset >= self.end_offset:
                raise ShareError(ErrorCode.INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records.")
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                record = self.records.get(offset)
                if record is None:
                    continue
                if record.state != DeliveryState.ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if record.member != member:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
                ack_type = batch.type_of(offset)
                if ack_type not in KNOWN_TYPES:
                    raise ShareError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {ack_type}")
                if ack_type == AcknowledgeType.RENEW and not self.limits.renew_enabled:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Renew acknowledgements are disabled for the group.")
                plan.append((offset, ack_type))
        renewed = self.clock() + self.limits.lock_duration_ms
        for offset, ack_type in plan:
            record = self.records[offset]
            if ack_type == AcknowledgeType.RENEW:
                record.deadline = renewed
                continue
            if ack_type == AcknowledgeType.ACCEPT:
                self._finish(offset, DeliveryState.ACKNOWLEDGED)
            elif ack_type == AcknowledgeType.RELEASE:
                self._release(offset)
            else:
                self._finish(offset, DeliveryState.ARCHIVED)
        self._advance_start()

    def release_member(self, member: str) -> bool:
        """A member's session closed or it left: its acquired records become available, their delivery not counted
        (Kafka's DeliveryCountOps.DECREASE). Returns whether anything changed."""
        changed = False
        for offset, record in self.records.items():
            if record.state == DeliveryState.ACQUIRED and record.member == member:
                record.state = DeliveryState.AVAILABLE
                record.delivery_count = max(record.delivery_count - 1, 0)
                record.member, record.deadline = "", -1
                self._dirty.add(offset)
                changed = True
        return changed

    def expire_locks(self) -> bool:
        """Locks whose deadline passed: their records are released (archived at the delivery limit). Returns whether
        any ran out."""
        now = self.clock()
        expired = [o for o, r in self.records.items() if r.state == DeliveryState.ACQUIRED and r.deadline <= now]
        for offset in expired:
            self._release(offset)
        if expired:
            self._advance_start()
        return bool(expired)

    # ---- the start offset ----

    def advance_to(self, log_start_offset: int) -> bool:
        """The log's start moved past records in flight (retention, DeleteRecords): they are archived and the start
        offset follows (Kafka's updateCacheAndOffsets). Returns whether the start moved."""
        if log_start_offset <= self.start_offset:
            return False
        for offset in range(self.start_offset, min(log_start_offset, self.end_offset)):
            self.records.pop(offset, None)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._start_moved = True
        self._advance_start()
        return True

    def _release(self, offset: int) -> None:
        record = self.records[offset]
        if record.delivery_count >= self.limits.delivery_count_limit:
            self._finish(offset, DeliveryState.ARCHIVED)
            return
        record.state = DeliveryState.AVAILABLE
        record.member, record.deadline = "", -1
        self._dirty.add(offset)

    def _finish(self, offset: int, state: DeliveryState) -> None:
        record = self.records[offset]
        record.state = state
        record.member, record.deadline = "", -1
        self._dirty.add(offset)

    def _advance_start(self) -> None:
        """Move the start offset past the finished records at its head (they need no tracking any more)."""
        start = self.start_offset
        while start < self.end_offset:
            record = self.records.get(start)
            if record is not None and record.state not in FINISHED:
                break
            self.records.pop(start, None)
            start += 1
        if start != self.start_offset:
            self.start_offset = start
            self._start_moved = True

    # ---- for the admin APIs and the inspector ----

    def describe(self) -> dict[str, object]:
        """Start and end offsets and the in-flight records as ranges of one state, count, owner and deadline."""
        runs: list[dict[str, object]] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            key = (record.state.name.lower(), record.delivery_count, record.member or None, record.deadline)
            last = runs[-1] if runs else None
            if last is not None and last["last_offset"] == offset - 1 and last["key"] == key:
                last["last_offset"] = offset
            else:
                runs.append({"first_offset": offset, "last_offset": offset, "key": key})
        batches = [
            {
                "first_offset": run["first_offset"], "last_offset": run["last_offset"], "state": run["key"][0],
                "delivery_count": run["key"][1], "member_id": run["key"][2],
                "lock_deadline_ms": run["key"][3] if run["key"][3] >= 0 else None,
            }
            for run in runs
        ]
        return {"start_offset": self.start_offset, "end_offset": self.end_offset, "in_flight": batches}


def _ranges(taken: list[tuple[int, int, bool]], batch_size: int) -> list[AcquiredRange]:
    """Acquired offsets as AcquiredRecords: contiguous offsets of one delivery count together, split at a log batch
    once a range holds ``batch_size`` records (Kafka's createBatches)."""
    ranges: list[AcquiredRange] = []
    for offset, count, starts_batch in taken:
        last = ranges[-1] if ranges else None
        if (
            last is not None and last.last_offset == offset - 1 and last.delivery_count == count
            and not (starts_batch and last.last_offset - last.first_offset + 1 >= max(batch_size, 1))
        ):
            ranges[-1] = AcquiredRange(last.first_offset, offset, count)
        else:
            ranges.append(AcquiredRange(offset, offset, count))
    return ranges
