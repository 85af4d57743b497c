"""Crash test: an idempotent producer (acks=all) keeps producing, and a consumer keeps committing offsets, while
the broker is killed with SIGKILL at random moments and restarted on the same data directory and port. At the
end every acknowledged message is there exactly once and in order, the segment files, their indexes and the log
end offsets agree, every acknowledged offset commit holds, and the group offsets and transactions settled before
the kills are intact (a committed and an aborted transaction as they were; one left open is aborted by its
timeout)."""

from __future__ import annotations

import random
import struct
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import validate_batches

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, RawConnection, confluent_consumer, confluent_create_topic, drain
from tests.numbered_producer import NumberedProducer

KILLS = 20
PARTITIONS = 2
SETTLED_OFFSETS = {0: 3, 1: 5}
OPEN_TXN_TIMEOUT_MS = 3000
DESCRIBE_TRANSACTIONS = 65
SEED = 20260101
RUN_BETWEEN_KILLS_S = (0.15, 0.6)


class SteadyCommitter:
    """Commits ever larger offsets for one group from a thread, recording the last commit acknowledged."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})
        self.attempted = 0
        self.acked = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="crash-committer", daemon=True)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.attempted += 1
            try:
                self.consumer.commit(offsets=[TopicPartition(self.topic, 0, self.attempted)], asynchronous=False)
                self.acked = self.attempted
            except KafkaException:
                time.sleep(0.02)  # the broker is down or loading: try the next offset

    def finish(self) -> None:
        self.stopping.set()
        self.thread.join(30)
        self.consumer.close()


class SettledState:
    """Group offsets and transactions made before the kills, to be found intact after them."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic, self.txn_topic, self.group = topic, f"{topic}-txn", f"{topic}-settled"
        self.ids = {"committed": f"{topic}-committed", "aborted": f"{topic}-aborted", "open": f"{topic}-open"}
        confluent_create_topic(bootstrap, self.txn_topic, partitions=1)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": self.group, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in SETTLED_OFFSETS.items()], asynchronous=False)
        consumer.close()
        for outcome, values in (("committed", [b"c1", b"c2"]), ("aborted", [b"a1"])):
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": self.ids[outcome]})
            producer.init_transactions(TIMEOUT_S)
            producer.begin_transaction()
            for value in values:
                producer.produce(self.txn_topic, value, partition=0)
            assert producer.flush(TIMEOUT_S) == 0  # written before the outcome (an abort would purge them)
            if outcome == "committed":
                producer.commit_transaction(TIMEOUT_S)
            else:
                producer.abort_transaction(TIMEOUT_S)
        self.open = Producer({"bootstrap.servers": bootstrap, "transactional.id": self.ids["open"],
                              "transaction.timeout.ms": OPEN_TXN_TIMEOUT_MS})
        self.open.init_transactions(TIMEOUT_S)
        self.open.begin_transaction()
        self.open.produce(self.txn_topic, b"o1", partition=0)
        assert self.open.flush(TIMEOUT_S) == 0
        self.before = self.states(bootstrap)
        assert self.before["committed"] == "CompleteCommit" and self.before["open"] == "Ongoing", self.before

    def check(self, bootstrap: str) -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": self.group, "enable.auto.commit": False})
        try:
            committed = consumer.committed([TopicPartition(self.topic, p) for p in SETTLED_OFFSETS], timeout=TIMEOUT_S)
        finally:
            consumer.close()
        assert {tp.partition: tp.offset for tp in committed} == SETTLED_OFFSETS, "settled group offsets changed"
        deadline = time.monotonic() + TIMEOUT_S
        while self.states(bootstrap)["open"] != "CompleteAbort" and time.monotonic() < deadline:
            time.sleep(0.2)  # the open transaction ends when its timeout passes after a restart
        assert self.states(bootstrap) == {**self.before, "open": "CompleteAbort"}, "transaction states changed"
        visible = consume_values(bootstrap, self.txn_topic, 2, **{"isolation.level": "read_committed"})
        assert visible == [b"c1", b"c2"], "read_committed must see exactly the committed transaction"
        assert consume_values(bootstrap, self.txn_topic, 4, **{"isolation.level": "read_uncommitted"}) == [
            b"c1", b"c2", b"a1", b"o1"]

    def close(self) -> None:
        self.open.purge()
        try:
            self.open.close()
        except KafkaException as exc:  # fenced: the broker aborted its transaction when the timeout passed
            assert exc.args[0].code() == KafkaError._FENCED, exc

    def states(self, bootstrap: str) -> dict[str, str]:
        body = {"transactional_ids": list(self.ids.values())}
        with RawConnection(bootstrap) as conn:
            answer = decode_response(DESCRIBE_TRANSACTIONS, 0, conn.request(DESCRIBE_TRANSACTIONS, 0, body))[1]
        by_id = {s["transactional_id"]: s["transaction_state"] for s in answer["transaction_states"]}
        return {outcome: by_id[transactional_id] for outcome, transactional_id in self.ids.items()}


def consume_values(bootstrap: str, topic: str, count: int, **config: str) -> list[bytes]:
    consumer = confluent_consumer(bootstrap, **config)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return [record.message.value for record in drain(consumer, {0: count})]
    finally:
        consumer.close()


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
    fresh_broker.settings += ["offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=3",
                              "transaction.abort.timed.out.transaction.cleanup.interval.ms=200"]
    fresh_broker.start()
    confluent_create_topic(fresh_broker.bootstrap, topic_name, partitions=PARTITIONS)
    settled = SettledState(fresh_broker.bootstrap, topic_name)
    producer = NumberedProducer(fresh_broker.bootstrap, topic_name, PARTITIONS)
    committer = SteadyCommitter(fresh_broker.bootstrap, topic_name, f"{topic_name}-moving")
    producer.start()
    committer.thread.start()
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(*RUN_BETWEEN_KILLS_S))
            fresh_broker.kill()
            fresh_broker.start()
    finally:
        try:
            producer.finish(60)  # a minute after the last restart
        finally:
            producer.close()
            committer.finish()
            settled.close()
    assert not producer.errors, producer.errors[:5]
    assert committer.acked > 10, "the committer hardly ran"
    moving = Consumer({"bootstrap.servers": fresh_broker.bootstrap, "group.id": f"{topic_name}-moving"})
    try:
        [position] = moving.committed([TopicPartition(topic_name, 0)], timeout=TIMEOUT_S)
    finally:
        moving.close()
    assert committer.acked <= position.offset <= committer.attempted, "an acknowledged offset commit was lost"
    settled.check(fresh_broker.bootstrap)
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
    print(f"\n{producer.sent} messages acknowledged exactly once and {committer.acked} offset commits kept through "
          f"{KILLS} SIGKILLs")
