"""A drop-in for Apache Kafka: Kafka's own server.properties and the apache/kafka image's environment start a
broker that real clients use through the advertised listener; each kind of setting does what Kafka's would."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource
from minibroker.protocol.compression import CODEC_NAMES

from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    TIMEOUT_S,
    check_round_trip,
    confluent_admin,
    confluent_consume,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    make_messages,
    stored_batches,
)

# Apache Kafka 4.3.1's config/server.properties (KRaft combined mode), its settings as shipped, comments left out.
KAFKA_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=2
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""
STOCK_IGNORED = [
    "controller.quorum.bootstrap.servers", "inter.broker.listener.name", "num.io.threads", "num.network.threads",
    "num.recovery.threads.per.data.dir", "process.roles", "share.coordinator.state.topic.min.isr",
    "socket.receive.buffer.bytes", "socket.send.buffer.bytes", "transaction.state.log.min.isr",
]

# The apache/kafka image's documented single-node environment, with free ports (0) instead of 9092 and 9093.
KAFKA_IMAGE_ENV = {
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:0",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_NUM_PARTITIONS": "3",
}


@pytest.fixture
def stopping() -> Iterator[list[BrokerProcess]]:
    """Brokers a test starts, stopped when it ends however it ends."""
    started: list[BrokerProcess] = []
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


def advertised(broker: BrokerProcess) -> tuple[str, int]:
    metadata = confluent_admin(broker.bootstrap).list_topics(timeout=TIMEOUT_S)
    [(host, port)] = [(b.host, b.port) for b in metadata.brokers.values()]
    return host, port


def round_trip(bootstrap: str, topic: str, partitions: int) -> None:
    confluent_create_topic(bootstrap, topic, partitions)
    messages = make_messages(200)
    placements = confluent_produce(bootstrap, topic, messages, acks="all")
    consumed = confluent_consume(bootstrap, topic, counts_by_partition(placements))
    check_round_trip(messages, placements, consumed)


def test_kafka_stock_server_properties(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    """Kafka's own file plus a data dir (and free ports): clients reach the broker at its advertised localhost
    address; the start-up log names what has no effect here once, the controller listener among it."""
    properties = tmp_path / "server.properties"
    properties.write_text(KAFKA_SERVER_PROPERTIES)
    broker = BrokerProcess(
        tmp_path / "data",
        "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "advertised.listeners=PLAINTEXT://localhost:0,CONTROLLER://localhost:0",
        config_file=properties,
    )
    stopping.append(broker.start())
    assert advertised(broker) == ("localhost", broker.port)
    round_trip(f"localhost:{broker.port}", topic_name, 2)
    notes = [line for line in broker.log_text().splitlines() if "accepted, no effect here" in line]
    assert len(notes) == 1, notes
    named = notes[0].split("accepted, no effect here: ", 1)[1]
    assert named == ", ".join(STOCK_IGNORED) + ", listener CONTROLLER (controller.listener.names: not served)"
    assert "isn't a known config" not in broker.log_text()
    assert list(broker.listener_ports) == ["PLAINTEXT"], "the CONTROLLER listener is not bound"


def test_apache_kafka_image_environment(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", env=KAFKA_IMAGE_ENV)
    stopping.append(broker.start())
    assert advertised(broker) == ("localhost", broker.port)
    described = describe_broker(broker.bootstrap, "num.partitions", "process.roles")
    assert described == {"num.partitions": "3", "process.roles": "broker,controller"}
    round_trip(f"localhost:{broker.port}", topic_name, 3)
    assert "KAFKA_" not in broker.log_text(), "no variable is reported unknown"


def describe_broker(bootstrap: str, *names: str) -> dict[str, str]:
    entries = describe(bootstrap, ConfigResource(ConfigResource.Type.BROKER, "1"))
    return {name: entries[name].value for name in names}


def describe_topic(bootstrap: str, topic: str) -> dict:
    return describe(bootstrap, ConfigResource(ConfigResource.Type.TOPIC, topic))


def describe(bootstrap: str, resource: ConfigResource) -> dict:
    """DescribeConfigs of one resource (the admin client stays referenced until its answer is in)."""
    admin = confluent_admin(bootstrap)
    return admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)


def test_applied_retention_minutes_and_hours(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    """log.retention.minutes wins over log.retention.hours (log.retention.ms over both), as in Kafka. The topic's
    retention.ms reports what Kafka's ConfigHelper reports: synonyms only from its own broker setting,
    log.retention.ms, on, so with that unset none and the source DEFAULT_CONFIG. Segments older than that are deleted."""
    broker = BrokerProcess(
        tmp_path / "data", "log.retention.hours=1", "log.retention.minutes=30", "log.retention.check.interval.ms=200",
        "log.roll.ms=1",
    )
    stopping.append(broker.start())
    confluent_create_topic(broker.bootstrap, topic_name, 1)
    entry = describe_topic(broker.bootstrap, topic_name)["retention.ms"]
    assert entry.value == str(30 * 60_000)
    assert (entry.source, list(entry.synonyms)) == (5, [])  # DEFAULT_CONFIG: log.retention.ms is not set
    old = 1_000_000_000_000  # 2001: far outside 30 minutes
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for value in (b"old 1", b"old 2", b"old 3", b"new"):  # one segment each (log.roll.ms=1)
        producer.produce(topic_name, value, partition=0, timestamp=old if value.startswith(b"old") else 0)
        assert producer.flush(TIMEOUT_S) == 0
        time.sleep(0.01)
    deadline = time.monotonic() + TIMEOUT_S
    while watermarks(broker.bootstrap, topic_name) != (3, 4) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert watermarks(broker.bootstrap, topic_name) == (3, 4), "the old records go, the new one stays"


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT_S)
    finally:
        consumer.close()


def test_applied_compression_type_recompresses(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    """compression.type=gzip on the broker: batches a producer sends uncompressed or in lz4 are stored in gzip,
    with their records, producer ids and sequences intact."""
    broker = BrokerProcess(tmp_path / "data", "compression.type=gzip")
    stopping.append(broker.start())
    confluent_create_topic(broker.bootstrap, topic_name, 1)
    messages = make_messages(300)
    idempotent = {"enable.idempotence": True}
    placements = confluent_produce(broker.bootstrap, topic_name, messages[:150], **idempotent, **{"compression.type": "none"})
    placements += confluent_produce(broker.bootstrap, topic_name, messages[150:], **idempotent, **{"compression.type": "lz4"})
    headers = stored_batches(broker.bootstrap, topic_name, 0)
    assert {CODEC_NAMES[h.compression] for h in headers} == {"gzip"}
    assert all(h.producer_id >= 0 and h.base_sequence >= 0 for h in headers), "idempotent producer state kept"
    consumed = confluent_consume(broker.bootstrap, topic_name, counts_by_partition(placements))
    check_round_trip(messages, placements, consumed)
    assert describe_topic(broker.bootstrap, topic_name)["compression.type"].value == "gzip"


def test_applied_min_insync_replicas(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    """min.insync.replicas=2 with one live replica: acks=all is refused with NOT_ENOUGH_REPLICAS, acks=1 is not."""
    broker = BrokerProcess(tmp_path / "data", "min.insync.replicas=2")
    stopping.append(broker.start())
    confluent_create_topic(broker.bootstrap, topic_name, 1)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "retries": 0,
                         "enable.idempotence": False, "message.timeout.ms": 10_000})
    producer.produce(topic_name, b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(TIMEOUT_S)
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert confluent_produce(broker.bootstrap, topic_name, make_messages(5), acks=1)
    assert "min.isr requirement of 2" in broker.log_text() or errors[0].str()


def test_accepted_setting_changes_nothing(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", "num.io.threads=16", "queued.max.requests=5")
    stopping.append(broker.start())
    round_trip(broker.bootstrap, topic_name, 2)
    assert describe_broker(broker.bootstrap, "num.io.threads", "queued.max.requests") == {
        "num.io.threads": "16", "queued.max.requests": "5"
    }
    assert "accepted, no effect here: num.io.threads, queued.max.requests" in broker.log_text()


def test_unknown_setting_warns_with_a_suggestion(tmp_path: Path, stopping: list[BrokerProcess], topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", "log.retension.hours=1", "completely.made.up=1")
    stopping.append(broker.start())
    text = broker.log_text()
    assert re.search(r"WARNING .*The configuration 'log.retension.hours' was supplied but isn't a known config\. "
                     r"Did you mean 'log.retention.hours'\?", text)
    assert "The configuration 'completely.made.up' was supplied but isn't a known config.\n" in text
    round_trip(broker.bootstrap, topic_name, 1)


@pytest.mark.parametrize(
    "setting, message",
    [
        ("log.retention.hours=soon", "Invalid value soon for configuration log.retention.hours: Not a number of type INT"),
        ("num.io.threads=0", "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        ("compression.type=brotli", "Invalid value brotli for configuration compression.type"),
        ("node.id=1", "broker.id (2) and node.id (1) must be the same"),
    ],
)
def test_invalid_value_stops_start_up(tmp_path: Path, setting: str, message: str) -> None:
    broker = BrokerProcess(tmp_path / "data", setting, "broker.id=2")
    with pytest.raises(RuntimeError, match="broker exited with 2"):
        broker.start()
    assert message in broker.log_text()
