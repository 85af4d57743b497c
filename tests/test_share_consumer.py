"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 consumer) against the data path: every record delivered once
when accepted, released records delivered again to another member, a closed consumer's records given back, locks
that run out on the broker's virtual clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, RawConnection
from tests.test_share_fetch import set_group_config


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(clock="virtual") as running:
        yield running


def create(broker: Broker, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(TIMEOUT_S)


def produce(broker: Broker, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(TIMEOUT_S) == 0


def share_consumer(broker: Broker, group: str, topic: str, **config: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group, **config})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, enough: Any, on_message: Any = None) -> list[Any]:
    """Poll until ``enough(received)`` holds (each message passed to ``on_message`` first); the messages received."""
    received: list[Any] = []
    deadline = time.monotonic() + TIMEOUT_S
    while not enough(received) and time.monotonic() < deadline:
        for message in consumer.poll(0.2):
            assert message.error() is None, message.error()
            if on_message is not None:
                on_message(message)
            received.append(message)
    return received


def earliest(broker: Broker, group: str) -> None:
    """The group's share partitions start at the beginning of the log (share.auto.offset.reset=earliest)."""
    with RawConnection(broker.bootstrap_servers) as conn:
        set_group_config(conn, group, "share.auto.offset.reset", "earliest")


def test_every_record_is_delivered_once(broker: Broker, topic_name: str) -> None:
    create(broker, topic_name, 3)
    values = [b"v%d" % i for i in range(300)]
    produce(broker, topic_name, values)
    group = f"sc-{topic_name}"
    earliest(broker, group)
    consumer = share_consumer(broker, group, topic_name)
    try:
        received = poll_until(consumer, lambda got: len(got) >= len(values))
        assert sorted(m.value() for m in received) == sorted(values)
        assert {m.delivery_count() for m in received} == {1}
        assert not consumer.poll(1.0)  # accepted (implicitly, at the next poll): never delivered again
        consumer.commit_sync()
    finally:
        consumer.close()
    offsets = broker.core.share_partitions.start_offsets(group)
    assert sum(start for start, _ in offsets.values()) == len(values)  # every partition's start moved past its records


def test_released_records_go_to_another_consumer(broker: Broker, topic_name: str) -> None:
    create(broker, topic_name)
    values = [b"r%d" % i for i in range(20)]
    produce(broker, topic_name, values)
    group = f"sc-{topic_name}"
    earliest(broker, group)
    releasing = share_consumer(broker, group, topic_name, **{"share.acknowledgement.mode": "explicit"})
    try:
        first = poll_until(releasing, bool, lambda m: releasing.acknowledge(m, AcknowledgeType.RELEASE))
        releasing.commit_sync()
        assert first and {m.delivery_count() for m in first} == {1}
    finally:
        releasing.close()
    accepting = share_consumer(broker, group, topic_name)
    try:
        received = poll_until(accepting, lambda got: len({m.value() for m in got}) >= len(values))
        assert {m.value() for m in received} == set(values)
        released = {m.offset() for m in first}
        assert {m.offset(): m.delivery_count() for m in received if m.offset() in released} == dict.fromkeys(released, 2)
    finally:
        accepting.close()


def test_records_held_too_long_are_delivered_again(broker: Broker, topic_name: str) -> None:
    """A consumer that acknowledges nothing keeps its records only as long as their locks (on the virtual clock)."""
    create(broker, topic_name)
    produce(broker, topic_name, [b"slow"])
    group = f"sc-{topic_name}"
    earliest(broker, group)
    holding = share_consumer(broker, group, topic_name, **{"share.acknowledgement.mode": "explicit"})
    other = share_consumer(broker, group, topic_name)
    try:
        [held] = poll_until(holding, bool)
        assert held.delivery_count() == 1
        assert not other.poll(1.0)  # locked
        broker.advance(30_000)  # group.share.record.lock.duration.ms
        [again] = poll_until(other, bool)
        assert (again.value(), again.offset(), again.delivery_count()) == (b"slow", held.offset(), 2)
    finally:
        other.close()
        holding.close()


def test_two_consumers_share_one_partition_without_duplicates(broker: Broker, topic_name: str) -> None:
    """Both consumers are assigned the one partition; each record goes to exactly one of them (no lock runs out:
    the virtual clock stands still)."""
    create(broker, topic_name)
    group = f"sc-{topic_name}"
    earliest(broker, group)
    values = [b"s%d" % i for i in range(2000)]
    first = share_consumer(broker, group, topic_name, **{"max.poll.records": 100})
    second = share_consumer(broker, group, topic_name, **{"max.poll.records": 100})
    try:
        produce(broker, topic_name, values)
        received: dict[str, list[Any]] = {"first": [], "second": []}
        deadline = time.monotonic() + TIMEOUT_S
        while sum(map(len, received.values())) < len(values) and time.monotonic() < deadline:
            for name, consumer in (("first", first), ("second", second)):
                received[name] += [m for m in consumer.poll(0.1) if m.error() is None]
        got = [m.value() for messages in received.values() for m in messages]
        assert sorted(got) == sorted(values)  # every record once, none twice
        assert {m.delivery_count() for messages in received.values() for m in messages} == {1}
    finally:
        first.close()
        second.close()
