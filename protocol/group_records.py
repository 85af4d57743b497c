"""Keys and values of the ``__consumer_offsets`` records (ONDISK.md §4), sans-IO.

A key is ``int16 record type`` then the key struct at version 0; a value is ``int16 version`` then the
value struct at that version, and a missing (``None``) value is a tombstone. The structs are the
generated schemas in ``protocol.messages``, so the bytes are exactly the ones Kafka writes and reads:
offset commits at OffsetCommitValue v4 (flexible, v1 when an expire timestamp is given) and group
metadata at GroupMetadataValue v3. Types 0 (legacy) and 1 are both offset commits, as in Kafka's
GroupCoordinatorRecordSerde.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from .messages import (
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    LEGACY_OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
)
from .primitives import ProtocolError, Reader, Writer
from .schema import Message, codec, in_range

LEGACY_OFFSET_COMMIT = 0
OFFSET_COMMIT = 1
GROUP_METADATA = 2

OFFSET_COMMIT_VALUE_VERSION = 4
OFFSET_COMMIT_EXPIRING_VALUE_VERSION = 1  # the only version with expireTimestamp
GROUP_METADATA_VALUE_VERSION = 3
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1
ZERO_UUID = bytes(16)

_INT_MIN = -(1 << 31)


class UnknownRecordTypeError(ProtocolError):
    """A key of a record type this coordinator does not handle (KIP-848 consumer groups, share groups...)."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown __consumer_offsets record type {record_type}")
        self.record_type = record_type


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


RecordKey = OffsetCommitKey | GroupMetadataKey


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp: int = NO_TIMESTAMP  # -1: none; otherwise the record is written at v1
    topic_id: bytes | None = None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = NO_TIMESTAMP
    members: tuple[MemberMetadata, ...] = field(default=())


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        value = (31 * value + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=65536)
def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % partitions`` (``Utils.abs(Integer.MIN_VALUE)`` is 0); cached, as
    coordinators ask for the same few ids on every request."""
    hash_code = java_string_hash(group_id)
    return (0 if hash_code == _INT_MIN else abs(hash_code)) % partitions


def _encode(prefix: int, message: Message, version: int, body: dict) -> bytes:
    """``int16 prefix`` (a key's record type, a value's version) then ``message`` at ``version``."""
    writer = Writer()
    writer.int16(prefix)
    codec(message, version).encode(writer, body)
    return writer.getvalue()


def encode_key(key: RecordKey) -> bytes:
    if isinstance(key, OffsetCommitKey):
        body = {"group": key.group, "topic": key.topic, "partition": key.partition}
        return _encode(OFFSET_COMMIT, OFFSET_COMMIT_KEY, 0, body)
    return _encode(GROUP_METADATA, GROUP_METADATA_KEY, 0, {"group": key.group})


def decode_key(data: bytes | bytearray | memoryview) -> RecordKey:
    """Raises UnknownRecordTypeError for record types other than 0-2, ProtocolError for malformed bytes."""
    reader = Reader(data)
    record_type = reader.int16()
    if record_type in (LEGACY_OFFSET_COMMIT, OFFSET_COMMIT):
        schema = LEGACY_OFFSET_COMMIT_KEY if record_type == LEGACY_OFFSET_COMMIT else OFFSET_COMMIT_KEY
        body = codec(schema, 0).decode(reader)
        return OffsetCommitKey(body["group"], body["topic"], body["partition"])
    if record_type == GROUP_METADATA:
        return GroupMetadataKey(codec(GROUP_METADATA_KEY, 0).decode(reader)["group"])
    raise UnknownRecordTypeError(record_type)


def encode_offset_value(value: OffsetCommitValue) -> bytes:
    version = OFFSET_COMMIT_VALUE_VERSION if value.expire_timestamp == NO_TIMESTAMP else OFFSET_COMMIT_EXPIRING_VALUE_VERSION
    body = {
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp,
        "expire_timestamp": value.expire_timestamp,
        "topic_id": value.topic_id,
    }
    return _encode(version, OFFSET_COMMIT_VALUE, version, body)


def _decode_versioned(message: Message, data: bytes | bytearray | memoryview) -> dict:
    reader = Reader(data)
    version = reader.int16()
    if not in_range(version, message.valid):
        raise ProtocolError(f"{message.name} has no version {version}")
    return codec(message, version).decode(reader)


def decode_offset_value(data: bytes | bytearray | memoryview | None) -> OffsetCommitValue | None:
    """The value of an offset commit record; None for a tombstone."""
    if data is None:
        return None
    body = _decode_versioned(OFFSET_COMMIT_VALUE, data)
    topic_id = body["topic_id"]
    return OffsetCommitValue(
        offset=body["offset"],
        metadata=body["metadata"],
        commit_timestamp=body["commit_timestamp"],
        leader_epoch=body["leader_epoch"],
        expire_timestamp=body["expire_timestamp"],
        topic_id=None if topic_id == ZERO_UUID else topic_id,
    )


def encode_group_value(value: GroupMetadataValue) -> bytes:
    body = {
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "current_state_timestamp": value.current_state_timestamp,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout,
                "session_timeout": m.session_timeout,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in value.members
        ],
    }
    return _encode(GROUP_METADATA_VALUE_VERSION, GROUP_METADATA_VALUE, GROUP_METADATA_VALUE_VERSION, body)


def decode_group_value(data: bytes | bytearray | memoryview | None) -> GroupMetadataValue | None:
    """The value of a group metadata record (any version 0-4); None for a tombstone."""
    if data is None:
        return None
    body = _decode_versioned(GROUP_METADATA_VALUE, data)
    members = tuple(
        MemberMetadata(
            member_id=m["member_id"],
            group_instance_id=m["group_instance_id"],
            client_id=m["client_id"],
            client_host=m["client_host"],
            rebalance_timeout=m["rebalance_timeout"],
            session_timeout=m["session_timeout"],
            subscription=m["subscription"],
            assignment=m["assignment"],
        )
        for m in body["members"]
    )
    return GroupMetadataValue(
        protocol_type=body["protocol_type"],
        generation=body["generation"],
        protocol=body["protocol"],
        leader=body["leader"],
        current_state_timestamp=body["current_state_timestamp"],
        members=members,
    )
