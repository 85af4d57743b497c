"""One share partition's in-flight records, as Kafka's SharePartition keeps them: pure state, no I/O, clock injected.

Offsets ``start_offset`` .. ``end_offset - 1`` are in flight: each tracked one is available, acquired by a member under
a lock until a deadline, acknowledged, or archived, with the number of times it was delivered. Offsets in that range
that are not tracked hold no record (compacted away) and count as finished. The start offset moves past finished
records; records at or above ``end_offset`` were never acquired. Tracked offsets are kept as ranges of offsets alike
(InFlightBatch), so the cost of a request follows the ranges it touches, not the records. Kafka's rules kept here:

- acquiring counts a delivery (not written to the state store: Kafka persists states, not locks); in batch-optimized mode whole log batches are taken (MaxRecords may be exceeded), in
  record-limit mode (ShareFetch v2 ShareAcquireMode 1) exactly MaxRecords at most; new records stop at
  ``max_in_flight`` records in flight (a whole batch may still cross it in batch-optimized mode);
- acknowledgements are all or nothing per partition: every offset acknowledged must be acquired by the member
  (INVALID_RECORD_STATE), within the acquired records (INVALID_REQUEST); accept acknowledges, reject and gap archive,
  release makes available again (archived once the delivery count reached the limit), renew restarts the lock;
- a lock that runs out does what a release does; a member that goes takes back its deliveries (the count goes down)
  and its records become available again;
- read_committed: records of aborted transactions are archived when reached, never delivered.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from enum import IntEnum
from itertools import islice
from typing import Callable, Iterable, Sequence

from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.share_state import DeliveryState, PersistedShareState, StateBatch

FINISHED = (DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED)


class AcknowledgeType(IntEnum):
    """ShareFetch/ShareAcknowledge AcknowledgeTypes (renew from v2, KIP-1222)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


KNOWN_TYPES = frozenset(AcknowledgeType)


class ShareError(Exception):
    """An acknowledgement Kafka refuses, with the partition error it answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class ShareLimits:
    """The group's settings a share partition obeys (group config, else the broker's ``group.share.*``)."""

    delivery_count_limit: int = 5
    lock_duration_ms: int = 30000
    max_in_flight: int = 2000
    renew_enabled: bool = True  # share.renew.acknowledge.enable (KIP-1240): false refuses renewals


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """A log batch read for acquisition: its offsets, and whether it belongs to an aborted transaction."""

    first_offset: int
    last_offset: int
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """ShareFetch's AcquiredRecords entry."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatches entry: one type for the range, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_of(self, offset: int) -> int:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


@dataclass(slots=True)
class InFlight:
    """One offset's state, as ``SharePartition.records`` shows it."""

    state: DeliveryState
    delivery_count: int
    member: str = ""
    deadline: int = -1


@dataclass(slots=True)
class InFlightBatch:
    """Offsets ``first_offset``..``last_offset`` (inclusive) in one state, with one delivery count, owner and lock
    deadline (Kafka's InFlightBatch). An acknowledgement, release or lock that covers part of a batch splits it;
    neighbours that end up alike are joined again, so a partition read and acknowledged in whole batches keeps a few."""

    first_offset: int
    last_offset: int
    state: DeliveryState
    delivery_count: int
    member: str = ""
    deadline: int = -1

    def same_as(self, other: InFlightBatch) -> bool:
        return (self.state, self.delivery_count, self.member, self.deadline) == (
            other.state, other.delivery_count, other.member, other.deadline,
        )


def _first(batch: InFlightBatch) -> int:
    return batch.first_offset


