"""The pytest plugin as users get it: a separate pytest run of a small test file, with the plugin loaded through
its ``pytest11`` entry point, against the in-process broker and (``--kafka-bootstrap``) a broker process."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from tests.brokerproc import BrokerProcess
from tests.clientutil import confluent_consumer, drain

USER_TESTS = '''
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


def test_round_trip(kafka_broker, kafka_bootstrap, kafka_topic):
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(kafka_topic, value=b"hello from the plugin", partition=0)
    assert producer.flush(30) == 0
    producer.close()
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "plugin-test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(kafka_topic, 0, OFFSET_BEGINNING)])
    try:
        message = None
        for _ in range(150):
            message = consumer.poll(0.2)
            if message is not None:
                break
        assert message is not None and message.error() is None
        assert message.value() == b"hello from the plugin"
    finally:
        consumer.close()
    print(f"RESULT broker={type(kafka_broker).__name__} bootstrap={kafka_bootstrap} topic={kafka_topic}")


def test_topics_are_unique(kafka_topic, kafka_topic_factory):
    others = {kafka_topic_factory("orders") for _ in range(3)}
    assert len(others) == 3 and kafka_topic not in others
    assert all(name.startswith("orders-test_topics_are_unique-") for name in others)


def test_session_broker_is_shared(kafka_broker, kafka_bootstrap):
    assert kafka_broker.bootstrap_servers == kafka_bootstrap
'''


def run_user_tests(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    """``pytest`` in a fresh process on a project of its own, as a user of the installed package would run it
    (the plugin comes from its entry point; the unrelated hypothesis and asyncio plugins are left out for speed)."""
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    quiet_plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:asyncio"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", *quiet_plugins, *options, "test_user.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )


def result_line(output: str) -> dict[str, str]:
    match = re.search(r"RESULT broker=(\S+) bootstrap=(\S+) topic=(\S+)", output)
    assert match, output
    return dict(zip(("broker", "bootstrap", "topic"), match.groups()))


def test_plugin_is_registered_through_its_entry_point() -> None:
    from importlib.metadata import entry_points

    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("minibroker") == "minibroker.pytest_plugin", "reinstall: pip install -e . --no-deps"


def test_fixtures_run_an_in_process_broker(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout
    found = result_line(result.stdout)
    assert found["broker"] == "Broker" and found["bootstrap"].startswith("127.0.0.1:")
    assert found["topic"].startswith("topic-test_round_trip-")


def test_kafka_bootstrap_option_uses_an_external_broker(tmp_path: Path) -> None:
    external = BrokerProcess(tmp_path / "external-data")
    try:
        external.start()
        project = tmp_path / "project"
        project.mkdir()
        result = run_user_tests(project, "--kafka-bootstrap", external.bootstrap)
        assert result.returncode == 0, result.stdout + result.stderr
        found = result_line(result.stdout)
        assert found == {"broker": "ExternalBroker", "bootstrap": external.bootstrap, "topic": found["topic"]}
        consumer = confluent_consumer(external.bootstrap)
        try:
            consumer.assign([TopicPartition(found["topic"], 0, OFFSET_BEGINNING)])
            [record] = drain(consumer, {0: 1})
        finally:
            consumer.close()
        assert record.message.value == b"hello from the plugin", "the test must have written to the external broker"
    finally:
        external.stop()


def test_kafka_bootstrap_option_fails_fast_on_a_dead_address(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    result = run_user_tests(tmp_path, "--kafka-bootstrap", dead)
    assert result.returncode != 0
    assert f"--kafka-bootstrap {dead}: cannot reach {dead}" in result.stdout

