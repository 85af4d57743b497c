"""The versions Kafka 3.8/3.9 and 4.x added to FindCoordinator (v5: KIP-890; v6: share coordinator keys, KIP-932),
InitProducerId (v5) and AddOffsetsToTxn (v4), checked with hand-made requests against Kafka's answers: the KIP-890
versions answer as the ones before (they only say the client knows TRANSACTION_ABORTABLE), a share key names the
leader of its ``__share_group_state`` partition, and a 3.9 emulation advertises exactly 3.9's ranges."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.key_partitions import partition_for
from minibroker.storage.topic_names import SHARE_GROUP_STATE_TOPIC
from minibroker.storage.uuid import random_uuid, uuid_to_str

from minibroker.config.releases import served_by_release
from minibroker.handlers import HANDLERS
from minibroker.testing import Broker
from tests.aclutil import ADMIN, acl_broker, create_topics, grant, login, unique
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_share_fetch import Member, create, produce

FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, API_VERSIONS, LIST_OFFSETS = 10, 22, 25, 18, 2
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
CLUSTER_RESOURCE, CLUSTER_ACTION = 4, 9
SHARE_STATE_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions: Kafka's default
NO_NODE = (-1, "", -1)


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def lookup(conn: RawConnection, version: int, key_type: int, *keys: str) -> list[dict[str, Any]]:
    return call(conn, FIND_COORDINATOR, version, {"key_type": key_type, "coordinator_keys": list(keys)})["coordinators"]


def share_key(group: str, topic_id: bytes, partition: int = 0) -> str:
    """SharePartitionKey.asCoordinatorKey."""
    return f"{group}:{uuid_to_str(topic_id)}:{partition}"


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    with RawConnection(bootstrap) as conn:
        answer = call(conn, API_VERSIONS, 3, {"client_software_name": "raw-test", "client_software_version": "1"})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


# ---- FindCoordinator ----


def test_find_coordinator_v5_and_v6_answer_group_and_transaction_keys_as_v4(broker: BrokerProcess) -> None:
    host, port = broker.bootstrap.rsplit(":", 1)
    with RawConnection(broker.bootstrap) as conn:
        for version in (4, 5, 6):
            for key_type in (GROUP_KEY, TRANSACTION_KEY):
                found = lookup(conn, version, key_type, "k-a", "k-b")
                assert [(c["key"], c["error_code"], c["node_id"], c["host"], c["port"]) for c in found] == [
                    ("k-a", ErrorCode.NONE, 1, host, int(port)), ("k-b", ErrorCode.NONE, 1, host, int(port)),
                ], (version, key_type)


def test_a_share_key_before_v6_is_an_invalid_request(broker: BrokerProcess) -> None:
    """KafkaApis.getCoordinator: key type SHARE below v6 is INVALID_REQUEST, no node, whatever the key."""
    key = share_key("g", random_uuid())
    with RawConnection(broker.bootstrap) as conn:
        for version in (4, 5):
            [found] = lookup(conn, version, SHARE_KEY, key)
            assert (found["key"], found["error_code"], (found["node_id"], found["host"], found["port"])) == (
                key, ErrorCode.INVALID_REQUEST, NO_NODE), version
        single = call(conn, FIND_COORDINATOR, 3, {"key": key, "key_type": SHARE_KEY})
        assert (single["error_code"], single["node_id"], single["port"]) == (ErrorCode.INVALID_REQUEST, -1, -1)


def test_malformed_share_keys_are_invalid_requests_each(broker: BrokerProcess) -> None:
    """SharePartitionKey.validate's refusals, key by key, next to a valid key that is answered."""
    topic_id = uuid_to_str(random_uuid())
    bad = ["", "g", f"g:{topic_id}", f"g:{topic_id}:0:1", f" :{topic_id}:0", "g:not-a-uuid:0", f"g:{topic_id}:x",
           f"g:{topic_id}: 1", f"g:{topic_id}:2147483648"]
    good = [f"g:{topic_id}:3", f"g:{topic_id}:3::", f"g:{topic_id}:+3"]  # Java's split drops trailing empties
    with RawConnection(broker.bootstrap) as conn:
        found = lookup(conn, 6, SHARE_KEY, *bad, *good)
    assert [(c["key"], c["error_code"]) for c in found] == [(key, ErrorCode.INVALID_REQUEST) for key in bad] + [
        (key, ErrorCode.NONE) for key in good]
    assert all((c["node_id"], c["port"]) == (-1, -1) for c in found[:len(bad)])