class SharePartition:
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
        # The tracked offsets in flight, in order, without overlaps; offsets between them hold no record.
        self.batches: list[InFlightBatch] = []
        self._dirty: list[tuple[int, int]] = []  # offset ranges changed since the last take_update
        self._start_moved = False

    @property
    def records(self) -> dict[int, InFlight]:
        """Every tracked offset's state, one entry per offset (for tests and debugging; the partition keeps ranges)."""
        return {
            offset: InFlight(batch.state, batch.delivery_count, batch.member, batch.deadline)
            for batch in self.batches for offset in range(batch.first_offset, batch.last_offset + 1)
        }

    # ---- persistence ----

    @classmethod
    def from_persisted(cls, state: PersistedShareState, limits: ShareLimits, clock: Callable[[], int]) -> SharePartition:
        """The partition a restart finds: the persisted batches above the start offset, and the offsets between
        them (never delivered) available again."""
        partition = cls(state.start_offset, limits, clock, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch)
        following = state.start_offset  # the first offset not yet covered
        for batch in sorted(state.batches, key=lambda b: b.first_offset):
            first = max(batch.first_offset, following)
            if first > batch.last_offset:
                continue
            if first > following:
                partition.batches.append(InFlightBatch(following, first - 1, DeliveryState.AVAILABLE, 0))
            delivery_state = DeliveryState.AVAILABLE if batch.delivery_state == DeliveryState.ACQUIRED else batch.delivery_state
            partition.batches.append(InFlightBatch(first, batch.last_offset, DeliveryState(delivery_state), batch.delivery_count))
            following = batch.last_offset + 1
        partition.end_offset = following
        partition._coalesce(0, len(partition.batches))
        partition._advance_start()
        return partition

    def to_persisted(self) -> PersistedShareState:
        """The whole state, as a ShareSnapshot carries it (acquired records as available: a lock is not kept)."""
        return self._state([(b.first_offset, b.last_offset) for b in self.batches])

    def take_update(self) -> PersistedShareState | None:
        """The records changed since the last call, as a ShareUpdate carries them; None when nothing changed."""
        if not self._dirty and not self._start_moved:
            return None
        changed = _union(self._dirty)
        self._dirty.clear()
        self._start_moved = False
        return self._state(changed)

    def _state(self, ranges: Iterable[tuple[int, int]]) -> PersistedShareState:
        """The state of the tracked offsets within ``ranges`` (in order, disjoint), alike neighbours joined."""
        batches: list[StateBatch] = []
        for first, last in ranges:
            for batch in islice(self.batches, self._index_of(first), None):
                if batch.first_offset > last:
                    break
                low, high = max(first, batch.first_offset), min(last, batch.last_offset)
                if low > high:
                    continue
                state = DeliveryState.AVAILABLE if batch.state == DeliveryState.ACQUIRED else batch.state
                previous = batches[-1] if batches else None
                if previous is not None and previous.last_offset == low - 1 and (
                    previous.delivery_state, previous.delivery_count,
                ) == (state, batch.delivery_count):
                    batches[-1] = StateBatch(previous.first_offset, high, state, batch.delivery_count)
                else:
                    batches.append(StateBatch(low, high, state, batch.delivery_count))
        return PersistedShareState(self.state_epoch, self.leader_epoch, self.start_offset, tuple(batches))

    # ---- reading ----

    def next_fetch_offset(self) -> int:
        """Where the next read of the log starts: the first available record in flight, else the end."""
        for batch in self.batches:
            if batch.state == DeliveryState.AVAILABLE:
                return batch.first_offset
        return self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch could acquire anything: a record in flight is available, or there is room for new ones."""
        return self.next_fetch_offset() < self.end_offset or self.in_flight() < self.limits.max_in_flight

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def next_deadline(self) -> int | None:
        """When the earliest lock runs out (None: nothing acquired)."""
        deadlines = [b.deadline for b in self.batches if b.state == DeliveryState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def finished_count(self) -> int:
        return sum(b.last_offset - b.first_offset + 1 for b in self.batches if b.state in FINISHED)

    # ---- acquiring ----

    def acquire(
        self, member: str, batches: Sequence[FetchedBatch], max_records: int, batch_size: int, record_limit: bool = False,
    ) -> list[AcquiredRange]:
        """Acquire for ``member`` the available records of ``batches`` (log batches in offset order, read from
        next_fetch_offset) and new ones after the end, within the limits; returns the ranges acquired with their
        delivery counts. ``batches`` may be lazy: none is taken from it after the last one acquisition needs."""
        if max_records <= 0:
            return []
        deadline = self.clock() + self.limits.lock_duration_ms
        taken: list[tuple[int, int, int, bool]] = []  # (first, last, delivery count, first of its log batch)
        count = 0  # records in taken
        new_room = self.limits.max_in_flight - self.in_flight()
        for fetched in batches:
            low = max(fetched.first_offset, self.start_offset)
            # Records in flight: the available ones, in record-limit mode no more than MaxRecords.
            index = self._split_at(low)
            while index < len(self.batches) and not (record_limit and count >= max_records):
                batch = self.batches[index]
                if batch.first_offset > fetched.last_offset:
                    break
                if batch.state != DeliveryState.AVAILABLE:
                    index += 1
                    continue
                last = min(batch.last_offset, fetched.last_offset)
                if record_limit and not fetched.aborted:
                    last = min(last, batch.first_offset + max_records - count - 1)
                self._split_at(last + 1)
                self._deliver(batch, member, deadline, fetched.aborted)
                if not fetched.aborted:
                    taken.append((batch.first_offset, batch.last_offset, batch.delivery_count,
                                  batch.first_offset == fetched.first_offset))
                    count += batch.last_offset - batch.first_offset + 1
                index += 1
            # New records after the end: in batch-optimized mode the whole log batch if it starts with room left.
            first_new = max(low, self.end_offset)
            took_new = first_new <= fetched.last_offset and not (record_limit and count >= max_records)
            if took_new:
                if new_room <= 0:
                    break
                last = fetched.last_offset
                if record_limit:
                    last = min(last, first_new + new_room - 1)
                    if not fetched.aborted:
                        last = min(last, first_new + max_records - count - 1)
                batch = InFlightBatch(first_new, last, DeliveryState.AVAILABLE, 0)
                self.batches.append(batch)
                self.end_offset = last + 1
                new_room -= last - first_new + 1
                self._deliver(batch, member, deadline, fetched.aborted)
                if not fetched.aborted:
                    taken.append((first_new, last, 1, first_new == fetched.first_offset))
                    count += last - first_new + 1
            if count >= max_records or (took_new and new_room <= 0):
                break  # enough, or no room for the new records after this batch
        self._coalesce(0, len(self.batches))
        self._advance_start()
        return _ranges(taken, batch_size)

    def _deliver(self, batch: InFlightBatch, member: str, deadline: int, aborted: bool) -> None:
        """One more delivery of ``batch``: acquired by the member until the deadline, or, for records of an aborted
        transaction, archived at once (Kafka's filterAbortedTransactionalAcquiredRecords)."""
        batch.delivery_count += 1
        if aborted:
            self._set(batch, DeliveryState.ARCHIVED)
            return
        batch.state = DeliveryState.ACQUIRED
        batch.member = member
        batch.deadline = deadline

    # ---- acknowledging ----

    def acknowledge(self, member: str, batches: Sequence[AckBatch]) -> None:
        """Apply ``member``'s acknowledgements, all or none: raises ShareError (nothing changed) as Kafka refuses
        them. ``batches`` are in order and do not overlap (the handler checks the request as KafkaApis does)."""
        plan: list[tuple[int, int, int]] = []  # (first, last, acknowledge type) of tracked offsets
        for ack in batches:
            if ack.last_offset < self.start_offset:
                continue  # already finished
            if not self.batches:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache.")
            if ack.first_offset >= self.end_offset:
                raise ShareError(ErrorCode.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records.")
            if ack.last_offset >= self.end_offset:
                raise ShareError(ErrorCode.INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records.")
            low = max(ack.first_offset, self.start_offset)
            for batch in islice(self.batches, self._index_of(low), None):
                if batch.first_offset > ack.last_offset:
                    break
                first, last = max(low, batch.first_offset), min(ack.last_offset, batch.last_offset)
                if first > last:
                    continue
                if batch.state != DeliveryState.ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if batch.member != member:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
                for run_first, run_last, ack_type in _type_runs(ack, first, last):
                    if ack_type not in KNOWN_TYPES:
                        raise ShareError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {ack_type}")
                    if ack_type == AcknowledgeType.RENEW and not self.limits.renew_enabled:
                        raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Renew acknowledgements are disabled for the group.")
                    plan.append((run_first, run_last, ack_type))
        if not plan:
            return
        renewed = self.clock() + self.limits.lock_duration_ms
        for first, last, ack_type in plan:
            for batch in self._isolate(first, last):
                if ack_type == AcknowledgeType.RENEW:
                    batch.deadline = renewed
                elif ack_type == AcknowledgeType.ACCEPT:
                    self._set(batch, DeliveryState.ACKNOWLEDGED)
                elif ack_type == AcknowledgeType.RELEASE:
                    self._release(batch)
                else:
                    self._set(batch, DeliveryState.ARCHIVED)
        self._coalesce(self._index_of(plan[0][0]), self._index_of(plan[-1][1]) + 1)
        self._advance_start()

    def release_member(self, member: str) -> bool:
        """A member's session closed or it left: its acquired records become available, their delivery not counted
        (Kafka's DeliveryCountOps.DECREASE). Returns whether anything changed."""
        changed = False
        for batch in self.batches:
            if batch.state == DeliveryState.ACQUIRED and batch.member == member:
                batch.delivery_count = max(batch.delivery_count - 1, 0)
                self._set(batch, DeliveryState.AVAILABLE)
                changed = True
        if changed:
            self._coalesce(0, len(self.batches))
        return changed

    def expire_locks(self) -> bool:
        """Locks whose deadline passed: their records are released (archived at the delivery limit). Returns whether
        any ran out."""
        now = self.clock()
        expired = [b for b in self.batches if b.state == DeliveryState.ACQUIRED and b.deadline <= now]
        for batch in expired:
            self._release(batch)
        if expired:
            self._coalesce(0, len(self.batches))
            self._advance_start()
        return bool(expired)

    # ---- the start offset ----

    def advance_to(self, log_start_offset: int) -> bool:
        """The log's start moved past records in flight (retention, DeleteRecords): they are archived and the start
        offset follows (Kafka's updateCacheAndOffsets). Returns whether the start moved."""
        if log_start_offset <= self.start_offset:
            return False
        del self.batches[:self._split_at(log_start_offset)]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._start_moved = True
        self._advance_start()
        return True

    def _release(self, batch: InFlightBatch) -> None:
        """Available again, or archived once delivered as often as the group allows."""
        if batch.delivery_count >= self.limits.delivery_count_limit:
            self._set(batch, DeliveryState.ARCHIVED)
        else:
            self._set(batch, DeliveryState.AVAILABLE)

    def _set(self, batch: InFlightBatch, state: DeliveryState) -> None:
        """A state that no member holds (the lock gone), recorded for the next update."""
        batch.state = state
        batch.member, batch.deadline = "", -1
        self._dirty.append((batch.first_offset, batch.last_offset))

    def _advance_start(self) -> None:
        """Move the start offset past the finished records at its head (they need no tracking any more)."""
        finished = 0
        for batch in self.batches:
            if batch.state not in FINISHED:
                break
            finished += 1
        del self.batches[:finished]
        start = self.batches[0].first_offset if self.batches else self.end_offset
        if start != self.start_offset:
            self.start_offset = start
            self._start_moved = True

    # ---- ranges ----

    def _index_of(self, offset: int) -> int:
        """The index of the batch holding ``offset``, else of the first one after it."""
        index = bisect_right(self.batches, offset, key=_first) - 1
        if index >= 0 and self.batches[index].last_offset >= offset:
            return index
        return index + 1

    def _split_at(self, offset: int) -> int:
        """Make ``offset`` the first of its batch, splitting the batch holding it; returns the index of the first
        batch at or after ``offset``."""
        index = self._index_of(offset)
        if index < len(self.batches):
            batch = self.batches[index]
            if batch.first_offset < offset <= batch.last_offset:
                self.batches.insert(index + 1, InFlightBatch(
                    offset, batch.last_offset, batch.state, batch.delivery_count, batch.member, batch.deadline,
                ))
                batch.last_offset = offset - 1
                return index + 1
        return index

    def _isolate(self, first: int, last: int) -> list[InFlightBatch]:
        """The batches holding ``first``..``last``, split so that they hold nothing else."""
        low = self._split_at(first)
        high = self._split_at(last + 1)
        return self.batches[low:high]

    def _coalesce(self, low: int, high: int) -> None:
        """Join alike neighbours among the batches from index ``low - 1`` to ``high`` (what a change touched)."""
        batches = self.batches
        index = max(low, 1)
        high = min(high + 1, len(batches))
        while index < high:
            previous, batch = batches[index - 1], batches[index]
            if previous.last_offset + 1 == batch.first_offset and previous.same_as(batch):
                previous.last_offset = batch.last_offset
                del batches[index]
                high -= 1
            else:
                index += 1

    # ---- for the admin APIs and the inspector ----

    def describe(self) -> dict[str, object]:
        """Start and end offsets and the in-flight records as ranges of one state, count, owner and deadline."""
        runs: list[dict[str, object]] = []
        for batch in self.batches:
            key = (batch.state.name.lower(), batch.delivery_count, batch.member or None, batch.deadline)
            last = runs[-1] if runs else None
            if last is not None and last["last_offset"] == batch.first_offset - 1 and last["key"] == key:
                last["last_offset"] = batch.last_offset
            else:
                runs.append({"first_offset": batch.first_offset, "last_offset": batch.last_offset, "key": key})
        in_flight = [
            {
                "first_offset": run["first_offset"], "last_offset": run["last_offset"], "state": run["key"][0],
                "delivery_count": run["key"][1], "member_id": run["key"][2],
                "lock_deadline_ms": run["key"][3] if run["key"][3] >= 0 else None,
            }
            for run in runs
        ]
        return {"start_offset": self.start_offset, "end_offset": self.end_offset, "in_flight": in_flight}


def _type_runs(ack: AckBatch, first: int, last: int) -> list[tuple[int, int, int]]:
    """The acknowledge types of ``first``..``last`` (within ``ack``) as runs of one type."""
    if len(ack.types) == 1:
        return [(first, last, ack.types[0])]
    runs: list[tuple[int, int, int]] = []
    for offset in range(first, last + 1):
        ack_type = ack.types[offset - ack.first_offset]
        if runs and runs[-1][2] == ack_type:
            runs[-1] = (runs[-1][0], offset, ack_type)
        else:
            runs.append((offset, offset, ack_type))
    return runs


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Offset ranges sorted and joined where they overlap or touch."""
    joined: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if joined and first <= joined[-1][1] + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], last))
        else:
            joined.append((first, last))
    return joined


def _ranges(taken: list[tuple[int, int, int, bool]], batch_size: int) -> list[AcquiredRange]:
    """Acquired offsets as AcquiredRecords: contiguous offsets of one delivery count together, split at a log batch
    once a range holds ``batch_size`` records (Kafka's createBatches). ``taken``: (first, last, delivery count,
    whether first starts its log batch), each within one log batch."""
    ranges: list[AcquiredRange] = []
    for first, last, count, starts_batch in taken:
        previous = ranges[-1] if ranges else None
        if (
            previous is not None and previous.last_offset == first - 1 and previous.delivery_count == count
            and not (starts_batch and previous.last_offset - previous.first_offset + 1 >= max(batch_size, 1))
        ):
            ranges[-1] = AcquiredRange(previous.first_offset, last, count)
        else:
            ranges.append(AcquiredRange(first, last, count))
    return ranges
