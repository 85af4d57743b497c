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
    assert re.search(r"failing-test Produce v\d+ .* \{\S+-0 base 0 start 0\} -> answered", section), section


MARKED_TESTS = '''
import socket

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

SESSION = []


def deliver(bootstrap, topic, value):
    reports = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 5000})
    producer.produce(topic, value, partition=0, on_delivery=lambda error, message: reports.append(error))
    producer.flush(30)
    return reports


def test_first_unmarked(kafka_bootstrap):
    SESSION.append(kafka_bootstrap)


@pytest.mark.minibroker(
    nodes=3, config={"num.partitions": 4},
    topics={"orders": 3, "compacted": {"partitions": 2, "replication_factor": 3, "config": {"cleanup.policy": "compact"}}},
)
def test_own_cluster(kafka_broker, kafka_bootstrap, kafka_control):
    assert kafka_bootstrap not in SESSION and kafka_bootstrap.split(",")[0] == kafka_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    metadata = admin.list_topics(timeout=30)
    assert sorted(metadata.brokers) == [1, 2, 3]
    assert {name: len(t.partitions) for name, t in metadata.topics.items()} == {"orders": 3, "compacted": 2}
    assert len(metadata.topics["compacted"].partitions[0].replicas) == 3
    [described] = admin.describe_configs([ConfigResource("topic", "compacted")]).values()
    assert described.result(30)["cleanup.policy"].value == "compact"
    assert deliver(kafka_bootstrap, "auto", b"x") == [None]
    assert len(admin.list_topics("auto", timeout=30).topics["auto"].partitions) == 4  # config num.partitions
    kafka_control.stop_node(3)
    SESSION.append(kafka_broker.bootstrap_servers)
    print(f"OWN {kafka_bootstrap}")


def test_unmarked_after_a_marked_one(kafka_bootstrap, kafka_control):
    assert kafka_bootstrap == SESSION[0], "the session broker was replaced"
    host, port = SESSION[1].split(":")
    with pytest.raises(ConnectionRefusedError):  # the marked test's broker stopped with its test
        socket.create_connection((host, int(port)), timeout=5)
    assert all(node["running"] for node in kafka_control.health()["nodes"])


@pytest.mark.minibroker(clock="virtual", topics={"t": 1})
def test_virtual_clock_and_observation(kafka_bootstrap, kafka_control):
    clock = kafka_control.clock()
    assert clock["virtual"] and kafka_control.advance(60_000) == clock["now_ms"] + 60_000
    assert deliver(kafka_bootstrap, "t", b"seen") == [None]
    kafka_control.wait_for(high_watermark=("t", 0, 1), timeout_ms=5000)
    [batch] = kafka_control.records("t", 0)["batches"]
    assert [record["value"] for record in batch["records"]] == ["seen"]


def test_a_fault_stays_in_its_test(kafka_bootstrap, kafka_control, kafka_topic):
    kafka_control.add_fault("Produce", error="TOPIC_AUTHORIZATION_FAILED", topic=kafka_topic)
    [error] = deliver(kafka_bootstrap, kafka_topic, b"refused")
    assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    kafka_control.stop_node(2)


def test_the_next_test_meets_no_fault_and_every_node(kafka_bootstrap, kafka_control, kafka_topic):
    assert kafka_control.faults() == []
    assert [node["running"] for node in kafka_control.health()["nodes"]] == [True, True]
    assert deliver(kafka_bootstrap, kafka_topic, b"accepted") == [None]
'''


