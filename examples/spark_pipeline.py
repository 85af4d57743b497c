"""A streaming pipeline on PySpark against a Kafka-compatible broker: minibroker in tests, a real cluster in production.

    events topic   {"user": "ada", "amount": 12.5, "ts": "2024-05-01T12:00:05Z"}
      -> parse JSON -> per-user count and sum in tumbling event-time windows
      -> results topic, keyed "user@window-start", value {"user", "window_start", "window_end", "events", "amount"}

The output mode is "append": a window's total is written once, when the watermark (the latest event time
seen minus the allowed lateness) passes the window's end; events later than that are dropped. Offsets and
open windows live in the checkpoint directory, so a restart processes only new events and still closes the
windows the previous run left open.

    pip install -e '.[spark]'
    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092 --checkpoint /tmp/pipeline-checkpoint --once
"""

from __future__ import annotations

import argparse
import logging
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import minibroker.spark

log = logging.getLogger("spark_pipeline")

EVENT_SCHEMA = "user STRING, amount DOUBLE, ts TIMESTAMP"
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ssXXX"


def window_totals(events: DataFrame, window: str, watermark: str) -> DataFrame:
    """Kafka rows in, Kafka rows (key, value) out; events that are not valid JSON with a user and a time are dropped."""
    parsed = (
        events.select(
            F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, {"timestampFormat": TIME_FORMAT}).alias("event")
        )
        .select("event.*")
        .where(F.col("user").isNotNull() & F.col("ts").isNotNull())
    )
    totals = (
        parsed.withWatermark("ts", watermark)
        .groupBy(F.window("ts", window).alias("window"), "user")
        .agg(F.count(F.lit(1)).alias("events"), F.sum(F.coalesce("amount", F.lit(0.0))).alias("amount"))
    )
    return totals.select(
        F.concat_ws("@", "user", F.date_format("window.start", TIME_FORMAT)).alias("key"),
        F.to_json(
            F.struct(
                "user",
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "events",
                "amount",
            ),
            {"timestampFormat": TIME_FORMAT},
        ).alias("value"),
    )


def start_pipeline(
    spark: SparkSession,
    bootstrap: str,
    checkpoint: str,
    *,
    input_topic: str = "events",
    output_topic: str = "event-totals",
    window: str = "1 minute",
    watermark: str = "1 minute",
    available_now: bool = False,
    max_offsets_per_trigger: int | None = None,
) -> StreamingQuery:
    """Start the query; with ``available_now`` it processes what is in the topic now and stops."""
    reader = (
        spark.readStream.format(minibroker.spark.FORMAT)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", input_topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    writer = (
        window_totals(reader.load(), window, watermark)
        .writeStream.format(minibroker.spark.FORMAT)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output_topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .queryName(f"{input_topic}-to-{output_topic}")
    )
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="5 seconds")
    return writer.start()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers, e.g. 127.0.0.1:9092")
    parser.add_argument("--checkpoint", required=True, help="checkpoint directory (offsets and window state)")
    parser.add_argument("--input-topic", default="events")
    parser.add_argument("--output-topic", default="event-totals")
    parser.add_argument("--window", default="1 minute", help="tumbling window length")
    parser.add_argument("--watermark", default="1 minute", help="how late an event may arrive")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--max-offsets-per-trigger", type=int)
    parser.add_argument(
        "--once", action="store_true", help="process what is there now (Trigger.AvailableNow), then exit"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = minibroker.spark.local_session(args.master, app_name="spark-pipeline")
    try:
        query = start_pipeline(
            spark,
            args.bootstrap,
            args.checkpoint,
            input_topic=args.input_topic,
            output_topic=args.output_topic,
            window=args.window,
            watermark=args.watermark,
            available_now=args.once,
            max_offsets_per_trigger=args.max_offsets_per_trigger,
        )
        log.info("query %s started; checkpoint %s", query.name, args.checkpoint)
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            log.info("stopping")
        finally:
            query.stop()
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
