"""ShareFetch and ShareAcknowledge over TCP with raw requests: acquiring, acknowledging, releasing, rejecting and
renewing records, share sessions, the record-limit mode of v2, and lock expiry on the broker's virtual clock."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import RecordInput, build_batch, iter_batches

from minibroker.testing import Broker
from tests.aclutil import ADMIN, GROUP, TOPIC, acl_broker, create_topics, grant, login, unique
from tests.clientutil import Deadline, RawConnection
from tests.test_share_groups import heartbeat, join
from tests.txnutil import producer

PRODUCE, CREATE_TOPICS, DELETE_TOPICS, ALTER_CONFIGS_INCREMENTAL, SHARE_FETCH, SHARE_ACKNOWLEDGE = 0, 19, 20, 44, 78, 79
GROUP_RESOURCE = 32  # a config resource
READ_OPERATION = 3
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
LOCK_MS = 30_000  # group.share.record.lock.duration.ms's default


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(clock="virtual") as running:
        yield running


@pytest.fixture
def conn(broker: Broker) -> Iterator[RawConnection]:
    with RawConnection(broker.bootstrap_servers) as connection:
        yield connection


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def create(conn: RawConnection, name: str, partitions: int = 1, replicas: int = 1) -> bytes:
    answer = call(conn, CREATE_TOPICS, 7, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": replicas, "assignments": [], "configs": [],
    }], "timeout_ms": 5000, "validate_only": False})
    [topic] = answer["topics"]
    assert topic["error_code"] == ErrorCode.NONE
    return topic["topic_id"]


def produce(conn: RawConnection, topic: str, count: int, partition: int = 0) -> None:
    records = build_batch([RecordInput(b"k", b"v%d" % i) for i in range(count)])
    answer = call(conn, PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE


def set_group_config(conn: RawConnection, group: str, name: str, value: str) -> None:
    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
        {"name": name, "config_operation": 0, "value": value}]}], "validate_only": False}
    [response] = call(conn, ALTER_CONFIGS_INCREMENTAL, 1, body)["responses"]
    assert response["error_code"] == ErrorCode.NONE, response


def acks(*batches: tuple[int, int, int]) -> list[dict[str, Any]]:
    return [{"first_offset": first, "last_offset": last, "acknowledge_types": [kind]} for first, last, kind in batches]


class Member:
    """One share consumer's requests: its member id and share session epoch."""

    def __init__(self, conn: RawConnection, group: str, topic_id: bytes, version: int = 1) -> None:
        self.conn, self.group, self.topic_id, self.version = conn, group, topic_id, version
        self.member_id = str(uuid.uuid4())
        self.epoch = 0

    def fetch(
        self, partitions: dict[int, list[dict[str, Any]]] | None = None, *, max_records: int = 500, mode: int = 0,
        max_wait_ms: int = 0, renew: bool = False, epoch: int | None = None, forgotten: list[int] = (),
        max_bytes: int = 1 << 20,
    ) -> dict[str, Any]:
        partitions = {0: []} if partitions is None else partitions
        body: dict[str, Any] = {
            "group_id": self.group, "member_id": self.member_id,
            "share_session_epoch": self.epoch if epoch is None else epoch,
            "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes, "max_records": max_records,
            "batch_size": 500, "share_acquire_mode": mode, "is_renew_ack": renew,
            "topics": [{"topic_id": self.topic_id, "partitions": [
                {"partition_index": index, "acknowledgement_batches": batches} for index, batches in partitions.items()
            ]}] if partitions else [],
            "forgotten_topics_data": [{"topic_id": self.topic_id, "partitions": list(forgotten)}] if forgotten else [],
        }
        if renew:
            body.update(max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0)
        answer = call(self.conn, SHARE_FETCH, self.version, body)
        if answer["error_code"] == ErrorCode.NONE and epoch is None:
            self.epoch = -1 if self.epoch == -1 else self.epoch + 1
        return answer

    def acknowledge(self, batches: list[dict[str, Any]], *, renew: bool = False, epoch: int | None = None,
                    partition: int = 0) -> dict[str, Any]:
        body = {
            "group_id": self.group, "member_id": self.member_id,
            "share_session_epoch": self.epoch if epoch is None else epoch, "is_renew_ack": renew,
            "topics": [{"topic_id": self.topic_id, "partitions": [
                {"partition_index": partition, "acknowledgement_batches": batches}]}],
        }
        answer = call(self.conn, SHARE_ACKNOWLEDGE, self.version, body)
        if answer["error_code"] == ErrorCode.NONE and epoch is None:
            self.epoch += 1
        return answer

    def start(self) -> None:
        """Open the share session (epoch 0): the share partition is initialized at the end of the log (latest)."""
        answer = self.fetch()
        assert answer["error_code"] == ErrorCode.NONE, answer


