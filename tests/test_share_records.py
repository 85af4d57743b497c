"""``__share_group_state`` keys and values: the bytes Kafka's ShareSnapshot/ShareUpdate schemas lay out, built here by
hand field by field from the JSON (internal/share-coordinator), and the conversions to and from PersistedShareState."""

from __future__ import annotations

import json
import re
import struct

import pytest
from minibroker.protocol import share_records as sr
from minibroker.protocol.coordinator_records import UnknownRecordTypeError
from minibroker.protocol.primitives import ProtocolError

from minibroker.protocol.share_state import DeliveryState, PersistedShareState, SharePartitionKey, StateBatch
from tests.conftest import SPEC_DIR, needs_kafka_spec

TOPIC_ID = bytes(range(16))
KEY = SharePartitionKey("grp", TOPIC_ID, 7)
BATCHES = (
    StateBatch(100, 104, DeliveryState.ACKNOWLEDGED, 1),
    StateBatch(105, 105, DeliveryState.AVAILABLE, 3),
    StateBatch(106, 110, DeliveryState.ARCHIVED, 5),
)


def key_bytes(record_type: int) -> bytes:
    """int16 type, then GroupId (int16-length string), TopicId (16 bytes), Partition (int32): v0 is not flexible."""
    return struct.pack(">hh", record_type, 3) + b"grp" + TOPIC_ID + struct.pack(">i", 7)


def batches_bytes(batches: tuple[StateBatch, ...]) -> bytes:
    """A compact array (uvarint length + 1) of FirstOffset int64, LastOffset int64, DeliveryState int8,
    DeliveryCount int16, each struct ending with its empty tagged-field section."""
    out = bytes([len(batches) + 1])
    for b in batches:
        out += struct.pack(">qqbh", b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count) + b"\x00"
    return out


def tagged_count(count: int) -> bytes:
    """DeliveryCompleteCount is tag 0, written only when it is not its default -1."""
    return b"\x00" if count == -1 else b"\x01\x00\x04" + struct.pack(">i", count)


@pytest.mark.parametrize("record_key,record_type", [(sr.ShareSnapshotKey(KEY), 0), (sr.ShareUpdateKey(KEY), 1)])
def test_keys_are_the_record_type_then_the_key_struct(record_key: sr.ShareKey, record_type: int) -> None:
    data = sr.encode_key(record_key)
    assert data == key_bytes(record_type)
    assert sr.decode_key(data) == record_key


@pytest.mark.parametrize("count", [-1, 12])
def test_snapshot_value_bytes(count: int) -> None:
    value = sr.ShareSnapshotValue(
        snapshot_epoch=2, state_epoch=1, leader_epoch=9, start_offset=100, create_timestamp=1_000, write_timestamp=2_000,
        batches=BATCHES, delivery_complete_count=count,
    )
    data = sr.encode_value(value)
    expected = (
        struct.pack(">hiiiqqq", 0, 2, 1, 9, 100, 1_000, 2_000) + batches_bytes(BATCHES) + tagged_count(count)
    )
    assert data == expected
    assert sr.decode_value(sr.ShareSnapshotKey(KEY), data) == value
    assert value.state() == PersistedShareState(1, 9, 100, BATCHES, count)


@pytest.mark.parametrize("count", [-1, 3])
def test_update_value_bytes(count: int) -> None:
    value = sr.ShareUpdateValue(snapshot_epoch=4, leader_epoch=-1, start_offset=-1, batches=BATCHES[1:],
                                delivery_complete_count=count)
    data = sr.encode_value(value)
    assert data == struct.pack(">hiiq", 0, 4, -1, -1) + batches_bytes(BATCHES[1:]) + tagged_count(count)
    assert sr.decode_value(sr.ShareUpdateKey(KEY), data) == value


def test_conversions_from_persisted_state() -> None:
    state = PersistedShareState(state_epoch=3, leader_epoch=8, start_offset=100, batches=BATCHES,
                                delivery_complete_count=5)
    snapshot = sr.snapshot_of(state, snapshot_epoch=6, create_timestamp=10, write_timestamp=20)
    assert (snapshot.snapshot_epoch, snapshot.create_timestamp, snapshot.write_timestamp) == (6, 10, 20)
    assert snapshot.state() == state
    update = sr.update_of(state, snapshot_epoch=6)
    assert update == sr.ShareUpdateValue(6, 8, 100, BATCHES, 5)


def test_tombstones_and_unknown_types() -> None:
    assert sr.encode_value(None) is None
    assert sr.decode_value(sr.ShareUpdateKey(KEY), None) is None
    with pytest.raises(UnknownRecordTypeError) as raised:
        sr.decode_key(struct.pack(">h", 2) + key_bytes(0)[2:])
    assert raised.value.record_type == 2
    with pytest.raises(ProtocolError):
        sr.decode_value(sr.ShareSnapshotKey(KEY), struct.pack(">h", 1) + b"\x00" * 40)  # no version 1
    with pytest.raises(ProtocolError):
        sr.decode_key(key_bytes(0)[:-2])


@needs_kafka_spec
@pytest.mark.parametrize("name,message", [
    ("ShareSnapshotKey", sr.RECORD_TYPES[0].key.message), ("ShareSnapshotValue", sr.RECORD_TYPES[0].value.message),
    ("ShareUpdateKey", sr.RECORD_TYPES[1].key.message), ("ShareUpdateValue", sr.RECORD_TYPES[1].value.message),
])
def test_the_codec_follows_kafkas_json(name: str, message) -> None:
    """Kafka's record type numbers (apiKey) and field order, so the hand-built bytes above are Kafka's."""
    text = (SPEC_DIR / "internal" / "share-coordinator" / f"{name}.json").read_text()
    spec = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE))
    assert message.name == name and message.api_key == spec["apiKey"]
    assert [f.name for f in message.fields] == [f["name"] for f in spec["fields"]]
