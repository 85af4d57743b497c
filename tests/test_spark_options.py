"""The Spark data source's option parsing and offset arithmetic, which need neither Spark nor a broker."""

from __future__ import annotations

import subprocess
import sys

import pytest

import minibroker.spark
from minibroker.spark.config import KafkaOptionError, sink_options, source_options
from minibroker.spark.offsets import OffsetOptionError, OffsetSpec, from_json, parse_offsets, rate_limit, to_json

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_offset_json_round_trips_in_sparks_layout() -> None:
    offsets = {("b", 10): 7, ("b", 2): 3, ("a", 0): -1}
    assert list(to_json(offsets).items()) == [("a", {"0": -1}), ("b", {"2": 3, "10": 7})]
    assert from_json(to_json(offsets)) == offsets
    with pytest.raises(OffsetOptionError, match="offset of t-0 must be an integer"):
        from_json({"t": {"0": "5"}})


def test_parse_offsets() -> None:
    assert parse_offsets("startingOffsets", " Earliest ", ending=False) == OffsetSpec("earliest")
    assert parse_offsets("startingOffsets", '{"t": {"0": -2, "1": 5}}', ending=False) == OffsetSpec(
        "offsets", {("t", 0): -2, ("t", 1): 5}
    )
    with pytest.raises(OffsetOptionError, match="'earliest' is not allowed as an ending offset"):
        parse_offsets("endingOffsets", "earliest", ending=True)
    with pytest.raises(OffsetOptionError, match="endingOffsets: invalid offset -2 for t-0"):
        parse_offsets("endingOffsets", '{"t": {"0": -2}}', ending=True)
    with pytest.raises(OffsetOptionError, match="startingOffsets: expected 'earliest', 'latest' or JSON"):
        parse_offsets("startingOffsets", "oldest", ending=False)


def test_rate_limit_shares_the_limit_like_spark() -> None:
    start = {("t", 0): 0, ("t", 1): 100}
    assert rate_limit(start, {("t", 0): 5, ("t", 1): 105}, 4) == {("t", 0): 2, ("t", 1): 102}
    # A share below one record rounds up, so a small partition is never starved; larger shares round down.
    assert rate_limit(start, {("t", 0): 1, ("t", 1): 199}, 10) == {("t", 0): 1, ("t", 1): 109}
    assert rate_limit(start, {("t", 0): 3, ("t", 1): 101}, 10) == {("t", 0): 3, ("t", 1): 101}


def test_source_options_defaults_follow_spark() -> None:
    batch = source_options({**BOOT, "subscribe": "a, b"}, streaming=False)
    assert batch.topics == ("a", "b")
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert source_options({**BOOT, "subscribe": "a"}, streaming=True).starting.kind == "latest"
    config = batch.consumer_config()
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"].startswith("spark-kafka-source-")
    assert (config["enable.auto.commit"], config["auto.offset.reset"]) == (False, "error")


def test_kafka_options_reach_the_client() -> None:
    options = source_options(
        {
            **BOOT,
            "subscribe": "a",
            "kafka.isolation.level": "read_uncommitted",
            "kafka.fetch.max.bytes": "1000",
            "groupIdPrefix": "mine",
        },
        streaming=True,
    )
    config = options.consumer_config()
    assert (config["isolation.level"], config["fetch.max.bytes"], config["bootstrap.servers"]) == (
        "read_uncommitted",
        "1000",
        "127.0.0.1:9092",
    )
    assert config["group.id"].startswith("mine-")
    assert sink_options({**BOOT, "topic": "out", "kafka.acks": "1"}).producer_config() == {
        "acks": "1",
        "bootstrap.servers": "127.0.0.1:9092",
    }


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "a"}, False, "'kafka.bootstrap.servers' is required"),
        (BOOT, False, "'subscribe' is required"),
        ({**BOOT, "assign": '{"a":[0]}'}, False, "'assign' is not supported"),
        ({**BOOT, "subscribe": "a", "maxOffsetsPerTrigger": "10"}, False, "only for streaming reads"),
        ({**BOOT, "subscribe": "a", "endingOffsets": "latest"}, True, "only for batch reads"),
        ({**BOOT, "subscribe": "a", "startingOffsets": "latest"}, False, "not allowed for batch reads"),
        (
            {**BOOT, "subscribe": "a", "maxOffsetsPerTrigger": "0"},
            True,
            "'maxOffsetsPerTrigger' must be a positive integer",
        ),
        ({**BOOT, "subscribe": "a", "startingOffsets": "earliest", "startingTimestamp": "5"}, True, "conflict"),
        (
            {**BOOT, "subscribe": "a", "startingTimestamp": "yesterday"},
            True,
            "startingTimestamp: expected milliseconds",
        ),
        ({**BOOT, "subscribe": "a", "kafka.enable.auto.commit": "true"}, True, "managed by the source"),
        ({**BOOT, "subscribe": "a", "includeHeaders": "maybe"}, True, "'includeHeaders' must be true or false"),
    ],
)
def test_bad_source_options_are_named(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(KafkaOptionError, match=message):
        source_options(options, streaming=streaming)


def test_package_imports_without_spark_and_the_broker_never_imports_it() -> None:
    code = (
        "import sys, minibroker.spark, minibroker.commands.cli, minibroker.broker; "
        "assert 'pyspark' not in sys.modules, 'pyspark imported'; "
        "assert not [m for m in sys.modules if m.startswith('minibroker.spark.')], 'spark modules imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_register_says_what_to_install_when_pyspark_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(
        minibroker.spark.MissingDependencyError, match=r"needs pyspark: pip install 'minibroker\[spark\]'"
    ):
        minibroker.spark.register(object())
