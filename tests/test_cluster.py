"""A cluster in one process (``nodes``): Kafka's replica placement, every node listed in Metadata from every node,
replication factors up to the node count, requests that need a partition's leader answered only by it, and a
restart that keeps the leaders."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.cluster import PLACEMENT_FILE, Placements, assign_replicas
from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, RawConnection

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
    placements.put("orders", placements.assign(4, 3))
    placements.grow("orders", 6)
    before = [placements.of("orders", p) for p in range(6)]
    assert all(len(p.replicas) == 3 and p.leader == p.replicas[0] and p.leader_epoch == 0 for p in before)
    reloaded = Placements(tmp_path, NODES)
    reloaded.load()
    assert [reloaded.of("orders", p) for p in range(6)] == before
    reloaded.forget("orders")
    again = Placements(tmp_path, NODES)
    again.load()
    assert again.of("orders", 0).replicas == (1,)  # unknown: on the first node


def test_one_node_writes_no_placement(tmp_path: Path) -> None:
    placements = Placements(tmp_path, [1])
    placements.put("orders", placements.assign(3, 1))
    assert not (tmp_path / PLACEMENT_FILE).exists()
    assert placements.of("orders", 2).leader == 1


def metadata(address: str, topics: list[str]) -> dict:
    with RawConnection(address) as conn:
        body = {"topics": [{"name": t, "topic_id": bytes(16)} for t in topics], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        return decode_response(METADATA, 9, conn.request(METADATA, 9, body))[1]


def list_offsets_error(address: str, topic: str, partition: int) -> ErrorCode:
    with RawConnection(address) as conn:
        body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1},
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

        proc.restart()
        assert metadata(proc.bootstrap, [topic_name])["topics"] == first["topics"]  # the leaders stay where they were
    finally:
        proc.stop()
