"""The versions Kafka 4.x added to DescribeGroups (v6, KIP-1043), DescribeCluster (v2, KIP-1073) and ListTransactions
(v2, KIP-1152), checked with hand-made requests against Kafka's answers: a group that is not a classic group is Dead
with GROUP_ID_NOT_FOUND and Kafka's message, a stopped node of a cluster is a fenced broker listed only when asked
for, and a transactional id pattern (RE2/J syntax) filters whole ids; and every 4.x emulation now advertises exactly
its release's ranges."""

from __future__ import annotations

import re
import uuid
from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.config.releases import known_releases, served_by_release
from minibroker.handlers import HANDLERS
from minibroker.handlers.emulation import emulation_notes
from minibroker.testing import Broker
from tests.aclutil import create_topics
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection

OFFSET_COMMIT, FIND_COORDINATOR, DESCRIBE_GROUPS, API_VERSIONS, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN = (
    8, 10, 15, 18, 22, 24)
DESCRIBE_CLUSTER, LIST_TRANSACTIONS, CONSUMER_GROUP_HEARTBEAT = 60, 66, 68
NO_AUTHORIZED_OPERATIONS = -(1 << 31)


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    with RawConnection(bootstrap) as conn:
        answer = call(conn, API_VERSIONS, 3, {"client_software_name": "raw-test", "client_software_version": "1"})
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def find_coordinator(conn: RawConnection, key_type: int, key: str) -> None:
    """As a client does first: the coordinator's internal topic is made, and the coordinator then answers."""
    [found] = call(conn, FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]})["coordinators"]
    assert found["error_code"] == ErrorCode.NONE, found


# ---- DescribeGroups v6 ----


def describe(conn: RawConnection, version: int, *groups: str) -> list[dict[str, Any]]:
    find_coordinator(conn, 0, groups[0])
    return call(conn, DESCRIBE_GROUPS, version, {"groups": list(groups), "include_authorized_operations": True})["groups"]


def commit_offset(conn: RawConnection, group: str, topic: str) -> None:
    """A simple consumer's commit: it makes an Empty classic group, as in Kafka."""
    answer = call(conn, OFFSET_COMMIT, 9, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                          "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                              {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                                               "committed_metadata": ""}]}]})
    assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def join_consumer_group(conn: RawConnection, group: str, topic: str) -> None:
    answer = call(conn, CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": group, "member_id": uuid.uuid4().hex, "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 10_000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": [],
    })
    assert answer["error_code"] == ErrorCode.NONE, answer


def test_describe_groups_v6_answers_a_missing_group_group_id_not_found(broker: BrokerProcess) -> None:
    """GroupMetadataManager.describeGroups: from v6 a group that does not exist is Dead with GROUP_ID_NOT_FOUND and
    the exception's message, and (an error) without authorized operations; v5 answers it Dead without an error."""
    group = unique("missing")
    with RawConnection(broker.bootstrap) as conn:
        [old] = describe(conn, 5, group)
        [new] = describe(conn, 6, group)
    assert (old["error_code"], old["group_state"], old["members"]) == (ErrorCode.NONE, "Dead", [])
    assert old["authorized_operations"] != NO_AUTHORIZED_OPERATIONS
    assert (new["error_code"], new["error_message"], new["group_id"], new["group_state"], new["protocol_type"],
            new["members"], new["authorized_operations"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group} not found.", group, "Dead", "", [], NO_AUTHORIZED_OPERATIONS)


def test_describe_groups_v6_names_a_consumer_protocol_group_not_a_classic_one(broker: BrokerProcess,
                                                                            topic_name: str) -> None:
    group = unique("consumer")
    with RawConnection(broker.bootstrap) as conn:
        join_consumer_group(conn, group, topic_name)
        [old] = describe(conn, 5, group)
        [new] = describe(conn, 6, group)
    assert (old["error_code"], old["group_state"]) == (ErrorCode.NONE, "Dead")
    assert (new["error_code"], new["error_message"], new["group_state"]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead")


def test_describe_groups_v6_describes_a_classic_group_as_v5(broker: BrokerProcess, topic_name: str) -> None:
    group = unique("classic")
    with RawConnection(broker.bootstrap) as conn:
        assert create_topics(conn, topic_name)[0]["error_code"] == ErrorCode.NONE
        commit_offset(conn, group, topic_name)
        [old] = describe(conn, 5, group)
        [new] = describe(conn, 6, group)
    assert new["error_message"] is None
    assert new == old and (old["error_code"], old["group_state"]) == (ErrorCode.NONE, "Empty")


# ---- DescribeCluster v2 ----


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Broker]:
    with Broker(nodes=3) as running:
        yield running


def describe_cluster(address: str, version: int, include_fenced: bool = False) -> dict[str, Any]:
    with RawConnection(address) as conn:
        return call(conn, DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": False,
                                                       "include_fenced_brokers": include_fenced})


