"""Keys and values of the ``__consumer_offsets`` records (ONDISK.md §4), sans-IO.

A key is ``int16 record type`` then the key struct at version 0; a value is ``int16 version`` then the
value struct at that version, and a missing (``None``) value is a tombstone. The structs are the
generated schemas in ``protocol.messages``, so the bytes are exactly the ones Kafka writes and reads:
offset commits at OffsetCommitValue v4 (flexible, v1 when an expire timestamp is given), group
metadata at GroupMetadataValue v3 (both capped at what an emulated release wrote: ``caps``), the KIP-848 consumer group records (types 3-8 and 16) and the KIP-932
share group records (types 10-15) at v0, their only version. Types 0 (legacy) and 1 are both offset commits, as in Kafka's GroupCoordinatorRecordSerde.

Every record type is one ``RecordType`` entry in ``RECORD_TYPES`` (``coordinator_records``): its key and value
classes, their schemas and the conversions between the frozen dataclasses used here and the dicts the generic codec
reads and writes, so ``encode_key``/``decode_key`` and ``encode_value``/``decode_value`` are the same few lines for
all types. The dataclasses keep what a coordinator needs: fields Kafka has deprecated (partition racks) are dropped on
read and never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache

from .messages import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_MEMBER_METADATA_KEY,
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_GROUP_METADATA_KEY,
    CONSUMER_GROUP_METADATA_VALUE,
    CONSUMER_GROUP_PARTITION_METADATA_KEY,
    CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
    CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    LEGACY_OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    SHARE_GROUP_MEMBER_METADATA_KEY,
    SHARE_GROUP_MEMBER_METADATA_VALUE,
    SHARE_GROUP_METADATA_KEY,
    SHARE_GROUP_METADATA_VALUE,
    SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
    SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
)
from .coordinator_records import NO_CAPS, Body, RecordSchema, RecordTable, RecordType, flat
from .coordinator_records import UnknownRecordTypeError as UnknownRecordTypeError  # the coordinators catch it from here

CONSUMER_OFFSETS = "__consumer_offsets"

LEGACY_OFFSET_COMMIT = 0
OFFSET_COMMIT = 1
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15
CONSUMER_GROUP_REGULAR_EXPRESSION = 16

OFFSET_COMMIT_VALUE_VERSION = 4
OFFSET_COMMIT_EXPIRING_VALUE_VERSION = 1  # the only version with expireTimestamp
GROUP_METADATA_VALUE_VERSION = 3
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1
ZERO_UUID = bytes(16)


TopicPartitions = dict[bytes, frozenset[int]]  # topic id (16-byte uuid) -> partitions
PartitionEpochs = dict[tuple[bytes, int], int]  # (topic id, partition) -> the member epoch it was assigned at
# ---- classic groups and offsets (types 0-2) ----


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


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


# ---- KIP-848 consumer groups (types 3-8, 16) ----


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # tagged; 0 (Kafka's default) is not written


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class PartitionMetadataTopic:
    topic_id: bytes
    name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[PartitionMetadataTopic, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member of the classic protocol in a consumer-protocol group joined with (KIP-848's online migration)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, ConsumerProtocolSubscription bytes), in preference order


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0  # tagged; 0 (Kafka's default) is not written


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions
    pending_revocation: TopicPartitions
    # KIP-1251's AssignmentEpochs, of the partitions that have one (a topic's list is written when all of its
    # partitions have theirs; a record without them, as Kafka before 4.3 writes, leaves this empty)
    epochs: PartitionEpochs = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group: str
    regex: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int


# ---- KIP-932 share groups (types 10-15) ----


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0  # a plain field here, not tagged as in ConsumerGroupMetadataValue


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0  # tagged; 0 (Kafka's default) is not written


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    partitions: TopicPartitions


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ShareTopicPartitions:
    """A topic's share partitions being initialized, or initialized, in ``__share_group_state``."""

    topic_id: bytes
    name: str
    partitions: frozenset[int]


@dataclass(frozen=True, slots=True)
class ShareDeletingTopic:
    topic_id: bytes
    name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    """Which share partitions of the group have their state initialized, are being initialized or deleted."""

    initializing: tuple[ShareTopicPartitions, ...] = ()
    initialized: tuple[ShareTopicPartitions, ...] = ()
    deleting: tuple[ShareDeletingTopic, ...] = ()


