"""What the container image's Kafka start programs rely on, without an engine: the kafka-storage tool, the
properties configure writes, the lines Kafka logs once it serves, the cluster id of the images' variables, and the
message for a data directory the broker cannot write."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minibroker.commands.cli import permission_problem
from minibroker.commands.kafka_image import format_storage, kafka_storage, properties_text, started_lines
from minibroker.config.settings import ConfigError, build_config, load_config
from minibroker.config.sources import env_settings
from minibroker.storage.checkpoint import read_meta_properties
from minibroker.storage.config import LogConfig
from minibroker.storage.log_manager import LogManager
from minibroker.storage.uuid import check_uuid_string
from tests.brokerproc import BrokerProcess, wait_for_ready
from tests.clientutil import TIMEOUT_S, confluent_admin

TESTCONTAINERS_PYTHON_ID = "MkU3OEVBNTcwNTJENDM2Qk"  # its unused trailing bits are not zero; Kafka takes it


def storage_tool(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = kafka_storage(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def test_random_uuid_prints_a_new_cluster_id() -> None:
    code, out, _ = storage_tool("random-uuid")
    assert code == 0 and len(out.strip()) == 22
    check_uuid_string(out.strip())
    assert storage_tool("random-uuid")[1] != out


def test_format_writes_the_data_directory_of_the_properties_file(tmp_path: Path) -> None:
    properties = tmp_path / "kafka.properties"
    properties.write_text(f"log.dirs={tmp_path / 'data'}\nnode.id=3\nprocess.roles=broker,controller\n")
    code, out, _ = storage_tool("format", "--ignore-formatted", "-t", TESTCONTAINERS_PYTHON_ID, "-c", str(properties))
    assert code == 0 and out == f"Formatting {tmp_path / 'data'} with cluster id {TESTCONTAINERS_PYTHON_ID}.\n"
    meta = read_meta_properties(tmp_path / "data" / "meta.properties")
    assert (meta.cluster_id, meta.node_id) == (TESTCONTAINERS_PYTHON_ID, 3)

    again = storage_tool("format", "-g", "-t", "4L6g3nShT-eMCtK--X86sw", "-c", str(properties))
    assert again == (0, "All of the log directories are already formatted.\n", "")
    code, _, err = storage_tool("format", "-t", "4L6g3nShT-eMCtK--X86sw", "-c", str(properties))
    assert code == 1 and "is already formatted. Use --ignore-formatted" in err
    assert read_meta_properties(tmp_path / "data" / "meta.properties").cluster_id == TESTCONTAINERS_PYTHON_ID


@pytest.mark.parametrize("cluster_id", ["abc", "4L6g3nShT+eMCtK--X86sw", "x" * 30])
def test_format_refuses_what_kafka_refuses(tmp_path: Path, cluster_id: str) -> None:
    properties = tmp_path / "kafka.properties"
    properties.write_text(f"log.dirs={tmp_path / 'data'}\n")
    code, _, err = storage_tool("format", "-t", cluster_id, "-c", str(properties))
    assert code == 1 and "does not appear to be a valid UUID" in err
    assert not (tmp_path / "data").exists()
    with pytest.raises(OSError):
        format_storage(str(tmp_path / "missing.properties"), TESTCONTAINERS_PYTHON_ID, True)


def test_properties_are_the_settings_of_the_environment() -> None:
    environ = {"KAFKA_NODE_ID": "1", "KAFKA_CFG_NUM_PARTITIONS": "3", "MINIBROKER_CLOCK": "virtual", "HOME": "/root",
               "CLUSTER_ID": TESTCONTAINERS_PYTHON_ID, "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_REST_BOOTSTRAP_SERVERS": "x"}
    text = properties_text(environ)
    assert text == f"clock=virtual\ncluster.id={TESTCONTAINERS_PYTHON_ID}\nnode.id=1\nnum.partitions=3\n"


def test_the_images_cluster_id_variables_are_the_cluster_id_setting() -> None:
    assert env_settings({"CLUSTER_ID": "a"}) == {"cluster.id": "a"}
    assert env_settings({"CLUSTER_ID": "a", "KAFKA_KRAFT_CLUSTER_ID": "b"}) == {"cluster.id": "b"}
    assert env_settings({"CLUSTER_ID": "a", "KAFKA_CLUSTER_ID": "c", "MINIBROKER_CLUSTER_ID": "d"}) == {"cluster.id": "d"}
    assert build_config({"cluster.id": TESTCONTAINERS_PYTHON_ID}).cluster_id == TESTCONTAINERS_PYTHON_ID
    with pytest.raises(ConfigError, match="cluster.id"):
        build_config({"cluster.id": "not-a-uuid"})


def test_a_new_data_directory_gets_the_cluster_id_and_a_formatted_one_keeps_its_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    broker = BrokerProcess(tmp_path / "data", env={"CLUSTER_ID": TESTCONTAINERS_PYTHON_ID}).start()
    try:
        admin = confluent_admin(broker.bootstrap)
        assert admin.describe_cluster().result(TIMEOUT_S).cluster_id == TESTCONTAINERS_PYTHON_ID
    finally:
        broker.stop()
    manager = LogManager(tmp_path / "data", LogConfig(), cluster_id="4L6g3nShT-eMCtK--X86sw")
    with caplog.at_level(logging.WARNING):
        manager.open()
    try:
        assert manager.cluster_id == TESTCONTAINERS_PYTHON_ID
        assert "keeps its cluster id MkU3OEVBNTcwNTJENDM2Qk" in caplog.text
    finally:
        manager.close()


def test_kafka_started_lines_follow_the_mode_the_configuration_describes(tmp_path: Path) -> None:
    kraft = started_lines(build_config({"node.id": "2", "process.roles": "broker,controller"}))
    assert kraft == ["[BrokerLifecycleManager id=2] The broker has been unfenced. Transitioning from RECOVERY to RUNNING.",
                     "[KafkaRaftServer nodeId=2] Kafka Server started"]
    assert started_lines(build_config({})) == [line.replace("d=2]", "d=1]") for line in kraft], "Kafka 4 is KRaft"
    zookeeper = build_config({"broker.id": "1", "zookeeper.connect": "localhost:2181"})
    assert started_lines(zookeeper) == ["[KafkaServer id=1] started"]
    old_release = build_config({"zookeeper.connect": "localhost:2181", "kafka.version": "3.6"})
    assert started_lines(old_release) == ["[KafkaServer id=1] started"]


def test_serve_logs_them_once_it_serves_when_asked(tmp_path: Path) -> None:
    properties = tmp_path / "kafka.properties"
    properties.write_text("process.roles=broker\n")
    plain = BrokerProcess(tmp_path / "plain", config_file=properties).start()
    plain.stop()
    assert "kafka.server" not in plain.log_text(), "a plain start logs none of them"
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "minibroker", "serve", "--port", "0", "--data-dir", str(tmp_path / "data"),
             "--config", str(properties), "--log-kafka-started"], stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        wait_for_ready(log_path, proc)
        expected = started_lines(load_config(properties, {}, {}))
        deadline = time.monotonic() + TIMEOUT_S
        while (lines := kafka_lines(log_path)) != expected and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert lines == expected, log_path.read_text()
    finally:
        proc.terminate()
        assert proc.wait(TIMEOUT_S) == 0


def kafka_lines(log_path: Path) -> list[str]:
    return [line.split("kafka.server: ", 1)[1] for line in log_path.read_text().splitlines() if " kafka.server: " in line]


def test_an_unwritable_data_directory_is_described(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o750)
    error = PermissionError(13, "Permission denied", str(data / ".lock"))
    text = permission_problem(error, str(data))
    assert text.startswith(f"the data directory {data} is not writable by this process (uid {os.getuid()}, gid {os.getgid()}):")
    assert f"it belongs to uid {os.getuid()} gid {os.getgid()} with mode 750" in text
    elsewhere = PermissionError(13, "Permission denied", "/etc/ssl/private/key.pem")
    assert permission_problem(elsewhere, str(data)) == str(elsewhere)
