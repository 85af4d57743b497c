"""AlterShareGroupOffsets on a share group that does not exist yet (Kafka 4.2+, KAFKA-19662): it creates the group,
an empty share group whose start offsets a share consumer joining later reads from, kept across a restart; an id of
another group type is not a share group; an emulated 4.1 answers GROUP_ID_NOT_FOUND. Raw requests through the
project's codec, and confluent-kafka's ShareConsumer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from minibroker.protocol import group_records as gr
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.records import decode_all

from minibroker.groups.config import GroupConfig
from minibroker.groups.coordinator import GroupCoordinator
from minibroker.testing import Broker
from tests.groupfakes import FakeRecordLog, FakeTimer
from tests.test_share_consumer import poll_until, produce, share_consumer
from tests.test_share_groups import (
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    OFFSET_COMMIT,
    UPDATE_FEATURES,
    call,
    describe,
    find_coordinator,
    heartbeat,
    join,
)

DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS, FETCH = 90, 91, 92, 1
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions
UPGRADE = 1


def alter(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> dict[str, Any]:
    return call(bootstrap, ALTER_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": topic, "partitions": [
        {"partition_index": index, "start_offset": offset} for index, offset in offsets.items()]}]})


def start_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> start offset of every initialized share partition of the group (v0: 4.1 had no v1)."""
    [described] = call(bootstrap, DESCRIBE_OFFSETS, 0, {"groups": [{"group_id": group, "topics": None}]})["groups"]
    assert described["error_code"] == ErrorCode.NONE, described
    return {(t["topic_name"], p["partition_index"]): p["start_offset"]
            for t in described["topics"] for p in t["partitions"]}


def listed(bootstrap: str) -> list[dict[str, Any]]:
    return call(bootstrap, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]


def group_records(bootstrap: str, group: str) -> list[tuple[Any, Any]]:
    """The records of ``group`` in its __consumer_offsets partition, decoded, as a raw Fetch reads them."""
    wanted = {"partition": partition_for(group, OFFSETS_PARTITIONS), "fetch_offset": 0, "partition_max_bytes": 1 << 20}
    answer = call(bootstrap, FETCH, 4, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": "__consumer_offsets", "partitions": [wanted]}],
    })
    [data] = answer["responses"][0]["partitions"]
    records = [record for _, batch in decode_all(data["records"] or b"") for record in batch]
    keys = [(gr.decode_key(r.key), r.value) for r in records if r.key is not None]
    return [(key, gr.decode_value(key, value)) for key, value in keys if key.group == group]


def ready(broker: Broker, topic: str, group: str, records: int) -> None:
    """A one-partition topic holding ``records`` records, and the group coordinator found."""
    broker.create_topic(topic, 1)
    produce(broker, topic, records)
    assert find_coordinator(broker.bootstrap_servers, group)["error_code"] == ErrorCode.NONE


