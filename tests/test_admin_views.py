"""The admin views of transactions and producers, WriteTxnMarkers (Admin.abortTransaction's request),
DescribeCluster and OffsetForLeaderEpoch, with an open transaction from a real transactional producer."""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import AclOperation
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from tests.clientutil import TIMEOUT_S, RawConnection, confluent_admin, confluent_create_topic

LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, WRITE_TXN_MARKERS = 2, 23, 24, 27
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66


def ask(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    with RawConnection(bootstrap) as conn:
        return decode_response(api_key, version, conn.request(api_key, version, body))[1]


@pytest.fixture
def open_transaction(bootstrap: str, topic_name: str) -> Iterator[tuple[str, Producer]]:
    """A transaction with 3 records in partition 0 of a fresh topic, flushed and left open."""
    confluent_create_topic(bootstrap, topic_name, 2)
    transactional_id = f"{topic_name}-tx"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for value in (b"a", b"b", b"c"):
        producer.produce(topic_name, value, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    try:
        yield transactional_id, producer
    finally:
        producer.abort_transaction(TIMEOUT_S)


def read_committed_end(bootstrap: str, topic: str) -> int:
    body = {"replica_id": -1, "isolation_level": 1,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    return ask(bootstrap, LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0]["offset"]


def test_open_transaction_in_every_view(bootstrap: str, topic_name: str, open_transaction: tuple[str, Producer]) -> None:
    transactional_id, _ = open_transaction
    listed = ask(bootstrap, LIST_TRANSACTIONS, 1, {"state_filters": ["Ongoing"], "producer_id_filters": []})
    mine = [t for t in listed["transaction_states"] if t["transactional_id"] == transactional_id]
    assert [t["transaction_state"] for t in mine] == ["Ongoing"]
    producer_id = mine[0]["producer_id"]
    assert ask(bootstrap, LIST_TRANSACTIONS, 0, {"state_filters": ["Nonsense"], "producer_id_filters": []})[
        "unknown_state_filters"] == ["Nonsense"]

    [described] = ask(bootstrap, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})["transaction_states"]
    assert (described["error_code"], described["transaction_state"], described["producer_id"]) == (0, "Ongoing", producer_id)
    assert described["topics"] == [{"topic": topic_name, "partitions": [0]}]
    [missing] = ask(bootstrap, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["nobody"]})["transaction_states"]
    assert missing["error_code"] == 105  # TRANSACTIONAL_ID_NOT_FOUND

    body = {"topics": [{"name": topic_name, "partition_indexes": [0, 1]}]}
    [p0, p1] = ask(bootstrap, DESCRIBE_PRODUCERS, 0, body)["topics"][0]["partitions"]
    [active] = p0["active_producers"]
    assert (active["producer_id"], active["current_txn_start_offset"], active["last_sequence"]) == (producer_id, 0, 2)
    assert p1["active_producers"] == []
    assert read_committed_end(bootstrap, topic_name) == 0


def test_write_txn_markers_aborts_a_hanging_transaction(
    bootstrap: str, topic_name: str, open_transaction: tuple[str, Producer]
) -> None:
    """What Kafka's Admin.abortTransaction does: an ABORT marker written straight to the partition."""
    transactional_id, _ = open_transaction
    [state] = ask(bootstrap, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})["transaction_states"]
    marker = {"producer_id": state["producer_id"], "producer_epoch": state["producer_epoch"], "transaction_result": False,
              "topics": [{"name": topic_name, "partition_indexes": [0]}], "coordinator_epoch": 0}
    [result] = ask(bootstrap, WRITE_TXN_MARKERS, 1, {"markers": [marker]})["markers"]
    assert result["topics"][0]["partitions"] == [{"partition_index": 0, "error_code": 0}]
    assert read_committed_end(bootstrap, topic_name) == 4, "3 records and the marker are all stable now"


