"""The pytest plugin as users get it: a separate pytest run of a small test file, with the plugin loaded through
its ``pytest11`` entry point, against the in-process broker (one node, or a cluster with ``--kafka-nodes``) and
(``--kafka-bootstrap``) a broker process."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from tests.brokerproc import BrokerProcess
from tests.clientutil import confluent_consumer, drain

USER_TESTS = '''
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


def produce(bootstrap, topic, value):
    errors = []  # flush() also counts a message that timed out as done: its delivery report tells
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000})
    producer.produce(topic, value=value, partition=0, on_delivery=lambda error, message: errors.append(error))
    assert producer.flush(30) == 0 and errors == [None], errors
    producer.close()


def consume(bootstrap, topic, count):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "plugin-test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    try:
        for _ in range(150):
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
                if len(values) == count:
                    break
    finally:
        consumer.close()
    return values


def test_round_trip(kafka_broker, kafka_bootstrap, kafka_topic):
    produce(kafka_bootstrap, kafka_topic, b"hello from the plugin")
    assert consume(kafka_bootstrap, kafka_topic, 1) == [b"hello from the plugin"]
    print(f"RESULT broker={type(kafka_broker).__name__} bootstrap={kafka_bootstrap} topic={kafka_topic}")


def test_topics_are_unique(kafka_topic, kafka_topic_factory):
    others = {kafka_topic_factory("orders") for _ in range(3)}
    assert len(others) == 3 and kafka_topic not in others
    assert all(name.startswith("orders-test_topics_are_unique-") for name in others)


def test_session_broker_is_shared(kafka_broker, kafka_bootstrap):
    assert kafka_bootstrap.split(",")[0] == kafka_broker.bootstrap_servers
'''

CLUSTER_USER_TESTS = '''
from confluent_kafka.admin import AdminClient, NewTopic


def test_clients_outlive_a_stopped_node_1(kafka_broker, kafka_bootstrap, kafka_topic):
    assert kafka_bootstrap.split(",") == list(kafka_broker.node_addresses.values())
    assert len(kafka_bootstrap.split(",")) == 3
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert len(admin.list_topics(timeout=30).brokers) == 3
    [created] = admin.create_topics([NewTopic(kafka_topic, 1, 3)]).values()  # a replica on every node
    created.result(30)
    produce(kafka_bootstrap, kafka_topic, b"before")
    assert consume(kafka_bootstrap, kafka_topic, 1) == [b"before"]
    kafka_broker.stop_node(1)
    try:  # new clients: they bootstrap from the addresses after node 1's
        produce(kafka_bootstrap, kafka_topic, b"node 1 down")
        assert consume(kafka_bootstrap, kafka_topic, 2) == [b"before", b"node 1 down"]
    finally:
        kafka_broker.start_node(1)
'''


def run_user_tests(tmp_path: Path, *options: str, tests: str = USER_TESTS) -> subprocess.CompletedProcess:
    """``pytest`` in a fresh process on a project of its own, as a user of the installed package would run it
    (the plugin comes from its entry point; the unrelated hypothesis and asyncio plugins are left out for speed)."""
    (tmp_path / "test_user.py").write_text(tests)
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


def test_kafka_nodes_option_runs_a_cluster(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nkafka_nodes = 2\n")  # the command line wins
    result = run_user_tests(tmp_path, "--kafka-nodes", "3", tests=USER_TESTS + CLUSTER_USER_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
    found = result_line(result.stdout)
    assert found["broker"] == "Broker" and len(found["bootstrap"].split(",")) == 3


def test_kafka_nodes_option_refuses_bad_uses(tmp_path: Path) -> None:
    refused = {
        ("--kafka-nodes", "0"): "--kafka-nodes 0: a cluster needs at least 1 node",
        ("--kafka-nodes", "2", "--kafka-bootstrap", "127.0.0.1:9092"): "--kafka-nodes 2 cannot be used with "
        "--kafka-bootstrap: it sizes the in-process broker, which --kafka-bootstrap replaces with an external one",
    }
    for options, message in refused.items():
        result = run_user_tests(tmp_path, *options)
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
        assert f"ERROR: {message}" in result.stderr
    (tmp_path / "pytest.ini").write_text("[pytest]\nkafka_nodes = 0\n")
    result = run_user_tests(tmp_path)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "ERROR: kafka_nodes (ini) 0: a cluster needs at least 1 node" in result.stderr


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



FAILING_TEST = '''
from confluent_kafka import Producer


def test_fails_after_producing(kafka_bootstrap, kafka_topic):
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "client.id": "failing-test"})
    producer.produce(kafka_topic, b"evidence", partition=0)
    assert producer.flush(30) == 0
    assert False, "deliberately failing"


def test_passes(kafka_broker):
    assert kafka_broker.transcript_position() > 0
'''


def test_kafka_transcript_option_puts_the_transcript_in_a_failing_tests_report(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path, "--kafka-transcript", tests=FAILING_TEST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout
    section = result.stdout.split("minibroker transcript", 1)[1]
    assert "failing-test Produce v" in section and "Metadata" in section, result.stdout
