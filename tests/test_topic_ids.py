"""Topic ids across the protocol (KIP-516): Fetch v13+ with incremental sessions, Produce v13, OffsetCommit and
OffsetFetch v10, Metadata by id, DescribeTopicPartitions, and what a deleted and re-created topic's old id answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import RecordInput, build_batch

from minibroker.acls.operations import DESCRIBE, READ, WRITE, operation_bits
from minibroker.testing import Broker
from tests.aclutil import TOPIC, acl_broker, create_topics, grant, login, unique
from tests.clientutil import MIB, Deadline, RawConnection

PRODUCE, FETCH, METADATA, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 3, 8, 9
FIND_COORDINATOR, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 10, 19, 20, 75
ZERO_ID = bytes(16)
T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(transcript_enabled=True) as running:
        yield running


@pytest.fixture
def conn(broker: Broker) -> Iterator[RawConnection]:
    with RawConnection(broker.bootstrap_servers) as connection:
        yield connection


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def create(conn: RawConnection, name: str, partitions: int = 1) -> bytes:
    answer = call(conn, CREATE_TOPICS, 7, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": [],
    }], "timeout_ms": 5000, "validate_only": False})
    [topic] = answer["topics"]
    assert topic["error_code"] == ErrorCode.NONE
    return topic["topic_id"]


def delete(conn: RawConnection, name: str) -> None:
    answer = call(conn, DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": ZERO_ID}], "timeout_ms": 5000})
    assert answer["responses"][0]["error_code"] == ErrorCode.NONE


def batch(*values: bytes) -> bytes:
    return build_batch([RecordInput(b"k", value) for value in values], base_timestamp=T0)


def produce(conn: RawConnection, version: int, topic: str | bytes, partition: int, records: bytes) -> dict[str, Any]:
    """Produce one batch, naming the topic by name (v12-) or id (v13+); the partition's answer."""
    named = {"topic_id": topic} if version >= 13 else {"name": topic}
    answer = call(conn, PRODUCE, version, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {**named, "partition_data": [{"index": partition, "records": records}]}]})
    [topic_answer] = answer["responses"]
    assert topic_answer.get("topic_id" if version >= 13 else "name") == topic
    [partition_answer] = topic_answer["partition_responses"]
    return partition_answer


def fetch_body(version: int, topic: str | bytes, offsets: dict[int, int], session_id: int = 0, epoch: int = 0,
               forgotten: list[int] = ()) -> dict[str, Any]:
    key = "topic_id" if version >= 13 else "topic"
    partitions = [
        {"partition": index, "fetch_offset": offset, "partition_max_bytes": MIB, "current_leader_epoch": -1,
         "log_start_offset": -1, "last_fetched_epoch": -1}
        for index, offset in offsets.items()
    ]
    return {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 * MIB, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch, "rack_id": "",
        "topics": [{key: topic, "partitions": partitions}] if partitions else [],
        "forgotten_topics_data": [{key: topic, "partitions": list(forgotten)}] if forgotten else [],
    }


def summary(answer: dict[str, Any], version: int) -> dict[str, Any]:
    """What a fetch answered, without how the topic was named and which session id was drawn."""
    topics = [
        [{key: p[key] for key in ("partition_index", "error_code", "high_watermark", "log_start_offset", "records")}
         for p in t["partitions"]]
        for t in answer["responses"]
    ]
    return {"error_code": answer["error_code"], "session": answer["session_id"] != 0, "topics": topics}


def session_scenario(conn: RawConnection, version: int, name: str, topic: str | bytes) -> list[dict[str, Any]]:
    """A consumer's life in an incremental fetch session: a full fetch, catching up, new data on one partition, a
    forgotten partition, and closing the session; each step's answer summarised."""
    steps = []
    produce(conn, 12, name, 0, batch(b"a0", b"a1"))
    produce(conn, 12, name, 1, batch(b"b0"))
    first = call(conn, FETCH, version, fetch_body(version, topic, {0: 0, 1: 0}))
    session = first["session_id"]
    steps.append(summary(first, version))
    # Caught up: both partitions move to their ends; nothing changed, so nothing is answered.
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {0: 2, 1: 1}, session, 1)), version))
    produce(conn, 12, name, 1, batch(b"b1"))
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {}, session, 2)), version))
    produce(conn, 12, name, 0, batch(b"a2"))
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {1: 2}, session, 3, [0])), version))
    produce(conn, 12, name, 1, batch(b"b2"))
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {}, session, 4)), version))
    # A stale epoch, then closing the session (epoch -1), after which the id is unknown.
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {}, session, 4)), version))
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {1: 3}, session, -1)), version))
    steps.append(summary(call(conn, FETCH, version, fetch_body(version, topic, {}, session, 5)), version))
    return steps