def test_offset_for_leader_epoch_and_describe_cluster(bootstrap: str, topic_name: str) -> None:
    confluent_create_topic(bootstrap, topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in (b"x", b"y"):
        producer.produce(topic_name, value)
    assert producer.flush(TIMEOUT_S) == 0
    body = {"replica_id": -1, "topics": [{"topic": topic_name, "partitions": [
        {"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0},
        {"partition": 7, "current_leader_epoch": 0, "leader_epoch": 0},
    ]}]}
    [known, unknown] = ask(bootstrap, OFFSET_FOR_LEADER_EPOCH, 4, body)["topics"][0]["partitions"]
    assert (known["error_code"], known["leader_epoch"], known["end_offset"]) == (0, 0, 2)
    assert unknown["error_code"] == 3

    admin = confluent_admin(bootstrap)
    cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    [node] = cluster.nodes
    assert f"{node.host}:{node.port}" == bootstrap and cluster.controller.id == node.id


def test_idle_producers_are_forgotten_after_producer_id_expiration_ms(topic_name: str) -> None:
    """producer.id.expiration.ms: DescribeProducers stops listing an idempotent producer that went quiet, while a
    transactional producer with an open transaction is kept; the forgotten producer can produce again."""
    from minibroker.testing import Broker

    settings = {"producer.id.expiration.ms": 3000, "producer.id.expiration.check.interval.ms": 100}
    with Broker(settings) as broker:
        bootstrap = broker.bootstrap_servers
        confluent_create_topic(bootstrap, topic_name, 1)
        transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic_name}-tx"})
        transactional.init_transactions(TIMEOUT_S)
        transactional.begin_transaction()
        transactional.produce(topic_name, b"open", partition=0)
        assert transactional.flush(TIMEOUT_S) == 0
        idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        idempotent.produce(topic_name, b"once", partition=0)
        assert idempotent.flush(TIMEOUT_S) == 0

        def producers() -> list[dict[str, Any]]:
            body = {"topics": [{"name": topic_name, "partition_indexes": [0]}]}
            return ask(bootstrap, DESCRIBE_PRODUCERS, 0, body)["topics"][0]["partitions"][0]["active_producers"]

        assert len(producers()) == 2
        deadline = time.monotonic() + 10
        while len(producers()) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        [kept] = producers()
        assert kept["current_txn_start_offset"] == 0, "the producer with an open transaction must stay"
        idempotent.produce(topic_name, b"again", partition=0)
        assert idempotent.flush(TIMEOUT_S) == 0
        transactional.commit_transaction(TIMEOUT_S)
        assert read_committed_end(bootstrap, topic_name) == 4  # open, once, again and the COMMIT marker


def test_idle_transactional_ids_expire_and_stay_gone_after_a_restart(topic_name: str) -> None:
    """transactional.id.expiration.ms: a finished transactional id is tombstoned in __transaction_state, so
    DescribeTransactions no longer finds it, also after a restart; one with an open transaction stays."""
    from minibroker.testing import Broker

    settings = {"transactional.id.expiration.ms": 3000,
                "transaction.remove.expired.transaction.cleanup.interval.ms": 100,
                "transaction.state.log.num.partitions": 1}

    def described(bootstrap: str, *ids: str) -> dict[str, int]:
        body = {"transactional_ids": list(ids)}
        return {s["transactional_id"]: s["error_code"]
                for s in ask(bootstrap, DESCRIBE_TRANSACTIONS, 0, body)["transaction_states"]}

    with Broker(settings) as broker:
        confluent_create_topic(broker.bootstrap_servers, topic_name, 1)
        done = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "done"})
        done.init_transactions(TIMEOUT_S)
        done.begin_transaction()
        done.produce(topic_name, b"committed", partition=0)
        done.commit_transaction(TIMEOUT_S)
        still_open = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "still-open",
                               "transaction.timeout.ms": 60000})
        still_open.init_transactions(TIMEOUT_S)
        still_open.begin_transaction()
        still_open.produce(topic_name, b"open", partition=0)
        assert still_open.flush(TIMEOUT_S) == 0
        deadline = time.monotonic() + 10
        while described(broker.bootstrap_servers, "done")["done"] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        not_found = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        assert described(broker.bootstrap_servers, "done", "still-open") == {"done": not_found, "still-open": 0}
        still_open.abort_transaction(TIMEOUT_S)
        broker.restart()
        assert described(broker.bootstrap_servers, "done")["done"] == not_found


def test_batched_add_partitions_to_txn_adds_and_verifies(
    bootstrap: str, topic_name: str, open_transaction: tuple[str, Producer]
) -> None:
    """AddPartitionsToTxn v4+ (what brokers send, KIP-890): several transactions per request, and verify_only,
    which checks that partitions are in the transaction without adding them."""
    transactional_id, _ = open_transaction
    [state] = ask(bootstrap, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})["transaction_states"]

    def request(version: int, verify_only: bool, partitions: list[int]) -> dict[str, dict[int, int]]:
        ours = {"transactional_id": transactional_id, "producer_id": state["producer_id"],
                "producer_epoch": state["producer_epoch"], "verify_only": verify_only,
                "topics": [{"name": topic_name, "partitions": partitions}]}
        unknown = {**ours, "transactional_id": f"{transactional_id}-unknown"}
        answer = ask(bootstrap, ADD_PARTITIONS_TO_TXN, version, {"transactions": [ours, unknown]})
        assert answer["error_code"] == 0
        return {
            result["transactional_id"]: {p["partition_index"]: p["partition_error_code"]
                                         for t in result["topic_results"] for p in t["results_by_partition"]}
            for result in answer["results_by_transaction"]
        }

    mapping = ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert request(4, True, [0, 1]) == {transactional_id: {0: ErrorCode.NONE, 1: ErrorCode.INVALID_TXN_STATE},
                                        f"{transactional_id}-unknown": {0: mapping, 1: mapping}}
    assert request(5, True, [1])[transactional_id] == {1: ErrorCode.TRANSACTION_ABORTABLE}
    assert request(4, False, [1])[transactional_id] == {1: ErrorCode.NONE}
    assert request(5, True, [0, 1])[transactional_id] == {0: ErrorCode.NONE, 1: ErrorCode.NONE}


def test_authorized_operations_are_every_supported_one_without_an_authorizer(bootstrap: str, topic_name: str) -> None:
    """KIP-430 as Kafka answers it with no authorizer: a topic's 8 operations, the cluster's 7."""
    confluent_create_topic(bootstrap, topic_name, 1)
    admin = confluent_admin(bootstrap)
    [topic] = admin.describe_topics(
        TopicCollection([topic_name]), include_authorized_operations=True, request_timeout=TIMEOUT_S,
    ).values()
    assert set(topic.result(timeout=TIMEOUT_S).authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
        AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
    }
    cluster = admin.describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE,
    }
    plain = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert plain.authorized_operations is None
