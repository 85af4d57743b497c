"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka's KIP-932 consumer), the way an application's
test suite uses them.

Every broker here runs on the virtual clock: a lock never expires and a session never times out unless the test moves
the clock, so what each consumer sees depends only on what the test does, and a 30 s lock is one ``advance()`` away.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Message, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.test_control import call

LOCK_DURATION_MS = 30_000  # group.share.record.lock.duration.ms's default


def produce(broker: Broker, topic: str, count: int, start: int = 0, batch: int = 50) -> None:
    """``count`` records valued by their number, in batches of about ``batch`` so acquisitions can split them."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "batch.num.messages": batch, "linger.ms": 0})
    for number in range(start, start + count):
        producer.produce(topic, str(number).encode(), partition=0)
        if (number + 1) % batch == 0:
            producer.flush(TIMEOUT_S)
    assert producer.flush(TIMEOUT_S) == 0


def set_group_configs(broker: Broker, group: str, **configs: str) -> None:
    """Group configs through the admin client, as an application sets them (``share_auto_offset_reset`` names
    ``share.auto.offset.reset``)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    entries = [ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
               for name, value in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT_S)


@contextmanager
def share_consumer(broker: Broker, group: str, topic: str, **config: str) -> Iterator[ShareConsumer]:
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                              **{name.replace("_", "."): value for name, value in config.items()}})
    consumer.subscribe([topic])
    try:
        yield consumer
    finally:
        consumer.close()


def poll_records(consumer: ShareConsumer, timeout_s: float = 1.0) -> list[Message]:
    messages = list(consumer.poll(timeout_s))
    errors = [m.error() for m in messages if m.error() is not None]
    assert not errors, errors
    return messages


def poll_until(consumer: ShareConsumer, wanted: int, timeout_s: float = TIMEOUT_S) -> list[Message]:
    """Poll until ``wanted`` records came (or the timeout passed); returns them all."""
    deadline = time.monotonic() + timeout_s
    received: list[Message] = []
    while len(received) < wanted and time.monotonic() < deadline:
        received += poll_records(consumer, 0.5)
    return received


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker(clock="virtual") as running:
        yield running


def test_two_members_share_one_partition_and_each_record_goes_to_one_of_them(broker: Broker, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    set_group_configs(broker, "shared", share_auto_offset_reset="earliest")
    produce(broker, topic_name, 1000)
    received: dict[str, list[int]] = {"first": [], "second": []}
    with share_consumer(broker, "shared", topic_name) as first, share_consumer(broker, "shared", topic_name) as second:
        deadline = time.monotonic() + TIMEOUT_S
        while sum(map(len, received.values())) < 1000 and time.monotonic() < deadline:
            for name, consumer in (("first", first), ("second", second)):
                received[name] += [m.offset() for m in poll_records(consumer, 0.2)]
    everything = received["first"] + received["second"]
    assert sorted(everything) == list(range(1000)), "every record delivered once, to one member"
    assert received["first"] and received["second"], {name: len(offsets) for name, offsets in received.items()}


def test_released_records_return_with_a_higher_delivery_count_and_rejected_ones_never(
    broker: Broker, topic_name: str,
) -> None:
    broker.create_topic(topic_name, 1)
    set_group_configs(broker, "acks", share_auto_offset_reset="earliest", share_delivery_count_limit="3")
    produce(broker, topic_name, 3)
    with share_consumer(broker, "acks", topic_name, share_acknowledgement_mode="explicit") as consumer:
        first = poll_until(consumer, 3)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(0, 1), (1, 1), (2, 1)]
        for message, kind in zip(first, (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT)):
            consumer.acknowledge(message, kind)
        consumer.commit_sync(TIMEOUT_S)

        redelivered = poll_until(consumer, 1)
        assert [(m.offset(), m.delivery_count()) for m in redelivered] == [(1, 2)]
        consumer.acknowledge(redelivered[0], AcknowledgeType.RELEASE)
        consumer.commit_sync(TIMEOUT_S)
        last = poll_until(consumer, 1)
        assert [(m.offset(), m.delivery_count()) for m in last] == [(1, 3)]
        consumer.acknowledge(last[0], AcknowledgeType.RELEASE)  # the third delivery was the last: archived now
        consumer.commit_sync(TIMEOUT_S)

        # Records come in offset order: had 1 or 2 stayed available, they would come before this new record.
        produce(broker, topic_name, 1, start=3)
        after = poll_until(consumer, 1)
        assert [(m.offset(), m.delivery_count()) for m in after] == [(3, 1)]
        consumer.acknowledge(after[0])
        consumer.commit_sync(TIMEOUT_S)