@pytest.mark.parametrize("version", [13, 15, 16, 17, 18])
def test_fetch_by_id_in_a_session_answers_what_fetch_v12_answers(conn: RawConnection, topic_name: str, version: int) -> None:
    create(conn, f"{topic_name}-n", 2)
    topic_id = create(conn, f"{topic_name}-i", 2)
    by_name = session_scenario(conn, 12, f"{topic_name}-n", f"{topic_name}-n")
    by_id = session_scenario(conn, version, f"{topic_name}-i", topic_id)
    assert by_id == by_name
    steps = by_name
    assert steps[0]["session"] and [len(p) for p in steps[0]["topics"]] == [2]
    assert steps[1]["topics"] == []  # unchanged partitions are left out
    [[changed]] = steps[2]["topics"]
    assert changed["partition_index"] == 1 and changed["high_watermark"] == 2 and changed["records"]
    assert steps[3]["topics"] == []  # partition 0, which got data, was forgotten; 1 only moved its fetch offset
    [[only_one]] = steps[4]["topics"]
    assert only_one["partition_index"] == 1 and only_one["high_watermark"] == 3 and only_one["records"]
    assert steps[5] == {"error_code": ErrorCode.INVALID_FETCH_SESSION_EPOCH, "session": False, "topics": []}
    assert not steps[6]["session"] and steps[6]["error_code"] == ErrorCode.NONE
    assert steps[7] == {"error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session": False, "topics": []}


def test_a_session_keeps_the_kind_of_naming_it_began_with(conn: RawConnection, topic_name: str) -> None:
    topic_id = create(conn, topic_name)
    by_id = call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0}))
    assert by_id["session_id"] != 0
    by_name = call(conn, FETCH, 12, fetch_body(12, topic_name, {}, by_id["session_id"], 1))
    assert by_name["error_code"] == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR and by_name["responses"] == []


def test_produce_v13_by_id(broker: Broker, conn: RawConnection, topic_name: str) -> None:
    topic_id = create(conn, topic_name)
    answer = produce(conn, 13, topic_id, 0, batch(b"by id"))
    assert answer["error_code"] == ErrorCode.NONE and answer["base_offset"] == 0
    fetched = call(conn, FETCH, 12, fetch_body(12, topic_name, {0: 0}, epoch=-1))
    [[partition]] = [t["partitions"] for t in fetched["responses"]]
    assert partition["high_watermark"] == 1 and b"by id" in bytes(partition["records"])


def test_a_recreated_topic_has_a_new_id_and_the_old_one_is_unknown(conn: RawConnection, topic_name: str) -> None:
    old_id = create(conn, topic_name)
    produce(conn, 13, old_id, 0, batch(b"old"))
    session = call(conn, FETCH, 13, fetch_body(13, old_id, {0: 0}))["session_id"]
    delete(conn, topic_name)
    new_id = create(conn, topic_name)
    assert new_id not in (old_id, ZERO_ID)

    fetched = call(conn, FETCH, 13, fetch_body(13, old_id, {0: 0}, epoch=-1))
    [topic] = fetched["responses"]
    assert topic["topic_id"] == old_id and [p["error_code"] for p in topic["partitions"]] == [ErrorCode.UNKNOWN_TOPIC_ID]
    # The session still holds the old topic's partition under its old id: Kafka's ReplicaManager finds the name's log
    # with another id.
    incremental = call(conn, FETCH, 13, fetch_body(13, old_id, {}, session, 1))
    [[held]] = [t["partitions"] for t in incremental["responses"]]
    assert held["error_code"] == ErrorCode.INCONSISTENT_TOPIC_ID

    assert produce(conn, 13, old_id, 0, batch(b"lost"))["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
    assert produce(conn, 13, new_id, 0, batch(b"new"))["error_code"] == ErrorCode.NONE

    metadata = call(conn, METADATA, 13, {"topics": [{"name": None, "topic_id": old_id}, {"name": None, "topic_id": new_id}],
                                         "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert [(t["error_code"], t["name"]) for t in metadata["topics"]] == [
        (ErrorCode.UNKNOWN_TOPIC_ID, None), (ErrorCode.NONE, topic_name)]

    described = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": topic_name}], "response_partition_limit": 10,
                                                          "cursor": None})
    assert [(t["name"], t["topic_id"]) for t in described["topics"]] == [(topic_name, new_id)]

    fetched = call(conn, FETCH, 13, fetch_body(13, new_id, {0: 0}, epoch=-1))
    [[partition]] = [t["partitions"] for t in fetched["responses"]]
    assert partition["error_code"] == ErrorCode.NONE and partition["high_watermark"] == 1


