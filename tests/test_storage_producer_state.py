"""Idempotent producers in PartitionLog: sequence and epoch checks, duplicates, snapshots and recovery."""

from __future__ import annotations

import logging
import os
import shutil
import struct
from pathlib import Path

import crc32c
import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import build_batch, build_control_batch, parse_header, validate_batches
from minibroker.storage.errors import (
    InvalidProducerBatchError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateError,
    StorageError,
    TransactionCoordinatorFencedError,
)
from minibroker.storage.partition_log import AppendInfo, PartitionLog
from minibroker.storage.producer_state import (
    INT32_MAX,
    ActiveProducer,
    AppendOrigin,
    CorruptSnapshotError,
    ProducerStateEntry,
    decode_snapshot,
    encode_snapshot,
    last_sequence_of,
)

from tests.test_storage_partition_log import Clock, open_log, seg_name

PID = 1000


def pbatch(pid: int = PID, epoch: int = 0, seq: int = 0, count: int = 1, *, txn: bool = False, ts: int = 1000) -> bytes:
    return build_batch([(b"k", b"v", [], ts)] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=txn)


def append(log: PartitionLog, *batches: bytes, origin: AppendOrigin = AppendOrigin.CLIENT) -> AppendInfo:
    buf = bytearray(b"".join(batches))
    return log.append(buf, validate_batches(buf), origin=origin)


def producer(log: PartitionLog, pid: int = PID) -> ActiveProducer:
    [found] = [p for p in log.active_producers() if p.producer_id == pid]
    return found


def crash_copy(log: PartitionLog, target: Path) -> Path:
    """The directory as a crash would leave it: everything written so far, but no snapshot from a clean close."""
    shutil.copytree(log.directory, target)
    return target


# ---- validation ----


def test_batches_without_producer_id_are_not_tracked(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, build_batch([(b"k", b"v")]), build_batch([(b"k", b"v")]))
    assert log.active_producers() == [] and log.last_stable_offset == log.log_end_offset == 2
    log.close()


def test_duplicates_return_the_original_offsets_and_write_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, build_batch([(b"x", b"y")]))
    assert append(log, pbatch(seq=0, count=3, ts=5000)) == AppendInfo(1, 3, -1, 0)
    assert append(log, pbatch(seq=3, count=2, ts=6000)) == AppendInfo(4, 5, -1, 0)
    size = log.size_bytes
    # Kafka answers a retry with the original offsets and the original batch's timestamp.
    assert append(log, pbatch(seq=0, count=3, ts=5000)) == AppendInfo(1, 3, 5000, 0, duplicate=True)
    assert append(log, pbatch(seq=3, count=2)) == AppendInfo(4, 5, 6000, 0, duplicate=True)
    assert log.size_bytes == size and log.log_end_offset == 6
    assert append(log, pbatch(seq=5)) == AppendInfo(6, 6, -1, 0)
    assert producer(log) == ActiveProducer(PID, 0, 5, 1000, -1, -1)
    log.close()


def test_duplicate_under_log_append_time_returns_the_stored_time(tmp_path: Path) -> None:
    clock = Clock(7777)
    log = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    assert append(log, pbatch(seq=0, ts=1)) == AppendInfo(0, 0, 7777, 0)
    clock.now = 8888
    assert append(log, pbatch(seq=0, ts=1)) == AppendInfo(0, 0, 7777, 0, duplicate=True)
    log.close()


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for seq in range(6):
        append(log, pbatch(seq=seq))
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=0))
    for seq in range(1, 6):
        assert append(log, pbatch(seq=seq)) == AppendInfo(seq, seq, 1000, 0, duplicate=True)
    log.close()


def test_a_gap_in_sequences_is_out_of_order_and_changes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(seq=0, count=2))
    size = log.size_bytes
    with pytest.raises(OutOfOrderSequenceError) as caught:
        append(log, pbatch(seq=3))
    assert caught.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=1))  # overlaps the last batch without being it
    assert log.size_bytes == size and log.log_end_offset == 2 and producer(log).last_sequence == 1
    assert append(log, pbatch(seq=2)).base_offset == 2
    log.close()


