"""The request versions Kafka 4 removed (KIP-896), served under ``--kafka-version`` as the emulated release served
them, over real TCP: raw requests at old versions against broker processes emulating 3.9 (a KRaft broker) and 2.8
(a ZooKeeper-mode broker), answers checked field by field; without ``--kafka-version`` they stay refused."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.messages import RESPONSES
from minibroker.protocol.schema import Field, in_range, snake_case

from minibroker.config.releases import served_by_release
from minibroker.handlers import HANDLERS, OLDEST
from minibroker.handlers.emulation import emulated_apis
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection, confluent_create_topic, confluent_produce, make_messages

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 3, 8, 9
FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS = 18, 19, 20, 23, 32
DESCRIBE_LOG_DIRS = 35
LATEST, EARLIEST = -1, -2
TOPIC_RESOURCE, DEFAULT_CONFIG = 2, 5


def start(path: Path, *settings: str) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(path, *settings)
    try:
        yield proc.start()
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def kafka39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from start(tmp_path_factory.mktemp("kafka39") / "data", "kafka.version=3.9")


@pytest.fixture(scope="module")
def kafka28(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from start(tmp_path_factory.mktemp("kafka28") / "data", "kafka.version=2.8")


def call(bootstrap: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """The answer as the version puts it on the wire: the fields of other versions (decoded as defaults) left out."""
    with RawConnection(bootstrap) as conn:
        correlation_id, answer = decode_response(api_key, version, conn.request(api_key, version, body, 17))
    assert correlation_id == 17
    return on_wire(RESPONSES[api_key].fields, version, answer)


def on_wire(fields: tuple[Field, ...], version: int, value: Any) -> Any:
    if isinstance(value, list):
        return [on_wire(fields, version, item) for item in value]
    if not isinstance(value, dict):
        return bytes(value) if isinstance(value, memoryview) else value
    return {snake_case(f.name): on_wire(f.fields, version, value[snake_case(f.name)])
            for f in fields if in_range(version, f.versions)}


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    answer = call(bootstrap, API_VERSIONS, 3, {"client_software_name": "legacy-test", "client_software_version": "1"})
    assert answer["error_code"] == ErrorCode.NONE
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in answer["api_keys"]}


def new_topic(bootstrap: str, partitions: int = 1, records: int = 0) -> str:
    name = f"legacy-{uuid.uuid4().hex[:8]}"
    confluent_create_topic(bootstrap, name, partitions)
    if records:
        confluent_produce(bootstrap, name, make_messages(records), partitioner="murmur2")
    return name


def list_offsets_v0(bootstrap: str, topic: str, timestamp: int, max_num: int, partition: int = 0,
                    replica: int = -1) -> dict[str, Any]:
    body = {"replica_id": replica, "topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "timestamp": timestamp, "max_num_offsets": max_num},
    ]}]}
    answer = call(bootstrap, LIST_OFFSETS, 0, body)
    [topic_answer] = answer["topics"]
    assert topic_answer["name"] == topic
    [partition_answer] = topic_answer["partitions"]
    assert partition_answer["partition_index"] == partition
    return partition_answer


# ---- the table ----


def releases_table(release: str) -> dict[int, tuple[int, int]]:
    """The release's ranges of the APIs minibroker serves, exactly: old versions included, newest ones too."""
    served = served_by_release()[release]
    return {key: served[key] for key in HANDLERS if key in served}


@pytest.mark.parametrize("release", ["2.1", "2.8", "3.3", "3.9"])
def test_the_emulated_table_is_the_releases_own(release: str) -> None:
    """Every API minibroker serves is advertised at the release's range, its old versions included."""
    table = {key: (h.min_version, h.max_version) for key, h in emulated_apis(HANDLERS, release).items()}
    assert table == releases_table(release)


def test_old_minimums_are_kafka_3_9s() -> None:
    """Written down from Kafka 3.9's ApiVersions answer (its protocol guide), independently of the table."""
    table = {key: (h.min_version, h.max_version) for key, h in emulated_apis(HANDLERS, "3.9").items()}
    assert table[PRODUCE] == (0, 11) and table[FETCH] == (0, 17) and table[LIST_OFFSETS] == (0, 9)
    assert table[OFFSET_COMMIT] == (0, 9) and table[OFFSET_FETCH] == (0, 9) and table[CREATE_TOPICS] == (0, 7)
    assert table[DELETE_TOPICS] == (0, 6) and table[DESCRIBE_CONFIGS] == (0, 4) and table[DESCRIBE_LOG_DIRS] == (0, 4)
    assert table[OFFSET_FOR_LEADER_EPOCH] == (0, 4) and table[JOIN_GROUP] == (0, 9)


