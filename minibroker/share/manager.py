"""The share partitions of one broker (Kafka's SharePartitionManager): a SharePartition per (group, topic, partition)
this node leads, made on the first ShareFetch from its persisted state or, without one, at the group's
``share.auto.offset.reset``; its locks timed on the broker's clock; every change written to the state store as a
ShareUpdate (a new or moved start offset as a ShareSnapshot), as Kafka's persister writes them.

Each node keeps its own share sessions, as each Kafka broker has its ShareSessionCache. A member's acquired records go
back when its share session on the partition's leader closes (the final epoch, or its connection dropping, as Kafka's
ShareSessionCache disconnect listener) or their locks run out; the admin APIs read and move start offsets;
ShareFetch waiting for records is woken (through the broker's append wake-ups) when records become available again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from minibroker.cluster.clock import VirtualClock
from minibroker.config.kafka_settings import GROUP_SETTINGS
from minibroker.groups.group_configs import reset_duration_ms
from minibroker.groups.timer import ClockTimer, LoopTimer
from minibroker.protocol.errors import NO_ERROR, ErrorCode
from minibroker.protocol.records import BatchHeader, iter_batches
from minibroker.protocol.share_state import PersistedShareState, SharePartitionKey
from minibroker.share.partition import AckBatch, AcquiredRange, FetchedBatch, SharePartition, ShareError, ShareLimits
from minibroker.share.sessions import ShareSessions
from minibroker.share.state_store import ShareStateWriteError, coordinator_key
from minibroker.storage.config import PARSERS
from minibroker.storage.errors import OffsetOutOfRangeError

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.storage.partition_log import PartitionLog
    from minibroker.storage.transaction_index import AbortedTxn

log = logging.getLogger(__name__)

# A ShareFetch's first read of the log; more follow, twice as large each, while the acquisition wants more. Reading
# costs a header parse per batch read (whole batches are cut from the bytes), so the steps follow what is needed.
FIRST_READ_BYTES = 16 * 1024


class StateStore(Protocol):
    """What the manager needs of ``__share_group_state`` (minibroker.share.state_store.ShareStateStore); writes raise
    ShareStateWriteError when refused."""

    @property
    def started(self) -> bool: ...
    async def start(self) -> None: ...
    def load(self, key: SharePartitionKey) -> PersistedShareState | None: ...
    def write(self, key: SharePartitionKey, state: PersistedShareState, snapshot: bool) -> None: ...
    def delete(self, key: SharePartitionKey) -> None: ...
    async def flush(self) -> None: ...
    def keys(self, group_id: str | None = None) -> list[SharePartitionKey]: ...


@dataclass(frozen=True, slots=True)
class Acquisition:
    """What a ShareFetch gets from one partition: the acquired ranges and the log batches holding them."""

    acquired: list[AcquiredRange]
    records: bytes
    error: ErrorCode = NO_ERROR  # the share partition's state could not be written


NOTHING = Acquisition([], b"")


def group_setting(broker: Broker, group_id: str, name: str) -> Any:
    """A group config's value for the group: its own, else the broker's setting it follows, else Kafka's default."""
    configs = broker.group_configs
    value = configs.value(group_id, name)
    if value is not None:
        return value
    return PARSERS[GROUP_SETTINGS[name][0]](str(configs.default(name)).strip())


