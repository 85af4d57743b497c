"""Internal-topic records as an emulated Kafka release wrote them (kafka.version, minibroker.config.record_versions): the
value versions of ``__consumer_offsets`` and ``__transaction_state`` records, read back whatever wrote them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minibroker.config.record_versions import written_versions
from minibroker.protocol import group_records as gr
from minibroker.protocol.txn_log_records import decode_value as decode_txn_value
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, confluent_create_topic, confluent_produce, make_messages
from tests.grouputil import wait_until

ONE_PARTITION = ("offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1")


@pytest.mark.parametrize(
    "release, offset_commit, group_metadata, txn_log",
    [("2.1", 3, 2, 0), ("2.2.1", 3, 2, 0), ("2.3", 3, 3, 0), ("3.9", 3, 3, 0), ("4.0", 3, 3, 1), ("4.1", 4, 3, 1),
     ("4.3", 4, 3, 1)],
)
def test_each_release_caps_the_values_it_wrote(release: str, offset_commit: int, group_metadata: int, txn_log: int) -> None:
    assert written_versions(release) == {
        "OffsetCommitValue": offset_commit, "GroupMetadataValue": group_metadata, "TransactionLogValue": txn_log,
    }


def test_a_cap_lowers_the_version_but_never_raises_it() -> None:
    value = gr.OffsetCommitValue(offset=42, metadata="m", commit_timestamp=7, leader_epoch=3)
    v3 = gr.encode_offset_value(value, written_versions("3.9"))
    assert v3 == struct.pack(">hqi", 3, 42, 3) + struct.pack(">h", 1) + b"m" + struct.pack(">q", 7)
    assert gr.decode_offset_value(v3) == value
    assert gr.encode_offset_value(value)[:2] == struct.pack(">h", 4)  # no emulation: minibroker's own
    expiring = gr.OffsetCommitValue(offset=42, metadata="", commit_timestamp=7, expire_timestamp=9)
    assert gr.encode_offset_value(expiring, written_versions("3.9"))[:2] == struct.pack(">h", 1)
    group = gr.GroupMetadataValue("consumer", 2, "range", "m-1", 5, (
        gr.MemberMetadata("m-1", None, "c", "/h", 300, 10, b"s", b"a"),
    ))
    v2 = gr.encode_group_value(group, written_versions("2.2"))
    assert v2[:2] == struct.pack(">h", 2)
    assert gr.decode_group_value(v2) == group


def internal_records(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    """Every (key, value) of partition 0 of an internal topic, read as a monitoring tool reads it."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "reader", "enable.partition.eof": True,
        "enable.auto.commit": False, "session.timeout.ms": TIMEOUT_MS // 3,
    })
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        records: list[tuple[bytes, bytes | None]] = []
        while True:
            msg = consumer.poll(TIMEOUT_S)
            assert msg is not None, f"no end of {topic} reached"
            if msg.error() is not None:
                assert msg.error().code() == -191, msg.error()  # _PARTITION_EOF
                return records
            records.append((msg.key(), msg.value()))
    finally:
        consumer.close()


def value_versions(records: list[tuple[bytes, bytes | None]], record_type: int) -> set[int]:
    return {
        struct.unpack(">h", value[:2])[0] for key, value in records
        if value is not None and struct.unpack(">h", key[:2])[0] == record_type
    }


def commit_as_group(bootstrap: str, topic: str, group: str, offset: int) -> None:
    """A subscribed consumer that joins ``group`` (a group metadata record) and commits ``offset`` of partition 0."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    try:
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.2) is not None or bool(consumer.assignment()), "an assignment")
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str, topic: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [partition] = consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT_S)
        return partition.offset
    finally:
        consumer.close()


def test_an_emulated_3_9_writes_offsets_at_v3_and_reads_back_any_version(tmp_path: Path, topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", *ONE_PARTITION)
    try:
        broker.start()  # first without emulation: minibroker's own versions
        confluent_create_topic(broker.bootstrap, topic_name, partitions=1)
        confluent_produce(broker.bootstrap, topic_name, make_messages(30, seed=1))
        commit_as_group(broker.bootstrap, topic_name, "g-new", 5)
        assert value_versions(internal_records(broker.bootstrap, gr.CONSUMER_OFFSETS), gr.OFFSET_COMMIT) == {4}
        broker.stop()

        broker.settings.append("kafka.version=3.9")
        broker.start()
        assert committed(broker.bootstrap, topic_name, "g-new") == 5  # a v4 record loads under 3.9
        commit_as_group(broker.bootstrap, topic_name, "g-old", 10)
        records = internal_records(broker.bootstrap, gr.CONSUMER_OFFSETS)
        offsets = {gr.decode_key(key).group: value[:2] for key, value in records if key[:2] == b"\x00\x01"}
        assert offsets == {"g-new": b"\x00\x04", "g-old": b"\x00\x03"}
        assert value_versions(records, gr.GROUP_METADATA) == {3}
        broker.stop()

        broker.settings.remove("kafka.version=3.9")
        broker.start()  # and the v3 records load without emulation
        assert committed(broker.bootstrap, topic_name, "g-old") == 10
        assert committed(broker.bootstrap, topic_name, "g-new") == 5
    finally:
        broker.stop()


def test_an_emulated_3_9_writes_transaction_log_values_at_v0(tmp_path: Path, topic_name: str) -> None:
    broker = BrokerProcess(tmp_path / "data", *ONE_PARTITION, "kafka.version=3.9")
    try:
        broker.start()
        confluent_create_topic(broker.bootstrap, topic_name, partitions=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1"})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce(topic_name, b"v", b"k")
        producer.commit_transaction(TIMEOUT_S)
        records = internal_records(broker.bootstrap, "__transaction_state")
        assert records and {value[:2] for _, value in records if value is not None} == {b"\x00\x00"}
        assert [decode_txn_value(value).status for _, value in records][-1] == 4  # CompleteCommit
        broker.stop()
        broker.settings.remove("kafka.version=3.9")
        broker.start()  # a v0 log loads: the id's epoch goes on from it
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1"})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce(topic_name, b"w", b"k")
        producer.commit_transaction(TIMEOUT_S)
        later = internal_records(broker.bootstrap, "__transaction_state")
        assert decode_txn_value(later[-1][1]).producer_epoch > decode_txn_value(records[-1][1]).producer_epoch
    finally:
        broker.stop()
