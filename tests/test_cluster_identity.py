"""What the Java Admin client builds its view of the cluster from, checked at the wire: DescribeCluster's broker ids
(the client keys its node map and finds the controller by them) and Metadata v12 asked by topic id (the client sends
the name as "", which is not a request by name)."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.testing import Broker
from tests.clientutil import RawConnection

METADATA, CREATE_TOPICS, DESCRIBE_CLUSTER = 3, 19, 60


@pytest.fixture(scope="module", params=[1, 3], ids=["1-node", "3-nodes"])
def broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    with Broker(nodes=request.param) as running:
        yield running


def call(address: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(address) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def metadata_by_id(address: str, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {"topics": topics, "allow_auto_topic_creation": True, "include_topic_authorized_operations": False}
    return call(address, METADATA, 12, body)["topics"]


def create_topic(address: str, name: str, partitions: int) -> bytes:
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": -1, "assignments": [],
                        "configs": []}], "timeout_ms": 10_000, "validate_only": False}
    [created] = call(address, CREATE_TOPICS, 7, body)["topics"]
    assert created["error_code"] == ErrorCode.NONE
    return created["topic_id"]


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_names_every_broker_by_its_id(broker: Broker, version: int) -> None:
    answer = call(broker.bootstrap_servers, DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False})
    ids = [entry["broker_id"] for entry in answer["brokers"]]
    assert sorted(ids) == sorted(broker.core.node_ids)
    assert answer["controller_id"] in ids
    metadata = call(broker.bootstrap_servers, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                                           "include_topic_authorized_operations": False})
    assert {(b["node_id"], b["host"], b["port"]) for b in metadata["brokers"]} == {
        (b["broker_id"], b["host"], b["port"]) for b in answer["brokers"]}


@pytest.mark.parametrize("endpoint_type,version,error", [
    (2, 1, ErrorCode.MISMATCHED_ENDPOINT_TYPE), (7, 1, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)])
def test_describe_cluster_of_controllers_is_not_a_brokers_answer(broker: Broker, endpoint_type: int, version: int,
                                                                error: ErrorCode) -> None:
    answer = call(broker.bootstrap_servers, DESCRIBE_CLUSTER, version,
                  {"include_cluster_authorized_operations": False, "endpoint_type": endpoint_type})
    assert answer["error_code"] == error and answer["brokers"] == []


@pytest.mark.parametrize("name", ["", None])
def test_metadata_by_topic_id(broker: Broker, name: str | None) -> None:
    topic = f"t-{uuid.uuid4().hex[:12]}"
    topic_id = create_topic(broker.bootstrap_servers, topic, 2)
    unknown = uuid.uuid4().bytes
    known, missing = metadata_by_id(broker.bootstrap_servers, [
        {"name": name, "topic_id": topic_id}, {"name": name, "topic_id": unknown}])
    assert (known["error_code"], known["name"], known["topic_id"]) == (ErrorCode.NONE, topic, topic_id)
    assert [p["partition_index"] for p in known["partitions"]] == [0, 1]
    assert (missing["error_code"], missing["name"], missing["topic_id"], missing["partitions"]) == (
        ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, [])
    assert broker.core.topic("") is None  # "" was never taken for a name to create


def test_metadata_naming_any_id_answers_by_ids_alone(broker: Broker) -> None:
    """As KafkaApis: once a request names a topic id, its names are not looked up (nor created)."""
    topic = f"t-{uuid.uuid4().hex[:12]}"
    topic_id = create_topic(broker.bootstrap_servers, topic, 1)
    answer = metadata_by_id(broker.bootstrap_servers, [
        {"name": f"{topic}-other", "topic_id": bytes(16)}, {"name": "", "topic_id": topic_id}])
    assert [(t["name"], t["topic_id"], t["error_code"]) for t in answer] == [(topic, topic_id, ErrorCode.NONE)]
    assert broker.core.topic(f"{topic}-other") is None


def test_a_stopped_node_is_never_named_controller() -> None:
    """Clients send admin requests (CreateTopics...) to the controller they are told of: a stopped node would take
    them nowhere, so as in Kafka a live broker is named, the same one by every node."""
    with Broker(nodes=3) as broker:
        addresses = {b["broker_id"]: f"{b['host']}:{b['port']}" for b in call(
            broker.bootstrap_servers, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False})["brokers"]}
        broker.stop_node(1)
        for node in (2, 3):
            cluster = call(addresses[node], DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False})
            assert sorted(b["broker_id"] for b in cluster["brokers"]) == [2, 3]
            assert cluster["controller_id"] == 2
            metadata = call(addresses[node], METADATA, 12, {"topics": [], "allow_auto_topic_creation": False,
                                                             "include_topic_authorized_operations": False})
            assert metadata["controller_id"] == 2


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize("name,by_id", [("", True), (None, False)])
def test_metadata_before_v12_may_not_ask_by_id(broker: Broker, version: int, name: str | None, by_id: bool) -> None:
    """Versions 10-11 have the topic id field but Kafka refuses its use (and a null name): INVALID_REQUEST."""
    topic_id = uuid.uuid4().bytes if by_id else bytes(16)
    body = {"topics": [{"name": name, "topic_id": topic_id}], "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False}
    [topic] = call(broker.bootstrap_servers, METADATA, version, body)["topics"]
    assert (topic["error_code"], topic["name"], topic["topic_id"]) == (ErrorCode.INVALID_REQUEST, "", topic_id)
