"""Pieces shared by the benchmarks: confluent-kafka producer/consumer phases, latency, start-up probing, RSS.

Every function takes a ``bootstrap`` address, so the same clients run against minibroker, another broker or
librdkafka's in-process mock cluster (``MockCluster``).
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TIMEOUT_S = 60.0
STALL_S = 15.0  # a consumer that gets nothing for this long has failed (a broker that cannot serve the data)
STAMP = struct.Struct(">q")  # perf_counter_ns at send time, at the start of each latency payload
PROBE_INTERVAL_S = 0.005
GIVE_UP_S = 20.0
# The throughput producer of every benchmark: big batches, a short linger.
# delivery.report.only.error: the delivery callback runs for failures only. A Python callback per record
# costs the client more than the broker spends on the record, and the high watermark checks the successes.
PRODUCER_SETTINGS = {"linger.ms": 5, "batch.size": 1_000_000, "delivery.report.only.error": True}


@dataclass
class Throughput:
    phase: str
    messages: int
    payload_bytes: int
    seconds: float

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / self.seconds / 1e6

    def row(self) -> str:
        return f"{self.phase:<10} {self.messages:>12,} {self.seconds:>9.2f} {self.mb_per_s:>10.1f} {self.msgs_per_s:>12,.0f}"


class Meter:
    """Started and stopped with a step's clock, so that what it measures covers the timed work only (not a
    client's start-up nor its close); this one measures nothing (compare.py's measures CPU)."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


NO_METER = Meter()


def client_config(bootstrap: str, **config: object) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "log_level": 4, **config}  # log_level 4: no notices


class MockCluster:
    """librdkafka's in-process mock cluster, i.e. this client's ceiling: the same client code against a broker
    that costs nothing. An idle client of this process creates and holds it; the benchmark's clients reach it at
    ``bootstrap`` over loopback TCP like any broker.

    What it lacks (librdkafka's src/rdkafka_mock*.c): CreateTopics (the first Metadata request naming a topic
    makes it); all but the last 5 MiB of record batches of a partition (beyond 5 MiB or 100,000 batches it drops
    the oldest whole batches; rd_kafka_mock_partition_init fixes both, no setting or API changes them); and the
    wake-up of a waiting Fetch when records arrive (it answers an empty Fetch after its whole max wait)."""

    def __init__(self) -> None:
        self._holder = Producer({"test.mock.num.brokers": 1, "log_level": 4})  # 4: not its banner
        brokers = self._holder.list_topics(timeout=TIMEOUT_S).brokers.values()
        self.bootstrap = ",".join(f"{broker.host}:{broker.port}" for broker in brokers)

    def create_topic(self, topic: str) -> None:
        """Made by asking for its metadata (a producer's request allows it), so that no timed step pays for it."""
        error = self._holder.list_topics(topic, timeout=TIMEOUT_S).topics[topic].error
        if error is not None:
            raise KafkaException(error)

    def close(self) -> None:
        self._holder.close()


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout_s: float = TIMEOUT_S) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(min(timeout_s, 300) * 1000)})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)], request_timeout=timeout_s)[topic].result(timeout=timeout_s)


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


def produce_all(
    bootstrap: str, topic: str, count: int, size: int, *, acks: str = "all", phase: str = "produce",
    meter: Meter = NO_METER, **config: object,
) -> Throughput:
    """``count`` records of ``size`` bytes to partition 0, timed from the first produce() to the end of flush();
    ``config`` overrides producer settings."""
    producer = Producer(client_config(bootstrap, **{**PRODUCER_SETTINGS, "acks": acks, **config}))
    errors: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            errors.append(str(err))

    payload = bytes(size)
    produce = producer.produce
    poll = producer.poll
    meter.start()
    start = time.perf_counter()
    try:
        for _ in range(count):
            while True:
                try:
                    produce(topic, payload, partition=0, on_delivery=report)
                    break
                except BufferError:
                    poll(0.005)
            poll(0)
        remaining = producer.flush(TIMEOUT_S)
    finally:
        producer.purge()
        producer.close()
    seconds = time.perf_counter() - start
    meter.stop()
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")
    return Throughput(phase, count, count * size, seconds)


