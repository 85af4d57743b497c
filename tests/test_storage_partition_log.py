"""PartitionLog: append/read, index cadence, rolling, recovery, timestamps, deletion and flushing."""

from __future__ import annotations

import logging
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from minibroker.protocol.records import (
    batch_crc_ok,
    build_batch,
    decode_all,
    iter_batches,
    parse_header,
    validate_batches,
)
from minibroker.storage.config import LogConfig
from minibroker.storage.errors import OffsetOutOfRangeError
from minibroker.storage.partition_log import AppendInfo, PartitionLog


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(count: int = 1, ts: int = 1000, value_size: int = 10, timestamps: list[int] | None = None) -> bytes:
    stamps = timestamps or [ts] * count
    return build_batch([(b"k", b"v" * value_size, [], t) for t in stamps])


def append(log: PartitionLog, *batches: bytes) -> AppendInfo:
    buf = bytearray(b"".join(batches))
    return log.append(buf, validate_batches(buf))


def seg_name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


def index_entries(path: Path) -> list[tuple[int, int]]:
    return list(struct.iter_unpack(">ii", path.read_bytes()))


def time_entries(path: Path) -> list[tuple[int, int]]:
    return list(struct.iter_unpack(">qi", path.read_bytes()))


def open_log(directory: Path, clock: Clock | None = None, **config: object) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(**config), clock=clock or Clock())


def read_all(log: PartitionLog) -> list[tuple[int, int]]:
    """(base, last) of every batch by reading the log through its public API."""
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        headers = list(iter_batches(data))
        out.extend((h.base_offset, h.last_offset) for h in headers)
        offset = headers[-1].last_offset + 1
    return out


# ---- append and read ----


def test_append_assigns_offsets_and_read_returns_valid_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    assert append(log, batch(3), batch(2)) == AppendInfo(0, 4, -1, 0)
    assert append(log, batch(1)) == AppendInfo(5, 5, -1, 0)
    assert log.log_end_offset == 6
    data = log.read(0, 1 << 20)
    headers = list(iter_batches(data))
    assert [(h.base_offset, h.last_offset) for h in headers] == [(0, 2), (3, 4), (5, 5)]
    assert all(batch_crc_ok(data, h) for h in headers)
    assert [r.offset for _, records in decode_all(data) for r in records] == list(range(6))
    assert log.read(4, 1 << 20)[:8] == struct.pack(">q", 3)  # starts with the batch containing 4
    assert log.read(6, 100) == b""
    assert len(data) == log.size_bytes == (tmp_path / "t-0" / seg_name(0, ".log")).stat().st_size


@pytest.mark.parametrize("index_interval_bytes", [0, 300, 4096, 1 << 20])
def test_reads_near_the_end_find_the_same_batches_as_a_reopened_log(tmp_path: Path, index_interval_bytes: int) -> None:
    """Reads of recently appended offsets skip the scan from the index entry; they must find exactly what a scan
    finds: compared, offset by offset, with the same log reopened (which remembers no appends)."""
    log = open_log(tmp_path / "t-0", index_interval_bytes=index_interval_bytes)
    for count in [1, 3, 1, 2, 5, 1, 1, 4] * 40:
        append(log, batch(count), batch(1)) if count == 5 else append(log, batch(count))
    end = log.log_end_offset
    recent = [(offset, log.read(offset, 1), log.read(offset, 700), log.read(offset, 1, upper_offset=offset + 3))
              for offset in range(end + 1)]
    log.close()
    reopened = open_log(tmp_path / "t-0", index_interval_bytes=index_interval_bytes)
    assert recent == [(offset, reopened.read(offset, 1), reopened.read(offset, 700),
                       reopened.read(offset, 1, upper_offset=offset + 3)) for offset in range(end + 1)]
    assert all(parse_header(data).last_offset >= offset for offset, data, _, _ in recent[:-1])


