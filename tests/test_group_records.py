"""__consumer_offsets keys and values, byte for byte as ONDISK.md §4 and the group-coordinator schemas lay them out.

Every expected encoding below is written by hand from the JSON field list: int16 record type or value
version first, then int16-length strings (non-flexible), or uvarint length+1 strings and a tagged-field
count (flexible, OffsetCommitValue v4).
"""

from __future__ import annotations

import pytest
from minibroker.protocol import group_records as gr
from minibroker.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordTypeError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
)
from minibroker.protocol.key_partitions import java_string_hash, partition_for
from minibroker.protocol.primitives import ProtocolError


def i16(v: int) -> bytes:
    return v.to_bytes(2, "big", signed=True)


def i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def i64(v: int) -> bytes:
    return v.to_bytes(8, "big", signed=True)


def s(text: str) -> bytes:
    return i16(len(text)) + text.encode()


TOPIC_ID = bytes(range(1, 17))


def test_offset_commit_key_bytes() -> None:
    expected = b"\x00\x01" + b"\x00\x05group" + b"\x00\x06orders" + b"\x00\x00\x00\x03"
    key = OffsetCommitKey("group", "orders", 3)
    assert encode_key(key) == expected
    assert decode_key(expected) == key


def test_group_metadata_key_bytes() -> None:
    expected = b"\x00\x02" + b"\x00\x09testgroup"
    assert encode_key(GroupMetadataKey("testgroup")) == expected
    assert decode_key(expected) == GroupMetadataKey("testgroup")


def test_legacy_offset_commit_key_is_an_offset_commit() -> None:
    assert decode_key(b"\x00\x00" + s("g") + s("t") + i32(7)) == OffsetCommitKey("g", "t", 7)


def test_offset_commit_value_v4_is_flexible() -> None:
    value = OffsetCommitValue(offset=5, metadata="m", commit_timestamp=1000, leader_epoch=7)
    expected = (
        b"\x00\x04"  # version 4
        + b"\x00\x00\x00\x00\x00\x00\x00\x05"  # offset
        + b"\x00\x00\x00\x07"  # leaderEpoch
        + b"\x02m"  # metadata: compact string, length + 1
        + b"\x00\x00\x00\x00\x00\x00\x03\xe8"  # commitTimestamp
        + b"\x00"  # no tagged fields
    )
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_commit_value_v4_tagged_topic_id() -> None:
    value = OffsetCommitValue(offset=0, metadata="", commit_timestamp=0, topic_id=TOPIC_ID)
    expected = b"\x00\x04" + i64(0) + i32(-1) + b"\x01" + i64(0) + b"\x01" + b"\x00" + b"\x10" + TOPIC_ID
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_commit_value_with_expiry_is_v1() -> None:
    value = OffsetCommitValue(offset=42, metadata="meta", commit_timestamp=10, expire_timestamp=20)
    expected = b"\x00\x01" + i64(42) + b"\x00\x04meta" + i64(10) + i64(20)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


@pytest.mark.parametrize(
    ("version", "body", "leader_epoch"),
    [
        (0, i64(9) + s("x") + i64(3), -1),
        (2, i64(9) + s("x") + i64(3), -1),
        (3, i64(9) + i32(4) + s("x") + i64(3), 4),
    ],
)
def test_older_offset_commit_values_decode(version: int, body: bytes, leader_epoch: int) -> None:
    assert decode_offset_value(i16(version) + body) == OffsetCommitValue(9, "x", 3, leader_epoch=leader_epoch)


def test_tombstones_decode_to_none() -> None:
    assert decode_offset_value(None) is None
    assert decode_group_value(None) is None


MEMBER = MemberMetadata(
    member_id="a",
    group_instance_id=None,
    client_id="c",
    client_host="/h",
    rebalance_timeout=300,
    session_timeout=10,
    subscription=b"S",
    assignment=b"A",
)


