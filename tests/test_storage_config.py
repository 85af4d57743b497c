"""LogConfig: Kafka's defaults, names, validation and DescribeConfigs formatting."""

from __future__ import annotations

import pytest
from minibroker.storage.config import TOPIC_CONFIGS, LogConfig
from minibroker.storage.errors import InvalidConfigError


def test_defaults_match_kafka() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1073741824
    assert config.segment_ms == 604800000
    assert config.retention_ms == 604800000
    assert config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10485760
    assert config.flush_messages == config.flush_ms == 2**63 - 1
    assert config.max_message_bytes == 1048588
    assert config.file_delete_delay_ms == 60000
    assert config.message_timestamp_type == "CreateTime"
    assert config.cleanup_policy == "delete" and config.delete and not config.compact
    assert config.segment_size == config.segment_bytes


def test_to_kafka_configs_lists_every_public_topic_config_as_strings() -> None:
    configs = LogConfig().to_kafka_configs()
    assert "internal.segment.bytes" not in configs
    assert set(configs) == {name for name, spec in TOPIC_CONFIGS.items() if not spec.internal}
    assert configs["segment.bytes"] == "1073741824"
    assert configs["retention.ms"] == "604800000"
    assert configs["flush.ms"] == "9223372036854775807"
    assert configs["min.cleanable.dirty.ratio"] == "0.5"
    assert configs["preallocate"] == "false"
    assert configs["cleanup.policy"] == "delete"
    assert configs["compression.type"] == "producer"
    assert configs["min.insync.replicas"] == "1"
    assert configs["message.timestamp.after.max.ms"] == "3600000"
    assert configs["leader.replication.throttled.replicas"] == ""
    assert all(isinstance(value, str) for value in configs.values())


def test_with_overrides_parses_kafka_names() -> None:
    config = LogConfig().with_overrides({
        "retention.ms": "-1",
        "segment.bytes": "1048576",
        "cleanup.policy": "compact, delete",
        "message.timestamp.type": "LogAppendTime",
        "unclean.leader.election.enable": "TRUE",
        "min.cleanable.dirty.ratio": "0.25",
        "internal.segment.bytes": "500",
    })
    assert config.retention_ms == -1
    assert config.segment_bytes == 1048576
    assert config.segment_size == 500
    assert config.cleanup_policy == "compact,delete" and config.compact and config.delete
    assert config.log_append_time
    assert config.unclean_leader_election_enable is True
    assert config.to_kafka_configs()["cleanup.policy"] == "compact,delete"
    assert config.to_kafka_configs()["min.cleanable.dirty.ratio"] == "0.25"
    assert LogConfig().with_overrides({}) == LogConfig()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("no.such.config", "1"),
        ("segment.bytes", "1048575"),  # Kafka 4.x minimum is 1 MiB
        ("segment.bytes", "2147483648"),  # INT overflow
        ("segment.bytes", "1_048_576"),
        ("retention.ms", "-2"),
        ("segment.ms", "0"),
        ("retention.bytes", "ten"),
        ("message.timestamp.type", "createtime"),
        ("cleanup.policy", "compact,remove"),
        ("compression.type", "brotli"),
        ("compression.gzip.level", "0"),
        ("compression.lz4.level", "18"),
        ("min.insync.replicas", "0"),
        ("preallocate", "yes"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("segment.index.bytes", "3"),
        ("remote.storage.enable", "true"),
        ("leader.replication.throttled.replicas", "0:a"),
    ],
)
def test_with_overrides_rejects_what_kafka_rejects(name: str, value: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        LogConfig().with_overrides({name: value})
    assert info.value.name == name
    assert info.value.reason


def test_cross_config_rule() -> None:
    with pytest.raises(InvalidConfigError, match="min.compaction.lag.ms"):
        LogConfig().with_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_valid_edge_values() -> None:
    config = LogConfig().with_overrides({
        "compression.gzip.level": "-1",
        "compression.zstd.level": "-131072",
        "leader.replication.throttled.replicas": "*",
        "follower.replication.throttled.replicas": "0:1,1:2",
        "retention.bytes": "-5",
        "index.interval.bytes": "0",
    })
    assert config.compression_zstd_level == -131072
    assert config.follower_replication_throttled_replicas == "0:1,1:2"
