"""Share-group (KIP-932) consumption throughput of a local minibroker, with confluent-kafka's ShareConsumer, beside the
classic Consumer on the same data in the same run.

Starts a broker on a free port with a temporary data directory, then:
1. produces --messages records of --size bytes to a 1-partition topic, in log batches of 500 records, and checks the
   high watermark;
2. reads them all with the classic Consumer (assign, no group): the reference (once untimed first: a broker's first
   read of a log is the slow one);
3. reads them all with one ShareConsumer (implicit acknowledgement), then with two ShareConsumers of another group
   together (one thread each), each group set to share.auto.offset.reset=earliest through the admin client; every
   record must come exactly once.
Reports records/s of each and the broker's CPU seconds for each phase. The broker is stopped at the end, whatever
happens.

    python benchmarks/share.py                      # 200,000 records of 100 bytes
    python benchmarks/share.py --messages 50000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import KafkaException, ShareConsumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType  # noqa: E402

from benchmarks.common import (  # noqa: E402  (needs the repository root on the path)
    STALL_S,
    TIMEOUT_S,
    client_level_error,
    cpu_seconds,
    create_topic,
    high_watermark,
    new_consumer,
    produce_all,
)
from tests.brokerproc import BrokerProcess  # noqa: E402

TOPIC = "share-bench"
# librdkafka's share consumer asks for max.poll.records per ShareFetch (500 by default) and sends the previous poll's
# implicit acknowledgements with the next one, so a consumer costs a round trip per max.poll.records records. The
# broker lets a partition have 2000 records in flight (group.share.partition.max.record.locks), so two members can
# hold records at once only if each asks for half. (fetch.queue.backoff.ms, the classic consumer's pause that
# throughput.py sets, is refused by the share consumer: it reads nothing ahead of poll().)
MAX_POLL_RECORDS = 1000
# Records per log batch. A ShareFetch takes whole log batches (batch-optimized acquisition), so the producer's usual
# batches of up to 10,000 records would put one member over the lock limit and starve the other.
BATCH_RECORDS = 500
# Members join in the background, but librdkafka's share consumer fetches only from poll(): the members are given this
# long to all be in the group with the partition assigned before any polls, or the first would read everything alone.
JOIN_WAIT_S = 1.0


@dataclass
class Read:
    name: str
    records: int
    seconds: float
    broker_cpu_s: float

    @property
    def per_s(self) -> float:
        return self.records / self.seconds


def set_earliest(bootstrap: str, group: str) -> None:
    """share.auto.offset.reset=earliest for ``group``, as an application sets a group config."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT_S)


def share_read(
    bootstrap: str, group: str, count: int, members: int, broker_pid: int, max_poll_records: int = MAX_POLL_RECORDS,
) -> Read:
    """``members`` ShareConsumers of ``group`` (one thread each) read until ``count`` records came between them;
    timed from the first record any of them got (the group join before it is not throughput) to the last. Raises
    if a record came twice or one is missing."""
    set_earliest(bootstrap, group)
    consumers = [
        ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "max.poll.records": max_poll_records})
        for _ in range(members)
    ]
    offsets: list[list[int]] = [[] for _ in consumers]
    lock = threading.Lock()
    received = 0
    first_at: float | None = None
    failure: list[BaseException] = []

    def read(consumer: ShareConsumer, mine: list[int]) -> None:
        nonlocal received, first_at
        try:
            deadline = time.monotonic() + TIMEOUT_S
            last_progress = time.monotonic()
            while received < count and time.monotonic() < deadline and not failure:
                if time.monotonic() - last_progress > STALL_S:
                    raise RuntimeError(f"no record for {STALL_S:g} s after {received} of {count}")
                got = 0
                for msg in consumer.poll(0.1):
                    if msg.error() is not None:
                        raise KafkaException(msg.error())
                    mine.append(msg.offset())
                    got += 1
                if got:
                    last_progress = time.monotonic()
                    with lock:
                        if first_at is None:
                            first_at = time.perf_counter()
                        received += got
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    threads = [threading.Thread(target=read, args=pair, name="share-reader") for pair in zip(consumers, offsets)]
    cpu_before = cpu_seconds(broker_pid)
    try:
        for consumer in consumers:
            consumer.subscribe([TOPIC])
        if members > 1:
            time.sleep(JOIN_WAIT_S)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT_S + STALL_S)
        ended = time.perf_counter()
        cpu = cpu_seconds(broker_pid) - cpu_before
    finally:
        for consumer in consumers:
            consumer.close()
    if failure:
        raise failure[0]
    everything = sorted(offset for mine in offsets for offset in mine)
    if everything != list(range(count)):
        raise RuntimeError(f"{len(everything)} records read, {len(set(everything))} distinct, of {count}")
    name = f"share x{members}"
    if members > 1:
        name += " (" + " + ".join(f"{len(mine):,}" for mine in offsets) + ")"
    assert first_at is not None
    return Read(name, count, ended - first_at, cpu)