def test_group_metadata_value_v3_bytes() -> None:
    value = GroupMetadataValue("consumer", 2, "range", "a", 99, (MEMBER,))
    expected = (
        b"\x00\x03"  # version 3
        + b"\x00\x08consumer"  # protocolType
        + b"\x00\x00\x00\x02"  # generation
        + b"\x00\x05range"  # protocol
        + b"\x00\x01a"  # leader
        + b"\x00\x00\x00\x00\x00\x00\x00\x63"  # currentStateTimestamp
        + b"\x00\x00\x00\x01"  # one member
        + b"\x00\x01a"  # memberId
        + b"\xff\xff"  # groupInstanceId: null
        + b"\x00\x01c"  # clientId
        + b"\x00\x02/h"  # clientHost
        + b"\x00\x00\x01\x2c"  # rebalanceTimeout
        + b"\x00\x00\x00\x0a"  # sessionTimeout
        + b"\x00\x00\x00\x01S"  # subscription
        + b"\x00\x00\x00\x01A"  # assignment
    )
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_empty_group_metadata_value_bytes() -> None:
    value = GroupMetadataValue("", 0, None, None, 5, ())
    expected = b"\x00\x03" + b"\x00\x00" + i32(0) + b"\xff\xff" + b"\xff\xff" + i64(5) + i32(0)
    assert encode_group_value(value) == expected
    assert decode_group_value(expected) == value


def test_group_metadata_value_v0_defaults() -> None:
    member = i16(1) + b"m" + s("cid") + s("host") + i32(6000) + i32(0) + i32(0)
    data = i16(0) + s("consumer") + i32(1) + s("range") + s("m") + i32(1) + member
    decoded = decode_group_value(data)
    assert decoded == GroupMetadataValue(
        "consumer", 1, "range", "m", -1, (MemberMetadata("m", None, "cid", "host", -1, 6000, b"", b""),)
    )


@pytest.mark.parametrize("record_type", [9, 17, 18, 24, -1])  # a gap, streams groups, future
def test_unknown_record_type_is_reported(record_type: int) -> None:
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_key(i16(record_type) + s("g"))
    assert info.value.record_type == record_type


@pytest.mark.parametrize("data", [b"\x00\x05" + i64(1), b"\x00\x04" + i64(1), b"\x00"])
def test_bad_offset_values_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_offset_value(data)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("testgroup", -1172783827),
        ("polygenelubricants", -(1 << 31)),
        ("\U0001F600", 31 * 0xD83D + 0xDE00),  # a surrogate pair counts as two UTF-16 units, as in Java
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_partition_for_matches_kafka() -> None:
    assert partition_for("testgroup", 50) == 27
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(Integer.MIN_VALUE) is 0
    assert partition_for("", 50) == 0
    assert partition_for("a", 50) == 97 % 50


# ---- KIP-848 consumer group records (types 3-8, 16), all at v0, flexible ----

TOPIC_A = bytes(range(1, 17))
TOPIC_B = bytes(range(2, 18))
T_MS = 1_700_000_000_000
KEY_TYPES = {
    gr.ConsumerGroupMetadataKey: 3,
    gr.ConsumerGroupPartitionMetadataKey: 4,
    gr.ConsumerGroupMemberMetadataKey: 5,
    gr.ConsumerGroupTargetAssignmentMetadataKey: 6,
    gr.ConsumerGroupTargetAssignmentMemberKey: 7,
    gr.ConsumerGroupCurrentMemberAssignmentKey: 8,
    gr.ConsumerGroupRegularExpressionKey: 16,
}

MEMBER_METADATA = gr.ConsumerGroupMemberMetadataValue(
    instance_id="static-1",
    rack_id=None,
    client_id="client",
    client_host="/10.0.0.1",
    subscribed_topic_names=("orders", "payments"),
    subscribed_topic_regex=None,
    rebalance_timeout_ms=300000,
    server_assignor="uniform",
)