class SharePartitionManager:
    def __init__(self, broker: Broker, store: StateStore) -> None:
        self.broker = broker
        self.store = store
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self._max_sessions = int(broker.group_configs.settings.get("group.share.max.share.sessions") or 2000)
        self._sessions: dict[int, ShareSessions] = {}  # node -> its share sessions
        self._timer: ClockTimer | LoopTimer | None = None
        broker.leader_listeners.append(self.leaders_changed)

    async def ready(self) -> None:
        """The state store started (the topic made and replayed on first use)."""
        await self.store.start()

    async def flush(self) -> None:
        """The changes written so far made durable, before a request that made them is answered."""
        await self.store.flush()

    # ---- the group's settings ----

    def limits(self, group_id: str) -> ShareLimits:
        return ShareLimits(
            delivery_count_limit=group_setting(self.broker, group_id, "share.delivery.count.limit"),
            lock_duration_ms=group_setting(self.broker, group_id, "share.record.lock.duration.ms"),
            max_in_flight=group_setting(self.broker, group_id, "share.partition.max.record.locks"),
            renew_enabled=group_setting(self.broker, group_id, "share.renew.acknowledge.enable"),
        )

    def lock_duration_ms(self, group_id: str) -> int:
        return group_setting(self.broker, group_id, "share.record.lock.duration.ms")

    def read_committed(self, group_id: str) -> bool:
        return group_setting(self.broker, group_id, "share.isolation.level") == "read_committed"

    # ---- share partitions ----

    def partition(self, key: SharePartitionKey, partition_log: PartitionLog, leader_epoch: int) -> SharePartition:
        """The key's share partition, made on first use from the stored state or at the group's auto offset reset."""
        partition = self.partitions.get(key)
        limits = self.limits(key.group_id)
        if partition is None:
            state = self.store.load(key)
            if state is not None and state.start_offset >= 0:
                partition = SharePartition.from_persisted(state, limits, self.broker.clock)
                partition.leader_epoch = leader_epoch
            else:
                start = self._reset_offset(key.group_id, partition_log)
                epoch = state.state_epoch if state is not None else 0
                partition = SharePartition(start, limits, self.broker.clock, state_epoch=epoch, leader_epoch=leader_epoch)
                self._write(key, partition.to_persisted(), snapshot=True)
            self.partitions[key] = partition
        partition.limits = limits  # group configs may change while the partition lives (Kafka reads them per use)
        return partition

    def _reset_offset(self, group_id: str, partition_log: PartitionLog) -> int:
        """Kafka's share.auto.offset.reset: latest (the default), earliest, or the first record not older than a
        duration (latest when there is none)."""
        strategy = str(group_setting(self.broker, group_id, "share.auto.offset.reset"))
        if strategy == "earliest":
            return partition_log.log_start_offset
        duration = reset_duration_ms(strategy)
        if duration is not None:
            found = partition_log.offset_for_timestamp(self.broker.clock() - duration)
            if found is not None:
                return found[0]
        return partition_log.log_end_offset

    def can_acquire(self, key: SharePartitionKey, partition_log: PartitionLog, leader_epoch: int) -> bool:
        """Whether a fetch would read for the share partition (Kafka's DelayedShareFetch.acquirablePartitions: room
        for more records in flight, or available ones); the share partition is made on first use."""
        try:
            return self.partition(key, partition_log, leader_epoch).can_acquire()
        except ShareStateWriteError:
            return False

    def acquire(
        self, key: SharePartitionKey, partition_log: PartitionLog, leader_epoch: int, member_id: str, max_records: int,
        batch_size: int, record_limit: bool, max_bytes: int,
    ) -> Acquisition:
        """Read the log where the share partition needs records and acquire them for the member (Kafka's
        SharePartitionManager.fetchMessages and SharePartition.acquire for one partition)."""
        try:
            partition = self.partition(key, partition_log, leader_epoch)
        except ShareStateWriteError as exc:
            return Acquisition([], b"", exc.error)
        partition.advance_to(partition_log.log_start_offset)
        read_committed = self.read_committed(key.group_id)
        upper = partition_log.last_stable_offset if read_committed else partition_log.log_end_offset
        offset = partition.next_fetch_offset()
        if max_records <= 0 or offset >= upper or not partition.can_acquire():
            self._changed(key, partition)
            return NOTHING
        aborted = partition_log.aborted_entries(offset, upper) if read_committed else []
        read: list[tuple[bytes, BatchHeader]] = []  # the log batches the acquisition looked at, with their bytes
        try:
            fetched = (
                FetchedBatch(h.base_offset, h.last_offset, _is_aborted(h, aborted))
                for h in _log_batches(partition_log, offset, upper, max(max_bytes, 1), read)
            )
            acquired = partition.acquire(member_id, fetched, max_records, batch_size, record_limit)
        except OffsetOutOfRangeError:
            self._changed(key, partition)
            return NOTHING
        error = self._changed(key, partition)
        if error != NO_ERROR:
            return Acquisition([], b"", error)
        return Acquisition(acquired, _covering(read, acquired))

    def acknowledge(self, key: SharePartitionKey, member_id: str, batches: list[AckBatch]) -> tuple[ErrorCode, str | None]:
        """Apply a member's acknowledgements to a share partition: (error, message) as Kafka answers them; a share
        partition this broker does not hold is UNKNOWN_TOPIC_OR_PARTITION, as in Kafka."""
        partition = self.partitions.get(key)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        try:
            partition.acknowledge(member_id, batches)
        except ShareError as exc:
            return exc.error, str(exc)
        return self._changed(key, partition), None

    # ---- members and sessions ----

    def sessions(self, node_id: int) -> ShareSessions:
        """The share sessions node ``node_id`` keeps, ``group.share.max.share.sessions`` of them at most (a Kafka
        broker's ShareSessionCache); made on first use."""
        sessions = self._sessions.get(node_id)
        if sessions is None:
            sessions = self._sessions[node_id] = ShareSessions(self._max_sessions)
        return sessions

    def release_session(self, node_id: int, group_id: str, member_id: str) -> None:
        """A share session of the node closed (final epoch): the member's records in the session's partitions that
        the node leads are released. Those led by other nodes are not the node's to release (a Kafka broker holds
        only the share partitions it leads): the member keeps them through its sessions there."""
        session = self.sessions(node_id).remove(group_id, member_id)
        if session is None:
            return
        for topic_id, index in session.partitions:
            key = SharePartitionKey(group_id, topic_id, index)
            partition = self.partitions.get(key)
            if partition is not None and self._led_by(key, node_id) and partition.release_member(member_id):
                self._changed(key, partition)

    def _led_by(self, key: SharePartitionKey, node_id: int) -> bool:
        """Whether the node leads the share partition's topic partition (holds the share partition, in Kafka)."""
        name = self.broker.topic_name(key.topic_id)
        return name is not None and self.broker.placements.of(name, key.partition).leader == node_id

    def connection_closed(self, connection: object) -> None:
        """The sessions a connection opened end with it, their records released (Kafka's ShareSessionCache
        disconnect listener)."""
        for node_id, sessions in list(self._sessions.items()):
            for session in sessions.of_connection(connection):
                self.release_session(node_id, session.group_id, session.member_id)

    # ---- locks, persistence, wake-ups ----

    def _changed(self, key: SharePartitionKey, partition: SharePartition) -> ErrorCode:
        """After a change: write it, time the next lock to run out, wake fetches if records are there to take. A
        write the store refuses undoes the change: the partition is dropped, to be loaded again from what is stored
        (Kafka rolls the state back and fences the share partition)."""
        update = partition.take_update()
        if update is not None:
            try:
                self._write(key, update, snapshot=False)
            except ShareStateWriteError as exc:
                log.warning("share partition %s: state not written, reloading it: %s", coordinator_key(key), exc)
                self._forget(key)
                return exc.error
        self._arm(key, partition)
        if update is not None and partition.can_acquire():
            name = self.broker.topic_name(key.topic_id)
            if name is not None:
                self.broker.notify_append((name, key.partition))
        return NO_ERROR

    def _write(self, key: SharePartitionKey, state: PersistedShareState, snapshot: bool) -> None:
        self.store.write(key, state, snapshot)

    def _timers(self) -> ClockTimer | LoopTimer:
        if self._timer is None:
            clock = self.broker.clock
            self._timer = ClockTimer(clock) if isinstance(clock, VirtualClock) else LoopTimer(asyncio.get_running_loop(), clock)
        return self._timer

    def _arm(self, key: SharePartitionKey, partition: SharePartition) -> None:
        timer_key = f"share-lock-{coordinator_key(key)}"
        deadline = partition.next_deadline()
        if deadline is None:
            if self._timer is not None:
                self._timer.cancel(timer_key)
            return
        timers = self._timers()
        timers.schedule(timer_key, deadline - timers.now_ms(), lambda: self._expire(key))

    def _expire(self, key: SharePartitionKey) -> None:
        partition = self.partitions.get(key)
        if partition is None:
            return
        partition.expire_locks()
        self._changed(key, partition)

    # ---- for membership and the admin APIs ----

    def _keys(self, group_id: str) -> list[SharePartitionKey]:
        stored = self.store.keys(group_id) if self.store.started else []
        return list(dict.fromkeys([*stored, *(key for key in self.partitions if key.group_id == group_id)]))

    def _state(self, key: SharePartitionKey) -> tuple[int, int] | None:
        """(start offset, leader epoch) of an initialized share partition, in memory or stored."""
        partition = self.partitions.get(key)
        if partition is not None:
            return partition.start_offset, partition.leader_epoch
        state = self.store.load(key) if self.store.started else None
        if state is None or state.start_offset < 0:
            return None
        return state.start_offset, state.leader_epoch

    def start_offsets(self, group_id: str) -> dict[tuple[bytes, int], tuple[int, int]]:
        found = {}
        for key in self._keys(group_id):
            state = self._state(key)
            if state is not None:
                found[(key.topic_id, key.partition)] = state
        return found

    def lag(self, key: SharePartitionKey) -> int | None:
        """Records not yet delivered to completion: from the start offset to the end of what the group reads, less
        those already finished (Kafka's share-partition lag); None when the partition was never initialized."""
        state = self._state(key)
        name = self.broker.topic_name(key.topic_id)
        partition_log = self.broker.partition(name, key.partition) if name is not None else None
        if state is None or partition_log is None:
            return None
        read_committed = self.read_committed(key.group_id)
        end = partition_log.last_stable_offset if read_committed else partition_log.log_end_offset
        partition = self.partitions.get(key)
        finished = partition.finished_count() if partition is not None else 0
        return max(end - state[0] - finished, 0)

    def alter_start_offset(self, key: SharePartitionKey, offset: int) -> None:
        """AlterShareGroupOffsets (the group is empty): the share partition starts again at ``offset``."""
        old = self.partitions.pop(key, None)
        stored = self.store.load(key) if old is None and self.store.started else None
        epoch = (old.state_epoch if old is not None else stored.state_epoch if stored is not None else 0) + 1
        leader_epoch = old.leader_epoch if old is not None else stored.leader_epoch if stored is not None else 0
        partition = SharePartition(offset, self.limits(key.group_id), self.broker.clock, state_epoch=epoch, leader_epoch=leader_epoch)
        self.partitions[key] = partition
        self._write(key, partition.to_persisted(), snapshot=True)
        self._arm(key, partition)

    def delete(self, key: SharePartitionKey) -> None:
        """DeleteShareGroupOffsets or a deleted group: the share partition's state is gone."""
        self._forget(key)
        if self.store.started:
            self.store.delete(key)

    def _forget(self, key: SharePartitionKey) -> None:
        self.partitions.pop(key, None)
        if self._timer is not None:
            self._timer.cancel(f"share-lock-{coordinator_key(key)}")

    def delete_group(self, group_id: str) -> None:
        """A deleted share group: its share partitions and their stored state go (a state the store cannot delete
        now is left, with a warning)."""
        for key in self._keys(group_id):
            try:
                self.delete(key)
            except ShareStateWriteError as exc:
                log.warning("share partition %s: state not deleted: %s", coordinator_key(key), exc)
        for sessions in self._sessions.values():
            for session in sessions.of_group(group_id):
                sessions.remove(group_id, session.member_id)

    def describe(self, group_id: str) -> list[dict[str, Any]]:
        """Per share partition of the group: start and end offsets, lag and the in-flight records."""
        described = []
        for key in self._keys(group_id):
            partition = self.partitions.get(key)
            entry: dict[str, Any] = {
                "topic_id": key.topic_id, "topic": self.broker.topic_name(key.topic_id), "partition": key.partition,
                "lag": self.lag(key),
            }
            if partition is not None:
                entry.update(partition.describe())
            else:
                state = self._state(key)
                entry.update({"start_offset": state[0] if state else -1, "end_offset": None, "in_flight": []})
            described.append(entry)
        return described

    def leaders_changed(self, topic: str) -> None:
        """A partition's leader moved: its share partitions are dropped (their locks lost, as Kafka fences them), to
        be loaded again from the stored state by the new leader's first fetch."""
        info = self.broker.topic(topic)
        if info is None:
            return
        for key, partition in list(self.partitions.items()):
            if key.topic_id == info.topic_id and partition.leader_epoch != self.broker.placements.of(topic, key.partition).leader_epoch:
                self._forget(key)

    def topics_deleted(self, topic_ids: set[bytes]) -> None:
        """Deleted topics' share partitions are forgotten (the store deletes their state)."""
        for key in [key for key in self.partitions if key.topic_id in topic_ids]:
            self._forget(key)

    def clear(self) -> None:
        """Forget everything held in memory (the broker's reset or restore)."""
        if self.leaders_changed in self.broker.leader_listeners:
            self.broker.leader_listeners.remove(self.leaders_changed)
        if self._timer is not None:
            self._timer.close()
        self.partitions.clear()
        self._sessions.clear()


