"""Batch and streaming readers: plan one input partition per Kafka partition range on the driver, fetch on executors."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from minibroker.spark.clients import OffsetLookup
from minibroker.spark.config import SourceOptions
from minibroker.spark.fetcher import DataLossError, OffsetRange, read_range
from minibroker.spark.offsets import PartitionOffsets, from_json, rate_limit, to_json
from minibroker.spark.records import to_record_batch
from minibroker.spark.schema import arrow_schema

log = logging.getLogger(__name__)


@dataclass
class KafkaInputPartition(InputPartition):
    """One Spark task: a partition's ``[start, end)``."""

    range: OffsetRange


def read_partition(options: SourceOptions, schema: StructType, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    assert isinstance(partition, KafkaInputPartition)
    layout = arrow_schema(schema)
    for chunk in read_range(options, partition.range):
        yield to_record_batch(chunk, layout)


def plan(options: SourceOptions, start: PartitionOffsets, end: PartitionOffsets) -> list[KafkaInputPartition]:
    """Ranges with records; an end before its start means the partition lost records (or was recreated)."""
    ranges = []
    for (topic, partition), stop in sorted(end.items()):
        first = start[(topic, partition)]
        if stop < first:
            message = (
                f"{topic}-{partition}: end offset {stop} is before start {first} (records deleted or topic recreated)"
            )
            if options.fail_on_data_loss:
                raise DataLossError(f"{message}; set failOnDataLoss=false to skip")
            log.warning("%s; skipping (failOnDataLoss=false)", message)
        elif stop > first:
            ranges.append(KafkaInputPartition(OffsetRange(topic, partition, first, stop)))
    log.info("planned %d Kafka ranges: %s", len(ranges), [p.range for p in ranges])
    return ranges


class KafkaBatchReader(DataSourceReader):
    """``startingOffsets``..``endingOffsets`` (earliest..latest by default), resolved once when the query is planned."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        with OffsetLookup(self.options) as lookup:
            partitions = lookup.partitions()
            start = lookup.resolve(self.options.starting, partitions)
            end = lookup.resolve(self.options.ending, partitions)
        return plan(self.options, start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over Spark's per-partition offset JSON; honours maxOffsetsPerTrigger and Trigger.AvailableNow.

    Partitions that appear while the query runs are read from their earliest offset, as Spark does.
    The driver-side consumer lives as long as the query (Spark keeps this object in one process) and is never pickled.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._lookup: OffsetLookup | None = None
        self._target: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_lookup": None}

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.options)
        return self._lookup

    def initialOffset(self) -> dict:
        partitions = self.lookup.partitions()
        offsets = self.lookup.resolve(self.options.starting, partitions)
        log.info("stream starts at %s", to_json(offsets))
        return to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()
        log.info("Trigger.AvailableNow: reading up to %s", to_json(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json(start)
        latest = self._target if self._target is not None else self._latest()
        new = [tp for tp in latest if tp not in begin]
        if new:
            log.info("new partitions %s are read from their earliest offsets", new)
            begin.update(self.lookup.earliest(new))
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return to_json({**begin, **latest})

    def reportLatestOffset(self) -> dict:
        return to_json(self._latest())

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = from_json(start)
        until = from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self.lookup.earliest(new))
        return plan(self.options, begin, until)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(self.options, self.schema, partition)

    def commit(self, end: dict) -> None:
        log.debug("micro-batch done up to %s (no offsets are committed to Kafka)", end)

    def stop(self) -> None:
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None

    def _latest(self) -> PartitionOffsets:
        return self.lookup.latest(self.lookup.partitions())
