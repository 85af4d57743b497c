"""Storage faults during Produce: a disk that fills up half-way through a write, or an I/O error on the log or
its index. The producer gets KAFKA_STORAGE_ERROR (56), other partitions and all reads keep working, nothing
written before is damaged, no torn batch is left behind, and once the fault is gone (or after a restart) the
log goes on where it stopped. Faults are injected into ``os.pwrite`` of an in-process broker; a real full
disk is a small tmpfs, where mounting one is allowed."""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Producer
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import build_batch, decode_batch, iter_batches

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, RawConnection

PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19
KAFKA_STORAGE_ERROR = 56
TOPIC = "faulty"
REAL_PWRITE = os.pwrite


class PwriteFault:
    """Makes ``os.pwrite`` fail for chosen descriptors: the first write gets half through, then ENOSPC (a disk
    filling up mid-write), or every write fails with EIO."""

    def __init__(self) -> None:
        self.fds: set[int] = set()
        self.error = errno.ENOSPC
        self.hits = 0
        self.lock = threading.Lock()

    def __call__(self, fd: int, data: Any, position: int) -> int:
        with self.lock:
            failing = fd in self.fds
            if failing:
                self.hits += 1
        if not failing:
            return REAL_PWRITE(fd, data, position)
        view = memoryview(data)
        if self.error == errno.ENOSPC and len(view) > 1 and self.hits % 2 == 1:
            return REAL_PWRITE(fd, view[: len(view) // 2], position)  # a short write; the next call fails
        raise OSError(self.error, os.strerror(self.error))

    def arm(self, fds: list[int], error: int = errno.ENOSPC) -> None:
        with self.lock:
            self.fds, self.error, self.hits = set(fds), error, 0

    def heal(self) -> None:
        with self.lock:
            self.fds = set()


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> PwriteFault:
    injected = PwriteFault()
    monkeypatch.setattr(os, "pwrite", injected)
    return injected


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(data_dir=tmp_path / "data", log_index_interval_bytes=0) as running:  # index every batch
        with RawConnection(running.bootstrap_servers) as conn:
            body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
                    "timeout_ms": 5000, "validate_only": False}
            [created] = decode_response(CREATE_TOPICS, 5, conn.request(CREATE_TOPICS, 5, body))[1]["topics"]
            assert created["error_code"] == 0
        yield running


def produce(conn: RawConnection, batches: dict[int, bytes]) -> dict[int, dict[str, Any]]:
    """One Produce v8 request (acks=all) with a batch per partition; the answer per partition."""
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": p, "records": batch} for p, batch in batches.items()]}
    ]}
    answer = decode_response(PRODUCE, 8, conn.request(PRODUCE, 8, body))[1]
    return {p["index"]: p for p in answer["responses"][0]["partition_responses"]}