def listed(answer: dict[str, Any]) -> dict[int, tuple[str, int, bool]]:
    return {b["broker_id"]: (b["host"], b["port"], b["is_fenced"]) for b in answer["brokers"]}


def test_describe_cluster_v2_lists_a_stopped_node_as_fenced_only_when_asked(three_nodes: Broker) -> None:
    """KafkaApis.handleDescribeCluster: every registered broker, a fenced one only with IncludeFencedBrokers, each
    with IsFenced; a node stopped in a KRaft cluster stays registered, fenced."""
    broker = three_nodes
    first = broker.node_addresses[1]
    before = listed(describe_cluster(first, 2, include_fenced=True))
    assert sorted(before) == [1, 2, 3] and not any(fenced for _, _, fenced in before.values())
    broker.stop_node(3)
    try:
        for version in (0, 1, 2):
            answer = describe_cluster(first, version)
            assert (answer["error_code"], sorted(listed(answer))) == (ErrorCode.NONE, [1, 2]), version
            assert answer["controller_id"] in (1, 2)
        every = describe_cluster(first, 2, include_fenced=True)
        assert listed(every) == {**{node: before[node] for node in (1, 2)}, 3: (*before[3][:2], True)}
        assert every["controller_id"] in (1, 2)
    finally:
        broker.start_node(3)
    assert listed(describe_cluster(first, 2, include_fenced=True)) == before


# ---- ListTransactions v2 ----


def init_producer(conn: RawConnection, transactional_id: str) -> int:
    find_coordinator(conn, 1, transactional_id)
    answer = call(conn, INIT_PRODUCER_ID, 5, {"transactional_id": transactional_id, "transaction_timeout_ms": 10_000,
                                              "producer_id": -1, "producer_epoch": -1})
    assert answer["error_code"] == ErrorCode.NONE, answer
    return answer["producer_id"]


def list_transactions(conn: RawConnection, version: int, pattern: str | None = None,
                      states: tuple[str, ...] = (), duration_ms: int = -1) -> dict[str, Any]:
    return call(conn, LIST_TRANSACTIONS, version, {"state_filters": list(states), "producer_id_filters": [],
                                                   "duration_filter": duration_ms, "transactional_id_pattern": pattern})


@pytest.fixture(scope="module")
def transactional_ids(broker: BrokerProcess) -> dict[str, int]:
    """Three transactional ids (Empty transactions) under one unique tag: the producer id of each."""
    tag = uuid.uuid4().hex[:10]
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        return {name: init_producer(conn, name) for name in (f"orders-{tag}-1", f"orders-{tag}-2", f"audit-{tag}")}


def listed_ids(answer: dict[str, Any], among: dict[str, int]) -> set[str]:
    assert answer["error_code"] == ErrorCode.NONE, answer
    found = {t["transactional_id"] for t in answer["transaction_states"] if t["transactional_id"] in among}
    assert all(t["producer_id"] == among[t["transactional_id"]] for t in answer["transaction_states"]
               if t["transactional_id"] in among)
    return found


def test_list_transactions_v2_filters_by_a_pattern_matching_the_whole_id(broker: BrokerProcess,
                                                                       transactional_ids: dict[str, int]) -> None:
    orders = {name for name in transactional_ids if name.startswith("orders-")}
    tag = next(iter(orders)).split("-")[1]
    with RawConnection(broker.bootstrap) as conn:
        assert listed_ids(list_transactions(conn, 2, f"orders-{tag}-\\d"), transactional_ids) == orders
        assert listed_ids(list_transactions(conn, 2, f"(orders|audit)-{tag}.*"), transactional_ids) == set(transactional_ids)
        assert listed_ids(list_transactions(conn, 2, "orders"), transactional_ids) == set()  # a whole-id match
        assert listed_ids(list_transactions(conn, 2, f"audit-{tag}", ("Empty",)), transactional_ids) == {f"audit-{tag}"}
        assert listed_ids(list_transactions(conn, 2, f"audit-{tag}", ("Ongoing",)), transactional_ids) == set()
        for unfiltered in (None, ""):
            assert listed_ids(list_transactions(conn, 2, unfiltered), transactional_ids) == set(transactional_ids)
        assert listed_ids(list_transactions(conn, 1), transactional_ids) == set(transactional_ids)


