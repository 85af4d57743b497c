"""CreateTime timestamps out of the topic's range are refused as Kafka's LogValidator refuses them: INVALID_TIMESTAMP
for the whole batch, each refused record named in RecordErrors, nothing appended. The range is
message.timestamp.before.max.ms before the broker's clock to message.timestamp.after.max.ms after it (Kafka 4: one
hour after, KIP-1030); under an emulated 3.x release there is no bound after, and the retired
message.timestamp.difference.max.ms bounds both sides where those two are not set."""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import RecordInput, build_batch, new_batch, parse_header, set_log_append_time
from minibroker.testing import Broker

from tests.clientutil import TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic

PRODUCE, LIST_OFFSETS = 0, 2
NONE, INVALID_RECORD, INVALID_TIMESTAMP, INVALID_CONFIG = 0, 87, 32, 40
HOUR_MS = 3_600_000
NOW = 1_800_000_000_000  # the virtual clock's time in these tests


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(clock="virtual") as running:
        running.set_time(NOW)
        yield running


def produce(bootstrap: str, topic: str, records: list[RecordInput]) -> dict[str, Any]:
    """One batch of ``records`` to partition 0 (Produce v9): the partition's answer."""
    return produce_batch(bootstrap, topic, build_batch(records, base_timestamp=records[0].timestamp))


def marked_log_append_time(records: list[RecordInput], max_timestamp: int) -> bytes:
    """A batch of ``records`` that says LogAppendTime with ``max_timestamp`` (what only a broker writes)."""
    batch = new_batch(records, base_timestamp=records[0].timestamp)
    set_log_append_time(batch, parse_header(batch), max_timestamp)
    return bytes(batch)


def produce_batch(bootstrap: str, topic: str, batch: bytes) -> dict[str, Any]:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(PRODUCE, 9, conn.request(PRODUCE, 9, body))
    [partition] = answer["responses"][0]["partition_responses"]
    return partition


def stamped(*timestamps: int, key: bytes | None = b"k") -> list[RecordInput]:
    return [RecordInput(key, b"v", timestamp=ts) for ts in timestamps]


