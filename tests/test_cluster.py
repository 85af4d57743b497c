"""A cluster in one process (``nodes``): Kafka's replica placement, every node listed in Metadata from every node,
replication factors up to the node count, requests that need a partition's leader answered only by it, and a
restart that keeps the leaders."""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import RecordInput, build_batch

from minibroker.cluster.placements import PLACEMENT_FILE, PartitionPlacement, Placements, assign_replicas
from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, Deadline, RawConnection, stored_batches
from tests.numbered_producer import NumberedProducer

METADATA, LIST_OFFSETS = 3, 2
NODES = [1, 2, 3]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("nodes,partitions,factor", [(3, 6, 3), (3, 7, 2), (5, 12, 3), (4, 3, 1), (2, 9, 2)])
def test_replicas_are_placed_round_robin_on_distinct_nodes(seed: int, nodes: int, partitions: int, factor: int) -> None:
    ids = list(range(1, nodes + 1))
    placed = assign_replicas(ids, partitions, factor, random.Random(seed))
    assert len(placed) == partitions
    assert all(len(replicas) == factor and len(set(replicas)) == factor for replicas in placed)
    assert all(set(replicas) <= set(ids) for replicas in placed)
    leaders = [replicas[0] for replicas in placed]
    start = ids.index(leaders[0])
    assert leaders == [ids[(start + p) % nodes] for p in range(partitions)], leaders  # round robin
    counts = Counter(node for replicas in placed for node in replicas)
    assert max(counts.values()) - min(counts.get(node, 0) for node in ids) <= factor


def test_placements_are_kept_in_the_data_directory(tmp_path: Path) -> None:
    placements = Placements(tmp_path, NODES, random.Random(1))
    placements.put("orders", placements.assign(4, 3, set(NODES)))
    placements.grow("orders", 4, 6, set(NODES))
    before = [placements.of("orders", p) for p in range(6)]
    assert all(len(p.replicas) == 3 and p.leader == p.replicas[0] and p.leader_epoch == 0 for p in before)
    reloaded = Placements(tmp_path, NODES)
    reloaded.load()
    assert [reloaded.of("orders", p) for p in range(6)] == before
    reloaded.forget("orders")
    again = Placements(tmp_path, NODES)
    again.load()
    assert again.of("orders", 0).replicas == (1,)  # unknown: on the first node


def test_a_reassignment_in_progress_is_kept_and_completes_when_its_node_is_live(tmp_path: Path) -> None:
    placements = Placements(tmp_path, NODES)
    placements.put("orders", [(1, 2)])
    placed = placements.reassign("orders", 0, 1, (3, 1), {1, 2})  # node 3 is down: in progress
    assert placed == PartitionPlacement((3, 1, 2), 1, 0, adding=(3,), removing=(2,))
    reloaded = Placements(tmp_path, NODES)
    reloaded.load()
    assert reloaded.reassigning() == {("orders", 0): placed}
    assert reloaded.elect({1, 2, 3}) == [("orders", 0)]
    assert reloaded.of("orders", 0) == PartitionPlacement((3, 1), 1, 1)  # node 2 went: a new leader epoch
    assert reloaded.reassigning() == {}
    with pytest.raises(LookupError):
        reloaded.reassign("orders", 0, 1, None, {1, 2, 3})


def test_one_node_writes_no_placement(tmp_path: Path) -> None:
    placements = Placements(tmp_path, [1])
    placements.put("orders", placements.assign(3, 1, {1}))
    assert not (tmp_path / PLACEMENT_FILE).exists()
    assert placements.of("orders", 2).leader == 1


def metadata(address: str, topics: list[str]) -> dict:
    with RawConnection(address) as conn:
        body = {"topics": [{"name": t, "topic_id": bytes(16)} for t in topics], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        return decode_response(METADATA, 9, conn.request(METADATA, 9, body))[1]


def list_offsets_error(address: str, topic: str, partition: int, leader_epoch: int = -1) -> ErrorCode:
    with RawConnection(address) as conn:
        body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": leader_epoch, "timestamp": -1},
        ]}]}
        answer = decode_response(LIST_OFFSETS, 5, conn.request(LIST_OFFSETS, 5, body))[1]
    return ErrorCode(answer["topics"][0]["partitions"][0]["error_code"])