RECORDS = [
    (gr.ConsumerGroupMetadataKey("g"), gr.ConsumerGroupMetadataValue(epoch=5)),
    (gr.ConsumerGroupMetadataKey("g"), gr.ConsumerGroupMetadataValue(epoch=6, metadata_hash=-(1 << 63))),
    (
        gr.ConsumerGroupPartitionMetadataKey("g"),
        gr.ConsumerGroupPartitionMetadataValue((
            gr.PartitionMetadataTopic(TOPIC_B, "payments", 3), gr.PartitionMetadataTopic(TOPIC_A, "orders", 1),
        )),
    ),
    (gr.ConsumerGroupPartitionMetadataKey("g"), gr.ConsumerGroupPartitionMetadataValue(())),
    (gr.ConsumerGroupMemberMetadataKey("g", "m-1"), MEMBER_METADATA),
    (
        gr.ConsumerGroupMemberMetadataKey("g", "m-2"),
        gr.ConsumerGroupMemberMetadataValue(None, "rack-a", "", "", (), "orders.*", -1, None),
    ),
    (gr.ConsumerGroupTargetAssignmentMetadataKey("g"), gr.ConsumerGroupTargetAssignmentMetadataValue(4)),
    (gr.ConsumerGroupTargetAssignmentMetadataKey("g"), gr.ConsumerGroupTargetAssignmentMetadataValue(4, T_MS)),
    (
        gr.ConsumerGroupTargetAssignmentMemberKey("g", "m-1"),
        gr.ConsumerGroupTargetAssignmentMemberValue({TOPIC_A: frozenset({0, 2}), TOPIC_B: frozenset({1})}),
    ),
    (gr.ConsumerGroupTargetAssignmentMemberKey("g", "m-1"), gr.ConsumerGroupTargetAssignmentMemberValue({})),
    (
        gr.ConsumerGroupCurrentMemberAssignmentKey("g", "m-1"),
        gr.ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, {TOPIC_A: frozenset({0})}, {TOPIC_B: frozenset({1, 2})}),
    ),
    (
        gr.ConsumerGroupCurrentMemberAssignmentKey("g", "m-1"),
        gr.ConsumerGroupCurrentMemberAssignmentValue(0, -1, 0, {}, {}),
    ),
    (
        gr.ConsumerGroupRegularExpressionKey("g", "orders.*"),
        gr.ConsumerGroupRegularExpressionValue(("orders", "orders-eu"), 12, T_MS),
    ),
    (gr.ConsumerGroupRegularExpressionKey("g", ""), gr.ConsumerGroupRegularExpressionValue((), 0, 0)),
]


@pytest.mark.parametrize(("key", "value"), RECORDS, ids=lambda r: type(r).__name__)
def test_consumer_group_records_round_trip(key: gr.RecordKey, value: gr.RecordValue) -> None:
    key_bytes, value_bytes = encode_key(key), gr.encode_value(value)
    assert key_bytes[:2] == i16(KEY_TYPES[type(key)])
    assert value_bytes is not None and value_bytes[:2] == i16(0)  # v0, the only version
    assert decode_key(key_bytes) == key
    assert gr.decode_value(key, value_bytes) == value


@pytest.mark.parametrize("key", sorted({key for key, _ in RECORDS}, key=repr), ids=lambda k: type(k).__name__)
def test_consumer_group_tombstones(key: gr.RecordKey) -> None:
    assert gr.encode_value(None) is None
    assert gr.decode_value(key, None) is None


def test_record_types_match_their_schemas() -> None:
    """Each table entry's number is the api key Kafka's JSON gives both its key and its value schema."""
    for record_type, kind in gr.RECORD_TYPES.items():
        assert kind.record_type == record_type
        assert kind.key.message.api_key == record_type
        legacy = record_type == gr.LEGACY_OFFSET_COMMIT  # read as an OffsetCommitValue, as Kafka does
        assert kind.value.message.api_key == (gr.OFFSET_COMMIT if legacy else record_type)
    assert sorted(gr.RECORD_TYPES) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16]


def test_generic_value_codec_covers_classic_records() -> None:
    offset = OffsetCommitValue(offset=5, metadata="m", commit_timestamp=1000, expire_timestamp=2000)
    group = GroupMetadataValue("consumer", 2, "range", "a", 99, (MEMBER,))
    assert gr.encode_value(offset) == encode_offset_value(offset)
    assert gr.encode_value(group) == encode_group_value(group)
    assert gr.decode_value(OffsetCommitKey("g", "t", 0), encode_offset_value(offset)) == offset
    assert gr.decode_value(GroupMetadataKey("g"), encode_group_value(group)) == group


def test_consumer_group_keys_bytes() -> None:
    """Keys are not flexible: int16 record type, then int16-length strings."""
    assert encode_key(gr.ConsumerGroupMetadataKey("g")) == i16(3) + s("g")
    assert encode_key(gr.ConsumerGroupMemberMetadataKey("g", "m")) == i16(5) + s("g") + s("m")
    assert encode_key(gr.ConsumerGroupRegularExpressionKey("g", "t.*")) == i16(16) + s("g") + s("t.*")
    assert decode_key(i16(8) + s("grp") + s("mem")) == gr.ConsumerGroupCurrentMemberAssignmentKey("grp", "mem")


def test_consumer_group_metadata_value_bytes() -> None:
    """Epoch, then the tag buffer: one field, tag 0 (MetadataHash), 8 bytes; the default hash 0 is not written."""
    tagged = i16(0) + i32(5) + b"\x01" + b"\x00" + b"\x08" + i64(0x1234_5678_9ABC_DEF0)
    value = gr.ConsumerGroupMetadataValue(5, 0x1234_5678_9ABC_DEF0)
    assert gr.decode_value(gr.ConsumerGroupMetadataKey("g"), tagged) == value
    assert gr.encode_value(value) == tagged
    assert gr.encode_value(gr.ConsumerGroupMetadataValue(5)) == i16(0) + i32(5) + b"\x00"