def classic_read(bootstrap: str, count: int, broker_pid: int) -> Read:
    """The classic Consumer (assign from offset 0, no group) reading the same records, timed as the share readers are:
    from its first record to its last."""
    consumer = new_consumer(bootstrap, **{"fetch.queue.backoff.ms": 5})  # see throughput.py
    received = 0
    first_at: float | None = None
    cpu_before = cpu_seconds(broker_pid)
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + TIMEOUT_S
        while received < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=min(10_000, count - received), timeout=0.5):
                if msg.error() is not None:
                    if client_level_error(msg):
                        continue
                    raise KafkaException(msg.error())
                if first_at is None:
                    first_at = time.perf_counter()
                received += 1
        ended = time.perf_counter()
        cpu = cpu_seconds(broker_pid) - cpu_before
    finally:
        consumer.close()
    if received != count or first_at is None:
        raise RuntimeError(f"consumed {received} of {count} records in {TIMEOUT_S}s")
    return Read("classic", count, ended - first_at, cpu)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000, help="records to produce and read (default 200,000)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes per record (default 100)")
    parser.add_argument("--runs", type=int, default=1, help="reads of each kind, medians reported (default 1)")
    parser.add_argument("--max-poll-records", type=int, default=MAX_POLL_RECORDS,
                        help=f"the share consumers' max.poll.records (default {MAX_POLL_RECORDS})")
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="broker setting")
    args = parser.parse_args(argv)
    if min(args.messages, args.size, args.runs, args.max_poll_records) < 1:
        parser.error("need --messages, --size, --runs and --max-poll-records >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reads: dict[str, list[Read]] = {}
    with tempfile.TemporaryDirectory(prefix="minibroker-share-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", *args.settings)
        try:
            broker.start()
            assert broker.proc is not None
            pid = broker.proc.pid
            print(f"broker on {broker.bootstrap} (pid {pid}), {args.messages:,} records of {args.size} bytes", flush=True)
            create_topic(broker.bootstrap, TOPIC)
            produce_all(broker.bootstrap, TOPIC, args.messages, args.size, **{"batch.num.messages": BATCH_RECORDS})
            watermark = high_watermark(broker.bootstrap, TOPIC)
            if watermark != args.messages:
                raise RuntimeError(f"high watermark {watermark}, expected {args.messages}")
            classic_read(broker.bootstrap, args.messages, pid)  # untimed: a broker's first read of a log is slower
            for run in range(args.runs):
                for read in (
                    classic_read(broker.bootstrap, args.messages, pid),
                    share_read(broker.bootstrap, f"one-{run}", args.messages, 1, pid, args.max_poll_records),
                    share_read(broker.bootstrap, f"two-{run}", args.messages, 2, pid, args.max_poll_records),
                ):
                    print(f"  run {run + 1}: {read.name:<28} {read.per_s:>12,.0f} records/s "
                          f"(broker CPU {read.broker_cpu_s:.2f} s)", flush=True)
                    reads.setdefault(read.name.split(" (")[0], []).append(read)
        finally:
            broker.stop()

    print()
    print(f"{'reader':<12} {'records/s (median)':>19} {'lowest-highest':>22} {'broker CPU s':>13}")
    for name, runs in reads.items():
        rates = sorted(r.per_s for r in runs)
        cpu = statistics.median(r.broker_cpu_s for r in runs)
        print(f"{name:<12} {statistics.median(rates):>19,.0f} {f'{rates[0]:,.0f}-{rates[-1]:,.0f}':>22} {cpu:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
