"""Dynamic broker configs (KIP-226) and broker loggers (KIP-412): DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs on BROKER resources per node and at the cluster default, Kafka's rules for what is dynamic,
synonyms and sources, the values applied at once and kept across restarts; BROKER_LOGGER levels."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from minibroker.acls.operations import ALTER_CONFIGS as ACL_ALTER_CONFIGS
from minibroker.acls.operations import CLUSTER, CLUSTER_NAME
from minibroker.acls.operations import DESCRIBE_CONFIGS as ACL_DESCRIBE_CONFIGS
from minibroker.protocol.frames import decode_response
from minibroker.testing import Broker

from tests.aclutil import acl_broker, grant, login
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, METADATA = 32, 33, 44, 3
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NONE, CLUSTER_DENIED, INVALID_CONFIG, INVALID_REQUEST = 0, 31, 40, 42
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT, LOGGER = 2, 3, 4, 5, 6


def call(address: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(address) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def change(address: str, name: str, *ops: tuple[str, str | None, int], kind: int = BROKER, validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs of one resource: (error code, message)."""
    configs = [{"name": n, "value": v, "config_operation": op} for n, v, op in ops]
    body = {"resources": [{"resource_type": kind, "resource_name": name, "configs": configs}], "validate_only": validate_only}
    [response] = call(address, INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    return response["error_code"], response["error_message"]


def replace_all(address: str, name: str, configs: dict[str, str], kind: int = BROKER) -> tuple[int, str | None]:
    body = {"resources": [{"resource_type": kind, "resource_name": name, "configs": [
        {"name": n, "value": v} for n, v in configs.items()]}], "validate_only": False}
    [response] = call(address, ALTER_CONFIGS, 2, body)["responses"]
    return response["error_code"], response["error_message"]


def describe(address: str, name: str, keys: list[str] | None = None, kind: int = BROKER) -> dict[str, Any]:
    body = {"resources": [{"resource_type": kind, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": True, "include_documentation": False}
    [result] = call(address, DESCRIBE_CONFIGS, 4, body)["results"]
    return result


def entries(address: str, name: str, keys: list[str] | None = None, kind: int = BROKER) -> dict[str, dict[str, Any]]:
    result = describe(address, name, keys, kind)
    assert result["error_code"] == NONE, result
    return {entry["name"]: entry for entry in result["configs"]}


def synonyms(entry: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def node_addresses(bootstrap: str) -> dict[int, str]:
    body = {"topics": [], "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    answer = call(bootstrap, METADATA, 12, body)
    return {b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]}


@pytest.fixture
def proc(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path / "data", "log.retention.hours=100").start()
    try:
        yield broker
    finally:
        broker.stop()


def confluent_set(bootstrap: str, node: str, **values: str) -> None:
    resource = ConfigResource(ResourceType.BROKER, node, incremental_configs=[
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET) for name, value in values.items()])
    admin = confluent_admin(bootstrap)
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)


def test_a_node_describes_every_setting_with_kafkas_flags(proc: BrokerProcess) -> None:
    admin = confluent_admin(proc.bootstrap)
    resource = ConfigResource(ResourceType.BROKER, "1")
    described = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert not described["log.retention.ms"].is_read_only and not described["message.max.bytes"].is_read_only
    assert described["log.dirs"].is_read_only and described["log.retention.hours"].is_read_only  # only .ms is dynamic
    assert described["listeners"].is_read_only is False  # per broker, as Kafka
    assert entries(proc.bootstrap, "") == {}  # the cluster default: its dynamic values only, none yet


def test_topic_synonyms_start_at_the_configs_own_broker_setting(proc: BrokerProcess, topic_name: str) -> None:
    """Kafka's ConfigHelper lists a topic config's broker synonyms from the first one named its own broker setting
    on: with log.retention.hours given and log.retention.ms not, retention.ms has that value but no synonyms and
    the source DEFAULT_CONFIG (what KafkaJS's suite expects of Kafka); compression.type shows its broker default."""
    confluent_create_topic(proc.bootstrap, topic_name, 1)
    topic = entries(proc.bootstrap, topic_name, ["retention.ms", "segment.ms", "flush.ms", "compression.type"], TOPIC)
    assert (topic["retention.ms"]["value"], topic["retention.ms"]["config_source"]) == (str(100 * 3_600_000), DEFAULT)
    assert [synonyms(topic[name]) for name in ("retention.ms", "segment.ms", "flush.ms")] == [[], [], []]
    assert synonyms(topic["compression.type"]) == [("compression.type", "producer", DEFAULT)]
    assert change(proc.bootstrap, "", ("log.retention.ms", "7200000", SET)) == (NONE, None)
    topic = entries(proc.bootstrap, topic_name, ["retention.ms"], TOPIC)["retention.ms"]
    assert synonyms(topic) == [
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT), ("log.retention.hours", "100", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]


def test_values_apply_at_once_with_kafkas_sources(proc: BrokerProcess, topic_name: str) -> None:
    confluent_create_topic(proc.bootstrap, topic_name, 1)
    assert change(proc.bootstrap, "", ("log.retention.ms", "7200000", SET)) == (NONE, None)
    topic = entries(proc.bootstrap, topic_name, ["retention.ms"], TOPIC)["retention.ms"]
    assert (topic["value"], topic["config_source"]) == ("7200000", DYNAMIC_DEFAULT)  # an existing topic follows
    assert synonyms(topic)[:2] == [("log.retention.ms", "7200000", DYNAMIC_DEFAULT), ("log.retention.hours", "100", STATIC)]

    confluent_set(proc.bootstrap, "1", log_retention_ms="3600000")
    confluent_create_topic(proc.bootstrap, f"{topic_name}-new", 1)
    for name in (topic_name, f"{topic_name}-new"):
        topic = entries(proc.bootstrap, name, ["retention.ms"], TOPIC)["retention.ms"]
        assert (topic["value"], topic["config_source"]) == ("3600000", DYNAMIC_BROKER)

    node = entries(proc.bootstrap, "1", ["log.retention.ms", "log.retention.hours"])
    assert synonyms(node["log.retention.ms"]) == [
        ("log.retention.ms", "3600000", DYNAMIC_BROKER), ("log.retention.ms", "7200000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "100", STATIC), ("log.retention.hours", "168", DEFAULT),
    ]
    assert node["log.retention.hours"]["config_source"] == STATIC
    assert synonyms(node["log.retention.hours"]) == [("log.retention.hours", "100", STATIC), ("log.retention.hours", "168", DEFAULT)]
    default = entries(proc.bootstrap, "")
    assert list(default) == ["log.retention.ms"]
    assert synonyms(default["log.retention.ms"]) == [("log.retention.ms", "7200000", DYNAMIC_DEFAULT)]

    assert change(proc.bootstrap, "1", ("log.retention.ms", None, DELETE)) == (NONE, None)
    topic = entries(proc.bootstrap, topic_name, ["retention.ms"], TOPIC)["retention.ms"]
    assert (topic["value"], topic["config_source"]) == ("7200000", DYNAMIC_DEFAULT)


def test_message_max_bytes_limits_produce_at_once(proc: BrokerProcess, topic_name: str) -> None:
    from confluent_kafka import Producer

    confluent_create_topic(proc.bootstrap, topic_name, 1)
    confluent_set(proc.bootstrap, "1", message_max_bytes="2000")
    producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 0})
    errors: list[Any] = []
    producer.produce(topic_name, b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(TIMEOUT_S)
    assert errors and errors[0] is not None and errors[0].name() == "MSG_SIZE_TOO_LARGE"


def test_kafkas_refusals(proc: BrokerProcess) -> None:
    address = proc.bootstrap
    assert change(address, "1", ("log.dirs", "/elsewhere", SET)) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)")
    assert change(address, "", ("log.retention.hours", "1", SET), ("num.partitions", "3", SET)) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.hours, num.partitions)")
    assert change(address, "1", ("ssl.keystore.location", "/k", SET)) == (
        INVALID_REQUEST,
        "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)")
    assert change(address, "", ("sasl.enabled.mechanisms", "PLAIN", SET)) == (
        INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.enabled.mechanisms)")
    error, message = change(address, "1", ("log.retention.ms", "soon", SET))
    assert error == INVALID_REQUEST and "log.retention.ms" in message
    assert change(address, "1", ("background.threads", "30", SET)) == (
        INVALID_REQUEST,
        "Dynamic thread count update validation failed for background.threads=30, value should not be greater than "
        "double the current value 10")
    assert change(address, "1", ("background.threads", "1", APPEND)) == (
        INVALID_CONFIG, "Config value append is not allowed for config key: background.threads")
    assert change(address, "2", ("log.retention.ms", "1", SET)) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
    assert change(address, "one", ("log.retention.ms", "1", SET)) == (
        INVALID_REQUEST, "Node id must be an integer, but it is: one")
    result = describe(address, "2")
    assert (result["error_code"], result["error_message"]) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
    assert entries(address, "1", ["log.retention.ms"])["log.retention.ms"]["config_source"] == DEFAULT  # nothing stuck
    assert replace_all(address, "1", {"log.retention.ms": "1000"}, kind=BROKER_LOGGER) == (INVALID_REQUEST, "Unknown resource type 8")
    twice = {"resource_type": BROKER, "resource_name": "1", "configs": [{"name": "log.retention.ms", "value": "1000", "config_operation": SET}]}
    answer = call(address, INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [twice, twice], "validate_only": False})
    assert [(r["error_code"], r["error_message"]) for r in answer["responses"]] == [
        (INVALID_REQUEST, "Each resource must appear at most once.")] * 2


