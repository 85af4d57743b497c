"""Each API's authorization checks rung by rung, over real TCP against a broker process with the standard authorizer:
a user without ACLs gets Kafka's denial (KafkaApis; ControllerApis for what Kafka 4 forwards to its controller), and
each grant moves the answer one check further, until the API does its work. Every ladder has its own user and names,
so a grant (on the cluster too) stays in its ladder."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest

from minibroker.acls.operations import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER_ACTION,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    READ,
    WRITE,
)
from tests.aclutil import (
    ADMIN,
    CLUSTER,
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    acl_broker,
    create_topics,
    grant,
    login,
    unique,
)
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_security import call

NONE, UNKNOWN_TOPIC, TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, INVALID_REQUEST, TXN_DENIED = 0, 3, 29, 30, 31, 42, 53
UNKNOWN_MEMBER, INVALID_PRODUCER_ID_MAPPING, NOT_ATTEMPTED, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = 25, 49, 55, 69, 79
TOPIC_MESSAGE, CLUSTER_MESSAGE = "Topic authorization failed.", "Cluster authorization failed."
GROUP_MESSAGE = "Group authorization failed."
GROUP_CONFIGS = 32  # ConfigResource.Type.GROUP (the ACL resource type of a group is 3)
ZERO_ID = bytes(16)
COMMIT, FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS, HEARTBEAT, DESCRIBE_GROUP = 8, 10, 22, 24, 68, 69
MAX_BYTES = 1 << 20
REGEX_USER = "regex-consumer"


@dataclass(frozen=True)
class Names:
    """A ladder's resources: two topics the admin creates, one never created, a group and a transactional id."""

    topic: str
    other: str
    missing: str
    group: str
    txn: str

    @classmethod
    def of(cls, ladder: str) -> Names:
        return cls(*(unique(f"{ladder}-{kind}") for kind in ("topic", "other", "missing", "group", "txn")))

    def resource(self, key: str) -> tuple[int, str]:
        if key == "cluster":
            return CLUSTER, "kafka-cluster"
        kind = {"group": GROUP, "txn": TRANSACTIONAL_ID}.get(key, TOPIC)
        return kind, getattr(self, key)


Grant = tuple[int, str]  # an operation and the Names.resource key it is granted on


@dataclass(frozen=True)
class Ladder:
    id: str  # also the user climbing it
    api: int
    version: int
    body: Callable[[Names], dict[str, Any]]
    answer: Callable[[dict[str, Any], Names], Any]  # what of the response the rungs compare
    rungs: tuple[tuple[Grant | None, Any], ...]  # (what is granted first, the answer then); the first grants nothing
    setup: Callable[[RawConnection, Names], None] = lambda admin, n: topics(admin, n)


def at(*paths: str) -> Callable[[dict[str, Any], Names], list[Any]]:
    """The values at dotted ``paths`` of a response, lists walked through: at("topics.partitions.error_code")."""
    def walk(value: Any, keys: list[str]) -> list[Any]:
        if isinstance(value, list):
            return [found for item in value for found in walk(item, keys)]
        return walk(value[keys[0]], keys[1:]) if keys else [value]

    return lambda answer, n: [found for path in paths for found in walk(answer, path.split("."))]


PARTITION_CODES = at("topics.partitions.error_code")
TOP_CODE = at("error_code")


def resource_errors(answer: dict[str, Any], names: Names) -> list[tuple[int, str | None]]:
    """The config APIs' per-resource (code, message)."""
    results = answer.get("results", answer.get("responses"))
    return [(r["error_code"], r["error_message"]) for r in results]


def topics(admin: RawConnection, n: Names) -> None:
    assert [t["error_code"] for t in create_topics(admin, n.topic, n.other)] == [NONE, NONE]


def coordinators(admin: RawConnection, n: Names) -> None:
    """The two topics, and the coordinators of ``n.group`` and ``n.txn`` found (their internal topics exist)."""
    topics(admin, n)
    for key_type, key in ((0, n.group), (1, n.txn)):
        found = call(admin, FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]})
        assert at("coordinators.error_code")(found, n) == [NONE]


