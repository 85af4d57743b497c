"""Log compaction (storage.cleaner): Kafka's results for keys, tombstones, delete horizons and transactions, offsets
and reads across the gaps, crash safety of the segment swap, and __consumer_offsets staying small in a broker."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from minibroker.protocol.compression import GZIP, NONE, ZSTD
from minibroker.protocol.records import (
    DELETE_HORIZON_FLAG,
    batch_crc_ok,
    build_batch,
    decode_all,
    iter_batches,
    validate_batches,
)
from minibroker.storage.checkpoint import read_offset_checkpoint
from minibroker.storage.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from minibroker.storage.config import LogConfig
from minibroker.storage.log_manager import LogManager
from minibroker.storage.partition_log import PartitionLog

T0 = 1_000_000
P1, P2 = 1000, 2000

Row = tuple[int, bytes | None, bytes | None]


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(tmp_path: Path, clock: Clock) -> Iterator[LogManager]:
    logs = LogManager(tmp_path / "data", LogConfig(), clock=clock)
    logs.open()
    try:
        yield logs
    finally:
        logs.close()


def compacted(manager: LogManager, name: str = "c", **overrides: str) -> PartitionLog:
    configs = {"cleanup.policy": "compact", "delete.retention.ms": "1000", "min.cleanable.dirty.ratio": "0"}
    configs.update({key.replace("_", "."): value for key, value in overrides.items()})
    return manager.create_topic(name, 1, configs).partitions[0]


def put(log: PartitionLog, *records: tuple[bytes | None, bytes | None], ts: int = T0, compression: int = NONE,
        pid: int = -1, seq: int = -1, txn: bool = False) -> int:
    buf = bytearray(build_batch([(key, value, [], ts) for key, value in records], compression=compression,
                                producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                                is_transactional=txn))
    return log.append(buf, validate_batches(buf)).base_offset


def marker(log: PartitionLog, pid: int, *, commit: bool) -> int:
    return log.append_control(commit=commit, producer_id=pid, producer_epoch=0, coordinator_epoch=0,
                              timestamp_ms=T0).base_offset


def rows(log: PartitionLog) -> list[Row]:
    """Every record (control records included) as (offset, key, value), read through the public API."""
    out: list[Row] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for header, records in decode_all(data):
            out.extend((record.offset, record.key, record.value) for record in records)
            offset = header.last_offset + 1
    return out


def batches(log: PartitionLog) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, record count, attributes) of every batch, each checked against its CRC."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for header in iter_batches(data):
            assert batch_crc_ok(data, header), header
            out.append((header.base_offset, header.last_offset, header.records_count, header.attributes))
            offset = header.last_offset + 1
    return out


def clean(manager: LogManager, clock: Clock) -> int:
    """One cleaner run, as the broker's background task does it."""
    return asyncio.run(LogCleaner(manager, clock).clean_due_logs())


# ---- keys, offsets and batches ----


@pytest.mark.parametrize("codec", [NONE, GZIP, ZSTD])
def test_latest_record_per_key_survives_with_its_offset(manager: LogManager, clock: Clock, codec: int) -> None:
    log = compacted(manager)
    put(log, (b"k1", b"a1"), (b"k2", b"b1"), (b"k3", b"c1"), compression=codec)  # 0-2
    put(log, (b"k1", b"a2"), (b"k2", None), compression=codec)  # 3-4
    put(log, (b"k3", b"c2"), (b"k4", b"d1"), (b"k3", b"c3"), compression=codec)  # 5-7
    log.roll()
    put(log, (b"k1", b"a3"))  # 8, in the active segment: never cleaned, and not in the map
    assert clean(manager, clock) == 1
    assert rows(log) == [(3, b"k1", b"a2"), (4, b"k2", None), (6, b"k4", b"d1"), (7, b"k3", b"c3"), (8, b"k1", b"a3")]
    horizon = DELETE_HORIZON_FLAG | codec
    # Kept batches keep their base and last offsets; the one holding a tombstone now carries the delete horizon.
    assert batches(log) == [(3, 4, 2, horizon), (5, 7, 2, codec), (8, 8, 1, 0)]
    header = next(iter_batches(log.read(3, 1)))
    assert header.base_timestamp == T0 + 1000 and header.max_timestamp == T0
    assert log.log_end_offset == 9 and log.segment_base_offsets == [0, 8]


