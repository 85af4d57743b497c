"""The row layout of Spark's Kafka connector, so a pipeline reads the same columns from either source."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_FIELD = StructField(
    "headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
)

BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]


def source_schema(include_headers: bool) -> StructType:
    """Spark's Kafka schema; ``headers`` only with ``includeHeaders=true``, as in Spark."""
    return StructType(BASE_FIELDS + ([HEADERS_FIELD] if include_headers else []))


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches in (it compares them exactly, timestamps in UTC)."""
    return to_arrow_schema(schema, timezone="UTC")
