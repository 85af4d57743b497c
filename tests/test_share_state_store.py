"""The share partitions' state store: Kafka's batch-combining rules, snapshots and updates in ``__share_group_state``,
replay after restarts (in-process and of a real broker process), fencing, deletion, and ``minibroker dump`` of it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from minibroker.cluster.internal_topics import replay
from minibroker.protocol import share_records as sr
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.key_partitions import partition_for
from minibroker.storage.errors import StorageError
from minibroker.storage.topic_names import SHARE_GROUP_STATE_TOPIC

from minibroker.protocol.share_state import DeliveryState, PersistedShareState, SharePartitionKey, StateBatch
from minibroker.share.batch_combiner import combine_batches
from minibroker.share.state_store import ShareStateStore, ShareStateWriteError, coordinator_key, merge_update
from minibroker.storage.uuid import uuid_to_str
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess

AVAILABLE, ACKED, ARCHIVED = DeliveryState.AVAILABLE, DeliveryState.ACKNOWLEDGED, DeliveryState.ARCHIVED
PARTITIONS = 3
TOPIC_ID = bytes(range(1, 17))
KEY = SharePartitionKey("queue", TOPIC_ID, 0)
OTHER = SharePartitionKey("other", TOPIC_ID, 1)
SETTINGS = {"share.coordinator.state.topic.num.partitions": PARTITIONS, "clock": "virtual"}


def b(first: int, last: int, state: DeliveryState, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


# ---- Kafka's PersisterStateBatchCombiner ----


def test_overlaps_take_the_higher_delivery_count_then_the_higher_state() -> None:
    assert combine_batches([b(0, 9, AVAILABLE, 1)], [b(3, 5, ACKED, 1)]) == (
        b(0, 2, AVAILABLE, 1), b(3, 5, ACKED, 1), b(6, 9, AVAILABLE, 1),
    )
    # the older batch went further (delivered twice): the newer, lower one does not override it
    assert combine_batches([b(0, 9, AVAILABLE, 2)], [b(3, 5, ACKED, 1)]) == (b(0, 9, AVAILABLE, 2),)
    assert combine_batches([b(0, 4, ARCHIVED, 1)], [b(2, 8, ACKED, 1)]) == (b(0, 4, ARCHIVED, 1), b(5, 8, ACKED, 1))
    assert combine_batches([b(0, 4, ACKED, 1)], [b(0, 4, AVAILABLE, 2)]) == (b(0, 4, AVAILABLE, 2),)


def test_neighbours_in_the_same_state_are_joined_and_the_list_is_sorted() -> None:
    assert combine_batches([b(10, 19, ACKED, 1), b(0, 4, ACKED, 1)], [b(5, 9, ACKED, 1)]) == (b(0, 19, ACKED, 1),)
    assert combine_batches([], [b(5, 9, ACKED, 1), b(0, 4, ACKED, 2)]) == (b(0, 4, ACKED, 2), b(5, 9, ACKED, 1))
    assert combine_batches([b(0, 3, ACKED, 1)], [b(6, 9, ACKED, 1)]) == (b(0, 3, ACKED, 1), b(6, 9, ACKED, 1))


def test_batches_before_the_start_offset_are_dropped_or_cut() -> None:
    assert combine_batches([b(0, 4, ACKED, 1), b(5, 9, ARCHIVED, 5)], [b(12, 12, AVAILABLE, 1)], 7) == (
        b(7, 9, ARCHIVED, 5), b(12, 12, AVAILABLE, 1),
    )
    assert combine_batches([b(0, 4, ACKED, 1)], [], 5) == ()
    assert combine_batches([], [], 5) == ()


batch_lists = st.lists(
    st.builds(
        lambda first, length, state, count: b(first, first + length, state, count),
        st.integers(0, 30), st.integers(0, 8), st.sampled_from([AVAILABLE, ACKED, ARCHIVED]), st.integers(1, 3),
    ),
    max_size=6,
)


@given(batch_lists, batch_lists, st.integers(-1, 30))
def test_combining_matches_a_record_by_record_model(so_far: list, new: list, start: int) -> None:
    """Each offset at or after the start offset takes the furthest (count, then state) of the batches covering it;
    the result is sorted, without overlaps, and never has two touching batches that could be one."""
    model: dict[int, tuple[int, int]] = {}
    for batch in (*so_far, *new):
        for offset in range(max(batch.first_offset, start), batch.last_offset + 1):
            model[offset] = max(model.get(offset, (0, -1)), (batch.delivery_count, int(batch.delivery_state)))
    combined = combine_batches(so_far, new, start)
    shown = {
        offset: (batch.delivery_count, int(batch.delivery_state))
        for batch in combined for offset in range(batch.first_offset, batch.last_offset + 1)
    }
    assert shown == model
    for before, after in zip(combined, combined[1:]):
        assert before.last_offset < after.first_offset
        touching = before.last_offset + 1 == after.first_offset
        assert not (touching and (before.delivery_count, before.delivery_state) == (after.delivery_count, after.delivery_state))


def test_an_update_merges_over_the_state_keeping_what_it_leaves_unset() -> None:
    state = PersistedShareState(2, 7, 100, (b(100, 109, ACKED, 1), b(110, 119, AVAILABLE, 1)), 10)
    unchanged = merge_update(state, sr.ShareUpdateValue(0, -1, -1, (b(110, 112, ARCHIVED, 1),)))
    assert unchanged == PersistedShareState(
        2, 7, 100, (b(100, 109, ACKED, 1), b(110, 112, ARCHIVED, 1), b(113, 119, AVAILABLE, 1)), 10,
    )
    moved = merge_update(state, sr.ShareUpdateValue(0, 8, 110, (), 3))
    assert moved == PersistedShareState(2, 8, 110, (b(110, 119, AVAILABLE, 1),), 3)


# ---- the store in a broker ----


def records_of(core, key: SharePartitionKey) -> list[tuple[sr.ShareKey, sr.ShareValue | None]]:
    partition = partition_for(coordinator_key(key), PARTITIONS)
    out = []
    for _, record in replay(core.partition(SHARE_GROUP_STATE_TOPIC, partition)):
        record_key = sr.decode_key(record.key)
        if record_key.key == key:
            out.append((record_key, sr.decode_value(record_key, record.value)))
    return out


async def test_the_topic_is_made_on_first_use_with_kafkas_configs(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        core = broker.core
        store = core.share_state
        assert core.topic(SHARE_GROUP_STATE_TOPIC) is None  # not at start-up: no share partition yet
        with pytest.raises(RuntimeError):
            store.load(KEY)
        await store.start()
        await store.start()  # once
        info = core.topic(SHARE_GROUP_STATE_TOPIC)
        assert info is not None and len(info.partitions) == PARTITIONS
        assert info.overrides["cleanup.policy"] == "delete"  # KIP-932, not compacted
        assert store.keys() == [] and store.load(KEY) is None


@pytest.mark.parametrize("segment_bytes,config", [(2_000_000, "segment.bytes"), (4096, "internal.segment.bytes")])
async def test_the_topic_takes_its_segment_size_setting(tmp_path: Path, segment_bytes: int, config: str) -> None:
    """share.coordinator.state.topic.segment.bytes, test-sized values as internal.segment.bytes (as for offsets)."""
    settings = {**SETTINGS, "share.coordinator.state.topic.segment.bytes": segment_bytes}
    async with Broker(settings, data_dir=tmp_path) as broker:
        await broker.core.share_state.start()
        assert broker.core.topic(SHARE_GROUP_STATE_TOPIC).overrides[config] == str(segment_bytes)


async def test_snapshots_updates_and_the_snapshot_every_n_updates(tmp_path: Path) -> None:
    settings = {**SETTINGS, "share.coordinator.snapshot.update.records.per.snapshot": 2}
    async with Broker(settings, data_dir=tmp_path) as broker:
        core = broker.core
        store = core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(0, 1, 100, (b(100, 104, AVAILABLE, 1),)), snapshot=False)
        store.write(KEY, PersistedShareState(0, 1, -1, (b(100, 101, ACKED, 1),)), snapshot=False)
        store.write(KEY, PersistedShareState(0, 1, 102, (b(103, 103, ARCHIVED, 2),), 1), snapshot=False)
        assert store.load(KEY) == PersistedShareState(
            0, 1, 102, (b(102, 102, AVAILABLE, 1), b(103, 103, ARCHIVED, 2), b(104, 104, AVAILABLE, 1)), 1,
        )
        store.write(KEY, PersistedShareState(0, 1, -1, (b(104, 104, ACKED, 1),)), snapshot=False)  # the 3rd update
        written = records_of(core, KEY)
        kinds = [(type(k).__name__, v.snapshot_epoch) for k, v in written]
        assert kinds == [("ShareSnapshotKey", 0), ("ShareUpdateKey", 0), ("ShareUpdateKey", 0), ("ShareSnapshotKey", 1)]
        last = written[-1][1]
        assert last.state() == store.load(KEY) == PersistedShareState(
            0, 1, 102, (b(102, 102, AVAILABLE, 1), b(103, 103, ARCHIVED, 2), b(104, 104, ACKED, 1)), 1,
        )
        assert last.create_timestamp == written[0][1].create_timestamp

        store.write(KEY, PersistedShareState(1, 1, 200, ()), snapshot=True)  # e.g. a start offset altered
        assert records_of(core, KEY)[-1][1].snapshot_epoch == 2
        assert store.load(KEY) == PersistedShareState(1, 1, 200, ())


async def test_the_state_survives_restarts(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(0, 3, 10, (b(10, 14, ACKED, 1), b(15, 19, AVAILABLE, 2))), snapshot=False)
        store.write(KEY, PersistedShareState(0, 3, 15, (b(15, 16, ARCHIVED, 2),)), snapshot=False)
        store.write(OTHER, PersistedShareState(4, 0, 0, ()), snapshot=False)
        await store.flush()
        expected = {KEY: store.load(KEY), OTHER: store.load(OTHER)}
        assert expected[KEY] == PersistedShareState(0, 3, 15, (b(15, 16, ARCHIVED, 2), b(17, 19, AVAILABLE, 2)))

        await broker.arestart()  # loaded at start-up, as the topic exists
        store = broker.core.share_state
        assert store.started
        assert {key: store.load(key) for key in store.keys()} == expected
        assert store.keys("queue") == [KEY]
        store.write(KEY, PersistedShareState(0, 3, -1, (b(17, 17, ACKED, 2),)), snapshot=False)
        assert records_of(broker.core, KEY)[-1][1].snapshot_epoch == 0  # still the first snapshot's updates

    # a real broker process starts, serves and stops on the same data: the state is still there afterwards
    process = BrokerProcess(tmp_path, "share.coordinator.state.topic.num.partitions=3")
    try:
        process.start()
    finally:
        process.stop()
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        state = broker.core.share_state.load(KEY)
        assert state == PersistedShareState(
            0, 3, 15, (b(15, 16, ARCHIVED, 2), b(17, 17, ACKED, 2), b(18, 19, AVAILABLE, 2)),
        )


async def test_writes_with_older_epochs_are_fenced(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(2, 5, 0, ()), snapshot=True)
        with pytest.raises(ShareStateWriteError) as fenced:
            store.write(KEY, PersistedShareState(2, 4, 0, (b(0, 0, ACKED, 1),)), snapshot=False)
        assert fenced.value.error == ErrorCode.FENCED_LEADER_EPOCH
        with pytest.raises(ShareStateWriteError) as fenced:
            store.write(KEY, PersistedShareState(1, 5, 0, ()), snapshot=True)
        assert fenced.value.error == ErrorCode.FENCED_STATE_EPOCH
        assert store.load(KEY) == PersistedShareState(2, 5, 0, ()) and len(records_of(broker.core, KEY)) == 1
        store.write(KEY, PersistedShareState(-1, -1, -1, (b(0, 0, ACKED, 1),)), snapshot=False)  # -1: not given
        assert store.load(KEY) == PersistedShareState(2, 5, 0, (b(0, 0, ACKED, 1),))


async def test_delete_writes_tombstones_for_both_record_types(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(0, 0, 0, ()), snapshot=False)
        store.write(OTHER, PersistedShareState(0, 0, 0, ()), snapshot=False)
        store.delete(KEY)
        store.delete(KEY)  # nothing stored: nothing written
        assert store.load(KEY) is None and store.keys() == [OTHER]
        assert records_of(broker.core, KEY)[1:] == [(sr.ShareSnapshotKey(KEY), None), (sr.ShareUpdateKey(KEY), None)]
        await broker.arestart()
        assert broker.core.share_state.keys() == [OTHER]


async def test_reset_forgets_the_state(tmp_path: Path) -> None:
    async with Broker({**SETTINGS, "control.port": 0}, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(0, 0, 0, ()), snapshot=False)
        await broker.areset()
        fresh = broker.core.share_state
        assert fresh is not store
        await fresh.start()
        assert fresh.keys() == []


def test_store_interface_is_the_planned_one() -> None:
    """The names the data path codes against (SHARE-DESIGN.md)."""
    for name in ("start", "load", "write", "delete", "flush", "keys"):
        assert callable(getattr(ShareStateStore, name))


async def test_dump_decodes_share_group_state(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        await store.start()
        store.write(KEY, PersistedShareState(1, 2, 100, (b(100, 101, ACKED, 1),), 2), snapshot=False)
        store.write(KEY, PersistedShareState(1, 2, -1, (b(102, 102, ARCHIVED, 5),)), snapshot=False)
        store.delete(KEY)
        now = broker.core.clock()
    partition = partition_for(coordinator_key(KEY), PARTITIONS)
    out = subprocess.run(
        [sys.executable, "-m", "minibroker", "dump", "--json", str(tmp_path / f"{SHARE_GROUP_STATE_TOPIC}-{partition}")],
        capture_output=True, text=True, check=True,
    ).stdout
    decoded = [r["decoded"] for line in out.splitlines() for r in json.loads(line)["records"]]
    key_data = {"groupId": "queue", "topicId": uuid_to_str(TOPIC_ID), "partition": 0}
    batch = {"firstOffset": 100, "lastOffset": 101, "deliveryState": 2, "deliveryCount": 1}
    assert decoded == [
        {"key": {"type": 0, "data": key_data}, "value": {"version": 0, "data": {
            "snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 2, "startOffset": 100, "deliveryCompleteCount": 2,
            "createTimestamp": now, "writeTimestamp": now, "stateBatches": [batch],
        }}},
        {"key": {"type": 1, "data": key_data}, "value": {"version": 0, "data": {
            "snapshotEpoch": 0, "leaderEpoch": 2, "startOffset": -1,
            "stateBatches": [{"firstOffset": 102, "lastOffset": 102, "deliveryState": 4, "deliveryCount": 5}],
        }}},
        {"key": {"type": 0, "data": key_data}, "value": None},
        {"key": {"type": 1, "data": key_data}, "value": None},
    ]
    text = subprocess.run(
        [sys.executable, "-m", "minibroker", "dump", "--share-group-state-decoder",
         str(tmp_path / f"{SHARE_GROUP_STATE_TOPIC}-{partition}")],
        capture_output=True, text=True, check=True,
    ).stdout
    assert 'key: {"type":"1","data":{"groupId":"queue"' in text and "payload: <DELETE>" in text


# ---- Kafka's background jobs: deleted topics, cold snapshots, pruning ----


async def settle(condition) -> bool:
    """Let the broker's tasks run (a virtual clock's due jobs wake them) until ``condition`` holds, or give up."""
    for _ in range(200):
        if condition():
            return True
        await asyncio.sleep(0)
    return condition()


async def test_deleting_a_topic_deletes_its_share_partitions_state(tmp_path: Path) -> None:
    async with Broker(SETTINGS, data_dir=tmp_path) as broker:
        core = broker.core
        await broker.acreate_topic("orders", 2)
        await broker.acreate_topic("payments", 1)
        orders, payments = core.topic("orders").topic_id, core.topic("payments").topic_id
        store = core.share_state
        await store.start()
        keys = [SharePartitionKey("g", orders, 0), SharePartitionKey("g", orders, 1), SharePartitionKey("g", payments, 0)]
        for key in keys:
            store.write(key, PersistedShareState(0, 0, 0, ()), snapshot=False)
        await core.delete_topics(["orders"])
        assert store.keys() == [keys[2]]
        assert records_of(core, keys[0])[-2:] == [(sr.ShareSnapshotKey(keys[0]), None), (sr.ShareUpdateKey(keys[0]), None)]


async def test_cold_snapshots_let_pruning_drop_what_no_state_needs(tmp_path: Path) -> None:
    settings = {
        **SETTINGS, "share.coordinator.state.topic.num.partitions": 1,
        "share.coordinator.cold.partition.snapshot.interval.ms": 10_000,
        "share.coordinator.state.topic.prune.interval.ms": 25_000,
    }
    async with Broker(settings, data_dir=tmp_path) as broker:
        core = broker.core
        store = core.share_state
        await store.start()
        partition_log = core.partition(SHARE_GROUP_STATE_TOPIC, 0)
        store.write(KEY, PersistedShareState(0, 0, 0, (b(0, 4, AVAILABLE, 1),)), snapshot=False)  # offset 0
        store.write(KEY, PersistedShareState(0, 0, -1, (b(0, 1, ACKED, 1),)), snapshot=False)  # 1
        store.write(KEY, PersistedShareState(0, 0, 2, ()), snapshot=False)  # 2
        store.write(OTHER, PersistedShareState(0, 0, 7, ()), snapshot=False)  # 3
        states = {KEY: store.load(KEY), OTHER: store.load(OTHER)}

        now = await broker.aadvance(10_000)  # both states' snapshots are that old: fresh ones, at offsets 4 and 5
        assert await settle(lambda: partition_log.log_end_offset == 6)
        cold = [value for _, value in records_of(core, KEY)[-1:] + records_of(core, OTHER)[-1:]]
        assert [(v.snapshot_epoch, v.write_timestamp, v.state()) for v in cold] == [
            (1, now, states[KEY]), (1, now, states[OTHER]),
        ]
        await broker.aadvance(10_000)  # every state has had its cold snapshot: none again (as Kafka)
        await settle(lambda: partition_log.log_end_offset > 6)
        assert partition_log.log_end_offset == 6 and partition_log.log_start_offset == 0

        await broker.aadvance(5_000)  # pruning: nothing before the oldest latest snapshot is needed
        assert await settle(lambda: partition_log.log_start_offset == 4)
        store.write(KEY, PersistedShareState(0, 0, -1, (b(3, 3, ARCHIVED, 1),)), snapshot=False)
        states[KEY] = store.load(KEY)
        await broker.arestart()  # replayed from the new log start offset
        store = broker.core.share_state
        assert {key: store.load(key) for key in store.keys()} == states

        store.delete(KEY)
        store.delete(OTHER)
        partition_log = broker.core.partition(SHARE_GROUP_STATE_TOPIC, 0)
        end = partition_log.log_end_offset
        await broker.aadvance(25_000)  # no state left: every record goes
        assert await settle(lambda: partition_log.log_start_offset == end)


async def test_a_replication_factor_the_brokers_cannot_reach_leaves_it_unstarted(tmp_path: Path) -> None:
    """As Kafka leaves __share_group_state uncreated (share partitions cannot be initialized); a later start retries."""
    async with Broker({**SETTINGS, "share.coordinator.state.topic.replication.factor": 2}, data_dir=tmp_path) as broker:
        store = broker.core.share_state
        for _ in range(2):
            with pytest.raises(StorageError):
                await store.start()
        assert not store.started and broker.core.topic(SHARE_GROUP_STATE_TOPIC) is None
