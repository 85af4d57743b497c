"""A parsed .proto file as Square Wire's parser elements (ProtoFileElement, MessageElement, FieldElement, ...), the
model Confluent's registry keeps, prints and compares: both the .proto text parser and the FileDescriptorProto
reader build it, so the printer and the compatibility check see one shape whichever form a schema came in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

MAX_TAG = 536_870_911  # Wire's "max" in reserved and extensions ranges

SCALARS = frozenset({
    "bool", "bytes", "double", "float", "fixed32", "fixed64", "int32", "int64", "sfixed32", "sfixed64",
    "sint32", "sint64", "string", "uint32", "uint64",
})


@dataclass
class Primitive:
    """A scalar inside an option's map or list (Wire's OptionPrimitive): STRING, BOOLEAN, NUMBER or ENUM."""

    kind: str
    value: str


@dataclass
class Option:
    """``name = value``: kind STRING, BOOLEAN, NUMBER, ENUM (value a str), MAP (a dict), LIST (a list) or OPTION
    (value another Option: ``(ext).sub = 1``)."""

    name: str
    kind: str
    value: Any
    parenthesized: bool = False


@dataclass
class Field:
    label: str | None  # None, "optional", "required" or "repeated"
    type: str
    name: str
    tag: int
    default: str | None = None
    json_name: str | None = None
    options: list[Option] = field(default_factory=list)


@dataclass
class OneOf:
    name: str
    fields: list[Field] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)


Range = Union[int, tuple[int, int], str]  # a number, an inclusive range, or (reserved only) a field name


@dataclass
class Reserved:
    values: list[Range]


@dataclass
class Extensions:
    values: list[Range]
    options: list[Option] = field(default_factory=list)


@dataclass
class Extend:
    name: str
    fields: list[Field] = field(default_factory=list)


@dataclass(eq=False)
class Message:
    name: str
    fields: list[Field] = field(default_factory=list)
    oneofs: list[OneOf] = field(default_factory=list)
    nested: list[Message | Enum] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    reserveds: list[Reserved] = field(default_factory=list)
    extensions: list[Extensions] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)


@dataclass
class EnumConstant:
    name: str
    tag: int
    options: list[Option] = field(default_factory=list)


@dataclass(eq=False)
class Enum:
    name: str
    options: list[Option] = field(default_factory=list)
    constants: list[EnumConstant] = field(default_factory=list)
    reserveds: list[Reserved] = field(default_factory=list)


@dataclass
class Rpc:
    name: str
    request: str
    response: str
    request_streaming: bool = False
    response_streaming: bool = False
    options: list[Option] = field(default_factory=list)


@dataclass
class Service:
    name: str
    rpcs: list[Rpc] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)


@dataclass
class ProtoFile:
    syntax: str | None = None  # "proto2", "proto3" or None (not declared)
    package: str | None = None
    imports: list[str] = field(default_factory=list)
    public_imports: list[str] = field(default_factory=list)
    weak_imports: list[str] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    types: list[Message | Enum] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)


def is_map(type_name: str) -> bool:
    return type_name.startswith("map<")


def map_parts(type_name: str) -> tuple[str, str]:
    """The key and value types of ``map<K, V>`` (Wire's ProtoType.keyType/valueType)."""
    key, _, value = type_name[4:-1].partition(",")
    return key.strip(), value.strip()


def find_option(options: list[Option], name: str) -> Option | None:
    return next((o for o in options if o.name == name and not o.parenthesized), None)


def is_map_entry(message: Message) -> bool:
    """A map field's synthetic entry message, as a FileDescriptorProto carries it (``option map_entry = true``)."""
    option = find_option(message.options, "map_entry")
    return option is not None and str(option.value).lower() == "true"