def coordinator_ready(conn: RawConnection, group: str) -> None:
    deadline = Deadline()
    while deadline.left() > 0:
        answer = call(conn, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        if answer["coordinators"][0]["error_code"] == ErrorCode.NONE:
            return
    raise AssertionError("no group coordinator")


def test_offset_commit_and_fetch_v10_by_id(conn: RawConnection, topic_name: str) -> None:
    group = f"{topic_name}-group"
    topic_id = create(conn, topic_name, 2)
    unknown_id = bytes(range(16))
    coordinator_ready(conn, group)
    committed = call(conn, OFFSET_COMMIT, 10, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
        "retention_time_ms": -1, "topics": [
            {"topic_id": topic_id, "partitions": [
                {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": "m"},
                {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": -1, "committed_metadata": None},
            ]},
            {"topic_id": unknown_id, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": None},
            ]},
        ]})
    assert [(t["topic_id"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]]) for t in committed["topics"]] == [
        (topic_id, [(0, ErrorCode.NONE), (1, ErrorCode.NONE)]), (unknown_id, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]

    def offsets(topics: list[dict[str, Any]] | None) -> list[tuple[bytes, list[tuple[int, int, int]]]]:
        answer = call(conn, OFFSET_FETCH, 10, {"require_stable": True, "groups": [
            {"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}]})
        [found] = answer["groups"]
        assert found["error_code"] == ErrorCode.NONE
        return [(t["topic_id"], [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in t["partitions"]])
                for t in found["topics"]]

    assert offsets([{"topic_id": topic_id, "partition_indexes": [0, 1]}, {"topic_id": unknown_id, "partition_indexes": [3]}]) == [
        (topic_id, [(0, 5, ErrorCode.NONE), (1, 7, ErrorCode.NONE)]), (unknown_id, [(3, -1, ErrorCode.UNKNOWN_TOPIC_ID)])]
    assert offsets(None) == [(topic_id, [(0, 5, ErrorCode.NONE), (1, 7, ErrorCode.NONE)])]


def test_describe_topic_partitions_pages_by_partitions(conn: RawConnection, topic_name: str) -> None:
    """Topics in name order; a page ends after ResponsePartitionLimit partitions, its cursor where the next begins,
    in the middle of a topic or at the next topic's first partition."""
    names = [f"{topic_name}-a", f"{topic_name}-b", f"{topic_name}-c"]
    ids = {name: create(conn, name, count) for name, count in zip(names, (3, 2, 1))}
    request = [{"name": name} for name in reversed(names)] + [{"name": f"{topic_name}-missing"}]
    pages = []
    cursor = None
    while True:
        answer = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": request, "response_partition_limit": 2, "cursor": cursor})
        pages.append([(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]]) for t in answer["topics"]])
        for topic in answer["topics"]:
            if topic["error_code"] == ErrorCode.NONE:
                assert topic["topic_id"] == ids[topic["name"]] and topic["topic_authorized_operations"] > 0
                assert all(p["eligible_leader_replicas"] == [] and p["last_known_elr"] == [] for p in topic["partitions"])
        cursor = answer["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 10
    a, b, c, missing = names + [f"{topic_name}-missing"]
    assert pages == [
        [(a, 0, [0, 1])],
        [(a, 0, [2]), (b, 0, [0])],
        [(b, 0, [1]), (c, 0, [0])],
        [(missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])],
    ]


def test_confluent_consumer_fetches_by_topic_id(broker: Broker, conn: RawConnection, topic_name: str) -> None:
    """librdkafka switches to Fetch v13+ once the broker advertises it and Metadata gave it the topic's id."""
    create(conn, topic_name, 2)
    for partition in (0, 1):
        produce(conn, 12, topic_name, partition, batch(b"x", b"y"))
    seq = broker.core.transcript.next_seq
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"{topic_name}-g",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic_name, 0, 0), TopicPartition(topic_name, 1, 0)])
        values = []
        deadline = Deadline()
        while len(values) < 4 and deadline.left() > 0:
            message = consumer.poll(min(deadline.left(), 1.0))
            if message is not None and message.error() is None:
                values.append((message.partition(), message.value()))
    finally:
        consumer.close()
    assert sorted(values) == [(0, b"x"), (0, b"y"), (1, b"x"), (1, b"y")]
    fetches = {e["version"] for e in broker.core.transcript.since(seq - 1) if e["api_key"] == FETCH}
    assert fetches and min(fetches) >= 13, fetches


