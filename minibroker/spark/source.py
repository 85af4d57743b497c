"""The PySpark data source: ``spark.read/readStream/write/writeStream.format("minibroker")``."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from minibroker.spark import ALIAS, FORMAT
from minibroker.spark.config import KafkaOptionError, SinkOptions, include_headers, sink_options, source_options
from minibroker.spark.reader import KafkaBatchReader, KafkaStreamReader
from minibroker.spark.schema import source_schema
from minibroker.spark.writer import KafkaBatchWriter, KafkaStreamWriter, check_sink


class KafkaDataSource(DataSource):
    """Kafka-compatible brokers (minibroker or a real cluster) through confluent-kafka, with Spark's Kafka options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return source_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return KafkaBatchReader(source_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return KafkaStreamReader(source_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return KafkaBatchWriter(self._sink(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """``overwrite`` is complete output mode: a topic cannot be truncated, so each trigger appends the whole
        result, as Spark's Kafka sink does."""
        return KafkaStreamWriter(self._sink(schema, overwrite=False))

    def _check_schema(self, schema: StructType) -> None:
        expected = self.schema()
        if schema != expected:
            raise KafkaOptionError(
                f"the Kafka source has a fixed schema and cannot be read as {schema.simpleString()}; "
                f"it is {expected.simpleString()}"
            )

    def _sink(self, schema: StructType, overwrite: bool) -> SinkOptions:
        if overwrite:
            raise KafkaOptionError("Kafka topics cannot be overwritten: use mode('append')")
        options = sink_options(self.options)
        check_sink(options, schema)
        return options


class KafkaDataSourceAlias(KafkaDataSource):
    """The same source under a second name, for pipelines that want to say what it is rather than where it runs."""

    @classmethod
    def name(cls) -> str:
        return ALIAS
