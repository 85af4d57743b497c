"""aiokafka against the broker: round trips per codec and acks, a 1 MiB message and ListOffsets.
aiokafka speaks only non-flexible versions (ApiVersions v0, Metadata <= 5, Produce <= 8, Fetch <= 11)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Sequence

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

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
    pytest.param({"enable_idempotence": True}, id="idempotent"),
    pytest.param({"acks": 0}, id="acks0"),
    pytest.param({"acks": 1}, id="acks1"),
    pytest.param({"acks": "all"}, id="acksall"),
]


async def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS, config: dict[str, str] | None = None) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    try:
        await asyncio.wait_for(admin.start(), TIMEOUT_S)
        response = await asyncio.wait_for(admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=config)]), TIMEOUT_S)
    finally:
        await admin.close()
    assert [(name, code) for name, code, *_ in response.topic_errors] == [(topic, 0)]


async def started_producer(bootstrap: str, **config: Any) -> AIOKafkaProducer:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS, **config)
    try:
        await asyncio.wait_for(producer.start(), TIMEOUT_S)
    except BaseException:
        await producer.stop()
        raise
    return producer


async def produce(bootstrap: str, topic: str, messages: Sequence[Message], **config: Any) -> list[Placement]:
    """Produce in order and return the placements. With acks=0 aiokafka resolves each send with None, so the
    messages are then spread over the partitions explicitly (round robin) and their offsets stay unknown."""
    unacknowledged = config.get("acks") == 0
    producer = await started_producer(bootstrap, **config)
    try:
        futures = []
        for i, m in enumerate(messages):
            partition = i % PARTITIONS if unacknowledged else None
            futures.append(await producer.send(topic, m.value, key=m.key, headers=list(m.headers), partition=partition))
        metadata = await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT_S)
    finally:
        await producer.stop()
    if unacknowledged:
        return [Placement(i % PARTITIONS, None) for i in range(len(messages))]
    return [Placement(md.partition, md.offset) for md in metadata]


async def started_consumer(bootstrap: str, **config: Any) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=TIMEOUT_MS,
        **config,
    )
    try:
        await asyncio.wait_for(consumer.start(), TIMEOUT_S)
    except BaseException:
        await consumer.stop()
        raise
    return consumer


async def consume(bootstrap: str, topic: str, counts: dict[int, int], partitions: int = PARTITIONS) -> list[Consumed]:
    consumer = await started_consumer(bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        wanted = sum(counts.values())
        consumed: list[Consumed] = []
        deadline = Deadline()
        while len(consumed) < wanted and deadline.left():
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500, max_records=2000), TIMEOUT_S)
            for records in batches.values():
                consumed += [
                    Consumed(r.partition, r.offset, Message(r.key, r.value, normalize_headers(r.headers))) for r in records
                ]
        assert len(consumed) >= wanted, f"consumed {len(consumed)} of {wanted} records in {TIMEOUT_S}s"
        return consumed
    finally:
        await consumer.stop()


@pytest.mark.parametrize("settings", ROUND_TRIPS)
async def test_round_trip(bootstrap: str, topic_name: str, settings: dict) -> None:
    await create_topic(bootstrap, topic_name)
    messages = make_messages()
    placements = await produce(bootstrap, topic_name, messages, **settings)
    counts = counts_by_partition(placements)
    assert sorted(counts) == list(range(PARTITIONS)), f"the default partitioner should use every partition: {counts}"
    check_round_trip(messages, placements, await consume(bootstrap, topic_name, counts))
    idempotent = settings.get("enable_idempotence", False)
    check_wire_format(bootstrap, topic_name, PARTITIONS, settings.get("compression_type"), idempotent)


async def test_one_mib_message(bootstrap: str, topic_name: str) -> None:
    await create_topic(bootstrap, topic_name, config={"max.message.bytes": str(BIG_MESSAGE_BYTES)})
    big = Message(b"big", random.Random(3).randbytes(MIB), (("size", b"1MiB"),))
    messages = [Message(b"big", b"before"), big, Message(b"big", b"after")]
    placements = await produce(bootstrap, topic_name, messages, max_request_size=2 * BIG_MESSAGE_BYTES)
    check_round_trip(messages, placements, await consume(bootstrap, topic_name, counts_by_partition(placements)))


async def test_list_offsets(bootstrap: str, topic_name: str) -> None:
    await create_topic(bootstrap, topic_name, partitions=1)
    t0 = int(time.time() * 1000) - 60_000
    stamps = record_timestamps(t0)
    producer = await started_producer(bootstrap)
    try:
        pending = []
        for i, stamp in enumerate(stamps):
            pending.append(await producer.send(topic_name, str(i).encode(), key=b"k", partition=0, timestamp_ms=stamp))
            if i < SEPARATE_BATCHES:
                await asyncio.wait_for(pending[-1], TIMEOUT_S)
        await asyncio.wait_for(asyncio.gather(*pending), TIMEOUT_S)
    finally:
        await producer.stop()

    tp = TopicPartition(topic_name, 0)
    consumer = await started_consumer(bootstrap)
    try:
        assert await asyncio.wait_for(consumer.beginning_offsets([tp]), TIMEOUT_S) == {tp: 0}
        assert await asyncio.wait_for(consumer.end_offsets([tp]), TIMEOUT_S) == {tp: len(stamps)}
        for asked, expected in timestamp_queries(t0):
            answer = (await asyncio.wait_for(consumer.offsets_for_times({tp: asked}), TIMEOUT_S))[tp]
            got = None if answer is None else (answer.offset, answer.timestamp)
            assert got == (None if expected is None else (expected, stamps[expected])), f"offsets_for_times({asked - t0:+d})"
    finally:
        await consumer.stop()