HOLDER = """
import sys, time
from confluent_kafka import ShareConsumer
consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                          "share.acknowledgement.mode": "explicit"})
consumer.subscribe([sys.argv[3]])
held = []
deadline = time.monotonic() + 30
while len(held) < int(sys.argv[4]) and time.monotonic() < deadline:
    held += [m.offset() for m in consumer.poll(0.5) if m.error() is None]
print(" ".join(map(str, held)), flush=True)
time.sleep(600)
"""


@contextmanager
def holder_of(broker: Broker, group: str, topic: str, count: int) -> Iterator[subprocess.Popen]:
    """A ShareConsumer in its own process holding ``count`` records it never acknowledges; killed on the way out."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), broker.bootstrap_servers, group, topic, str(count)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().split() == [str(offset) for offset in range(count)]
        yield holder
    finally:
        holder.kill()
        holder.wait(TIMEOUT_S)


def test_records_of_a_frozen_member_come_back_when_their_lock_expires(broker: Broker, topic_name: str) -> None:
    """A member that stops (its process frozen, its connection still open) keeps its records locked until the lock
    duration passes: then they go to another member, their delivery counted."""
    broker.create_topic(topic_name, 1)
    set_group_configs(broker, "locks", share_auto_offset_reset="earliest")
    produce(broker, topic_name, 10)
    with holder_of(broker, "locks", topic_name, 10) as holder, share_consumer(broker, "locks", topic_name) as survivor:
        holder.send_signal(signal.SIGSTOP)
        assert poll_records(survivor, 2.0) == [], "the frozen member's records are still locked"
        broker.advance(LOCK_DURATION_MS)
        returned = poll_until(survivor, 10)
        assert [(m.offset(), m.delivery_count()) for m in returned] == [(offset, 2) for offset in range(10)]


def test_records_of_a_killed_member_come_back_when_its_connection_drops(broker: Broker, topic_name: str) -> None:
    """Kafka ends a share session when its connection closes (ShareSessionCache's disconnect listener) and releases
    the member's records at once, their interrupted delivery not counted."""
    broker.create_topic(topic_name, 1)
    set_group_configs(broker, "killed", share_auto_offset_reset="earliest")
    produce(broker, topic_name, 10)
    with share_consumer(broker, "killed", topic_name) as survivor:
        with holder_of(broker, "killed", topic_name, 10) as holder:
            assert poll_records(survivor, 1.0) == [], "the holder's records are locked while it lives"
            holder.kill()
        returned = poll_until(survivor, 10)
        assert [(m.offset(), m.delivery_count()) for m in returned] == [(offset, 1) for offset in range(10)]


def test_a_restart_keeps_the_start_offset_and_the_acknowledged_records(tmp_path, topic_name: str) -> None:
    with Broker(clock="virtual", data_dir=str(tmp_path)) as broker:
        broker.create_topic(topic_name, 1)
        set_group_configs(broker, "durable", share_auto_offset_reset="earliest")
        produce(broker, topic_name, 20)
        with share_consumer(broker, "durable", topic_name, share_acknowledgement_mode="explicit") as consumer:
            records = poll_until(consumer, 20)
            assert [m.offset() for m in records] == list(range(20))
            for message in records:
                accepted = message.offset() < 5 or 6 <= message.offset() < 10
                consumer.acknowledge(message, AcknowledgeType.ACCEPT if accepted else AcknowledgeType.RELEASE)
            consumer.commit_sync(TIMEOUT_S)
        broker.restart()
        with share_consumer(broker, "durable", topic_name) as consumer:
            again = poll_until(consumer, 11)
            assert [(m.offset(), m.delivery_count()) for m in again] == [(offset, 2) for offset in (5, *range(10, 20))]


def test_every_record_of_every_partition_is_delivered_once_and_accepted_ones_never_again(
    broker: Broker, topic_name: str,
) -> None:
    broker.create_topic(topic_name, 3)
    set_group_configs(broker, "all", share_auto_offset_reset="earliest")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    values = [b"v%d" % i for i in range(300)]
    for value in values:
        producer.produce(topic_name, value)
    assert producer.flush(TIMEOUT_S) == 0
    with share_consumer(broker, "all", topic_name) as consumer:
        received = poll_until(consumer, len(values))
        assert sorted(m.value() for m in received) == sorted(values)
        assert {m.delivery_count() for m in received} == {1}
        assert poll_records(consumer, 1.0) == []  # accepted (implicitly, at this poll): never delivered again
        consumer.commit_sync(TIMEOUT_S)
    starts = broker.core.share_partitions.start_offsets("all")
    assert sum(start for start, _ in starts.values()) == len(values), "every start offset moved past its records"


def test_records_released_by_one_member_go_to_another(broker: Broker, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    set_group_configs(broker, "handover", share_auto_offset_reset="earliest")
    produce(broker, topic_name, 20)
    with share_consumer(broker, "handover", topic_name, share_acknowledgement_mode="explicit") as releasing:
        first = poll_until(releasing, 1)
        for message in first:
            releasing.acknowledge(message, AcknowledgeType.RELEASE)
        releasing.commit_sync(TIMEOUT_S)
    released = {m.offset() for m in first}
    assert released and {m.delivery_count() for m in first} == {1}
    with share_consumer(broker, "handover", topic_name) as accepting:
        received = poll_until(accepting, 20)
        assert sorted(m.offset() for m in received) == list(range(20))
        assert {m.offset(): m.delivery_count() for m in received if m.offset() in released} == dict.fromkeys(released, 2)


def test_a_test_sees_the_share_group_its_members_and_the_state_of_each_record(topic_name: str) -> None:
    """``Broker.group`` and the control API describe a share group: members with their assignment, and each share
    partition's start offset, lag and in-flight records (state, delivery count, holder, lock deadline)."""
    with Broker(clock="virtual", control=True) as broker:
        broker.create_topic(topic_name, 1)
        set_group_configs(broker, "seen", share_auto_offset_reset="earliest")
        produce(broker, topic_name, 6)
        with share_consumer(broker, "seen", topic_name, share_acknowledgement_mode="explicit") as consumer:
            records = poll_until(consumer, 6)
            kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.ACCEPT]
            for message, kind in zip(records, kinds):
                consumer.acknowledge(message, kind)
            consumer.commit_sync(TIMEOUT_S)
            view = broker.group("seen")
            [member] = view["members"]
            assert (view["protocol"], view["state"], member["assignment"]) == (
                "share", "Stable", [{"topic": topic_name, "partitions": [0]}])
            [partition] = view["partitions"]
            holder, deadline = member["member_id"], broker.core.clock() + LOCK_DURATION_MS
            assert (partition["topic"], partition["start_offset"], partition["end_offset"]) == (topic_name, 1, 6)
            assert [(b["first_offset"], b["last_offset"], b["state"], b["delivery_count"], b["member_id"],
                     b["lock_deadline_ms"]) for b in partition["in_flight"]] == [
                (1, 1, "available", 1, None, None), (2, 2, "archived", 1, None, None),
                (3, 3, "acknowledged", 1, None, None), (4, 5, "acquired", 1, holder, deadline),
            ]
            assert partition["lag"] == 3  # offsets 1, 4 and 5 are not finished
            status, listed = call(f"{broker.control_url}/v1/groups")
            assert status == 200
            assert {"group_id": "seen", "protocol": "share", "protocol_type": "share", "state": "Stable", "members": 1,
                    "coordinator": 1} in listed["groups"]
            for message in records[4:]:
                consumer.acknowledge(message)


def test_a_member_reading_partitions_of_three_nodes_gets_every_record_once(topic_name: str) -> None:
    """librdkafka opens a share session on each partition's leader, and each node keeps its own, as each Kafka broker
    does: with the partitions led by three nodes, 10,000 records come exactly once and every acknowledgement holds."""
    count = 10_000
    with Broker(nodes=3, clock="virtual") as broker:
        broker.create_topic(topic_name, 6)
        assert {broker.core.placements.of(topic_name, index).leader for index in range(6)} == {1, 2, 3}
        set_group_configs(broker, "spread", share_auto_offset_reset="earliest")
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        for number in range(count):
            producer.produce(topic_name, str(number).encode())
        assert producer.flush(TIMEOUT_S) == 0
        acknowledged: Counter[tuple[int, int]] = Counter()
        failures: list[KafkaException] = []

        def committed(offsets: dict[TopicPartition, set[int]], error: KafkaException | None) -> None:
            if error is not None:
                failures.append(error)
            for partition, partition_offsets in offsets.items():
                acknowledged.update((partition.partition, offset) for offset in partition_offsets)

        with share_consumer(broker, "spread", topic_name) as consumer:
            consumer.set_acknowledgement_commit_callback(committed)
            received = poll_until(consumer, count)
            consumer.commit_sync(TIMEOUT_S)  # the last poll's records, accepted (implicit acknowledgement)
        deliveries = Counter(int(m.value()) for m in received)
        assert [number for number, times in deliveries.items() if times > 1] == [], "no record delivered twice"
        assert sorted(deliveries) == list(range(count)), "no record missing"
        assert failures == []
        assert acknowledged == Counter((m.partition(), m.offset()) for m in received), "each delivery accepted once"
        starts = broker.core.share_partitions.start_offsets("spread")
        assert sum(start for start, _ in starts.values()) == count, "every start offset moved past its records"
