"""kafka-python 2.0.2 with ``api_version`` pinned to (0, 10) and (0, 9) speaks message formats 1 and 0 (Produce v2 and
v1, Fetch v2 and v1) to a broker emulating Kafka 2.8: what it writes reads back the same with a current client
(confluent-kafka), and what a current client writes reads back with it, compressed (gzip, snappy, lz4) and not.

kafka-python 2.0.2 conflicts with the kafka-python 3.x of the test environment, so it is installed from PyPI into a
directory of its own (with ``xxhash``, which it needs for magic-0 lz4) and run in a subprocess with that directory
first on its path; the tests skip when PyPI cannot be reached.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, KafkaException, Producer, TopicPartition
from minibroker.protocol.compression import GZIP, LZ4, NONE, ZSTD
from minibroker.protocol.frames import decode_response
from minibroker.protocol.message_sets import OutMessage, build_message_set, read_messages
from minibroker.protocol.records import CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE, decode_all

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, Deadline, RawConnection, confluent_create_topic, stored_batches

PINS = [pytest.param((0, 10), id="magic1"), pytest.param((0, 9), id="magic0")]
CODECS = [pytest.param(None, id="none"), *(pytest.param(codec, id=codec) for codec in ("gzip", "snappy", "lz4"))]
COUNT = 200
PRODUCE, FETCH, LIST_OFFSETS, API_VERSIONS = 0, 1, 2, 18
T0 = 1_700_000_000_000

# Runs under kafka-python 2.0.2: produce or consume one partition, as JSON in and out.
CLIENT = r'''
import json, sys, time
import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
assert kafka.__version__ == "2.0.2", kafka.__version__
job = json.loads(sys.argv[1])
api = tuple(job["api_version"])
hexed = lambda data: None if data is None else data.hex()
if job["action"] == "produce":
    producer = KafkaProducer(bootstrap_servers=job["bootstrap"], api_version=api, acks="all",
                             compression_type=job["compression"], linger_ms=20, request_timeout_ms=30000)
    futures = [producer.send(job["topic"], partition=0, key=None if key is None else bytes.fromhex(key),
                             value=bytes.fromhex(value), timestamp_ms=timestamp)
               for key, value, timestamp in job["messages"]]
    producer.flush(30)
    print(json.dumps([future.get(timeout=30).offset for future in futures]))
    producer.close()
else:
    group = job.get("group")
    consumer = KafkaConsumer(bootstrap_servers=job["bootstrap"], api_version=api, enable_auto_commit=False,
                             fetch_max_wait_ms=100, max_partition_fetch_bytes=job.get("max_bytes", 1048576),
                             group_id=group, auto_offset_reset="earliest")
    partition = TopicPartition(job["topic"], 0)
    if group is None:
        consumer.assign([partition])
        consumer.seek(partition, 0)
    else:
        consumer.subscribe([job["topic"]])
    got, deadline = [], time.monotonic() + 30
    while len(got) < job["count"] and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [[r.offset, r.timestamp, r.timestamp_type, hexed(r.key), hexed(r.value), r.headers] for r in records]
    if group is not None:
        consumer.commit()
        got.append(consumer.committed(partition))
    print(json.dumps(got))
    consumer.close()
'''


@pytest.fixture(scope="session")
def kafka_python_202(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("kafka-python-2.0.2")
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", str(target),
             "kafka-python==2.0.2", "xxhash"],
            check=True, capture_output=True, timeout=300,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        output = getattr(exc, "stderr", b"") or b""
        pytest.skip(f"kafka-python 2.0.2 could not be installed from PyPI: {output.decode(errors='replace')[-300:]}")
    return target


@pytest.fixture(scope="module")
def old_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker emulating Kafka 2.8, which served Produce v0-8, Fetch v0-12 and ListOffsets v0-6."""
    proc = BrokerProcess(tmp_path_factory.mktemp("kafka-2.8") / "data", "kafka.version=2.8").start()
    try:
        ranges = advertised(proc.bootstrap)
        assert {key: ranges[key][0] for key in (PRODUCE, FETCH, LIST_OFFSETS)} == {PRODUCE: 0, FETCH: 0, LIST_OFFSETS: 0}
        yield proc
    finally:
        proc.stop()


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    """{api_key: (min, max)} from ApiVersions v3."""
    body = {"client_software_name": "raw-test", "client_software_version": "1"}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(API_VERSIONS, 3, conn.request(API_VERSIONS, 3, body))
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def run_202(target: Path, job: dict[str, Any]) -> Any:
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, json.dumps(job)], capture_output=True, text=True, timeout=TIMEOUT_S * 3,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def messages(count: int = COUNT) -> list[tuple[bytes | None, bytes, int]]:
    """Keys (every third null), values of varied sizes, rising timestamps."""
    return [
        (None if i % 3 == 0 else b"key-%d" % i, (b"value-%d-" % i) * (1 + i % 7), T0 + i) for i in range(count)
    ]


