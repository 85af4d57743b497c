"""Produce/consume throughput and end-to-end latency of a local minibroker, measured with confluent-kafka.

Starts a broker on a free port with a temporary data directory, then:
1. produces --messages records of --size bytes to a 1-partition topic (linger.ms=5, batch.size=1000000, acks=all)
   and checks that the high watermark equals the count;
2. consumes them all back from offset 0 with an assigned partition (no consumer group);
3. runs a paced producer (--rate records/s for --latency-seconds, send time in the payload) while a consumer
   reads concurrently, and reports end-to-end latency percentiles.
The broker is stopped at the end, whatever happens.

    python benchmarks/throughput.py                 # 1,000,000 messages
    python benchmarks/throughput.py --messages 100000 --latency-seconds 3
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.brokerproc import BrokerProcess  # noqa: E402  (needs the repository root on the path)

TIMEOUT_S = 60.0
STAMP = struct.Struct(">q")  # perf_counter_ns at send time, at the start of each latency payload


@dataclass
class Throughput:
    phase: str
    messages: int
    payload_bytes: int
    seconds: float

    def row(self) -> str:
        mb_s = self.payload_bytes / self.seconds / 1e6
        return f"{self.phase:<10} {self.messages:>12,} {self.seconds:>9.2f} {mb_s:>10.1f} {self.messages / self.seconds:>12,.0f}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="records for the throughput runs (default 1,000,000)")
    parser.add_argument("--size", type=int, default=100, help="payload bytes per record (default 100)")
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="duration of the paced latency run (default 10)")
    parser.add_argument("--rate", type=int, default=1000, help="records per second in the latency run (default 1000)")
    parser.add_argument("--latency-linger-ms", type=int, default=0, help="linger.ms of the paced producer (default 0)")
    parser.add_argument("-c", dest="settings", action="append", default=[], metavar="KEY=VALUE", help="broker setting")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.size < STAMP.size or args.rate < 1 or args.latency_seconds <= 0:
        parser.error(f"need --messages >= 1, --size >= {STAMP.size}, --rate >= 1 and --latency-seconds > 0")
    return args


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1)], request_timeout=TIMEOUT_S)[topic].result(timeout=TIMEOUT_S)


def new_consumer(bootstrap: str, **config: object) -> Consumer:
    # librdkafka's Python binding requires a group.id; it is never joined (assign only) nor committed to.
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "benchmark",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **config,
        }
    )


def produce_all(bootstrap: str, topic: str, count: int, size: int) -> Throughput:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000, "acks": "all"})
    errors: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            errors.append(str(err))

    payload = bytes(size)
    start = time.perf_counter()
    try:
        for _ in range(count):
            while True:
                try:
                    producer.produce(topic, payload, partition=0, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.005)
            producer.poll(0)
        remaining = producer.flush(TIMEOUT_S)
    finally:
        producer.purge()
        producer.close()
    seconds = time.perf_counter() - start
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")
    return Throughput("produce", count, count * size, seconds)


def high_watermark(bootstrap: str, topic: str) -> int:
    consumer = new_consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S, cached=False)[1]
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, count: int) -> Throughput:
    # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s by default) whenever its local queue holds
    # queued.min.messages; with the default the run measures that pause, not the broker.
    consumer = new_consumer(bootstrap, **{"fetch.queue.backoff.ms": 5})
    received = 0
    payload_bytes = 0
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        start = time.perf_counter()
        deadline = time.monotonic() + TIMEOUT_S
        while received < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=min(10_000, count - received), timeout=0.5):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                received += 1
                payload_bytes += len(msg.value())
        seconds = time.perf_counter() - start
    finally:
        consumer.close()
    if received != count:
        raise RuntimeError(f"consumed {received} of {count} records in {TIMEOUT_S}s")
    return Throughput("consume", count, payload_bytes, seconds)


def measure_latency(bootstrap: str, topic: str, seconds: float, rate: int, size: int, linger_ms: int) -> list[float]:
    """Latencies in milliseconds of a paced producer's records, read by a concurrent consumer."""
    count = int(seconds * rate)
    latencies: list[float] = []
    failure: list[BaseException] = []
    consumer = new_consumer(bootstrap, **{"fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, 0, 0)])

    def read() -> None:
        try:
            deadline = time.monotonic() + seconds + TIMEOUT_S
            while len(latencies) < count and time.monotonic() < deadline:
                msg = consumer.poll(0.1)  # consume(n, timeout) would hold records back until n arrive
                now = time.perf_counter_ns()
                if msg is None:
                    continue
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                latencies.append((now - STAMP.unpack_from(msg.value())[0]) / 1e6)
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    reader = threading.Thread(target=read, name="latency-consumer")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": "all"})
    padding = bytes(size - STAMP.size)
    try:
        reader.start()
        start = time.perf_counter()
        for i in range(count):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            producer.produce(topic, STAMP.pack(time.perf_counter_ns()) + padding, partition=0)
            producer.poll(0)
        if producer.flush(TIMEOUT_S):
            raise RuntimeError("latency producer could not deliver everything")
        reader.join(seconds + TIMEOUT_S)
    finally:
        producer.purge()
        producer.close()
        reader.join(TIMEOUT_S)
        consumer.close()
    if failure:
        raise failure[0]
    if len(latencies) != count:
        raise RuntimeError(f"latency consumer saw {len(latencies)} of {count} records")
    return latencies


def percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="minibroker-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", *args.settings)
        try:
            broker.start()
            print(f"broker on {broker.bootstrap}, {args.messages:,} messages of {args.size} bytes", flush=True)
            create_topic(broker.bootstrap, "throughput")
            produced = produce_all(broker.bootstrap, "throughput", args.messages, args.size)
            watermark = high_watermark(broker.bootstrap, "throughput")
            if watermark != args.messages:
                raise RuntimeError(f"high watermark {watermark}, expected {args.messages}")
            consumed = consume_all(broker.bootstrap, "throughput", args.messages)
            create_topic(broker.bootstrap, "latency")
            latencies = sorted(
                measure_latency(broker.bootstrap, "latency", args.latency_seconds, args.rate, args.size, args.latency_linger_ms)
            )
        finally:
            broker.stop()

    print()
    print(f"{'phase':<10} {'messages':>12} {'seconds':>9} {'MB/s':>10} {'msgs/s':>12}")
    print(produced.row())
    print(consumed.row())
    print(f"high watermark {watermark:,} (= messages produced)")
    print()
    print(f"end-to-end latency, {len(latencies):,} records at {args.rate}/s, linger.ms={args.latency_linger_ms}:")
    print(f"  p50 {percentile(latencies, 0.50):.2f} ms   p99 {percentile(latencies, 0.99):.2f} ms   "
          f"max {latencies[-1]:.2f} ms   mean {statistics.fmean(latencies):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