def test_without_emulation_the_table_keeps_kafka_4s_minimums() -> None:
    for key, oldest in OLDEST.items():
        assert HANDLERS[key].min_version > oldest, key
    assert emulated_apis(HANDLERS, "4.0")[PRODUCE].min_version == 3, "4.0 itself served Produce from v3"


def test_every_handler_module_registers_the_oldest_table() -> None:
    import importlib

    from minibroker.handlers.registry import REGISTERED_OLDEST

    for handler in HANDLERS.values():
        importlib.import_module(handler.module)
    assert REGISTERED_OLDEST == OLDEST


def test_api_versions_is_the_releases_table(kafka39: BrokerProcess, kafka28: BrokerProcess) -> None:
    for proc, release in ((kafka39, "3.9"), (kafka28, "2.8")):
        assert advertised(proc.bootstrap) == releases_table(release)


def test_old_versions_stay_refused_without_emulation(broker: BrokerProcess) -> None:
    """As today: a version below Kafka 4's minimum closes the connection."""
    ranges = advertised(broker.bootstrap)
    assert ranges[LIST_OFFSETS] == (1, 11) and ranges[OFFSET_COMMIT][0] == 2 and ranges[PRODUCE][0] == 3
    body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1},
    ]}]}
    from minibroker.protocol.frames import encode_request

    with RawConnection(broker.bootstrap) as conn:
        conn.send(encode_request(LIST_OFFSETS, 0, 3, "legacy-test", body))
        assert conn.closed_by_peer(within=10.0)


# ---- ListOffsets v0 ----


def test_list_offsets_v0_latest_and_earliest(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap, records=25)
    assert list_offsets_v0(kafka39.bootstrap, topic, LATEST, 1) == {
        "partition_index": 0, "error_code": ErrorCode.NONE, "old_style_offsets": [25],
    }
    assert list_offsets_v0(kafka39.bootstrap, topic, EARLIEST, 1)["old_style_offsets"] == [0]
    # Every offset the log knows, newest first: the log end (the non-empty active segment) then its base offset.
    assert list_offsets_v0(kafka39.bootstrap, topic, LATEST, 10)["old_style_offsets"] == [25, 0]
    assert list_offsets_v0(kafka39.bootstrap, topic, EARLIEST, 10)["old_style_offsets"] == [0]
    assert list_offsets_v0(kafka39.bootstrap, topic, LATEST, 0)["old_style_offsets"] == []


def test_list_offsets_v0_by_time_looks_at_segment_modification_times(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap, records=5)
    future = int(time.time() * 1000) + 3_600_000
    assert list_offsets_v0(kafka39.bootstrap, topic, future, 10)["old_style_offsets"] == [5, 0]
    assert list_offsets_v0(kafka39.bootstrap, topic, 1, 10) == {
        "partition_index": 0, "error_code": ErrorCode.NONE, "old_style_offsets": [],
    }


def test_list_offsets_v0_of_an_empty_partition_and_of_unknown_ones(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap)
    assert list_offsets_v0(kafka39.bootstrap, topic, LATEST, 5)["old_style_offsets"] == [0]
    assert list_offsets_v0(kafka39.bootstrap, topic, 0, 1, partition=7) == {
        "partition_index": 7, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "old_style_offsets": [],
    }
    assert list_offsets_v0(kafka39.bootstrap, "no-such-topic", LATEST, 1)["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_list_offsets_v1_is_still_one_offset(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap, records=3)
    body = {"replica_id": -1, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": LATEST}]}]}
    [[answer]] = [t["partitions"] for t in call(kafka39.bootstrap, LIST_OFFSETS, 1, body)["topics"]]
    assert (answer["error_code"], answer["timestamp"], answer["offset"]) == (ErrorCode.NONE, -1, 3)


# ---- offsets ----


def commit(bootstrap: str, version: int, group: str, topic: str, offset: int, **extra: Any) -> dict[str, Any]:
    partition = {"partition_index": 0, "committed_offset": offset, "committed_metadata": "meta", **extra}
    body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [partition]}]}
    return call(bootstrap, OFFSET_COMMIT, version, body)