def confluent_read(bootstrap: str, topic: str, count: int) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
    """(offset, timestamp type, timestamp, key, value) of the first ``count`` records of partition 0."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"assign-only-{time.monotonic_ns()}", "enable.auto.commit": False,
        "socket.timeout.ms": TIMEOUT_MS,
    })
    got: list[tuple[int, int, int, bytes | None, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = Deadline()
        while len(got) < count and deadline.left():
            for msg in consumer.consume(num_messages=count - len(got), timeout=min(0.5, deadline.left())):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                kind, timestamp = msg.timestamp()
                got.append((msg.offset(), kind, timestamp, msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("pin", PINS)
def test_what_kafka_python_202_writes_reads_back_with_a_current_client(
    kafka_python_202: Path, old_broker: BrokerProcess, topic_name: str, pin: tuple[int, int], codec: str | None,
) -> None:
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    sent = messages()
    job = {"action": "produce", "bootstrap": old_broker.bootstrap, "topic": topic_name, "api_version": pin,
           "compression": codec, "messages": [[None if k is None else k.hex(), v.hex(), t] for k, v, t in sent]}
    assert run_202(kafka_python_202, job) == list(range(COUNT))
    got = confluent_read(old_broker.bootstrap, topic_name, COUNT)
    assert [(offset, key, value) for offset, _, _, key, value in got] == [(i, k, v) for i, (k, v, _) in enumerate(sent)]
    # magic 1 carries the producer's CreateTime; magic 0 has no timestamp, stored as Kafka converts it (-1)
    expected = [t for _, _, t in sent] if pin == (0, 10) else [-1] * COUNT
    assert [timestamp for _, _, timestamp, _, _ in got] == expected
    assert {kind for _, kind, _, _, _ in got} == {TIMESTAMP_CREATE_TIME}
    # and kafka-python 2.0.2 reads its own records back
    back = run_202(kafka_python_202, {"action": "consume", "bootstrap": old_broker.bootstrap, "topic": topic_name,
                                      "api_version": pin, "count": COUNT})
    assert [(o, k, v) for o, _, _, k, v, _ in back] == [(i, k and k.hex(), v.hex()) for i, (k, v, _) in enumerate(sent)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("pin", PINS)
def test_what_a_current_client_writes_reads_back_with_kafka_python_202(
    kafka_python_202: Path, old_broker: BrokerProcess, topic_name: str, pin: tuple[int, int], codec: str | None,
) -> None:
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    sent = messages()
    settings = {"compression.type": codec} if codec else {}
    produce_with_timestamps(old_broker.bootstrap, topic_name, sent, settings)
    got = run_202(kafka_python_202, {"action": "consume", "bootstrap": old_broker.bootstrap, "topic": topic_name,
                                     "api_version": pin, "count": COUNT})
    assert [(o, k, v) for o, _, _, k, v, _ in got] == [(i, k and k.hex(), v.hex()) for i, (k, v, _) in enumerate(sent)]
    assert all(headers == [] for *_, headers in got)  # the old formats have none
    if pin == (0, 10):
        assert [(t, kind) for _, t, kind, *_ in got] == [(t, 0) for _, _, t in sent]  # CreateTime
    else:
        assert {(t, kind) for _, t, kind, *_ in got} == {(None, None)}  # magic 0: no timestamps


def produce_with_timestamps(bootstrap: str, topic: str, sent: list[tuple[bytes | None, bytes, int]],
                            settings: dict[str, str]) -> None:
    """Produce to partition 0 with a current client, each record with its timestamp and a header (headers do not
    exist in the old formats: they are dropped on the way out)."""
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS, "linger.ms": 20, **settings})
    errors: list[str] = []
    for key, value, timestamp in sent:
        producer.produce(topic, key=key, value=value, partition=0, timestamp=timestamp,
                         headers=[("header", b"dropped for old formats")],
                         on_delivery=lambda err, msg: errors.append(str(err)) if err else None)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    assert not errors, errors[:3]


def test_small_fetches_get_whole_messages_and_make_progress(
    kafka_python_202: Path, old_broker: BrokerProcess, topic_name: str,
) -> None:
    """A max_partition_fetch_bytes far below what was written: Kafka's down-conversion cuts the last message short,
    which the old client drops and fetches again."""
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    sent = messages()
    produce_with_timestamps(old_broker.bootstrap, topic_name, sent, {"batch.num.messages": "20"})
    got = run_202(kafka_python_202, {"action": "consume", "bootstrap": old_broker.bootstrap, "topic": topic_name,
                                     "api_version": (0, 10), "count": COUNT, "max_bytes": 700})
    assert [o for o, *_ in got] == list(range(COUNT))


@pytest.mark.parametrize("pin", PINS)
def test_a_consumer_group_of_kafka_python_202(
    kafka_python_202: Path, old_broker: BrokerProcess, topic_name: str, pin: tuple[int, int],
) -> None:
    """Its group (JoinGroup v0, SyncGroup v0, OffsetFetch v1 and OffsetCommit v2, ListOffsets v0 for the reset to
    the earliest offset) reads what it wrote and commits where it stopped."""
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    sent = messages(30)
    job = {"action": "produce", "bootstrap": old_broker.bootstrap, "topic": topic_name, "api_version": pin,
           "compression": "gzip", "messages": [[None if k is None else k.hex(), v.hex(), t] for k, v, t in sent]}
    run_202(kafka_python_202, job)
    *got, committed = run_202(kafka_python_202, {"action": "consume", "bootstrap": old_broker.bootstrap,
                                                 "topic": topic_name, "api_version": pin, "count": 30,
                                                 "group": f"group-{topic_name}"})
    assert [v for *_, v, _ in got] == [v.hex() for _, v, _ in sent]
    assert committed == 30


@pytest.mark.parametrize("pin", PINS)
def test_stored_as_one_v2_batch_per_request_in_the_topics_codec(
    kafka_python_202: Path, old_broker: BrokerProcess, topic_name: str, pin: tuple[int, int],
) -> None:
    """A message set becomes one V2 batch (Kafka's LogValidator), in the topic's compression.type when it sets one;
    a zstd topic takes the old formats too (Kafka converts to the topic's codec whatever the request version)."""
    for name, codec, stored in ((topic_name, "lz4", LZ4), (f"{topic_name}-zstd", "zstd", ZSTD)):
        confluent_create_topic(old_broker.bootstrap, name, partitions=1, config={"compression.type": codec})
        sent = messages(20)
        job = {"action": "produce", "bootstrap": old_broker.bootstrap, "topic": name, "api_version": pin,
               "compression": "gzip", "messages": [[None if k is None else k.hex(), v.hex(), t] for k, v, t in sent]}
        assert run_202(kafka_python_202, job) == list(range(20))
        batches = stored_batches(old_broker.bootstrap, name, 0)
        assert {header.compression for header in batches} == {stored}
        assert sum(header.records_count for header in batches) == 20
        got = confluent_read(old_broker.bootstrap, name, 20)
        assert [(key, value) for *_, key, value in got] == [(k, v) for k, v, _ in sent]


# ---- the same paths with hand-made requests (no kafka-python 2.0.2 needed) ----


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(api_key, version, conn.request(api_key, version, body))
    return answer


def produce_raw(bootstrap: str, version: int, topic: str, records: bytes) -> dict[str, Any]:
    body = {"acks": 1, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]},
    ]}
    [[answer]] = [t["partition_responses"] for t in call(bootstrap, PRODUCE, version, body)["responses"]]
    return answer


