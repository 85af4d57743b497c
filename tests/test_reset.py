"""reset(): one broker serves independent tests; topics, groups, transactions, faults and the transcript are gone,
and nothing of one test is seen by the next."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, drain
from tests.test_control import call
from tests.txnutil import make_producer

TOPIC = "shared"


def write_and_read(bootstrap: str, value: bytes) -> list[bytes]:
    """Create TOPIC, write ``value``, and read the topic from the start in group g: everything it holds."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1)])[TOPIC].result(TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(TOPIC, value, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(TOPIC, 0)], timeout=TIMEOUT_S)[0].offset
        assert committed < 0, "the group's offsets survived the reset"
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        [record] = drain(consumer, {0: 1})
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        return [record.message.value]
    finally:
        consumer.close()


@pytest.mark.parametrize("nodes", [1, 3])
def test_tests_separated_by_a_reset_see_only_their_own_data(nodes: int) -> None:
    with Broker(nodes=nodes) as broker:
        bootstrap = ",".join(broker.node_addresses.values())
        for run in range(5):
            assert write_and_read(bootstrap, f"run {run}".encode()) == [f"run {run}".encode()]
            assert broker.reset() == 1  # the topic; __consumer_offsets is emptied, not deleted
            offsets = broker.core.topic("__consumer_offsets")
            assert offsets is not None and all(log.empty() for log in offsets.partitions)


def test_reset_forgets_transactions_faults_and_the_transcript() -> None:
    with Broker(control=True, transcript=True) as broker:
        producer = make_producer("confluent", broker.bootstrap_servers, "txn-reset")
        try:
            producer.init()
        finally:
            producer.close()
        broker.add_fault("Metadata", action="delay", delay_ms=1)
        status, answer = call(f"{broker.control_url}/v1/reset", "POST")
        assert status == 200 and answer["topics_deleted"] == 0  # __transaction_state is emptied, not deleted
        assert broker.faults() == [] and broker.transcript() == []
        assert call(f"{broker.control_url}/v1/faults")[1]["faults"] == []
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert set(admin.list_topics(timeout=TIMEOUT_S).topics) == {"__transaction_state"}
        with pytest.raises(LookupError):
            broker.transaction("txn-reset")
        producer = make_producer("confluent", broker.bootstrap_servers, "txn-reset")
        try:
            producer.init()  # a new transactional id again
        finally:
            producer.close()
        assert broker.transaction("txn-reset")["producer_epoch"] == 0
        producer = make_producer("confluent", broker.bootstrap_servers, "txn-reset")
        try:
            producer.init()  # a new transaction coordinator, as on a new broker
        finally:
            producer.close()