def test_librdkafkas_set_append_subtract_delete(proc: BrokerProcess) -> None:
    """The operations of librdkafka's 0081 admin test on a BROKER resource."""
    assert change(proc.bootstrap, "1", ("background.threads", "9", SET), ("log.cleanup.policy", "compact", APPEND)) == (NONE, None)
    node = entries(proc.bootstrap, "1", ["background.threads", "log.cleanup.policy"])
    assert node["background.threads"]["value"] == "9" and node["log.cleanup.policy"]["value"] == "delete,compact"
    assert change(proc.bootstrap, "1", ("background.threads", "", DELETE), ("log.cleanup.policy", "compact", SUBTRACT)) == (NONE, None)
    node = entries(proc.bootstrap, "1", ["background.threads", "log.cleanup.policy"])
    assert (node["background.threads"]["value"], node["background.threads"]["config_source"]) == ("10", DEFAULT)
    assert (node["log.cleanup.policy"]["value"], node["log.cleanup.policy"]["config_source"]) == ("delete", DYNAMIC_BROKER)


def test_legacy_alter_configs_replaces_the_layer_and_validate_only_changes_nothing(proc: BrokerProcess) -> None:
    admin = confluent_admin(proc.bootstrap)
    resource = ConfigResource(ResourceType.BROKER, "1", set_config={"log.retention.ms": "600000", "log.segment.bytes": "2000000"})
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    resource = ConfigResource(ResourceType.BROKER, "1", set_config={"log.segment.bytes": "3000000"})
    admin.alter_configs([resource])[resource].result(TIMEOUT_S)
    node = entries(proc.bootstrap, "1", ["log.retention.ms", "log.segment.bytes"])
    assert node["log.retention.ms"]["config_source"] == DEFAULT
    assert (node["log.segment.bytes"]["value"], node["log.segment.bytes"]["config_source"]) == ("3000000", DYNAMIC_BROKER)
    assert change(proc.bootstrap, "1", ("log.segment.bytes", "4000000", SET), validate_only=True) == (NONE, None)
    assert entries(proc.bootstrap, "1", ["log.segment.bytes"])["log.segment.bytes"]["value"] == "3000000"
    with pytest.raises(KafkaException, match="INVALID_REQUEST"):
        bad = ConfigResource(ResourceType.BROKER, "1", set_config={"broker.id": "7"})
        admin.alter_configs([bad])[bad].result(TIMEOUT_S)


