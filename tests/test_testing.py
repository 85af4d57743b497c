"""``minibroker.testing.Broker`` with real clients: ``with`` (own thread and loop), ``async with`` (the test's loop),
restarts on the same port and data, settings by keyword or mapping, and temporary data directories."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from confluent_kafka.admin import AdminClient

from minibroker.commands.probe import probe
from minibroker.config.settings import ConfigError
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_MS, TIMEOUT_S, confluent_consumer, drain


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> list[int]:
    from confluent_kafka import Producer

    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": TIMEOUT_MS})
    try:
        for value in values:
            producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: offsets.append(msg.offset()) if not err else None)
        assert producer.flush(TIMEOUT_S) == 0
    finally:
        producer.close()
    return offsets


def consume_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = confluent_consumer(bootstrap)
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        return [c.message.value for c in drain(consumer, {0: count})]
    finally:
        consumer.close()


def test_sync_broker_round_trip_with_confluent_kafka() -> None:
    with Broker() as broker:  # how fast it starts: benchmarks/startup.py
        _, port = broker.address
        assert broker.bootstrap_servers == f"127.0.0.1:{port}" and port > 0
        data_dir = broker.data_dir
        assert data_dir.is_dir()
        values = [f"message {i}".encode() for i in range(50)]
        assert produce_values(broker.bootstrap_servers, "sync-topic", values) == list(range(50))
        assert consume_values(broker.bootstrap_servers, "sync-topic", 50) == values
    assert not data_dir.exists(), "the temporary data directory must be removed on exit"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_restart_keeps_port_and_data_and_clients_reconnect(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    with Broker(data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": TIMEOUT_MS})
        try:
            producer.produce("kept", value=b"before", partition=0)
            assert producer.flush(TIMEOUT_S) == 0
            broker.restart()
            assert broker.bootstrap_servers == bootstrap
            producer.produce("kept", value=b"after", partition=0)
            assert producer.flush(TIMEOUT_S) == 0, "the same producer must reach the restarted broker"
        finally:
            producer.close()
        assert consume_values(bootstrap, "kept", 2) == [b"before", b"after"]
    assert (tmp_path / "kept-0").is_dir(), "a data_dir given by the caller is kept"


def test_settings_by_keyword_and_by_mapping() -> None:
    with Broker(num_partitions=3, auto_create_topics_enable=True) as by_keyword, Broker({"num.partitions": 2}) as by_mapping:
        for broker, expected in ((by_keyword, 3), (by_mapping, 2)):
            assert broker.config.num_partitions == expected
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            produce_values(broker.bootstrap_servers, "auto", [b"x"])
            topics = admin.list_topics("auto", timeout=TIMEOUT_S).topics
            assert len(topics["auto"].partitions) == expected


def test_unknown_setting_warns_and_invalid_one_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    """As Kafka does: a name it does not know is a warning with the closest known name; a bad value stops."""
    with caplog.at_level(logging.WARNING, logger="minibroker"), Broker(num_partitons=2):
        pass
    assert "'num.partitons' was supplied but isn't a known config. Did you mean 'num.partitions'?" in caplog.text
    with pytest.raises(ConfigError, match="num.partitions"):
        Broker(num_partitions=0).start()


def test_a_failed_start_raises_in_the_caller_and_cleans_up(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = Broker(port=taken.getsockname()[1])
        with pytest.raises(OSError):
            broker.start()
        assert not broker.running


def test_mode_mismatch_is_explained() -> None:
    with Broker() as broker:
        with pytest.raises(RuntimeError, match="already running"):
            broker.start()
        with pytest.raises(RuntimeError, match="arestart"):
            asyncio.run(broker.arestart())


async def test_async_broker_round_trip_with_aiokafka() -> None:
    async with Broker() as broker:
        data_dir = broker.data_dir
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait("async-topic", f"event {i}".encode(), partition=0)
        finally:
            await producer.stop()

        await broker.arestart()
        assert (await asyncio.to_thread(probe, broker.bootstrap_servers)).error_code == 0  # blocking: not on the broker's loop

        consumer = AIOKafkaConsumer(
            "async-topic", bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest", enable_auto_commit=False
        )
        await consumer.start()
        try:
            got: list[bytes] = []
            async with asyncio.timeout(TIMEOUT_S):
                async for message in consumer:
                    got.append(message.value)
                    if len(got) == 20:
                        break
        finally:
            await consumer.stop()
        assert got == [f"event {i}".encode() for i in range(20)]
    assert not data_dir.exists()


def test_create_topic_makes_a_topic_as_create_topics_would_and_names_refusals() -> None:
    with Broker(nodes=2) as broker:
        broker.create_topic("made", 3, 2, {"cleanup.policy": "compact", "retention.ms": 1000})
        info = broker.core.topic("made")
        assert info is not None and len(info.partitions) == 3
        assert info.overrides == {"cleanup.policy": "compact", "retention.ms": "1000"}
        assert all(len(broker.core.placements.of("made", p).replicas) == 2 for p in range(3))
        refused = {
            ("made", 1, 1): "TOPIC_ALREADY_EXISTS",
            ("bad name", 1, 1): "INVALID_TOPIC_EXCEPTION",
            ("t", 0, 1): "INVALID_PARTITIONS",
            ("t", 1, 3): "INVALID_REPLICATION_FACTOR",
        }
        for (name, partitions, factor), error in refused.items():
            with pytest.raises(ValueError, match=error):
                broker.create_topic(name, partitions, factor)
