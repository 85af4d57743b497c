"""Internal-topic records for ``minibroker dump`` and the inspector, shown the way Kafka's own tools show them.

``__consumer_offsets`` records are decoded with the schemas of their record type in ``protocol.group_records``
(offset commits, classic group metadata and the KIP-848 consumer group records), ``__share_group_state`` records
(ShareSnapshot, ShareUpdate) with those of ``protocol.share_records``, and ``__transaction_state``
records by the generated TransactionLogKey/TransactionLogValue schemas; both are then rendered as
Kafka's generated JSON converters write them (CoordinatorRecordMessageFormatter): a key
``{"type": T, "data": {...}}`` and a value ``{"version": V, "data": {...}}`` or ``None`` for a tombstone.
Field names are Kafka's (camelCase), fields absent at the value's version are left out, tagged fields
appear only when they differ from their default, bytes are base64 and UUIDs are Kafka's Uuid strings.
Like kafka-dump-log, a consumer group's member subscriptions and assignments are decoded as well.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Mapping
from typing import Any

from minibroker.protocol.records import Record
from minibroker.protocol.schema import Field, Message, default_value, in_range, snake_case
from minibroker.storage.topic_names import CONSUMER_OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC

OFFSETS = "offsets"
TRANSACTION_LOG = "transaction-log"
SHARE_GROUP_STATE = "share-group-state"
SCHEMAS = "schemas"
DECODER_BY_TOPIC = {
    CONSUMER_OFFSETS_TOPIC: OFFSETS, TRANSACTION_STATE_TOPIC: TRANSACTION_LOG, SHARE_GROUP_STATE_TOPIC: SHARE_GROUP_STATE,
    "_schemas": SCHEMAS,
}

_VERSION = struct.Struct(">h")
CONSUMER_PROTOCOL_TYPE = "consumer"

Decoded = dict[str, Any]
RecordDecoder = Callable[[Record], Decoded]


class SkipRecord(Exception):
    """The record is not one the decoder shows (Kafka prints a one-line reason instead of key and value)."""


def decoder_named(name: str) -> RecordDecoder:
    """The decoder named on the command line (``offsets``, ``transaction-log`` or ``share-group-state``)."""
    decoders = {
        OFFSETS: decode_offsets_record,
        TRANSACTION_LOG: decode_transaction_record,
        SHARE_GROUP_STATE: decode_share_state_record,
        SCHEMAS: decode_schemas_record,
    }
    return decoders[name]


def decode_offsets_record(record: Record) -> Decoded:
    """A ``__consumer_offsets`` record of any type ``protocol.group_records`` knows (offset commits, classic,
    KIP-848 consumer and share groups), or a tombstone. The value is shown from its bytes with its type's schema, not
    through group_records' dataclasses, so that fields those drop (partition racks) or reshape (ClassicMemberMetadata,
    AssignmentEpochs) show as Kafka shows them."""
    from minibroker.protocol import group_records as gr

    decoded = _coordinator_record(gr.RECORD_TYPES, gr.decode_key, record, "offset topic decoder")
    value = decoded["value"]
    if (
        decoded["key"]["type"] == gr.GROUP_METADATA and value is not None
        and value["data"].get("protocolType") == CONSUMER_PROTOCOL_TYPE
    ):
        value["data"]["members"] = [_decode_consumer_protocol(member) for member in value["data"]["members"]]
    return decoded


def decode_share_state_record(record: Record) -> Decoded:
    """A ``__share_group_state`` record: a ShareSnapshot or ShareUpdate of one share partition, or a tombstone."""
    from minibroker.protocol import share_records as sr

    return _coordinator_record(sr.RECORD_TYPES, sr.decode_key, record, "share group state decoder")


def _coordinator_record(
    types: Mapping[int, Any], decode_key: Callable[[bytes], Any], record: Record, decoder: str,
) -> Decoded:
    """A coordinator topic's record by the record types of its key: ``{"key": {"type", "data"}, "value": {"version",
    "data"} or None}``."""
    from minibroker.protocol.coordinator_records import UnknownRecordTypeError
    from minibroker.protocol.primitives import Reader
    from minibroker.protocol.schema import codec

    if record.key is None:
        raise SkipRecord(
            f"Failed to decode message at offset {record.offset} using {decoder} (message had a missing key)"
        )
    try:
        key = decode_key(record.key)
    except UnknownRecordTypeError as exc:
        raise SkipRecord(f"Unknown record type {exc.record_type} at offset {record.offset}, skipping.") from None
    record_type = _VERSION.unpack_from(record.key)[0]
    kind = types[record_type]
    key_json = kafka_json(kind.key.message, 0, kind.key.to_body(key))
    decoded: Decoded = {"key": {"type": record_type, "data": key_json}, "value": None}
    if record.value is not None:
        reader = Reader(record.value)
        version = reader.int16()
        message = kind.value.message
        decoded["value"] = {"version": version, "data": kafka_json(message, version, codec(message, version).decode(reader))}
    return decoded


def decode_schemas_record(record: Record) -> Decoded:
    """A schema registry's ``_schemas`` record (Confluent's JSON key and value; None for a tombstone)."""
    from minibroker.registry.records import RecordError, decode

    try:
        key, value = decode(record.key, record.value)
    except RecordError as exc:
        raise SkipRecord(f"Failed to decode message at offset {record.offset}: {exc}") from None
    return {"key": key, "value": value}


def decode_transaction_record(record: Record) -> Decoded:
    """A ``__transaction_state`` record: one transactional id's state, or a tombstone."""
    from minibroker.protocol import txn_log_records
    from minibroker.protocol.messages import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE
    from minibroker.protocol.primitives import Reader
    from minibroker.protocol.schema import codec

    if record.key is None:
        raise SkipRecord(f"Failed to decode message at offset {record.offset} (message had a missing key)")
    transactional_id = txn_log_records.decode_key(record.key)
    decoded: Decoded = {
        "key": {
            "type": txn_log_records.KEY_TYPE,
            "data": kafka_json(TRANSACTION_LOG_KEY, 0, {"transactional_id": transactional_id}),
        },
        "value": None,
    }
    if record.value is not None:
        reader = Reader(record.value)
        version = reader.int16()
        body = codec(TRANSACTION_LOG_VALUE, version).decode(reader)
        decoded["value"] = {"version": version, "data": kafka_json(TRANSACTION_LOG_VALUE, version, body)}
    return decoded


