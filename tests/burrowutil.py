"""Debian's Burrow 1.2.1 (consumer-lag monitoring) and the ZooKeeper it needs, as child processes of a test: each with
its own directory and free ports, always stopped. Burrow's kafka cluster module asks the broker for topics and
offsets (ListOffsets v0), its kafka consumer module reads ``__consumer_offsets`` and decodes the commits itself
(OffsetCommitValue up to version 3: a version 4 value is "failed to decode ... value version"), and its HTTP server
answers how far behind a group is. ``burrow_lag`` is the issue's acceptance scenario (produce 30, commit 10, lag
20), for a test to assert on."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BURROW = "Burrow"
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/*"
# The client profile's kafka-version of Debian's /etc/burrow/burrow.toml: Burrow's sarama then sends Metadata v1,
# ListOffsets v0 and Fetch v2 (message format 1). With "2.0.0": Metadata v5, ListOffsets v0 and v1, Fetch v4.
DEBIAN_PROFILE_VERSION = "0.10.0"


def missing() -> str | None:
    """Why Burrow cannot run here (to skip with), or None."""
    if shutil.which(BURROW) is None:
        return "Debian's burrow is not installed (apt-get install burrow)"
    if not ZOOKEEPER_JAR.exists() or shutil.which("java") is None:
        return "Debian's zookeeper (and a java) is not installed (apt-get install zookeeper)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Child:
    """A child process writing to its own log file; ``stop`` ends it (and only it)."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=log_path.parent)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ZooKeeper(Child):
    """A standalone ZooKeeper on a free port with its own data directory."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = directory / "zoo.cfg"
        config.write_text(
            f"dataDir={directory / 'data'}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\ntickTime=2000\n"
            "admin.enableServer=false\n4lw.commands.whitelist=srvr\n"
        )
        super().__init__(
            ["java", "-cp", ZOOKEEPER_CLASSPATH, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config)],
            directory / "zookeeper.log",
        )

    def wait_ready(self, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.alive(), f"ZooKeeper exited:\n{self.log_text()}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"srvr")  # answers "not currently serving requests" until sessions are served
                    if sock.recv(64).startswith(b"Zookeeper version"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"ZooKeeper not ready after {seconds}s:\n{self.log_text()}")


def burrow_config(directory: Path, zookeeper_port: int, bootstrap: str, http_port: int, sarama_version: str) -> str:
    """Burrow's burrow.toml: one cluster ("local") at ``bootstrap``, its consumer module reading __consumer_offsets
    from the start, the HTTP server on ``http_port``, offsets kept in memory."""
    return f"""
[general]
pidfile="{directory / 'burrow.pid'}"

[logging]
filename="{directory / 'burrow.log'}"
level="debug"

[zookeeper]
servers=["127.0.0.1:{zookeeper_port}"]
timeout=6
root-path="/burrow"

[client-profile.minibroker]
client-id="burrow-test"
kafka-version="{sarama_version}"

[cluster.local]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="minibroker"
topic-refresh=1
offset-refresh=1

[consumer.local]
class-name="kafka"
cluster="local"
servers=["{bootstrap}"]
client-profile="minibroker"
start-latest=false
offsets-topic="__consumer_offsets"

[httpserver.default]
address="127.0.0.1:{http_port}"

[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
"""


class Burrow(Child):
    """Burrow with its own config directory, against one broker."""

    def __init__(self, directory: Path, zookeeper_port: int, bootstrap: str, sarama_version: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.http_port = free_port()
        (directory / "burrow.toml").write_text(
            burrow_config(directory, zookeeper_port, bootstrap, self.http_port, sarama_version)
        )
        self.directory = directory
        super().__init__([BURROW, "-config-dir", str(directory)], directory / "burrow.out")

    def log_text(self) -> str:
        """Its own log file (the debug log) and what it wrote to stdout."""
        own = self.directory / "burrow.log"
        return (own.read_text(errors="replace") if own.exists() else "") + super().log_text()

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) of a GET on Burrow's HTTP server; (0, {}) while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=5) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")
        except (OSError, ValueError):
            return 0, {}

    def lag(self, group: str) -> dict[str, Any] | None:
        """The status Burrow reports for ``group`` (totallag and the partitions), or None while it has none."""
        status, body = self.get(f"/v3/kafka/local/consumer/{group}/lag")
        return body.get("status") if status == 200 and not body.get("error") else None


@dataclass
class LagRun:
    """What a run of ``burrow_lag`` saw: Burrow's last status of the group, and why it may be missing."""

    status: dict[str, Any] | None
    burrow_log: str
    broker_refusals: list[str]

    @property
    def total_lag(self) -> int | None:
        return None if self.status is None else self.status.get("totallag")

    def diagnostics(self) -> str:
        errors = [line for line in self.burrow_log.splitlines() if '"level":"error"' in line or '"level":"warn"' in line]
        return (f"Burrow's status: {self.status}\nbroker refused: {self.broker_refusals[-5:]}\n"
                f"Burrow's errors and warnings: {errors[-10:]}")


def burrow_lag(root: Path, kafka_version: str = "3.9", produced: int = 30, committed: int = 10,
               sarama_version: str = DEBIAN_PROFILE_VERSION, seconds: float = 60.0) -> LagRun:
    """The acceptance scenario: a broker emulating ``kafka_version``, ``produced`` records in a topic of one partition,
    ``committed`` committed for a group, then ZooKeeper and Burrow (its client profile at ``sarama_version``) watching
    it until Burrow reports the group's lag as ``produced - committed`` (or ``seconds`` pass). Every process is stopped
    before it returns."""
    root.mkdir(parents=True, exist_ok=True)
    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.brokerproc import BrokerProcess
    from tests.clientutil import TIMEOUT_S, confluent_create_topic

    topic, group = "lagged", "watched"
    broker = BrokerProcess(root / "data", f"kafka.version={kafka_version}", "offsets.topic.num.partitions=1")
    zookeeper = burrow = None
    status = None
    try:
        broker.start()
        confluent_create_topic(broker.bootstrap, topic, partitions=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for index in range(produced):
            producer.produce(topic, b"record %d" % index)
        assert producer.flush(TIMEOUT_S) == 0, "records not delivered"
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        try:
            consumer.commit(offsets=[TopicPartition(topic, 0, committed)], asynchronous=False)
        finally:
            consumer.close()
        zookeeper = ZooKeeper(root / "zookeeper")
        zookeeper.wait_ready()
        burrow = Burrow(root / "burrow", zookeeper.port, broker.bootstrap, sarama_version)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and burrow.alive():
            status = burrow.lag(group)
            if status is not None and status.get("totallag") == produced - committed:
                break
            time.sleep(0.5)
    finally:
        for child in (burrow, zookeeper):
            if child is not None:
                child.stop()
        broker.stop()
    refusals = [line for line in broker.log_text().splitlines() if "closing" in line or "outside" in line]
    return LagRun(status, burrow.log_text() if burrow is not None else "", refusals)
