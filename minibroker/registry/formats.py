"""The schema types the registry serves, each a parser and a compatibility checker behind one interface, so the
REST layer never asks which type a schema is. ``GET /schemas/types`` lists this table's keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from minibroker.registry import avro, compatibility
from minibroker.registry import protobuf, protobuf_compatibility
from minibroker.registry.parsed import ParsedSchema


class SchemaFormat(NamedTuple):
    # The schema text with its references (reference name -> schema text, dependencies first); raises
    # InvalidSchemaError for what the type's own parser (as Confluent runs it) rejects.
    parse: Callable[[str, Mapping[str, str]], ParsedSchema]
    # Confluent's messages for why a new schema may not follow the previous ones (oldest first) at a level.
    check: Callable[[str, ParsedSchema, list[ParsedSchema]], list[str]]


FORMATS: dict[str, SchemaFormat] = {
    "AVRO": SchemaFormat(avro.parse_avro, compatibility.check),
    "PROTOBUF": SchemaFormat(protobuf.parse_protobuf, protobuf_compatibility.check),
}