def test_current_member_assignment_value_bytes() -> None:
    """Compact arrays (length + 1) sorted by topic id then partition; each struct ends in its own tag buffer."""
    value = gr.ConsumerGroupCurrentMemberAssignmentValue(
        7, 6, 2, {TOPIC_B: frozenset({3, 1}), TOPIC_A: frozenset({2})}, {}
    )
    expected = (
        i16(0) + i32(7) + i32(6) + b"\x02"  # version, memberEpoch, previousMemberEpoch, state
        + b"\x03"  # assignedPartitions: 2 topics
        + TOPIC_A + b"\x02" + i32(2) + b"\x00"
        + TOPIC_B + b"\x03" + i32(1) + i32(3) + b"\x00"
        + b"\x01"  # partitionsPendingRevocation: empty
        + b"\x00"  # no tagged fields
    )
    assert gr.encode_value(value) == expected
    assert gr.decode_value(gr.ConsumerGroupCurrentMemberAssignmentKey("g", "m"), expected) == value


def test_fields_minibroker_does_not_keep_are_read_and_dropped() -> None:
    """Partition racks, as a Kafka broker may have written them, are dropped; a classic member's metadata is kept."""
    racks = b"\x02" + i32(0) + b"\x02" + b"\x02a" + b"\x00"  # one partition, 0, with rack "a"
    partition_metadata = i16(0) + b"\x02" + TOPIC_A + b"\x07orders" + i32(1) + racks + b"\x00" + b"\x00"
    assert gr.decode_value(gr.ConsumerGroupPartitionMetadataKey("g"), partition_metadata) == (
        gr.ConsumerGroupPartitionMetadataValue((gr.PartitionMetadataTopic(TOPIC_A, "orders", 1),))
    )

    classic = i32(45000) + b"\x02" + b"\x06range" + b"\x02x" + b"\x00" + b"\x00"  # sessionTimeoutMs, one protocol
    member = (
        i16(0) + b"\x00" + b"\x00" + b"\x02c" + b"\x02h" + b"\x02\x02t" + b"\x00" + i32(1000) + b"\x00"
        + b"\x01" + b"\x00" + bytes([1 + len(classic)]) + b"\x01" + classic  # tag 0: a non-null ClassicMemberMetadata
    )
    decoded = gr.ConsumerGroupMemberMetadataValue(
        None, None, "c", "h", ("t",), None, 1000, None, gr.ClassicMemberMetadata(45000, (("range", b"x"),)),
    )
    assert gr.decode_value(gr.ConsumerGroupMemberMetadataKey("g", "m"), member) == decoded
    assert gr.encode_value(decoded) == member  # a classic member's metadata is kept and written back the same



def test_assignment_epochs_are_kept_and_written_back() -> None:
    """KIP-1251's AssignmentEpochs (tag 0 of each topic's entry): read, and written back the same; a topic whose list
    does not match its partitions is read without epochs, as Kafka reads it."""
    # Partitions [0], then the tag buffer: one field, tag 0 (AssignmentEpochs), 5 bytes: [3].
    with_epochs = TOPIC_A + b"\x02" + i32(0) + b"\x01" + b"\x00" + b"\x05" + b"\x02" + i32(3)
    assignment = i16(0) + i32(3) + i32(2) + b"\x01" + b"\x02" + with_epochs + b"\x01" + b"\x00"
    key = gr.ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    value = gr.ConsumerGroupCurrentMemberAssignmentValue(3, 2, 1, {TOPIC_A: frozenset({0})}, {}, {(TOPIC_A, 0): 3})
    assert gr.decode_value(key, assignment) == value
    assert gr.encode_value(value) == assignment

    wrong_length = TOPIC_A + b"\x02" + i32(0) + b"\x01" + b"\x00" + b"\x09" + b"\x03" + i32(3) + i32(4)
    mismatched = i16(0) + i32(3) + i32(2) + b"\x01" + b"\x02" + wrong_length + b"\x01" + b"\x00"
    assert gr.decode_value(key, mismatched).epochs == {}


@pytest.mark.parametrize("data", [i16(1) + i32(5) + b"\x00", i16(-1) + i32(5) + b"\x00", i16(0) + i32(5)[:2]])
def test_bad_consumer_group_values_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        gr.decode_value(gr.ConsumerGroupMetadataKey("g"), data)
