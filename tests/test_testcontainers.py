"""minibroker's image in place of the images Testcontainers' Kafka modules start, with nothing changed but the image
name: testcontainers-python's KafkaContainer itself (through podman's Docker-compatible API), and the Java, Go, .NET
and Node modules' conventions run exactly as those modules run them (their environment, entry point and command, the
start script copied in after the start, the log line they wait for), each giving a broker that a client on the host
reaches through the mapped port. What the modules do is read from their sources (testcontainers-java 2.x:
org.testcontainers.kafka.KafkaContainer, ConfluentKafkaContainer, KafkaHelper and the deprecated
org.testcontainers.containers.KafkaContainer; testcontainers-go modules/kafka; Testcontainers for .NET's
Testcontainers.Kafka; testcontainers-node's @testcontainers/kafka 12)."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import pytest

from tests.clientutil import TIMEOUT_S, confluent_admin
from tests.containerutil import LABEL, Container, Engine, engine, image  # noqa: F401  (fixtures)
from tests.test_container_image import group_round_trip

# testcontainers-python's KafkaContainer.with_kraft() reads the tag as a Confluent Platform version (7.0.0 or later).
NUMERIC_TAG = "8.0.0"
# The clients run on the engine's host: the modules' getHost() is this address.
HOST = "127.0.0.1"


# ---- testcontainers-python ----


@pytest.fixture(scope="session")
def docker_api(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """podman's Docker-compatible API on a socket of this session (what testcontainers-python talks to)."""
    socket_path = tmp_path_factory.mktemp("api") / "podman.sock"
    service = subprocess.Popen(
        [engine.executable, "system", "service", "--time=0", f"unix://{socket_path}"], env=engine.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"unix://{socket_path}"
        deadline = time.monotonic() + TIMEOUT_S
        while subprocess.run([engine.executable, "--url", url, "version"], env=engine.env, capture_output=True).returncode:
            assert service.poll() is None and time.monotonic() < deadline, "podman's API service did not start"
            time.sleep(0.05)
        yield url
    finally:
        service.terminate()
        service.wait(30)


@pytest.fixture
def testcontainers_env(docker_api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """testcontainers-python's settings for this machine, set before it is imported: the engine's socket; no Ryuk
    reaper (its image is not at hand; the test's `with` removes the container); the host's own ports (a /.dockerenv
    file here would make it look for a gateway)."""
    monkeypatch.setenv("DOCKER_HOST", docker_api)
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
    monkeypatch.setenv("TESTCONTAINERS_CONNECTION_MODE", "docker_host")


@pytest.mark.parametrize("kraft", [False, True], ids=["default", "kraft"])
def test_testcontainers_python_kafka_container(engine: Engine, image: str, testcontainers_env: None, kraft: bool) -> None:
    from testcontainers.community.kafka import KafkaContainer

    numbered = engine.image_name(NUMERIC_TAG)
    engine.tag(image, numbered)
    container = KafkaContainer(numbered, labels={LABEL: engine.session})
    if kraft:
        container = container.with_kraft()
    with container as kafka:
        bootstrap = kafka.get_bootstrap_server()
        group_round_trip(bootstrap, "testcontainers-python")
        if kraft:  # the cluster id it formats the storage with
            admin = confluent_admin(bootstrap)
            assert admin.describe_cluster().result(TIMEOUT_S).cluster_id == kafka.cluster_id
        logs = "".join(part.decode() for part in kafka.get_logs())
    assert "Traceback" not in logs and "strict codec:" not in logs, logs


# ---- the Java and Go modules' conventions ----


@dataclass(frozen=True)
class Module:
    """How a Testcontainers module starts a Kafka image: its environment and command, the start script it copies in
    once the container runs (made from the bootstrap address the host uses and the container), and the log line it waits
    for."""

    name: str
    port: int
    env: dict[str, str]
    command: list[str]
    script_path: str
    script: Callable[[str, Container], str]
    wait_for: str
    entrypoint: str | None = None
    cluster_id: str | None = None


JAVA_CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"
JAVA_SCRIPT = "/tmp/testcontainers_start.sh"
JAVA_COMMAND = ["sh", "-c", f"while [ ! -f {JAVA_SCRIPT} ]; do sleep 0.1; done; {JAVA_SCRIPT}"]
RUNNING = r".*Transitioning from RECOVERY to RUNNING.*"
ZOOKEEPER_STARTED = r".*\[KafkaServer id=\d+\] started.*"
INTERNAL_TOPICS_ENV = {
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1", "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": str(2**63 - 1), "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
}
# KafkaHelper.envVars(): org.testcontainers.kafka.KafkaContainer (apache/kafka) and ConfluentKafkaContainer.
KAFKA_HELPER_ENV = {
    "CLUSTER_ID": JAVA_CLUSTER_ID,
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,BROKER://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER", "KAFKA_NODE_ID": "1",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094", **INTERNAL_TOPICS_ENV,
}
# The deprecated org.testcontainers.containers.KafkaContainer (cp-kafka), before its mode adds to it.
LEGACY_JAVA_ENV = {
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_BROKER_ID": "1", **INTERNAL_TOPICS_ENV,
}


def java_script(run: str) -> Callable[[str, Container], str]:
    """The start script the Java modules copy in: the advertised listeners, then the image's start program."""
    def script(bootstrap: str, container: Container) -> str:
        advertised = f"PLAINTEXT://{bootstrap},BROKER://{container.hostname}:9093"
        return f"#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS={advertised}\n{run} \n"
    return script


def legacy_java_script(kraft: bool) -> Callable[[str, Container], str]:
    """The deprecated KafkaContainer's script: ensure emptied, ZooKeeper started (or KRaft storage formatted from the
    configure step), then Confluent's run."""
    def script(bootstrap: str, container: Container) -> str:
        lines = ["#!/bin/bash", f"export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://{bootstrap},BROKER://{container.hostname}:9092"]
        if kraft:
            lines += [
                "sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure",
                f"echo 'kafka-storage format --ignore-formatted -t \"{JAVA_CLUSTER_ID}\" -c /etc/kafka/kafka.properties' "
                ">> /etc/confluent/docker/configure",
            ]
        else:
            lines += [
                "echo '' > /etc/confluent/docker/ensure ", *embedded_zookeeper("/tmp/zookeeper.properties"),
            ]
        return "\n".join(lines + ["/etc/confluent/docker/run ", ""])
    return script


def embedded_zookeeper(properties: str) -> list[str]:
    """The lines that start the image's ZooKeeper beside the broker (Java's deprecated module, .NET and Node)."""
    return [
        f"echo 'clientPort=2181' > {properties}",
        f"echo 'dataDir=/var/lib/zookeeper/data' >> {properties}",
        f"echo 'dataLogDir=/var/lib/zookeeper/log' >> {properties}",
        f"zookeeper-server-start {properties} &",
    ]


def dotnet_script(bootstrap: str, container: Container) -> str:
    """Testcontainers for .NET's start script for an image of the Apache vendor (its listener list ends in a
    comma when no listener was added)."""
    advertised = f"PLAINTEXT://{bootstrap},BROKER://{container.ip}:9093,"
    return f"#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS={advertised}\nexec /etc/kafka/docker/run"


def node_script(bootstrap: str, container: Container) -> str:
    """testcontainers-node's start script in KRaft mode (a tag of 8.0.0 or later)."""
    advertised = f"BROKER://{container.hostname}:9092,PLAINTEXT://{bootstrap}"
    return f"#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS={advertised}\n/etc/confluent/docker/run \n"


def go_script(bootstrap: str, container: Container) -> str:
    """testcontainers-go's starter script (its module's starterScriptContent)."""
    return "\n".join([
        "#!/bin/bash",
        "source /etc/confluent/docker/bash-config",
        f"export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://{bootstrap},BROKER://{container.hostname}:9092",
        "echo Starting Kafka KRaft mode",
        "sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure",
        "echo 'kafka-storage format --ignore-formatted -t \"$(kafka-storage random-uuid)\" -c /etc/kafka/kafka.properties' "
        ">> /etc/confluent/docker/configure",
        "echo '' > /etc/confluent/docker/ensure",
        "/etc/confluent/docker/configure",
        "/etc/confluent/docker/launch",
    ])


GO_SCRIPT = "/usr/sbin/testcontainers_start.sh"
MODULES = [
    Module("java-kafka", 9092, KAFKA_HELPER_ENV, JAVA_COMMAND, JAVA_SCRIPT,
           java_script("/etc/kafka/docker/run"), RUNNING, cluster_id=JAVA_CLUSTER_ID),
    Module("java-confluent", 9092, KAFKA_HELPER_ENV, JAVA_COMMAND, JAVA_SCRIPT,
           java_script("/etc/confluent/docker/run"), RUNNING, cluster_id=JAVA_CLUSTER_ID),
    Module("java-legacy-zookeeper", 9093, {**LEGACY_JAVA_ENV, "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181"},
           JAVA_COMMAND[1:], JAVA_SCRIPT, legacy_java_script(kraft=False), ZOOKEEPER_STARTED, entrypoint="sh"),
    # Its KRaft mode joins listeners and protocols from hash sets: any order, here with the controller first.
    Module("java-legacy-kraft", 9093, {
        **LEGACY_JAVA_ENV, "CLUSTER_ID": JAVA_CLUSTER_ID, "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "CONTROLLER://0.0.0.0:9094,PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094", "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    }, JAVA_COMMAND[1:], JAVA_SCRIPT, legacy_java_script(kraft=True), RUNNING, entrypoint="sh", cluster_id=JAVA_CLUSTER_ID),
    Module("go", 9093, {
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
        "KAFKA_REST_BOOTSTRAP_SERVERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_BROKER_ID": "1", **INTERNAL_TOPICS_ENV, "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller", "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
    }, ["-c", f"while [ ! -f {GO_SCRIPT} ]; do sleep 0.1; done; bash {GO_SCRIPT}"], GO_SCRIPT, go_script, RUNNING,
           entrypoint="sh"),
    # Testcontainers for .NET with .WithVendor(KafkaVendor.ApacheSoftwareFoundation): KRaft, the apache/kafka program.
    Module("dotnet-apache", 9092, {
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,BROKER://:9093,CONTROLLER://:9094",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_BROKER_ID": "1", "KAFKA_NODE_ID": "1",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094", **INTERNAL_TOPICS_ENV, "CLUSTER_ID": JAVA_CLUSTER_ID,
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER", "KAFKA_PROCESS_ROLES": "broker,controller",
    }, ["while [ ! -f /testcontainers.sh ]; do sleep 0.1; done; /testcontainers.sh"], "/testcontainers.sh",
           dotnet_script, RUNNING, entrypoint='["/bin/sh", "-c"]', cluster_id=JAVA_CLUSTER_ID),
    # testcontainers-node with a tag of 8.0.0 or later (KRaft); it waits for the image's health check, or for a log
    # line when given one.
    Module("node-kraft", 9093, {
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_BROKER_ID": "1", **INTERNAL_TOPICS_ENV,
        "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE": "false", "KAFKA_ADVERTISED_LISTENERS": "BROKER://localhost:9092",
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
        "CLUSTER_ID": JAVA_CLUSTER_ID, "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094", "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    }, ["-c", f"echo 'Waiting for script...'; while [ ! -f {JAVA_SCRIPT} ]; do sleep 0.1; done; {JAVA_SCRIPT}"],
           JAVA_SCRIPT, node_script, RUNNING, entrypoint="sh", cluster_id=JAVA_CLUSTER_ID),
]


@pytest.mark.parametrize("module", MODULES, ids=[module.name for module in MODULES])
def test_a_testcontainers_module_starts_the_image_as_it_starts_kafka(engine: Engine, image: str, module: Module) -> None:
    container = engine.start(image, *module.command, env=module.env, ports=[module.port], entrypoint=module.entrypoint)
    bootstrap = container.address(module.port)
    container.copy_in(module.script(bootstrap, container), module.script_path, mode=0o777)
    container.wait_for_log(module.wait_for)
    group_round_trip(bootstrap, module.name)
    if module.cluster_id is not None:
        admin = confluent_admin(bootstrap)
        assert admin.describe_cluster().result(TIMEOUT_S).cluster_id == module.cluster_id
    logs = container.logs()
    assert "Traceback" not in logs and not container.strict_violations(), logs
    unknown = re.findall(r"The configuration '(\S+)' was supplied but isn't a known config", logs)
    assert unknown == [name for name in ("zookeeper.connect", "confluent.support.metrics.enable")
                       if "KAFKA_" + name.replace(".", "_").upper() in module.env], logs
