"""``__share_group_state``: the persisted state of every share partition, kept as Kafka's share coordinator keeps it.

Each write appends one record to the partition of the key's coordinator key (``group:topicId:partition``, hashed as
group ids are): a ShareSnapshot with the whole state, or a ShareUpdate with the batches that changed, which replay
merges over the latest snapshot (ShareCoordinatorShard). After
``share.coordinator.snapshot.update.records.per.snapshot`` updates the next write is a snapshot again, so a replay
never reads more than that many updates per key. Writes are refused with Kafka's FENCED_LEADER_EPOCH /
FENCED_STATE_EPOCH when they carry an epoch below the one recorded.

The topic is made when the first share partition is initialized, as in Kafka (where the persister's first
FindCoordinator for a share key creates it), not at start-up: the data path awaits ``start()`` before it first reads
or writes, and the broker replays an existing topic at start-up. As in Kafka it is created with
cleanup.policy=delete, not compacted: what keeps it small is Kafka's pruning, on the broker's clock, of the records
before each partition's oldest latest snapshot (``share.coordinator.state.topic.prune.interval.ms``), with a fresh
snapshot of states left unwritten for ``share.coordinator.cold.partition.snapshot.interval.ms`` so idle keys do not
hold it back; the state of a deleted topic's share partitions is deleted with the topic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.cluster.clock import every

from minibroker.cluster.internal_topics import InternalTopic, PendingFlushes, internal_replication_factor, replay
from minibroker.protocol import share_records as records
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.primitives import ProtocolError
from minibroker.protocol.records import InvalidRecordError
from minibroker.protocol.share_state import PersistedShareState, SharePartitionKey
from minibroker.share.batch_combiner import combine_batches
from minibroker.storage.errors import StorageError
from minibroker.storage.topic_names import SHARE_GROUP_STATE_TOPIC
from minibroker.storage.uuid import uuid_to_str

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)


def coordinator_key(key: SharePartitionKey) -> str:
    """``groupId:topicId:partition`` with the topic id as Kafka's Uuid string (SharePartitionKey.asCoordinatorKey):
    the key whose hash picks the ``__share_group_state`` partition."""
    return f"{key.group_id}:{uuid_to_str(key.topic_id)}:{key.partition}"


RECORDS_PER_YIELD = 1000
NOT_GIVEN = -1  # an epoch, start offset or count a write leaves as it was
DEFAULT_STATE_EPOCH = 0  # of a state known only from updates (its snapshot is gone), as Kafka's PartitionFactory


class ShareStateWriteError(Exception):
    """A write Kafka's share coordinator refuses or cannot make; nothing changed. ``error`` is the code it answers."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(slots=True)
class _Stored:
    """One key's state as replayed, with its latest snapshot's epoch, times and offset (what the next write, the cold
    snapshots and pruning need), and how many updates followed that snapshot."""

    state: PersistedShareState
    snapshot_epoch: int
    create_timestamp: int
    write_timestamp: int
    snapshot_offset: int
    updates: int = 0


def merge_update(state: PersistedShareState, update: records.ShareUpdateValue) -> PersistedShareState:
    """``state`` with an update applied: its start offset, leader epoch and count where given, its batches combined
    over the state's (ShareCoordinatorShard.merge)."""
    start = state.start_offset if update.start_offset == NOT_GIVEN else update.start_offset
    return PersistedShareState(
        state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch if update.leader_epoch == NOT_GIVEN else update.leader_epoch,
        start_offset=start,
        batches=combine_batches(state.batches, update.batches, start),
        delivery_complete_count=(
            state.delivery_complete_count if update.delivery_complete_count == NOT_GIVEN
            else update.delivery_complete_count
        ),
    )