def fetch_raw(bootstrap: str, version: int, topic: str, offset: int = 0) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]},
    ]}
    [[answer]] = [t["partitions"] for t in call(bootstrap, FETCH, version, body)["responses"]]
    return answer


def test_message_sets_in_and_out_by_version(old_broker: BrokerProcess, topic_name: str) -> None:
    """Produce v2 (magic 1, gzip) and v0 (magic 0) append; Fetch v0-1 answer magic 0, v2-3 magic 1, v4 the V2 batches."""
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    first = [OutMessage(i, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(3)]
    assert produce_raw(old_broker.bootstrap, 2, topic_name, build_message_set(first, 1, GZIP))["base_offset"] == 0
    second = [OutMessage(i, -1, None, b"w%d" % i) for i in range(2)]
    assert produce_raw(old_broker.bootstrap, 0, topic_name, build_message_set(second, 0))["base_offset"] == 3
    values = [b"v0", b"v1", b"v2", b"w0", b"w1"]
    for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
        answer = fetch_raw(old_broker.bootstrap, version, topic_name)
        assert (answer["error_code"], answer["high_watermark"]) == (0, 5)
        got = read_messages(answer["records"])
        assert [(m.offset, m.magic, m.value) for m in got] == [(i, magic, v) for i, v in enumerate(values)]
        assert [m.timestamp for m in got] == ([T0, T0 + 1, T0 + 2, -1, -1] if magic else [-1] * 5)
    batches = decode_all(fetch_raw(old_broker.bootstrap, 4, topic_name)["records"])
    assert [(h.base_offset, h.records_count, h.compression) for h, _ in batches] == [(0, 3, GZIP), (3, 2, NONE)]


def test_message_sets_kafka_refuses(old_broker: BrokerProcess, topic_name: str) -> None:
    """Kafka's answers: a wrong CRC is CORRUPT_MESSAGE, two compressed wrappers INVALID_RECORD, and a set without a
    complete message appends nothing and answers no offset."""
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1)
    good = build_message_set([OutMessage(0, T0, None, b"v")], 1)
    corrupt = good[:-1] + bytes((good[-1] ^ 1,))
    assert produce_raw(old_broker.bootstrap, 2, topic_name, corrupt)["error_code"] == CORRUPT_MESSAGE
    wrapped = build_message_set([OutMessage(0, T0, None, b"v")], 1, GZIP)
    assert produce_raw(old_broker.bootstrap, 1, topic_name, wrapped * 2)["error_code"] == INVALID_RECORD
    answer = produce_raw(old_broker.bootstrap, 2, topic_name, good[:-3])
    assert (answer["error_code"], answer["base_offset"]) == (0, -1)
    assert fetch_raw(old_broker.bootstrap, 3, topic_name)["high_watermark"] == 0


def test_zstd_batches_cannot_be_down_converted(old_broker: BrokerProcess, topic_name: str) -> None:
    """The topic's compression.type makes every stored batch zstd: a producer's own zstd is not enough, since
    librdkafka sends a batch uncompressed when compressing does not make it smaller, as a batch of one small record
    (under load the records may leave one by one)."""
    confluent_create_topic(old_broker.bootstrap, topic_name, partitions=1, config={"compression.type": "zstd"})
    produce_with_timestamps(old_broker.bootstrap, topic_name, messages(3), {"compression.type": "zstd"})
    assert {header.compression for header in stored_batches(old_broker.bootstrap, topic_name, 0)} == {ZSTD}
    assert fetch_raw(old_broker.bootstrap, 3, topic_name)["error_code"] == UNSUPPORTED_COMPRESSION_TYPE
    assert fetch_raw(old_broker.bootstrap, 4, topic_name)["error_code"] == 0
