"""The schema types the registry serves, each a parser and a compatibility check behind one interface, so the
REST layer never asks which type a schema is. ``GET /schemas/types`` lists this table's keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from minibroker.registry import avro, compatibility, json_compatibility, json_schema, protobuf, protobuf_compatibility
from minibroker.registry.parsed import ParsedSchema

_OLD_SCHEMA_LIMIT = 10 * 1024  # Confluent's JSON Schema and Protobuf providers truncate the old schema there


class SchemaFormat(NamedTuple):
    # The schema text with its references (reference name -> schema text, dependencies first); raises
    # InvalidSchemaError for what the type's own parser (as Confluent runs it) rejects.
    parse: Callable[[str, Mapping[str, str]], ParsedSchema]
    # Confluent's messages for why the first schema (the reader) cannot read data written with the second (the
    # writer), each named by the word given for it ("new", "old"): the type's own `isBackwardCompatible`.
    reads: Callable[[ParsedSchema, ParsedSchema, str, str], list[str]]
    # How many characters of the old schema the "{oldSchema: ...}" line carries before it is truncated (None: all).
    old_schema_limit: int | None

    def check(self, mode: str, new: ParsedSchema, old: ParsedSchema) -> list[str]:
        """Confluent's messages for why `new` may not follow `old` in `mode` (Confluent's canRead, canBeRead,
        mutualRead): BACKWARD, the new schema reads the old; FORWARD, the old reads the new; FULL, both, the
        forward messages first. The old schema's lines follow the messages of a failing pair."""
        if mode == "FULL":
            return self.reads(old, new, "old", "new") + self.check("BACKWARD", new, old)
        messages = self.reads(new, old, "new", "old") if mode == "BACKWARD" else self.reads(old, new, "old", "new")
        return messages + self._old_lines(old) if messages else messages

    def _old_lines(self, old: ParsedSchema) -> list[str]:
        """`{oldSchemaVersion: n}` (for a registered version) and `{oldSchema: '...'}`."""
        lines = [] if old.version is None else [f"{{oldSchemaVersion: {old.version}}}"]
        text, limit = old.canonical, self.old_schema_limit
        if limit is None or len(text) <= limit:
            return lines + [f"{{oldSchema: '{text}'}}"]
        return lines + [f"{{oldSchema: <truncated> '{text[:limit]}...'}}"]


FORMATS: dict[str, SchemaFormat] = {
    "AVRO": SchemaFormat(avro.parse_avro, compatibility.reads, None),
    "JSON": SchemaFormat(json_schema.parse_json, json_compatibility.reads, _OLD_SCHEMA_LIMIT),
    "PROTOBUF": SchemaFormat(protobuf.parse_protobuf, protobuf_compatibility.reads, _OLD_SCHEMA_LIMIT),
}