def test_leader_epoch_is_stamped(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append_buf = bytearray(batch(2))
    log.append(append_buf, validate_batches(append_buf), leader_epoch=7)
    assert parse_header(log.read(0, 100)).partition_leader_epoch == 7


def test_read_returns_at_least_one_whole_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    big, small = batch(1, value_size=500), batch(1)
    append(log, big, small, small)
    def shape(data: bytes) -> list[tuple[int, int]]:
        return [(h.base_offset, h.size) for h in iter_batches(data)]

    assert shape(log.read(0, 10)) == [(0, len(big))] and len(log.read(0, 10)) == len(big)
    assert shape(log.read(0, len(big) + len(small) - 1)) == [(0, len(big))]
    assert shape(log.read(0, len(big) + len(small))) == [(0, len(big)), (1, len(small))]
    assert shape(log.read(1, 0)) == [(1, len(small))]
    assert log.read(0, 10)[16:] == big[16:]  # stored as received apart from offset and leader epoch


def test_read_upper_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, batch(2), batch(2), batch(2))
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20, upper_offset=4))] == [0, 2]
    assert [h.base_offset for h in iter_batches(log.read(0, 1 << 20, upper_offset=3))] == [0, 2]
    assert log.read(2, 1 << 20, upper_offset=2) == b""
    assert log.read(5, 1 << 20, upper_offset=4) == b""


def test_offset_out_of_range(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, batch(3))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    log.delete_records_before(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 100)
    assert parse_header(log.read(2, 100)).base_offset == 0  # the batch holding the log start


def test_log_append_time(tmp_path: Path) -> None:
    clock = Clock(5_000)
    log = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    info = append(log, batch(2, ts=10))
    assert info.log_append_time_ms == 5_000
    data = log.read(0, 1000)
    header = parse_header(data)
    assert header.timestamp_type == 1 and header.max_timestamp == 5_000 and batch_crc_ok(data, header)
    assert log.max_timestamp_entry() == (0, 5_000)
    assert log.offset_for_timestamp(4_000) == (0, 5_000)


# ---- index files ----


def expected_indexes(sizes: list[int], lasts: list[int], stamps: list[int], interval: int):
    """The cadence rule of ONDISK.md, computed independently of the implementation."""
    index, times = [], []
    since = position = 0
    max_ts, max_off = -1, 0
    for size, last, ts in zip(sizes, lasts, stamps):
        if ts > max_ts:
            max_ts, max_off = ts, last
        if since > interval:
            index.append((last, position))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off))
            since = 0
        since += size
        position += size
    if max_ts > (times[-1][0] if times else -1):
        times.append((max_ts, max_off))  # written on roll / close
    return index, times


@pytest.mark.parametrize("one_append", [False, True])
def test_index_cadence_is_exact(tmp_path: Path, one_append: bool) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, index_interval_bytes=300)
    counts = [1, 3, 2, 5, 1, 1, 4, 2, 2, 6, 1, 3, 1, 1, 2]
    stamps = [100, 90, 300, 300, 250, 400, 410, 50, 600, 600, 700, 650, 800, 900, 900]
    batches = [batch(n, ts=t, value_size=37) for n, t in zip(counts, stamps)]
    if one_append:
        append(log, *batches)
    else:
        for b in batches:
            append(log, b)
    log.close()
    lasts, total = [], 0
    for n in counts:
        total += n
        lasts.append(total - 1)
    index, times = expected_indexes([len(b) for b in batches], lasts, stamps, 300)
    assert len(index) > 3
    assert index_entries(directory / seg_name(0, ".index")) == index
    assert time_entries(directory / seg_name(0, ".timeindex")) == times
    assert (directory / seg_name(0, ".index")).stat().st_size == 8 * len(index)
    assert (directory / seg_name(0, ".timeindex")).stat().st_size == 12 * len(times)


def test_interval_zero_indexes_every_batch_but_the_first(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, index_interval_bytes=0)
    for i in range(4):
        append(log, batch(2, ts=100 + i))
    log.close()
    size = len(batch(2))
    assert index_entries(directory / seg_name(0, ".index")) == [(3, size), (5, 2 * size), (7, 3 * size)]
    assert time_entries(directory / seg_name(0, ".timeindex")) == [(101, 3), (102, 5), (103, 7)]


# ---- rolling ----