def test_a_stale_epoch_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(epoch=3, seq=0))
    for seq in (1, 0):
        with pytest.raises(InvalidProducerEpochError) as caught:
            append(log, pbatch(epoch=2, seq=seq))
        assert caught.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 1 and producer(log).producer_epoch == 3
    log.close()


def test_a_new_epoch_restarts_at_sequence_zero(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(epoch=0, seq=0, count=5))
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(epoch=1, seq=5))
    assert append(log, pbatch(epoch=1, seq=0, count=2)).base_offset == 5
    assert producer(log)[:3] == (PID, 1, 1)
    # The old epoch's batches are forgotten: its retry is now a stale epoch, not a duplicate.
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(epoch=0, seq=0, count=5))
    log.close()


def test_an_unknown_producer_may_start_at_any_sequence(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(seq=42, count=2))
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=42 + 5))
    assert append(log, pbatch(seq=44)).base_offset == 2
    log.close()


def test_sequences_wrap_around_after_int32_max(tmp_path: Path) -> None:
    assert last_sequence_of(INT32_MAX, 2) == 1 and last_sequence_of(INT32_MAX - 1, 1) == INT32_MAX
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(seq=INT32_MAX - 1, count=2))
    assert append(log, pbatch(seq=0, count=3)).base_offset == 2
    assert append(log, pbatch(seq=0, count=3)).duplicate
    append(log, pbatch(seq=3))
    log.close()
    log = open_log(tmp_path / "t-1")
    append(log, pbatch(seq=INT32_MAX, count=3))  # a batch straddling the wrap: sequences MAX, 0, 1
    assert producer(log).last_sequence == 1
    assert append(log, pbatch(seq=INT32_MAX, count=3)).duplicate
    assert append(log, pbatch(seq=2)).base_offset == 3
    log.close()


def test_one_bad_batch_rejects_the_whole_append(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(seq=0))
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=1), pbatch(pid=7, seq=0), pbatch(seq=3))
    assert log.log_end_offset == 1 and [p.producer_id for p in log.active_producers()] == [PID]
    info = append(log, pbatch(seq=1), pbatch(pid=7, seq=0), pbatch(seq=2))
    assert (info.base_offset, info.last_offset) == (1, 3)
    log.close()


def test_clients_may_not_write_markers_or_omit_sequences(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    marker = build_control_batch(commit=True, producer_id=PID, producer_epoch=0, coordinator_epoch=0)
    for bad in (marker, pbatch(seq=-1)):
        with pytest.raises(InvalidProducerBatchError) as caught:
            append(log, bad)
        assert caught.value.error_code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0
    log.close()


def test_coordinator_writes_skip_sequence_checks_but_not_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, pbatch(epoch=2, seq=-1, txn=True), origin=AppendOrigin.COORDINATOR)
    append(log, pbatch(epoch=2, seq=-1, txn=True), origin=AppendOrigin.COORDINATOR)
    assert log.log_end_offset == 2 and log.last_stable_offset == 0
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(epoch=1, seq=-1, txn=True), origin=AppendOrigin.COORDINATOR)
    log.close()


def test_error_classes_carry_kafka_codes() -> None:
    expected = {
        OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
        InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
        TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        InvalidProducerBatchError: ErrorCode.INVALID_RECORD,
    }
    for cls, code in expected.items():
        error = cls("x")
        assert isinstance(error, ProducerStateError) and isinstance(error, StorageError)
        assert error.error_code == code


# ---- snapshots ----


def test_snapshot_bytes_follow_kafkas_layout(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, pbatch(pid=9, epoch=4, seq=10, count=3, ts=111))
    append(log, pbatch(pid=5, epoch=1, seq=0, count=2, ts=222, txn=True))
    log.close()
    data = (directory / seg_name(5, ".snapshot")).read_bytes()
    entries = struct.pack(">qhiqiqiq", 5, 1, 1, 4, 1, 222, -1, 3) + struct.pack(">qhiqiqiq", 9, 4, 12, 2, 2, 111, -1, -1)
    body = struct.pack(">i", 2) + entries
    assert data == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(data) == 10 + 2 * 46
    [five, nine] = decode_snapshot(data)
    assert (five.producer_id, five.current_txn_first_offset, five.last_seq, five.last_data_offset) == (5, 3, 1, 4)
    assert (nine.producer_epoch, nine.batches[-1].first_seq, nine.batches[-1].first_offset) == (4, 10, 0)


