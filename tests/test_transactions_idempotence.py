"""Issue #4 acceptance: idempotent producers under forced retries, and consume-transform-produce.

Idempotence: the clients reach the broker through a proxy (the broker advertises the proxy's address) that
lets every Nth Produce request through but swallows its answer and drops the connection, so the client sends the
same batch again with the same sequence numbers; the broker must store it once. 10,000 records come back exactly
once each, in order per partition, both through a consumer and in the segment files.

Consume-transform-produce: offsets sent with send_offsets_to_transaction become the group's committed offsets only
when the transaction commits.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import decode_offset_value
from minibroker.protocol.key_partitions import partition_for

from tests.brokerproc import BrokerProcess
from tests.clientutil import Message, confluent_consumer, confluent_create_topic, confluent_produce
from tests.txnutil import (
    CLIENTS,
    IDEMPOTENCE_SETTING,
    OP_TIMEOUT_S,
    ProduceDroppingProxy,
    check_marker,
    consume,
    data_values,
    producer,
    producer_of,
    raw_offset_fetch,
    read_segments,
    running_broker,
    transactions_in,
    unique,
    values_by_partition,
)

RECORDS = 10_000
PARTITIONS = 3
DROP_EVERY = 5  # every 5th Produce request: its answer never reaches the client

# Small batches (many Produce requests, so many get dropped) and quick retries and reconnects.
RETRY_CONFIG: dict[str, dict[str, Any]] = {
    "confluent": {
        "batch.num.messages": 100, "linger.ms": 1, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50,
        "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50, "message.timeout.ms": 30000, "acks": "all",
    },
    "kafka-python": {"batch_size": 1000, "linger_ms": 1, "retry_backoff_ms": 10, "reconnect_backoff_ms": 10, "acks": "all"},
    "aiokafka": {"max_batch_size": 600, "linger_ms": 1, "retry_backoff_ms": 10, "acks": "all"},
}


def record_value(i: int) -> bytes:
    return b"%06d" % i


@pytest.fixture(scope="module")
def proxied_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ProduceDroppingProxy, BrokerProcess]]:
    """A broker reached through a ProduceDroppingProxy: it advertises the proxy's address, so that Metadata sends
    the clients back through the proxy (the proxy's port is picked first)."""
    proxy = ProduceDroppingProxy(every=DROP_EVERY, lifetime=300).start()
    try:
        data_dir = tmp_path_factory.mktemp("proxied") / "data"
        with running_broker(data_dir, f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}") as broker:
            proxy.target = ("127.0.0.1", broker.port)
            yield proxy, broker
    finally:
        proxy.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_idempotent_producer_retries_are_stored_once(
    client: str, proxied_broker: tuple[ProduceDroppingProxy, BrokerProcess], topic_name: str
) -> None:
    proxy, broker = proxied_broker
    confluent_create_topic(proxy.bootstrap, topic_name, PARTITIONS)
    dropped, connections, requests = proxy.dropped, proxy.connections, proxy.produce_requests
    config = {IDEMPOTENCE_SETTING[client]: True, **RETRY_CONFIG[client]}
    started = time.monotonic()
    with producer(client, proxy.bootstrap, None, **config) as idempotent:
        idempotent.send_many(topic_name, [(i % PARTITIONS, record_value(i)) for i in range(RECORDS)])
        idempotent.flush()
    elapsed = time.monotonic() - started
    dropped, connections, requests = proxy.dropped - dropped, proxy.connections - connections, proxy.produce_requests - requests
    print(f"{client}: {RECORDS} records in {elapsed:.2f}s, {dropped} of {requests} Produce answers dropped")
    assert dropped >= 3, f"only {dropped} answers dropped of {requests} Produce requests"
    assert connections > dropped, "the client did not reconnect after the dropped answers"

    expected = {p: [record_value(i) for i in range(p, RECORDS, PARTITIONS)] for p in range(PARTITIONS)}
    # The segment files: each record once, in order, in idempotent (non-transactional) batches without gaps.
    for p in range(PARTITIONS):
        batches = read_segments(broker.data_dir, topic_name, p)
        stored = data_values(batches)
        assert len(stored) == len(set(stored)), f"partition {p}: {len(stored) - len(set(stored))} duplicates stored"
        assert stored == expected[p], f"partition {p}: {len(stored)} stored, {len(expected[p])} sent"
        assert len({b.header.producer_id for b in batches}) == 1 and batches[0].header.producer_id >= 0
        assert not any(b.header.is_transactional or b.header.is_control for b in batches)
        sequences = [(b.header.base_sequence, b.header.records_count) for b in batches]
        assert [s for s, _ in sequences] == [sum(n for _, n in sequences[:k]) for k in range(len(sequences))], (
            f"partition {p}: batch sequences with gaps or repeats"
        )
    got = consume(client, proxy.bootstrap, topic_name, PARTITIONS, RECORDS, "read_uncommitted", settle=0.2)
    assert values_by_partition(got) == expected
    for p in range(PARTITIONS):
        offsets = [g.offset for g in got if g.partition == p]
        assert offsets == list(range(len(expected[p]))), f"partition {p}: offsets with gaps"


# ---- consume-transform-produce ----

INPUT_RECORDS = 10
OFFSETS_TOPIC_PARTITIONS = 50  # the session broker's offsets.topic.num.partitions (the default)


def committed_offset(bootstrap: str, group_id: str, topic: str) -> int | None:
    """The group's committed offset as a client sees it. The consumer is read_uncommitted so that librdkafka does
    not ask for stable offsets (KIP-447: with require_stable it retries while a transaction holds pending offsets,
    until the transaction ends); see check_pending for that side."""
    consumer = confluent_consumer(bootstrap, **{"group.id": group_id, "isolation.level": "read_uncommitted"})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=OP_TIMEOUT_S)
    finally:
        consumer.close()
    return tp.offset if tp.offset >= 0 else None