def test_kafka_python_alters_a_node(proc: BrokerProcess, topic_name: str) -> None:
    """kafka-python checks names against the node's dynamic (not read-only) settings before it sends them."""
    kafka_admin = pytest.importorskip("kafka.admin")
    client = kafka_admin.KafkaAdminClient(bootstrap_servers=proc.bootstrap)
    try:
        node = kafka_admin.ConfigResource("BROKER", "1", {"log.retention.ms": "5400000"})
        assert client.alter_configs([node]) == {"broker": {"1": "OK"}}
        assert client.describe_configs([kafka_admin.ConfigResource("BROKER", "1")])["broker"]["1"]["log.retention.ms"]["value"] == "5400000"
        with pytest.raises(ValueError, match="log.dirs"):
            client.alter_configs([kafka_admin.ConfigResource("BROKER", "1", {"log.dirs": "/x"})])
        refused = client.alter_configs([kafka_admin.ConfigResource("BROKER", "1", {"log.dirs": "/x"})], raise_on_unknown=False)
        assert "Cannot update these configs dynamically" in refused["broker"]["1"]
    finally:
        client.close()
    confluent_create_topic(proc.bootstrap, topic_name, 1)
    topic = entries(proc.bootstrap, topic_name, ["retention.ms"], TOPIC)["retention.ms"]
    assert (topic["value"], topic["config_source"]) == ("5400000", DYNAMIC_BROKER)