def test_describe_topic_partitions_refuses_a_cursor_outside_the_request(conn: RawConnection, topic_name: str) -> None:
    create(conn, topic_name)
    for cursor in ({"topic_name": f"{topic_name}-other", "partition_index": 0}, {"topic_name": topic_name, "partition_index": -1}):
        answer = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": topic_name}], "response_partition_limit": 5,
                                                           "cursor": cursor})
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(topic_name, ErrorCode.INVALID_REQUEST)]


def test_list_offsets_v11_special_timestamps(conn: RawConnection, topic_name: str) -> None:
    """Without tiered storage the latest tiered (-5, v9) and earliest pending upload (-6, v11) offsets are -1; a
    special timestamp older than its version answers UNSUPPORTED_VERSION, as Kafka's ReplicaManager does."""
    create(conn, topic_name)
    produce(conn, 12, topic_name, 0, batch(b"a", b"b"))

    def offset(version: int, timestamp: int) -> tuple[int, int]:
        answer = call(conn, 2, version, {"replica_id": -1, "isolation_level": 0, "timeout_ms": 5000, "topics": [
            {"name": topic_name, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
        [[partition]] = [t["partitions"] for t in answer["topics"]]
        return partition["error_code"], partition["offset"]

    assert offset(11, -1) == (ErrorCode.NONE, 2)
    assert offset(11, -4) == (ErrorCode.NONE, 0)
    assert offset(11, -5) == (ErrorCode.NONE, -1)
    assert offset(11, -6) == (ErrorCode.NONE, -1)
    assert offset(10, -6)[0] == ErrorCode.UNSUPPORTED_VERSION
    assert offset(7, -4)[0] == ErrorCode.UNSUPPORTED_VERSION
    assert offset(11, -7)[0] == ErrorCode.UNSUPPORTED_VERSION


def test_a_full_session_cache_evicts_only_stale_or_smaller_sessions(topic_name: str) -> None:
    """max.incremental.fetch.session.cache.slots bounds the sessions (Kafka's FetchSessionCache): a new session takes
    the slot of one unused for 2 minutes, or of one with fewer partitions that was already 2 minutes old when last
    used; otherwise it gets none (id 0)."""
    with Broker(max_incremental_fetch_session_cache_slots=1, clock="virtual") as small, \
            RawConnection(small.bootstrap_servers) as conn:
        topic_id = create(conn, topic_name, 2)
        first = call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0}))["session_id"]
        assert first != 0
        assert call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0, 1: 0}))["session_id"] == 0  # too young to go
        small.advance(100_000)
        assert call(conn, FETCH, 13, fetch_body(13, topic_id, {}, first, 1))["error_code"] == ErrorCode.NONE
        small.advance(30_000)  # used again at 130 s of age: evictable from now on, though not stale
        assert call(conn, FETCH, 13, fetch_body(13, topic_id, {}, first, 2))["error_code"] == ErrorCode.NONE
        assert call(conn, FETCH, 13, fetch_body(13, topic_id, {1: 0}))["session_id"] == 0  # not larger
        bigger = call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0, 1: 0}))["session_id"]
        assert bigger not in (0, first)
        assert call(conn, FETCH, 13, fetch_body(13, topic_id, {}, first, 3))["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        small.advance(120_001)  # stale: any new session takes its slot
        third = call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0}))["session_id"]
        assert third not in (0, bigger)