def check_pending(bootstrap: str, group_id: str, topic: str, committed: int | None) -> None:
    """While a transaction holds offsets for the partition: without require_stable OffsetFetch answers the last
    committed offset (-1: none), with it UNSTABLE_OFFSET_COMMIT, which clients retry (KIP-447)."""
    assert committed_offset(bootstrap, group_id, topic) == committed, "transactional offsets visible before the commit"
    stored = -1 if committed is None else committed
    assert raw_offset_fetch(bootstrap, group_id, topic, 0, require_stable=False) == (ErrorCode.NONE, stored)
    error, _ = raw_offset_fetch(bootstrap, group_id, topic, 0, require_stable=True)
    assert error == ErrorCode.UNSTABLE_OFFSET_COMMIT


@pytest.mark.parametrize("client", CLIENTS)
def test_consume_transform_produce(client: str, broker: BrokerProcess, topic_name: str) -> None:
    bootstrap = broker.bootstrap
    source, sink, group_id = f"{topic_name}-in", f"{topic_name}-out", unique("ctp-group")
    confluent_create_topic(bootstrap, source, 1)
    confluent_create_topic(bootstrap, sink, 1)
    confluent_produce(bootstrap, source, [Message(None, b"in-%d" % i) for i in range(INPUT_RECORDS)])
    consumer = confluent_consumer(bootstrap, **{"group.id": group_id, "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(source, 0, OFFSET_BEGINNING)])
        inputs = []
        deadline = time.monotonic() + OP_TIMEOUT_S
        while len(inputs) < INPUT_RECORDS and time.monotonic() < deadline:
            inputs += [m for m in consumer.consume(INPUT_RECORDS, timeout=0.2) if m.error() is None]
        assert [m.value() for m in inputs] == [b"in-%d" % i for i in range(INPUT_RECORDS)]
        half = INPUT_RECORDS // 2
        with producer(client, bootstrap, unique("ctp")) as txn:
            # First half: transformed, offsets sent, committed.
            txn.begin()
            for m in inputs[:half]:
                txn.send(sink, 0, m.value().upper())
            txn.send_offsets(source, 0, half, group_id, consumer)
            check_pending(bootstrap, group_id, source, None)
            txn.commit()
            assert committed_offset(bootstrap, group_id, source) == half
            # Second half: transformed, offsets sent, aborted: the committed offset stays.
            txn.begin()
            for m in inputs[half:]:
                txn.send(sink, 0, m.value().upper())
            txn.send_offsets(source, 0, INPUT_RECORDS, group_id, consumer)
            txn.flush()
            check_pending(bootstrap, group_id, source, half)
            txn.abort()
            assert committed_offset(bootstrap, group_id, source) == half
    finally:
        consumer.close()
    got = values_by_partition(consume(client, bootstrap, sink, 1, half, "read_committed"))
    assert got == {0: [b"IN-%d" % i for i in range(half)]}

    # The group's __consumer_offsets partition was part of both transactions: each offset commit record is followed
    # by the marker of its transaction, as in the output topic.
    producer_id, epoch = producer_of(read_segments(broker.data_dir, sink, 0), b"IN-0")
    offsets_partition = partition_for(group_id, OFFSETS_TOPIC_PARTITIONS)
    batches = read_segments(broker.data_dir, "__consumer_offsets", offsets_partition)
    [(first, commit), (second, abort)] = transactions_in(batches, producer_id)
    assert [decode_offset_value(v).offset for v in first] == [half]
    assert [decode_offset_value(v).offset for v in second] == [INPUT_RECORDS]
    check_marker(commit, commit=True, producer_id=producer_id, producer_epoch=epoch)
    check_marker(abort, commit=False, producer_id=producer_id, producer_epoch=epoch)