SHARE_GROUP_KEYS = (
    ShareGroupMetadataKey,
    ShareGroupMemberMetadataKey,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupStatePartitionMetadataKey,
)


RecordKey = (
    OffsetCommitKey
    | GroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
    | ShareGroupMetadataKey
    | ShareGroupMemberMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)
RecordValue = (
    OffsetCommitValue
    | GroupMetadataValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
    | ShareGroupMetadataValue
    | ShareGroupMemberMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)


# ---- the record types: dataclass <-> codec dict ----


def _offset_commit_body(value: OffsetCommitValue) -> Body:
    return {
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp,
        "expire_timestamp": value.expire_timestamp,
        "topic_id": value.topic_id,
    }


def _offset_commit_value(body: Body) -> OffsetCommitValue:
    topic_id = body["topic_id"]
    return OffsetCommitValue(
        offset=body["offset"],
        metadata=body["metadata"],
        commit_timestamp=body["commit_timestamp"],
        leader_epoch=body["leader_epoch"],
        expire_timestamp=body["expire_timestamp"],
        topic_id=None if topic_id == ZERO_UUID else topic_id,
    )


def _offset_commit_version(value: OffsetCommitValue) -> int:
    expiring = value.expire_timestamp != NO_TIMESTAMP
    return OFFSET_COMMIT_EXPIRING_VALUE_VERSION if expiring else OFFSET_COMMIT_VALUE_VERSION


_MEMBER_FIELDS = tuple(f.name for f in fields(MemberMetadata))  # the same names as GroupMetadataValue's member struct


def _group_body(value: GroupMetadataValue) -> Body:
    return {
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "current_state_timestamp": value.current_state_timestamp,
        "members": [{name: getattr(m, name) for name in _MEMBER_FIELDS} for m in value.members],
    }


def _group_value(body: Body) -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type=body["protocol_type"],
        generation=body["generation"],
        protocol=body["protocol"],
        leader=body["leader"],
        current_state_timestamp=body["current_state_timestamp"],
        members=tuple(MemberMetadata(*(m[name] for name in _MEMBER_FIELDS)) for m in body["members"]),
    )


def _partition_metadata_body(value: ConsumerGroupPartitionMetadataValue) -> Body:
    topics = [
        {"topic_id": t.topic_id, "topic_name": t.name, "num_partitions": t.num_partitions, "partition_metadata": []}
        for t in value.topics
    ]
    return {"topics": topics}


def _partition_metadata_value(body: Body) -> ConsumerGroupPartitionMetadataValue:
    return ConsumerGroupPartitionMetadataValue(
        tuple(PartitionMetadataTopic(t["topic_id"], t["topic_name"], t["num_partitions"]) for t in body["topics"])
    )


def _member_metadata_body(value: ConsumerGroupMemberMetadataValue) -> Body:
    classic = value.classic
    return {
        "classic_member_metadata": None if classic is None else {
            "session_timeout_ms": classic.session_timeout_ms,
            "supported_protocols": [{"name": name, "metadata": metadata} for name, metadata in classic.protocols],
        },
        "instance_id": value.instance_id,
        "rack_id": value.rack_id,
        "client_id": value.client_id,
        "client_host": value.client_host,
        "subscribed_topic_names": list(value.subscribed_topic_names),
        "subscribed_topic_regex": value.subscribed_topic_regex,
        "rebalance_timeout_ms": value.rebalance_timeout_ms,
        "server_assignor": value.server_assignor,
    }


def _member_metadata_value(body: Body) -> ConsumerGroupMemberMetadataValue:
    return ConsumerGroupMemberMetadataValue(
        instance_id=body["instance_id"],
        rack_id=body["rack_id"],
        client_id=body["client_id"],
        client_host=body["client_host"],
        subscribed_topic_names=tuple(body["subscribed_topic_names"]),
        subscribed_topic_regex=body["subscribed_topic_regex"],
        rebalance_timeout_ms=body["rebalance_timeout_ms"],
        server_assignor=body["server_assignor"],
        classic=_classic_member(body["classic_member_metadata"]),
    )