def values(conn: RawConnection, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of a partition, read with Fetch v4 requests."""
    out: list[tuple[int, bytes]] = []
    while True:
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
                "topics": [{"topic": TOPIC, "partitions": [{"partition": partition, "fetch_offset": len(out), "partition_max_bytes": 1 << 20}]}]}
        [data] = decode_response(FETCH, 4, conn.request(FETCH, 4, body))[1]["responses"][0]["partitions"]
        assert data["error_code"] == 0
        records = bytes(data["records"] or b"")
        batch = [(r.offset, r.value) for h in iter_batches(records) for r in decode_batch(records, h) if r.offset >= len(out)]
        if not batch:
            return out
        out += batch


def batch_of(*texts: str) -> bytes:
    return build_batch([(None, text.encode()) for text in texts])


def log_file(broker: Broker, partition: int) -> Path:
    [path] = sorted((broker.data_dir / f"{TOPIC}-{partition}").glob("*.log"))
    return path


def segment_fds(broker: Broker, partition: int) -> dict[str, int]:
    """Descriptors of the partition's active segment (read from the test thread: plain attribute reads)."""
    segment = broker.core.partition(TOPIC, partition)._segments[-1]
    return {"log": segment.fd, "index": segment.index.fd, "timeindex": segment.time_index.fd}


@pytest.mark.parametrize("target,error", [("log", errno.ENOSPC), ("log", errno.EIO), ("index", errno.ENOSPC)])
def test_failed_append_is_storage_error_and_leaves_nothing(
    broker: Broker, fault: PwriteFault, caplog: pytest.LogCaptureFixture, target: str, error: int
) -> None:
    with RawConnection(broker.bootstrap_servers) as conn:
        first = produce(conn, {0: batch_of("a0"), 1: batch_of("b0")})
        second = produce(conn, {0: batch_of("a1")})  # indexed (its predecessor is), which opens the index files
        assert [first[p]["error_code"] for p in (0, 1)] + [second[0]["error_code"]] == [0, 0, 0]
        size_before = log_file(broker, 0).stat().st_size
        target_fd = segment_fds(broker, 0)[target]
        assert target_fd >= 0
        fault.arm([target_fd], error)
        answer = produce(conn, {0: batch_of("lost-" + "x" * 200, "lost2"), 1: batch_of("b1")})
        assert answer[0]["error_code"] == KAFKA_STORAGE_ERROR and answer[0]["error_message"]
        assert answer[1]["error_code"] == 0 and answer[1]["base_offset"] == 1, "the other partition must keep working"
        assert fault.hits >= 1
        assert log_file(broker, 0).stat().st_size == size_before, "a torn batch was left in the log"
        assert values(conn, 0) == [(0, b"a0"), (1, b"a1")], "reads must serve exactly what was acknowledged"
        assert values(conn, 1) == [(0, b"b0"), (1, b"b1")]
        fault.heal()
        again = produce(conn, {0: batch_of("a2")})
        assert again[0]["error_code"] == 0 and again[0]["base_offset"] == 2
    broker.restart()
    assert "truncated" not in caplog.text, "recovery found damage after the restart"
    with RawConnection(broker.bootstrap_servers) as conn:
        assert values(conn, 0) == [(0, b"a0"), (1, b"a1"), (2, b"a2")]
        assert produce(conn, {0: batch_of("a3")})[0]["base_offset"] == 3


def test_idempotent_producer_rides_out_a_transient_fault(broker: Broker, fault: PwriteFault) -> None:
    """KAFKA_STORAGE_ERROR is retriable: librdkafka retries, and once the disk works again every message is
    there exactly once and in order."""
    count = 200
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                         "message.timeout.ms": TIMEOUT_MS, "retry.backoff.ms": 20, "linger.ms": 2})
    try:
        for i in range(count // 2):
            producer.produce(TOPIC, str(i).encode(), partition=0, on_delivery=lambda err, _m: err and errors.append(str(err)))
        assert producer.flush(TIMEOUT_S) == 0
        fault.arm([segment_fds(broker, 0)["log"]], errno.EIO)
        for i in range(count // 2, count):
            producer.produce(TOPIC, str(i).encode(), partition=0, on_delivery=lambda err, _m: err and errors.append(str(err)))
        producer.poll(0.5)
        assert fault.hits > 0, "the fault was never hit"
        fault.heal()
        assert producer.flush(TIMEOUT_S) == 0
    finally:
        producer.purge()
        producer.close()
    assert not errors, errors[:3]
    with RawConnection(broker.bootstrap_servers) as conn:
        assert values(conn, 0) == [(i, str(i).encode()) for i in range(count)]


# ---- a real full disk ----


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (needs the right to mount; skipped otherwise)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_full_disk(small_disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    filler = small_disk / "filler"
    with Broker(data_dir=small_disk / "data", log_index_interval_bytes=0) as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
                    "timeout_ms": 5000, "validate_only": False}
            decode_response(CREATE_TOPICS, 5, conn.request(CREATE_TOPICS, 5, body))
            stats = os.statvfs(small_disk)
            filler.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - 48 * 1024))  # leave 48 KiB
            acknowledged: list[bytes] = []
            failed = None
            for i in range(40):
                value = f"{i:04d}".encode() + os.urandom(3000)  # incompressible, and builds no batch larger than free space
                answer = produce(conn, {0: build_batch([(None, value)])})[0]
                if answer["error_code"] == KAFKA_STORAGE_ERROR:
                    failed = answer
                    break
                assert answer["error_code"] == 0
                acknowledged.append(value)
            assert failed is not None and "No space left" in failed["error_message"], "the disk never filled up"
            assert [v for _, v in values(conn, 0)] == acknowledged
            size = log_file(broker, 0).stat().st_size
            assert sum(h.size for h in iter_batches(log_file(broker, 0).read_bytes())) == size, "torn batch on disk"
            filler.unlink()
            assert produce(conn, {0: batch_of("after")})[0]["base_offset"] == len(acknowledged)
        broker.restart()
        with RawConnection(broker.bootstrap_servers) as conn:
            assert [v for _, v in values(conn, 0)] == [*acknowledged, b"after"]
    assert "truncated" not in caplog.text


def test_failed_fsync_is_storage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With flush.messages=1 an acknowledgement waits for fsync; when fsync fails the producer hears 56, not OK."""
    with Broker(data_dir=tmp_path / "data", log_flush_interval_messages=1) as running:
        with RawConnection(running.bootstrap_servers) as conn:
            body = {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
                    "timeout_ms": 5000, "validate_only": False}
            assert decode_response(CREATE_TOPICS, 5, conn.request(CREATE_TOPICS, 5, body))[1]["topics"][0]["error_code"] == 0
            assert produce(conn, {0: batch_of("synced")})[0]["error_code"] == 0

            def failing_fsync(fd: int) -> None:
                raise OSError(errno.EIO, os.strerror(errno.EIO))

            monkeypatch.setattr(os, "fsync", failing_fsync)
            answer = produce(conn, {0: batch_of("unsynced")})
            assert answer[0]["error_code"] == KAFKA_STORAGE_ERROR
            assert "fsync" in answer[0]["error_message"]
            monkeypatch.undo()
            assert produce(conn, {1: batch_of("later")})[1]["error_code"] == 0
