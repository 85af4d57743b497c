"""kafka-python against the broker: round trips per codec and acks, a 1 MiB message, ListOffsets and
the admin API. Its producer is idempotent with acks=all by default; consumers use group_id=None + assign."""

from __future__ import annotations

import random
import time
from typing import Any, Iterator, Sequence

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource
from kafka.errors import InvalidConfigurationError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

from tests.clientutil import (
    BIG_MESSAGE_BYTES,
    CODECS,
    MIB,
    PARTITIONS,
    SEPARATE_BATCHES,
    TIMEOUT_MS,
    TIMEOUT_S,
    Consumed,
    Deadline,
    Message,
    Placement,
    check_round_trip,
    check_wire_format,
    counts_by_partition,
    make_messages,
    normalize_headers,
    record_timestamps,
    timestamp_queries,
)

ROUND_TRIPS = [
    pytest.param({}, id="defaults"),
    *(pytest.param({"compression_type": codec}, id=codec) for codec in CODECS),
    pytest.param({"enable_idempotence": False}, id="not-idempotent"),
    pytest.param({"acks": 0, "enable_idempotence": False}, id="acks0"),
    pytest.param({"acks": 1, "enable_idempotence": False}, id="acks1"),
    pytest.param({"acks": "all", "enable_idempotence": False}, id="acksall"),
]


@pytest.fixture(scope="module")
def admin(broker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        bootstrap_servers=broker.bootstrap, request_timeout_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS
    )
    try:
        yield client
    finally:
        client.close()


def create_topic(admin: KafkaAdminClient, topic: str, partitions: int = PARTITIONS, config: dict[str, str] | None = None) -> None:
    admin.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1, "configs": config or {}}})


def producer(bootstrap: str, **config: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS, max_block_ms=TIMEOUT_MS, bootstrap_timeout_ms=TIMEOUT_MS, **config
    )


def produce(bootstrap: str, topic: str, messages: Sequence[Message], **config: Any) -> list[Placement]:
    client = producer(bootstrap, **config)
    try:
        futures = [client.send(topic, key=m.key, value=m.value, headers=list(m.headers)) for m in messages]
        client.flush(timeout=TIMEOUT_S)
        metadata = [future.get(timeout=TIMEOUT_S) for future in futures]
    finally:
        client.close(timeout=5)
    acknowledged = config.get("acks") != 0  # with acks=0 the client makes offsets up from -1
    return [Placement(md.partition, md.offset if acknowledged else None) for md in metadata]


def consumer(bootstrap: str, **config: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=TIMEOUT_MS,
        bootstrap_timeout_ms=TIMEOUT_MS,
        **config,
    )


def consume(bootstrap: str, topic: str, counts: dict[int, int], partitions: int = PARTITIONS, **config: Any) -> list[Consumed]:
    client = consumer(bootstrap, **config)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        client.assign(tps)
        client.seek_to_beginning(*tps)
        wanted = sum(counts.values())
        consumed: list[Consumed] = []
        deadline = Deadline()
        while len(consumed) < wanted and deadline.left():
            for records in client.poll(timeout_ms=500, max_records=2000).values():
                consumed += [
                    Consumed(r.partition, r.offset, Message(r.key, r.value, normalize_headers(r.headers))) for r in records
                ]
        assert len(consumed) >= wanted, f"consumed {len(consumed)} of {wanted} records in {TIMEOUT_S}s"
        return consumed
    finally:
        client.close()


@pytest.mark.parametrize("settings", ROUND_TRIPS)
def test_round_trip(admin: KafkaAdminClient, bootstrap: str, topic_name: str, settings: dict) -> None:
    create_topic(admin, topic_name)
    messages = make_messages()
    placements = produce(bootstrap, topic_name, messages, **settings)
    counts = counts_by_partition(placements)
    assert sorted(counts) == list(range(PARTITIONS)), f"the default partitioner should use every partition: {counts}"
    check_round_trip(messages, placements, consume(bootstrap, topic_name, counts))
    idempotent = settings.get("enable_idempotence", True)
    check_wire_format(bootstrap, topic_name, PARTITIONS, settings.get("compression_type"), idempotent)


def test_one_mib_message(admin: KafkaAdminClient, bootstrap: str, topic_name: str) -> None:
    create_topic(admin, topic_name, config={"max.message.bytes": str(BIG_MESSAGE_BYTES)})
    big = Message(b"big", random.Random(2).randbytes(MIB), (("size", b"1MiB"),))
    messages = [Message(b"big", b"before"), big, Message(b"big", b"after")]
    placements = produce(bootstrap, topic_name, messages, max_request_size=2 * BIG_MESSAGE_BYTES)
    check_round_trip(messages, placements, consume(bootstrap, topic_name, counts_by_partition(placements)))