def _classic_member(body: Body | None) -> ClassicMemberMetadata | None:
    if body is None:
        return None
    protocols = tuple((p["name"], bytes(p["metadata"])) for p in body["supported_protocols"])
    return ClassicMemberMetadata(body["session_timeout_ms"], protocols)


def _topic_partitions_body(partitions: TopicPartitions) -> list[Body]:
    """Sorted by topic id, then partition, so that equal assignments are equal bytes."""
    return [{"topic_id": topic_id, "partitions": sorted(partitions[topic_id])} for topic_id in sorted(partitions)]


def _topic_partitions(body: list[Body]) -> TopicPartitions:
    return {entry["topic_id"]: frozenset(entry["partitions"]) for entry in body}


def _with_epochs(partitions: TopicPartitions, epochs: PartitionEpochs) -> list[Body]:
    """Each topic's entry with its partitions' assignment epochs, when every partition of the topic has one."""
    entries = _topic_partitions_body(partitions)
    for entry in entries:
        keys = [(entry["topic_id"], partition) for partition in entry["partitions"]]
        entry["assignment_epochs"] = [epochs[key] for key in keys] if all(key in epochs for key in keys) else None
    return entries


def _epochs(body: list[Body]) -> PartitionEpochs:
    """The assignment epochs given (Kafka ignores a list whose length is not the partitions')."""
    epochs: PartitionEpochs = {}
    for entry in body:
        given = entry.get("assignment_epochs")
        if given is not None and len(given) == len(entry["partitions"]):
            epochs.update(((entry["topic_id"], p), e) for p, e in zip(entry["partitions"], given))
    return epochs


def _current_assignment_body(value: ConsumerGroupCurrentMemberAssignmentValue) -> Body:
    return {
        "member_epoch": value.member_epoch,
        "previous_member_epoch": value.previous_member_epoch,
        "state": value.state,
        "assigned_partitions": _with_epochs(value.assigned, value.epochs),
        "partitions_pending_revocation": _with_epochs(value.pending_revocation, value.epochs),
    }


def _current_assignment_value(body: Body) -> ConsumerGroupCurrentMemberAssignmentValue:
    return ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=body["member_epoch"],
        previous_member_epoch=body["previous_member_epoch"],
        state=body["state"],
        assigned=_topic_partitions(body["assigned_partitions"]),
        pending_revocation=_topic_partitions(body["partitions_pending_revocation"]),
        epochs=_epochs(body["assigned_partitions"]) | _epochs(body["partitions_pending_revocation"]),
    )


def _share_topics_body(topics: tuple[ShareTopicPartitions, ...]) -> list[Body]:
    return [{"topic_id": t.topic_id, "topic_name": t.name, "partitions": sorted(t.partitions)} for t in topics]


def _share_topics(body: list[Body]) -> tuple[ShareTopicPartitions, ...]:
    return tuple(ShareTopicPartitions(t["topic_id"], t["topic_name"], frozenset(t["partitions"])) for t in body)


def _state_partition_metadata_body(value: ShareGroupStatePartitionMetadataValue) -> Body:
    return {
        "initializing_topics": _share_topics_body(value.initializing),
        "initialized_topics": _share_topics_body(value.initialized),
        "deleting_topics": [{"topic_id": t.topic_id, "topic_name": t.name} for t in value.deleting],
    }


def _state_partition_metadata_value(body: Body) -> ShareGroupStatePartitionMetadataValue:
    return ShareGroupStatePartitionMetadataValue(
        initializing=_share_topics(body["initializing_topics"]),
        initialized=_share_topics(body["initialized_topics"]),
        deleting=tuple(ShareDeletingTopic(t["topic_id"], t["topic_name"]) for t in body["deleting_topics"]),
    )


