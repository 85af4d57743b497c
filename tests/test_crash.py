"""Crash test: an idempotent producer (acks=all) keeps producing while the broker is killed with SIGKILL at
random moments and restarted on the same data directory and port. At the end every acknowledged message is
there exactly once and in order, and the segment files, their indexes and the log end offsets agree."""

from __future__ import annotations

import random
import struct
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition

from protocol.records import validate_batches
from tests.brokerproc import BrokerProcess
from tests.clientutil import confluent_consumer, confluent_create_topic, drain

KILLS = 10
PARTITIONS = 2
SEED = 20260101
RUN_BETWEEN_KILLS_S = (0.15, 0.6)


class SteadyIdempotentProducer:
    """Produces numbered messages round-robin over the partitions from a thread, recording acknowledgements."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
            "message.timeout.ms": 120_000, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20, "retry.backoff.max.ms": 200,
        })
        self.sent = 0
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}  # (offset, number)
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="crash-producer", daemon=True)

    def report(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.partition()].append((msg.offset(), int(msg.value())))

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.producer.produce(self.topic, str(self.sent).encode(), partition=self.sent % PARTITIONS, on_delivery=self.report)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.001)

    def finish(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        try:
            assert self.producer.flush(60) == 0, "messages still unacknowledged a minute after the last restart"
        finally:
            self.producer.purge()
            self.producer.close()


def index_entries(path: Path, entry: struct.Struct) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [entry.unpack_from(data, i) for i in range(0, len(data) - len(data) % entry.size, entry.size)]


def check_partition_files(directory: Path, expected_records: int) -> None:
    """Every segment valid and contiguous, every index entry pointing at a batch that ends at its offset, every
    time index entry inside its segment, and the last offset equal to the records acknowledged."""
    next_offset = 0
    for log_path in sorted(directory.glob("*.log")):
        base = int(log_path.stem)
        data = log_path.read_bytes()
        headers = validate_batches(data)  # every CRC, every length
        assert sum(h.size for h in headers) == len(data), f"{log_path}: bytes after the last whole batch"
        assert base == next_offset, f"{log_path}: segment starts at {base}, the previous one ended at {next_offset}"
        for header in headers:
            assert header.base_offset == next_offset, f"{log_path}: offset gap or overlap at {header.base_offset}"
            next_offset = header.last_offset + 1
        by_position = {h.position: h for h in headers}
        for relative, position in index_entries(log_path.with_suffix(".index"), struct.Struct(">ii")):
            assert position in by_position and by_position[position].last_offset == base + relative, f"{log_path}: index entry"
        for timestamp, relative in index_entries(log_path.with_suffix(".timeindex"), struct.Struct(">qi")):
            assert base <= base + relative < next_offset, f"{log_path}: time index entry past the segment"
    assert next_offset == expected_records, f"{directory}: log end offset {next_offset}, acknowledged {expected_records}"


def consume_numbers(bootstrap: str, topic: str, counts: dict[int, int]) -> dict[int, list[tuple[int, int]]]:
    consumer = confluent_consumer(bootstrap)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        records = drain(consumer, counts)
    finally:
        consumer.close()
    out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
    for record in records:
        out[record.partition].append((record.offset, int(record.message.value)))
    return out


def test_sigkill_while_producing(fresh_broker: BrokerProcess, topic_name: str) -> None:
    rng = random.Random(SEED)
    fresh_broker.start()
    confluent_create_topic(fresh_broker.bootstrap, topic_name, partitions=PARTITIONS)
    producer = SteadyIdempotentProducer(fresh_broker.bootstrap, topic_name)
    producer.thread.start()
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(*RUN_BETWEEN_KILLS_S))
            fresh_broker.kill()
            fresh_broker.start()
    finally:
        producer.finish()
    assert not producer.errors, producer.errors[:5]
    assert producer.sent > 100, "the producer hardly ran"
    counts = {p: len(acked) for p, acked in producer.acked.items()}
    assert sum(counts.values()) == producer.sent, "every message is acknowledged in the end"
    for p, acked in producer.acked.items():
        numbers = [number for _, number in acked]
        assert numbers == list(range(p, producer.sent, PARTITIONS)), f"partition {p}: acknowledged out of order"
        assert [offset for offset, _ in acked] == list(range(len(acked))), f"partition {p}: offsets not 0..n-1"
    assert consume_numbers(fresh_broker.bootstrap, topic_name, counts) == producer.acked, "exactly once, in order"
    fresh_broker.stop()
    for p in range(PARTITIONS):
        check_partition_files(fresh_broker.data_dir / f"{topic_name}-{p}", counts[p])
    assert "Traceback" not in fresh_broker.log_text()
    print(f"\n{producer.sent} messages acknowledged exactly once through {KILLS} SIGKILLs")
