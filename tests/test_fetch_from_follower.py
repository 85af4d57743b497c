"""Racks on a cluster in one process and fetch from follower (KIP-392): broker.rack per node in Metadata and
DescribeCluster, the leader naming the replica in a consumer's rack (replica.selector.class = Kafka's
RackAwareReplicaSelector), followers serving consumers, and real consumers following it (the transcript shows which
node served each Fetch)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.cluster.racks import RACK_AWARE_SELECTOR
from minibroker.control_client import ControlClient
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, Deadline, RawConnection, confluent_consumer, drain

FETCH, METADATA, DESCRIBE_CLUSTER = 1, 3, 60
MIB = 1 << 20
RACKS = {1: "a", 2: "b", 3: "c"}
RECORDS = 300


def call(address: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(address) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def metadata(address: str, topic: str | None = None) -> dict[str, Any]:
    topics = None if topic is None else [{"name": topic, "topic_id": bytes(16)}]
    return call(address, METADATA, 12, {"topics": topics, "allow_auto_topic_creation": False,
                                        "include_topic_authorized_operations": False})


def fetch(address: str, topic: str, partition: int, offset: int, rack: str = "", version: int = 12) -> dict[str, Any]:
    """One sessionless consumer Fetch of one partition (by name: v12 and below)."""
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": MIB, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": rack,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": offset, "partition_max_bytes": MIB, "current_leader_epoch": -1},
            ]}]}
    [[answer]] = [t["partitions"] for t in call(address, FETCH, version, body)["responses"]]
    return answer


def create_and_fill(bootstrap: str, topic: str, partitions: int = 3, factor: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication_factor=factor)])[topic].result(TIMEOUT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, str(i).encode(), partition=i % partitions)
    assert producer.flush(TIMEOUT_S) == 0


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    return {p["partition_index"]: p["leader_id"] for p in metadata(bootstrap, topic)["topics"][0]["partitions"]}


def consume_all(bootstrap: str, topic: str, client_id: str, partitions: int = 3, **config: Any) -> list[int]:
    """Every record of the topic read from the beginning by an assign-only consumer; the values, in order read."""
    consumer = confluent_consumer(bootstrap, **{"client.id": client_id, **config})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        consumed = drain(consumer, {p: RECORDS // partitions for p in range(partitions)})
    finally:
        consumer.close()
    return [int(c.message.value) for c in consumed]


def served(entries: list[dict[str, Any]], client_id: str) -> list[tuple[int, int]]:
    """(node, partition) of every batch the transcript's Fetch answers to ``client_id`` returned."""
    return [(e["node"], batch["partition"]) for e in entries if e["api"] == "Fetch" and e["client_id"] == client_id
            for batch in e.get("response_batches", [])]


@pytest.fixture(scope="module")
def racked() -> Iterator[Broker]:
    """Three nodes in racks a, b, c with Kafka's rack-aware replica selector and a transcript."""
    with Broker(nodes=3, control=True, transcript=True, broker_rack="a,b,c",
                replica_selector_class=RACK_AWARE_SELECTOR) as broker:
        yield broker


def test_metadata_and_describe_cluster_name_each_nodes_rack(racked: Broker) -> None:
    for address in racked.node_addresses.values():
        assert {b["node_id"]: b["rack"] for b in metadata(address)["brokers"]} == RACKS
        described = call(address, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                         "endpoint_type": 1})
        assert {b["broker_id"]: b["rack"] for b in described["brokers"]} == RACKS
    assert {n["id"]: n["rack"] for n in ControlClient(racked.control_url).health()["nodes"]} == RACKS


def test_a_consumer_reads_from_the_replica_in_its_rack(racked: Broker, topic_name: str) -> None:
    create_and_fill(racked.bootstrap_servers, topic_name)
    led = leaders(racked.bootstrap_servers, topic_name)
    assert sorted(led.values()) == [1, 2, 3]  # one partition led by each node: two are read from a follower
    control = ControlClient(racked.control_url)
    since = control.transcript_position()
    values = consume_all(racked.bootstrap_servers, topic_name, f"rack-b-{topic_name}", **{"client.rack": "b"})
    assert sorted(values) == list(range(RECORDS))  # every record, once
    batches = served(control.transcript(since), f"rack-b-{topic_name}")
    assert {partition for _, partition in batches} == {0, 1, 2}
    assert {node for node, _ in batches} == {2}, batches  # node 2 (rack b) served every partition's records


