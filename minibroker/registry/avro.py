"""Avro schemas as Confluent's registry sees them: parsed and validated as Apache Avro's Java parser does
(with default values validated, as the registry does for new registrations), printed in the canonical string
the registry compares to decide that two registrations are the same schema (Avro's `Schema.toString()` with
referenced types written by name), and in the `?normalize=true` form (Confluent's `AvroSchemaUtils`).

Hand-written rather than fastavro: neither fastavro nor any Python library prints Avro Java's `toString()`
form, and validating what Java Avro rejects takes only this module.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from minibroker.registry import jackson
from minibroker.registry.parsed import InvalidSchemaError

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "error", "enum", "fixed")
ORDERS = ("ascending", "descending", "ignore")
NO_DEFAULT: Any = object()

# Keys Avro keeps as attributes; every other key of a schema or field object is a property, kept in order.
_SCHEMA_RESERVED = {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
_FIELD_RESERVED = {"default", "doc", "name", "order", "type", "aliases"}


@dataclass(eq=False)
class Field:
    name: str
    type: Schema
    doc: str | None = None
    default: Any = NO_DEFAULT
    order: str = "ascending"
    aliases: tuple[str, ...] = ()
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass(eq=False)
class Schema:
    """One node of a parsed schema; `type` is Avro's type name ("record" for errors too, see `is_error`)."""

    type: str
    props: dict[str, Any] = field(default_factory=dict)
    fullname: str | None = None
    doc: str | None = None
    aliases: tuple[str, ...] = ()  # full names
    fields: list[Field] = field(default_factory=list)
    symbols: tuple[str, ...] = ()
    enum_default: str | None = None
    size: int = 0
    items: Schema | None = None  # array items / map values
    branches: tuple[Schema, ...] = ()
    is_error: bool = False

    @property
    def name(self) -> str:
        """The unqualified name, which Avro's resolution compares."""
        return (self.fullname or "").rpartition(".")[2]

    @property
    def namespace(self) -> str | None:
        return (self.fullname or "").rpartition(".")[0] or None

    def field_named(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


@dataclass(eq=False)
class AvroSchema:
    """A registered or proposed schema: its root, the text it came from, the texts of its references and the
    names they define at their top level."""

    root: Schema
    text: str
    references: Mapping[str, str] = field(default_factory=dict)
    referenced: frozenset[str] = frozenset()
    version: int | None = None  # the subject version, for the "{oldSchemaVersion: n}" line of incompatibilities

    @property
    def canonical(self) -> str:
        """Avro Java's `Schema.toString(referenced types, false)`: Confluent's `canonicalString()`."""
        out: list[str] = []
        _write(self.root, None, set(self.referenced), out)
        return "".join(out)

    @property
    def normalized(self) -> str:
        """Confluent's normalized form (`?normalize=true`): sorted properties and aliases, names fully qualified."""
        out: list[str] = []
        _write_normalized(self.root, {name: jackson.quote(name) for name in self.referenced}, out)
        return "".join(out)

    def normalize(self) -> AvroSchema:
        """Confluent's `AvroSchema.normalize()`: the schema parsed back from its normalized form, so that its
        `canonical` is the string the registry keeps and compares when asked to normalize."""
        return parse_avro(self.normalized, self.references)

    def with_version(self, version: int) -> AvroSchema:
        return replace(self, version=version)

    def formatted(self, fmt: str) -> str:
        """Only the canonical form is served (Confluent's Avro formats are not)."""
        return self.canonical


def parse_avro(text: str, references: Mapping[str, str] | None = None) -> AvroSchema:
    """Parse `text`; `references` maps referenced names to their schema texts, in dependency order."""
    names: dict[str, Schema] = {}
    referenced = set()
    for ref_text in (references or {}).values():
        ref = _Parser(names).parse(_load(ref_text), None)
        if ref.fullname:
            referenced.add(ref.fullname)
    root = _Parser(names).parse(_load(text), None)
    return AvroSchema(root, text, dict(references or {}), frozenset(referenced))


def _load(text: str) -> Any:
    """JSON as Avro's Jackson parser reads it: comments allowed, NaN and Infinity not."""
    try:
        return json.loads(_strip_comments(text) if "/" in text else text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise InvalidSchemaError(f"Invalid schema: {e}") from None


def _strip_comments(text: str) -> str:
    """Drop // and /* */ comments outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment")
            out.append(" ")
            i = end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_name(name: str) -> None:
    if not name:
        raise InvalidSchemaError("Empty name")
    if not (name[0].isalpha() or name[0] == "_"):
        raise InvalidSchemaError(f"Illegal initial character: {name}")
    if not all(c.isalnum() or c == "_" for c in name):
        raise InvalidSchemaError(f"Illegal character in: {name}")


def _full_name(name: str, space: str | None) -> str:
    """Avro's `Name`: a dotted name carries its own namespace, and an empty namespace is none."""
    if "." in name:
        space, _, name = name.rpartition(".")
    return f"{space}.{name}" if space else name


class _Parser:
    """Avro Java's `Schema.Parser` with `validateDefaults(true)`, sharing one name table across texts."""

    def __init__(self, names: dict[str, Schema]) -> None:
        self.names = names

    def parse(self, node: Any, space: str | None) -> Schema:
        if isinstance(node, str):
            return self._named_or_primitive(node, space)
        if isinstance(node, list):
            return self._union(node, space)
        if not isinstance(node, dict):
            raise InvalidSchemaError(f"No type: {json.dumps(node)}")
        kind = node.get("type")
        if not isinstance(kind, str):
            raise InvalidSchemaError(f"No type: {json.dumps(node)}")
        props = {k: v for k, v in node.items() if k not in _SCHEMA_RESERVED and not (kind == "enum" and k == "default")}
        if kind in PRIMITIVES:
            return Schema(kind, props)
        if kind in NAMED:
            return self._named(kind, node, space, props)
        if kind == "array":
            return Schema("array", props, items=self.parse(_required(node, "items", "Array has no items type"), space))
        if kind == "map":
            return Schema("map", props, items=self.parse(_required(node, "values", "Map has no values type"), space))
        return self._named_or_primitive(kind, space)

    def _named_or_primitive(self, name: str, space: str | None) -> Schema:
        if name in PRIMITIVES:
            return Schema(name)
        found = self.names.get(_full_name(name, space)) or self.names.get(name)
        if found is None:
            raise InvalidSchemaError(f"Undefined name: {json.dumps(name)}")
        return found

    def _union(self, node: list, space: str | None) -> Schema:
        branches = tuple(self.parse(b, space) for b in node)
        seen: set[str] = set()
        for b in branches:
            if b.type == "union":
                raise InvalidSchemaError(f"Nested union: {json.dumps(node)}")
            key = b.fullname if b.fullname else b.type
            if key in seen:
                raise InvalidSchemaError(f"Duplicate in union:{key}")
            seen.add(key)
        return Schema("union", branches=branches)

    def _named(self, kind: str, node: dict, space: str | None, props: dict) -> Schema:
        name = node.get("name")
        if not isinstance(name, str):
            raise InvalidSchemaError(f"No name in schema: {json.dumps(node)}")
        explicit = node.get("namespace")
        fullname = _full_name(name, explicit if isinstance(explicit, str) else space)
        _check_name(fullname.rpartition(".")[2])
        if fullname in PRIMITIVES:
            raise InvalidSchemaError(f"Schemas may not be named after primitives: {fullname}")
        earlier = self.names.get(fullname)
        own_space = fullname.rpartition(".")[0] or None
        doc = node.get("doc")
        schema = Schema(
            "record" if kind == "error" else kind,
            props,
            fullname=fullname,
            doc=doc if isinstance(doc, str) else None,
            aliases=tuple(dict.fromkeys(_full_name(a, own_space) for a in _aliases(node))),
            is_error=kind == "error",
        )
        if kind == "fixed":
            size = node.get("size")
            if not _is_int(size) or not 0 <= size < 2**31:
                raise InvalidSchemaError(f"Invalid or no size: {json.dumps(node)}")
            schema.size = size
        elif kind == "enum":
            schema.symbols = self._symbols(node)
            default = node.get("default")
            if default is not None and not isinstance(default, str):
                default = None
            if default is not None and default not in schema.symbols:
                raise InvalidSchemaError(f"The Enum Default: {default} is not in the enum symbol set: {list(schema.symbols)}")
            schema.enum_default = default
        if earlier is None:
            self.names[fullname] = schema  # before the fields: a record may refer to itself
        if kind in ("record", "error"):
            schema.fields = self._fields(node, own_space, fullname)
        if earlier is not None:
            if to_json(earlier) != to_json(schema):
                raise InvalidSchemaError(f"Can't redefine: {fullname}")
            return earlier
        return schema

    @staticmethod
    def _symbols(node: dict) -> tuple[str, ...]:
        symbols = node.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise InvalidSchemaError(f"Enum symbols must be a sequence of strings: {json.dumps(node)}")
        for s in symbols:
            _check_name(s)
        if len(set(symbols)) != len(symbols):
            duplicate = next(s for s in symbols if symbols.count(s) > 1)
            raise InvalidSchemaError(f"Duplicate enum symbol: {duplicate}")
        return tuple(symbols)

    def _fields(self, node: dict, space: str | None, record: str) -> list[Field]:
        raw = node.get("fields")
        if not isinstance(raw, list):
            raise InvalidSchemaError(f"Record has no fields: {json.dumps(node)}")
        fields: list[Field] = []
        for f in raw:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise InvalidSchemaError(f"No field name: {json.dumps(f)}")
            name = f["name"]
            _check_name(name)
            if "type" not in f:
                raise InvalidSchemaError(f"No field type: {json.dumps(f)}")
            ftype = self.parse(f["type"], space)
            order = f.get("order", "ascending")
            if not isinstance(order, str) or order.lower() not in ORDERS:
                raise InvalidSchemaError(f"No enum constant for field order: {json.dumps(order)}")
            default = f.get("default", NO_DEFAULT)
            if isinstance(default, str) and ftype.type in ("float", "double"):
                default = _parse_double(name, default)
            if default is not NO_DEFAULT and not _valid_default(ftype, default):
                raise InvalidSchemaError(f"Invalid default for field {name}: {json.dumps(default)} not a {_brief(ftype)}")
            if any(existing.name == name for existing in fields):
                raise InvalidSchemaError(f"Duplicate field {name} in record {record}")
            doc = f.get("doc")
            fields.append(Field(
                name, ftype, doc if isinstance(doc, str) else None, default, order.lower(),
                tuple(dict.fromkeys(_aliases(f))),
                {k: v for k, v in f.items() if k not in _FIELD_RESERVED},
            ))
        return fields


def _required(node: dict, key: str, message: str) -> Any:
    if key not in node:
        raise InvalidSchemaError(f"{message}: {json.dumps(node)}")
    return node[key]


def _aliases(node: dict) -> list[str]:
    aliases = node.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidSchemaError(f"aliases not an array of strings: {json.dumps(node)}")
    return aliases


_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")


def _parse_double(field_name: str, text: str) -> float:
    """Avro reads a float or double default given as a string with Java's `Double.parseDouble`."""
    stripped = text.strip()
    if not _JAVA_DOUBLE.fullmatch(stripped):
        raise InvalidSchemaError(f"Invalid default for field {field_name}: {json.dumps(text)}")
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def to_json(schema: Schema) -> str:
    """A node printed as Avro Java's `Schema.toString()` prints it, every named type in full."""
    out: list[str] = []
    _write(schema, None, set(), out)
    return "".join(out)


def _brief(schema: Schema) -> str:
    return json.dumps(schema.fullname) if schema.fullname else json.dumps(schema.type)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _valid_default(schema: Schema, value: Any) -> bool:
    """Avro's `Schema.isValidDefault`: an enum's default need only be a string; a union's may match any branch."""
    t = schema.type
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "int":
        return _is_int(value) and -(2**31) <= value < 2**31
    if t == "long":
        return _is_int(value) and -(2**63) <= value < 2**63
    if t in ("float", "double"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t in ("bytes", "string", "fixed", "enum"):
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list) and all(_valid_default(schema.items, v) for v in value)
    if t == "map":
        return isinstance(value, dict) and all(_valid_default(schema.items, v) for v in value.values())
    if t == "union":
        return any(_valid_default(b, value) for b in schema.branches)
    if t == "record":
        return isinstance(value, dict) and all(
            _valid_default(f.type, value[f.name]) if f.name in value else f.has_default for f in schema.fields
        )
    return False


# --- printing -----------------------------------------------------------------------------------------


_TYPE_NAMES = set(PRIMITIVES) | {"record", "enum", "array", "map", "union", "fixed"}


def _qualified(fullname: str, space: str | None) -> str:
    """Avro's `Name.getQualified`: the short name only within its own namespace, and never for a type's name."""
    ns, _, name = fullname.rpartition(".")
    return name if not ns or (ns == space and name not in _TYPE_NAMES) else fullname


def _props(props: dict[str, Any], out: list[str]) -> None:
    for k, v in props.items():
        out.append(f",{jackson.quote(k)}:{jackson.write(v)}")


def _write(s: Schema, space: str | None, known: set[str], out: list[str]) -> None:
    """Avro Java's `Schema.toJson`, key order and all."""
    t = s.type
    if t in PRIMITIVES:
        if s.props:
            out.append(f'{{"type":"{t}"')
            _props(s.props, out)
            out.append("}")
        else:
            out.append(f'"{t}"')
        return
    if t == "union":
        out.append("[")
        for i, b in enumerate(s.branches):
            if i:
                out.append(",")
            _write(b, space, known, out)
        out.append("]")
        return
    if t in ("array", "map"):
        out.append(f'{{"type":"{t}","{"items" if t == "array" else "values"}":')
        _write(s.items, space, known, out)
        _props(s.props, out)
        out.append("}")
        return
    if s.fullname in known:
        out.append(jackson.quote(_qualified(s.fullname, space)))
        return
    known.add(s.fullname)
    own = s.namespace
    out.append(f'{{"type":"{"error" if s.is_error else t}","name":{jackson.quote(s.name)}')
    if own is not None and own != space:
        out.append(f',"namespace":{jackson.quote(own)}')
    elif own is None and space is not None:
        out.append(',"namespace":""')
    if s.doc is not None:
        out.append(f',"doc":{jackson.quote(s.doc)}')
    if t == "record":
        out.append(',"fields":[')
        for i, f in enumerate(s.fields):
            out.append(("," if i else "") + f'{{"name":{jackson.quote(f.name)},"type":')
            _write(f.type, own, known, out)
            if f.doc is not None:
                out.append(f',"doc":{jackson.quote(f.doc)}')
            if f.has_default:
                out.append(f',"default":{jackson.write(f.default)}')
            if f.order != "ascending":
                out.append(f',"order":"{f.order}"')
            if f.aliases:
                out.append(f',"aliases":{jackson.write(list(f.aliases))}')
            _props(f.props, out)
            out.append("}")
        out.append("]")
    elif t == "enum":
        out.append(f',"symbols":{jackson.write(list(s.symbols))}')
        if s.enum_default is not None:
            out.append(f',"default":{jackson.quote(s.enum_default)}')
    else:
        out.append(f',"size":{s.size}')
    _props(s.props, out)
    if s.aliases:
        out.append(f',"aliases":{jackson.write([_qualified(a, own) for a in s.aliases])}')
    out.append("}")


_LOGICAL = {
    "decimal": ("bytes", "fixed"),
    "uuid": ("string", "fixed"),
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "duration": ("fixed",),
    "big-decimal": ("bytes",),
}


def _logical(s: Schema) -> str | None:
    """The schema's logical type when Avro accepts it (Avro ignores invalid ones, so does the registry)."""
    lt = s.props.get("logicalType")
    if lt not in _LOGICAL or s.type not in _LOGICAL[lt]:
        return None
    if lt == "decimal":
        precision, scale = s.props.get("precision"), s.props.get("scale", 0)
        if not _is_int(precision) or precision <= 0 or not _is_int(scale) or not 0 <= scale <= precision:
            return None
        if s.type == "fixed" and precision > int((8 * s.size - 1) * 0.30102999566398120):
            return None
    if lt == "duration" and s.size != 12:
        return None
    if lt == "uuid" and s.type == "fixed" and s.size != 16:
        return None
    return lt


def _logical_props(s: Schema, lt: str, out: list[str]) -> None:
    """The logical type's attributes first; Confluent then writes every property again, these included, and a
    JSON reader keeps a repeated key where it first appeared with its last value, as Jackson does."""
    out.append(f',"logicalType":"{lt}"')
    if lt == "decimal":
        out.append(f',"precision":{s.props["precision"]}')
        if s.props.get("scale", 0):
            out.append(f',"scale":{s.props["scale"]}')


def _sorted_props(props: dict[str, Any], out: list[str]) -> None:
    for k in sorted(props):
        out.append(f",{jackson.quote(k)}:{jackson.write(props[k])}")


def _write_normalized(s: Schema, env: dict[str, str], out: list[str]) -> None:
    """Confluent's `AvroSchemaUtils.toNormalizedString`: Avro's parsing canonical form keeping docs, aliases,
    defaults, orders, logical types and properties (sorted)."""
    t = s.type
    lt = _logical(s)
    if t == "union":
        out.append("[")
        for i, b in enumerate(s.branches):
            if i:
                out.append(",")
            _write_normalized(b, env, out)
        out.append("]")
    elif t in ("array", "map"):
        out.append(f'{{"type":"{t}","{"items" if t == "array" else "values"}":')
        _write_normalized(s.items, env, out)
        _sorted_props(s.props, out)
        out.append("}")
    elif t in PRIMITIVES:
        if lt is not None:
            out.append(f'{{"type":"{t}"')
            _logical_props(s, lt, out)
            _sorted_props(s.props, out)
            out.append("}")
        elif s.props:
            out.append(f'{{"type":"{t}"')
            _sorted_props(s.props, out)
            out.append("}")
        else:
            out.append(f'"{t}"')
    elif s.fullname in env:
        out.append(env[s.fullname])
    else:
        env[s.fullname] = jackson.quote(s.fullname)
        out.append(f'{{"name":{env[s.fullname]},"type":"{t}"')
        if t == "enum":
            out.append(f',"symbols":{jackson.write(list(s.symbols))}')
        elif t == "fixed":
            out.append(f',"size":{s.size}')
            if lt is not None:
                _logical_props(s, lt, out)
        else:
            out.append(',"fields":[')
            for i, f in enumerate(s.fields):
                out.append(("," if i else "") + f'{{"name":{jackson.quote(f.name)},"type":')
                _write_normalized(f.type, env, out)
                out.append(f',"order":"{f.order.upper()}"')
                if f.doc is not None:
                    out.append(f',"doc":{jackson.quote(f.doc)}')
                if f.aliases:
                    out.append(f',"aliases":{jackson.write(sorted(set(f.aliases)))}')
                if f.has_default:
                    out.append(f',"default":{jackson.write(f.default)}')
                _sorted_props(f.props, out)
                out.append("}")
            out.append("]")
        if s.doc:
            out.append(f',"doc":{jackson.quote(s.doc)}')
        if s.aliases:
            out.append(f',"aliases":{jackson.write(sorted(set(s.aliases)))}')
        if t == "enum" and s.enum_default is not None:
            out.append(f',"default":{jackson.quote(s.enum_default)}')
        _sorted_props(s.props, out)
        out.append("}")
