"""Batch and streaming writers: check the DataFrame's columns on the driver, produce on the executors."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, Sequence

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, DataType, IntegerType, StringType, StructType

from minibroker.spark.clients import check_reachable, make_producer
from minibroker.spark.config import KafkaOptionError, SinkOptions
from minibroker.spark.schema import HEADERS_FIELD
from minibroker.spark.sink import produce_rows

log = logging.getLogger(__name__)

ALLOWED_COLUMN_TYPES: dict[str, tuple[DataType, ...]] = {
    "key": (StringType(), BinaryType()),
    "value": (StringType(), BinaryType()),
    "topic": (StringType(),),
    "partition": (IntegerType(),),
    "headers": (HEADERS_FIELD.dataType,),
}


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    records: int


def check_sink(options: SinkOptions, schema: StructType) -> None:
    """Spark's rules: a ``value`` column; a topic from the option or a ``topic`` column; known columns typed right."""
    columns = {field.name: field.dataType for field in schema.fields}
    if "value" not in columns:
        raise KafkaOptionError(f"the DataFrame needs a 'value' column (string or binary); it has {list(columns)}")
    if options.topic is None and "topic" not in columns:
        raise KafkaOptionError("set the 'topic' option or give the DataFrame a 'topic' column")
    for name, allowed in ALLOWED_COLUMN_TYPES.items():
        if name in columns and columns[name] not in allowed:
            expected = " or ".join(t.simpleString() for t in allowed)
            raise KafkaOptionError(f"column {name!r} must be {expected}, not {columns[name].simpleString()}")
    check_reachable(make_producer(options.producer_config()), options.bootstrap, options.metadata_timeout_ms / 1000)


def _write(options: SinkOptions, rows: Iterator[Row]) -> KafkaCommitMessage:
    return KafkaCommitMessage(produce_rows(options, (row.asDict(recursive=True) for row in rows)))


def _total(messages: Sequence[WriterCommitMessage | None]) -> int:
    return sum(m.records for m in messages if isinstance(m, KafkaCommitMessage))


class KafkaBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> KafkaCommitMessage:
        return _write(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("wrote %d records to %s", _total(messages), self.options.bootstrap)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "write aborted after %d records reached %s (Kafka cannot take them back)",
            _total(messages),
            self.options.bootstrap,
        )


class KafkaStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> KafkaCommitMessage:
        return _write(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("micro-batch %d: wrote %d records to %s", batchId, _total(messages), self.options.bootstrap)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "micro-batch %d aborted after %d records reached %s; the retry resends them (at-least-once)",
            batchId,
            _total(messages),
            self.options.bootstrap,
        )