def test_list_offsets(admin: KafkaAdminClient, bootstrap: str, topic_name: str) -> None:
    create_topic(admin, topic_name, partitions=1)
    t0 = int(time.time() * 1000) - 60_000
    stamps = record_timestamps(t0)
    client = producer(bootstrap)
    try:
        for i, stamp in enumerate(stamps):
            client.send(topic_name, key=b"k", value=str(i).encode(), partition=0, timestamp_ms=stamp)
            if i < SEPARATE_BATCHES:
                client.flush(timeout=TIMEOUT_S)
        client.flush(timeout=TIMEOUT_S)
    finally:
        client.close(timeout=5)

    tp = TopicPartition(topic_name, 0)
    reader = consumer(bootstrap)
    try:
        assert reader.beginning_offsets([tp], timeout_ms=TIMEOUT_MS) == {tp: 0}
        assert reader.end_offsets([tp], timeout_ms=TIMEOUT_MS) == {tp: len(stamps)}
        for asked, expected in timestamp_queries(t0):
            answer = reader.offsets_for_times({tp: asked}, timeout_ms=TIMEOUT_MS)[tp]
            got = None if answer is None else (answer.offset, answer.timestamp)
            assert got == (None if expected is None else (expected, stamps[expected])), f"offsets_for_times({asked - t0:+d})"
    finally:
        reader.close()


def test_delete_records(admin: KafkaAdminClient, bootstrap: str, topic_name: str) -> None:
    create_topic(admin, topic_name, partitions=1)
    messages = make_messages(10)
    produce(bootstrap, topic_name, messages)
    tp = TopicPartition(topic_name, 0)
    result = admin.delete_records({tp: 4}, timeout_ms=TIMEOUT_MS)
    assert result[tp]["low_watermark"] == 4
    reader = consumer(bootstrap)
    try:
        assert reader.beginning_offsets([tp], timeout_ms=TIMEOUT_MS) == {tp: 4}
    finally:
        reader.close()
    consumed = consume(bootstrap, topic_name, {0: 6}, partitions=1)
    assert [(c.offset, c.message) for c in consumed] == [(offset, messages[offset]) for offset in range(4, 10)]


def topic_configs(admin: KafkaAdminClient, topic: str) -> dict[str, dict]:
    return admin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")["topic"][topic]


def partition_ids(admin: KafkaAdminClient, topic: str) -> list[int]:
    [description] = admin.describe_topics([topic])
    return sorted(p["partition_index"] for p in description["partitions"])


def test_admin_topic_lifecycle(admin: KafkaAdminClient, bootstrap: str, topic_name: str) -> None:
    create_topic(admin, topic_name, config={"retention.ms": "3600000"})
    assert partition_ids(admin, topic_name) == [0, 1, 2]

    configs = topic_configs(admin, topic_name)
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["config_source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    for name, default in {"cleanup.policy": "delete", "max.message.bytes": "1048588"}.items():
        assert configs[name]["value"] == default
        assert configs[name]["config_source"] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG"), name
    modified = admin.describe_configs([ConfigResource("TOPIC", topic_name)])["topic"][topic_name]
    assert set(modified) == {"retention.ms"}, "only the override is a modified (topic) config"

    with pytest.raises(TopicAlreadyExistsError):
        create_topic(admin, topic_name)

    admin.create_partitions({topic_name: 5})
    assert partition_ids(admin, topic_name) == [0, 1, 2, 3, 4]
    client = producer(bootstrap)
    try:
        assert client.send(topic_name, value=b"in the new partition", partition=4).get(timeout=TIMEOUT_S).offset == 0
    finally:
        client.close(timeout=5)
    consumed = consume(bootstrap, topic_name, {4: 1}, partitions=5)
    assert [(c.partition, c.offset, c.message.value) for c in consumed] == [(4, 0, b"in the new partition")]

    admin.delete_topics([topic_name])
    assert topic_name not in admin.list_topics()
    [description] = admin.describe_topics([topic_name])
    assert description["error_code"] == UnknownTopicOrPartitionError.errno
    assert topic_configs(admin, topic_name) == {}, "kafka-python drops DescribeConfigs errors: the topic has no configs left"


@pytest.mark.parametrize(
    "config",
    [{"retention.ms": "soon"}, {"cleanup.policy": "sometimes"}, {"no.such.setting": "1"}],
    ids=["bad-number", "bad-choice", "unknown-name"],
)
def test_create_topic_invalid_config(admin: KafkaAdminClient, topic_name: str, config: dict[str, str]) -> None:
    with pytest.raises(InvalidConfigurationError):
        create_topic(admin, topic_name, partitions=1, config=config)
    assert topic_name not in admin.list_topics()