def test_values_are_kept_across_a_restart_passwords_stay_secret(proc: BrokerProcess, topic_name: str) -> None:
    secret = "Keystore-Secret-9"
    assert change(proc.bootstrap, "1", ("listener.name.plaintext.ssl.keystore.password", secret, SET),
                  ("log.retention.ms", "4000000", SET)) == (NONE, None)
    assert change(proc.bootstrap, "", ("log.segment.bytes", "5000000", SET)) == (NONE, None)
    proc.restart()
    node = entries(proc.bootstrap, "1", ["log.retention.ms", "log.segment.bytes"])
    assert (node["log.retention.ms"]["value"], node["log.retention.ms"]["config_source"]) == ("4000000", DYNAMIC_BROKER)
    assert (node["log.segment.bytes"]["value"], node["log.segment.bytes"]["config_source"]) == ("5000000", DYNAMIC_DEFAULT)
    confluent_create_topic(proc.bootstrap, topic_name, 1)
    assert entries(proc.bootstrap, topic_name, ["retention.ms"], TOPIC)["retention.ms"]["value"] == "4000000"
    stored = proc.data_dir / "broker-configs.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text())["default"] == {"log.segment.bytes": "5000000"}
    assert secret not in proc.log_text()


def test_broker_loggers(proc: BrokerProcess) -> None:
    address = proc.bootstrap
    loggers = entries(address, "1", kind=BROKER_LOGGER)
    assert loggers["root"]["value"] == "INFO" and loggers["root"]["config_source"] == LOGGER
    assert loggers["minibroker.broker"]["value"] == "INFO"
    assert change(address, "1", ("minibroker.broker", "DEBUG", SET), kind=BROKER_LOGGER) == (NONE, None)
    assert entries(address, "1", ["minibroker.broker"], BROKER_LOGGER)["minibroker.broker"]["value"] == "DEBUG"
    assert change(address, "1", ("minibroker.broker", None, DELETE), kind=BROKER_LOGGER) == (NONE, None)
    assert entries(address, "1", ["minibroker.broker"], BROKER_LOGGER)["minibroker.broker"]["value"] == "INFO"
    assert change(address, "1", ("minibroker.broker", "LOUD", SET), kind=BROKER_LOGGER) == (
        INVALID_CONFIG, "Cannot set the log level of minibroker.broker to LOUD as it is not a supported log level. "
        "Valid log levels are DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN")
    assert change(address, "1", ("no.such.logger", "INFO", SET), kind=BROKER_LOGGER) == (
        INVALID_CONFIG, "Logger no.such.logger does not exist!")
    assert change(address, "1", ("minibroker.broker", "INFO", APPEND), kind=BROKER_LOGGER) == (
        INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")
    assert change(address, "1", ("root", None, DELETE), kind=BROKER_LOGGER) == (
        INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    result = describe(address, "", kind=BROKER_LOGGER)
    assert (result["error_code"], result["error_message"]) == (INVALID_REQUEST, "Broker id must not be empty")


def test_three_nodes_each_with_its_own_values(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", "nodes=3").start()
    try:
        addresses = node_addresses(proc.bootstrap)
        for node in (2, 3):  # the admin client sends a node's resource to that node
            confluent_set(proc.bootstrap, str(node), log_cleaner_io_max_bytes_per_second=f"{node}000000.0")
        assert change(addresses[1], "", ("log.cleaner.threads", "2", SET)) == (NONE, None)
        for node in (1, 2, 3):
            shown = entries(addresses[node], str(node), ["log.cleaner.io.max.bytes.per.second", "log.cleaner.threads"])
            io, threads = shown["log.cleaner.io.max.bytes.per.second"], shown["log.cleaner.threads"]
            assert io["config_source"] == (DEFAULT if node == 1 else DYNAMIC_BROKER)
            assert (threads["value"], threads["config_source"]) == ("2", DYNAMIC_DEFAULT)
        assert change(addresses[1], "2", ("log.cleaner.threads", "2", SET))[0] == INVALID_REQUEST  # node 2's, not 1's
        proc.restart()
        addresses = node_addresses(proc.bootstrap)
        assert entries(addresses[3], "3", ["log.cleaner.io.max.bytes.per.second"])[
            "log.cleaner.io.max.bytes.per.second"]["config_source"] == DYNAMIC_BROKER
    finally:
        proc.stop()


def test_reset_forgets_and_snapshots_restore_the_values() -> None:
    with Broker() as broker:
        address = broker.bootstrap_servers
        assert change(address, "1", ("log.retention.ms", "123000", SET)) == (NONE, None)
        broker.snapshot("with-retention")
        broker.reset()
        assert entries(address, "1", ["log.retention.ms"])["log.retention.ms"]["config_source"] == DEFAULT
        broker.restore("with-retention")
        restored = entries(address, "1", ["log.retention.ms"])["log.retention.ms"]
        assert (restored["value"], restored["config_source"]) == ("123000", DYNAMIC_BROKER)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from acl_broker(tmp_path_factory.mktemp("brokercfg-acl") / "data", ["viewer", "editor"])


def test_the_authorizer_wants_the_cluster(secured: BrokerProcess) -> None:
    def ask(user: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        with login(secured, user) as conn:
            return decode_response(api_key, version, conn.request(api_key, version, body))[1]

    describe_body = {"resources": [{"resource_type": kind, "resource_name": "1", "configuration_keys": ["log.retention.ms", "root"]}
                                   for kind in (BROKER, BROKER_LOGGER)], "include_synonyms": False, "include_documentation": False}
    alter_body = {"resources": [{"resource_type": BROKER, "resource_name": "1", "configs": [
        {"name": "log.retention.ms", "value": "900000", "config_operation": SET}]}], "validate_only": False}
    assert [r["error_code"] for r in ask("viewer", DESCRIBE_CONFIGS, 4, describe_body)["results"]] == [CLUSTER_DENIED] * 2
    assert [r["error_code"] for r in ask("editor", INCREMENTAL_ALTER_CONFIGS, 1, alter_body)["responses"]] == [CLUSTER_DENIED]
    grant(secured, "viewer", CLUSTER, CLUSTER_NAME, ACL_DESCRIBE_CONFIGS)
    grant(secured, "editor", CLUSTER, CLUSTER_NAME, ACL_ALTER_CONFIGS)
    assert [r["error_code"] for r in ask("viewer", DESCRIBE_CONFIGS, 4, describe_body)["results"]] == [NONE] * 2
    assert [r["error_code"] for r in ask("editor", INCREMENTAL_ALTER_CONFIGS, 1, alter_body)["responses"]] == [NONE]
    assert [r["error_code"] for r in ask("viewer", INCREMENTAL_ALTER_CONFIGS, 1, alter_body)["responses"]] == [CLUSTER_DENIED]


def test_an_unreadable_config_file_stops_start_up(tmp_path: Path) -> None:
    """Serving without the dynamic values the file holds would serve another configuration than the one set."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "broker-configs.json").write_text('{"version": 1, "default": {"log.retention.ms": 5}}')
    with pytest.raises(RuntimeError, match="not a version 1 broker config file"):
        BrokerProcess(tmp_path / "data").start()
