"""The PySpark data source against a real minibroker: the example streaming pipeline end to end and across a
restart from its checkpoint, batch reads and writes, read limits, read_committed, and the error messages.

One local[2] Spark session serves the whole module (starting one dominates the run time).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test,spark]'")

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import minibroker.spark  # noqa: E402
from minibroker.spark.session import JavaNotFoundError, require_java  # noqa: E402
from tests.brokerproc import BrokerProcess  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "spark_pipeline.py"
PARTITIONS = 2
QUERY_TIMEOUT_S = 180
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("spark") / "data", f"num.partitions={PARTITIONS}")
    try:
        yield proc.start()
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = minibroker.spark.local_session("local[2]", app_name="minibroker-tests")
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def topic() -> str:
    return f"spark-{uuid.uuid4().hex[:10]}"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    keys: list[bytes | None] | None = None,
    partitions: list[int] | None = None,
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        extra: dict[str, Any] = {} if partitions is None else {"partition": partitions[i]}
        producer.produce(topic, value=value, key=None if keys is None else keys[i], **extra)
    assert producer.flush(TIMEOUT_S) == 0


def read_topic(
    bootstrap: str, topic: str, start: dict[int, int] | None = None
) -> tuple[list[tuple[str, Any]], dict[int, int]]:
    """Records (key, parsed JSON value) from ``start`` (default: the beginning) to the end, and the end offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-test-reader", "enable.partition.eof": True})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, (start or {}).get(p, 0)) for p in partitions])
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)[1] for p in partitions}
        records: list[tuple[str, Any]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT_S
        while at_end != set(partitions) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            records.append((message.key().decode(), json.loads(message.value())))
        assert at_end == set(partitions), f"did not reach the end of {topic}"
        return records, ends
    finally:
        consumer.close()


def headers(row: Any) -> list[tuple[str, bytes]] | None:
    return None if row.headers is None else [(h.key, bytes(h.value)) for h in row.headers]


def event(user: str, amount: float, ts: str) -> bytes:
    return json.dumps({"user": user, "amount": amount, "ts": ts}).encode()


def total(user: str, start: str, end: str, events: int, amount: float) -> tuple[str, dict[str, Any]]:
    return f"{user}@{start}", {
        "user": user,
        "window_start": start,
        "window_end": end,
        "events": events,
        "amount": amount,
    }


def run_available_now(
    example: ModuleType, spark: SparkSession, bootstrap: str, checkpoint: Path, source: str, sink: str
) -> None:
    query = example.start_pipeline(
        spark, bootstrap, str(checkpoint), input_topic=source, output_topic=sink, available_now=True
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
        assert query.exception() is None
    finally:
        query.stop()


def test_example_pipeline_end_to_end_and_restart_from_checkpoint(
    spark: SparkSession, kafka: BrokerProcess, tmp_path: Path
) -> None:
    example = load_example()
    source, sink = f"events-{uuid.uuid4().hex[:8]}", f"totals-{uuid.uuid4().hex[:8]}"
    # One-minute windows, one minute of allowed lateness: a window is written once the watermark passes its end.
    first = [
        ("ada", event("ada", 10, "2024-05-01T12:00:05Z")),
        ("bob", event("bob", 7, "2024-05-01T12:00:10Z")),
        ("ada", event("ada", 5, "2024-05-01T12:00:40Z")),
        ("ada", event("ada", 1.5, "2024-05-01T12:01:30Z")),
        ("cy", event("cy", 2, "2024-05-01T12:03:20Z")),  # watermark -> 12:02:20, the 12:03 window stays open
        ("bad", b"not json"),
        ("bad", json.dumps({"user": "no-time", "amount": 1}).encode()),
    ]
    produce(kafka.bootstrap, source, [v for _, v in first], [k.encode() for k, _ in first])

    run_available_now(example, spark, kafka.bootstrap, tmp_path / "checkpoint", source, sink)

    records, ends = read_topic(kafka.bootstrap, sink)
    assert sorted(records) == sorted(
        [
            total("ada", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z", 2, 15.0),
            total("bob", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z", 1, 7.0),
            total("ada", "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z", 1, 1.5),
        ]
    )

    second = [
        ("cy", event("cy", 3, "2024-05-01T12:03:50Z")),  # joins the window the first run left open
        ("bob", event("bob", 4, "2024-05-01T12:02:30Z")),
        ("ada", event("ada", 100, "2024-05-01T12:00:50Z")),  # behind the watermark: dropped
        ("dan", event("dan", 1, "2024-05-01T12:05:30Z")),  # watermark -> 12:04:30, closes 12:02 and 12:03
    ]
    produce(kafka.bootstrap, source, [v for _, v in second], [k.encode() for k, _ in second])

    run_available_now(example, spark, kafka.bootstrap, tmp_path / "checkpoint", source, sink)

    new_records, _ = read_topic(kafka.bootstrap, sink, start=ends)
    assert sorted(new_records) == sorted(
        [
            total("bob", "2024-05-01T12:02:00Z", "2024-05-01T12:03:00Z", 1, 4.0),
            total("cy", "2024-05-01T12:03:00Z", "2024-05-01T12:04:00Z", 2, 5.0),
        ]
    )


def test_batch_write_then_read_with_headers_and_offset_ranges(
    spark: SparkSession, kafka: BrokerProcess, topic: str
) -> None:
    rows = [
        (
            f"k{i}",
            f"v{i}".encode(),
            topic,
            i % PARTITIONS,
            [("source", b"spark"), ("n", str(i).encode())] if i % 3 else None,
        )
        for i in range(8)
    ]
    frame = spark.createDataFrame(
        rows, "key string, value binary, topic string, partition int, headers array<struct<key:string,value:binary>>"
    )
    before_ms = int(time.time() * 1000)
    frame.write.format("minibroker").option("kafka.bootstrap.servers", kafka.bootstrap).mode("append").save()

    read = (
        spark.read.format("minibroker")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    assert read.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    got = read.collect()
    # Two Spark tasks write concurrently, so only each partition's offsets (0..3), not their order, are certain.
    assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in range(PARTITIONS) for o in range(4)]
    assert sorted((r.partition, bytes(r.key), bytes(r.value), headers(r)) for r in got) == sorted(
        (p, k.encode(), v, h) for k, v, _, p, h in rows
    )
    assert {r.topic for r in got} == {topic} and {r.timestampType for r in got} == {0}
    assert all(before_ms - 60_000 <= r.timestamp.timestamp() * 1000 <= time.time() * 1000 + 60_000 for r in got)

    ranged = (
        spark.read.format("minibroker")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {"0": 1, "1": -2}}))
        .option("endingOffsets", json.dumps({topic: {"0": 3, "1": 1}}))
        .load()
    )
    assert sorted((r.partition, r.offset) for r in ranged.collect()) == [(0, 1), (0, 2), (1, 0)]
    assert "headers" not in ranged.columns


def test_batch_read_between_timestamps(spark: SparkSession, kafka: BrokerProcess, topic: str) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for partition in range(PARTITIONS):
        for second in range(1, 7):
            producer.produce(
                topic, value=f"{partition}@{second}".encode(), partition=partition, timestamp=second * 1000
            )
    assert producer.flush(TIMEOUT_S) == 0
    rows = (
        spark.read.format("minibroker")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingTimestamp", "3500")
        .option("endingOffsetsByTimestamp", json.dumps({topic: {"0": 5500, "1": 9000}}))
        .load()
        .collect()
    )
    assert sorted(bytes(r.value).decode() for r in rows) == ["0@4", "0@5", "1@4", "1@5", "1@6"]
    assert {r.timestamp.timestamp() for r in rows if bytes(r.value) == b"0@4"} == {4.0}


def test_stream_read_honours_max_offsets_per_trigger(
    spark: SparkSession, kafka: BrokerProcess, topic: str, tmp_path: Path
) -> None:
    values = [f"r{i}".encode() for i in range(10)]
    produce(kafka.bootstrap, topic, values, partitions=[i % PARTITIONS for i in range(10)])
    name = f"limited_{uuid.uuid4().hex[:8]}"
    query = (
        spark.readStream.format("minibroker")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "4")
        .load()
        .selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S)
        batch_sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    assert batch_sizes == [4, 4, 2]
    assert sorted(r.value for r in spark.table(name).collect()) == sorted(v.decode() for v in values)


