"""The control listener (HTTP/JSON): health, node and leader operations from any language, and what it answers to
bad input: a 4xx naming the problem, and a broker that goes on serving."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.config.settings import ConfigError
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S

CONTROL = re.compile(r"control (http://\S+?),")


def call(url: str, method: str = "GET", body: Any = None, raw: bytes | None = None,
         token: str | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def brokers_seen(bootstrap: str) -> list[int]:
    return sorted(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=TIMEOUT_S).brokers)


def test_health_names_every_node_and_its_address() -> None:
    with Broker(nodes=2, control=True) as broker:
        status, health = call(broker.control_url + "/v1/health")
        assert status == 200 and health["status"] == "ok"
        assert [(n["id"], n["running"], n["listeners"][0]["address"]) for n in health["nodes"]] == [
            (node, True, address) for node, address in broker.node_addresses.items()
        ]


def test_nodes_stop_start_and_join_through_the_control_api(topic_name: str) -> None:
    with Broker(nodes=3, control=True) as broker:
        url, bootstrap = broker.control_url, ",".join(broker.node_addresses.values())
        assert call(f"{url}/v1/nodes/2/stop", "POST", {"clean": False}) == (200, {"id": 2, "running": False, "clean": False})
        assert brokers_seen(bootstrap) == [1, 3]
        assert call(f"{url}/v1/nodes/2/stop", "POST")[0] == 409
        assert call(f"{url}/v1/nodes/2/start", "POST") == (200, {"id": 2, "running": True})
        assert brokers_seen(bootstrap) == [1, 2, 3]
        status, added = call(f"{url}/v1/nodes", "POST")
        assert (status, added["id"]) == (201, 4) and brokers_seen(bootstrap) == [1, 2, 3, 4]

        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic_name, 1, replication_factor=2)])[topic_name].result(TIMEOUT_S)
        [partition] = admin.list_topics(topic_name, timeout=TIMEOUT_S).topics[topic_name].partitions.values()
        follower = next(node for node in partition.replicas if node != partition.leader)
        outsider = next(node for node in (1, 2, 3, 4) if node not in partition.replicas)
        leader_url = f"{url}/v1/partitions/{topic_name}/0/leader"
        assert call(leader_url, "POST", {"node": follower}) == (
            200, {"topic": topic_name, "partition": 0, "leader": follower, "leader_epoch": 1})
        assert admin.list_topics(topic_name, timeout=TIMEOUT_S).topics[topic_name].partitions[0].leader == follower
        status, answer = call(leader_url, "POST", {"node": outsider})
        assert status == 409 and "is not a replica" in answer["error"]


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("GET", "/v2/health", None, 404, "no such control path: /v2/health"),
    ("DELETE", "/v1/health", None, 405, "use GET"),
    ("POST", "/v1/nodes/9/stop", None, 404, "no node 9: the nodes are [1, 2]"),
    ("POST", "/v1/nodes/two/stop", None, 404, "nodes are numbers"),
    ("POST", "/v1/nodes/2/stop", b"{not json", 400, "the body is not JSON"),
    ("POST", "/v1/nodes/2/stop", b"[1]", 400, "the body must be a JSON object"),
    ("POST", "/v1/nodes/2/stop", {"clean": "yes"}, 400, "'clean' must be a JSON bool, not string"),
    ("POST", "/v1/partitions/nope/0/leader", {"node": 1}, 404, "no topic 'nope'"),
])
def test_bad_requests_get_a_4xx_naming_the_problem(
    method: str, path: str, body: Any, status: int, message: str,
) -> None:
    with Broker(nodes=2, control=True) as broker:
        raw = body if isinstance(body, bytes) else None
        answer = call(broker.control_url + path, method, None if raw else body, raw=raw)
        assert answer[0] == status and message in answer[1]["error"], answer
        assert call(broker.control_url + "/v1/health")[0] == 200


def raw_exchange(address: tuple[str, int], data: bytes) -> bytes:
    with socket.create_connection(address, timeout=TIMEOUT_S) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(("data", "status"), [
    (b"\x00\x00\x00\x10garbage that is not HTTP\r\n\r\n", b"400"),
    (b"GET /v1/health HTTP/1.1\r\nContent-Length: 2147483648\r\n\r\n", b"413"),
    (b"POST /v1/nodes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"411"),
    (b"GET /v1/health HTTP/1.1\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n", b"413"),
    (b"POST /v1/nodes/2/stop HTTP/1.1\r\nContent-Length: 10\r\n\r\n{}", b"400"),
])
def test_malformed_http_is_refused_and_the_broker_goes_on(data: bytes, status: bytes) -> None:
    with Broker(nodes=2, control=True) as broker:
        host, port = broker.control_url.removeprefix("http://").rsplit(":", 1)
        assert raw_exchange((host, int(port)), data).split(b" ")[1] == status
        assert call(broker.control_url + "/v1/health")[0] == 200
        assert brokers_seen(broker.bootstrap_servers) == [1, 2]


def test_a_token_guards_the_control_listener() -> None:
    with pytest.raises(ConfigError, match="not a loopback address: set control.token"):
        with Broker(control=True, control_host="0.0.0.0"):
            pass
    with Broker(control=True, control_host="0.0.0.0", control_token="s3cret") as broker:
        port = broker.control_url.rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}/v1/health"
        status, answer = call(url)
        assert status == 401 and "bearer token is required" in answer["error"]
        assert call(url, token="wrong")[0] == 401
        assert call(url, token="s3cret")[0] == 200


def test_curl_and_the_cli_drive_a_broker_process(tmp_path: Path) -> None:
    """Another language's view: curl (when installed) and `minibroker control` against a broker process whose
    readiness line names the control listener."""
    proc = BrokerProcess(tmp_path / "data", "nodes=2", "control.port=0").start()
    try:
        match = CONTROL.search(proc.log_text())
        assert match, proc.log_text()
        url = match.group(1)
        cli = [sys.executable, "-m", "minibroker", "control", "--url", url]
        stopped = subprocess.run([*cli, "POST", "/v1/nodes/2/stop", '{"clean": true}'], capture_output=True, text=True)
        assert stopped.returncode == 0 and json.loads(stopped.stdout)["running"] is False, stopped.stderr
        refused = subprocess.run([*cli, "POST", "/v1/nodes/2/stop"], capture_output=True, text=True)
        assert refused.returncode == 1 and "node 2 is not running" in refused.stdout
        if shutil.which("curl") is not None:
            started = subprocess.run(["curl", "-sf", "-X", "POST", f"{url}/v1/nodes/2/start"], capture_output=True, text=True)
            assert json.loads(started.stdout) == {"id": 2, "running": True}, started.stderr
        else:
            assert call(f"{url}/v1/nodes/2/start", "POST")[0] == 200
        assert brokers_seen(proc.bootstrap) == [1, 2]
    finally:
        proc.stop()


def test_the_python_control_client_names_the_errors_it_is_answered(topic_name: str) -> None:
    from minibroker.control_client import ControlClient, ControlError

    with Broker(nodes=2, control=True) as broker:
        control = ControlClient(broker.control_url)
        assert [node["id"] for node in control.health()["nodes"]] == [1, 2]
        with pytest.raises(ControlError) as refused:
            control.start_node(2)
        assert refused.value.status == 409 and refused.value.message == "node 2 is running"
        with pytest.raises(ControlError, match="404: no partition 0 of topic"):
            control.records(topic_name, 0)
        broker.create_topic(topic_name, 1, 2)
        with pytest.raises(TimeoutError):
            control.wait_for(high_watermark=(topic_name, 0, 1), timeout_ms=50)
        follower = 3 - broker.core.placements.of(topic_name, 0).leader
        assert control.move_leader(topic_name, 0, follower) == 1
        assert control.records(topic_name, 0)["high_watermark"] == 0


def committed_offset(consumer: Consumer, topic: str) -> int | None:
    """Partition 0's committed offset; None while the consumer meets NOT_COORDINATOR (it finds the new one then)."""
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT_S)[0].offset
    except KafkaException:
        return None