_OFFSET_COMMIT_VALUE = RecordSchema(OffsetCommitValue, OFFSET_COMMIT_VALUE, _offset_commit_body, _offset_commit_value)
_TYPES = (
    RecordType(
        LEGACY_OFFSET_COMMIT,
        flat(OffsetCommitKey, LEGACY_OFFSET_COMMIT_KEY, "group", "topic", "partition"),
        _OFFSET_COMMIT_VALUE,
        _offset_commit_version,
    ),
    RecordType(
        OFFSET_COMMIT,
        flat(OffsetCommitKey, OFFSET_COMMIT_KEY, "group", "topic", "partition"),
        _OFFSET_COMMIT_VALUE,
        _offset_commit_version,
    ),
    RecordType(
        GROUP_METADATA,
        flat(GroupMetadataKey, GROUP_METADATA_KEY, "group"),
        RecordSchema(GroupMetadataValue, GROUP_METADATA_VALUE, _group_body, _group_value),
        lambda _: GROUP_METADATA_VALUE_VERSION,
    ),
    RecordType(
        CONSUMER_GROUP_METADATA,
        flat(ConsumerGroupMetadataKey, CONSUMER_GROUP_METADATA_KEY, "group_id"),
        flat(ConsumerGroupMetadataValue, CONSUMER_GROUP_METADATA_VALUE, "epoch", "metadata_hash"),
    ),
    RecordType(
        CONSUMER_GROUP_PARTITION_METADATA,
        flat(ConsumerGroupPartitionMetadataKey, CONSUMER_GROUP_PARTITION_METADATA_KEY, "group_id"),
        RecordSchema(
            ConsumerGroupPartitionMetadataValue,
            CONSUMER_GROUP_PARTITION_METADATA_VALUE,
            _partition_metadata_body,
            _partition_metadata_value,
        ),
    ),
    RecordType(
        CONSUMER_GROUP_MEMBER_METADATA,
        flat(ConsumerGroupMemberMetadataKey, CONSUMER_GROUP_MEMBER_METADATA_KEY, "group_id", "member_id"),
        RecordSchema(
            ConsumerGroupMemberMetadataValue,
            CONSUMER_GROUP_MEMBER_METADATA_VALUE,
            _member_metadata_body,
            _member_metadata_value,
        ),
    ),
    RecordType(
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        flat(ConsumerGroupTargetAssignmentMetadataKey, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, "group_id"),
        flat(
            ConsumerGroupTargetAssignmentMetadataValue,
            CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
            "assignment_epoch",
            "assignment_timestamp",
        ),
    ),
    RecordType(
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        flat(
            ConsumerGroupTargetAssignmentMemberKey, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, "group_id", "member_id"
        ),
        RecordSchema(
            ConsumerGroupTargetAssignmentMemberValue,
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            lambda value: {"topic_partitions": _topic_partitions_body(value.partitions)},
            lambda body: ConsumerGroupTargetAssignmentMemberValue(_topic_partitions(body["topic_partitions"])),
        ),
    ),
    RecordType(
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        flat(
            ConsumerGroupCurrentMemberAssignmentKey,
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            "group_id",
            "member_id",
        ),
        RecordSchema(
            ConsumerGroupCurrentMemberAssignmentValue,
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            _current_assignment_body,
            _current_assignment_value,
        ),
    ),
    RecordType(
        CONSUMER_GROUP_REGULAR_EXPRESSION,
        flat(
            ConsumerGroupRegularExpressionKey,
            CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
            "group_id",
            "regular_expression",
        ),
        RecordSchema(
            ConsumerGroupRegularExpressionValue,
            CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
            lambda value: {"topics": list(value.topics), "version": value.version, "timestamp": value.timestamp},
            lambda body: ConsumerGroupRegularExpressionValue(tuple(body["topics"]), body["version"], body["timestamp"]),
        ),
    ),
    RecordType(
        SHARE_GROUP_MEMBER_METADATA,
        flat(ShareGroupMemberMetadataKey, SHARE_GROUP_MEMBER_METADATA_KEY, "group_id", "member_id"),
        RecordSchema(
            ShareGroupMemberMetadataValue,
            SHARE_GROUP_MEMBER_METADATA_VALUE,
            lambda value: {
                "rack_id": value.rack_id,
                "client_id": value.client_id,
                "client_host": value.client_host,
                "subscribed_topic_names": list(value.subscribed_topic_names),
            },
            lambda body: ShareGroupMemberMetadataValue(
                body["rack_id"], body["client_id"], body["client_host"], tuple(body["subscribed_topic_names"]),
            ),
        ),
    ),
    RecordType(
        SHARE_GROUP_METADATA,
        flat(ShareGroupMetadataKey, SHARE_GROUP_METADATA_KEY, "group_id"),
        flat(ShareGroupMetadataValue, SHARE_GROUP_METADATA_VALUE, "epoch", "metadata_hash"),
    ),
    RecordType(
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        flat(ShareGroupTargetAssignmentMetadataKey, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, "group_id"),
        flat(
            ShareGroupTargetAssignmentMetadataValue,
            SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
            "assignment_epoch",
            "assignment_timestamp",
        ),
    ),
    RecordType(
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        flat(ShareGroupTargetAssignmentMemberKey, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, "group_id", "member_id"),
        RecordSchema(
            ShareGroupTargetAssignmentMemberValue,
            SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
            lambda value: {"topic_partitions": _topic_partitions_body(value.partitions)},
            lambda body: ShareGroupTargetAssignmentMemberValue(_topic_partitions(body["topic_partitions"])),
        ),
    ),
    RecordType(
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        flat(ShareGroupCurrentMemberAssignmentKey, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, "group_id", "member_id"),
        RecordSchema(
            ShareGroupCurrentMemberAssignmentValue,
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
            lambda value: {
                "member_epoch": value.member_epoch,
                "previous_member_epoch": value.previous_member_epoch,
                "state": value.state,
                "assigned_partitions": _topic_partitions_body(value.assigned),
            },
            lambda body: ShareGroupCurrentMemberAssignmentValue(
                body["member_epoch"], body["previous_member_epoch"], body["state"],
                _topic_partitions(body["assigned_partitions"]),
            ),
        ),
    ),
    RecordType(
        SHARE_GROUP_STATE_PARTITION_METADATA,
        flat(ShareGroupStatePartitionMetadataKey, SHARE_GROUP_STATE_PARTITION_METADATA_KEY, "group_id"),
        RecordSchema(
            ShareGroupStatePartitionMetadataValue,
            SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
            _state_partition_metadata_body,
            _state_partition_metadata_value,
        ),
    ),
)
_TABLE = RecordTable(CONSUMER_OFFSETS, _TYPES, read_only=frozenset({LEGACY_OFFSET_COMMIT}))
RECORD_TYPES: dict[int, RecordType] = _TABLE.types


