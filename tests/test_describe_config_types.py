"""DescribeConfigs v3+ reports each config's ConfigDef type as Kafka does (the Java Admin's ConfigEntry.type()), for
topic and broker configs; minibroker's own settings, which Kafka does not have, are UNKNOWN."""

from __future__ import annotations

from typing import Any

import pytest
from minibroker.config.kafka_settings import TOPIC_SETTINGS
from minibroker.protocol.frames import decode_response
from minibroker.storage.config import TOPIC_CONFIGS

from tests.clientutil import RawConnection, confluent_create_topic

DESCRIBE_CONFIGS = 32
TOPIC, BROKER = 2, 4
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)


def described(bootstrap: str, kind: int, name: str, version: int = 4) -> dict[str, dict[str, Any]]:
    body = {"resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": True, "include_documentation": True}
    with RawConnection(bootstrap) as conn:
        [result] = decode_response(DESCRIBE_CONFIGS, version, conn.request(DESCRIBE_CONFIGS, version, body))[1]["results"]
    assert result["error_code"] == 0, result
    return {entry["name"]: entry for entry in result["configs"]}


def test_topic_config_types(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1, {"retention.ms": "100000"})
    entries = described(bootstrap, TOPIC, topic_name)
    expected = {
        "retention.ms": LONG, "segment.bytes": INT, "cleanup.policy": LIST, "min.cleanable.dirty.ratio": DOUBLE,
        "preallocate": BOOLEAN, "compression.type": STRING, "leader.replication.throttled.replicas": LIST,
    }
    assert {name: entries[name]["config_type"] for name in expected} == expected
    assert all(entry["config_type"] != UNKNOWN for entry in entries.values()), "every topic config has a Kafka type"


def test_broker_config_types(bootstrap: str) -> None:
    entries = described(bootstrap, BROKER, "1")
    expected = {
        "log.retention.hours": INT, "log.retention.ms": LONG, "offsets.topic.replication.factor": SHORT,
        "auto.create.topics.enable": BOOLEAN, "log.dirs": LIST, "alter.config.policy.class.name": CLASS,
        "delegation.token.secret.key": PASSWORD, "compression.type": STRING, "log.cleaner.min.cleanable.ratio": DOUBLE,
        "nodes": UNKNOWN,  # minibroker's own: Kafka has no such config
    }
    assert {name: entries[name]["config_type"] for name in expected} == expected
    assert entries["delegation.token.secret.key"]["value"] is None


@pytest.mark.parametrize("name", sorted(TOPIC_CONFIGS))
def test_topic_config_specs_have_kafkas_types(name: str) -> None:
    """storage's hand-written parsers agree with the types generated from Kafka's LogConfig."""
    assert TOPIC_CONFIGS[name].type == TOPIC_SETTINGS[name][0]