def test_snapshot_codec_rejects_damage() -> None:
    empty = encode_snapshot([])
    assert empty == struct.pack(">hIi", 1, crc32c.crc32c(struct.pack(">i", 0)), 0)
    assert decode_snapshot(empty) == []
    good = encode_snapshot([ProducerStateEntry(1, 0)])
    assert decode_snapshot(good)[0].batches == type(decode_snapshot(good)[0].batches)()  # no batch: last offset -1
    for bad in (good[:-1], good[:6], b"\x00\x02" + good[2:], good[:20] + bytes([good[20] ^ 1]) + good[21:]):
        with pytest.raises(CorruptSnapshotError):
            decode_snapshot(bad)


def test_clean_restart_keeps_producer_state(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(0, 6, 2):
        append(log, pbatch(seq=seq, count=2))
    append(log, pbatch(pid=7, epoch=3, seq=0))
    before = log.active_producers()
    log.close()
    log = PartitionLog.open(directory, log.config, clock=Clock())
    assert log.snapshot_offsets == [7] and log.active_producers() == before
    assert append(log, pbatch(seq=4, count=2)) == AppendInfo(4, 5, 1000, 0, duplicate=True)
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=7))
    with pytest.raises(InvalidProducerEpochError):
        append(log, pbatch(pid=7, epoch=2, seq=1))
    assert append(log, pbatch(seq=6)).base_offset == 7
    log.close()


def test_crash_without_snapshot_replays_the_log(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for seq in range(5):
        append(log, pbatch(seq=seq), build_batch([(b"k", b"v")]))
    append(log, pbatch(pid=7, epoch=1, seq=0, txn=True))
    crashed = crash_copy(log, tmp_path / "crashed-0")
    log.close()
    assert not list(crashed.glob("*.snapshot"))
    log = PartitionLog.open(crashed, log.config, clock=Clock())
    assert [p[:3] for p in log.active_producers()] == [(7, 1, 0), (PID, 0, 4)]
    for seq in range(5):  # replay keeps the last five batches, so every retry is recognised
        assert append(log, pbatch(seq=seq)) == AppendInfo(2 * seq, 2 * seq, 1000, 0, duplicate=True)
    assert log.last_stable_offset == 10
    log.close()


def test_recovery_starts_from_the_newest_snapshot(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    one = len(pbatch())
    log = open_log(tmp_path / "t-0", internal_segment_bytes=3 * one)
    for seq in range(10):
        append(log, pbatch(seq=seq))
    assert log.segment_base_offsets == [0, 3, 6, 9]
    log.flush_now()
    assert log.snapshot_offsets == [6, 9]  # the segment before the active one and the active one
    crashed = crash_copy(log, tmp_path / "crashed-0")
    log.close()
    with caplog.at_level(logging.INFO, logger="storage"):
        log = PartitionLog.open(crashed, log.config, recovery_point=10, clock=Clock())
    assert any("rebuilt producer state from offset 9 (1 batches)" in r.getMessage() for r in caplog.records)
    assert producer(log).last_sequence == 9
    log.close()


def test_a_corrupt_snapshot_is_deleted_and_the_state_replayed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, pbatch(seq=0, count=2))
    log.close()
    path = directory / seg_name(2, ".snapshot")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="storage"):
        log = PartitionLog.open(directory, log.config, clock=Clock())
    assert any("CRC mismatch" in r.getMessage() for r in caplog.records)
    assert producer(log).last_sequence == 1 and append(log, pbatch(seq=0, count=2)).duplicate
    log.close()
    assert decode_snapshot(path.read_bytes())[0].last_seq == 1  # rewritten at close