# ---- encoding and decoding ----


@lru_cache(maxsize=65536)
def encode_key(key: RecordKey) -> bytes:
    """A record's key; cached, as a group's offsets are committed again and again under the same keys."""
    return _TABLE.encode_key(key)


def decode_key(data: bytes | bytearray | memoryview) -> RecordKey:
    """Raises UnknownRecordTypeError for record types without a ``RECORD_TYPES`` entry, ProtocolError for malformed
    bytes."""
    return _TABLE.decode_key(data)


def encode_value(value: RecordValue | None, caps: Mapping[str, int] = NO_CAPS) -> bytes | None:
    """Any record's value, at the version Kafka writes it (capped by an emulated release's ``caps``; None, a
    tombstone, stays None)."""
    return None if value is None else _TABLE.encode_value(value, caps=caps)


def decode_value(key: RecordKey, data: bytes | bytearray | memoryview | None) -> RecordValue | None:
    """The value of the record with ``key`` (any version its schema has); None for a tombstone."""
    return _TABLE.decode_value(_TABLE.kind_of_key(key), data)


def encode_offset_value(value: OffsetCommitValue, caps: Mapping[str, int] = NO_CAPS) -> bytes:
    return _TABLE.encode_value(value, caps=caps)


def decode_offset_value(data: bytes | bytearray | memoryview | None) -> OffsetCommitValue | None:
    """The value of an offset commit record; None for a tombstone."""
    return _TABLE.decode_value(RECORD_TYPES[OFFSET_COMMIT], data)


def encode_group_value(value: GroupMetadataValue, caps: Mapping[str, int] = NO_CAPS) -> bytes:
    return _TABLE.encode_value(value, caps=caps)


def decode_group_value(data: bytes | bytearray | memoryview | None) -> GroupMetadataValue | None:
    """The value of a group metadata record (any version 0-4); None for a tombstone."""
    return _TABLE.decode_value(RECORD_TYPES[GROUP_METADATA], data)
