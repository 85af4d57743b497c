"""The leader-epoch cache (Kafka's LeaderEpochFileCache), its leader-epoch-checkpoint file, how the partition log keeps
it, and OffsetForLeaderEpoch answered from it over TCP."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import build_batch, validate_batches
from minibroker.storage.config import LogConfig
from minibroker.storage.leader_epochs import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochCache,
    read_leader_epoch_checkpoint,
)
from minibroker.storage.partition_log import PartitionLog

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, RawConnection

UNDEFINED = (-1, -1)
OFFSET_FOR_LEADER_EPOCH, METADATA, LIST_OFFSETS = 23, 3, 2


def cache_of(*entries: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache([EpochEntry(*entry) for entry in entries])


# ---- the cache ----


def test_assign_keeps_only_newer_epochs() -> None:
    cache = LeaderEpochCache()
    assert cache.latest_epoch == -1
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # the same epoch again: its start stays
    assert cache.assign(3, 17)
    assert not cache.assign(2, 20)  # an older epoch (a late append of an old leader) is ignored
    assert cache.entries == [(0, 0), (3, 17)] and cache.latest_epoch == 3
    with pytest.raises(ValueError):
        cache.assign(4, -1)


def test_a_newer_epoch_drops_entries_starting_at_or_after_it() -> None:
    # Kafka's assign: epochs elected but replaced before data stayed in the log go.
    cache = cache_of((0, 0), (3, 17), (4, 20))
    assert cache.assign(5, 17)
    assert cache.entries == [(0, 0), (5, 17)] and cache.latest_epoch == 5


@pytest.mark.parametrize(("requested", "expected"), [
    (-1, UNDEFINED),  # UNDEFINED_EPOCH asked: nothing to say
    (5, (5, 100)),  # the latest epoch ends at the log end
    (3, (3, 30)),  # an epoch of the cache ends where the next one starts
    (4, (3, 30)),  # an epoch the log never had: the largest epoch below it, ending where the next one starts
    (1, (0, 17)),
    (0, (0, 17)),
    (6, UNDEFINED),  # newer than the latest
])
def test_end_offset_for_each_branch(requested: int, expected: tuple[int, int]) -> None:
    cache = cache_of((0, 0), (3, 17), (5, 30))
    assert cache.end_offset_for(requested, 100) == expected


def test_end_offset_for_an_epoch_older_than_the_cache_answers_that_epoch() -> None:
    # Kafka's endOffsetFor: the requested epoch itself, ending at the first entry's start (older data was deleted).
    assert cache_of((2, 10), (3, 17)).end_offset_for(1, 100) == (1, 10)
    assert LeaderEpochCache().end_offset_for(0, 100) == UNDEFINED


@pytest.mark.parametrize(("offset", "epoch"), [(0, 0), (16, 0), (17, 3), (29, 3), (30, 5), (1000, 5), (9, -1)])
def test_epoch_for_offset_is_that_of_the_entry_covering_it(offset: int, epoch: int) -> None:
    entries = [(0, 0), (3, 17), (5, 30)] if offset != 9 else [(2, 10)]  # 9: before every entry
    assert cache_of(*entries).epoch_for_offset(offset) == epoch


@pytest.mark.parametrize(("start", "expected", "changed"), [
    (0, [(0, 0), (3, 17), (5, 30)], False),
    (5, [(0, 5), (3, 17), (5, 30)], True),
    (17, [(3, 17), (5, 30)], True),  # exclusive: the entry starting there stays as it is
    (20, [(3, 20), (5, 30)], True),
    (40, [(5, 40)], True),
])
def test_truncate_from_start_moves_the_covering_entry(start: int, expected: list[tuple[int, int]], changed: bool) -> None:
    cache = cache_of((0, 0), (3, 17), (5, 30))
    assert cache.truncate_from_start(start) is changed
    assert cache.entries == expected


@pytest.mark.parametrize(("end", "expected", "latest"), [
    (31, [(0, 0), (3, 17), (5, 30)], 5),
    (30, [(0, 0), (3, 17)], 3),
    (17, [(0, 0)], 0),
    (0, [], -1),
    (-1, [(0, 0), (3, 17), (5, 30)], 5),  # Kafka ignores a negative end offset
])
def test_truncate_from_end_drops_entries_at_or_after_the_end(end: int, expected: list[tuple[int, int]],
                                                             latest: int) -> None:
    cache = cache_of((0, 0), (3, 17), (5, 30))
    before = cache.entries
    assert cache.truncate_from_end(end) is (expected != before)
    assert cache.entries == expected and cache.latest_epoch == latest


# ---- the file ----


def test_checkpoint_file_is_byte_exact(tmp_path: Path) -> None:
    cache_of((0, 0), (3, 17)).write(tmp_path)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n2\n0 0\n3 17\n"
    assert read_leader_epoch_checkpoint(tmp_path) == [(0, 0), (3, 17)]
    LeaderEpochCache().write(tmp_path)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n0\n"
    assert read_leader_epoch_checkpoint(tmp_path) == []


def test_checkpoint_lines_are_split_on_whitespace_as_kafka_reads_them(tmp_path: Path) -> None:
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_bytes(b"0\n2\n0  0\n1\t5230\n")
    assert read_leader_epoch_checkpoint(tmp_path) == [(0, 0), (1, 5230)]


@pytest.mark.parametrize("content", [
    b"", b"garbage", b"1\n1\n0 0\n", b"0\n2\n0 0\n", b"0\n1\n0\n", b"0\n1\n0 x\n", b"0\n1\n-1 0\n",
    b"0\n2\n3 17\n0 0\n", b"0\n2\n0 5\n1 5\n", b"0\n1\n\xff 0\n",
])
def test_an_unusable_checkpoint_reads_as_none(tmp_path: Path, content: bytes) -> None:
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_bytes(content)
    assert read_leader_epoch_checkpoint(tmp_path) is None


def test_a_missing_checkpoint_reads_as_none(tmp_path: Path) -> None:
    assert read_leader_epoch_checkpoint(tmp_path) is None


# ---- in the partition log ----


class Clock:
    def __call__(self) -> int:
        return 1_000_000


def open_log(directory: Path, **kwargs: int) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(), clock=Clock(), **kwargs)


def append(log: PartitionLog, count: int, epoch: int) -> None:
    buf = bytearray(build_batch([(b"k", b"v", [], 1000)] * count))
    log.append(buf, validate_batches(buf), leader_epoch=epoch)


def checkpoint(directory: Path) -> bytes:
    return (directory / LEADER_EPOCH_CHECKPOINT).read_bytes()


def epoch_log(directory: Path) -> PartitionLog:
    """Epoch 0 at 0..4, epoch 3 at 5..7, epoch 4 at 8..9, in three segments."""
    log = open_log(directory)
    append(log, 3, 0)
    append(log, 2, 0)
    log.roll()
    append(log, 3, 3)
    log.roll()
    append(log, 2, 4)
    return log


def test_appends_write_the_checkpoint_only_for_a_new_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes = []
    original = LeaderEpochCache.write

    def counted_write(cache: LeaderEpochCache, directory: Path) -> None:
        writes.append(cache.entries)
        original(cache, directory)

    monkeypatch.setattr(LeaderEpochCache, "write", counted_write)
    directory = tmp_path / "t-0"
    log = open_log(directory)
    assert not (directory / LEADER_EPOCH_CHECKPOINT).exists() and log.latest_epoch is None
    append(log, 3, 0)
    assert checkpoint(directory) == b"0\n1\n0 0\n"  # Kafka's file once epoch 0 has begun
    append(log, 2, 0)
    append(log, 4, 3)
    append(log, 1, 2)  # stale: stored, but the cache keeps epoch 3
    append(log, 1, 3)
    assert checkpoint(directory) == b"0\n2\n0 0\n3 5\n"
    assert writes == [[(0, 0)], [(0, 0), (3, 5)]]
    assert log.latest_epoch == 3 and log.leader_epoch_entries == [(0, 0), (3, 5)]
    assert log.end_offset_for_epoch(0) == (0, 5)
    assert log.end_offset_for_epoch(1) == (0, 5)
    assert log.end_offset_for_epoch(3) == (3, 11)
    assert log.end_offset_for_epoch(4) is None
    assert log.end_offset_for_epoch(-1) is None
    log.close()


def test_a_new_leader_epoch_starts_at_the_log_end_before_any_append(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, 3, 0)
    log.assign_leader_epoch(2)
    log.assign_leader_epoch(1)
    assert checkpoint(directory) == b"0\n2\n0 0\n2 3\n"
    assert log.end_offset_for_epoch(0) == (0, 3) and log.end_offset_for_epoch(2) == (2, 3)
    append(log, 2, 2)
    assert log.leader_epoch_entries == [(0, 0), (2, 3)] and log.end_offset_for_epoch(2) == (2, 5)
    log.close()


def test_delete_records_and_retention_truncate_from_start(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = epoch_log(directory)
    assert log.delete_records_before(2) == 2
    assert checkpoint(directory) == b"0\n3\n0 2\n3 5\n4 8\n"
    assert log.delete_records_before(6) == 6  # deletes the first segment too
    assert log.segment_base_offsets == [5, 8]
    assert checkpoint(directory) == b"0\n2\n3 6\n4 8\n"
    log.close()
    log = open_log(directory, recovery_point=10, log_start_offset=6)
    assert log.leader_epoch_entries == [(3, 6), (4, 8)]
    log.update_config(LogConfig(retention_bytes=0))
    assert log.enforce_retention() == 1
    assert log.log_start_offset == 8 and checkpoint(directory) == b"0\n1\n4 8\n"
    log.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_checkpoint_is_rebuilt_from_the_batch_headers(tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "t-0"
    epoch_log(directory).close()
    if damage == "missing":
        (directory / LEADER_EPOCH_CHECKPOINT).unlink()
    else:
        (directory / LEADER_EPOCH_CHECKPOINT).write_bytes(b"0\n3\n0 0\n")
    log = open_log(directory, recovery_point=10, log_start_offset=1)
    assert log.leader_epoch_entries == [(0, 1), (3, 5), (4, 8)]
    assert checkpoint(directory) == b"0\n3\n0 1\n3 5\n4 8\n"
    log.close()


def test_epochs_past_the_recovery_point_are_added_to_a_stale_checkpoint(tmp_path: Path) -> None:
    """A crash between an append and the checkpoint write: recovery finds the epoch in the unflushed tail (Kafka's
    LogSegment.recover assigns it); flushed data is covered by the checkpoint and not read again."""
    directory = tmp_path / "t-0"
    epoch_log(directory).close()
    (directory / LEADER_EPOCH_CHECKPOINT).write_bytes(b"0\n1\n0 0\n")
    log = open_log(directory, recovery_point=10)
    assert log.leader_epoch_entries == [(0, 0)]
    log.close()
    log = open_log(directory, recovery_point=8)
    assert log.leader_epoch_entries == [(0, 0), (4, 8)]
    log.close()
    (directory / LEADER_EPOCH_CHECKPOINT).write_bytes(b"0\n1\n0 0\n")
    log = open_log(directory, recovery_point=0)
    assert log.leader_epoch_entries == [(0, 0), (3, 5), (4, 8)]
    assert checkpoint(directory) == b"0\n1\n0 0\n", "rewritten at the next change or at close, not at load"
    log.close()
    assert checkpoint(directory) == b"0\n3\n0 0\n3 5\n4 8\n"


def test_recovery_truncation_drops_the_epochs_it_cut_off(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    epoch_log(directory).close()
    last = directory / f"{8:020d}.log"
    os.truncate(last, last.stat().st_size - 1)  # the epoch-4 batch is torn
    log = open_log(directory, recovery_point=5)
    assert log.log_end_offset == 8
    assert log.leader_epoch_entries == [(0, 0), (3, 5)]
    log.close()
    assert checkpoint(directory) == b"0\n2\n0 0\n3 5\n"


def test_a_log_starting_past_its_end_has_no_epochs(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    epoch_log(directory).close()
    log = open_log(directory, recovery_point=10, log_start_offset=50)
    assert log.log_end_offset == 50 and log.leader_epoch_entries == []
    log.close()
    assert checkpoint(directory) == b"0\n0\n"
    log = open_log(directory, recovery_point=10, log_start_offset=50)
    append(log, 1, 4)
    assert log.leader_epoch_entries == [(4, 50)] and checkpoint(directory) == b"0\n1\n4 50\n"
    log.close()


def test_an_empty_logs_epoch_is_not_rewritten_when_its_leader_assigns_it_again(tmp_path: Path) -> None:
    """Opening an empty log cuts its epoch entry at the log end, and the leader's assignment brings it back: the
    file, already right, is not written (no fsync per empty partition at every start-up)."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.assign_leader_epoch(0)
    log.close()
    written = (directory / LEADER_EPOCH_CHECKPOINT).stat().st_mtime_ns
    os.utime(directory / LEADER_EPOCH_CHECKPOINT, ns=(written - 10**9, written - 10**9))
    log = open_log(directory)
    assert log.leader_epoch_entries == []
    log.assign_leader_epoch(0)
    log.close()
    assert log.leader_epoch_entries == [(0, 0)] and checkpoint(directory) == b"0\n1\n0 0\n"
    assert (directory / LEADER_EPOCH_CHECKPOINT).stat().st_mtime_ns == written - 10**9


