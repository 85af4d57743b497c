"""The KIP-932 share group records of ``__consumer_offsets`` (types 10-15): Kafka's bytes, round trips, how
``minibroker dump`` shows them, and that the consumer group coordinator does not take them for its own groups."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from minibroker.protocol import group_records as gr
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.records import RecordInput, build_batch

from minibroker.storage.uuid import uuid_to_str
from minibroker.testing import Broker
from tests.test_dump import T0, dump_json, run_dump, write_partition

ORDERS, PAYMENTS = bytes(range(1, 17)), bytes([0xFB] * 16)


def string(text: str) -> bytes:
    """A compact (flexible) string: uvarint length + 1, then UTF-8."""
    return bytes([len(text) + 1]) + text.encode()


def key_string(text: str) -> bytes:
    """Keys are not flexible: int16 length, then UTF-8."""
    return struct.pack(">h", len(text)) + text.encode()


RECORDS = [
    (gr.ShareGroupMetadataKey("sg"), gr.ShareGroupMetadataValue(epoch=4, metadata_hash=99)),
    (gr.ShareGroupMemberMetadataKey("sg", "m-1"), gr.ShareGroupMemberMetadataValue(None, "cid", "/10.0.0.1", ("orders",))),
    (gr.ShareGroupTargetAssignmentMetadataKey("sg"), gr.ShareGroupTargetAssignmentMetadataValue(4, T0)),
    (
        gr.ShareGroupTargetAssignmentMemberKey("sg", "m-1"),
        gr.ShareGroupTargetAssignmentMemberValue({PAYMENTS: frozenset({1}), ORDERS: frozenset({2, 0})}),
    ),
    (
        gr.ShareGroupCurrentMemberAssignmentKey("sg", "m-1"),
        gr.ShareGroupCurrentMemberAssignmentValue(4, 3, 0, {ORDERS: frozenset({0, 2})}),
    ),
    (
        gr.ShareGroupStatePartitionMetadataKey("sg"),
        gr.ShareGroupStatePartitionMetadataValue(
            initializing=(gr.ShareTopicPartitions(PAYMENTS, "payments", frozenset({1})),),
            initialized=(gr.ShareTopicPartitions(ORDERS, "orders", frozenset({0, 2})),),
            deleting=(gr.ShareDeletingTopic(bytes(16), "gone"),),
        ),
    ),
]


@pytest.mark.parametrize("key,value", RECORDS, ids=lambda x: type(x).__name__)
def test_share_group_records_round_trip(key: gr.RecordKey, value: gr.RecordValue) -> None:
    encoded_key = gr.encode_key(key)
    assert gr.decode_key(encoded_key) == key
    assert gr.decode_value(key, gr.encode_value(value)) == value
    assert gr.decode_value(key, None) is None


def test_share_group_record_bytes() -> None:
    """Type numbers and layouts as ShareGroup*.json: keys int16 type + v0 struct, values int16 0 + flexible struct."""
    assert gr.encode_key(gr.ShareGroupMetadataKey("sg")) == struct.pack(">h", 11) + key_string("sg")
    assert gr.encode_key(gr.ShareGroupMemberMetadataKey("sg", "m")) == struct.pack(">h", 10) + key_string("sg") + key_string("m")
    assert gr.encode_value(gr.ShareGroupMetadataValue(4, 99)) == struct.pack(">hiq", 0, 4, 99) + b"\x00"
    member = gr.ShareGroupMemberMetadataValue("r1", "cid", "h", ("a", "b"))
    assert gr.encode_value(member) == (
        struct.pack(">h", 0) + string("r1") + string("cid") + string("h") + b"\x03" + string("a") + string("b") + b"\x00"
    )
    assert gr.encode_value(gr.ShareGroupTargetAssignmentMetadataValue(4)) == struct.pack(">hi", 0, 4) + b"\x00"
    assert gr.encode_value(gr.ShareGroupTargetAssignmentMetadataValue(4, 7)) == (
        struct.pack(">hi", 0, 4) + b"\x01\x00\x08" + struct.pack(">q", 7)
    )
    current = gr.ShareGroupCurrentMemberAssignmentValue(5, 4, 0, {ORDERS: frozenset({3, 1})})
    assert gr.encode_value(current) == (
        struct.pack(">hiib", 0, 5, 4, 0) + b"\x02" + ORDERS + b"\x03" + struct.pack(">ii", 1, 3) + b"\x00" + b"\x00"
    )
    metadata = gr.ShareGroupStatePartitionMetadataValue(initialized=(gr.ShareTopicPartitions(ORDERS, "o", frozenset({0})),))
    assert gr.encode_value(metadata) == (
        struct.pack(">h", 0) + b"\x01" + b"\x02" + ORDERS + string("o") + b"\x02" + struct.pack(">i", 0) + b"\x00"
        + b"\x01" + b"\x00"
    )


def test_dump_shows_share_group_records_like_kafka(tmp_path: Path) -> None:
    encoded = [(gr.encode_key(k), gr.encode_value(v)) for k, v in RECORDS]
    encoded.append((gr.encode_key(gr.ShareGroupMemberMetadataKey("sg", "m-1")), None))
    directory = write_partition(tmp_path, "__consumer_offsets", [build_batch([RecordInput(k, v, (), T0) for k, v in encoded])])
    decoded = [r["decoded"] for r in dump_json(directory)[0]["records"]]
    orders, payments = uuid_to_str(ORDERS), uuid_to_str(PAYMENTS)
    member_key = {"type": 10, "data": {"groupId": "sg", "memberId": "m-1"}}
    assert decoded == [
        {"key": {"type": 11, "data": {"groupId": "sg"}}, "value": {"version": 0, "data": {"epoch": 4, "metadataHash": 99}}},
        {"key": member_key, "value": {"version": 0, "data": {
            "rackId": None, "clientId": "cid", "clientHost": "/10.0.0.1", "subscribedTopicNames": ["orders"],
        }}},
        {"key": {"type": 12, "data": {"groupId": "sg"}},
         "value": {"version": 0, "data": {"assignmentEpoch": 4, "assignmentTimestamp": T0}}},
        {"key": {"type": 13, "data": {"groupId": "sg", "memberId": "m-1"}}, "value": {"version": 0, "data": {
            "topicPartitions": [{"topicId": orders, "partitions": [0, 2]}, {"topicId": payments, "partitions": [1]}],
        }}},
        {"key": {"type": 14, "data": {"groupId": "sg", "memberId": "m-1"}}, "value": {"version": 0, "data": {
            "memberEpoch": 4, "previousMemberEpoch": 3, "state": 0,
            "assignedPartitions": [{"topicId": orders, "partitions": [0, 2]}],
        }}},
        {"key": {"type": 15, "data": {"groupId": "sg"}}, "value": {"version": 0, "data": {
            "initializingTopics": [{"topicId": payments, "topicName": "payments", "partitions": [1]}],
            "initializedTopics": [{"topicId": orders, "topicName": "orders", "partitions": [0, 2]}],
            "deletingTopics": [{"topicId": uuid_to_str(bytes(16)), "topicName": "gone"}],
        }}},
        {"key": member_key, "value": None},
    ]
    assert 'key: {"type":"11","data":{"groupId":"sg"}} payload: {"version":"0","data":{"epoch":4,"metadataHash":99}}' in (
        run_dump(directory).stdout
    )


async def test_the_consumer_group_coordinator_skips_share_group_records(tmp_path: Path) -> None:
    """Until share-group membership replays them, a restarted broker must not take a share group for a consumer
    group."""
    settings = {"offsets.topic.num.partitions": 1}
    async with Broker(settings, data_dir=tmp_path) as broker:
        topic = broker.core.groups.topic
        await topic.create()
        topic.append(partition_for("sg", 1), [(gr.encode_key(k), gr.encode_value(v)) for k, v in RECORDS])
        await broker.arestart()
        groups = broker.core.groups
        await groups.ownership.loaded()
        for coordinator in groups.coordinators.values():
            assert "sg" not in coordinator.groups and "sg" not in coordinator.consumer.groups
