"""Produce rows to Kafka from an executor: at-least-once, like Spark's Kafka sink (a retried task may resend)."""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from minibroker.spark.clients import make_producer
from minibroker.spark.config import SinkOptions

log = logging.getLogger(__name__)

SERVE_EVERY = 1000
FULL_QUEUE_WAIT_S = 0.1


def produce_rows(options: SinkOptions, rows: Iterable[Mapping[str, Any]]) -> int:
    """Send every row and wait for all acknowledgements; the first delivery error fails the task."""
    producer = make_producer(options.producer_config())
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    count = 0
    for row in rows:
        _produce(producer, _record(options, row), on_delivery)
        count += 1
        if count % SERVE_EVERY == 0:
            producer.poll(0)
        if failures:
            break
    unsent = producer.flush()
    if failures:
        raise KafkaException(failures[0])
    if unsent:
        raise TimeoutError(f"{unsent} records to {options.bootstrap} were not acknowledged")
    log.info("produced %d records to %s", count, options.bootstrap)
    return count


def _record(options: SinkOptions, row: Mapping[str, Any]) -> dict[str, Any]:
    topic = options.topic or row.get("topic")
    if not topic:
        raise ValueError("a row has no topic: set the 'topic' option or give every row a non-null 'topic' column")
    record: dict[str, Any] = {"topic": topic, "key": _bytes(row.get("key")), "value": _bytes(row.get("value"))}
    if row.get("partition") is not None:
        record["partition"] = int(row["partition"])
    if row.get("headers"):
        record["headers"] = [(header["key"], _bytes(header["value"])) for header in row["headers"]]
    return record


def _produce(producer: Producer, record: dict[str, Any], on_delivery: Any) -> None:
    """Wait for room when librdkafka's local queue is full instead of failing the task."""
    while True:
        try:
            producer.produce(**record, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(FULL_QUEUE_WAIT_S)


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)
