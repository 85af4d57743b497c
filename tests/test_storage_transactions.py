"""Transactions in PartitionLog: markers, the last stable offset, .txnindex files, aborted-transaction lookups,
and what survives restarts, crashes, torn tails and retention."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import ControlRecordType, build_batch, decode_all, iter_batches, parse_control_record
from minibroker.storage.errors import InvalidProducerEpochError, InvalidTxnStateError, TransactionCoordinatorFencedError
from minibroker.storage.partition_log import AppendInfo, PartitionLog
from minibroker.storage.transaction_index import AbortedTxn, TransactionIndex

from tests.test_storage_partition_log import Clock, open_log, seg_name
from tests.test_storage_producer_state import append, crash_copy, pbatch, producer

A, B = 1000, 2000


def txn(pid: int, seq: int, count: int = 1, epoch: int = 0) -> bytes:
    return pbatch(pid=pid, epoch=epoch, seq=seq, count=count, txn=True)


def plain(count: int = 1) -> bytes:
    return build_batch([(b"k", b"v", [], 1000)] * count)


def marker(log: PartitionLog, pid: int, *, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> AppendInfo:
    return log.append_control(commit=commit, producer_id=pid, producer_epoch=epoch,
                              coordinator_epoch=coordinator_epoch, timestamp_ms=5000)


def entry(pid: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", 0, pid, first, last, lso)


def offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in iter_batches(data)]


def test_commit_marker_releases_the_last_stable_offset(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, plain(2))
    append(log, txn(A, 0, count=3))
    append(log, plain())
    assert (log.last_stable_offset, log.log_end_offset) == (2, 6)
    assert log.ongoing_transactions() == {A: 2}
    assert offsets(log.read(0, 1 << 20, upper_offset=log.last_stable_offset)) == [(0, 1)]
    assert producer(log, A).current_txn_start_offset == 2
    assert marker(log, A, commit=True, coordinator_epoch=4) == AppendInfo(6, 6, -1, 0)
    assert log.last_stable_offset == log.log_end_offset == 7 and log.ongoing_transactions() == {}
    assert producer(log, A)[1:] == (0, 2, 5000, 4, -1)
    assert not (directory / seg_name(0, ".txnindex")).exists()
    assert log.aborted_transactions(0, 7) == []
    [(header, [record])] = decode_all(log.read(6, 1 << 20))
    assert header.is_control and header.is_transactional and header.producer_id == A and header.base_sequence == -1
    assert parse_control_record(record) == (ControlRecordType.COMMIT, 4) and record.timestamp == 5000
    log.close()


def test_abort_marker_writes_an_exact_txnindex_entry(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, txn(A, 0, count=2))  # 0..1
    append(log, txn(B, 0))  # 2
    append(log, txn(A, 2))  # 3, same transaction
    assert log.last_stable_offset == 0
    assert marker(log, A, commit=False).base_offset == 4
    assert log.last_stable_offset == 2  # B is still open
    path = directory / seg_name(0, ".txnindex")
    assert path.read_bytes() == entry(A, 0, 4, 2)
    assert marker(log, B, commit=False).base_offset == 5
    assert log.last_stable_offset == 6
    assert path.read_bytes() == entry(A, 0, 4, 2) + entry(B, 2, 5, 6) and path.stat().st_size == 68
    assert TransactionIndex(path).entries == [AbortedTxn(A, 0, 4, 2), AbortedTxn(B, 2, 5, 6)]
    # Ranges, as Kafka's collectAbortedTxns answers them.
    assert log.aborted_transactions(0, 6) == [(A, 0), (B, 2)]
    assert log.aborted_transactions(0, 2) == [(A, 0)]  # A's entry has LSO 2 >= 2: the search stops there
    assert log.aborted_transactions(3, 4) == [(A, 0), (B, 2)]
    assert log.aborted_transactions(5, 6) == [(B, 2)]
    assert log.aborted_transactions(6, 7) == []
    log.close()


def test_non_transactional_write_during_a_transaction_is_invalid(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, txn(A, 0))
    with pytest.raises(InvalidTxnStateError) as caught:
        append(log, pbatch(pid=A, seq=1))
    assert caught.value.error_code == ErrorCode.INVALID_TXN_STATE and log.log_end_offset == 1
    marker(log, A, commit=True)
    assert append(log, pbatch(pid=A, seq=1)).base_offset == 2
    assert append(log, txn(A, 2)).base_offset == 3 and log.last_stable_offset == 3
    log.close()


def test_stale_markers_are_fenced(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, txn(A, 0, epoch=2))
    with pytest.raises(InvalidProducerEpochError):
        marker(log, A, commit=True, epoch=1)
    marker(log, A, commit=False, epoch=2, coordinator_epoch=7)
    append(log, txn(A, 1, epoch=2))
    with pytest.raises(TransactionCoordinatorFencedError) as caught:
        marker(log, A, commit=True, epoch=2, coordinator_epoch=6)
    assert caught.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == 3 and log.ongoing_transactions() == {A: 2}
    # A bumped epoch (the coordinator aborting a timed-out transaction) ends it.
    marker(log, A, commit=False, epoch=3, coordinator_epoch=7)
    assert log.ongoing_transactions() == {} and producer(log, A).producer_epoch == 3
    log.close()


def test_marker_without_an_open_transaction_is_written_but_changes_nothing_else(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, plain())
    assert marker(log, A, commit=False, coordinator_epoch=1).base_offset == 1
    assert log.log_end_offset == log.last_stable_offset == 2
    assert not (directory / seg_name(0, ".txnindex")).exists() and log.aborted_transactions(0, 2) == []
    # Like Kafka, the producer is now known with the marker's epochs (no sequence yet).
    assert producer(log, A)[1:] == (0, -1, 5000, 1, -1)
    log.close()


def test_lso_never_falls_below_the_log_start(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, txn(A, 0))
    append(log, plain(3))
    assert log.last_stable_offset == 0
    log.delete_records_before(2)
    assert log.last_stable_offset == 2
    log.close()


def test_aborted_transactions_are_found_across_segments(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, txn(A, 0))  # 0, segment 0
    append(log, txn(B, 0))  # 1, segment 0
    log.roll()
    append(log, txn(A, 1))  # 2, segment 2
    marker(log, B, commit=False)  # 3, segment 2
    log.roll()
    append(log, plain())  # 4, segment 4
    marker(log, A, commit=False)  # 5, segment 4
    assert log.segment_base_offsets == [0, 2, 4]
    assert not (directory / seg_name(0, ".txnindex")).exists()
    assert (directory / seg_name(2, ".txnindex")).read_bytes() == entry(B, 1, 3, 0)
    assert (directory / seg_name(4, ".txnindex")).read_bytes() == entry(A, 0, 5, 6)
    assert log.aborted_transactions(0, 2) == [(B, 1), (A, 0)]
    assert log.aborted_transactions(4, 6) == [(A, 0)]
    assert log.aborted_transactions(2, 3) == [(B, 1), (A, 0)]
    log.close()


def test_open_transaction_survives_a_clean_restart(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, plain())
    append(log, txn(A, 0))
    append(log, txn(B, 0))
    marker(log, B, commit=False)
    log.close()
    log = PartitionLog.open(directory, log.config, clock=Clock())
    assert log.last_stable_offset == 1 and log.ongoing_transactions() == {A: 1}
    assert log.aborted_transactions(0, 4) == [(B, 2)]
    marker(log, A, commit=True)
    assert log.last_stable_offset == log.log_end_offset == 5
    log.close()


def test_crash_replay_restores_transactions_and_missing_txnindex_entries(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, txn(A, 0))
    append(log, txn(B, 0, count=2))
    marker(log, A, commit=False)
    append(log, txn(A, 1, epoch=0))
    crashed = crash_copy(log, tmp_path / "crashed-0")
    original = (directory / seg_name(0, ".txnindex")).read_bytes()
    log.close()
    assert original == entry(A, 0, 3, 1)
    (crashed / seg_name(0, ".txnindex")).unlink()  # its write was lost
    log = PartitionLog.open(crashed, log.config, clock=Clock())
    assert (crashed / seg_name(0, ".txnindex")).read_bytes() == original
    assert log.ongoing_transactions() == {B: 1, A: 4} and log.last_stable_offset == 1
    assert log.aborted_transactions(0, 5) == [(A, 0)]
    marker(log, B, commit=True)
    assert log.last_stable_offset == 4
    log.close()


def test_a_torn_marker_reopens_its_transaction_and_drops_its_txnindex_entry(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, txn(A, 0, count=2))
    marker(log, A, commit=False)
    assert log.last_stable_offset == 3
    log.close()
    path = directory / seg_name(0, ".log")
    path.write_bytes(path.read_bytes()[:-3])
    log = PartitionLog.open(directory, log.config, clock=Clock())
    assert log.log_end_offset == 2 and log.last_stable_offset == 0 and log.ongoing_transactions() == {A: 0}
    assert (directory / seg_name(0, ".txnindex")).read_bytes() == b""
    assert log.snapshot_offsets == []  # 3.snapshot was beyond the new log end
    assert log.aborted_transactions(0, 2) == []
    marker(log, A, commit=True)
    assert log.last_stable_offset == 3 and log.aborted_transactions(0, 3) == []
    log.close()


def test_retention_removes_txnindex_and_snapshot_files(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append(log, txn(A, 0))
    marker(log, A, commit=False)
    log.roll()
    append(log, plain(2))
    log.roll()
    append(log, plain())
    assert log.segment_base_offsets == [0, 2, 4] and log.snapshot_offsets == [2, 4]
    assert (directory / seg_name(0, ".txnindex")).exists()
    log.delete_records_before(4)
    assert log.segment_base_offsets == [4]
    assert sorted(p.name for p in directory.iterdir() if p.name[0] == "0") == [
        seg_name(4, s) for s in (".index", ".log", ".snapshot", ".timeindex")]
    assert producer(log, A).producer_epoch == 0
    log.close()


def test_txnindex_loading_tolerates_a_torn_entry(tmp_path: Path) -> None:
    path = tmp_path / seg_name(0, ".txnindex")
    path.write_bytes(entry(A, 0, 4, 2) + entry(B, 2, 5, 6)[:20])
    index = TransactionIndex(path)
    assert index.entries == [AbortedTxn(A, 0, 4, 2)] and path.stat().st_size == 34
    index.append(AbortedTxn(B, 2, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(B, 2, 5, 6))
    index.truncate_to(5)
    assert path.read_bytes() == entry(A, 0, 4, 2)
    index.close()