def test_altering_offsets_creates_the_share_group_a_consumer_later_starts_from(tmp_path: Path, topic_name: str) -> None:
    """The created group is an empty share group (ShareGroupDescribe, ListGroups; DescribeGroups: not a classic
    group), its one record the share partitions' state metadata; it survives a restart, and a ShareConsumer joining
    then starts at the offset set, where the default share.auto.offset.reset (latest) would have delivered nothing of
    what the topic already holds."""
    group = f"created-{topic_name}"
    with Broker(clock="virtual", data_dir=tmp_path) as broker:
        bootstrap = broker.bootstrap_servers
        ready(broker, topic_name, group, 10)
        answer = alter(bootstrap, group, topic_name, {0: 4})
        assert (answer["error_code"], answer["error_message"]) == (ErrorCode.NONE, None)
        assert [(t["topic_name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]])
                for t in answer["responses"]] == [(topic_name, [(0, ErrorCode.NONE)])]
        assert start_offsets(bootstrap, group) == {(topic_name, 0): 4}
        [described] = describe(bootstrap, group)
        assert (described["error_code"], described["group_state"], described["group_epoch"],
                described["assignment_epoch"], described["members"]) == (ErrorCode.NONE, "Empty", 0, 0, [])
        empty = {"group_id": group, "protocol_type": "share", "group_state": "Empty", "group_type": "share"}
        assert empty in listed(bootstrap)
        [classic] = call(bootstrap, DESCRIBE_GROUPS, 6, {"groups": [group], "include_authorized_operations": False})[
            "groups"]
        assert (classic["error_code"], classic["group_state"], classic["error_message"]) == (
            ErrorCode.GROUP_ID_NOT_FOUND, "Dead", f"Group {group} is not a classic group.")
        topic_id = broker.core.topic(topic_name).topic_id
        state = gr.ShareGroupStatePartitionMetadataValue(
            initialized=(gr.ShareTopicPartitions(topic_id, topic_name, frozenset({0})),))
        assert group_records(bootstrap, group) == [(gr.ShareGroupStatePartitionMetadataKey(group), state)]
        broker.restart()
        assert find_coordinator(broker.bootstrap_servers, group)["error_code"] == ErrorCode.NONE
        assert empty in listed(broker.bootstrap_servers)
        with share_consumer(broker, group, topic_name) as consumer:
            received = poll_until(consumer, 6)
        assert [(m.offset(), m.value()) for m in received] == [(n, str(n).encode()) for n in range(4, 10)]


def test_without_an_existing_topic_no_group_is_created(topic_name: str) -> None:
    """Nothing to initialize, nothing written (Kafka's coordinator writes no record): the answer names the topic unknown
    and the group stays missing."""
    group = f"none-{topic_name}"
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        assert find_coordinator(bootstrap, group)["error_code"] == ErrorCode.NONE
        answer = alter(bootstrap, group, topic_name, {0: 0})
        assert answer["error_code"] == ErrorCode.NONE
        assert [(t["topic_name"], t["partitions"][0]["error_code"]) for t in answer["responses"]] == [
            (topic_name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        [described] = describe(bootstrap, group)
        assert described["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert group not in {g["group_id"] for g in listed(bootstrap)}


def test_an_id_of_another_group_type_is_not_a_share_group(topic_name: str) -> None:
    """A classic group (offsets committed without members) keeps its id: altering or deleting share offsets under it
    answers GROUP_ID_NOT_FOUND with Kafka's message, and creates nothing."""
    group = f"classic-{topic_name}"
    with Broker() as broker:
        bootstrap = broker.bootstrap_servers
        ready(broker, topic_name, group, 1)
        commit = {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1, "committed_metadata": None}
        committed = call(bootstrap, OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic_name, "partitions": [commit]}],
        })
        assert committed["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        refusal = (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group} is not a share group.")
        answer = alter(bootstrap, group, topic_name, {0: 0})
        assert (answer["error_code"], answer["error_message"], answer["responses"]) == (*refusal, [])
        answer = call(bootstrap, DELETE_OFFSETS, 0, {"group_id": group, "topics": [{"topic_name": topic_name}]})
        assert (answer["error_code"], answer["error_message"]) == refusal
        assert [g["group_type"] for g in listed(bootstrap) if g["group_id"] == group] == ["classic"]


@pytest.mark.parametrize(("release", "creates"), [("4.1", False), ("4.2", True), ("4.3", True)])
def test_which_releases_create_the_group(release: str, creates: bool, topic_name: str) -> None:
    """4.1 (share groups its preview, turned on with share.version 1) answered GROUP_ID_NOT_FOUND for a missing group
    and altered an existing empty one; 4.2 and later create it."""
    group, existing = f"missing-{topic_name}", f"existing-{topic_name}"
    with Broker(kafka_version=release) as broker:
        bootstrap = broker.bootstrap_servers
        ready(broker, topic_name, group, 3)
        assert find_coordinator(bootstrap, existing)["error_code"] == ErrorCode.NONE
        upgrade = call(bootstrap, UPDATE_FEATURES, 1, {"timeout_ms": 5000, "validate_only": False, "feature_updates": [
            {"feature": "share.version", "max_version_level": 1, "upgrade_type": UPGRADE}]})
        assert upgrade["error_code"] == ErrorCode.NONE
        answer = alter(bootstrap, group, topic_name, {0: 1})
        if creates:
            assert answer["error_code"] == ErrorCode.NONE and start_offsets(bootstrap, group) == {(topic_name, 0): 1}
        else:
            assert (answer["error_code"], answer["error_message"], answer["responses"]) == (
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group} not found.", [])
            assert describe(bootstrap, group)[0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        member, _ = join(bootstrap, existing, [topic_name])
        assert heartbeat(bootstrap, existing, member, -1)["error_code"] == ErrorCode.NONE
        assert alter(bootstrap, existing, topic_name, {0: 2})["error_code"] == ErrorCode.NONE
        assert start_offsets(bootstrap, existing) == {(topic_name, 0): 2}


def test_an_emulated_4_1_serves_no_share_offsets_until_share_version_is_raised(topic_name: str) -> None:
    """4.1 supported share.version 0-1, but a new cluster finalized it at 0: the share APIs answer
    UNSUPPORTED_VERSION."""
    with Broker(kafka_version="4.1") as broker:
        bootstrap = broker.bootstrap_servers
        ready(broker, topic_name, "g", 1)
        assert alter(bootstrap, "g", topic_name, {0: 0})["error_code"] == ErrorCode.UNSUPPORTED_VERSION


# ---- the coordinator alone ----


def coordinator(log: FakeRecordLog) -> GroupCoordinator:
    return GroupCoordinator(GroupConfig(), FakeTimer(), log)


ORDERS, PAYMENTS = bytes(range(1, 17)), bytes([0xFB] * 16)


def test_initialize_merges_the_altered_partitions_into_one_record_that_creates_the_group() -> None:
    log = FakeRecordLog()
    groups = coordinator(log)
    assert groups.share_offsets_refusal("sg", creates=False) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group sg not found.")
    assert groups.share_offsets_refusal("sg", creates=True) == (ErrorCode.NONE, None)
    assert groups.share.initialize("sg", {}) == ErrorCode.NONE and log.all_records() == []  # nothing to initialize
    assert groups.share.initialize("sg", {ORDERS: ("orders", frozenset({0}))}) == ErrorCode.NONE
    assert groups.share.groups["sg"].state() == "Empty"
    more = {ORDERS: ("orders", frozenset({2})), PAYMENTS: ("payments", frozenset())}
    assert groups.share.initialize("sg", more) == ErrorCode.NONE
    assert groups.share.initialize("sg", {ORDERS: ("orders", frozenset({0}))}) == ErrorCode.NONE  # nothing new
    written = [(gr.decode_key(k), gr.decode_value(gr.decode_key(k), v)) for k, v in log.all_records()]
    assert [value.initialized for _, value in written] == [
        (gr.ShareTopicPartitions(ORDERS, "orders", frozenset({0})),),
        (gr.ShareTopicPartitions(ORDERS, "orders", frozenset({0, 2})),
         gr.ShareTopicPartitions(PAYMENTS, "payments", frozenset())),
    ]
    loaded = coordinator(FakeRecordLog())
    for offset, (key, value) in enumerate(log.all_records()):
        loaded.replay(key, value, offset)
    assert loaded.share.groups["sg"].initialized == groups.share.groups["sg"].initialized


def test_a_failed_write_creates_no_group() -> None:
    log = FakeRecordLog()
    groups = coordinator(log)
    log.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert groups.share.initialize("sg", {ORDERS: ("orders", frozenset({0}))}) != ErrorCode.NONE
    assert "sg" not in groups.share.groups
