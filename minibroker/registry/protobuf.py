"""Protobuf schemas as Confluent's registry sees them (ProtobufSchema): .proto text or a base64 FileDescriptorProto,
imports resolved from the references (import path -> schema) or, for google/protobuf/*.proto, google/type/*.proto
(with googleapis-common-protos) and Confluent's confluent/meta.proto and confluent/type/decimal.proto, without one;
kept and compared in Confluent's canonical string, normalized on ``?normalize=true`` and served as a base64
FileDescriptorProto for ``?format=serialized``.

Needs the ``protobuf`` package (``pip install 'minibroker[registry]'``), imported only when a Protobuf schema is
parsed: neither a default start-up nor an Avro-only registry loads it."""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from minibroker.registry.parsed import InvalidSchemaError
from minibroker.registry.protobuf_elements import ProtoFile
from minibroker.registry.protobuf_parser import parse_proto
from minibroker.registry.protobuf_printer import to_string
from minibroker.registry.protobuf_types import TypeInfo, collect

MAIN_FILE = "default"  # the name Confluent gives the schema's own file in its FileDescriptorProto

# The files Confluent resolves without a reference that google.protobuf does not ship (written from their
# published definitions: the messages and option extensions a schema may name).
_CONFLUENT_FILES = {
    "confluent/meta.proto": """
syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
""",
    "confluent/type/decimal.proto": """
syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
""",
}
# Imported from google.protobuf, in an order where each file follows the ones it imports.
_PROTOBUF_FILES = ("descriptor", "any", "source_context", "type", "api", "duration", "empty", "field_mask", "struct",
                   "timestamp", "wrappers")
# Confluent's google/type files, from googleapis-common-protos when it is installed (confluent-kafka[protobuf]).
_GOOGLE_TYPE_FILES = ("calendar_period", "color", "date", "datetime", "dayofweek", "decimal", "expr", "fraction",
                      "interval", "latlng", "money", "month", "phone_number", "postal_address", "quaternion",
                      "timeofday")


@dataclass(eq=False)
class ProtobufSchema:
    """A registered or proposed schema: its file, the files it imports (references and well-known ones, by import
    path) and every type they declare."""

    file: ProtoFile
    dependencies: dict[str, ProtoFile]
    types: dict[str, TypeInfo]
    canonical: str
    version: int | None = None

    def normalize(self) -> ProtobufSchema:
        """Confluent's normalized form, re-read as its canonical string (as Confluent re-parses it)."""
        text = to_string(self.file, self.types)
        file = parse_proto(text)
        return replace(self, file=file, types=collect(file, self.dependencies), canonical=text)

    def with_version(self, version: int) -> ProtobufSchema:
        return replace(self, version=version)

    def formatted(self, fmt: str) -> str:
        """Confluent's formattedString: ``serialized`` is the base64 FileDescriptorProto; any other format (unknown
        ones too, as Confluent answers them) the canonical string."""
        if fmt != "serialized":
            return self.canonical
        proto = _descriptors().to_descriptor(self.file, MAIN_FILE, self.types)
        return base64.b64encode(proto.SerializeToString()).decode()


def parse_protobuf(text: str, references: Mapping[str, str] | None = None) -> ProtobufSchema:
    """The schema with its references (import path -> schema text, dependencies first), validated as protobuf builds
    it; InvalidSchemaError as Confluent words it for what it rejects."""
    try:
        return _parse(text, references or {})
    except InvalidSchemaError as exc:
        raise InvalidSchemaError(f"Invalid schema of type PROTOBUF, details: {exc}") from None


def _descriptors() -> ModuleType:
    """The FileDescriptorProto conversions, which need the protobuf package."""
    try:
        from minibroker.registry import protobuf_descriptor
    except ImportError:
        raise InvalidSchemaError(
            "Protobuf schemas need the protobuf package: pip install 'minibroker[registry]'") from None
    return protobuf_descriptor


def _parse(text: str, references: Mapping[str, str]) -> ProtobufSchema:
    protobuf_descriptor = _descriptors()
    file = _read(text)
    dependencies = {name: _read(source) for name, source in references.items()}
    _add_known(file, dependencies)
    types = collect(file, dependencies)
    built = [protobuf_descriptor.to_descriptor(dependency, name, collect(dependency, dependencies))
             for name, dependency in dependencies.items() if name not in _google_files()]
    main = protobuf_descriptor.to_descriptor(file, MAIN_FILE, types)
    loaded = {MAIN_FILE, *dependencies}
    for proto in built + [main]:
        _drop_unloaded_imports(proto, loaded)
    protobuf_descriptor.validate(built + [main], list(_google_files().values()))
    return ProtobufSchema(file, dependencies, types, to_string(file))


def _read(text: str) -> ProtoFile:
    """.proto text, else (as Confluent falls back) a base64 FileDescriptorProto."""
    try:
        return parse_proto(text)
    except InvalidSchemaError as exc:
        try:
            data = base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidSchemaError(f"Could not parse Protobuf - {exc}") from None
        try:
            return _descriptors().decode(data)
        except InvalidSchemaError:
            raise InvalidSchemaError(f"Could not parse Protobuf - {exc}") from None


def _add_known(file: ProtoFile, dependencies: dict[str, ProtoFile]) -> None:
    """The well-known files the schema (or its dependencies) imports without a reference, as Confluent adds them."""
    pending = [file, *dependencies.values()]
    while pending:
        current = pending.pop()
        for name in current.imports + current.public_imports + current.weak_imports:
            if name not in dependencies and name in _known_files():
                dependencies[name] = _known_files()[name]
                pending.append(dependencies[name])
    ordered = sorted(dependencies.items(), key=lambda item: item[0] not in _known_files())
    dependencies.clear()
    dependencies.update(ordered)


@functools.cache
def _google_files() -> dict[str, bytes]:
    """The serialized descriptors of the google/ files Confluent resolves without a reference, by import path, each
    after the ones it imports."""
    import importlib

    files = {}
    for package, names in (("protobuf", _PROTOBUF_FILES), ("type", _GOOGLE_TYPE_FILES)):
        for name in names:
            try:
                module = importlib.import_module(f"google.{package}.{name}_pb2")
            except ImportError:
                continue
            files[f"google/{package}/{name}.proto"] = module.DESCRIPTOR.serialized_pb
    return files


@functools.cache
def _known_files() -> dict[str, ProtoFile]:
    known = {name: _descriptors().decode(data) for name, data in _google_files().items()}
    known.update({name: parse_proto(text) for name, text in _CONFLUENT_FILES.items()})
    return known


def _drop_unloaded_imports(proto: Any, loaded: set[str]) -> None:
    """Imports nothing resolves stay in the schema (Confluent keeps them) but not in the pool that validates it."""
    kept = [name for name in proto.dependency if name in loaded or name in _google_files()]
    if len(kept) != len(proto.dependency):
        del proto.public_dependency[:], proto.weak_dependency[:]
        del proto.dependency[:]
        proto.dependency.extend(kept)