def test_reads_inside_removed_offsets_return_the_next_batch(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (b"a", b"1"))  # 0
    put(log, (b"b", b"1"))  # 1
    put(log, (b"a", b"2"))  # 2
    log.roll()
    put(log, (b"b", b"2"))  # 3: supersedes offset 1
    put(log, (b"c", b"1"))  # 4
    log.roll()
    put(log, (b"d", b"1"))  # 5
    clean(manager, clock)
    assert rows(log) == [(2, b"a", b"2"), (3, b"b", b"2"), (4, b"c", b"1"), (5, b"d", b"1")]
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20))] == [2, 3, 4]
    assert [h.base_offset for h in iter_batches(log.read(1, 1 << 20))] == [2, 3, 4]
    # The two closed segments fit one, so they were cleaned into one; the log start offset does not move.
    assert log.log_start_offset == 0 and log.segment_base_offsets == [0, 5]


def test_a_segment_emptied_by_cleaning_leads_reads_to_the_next_one(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager, internal_segment_bytes="100")  # one batch per segment, too big to be grouped
    for key, value in ((b"a", b"1"), (b"b", b"1"), (b"b", b"2"), (b"c", b"1"), (b"x", b"1")):
        put(log, (key, value))
    assert log.segment_base_offsets == [0, 1, 2, 3, 4]
    clean(manager, clock)
    assert rows(log) == [(0, b"a", b"1"), (2, b"b", b"2"), (3, b"c", b"1"), (4, b"x", b"1")]
    assert log.segment_base_offsets == [0, 1, 2, 3, 4] and log.segments[1].size == 0  # kept empty, as in Kafka
    assert [h.base_offset for h in iter_batches(log.read(1, 1 << 20))] == [2]


def test_partly_kept_batches_keep_their_offset_range(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (b"a", b"1"))  # 0
    put(log, (b"a", b"2"), (b"a", b"3"))  # 1-2: offset 1 goes, 2 stays
    put(log, (b"b", b"1"), (b"b", b"2"))  # 3-4: 3 goes
    log.roll()
    clean(manager, clock)
    assert rows(log) == [(2, b"a", b"3"), (4, b"b", b"2")]
    assert batches(log) == [(1, 2, 1, 0), (3, 4, 1, 0)]


def test_the_batch_ending_the_cleaned_range_stays_even_when_emptied(manager: LogManager, clock: Clock) -> None:
    """Otherwise a consumer there would find nothing below the (empty) active segment and never move on."""
    log = compacted(manager)
    put(log, (b"a", b"1"))  # 0
    put(log, (b"a", b"2"))  # 1
    put(log, (None, b"no key"))  # 2: a keyless record is dropped, but its batch ends the range
    log.roll()
    clean(manager, clock)
    assert rows(log) == [(1, b"a", b"2")]
    assert batches(log) == [(1, 1, 1, 0), (2, 2, 0, 0)]
    assert [h.base_offset for h in iter_batches(log.read(2, 1 << 20))] == [2]
    assert log.log_end_offset == 3


def test_a_full_offset_map_cleans_in_several_passes(manager: LogManager, clock: Clock) -> None:
    """With room for two keys per pass, each pass maps part of the dirty range and the checkpoint follows it."""
    log = compacted(manager)
    for key in (b"k0", b"k1", b"k2", b"k0", b"k1", b"k2"):
        put(log, (key, b"v@" + str(log.log_end_offset).encode()))
    log.roll()
    put(log, (b"x", b"1"))
    cleaner = LogCleaner(manager, clock, offset_map_keys=2)
    checkpoints = []
    for _ in range(3):
        assert asyncio.run(cleaner.clean_due_logs()) == 1
        checkpoints.append(cleaner.checkpoint_of(("c", 0), log))
    assert checkpoints == [2, 4, 6]
    assert rows(log) == [(3, b"k0", b"v@3"), (4, b"k1", b"v@4"), (5, b"k2", b"v@5"), (6, b"x", b"1")]
    assert cleaner.filthiest_log() is None


def test_records_without_a_key_are_removed(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (None, b"orphan"), (b"k", b"v"))  # written before the topic was compacted, say
    put(log, (b"z", b"1"))
    log.roll()
    clean(manager, clock)
    assert rows(log) == [(1, b"k", b"v"), (2, b"z", b"1")]


