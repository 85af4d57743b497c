"""The INFO log is for people: one line per event a user acts on (a topic created, a member joining, a broker ready),
none per partition of housekeeping (leader epochs of new partitions, loading partitions that hold nothing)."""

from __future__ import annotations

import logging
import re
import time

import pytest
from confluent_kafka import Consumer, Producer

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S

PARTITION_OF_INTERNAL_TOPIC = re.compile(r"__(consumer_offsets|transaction_state|share_group_state)-\d+")


def consume_one_and_commit(bootstrap: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "readers", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def test_a_typical_run_logs_a_handful_of_lines_per_topic(caplog: pytest.LogCaptureFixture, tmp_path) -> None:
    """Two topics of three partitions, a transaction, a consumer group and a restart: each of the four topics
    (two internal) is one line, the group's rebalances a few, and none of the 106 partitions has a line of its own."""
    caplog.set_level(logging.INFO, logger="minibroker")
    with Broker(data_dir=tmp_path) as broker:
        for topic in ("orders", "payments"):
            broker.create_topic(topic, 3)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "writer"})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce("orders", b"order 1")
        producer.commit_transaction(TIMEOUT_S)
        consume_one_and_commit(broker.bootstrap_servers, "orders")
        broker.restart()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and r.name.startswith("minibroker")]
    created = sorted(line.split(" with ")[0] for line in lines if "created" in line and "topic" in line)
    assert created == [f"created topic {name}" for name in ("__consumer_offsets", "__transaction_state", "orders", "payments")]
    assert not [line for line in lines if "leader epoch" in line]
    loads = [line for line in lines if PARTITION_OF_INTERNAL_TOPIC.search(line)]
    assert len(loads) <= 2, loads  # the restart loads one partition of each internal topic that holds data
    assert len(lines) <= 5 * 4 + 10, "\n".join(lines)  # a handful per topic, plus the group's and the lifecycle's
