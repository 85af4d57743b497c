"""confluent-kafka (librdkafka) against the broker: round trips per codec and acks, a 1 MiB message,
ListOffsets, DeleteRecords and the admin API. Consumers assign partitions explicitly (no group)."""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewPartitions, NewTopic, OffsetSpec, ResourceType
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from tests.clientutil import (
    BIG_MESSAGE_BYTES,
    CODECS,
    FETCH,
    MIB,
    PARTITIONS,
    SEPARATE_BATCHES,
    TIMEOUT_MS,
    TIMEOUT_S,
    Message,
    RawConnection,
    check_round_trip,
    check_wire_format,
    confluent_admin,
    confluent_consume,
    confluent_consumer,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    drain,
    make_messages,
    record_timestamps,
    timestamp_queries,
)

ROUND_TRIPS = [
    pytest.param({}, id="defaults"),
    *(pytest.param({"compression.type": codec}, id=codec) for codec in CODECS),
    pytest.param({"enable.idempotence": True}, id="idempotent"),
    pytest.param({"acks": 0}, id="acks0"),
    pytest.param({"acks": 1}, id="acks1"),
    pytest.param({"acks": "all"}, id="acksall"),
]


def kafka_error_code(excinfo: pytest.ExceptionInfo[KafkaException]) -> int:
    return excinfo.value.args[0].code()


@pytest.mark.parametrize("settings", ROUND_TRIPS)
def test_round_trip(bootstrap: str, topic_name: str, settings: dict) -> None:
    confluent_create_topic(bootstrap, topic_name)
    messages = make_messages()
    placements = confluent_produce(bootstrap, topic_name, messages, **settings)
    counts = counts_by_partition(placements)
    assert sorted(counts) == list(range(PARTITIONS)), f"the default partitioner should use every partition: {counts}"
    check_round_trip(messages, placements, confluent_consume(bootstrap, topic_name, counts))
    idempotent = settings.get("enable.idempotence", False)
    check_wire_format(bootstrap, topic_name, PARTITIONS, settings.get("compression.type"), idempotent)


def test_one_mib_message(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, config={"max.message.bytes": str(BIG_MESSAGE_BYTES)})
    big = Message(b"big", random.Random(1).randbytes(MIB), (("size", b"1MiB"),))
    messages = [Message(b"big", b"before"), big, Message(b"big", b"after")]
    placements = confluent_produce(bootstrap, topic_name, messages, **{"message.max.bytes": 2 * BIG_MESSAGE_BYTES})
    check_round_trip(messages, placements, confluent_consume(bootstrap, topic_name, counts_by_partition(placements)))


def test_one_mib_message_refused_by_default_limit(bootstrap: str, topic_name: str) -> None:
    """Without the topic override the broker's message.max.bytes (1048588) refuses a 1 MiB record's batch."""
    confluent_create_topic(bootstrap, topic_name, partitions=1)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.max.bytes": 2 * BIG_MESSAGE_BYTES, "message.timeout.ms": TIMEOUT_MS}
    )
    errors: list[KafkaError] = []
    try:
        producer.produce(topic_name, value=bytes(MIB), on_delivery=lambda err, msg: errors.append(err))
        assert producer.flush(TIMEOUT_S) == 0
    finally:
        producer.purge()
        producer.close()
    assert [err.code() if err else None for err in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]


def produce_timed(bootstrap: str, topic: str, t0: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS})
    try:
        for i, stamp in enumerate(record_timestamps(t0)):
            producer.produce(topic, key=b"k", value=str(i).encode(), partition=0, timestamp=stamp)
            if i < SEPARATE_BATCHES:
                assert producer.flush(TIMEOUT_S) == 0
        assert producer.flush(TIMEOUT_S) == 0
    finally:
        producer.purge()
        producer.close()


def test_list_offsets(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, partitions=1)
    t0 = int(time.time() * 1000) - 60_000
    produce_timed(bootstrap, topic_name, t0)
    stamps = record_timestamps(t0)
    queries = timestamp_queries(t0)
    tp = TopicPartition(topic_name, 0)

    consumer = confluent_consumer(bootstrap)
    try:
        assert consumer.get_watermark_offsets(tp, timeout=TIMEOUT_S, cached=False) == (0, len(stamps))
        for asked, expected in queries:
            [answer] = consumer.offsets_for_times([TopicPartition(topic_name, 0, asked)], timeout=TIMEOUT_S)
            assert answer.error is None
            assert answer.offset == (expected if expected is not None else -1), f"offsets_for_times({asked - t0:+d})"
    finally:
        consumer.close()

    admin = confluent_admin(bootstrap)
    specs = {"earliest": OffsetSpec.earliest(), "latest": OffsetSpec.latest(), "max": OffsetSpec.max_timestamp()}
    specs.update({f"ts{asked - t0:+d}": OffsetSpec.for_timestamp(asked) for asked, _ in queries})
    answers = {}
    for name, spec in specs.items():
        answers[name] = admin.list_offsets({tp: spec}, request_timeout=TIMEOUT_S)[tp].result(timeout=TIMEOUT_S)
    assert answers["earliest"].offset == 0
    assert answers["latest"].offset == len(stamps)
    assert (answers["max"].offset, answers["max"].timestamp) == (len(stamps) - 1, stamps[-1])
    for asked, expected in queries:
        answer = answers[f"ts{asked - t0:+d}"]
        if expected is None:
            assert answer.offset == -1, f"list_offsets({asked - t0:+d})"
        else:
            assert (answer.offset, answer.timestamp) == (expected, stamps[expected]), f"list_offsets({asked - t0:+d})"