def partition_of(answer: dict[str, Any], index: int = 0) -> dict[str, Any]:
    assert answer["error_code"] == ErrorCode.NONE, answer
    found = [p for topic in answer["responses"] for p in topic["partitions"] if p["partition_index"] == index]
    assert len(found) == 1, answer
    return found[0]


def acquired(answer: dict[str, Any], index: int = 0) -> list[tuple[int, int, int]]:
    part = partition_of(answer, index)
    assert part["error_code"] == ErrorCode.NONE, part
    return [(r["first_offset"], r["last_offset"], r["delivery_count"]) for r in part["acquired_records"]]


def nothing_acquired(answer: dict[str, Any]) -> bool:
    assert answer["error_code"] == ErrorCode.NONE, answer
    return all(not p.get("acquired_records") for topic in answer["responses"] for p in topic["partitions"])


def record_offsets(answer: dict[str, Any], index: int = 0) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in iter_batches(partition_of(answer, index)["records"])]


@pytest.fixture
def topic(conn: RawConnection, topic_name: str) -> tuple[str, bytes]:
    return topic_name, create(conn, topic_name)


def test_records_are_acquired_once_and_accepted(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    first.start()
    second.start()
    produce(conn, name, 3)
    produce(conn, name, 2)
    answer = first.fetch()
    assert answer["acquisition_lock_timeout_ms"] == LOCK_MS
    assert acquired(answer) == [(0, 4, 1)]
    assert record_offsets(answer) == [(0, 2), (3, 4)]
    assert nothing_acquired(second.fetch())  # acquired by the first member
    answer = first.acknowledge(acks((0, 4, ACCEPT)))
    assert answer["error_code"] == ErrorCode.NONE
    assert partition_of(answer)["error_code"] == ErrorCode.NONE
    assert nothing_acquired(second.fetch())  # accepted: never delivered again
    answer = first.acknowledge(acks((0, 0, ACCEPT)))  # below the start offset now: nothing to do
    assert partition_of(answer)["error_code"] == ErrorCode.NONE


def test_the_share_partition_starts_at_the_end_of_the_log(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    produce(conn, name, 4)  # before the group's first fetch: not delivered (share.auto.offset.reset=latest)
    member = Member(conn, f"g-{name}", topic_id)
    member.start()
    produce(conn, name, 1)
    assert acquired(member.fetch()) == [(4, 4, 1)]


def test_earliest_reset_delivers_what_is_already_there(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    produce(conn, name, 4)
    set_group_config(conn, f"g-{name}", "share.auto.offset.reset", "earliest")
    member = Member(conn, f"g-{name}", topic_id)
    assert acquired(member.fetch()) == [(0, 3, 1)]


def test_max_bytes_zero_acquires_nothing(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """librdkafka's 0180 (fetch.max.bytes=0): Kafka refuses to size the read, each readable partition answers
    UNKNOWN_SERVER_ERROR and no record is acquired, so a later fetch still gets them all."""
    name, topic_id = topic
    produce(conn, name, 3)
    set_group_config(conn, f"g-{name}", "share.auto.offset.reset", "earliest")
    member = Member(conn, f"g-{name}", topic_id)
    answer = member.fetch(max_bytes=0, max_wait_ms=5000)
    part = partition_of(answer)
    assert part["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
    assert part["error_message"] == "Request max bytes must be greater than 0"
    assert part["acquired_records"] == [] and not part["records"]
    assert acquired(member.fetch()) == [(0, 2, 1)]


def test_a_released_record_goes_to_the_next_fetch_with_its_count(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    first.start()
    second.start()
    produce(conn, name, 3)
    assert acquired(first.fetch()) == [(0, 2, 1)]
    answer = first.fetch({0: acks((0, 0, ACCEPT), (1, 1, RELEASE), (2, 2, REJECT))})  # piggybacked on a fetch
    assert partition_of(answer)["acknowledge_error_code"] == ErrorCode.NONE
    assert acquired(answer) == [(1, 1, 2)]  # the released record, to the same member as it asks first
    first.acknowledge(acks((1, 1, RELEASE)))
    assert acquired(second.fetch()) == [(1, 1, 3)]


def test_acknowledging_what_another_member_holds_is_an_invalid_record_state(
    conn: RawConnection, topic: tuple[str, bytes],
) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    first.start()
    second.start()
    produce(conn, name, 2)
    first.fetch()
    answer = second.acknowledge(acks((0, 1, ACCEPT)))
    assert partition_of(answer)["error_code"] == ErrorCode.INVALID_RECORD_STATE
    answer = first.acknowledge(acks((0, 5, ACCEPT)))  # past the acquired records
    assert partition_of(answer)["error_code"] == ErrorCode.INVALID_REQUEST
    answer = first.acknowledge(acks((1, 1, ACCEPT), (0, 0, ACCEPT)))  # out of order (KafkaApis' validation)
    assert partition_of(answer)["error_code"] == ErrorCode.INVALID_REQUEST
    answer = first.acknowledge(acks((0, 1, RENEW)))  # renew needs v2 and IsRenewAck
    assert partition_of(answer)["error_code"] == ErrorCode.INVALID_REQUEST
    answer = first.acknowledge(acks((0, 1, ACCEPT)))  # nothing was applied before
    assert partition_of(answer)["error_code"] == ErrorCode.NONE


def test_an_expired_lock_makes_the_records_available_again(
    broker: Broker, conn: RawConnection, topic: tuple[str, bytes],
) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    first.start()
    second.start()
    produce(conn, name, 2)
    assert acquired(first.fetch()) == [(0, 1, 1)]
    broker.advance(LOCK_MS - 1)
    assert nothing_acquired(second.fetch())
    broker.advance(1)
    assert acquired(second.fetch()) == [(0, 1, 2)]
    answer = first.acknowledge(acks((0, 1, ACCEPT)))  # the first member's lock is gone
    assert partition_of(answer)["error_code"] == ErrorCode.INVALID_RECORD_STATE


def test_the_delivery_count_limit_archives(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    group = f"g-{name}"
    set_group_config(conn, group, "share.delivery.count.limit", "2")
    member = Member(conn, group, topic_id)
    member.start()
    produce(conn, name, 1)
    produce(conn, name, 1)
    assert acquired(member.fetch()) == [(0, 1, 1)]
    member.acknowledge(acks((0, 0, RELEASE), (1, 1, ACCEPT)))
    assert acquired(member.fetch()) == [(0, 0, 2)]
    broker.advance(LOCK_MS)  # the second delivery's lock runs out at the limit: archived
    assert nothing_acquired(member.fetch())
    produce(conn, name, 1)
    assert acquired(member.fetch()) == [(2, 2, 1)]


def test_share_session_errors(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    member = Member(conn, f"g-{name}", topic_id)
    assert member.acknowledge([], epoch=1)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert member.fetch(epoch=1)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert member.fetch(epoch=-1)["error_code"] == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert member.fetch({0: acks((0, 0, ACCEPT))}, epoch=0)["error_code"] == ErrorCode.INVALID_REQUEST
    member.start()
    assert member.fetch(epoch=5)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert member.acknowledge([], epoch=0)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert member.fetch()["error_code"] == ErrorCode.NONE  # epoch 1, then 2
    assert member.acknowledge([])["error_code"] == ErrorCode.NONE
    assert member.fetch(epoch=2)["error_code"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH  # 3 is next


def test_an_incremental_fetch_reads_the_session_partitions(conn: RawConnection, topic_name: str) -> None:
    topic_id = create(conn, topic_name, 2)
    member = Member(conn, f"g-{topic_name}", topic_id)
    answer = member.fetch({0: [], 1: []})
    assert sorted(p["partition_index"] for p in answer["responses"][0]["partitions"]) == [0, 1]  # a full answer
    produce(conn, topic_name, 2, partition=1)
    answer = member.fetch({})  # names no partition: the session's
    assert acquired(answer, 1) == [(0, 1, 1)]
    assert [p["partition_index"] for p in answer["responses"][0]["partitions"]] == [1]  # only what changed
    produce(conn, topic_name, 1, partition=1)
    assert nothing_acquired(member.fetch({}, forgotten=[1]))


def test_share_partitions_made_by_a_fetch_answer_one_at_a_time(conn: RawConnection, topic_name: str) -> None:
    """librdkafka's 0179: Kafka initializes each new share partition from the share coordinator and completes the
    fetch with the first that has records; the next fetch reads the others, and ready ones all answer together."""
    topic_id = create(conn, topic_name, 2)
    for index in (0, 1):
        produce(conn, topic_name, 3, partition=index)
    set_group_config(conn, f"g-{topic_name}", "share.auto.offset.reset", "earliest")
    member = Member(conn, f"g-{topic_name}", topic_id)
    first = member.fetch({0: [], 1: []})
    assert acquired(first, 0) == [(0, 2, 1)]
    assert acquired(first, 1) == []  # made, its records not acquired yet
    assert acquired(member.fetch({}), 1) == [(0, 2, 1)]
    for index in (0, 1):
        produce(conn, topic_name, 1, partition=index)
    both = member.fetch({})
    assert acquired(both, 0) == [(3, 3, 1)] and acquired(both, 1) == [(3, 3, 1)]


def test_closing_the_session_releases_the_members_records(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    first.start()
    second.start()
    produce(conn, name, 3)
    assert acquired(first.fetch()) == [(0, 2, 1)]
    answer = first.fetch({0: acks((0, 0, ACCEPT))}, epoch=-1)
    assert partition_of(answer)["acknowledge_error_code"] == ErrorCode.NONE
    assert not partition_of(answer).get("acquired_records")
    assert acquired(second.fetch()) == [(1, 2, 1)]  # the delivery was taken back


def test_a_closed_connection_releases_its_sessions_records(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    second = Member(conn, f"g-{name}", topic_id)
    second.start()
    with RawConnection(broker.bootstrap_servers) as other:
        first = Member(other, f"g-{name}", topic_id)
        first.start()
        produce(conn, name, 2)
        assert acquired(first.fetch()) == [(0, 1, 1)]
    for _ in range(50):
        answer = second.fetch()
        if not nothing_acquired(answer):
            break
    assert acquired(answer) == [(0, 1, 1)]


def test_record_limit_mode_acquires_exactly_max_records(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    member = Member(conn, f"g-{name}", topic_id, version=2)
    member.start()
    produce(conn, name, 5)
    answer = member.fetch(max_records=2, mode=1)
    assert acquired(answer) == [(0, 1, 1)]
    assert record_offsets(answer) == [(0, 4)]  # the batch holding them, whole
    assert acquired(member.fetch(max_records=2, mode=0)) == [(2, 4, 1)]  # batch-optimized: the rest of the batch


def test_renew_keeps_the_lock(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    first, second = Member(conn, f"g-{name}", topic_id, version=2), Member(conn, f"g-{name}", topic_id, version=2)
    first.start()
    second.start()
    produce(conn, name, 2)
    assert acquired(first.fetch()) == [(0, 1, 1)]
    broker.advance(LOCK_MS // 2)
    answer = first.acknowledge(acks((0, 0, RENEW)), renew=True)
    assert answer["acquisition_lock_timeout_ms"] == LOCK_MS
    assert partition_of(answer)["error_code"] == ErrorCode.NONE
    broker.advance(LOCK_MS // 2)  # the first lock would have run out now; only the unrenewed record is released
    assert acquired(second.fetch()) == [(1, 1, 2)]
    answer = first.fetch({0: acks((0, 0, RENEW))}, renew=True)
    assert partition_of(answer)["acknowledge_error_code"] == ErrorCode.NONE and nothing_acquired(answer)
    answer = first.fetch({0: acks((0, 0, ACCEPT))})
    assert partition_of(answer)["acknowledge_error_code"] == ErrorCode.NONE


def test_a_renewing_fetch_must_not_fetch(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    member = Member(conn, f"g-{name}", topic_id, version=2)
    member.start()
    body = {
        "group_id": member.group, "member_id": member.member_id, "share_session_epoch": 1, "max_wait_ms": 0,
        "min_bytes": 0, "max_bytes": 0, "max_records": 10, "batch_size": 1, "share_acquire_mode": 0,
        "is_renew_ack": True, "topics": [], "forgotten_topics_data": [],
    }
    assert call(conn, SHARE_FETCH, 2, body)["error_code"] == ErrorCode.INVALID_REQUEST


def test_unknown_topic_id(conn: RawConnection) -> None:
    member = Member(conn, "g-unknown-topic", uuid.uuid4().bytes)
    assert partition_of(member.fetch())["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_a_waiting_fetch_is_answered_when_records_arrive(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """The fetch waits far longer than its connection's read timeout: only a wake-up answers it in time."""
    name, topic_id = topic
    answers: list[dict[str, Any]] = []
    with RawConnection(broker.bootstrap_servers, timeout=30) as other:
        member = Member(other, f"g-{name}", topic_id)
        member.start()
        waiting = threading.Thread(target=lambda: answers.append(member.fetch(max_wait_ms=120_000)))
        waiting.start()
        try:
            produce(conn, name, 1)
        finally:
            waiting.join(30)
    assert acquired(answers[0]) == [(0, 0, 1)]


# ---- the share group offsets APIs ----

DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS, FIND_COORDINATOR = 90, 91, 92, 10


def find_coordinator(conn: RawConnection, group: str) -> None:
    """The group coordinator ready (its partition of __consumer_offsets loaded), as a client finds it first."""
    deadline = Deadline()
    while deadline.left():
        answer = call(conn, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        if answer["coordinators"][0]["error_code"] == ErrorCode.NONE:
            return
    raise AssertionError("no group coordinator")


def describe_offsets(conn: RawConnection, group: str, topics: list[dict[str, Any]] | None, version: int = 1) -> dict[str, Any]:
    [answer] = call(conn, DESCRIBE_OFFSETS, version, {"groups": [{"group_id": group, "topics": topics}]})["groups"]
    return answer


def test_describe_share_group_offsets(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    group = f"g-{name}"
    find_coordinator(conn, group)
    answer = describe_offsets(conn, group, None)
    assert answer["error_code"] == ErrorCode.NONE and answer["topics"] == []  # nothing initialized yet
    produce(conn, name, 2)
    member = Member(conn, group, topic_id)
    member.start()  # initialized at the end of the log: 2
    produce(conn, name, 3)
    assert acquired(member.fetch()) == [(2, 4, 1)]
    member.acknowledge(acks((2, 2, ACCEPT), (4, 4, ACCEPT)))
    answer = describe_offsets(conn, group, None)
    assert answer["error_code"] == ErrorCode.NONE
    [described] = answer["topics"]
    assert (described["topic_name"], described["topic_id"]) == (name, topic_id)
    [partition] = described["partitions"]
    assert (partition["partition_index"], partition["start_offset"], partition["leader_epoch"]) == (0, 3, 0)
    assert partition["lag"] == 1  # offset 3 is still to be delivered to completion; 4 is done
    answer = describe_offsets(conn, group, [{"topic_name": name, "partitions": [0, 7]}, {"topic_name": "nope", "partitions": [0]}], 0)
    assert [(p["partition_index"], p["start_offset"]) for p in answer["topics"][0]["partitions"]] == [(0, 3), (7, -1)]
    assert answer["topics"][1]["topic_id"] == bytes(16) and answer["topics"][1]["partitions"][0]["start_offset"] == -1
    assert describe_offsets(conn, group, [])["topics"] == []


def test_deleting_offsets_needs_a_share_group(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """Altering them creates a missing group (tests/test_share_group_offsets.py); deleting them does not."""
    name, _ = topic
    find_coordinator(conn, f"g-{name}")
    answer = call(conn, DELETE_OFFSETS, 0, {"group_id": f"g-{name}", "topics": [{"topic_name": name}]})
    assert (answer["error_code"], answer["error_message"]) == (ErrorCode.GROUP_ID_NOT_FOUND, f"Group g-{name} not found.")
    answer = call(conn, ALTER_OFFSETS, 0, {"group_id": "", "topics": []})
    assert answer["error_code"] == ErrorCode.INVALID_GROUP_ID


def test_a_restarted_broker_keeps_the_share_partition_state(tmp_path: Any, topic_name: str) -> None:
    """Accepted and released records survive a restart in __share_group_state; the locks do not."""
    with Broker(clock="virtual", data_dir=tmp_path / "data") as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            topic_id = create(conn, topic_name)
            member = Member(conn, f"g-{topic_name}", topic_id)
            member.start()
            produce(conn, topic_name, 5)
            assert acquired(member.fetch()) == [(0, 4, 1)]
            member.acknowledge(acks((0, 1, ACCEPT), (2, 2, RELEASE), (3, 3, REJECT)))
        broker.restart()
        with RawConnection(broker.bootstrap_servers) as conn:
            member = Member(conn, f"g-{topic_name}", topic_id)
            # 2 was released after one delivery; 4's delivery was taken back when its session's connection closed
            assert acquired(member.fetch()) == [(2, 2, 2), (4, 4, 1)]
            find_coordinator(conn, f"g-{topic_name}")
            answer = describe_offsets(conn, f"g-{topic_name}", None)
            assert answer["topics"][0]["partitions"][0]["start_offset"] == 2


def test_a_share_fetch_to_another_node_names_the_leader(topic_name: str) -> None:
    """A partition this node does not lead answers NOT_LEADER_OR_FOLLOWER with its leader and that node's endpoint,
    for the fetch and for acknowledgements."""
    with Broker(nodes=3) as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            topic_id = create(conn, topic_name)
        leader = broker.core.placements.of(topic_name, 0)
        other = next(node for node in broker.node_addresses if node != leader.leader)
        with RawConnection(broker.node_addresses[other]) as conn:
            member = Member(conn, f"g-{topic_name}", topic_id)
            part = partition_of(member.fetch())
            assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert part["current_leader"] == {"leader_id": leader.leader, "leader_epoch": leader.leader_epoch}
            answer = member.acknowledge(acks((0, 0, ACCEPT)))
        assert partition_of(answer)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        host, port = broker.node_addresses[leader.leader].rsplit(":", 1)
        assert [(e["node_id"], e["host"], e["port"]) for e in answer["node_endpoints"]] == [(leader.leader, host, int(port))]


def test_share_fetch_needs_read_on_the_group_and_the_topic(tmp_path: Any) -> None:
    """KafkaApis: READ on the group (else GROUP_AUTHORIZATION_FAILED for the request), READ on each topic (else
    TOPIC_AUTHORIZATION_FAILED for its partitions)."""
    with contextmanager(acl_broker)(tmp_path / "data", ["reader"]) as broker:
        name, group, secret = unique("t"), unique("g"), unique("t")
        with login(broker, ADMIN) as admin:
            [created, _] = create_topics(admin, name, secret)
        topic_id = created["topic_id"]
        with login(broker, "reader") as conn:
            member = Member(conn, group, topic_id)
            assert member.fetch(epoch=0)["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
            grant(broker, "reader", GROUP, group, READ_OPERATION)
            assert partition_of(member.fetch(epoch=0))["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            grant(broker, "reader", TOPIC, name, READ_OPERATION)
            assert partition_of(member.fetch(epoch=0))["error_code"] == ErrorCode.NONE
            # DescribeShareGroupOffsets: DESCRIBE (implied by READ) on the group and on each topic named
            find_coordinator(conn, group)
            answer = describe_offsets(conn, group, [{"topic_name": name, "partitions": [0]}, {"topic_name": secret, "partitions": [0]}])
            assert [(t["topic_name"], t["partitions"][0]["error_code"]) for t in answer["topics"]] == [
                (name, ErrorCode.NONE), (secret, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
            assert describe_offsets(conn, unique("g"), None)["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED
            answer = call(conn, DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": name}]})
            assert answer["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED  # DELETE on the group


def test_read_committed_archives_aborted_records_and_stops_at_the_lso(
    broker: Broker, conn: RawConnection, topic: tuple[str, bytes],
) -> None:
    """share.isolation.level=read_committed: records of an aborted transaction are archived, never delivered; an open
    transaction's records wait below the last stable offset; control records are acquired (the client skips them)."""
    name, topic_id = topic
    group = f"g-{name}"
    set_group_config(conn, group, "share.isolation.level", "read_committed")
    set_group_config(conn, group, "share.auto.offset.reset", "earliest")
    with producer("confluent", broker.bootstrap_servers, f"txn-{name}") as txn:
        txn.begin()
        txn.send(name, 0, b"aborted-1")
        txn.send(name, 0, b"aborted-2")
        txn.flush()
        txn.abort()  # 0-1 aborted, 2 the ABORT marker
        txn.begin()
        txn.send(name, 0, b"committed")
        txn.flush()
        txn.commit()  # 3, and 4 the COMMIT marker
        txn.begin()
        txn.send(name, 0, b"open")  # 5: not stable yet
        txn.flush()
        member = Member(conn, group, topic_id)
        answer = member.fetch()
        assert acquired(answer) == [(2, 4, 1)]
        assert [first for first, _ in record_offsets(answer)] == [2, 3, 4]
        member.acknowledge(acks((2, 2, 0), (3, 3, ACCEPT), (4, 4, 0)))  # the markers acknowledged as gaps
        assert nothing_acquired(member.fetch())
        txn.commit()
    assert acquired(member.fetch()) == [(5, 6, 1)]


def test_alter_and_delete_offsets_of_an_empty_share_group(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """The group must be an empty share group (NON_EMPTY_GROUP while a member is in it); altering moves the start
    offset the next fetch reads from, deleting forgets the share partition."""
    name, topic_id = topic
    bootstrap = broker.bootstrap_servers
    produce(conn, name, 6)
    find_coordinator(conn, f"g-{name}")
    member_id, _ = join(bootstrap, f"g-{name}", [name])
    member = Member(conn, f"g-{name}", topic_id)
    member.member_id = member_id
    member.start()  # initialized at the end: 6
    alter = {"group_id": f"g-{name}", "topics": [
        {"topic_name": name, "partitions": [{"partition_index": 0, "start_offset": 2}, {"partition_index": 5, "start_offset": 0}]},
        {"topic_name": "no-such-topic", "partitions": [{"partition_index": 0, "start_offset": 0}]},
    ]}
    assert call(conn, ALTER_OFFSETS, 0, alter)["error_code"] == ErrorCode.NON_EMPTY_GROUP
    assert heartbeat(bootstrap, f"g-{name}", member_id, -1)["error_code"] == ErrorCode.NONE  # leaves: the group is empty
    answer = call(conn, ALTER_OFFSETS, 0, alter)
    assert answer["error_code"] == ErrorCode.NONE
    assert [(t["topic_name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]]) for t in answer["responses"]] == [
        ("no-such-topic", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        (name, [(0, ErrorCode.NONE), (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]
    [described] = describe_offsets(conn, f"g-{name}", None)["topics"]
    assert [(p["partition_index"], p["start_offset"], p["lag"]) for p in described["partitions"]] == [(0, 2, 4)]
    again = Member(conn, f"g-{name}", topic_id)
    assert acquired(again.fetch()) == [(2, 5, 1)]
    again.fetch(epoch=-1)
    answer = call(conn, DELETE_OFFSETS, 0, {"group_id": f"g-{name}", "topics": [{"topic_name": name}, {"topic_name": "nope"}]})
    assert answer["error_code"] == ErrorCode.NONE
    assert [(t["topic_name"], t["error_code"]) for t in answer["responses"]] == [
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (name, ErrorCode.NONE)]
    assert describe_offsets(conn, f"g-{name}", None)["topics"] == []
    answer = call(conn, DELETE_OFFSETS, 0, {"group_id": f"g-{name}", "topics": [{"topic_name": name}]})
    assert answer["responses"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # nothing left to delete


def test_a_member_leaving_the_group_keeps_its_records_until_its_session_closes(
    broker: Broker, conn: RawConnection, topic: tuple[str, bytes],
) -> None:
    """Leaving the group (a heartbeat at epoch -1, which the consumer sends as it closes) is the coordinator's business;
    the records stay with the member's share session, so the final acknowledgement the consumer sends next is still
    applied; the session's close then gives back what was not acknowledged, the delivery taken back."""
    name, topic_id = topic
    bootstrap = broker.bootstrap_servers
    find_coordinator(conn, f"g-{name}")
    member_id, _ = join(bootstrap, f"g-{name}", [name])
    leaving, staying = Member(conn, f"g-{name}", topic_id), Member(conn, f"g-{name}", topic_id)
    leaving.member_id = member_id
    leaving.start()
    staying.start()
    produce(conn, name, 3)
    assert acquired(leaving.fetch()) == [(0, 2, 1)]
    assert heartbeat(bootstrap, f"g-{name}", member_id, -1)["error_code"] == ErrorCode.NONE
    assert nothing_acquired(staying.fetch())  # still locked by the member that left
    closing = leaving.acknowledge(acks((0, 0, ACCEPT)), epoch=-1)
    assert closing["error_code"] == ErrorCode.NONE
    assert acquired(staying.fetch()) == [(1, 2, 1)]


def test_the_share_session_limit(topic_name: str) -> None:
    """group.share.max.share.sessions: one session more is refused with SHARE_SESSION_LIMIT_REACHED; a closed one
    makes room."""
    with Broker({"group.share.max.share.sessions": "1"}) as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            topic_id = create(conn, topic_name)
            first, second = Member(conn, f"g-{topic_name}", topic_id), Member(conn, f"g-{topic_name}", topic_id)
            first.start()
            assert second.fetch(epoch=0)["error_code"] == ErrorCode.SHARE_SESSION_LIMIT_REACHED
            assert first.fetch(epoch=0)["error_code"] == ErrorCode.NONE  # its own session, replaced
            assert first.fetch(epoch=-1)["error_code"] == ErrorCode.NONE
            assert second.fetch(epoch=0)["error_code"] == ErrorCode.NONE


def test_a_new_leader_loads_the_share_partition_from_its_stored_state(topic_name: str) -> None:
    """When the partition's leader moves, its share partition is loaded again from __share_group_state: what was
    acknowledged stays acknowledged, what was acquired is available again (locks do not move)."""
    with Broker(nodes=2) as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            topic_id = create(conn, topic_name, replicas=2)
        leader = broker.core.placements.of(topic_name, 0).leader
        with RawConnection(broker.node_addresses[leader]) as conn:
            member = Member(conn, f"g-{topic_name}", topic_id)
            member.start()
            produce(conn, topic_name, 4)
            assert acquired(member.fetch()) == [(0, 3, 1)]
            member.acknowledge(acks((0, 1, ACCEPT)))
            other = next(node for node in broker.node_addresses if node != leader)
            broker.move_leader(topic_name, 0, other)
            assert partition_of(member.fetch())["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            with RawConnection(broker.node_addresses[other]) as moved:  # the first session still open
                assert acquired(Member(moved, f"g-{topic_name}", topic_id).fetch()) == [(2, 3, 1)]


def test_by_duration_reset_starts_at_the_first_record_that_recent(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    now = broker.core.clock()
    for age_ms in (7_200_000, 3_000_000, 60_000):  # two hours, fifty minutes, one minute old
        records = build_batch([RecordInput(b"k", b"%d" % age_ms)], base_timestamp=now - age_ms)
        answer = call(conn, PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": records}]}]})
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    set_group_config(conn, f"g-{name}", "share.auto.offset.reset", "by_duration:PT1H")
    assert acquired(Member(conn, f"g-{name}", topic_id).fetch()) == [(1, 2, 1)]


def test_describe_shows_the_in_flight_records(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """What the control API and the inspector read: ranges of one state, delivery count, owner and lock deadline."""
    name, topic_id = topic
    member = Member(conn, f"g-{name}", topic_id)
    member.start()
    produce(conn, name, 3)
    acquired(member.fetch())
    member.acknowledge(acks((1, 1, RELEASE)))
    [described] = broker.core.share_partitions.describe(f"g-{name}")
    deadline = broker.core.clock() + LOCK_MS
    assert (described["topic"], described["partition"], described["start_offset"], described["end_offset"]) == (name, 0, 0, 3)
    assert [(b["first_offset"], b["last_offset"], b["state"], b["delivery_count"], b["member_id"], b["lock_deadline_ms"])
            for b in described["in_flight"]] == [
        (0, 0, "acquired", 1, member.member_id, deadline), (1, 1, "available", 1, None, None),
        (2, 2, "acquired", 1, member.member_id, deadline),
    ]


def test_a_waiting_fetch_is_answered_when_records_are_released(
    broker: Broker, conn: RawConnection, topic: tuple[str, bytes],
) -> None:
    """As above: released records wake the waiting fetch."""
    name, topic_id = topic
    holder = Member(conn, f"g-{name}", topic_id)
    holder.start()
    produce(conn, name, 2)
    assert acquired(holder.fetch()) == [(0, 1, 1)]
    answers: list[dict[str, Any]] = []
    with RawConnection(broker.bootstrap_servers, timeout=30) as other:
        waiter = Member(other, f"g-{name}", topic_id)
        waiter.start()
        waiting = threading.Thread(target=lambda: answers.append(waiter.fetch(max_wait_ms=120_000)))
        waiting.start()
        try:
            time.sleep(0.2)  # the waiter is waiting (or, if not yet, finds the released records at once)
            holder.acknowledge(acks((0, 1, RELEASE)))
        finally:
            waiting.join(30)
    assert acquired(answers[0]) == [(0, 1, 2)]


def test_a_deleted_topic_takes_its_share_partitions_with_it(broker: Broker, conn: RawConnection, topic: tuple[str, bytes]) -> None:
    name, topic_id = topic
    member = Member(conn, f"g-{name}", topic_id)
    member.start()
    produce(conn, name, 1)
    assert acquired(member.fetch()) == [(0, 0, 1)]
    answer = call(conn, DELETE_TOPICS, 6, {"topics": [{"name": name, "topic_id": bytes(16)}], "timeout_ms": 5000})
    assert answer["responses"][0]["error_code"] == ErrorCode.NONE
    assert broker.core.share_partitions.describe(f"g-{name}") == []
    assert partition_of(member.fetch())["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def test_a_fetch_reads_the_log_in_steps_up_to_max_bytes(conn: RawConnection, topic: tuple[str, bytes]) -> None:
    """The log is read in steps (16 KiB, then twice as much each) until MaxRecords are acquired or MaxBytes read."""
    name, topic_id = topic
    set_group_config(conn, f"g-{name}", "share.auto.offset.reset", "earliest")
    for batch in range(100):  # 100 batches of 10 records of 2 KB: about 2 MB
        records = build_batch([RecordInput(None, bytes(2000)) for _ in range(10)])
        answer = call(conn, PRODUCE, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": records}]}]})
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    set_group_config(conn, f"g-{name}", "share.partition.max.record.locks", "4000")
    member = Member(conn, f"g-{name}", topic_id)
    answer = member.fetch(max_records=400)  # 40 batches, about 800 KB: six steps
    assert acquired(answer) == [(0, 399, 1)]
    assert record_offsets(answer) == [(first, first + 9) for first in range(0, 400, 10)]
    answer = member.fetch(max_records=10_000)  # MaxBytes (1 MiB) stops it: whole batches within it
    ranges = acquired(answer)  # split at a log batch every BatchSize (500) records
    assert all(count == 1 for _, _, count in ranges) and [r[0] for r in ranges[1:]] == [r[1] + 1 for r in ranges[:-1]]
    last = ranges[-1][1]
    assert ranges[0][0] == 400 and 400 + 40 <= last < 1000
    assert record_offsets(answer) == [(offset, offset + 9) for offset in range(400, last + 1, 10)]
    assert len(partition_of(answer)["records"]) <= 1 << 20
    assert acquired(member.fetch(max_records=10_000))[0][0] == last + 1
