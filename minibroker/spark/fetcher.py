"""Read one partition's offset range on an executor, by assignment (no consumer group, nothing committed).

Under read_committed, aborted records and transaction markers occupy offsets the consumer never returns,
so "the range is done" cannot wait for the record at ``end - 1``: it is done when a record at or past
``end`` arrives, when the consumer reports end-of-partition at or past ``end``, or when its position
(which moves past markers) reaches ``end``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from minibroker.spark.clients import make_consumer, unavailable
from minibroker.spark.config import SourceOptions

log = logging.getLogger(__name__)

CHUNK = 5000
POLL_INTERVAL_S = 0.2


class DataLossError(RuntimeError):
    """Records the query needs are gone (retention, deleted records); see the ``failOnDataLoss`` option."""


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one partition: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int


def read_range(options: SourceOptions, rng: OffsetRange) -> Iterator[list[Message]]:
    """Yield the range's visible records in chunks; fail after ``kafkaConsumer.pollTimeoutMs`` without progress."""
    if rng.start >= rng.end:
        return
    consumer = make_consumer(options.consumer_config())
    try:
        start = _first_available(consumer, options, rng)
        if start >= rng.end:
            return
        consumer.assign([TopicPartition(rng.topic, rng.partition, start)])
        yield from _consume(consumer, options, rng)
    finally:
        consumer.close()


def _first_available(consumer: Consumer, options: SourceOptions, rng: OffsetRange) -> int:
    """The range start, or the log start when records before it were deleted and data loss is tolerated."""
    timeout_s = options.metadata_timeout_ms / 1000
    try:
        low, _ = consumer.get_watermark_offsets(
            TopicPartition(rng.topic, rng.partition), timeout=timeout_s, cached=False
        )
    except KafkaException as exc:
        raise unavailable(options.bootstrap, timeout_s, exc) from None
    if rng.start >= low:
        return rng.start
    gone = f"{rng.start}..{min(low, rng.end) - 1}"
    message = f"{rng.topic}-{rng.partition}: offsets {gone} no longer exist (the log starts at {low})"
    if options.fail_on_data_loss:
        raise DataLossError(f"{message}; set failOnDataLoss=false to skip them")
    log.warning("%s; skipping them (failOnDataLoss=false)", message)
    return low


def _consume(consumer: Consumer, options: SourceOptions, rng: OffsetRange) -> Iterator[list[Message]]:
    tp = TopicPartition(rng.topic, rng.partition)
    timeout_s = options.poll_timeout_ms / 1000
    deadline = time.monotonic() + timeout_s
    while True:
        chunk: list[Message] = []
        done = False
        for message in consumer.consume(CHUNK, POLL_INTERVAL_S):
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                done = done or message.offset() >= rng.end
                continue
            if message.offset() >= rng.end:
                done = True
                break
            chunk.append(message)
            if message.offset() == rng.end - 1:
                done = True
                break
        if chunk:
            deadline = time.monotonic() + timeout_s
            yield chunk
        if done or consumer.position([tp])[0].offset >= rng.end:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{rng.topic}-{rng.partition}: no progress towards offset {rng.end} for {timeout_s:g}s "
                f"from {options.bootstrap} (kafkaConsumer.pollTimeoutMs)"
            )