# ---- tombstones and the delete horizon ----


def test_tombstones_go_only_once_delete_retention_has_passed(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager, delete_retention_ms="5000")
    put(log, (b"k", b"v"))  # 0
    put(log, (b"k", None), (b"other", b"o"))  # 1-2
    log.roll()

    def pass_at(now: int, filler: bytes) -> list[Row]:
        clock.now = now
        put(log, (filler, b"x"))
        log.roll()
        clean(manager, clock)
        return [row for row in rows(log) if row[1] in (b"k", b"other")]

    assert pass_at(T0, b"f1") == [(1, b"k", None), (2, b"other", b"o")]  # horizon set to T0 + 5000
    assert pass_at(T0 + 4999, b"f2") == [(1, b"k", None), (2, b"other", b"o")]
    assert pass_at(T0 + 5000, b"f3") == [(2, b"other", b"o")]
    assert batches(log)[0][:3] == (1, 2, 1)  # the batch keeps its offsets; the horizon stays on it
    assert batches(log)[0][3] & DELETE_HORIZON_FLAG


def test_min_compaction_lag_protects_recent_segments(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager, min_compaction_lag_ms="10000")
    put(log, (b"k", b"1"), ts=T0)
    put(log, (b"k", b"2"), ts=T0)
    log.roll()
    put(log, (b"x", b"1"), ts=T0)
    clock.now = T0 + 9999
    assert clean(manager, clock) == 0
    assert rows(log)[:2] == [(0, b"k", b"1"), (1, b"k", b"2")]
    clock.now = T0 + 10000
    assert clean(manager, clock) == 1
    assert rows(log) == [(1, b"k", b"2"), (2, b"x", b"1")]


def test_max_compaction_lag_forces_a_cleaning_below_the_dirty_ratio(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager, min_cleanable_dirty_ratio="0.99", max_compaction_lag_ms="60000")
    put(log, (b"big", b"x" * 4000))
    log.roll()
    put(log, (b"k", b"1"), ts=T0)
    put(log, (b"k", b"2"), ts=T0)
    log.roll()
    cleaner = LogCleaner(manager, clock)
    asyncio.run(cleaner.clean_due_logs())  # first cleaning: everything is dirty
    put(log, (b"k", b"3"), ts=T0)
    log.roll()
    assert cleaner.filthiest_log() is None  # a few dirty bytes next to 4 KB of clean ones
    clock.now = T0 + 60001
    assert asyncio.run(cleaner.clean_due_logs()) == 1
    assert [row for row in rows(log) if row[1] == b"k"] == [(3, b"k", b"3")]


# ---- transactions ----


def test_aborted_records_go_committed_ones_stay_and_markers_follow_kafka(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (b"a", b"first"))  # 0: an aborted write of key a must not make this one look superseded
    put(log, (b"a", b"aborted"), (b"ghost", b"aborted"), pid=P1, seq=0, txn=True)  # 1-2
    put(log, (b"b", b"committed"), pid=P2, seq=0, txn=True)  # 3
    put(log, (b"c", b"plain"))  # 4
    marker(log, P1, commit=False)  # 5
    marker(log, P2, commit=True)  # 6
    put(log, (b"d", b"later"), pid=P1, seq=2, txn=True)  # 7
    marker(log, P1, commit=True)  # 8
    log.roll()
    put(log, (b"z", b"1"))  # 9 (active)
    [abort_entry] = log.segments[0].txn_index.entries
    assert abort_entry[:3] == (P1, 1, 5)

    clean(manager, clock)
    kept = rows(log)
    # The aborted batch is gone; its ABORT marker stays while records of the transaction were seen by this cleaning,
    # and the cleaned segment's .txnindex keeps its entry. Committed records are kept like any other.
    assert [offset for offset, _, _ in kept] == [0, 3, 4, 5, 6, 7, 8, 9]
    assert [(offset, key, value) for offset, key, value in kept if offset in (0, 3, 7)] == [
        (0, b"a", b"first"), (3, b"b", b"committed"), (7, b"d", b"later")]
    assert log.segments[0].txn_index.entries == [abort_entry]
    assert log.aborted_transactions(0, 10) == [(P1, 1)]

    def dirty_pass(now: int, key: bytes) -> list[int]:
        clock.now = now
        put(log, (key, b"x"))
        log.roll()
        clean(manager, clock)
        return [offset for offset, _, _ in rows(log) if offset <= 8]

    # Nothing of the aborted transaction is left: the marker may go, once its delete horizon (set now) has passed.
    assert dirty_pass(T0, b"y1") == [0, 3, 4, 5, 6, 7, 8]
    assert log.segments[0].txn_index.entries == []
    header = next(iter_batches(log.read(5, 1)))
    assert header.is_control and header.attributes & DELETE_HORIZON_FLAG and header.base_timestamp == T0 + 1000
    assert dirty_pass(T0 + 999, b"y2") == [0, 3, 4, 5, 6, 7, 8]
    assert dirty_pass(T0 + 1000, b"y3") == [0, 3, 4, 6, 7, 8]  # COMMIT markers stay: their records are still there