def test_delete_records(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, partitions=1)
    messages = make_messages(10)
    confluent_produce(bootstrap, topic_name, messages)
    admin = confluent_admin(bootstrap)
    tp = TopicPartition(topic_name, 0)
    deleted = admin.delete_records([TopicPartition(topic_name, 0, 4)], request_timeout=TIMEOUT_S)[tp].result(timeout=TIMEOUT_S)
    assert deleted.low_watermark == 4
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=TIMEOUT_S)[tp].result(timeout=TIMEOUT_S)
    assert earliest.offset == 4

    consumed = confluent_consume(bootstrap, topic_name, {0: 6}, partitions=1)
    assert [(c.offset, c.message) for c in consumed] == [(offset, messages[offset]) for offset in range(4, 10)]


def topic_configs(admin, topic: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(timeout=TIMEOUT_S)


def partition_count(admin, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions)


def test_admin_topic_lifecycle(bootstrap: str, topic_name: str) -> None:
    admin = confluent_admin(bootstrap)
    new_topic = NewTopic(topic_name, num_partitions=3, config={"retention.ms": "3600000"})
    admin.create_topics([new_topic], request_timeout=TIMEOUT_S)[topic_name].result(timeout=TIMEOUT_S)
    assert partition_count(admin, topic_name) == 3

    configs = topic_configs(admin, topic_name)
    retention = configs["retention.ms"]
    assert (retention.value, ConfigSource(retention.source), retention.is_default) == (
        "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG, False
    )
    for name, default in {"cleanup.policy": "delete", "max.message.bytes": "1048588"}.items():
        entry = configs[name]
        assert entry.value == default
        assert ConfigSource(entry.source) in (ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG), name
        assert entry.is_default, name

    again = admin.create_topics([NewTopic(topic_name, num_partitions=1)], request_timeout=TIMEOUT_S)[topic_name]
    with pytest.raises(KafkaException) as excinfo:
        again.result(timeout=TIMEOUT_S)
    assert kafka_error_code(excinfo) == KafkaError.TOPIC_ALREADY_EXISTS

    admin.create_partitions([NewPartitions(topic_name, 5)], request_timeout=TIMEOUT_S)[topic_name].result(timeout=TIMEOUT_S)
    assert partition_count(admin, topic_name) == 5
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": TIMEOUT_MS})
    try:
        producer.produce(topic_name, value=b"in the new partition", partition=4)
        assert producer.flush(TIMEOUT_S) == 0
    finally:
        producer.purge()
        producer.close()
    consumed = confluent_consume(bootstrap, topic_name, {4: 1}, partitions=5)
    assert [(c.partition, c.offset, c.message.value) for c in consumed] == [(4, 0, b"in the new partition")]

    admin.delete_topics([topic_name], request_timeout=TIMEOUT_S)[topic_name].result(timeout=TIMEOUT_S)
    assert topic_name not in admin.list_topics(timeout=TIMEOUT_S).topics
    with pytest.raises(KafkaException) as excinfo:
        topic_configs(admin, topic_name)
    assert kafka_error_code(excinfo) == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.parametrize(
    "config",
    [{"retention.ms": "soon"}, {"cleanup.policy": "sometimes"}, {"no.such.setting": "1"}],
    ids=["bad-number", "bad-choice", "unknown-name"],
)
def test_create_topic_invalid_config(bootstrap: str, topic_name: str, config: dict[str, str]) -> None:
    admin = confluent_admin(bootstrap)
    futures = admin.create_topics([NewTopic(topic_name, num_partitions=1, config=config)], request_timeout=TIMEOUT_S)
    with pytest.raises(KafkaException) as excinfo:
        futures[topic_name].result(timeout=TIMEOUT_S)
    assert kafka_error_code(excinfo) == KafkaError.INVALID_CONFIG
    assert topic_name not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_consumer_past_the_log_end_resets_to_earliest(bootstrap: str, topic_name: str) -> None:
    """A consumer assigned past the end gets OFFSET_OUT_OF_RANGE with empty (not null) records, which
    librdkafka must parse to apply auto.offset.reset; with earliest it then reads every record."""
    confluent_create_topic(bootstrap, topic_name, 1)
    messages = make_messages(10)
    confluent_produce(bootstrap, topic_name, messages)
    consumer = confluent_consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic_name, 0, 1000)])
        consumed = drain(consumer, {0: 10})
    finally:
        consumer.close()
    assert [c.message for c in consumed] == messages


@pytest.mark.parametrize("version", [4, 11, 12])
def test_fetch_errors_answer_empty_records(bootstrap: str, topic_name: str, version: int) -> None:
    """Fetch answers OFFSET_OUT_OF_RANGE and UNKNOWN_TOPIC_OR_PARTITION with empty records, as Kafka does."""
    confluent_create_topic(bootstrap, topic_name, 1)
    request = {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": MIB, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": topic_name, "partitions": [
            {"partition": 0, "fetch_offset": 1000, "partition_max_bytes": MIB, "current_leader_epoch": -1},
            {"partition": 7, "fetch_offset": 0, "partition_max_bytes": MIB, "current_leader_epoch": -1},
        ]}],
    }
    with RawConnection(bootstrap) as conn:
        _, answer = decode_response(FETCH, version, conn.request(FETCH, version, request))
    partitions = answer["responses"][0]["partitions"]
    assert [(p["error_code"], p["records"]) for p in partitions] == [
        (ErrorCode.OFFSET_OUT_OF_RANGE, b""), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, b"")
    ]
