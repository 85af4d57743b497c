"""Restarts on the same data dir: after SIGTERM or SIGKILL everything acknowledged is readable and offsets
continue; a torn tail in the active segment is truncated at start-up with a warning, nothing before it lost."""

from __future__ import annotations

import random
import re
import signal
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource, ResourceType
from minibroker.protocol.records import build_batch

from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    TIMEOUT_S,
    check_round_trip,
    confluent_admin,
    confluent_consume,
    confluent_consumer,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    make_messages,
)

STOPS = [pytest.param(signal.SIGTERM, id="sigterm"), pytest.param(signal.SIGKILL, id="sigkill")]
RETENTION_OVERRIDE = {"retention.ms": "7200000"}


def retention_ms(bootstrap: str, topic: str) -> str:
    admin = confluent_admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(timeout=TIMEOUT_S)["retention.ms"].value


@pytest.mark.parametrize("stop_signal", STOPS)
def test_restart_keeps_data_and_offsets(fresh_broker: BrokerProcess, topic_name: str, stop_signal: int) -> None:
    fresh_broker.start()
    confluent_create_topic(fresh_broker.bootstrap, topic_name, config=RETENTION_OVERRIDE)
    first = make_messages(300, seed=1)
    placements = confluent_produce(fresh_broker.bootstrap, topic_name, first, acks="all")

    fresh_broker.stop(stop_signal)
    fresh_broker.start()

    assert retention_ms(fresh_broker.bootstrap, topic_name) == RETENTION_OVERRIDE["retention.ms"]
    counts = counts_by_partition(placements)
    check_round_trip(first, placements, confluent_consume(fresh_broker.bootstrap, topic_name, counts))

    second = make_messages(60, seed=2)
    more = confluent_produce(fresh_broker.bootstrap, topic_name, second)
    next_offsets = dict(counts)
    for placement in more:
        assert placement.offset == next_offsets.get(placement.partition, 0), f"offsets must continue after restart: {placement}"
        next_offsets[placement.partition] = placement.offset + 1
    everything = first + second
    check_round_trip(everything, placements + more, confluent_consume(fresh_broker.bootstrap, topic_name, next_offsets))


def segment_path(broker: BrokerProcess, topic: str) -> Path:
    return broker.data_dir / f"{topic}-0" / "00000000000000000000.log"


def random_tail(next_offset: int) -> bytes:
    return random.Random(7).randbytes(333)


def half_batch(next_offset: int) -> bytes:
    batch = build_batch([(b"torn", b"x" * 200)] * 3, base_offset=next_offset)
    return batch[: len(batch) // 2]


def bad_crc_batch(next_offset: int) -> bytes:
    batch = bytearray(build_batch([(b"torn", b"y" * 50)] * 2, base_offset=next_offset))
    batch[-1] ^= 0xFF
    return bytes(batch)


def zero_fill(next_offset: int) -> bytes:
    return bytes(4096)


GARBAGE: dict[str, Callable[[int], bytes]] = {
    "random-bytes": random_tail,
    "half-batch": half_batch,
    "bad-crc-batch": bad_crc_batch,
    "zero-fill": zero_fill,
}


# A torn write comes from a crash, so every kind of tail follows a SIGKILL; one follows a clean stop, after
# which the broker must not trust the tail either.
TORN_TAILS = [pytest.param(kind, signal.SIGKILL, id=f"{kind}-sigkill") for kind in GARBAGE]
TORN_TAILS.append(pytest.param("half-batch", signal.SIGTERM, id="half-batch-sigterm"))


@pytest.mark.parametrize("garbage, stop_signal", TORN_TAILS)
def test_torn_tail_is_truncated(fresh_broker: BrokerProcess, topic_name: str, garbage: str, stop_signal: int) -> None:
    fresh_broker.start()
    confluent_create_topic(fresh_broker.bootstrap, topic_name, partitions=1)
    messages = make_messages(50, seed=3)
    placements = []
    for chunk in range(0, len(messages), 10):  # several batches, so the tail sits behind other batches
        placements += confluent_produce(fresh_broker.bootstrap, topic_name, messages[chunk : chunk + 10])
    fresh_broker.stop(stop_signal)

    segment = segment_path(fresh_broker, topic_name)
    good_size = segment.stat().st_size
    with segment.open("ab") as f:
        f.write(GARBAGE[garbage](len(messages)))
    log_start = len(fresh_broker.log_text())
    fresh_broker.start()

    warnings = [
        line
        for line in fresh_broker.log_text()[log_start:].splitlines()
        if " WARNING " in line and re.search("truncat", line, re.IGNORECASE) and topic_name in line
    ]
    assert warnings, f"no WARNING about truncating {topic_name}:\n{fresh_broker.log_text()[log_start:]}"
    assert segment.stat().st_size == good_size, "the torn tail must be cut off the segment file"
    consumed = confluent_consume(fresh_broker.bootstrap, topic_name, {0: len(messages)}, partitions=1)
    check_round_trip(messages, placements, consumed)

    [after] = confluent_produce(fresh_broker.bootstrap, topic_name, make_messages(1, seed=4))
    assert after.offset == len(messages)
    consumer = confluent_consumer(fresh_broker.bootstrap)
    try:
        watermarks = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=TIMEOUT_S, cached=False)
    finally:
        consumer.close()
    assert watermarks == (0, len(messages) + 1)
