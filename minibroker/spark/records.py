"""Kafka records to Arrow batches: one batch per fetched chunk, far cheaper for Spark than one tuple per row."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
from confluent_kafka import Message

# confluent-kafka's timestamp types (not available, create time, log append time) -> the Java client's ids Spark shows.
TIMESTAMP_TYPE_IDS = {0: -1, 1: 0, 2: 1}


def to_record_batch(messages: Sequence[Message], schema: pa.Schema) -> pa.RecordBatch:
    """Columns in ``schema``'s order; ``headers`` only when the schema has it (null for a record without any)."""
    timestamps = [message.timestamp() for message in messages]
    columns: dict[str, list[Any]] = {
        "key": [message.key() for message in messages],
        "value": [message.value() for message in messages],
        "topic": [message.topic() for message in messages],
        "partition": [message.partition() for message in messages],
        "offset": [message.offset() for message in messages],
        "timestamp": [ms * 1000 if kind else None for kind, ms in timestamps],
        "timestampType": [TIMESTAMP_TYPE_IDS.get(kind, -1) for kind, _ in timestamps],
    }
    if "headers" in schema.names:
        columns["headers"] = [_headers(message) for message in messages]
    arrays = [pa.array(columns[field.name], type=field.type) for field in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _headers(message: Message) -> list[dict[str, Any]] | None:
    headers = message.headers()
    if not headers:
        return None
    return [{"key": key, "value": value} for key, value in headers]