def test_roll_by_size(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    one = batch(2, value_size=100)
    log = open_log(directory, internal_segment_bytes=3 * len(one))
    for _ in range(7):
        append(log, one)
    assert log.segment_base_offsets == [0, 6, 12]
    assert sorted(p.name for p in directory.glob("*.log")) == [seg_name(0, ".log"), seg_name(6, ".log"),
                                                               seg_name(12, ".log")]
    assert (directory / seg_name(0, ".log")).stat().st_size == 3 * len(one)
    assert read_all(log) == [(i, i + 1) for i in range(0, 14, 2)]
    # A batch bigger than a segment still goes into an empty segment.
    append(log, batch(1, value_size=2000))
    assert log.segment_base_offsets[-1] == 14
    assert log.read(14, 10) != b""


def test_roll_by_segment_ms_with_create_time(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", segment_ms=1000)
    append(log, batch(1, ts=10_000))
    append(log, batch(1, ts=11_000))  # exactly segment.ms later: no roll (Kafka uses >)
    assert log.segment_base_offsets == [0]
    append(log, batch(1, ts=11_001))
    assert log.segment_base_offsets == [0, 2]


def test_roll_by_segment_ms_with_injected_clock(tmp_path: Path) -> None:
    clock = Clock(0)
    log = open_log(tmp_path / "t-0", clock, segment_ms=1000, message_timestamp_type="LogAppendTime")
    append(log, batch(1))
    clock.now = 999
    append(log, batch(1))
    assert log.segment_base_offsets == [0]
    clock.now = 1001
    append(log, batch(1))
    assert log.segment_base_offsets == [0, 2]
    clock.now = 1500
    append(log, batch(1))
    assert log.segment_base_offsets == [0, 2]


def test_roll_by_segment_ms_without_timestamps_uses_creation_time(tmp_path: Path) -> None:
    clock = Clock(0)
    log = open_log(tmp_path / "t-0", clock, segment_ms=1000)
    append(log, batch(1, ts=-1))
    clock.now = 1001
    append(log, batch(1, ts=-1))
    assert log.segment_base_offsets == [0, 1]


def test_roll_when_index_is_full(tmp_path: Path) -> None:
    # 24 bytes: 3 offset-index entries, 2 time-index entries (all batches share one timestamp: 1 entry).
    log = open_log(tmp_path / "t-0", index_interval_bytes=0, segment_index_bytes=24)
    for _ in range(6):
        append(log, batch(1))
    assert log.segment_base_offsets == [0, 4]
    # 16 bytes: the time index (12-byte entries) holds a single entry and fills first.
    log = open_log(tmp_path / "u-0", index_interval_bytes=0, segment_index_bytes=16)
    for i in range(5):
        append(log, batch(1, ts=100 + i))
    assert log.segment_base_offsets == [0, 2, 4]


# ---- reopening and recovery ----


def fill(log: PartitionLog, batches: int, per: int = 2, ts0: int = 1000) -> None:
    for i in range(batches):
        append(log, batch(per, ts=ts0 + i, value_size=40))


@pytest.mark.parametrize("recovery_point", [0, None])
def test_reopen_continues_offsets(tmp_path: Path, recovery_point: int | None) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, internal_segment_bytes=500, index_interval_bytes=100)
    fill(log, 20)
    log.flush_now()
    before = (log.segment_base_offsets, log.log_end_offset, read_all(log), log.max_timestamp_entry())
    log.close()
    rp = log.log_end_offset if recovery_point is None else recovery_point
    log = PartitionLog.open(directory, LogConfig(internal_segment_bytes=500, index_interval_bytes=100),
                            recovery_point=rp, clock=Clock())
    assert (log.segment_base_offsets, log.log_end_offset, read_all(log), log.max_timestamp_entry()) == before
    assert log.recovery_point == rp
    assert append(log, batch(1)).base_offset == 40
    log.close()


def test_torn_tail_is_truncated_with_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 5)
    log.flush_now()
    log.close()
    path = directory / seg_name(0, ".log")
    good = path.read_bytes()
    half = batch(3, value_size=100)[:70]
    for tail in (half, b"\x00" * 5, b"garbage" * 20):
        path.write_bytes(good + tail)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="storage"):
            log = PartitionLog.open(directory, LogConfig(), recovery_point=10, clock=Clock())
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        message = warnings[0].getMessage()
        assert str(directory) in message and "offset 10" in message and f"{len(tail)} bytes" in message
        assert log.log_end_offset == 10 and read_all(log) == [(i, i + 1) for i in range(0, 10, 2)]
        log.close()
        assert path.read_bytes() == good


def test_corrupt_crc_truncates_from_there_and_drops_later_segments(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "t-0"
    one = batch(2, value_size=40)
    log = open_log(directory, internal_segment_bytes=4 * len(one))
    fill(log, 10)
    assert log.segment_base_offsets == [0, 8, 16]
    log.close()
    path = directory / seg_name(0, ".log")
    data = bytearray(path.read_bytes())
    data[2 * len(one) + 70] ^= 0xFF  # payload of the third batch (offsets 4..5)
    path.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="storage"):
        log = PartitionLog.open(directory, LogConfig(internal_segment_bytes=4 * len(one)), clock=Clock())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "offset 4" in warnings[0].getMessage()
    assert log.log_end_offset == 4 and log.segment_base_offsets == [0]
    assert read_all(log) == [(0, 1), (2, 3)]
    assert sorted(p.name for p in directory.glob("*.log")) == [seg_name(0, ".log")]
    assert not (directory / seg_name(8, ".index")).exists()
    assert append(log, batch(1)).base_offset == 4
    log.close()