def test_a_consumer_without_a_rack_reads_from_the_leaders(racked: Broker, topic_name: str) -> None:
    create_and_fill(racked.bootstrap_servers, topic_name)
    led = leaders(racked.bootstrap_servers, topic_name)
    since = racked.transcript_position()
    values = consume_all(racked.bootstrap_servers, topic_name, f"no-rack-{topic_name}")
    assert sorted(values) == list(range(RECORDS))
    batches = served(racked.transcript(since), f"no-rack-{topic_name}")
    assert batches and all(node == led[partition] for node, partition in batches), (batches, led)


def test_the_leader_names_the_in_sync_replica_in_the_clients_rack(racked: Broker, topic_name: str) -> None:
    create_and_fill(racked.bootstrap_servers, topic_name, partitions=1)
    [leader] = leaders(racked.bootstrap_servers, topic_name).values()
    address = racked.node_addresses[leader]
    for node, rack in RACKS.items():
        answer = fetch(address, topic_name, 0, 0, rack=rack)
        if node == leader:  # the leader is in the client's rack: it serves the records itself
            assert answer["preferred_read_replica"] == -1 and answer["records"]
        else:  # Kafka's ReplicaManager: a preferred replica is answered without records
            assert (answer["error_code"], answer["preferred_read_replica"], answer["records"]) == (0, node, b"")
            assert answer["high_watermark"] == RECORDS
    for rack in ("elsewhere", ""):
        answer = fetch(address, topic_name, 0, 0, rack=rack)
        assert answer["preferred_read_replica"] == -1 and answer["records"]
    beyond = fetch(address, topic_name, 0, RECORDS + 1, rack=RACKS[leader % 3 + 1])  # no replica holds the offset
    assert (beyond["error_code"], beyond["preferred_read_replica"]) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)


def test_an_incremental_session_answers_the_preferred_replica_each_time(racked: Broker, topic_name: str) -> None:
    """Kafka's CachedPartition.maybeUpdateResponseData: a partition with a preferred read replica is always answered,
    though nothing else about it changed."""
    create_and_fill(racked.bootstrap_servers, topic_name, partitions=1)
    [leader] = leaders(racked.bootstrap_servers, topic_name).values()
    other = leader % 3 + 1
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": MIB, "isolation_level": 0,
            "session_id": 0, "session_epoch": 0, "forgotten_topics_data": [], "rack_id": RACKS[other],
            "topics": [{"topic": topic_name, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": MIB, "current_leader_epoch": -1},
            ]}]}
    with RawConnection(racked.node_addresses[leader]) as conn:
        opened = decode_response(FETCH, 12, conn.request(FETCH, 12, body))[1]
        assert opened["session_id"] != 0
        for epoch in (1, 2):
            again = {**body, "session_id": opened["session_id"], "session_epoch": epoch, "topics": []}
            answer = decode_response(FETCH, 12, conn.request(FETCH, 12, again))[1]
            assert [p["preferred_read_replica"] for t in answer["responses"] for p in t["partitions"]] == [other]


def test_a_follower_serves_consumers_up_to_the_high_watermark(racked: Broker, topic_name: str) -> None:
    create_and_fill(racked.bootstrap_servers, topic_name, partitions=1)
    [leader] = leaders(racked.bootstrap_servers, topic_name).values()
    follower = racked.node_addresses[leader % 3 + 1]
    from_leader = fetch(racked.node_addresses[leader], topic_name, 0, 0)
    answer = fetch(follower, topic_name, 0, 0, rack=RACKS[leader])  # a follower names no preferred replica
    assert (answer["error_code"], answer["preferred_read_replica"]) == (ErrorCode.NONE, -1)
    assert answer["records"] == from_leader["records"] and answer["high_watermark"] == RECORDS
    at_end = fetch(follower, topic_name, 0, RECORDS)
    assert (at_end["error_code"], at_end["records"]) == (ErrorCode.NONE, b"")
    assert fetch(follower, topic_name, 0, RECORDS + 1)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    # Before v11 a fetch carries no client metadata: only the leader serves it (Kafka's FetchParams.fetchOnlyLeader).
    assert fetch(follower, topic_name, 0, 0, version=10)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_without_the_selector_no_replica_is_preferred_and_placement_spreads_racks(topic_name: str) -> None:
    with Broker(nodes=4, broker_rack="a,a,b,b") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 8, replication_factor=2)])[topic_name].result(TIMEOUT_S)
        partitions = metadata(broker.bootstrap_servers, topic_name)["topics"][0]["partitions"]
        racks = {1: "a", 2: "a", 3: "b", 4: "b"}
        assert all({racks[node] for node in p["replica_nodes"]} == {"a", "b"} for p in partitions), partitions
        leader = partitions[0]["leader_id"]
        other_rack = "b" if racks[leader] == "a" else "a"
        answer = fetch(broker.node_addresses[leader], topic_name, 0, 0, rack=other_rack)
        assert (answer["error_code"], answer["preferred_read_replica"]) == (ErrorCode.NONE, -1)