def test_the_last_batch_of_an_active_producer_stays_as_an_empty_batch(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (b"k", b"1"), pid=P1, seq=0)  # 0
    put(log, (b"k", b"2"), pid=P1, seq=1)  # 1: P1's last batch, holding its last sequence
    put(log, (b"k", b"3"))  # 2
    put(log, (b"z", b"1"))  # 3
    log.roll()
    clean(manager, clock)
    assert rows(log) == [(2, b"k", b"3"), (3, b"z", b"1")]
    data = log.read(0, 1 << 20)
    [empty, *_] = list(iter_batches(data))
    assert (empty.base_offset, empty.last_offset, empty.records_count, empty.producer_id, empty.base_sequence) == (
        1, 1, 0, P1, 1)
    assert empty.compression == 0 and empty.size == 61
    manager.close()
    for snapshot in log.directory.glob("*.snapshot"):
        snapshot.unlink()  # the producer state is rebuilt from the log, so from the empty batch
    reopened = PartitionLog.open(log.directory, log.config, clock=clock)
    try:
        assert [p.last_sequence for p in reopened.active_producers()] == [1]
    finally:
        reopened.close()
    manager.open()


# ---- checkpoint ----


def test_the_first_dirty_offset_is_checkpointed_in_kafkas_format(manager: LogManager, clock: Clock) -> None:
    log = compacted(manager)
    put(log, (b"k", b"1"))
    put(log, (b"k", b"2"))
    log.roll()
    put(log, (b"k", b"3"))
    clean(manager, clock)
    path = Path(manager.data_dir) / CLEANER_OFFSET_CHECKPOINT
    assert path.read_text() == "0\n1\nc 0 2\n"
    assert read_offset_checkpoint(path) == {("c", 0): 2}
    cleaner = LogCleaner(manager, clock)  # a restarted broker: nothing new is dirty
    assert cleaner.checkpoint_of(("c", 0), log) == 2 and cleaner.filthiest_log() is None


def test_a_log_that_is_not_compacted_is_never_touched(manager: LogManager, clock: Clock) -> None:
    log = manager.create_topic("d", 1, {}).partitions[0]
    put(log, (b"k", b"1"))
    put(log, (b"k", b"2"))
    log.roll()
    assert clean(manager, clock) == 0 and len(rows(log)) == 2


# ---- crash safety of the swap ----


class SimulatedCrash(Exception):
    pass


def fill_for_crash(log: PartitionLog) -> None:
    put(log, (b"a", b"1"), (b"b", b"1"))  # 0-1
    put(log, (b"a", b"2"))  # 2
    log.roll()
    put(log, (b"b", b"2"), (b"c", b"1"))  # 3-4
    log.roll()
    put(log, (b"d", b"1"))  # 5
    log.flush_now()


BEFORE = [(0, b"a", b"1"), (1, b"b", b"1"), (2, b"a", b"2"), (3, b"b", b"2"), (4, b"c", b"1"), (5, b"d", b"1")]
AFTER = [(2, b"a", b"2"), (3, b"b", b"2"), (4, b"c", b"1"), (5, b"d", b"1")]