def test_batch_read_returns_only_committed_transactions(spark: SparkSession, kafka: BrokerProcess, topic: str) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(TIMEOUT_S)

    def transaction(values: list[bytes], commit: bool) -> None:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        producer.flush(TIMEOUT_S)  # an abort drops records still queued in the client: make them reach the log
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.abort_transaction(TIMEOUT_S)

    transaction([b"c1", b"c2"], commit=True)
    transaction([b"a1", b"a2"], commit=False)
    transaction([b"c3"], commit=True)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(TIMEOUT_S)
    try:
        reader = (
            spark.read.format("minibroker")
            .option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic)
        )
        assert [bytes(r.value) for r in reader.load().orderBy("offset").collect()] == [b"c1", b"c2", b"c3"]
        uncommitted = reader.option("kafka.isolation.level", "read_uncommitted").load().orderBy("offset").collect()
        assert [bytes(r.value) for r in uncommitted] == [b"c1", b"c2", b"a1", b"a2", b"c3", b"open"]
        # A range that ends on an aborted record: it must end there, not wait for a record that never comes.
        after_a2 = json.dumps({topic: {"0": uncommitted[3].offset + 1, "1": -1}})
        committed_part = (
            spark.read.format("minibroker")
            .option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic)
            .option("endingOffsets", after_a2)
            .load()
            .collect()
        )
        assert sorted(bytes(r.value) for r in committed_part) == [b"c1", b"c2"]
    finally:
        producer.abort_transaction(TIMEOUT_S)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_errors_name_the_topic_and_the_unreachable_bootstrap(
    spark: SparkSession, kafka: BrokerProcess, topic: str
) -> None:
    with pytest.raises(Exception, match=f"topic '{topic}' does not exist on {kafka.bootstrap}"):
        spark.read.format("minibroker").option("kafka.bootstrap.servers", kafka.bootstrap).option(
            "subscribe", topic
        ).load().collect()

    nowhere = f"127.0.0.1:{free_port()}"
    with pytest.raises(Exception, match=f"Kafka at {nowhere} did not answer within 3s"):
        (
            spark.read.format("minibroker")
            .option("kafka.bootstrap.servers", nowhere)
            .option("subscribe", topic)
            .option("metadataTimeoutMs", "3000")
            .load()
            .collect()
        )
    frame = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match=f"Kafka at {nowhere} did not answer within 3s"):
        (
            frame.write.format("kafka-python-source")
            .option("kafka.bootstrap.servers", nowhere)
            .option("topic", topic)
            .option("metadataTimeoutMs", "3000")
            .mode("append")
            .save()
        )
    with pytest.raises(Exception, match="'subscribe' is required"):
        spark.read.format("minibroker").option("kafka.bootstrap.servers", kafka.bootstrap).load().collect()


def test_python_workers_run_the_drivers_interpreter(spark: SparkSession) -> None:
    assert spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect() == [sys.executable]


def test_missing_or_old_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=r"Spark needs Java 17\+: no 'java' on PATH and JAVA_HOME is not set"):
        require_java()
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    java.chmod(0o755)
    with pytest.raises(JavaNotFoundError, match=r"Spark needs Java 17\+, .*java is: openjdk version \"11.0.2\""):
        require_java()