@pytest.mark.parametrize("damage", ["delete_index", "delete_timeindex", "garbage_index", "odd_size",
                                    "garbage_timeindex", "index_beyond_log"])
def test_damaged_index_is_rebuilt_identically(tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "t-0"
    config = dict(internal_segment_bytes=2000, index_interval_bytes=150)
    log = open_log(directory, **config)
    fill(log, 40)
    log.flush_now()
    end = log.log_end_offset
    log.close()
    originals = {p.name: p.read_bytes() for p in directory.glob("*index")}
    assert len(index_entries(directory / seg_name(0, ".index"))) >= 3
    index, timeindex = directory / seg_name(0, ".index"), directory / seg_name(0, ".timeindex")
    if damage == "delete_index":
        index.unlink()
    elif damage == "delete_timeindex":
        timeindex.unlink()
    elif damage == "garbage_index":
        index.write_bytes(os.urandom(len(originals[index.name])))
    elif damage == "odd_size":
        index.write_bytes(originals[index.name] + b"\x01\x02\x03")
    elif damage == "garbage_timeindex":
        timeindex.write_bytes(struct.pack(">qi", 5, 0) + struct.pack(">qi", 4, 1))
    else:
        index.write_bytes(originals[index.name] + struct.pack(">ii", 500, 10**6))
    log = PartitionLog.open(directory, LogConfig(**config), recovery_point=end, clock=Clock())
    assert log.log_end_offset == end
    assert log.read(7, 10)[:8] == struct.pack(">q", 6)
    log.close()
    assert {p.name: p.read_bytes() for p in directory.glob("*index")} == originals


def test_leftover_and_orphan_files_are_removed(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, 2)
    log.close()
    for name in (seg_name(0, ".log.deleted"), seg_name(0, ".cleaned"), seg_name(4, ".log.swap"),
                 seg_name(99, ".index"), seg_name(99, ".timeindex"), seg_name(99, ".txnindex"),
                 seg_name(2, ".snapshot.tmp"), "leader-epoch-checkpoint.tmp"):
        (directory / name).write_bytes(b"x")
    log = PartitionLog.open(directory, LogConfig(), clock=Clock())
    # The clean close left the producer-state snapshot at the log end (Kafka does too).
    assert sorted(p.name for p in directory.iterdir()) == [seg_name(0, s) for s in (".index", ".log", ".timeindex")] + [
        seg_name(4, ".snapshot"), "leader-epoch-checkpoint"]
    assert log.log_end_offset == 4
    log.close()


def test_empty_log_starts_at_log_start_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), log_start_offset=42, clock=Clock())
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (42, 42, [42])
    assert append(log, batch(1)).base_offset == 42
    assert log.read(42, 100) != b""
    log.close()
    assert (tmp_path / "t-0" / seg_name(42, ".log")).exists()


# ---- timestamps ----


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", internal_segment_bytes=400, index_interval_bytes=50)
    append(log, batch(timestamps=[100, 300, 200]))  # offsets 0..2
    append(log, batch(timestamps=[150, 120, 180]))  # offsets 3..5
    append(log, batch(timestamps=[400, 500]))  # 6..7
    append(log, batch(timestamps=[450]))  # 8
    append(log, batch(timestamps=[700, 650]))  # 9..10
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(100) == (0, 100)
    assert log.offset_for_timestamp(101) == (1, 300)
    assert log.offset_for_timestamp(301) == (6, 400)
    assert log.offset_for_timestamp(460) == (7, 500)
    assert log.offset_for_timestamp(660) == (9, 700)
    assert log.offset_for_timestamp(701) is None
    assert log.max_timestamp_entry() == (9, 700)
    log.delete_records_before(2)
    assert log.offset_for_timestamp(101) == (2, 200)


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_timestamps_in_compressed_batches(tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path / "t-0")
    stamps = [10, 40, 20, 30]
    buf = bytearray(build_batch([(b"k", b"v" * 100, [], t) for t in stamps], compression=codec)
                    + build_batch([(b"k", b"v", [], 35)], compression=codec))
    log.append(buf, validate_batches(buf))
    assert log.offset_for_timestamp(15) == (1, 40)
    assert log.offset_for_timestamp(32) == (1, 40)
    assert log.offset_for_timestamp(41) is None
    assert log.max_timestamp_entry() == (1, 40)
    assert log.read(3, 1) == bytes(buf[:len(buf) - len(build_batch([(b"k", b"v", [], 35)], compression=codec))])