def test_a_torn_tail_drops_the_state_it_carried(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(3):
        append(log, pbatch(seq=seq))
    log.close()  # writes 3.snapshot
    path = directory / seg_name(0, ".log")
    os.truncate(path, path.stat().st_size - 5)
    log = PartitionLog.open(directory, log.config, clock=Clock())
    assert log.log_end_offset == 2 and log.snapshot_offsets == []
    assert producer(log).last_sequence == 1
    assert not append(log, pbatch(seq=2)).duplicate  # the lost batch is written again, at offset 2
    assert log.log_end_offset == 3
    log.close()


def test_roll_snapshots_are_fsynced_by_the_next_flush(tmp_path: Path) -> None:
    one = len(pbatch())
    log = open_log(tmp_path / "t-0", internal_segment_bytes=2 * one)
    for seq in range(3):
        append(log, pbatch(seq=seq))
    assert log.snapshot_offsets == [2]
    ticket = log.prepare_flush()
    assert ticket is not None and ticket.snapshot_offsets == [2]
    ticket.run()
    log.complete_flush(ticket)
    ticket = log.prepare_flush()
    assert ticket is None
    log.close()


def test_deleting_segments_keeps_producer_state(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    one = len(pbatch())
    log = open_log(directory, internal_segment_bytes=2 * one)
    for seq in range(6):
        append(log, pbatch(seq=seq))
    log.close()
    log = PartitionLog.open(directory, log.config, clock=Clock())
    assert log.snapshot_offsets == [2, 4, 6]  # recovery point 0: nothing may be dropped yet
    assert log.delete_records_before(5) == 5 and log.segment_base_offsets == [4]
    assert log.snapshot_offsets == [4, 6] and not (directory / seg_name(2, ".snapshot")).exists()
    assert producer(log).last_sequence == 5
    with pytest.raises(OutOfOrderSequenceError):
        append(log, pbatch(seq=0))
    log.close()
    log = PartitionLog.open(directory, log.config, log_start_offset=5, clock=Clock())
    assert producer(log).last_sequence == 5
    log.close()


def test_header_positions_are_relative_to_the_buffer(tmp_path: Path) -> None:
    """A marker passed with origin=COORDINATOR is decoded from the caller's buffer."""
    log = open_log(tmp_path / "t-0")
    append(log, build_batch([(b"k", b"v")]), pbatch(seq=0, txn=True))
    marker = bytearray(build_control_batch(commit=False, producer_id=PID, producer_epoch=0, coordinator_epoch=3))
    log.append(marker, [parse_header(marker)], origin=AppendOrigin.COORDINATOR)
    assert log.last_stable_offset == 3 and log.aborted_transactions(0, 3) == [(PID, 1)]
    assert producer(log).coordinator_epoch == 3
    log.close()


# ---- expiration (producer.id.expiration.ms) ----


def test_idle_producers_expire_unless_their_transaction_is_open(tmp_path: Path) -> None:
    clock = Clock(now=10_000)
    log = open_log(tmp_path / "p-0", clock)
    append(log, pbatch(pid=1, ts=1_000))
    append(log, pbatch(pid=2, ts=1_000, txn=True))  # its transaction stays open
    append(log, pbatch(pid=3, ts=9_000))
    assert log.remove_expired_producers(5_000) == 1  # producer 1: last batch 9,000 ms ago
    assert sorted(p.producer_id for p in log.active_producers()) == [2, 3]
    clock.now = 14_000
    assert log.remove_expired_producers(5_000) == 1  # producer 3 now too; 2 has its transaction open
    assert [p.producer_id for p in log.active_producers()] == [2]
    append(log, pbatch(pid=1, seq=7, ts=14_000))  # a forgotten producer comes back as an unknown one
    assert producer(log, 1).last_sequence == 7
    log.close()
    reopened = open_log(tmp_path / "p-0", clock)
    assert sorted(p.producer_id for p in reopened.active_producers()) == [1, 2]  # the snapshot left 3 out
    reopened.close()
