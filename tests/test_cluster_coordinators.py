"""Coordinators in a cluster in one process: the group coordinator of a group is the leader of its
``__consumer_offsets`` partition and the transaction coordinator of an id the leader of its ``__transaction_state``
partition; other nodes answer NOT_COORDINATOR; when leadership moves, the new coordinator loads the partition
(COORDINATOR_LOAD_IN_PROGRESS meanwhile) and clients carry on."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.records import parse_control_record
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, RawConnection
from tests.grouputil import ConfluentMember, KafkaPythonMember, ThreadedMember, produce_batch, wait_until
from tests.txnutil import consume, make_producer, read_segments

FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, INIT_PRODUCER_ID = 10, 8, 9, 22
GROUP_KEY, TRANSACTION_KEY = 0, 1
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions and transaction.state.log.num.partitions: Kafka's defaults


def call(address: str, api_key: int, version: int, body: dict) -> dict:
    with RawConnection(address) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def find_coordinator(address: str, key: str, key_type: int = GROUP_KEY) -> dict:
    answer = call(address, FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]})
    return answer["coordinators"][0]


def commit_offset(address: str, group: str, topic: str, offset: int) -> ErrorCode:
    answer = call(address, OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1, "committed_metadata": ""},
        ]}],
    })
    return ErrorCode(answer["topics"][0]["partitions"][0]["error_code"])


def fetch_offset(address: str, group: str, topic: str) -> tuple[ErrorCode, int]:
    answer = call(address, OFFSET_FETCH, 8, {"groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1, "topics": [{"name": topic, "partition_indexes": [0]}]},
    ], "require_stable": False})
    [group_answer] = answer["groups"]
    if group_answer["error_code"] != ErrorCode.NONE:
        return ErrorCode(group_answer["error_code"]), -1
    return ErrorCode.NONE, group_answer["topics"][0]["partitions"][0]["committed_offset"]


def init_producer_id_error(address: str, transactional_id: str) -> ErrorCode:
    answer = call(address, INIT_PRODUCER_ID, 4, {
        "transactional_id": transactional_id, "transaction_timeout_ms": 10_000, "producer_id": -1, "producer_epoch": -1,
    })
    return ErrorCode(answer["error_code"])


def create_topic(broker: Broker, topic: str, partitions: int, replication_factor: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, replication_factor=replication_factor)])[topic].result(TIMEOUT_S)


def bootstrap_list(broker: Broker) -> str:
    return ",".join(broker.node_addresses.values())


def test_the_coordinators_are_the_leaders_of_their_partitions_and_follow_them(topic_name: str) -> None:
    group, transactional_id = f"group-{topic_name}", f"txn-{topic_name}"
    with Broker(nodes=3) as broker:
        create_topic(broker, topic_name, 1, 3)
        addresses = broker.node_addresses
        found = [find_coordinator(address, group) for address in addresses.values()]
        assert all(f["error_code"] == ErrorCode.NONE for f in found)
        coordinator = found[0]["node_id"]
        assert {f["node_id"] for f in found} == {coordinator}  # every node names the same one
        assert f"{found[0]['host']}:{found[0]['port']}" == addresses[coordinator]
        partition = partition_for(group, OFFSETS_PARTITIONS)
        assert broker.core.placements.of(CONSUMER_OFFSETS_TOPIC, partition).leader == coordinator

        others = [node for node in addresses if node != coordinator]
        assert commit_offset(addresses[others[0]], group, topic_name, 5) == ErrorCode.NOT_COORDINATOR
        assert fetch_offset(addresses[others[1]], group, topic_name) == (ErrorCode.NOT_COORDINATOR, -1)
        assert commit_offset(addresses[coordinator], group, topic_name, 5) == ErrorCode.NONE

        broker.move_leader(CONSUMER_OFFSETS_TOPIC, partition, others[0])  # the new coordinator reads the log
        assert find_coordinator(addresses[coordinator], group)["node_id"] == others[0]
        assert fetch_offset(addresses[coordinator], group, topic_name) == (ErrorCode.NOT_COORDINATOR, -1)
        wait_until(lambda: fetch_offset(addresses[others[0]], group, topic_name) == (ErrorCode.NONE, 5),
                   "the committed offset from the new coordinator")

        txn_coordinator = find_coordinator(addresses[coordinator], transactional_id, TRANSACTION_KEY)["node_id"]
        txn_partition = partition_for(transactional_id, OFFSETS_PARTITIONS)
        assert broker.core.placements.of(TRANSACTION_STATE_TOPIC, txn_partition).leader == txn_coordinator
        elsewhere = next(node for node in addresses if node != txn_coordinator)
        assert init_producer_id_error(addresses[elsewhere], transactional_id) == ErrorCode.NOT_COORDINATOR
        assert init_producer_id_error(addresses[txn_coordinator], transactional_id) == ErrorCode.NONE


def test_a_coordinator_without_a_live_replica_is_not_available(topic_name: str) -> None:
    group = f"group-{topic_name}"
    with Broker(nodes=2, offsets_topic_replication_factor=1) as broker:
        addresses = broker.node_addresses
        coordinator = find_coordinator(addresses[1], group)["node_id"]
        survivor = next(node for node in addresses if node != coordinator)
        broker.stop_node(coordinator)
        answer = find_coordinator(addresses[survivor], group)
        assert (answer["error_code"], answer["node_id"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
        broker.start_node(coordinator)
        assert find_coordinator(addresses[survivor], group)["node_id"] == coordinator


async def test_a_partition_that_moves_is_loaded_before_it_is_served(topic_name: str) -> None:
    """Between the move and the end of the load the new coordinator answers COORDINATOR_LOAD_IN_PROGRESS and the old
    one NOT_COORDINATOR; then the new one serves what the old one wrote."""
    group = f"group-{topic_name}"
    async with Broker(nodes=2) as broker:
        core = broker.core
        addresses = broker.node_addresses
        await asyncio.to_thread(create_topic, broker, topic_name, 1, 2)
        old = (await asyncio.to_thread(find_coordinator, addresses[1], group))["node_id"]
        new = next(node for node in addresses if node != old)
        assert await asyncio.to_thread(commit_offset, addresses[old], group, topic_name, 42) == ErrorCode.NONE

        core.move_leader(CONSUMER_OFFSETS_TOPIC, partition_for(group, OFFSETS_PARTITIONS), new)
        assert core.groups.coordinator_of(new).availability(group) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert core.groups.coordinator_of(old).availability(group) == ErrorCode.NOT_COORDINATOR
        assert group not in core.groups.coordinator_of(old).groups  # its state is gone with the leadership

        answer = await asyncio.to_thread(fetch_offset, addresses[new], group, topic_name)
        assert answer in ((ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1), (ErrorCode.NONE, 42))
        while core.groups.coordinator_of(new).availability(group) != ErrorCode.NONE:
            await asyncio.sleep(0.01)
        assert await asyncio.to_thread(fetch_offset, addresses[new], group, topic_name) == (ErrorCode.NONE, 42)


# What librdkafka's synchronous commit raises while the coordinator moves; an application leaves the commit to the
# next one (kafka-python retries these itself).
COORDINATOR_MOVING = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._WAIT_COORD, KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
}


class RetryingCommits(ConfluentMember):
    def commit(self) -> None:
        try:
            super().commit()
        except KafkaException as exc:
            if exc.args[0].code() not in COORDINATOR_MOVING:
                raise


def member_factory(client: str, bootstrap: str, group: str, topic: str) -> ThreadedMember:
    if client == "kafka-python":
        return ThreadedMember(client, lambda: KafkaPythonMember(bootstrap, group, topic))
    protocol = {"group.protocol": "consumer"} if client == "confluent-consumer" else {"session.timeout.ms": 6000}
    return ThreadedMember(client, lambda: RetryingCommits(bootstrap, group, [topic], protocol))


@pytest.mark.parametrize("client,clean", [("confluent-consumer", True), ("confluent-classic", False),
                                          ("kafka-python", True)])
def test_a_group_keeps_consuming_while_its_coordinator_stops(topic_name: str, client: str, clean: bool) -> None:
    """The node coordinating the group stops (a controlled shutdown or a crash): another node leads the group's
    partition, reloads the group from __consumer_offsets, no acknowledged commit is lost, consumption resumes."""
    group = f"group-{topic_name}"
    with Broker(nodes=3) as broker:
        bootstrap = bootstrap_list(broker)
        create_topic(broker, topic_name, 4, 3)
        sent = produce_batch(bootstrap, topic_name, 1, 10)
        member = member_factory(client, bootstrap, group, topic_name)
        try:
            wait_until(lambda: set(member.records) >= sent, "the first batch")
            coordinator = find_coordinator(bootstrap.split(",")[0], group)["node_id"]
            address = broker.node_addresses[coordinator]
            wait_until(lambda: fetch_offset(address, group, topic_name)[1] == 10, "the first batch's commit")

            broker.stop_node(coordinator, clean=clean)
            survivor = next(a for node, a in broker.node_addresses.items() if node != coordinator)
            successor = find_coordinator(survivor, group)["node_id"]
            assert successor != coordinator
            sent |= produce_batch(survivor, topic_name, 2, 10)
            wait_until(lambda: set(member.records) >= sent, "the second batch, from the new coordinator's group")
            new_address = broker.node_addresses[successor]
            wait_until(lambda: fetch_offset(new_address, group, topic_name)[1] == 20, "the second batch's commit")
        finally:
            member.stop()
        assert set(member.records) == sent


def run_transactions(
    client: str, broker: Broker, topic: str, transactional_id: str, rounds: int, stop: str | None,
) -> list[bytes]:
    """``rounds`` transactions of 5 records; every third is aborted. Between sending and ending each transaction the
    leader of the id's __transaction_state partition moves, except once when its node stops (``stop``: "clean" or
    "crash") and comes back. Returns the values of the committed transactions."""
    partition = partition_for(transactional_id, OFFSETS_PARTITIONS)
    committed: list[bytes] = []
    producer = make_producer(client, bootstrap_list(broker), transactional_id)
    try:
        producer.init()
        for round_ in range(rounds):
            values = [f"{round_}-{i}".encode() for i in range(5)]
            producer.begin()
            for index, value in enumerate(values):
                producer.send(topic, index % 3, value)
            producer.flush()
            nodes = sorted(broker.node_addresses)  # all running here
            leader = find_coordinator(broker.node_addresses[nodes[0]], transactional_id, TRANSACTION_KEY)["node_id"]
            if stop is not None and round_ == rounds // 2:
                broker.stop_node(leader, clean=stop == "clean")
            else:
                broker.move_leader(TRANSACTION_STATE_TOPIC, partition, next(node for node in nodes if node != leader))
            if round_ % 3 == 2:
                producer.abort()
            else:
                producer.commit()
                committed += values
            if stop is not None and round_ == rounds // 2:
                broker.start_node(leader)
    finally:
        producer.close()
    return committed


# kafka-python 3.0.12 sends no EndTxn again once the connection to its transaction coordinator drops (it finds the
# new coordinator, then waits forever), so it meets only leader moves (NOT_COORDINATOR answers).
@pytest.mark.parametrize("client,stop", [("confluent", "crash"), ("aiokafka", "clean"), ("kafka-python", None)])
def test_transactions_finish_while_their_coordinator_moves(topic_name: str, client: str, stop: str | None) -> None:
    with Broker(nodes=3) as broker:
        create_topic(broker, topic_name, 3, 3)
        committed = run_transactions(client, broker, topic_name, f"txn-{topic_name}", rounds=9, stop=stop)
        got = consume("confluent", bootstrap_list(broker), topic_name, 3, len(committed), "read_committed")
        assert sorted(g.value for g in got) == sorted(committed)
        for partition in range(3):  # in order within each partition
            values = [g.value for g in got if g.partition == partition]
            assert values == [v for v in committed if v in set(values)]
        # Markers carry the coordinator epoch: the leader epoch of the id's __transaction_state partition, which grew
        # with every move.
        markers = [b for b in read_segments(broker.data_dir, topic_name, 0) if b.header.is_control]
        epochs = [parse_control_record(b.records[0])[1] for b in markers]
        assert epochs == sorted(epochs) and epochs[-1] >= 8, epochs


def test_a_partition_whose_only_replica_stopped_refuses_writes_retriably_until_it_returns(topic_name: str) -> None:
    with Broker(nodes=3) as broker:
        create_topic(broker, topic_name, 3, 1)
        leaders = {p: broker.core.placements.of(topic_name, p).leader for p in range(3)}
        offline = next(p for p, leader in leaders.items() if leader != 1)
        broker.stop_node(leaders[offline])
        reports: dict[int, list[KafkaError | None]] = {p: [] for p in range(3)}
        producer = Producer({"bootstrap.servers": bootstrap_list(broker), "message.timeout.ms": 1500, "acks": "all"})
        for partition in range(3):
            producer.produce(topic_name, b"while down", partition=partition,
                             on_delivery=lambda err, msg: reports[msg.partition()].append(err))
        producer.flush(TIMEOUT_S)
        [error] = reports[offline]  # librdkafka retried (NOT_LEADER_OR_FOLLOWER, no leader) until its timeout
        assert error is not None and error.code() == KafkaError._MSG_TIMED_OUT, error
        assert all(reports[p] == [None] for p in range(3) if p != offline)

        broker.start_node(leaders[offline])
        producer.produce(topic_name, b"back", partition=offline, on_delivery=lambda err, msg: reports[offline].append(err))
        assert producer.flush(TIMEOUT_S) == 0
        assert reports[offline][-1] is None