def coordinator_of(bootstrap: str, group: str) -> int | None:
    """The group's coordinator as a new admin client finds it (librdkafka's admin keeps asking the coordinator it
    found first, and reports its NOT_COORDINATOR); None while the new one still loads."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return admin.describe_consumer_groups([group])[group].result(TIMEOUT_S).coordinator.id
    except KafkaException:
        return None


def test_a_groups_and_a_transactional_ids_coordinator_move_where_they_are_told(topic_name: str) -> None:
    from minibroker.control_client import ControlClient, ControlError
    from tests.txnutil import producer, wait_until

    with Broker(nodes=3, control=True) as broker:
        control = ControlClient(broker.control_url)
        bootstrap = ",".join(broker.node_addresses.values())
        with pytest.raises(ControlError, match="404: __consumer_offsets does not exist yet"):
            control.move_coordinator(2, group="g")
        broker.create_topic(topic_name, 1, 3)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition(topic_name, 0, 7)], asynchronous=False)
            wait_until(lambda: coordinator_of(bootstrap, "g") is not None, TIMEOUT_S, "the group is described")
            first = coordinator_of(bootstrap, "g")
            target = first % 3 + 1
            assert control.move_coordinator(target, group="g") >= 1
            wait_until(lambda: coordinator_of(bootstrap, "g") == target, TIMEOUT_S, "the group's coordinator moved")
            wait_until(lambda: committed_offset(consumer, topic_name) == 7, TIMEOUT_S, "the new coordinator serves it")
        finally:
            consumer.close()
        with producer("confluent", bootstrap, "tx-moved") as txn:
            txn.begin()
            txn.send(topic_name, 0, b"v")
            txn.commit()
            topic, partition = broker.core.coordinator_partition(transactional_id="tx-moved")
            before = broker.core.placements.of(topic, partition).leader
            broker.move_coordinator(before % 3 + 1, transactional_id="tx-moved")
            assert broker.core.placements.of(topic, partition).leader == before % 3 + 1
            txn.begin()  # the producer finds the new coordinator and goes on
            txn.send(topic_name, 0, b"w")
            txn.commit()
        assert broker.transaction("tx-moved")["state"] == "CompleteCommit"
        status, answer = call(f"{broker.control_url}/v1/coordinators", "POST", {"group": "g", "transactional_id": "t", "node": 1})
        assert status == 400 and answer["error"] == "name one group or one transactional_id"


def test_a_listener_is_given_another_advertised_address_at_run_time() -> None:
    """A container learns its mapped port only once it runs: POST /v1/nodes/N/listeners/NAME changes what Metadata
    and FindCoordinator answer, through a node's restart; bad input is a 4xx and changes nothing."""
    with Broker(nodes=2, control=True) as broker:
        url = broker.control_url
        node2 = broker.node_addresses[2]
        port = int(node2.rsplit(":", 1)[1])
        status, answer = call(f"{url}/v1/nodes/2/listeners/plaintext", "POST", {"advertised": f"localhost:{port}"})
        assert status == 200 and answer["nodes"][1]["listeners"][0]["address"] == f"localhost:{port}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        seen = {b.id: (b.host, b.port) for b in admin.list_topics(timeout=TIMEOUT_S).brokers.values()}
        assert seen[2] == ("localhost", port) and seen[1] == tuple(broker.address)
        broker.stop_node(2)
        broker.start_node(2)
        assert call(f"{url}/v1/nodes")[1]["nodes"][1]["listeners"][0]["address"] == f"localhost:{port}"
        assert call(f"{url}/v1/nodes/2/listeners/SSL", "POST", {"advertised": "a:1"})[0] == 404
        assert call(f"{url}/v1/nodes/9/listeners/PLAINTEXT", "POST", {"advertised": "a:1"})[0] == 404
        for bad in ({"advertised": "no-port"}, {"advertised": "a:0"}, {"advertised": ":9092"}, {"advertised": 9092}, {}):
            assert call(f"{url}/v1/nodes/2/listeners/PLAINTEXT", "POST", bad)[0] == 400, bad
        assert call(f"{url}/v1/nodes")[1]["nodes"][1]["listeners"][0]["address"] == f"localhost:{port}"
