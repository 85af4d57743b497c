"""Partition administration on a cluster in one process (``nodes=3``), with real admin clients over TCP:
CreatePartitions with explicit assignments, ElectLeaders, AlterPartitionReassignments and
ListPartitionReassignments, DescribeLogDirs and AlterReplicaLogDirs, each refused as Kafka refuses it, and guarded
by the authorizer as Kafka guards it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.admin import NewPartitions as KafkaNewPartitions
from kafka.structs import TopicPartitionReplica
from minibroker.acls.operations import ALTER, DESCRIBE
from minibroker.protocol.errors import ErrorCode

from minibroker.testing import Broker
from tests.aclutil import ADMIN, CLUSTER, TOPIC, acl_broker, grant, login, password
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, Deadline, RawConnection
from tests.test_security import call

CREATE_PARTITIONS, ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 37, 43, 45, 46
DESCRIBE_LOG_DIRS, ALTER_LOG_DIRS, METADATA = 35, 34, 3


@pytest.fixture(scope="module")
def cluster() -> Iterator[Broker]:
    with Broker(nodes=3) as broker:
        yield broker


def admin(cluster: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def make_topic(cluster: Broker, name: str, *replicas: list[int]) -> None:
    """A topic whose partitions have these replicas (leader: the first)."""
    client = admin(cluster)  # kept until the answer: its futures fail when it is gone
    client.create_topics([NewTopic(name, len(replicas), replica_assignment=[list(r) for r in replicas])])[name].result(TIMEOUT_S)


def partitions(cluster: Broker, topic: str) -> list[dict[str, Any]]:
    with RawConnection(cluster.bootstrap_servers) as conn:
        answer = call(conn, METADATA, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                           "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    return answer["topics"][0]["partitions"]


def placement(cluster: Broker, topic: str) -> list[tuple[list[int], int, int]]:
    """(replicas, leader, leader epoch) of each partition, as Metadata tells clients."""
    return [(p["replica_nodes"], p["leader_id"], p["leader_epoch"]) for p in partitions(cluster, topic)]


def raw(cluster: Broker, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(cluster.bootstrap_servers) as conn:
        return call(conn, api_key, version, body)


# ---- CreatePartitions ----


def test_confluent_grows_a_topic_with_explicit_assignments(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2, 3])
    client = admin(cluster)
    futures = client.create_partitions([NewPartitions(topic_name, 3, replica_assignment=[[3, 2, 1], [2, 3, 1]])])
    futures[topic_name].result(TIMEOUT_S)
    assert placement(cluster, topic_name) == [([1, 2, 3], 1, 0), ([3, 2, 1], 3, 0), ([2, 3, 1], 2, 0)]


def test_kafka_python_grows_a_topic_with_explicit_assignments(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2])
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        client.create_partitions({topic_name: KafkaNewPartitions(2, [[3, 1]])})
    finally:
        client.close()
    assert placement(cluster, topic_name) == [([1, 2], 1, 0), ([3, 1], 3, 0)]


@pytest.mark.parametrize("count,assignments,error,message", [
    (3, [[3, 2, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    (2, [[3, 3, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes the broker 3 more than once."),
    (2, [[4, 2, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 4, but no such broker is registered."),
    (2, [[3, 2]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a partition with "
     "2 replica(s), but this is not consistent with previous partitions, which have 3 replica(s)."),
    (2, [[]], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
    (1, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
    (0, None, ErrorCode.INVALID_PARTITIONS, "The topic {topic} currently has 1 partition(s); 0 would not be an increase."),
])
def test_create_partitions_refusals(
    cluster: Broker, topic_name: str, count: int, assignments: list[list[int]] | None, error: ErrorCode, message: str,
) -> None:
    make_topic(cluster, topic_name, [1, 2, 3])
    body = {"topics": [{"name": topic_name, "count": count, "assignments": None if assignments is None else [
        {"broker_ids": ids} for ids in assignments]}], "timeout_ms": 5000, "validate_only": False}
    [result] = raw(cluster, CREATE_PARTITIONS, 3, body)["results"]
    assert (result["error_code"], result["error_message"]) == (error, message.format(topic=topic_name))
    assert len(partitions(cluster, topic_name)) == 1


def test_validate_only_checks_assignments_and_changes_nothing(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2, 3])
    body = {"topics": [{"name": topic_name, "count": 2, "assignments": [{"broker_ids": [2, 3, 1]}]}],
            "timeout_ms": 5000, "validate_only": True}
    assert raw(cluster, CREATE_PARTITIONS, 3, body)["results"][0]["error_code"] == ErrorCode.NONE
    assert len(partitions(cluster, topic_name)) == 1


def test_an_assignment_of_stopped_nodes_only_is_refused(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1])
    cluster.stop_node(3)
    try:
        body = {"topics": [{"name": topic_name, "count": 2, "assignments": [{"broker_ids": [3]}]}],
                "timeout_ms": 5000, "validate_only": False}
        [result] = raw(cluster, CREATE_PARTITIONS, 3, body)["results"]
    finally:
        cluster.start_node(3)
    assert result["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert result["error_message"] == ("All brokers specified in the manual partition assignment for partition 1 are "
                                       "fenced or in controlled shutdown.")


# ---- ElectLeaders ----


def elect(cluster: Broker, election: ElectionType, *partitions_: tuple[str, int]) -> dict[tuple[str, int], int]:
    """Each partition's result as an error code (0: elected), from confluent-kafka's admin client."""
    tps = [TopicPartition(topic, partition) for topic, partition in partitions_] if partitions_ else None
    client = admin(cluster)
    results = client.elect_leaders(election, tps).result(TIMEOUT_S)
    return {(tp.topic, tp.partition): 0 if error is None else error.code() for tp, error in results.items()}


def test_a_preferred_election_gives_the_leadership_back_to_the_first_replica(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2, 3], [2, 3, 1])
    epoch = cluster.move_leader(topic_name, 0, 3)
    assert placement(cluster, topic_name)[0] == ([1, 2, 3], 3, epoch)
    assert elect(cluster, ElectionType.PREFERRED, (topic_name, 0), (topic_name, 1)) == {
        (topic_name, 0): ErrorCode.NONE, (topic_name, 1): ErrorCode.ELECTION_NOT_NEEDED,
    }
    assert placement(cluster, topic_name) == [([1, 2, 3], 1, epoch + 1), ([2, 3, 1], 2, 0)]


def test_an_election_of_every_partition_leaves_out_those_that_need_none(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2], [2, 1], [3, 1])
    cluster.move_leader(topic_name, 2, 1)
    results = {key: error for key, error in elect(cluster, ElectionType.PREFERRED).items() if key[0] == topic_name}
    assert results == {(topic_name, 2): ErrorCode.NONE}
    assert [leader for _, leader, _ in placement(cluster, topic_name)] == [1, 2, 3]


def test_a_stopped_preferred_replica_cannot_be_elected(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [3, 2])
    make_topic(cluster, f"{topic_name}-on-3", [3])
    cluster.stop_node(3)
    try:
        assert elect(cluster, ElectionType.PREFERRED, (topic_name, 0)) == {(topic_name, 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
        assert elect(cluster, ElectionType.UNCLEAN, (topic_name, 0), (f"{topic_name}-on-3", 0)) == {
            (topic_name, 0): ErrorCode.ELECTION_NOT_NEEDED,  # node 2 leads it
            (f"{topic_name}-on-3", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,  # its only replica is down
        }
    finally:
        cluster.start_node(3)
    assert elect(cluster, ElectionType.PREFERRED, (topic_name, 0)) == {(topic_name, 0): ErrorCode.NONE}


def test_elections_of_unknown_partitions(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1])
    body = {"election_type": 0, "topic_partitions": [{"topic": topic_name, "partitions": [5]},
                                                     {"topic": "no-such-topic", "partitions": [0]}], "timeout_ms": 5000}
    answer = raw(cluster, ELECT_LEADERS, 2, body)
    assert answer["error_code"] == ErrorCode.NONE
    assert [r["partition_result"] for r in answer["replica_election_results"]] == [
        [{"partition_id": 5, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": f"No such partition as {topic_name}-5"}],
        [{"partition_id": 0, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "error_message": "No such topic as no-such-topic"}],
    ]
    body["election_type"] = 7
    answer = raw(cluster, ELECT_LEADERS, 2, body)
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST


# ---- reassignments ----


def kafka_python(cluster: Broker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)


def test_a_reassignment_moves_replicas_and_leader_while_clients_keep_working(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    for number in range(50):
        producer.produce(topic_name, str(number).encode(), partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    client = kafka_python(cluster)
    try:
        results = client.alter_partition_reassignments({KafkaTopicPartition(topic_name, 0): [3, 2]})
        assert results == {KafkaTopicPartition(topic_name, 0): None}
        assert placement(cluster, topic_name) == [([3, 2], 3, 1)]  # the leader went: the first live replica leads
        assert client.list_partition_reassignments() == {}
        client.alter_partition_reassignments({KafkaTopicPartition(topic_name, 0): [2, 3]})
        assert placement(cluster, topic_name) == [([2, 3], 3, 1)]  # the same replicas: the leader stays
        client.alter_partition_reassignments({KafkaTopicPartition(topic_name, 0): [2]})
        assert placement(cluster, topic_name) == [([2], 2, 2)]
    finally:
        client.close()
    for number in range(50, 100):
        producer.produce(topic_name, str(number).encode(), partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": topic_name})
    try:
        consumer.assign([TopicPartition(topic_name, 0, 0)])
        numbers: list[int] = []
        deadline = Deadline(TIMEOUT_S)
        while len(numbers) < 100 and deadline.left():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                numbers.append(int(message.value()))
    finally:
        consumer.close()
    assert numbers == list(range(100))


def test_a_reassignment_onto_a_stopped_node_waits_for_it(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2], [2, 1])
    tp0, tp1 = KafkaTopicPartition(topic_name, 0), KafkaTopicPartition(topic_name, 1)
    cluster.stop_node(3)
    client = kafka_python(cluster)  # made after the stop: it knows nodes 1 and 2 only
    try:
        assert client.alter_partition_reassignments({tp0: [3, 1], tp1: [3, 2]}) == {tp0: None, tp1: None}
        ongoing = {"replicas": [3, 1, 2], "adding_replicas": [3], "removing_replicas": [2]}
        assert client.list_partition_reassignments()[tp0] == ongoing
        assert client.list_partition_reassignments({topic_name: [0]}) == {tp0: ongoing}
        assert placement(cluster, topic_name)[0] == ([3, 1, 2], 1, 0)
        assert client.alter_partition_reassignments({tp1: None}) == {tp1: None}  # cancelled: back as it was
        assert placement(cluster, topic_name)[1] == ([2, 1], 2, 1)  # node 3 went from the replicas: a new epoch
        answer = raw(cluster, ALTER_REASSIGNMENTS, 0, {"timeout_ms": 5000, "topics": [
            {"name": topic_name, "partitions": [{"partition_index": 1, "replicas": None}]}]})
        assert answer["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    finally:
        cluster.start_node(3)
        client.close()
    assert placement(cluster, topic_name) == [([3, 1], 1, 1), ([2, 1], 2, 1)]
    assert raw(cluster, LIST_REASSIGNMENTS, 0, {"timeout_ms": 5000, "topics": None})["topics"] == []


@pytest.mark.parametrize("target,error,message", [
    ([1, 4], ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 4, but no such broker is registered."),
    ([2, 2], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 2 more than once."),
    ([], ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
    ([1, 2, 3], ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor is changed from 2 to 3"),
])
def test_reassignment_refusals(cluster: Broker, topic_name: str, target: list[int], error: ErrorCode, message: str) -> None:
    make_topic(cluster, topic_name, [1, 2])
    body = {"timeout_ms": 5000, "allow_replication_factor_change": False, "topics": [
        {"name": topic_name, "partitions": [{"partition_index": 0, "replicas": target},
                                            {"partition_index": 9, "replicas": [1]}]},
        {"name": "no-such-topic", "partitions": [{"partition_index": 0, "replicas": [1]}]},
    ]}
    answer = raw(cluster, ALTER_REASSIGNMENTS, 1, body)
    assert answer["allow_replication_factor_change"] is False
    assert [[(p["error_code"], p["error_message"]) for p in r["partitions"]] for r in answer["responses"]] == [
        [(error, message), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic_name}:9.")],
        [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named no-such-topic.")],
    ]
    assert placement(cluster, topic_name) == [([1, 2], 1, 0)]


# ---- log directories ----


def segment_bytes(data_dir: Path, topic: str, partition: int) -> int:
    return sum(path.stat().st_size for path in (data_dir / f"{topic}-{partition}").glob("*.log"))


def test_log_dirs_show_each_nodes_replicas_with_the_sizes_of_their_files(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2], [2, 3])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for number in range(300):
        producer.produce(topic_name, b"x" * (number % 50), partition=number % 2)
    assert producer.flush(TIMEOUT_S) == 0
    client = kafka_python(cluster)
    try:
        described = client.describe_log_dirs({topic_name: [0, 1]})
    finally:
        client.close()
    data_dir = Path(cluster.core.config.data_dir).absolute()
    sizes = {p: segment_bytes(data_dir, topic_name, p) for p in (0, 1)}
    assert all(sizes.values())
    by_node = {}
    for answer in described:
        [log_dir] = answer["log_dirs"]
        assert (log_dir["error_code"], log_dir["log_dir"]) == (0, str(data_dir))
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        by_node[answer["broker"]] = {
            (t["name"], p["partition_index"]): (p["partition_size"], p["offset_lag"], p["is_future_key"])
            for t in log_dir["topics"] for p in t["partitions"]
        }
    zero = {p: (sizes[p], 0, False) for p in (0, 1)}
    assert by_node == {1: {(topic_name, 0): zero[0]}, 2: {(topic_name, 0): zero[0], (topic_name, 1): zero[1]},
                       3: {(topic_name, 1): zero[1]}}


def test_a_replica_stays_in_the_one_log_dir(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1, 2])
    data_dir = str(Path(cluster.core.config.data_dir).absolute())
    client = kafka_python(cluster)
    try:
        results = client.alter_replica_log_dirs({
            TopicPartitionReplica(topic_name, 0, 1): data_dir,
            TopicPartitionReplica(topic_name, 0, 2): "/elsewhere",
            TopicPartitionReplica(topic_name, 0, 3): data_dir,
        })
    finally:
        client.close()
    assert {key.broker_id: error.errno for key, error in results.items()} == {
        1: ErrorCode.NONE, 2: ErrorCode.LOG_DIR_NOT_FOUND, 3: ErrorCode.REPLICA_NOT_AVAILABLE,
    }
    body = {"dirs": [{"path": data_dir, "topics": [{"name": "no-such-topic", "partitions": [0]}]}]}
    assert raw(cluster, ALTER_LOG_DIRS, 2, body)["results"] == [
        {"topic_name": "no-such-topic", "partitions": [{"partition_index": 0, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]},
    ]


# ---- authorization, on a cluster ----


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from acl_broker(
        tmp_path_factory.mktemp("partition-admin-acl") / "data", ["viewer", "operator", "grower", "nobody"], "nodes=3"
    )


def secured_topic(broker: BrokerProcess, name: str) -> None:
    with login(broker, ADMIN) as conn:
        [created] = call(conn, 19, 7, {"topics": [{"name": name, "num_partitions": -1, "replication_factor": -1,
                                                   "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                                                   "configs": []}], "timeout_ms": 5000, "validate_only": False})["topics"]
    assert created["error_code"] == 0


def test_the_authorizer_guards_partition_admin(secured: BrokerProcess, topic_name: str) -> None:
    secured_topic(secured, topic_name)
    grant(secured, "viewer", CLUSTER, "kafka-cluster", DESCRIBE)
    grant(secured, "operator", CLUSTER, "kafka-cluster", ALTER)
    grant(secured, "grower", TOPIC, topic_name, ALTER)
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elect_body = {"election_type": 0, "topic_partitions": [{"topic": topic_name, "partitions": [0]}], "timeout_ms": 5000}
    move_body = {"timeout_ms": 5000, "topics": [{"name": topic_name, "partitions": [{"partition_index": 0, "replicas": [2, 1]}]}]}
    list_body = {"timeout_ms": 5000, "topics": None}
    describe_body = {"topics": None}
    dirs_body = {"dirs": [{"path": "/anywhere", "topics": [{"name": topic_name, "partitions": [0]}]}]}
    grow_body = {"topics": [{"name": topic_name, "count": 2, "assignments": [{"broker_ids": [3, 1]}]}],
                 "timeout_ms": 5000, "validate_only": True}
    with login(secured, "nobody") as conn:
        elected = call(conn, ELECT_LEADERS, 2, elect_body)
        assert elected["error_code"] == denied
        assert elected["replica_election_results"][0]["partition_result"][0]["error_code"] == denied
        moved = call(conn, ALTER_REASSIGNMENTS, 0, move_body)
        assert (moved["error_code"], moved["responses"][0]["partitions"][0]["error_code"]) == (denied, denied)
        assert call(conn, LIST_REASSIGNMENTS, 0, list_body)["error_code"] == denied
        assert call(conn, DESCRIBE_LOG_DIRS, 4, describe_body) == {"throttle_time_ms": 0, "error_code": denied, "results": []}
        assert call(conn, ALTER_LOG_DIRS, 2, dirs_body)["results"][0]["partitions"][0]["error_code"] == denied
        grown = call(conn, CREATE_PARTITIONS, 3, grow_body)["results"][0]
        assert (grown["error_code"], grown["error_message"]) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    with login(secured, "viewer") as conn:
        assert call(conn, LIST_REASSIGNMENTS, 0, list_body)["error_code"] == ErrorCode.NONE
        assert call(conn, DESCRIBE_LOG_DIRS, 4, describe_body)["results"][0]["error_code"] == ErrorCode.NONE
        assert call(conn, ALTER_REASSIGNMENTS, 0, move_body)["error_code"] == denied
    with login(secured, "grower") as conn:
        assert call(conn, CREATE_PARTITIONS, 3, grow_body)["results"][0]["error_code"] == ErrorCode.NONE
    with login(secured, "operator") as conn:
        assert call(conn, ALTER_REASSIGNMENTS, 0, move_body)["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        elected = call(conn, ELECT_LEADERS, 2, elect_body)
        assert elected["replica_election_results"][0]["partition_result"][0]["error_code"] == ErrorCode.NONE
        assert call(conn, ALTER_LOG_DIRS, 2, dirs_body)["results"][0]["partitions"][0]["error_code"] == ErrorCode.LOG_DIR_NOT_FOUND
    with login(secured, ADMIN) as conn:
        [topic] = call(conn, METADATA, 12, {"topics": [{"name": topic_name, "topic_id": bytes(16)}],
                                            "allow_auto_topic_creation": False,
                                            "include_topic_authorized_operations": False})["topics"]
    assert [(p["replica_nodes"], p["leader_id"]) for p in topic["partitions"]] == [([2, 1], 2)]


def test_librdkafka_0081_create_partitions_as_a_super_user(secured: BrokerProcess, topic_name: str) -> None:
    """librdkafka's admin test 0081, its CreatePartitions part, on the secured cluster: nine topics of 1, 3, ... 17
    partitions grow by 1 to 5 in one request; every other topic has explicit assignments, even partitions on the
    nodes in order and odd ones reversed, and Metadata shows exactly those replicas."""
    client = AdminClient({"bootstrap.servers": f"127.0.0.1:{secured.listener_ports['SASL_PLAINTEXT']}",
                          "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                          "sasl.username": ADMIN, "sasl.password": password(ADMIN)})
    nodes = [1, 2, 3]
    by_parity = [nodes, nodes[::-1]]
    new_topics, growths, expected = [], [], {}
    for i in range(9):
        name, initial, final = f"{topic_name}-{i}", 1 + i * 2, 2 + i * 2 + i // 2
        if i % 2 == 0:
            new_topics.append(NewTopic(name, initial, replica_assignment=[by_parity[p & 1] for p in range(initial)]))
            growths.append(NewPartitions(name, final, replica_assignment=[by_parity[p & 1] for p in range(initial, final)]))
            expected[name] = [by_parity[p & 1] for p in range(final)]
        else:
            new_topics.append(NewTopic(name, initial, replication_factor=3))
            growths.append(NewPartitions(name, final))
            expected[name] = final
    for future in client.create_topics(new_topics, operation_timeout=6.5).values():
        future.result(TIMEOUT_S)
    for future in client.create_partitions(growths, operation_timeout=6.5).values():
        future.result(TIMEOUT_S)
    topics = client.list_topics(timeout=TIMEOUT_S).topics
    for name, want in expected.items():
        found = topics[name].partitions
        if isinstance(want, int):
            assert len(found) == want and all(sorted(p.replicas) == nodes for p in found.values())
        else:
            assert [found[p].replicas for p in range(len(want))] == want and len(found) == len(want)


def test_a_topic_named_twice_is_refused_once(cluster: Broker, topic_name: str) -> None:
    make_topic(cluster, topic_name, [1])
    grow = {"name": topic_name, "count": 2, "assignments": None}
    body = {"topics": [grow, grow], "timeout_ms": 5000, "validate_only": False}
    assert raw(cluster, CREATE_PARTITIONS, 3, body)["results"] == [
        {"name": topic_name, "error_code": ErrorCode.INVALID_REQUEST, "error_message": "Duplicate topic name."},
    ]
    assert len(partitions(cluster, topic_name)) == 1