def test_max_timestamp_is_the_record_not_the_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    assert log.max_timestamp_entry() is None
    assert log.offset_for_timestamp(0) is None
    append(log, batch(timestamps=[10, 20]), batch(timestamps=[5, 90, 30, 90]), batch(timestamps=[50]))
    assert log.max_timestamp_entry() == (3, 90)


# ---- deleting data ----


def test_delete_records_before(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    one = batch(2, value_size=40)
    log = open_log(directory, internal_segment_bytes=2 * len(one))
    fill(log, 6)
    assert log.segment_base_offsets == [0, 4, 8]
    assert log.delete_records_before(3) == 3
    assert log.segment_base_offsets == [0, 4, 8]
    assert log.delete_records_before(2) == 3  # never backwards
    assert log.delete_records_before(8) == 8
    assert log.segment_base_offsets == [8]
    assert not (directory / seg_name(0, ".log")).exists()
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(13)
    assert log.delete_records_before(-1) == 12  # up to the high watermark
    assert log.segment_base_offsets == [8]  # the active segment stays
    assert log.read(12, 100) == b""
    log.flush_now()
    log.close()
    log = PartitionLog.open(directory, LogConfig(), log_start_offset=12, recovery_point=12, clock=Clock())
    assert (log.log_start_offset, log.log_end_offset) == (12, 12)
    log.close()


def test_retention_by_time(tmp_path: Path) -> None:
    clock = Clock(10_000)
    one = batch(1)
    log = open_log(tmp_path / "t-0", clock, internal_segment_bytes=2 * len(one), retention_ms=1000)
    for ts in (1000, 1100, 5000, 5100, 9000, 9100, 9500):
        append(log, batch(1, ts=ts))
    assert log.segment_base_offsets == [0, 2, 4, 6]
    assert log.enforce_retention() == 2  # largest timestamps 1100 and 5100 are older than 1s
    assert (log.segment_base_offsets, log.log_start_offset) == ([4, 6], 4)
    clock.now = 100_000
    assert log.enforce_retention() == 1
    assert log.segment_base_offsets == [6]  # never the active segment
    assert log.enforce_retention() == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)


def test_retention_by_bytes_and_policy(tmp_path: Path) -> None:
    one = batch(1)
    log = open_log(tmp_path / "t-0", internal_segment_bytes=2 * len(one), retention_bytes=3 * len(one))
    for _ in range(7):
        append(log, one)
    assert log.segment_base_offsets == [0, 2, 4, 6]
    assert log.enforce_retention() == 2
    assert log.size_bytes == 3 * len(one) and log.log_start_offset == 4
    compact = open_log(tmp_path / "c-0", internal_segment_bytes=len(one), retention_ms=0, cleanup_policy="compact")
    for _ in range(3):
        append(compact, one)
    assert compact.enforce_retention() == 0


# ---- flushing ----


def test_flush_split_runs_fsync_in_a_thread(tmp_path: Path) -> None:
    clock = Clock(0)
    one = batch(1)
    log = open_log(tmp_path / "t-0", clock, flush_messages=3, flush_ms=1000, internal_segment_bytes=2 * len(one))
    assert log.prepare_flush() is not None  # the new segment's directory entry
    log.flush_now()
    assert log.prepare_flush() is None
    append(log, one)
    assert not log.needs_flush(0)
    append(log, one, one)
    assert log.needs_flush(0)
    ticket = log.prepare_flush()
    assert ticket is not None and ticket.offset == 3
    append(log, one)  # arrives while the fsync runs
    with ThreadPoolExecutor(1) as pool:
        pool.submit(ticket.run).result()
    assert ticket.fds == []
    log.complete_flush(ticket)
    assert log.recovery_point == 3 and not log.needs_flush(0)
    clock.now = 999
    assert not log.needs_flush(clock.now)
    assert log.needs_flush(1000)
    log.flush_now()
    assert log.recovery_point == log.log_end_offset == 4
    log.close()


def test_delete_removes_the_directory(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append(log, batch(1))
    log.delete()
    assert not (tmp_path / "t-0").exists()
