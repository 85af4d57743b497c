"""The container image as users run it: built from docker/Dockerfile with the documented command under a real engine
(podman), started as `docker run`, compose, Kubernetes and OpenShift start it, and used through published ports by
real clients. Without podman these tests skip and say why (tests/containerutil.py)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer

from minibroker.commands.cli import COMMANDS
from minibroker.config.sources import env_settings
from minibroker.config.values import known_setting
from minibroker.control_client import ControlClient, ControlError
from tests.clientutil import TIMEOUT_S, confluent_admin, confluent_consume, confluent_produce, make_messages
from tests.containerutil import ROOT, Container, Engine, engine, free_port, image  # noqa: F401  (fixtures)

COMPOSE = ROOT / "docker" / "compose.yaml"
CONTAINERS_PAGE = ROOT / "docs" / "containers.md"
KCAT_STAND_IN = "localhost/minibroker-test-kcat:debian-12"


def group_round_trip(bootstrap: str, topic: str, count: int = 5) -> None:
    """``count`` records produced, then read back by a consumer group (FindCoordinator, JoinGroup, Fetch: every
    address the broker advertises is used)."""
    messages = make_messages(count)
    confluent_produce(bootstrap, topic, messages)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"{topic}-group", "auto.offset.reset": "earliest",
        "socket.timeout.ms": int(TIMEOUT_S * 1000),
    })
    values = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
    finally:
        consumer.close()
    assert sorted(values, key=repr) == sorted((m.value for m in messages), key=repr)


def cluster_id_of(bootstrap: str) -> str:
    admin = confluent_admin(bootstrap)  # kept referenced until the answer: a collected client cancels its requests
    return admin.describe_cluster().result(TIMEOUT_S).cluster_id


def start_broker(engine: Engine, image: str, env: dict[str, str] | None = None, **options) -> tuple[Container, str]:
    """A broker container published on a free host port, which it advertises (KAFKA_ADVERTISED_LISTENERS, as the
    docs say to set behind a port mapping); the container and its bootstrap address, once it serves."""
    port = free_port()
    advertised = {"KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}"}
    container = engine.start(image, ports=[(port, 9092)], env={**advertised, **(env or {})}, **options)
    container.wait_for_ready()
    return container, f"127.0.0.1:{port}"


def finished(container: Container) -> str:
    """Stop the container as `docker stop` does and return its logs, after checking that the broker stopped on the
    SIGTERM (exit 0; the engine's SIGKILL after its grace period would be 137) and that every response it sent matched
    its schema."""
    assert container.stop() == 0, container.logs()
    logs = container.logs()
    assert "minibroker stopped" in logs and "Traceback" not in logs and "isn't a known config" not in logs, logs
    assert not container.strict_violations()
    return logs


# ---- the image ----


def test_image_is_built_in_docker_format_with_its_health_check_and_no_source_tree(engine: Engine, image: str) -> None:
    config = engine.image_config(image)
    assert config["Healthcheck"]["Test"] == ["CMD", "minibroker", "probe", "--quiet", "--timeout", "2"]
    assert config["Config"]["User"] not in ("", "0", "root")
    shell = ["run", "--rm", "--entrypoint", "sh", image, "-c"]
    assert engine.run(*shell, "ls -A").stdout == "", "the working directory holds no source tree"
    leftovers = engine.run(*shell, "ls -d /src /opt/minibroker/build /opt/minibroker/lib/*/site-packages/*.egg-info "
                                   "/opt/minibroker/bin/pip 2>/dev/null", check=False).stdout
    assert leftovers == "", f"build leftovers in the image: {leftovers}"
    version = engine.run("run", "--rm", image, "python", "-m", "minibroker", "--version").stdout
    assert version.startswith("minibroker "), "python -m minibroker runs the installed package"


def test_minibroker_commands_reach_minibroker_and_programs_run_as_given(engine: Engine, image: str) -> None:
    """The entry point runs a program the image has as given (sh -c, as Testcontainers' modules start it) and
    anything else as minibroker's command line; no minibroker command may be the name of a program in the image."""
    shadowed = engine.run("run", "--rm", "--entrypoint", "sh", image, "-c",
                          " ".join(f"command -v {name};" for name in COMMANDS), check=False).stdout.split()
    assert shadowed == [], f"programs of the image shadow minibroker commands: {shadowed}"
    assert engine.run("run", "--rm", image, "sh", "-c", "echo as given").stdout.strip() == "as given"
    assert engine.run("run", "--rm", image, "--version").stdout.startswith("minibroker ")
    unreachable = engine.run("run", "--rm", image, "probe", "127.0.0.1:1", check=False, stderr=subprocess.STDOUT)
    assert unreachable.returncode == 1 and "minibroker probe: cannot reach 127.0.0.1:1" in unreachable.stdout


def test_run_serves_host_clients_reports_health_and_stops_on_sigterm(engine: Engine, image: str) -> None:
    """The documented `docker run --rm -p 9092:9092 minibroker`, on a free port instead of 9092 (the container listens
    on the port it publishes, so the address it advertises by default is the host's)."""
    port = free_port()
    container = engine.start(image, ports=[(port, port)], env={"KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{port}"})
    container.wait_for_ready()
    group_round_trip(f"127.0.0.1:{port}", "run")
    health = engine.run("healthcheck", "run", container.id, check=False)
    assert health.returncode == 0, health.stdout + health.stderr
    assert "healthy" in container.inspect("{{.State.Health.Status}}")
    logs = finished(container)
    assert "stopping: signal received" in logs


def test_a_volume_keeps_the_data_for_a_new_container(engine: Engine, image: str) -> None:
    volume = engine.volume()
    first, bootstrap = start_broker(engine, image, volumes=[f"{volume}:/var/lib/minibroker"])
    placements = confluent_produce(bootstrap, "kept", make_messages(10))
    cluster_id = cluster_id_of(bootstrap)
    finished(first)
    second, again = start_broker(engine, image, volumes=[f"{volume}:/var/lib/minibroker"])
    assert cluster_id_of(again) == cluster_id
    consumed = confluent_consume(again, "kept", {0: len(placements)}, partitions=1)
    assert [record.message for record in consumed] == make_messages(10)
    finished(second)


def test_read_only_root_filesystem(engine: Engine, image: str) -> None:
    """`--read-only` (Kubernetes' readOnlyRootFilesystem): the broker writes only its data volume."""
    container, bootstrap = start_broker(engine, image, options=["--read-only"])
    group_round_trip(bootstrap, "read-only")
    finished(container)


def test_an_arbitrary_user_id_in_group_0_can_use_the_data_directory(engine: Engine, image: str) -> None:
    """OpenShift and Kubernetes' runAsUser start the image as a uid it has never heard of, in group 0."""
    container, bootstrap = start_broker(engine, image, user="1000650000:0")
    group_round_trip(bootstrap, "any-uid")
    finished(container)


@pytest.mark.parametrize("case", ["foreign group", "root-owned bind mount"])
def test_an_unwritable_data_directory_is_named_in_one_clear_line(engine: Engine, image: str, tmp_path: Path, case: str) -> None:
    if case == "foreign group":
        container = engine.start(image, user="1000650000:1000650000")
    else:
        mount = tmp_path / "data"
        mount.mkdir(mode=0o755)
        container = engine.start(image, volumes=[f"{mount}:/var/lib/minibroker"])
    assert container.wait() == 1
    logs = container.logs()
    lines = [line for line in logs.splitlines() if "cannot start" in line]
    assert len(lines) == 1 and "Traceback" not in logs, logs
    assert re.search(r"the data directory /var/lib/minibroker is not writable by this process \(uid \d+, gid \d+\): "
                     r"it belongs to uid \d+ gid \d+ with mode \d+", lines[0]), lines[0]


# ---- environments written for other images ----


def documented_yaml_blocks() -> list[dict]:
    """The compose examples of the containers page (```yaml blocks)."""
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", CONTAINERS_PAGE.read_text(), re.DOTALL)]


@pytest.mark.parametrize("was", ["apache/kafka", "bitnami/kafka"])
def test_a_compose_service_written_for_another_image_works_by_its_image_line(engine: Engine, image: str, was: str) -> None:
    """The containers page's examples of a service written for apache/kafka and for bitnami/kafka, with the image line
    changed; host port 9092 becomes a free one (in the advertised listener too)."""
    services = [block["services"]["kafka"] for block in documented_yaml_blocks() if "services" in block]
    bitnami = was == "bitnami/kafka"
    service = next(s for s in services if any(name.startswith("KAFKA_CFG_") for name in s["environment"]) == bitnami)
    port = free_port()
    environment = {name: str(value).replace(":9092", f":{port}") for name, value in service["environment"].items()}
    container = engine.start(image, ports=[(port, port)], env=environment)
    container.wait_for_ready()
    group_round_trip(f"localhost:{port}", "other-image")
    finished(container)


# ---- compose ----


def interpolate(text: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME:-default} substitution."""
    return re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: variables.get(m.group(1), m.group(2)), text)


def test_compose_file_names_known_settings() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    environment = compose["services"]["broker"]["environment"]
    assert all(known_setting(name) for name in env_settings({name: "" for name in environment}))
    assert compose["services"]["client"]["depends_on"]["broker"]["condition"] == "service_healthy"


def kcat_image(engine: Engine) -> str:
    """compose.yaml's client image, or where it cannot be pulled a stand-in with the same kcat release."""
    wanted = yaml.safe_load(COMPOSE.read_text())["services"]["client"]["image"]
    if engine.has_image(wanted) or engine.run("pull", "--quiet", wanted, check=False).returncode == 0:
        return wanted
    if not engine.has_image(KCAT_STAND_IN):
        context = ROOT / "tests" / "containers"
        engine.build(context / "kcat.Dockerfile", KCAT_STAND_IN, engine.base_image(), context)
    return KCAT_STAND_IN


def test_compose_serves_the_network_and_the_host_on_two_listeners(engine: Engine, image: str) -> None:
    """docker/compose.yaml's services as compose runs them: the broker on a network under its service name, the
    host port given by MINIBROKER_HOST_PORT, its health check passing, then the client service's own command (its
    image, edenhill/kcat 1.7.1, stood in for by Debian's kcat 1.7.1); and a client on the host on the other
    listener."""
    port = free_port()
    compose = yaml.safe_load(interpolate(COMPOSE.read_text(), {"MINIBROKER_HOST_PORT": str(port)}))
    broker, client = compose["services"]["broker"], compose["services"]["client"]
    network = engine.network()
    host_port, container_port = broker["ports"][0].split(":")
    container = engine.start(
        image, env=broker["environment"], ports=[(int(host_port), int(container_port))], network=network, alias="broker",
    )
    container.wait_for_ready()
    assert engine.run("healthcheck", "run", container.id, check=False).returncode == 0
    demo = engine.start(kcat_image(engine), *client["command"], entrypoint=json.dumps(client["entrypoint"]),
                        network=network)
    assert demo.wait() == 0, demo.logs()
    assert "hello from compose" in demo.logs()
    group_round_trip(f"localhost:{port}", "from-the-host")
    finished(container)


# ---- a generic container on a random port, and test control from outside ----


def test_a_generic_container_on_a_random_port_is_told_its_address_through_the_control_api(engine: Engine, image: str) -> None:
    """What a GenericContainer in any language can do: publish the broker's and the control API's ports on random
    host ports, then give the broker the mapped address; faults and the schema registry work through their mapped
    ports with the token."""
    token = "s3cret"
    container = engine.start(image, ports=[9092, 9644, 8081], env={
        "MINIBROKER_CONTROL_PORT": "9644", "MINIBROKER_CONTROL_TOKEN": token,
        "MINIBROKER_SCHEMA_REGISTRY_PORT": "8081", "MINIBROKER_SCHEMA_REGISTRY_TOKEN": token,
    })
    container.wait_for_ready()
    bootstrap = container.address(9092)
    control_url = f"http://{container.address(9644)}"
    with pytest.raises(ControlError) as refused:
        ControlClient(control_url).health()
    assert refused.value.status == 401
    control = ControlClient(control_url, token)
    control.advertise(1, "PLAINTEXT", bootstrap)
    assert control.health()["nodes"][0]["listeners"][0]["address"] == bootstrap
    group_round_trip(bootstrap, "generic")

    control.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", count=1)
    confluent_produce(bootstrap, "generic", make_messages(3))  # the client retries through the fault
    assert [(fault["hits"], fault["count"]) for fault in control.faults()] == [(1, 0)]

    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    registry = SchemaRegistryClient({"url": f"http://{container.address(8081)}", "basic.auth.user.info": f"any:{token}"})
    schema_id = registry.register_schema("generic-value", Schema('{"type": "string"}', "AVRO"))
    assert registry.get_schema(schema_id).schema_str == '"string"'
    finished(container)


def test_control_and_registry_refuse_every_interface_without_a_token(engine: Engine, image: str) -> None:
    container = engine.start(image, env={"MINIBROKER_CONTROL_PORT": "9644"})
    assert container.wait() == 2
    assert "control.token" in container.logs()