def _is_aborted(header: BatchHeader, aborted: list[AbortedTxn]) -> bool:
    """A data batch of a transaction that was aborted (read_committed archives it)."""
    if not header.is_transactional or header.is_control:
        return False
    return any(
        txn.producer_id == header.producer_id and txn.first_offset <= header.base_offset <= txn.last_offset
        for txn in aborted
    )


def _log_batches(
    partition_log: PartitionLog, offset: int, upper: int, max_bytes: int, read: list[tuple[bytes, BatchHeader]],
) -> Iterator[BatchHeader]:
    """The log's batches from ``offset`` (below ``upper``, within ``max_bytes`` but at least one), read as the
    acquisition asks for them: a ShareFetch wants MaxRecords, usually far fewer than MaxBytes holds, so the log is
    read in steps from FIRST_READ_BYTES, doubling. Each batch is added to ``read`` with the bytes holding it."""
    step = FIRST_READ_BYTES
    while max_bytes > 0 and offset < upper:
        data = partition_log.read(offset, min(step, max_bytes), upper_offset=upper)
        if not data or (read and len(data) > max_bytes):  # only the first batch may go past MaxBytes
            return
        max_bytes -= len(data)
        step *= 2
        following = offset
        for header in iter_batches(data):
            read.append((data, header))
            following = header.last_offset + 1
            yield header
        if following == offset:
            return
        offset = following


def _covering(read: list[tuple[bytes, BatchHeader]], acquired: list[AcquiredRange]) -> bytes:
    """The read batches that hold acquired records (Kafka returns the fetched batches covering the acquired ranges)."""
    kept: list[bytes] = []
    ranges = iter(acquired)
    current = next(ranges, None)
    for data, header in read:
        while current is not None and current.last_offset < header.base_offset:
            current = next(ranges, None)
        if current is None:
            break
        if current.first_offset <= header.last_offset:
            kept.append(data[header.position:header.position + header.size])
    return b"".join(kept)
