"""The Bitnami image's conventions (KAFKA_CFG_* variables beside apache/kafka's KAFKA_*): a compose service written
for bitnami/kafka switches to minibroker by its image line."""

from __future__ import annotations

import re
from pathlib import Path

from confluent_kafka.admin import ConfigResource, NewTopic

from minibroker.config.settings import build_config
from minibroker.config.sources import env_settings
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, confluent_admin
from tests.containerutil import free_port


def test_bitnami_variables_name_settings_by_its_rule() -> None:
    environ = {
        "KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKA_CFG_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG": "jaas",
        "KAFKA_CFG_LOG_RETENTION_HOURS": "",  # empty: skipped, as Bitnami skips it
        "KAFKA_NUM_PARTITIONS": "2", "KAFKA_CFG_NUM_PARTITIONS": "3",  # KAFKA_CFG_* over KAFKA_*
        "KAFKA_CFG_MESSAGE_MAX_BYTES": "2000000", "MINIBROKER_MESSAGE_MAX_BYTES": "3000000",  # MINIBROKER_* wins
        "KAFKA_KRAFT_CLUSTER_ID": "abcdefghijklmnopqrstuv",  # the image's storage set-up: the cluster id
        "KAFKA_ENABLE_KRAFT": "yes", "ALLOW_PLAINTEXT_LISTENER": "yes", "BITNAMI_DEBUG": "true",  # the image's own
    }
    assert env_settings(environ) == {
        "cluster.id": "abcdefghijklmnopqrstuv",
        "auto.create.topics.enable": "false",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "jaas",
        "num.partitions": "3",
        "message.max.bytes": "3000000",
    }


def bitnami_service(port: int, controller_port: int) -> dict[str, str]:
    """The environment of a KRaft service as Bitnami's README writes it."""
    return {
        "KAFKA_CFG_NODE_ID": "0",
        "KAFKA_CFG_PROCESS_ROLES": "controller,broker",
        "KAFKA_CFG_LISTENERS": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "KAFKA_CFG_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CFG_CONTROLLER_QUORUM_VOTERS": f"0@127.0.0.1:{controller_port}",
        "KAFKA_CFG_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CFG_NUM_PARTITIONS": "4",
        "KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKA_KRAFT_CLUSTER_ID": "abcdefghijklmnopqrstuv",
        "ALLOW_PLAINTEXT_LISTENER": "yes",
    }


def test_a_bitnami_compose_service_runs_as_written(tmp_path: Path) -> None:
    env = bitnami_service(free_port(), free_port())
    config = build_config(env_settings(env))
    assert config.unknown == () and config.node_id == 0 and not config.auto_create_topics_enable
    broker = BrokerProcess(tmp_path / "data", env=env)
    try:
        broker.start()
        assert broker.port == int(env["KAFKA_CFG_ADVERTISED_LISTENERS"].rsplit(":", 1)[1])
        admin = confluent_admin(broker.bootstrap)
        admin.create_topics([NewTopic("defaulted")], request_timeout=TIMEOUT_S)["defaulted"].result(TIMEOUT_S)
        assert len(admin.list_topics(timeout=TIMEOUT_S).topics["defaulted"].partitions) == 4
        [described] = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, "0")]).values()
        configs = described.result(TIMEOUT_S)
        assert configs["auto.create.topics.enable"].value == "false"
        assert configs["num.partitions"].value == "4"
        assert "isn't a known config" not in broker.log_text()
    finally:
        broker.stop()


def test_the_documented_bitnami_service_holds_known_settings() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "containers.md").read_text()
    block = page.split("# was: bitnami/kafka", 1)[1].split("```", 1)[0]
    env = dict(re.findall(r"^\s+([A-Z_]+): \"?([^\"\n]+)\"?$", block, re.MULTILINE))
    assert "KAFKA_CFG_ADVERTISED_LISTENERS" in env and "ALLOW_PLAINTEXT_LISTENER" in env
    config = build_config(env_settings(env))
    assert config.unknown == () and config.listener == ("0.0.0.0", 9092) and config.num_partitions == 3