def open_transaction(admin: RawConnection, n: Names) -> None:
    """The two topics, and a transaction of ``n.txn`` holding ``n.topic``'s partition."""
    coordinators(admin, n)
    started = call(admin, INIT_PRODUCER_ID, 4, {"transactional_id": n.txn, "transaction_timeout_ms": 60000,
                                                 "producer_id": -1, "producer_epoch": -1})
    assert started["error_code"] == NONE
    added = call(admin, ADD_PARTITIONS, 3, {
        "v3_and_below_transactional_id": n.txn, "v3_and_below_producer_id": started["producer_id"],
        "v3_and_below_producer_epoch": started["producer_epoch"],
        "v3_and_below_topics": [{"name": n.topic, "partitions": [0]}],
    })
    assert at("results_by_topic_v3_and_below.results_by_partition.partition_error_code")(added, n) == [NONE]


def committed_offset(admin: RawConnection, n: Names) -> None:
    """The two topics, and an offset of ``n.topic`` committed by the empty group ``n.group``."""
    topics(admin, n)
    committed = call(admin, COMMIT, 8, {"group_id": n.group, "generation_id_or_member_epoch": -1, "member_id": "",
                                        "topics": partitions(n, "topic", committed_offset=0)})
    assert PARTITION_CODES(committed, n) == [NONE]


def joined_member(admin: RawConnection, n: Names) -> None:
    """The two topics, and ``n.group`` a consumer-protocol group whose member is assigned ``n.topic``."""
    topics(admin, n)
    assert call(admin, HEARTBEAT, 0, member_heartbeat(n))["error_code"] == NONE


def member_heartbeat(n: Names) -> dict[str, Any]:
    return {"group_id": n.group, "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": [n.topic], "topic_partitions": []}


def partitions(n: Names, *names: str, **fields: Any) -> list[dict[str, Any]]:
    return [{"name": getattr(n, name), "partitions": [{"partition_index": 0, **fields}]} for name in names]


def fetch_body(replica_id: int) -> Callable[[Names], dict[str, Any]]:
    return lambda n: {
        "replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": MAX_BYTES, "session_epoch": -1,
        "topics": [{"topic": n.topic, "partitions": [{
            "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": MAX_BYTES,
        }]}],
    }


def markers_body(producer_id: int) -> Callable[[Names], dict[str, Any]]:
    """An abort marker of a producer the ladder makes up, on ``n.topic``."""
    return lambda n: {"markers": [{"producer_id": producer_id, "transaction_result": False,
                                   "topics": [{"name": n.topic, "partition_indexes": [0]}]}]}