@pytest.mark.parametrize("version", [15, 16])
def test_fetch_from_another_node_names_the_leader_from_v16(topic_name: str, version: int) -> None:
    """KIP-951 in Fetch: from v16 NOT_LEADER_OR_FOLLOWER comes with the partition's current leader and its endpoint
    (asked of a node that is not a replica: a follower serves consumers, KIP-392)."""
    with Broker(nodes=3) as cluster, RawConnection(cluster.bootstrap_servers) as conn:
        answer = call(conn, CREATE_TOPICS, 7, {"topics": [{
            "name": topic_name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": [],
        }], "timeout_ms": 5000, "validate_only": False})
        topic_id = answer["topics"][0]["topic_id"]
        described = call(conn, METADATA, 12, {"topics": [{"name": topic_name, "topic_id": ZERO_ID}],
                                              "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        [partition] = described["topics"][0]["partitions"]
        follower = next(b for b in described["brokers"] if b["node_id"] != partition["leader_id"])
        with RawConnection(f"{follower['host']}:{follower['port']}") as other:
            fetched = call(other, FETCH, version, fetch_body(version, topic_id, {0: 0}, epoch=-1))
    [[result]] = [t["partitions"] for t in fetched["responses"]]
    assert result["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    if version < 16:
        assert result["current_leader"].get("leader_id", -1) == -1 and not fetched["node_endpoints"]
        return
    assert result["current_leader"] == {"leader_id": partition["leader_id"], "leader_epoch": partition["leader_epoch"]}
    leader = next(b for b in described["brokers"] if b["node_id"] == partition["leader_id"])
    assert [(e["node_id"], e["host"], e["port"]) for e in fetched["node_endpoints"]] == [
        (leader["node_id"], leader["host"], leader["port"])]


def test_transcript_and_faults_name_topics_given_by_id(broker: Broker, conn: RawConnection, topic_name: str) -> None:
    """A fault naming a topic meets Fetch v13 and Produce v13, which name it by id, and the transcript names it."""
    topic_id = create(conn, topic_name)
    seq = broker.core.transcript.next_seq
    fault = broker.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", topic=topic_name, count=1)
    try:
        assert produce(conn, 13, topic_id, 0, batch(b"v"))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert produce(conn, 13, topic_id, 0, batch(b"v"))["error_code"] == ErrorCode.NONE
    finally:
        broker.clear_faults(fault["id"])
    fetched = call(conn, FETCH, 13, fetch_body(13, topic_id, {0: 0}, epoch=-1))
    assert fetched["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
    entries = [e for e in broker.core.transcript.since(seq - 1) if e["api_key"] in (PRODUCE, FETCH)]
    assert [(e["api"], e["version"], e["partitions"]) for e in entries] == [
        ("Produce", 13, {topic_name: [0]}), ("Produce", 13, {topic_name: [0]}), ("Fetch", 13, {topic_name: [0]})]
    assert entries[0]["errors"] == [{"topic": topic_name, "partition": 0, "error": "NOT_LEADER_OR_FOLLOWER"}]
    assert [b["topic"] for e in entries for b in e.get("request_batches", []) + e.get("response_batches", [])] == [
        topic_name] * 3


def test_topics_given_by_id_are_authorized_by_name(tmp_path_factory: pytest.TempPathFactory) -> None:
    """With the authorizer on, a topic named by id needs what its name needs: READ to fetch, WRITE to produce, and
    DescribeTopicPartitions answers a named topic the principal may not DESCRIBE with TOPIC_AUTHORIZATION_FAILED and
    no id, after the others, and leaves it out of an all-topics answer."""
    brokers = acl_broker(tmp_path_factory.mktemp("topic-ids-acl") / "data", ("alice",))
    proc = next(brokers)
    try:
        shown, hidden = unique("shown"), unique("hidden")
        with login(proc, "admin") as admin:
            ids = {t["name"]: t["topic_id"] for t in create_topics(admin, shown, hidden)}
        for operation in (DESCRIBE, READ, WRITE):
            grant(proc, "alice", TOPIC, shown, operation)
        with login(proc, "alice") as conn:
            described = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {
                "topics": [{"name": hidden}, {"name": shown}], "response_partition_limit": 10, "cursor": None})
            assert [(t["name"], t["error_code"], t["topic_id"]) for t in described["topics"]] == [
                (shown, ErrorCode.NONE, ids[shown]), (hidden, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ZERO_ID)]
            assert described["topics"][0]["topic_authorized_operations"] == operation_bits(DESCRIBE, READ, WRITE)
            everything = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [], "response_partition_limit": 10, "cursor": None})
            assert [t["name"] for t in everything["topics"]] == [shown]
            for name, error in ((shown, ErrorCode.NONE), (hidden, ErrorCode.TOPIC_AUTHORIZATION_FAILED)):
                assert produce(conn, 13, ids[name], 0, batch(b"v"))["error_code"] == error
                fetched = call(conn, FETCH, 13, fetch_body(13, ids[name], {0: 0}, epoch=-1))
                assert [p["error_code"] for t in fetched["responses"] for p in t["partitions"]] == [error]
    finally:
        brokers.close()  # stops the broker


def test_describe_topic_partitions_of_every_topic_pages_through_all(conn: RawConnection, topic_name: str) -> None:
    """No topics named: every topic, in name order, each partition once across the pages."""
    create(conn, f"{topic_name}-x", 3)
    create(conn, f"{topic_name}-y", 2)
    listed = call(conn, METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                       "include_topic_authorized_operations": False})
    expected = sorted((t["name"], p["partition_index"]) for t in listed["topics"] for p in t["partitions"])
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(len(expected)):
        answer = call(conn, DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [], "response_partition_limit": 2, "cursor": cursor})
        page = [(t["name"], p["partition_index"]) for t in answer["topics"] for p in t["partitions"]]
        assert 1 <= len(page) <= 2
        seen += page
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert seen == expected