class ShareStateStore:
    """The share partitions' state in ``__share_group_state`` and in memory, the one replayed from the other."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        config = broker.config
        self.topic = InternalTopic(
            broker, SHARE_GROUP_STATE_TOPIC, config.share_coordinator_state_topic_num_partitions,
            internal_replication_factor(
                broker, "share.coordinator.state.topic.replication.factor",
                config.share_coordinator_state_topic_replication_factor,
            ),
            PendingFlushes(broker),
        )
        self.updates_per_snapshot = config.share_coordinator_snapshot_update_records_per_snapshot
        self._stored: dict[SharePartitionKey, _Stored] = {}
        # Per key, what every write of it needs and costs tens of microseconds to make: the partition count and
        # partition it hashes to, the encoded ShareSnapshot and ShareUpdate keys.
        self._placed: dict[SharePartitionKey, tuple[int, int]] = {}
        self._encoded_keys: dict[records.ShareKey, bytes] = {}
        self._started = False
        self._starting: asyncio.Lock | None = None
        self._tasks: list[asyncio.Task] = []

    @property
    def started(self) -> bool:
        return self._started

    async def start(self) -> None:
        """Create the topic if missing and replay it, once (later calls return at once; one that failed, because the
        topic could not be made, raises StorageError and the next call tries again)."""
        if self._started:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._started:
                return
            info = await self.topic.create()
            for partition, partition_log in enumerate(info.partitions):
                await self._replay_partition(partition, partition_log)
            self._started = True
            config, clock, loop = self.broker.config, self.broker.clock, asyncio.get_running_loop()
            self._tasks = [
                loop.create_task(every(
                    clock, config.share_coordinator_cold_partition_snapshot_interval_ms, self.snapshot_cold_partitions,
                )),
                loop.create_task(every(clock, config.share_coordinator_state_topic_prune_interval_ms, self.prune)),
            ]
            await asyncio.sleep(0)  # the jobs take their first due time from now, not from whenever they first run

    def stop(self) -> None:
        """Stop the periodic jobs (the broker stops, or forgets its state)."""
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def partition_of(self, key: SharePartitionKey) -> int:
        """Kafka's ShareCoordinatorService.partitionFor: the coordinator key hashed as a group id."""
        count = self.topic.num_partitions
        placed = self._placed.get(key)
        if placed is None or placed[0] != count:
            placed = self._placed[key] = (count, partition_for(coordinator_key(key), count))
        return placed[1]

    def _encoded(self, record_key: records.ShareKey) -> bytes:
        encoded = self._encoded_keys.get(record_key)
        if encoded is None:
            encoded = self._encoded_keys[record_key] = records.encode_key(record_key)
        return encoded

    def load(self, key: SharePartitionKey) -> PersistedShareState | None:
        """The state after replay (the latest snapshot with the updates after it merged in); None if none is stored."""
        self._check_started()
        stored = self._stored.get(key)
        return None if stored is None else stored.state

    def keys(self, group_id: str | None = None) -> list[SharePartitionKey]:
        """The keys with a stored state (of one group, when given), in (group, topic id, partition) order."""
        self._check_started()
        found = [key for key in self._stored if group_id is None or key.group_id == group_id]
        return sorted(found, key=lambda k: (k.group_id, k.topic_id, k.partition))

    def write(self, key: SharePartitionKey, state: PersistedShareState, snapshot: bool) -> None:
        """Append a ShareSnapshot of the whole ``state`` (``snapshot``, or the key's first write, or once
        ``updates_per_snapshot`` updates followed the last snapshot) or a ShareUpdate of ``state``'s batches, start
        offset (-1: unchanged) and leader epoch (-1: unchanged). Raises ShareStateWriteError (nothing written)."""
        self._check_started()
        stored = self._stored.get(key)
        self._check_epochs(key, stored, state)
        now = self.broker.clock()
        if stored is None:
            whole = _normalized(state)
            value: records.ShareValue = records.snapshot_of(whole, 0, now, now)
        elif snapshot or stored.updates >= self.updates_per_snapshot:
            whole = _resolved(stored.state, state) if snapshot else merge_update(
                stored.state, records.update_of(state, stored.snapshot_epoch),
            )
            created = stored.create_timestamp if whole.state_epoch == stored.state.state_epoch else now
            value = records.snapshot_of(whole, stored.snapshot_epoch + 1, created, now)
        else:
            changed = PersistedShareState(
                state.state_epoch, state.leader_epoch, state.start_offset,
                combine_batches((), state.batches, state.start_offset), state.delivery_complete_count,
            )
            value = records.update_of(changed, stored.snapshot_epoch)
        record_key: records.ShareKey = (
            records.ShareSnapshotKey(key) if isinstance(value, records.ShareSnapshotValue) else records.ShareUpdateKey(key)
        )
        offset = self._append(key, [(self._encoded(record_key), records.encode_value(value))])
        self._apply(record_key, value, offset)

    def delete(self, key: SharePartitionKey) -> None:
        """Tombstones for both record types of ``key`` (Kafka's deleteState); the state is forgotten. Raises
        ShareStateWriteError (nothing written)."""
        self._check_started()
        if key not in self._stored:
            return
        keys = (records.ShareSnapshotKey(key), records.ShareUpdateKey(key))
        offset = self._append(key, [(self._encoded(record_key), None) for record_key in keys])
        for record_key in keys:
            self._apply(record_key, None, offset)
            self._encoded_keys.pop(record_key, None)
        self._placed.pop(key, None)

    def delete_topics(self, topic_ids: set[bytes]) -> int:
        """The state of every share partition of deleted topics, deleted (Kafka's maybeCleanupShareState); returns how
        many; a key whose tombstones cannot be written is left, with a warning."""
        deleted = 0
        for key in [key for key in self._stored if key.topic_id in topic_ids]:
            try:
                self.delete(key)
            except ShareStateWriteError as exc:
                log.warning("share state of %s not deleted with its topic: %s", coordinator_key(key), exc)
                continue
            deleted += 1
        return deleted

    def snapshot_cold_partitions(self) -> Awaitable[None] | None:
        """Kafka's snapshotColdPartitions: in each partition of the topic where some state has not been snapshotted
        since it was created, a fresh snapshot of every state whose latest one is older than the interval."""
        interval = self.broker.config.share_coordinator_cold_partition_snapshot_interval_ms
        now = self.broker.clock()
        written = 0
        for keys in self._by_partition().values():
            if all(self._stored[key].create_timestamp != self._stored[key].write_timestamp for key in keys):
                continue
            for key in keys:
                stored = self._stored[key]
                if now - stored.write_timestamp < interval:
                    continue
                value = records.snapshot_of(stored.state, stored.snapshot_epoch + 1, stored.create_timestamp, now)
                record_key = records.ShareSnapshotKey(key)
                try:
                    offset = self._append(key, [(self._encoded(record_key), records.encode_value(value))])
                except ShareStateWriteError as exc:
                    log.warning("cold snapshot of %s not written: %s", coordinator_key(key), exc)
                    continue
                self._apply(record_key, value, offset)
                written += 1
        return self.flush() if written else None

    def prune(self) -> None:
        """Kafka's performRecordPruning: each partition's records before the oldest offset a state still needs (the
        latest snapshot of each of its keys; with no keys, all of them) are deleted."""
        by_partition = self._by_partition()
        for partition in range(self.topic.num_partitions):
            partition_log = self.broker.partition(SHARE_GROUP_STATE_TOPIC, partition)
            if partition_log is None:
                continue
            keys = by_partition.get(partition, ())
            needed = min((self._stored[key].snapshot_offset for key in keys), default=partition_log.log_end_offset)
            if needed > partition_log.log_start_offset:
                partition_log.delete_records_before(needed)

    def _by_partition(self) -> dict[int, list[SharePartitionKey]]:
        partitions: dict[int, list[SharePartitionKey]] = {}
        for key in self._stored:
            partitions.setdefault(self.partition_of(key), []).append(key)
        return partitions

    async def flush(self) -> None:
        """fsync what the flush policy (flush.messages, flush.ms) says must be durable before a client hears of it."""
        await self.topic.flushes.flush()

    def _apply(self, record_key: records.ShareKey, value: records.ShareValue | None, offset: int) -> None:
        """Replay one record (at ``offset``) into memory: what a write does after appending it, and what loading does
        for each."""
        key = record_key.key
        if isinstance(record_key, records.ShareSnapshotKey):
            if value is None:
                self._stored.pop(key, None)
            else:
                assert isinstance(value, records.ShareSnapshotValue)
                self._stored[key] = _Stored(
                    value.state(), value.snapshot_epoch, value.create_timestamp, value.write_timestamp, offset,
                )
            return
        if value is None:  # the snapshot's tombstone, next to it, forgets the state
            return
        assert isinstance(value, records.ShareUpdateValue)
        stored = self._stored.get(key)
        if stored is None:  # updates without their snapshot: they are the state (ShareGroupOffset.fromRecord)
            empty = PersistedShareState(DEFAULT_STATE_EPOCH, NOT_GIVEN, NOT_GIVEN)
            self._stored[key] = _Stored(merge_update(empty, value), value.snapshot_epoch, NOT_GIVEN, NOT_GIVEN, offset)
            return
        stored.state = merge_update(stored.state, value)
        stored.updates += 1

    def _check_started(self) -> None:
        if not self._started:
            raise RuntimeError("ShareStateStore used before start() was awaited")

    @staticmethod
    def _check_epochs(key: SharePartitionKey, stored: _Stored | None, state: PersistedShareState) -> None:
        """ShareCoordinatorShard.maybeGetWriteStateError: no write with an epoch below the recorded one."""
        if stored is None:
            return
        if state.leader_epoch != NOT_GIVEN and state.leader_epoch < stored.state.leader_epoch:
            raise ShareStateWriteError(
                ErrorCode.FENCED_LEADER_EPOCH,
                f"{coordinator_key(key)}: leader epoch {state.leader_epoch} below {stored.state.leader_epoch}",
            )
        if state.state_epoch != NOT_GIVEN and state.state_epoch < stored.state.state_epoch:
            raise ShareStateWriteError(
                ErrorCode.FENCED_STATE_EPOCH,
                f"{coordinator_key(key)}: state epoch {state.state_epoch} below {stored.state.state_epoch}",
            )

    def _append(self, key: SharePartitionKey, batch: list[tuple[bytes, bytes | None]]) -> int:
        """Append the records of ``key`` as one batch; returns the offset of the first."""
        try:
            return self.topic.append(self.partition_of(key), batch, base_timestamp=self.broker.clock()).base_offset
        except LookupError as exc:
            raise ShareStateWriteError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(exc)) from exc
        except (OSError, StorageError) as exc:
            raise ShareStateWriteError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from exc

    async def _replay_partition(self, partition: int, partition_log: PartitionLog) -> None:
        """Every record of one partition, in offset order, yielding now and then so a large log does not stall the
        broker; records that cannot be read are skipped, as Kafka's coordinator loader does."""
        count = 0
        try:
            for header, record in replay(partition_log):
                if header.is_control or record.key is None:
                    continue
                try:
                    record_key = records.decode_key(record.key)
                    self._apply(record_key, records.decode_value(record_key, record.value), record.offset)
                except ProtocolError as exc:
                    log.warning("%s-%d offset %d: skipping unreadable record: %s", SHARE_GROUP_STATE_TOPIC, partition,
                                record.offset, exc)
                count += 1
                if count % RECORDS_PER_YIELD == 0:
                    await asyncio.sleep(0)
        except InvalidRecordError as exc:
            log.error("%s-%d: unreadable batch, loading stopped there: %s", SHARE_GROUP_STATE_TOPIC, partition, exc)


def _normalized(state: PersistedShareState) -> PersistedShareState:
    """Batches sorted, without overlaps and nothing before the start offset, as a snapshot holds them."""
    batches = combine_batches((), state.batches, state.start_offset)
    return state if batches == state.batches else PersistedShareState(
        state.state_epoch, state.leader_epoch, state.start_offset, batches, state.delivery_complete_count,
    )


def _resolved(current: PersistedShareState, state: PersistedShareState) -> PersistedShareState:
    """A whole new state, its not-given (-1) epochs and start offset taken from the current one (as Kafka's snapshot
    after N updates does); its delivery-complete count is the new state's."""
    def given(new: int, old: int) -> int:
        return old if new == NOT_GIVEN else new

    return _normalized(PersistedShareState(
        given(state.state_epoch, current.state_epoch),
        given(state.leader_epoch, current.leader_epoch),
        given(state.start_offset, current.start_offset),
        state.batches,
        state.delivery_complete_count,
    ))