def leader_of(broker: Broker, topic: str, partition: int) -> int:
    return broker.core.placements.of(topic, partition).leader


def log_end_offset(address: str, topic: str, partition: int) -> int:
    with RawConnection(address) as conn:
        answer = call(conn, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]},
        ]})
    [part] = answer["topics"][0]["partitions"]
    assert part["error_code"] == ErrorCode.NONE, part
    return part["offset"]


def test_a_share_key_names_the_leader_of_the_partition_that_holds_its_state(topic_name: str) -> None:
    """As Kafka's share coordinator lookup: the leader of the key's __share_group_state partition (made by the first
    lookup), which is where the share group's state of that share partition is written, and which moves with it."""
    group = f"g-{topic_name}"
    with Broker(nodes=3) as broker:
        addresses = broker.node_addresses
        with RawConnection(addresses[1]) as conn:
            topic_id = create(conn, topic_name, replicas=3)
        key = share_key(group, topic_id)
        state_partition = partition_for(key, SHARE_STATE_PARTITIONS)
        found = []
        for address in addresses.values():
            with RawConnection(address) as conn:
                [answer] = lookup(conn, 6, SHARE_KEY, key)
            found.append((answer["error_code"], answer["node_id"], f"{answer['host']}:{answer['port']}"))
        coordinator = leader_of(broker, SHARE_GROUP_STATE_TOPIC, state_partition)
        assert found == [(ErrorCode.NONE, coordinator, addresses[coordinator])] * 3

        before = log_end_offset(addresses[coordinator], SHARE_GROUP_STATE_TOPIC, state_partition)
        with RawConnection(addresses[leader_of(broker, topic_name, 0)]) as conn:
            produce(conn, topic_name, 2)
            Member(conn, group, topic_id).start()  # initializes the share partition: its state is written
        assert log_end_offset(addresses[coordinator], SHARE_GROUP_STATE_TOPIC, state_partition) > before

        other = next(node for node in addresses if node != coordinator)
        broker.move_leader(SHARE_GROUP_STATE_TOPIC, state_partition, other)
        with RawConnection(addresses[coordinator]) as conn:
            [answer] = lookup(conn, 6, SHARE_KEY, key)
        assert (answer["error_code"], answer["node_id"]) == (ErrorCode.NONE, other)


def test_a_share_lookup_needs_cluster_action(tmp_path: Path) -> None:
    """Only brokers look share coordinators up: without CLUSTER_ACTION on the cluster the whole request is refused
    (authorizeClusterOperation), every key answered CLUSTER_AUTHORIZATION_FAILED."""
    keys = [share_key(unique("g"), random_uuid()), share_key(unique("g"), random_uuid(), 1)]
    for broker in acl_broker(tmp_path / "data", ("alice",)):
        with login(broker, "alice") as alice:
            refused = lookup(alice, 6, SHARE_KEY, *keys)
            assert [(c["key"], c["error_code"], c["node_id"]) for c in refused] == [
                (key, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1) for key in keys]
            grant(broker, "alice", CLUSTER_RESOURCE, "kafka-cluster", CLUSTER_ACTION)
            assert [c["error_code"] for c in lookup(alice, 6, SHARE_KEY, *keys)] == [ErrorCode.NONE] * 2
        with login(broker, ADMIN) as admin:
            assert create_topics(admin, unique("t"))[0]["error_code"] == ErrorCode.NONE
            assert [c["error_code"] for c in lookup(admin, 6, SHARE_KEY, *keys)] == [ErrorCode.NONE] * 2


