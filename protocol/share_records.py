"""Keys and values of the ``__share_group_state`` records, sans-IO: Kafka's share coordinator's two record types.

ShareSnapshot (type 0) carries a share partition's whole state, ShareUpdate (type 1) the batches that changed since the
latest snapshot; both are keyed by (group id, topic id, partition). The layout is the coordinator topics' one
(``coordinator_records``); both values have one version, 0. Values convert to and from the ``PersistedShareState``
and ``StateBatch`` the data path works with.
"""

from __future__ import annotations

from dataclasses import dataclass

from .share_state import DeliveryState, PersistedShareState, SharePartitionKey, StateBatch

from .coordinator_records import Body, RecordSchema, RecordTable, RecordType
from .messages import SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE, SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE

SHARE_GROUP_STATE = "__share_group_state"
SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
NO_OFFSET = -1  # a ShareUpdate's StartOffset when the start offset did not change
NO_EPOCH = -1
NO_COUNT = -1  # DeliveryCompleteCount unknown (Kafka before 4.2 did not write it)


@dataclass(frozen=True, slots=True)
class ShareSnapshotKey:
    key: SharePartitionKey


@dataclass(frozen=True, slots=True)
class ShareUpdateKey:
    key: SharePartitionKey


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    """The whole state of a share partition, as of snapshot ``snapshot_epoch``."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = NO_COUNT

    def state(self) -> PersistedShareState:
        return PersistedShareState(
            self.state_epoch, self.leader_epoch, self.start_offset, self.batches, self.delivery_complete_count,
        )


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    """Batches that changed since snapshot ``snapshot_epoch``; ``start_offset`` and ``leader_epoch`` -1 when
    unchanged."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = NO_COUNT


ShareKey = ShareSnapshotKey | ShareUpdateKey
ShareValue = ShareSnapshotValue | ShareUpdateValue


def snapshot_of(
    state: PersistedShareState, snapshot_epoch: int, create_timestamp: int, write_timestamp: int,
) -> ShareSnapshotValue:
    return ShareSnapshotValue(
        snapshot_epoch, state.state_epoch, state.leader_epoch, state.start_offset, create_timestamp, write_timestamp,
        state.batches, state.delivery_complete_count,
    )


def update_of(state: PersistedShareState, snapshot_epoch: int) -> ShareUpdateValue:
    """A ShareUpdate of ``state``'s start offset, leader epoch and batches (its state epoch is not written: updates
    never change it)."""
    return ShareUpdateValue(
        snapshot_epoch, state.leader_epoch, state.start_offset, state.batches, state.delivery_complete_count,
    )


def _key_schema(cls: type, message) -> RecordSchema:
    return RecordSchema(
        cls,
        message,
        lambda k: {"group_id": k.key.group_id, "topic_id": k.key.topic_id, "partition": k.key.partition},
        lambda body: cls(SharePartitionKey(body["group_id"], body["topic_id"], body["partition"])),
    )


def _batches_body(batches: tuple[StateBatch, ...]) -> list[Body]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "delivery_state": int(b.delivery_state),
            "delivery_count": b.delivery_count,
        }
        for b in batches
    ]


def _batches(body: list[Body]) -> tuple[StateBatch, ...]:
    """Kafka writes only 0, 2 and 4; another state id is kept as its number rather than failing the whole replay."""
    return tuple(
        StateBatch(b["first_offset"], b["last_offset"], _delivery_state(b["delivery_state"]), b["delivery_count"])
        for b in body
    )


def _delivery_state(value: int) -> DeliveryState | int:
    try:
        return DeliveryState(value)
    except ValueError:
        return value


def _snapshot_body(value: ShareSnapshotValue) -> Body:
    return {
        "snapshot_epoch": value.snapshot_epoch,
        "state_epoch": value.state_epoch,
        "leader_epoch": value.leader_epoch,
        "start_offset": value.start_offset,
        "delivery_complete_count": value.delivery_complete_count,
        "create_timestamp": value.create_timestamp,
        "write_timestamp": value.write_timestamp,
        "state_batches": _batches_body(value.batches),
    }


def _snapshot_value(body: Body) -> ShareSnapshotValue:
    return ShareSnapshotValue(
        snapshot_epoch=body["snapshot_epoch"],
        state_epoch=body["state_epoch"],
        leader_epoch=body["leader_epoch"],
        start_offset=body["start_offset"],
        create_timestamp=body["create_timestamp"],
        write_timestamp=body["write_timestamp"],
        batches=_batches(body["state_batches"]),
        delivery_complete_count=body["delivery_complete_count"],
    )


def _update_body(value: ShareUpdateValue) -> Body:
    return {
        "snapshot_epoch": value.snapshot_epoch,
        "leader_epoch": value.leader_epoch,
        "start_offset": value.start_offset,
        "delivery_complete_count": value.delivery_complete_count,
        "state_batches": _batches_body(value.batches),
    }


def _update_value(body: Body) -> ShareUpdateValue:
    return ShareUpdateValue(
        snapshot_epoch=body["snapshot_epoch"],
        leader_epoch=body["leader_epoch"],
        start_offset=body["start_offset"],
        batches=_batches(body["state_batches"]),
        delivery_complete_count=body["delivery_complete_count"],
    )


_TYPES = (
    RecordType(
        SHARE_SNAPSHOT,
        _key_schema(ShareSnapshotKey, SHARE_SNAPSHOT_KEY),
        RecordSchema(ShareSnapshotValue, SHARE_SNAPSHOT_VALUE, _snapshot_body, _snapshot_value),
    ),
    RecordType(
        SHARE_UPDATE,
        _key_schema(ShareUpdateKey, SHARE_UPDATE_KEY),
        RecordSchema(ShareUpdateValue, SHARE_UPDATE_VALUE, _update_body, _update_value),
    ),
)
_TABLE = RecordTable(SHARE_GROUP_STATE, _TYPES)
RECORD_TYPES: dict[int, RecordType] = _TABLE.types


def encode_key(key: ShareKey) -> bytes:
    return _TABLE.encode_key(key)


def decode_key(data: bytes | bytearray | memoryview) -> ShareKey:
    """Raises UnknownRecordTypeError for a type other than 0 and 1, ProtocolError for malformed bytes."""
    return _TABLE.decode_key(data)


def encode_value(value: ShareValue | None) -> bytes | None:
    """None, a tombstone, stays None."""
    return None if value is None else _TABLE.encode_value(value)


def decode_value(key: ShareKey, data: bytes | bytearray | memoryview | None) -> ShareValue | None:
    """The value of the record with ``key``; None for a tombstone."""
    return _TABLE.decode_value(_TABLE.kind_of_key(key), data)