def test_the_consumer_goes_back_to_the_leader_when_its_replica_stops(topic_name: str) -> None:
    with Broker(nodes=3, transcript=True, broker_rack="a,b,c", replica_selector_class=RACK_AWARE_SELECTOR) as broker:
        create_and_fill(broker.bootstrap_servers, topic_name)
        client_id = f"falls-back-{topic_name}"
        consumer = confluent_consumer(broker.bootstrap_servers, **{"client.id": client_id, "client.rack": "b"})
        try:
            consumer.assign([TopicPartition(topic_name, p, OFFSET_BEGINNING) for p in range(3)])
            first = drain(consumer, {p: RECORDS // 3 for p in range(3)})
            assert {node for node, _ in served(broker.transcript(), client_id)} == {2}
            broker.stop_node(2)
            since = broker.transcript_position()
            producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
            for i in range(RECORDS, 2 * RECORDS):
                producer.produce(topic_name, str(i).encode(), partition=i % 3)
            assert producer.flush(TIMEOUT_S) == 0
            second = drain(consumer, {p: RECORDS // 3 for p in range(3)})
        finally:
            consumer.close()
        values = [int(c.message.value) for c in first + second]
        assert sorted(values) == list(range(2 * RECORDS))
        led = leaders(broker.bootstrap_servers, topic_name)
        batches = served(broker.transcript(since), client_id)
        assert batches and all(node == led[partition] for node, partition in batches), (batches, led)


def test_a_node_added_later_gets_its_rack_from_the_pattern() -> None:
    with Broker(nodes=2, broker_rack="rack-{node}") as broker:
        assert broker.add_node() == 3
        assert {b["node_id"]: b["rack"] for b in metadata(broker.bootstrap_servers)["brokers"]} == {
            1: "rack-1", 2: "rack-2", 3: "rack-3"}


def test_describe_configs_names_each_brokers_rack(racked: Broker) -> None:
    """librdkafka's fetch-from-follower test (0101) asks every replica's broker config for broker.rack and runs only
    when they differ; the admin client sends a broker's resource to that broker."""
    admin = AdminClient({"bootstrap.servers": racked.bootstrap_servers})
    described = {}
    for node in RACKS:  # librdkafka takes one broker resource per call
        [configs] = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(node))]).values()
        described[node] = configs.result(TIMEOUT_S)["broker.rack"].value
    assert described == RACKS


def test_librdkafka_reads_most_bytes_from_the_preferred_replica(racked: Broker, topic_name: str) -> None:
    """As librdkafka's test 0101: a subscribed consumer whose client.rack is a follower's reads 1000 records of 100
    bytes in order, and its statistics show that follower sent it the most bytes, more than the records' size."""
    create_and_fill(racked.bootstrap_servers, topic_name, partitions=1)
    [leader] = leaders(racked.bootstrap_servers, topic_name).values()
    follower = leader % 3 + 1
    producer = Producer({"bootstrap.servers": racked.bootstrap_servers})
    for i in range(1000):
        producer.produce(topic_name, f"msg={i}\n".encode().ljust(100, b"."), partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    rxbytes: dict[int, int] = {}

    def stats(text: str) -> None:
        for broker in json.loads(text)["brokers"].values():
            if broker["nodeid"] >= 0:
                rxbytes[broker["nodeid"]] = broker["rxbytes"]

    consumer = Consumer({"bootstrap.servers": racked.bootstrap_servers, "group.id": topic_name,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.rack": RACKS[follower],
                         "statistics.interval.ms": 200, "stats_cb": stats})
    try:
        consumer.subscribe([topic_name])
        values = []
        deadline = Deadline()
        while len(values) < RECORDS + 1000 and deadline.left():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert [v.split(b"\n")[0] for v in values[RECORDS:]] == [f"msg={i}".encode() for i in range(1000)]
        rxbytes.clear()
        while len(rxbytes) < 3 and deadline.left():
            consumer.poll(0.2)
    finally:
        consumer.close()
    assert rxbytes[follower] > 1000 * 100, rxbytes
    assert all(rxbytes[node] < rxbytes[follower] for node in RACKS if node != follower), rxbytes