def test_list_transactions_duration_filter_computes_as_kafka(broker: BrokerProcess, topic_name: str) -> None:
    """TransactionStateManager.listTransactionStates leaves a transaction out when it has run for the duration or
    less, reckoned from its start timestamp, which is -1 for an Empty one: that one is listed at any duration."""
    tag = uuid.uuid4().hex[:10]
    empty, ongoing = f"empty-{tag}", f"ongoing-{tag}"
    with RawConnection(broker.bootstrap, timeout=10) as conn:
        assert create_topics(conn, topic_name)[0]["error_code"] == ErrorCode.NONE
        ids = {name: init_producer(conn, name) for name in (empty, ongoing)}
        added = call(conn, ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": ongoing, "v3_and_below_producer_id": ids[ongoing],
            "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [{"name": topic_name, "partitions": [0]}]})
        assert added["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
        assert listed_ids(list_transactions(conn, 2, duration_ms=3_600_000), ids) == {empty}
        assert listed_ids(list_transactions(conn, 1, duration_ms=-1), ids) == {empty, ongoing}


@pytest.mark.parametrize("pattern", ["orders-(", r"(o)\1", "(?=o)orders.*", "(?<!x)orders.*", "(?>orders).*", "o*+.*"])
def test_list_transactions_v2_refuses_what_re2_refuses(broker: BrokerProcess, transactional_ids: dict[str, int],
                                                       pattern: str) -> None:
    """TransactionStateManager: a pattern RE2/J cannot compile is INVALID_REGULAR_EXPRESSION, with nothing listed and
    no unknown state filter reported (the error response of ListTransactionsRequest)."""
    with RawConnection(broker.bootstrap) as conn:
        answer = list_transactions(conn, 2, pattern, ("NoSuchState",))
    assert (answer["error_code"], answer["unknown_state_filters"], answer["transaction_states"]) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION, [], [])


# ---- ApiVersions: Kafka 4's ranges, exactly ----


def test_kafka_4_ranges_of_these_apis(broker: BrokerProcess) -> None:
    ranges = advertised(broker.bootstrap)
    latest = served_by_release()["4.3"]
    assert {key: ranges[key] for key in (DESCRIBE_GROUPS, DESCRIBE_CLUSTER, LIST_TRANSACTIONS)} == {
        DESCRIBE_GROUPS: (0, 6), DESCRIBE_CLUSTER: (0, 2), LIST_TRANSACTIONS: (0, 2)}
    assert all(ranges[key] == latest[key] for key in (DESCRIBE_GROUPS, DESCRIBE_CLUSTER, LIST_TRANSACTIONS))


@pytest.mark.parametrize("release", known_releases())
def test_no_release_has_a_version_minibroker_does_not_serve(release: str) -> None:
    assert emulation_notes(HANDLERS, release)[1] == []


@pytest.fixture(scope="module")
def kafka43(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("kafka43") / "data", "kafka.version=4.3")
    try:
        yield proc.start()
    finally:
        proc.stop()


def test_an_emulated_4_3_advertises_exactly_4_3s_ranges(kafka43: BrokerProcess) -> None:
    served = served_by_release()["4.3"]
    assert advertised(kafka43.bootstrap) == {key: served[key] for key in HANDLERS if key in served}
    line = re.search(r"emulating Apache Kafka 4\.3: .*", kafka43.log_text())
    assert line is not None and "versions of the release not served" not in line.group(0)


# ---- a client that uses them: kafka-python 3 (DescribeGroups v6, DescribeCluster v2, ListTransactions v2) ----


def test_kafka_python_admin_sees_the_new_versions(broker: BrokerProcess, three_nodes: Broker,
                                                  transactional_ids: dict[str, int]) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10_000)
    try:
        group = unique("missing")
        described = admin.describe_groups([group])[group]
        assert described["group_state"] == "Dead" and "GroupIdNotFoundError" in described["error"], described
        assert f"Group {group} not found." in described["error"]
        orders = {name for name in transactional_ids if name.startswith("orders-")}
        tag = next(iter(orders)).split("-")[1]
        listings = admin.list_transactions(transactional_id_pattern=f"orders-{tag}-.*")
        assert {t.transactional_id for t in listings[1]} == orders
    finally:
        admin.close()
    three_nodes.stop_node(3)
    try:  # a client made now knows only the live nodes, from Metadata, so it sends to one of them
        cluster = KafkaAdminClient(bootstrap_servers=three_nodes.node_addresses[1], request_timeout_ms=10_000)
        try:
            brokers = cluster.describe_cluster()["brokers"]  # asks for fenced brokers too
        finally:
            cluster.close()
        assert {b["broker_id"]: b["is_fenced"] for b in brokers} == {1: False, 2: False, 3: True}
    finally:
        three_nodes.start_node(3)
