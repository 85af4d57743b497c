"""Settings an emulated release had and Kafka 4.0 removed (minibroker.config.legacy_settings): accepted under
kafka.version with that release's validation, shown by DescribeConfigs; Kafka 4's behaviour without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, NewTopic

from minibroker.config.legacy_settings import REMOVED_BROKER_SETTINGS, latest_ibp
from minibroker.config.settings import ConfigError, build_config
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, confluent_admin
from tests.test_describe_config_types import BOOLEAN, BROKER, STRING, TOPIC, described

ZOOKEEPER_ERA = {
    "zookeeper.connect": "zookeeper:2181", "zookeeper.session.timeout.ms": "6000",
    "inter.broker.protocol.version": "2.8", "log.message.format.version": "2.8-IV1",
    "log.message.downconversion.enable": "false", "broker.id.generation.enable": "true",
}


def test_a_zookeeper_era_file_is_known_under_its_release() -> None:
    config = build_config({"kafka.version": "3.9", **ZOOKEEPER_ERA})
    assert config.unknown == ()
    assert set(ZOOKEEPER_ERA) <= set(config.ignored_settings())  # known, and meaning nothing to one process
    items = config.kafka_items()
    assert {name: items[name] for name in ZOOKEEPER_ERA} == ZOOKEEPER_ERA
    assert items["zookeeper.max.in.flight.requests"] == "10" and items["reserved.broker.max.id"] == "1000"


@pytest.mark.parametrize("release", ["4.0", "4.3", ""])
def test_kafka_4_does_not_know_them(release: str) -> None:
    config = build_config({"kafka.version": release, **ZOOKEEPER_ERA})
    assert set(config.unknown) == set(ZOOKEEPER_ERA)
    assert not set(REMOVED_BROKER_SETTINGS) & set(config.kafka_items())


@pytest.mark.parametrize(
    "release, name, value, reason",
    [
        ("3.9", "log.message.format.version", "5.0", "Version 5.0 is not a valid version"),
        ("2.8", "inter.broker.protocol.version", "3.0", "Version 3.0 is not a valid version"),
        ("3.7", "inter.broker.protocol.version", "3.9-IV0", "Version 3.9-IV0 is not a valid version"),
        ("3.9", "zookeeper.max.in.flight.requests", "0", "Value must be at least 1"),
        ("3.9", "zookeeper.session.timeout.ms", "soon", "Not a number of type INT"),
    ],
)
def test_values_are_checked_as_the_release_checked_them(release: str, name: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=f"^Invalid value {value} for configuration {name}: {reason}$"):
        build_config({"kafka.version": release, name: value})


@pytest.mark.parametrize(
    "release, accepted", [("3.9", "4.0-IV1"), ("3.7", "3.8"), ("2.8", "2.8.2"), ("2.1", "0.10.2"), ("3.0", "0.8.2")]
)
def test_every_version_the_release_knew_is_accepted(release: str, accepted: str) -> None:
    config = build_config({"kafka.version": release, "inter.broker.protocol.version": accepted})
    assert config.kafka_items()["inter.broker.protocol.version"] == accepted


@pytest.mark.parametrize(
    "release, protocol, message_format", [("2.1", "2.1-IV2", "2.1-IV2"), ("2.8", "2.8-IV1", "2.8-IV1"),
                                          ("3.5", "3.5-IV2", "3.0-IV1"), ("3.9", "3.9-IV0", "3.0-IV1")],
)
def test_defaults_are_the_releases(release: str, protocol: str, message_format: str) -> None:
    items = build_config({"kafka.version": release}).kafka_items()
    assert (items["inter.broker.protocol.version"], items["log.message.format.version"]) == (protocol, message_format)
    assert latest_ibp(release) == protocol


def test_describe_configs_shows_them_and_hides_their_passwords(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data", "kafka.version=3.9", "zookeeper.connect=zookeeper:2181/kafka",
        "zookeeper.ssl.keystore.password=s3cret", "log.message.format.version=2.8",
    )
    try:
        broker.start()
        admin = confluent_admin(broker.bootstrap)
        [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "1")]).values()
        configs = future.result(TIMEOUT_S)
        assert configs["zookeeper.connect"].value == "zookeeper:2181/kafka"
        assert configs["log.message.format.version"].value == "2.8"
        assert configs["inter.broker.protocol.version"].value == "3.9-IV0"
        assert configs["zookeeper.ssl.keystore.password"].is_sensitive
        types = {name: entry["config_type"] for name, entry in described(broker.bootstrap, BROKER, "1").items()}
        assert (types["zookeeper.connect"], types["zookeeper.set.acl"]) == (STRING, BOOLEAN)  # as 3.9's ConfigDef
        assert configs["zookeeper.ssl.keystore.password"].value is None
        assert "s3cret" not in broker.log_text()
    finally:
        broker.stop()


def topic_configs(admin, topic: str) -> dict[str, str]:
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(TIMEOUT_S).items()}


def test_topic_configs_4_0_removed_are_a_3_x_topics_configs(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", "kafka.version=2.8", "log.message.downconversion.enable=false")
    try:
        broker.start()
        admin = confluent_admin(broker.bootstrap)
        futures = admin.create_topics([
            NewTopic("old-format", 1, config={"message.format.version": "0.10.2", "retention.ms": "60000"}),
            NewTopic("defaults", 1),
            NewTopic("too-new", 1, config={"message.format.version": "3.0"}),
        ], request_timeout=TIMEOUT_S)
        futures["old-format"].result(TIMEOUT_S)
        futures["defaults"].result(TIMEOUT_S)
        with pytest.raises(KafkaException, match="Version 3.0 is not a valid version"):
            futures["too-new"].result(TIMEOUT_S)
        old = topic_configs(admin, "old-format")
        assert (old["message.format.version"], old["retention.ms"]) == ("0.10.2", "60000")
        defaults = topic_configs(admin, "defaults")
        assert defaults["message.format.version"] == "2.8-IV1"  # 2.8's own inter.broker.protocol.version
        assert defaults["message.downconversion.enable"] == "false"  # from the broker setting given
        entries = described(broker.bootstrap, TOPIC, "defaults")
        assert entries["message.format.version"]["config_type"] == STRING
        assert entries["message.downconversion.enable"]["config_type"] == BOOLEAN
        synonyms = {name: [(s["name"], s["value"], s["source"]) for s in entries[name]["synonyms"]]
                    for name in ("message.format.version", "message.downconversion.enable")}
        assert synonyms == {  # as Kafka's ServerTopicConfigSynonyms: the broker setting given, then its default
            "message.format.version": [("log.message.format.version", "2.8-IV1", 5)],
            "message.downconversion.enable": [("log.message.downconversion.enable", "false", 4),
                                              ("log.message.downconversion.enable", "true", 5)],
        }
        assert entries["message.downconversion.enable"]["config_source"] == 4  # STATIC_BROKER_CONFIG
        broker.stop()
        broker.settings.remove("kafka.version=2.8")
        broker.settings.remove("log.message.downconversion.enable=false")
        broker.start()  # Kafka 4: unknown names
        admin = confluent_admin(broker.bootstrap)
        assert "message.format.version" not in topic_configs(admin, "defaults")
        old = topic_configs(admin, "old-format")  # its other configs kept, the unknown one ignored as Kafka 4 does
        assert old["retention.ms"] == "60000" and "message.format.version" not in old
        assert "ignoring stored configs this broker does not know: message.format.version" in broker.log_text()
        with pytest.raises(KafkaException, match="Unknown topic config name: message.format.version"):
            admin.create_topics([NewTopic("refused", 1, config={"message.format.version": "2.8"})],
                                request_timeout=TIMEOUT_S)["refused"].result(TIMEOUT_S)
        broker.stop()
        broker.settings.append("kafka.version=2.8")
        broker.start()  # emulating 2.8 again: the stored value is back
        assert topic_configs(confluent_admin(broker.bootstrap), "old-format")["message.format.version"] == "0.10.2"
    finally:
        broker.stop()
