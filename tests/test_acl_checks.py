"""What each API checks with the authorizer on, over real TCP against a broker process with a SASL_PLAINTEXT
listener (users admin, a super user, alice and bob): Kafka's error codes per API, authorized operations (KIP-430),
InitProducerId's rule for idempotent producers, and ListGroups' filtering."""

from __future__ import annotations

from typing import Iterator

import pytest

from minibroker.acls.operations import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER_ACTION,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    IDEMPOTENT_WRITE,
    READ,
    WRITE,
    operation_bits,
)
from tests.aclutil import CLUSTER, GROUP, PREFIXED, TOPIC, acl_broker, create_topics, grant, login, unique
from tests.brokerproc import BrokerProcess
from tests.test_security import call

TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
(LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, LIST_GROUPS, DELETE_TOPICS,
 DELETE_RECORDS, INIT_PRODUCER_ID, DESCRIBE_CONFIGS_API, CREATE_PARTITIONS, DESCRIBE_CLUSTER) = (
    2, 3, 8, 9, 10, 16, 20, 21, 22, 32, 37, 60)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from acl_broker(tmp_path_factory.mktemp("acl-checks") / "data", ("alice", "bob"))


def test_create_topics_needs_create_on_the_cluster_or_the_topic(broker: BrokerProcess) -> None:
    prefix = unique("made")
    with login(broker, "alice") as conn:
        [refused] = create_topics(conn, f"{prefix}-a")
        assert (refused["error_code"], refused["error_message"]) == (TOPIC_DENIED, "Authorization failed.")
        grant(broker, "alice", TOPIC, prefix, CREATE, PREFIXED)
        [created] = create_topics(conn, f"{prefix}-a")
        assert created["error_code"] == 0
        assert (created["topic_config_error_code"], created["configs"], created["num_partitions"]) == (TOPIC_DENIED, [], -1)
    grant(broker, "bob", CLUSTER, "kafka-cluster", CREATE)
    with login(broker, "bob") as conn:
        assert [t["error_code"] for t in create_topics(conn, unique("by-bob"))] == [0]