def leader_epoch_body(n: Names) -> dict[str, Any]:
    return {"replica_id": -1, "topics": [{"topic": n.topic, "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}


def config_body(resource_type: int, incremental: bool) -> Callable[[Names], dict[str, Any]]:
    config = {"name": "retention.ms", "value": "60000", **({"config_operation": 0} if incremental else {})}
    return lambda n: {"resources": [{"resource_type": resource_type, "resource_name": n.topic if resource_type == TOPIC
                                     else "1", "configs": [config]}], "validate_only": False}


def group_config_body(incremental: bool) -> Callable[[Names], dict[str, Any]]:
    config = {"name": "consumer.heartbeat.interval.ms", "value": "1000", **({"config_operation": 0} if incremental else {})}
    return lambda n: {"resources": [{"resource_type": GROUP_CONFIGS, "resource_name": n.group, "configs": [config]}],
                      "validate_only": False}


def delete_topics_answer(answer: dict[str, Any], n: Names) -> list[tuple[int, bool]]:
    """(code, whether the topic's id is told) per topic: a topic the user may not DESCRIBE keeps its id secret."""
    return [(r["error_code"], r["topic_id"] != ZERO_ID) for r in answer["responses"]]


def described_transactions(answer: dict[str, Any], n: Names) -> list[tuple[int, list[str]]]:
    return [(s["error_code"], [t["topic"] for t in s["topics"]]) for s in answer["transaction_states"]]


def described_groups(answer: dict[str, Any], n: Names) -> list[tuple[int, int]]:
    """(code, members told) per group."""
    return [(g["error_code"], len(g["members"])) for g in answer["groups"]]


MARKER_CODES = at("markers.topics.partitions.error_code")
FETCH_CODES = at("error_code", "responses.partitions.error_code")

LADDERS = (
    Ladder(
        "add-partitions-to-txn", 24, 3,
        lambda n: {"v3_and_below_transactional_id": n.txn, "v3_and_below_topics": [
            {"name": n.topic, "partitions": [0]}, {"name": n.other, "partitions": [0]}]},
        at("results_by_topic_v3_and_below.results_by_partition.partition_error_code"),
        ((None, [TXN_DENIED] * 2), ((WRITE, "txn"), [TOPIC_DENIED] * 2),
         ((WRITE, "topic"), [NOT_ATTEMPTED, TOPIC_DENIED]), ((WRITE, "other"), [INVALID_PRODUCER_ID_MAPPING] * 2)),
        coordinators,
    ),
    Ladder(
        "add-partitions-to-txn-v4", 24, 4,
        lambda n: {"transactions": [{"transactional_id": n.txn, "verify_only": True,
                                     "topics": [{"name": n.topic, "partitions": [0]}]}]},
        at("error_code", "results_by_transaction.topic_results.results_by_partition.partition_error_code"),
        ((None, [CLUSTER_DENIED]), ((CLUSTER_ACTION, "cluster"), [NONE, INVALID_PRODUCER_ID_MAPPING])),
        coordinators,
    ),
    Ladder(
        "add-offsets-to-txn", 25, 3, lambda n: {"transactional_id": n.txn, "group_id": n.group}, TOP_CODE,
        ((None, [TXN_DENIED]), ((WRITE, "txn"), [GROUP_DENIED]), ((READ, "group"), [INVALID_PRODUCER_ID_MAPPING])),
        coordinators,
    ),
    Ladder(
        "end-txn", 26, 3, lambda n: {"transactional_id": n.txn, "committed": True}, TOP_CODE,
        ((None, [TXN_DENIED]), ((WRITE, "txn"), [INVALID_PRODUCER_ID_MAPPING])),
        coordinators,
    ),
    Ladder(
        "txn-offset-commit", 28, 3,
        lambda n: {"transactional_id": n.txn, "group_id": n.group,
                   "topics": partitions(n, "topic", committed_offset=0)},
        PARTITION_CODES,
        ((None, [TXN_DENIED]), ((WRITE, "txn"), [GROUP_DENIED]), ((READ, "group"), [TOPIC_DENIED]),
         ((READ, "topic"), [INVALID_PRODUCER_ID_MAPPING])),
        coordinators,
    ),
    Ladder(
        "describe-transactions", 65, 0, lambda n: {"transactional_ids": [n.txn]}, described_transactions,
        ((None, [(TXN_DENIED, [])]), ((DESCRIBE, "txn"), [(NONE, [])]), ((DESCRIBE, "topic"), [(NONE, ["topic"])])),
        open_transaction,
    ),
    Ladder(
        "list-transactions", 66, 1, lambda n: {"state_filters": [], "producer_id_filters": [], "duration_filter": -1},
        lambda answer, n: [s for s in at("transaction_states.transactional_id")(answer, n) if s == n.txn],
        ((None, []), ((DESCRIBE, "txn"), ["txn"])),
        open_transaction,
    ),
    Ladder(
        "write-txn-markers", 27, 1, markers_body(4242), MARKER_CODES,
        ((None, [CLUSTER_DENIED]), ((CLUSTER_ACTION, "cluster"), [NONE])),
    ),
    Ladder(
        "write-txn-markers-alter", 27, 1, markers_body(4243), MARKER_CODES,
        ((None, [CLUSTER_DENIED]), ((ALTER, "cluster"), [NONE])),
    ),
    Ladder(
        "delete-groups", 42, 2, lambda n: {"groups_names": [n.group]}, at("results.error_code"),
        ((None, [GROUP_DENIED]), ((DELETE, "group"), [GROUP_ID_NOT_FOUND])),
    ),
    Ladder(
        "join-group", 11, 9, lambda n: {"group_id": n.group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                                        "member_id": "", "protocol_type": "consumer", "protocols": [
                                            {"name": "range", "metadata": b""}]},
        lambda answer, n: (answer["error_code"], len(answer["members"])),
        ((None, (GROUP_DENIED, 0)), ((READ, "group"), (MEMBER_ID_REQUIRED, 0))),
        coordinators,
    ),
    Ladder(
        "sync-group", 14, 5, lambda n: {"group_id": n.group, "generation_id": 1, "member_id": "m",
                                        "protocol_type": "consumer", "protocol_name": "range", "assignments": []},
        TOP_CODE, ((None, [GROUP_DENIED]), ((READ, "group"), [UNKNOWN_MEMBER])), coordinators,
    ),
    Ladder(
        "heartbeat", 12, 4, lambda n: {"group_id": n.group, "generation_id": 1, "member_id": "m"},
        TOP_CODE, ((None, [GROUP_DENIED]), ((READ, "group"), [UNKNOWN_MEMBER])), coordinators,
    ),
    Ladder(
        "leave-group", 13, 5, lambda n: {"group_id": n.group, "members": [{"member_id": "m"}]},
        at("error_code", "members.error_code"), ((None, [GROUP_DENIED]), ((READ, "group"), [NONE, UNKNOWN_MEMBER])),
        coordinators,
    ),
    Ladder(
        "offset-delete", 47, 0, lambda n: {"group_id": n.group, "topics": partitions(n, "topic")},
        at("error_code", "topics.partitions.error_code"),
        ((None, [GROUP_DENIED]), ((DELETE, "group"), [NONE, TOPIC_DENIED]), ((READ, "topic"), [NONE, NONE])),
        committed_offset,
    ),
    Ladder(
        "consumer-group-heartbeat", 68, 0, member_heartbeat, TOP_CODE,
        ((None, [GROUP_DENIED]), ((READ, "group"), [TOPIC_DENIED]), ((DESCRIBE, "topic"), [NONE])),
    ),
    Ladder(
        "consumer-group-describe", 69, 0, lambda n: {"group_ids": [n.group]}, described_groups,
        ((None, [(GROUP_DENIED, 0)]), ((DESCRIBE, "group"), [(TOPIC_DENIED, 0)]), ((DESCRIBE, "topic"), [(NONE, 1)])),
        joined_member,
    ),
    Ladder(
        "alter-configs", 33, 1, config_body(TOPIC, False), resource_errors,
        ((None, [(TOPIC_DENIED, TOPIC_MESSAGE)]), ((ALTER_CONFIGS, "topic"), [(NONE, None)])),
    ),
    Ladder(
        "incremental-alter-configs", 44, 1, config_body(TOPIC, True), resource_errors,
        ((None, [(TOPIC_DENIED, TOPIC_MESSAGE)]), ((ALTER_CONFIGS, "topic"), [(NONE, None)])),
    ),
    Ladder(
        "incremental-alter-broker-configs", 44, 1, config_body(CLUSTER, True), resource_errors,
        ((None, [(CLUSTER_DENIED, CLUSTER_MESSAGE)]),
         ((ALTER_CONFIGS, "cluster"), [(NONE, None)])),
    ),
    Ladder(  # a group's configs (KIP-848): ALTER_CONFIGS on the group, which need not exist
        "incremental-alter-group-configs", 44, 1, group_config_body(True), resource_errors,
        ((None, [(GROUP_DENIED, GROUP_MESSAGE)]), ((ALTER_CONFIGS, "cluster"), [(GROUP_DENIED, GROUP_MESSAGE)]),
         ((ALTER_CONFIGS, "group"), [(NONE, None)])),
    ),
    Ladder(
        "alter-group-configs", 33, 1, group_config_body(False), resource_errors,
        ((None, [(GROUP_DENIED, GROUP_MESSAGE)]), ((ALTER_CONFIGS, "group"), [(NONE, None)])),
    ),
    Ladder(
        "describe-group-configs", 32, 4,
        lambda n: {"resources": [{"resource_type": GROUP_CONFIGS, "resource_name": n.group,
                                  "configuration_keys": ["consumer.session.timeout.ms"]}]},
        resource_errors,
        ((None, [(GROUP_DENIED, GROUP_MESSAGE)]), ((DESCRIBE, "group"), [(GROUP_DENIED, GROUP_MESSAGE)]),
         ((DESCRIBE_CONFIGS, "group"), [(NONE, None)])),
    ),
    Ladder(  # ALTER_CONFIGS implies DESCRIBE_CONFIGS; DESCRIBE does not
        "describe-configs", 32, 4,
        lambda n: {"resources": [{"resource_type": TOPIC, "resource_name": n.topic,
                                  "configuration_keys": ["retention.ms"]}]},
        resource_errors,
        ((None, [(TOPIC_DENIED, TOPIC_MESSAGE)]), ((DESCRIBE, "topic"), [(TOPIC_DENIED, TOPIC_MESSAGE)]),
         ((ALTER_CONFIGS, "topic"), [(NONE, None)])),
    ),
    Ladder(
        "offset-for-leader-epoch", 23, 4, leader_epoch_body, PARTITION_CODES,
        ((None, [TOPIC_DENIED]), ((DESCRIBE, "topic"), [NONE])),
    ),
    Ladder(
        "offset-for-leader-epoch-replica", 23, 4, leader_epoch_body, PARTITION_CODES,
        ((None, [TOPIC_DENIED]), ((CLUSTER_ACTION, "cluster"), [NONE])),
    ),
    Ladder(  # READ, where the other topic views need DESCRIBE
        "describe-producers", 61, 0, lambda n: {"topics": [{"name": n.topic, "partition_indexes": [0]}]},
        PARTITION_CODES,
        ((None, [TOPIC_DENIED]), ((DESCRIBE, "topic"), [TOPIC_DENIED]), ((READ, "topic"), [NONE])),
    ),
    Ladder(
        "fetch", 1, 12, fetch_body(-1), FETCH_CODES,
        ((None, [NONE, TOPIC_DENIED]), ((READ, "topic"), [NONE, NONE])),
    ),
    Ladder(  # a follower needs CLUSTER_ACTION; READ is not enough
        "fetch-from-follower", 1, 12, fetch_body(1), FETCH_CODES,
        ((None, [NONE, TOPIC_DENIED]), ((READ, "topic"), [NONE, TOPIC_DENIED]),
         ((CLUSTER_ACTION, "cluster"), [NONE, NONE])),
    ),
    Ladder(
        "list-offsets", 2, 7, lambda n: {"replica_id": -1, "topics": partitions(n, "topic", timestamp=-1)},
        PARTITION_CODES,
        ((None, [TOPIC_DENIED]), ((DESCRIBE, "topic"), [NONE])),
    ),
    Ladder(
        "delete-records", 21, 2, lambda n: {"topics": partitions(n, "topic", offset=0), "timeout_ms": 5000},
        PARTITION_CODES,
        ((None, [TOPIC_DENIED]), ((DESCRIBE, "topic"), [TOPIC_DENIED]), ((DELETE, "topic"), [NONE])),
    ),
    Ladder(
        "create-partitions", 37, 3,
        lambda n: {"topics": [{"name": n.topic, "count": 2, "assignments": None}], "timeout_ms": 5000,
                   "validate_only": True},
        resource_errors,
        ((None, [(TOPIC_DENIED, None)]), ((ALTER, "topic"), [(NONE, None)])),
    ),
    Ladder(  # a topic the user may not DESCRIBE is refused whether it exists or not
        "delete-topics", 20, 6, lambda n: {"topics": [{"name": n.topic}, {"name": n.missing}], "timeout_ms": 5000},
        delete_topics_answer,
        ((None, [(TOPIC_DENIED, False)] * 2), ((DESCRIBE, "missing"), [(TOPIC_DENIED, False), (UNKNOWN_TOPIC, False)]),
         ((DESCRIBE, "topic"), [(TOPIC_DENIED, False), (UNKNOWN_TOPIC, False)]),
         ((DELETE, "topic"), [(NONE, True), (UNKNOWN_TOPIC, False)])),
    ),
    Ladder(
        "delete-topics-cluster", 20, 6, lambda n: {"topics": [{"name": n.topic}], "timeout_ms": 5000},
        delete_topics_answer,
        ((None, [(TOPIC_DENIED, False)]), ((DELETE, "cluster"), [(NONE, True)])),
    ),
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    users = (REGEX_USER, *(ladder.id for ladder in LADDERS))
    yield from acl_broker(tmp_path_factory.mktemp("acl-ladders") / "data", users)


def resolve(answer: Any, n: Names) -> Any:
    """An expected answer with the Names keys it mentions ("topic") replaced by the ladder's names."""
    if isinstance(answer, (list, tuple)):
        return type(answer)(resolve(item, n) for item in answer)
    return getattr(n, answer) if isinstance(answer, str) and answer in Names.__dataclass_fields__ else answer


@pytest.mark.parametrize("ladder", LADDERS, ids=lambda ladder: ladder.id)
def test_each_grant_moves_the_answer_one_check_further(broker: BrokerProcess, ladder: Ladder) -> None:
    n = Names.of(ladder.id)
    with login(broker, ADMIN) as admin:
        ladder.setup(admin, n)
    seen = []
    with login(broker, ladder.id) as conn:
        for granted, _ in ladder.rungs:
            if granted is not None:
                operation, key = granted
                grant(broker, ladder.id, *n.resource(key), operation)
            seen.append(ladder.answer(call(conn, ladder.api, ladder.version, ladder.body(n)), n))
    assert seen == [resolve(expected, n) for _, expected in ladder.rungs]


def test_a_regex_subscription_matches_only_the_topics_its_member_may_describe(broker: BrokerProcess) -> None:
    """Kafka 4.0 (KAFKA-18813): a regular expression is resolved with the rights of the member whose heartbeat asked."""
    n = Names.of("regex")
    with login(broker, ADMIN) as admin:
        topics(admin, n)
    grant(broker, REGEX_USER, GROUP, n.group, READ)
    grant(broker, REGEX_USER, TOPIC, n.topic, DESCRIBE)
    regex = f"{n.topic[:-9]}.*|{n.other}"  # both topics
    body = {**member_heartbeat(n), "member_id": unique("member"), "subscribed_topic_names": None,
            "subscribed_topic_regex": regex}
    with login(broker, REGEX_USER) as conn:
        answer = call(conn, HEARTBEAT, 1, body)
        assert answer["error_code"] == NONE
        body.update(member_id=answer["member_id"], member_epoch=answer["member_epoch"])
        deadline = time.monotonic() + 10
        while not (answer["assignment"] and answer["assignment"]["topic_partitions"]) and time.monotonic() < deadline:
            time.sleep(0.05)
            answer = call(conn, HEARTBEAT, 1, body)
            assert answer["error_code"] == NONE
            body["member_epoch"] = answer["member_epoch"]
    with login(broker, ADMIN) as admin:
        [group] = call(admin, DESCRIBE_GROUP, 0, {"group_ids": [n.group]})["groups"]
    [member] = group["members"]
    assert [t["topic_name"] for t in member["assignment"]["topic_partitions"]] == [n.topic]