def test_three_nodes_serve_one_cluster(tmp_path: Path, topic_name: str) -> None:
    proc = BrokerProcess(tmp_path / "data", "nodes=3").start()
    try:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        admin.create_topics([NewTopic(topic_name, 6, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
            admin.create_topics([NewTopic(f"{topic_name}-4", 1, replication_factor=4)])[f"{topic_name}-4"].result(TIMEOUT_S)

        first = metadata(proc.bootstrap, [topic_name])
        addresses = {b["node_id"]: f"{b['host']}:{b['port']}" for b in first["brokers"]}
        assert sorted(addresses) == NODES and len(set(addresses.values())) == 3
        leaders = {p["partition_index"]: p["leader_id"] for p in first["topics"][0]["partitions"]}
        assert sorted(Counter(leaders.values()).values()) == [2, 2, 2]  # two partitions led by each node
        for address in addresses.values():  # every node answers the same
            assert metadata(address, [topic_name]) == first

        for partition, leader in leaders.items():
            assert list_offsets_error(addresses[leader], topic_name, partition) == ErrorCode.NONE
            other = addresses[next(node for node in NODES if node != leader)]
            assert list_offsets_error(other, topic_name, partition) == ErrorCode.NOT_LEADER_OR_FOLLOWER

        producer = Producer({"bootstrap.servers": proc.bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(60):
            producer.produce(topic_name, str(i).encode(), partition=i % 6)
        assert producer.flush(TIMEOUT_S) == 0
        consumer = Consumer({"bootstrap.servers": addresses[3], "group.id": f"g-{topic_name}",
                             "auto.offset.reset": "earliest", "group.protocol": "consumer"})
        try:
            consumer.subscribe([topic_name])
            values = set()
            for _ in range(300):
                message = consumer.poll(0.1)
                if message is not None and message.error() is None:
                    values.add(int(message.value()))
                if len(values) == 60:
                    break
            assert values == set(range(60))
        finally:
            consumer.close()
    finally:
        proc.stop()


def test_node_id_numbers_the_nodes_from_it(topic_name: str) -> None:
    """node.id is the first node's id, node k's node.id + k - 1: a compose file or a client's suite (KafkaJS's)
    whose brokers are 0, 1 and 2 assigns replicas and finds brokers by those ids; node 0 stops and starts by its id."""
    with Broker(nodes=3, node_id=0) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        assert sorted(int(node) for node in broker.node_addresses) == [0, 1, 2]
        admin.create_topics([NewTopic(topic_name, 2, replica_assignment=[[0, 1], [2, 0]])])[topic_name].result(TIMEOUT_S)
        answer = metadata(broker.bootstrap_servers, [topic_name])
        assert sorted(b["node_id"] for b in answer["brokers"]) == [0, 1, 2]
        partitions = sorted(answer["topics"][0]["partitions"], key=lambda p: p["partition_index"])
        assert [(p["leader_id"], p["replica_nodes"]) for p in partitions] == [(0, [0, 1]), (2, [2, 0])]
        resource = ConfigResource(ResourceType.BROKER, "0")
        assert admin.describe_configs([resource])[resource].result(TIMEOUT_S)["node.id"].value == "0"
        broker.stop_node(2)
        assert metadata(broker.bootstrap_servers, [topic_name])["topics"][0]["partitions"][1]["leader_id"] == 0
        broker.start_node(2)


def test_a_stopped_node_keeps_its_port_for_its_start() -> None:
    """A stopped node refuses connections, yet its port stays bound to it: another program's socket (or an outgoing
    connection's port, from the same range as port 0) cannot take it in between, so the node starts on it again.
    (Under load, a suite's other connections took a freed port between a stop and a start.)"""
    with Broker(nodes=2) as broker:
        host, port_text = broker.node_addresses[2].rsplit(":", 1)
        port = int(port_text)
        broker.stop_node(2)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, port), timeout=TIMEOUT_S).close()
        other = socket.socket()
        try:
            with pytest.raises(OSError):
                other.bind((host, port))  # a plain bind: the port is in use
        finally:
            other.close()
        broker.start_node(2)
        socket.create_connection((host, port), timeout=TIMEOUT_S).close()


def test_a_restart_keeps_leaders_and_epochs(tmp_path: Path, topic_name: str) -> None:
    with Broker(nodes=3, data_dir=tmp_path / "data") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 6, replication_factor=2)])[topic_name].result(TIMEOUT_S)
        broker.move_leader(topic_name, 0, metadata(broker.bootstrap_servers, [topic_name])["topics"][0]["partitions"][0][
            "replica_nodes"][1])
        broker.stop_node(3)
        before = metadata(broker.bootstrap_servers, [topic_name])["topics"]
    with Broker(nodes=3, data_dir=tmp_path / "data") as broker:  # every node back: offline partitions too
        after = metadata(broker.bootstrap_servers, [topic_name])["topics"]
    assert [p["leader_id"] for p in after[0]["partitions"]] == [p["leader_id"] for p in before[0]["partitions"]]
    assert [p["leader_epoch"] for p in after[0]["partitions"]] == [p["leader_epoch"] for p in before[0]["partitions"]]
    assert any(p["leader_epoch"] > 0 for p in after[0]["partitions"])


