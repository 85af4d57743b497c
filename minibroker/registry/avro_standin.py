"""A stand-in for ``minibroker.registry.avro`` and ``minibroker.registry.compatibility`` (written on another branch)
with their interface: ``parse_avro``, ``AvroSchema.canonical``, ``InvalidSchemaError``, ``check``. It parses the
schema as JSON only and knows one compatibility rule (a reader's new field needs a default; a field's type may not
change); the merge replaces it with the real modules (the one import in ``api``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


class InvalidSchemaError(Exception):
    """The text is not an Avro schema."""


@dataclass(frozen=True)
class AvroSchema:
    parsed: Any
    canonical: str
    version: int | None = None

    def normalize(self) -> AvroSchema:
        return self

    def with_version(self, version: int) -> AvroSchema:
        return replace(self, version=version)


def parse_avro(text: str, references: Mapping[str, str]) -> AvroSchema:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise InvalidSchemaError(f"Invalid schema {text[:100]}: {exc}") from None
    if isinstance(parsed, str) and parsed not in PRIMITIVES and parsed not in references:
        raise InvalidSchemaError(f"Invalid schema: unknown type {parsed!r}")
    if isinstance(parsed, dict) and parsed.get("type") == "record" and not isinstance(parsed.get("fields"), list):
        raise InvalidSchemaError("Invalid schema: a record needs fields")
    if not isinstance(parsed, (str, dict, list)):
        raise InvalidSchemaError(f"Invalid schema {text[:100]}")
    return AvroSchema(parsed, json.dumps(parsed, separators=(",", ":")))


def _fields(schema: AvroSchema) -> dict[str, dict[str, Any]]:
    parsed = schema.parsed
    if isinstance(parsed, dict) and parsed.get("type") == "record":
        return {field["name"]: field for field in parsed["fields"]}
    return {}


def _reads(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    messages = []
    old = _fields(writer)
    for name, field in _fields(reader).items():
        if name not in old and "default" not in field:
            messages.append(f"READER_FIELD_MISSING_DEFAULT_VALUE: {name}")
        elif name in old and old[name]["type"] != field["type"]:
            messages.append(f"TYPE_MISMATCH: {name}")
    return messages


def check(level: str, new: AvroSchema, previous: list[AvroSchema]) -> list[str]:
    if level == "NONE" or not previous:
        return []
    olds = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    messages = []
    for old in olds:
        if level.startswith(("BACKWARD", "FULL")):
            messages += _reads(new, old)
        if level.startswith(("FORWARD", "FULL")):
            messages += _reads(old, new)
    return messages