# ---- InitProducerId v5, AddOffsetsToTxn v4 ----


def init_producer_id(conn: RawConnection, version: int, transactional_id: str, producer_id: int = -1,
                     epoch: int = -1) -> dict[str, Any]:
    return call(conn, INIT_PRODUCER_ID, version, {
        "transactional_id": transactional_id, "transaction_timeout_ms": 10_000, "producer_id": producer_id,
        "producer_epoch": epoch,
    })


def add_offsets(conn: RawConnection, version: int, transactional_id: str, producer_id: int, epoch: int) -> ErrorCode:
    return ErrorCode(call(conn, ADD_OFFSETS_TO_TXN, version, {
        "transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch, "group_id": "g-txn",
    })["error_code"])


def test_init_producer_id_v5_and_add_offsets_to_txn_v4(broker: BrokerProcess, topic_name: str) -> None:
    """Answered as v4 and v3: a producer id and epoch, the group's partition added, PRODUCER_FENCED kept for a stale
    epoch (older versions get INVALID_PRODUCER_EPOCH, as in Kafka)."""
    transactional_id = f"txn-{topic_name}"
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        first = init_producer_id(conn, 5, transactional_id)
        assert first["error_code"] == ErrorCode.NONE and first["producer_id"] >= 0
        producer_id, epoch = first["producer_id"], first["producer_epoch"]
        again = init_producer_id(conn, 5, transactional_id, producer_id, epoch)  # KIP-360: the epoch goes on
        assert (again["error_code"], again["producer_id"], again["producer_epoch"]) == (ErrorCode.NONE, producer_id, epoch + 1)
        stale = init_producer_id(conn, 5, transactional_id, producer_id, epoch)
        assert stale["error_code"] == ErrorCode.PRODUCER_FENCED
        assert init_producer_id(conn, 3, transactional_id, producer_id, epoch)["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH

        assert add_offsets(conn, 4, transactional_id, producer_id, epoch + 1) == ErrorCode.NONE
        assert add_offsets(conn, 4, transactional_id, producer_id, epoch) == ErrorCode.PRODUCER_FENCED
        assert add_offsets(conn, 1, transactional_id, producer_id, epoch) == ErrorCode.INVALID_PRODUCER_EPOCH


# ---- ApiVersions: Kafka's ranges ----


def test_kafka_4_ranges_of_these_apis(broker: BrokerProcess) -> None:
    ranges = advertised(broker.bootstrap)
    latest = served_by_release()["4.3"]
    assert {key: ranges[key] for key in (FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN)} == {
        FIND_COORDINATOR: (0, 6), INIT_PRODUCER_ID: (0, 5), ADD_OFFSETS_TO_TXN: (0, 4)}
    assert all(ranges[key] == latest[key] for key in (FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN))


@pytest.fixture(scope="module")
def kafka39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("kafka39") / "data", "kafka.version=3.9")
    try:
        yield proc.start()
    finally:
        proc.stop()


def test_an_emulated_3_9_advertises_exactly_3_9s_ranges(kafka39: BrokerProcess) -> None:
    """Every API minibroker serves at 3.9's own range, uncapped, and the start-up line names no version of 3.9's
    that minibroker lacks."""
    served = served_by_release()["3.9"]
    assert advertised(kafka39.bootstrap) == {key: served[key] for key in HANDLERS if key in served}
    line = re.search(r"emulating Apache Kafka 3\.9: .*", kafka39.log_text())
    assert line is not None and "versions of the release not served" not in line.group(0)


def test_an_emulated_3_9_has_no_share_coordinator(kafka39: BrokerProcess) -> None:
    """Kafka 3.9 answered share keys COORDINATOR_NOT_AVAILABLE: its share coordinator was not implemented."""
    with RawConnection(kafka39.bootstrap) as conn:
        [found] = lookup(conn, 6, SHARE_KEY, share_key("g", random_uuid()))
        assert (found["error_code"], found["node_id"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
        assert [c["error_code"] for c in lookup(conn, 6, GROUP_KEY, "g39")] == [ErrorCode.NONE]
