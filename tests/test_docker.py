"""The container image without a Docker engine: the Dockerfile's own ENTRYPOINT, CMD, ENV and HEALTHCHECK are read
from the file and run here exactly as the image would run them (with the data dir and port moved to temporary
ones), so a change to the Dockerfile or to environment handling that would break the image fails this test."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from minibroker.config import build_config
from minibroker.config_sources import env_settings
from minibroker.probe import parse_address
from minibroker.setting_values import known_setting
from tests.brokerproc import wait_for_ready
from tests.clientutil import TIMEOUT_S

DOCKER_DIR = Path(__file__).resolve().parents[1] / "docker"
PROMPT_EXIT_S = 5.0


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def exec_form(arguments: str) -> list[str]:
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(item, str) for item in value), f"not exec form: {arguments}"
    return value


class Image:
    """What the Dockerfile declares about the running container."""

    def __init__(self, dockerfile: Path) -> None:
        self.steps = instructions(dockerfile)
        self.env: dict[str, str] = {}
        for name, arguments in self.steps:
            if name == "ENV":
                self.env.update(dict(pair.split("=", 1) for pair in shlex.split(arguments)))

    def last(self, instruction: str) -> str:
        found = [arguments for name, arguments in self.steps if name == instruction]
        assert found, f"the Dockerfile has no {instruction}"
        return found[-1]

    @property
    def command(self) -> list[str]:
        return exec_form(self.last("ENTRYPOINT")) + exec_form(self.last("CMD"))

    @property
    def healthcheck(self) -> list[str]:
        match = re.search(r"\bCMD\s+(\[.*\])\s*$", self.last("HEALTHCHECK"))
        assert match, "HEALTHCHECK must use the exec form: CMD [...]"
        return exec_form(match.group(1))


@pytest.fixture(scope="module")
def image() -> Image:
    return Image(DOCKER_DIR / "Dockerfile")


def container_env(image: Image, data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """The image's environment with the volume and port moved; PATH finds the installed ``minibroker`` command."""
    listener = re.sub(r":\d+$", f":{port}", image.env["KAFKA_LISTENERS"])
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**image.env, "PATH": path, "KAFKA_LISTENERS": listener, "KAFKA_LOG_DIRS": str(data_dir), **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_image_declarations_agree(image: Image) -> None:
    assert re.fullmatch(r"python:3\.1\d+-slim", image.last("FROM")), "a slim Python base image"
    assert image.last("USER") not in ("root", "0"), "the broker must not run as root"
    data_dir = image.env["KAFKA_LOG_DIRS"]
    assert exec_form(image.last("VOLUME")) == [data_dir], "the data directory is the volume"
    _, port = parse_address(image.env["KAFKA_LISTENERS"])
    assert image.last("EXPOSE") == str(port), "EXPOSE the port the broker listens on"
    assert image.healthcheck[:2] == ["minibroker", "probe"]
    config = build_config(env_settings(image.env))
    assert config.unknown == () and config.data_dir == os.path.normpath(data_dir), "ENV must hold known, valid settings"


def test_compose_file_uses_the_image_and_known_settings() -> None:
    text = (DOCKER_DIR / "compose.yaml").read_text()
    assert "dockerfile: docker/Dockerfile" in text and "context: .." in text
    assert "condition: service_healthy" in text, "the example client waits for the broker's health check"
    names = set(re.findall(r"^\s+((?:KAFKA|MINIBROKER)_[A-Z_]+):", text, re.MULTILINE))
    assert "KAFKA_ADVERTISED_LISTENERS" in names
    assert all(known_setting(name) for name in env_settings({name: "" for name in names}))


def test_entrypoint_healthcheck_and_stop_as_the_container_runs_them(image: Image, tmp_path: Path) -> None:
    port = free_port()
    env = container_env(image, tmp_path / "volume", port, KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://broker.example:19092")
    log_path = tmp_path / "container.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(image.command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_ready(log_path, proc)
        health = subprocess.run(image.healthcheck, env=env, capture_output=True, text=True, timeout=30)
        assert health.returncode == 0, health.stderr

        metadata = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=TIMEOUT_S)
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [("broker.example", 19092)]

        proc.send_signal(signal.SIGTERM)  # what `docker stop` sends to the entrypoint process
        assert proc.wait(PROMPT_EXIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (tmp_path / "volume" / "meta.properties").is_file(), "data goes to KAFKA_LOG_DIRS (the volume)"
    unhealthy = subprocess.run(image.healthcheck, env=env, capture_output=True, text=True, timeout=30)
    assert unhealthy.returncode == 1 and "cannot reach" in unhealthy.stderr
