"""AlterConfigs and IncrementalAlterConfigs on topics, through real admin clients, as Kafka answers them."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kafka.admin import ConfigResource as KafkaPythonResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from tests.clientutil import TIMEOUT_S, confluent_admin, confluent_create_topic


def topic_configs(bootstrap: str, topic: str) -> dict[str, tuple[str, bool]]:
    """name -> (value, is a topic override) as DescribeConfigs reports them."""
    admin = confluent_admin(bootstrap)
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {
        name: (entry.value, entry.source == 1)  # 1: DYNAMIC_TOPIC_CONFIG
        for name, entry in future.result(TIMEOUT_S).items()
    }


def test_incremental_set_append_subtract_delete(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1, {"retention.ms": "100000"})
    admin = confluent_admin(bootstrap)

    def change(*entries: ConfigEntry) -> None:
        resource = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=list(entries))
        [future] = admin.incremental_alter_configs([resource]).values()
        future.result(TIMEOUT_S)

    change(ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
           ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
    configs = topic_configs(bootstrap, topic_name)
    assert configs["segment.ms"] == ("3600000", True)
    assert configs["retention.ms"] == ("100000", True), "incremental changes keep the other overrides"
    assert configs["cleanup.policy"] == ("delete,compact", True)

    change(ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
           ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    configs = topic_configs(bootstrap, topic_name)
    assert configs["cleanup.policy"] == ("compact", True)
    assert configs["retention.ms"] == ("604800000", False), "a deleted override falls back to the default"


def test_incremental_invalid_value_changes_nothing(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1, {})
    admin = confluent_admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", "-7", incremental_operation=AlterConfigOpType.SET),
    ])
    [future] = admin.incremental_alter_configs([resource]).values()
    with pytest.raises(Exception, match="retention.ms"):
        future.result(TIMEOUT_S)
    assert topic_configs(bootstrap, topic_name)["segment.ms"] == ("604800000", False)


def test_alter_configs_replaces_every_override(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1, {"retention.ms": "100000"})
    resource = ConfigResource(ResourceType.TOPIC, topic_name, set_config={"segment.ms": "7200000"})
    admin = confluent_admin(bootstrap)
    [future] = admin.alter_configs([resource]).values()
    future.result(TIMEOUT_S)
    configs = topic_configs(bootstrap, topic_name)
    assert configs["segment.ms"] == ("7200000", True)
    assert configs["retention.ms"] == ("604800000", False), "AlterConfigs is a full replacement, as in Kafka"


def test_kafka_python_alter_configs_keeps_other_overrides(bootstrap: str, topic_name: str) -> None:
    """kafka-python sends IncrementalAlterConfigs to brokers that advertise it."""
    confluent_create_topic(bootstrap, topic_name, 1, {"retention.ms": "100000"})
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT_S * 1000))
    try:
        admin.alter_configs([KafkaPythonResource(ConfigResourceType.TOPIC, topic_name, configs={"segment.ms": "7200000"})])
    finally:
        admin.close()
    configs = topic_configs(bootstrap, topic_name)
    assert configs["segment.ms"] == ("7200000", True)
    assert configs["retention.ms"] == ("100000", True)


def test_alter_configs_of_a_missing_topic(bootstrap: str, topic_name: str) -> None:
    admin = confluent_admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET),
    ])
    [future] = admin.incremental_alter_configs([resource]).values()
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART|does not exist"):
        future.result(TIMEOUT_S)