# ---- over TCP, with moving leaders ----


def offsets_for_epochs(address: str, topic: str, epochs: list[int], current: int = -1) -> list[tuple[int, int, int]]:
    """(error, leader epoch, end offset) per requested epoch of partition 0, from a raw OffsetForLeaderEpoch v4."""
    body = {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch} for epoch in epochs
    ]}]}
    with RawConnection(address) as conn:
        answer = decode_response(OFFSET_FOR_LEADER_EPOCH, 4, conn.request(OFFSET_FOR_LEADER_EPOCH, 4, body))[1]
    return [(p["error_code"], p["leader_epoch"], p["end_offset"]) for p in answer["topics"][0]["partitions"]]


def list_offset_epochs(address: str, topic: str) -> tuple[int, int]:
    """The leader epochs a raw ListOffsets v4 answers with the earliest and the latest offset of partition 0."""
    epochs = []
    for timestamp in (-2, -1):
        body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp},
        ]}]}
        with RawConnection(address) as conn:
            answer = decode_response(LIST_OFFSETS, 4, conn.request(LIST_OFFSETS, 4, body))[1]
        epochs.append(answer["topics"][0]["partitions"][0]["leader_epoch"])
    return epochs[0], epochs[1]


def partition_view(bootstrap: str, topic: str) -> tuple[int, list[int], dict[int, str]]:
    """(leader id, replica ids) of partition 0 and every node's address, from a raw Metadata v9."""
    body = {"topics": [{"name": topic, "topic_id": bytes(16)}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
    with RawConnection(bootstrap) as conn:
        answer = decode_response(METADATA, 9, conn.request(METADATA, 9, body))[1]
    [partition] = answer["topics"][0]["partitions"]
    addresses = {b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]}
    return partition["leader_id"], partition["replica_nodes"], addresses


def produce(producer: Producer, topic: str, count: int) -> None:
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(TIMEOUT_S) == 0


def test_moving_leaders_record_their_epochs_and_offset_for_leader_epoch_answers_from_them(topic_name: str) -> None:
    with Broker(nodes=3) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 1, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
        directory = broker.data_dir / f"{topic_name}-0"
        produce(producer, topic_name, 4)
        assert checkpoint(directory) == b"0\n1\n0 0\n"
        first, replicas, addresses = partition_view(broker.bootstrap_servers, topic_name)
        second, third = [node for node in replicas if node != first]
        assert broker.move_leader(topic_name, 0, second) == 1
        produce(producer, topic_name, 3)
        assert broker.move_leader(topic_name, 0, third) == 2
        produce(producer, topic_name, 5)
        assert checkpoint(directory) == b"0\n3\n0 0\n1 4\n2 7\n"
        # ListOffsets: the earliest offset was written in epoch 0 (Kafka's epochForOffset), the latest is the leader's.
        assert list_offset_epochs(addresses[third], topic_name) == (0, 2)

        # Each old epoch ends where the next began; the current one at the log end; a later one is unknown.
        assert offsets_for_epochs(addresses[third], topic_name, [0, 1, 2, 3, -1], current=2) == [
            (ErrorCode.NONE, 0, 4), (ErrorCode.NONE, 1, 7), (ErrorCode.NONE, 2, 12), (ErrorCode.NONE, -1, -1),
            (ErrorCode.NONE, -1, -1),
        ]
        assert offsets_for_epochs(addresses[third], topic_name, [0], current=1) == [
            (ErrorCode.FENCED_LEADER_EPOCH, -1, -1)]
        assert offsets_for_epochs(addresses[first], topic_name, [0]) == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)]

        # A new leader that has appended nothing yet: its epoch starts at the log end, as Kafka's makeLeader records.
        assert broker.move_leader(topic_name, 0, second) == 3
        assert offsets_for_epochs(addresses[second], topic_name, [2, 3]) == [
            (ErrorCode.NONE, 2, 12), (ErrorCode.NONE, 3, 12)]
        assert checkpoint(directory) == b"0\n4\n0 0\n1 4\n2 7\n3 12\n"

        broker.restart()
        assert offsets_for_epochs(addresses[second], topic_name, [0, 1, 3]) == [
            (ErrorCode.NONE, 0, 4), (ErrorCode.NONE, 1, 7), (ErrorCode.NONE, 3, 12),
        ]