def fetch_offset(bootstrap: str, version: int, group: str, topic: str) -> dict[str, Any]:
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
    [[answer]] = [t["partitions"] for t in call(bootstrap, OFFSET_FETCH, version, body)["topics"]]
    return answer


def test_offset_commit_v1_and_fetch_v1(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap, records=10)
    assert call(kafka39.bootstrap, FIND_COORDINATOR, 0, {"key": "g-v1"})["error_code"] == ErrorCode.NONE
    answer = commit(kafka39.bootstrap, 1, "g-v1", topic, 7, commit_timestamp=1_600_000_000_000)
    assert answer == {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "error_code": ErrorCode.NONE}]}]}
    assert fetch_offset(kafka39.bootstrap, 1, "g-v1", topic) == {
        "partition_index": 0, "committed_offset": 7, "metadata": "meta", "error_code": ErrorCode.NONE,
    }


def test_a_kraft_release_refuses_zookeeper_offsets(kafka39: BrokerProcess) -> None:
    """3.9's broker has no ZooKeeper: OffsetCommit v0 and OffsetFetch v0 answer UNSUPPORTED_VERSION."""
    topic = new_topic(kafka39.bootstrap)
    assert commit(kafka39.bootstrap, 0, "g-v0", topic, 3) == {"topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION}]},
    ]}
    assert fetch_offset(kafka39.bootstrap, 0, "g-v0", topic) == {
        "partition_index": 0, "committed_offset": -1, "metadata": "", "error_code": ErrorCode.UNSUPPORTED_VERSION,
    }
    # A commit of unknown partitions only is answered before the version matters.
    assert commit(kafka39.bootstrap, 0, "g-v0", "no-such-topic", 3)["topics"][0]["partitions"][0]["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_a_zookeeper_release_keeps_v0_offsets_apart(kafka28: BrokerProcess) -> None:
    """2.8 kept v0 commits in ZooKeeper: OffsetFetch v0 reads them (without metadata), the coordinator's versions
    do not, and they outlive a restart."""
    topic = new_topic(kafka28.bootstrap)
    assert commit(kafka28.bootstrap, 0, "g-zk", topic, 4)["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    assert fetch_offset(kafka28.bootstrap, 0, "g-zk", topic) == {
        "partition_index": 0, "committed_offset": 4, "metadata": "", "error_code": ErrorCode.NONE,
    }
    assert fetch_offset(kafka28.bootstrap, 1, "g-zk", topic)["committed_offset"] == -1
    kafka28.restart()
    assert fetch_offset(kafka28.bootstrap, 0, "g-zk", topic)["committed_offset"] == 4
    never = fetch_offset(kafka28.bootstrap, 0, "g-other", topic)
    assert (never["committed_offset"], never["error_code"]) == (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


# ---- groups, metadata, admin ----


def test_a_classic_group_at_version_0(kafka28: BrokerProcess) -> None:
    """FindCoordinator, JoinGroup (no rebalance timeout: the session timeout stands for it), SyncGroup, Heartbeat
    and LeaveGroup, all v0."""
    bootstrap = kafka28.bootstrap
    found = call(bootstrap, FIND_COORDINATOR, 0, {"key": "g-join"})
    assert found["error_code"] == ErrorCode.NONE and found["port"] == int(bootstrap.rsplit(":", 1)[1])
    join = {"group_id": "g-join", "session_timeout_ms": 10_000, "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}]}
    joined = call(bootstrap, JOIN_GROUP, 0, join)
    assert joined["error_code"] == ErrorCode.NONE and joined["generation_id"] == 1
    assert joined["protocol_name"] == "range" and joined["leader"] == joined["member_id"] != ""
    assert [m["member_id"] for m in joined["members"]] == [joined["member_id"]]
    member = joined["member_id"]
    synced = call(bootstrap, SYNC_GROUP, 0, {"group_id": "g-join", "generation_id": 1, "member_id": member,
                                             "assignments": [{"member_id": member, "assignment": b"\x01\x02"}]})
    assert (synced["error_code"], synced["assignment"]) == (ErrorCode.NONE, b"\x01\x02")
    beat = call(bootstrap, HEARTBEAT, 0, {"group_id": "g-join", "generation_id": 1, "member_id": member})
    assert beat == {"error_code": ErrorCode.NONE}
    assert call(bootstrap, LEAVE_GROUP, 0, {"group_id": "g-join", "member_id": member}) == {"error_code": ErrorCode.NONE}


def test_metadata_v0_empty_means_every_topic(kafka28: BrokerProcess) -> None:
    topic = new_topic(kafka28.bootstrap, partitions=2)
    answer = call(kafka28.bootstrap, METADATA, 0, {"topics": []})
    [broker] = answer["brokers"]
    assert broker["port"] == int(kafka28.bootstrap.rsplit(":", 1)[1])
    [mine] = [t for t in answer["topics"] if t["name"] == topic]
    assert mine["error_code"] == ErrorCode.NONE
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"]) for p in mine["partitions"]] == [
        (0, broker["node_id"], [broker["node_id"]], [broker["node_id"]]),
        (1, broker["node_id"], [broker["node_id"]], [broker["node_id"]]),
    ]


def test_create_and_delete_topics_v0(kafka39: BrokerProcess) -> None:
    name = f"legacy-admin-{uuid.uuid4().hex[:6]}"
    created = call(kafka39.bootstrap, CREATE_TOPICS, 0, {"topics": [
        {"name": name, "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []},
    ], "timeout_ms": 10_000})
    assert created == {"topics": [{"name": name, "error_code": ErrorCode.NONE}]}
    again = call(kafka39.bootstrap, CREATE_TOPICS, 1, {"topics": [
        {"name": name, "num_partitions": 3, "replication_factor": 1, "assignments": [], "configs": []},
    ], "timeout_ms": 10_000, "validate_only": False})
    assert again["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS and again["topics"][0]["error_message"]
    metadata = call(kafka39.bootstrap, METADATA, 0, {"topics": [{"name": name}]})
    assert len(metadata["topics"][0]["partitions"]) == 3
    deleted = call(kafka39.bootstrap, DELETE_TOPICS, 0, {"topic_names": [name, "no-such-topic"], "timeout_ms": 10_000})
    assert deleted == {"responses": [
        {"name": name, "error_code": ErrorCode.NONE},
        {"name": "no-such-topic", "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION},
    ]}


def test_describe_configs_v0_says_which_values_are_defaults(kafka39: BrokerProcess) -> None:
    topic = f"legacy-configs-{uuid.uuid4().hex[:6]}"
    created = call(kafka39.bootstrap, CREATE_TOPICS, 0, {"topics": [
        {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": [{"name": "retention.ms", "value": "123456"}]},
    ], "timeout_ms": 10_000})
    assert created["topics"][0]["error_code"] == ErrorCode.NONE
    answer = call(kafka39.bootstrap, DESCRIBE_CONFIGS, 0, {"resources": [
        {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": ["retention.ms", "segment.ms"]},
    ]})
    [result] = answer["results"]
    assert (result["error_code"], result["resource_name"]) == (ErrorCode.NONE, topic)
    entries = {c["name"]: (c["value"], c["is_default"], c["read_only"]) for c in result["configs"]}
    assert entries == {"retention.ms": ("123456", False, False), "segment.ms": ("604800000", True, False)}


def test_describe_log_dirs_and_offset_for_leader_epoch_v0(kafka39: BrokerProcess) -> None:
    topic = new_topic(kafka39.bootstrap, records=4)
    dirs = call(kafka39.bootstrap, DESCRIBE_LOG_DIRS, 0, {"topics": [{"topic": topic, "partitions": [0]}]})
    [log_dir] = dirs["results"]
    assert log_dir["error_code"] == ErrorCode.NONE
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]] == [(topic, [0])]
    epochs = call(kafka39.bootstrap, OFFSET_FOR_LEADER_EPOCH, 0, {"topics": [
        {"topic": topic, "partitions": [{"partition": 0, "leader_epoch": 0}]},
    ]})
    [[answer]] = [t["partitions"] for t in epochs["topics"]]
    assert (answer["error_code"], answer["end_offset"]) == (ErrorCode.NONE, 4)


# ---- Produce v0-2 and Fetch v0-3: framing and version gates (message sets of magic 0/1: protocol/message_sets) ----


def produce(bootstrap: str, version: int, topic: str, records: bytes, acks: int = 1) -> dict[str, Any]:
    body = {"acks": acks, "timeout_ms": 10_000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]},
    ]}
    return call(bootstrap, PRODUCE, version, body)


def test_produce_v0_to_v2_answer_as_their_versions(kafka39: BrokerProcess) -> None:
    """Kafka 3.9 checked the batch format only from v3: a v2 batch produced at v0-2 is appended. v0 answers no
    throttle time, v1 adds it, v2 the log append time (-1: CreateTime)."""
    from minibroker.protocol.records import build_batch

    topic = new_topic(kafka39.bootstrap)
    assert produce(kafka39.bootstrap, 0, topic, build_batch([(b"k", b"v0")])) == {"responses": [
        {"name": topic, "partition_responses": [{"index": 0, "error_code": ErrorCode.NONE, "base_offset": 0}]},
    ]}
    assert produce(kafka39.bootstrap, 1, topic, build_batch([(b"k", b"v1")])) == {"responses": [
        {"name": topic, "partition_responses": [{"index": 0, "error_code": ErrorCode.NONE, "base_offset": 1}]},
    ], "throttle_time_ms": 0}
    assert produce(kafka39.bootstrap, 2, topic, build_batch([(b"k", b"v2")])) == {"responses": [
        {"name": topic, "partition_responses": [
            {"index": 0, "error_code": ErrorCode.NONE, "base_offset": 2, "log_append_time_ms": -1},
        ]},
    ], "throttle_time_ms": 0}
    assert list_offsets_v0(kafka39.bootstrap, topic, LATEST, 1)["old_style_offsets"] == [3]


def test_fetch_v0_and_v3_framing(kafka39: BrokerProcess) -> None:
    """Fetch v0 has no throttle time and v0-3 no isolation level, log start offset or aborted transactions."""
    topic = new_topic(kafka39.bootstrap)
    request = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]},
    ]}
    empty = {"partition_index": 0, "error_code": ErrorCode.NONE, "high_watermark": 0, "records": b""}
    assert call(kafka39.bootstrap, FETCH, 0, request) == {"responses": [{"topic": topic, "partitions": [empty]}]}
    assert call(kafka39.bootstrap, FETCH, 3, request) == {
        "throttle_time_ms": 0, "responses": [{"topic": topic, "partitions": [empty]}],
    }
    past = {**request, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1 << 20}]},
    ]}
    [[answer]] = [t["partitions"] for t in call(kafka39.bootstrap, FETCH, 1, past)["responses"]]
    assert (answer["error_code"], answer["high_watermark"]) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)