def high_watermark(bootstrap: str, topic: str) -> int:
    consumer = new_consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S, cached=False)[1]
    finally:
        consumer.close()


def client_level_error(msg) -> bool:
    """A non-fatal error event that concerns no partition (say a failed FindCoordinator of the unused group):
    an assign()-only consumer keeps fetching, so the benchmark skips it (partition errors still fail)."""
    return msg.topic() is None and not msg.error().fatal()


def consume_all(
    bootstrap: str, topic: str, count: int, offset: int = 0, phase: str = "consume", meter: Meter = NO_METER,
) -> Throughput:
    """``count`` records of partition 0 from ``offset``, timed from assign() to the last record with the client
    set up: the leader has answered ListOffsets and the group coordinator OffsetFetch (librdkafka finds one for
    any group.id, and a broker may first make its offsets topic), so the steps measure fetching."""
    consumer = new_consumer(bootstrap, **{
        # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s by default) whenever its local queue holds
        # queued.min.messages; with the default the run measures that pause, not the broker.
        "fetch.queue.backoff.ms": 5,
        # An offset the broker no longer holds fails the step (the default would jump to the end and stall).
        "auto.offset.reset": "error",
    })
    received = 0
    payload_bytes = 0
    try:
        consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S, cached=False)
        consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT_S)
        consumer.assign([TopicPartition(topic, 0, offset)])
        meter.start()
        start = time.perf_counter()
        deadline = time.monotonic() + TIMEOUT_S
        last_progress = time.monotonic()
        while received < count and time.monotonic() < deadline:
            if time.monotonic() - last_progress > STALL_S:
                raise RuntimeError(f"no record for {STALL_S:g} s after {received} of {count}")
            before = received
            for msg in consumer.consume(num_messages=min(10_000, count - received), timeout=0.5):
                if msg.error() is not None:
                    if client_level_error(msg):
                        continue
                    raise KafkaException(msg.error())
                received += 1
                payload_bytes += len(msg.value())
            if received > before:
                last_progress = time.monotonic()
        seconds = time.perf_counter() - start
        meter.stop()
    finally:
        consumer.close()
    if received != count:
        raise RuntimeError(f"consumed {received} of {count} records in {TIMEOUT_S}s")
    return Throughput(phase, count, payload_bytes, seconds)


def measure_latency(
    bootstrap: str,
    topic: str,
    seconds: float,
    rate: int,
    size: int,
    linger_ms: int,
    consumer_config: dict[str, object] | None = None,
) -> list[float]:
    """Latencies in milliseconds of a paced producer's records (acks=all), read by a concurrent consumer."""
    count = int(seconds * rate)
    latencies: list[float] = []
    failure: list[BaseException] = []
    consumer = new_consumer(bootstrap, **(consumer_config or {}))
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
                    if client_level_error(msg):
                        continue
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


def latency_summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50": percentile(ordered, 0.50),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


# The shape of most Kafka integration tests (issue 38): a topic of 3 partitions, 10 keyed records produced, read back
# by a new consumer group that commits; each test with clients of its own, as a test suite makes them.
SHORT_TEST_PARTITIONS = 3
SHORT_TEST_RECORDS = 10
GROUP_PROTOCOLS = {"classic": {"group.protocol": "classic"}, "consumer": {"group.protocol": "consumer"}}
SHORT_TEST_MARKS = ("topic created", "produced", "subscribed", "first record", "all read", "committed", "closed")