def end_offset(bootstrap: str, topic: str) -> int:
    body = {"replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(LIST_OFFSETS, 7, conn.request(LIST_OFFSETS, 7, body))
    return answer["topics"][0]["partitions"][0]["offset"]


def test_kafka_4_refuses_a_timestamp_more_than_an_hour_ahead(broker: Broker, topic_name: str) -> None:
    bootstrap = broker.bootstrap_servers
    confluent_create_topic(bootstrap, topic_name, 1)
    accepted = produce(bootstrap, topic_name, stamped(NOW + HOUR_MS, NOW - 10 * 365 * 24 * HOUR_MS, -1))
    assert (accepted["error_code"], accepted["base_offset"]) == (NONE, 0)  # the bound itself, the distant past, none

    refused = produce(bootstrap, topic_name, stamped(NOW, NOW + HOUR_MS + 1, NOW + 2 * HOUR_MS))
    assert (refused["error_code"], refused["base_offset"]) == (INVALID_TIMESTAMP, -1)
    assert refused["error_message"] == "One or more records have been rejected due to invalid timestamp"
    bounds = f"The timestamp should be within [{NOW - 2**63 + 1}, {NOW + HOUR_MS}]"
    assert refused["record_errors"] == [
        {"batch_index": 1, "batch_index_error_message":
            f"Timestamp {NOW + HOUR_MS + 1} of message with offset 1 is out of range. {bounds}"},
        {"batch_index": 2, "batch_index_error_message":
            f"Timestamp {NOW + 2 * HOUR_MS} of message with offset 2 is out of range. {bounds}"},
    ]
    assert end_offset(bootstrap, topic_name) == 3, "the refused batch added nothing"

    broker.advance(HOUR_MS)  # the bound follows the broker's clock
    assert produce(bootstrap, topic_name, stamped(NOW + 2 * HOUR_MS))["error_code"] == NONE


def test_a_topics_bounds_and_its_timestamp_type(broker: Broker, topic_name: str) -> None:
    bootstrap = broker.bootstrap_servers
    confluent_create_topic(bootstrap, topic_name, 1, config={
        "message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "0"})
    assert produce(bootstrap, topic_name, stamped(NOW - 60_000, NOW))["error_code"] == NONE
    early = produce(bootstrap, topic_name, stamped(NOW, NOW - 60_001))
    assert early["error_code"] == INVALID_TIMESTAMP and [e["batch_index"] for e in early["record_errors"]] == [1]
    assert produce(bootstrap, topic_name, stamped(NOW + 1))["error_code"] == INVALID_TIMESTAMP

    appended = f"{topic_name}-append-time"  # the broker stamps the records: what the producer wrote is not checked
    confluent_create_topic(bootstrap, appended, 1, config={"message.timestamp.type": "LogAppendTime"})
    assert produce(bootstrap, appended, stamped(NOW + 10 * HOUR_MS))["error_code"] == NONE


def test_a_batch_the_producer_marked_log_append_time(broker: Broker, topic_name: str) -> None:
    """Only the broker sets LogAppendTime: as in LogValidator, a batch marked so is refused on a LogAppendTime topic,
    and on a CreateTime topic when it gives no timestamp (its records take the batch's max timestamp); with one, that
    timestamp is checked as any CreateTime record's."""
    bootstrap = broker.bootstrap_servers
    appended = f"{topic_name}-append-time"
    confluent_create_topic(bootstrap, appended, 1, config={"message.timestamp.type": "LogAppendTime"})
    confluent_create_topic(bootstrap, topic_name, 1)
    refused = produce_batch(bootstrap, appended, marked_log_append_time(stamped(NOW - 1, NOW), NOW))
    assert (refused["error_code"], refused["base_offset"]) == (INVALID_TIMESTAMP, -1)
    assert refused["error_message"] == "One or more records have been rejected due to invalid timestamp"
    assert refused["record_errors"] == [
        {"batch_index": offset, "batch_index_error_message":
            f"Invalid timestamp type in message DefaultRecord(offset={offset}, timestamp={NOW}, key=1 bytes, value=1 "
            "bytes). Producer should not set timestamp type to LogAppendTime."}
        for offset in (0, 1)
    ]
    unstamped = produce_batch(bootstrap, topic_name, marked_log_append_time(stamped(NOW), -1))
    assert unstamped["error_code"] == INVALID_TIMESTAMP and len(unstamped["record_errors"]) == 1
    ahead = produce_batch(bootstrap, topic_name, marked_log_append_time(stamped(NOW), NOW + 2 * HOUR_MS))
    assert ahead["record_errors"][0]["batch_index_error_message"].startswith(f"Timestamp {NOW + 2 * HOUR_MS} of message")
    assert produce_batch(bootstrap, topic_name, marked_log_append_time(stamped(NOW - 5), NOW))["error_code"] == NONE
    assert (end_offset(bootstrap, appended), end_offset(bootstrap, topic_name)) == (0, 1)


def test_a_keyless_record_on_a_compacted_topic_is_named_before_its_timestamp(broker: Broker, topic_name: str) -> None:
    """LogValidator checks each record's key, then its timestamp; one timestamp refused makes the batch's error
    INVALID_TIMESTAMP, with every record's error listed."""
    bootstrap = broker.bootstrap_servers
    confluent_create_topic(bootstrap, topic_name, 1, config={"cleanup.policy": "compact"})
    answer = produce(bootstrap, topic_name, stamped(NOW + 2 * HOUR_MS, key=None) + stamped(NOW + 2 * HOUR_MS))
    assert answer["error_code"] == INVALID_TIMESTAMP
    messages = [e["batch_index_error_message"] for e in answer["record_errors"]]
    assert messages[0] == f"Compacted topic cannot accept message without key in topic partition {topic_name}-0."
    assert messages[1].startswith(f"Timestamp {NOW + 2 * HOUR_MS} of message with offset 1 is out of range")
    keyless = produce(bootstrap, topic_name, stamped(NOW, key=None))
    assert keyless["error_code"] == INVALID_RECORD


def test_a_producer_sees_invalid_timestamp(topic_name: str) -> None:
    """confluent-kafka's delivery report for a record two hours ahead of the (real) clock."""
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        confluent_create_topic(bootstrap, topic_name, 1)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        reports: list[KafkaError | None] = []
        now = int(time.time() * 1000)
        for timestamp in (now, now + 2 * HOUR_MS):
            producer.produce(topic_name, b"v", timestamp=timestamp, on_delivery=lambda err, _: reports.append(err))
            assert producer.flush(TIMEOUT_S) == 0
        assert reports[0] is None and reports[1] is not None and reports[1].code() == KafkaError.INVALID_TIMESTAMP


def test_an_emulated_3x_release_bounds_nothing_ahead_unless_told(topic_name: str) -> None:
    """3.x had no bound after the clock by default; its message.timestamp.difference.max.ms (removed in 4.0) bounds
    both sides of a topic that sets neither message.timestamp.before.max.ms nor .after.max.ms."""
    with Broker(clock="virtual", kafka_version="3.9") as broker:
        broker.set_time(NOW)
        bootstrap = broker.bootstrap_servers
        confluent_create_topic(bootstrap, topic_name, 1)
        assert produce(bootstrap, topic_name, stamped(NOW + 100 * HOUR_MS))["error_code"] == NONE
        bounded = f"{topic_name}-difference"
        confluent_create_topic(bootstrap, bounded, 1, config={"message.timestamp.difference.max.ms": "60000"})
        assert produce(bootstrap, bounded, stamped(NOW - 60_000, NOW + 60_000))["error_code"] == NONE
        assert produce(bootstrap, bounded, stamped(NOW + 60_001))["error_code"] == INVALID_TIMESTAMP
        assert produce(bootstrap, bounded, stamped(NOW - 60_001))["error_code"] == INVALID_TIMESTAMP
        both = f"{topic_name}-before-wins"  # a bound set explicitly wins over the difference
        confluent_create_topic(bootstrap, both, 1, config={
            "message.timestamp.difference.max.ms": "60000", "message.timestamp.before.max.ms": "120000"})
        assert produce(bootstrap, both, stamped(NOW - 120_000))["error_code"] == NONE
        assert produce(bootstrap, both, stamped(NOW + 60_001))["error_code"] == INVALID_TIMESTAMP


def test_kafka_4_has_no_difference_config(broker: Broker, topic_name: str) -> None:
    admin = confluent_admin(broker.bootstrap_servers)  # referenced until its answer is in
    future = admin.create_topics([NewTopic(topic_name, 1, 1, config={"message.timestamp.difference.max.ms": "60000"})])[topic_name]
    with pytest.raises(KafkaException, match="Unknown topic config name: message.timestamp.difference.max.ms"):
        future.result(TIMEOUT_S)