def stored_numbers(bootstrap: str, topic: str, partition: int, count: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        numbers: list[int] = []
        deadline = Deadline(TIMEOUT_S)
        while len(numbers) < count and deadline.left():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                numbers.append(int(message.value()))
        return numbers
    finally:
        consumer.close()


def assert_same_metadata(broker: Broker, topic: str) -> None:
    """Every running node gives the same answer (nothing moves between the questions: the test moves leaders)."""
    addresses = broker.node_addresses
    answers = [metadata(addresses[node], [topic]) for node in sorted(broker.core.live_nodes)]
    assert all(answer == answers[0] for answer in answers), answers


def test_acknowledged_records_survive_moving_leaders_and_stopped_nodes(topic_name: str) -> None:
    """Leaders move every 200 ms while an idempotent producer sends; node 2 stops and comes back twice (a controlled
    shutdown, then a crash): every acknowledged record is there once, in order, per partition."""
    with Broker(nodes=3) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 6, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        producer = NumberedProducer(broker.bootstrap_servers, topic_name, 6).start()
        rng = random.Random(7)
        try:
            for step in range(20):
                time.sleep(0.2)
                partition = rng.randrange(6)
                stopped = {2} if 5 <= step <= 8 or 13 <= step <= 16 else set()  # down when the leader moves
                broker.move_leader(topic_name, partition, rng.choice([node for node in NODES if node not in stopped]))
                if step in (4, 12):
                    broker.stop_node(2, clean=step == 4)
                if step in (8, 16):
                    broker.start_node(2)
                assert_same_metadata(broker, topic_name)
            producer.finish()
        finally:
            producer.close()
        assert not producer.errors, producer.errors[:3]
        assert producer.sent > 1000
        for partition, acked in producer.acked.items():
            expected = [number for _, number in sorted(acked)]
            assert stored_numbers(broker.bootstrap_servers, topic_name, partition, len(expected)) == expected


def test_a_partition_whose_only_replica_is_down_is_offline_until_it_returns(topic_name: str) -> None:
    with Broker(nodes=3) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 3, replication_factor=1)])[topic_name].result(TIMEOUT_S)
        before = {p["partition_index"]: p for p in metadata(broker.bootstrap_servers, [topic_name])["topics"][0]["partitions"]}
        down = next(p["leader_id"] for p in before.values() if p["leader_id"] != 1)  # keep node 1: the bootstrap
        broker.stop_node(down)
        during = metadata(broker.bootstrap_servers, [topic_name])
        assert sorted(b["node_id"] for b in during["brokers"]) == sorted(set(NODES) - {down})
        for p in during["topics"][0]["partitions"]:
            offline = before[p["partition_index"]]["leader_id"] == down
            assert (p["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE) == offline
            assert p["offline_replicas"] == ([down] if offline else [])
        broker.start_node(down)
        after = metadata(broker.bootstrap_servers, [topic_name])["topics"][0]["partitions"]
        assert all(p["error_code"] == ErrorCode.NONE and p["leader_id"] == before[p["partition_index"]]["leader_id"]
                   for p in after)
        assert all(p["leader_epoch"] > before[p["partition_index"]]["leader_epoch"] for p in after
                   if before[p["partition_index"]]["leader_id"] == down)


def test_a_new_leader_stamps_its_epoch_on_the_batches_it_appends(topic_name: str) -> None:
    with Broker(nodes=2) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 1, replication_factor=2)])[topic_name].result(TIMEOUT_S)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        producer.produce(topic_name, b"first", partition=0)
        assert producer.flush(TIMEOUT_S) == 0
        answer = metadata(broker.bootstrap_servers, [topic_name])
        [partition] = answer["topics"][0]["partitions"]
        follower = next(node for node in partition["replica_nodes"] if node != partition["leader_id"])
        assert broker.move_leader(topic_name, 0, follower) == 1
        producer.produce(topic_name, b"second", partition=0)
        assert producer.flush(TIMEOUT_S) == 0
        address = next(f"{b['host']}:{b['port']}" for b in answer["brokers"] if b["node_id"] == follower)
        assert [batch.partition_leader_epoch for batch in stored_batches(address, topic_name, 0)] == [0, 1]
        # KIP-320: a client that names an older epoch is fenced, a newer one is unknown to this leader.
        assert list_offsets_error(address, topic_name, 0, leader_epoch=1) == ErrorCode.NONE
        assert list_offsets_error(address, topic_name, 0, leader_epoch=0) == ErrorCode.FENCED_LEADER_EPOCH
        assert list_offsets_error(address, topic_name, 0, leader_epoch=2) == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_new_topics_go_to_the_live_nodes(topic_name: str) -> None:
    with Broker(nodes=3) as broker:
        broker.stop_node(3)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        with pytest.raises(KafkaException, match="only 2 broker"):
            admin.create_topics([NewTopic(topic_name, 1, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        admin.create_topics([NewTopic(topic_name, 4, replication_factor=2)])[topic_name].result(TIMEOUT_S)
        partitions = metadata(broker.bootstrap_servers, [topic_name])["topics"][0]["partitions"]
        assert all(set(p["replica_nodes"]) == {1, 2} and p["error_code"] == ErrorCode.NONE for p in partitions)


def test_a_produce_to_another_node_names_the_leader(topic_name: str) -> None:
    """KIP-951: NOT_LEADER_OR_FOLLOWER comes with the partition's current leader and that node's endpoint."""
    with Broker(nodes=3) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 1, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        answer = metadata(broker.bootstrap_servers, [topic_name])
        [partition] = answer["topics"][0]["partitions"]
        other = next(b for b in answer["brokers"] if b["node_id"] != partition["leader_id"])
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [{"name": topic_name, "partition_data": [
            {"index": 0, "records": build_batch([RecordInput(b"k", b"v")])},
        ]}]}
        with RawConnection(f"{other['host']}:{other['port']}") as conn:
            produced = decode_response(0, 10, conn.request(0, 10, body))[1]
        [result] = produced["responses"][0]["partition_responses"]
        assert result["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert result["current_leader"] == {"leader_id": partition["leader_id"], "leader_epoch": partition["leader_epoch"]}
        leader = next(b for b in answer["brokers"] if b["node_id"] == partition["leader_id"])
        assert [(e["node_id"], e["host"], e["port"]) for e in produced["node_endpoints"]] == [
            (leader["node_id"], leader["host"], leader["port"])
        ]


def test_an_added_node_joins_the_cluster(topic_name: str) -> None:
    """A node added to a running cluster listens on a port of its own, is listed by every node, and takes replicas
    of the topics created after it joined; it can be stopped and started like the others."""
    with Broker(nodes=2) as broker:
        assert broker.add_node() == 3
        addresses = broker.node_addresses
        ports = [int(addresses[node].rsplit(":", 1)[1]) for node in (1, 2, 3)]
        assert ports[1] == ports[0] + 1 and len(set(ports)) == 3  # node 3: the next port unless another socket has it
        admin = AdminClient({"bootstrap.servers": addresses[3]})
        admin.create_topics([NewTopic(topic_name, 6, replication_factor=3)])[topic_name].result(TIMEOUT_S)
        assert_same_metadata(broker, topic_name)
        partitions = metadata(addresses[1], [topic_name])["topics"][0]["partitions"]
        assert {p["leader_id"] for p in partitions} == {1, 2, 3}
        producer = Producer({"bootstrap.servers": ",".join(addresses.values()), "acks": "all"})
        for partition in range(6):
            producer.produce(topic_name, str(partition).encode(), partition=partition)
        assert producer.flush(TIMEOUT_S) == 0
        broker.stop_node(3)
        assert all(p["leader_id"] != 3 for p in metadata(addresses[1], [topic_name])["topics"][0]["partitions"])
        broker.start_node(3)
        for partition in range(6):
            assert stored_numbers(addresses[1], topic_name, partition, 1) == [partition]