def short_test(bootstrap: str, name: str, protocol: str) -> dict[str, float]:
    """One short test on topic and group ``name``, with default client settings: seconds from its start to each of
    ``SHORT_TEST_MARKS``."""
    started = time.perf_counter()
    marks: dict[str, float] = {}

    def mark(what: str) -> None:
        marks[what] = time.perf_counter() - started

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=SHORT_TEST_PARTITIONS)])[name].result(TIMEOUT_S)
    mark("topic created")
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(SHORT_TEST_RECORDS):
        producer.produce(name, key=b"key-%d" % i, value=b"value-%d" % i)
    if producer.flush(TIMEOUT_S) != 0:
        raise TimeoutError(f"{name}: records not delivered in {TIMEOUT_S} s")
    mark("produced")
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
        **GROUP_PROTOCOLS[protocol],
    })
    consumer.subscribe([name])
    mark("subscribed")
    read = 0
    deadline = time.monotonic() + TIMEOUT_S
    while read < SHORT_TEST_RECORDS:
        message = consumer.poll(0.1)
        if message is not None:
            if message.error() is not None:
                raise KafkaException(message.error())
            read += 1
            if read == 1:
                mark("first record")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: {read} of {SHORT_TEST_RECORDS} records in {TIMEOUT_S} s")
    mark("all read")
    consumer.commit(asynchronous=False)
    mark("committed")
    consumer.close()
    mark("closed")
    return marks


def run_transactions(
    bootstrap: str, topic: str, transactions: int, per_transaction: int, size: int, meter: Meter = NO_METER,
) -> float:
    """Seconds for ``transactions`` committed transactions of ``per_transaction`` records each (after init)."""
    producer = Producer(client_config(bootstrap, **{"transactional.id": f"benchmark-{os.getpid()}-{time.monotonic_ns()}"}))
    payload = bytes(size)
    try:
        producer.init_transactions(TIMEOUT_S)
        meter.start()
        start = time.perf_counter()
        for _ in range(transactions):
            producer.begin_transaction()
            for _ in range(per_transaction):
                producer.produce(topic, payload, partition=0)
            producer.commit_transaction(TIMEOUT_S)
        seconds = time.perf_counter() - start
        meter.stop()
        return seconds
    finally:
        producer.purge()
        producer.close()


# ---- processes: ports, start-up probing, memory ----


def free_port(count: int = 1) -> int:
    """A free port, and the ``count`` - 1 after it free too (a cluster's node k binds the port + k - 1)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if all(_bindable(port + offset) for offset in range(1, count)):
            return port


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for_api_versions(address: str, started: float, proc: subprocess.Popen | None = None) -> float:
    """Seconds from ``started`` (a perf_counter value) until ``address`` answers ApiVersions, probing every 5 ms."""
    from minibroker.commands.probe import ProbeError, probe

    while time.perf_counter() - started < GIVE_UP_S:
        try:
            probe(address, 0.5)
            return time.perf_counter() - started
        except ProbeError:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"broker exited with {proc.returncode}") from None
            time.sleep(PROBE_INTERVAL_S)
    raise RuntimeError(f"no ApiVersions answer from {address} within {GIVE_UP_S}s")


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def group_pids(pid: int, whole_group: bool) -> list[int]:
    """``pid`` alone, or every live process of its process group (a broker forked by a launcher script)."""
    if not whole_group:
        return [pid]
    pgid = os.getpgid(pid)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    found.append(int(entry))
            except ProcessLookupError:
                continue
    return found


def rss_mb(pid: int, whole_group: bool = False) -> float:
    """Resident set size now (VmRSS), summed over the group if asked, in MB (10^6 bytes)."""
    return sum(_status_kb(p, "VmRSS") for p in group_pids(pid, whole_group)) * 1024 / 1e6


def cpu_seconds(pid: int, whole_group: bool = False) -> float:
    """CPU time used so far (of the group if asked): the scheduler's nanosecond run time of every live thread
    (/proc/PID/task/TID/schedstat), else user + system clock ticks (/proc/PID/stat, 10 ms each), which need
    thousands of requests to measure one."""
    total = 0.0
    for p in group_pids(pid, whole_group):
        try:
            total += _run_time_ns(p) / 1e9
        except OSError:
            total += _ticks(p) / os.sysconf("SC_CLK_TCK")
    return total


def _run_time_ns(pid: int) -> int:
    """Sum of the threads' run times; raises OSError where the kernel keeps no schedstat."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as schedstat:
                total += int(schedstat.read().split()[0])
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
    return total


def _ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0


def peak_rss_mb(pid: int, whole_group: bool = False) -> float:
    """Peak resident set size so far (VmHWM), summed over the group if asked, in MB."""
    return sum(_status_kb(p, "VmHWM") for p in group_pids(pid, whole_group)) * 1024 / 1e6