def test_the_minibroker_marker_gives_a_test_its_own_broker(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path, "-vv", "--kafka-nodes", "2", tests=MARKED_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout
    assert "test_user.py::test_own_cluster[minibroker] OWN" in result.stdout
    assert re.search(r"OWN 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+", result.stdout), result.stdout


MODULE_MARKED_TESTS = '''
import socket

import pytest

pytestmark = pytest.mark.minibroker(clock="virtual")
SEEN = set()


@pytest.mark.parametrize("run", [1, 2])
def test_each_gets_a_fresh_broker(kafka_broker, run):
    SEEN.add(kafka_broker.bootstrap_servers)
    assert len(SEEN) == run and kafka_broker.core.logs.topics == {}
'''

MISTAKES = {
    "@pytest.mark.minibroker(nodes=0)\ndef test_x(kafka_broker): pass":
        "nodes must be a whole number of at least 1, not 0",
    "@pytest.mark.minibroker(clock='fast')\ndef test_x(kafka_broker): pass": "clock must be 'system' or 'virtual'",
    "@pytest.mark.minibroker(node=2)\ndef test_x(kafka_broker): pass": "unknown keyword(s) ['node']",
    "@pytest.mark.minibroker(topics={'t': {'parts': 2}})\ndef test_x(kafka_broker): pass":
        "topic 't' has unknown keys ['parts']",
    "@pytest.mark.minibroker(3)\ndef test_x(kafka_broker): pass": "takes keywords only",
    "@pytest.mark.minibroker(nodes=2)\ndef test_x(): pass": "uses none of them",
}


def test_a_module_marker_gives_each_test_its_own_broker(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path, tests=MODULE_MARKED_TESTS)
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("test_code, message", MISTAKES.items(), ids=range(len(MISTAKES)))
def test_a_marker_mistake_fails_collection_with_its_reason(tmp_path: Path, test_code: str, message: str) -> None:
    result = run_user_tests(tmp_path, tests=f"import pytest\n\n\n{test_code}\n")
    assert result.returncode == pytest.ExitCode.INTERRUPTED, result.stdout + result.stderr
    assert message in result.stdout


CONTROL_TESTS = '''
def test_control_of_the_external_broker(kafka_control):
    print(f"NODES {[node['id'] for node in kafka_control.health()['nodes']]}")
'''


def test_kafka_control_reaches_an_external_brokers_control_listener(tmp_path: Path) -> None:
    external = BrokerProcess(tmp_path / "external-data", "nodes=2", "control.port=0")
    try:
        external.start()
        url = re.search(r"control (http://\S+?),", external.log_text()).group(1)
        project = tmp_path / "project"
        project.mkdir()
        skipped = run_user_tests(project, "-rs", "--kafka-bootstrap", external.bootstrap, tests=CONTROL_TESTS)
        assert "1 skipped" in skipped.stdout and "--kafka-control URL" in skipped.stdout, skipped.stdout
        result = run_user_tests(project, "--kafka-bootstrap", external.bootstrap, "--kafka-control", url,
                                tests=CONTROL_TESTS)
        assert result.returncode == 0 and "NODES [1, 2]" in result.stdout, result.stdout + result.stderr
    finally:
        external.stop()
    refused = run_user_tests(tmp_path, "--kafka-control", url, tests=CONTROL_TESTS)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR and "give both" in refused.stderr


VERSION_TESTS = '''
import pytest
from minibroker.commands.probe import probe


def produce_max(broker):
    return broker.core.apis[0].max_version


def test_the_session_broker_serves_the_release(kafka_broker):
    assert produce_max(kafka_broker) == 9  # Kafka 2.8 served Produce up to v9


@pytest.mark.minibroker()
def test_a_marked_broker_too(kafka_broker):
    assert produce_max(kafka_broker) == 9


@pytest.mark.minibroker(config={"kafka.version": "2.1"})
def test_a_marker_may_name_another(kafka_broker):
    assert produce_max(kafka_broker) == 7
'''


def test_kafka_version_option_sets_the_release_of_every_in_process_broker(tmp_path: Path) -> None:
    result = run_user_tests(tmp_path, "--kafka-version", "2.8", tests=VERSION_TESTS)
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr
    unknown = run_user_tests(tmp_path, "--kafka-version", "1.0", tests=VERSION_TESTS)
    assert unknown.returncode == pytest.ExitCode.USAGE_ERROR, unknown.stdout + unknown.stderr
    assert "ERROR: --kafka-version 1.0: " in unknown.stderr and "4.1" in unknown.stderr