def crash_during_swap(data_dir: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, crash_at: int) -> tuple[Path, int]:
    """Clean with a simulated crash just before the ``crash_at``-th rename or unlink of the swap: the partition
    directory is copied as it is on disk at that moment. Returns the copy and how many steps the swap has."""
    logs = LogManager(data_dir, LogConfig(), clock=clock)
    logs.open()
    log = compacted(logs)
    fill_for_crash(log)
    assert rows(log) == BEFORE
    steps = 0
    copy = data_dir.parent / f"{data_dir.name}-crashed"
    real_replace, real_unlink, real_swap = os.replace, Path.unlink, PartitionLog.replace_segments

    def step() -> None:
        nonlocal steps
        steps += 1
        if steps == crash_at:
            shutil.copytree(log.directory, copy)
            raise SimulatedCrash()

    def counting_replace(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
        step()
        real_replace(src, dst)

    def counting_unlink(path: Path, missing_ok: bool = False) -> None:
        step()
        real_unlink(path, missing_ok=missing_ok)

    def swap(self: PartitionLog, old: list) -> object:
        with monkeypatch.context() as patch:
            patch.setattr(os, "replace", counting_replace)
            patch.setattr(Path, "unlink", counting_unlink)
            return real_swap(self, old)

    with monkeypatch.context() as patch:
        patch.setattr(PartitionLog, "replace_segments", swap)
        asyncio.run(LogCleaner(logs, clock).clean_due_logs())
    if crash_at > steps:
        assert rows(log) == AFTER
    logs.close()
    return copy, steps


def test_a_crash_at_any_step_of_the_swap_leaves_a_consistent_log(tmp_path: Path, clock: Clock,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Reopening the directory as a crash left it gives either the log from before the cleaning or exactly its
    result, never a mix, and no temporary files."""
    _, total = crash_during_swap(tmp_path / "reference", clock, monkeypatch, crash_at=10**9)
    assert total >= 12
    outcomes = []
    for crash_at in range(1, total + 1):
        copy, _ = crash_during_swap(tmp_path / f"data-{crash_at}", clock, monkeypatch, crash_at)
        reopened = PartitionLog.open(copy, LogConfig(cleanup_policy="compact"), clock=clock)
        try:
            content = rows(reopened)
            assert content in (BEFORE, AFTER), f"crash before step {crash_at}"
            outcomes.append(content == AFTER)
            assert [p.name for p in copy.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))] == []
            assert reopened.log_end_offset == 6
        finally:
            reopened.close()
    # Before the first .cleaned file is renamed to .swap the cleaning is undone; from then on it is completed.
    first_completed = outcomes.index(True)
    assert first_completed >= 1 and all(outcomes[first_completed:])


def test_leftover_cleaned_files_are_removed_at_start_up(tmp_path: Path, clock: Clock) -> None:
    directory = tmp_path / "c-0"
    log = PartitionLog.open(directory, LogConfig(cleanup_policy="compact"), clock=clock)
    put(log, (b"k", b"1"))
    log.roll()
    put(log, (b"k", b"2"))
    log.close()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(directory / f"{0:020d}{suffix}", directory / f"{0:020d}{suffix}.cleaned")
    (directory / f"{1:020d}.log.deleted").write_bytes(b"old")
    log = PartitionLog.open(directory, LogConfig(cleanup_policy="compact"), clock=clock)
    try:
        assert rows(log) == [(0, b"k", b"1"), (1, b"k", b"2")]
        assert [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".deleted"))] == []
    finally:
        log.close()


# ---- in a broker ----


def test_ten_thousand_offset_commits_leave_consumer_offsets_small(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from minibroker.testing import Broker

    commits = 10_000
    data_dir = tmp_path / "data"
    settings = {"offsets.topic.num.partitions": 1, "offsets.topic.segment.bytes": 64 * 1024,
                "log.cleaner.backoff.ms": 3_600_000}
    with Broker(settings, data_dir=data_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(10)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                             "enable.auto.commit": False})
        started = time.monotonic()
        for offset in range(1, commits + 1):
            consumer.commit(offsets=[confluent_kafka.TopicPartition("orders", 0, offset)], asynchronous=False)
        commit_seconds = time.monotonic() - started
        consumer.close()
    partition = data_dir / "__consumer_offsets-0"
    before, segments_before = log_bytes(partition), segment_count(partition)

    with Broker({**settings, "log.cleaner.backoff.ms": 50}, data_dir=data_dir) as broker:
        deadline = time.monotonic() + 20
        while log_bytes(partition) > 128 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
        after, segments_after = log_bytes(partition), segment_count(partition)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                                             "enable.auto.commit": False})
        [committed] = consumer.committed([confluent_kafka.TopicPartition("orders", 0)], timeout=10)
        assert committed.offset == commits
        for offset in range(commits + 1, commits + 2001):  # more commits while the cleaner keeps running
            consumer.commit(offsets=[confluent_kafka.TopicPartition("orders", 0, offset)], asynchronous=False)
        consumer.close()
        while log_bytes(partition) > 128 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
        later, segments_later = log_bytes(partition), segment_count(partition)
    print(f"\n__consumer_offsets-0 after {commits} commits ({commit_seconds:.1f} s): {before} bytes in "
          f"{segments_before} segments; after cleaning: {after} bytes in {segments_after} segments; "
          f"after 2000 more commits with the cleaner running: {later} bytes in {segments_later} segments")
    assert before > 1_000_000 and segments_before > 15
    assert after <= 128 * 1024 and later <= 128 * 1024  # about the active segment (64 KiB) plus a few batches
    with Broker(settings, data_dir=data_dir) as broker:  # the cleaned log loads back the last commit
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g"})
        [committed] = consumer.committed([confluent_kafka.TopicPartition("orders", 0)], timeout=10)
        consumer.close()
    assert committed.offset == commits + 2000


def test_a_real_consumer_reads_a_cleaned_compressed_topic_to_its_end(tmp_path: Path) -> None:
    """Rewritten gzip batches, gaps, delete horizons and emptied batches, as librdkafka reads them."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from minibroker.testing import Broker

    latest: dict[bytes, bytes | None] = {}
    with Broker({"log.cleaner.backoff.ms": 20}, data_dir=tmp_path / "data") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        configs = {"cleanup.policy": "compact", "internal.segment.bytes": "1500", "min.cleanable.dirty.ratio": "0.01"}
        admin.create_topics([NewTopic("table", 1, 1, config=configs)])["table"].result(10)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "gzip",
                                             "linger.ms": 0})
        for round_ in range(20):
            for key in range(10):
                value = None if (round_, key) == (19, 3) else f"{key}@{round_}".encode()
                producer.produce("table", key=b"k%d" % key, value=value)
                latest[b"k%d" % key] = value
            producer.flush(10)
        deadline = time.monotonic() + 10
        checkpoint = tmp_path / "data" / CLEANER_OFFSET_CHECKPOINT
        while time.monotonic() < deadline and "table 0" not in (checkpoint.read_text() if checkpoint.exists() else ""):
            time.sleep(0.02)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "reader",
                                             "auto.offset.reset": "earliest", "enable.partition.eof": True})
        consumer.assign([confluent_kafka.TopicPartition("table", 0, 0)])
        seen: dict[bytes, bytes | None] = {}
        offsets: list[int] = []
        while True:
            message = consumer.poll(10)
            assert message is not None, "the consumer got stuck"
            if message.error():
                assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                break
            seen[message.key()] = message.value()
            offsets.append(message.offset())
        consumer.close()
    assert seen == latest
    assert offsets == sorted(set(offsets)) and len(offsets) < 200 and offsets[-1] == 199


def test_a_compacted_topic_refuses_records_without_a_key() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from minibroker.testing import Broker

    with Broker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("keyed", 1, 1, config={"cleanup.policy": "compact"})])["keyed"].result(10)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "retries": 0})
        results: list[object] = []
        producer.produce("keyed", value=b"no key", on_delivery=lambda err, msg: results.append(err))
        producer.flush(10)  # a batch is accepted or refused whole: keep the two records apart
        producer.produce("keyed", key=b"k", value=b"keyed", on_delivery=lambda err, msg: results.append(err))
        producer.flush(10)
    [refused, accepted] = results
    assert refused is not None and refused.code() == confluent_kafka.KafkaError.INVALID_RECORD
    assert accepted is None


def log_bytes(partition: Path) -> int:
    """Bytes in the partition's segments; a segment the cleaner deletes while we look counts as gone."""
    total = 0
    for path in partition.glob("*.log"):
        try:
            total += path.stat().st_size
        except FileNotFoundError:
            continue
    return total


def segment_count(partition: Path) -> int:
    return len(list(partition.glob("*.log")))
