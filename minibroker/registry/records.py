"""Confluent Schema Registry's ``_schemas`` records: JSON keys and values, as its KafkaStore writes them.

Keys carry a ``keytype`` (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP), the ``subject`` (null for the
global config and mode) and ``magic`` (1 for SCHEMA keys, which also carry ``version``; 0 for the others). A null
value (tombstone) removes what its key names: a permanently deleted version, a deleted config or mode.
"""

from __future__ import annotations

import json
from typing import Any

SCHEMAS_TOPIC = "_schemas"
SCHEMA, CONFIG, MODE = "SCHEMA", "CONFIG", "MODE"
DELETE_SUBJECT, CLEAR_SUBJECT, NOOP = "DELETE_SUBJECT", "CLEAR_SUBJECT", "NOOP"
KEY_TYPES = (SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT, NOOP)

Json = dict[str, Any]
Record = tuple[Json, Json | None]  # (key, value or None for a tombstone)


class RecordError(ValueError):
    """A ``_schemas`` record that is not one of Confluent's."""


def schema_key(subject: str, version: int) -> Json:
    return {"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1}


def subject_key(keytype: str, subject: str | None) -> Json:
    """The key of a CONFIG, MODE, DELETE_SUBJECT or CLEAR_SUBJECT record (subject None: the global one)."""
    return {"keytype": keytype, "subject": subject, "magic": 0}


def schema_value(
    subject: str, version: int, schema_id: int, schema: str, schema_type: str, references: list[Json], deleted: bool,
) -> Json:
    """A SCHEMA value as Confluent's SchemaValue is written (schemaType and references only when not the default)."""
    value: Json = {"subject": subject, "version": version, "id": schema_id}
    if schema_type != "AVRO":
        value["schemaType"] = schema_type
    if references:
        value["references"] = references
    value["schema"] = schema
    value["deleted"] = deleted
    return value


def encode(record: Record) -> tuple[bytes, bytes | None]:
    key, value = record
    return json.dumps(key, separators=(",", ":")).encode(), None if value is None else json.dumps(
        value, separators=(",", ":")).encode()


def decode(key: bytes | None, value: bytes | None) -> Record:
    """A record read back from the log; RecordError when its key is not one of Confluent's."""
    try:
        decoded_key = json.loads(key) if key else None
        decoded_value = json.loads(value) if value is not None else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"not JSON: {exc}") from None
    if not isinstance(decoded_key, dict) or decoded_key.get("keytype") not in KEY_TYPES:
        raise RecordError(f"not a schema registry key: {key[:100]!r}" if key else "a record without a key")
    if decoded_value is not None and not isinstance(decoded_value, dict):
        raise RecordError(f"not a schema registry value: {value[:100]!r}")
    return decoded_key, decoded_value