def _decode_consumer_protocol(member: dict[str, Any]) -> dict[str, Any]:
    """Replace a member's base64 subscription and assignment by their ConsumerProtocol JSON, when they parse."""
    from minibroker.protocol.messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
    from minibroker.protocol.primitives import ProtocolError, Reader
    from minibroker.protocol.schema import codec

    out = dict(member)
    parts = (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION), ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT))
    for name, message in parts:
        raw = base64.b64decode(member[name])
        try:
            reader = Reader(raw)
            version = reader.int16()
            out[name] = kafka_json(message, version, codec(message, version).decode(reader))
        except ProtocolError:
            continue  # kept as the original bytes, as kafka-dump-log does
    return out


def kafka_json(message: Message, version: int, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (snake_case keys, as the codec and group_records give them) as Kafka's JSON converter writes them."""
    return _struct_json(message.fields, version, in_range(version, message.flexible), values)


def _struct_json(fields: tuple[Field, ...], version: int, flexible: bool, values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        value = values.get(snake_case(f.name))
        if flexible and in_range(version, f.tagged) and (value is None or value == default_value(f, version)):
            continue
        out[f.name[0].lower() + f.name[1:]] = _value_json(f, version, flexible, value)
    return out


def _value_json(f: Field, version: int, flexible: bool, value: Any) -> Any:
    if value is None:
        return None
    element = f.element_type
    if element is not None:
        if f.is_struct:
            return [_struct_json(f.fields, version, flexible, item) for item in value]
        return [_scalar_json(element, item) for item in value]
    if f.is_struct:
        return _struct_json(f.fields, version, flexible, value)
    return _scalar_json(f.type, value)


def _scalar_json(type_name: str, value: Any) -> Any:
    if type_name == "uuid":
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode("ascii")
    if type_name in ("bytes", "records"):
        return base64.b64encode(value).decode("ascii")
    return value