def test_topic_apis_answer_topic_authorization_failed(broker: BrokerProcess) -> None:
    topic = unique("guarded")
    with login(broker, "admin") as conn:
        create_topics(conn, topic)
    with login(broker, "bob") as conn:
        deleted = call(conn, DELETE_TOPICS, 6, {"topics": [{"name": topic, "topic_id": bytes(16)}], "timeout_ms": 5000})
        assert [r["error_code"] for r in deleted["responses"]] == [TOPIC_DENIED]
        grown = call(conn, CREATE_PARTITIONS, 3, {"topics": [{"name": topic, "count": 3, "assignments": None}],
                                                  "timeout_ms": 5000, "validate_only": False})
        assert [(r["error_code"], r["error_message"]) for r in grown["results"]] == [(TOPIC_DENIED, None)]
        records = call(conn, DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
                                                 "timeout_ms": 5000})
        assert [p["error_code"] for t in records["topics"] for p in t["partitions"]] == [TOPIC_DENIED]
        offsets = call(conn, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert [p["error_code"] for t in offsets["topics"] for p in t["partitions"]] == [TOPIC_DENIED]
        configs = call(conn, DESCRIBE_CONFIGS_API, 4, {"resources": [
            {"resource_type": TOPIC, "resource_name": topic, "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
        ], "include_synonyms": False, "include_documentation": False})
        assert [(r["error_code"], r["error_message"]) for r in configs["results"]] == [
            (TOPIC_DENIED, "Topic authorization failed."), (CLUSTER_DENIED, "Cluster authorization failed."),
        ]
    grant(broker, "bob", TOPIC, topic, DELETE)
    with login(broker, "bob") as conn:
        records = call(conn, DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
                                                 "timeout_ms": 5000})
        assert [p["error_code"] for t in records["topics"] for p in t["partitions"]] == [0]
        offsets = call(conn, LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert [p["error_code"] for t in offsets["topics"] for p in t["partitions"]] == [0]  # DELETE implies DESCRIBE


def test_find_coordinator_needs_describe(broker: BrokerProcess) -> None:
    group, transactional_id = unique("g"), unique("tx")
    with login(broker, "bob") as conn:
        groups = call(conn, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"]
        txns = call(conn, FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [transactional_id]})["coordinators"]
        assert [c["error_code"] for c in groups + txns] == [GROUP_DENIED, TXN_DENIED]
        grant(broker, "bob", GROUP, group, READ)
        assert [c["error_code"] for c in call(conn, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"]] == [0]


def test_idempotent_producer_needs_idempotent_write_or_write_on_some_topic(broker: BrokerProcess) -> None:
    """bob holds no WRITE anywhere until this test grants one (Kafka's authorizeByResourceType)."""
    request = {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    with login(broker, "bob") as conn:
        assert call(conn, INIT_PRODUCER_ID, 4, request)["error_code"] == CLUSTER_DENIED
        grant(broker, "bob", TOPIC, unique("anything"), WRITE)
        answer = call(conn, INIT_PRODUCER_ID, 4, request)
        assert answer["error_code"] == 0 and answer["producer_id"] >= 0
        transactional = call(conn, INIT_PRODUCER_ID, 4, {**request, "transactional_id": unique("tx")})
        assert transactional["error_code"] == TXN_DENIED


def test_group_and_cluster_views(broker: BrokerProcess) -> None:
    topic, seen, unseen = unique("offsets"), unique("seen"), unique("unseen")
    with login(broker, "admin") as conn:
        create_topics(conn, topic)
        for group in (seen, unseen):
            commit = call(conn, OFFSET_COMMIT, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                                   "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                                       {"partition_index": 0, "committed_offset": 0, "committed_metadata": None}]}]})
            assert [p["error_code"] for t in commit["topics"] for p in t["partitions"]] == [0]
    grant(broker, "bob", GROUP, seen, DESCRIBE)
    with login(broker, "bob") as conn:
        listed = {g["group_id"] for g in call(conn, LIST_GROUPS, 4, {"states_filter": []})["groups"]}
        assert seen in listed and unseen not in listed
        fetched = call(conn, OFFSET_FETCH, 8, {"groups": [
            {"group_id": seen, "topics": [{"name": topic, "partition_indexes": [0]}]},
            {"group_id": unseen, "topics": None},
        ], "require_stable": False})["groups"]
        assert fetched[0]["error_code"] == 0
        assert [p["error_code"] for t in fetched[0]["topics"] for p in t["partitions"]] == [TOPIC_DENIED]
        assert fetched[1]["error_code"] == GROUP_DENIED
        commit = call(conn, OFFSET_COMMIT, 8, {"group_id": seen, "generation_id_or_member_epoch": -1, "member_id": "",
                                               "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                                   {"partition_index": 0, "committed_offset": 1, "committed_metadata": None}]}]})
        assert [p["error_code"] for t in commit["topics"] for p in t["partitions"]] == [GROUP_DENIED]  # DESCRIBE is not READ
        assert call(conn, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})["cluster_authorized_operations"] == 0
    grant(broker, "alice", CLUSTER, "kafka-cluster", DESCRIBE)
    grant(broker, "alice", TOPIC, topic, READ)
    with login(broker, "alice") as conn:
        cluster = call(conn, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
        assert cluster["cluster_authorized_operations"] == operation_bits(DESCRIBE)
        metadata = call(conn, METADATA, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}], "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": True})
        [answer] = metadata["topics"]
        assert answer["topic_authorized_operations"] == operation_bits(READ, DESCRIBE)
    with login(broker, "admin") as conn:
        everything = call(conn, DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})["cluster_authorized_operations"]
    assert everything == operation_bits(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