def test_acl_apis_v0_see_literal_patterns_only(tmp_path: Path) -> None:
    """ACL APIs v0 predate pattern types (KIP-290): their resources are LITERAL, so a v0 describe or delete leaves a
    PREFIXED binding alone."""
    from tests.aclutil import ADMIN, acl_broker, login

    topic, read, allow, any_ = 2, 3, 3, 1
    literal = {"resource_type": topic, "resource_name": "orders", "principal": "User:alice", "host": "*",
               "operation": read, "permission_type": allow}
    for proc in acl_broker(tmp_path / "data", [], "kafka.version=2.8"):
        with login(proc, ADMIN) as conn:
            def ask(api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
                _, answer = decode_response(api_key, version, conn.request(api_key, version, body, 5))
                return on_wire(RESPONSES[api_key].fields, version, answer)

            assert ask(30, 0, {"creations": [literal]}) == {
                "throttle_time_ms": 0, "results": [{"error_code": ErrorCode.NONE, "error_message": None}],
            }
            prefixed = {**literal, "resource_name": "ord", "resource_pattern_type": 4}
            assert ask(30, 1, {"creations": [prefixed]})["results"][0]["error_code"] == ErrorCode.NONE
            described = ask(29, 0, {"resource_type_filter": any_, "resource_name_filter": None,
                                    "principal_filter": None, "host_filter": None, "operation": any_,
                                    "permission_type": any_})
            assert described == {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                                 "resources": [{"resource_type": topic, "resource_name": "orders", "acls": [
                                     {"principal": "User:alice", "host": "*", "operation": read,
                                      "permission_type": allow},
                                 ]}]}
            deleted = ask(31, 0, {"filters": [{"resource_type_filter": any_, "resource_name_filter": None,
                                               "principal_filter": None, "host_filter": None, "operation": any_,
                                               "permission_type": any_}]})
            assert deleted == {"throttle_time_ms": 0, "filter_results": [
                {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": [
                    {"error_code": ErrorCode.NONE, "error_message": None, **literal},
                ]},
            ]}
            left = ask(29, 1, {"resource_type_filter": any_, "resource_name_filter": None, "pattern_type_filter": 1,
                               "principal_filter": None, "host_filter": None, "operation": any_,
                               "permission_type": any_})
            assert [(r["resource_name"], r["pattern_type"]) for r in left["resources"]] == [("ord", 4)]
