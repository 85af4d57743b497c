"""__consumer_offsets keys and values, byte for byte as ONDISK.md §4 and the group-coordinator schemas lay them out.

Every expected encoding below is written by hand from the JSON field list: int16 record type or value
version first, then int16-length strings (non-flexible), or uvarint length+1 strings and a tagged-field
count (flexible, OffsetCommitValue v4).
"""

from __future__ import annotations

import pytest
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
    java_string_hash,
    partition_for,
)
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


def test_unknown_record_type_is_reported() -> None:
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_key(b"\x00\x03" + s("g"))
    assert info.value.record_type == 3


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
