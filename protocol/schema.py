"""Declarative message descriptions and the one generic codec driven by them.

A ``Message`` lists its ``Field``s with the version ranges in which they exist, are nullable or
are tagged, exactly as Kafka's JSON message definitions say. ``codec(message, version)`` turns
such a description into a decoder and an encoder for one version, once, and caches them: the
per-field work at run time is a list walk, with no per-version branches written by hand.

Decoded messages are plain ``dict``s keyed by snake_case field names; encoders take the same
dicts and fill any missing field with its default (``protocol.strict`` checks responses first, in tests).
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from functools import cache
from types import CodeType
from typing import Any, Callable

from .primitives import ProtocolError, Reader, Writer

MAX_VERSION = 0x7FFF
Versions = tuple[int, int] | None  # inclusive (low, high), or None for "none"

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string", "bytes", "records", "uuid"}
)


def in_range(version: int, versions: Versions) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


class Field:
    """One field: ``type`` is Kafka's type name (``int32``, ``[]string``, ``[]TopicData``, ``Cursor``).

    A plain slotted class rather than a frozen dataclass: the generated descriptions construct a thousand of these,
    and a frozen dataclass's ``__init__`` pays an ``object.__setattr__`` call per attribute (and defining one execs
    generated code). Never changed once made: equality and hash are by value, and the codec caches by them."""

    __slots__ = ("name", "type", "versions", "nullable", "tagged", "tag", "default", "flexible", "ignorable", "fields")

    def __init__(
        self,
        name: str,
        type: str,
        versions: Versions,
        nullable: Versions = None,
        tagged: Versions = None,
        tag: int | None = None,
        default: Any = None,
        flexible: Versions | bool = True,  # False: never compact, even in flexible versions (RequestHeader.ClientId)
        ignorable: bool = False,  # a value the version cannot carry may be dropped (Kafka's "ignorable")
        fields: tuple[Field, ...] = (),
    ) -> None:
        self.name = name
        self.type = type
        self.versions = versions
        self.nullable = nullable
        self.tagged = tagged
        self.tag = tag
        self.default = default
        self.flexible = flexible
        self.ignorable = ignorable
        self.fields = fields

    def _values(self) -> tuple[Any, ...]:
        return (self.name, self.type, self.versions, self.nullable, self.tagged, self.tag, self.default,
                self.flexible, self.ignorable, self.fields)

    def __eq__(self, other: object) -> bool:
        return type(other) is Field and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Field{self._values()!r}"

    @property
    def element_type(self) -> str | None:
        return self.type[2:] if self.type.startswith("[]") else None

    @property
    def is_struct(self) -> bool:
        element = self.element_type
        return (element or self.type) not in PRIMITIVES


class Message:
    """A message (request, response, header or record) as Kafka's JSON defines it; like ``Field``, a plain slotted
    class, compared and hashed by value."""

    __slots__ = ("name", "api_key", "kind", "valid", "flexible", "fields")

    def __init__(
        self, name: str, api_key: int | None, kind: str, valid: Versions, flexible: Versions,
        fields: tuple[Field, ...] = (),
    ) -> None:
        self.name = name
        self.api_key = api_key
        self.kind = kind  # "request", "response", "header", "data", "coordinator-key" or "coordinator-value"
        self.valid = valid
        self.flexible = flexible
        self.fields = fields

    def _values(self) -> tuple[Any, ...]:
        return (self.name, self.api_key, self.kind, self.valid, self.flexible, self.fields)

    def __eq__(self, other: object) -> bool:
        return type(other) is Message and self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Message{self._values()!r}"


def snake_case(name: str) -> str:
    """Kafka's CamelCase field names as Python keys: ``ThrottleTimeMs`` -> ``throttle_time_ms``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


Decode = Callable[[Reader], Any]
Encode = Callable[[Writer, Any], None]

_FIXED_READERS: dict[str, Decode] = {
    "bool": Reader.boolean,
    "int8": Reader.int8,
    "int16": Reader.int16,
    "uint16": Reader.uint16,
    "int32": Reader.int32,
    "uint32": Reader.uint32,
    "int64": Reader.int64,
    "float64": Reader.float64,
    "uuid": Reader.uuid,
}
_FIXED_WRITERS: dict[str, Encode] = {
    "bool": Writer.boolean,
    "int8": Writer.int8,
    "int16": Writer.int16,
    "uint16": Writer.uint16,
    "int32": Writer.int32,
    "uint32": Writer.uint32,
    "int64": Writer.int64,
    "float64": Writer.float64,
    "uuid": Writer.uuid,
}
_ZERO: dict[str, Any] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "uint16": 0,
    "int32": 0,
    "uint32": 0,
    "int64": 0,
    "float64": 0.0,
    "uuid": b"\x00" * 16,
    "string": "",
    "bytes": b"",
    "records": None,
}


def default_value(f: Field, version: int) -> Any:
    """The value a field has when a message does not set it (Kafka's generated-code defaults)."""
    if f.default is not None:
        return None if f.default == "null" else f.default
    if f.element_type is not None:
        return []
    if f.is_struct:
        return None if in_range(version, f.nullable) else {}
    return _ZERO[f.type]


def _scalar_reader(type_name: str, nullable: bool, compact: bool) -> Decode:
    if type_name in _FIXED_READERS:
        return _FIXED_READERS[type_name]
    if type_name == "string":
        if compact:
            return Reader.compact_nullable_string if nullable else Reader.compact_string
        return Reader.nullable_string if nullable else Reader.string
    if type_name == "bytes":
        if compact:
            return Reader.compact_nullable_bytes if nullable else Reader.compact_bytes
        return Reader.nullable_bytes if nullable else Reader.bytes_
    if type_name == "records":
        return lambda r: r.records(compact)
    raise ValueError(f"unknown type {type_name}")


def _scalar_writer(type_name: str, compact: bool) -> Encode:
    if type_name in _FIXED_WRITERS:
        return _FIXED_WRITERS[type_name]
    if type_name == "string":
        return lambda w, v: w.string(v, compact)
    if type_name in ("bytes", "records"):
        return lambda w, v: w.bytes_(v, compact)
    raise ValueError(f"unknown type {type_name}")


class StructCodec:
    """Decoder and encoder of one struct (message body or nested struct) at one version."""

    __slots__ = ("decode", "encode")

    def __init__(self, decode: Decode, encode: Encode) -> None:
        self.decode = decode
        self.encode = encode


def _field_codecs(f: Field, version: int, flexible: bool) -> tuple[Decode, Encode]:
    compact = flexible and f.flexible is not False
    nullable = in_range(version, f.nullable)
    element = f.element_type
    if element is not None:
        if f.is_struct:
            inner = _struct_codec(f.fields, version, flexible)
            item_read, item_write = inner.decode, inner.encode
        else:
            item_read, item_write = _scalar_reader(element, False, compact), _scalar_writer(element, compact)

        def read_array(r: Reader) -> list | None:
            return r.array(item_read, compact, nullable)

        def write_array(w: Writer, value: list | None) -> None:
            if value is None:
                if not nullable:
                    raise ValueError(f"{f.name} is not nullable in version {version}")
                w.array_length(None, compact)
                return
            w.array_length(len(value), compact)
            for item in value:
                item_write(w, item)

        return read_array, write_array
    if f.is_struct:
        inner = _struct_codec(f.fields, version, flexible)
        if not nullable:
            return inner.decode, inner.encode

        def read_nullable_struct(r: Reader) -> dict | None:
            return None if r.int8() < 0 else inner.decode(r)

        def write_nullable_struct(w: Writer, value: dict | None) -> None:
            if value is None:
                w.int8(-1)
            else:
                w.int8(1)
                inner.encode(w, value)

        return read_nullable_struct, write_nullable_struct
    return _scalar_reader(f.type, nullable, compact), _scalar_writer(f.type, compact)


_STRUCT_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}
_MUTABLE = (list, dict)
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _is_fixed(f: Field) -> bool:
    """A fixed-width scalar: consecutive ones are packed and unpacked with one ``struct`` call."""
    return f.element_type is None and f.type in _STRUCT_FORMATS


class _Tail:
    """What follows a struct's regular fields: its tagged fields (flexible versions), read and written by closures,
    and the defaults of fields absent in this version."""

    __slots__ = ("decode", "tagged", "absent")

    def __init__(
        self,
        decode: Callable[[Reader, dict], None],
        tagged: list[tuple[int, str, Encode, Any, Field]],  # (tag, key, encoder, default, field), by tag; [] for none
        absent: list[tuple[str, Any]],  # fields this version does not have, and the defaults decoded messages get
    ) -> None:
        self.decode = decode
        self.tagged = tagged
        self.absent = absent


def _uvarint_bytes(v: int) -> bytes:
    w = Writer()
    w.uvarint(v)
    return bytes(w.buf)


def _write_tagged(w: Writer, head: bytes, write: Encode, value: Any) -> None:
    """A tagged field of no fixed size (``head``: its encoded tag): written to a Writer of its own first, for its size."""
    sub = Writer()
    write(sub, value)
    w.buf += head
    w.uvarint(len(sub))
    for part in sub.getparts():
        w.raw(part)


@cache
def _tail(fields: tuple[Field, ...], version: int, flexible: bool) -> _Tail:
    """Built once per struct and version: the decoder and the encoder of a message both ask for it."""
    tagged: dict[int, tuple[str, Decode, Encode, Any]] = {}
    absent: list[tuple[str, Any]] = []
    for f in fields:
        key = snake_case(f.name)
        if not in_range(version, f.versions):
            absent.append((key, f))
        elif flexible and in_range(version, f.tagged):
            read, write = _field_codecs(f, version, flexible)
            tagged[f.tag] = (key, read, write, f)
    tagged_in_order = sorted(tagged.items())
    # Defaults are worked out once per codec; an empty list or dict is copied for each message that gets it.
    tagged_defaults = [(key, default_value(f, version)) for _, (key, _, _, f) in tagged_in_order]
    absent_defaults = [(key, default_value(f, version)) for key, f in absent]
    tagged_to_write = [(tag, key, write, default, f) for (tag, (key, _, write, f)), (_, default)
                       in zip(tagged_in_order, tagged_defaults)]

    def decode_tail(r: Reader, out: dict) -> None:
        """Tagged fields (defaults first, then what the buffer holds) and fields absent in this version."""
        if flexible:
            for key, default in tagged_defaults:
                out[key] = default.copy() if type(default) in _MUTABLE else default
            for _ in range(r.uvarint()):
                tag = r.uvarint()
                size = r.uvarint()
                end = r.pos + size
                if end > r.end:
                    raise ProtocolError("tagged field overruns its struct")
                entry = tagged.get(tag)
                if entry is None:
                    r.pos = end  # unknown tags are skipped, as Kafka does
                    continue
                sub = Reader(r.buf, r.pos, end)
                out[entry[0]] = entry[1](sub)
                r.pos = end
        for key, default in absent_defaults:
            out[key] = default.copy() if type(default) in _MUTABLE else default

    return _Tail(decode_tail, tagged_to_write, absent_defaults)


def _struct_codec(fields: tuple[Field, ...], version: int, flexible: bool) -> StructCodec:
    """Build the codec of a struct: regular fields in order, then (if flexible) the tagged-field buffer.

    The decoder and encoder are generated as straight-line Python for this struct and version, nested structs and
    arrays written out inline (no per-field loop, no call per field): each run of consecutive fixed-width fields is
    one precompiled ``struct`` call, lengths and strings are read and written in place.
    """
    namespace: dict[str, Any] = {"ProtocolError": ProtocolError, "I16": _INT16.pack, "I32": _INT32.pack}
    decoder = _DecoderSource(version, flexible, namespace)
    decoder.top(fields)
    encoder = _EncoderSource(version, flexible, namespace)
    encoder.struct(fields, "value", 4)
    source = "\n".join(
        ["def decode(r):", *decoder.lines, "", "def encode(w, value):", "    buf = w.buf", *encoder.lines]
    )
    exec(_compile_codec(source + "\n", f"<codec {version}>"), namespace)
    return StructCodec(namespace["decode"], namespace["encode"])


class _Source:
    """Python source being written for one codec: lines, fresh local names, and constants put in the namespace the
    source is run in (packers, defaults, tagged-field codecs), named with the class's ``CONSTANTS`` prefix."""

    CONSTANTS = ""

    def __init__(self, version: int, flexible: bool, namespace: dict[str, Any]) -> None:
        self.version = version
        self.flexible = flexible
        self.namespace = namespace
        self.lines: list[str] = []
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def constant(self, value: Any) -> str:
        name = self.fresh(self.CONSTANTS)
        self.namespace[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append(" " * indent + line)

    def runs(self, fields: tuple[Field, ...]) -> Iterator[tuple[list[Field], struct.Struct | None]]:
        """The fields this version has outside the tagged buffer, in order: each run of consecutive fixed-width ones
        with the one ``struct`` that packs them, every other field alone (with None)."""
        regular = [f for f in fields if in_range(self.version, f.versions)
                   and not (self.flexible and in_range(self.version, f.tagged))]
        i = 0
        while i < len(regular):
            j = i
            while j < len(regular) and _is_fixed(regular[j]):
                j += 1
            if j == i:
                yield [regular[i]], None
                i += 1
            else:
                yield regular[i:j], struct.Struct(">" + "".join(_STRUCT_FORMATS[f.type] for f in regular[i:j]))
                i = j


_BYTES_READERS = {(False, False): "bytes_", (False, True): "nullable_bytes",
                  (True, False): "compact_bytes", (True, True): "compact_nullable_bytes"}


class _DecoderSource(_Source):
    """The source of one struct's decoder, nested structs and arrays written out inline. The position is a local
    while the bytes are read in place; it is handed back to the Reader around the few calls that read through it
    (bytes, records, long varints, tagged fields). Every read is bounds-checked first: malformed input raises
    ProtocolError and nothing else."""

    CONSTANTS = "K"  # the encoder's are C...: both share the namespace

    def top(self, fields: tuple[Field, ...]) -> None:
        self.emit(4, "buf = r.buf")
        self.emit(4, "pos = r.pos")
        self.emit(4, "end = r.end")
        self.emit(4, "out = {}")
        self.struct(fields, "out", 4)
        self.emit(4, "r.pos = pos")
        self.emit(4, "return out")

    def need(self, size: str, indent: int) -> None:
        self.emit(indent, f"if pos + {size} > end:")
        self.emit(indent + 4, f"raise ProtocolError(f'truncated: need {{{size}}} bytes at {{pos}}, "
                              f"have {{end - pos}}')")

    def call(self, target: str, expression: str, indent: int) -> None:
        """A read through the Reader itself, from the current position."""
        self.emit(indent, "r.pos = pos")
        self.emit(indent, f"{target} = {expression}")
        self.emit(indent, "pos = r.pos")

    def struct(self, fields: tuple[Field, ...], out: str, indent: int) -> None:
        for run, packer in self.runs(fields):
            if packer is None:
                self.field(run[0], f"{out}[{snake_case(run[0].name)!r}]", indent)
                continue
            self.need(str(packer.size), indent)
            targets = "".join(f"{out}[{snake_case(f.name)!r}], " for f in run)
            self.emit(indent, f"{targets}= {self.constant(packer.unpack_from)}(buf, pos)")
            self.emit(indent, f"pos += {packer.size}")
        tail = _tail(fields, self.version, self.flexible)
        for key, default in tail.absent:
            value = repr(default) if type(default) in _MUTABLE else self.constant(default)  # a new [] or {} each
            self.emit(indent, f"{out}[{key!r}] = {value}")
        if not self.flexible:
            return
        if not tail.tagged:
            # The usual case: no known tagged field, so an empty tag buffer (one zero byte) needs no decoding.
            self.emit(indent, "if pos < end and buf[pos] == 0:")
            self.emit(indent + 4, "pos += 1")
            self.emit(indent, "else:")
            indent += 4
        self.call("_", f"{self.constant(tail.decode)}(r, {out})", indent)

    def field(self, f: Field, target: str, indent: int) -> None:
        version = self.version
        compact = self.flexible and f.flexible is not False
        nullable = in_range(version, f.nullable)
        element = f.element_type
        if element is not None:
            n = self.length(compact, indent)
            self.emit(indent, f"if {n} > end - pos:")
            self.emit(indent + 4, f"raise ProtocolError(f'array length {{{n}}} exceeds the {{end - pos}} bytes left')")
            self.unless_null(n, target, nullable, "array", indent)
            items = self.fresh("a")
            self.emit(indent + 4, f"{items} = []")
            self.emit(indent + 4, f"for _ in range({n}):")
            if f.is_struct:
                item = self.fresh("d")
                self.emit(indent + 8, f"{item} = {{}}")
                self.struct(f.fields, item, indent + 8)
                self.emit(indent + 8, f"{items}.append({item})")
            else:
                item = self.fresh("e")
                self.scalar(element, item, False, compact, indent + 8)
                self.emit(indent + 8, f"{items}.append({item})")
            self.emit(indent + 4, f"{target} = {items}")
        elif f.is_struct:
            inner = self.fresh("d")
            if nullable:
                self.need("1", indent)
                self.emit(indent, "if buf[pos] >= 0x80:  # a negative int8: null")
                self.emit(indent + 4, "pos += 1")
                self.emit(indent + 4, f"{target} = None")
                self.emit(indent, "else:")
                self.emit(indent + 4, "pos += 1")
                indent += 4
            self.emit(indent, f"{inner} = {{}}")
            self.struct(f.fields, inner, indent)
            self.emit(indent, f"{target} = {inner}")
        else:
            self.scalar(f.type, target, nullable, compact, indent)

    def unless_null(self, n: str, target: str, nullable: bool, what: str, indent: int) -> None:
        """A negative length is null: None where the version allows it, else refused; the caller's reading of the
        value follows, one level in (under ``else:``)."""
        self.emit(indent, f"if {n} < 0:")
        self.emit(indent + 4, f"{target} = None" if nullable else f"raise ProtocolError('null in a non-nullable {what}')")
        self.emit(indent, "else:")

    def length(self, compact: bool, indent: int) -> str:
        """A length prefix into a fresh local: compact ones are varints of length + 1 (-1 is null)."""
        n = self.fresh("n")
        if compact:
            self.emit(indent, "if pos < end and buf[pos] < 0x80:")
            self.emit(indent + 4, f"{n} = buf[pos] - 1")
            self.emit(indent + 4, "pos += 1")
            self.emit(indent, "else:")
            self.call(n, "r.uvarint() - 1", indent + 4)
        else:
            self.need("4", indent)
            self.emit(indent, f"{n}, = {self.constant(_INT32.unpack_from)}(buf, pos)")
            self.emit(indent, "pos += 4")
        return n

    def scalar(self, type_name: str, target: str, nullable: bool, compact: bool, indent: int) -> None:
        if type_name in _STRUCT_FORMATS:
            packer = struct.Struct(">" + _STRUCT_FORMATS[type_name])
            self.need(str(packer.size), indent)
            self.emit(indent, f"{target}, = {self.constant(packer.unpack_from)}(buf, pos)")
            self.emit(indent, f"pos += {packer.size}")
        elif type_name == "string":
            if compact:
                n = self.length(True, indent)
            else:
                n = self.fresh("n")
                self.need("2", indent)
                self.emit(indent, f"{n}, = {self.constant(_INT16.unpack_from)}(buf, pos)")
                self.emit(indent, "pos += 2")
            self.unless_null(n, target, nullable, "string", indent)
            self.need(n, indent + 4)
            self.emit(indent + 4, "try:")
            self.emit(indent + 8, f"{target} = str(buf[pos:pos + {n}], 'utf-8')")
            self.emit(indent + 4, "except UnicodeDecodeError as exc:")
            self.emit(indent + 8, "raise ProtocolError(f'invalid UTF-8 string: {exc}') from None")
            self.emit(indent + 4, f"pos += {n}")
        elif type_name == "uuid":
            self.need("16", indent)
            self.emit(indent, f"{target} = bytes(buf[pos:pos + 16])")
            self.emit(indent, "pos += 16")
        elif type_name == "records":
            self.call(target, f"r.records({compact})", indent)
        elif type_name == "bytes":
            self.call(target, f"r.{_BYTES_READERS[compact, nullable]}()", indent)
        else:
            raise ValueError(f"unknown type {type_name}")


class _EncoderSource(_Source):
    """The source of one struct's encoder, nested structs and arrays written out inline: a message is encoded by
    struct packing and bytearray appends into the writer's buffer, with a call only for bytes, UUIDs and each
    struct's tagged fields."""

    CONSTANTS = "C"

    def struct(self, fields: tuple[Field, ...], value: str, indent: int) -> None:
        get = self.fresh("g")
        self.emit(indent, f"{get} = {value}.get")
        for run, packer in self.runs(fields):
            if packer is None:
                self.field(run[0], get, indent)
                continue
            args = ", ".join(f"{get}({snake_case(f.name)!r}, {self.constant(default_value(f, self.version))})"
                             for f in run)
            self.emit(indent, f"buf += {self.constant(packer.pack)}({args})")
        if self.flexible:
            tagged = _tail(fields, self.version, self.flexible).tagged
            if tagged:
                self.tagged(tagged, get, indent)
            else:
                self.emit(indent, "buf.append(0)")

    def tagged(self, tagged: list[tuple[int, str, Encode, Any, Field]], get: str, indent: int) -> None:
        """The tag buffer, written out inline as the regular fields are: the count of the tagged fields that differ
        from their default, then each of them in tag order. A fixed-width value is packed in place after its tag and
        size, both encoded once here; any other is written by ``_write_tagged``, which learns its size."""
        present = []
        for tag, key, write, default, f in tagged:
            v, wanted = self.fresh("t"), self.fresh("p")
            self.emit(indent, f"{v} = {get}({key!r})")
            self.emit(indent, f"{wanted} = {v} is not None and {v} != {self.constant(default)}")
            present.append((wanted, v, tag, write, f))
        count = " + ".join(wanted for wanted, *_ in present)
        self.emit(indent, f"buf.append({count})" if len(present) < 0x80 else f"w.uvarint({count})")
        for wanted, v, tag, write, f in present:
            self.emit(indent, f"if {wanted}:")
            if _is_fixed(f):
                packer = struct.Struct(">" + _STRUCT_FORMATS[f.type])
                self.emit(indent + 4, f"buf += {self.constant(_uvarint_bytes(tag) + _uvarint_bytes(packer.size))}")
                self.emit(indent + 4, f"buf += {self.constant(packer.pack)}({v})")
            else:
                head = self.constant(_uvarint_bytes(tag))
                self.emit(indent + 4, f"{self.constant(_write_tagged)}(w, {head}, {self.constant(write)}, {v})")
                self.emit(indent + 4, "buf = w.buf")

    def field(self, f: Field, get: str, indent: int) -> None:
        version = self.version
        compact = self.flexible and f.flexible is not False
        nullable = in_range(version, f.nullable)
        key = snake_case(f.name)
        default = self.constant(default_value(f, version))
        v = self.fresh("v")
        element = f.element_type
        if element is None and not f.is_struct and not nullable and f.type in ("string", "bytes", "records"):
            # Kafka never writes null where a version has no null: a string or bytes left None is written empty.
            self.emit(indent, f"{v} = {get}({key!r})")
            self.emit(indent, f"if {v} is None: {v} = {default}")
        else:
            self.emit(indent, f"{v} = {get}({key!r}, {default})")
        if element is not None:
            self.emit(indent, f"if {v} is None:")
            if nullable:
                self.emit(indent + 4, "buf.append(0)" if compact else "buf += b'\\xff\\xff\\xff\\xff'")
            else:
                self.emit(indent + 4, f"raise ValueError({f'{f.name} is not nullable in version {version}'!r})")
            self.emit(indent, "else:")
            self.length(f"len({v})", compact, indent + 4)
            item = self.fresh("i")
            self.emit(indent + 4, f"for {item} in {v}:")
            if f.is_struct:
                self.struct(f.fields, item, indent + 8)
            else:
                self.scalar(element, item, True, compact, indent + 8)
        elif f.is_struct:
            if nullable:
                self.emit(indent, f"if {v} is None:")
                self.emit(indent + 4, "buf.append(0xff)")
                self.emit(indent, "else:")
                self.emit(indent + 4, "buf.append(1)")
                self.struct(f.fields, v, indent + 4)
            else:
                self.struct(f.fields, v, indent)
        else:
            self.scalar(f.type, v, nullable, compact, indent)

    def scalar(self, type_name: str, value: str, nullable: bool, compact: bool, indent: int) -> None:
        if type_name in _STRUCT_FORMATS:
            self.emit(indent, f"buf += {self.constant(struct.Struct('>' + _STRUCT_FORMATS[type_name]).pack)}({value})")
        elif type_name == "string":
            if nullable:
                self.emit(indent, f"if {value} is None:")
                self.emit(indent + 4, "buf.append(0)" if compact else "buf += b'\\xff\\xff'")
                self.emit(indent, "else:")
                indent += 4
            data = self.fresh("s")
            self.emit(indent, f"{data} = {value}.encode()")
            if compact:
                self.length(f"len({data})", True, indent)
            else:
                self.emit(indent, f"buf += I16(len({data}))")
            self.emit(indent, f"buf += {data}")
        elif type_name == "uuid":
            self.emit(indent, f"w.uuid({value})")
        else:  # bytes and records: large payloads become parts of their own, so the buffer may be a new one
            self.emit(indent, f"w.bytes_({value}, {compact})")
            self.emit(indent, "buf = w.buf")

    def length(self, count: str, compact: bool, indent: int) -> None:
        if compact:
            n = self.fresh("n")
            self.emit(indent, f"{n} = {count} + 1")
            self.emit(indent, f"if {n} < 0x80: buf.append({n})")
            self.emit(indent, f"else: w.uvarint({n})")
        else:
            self.emit(indent, f"buf += I32({count})")


_CODECS: dict[tuple[str, int], StructCodec] = {}
CompileCodec = Callable[[str, str], CodeType]


def compile_source(source: str, filename: str) -> CodeType:
    """A codec's generated source compiled (what a codec compiler does when it has nothing kept)."""
    return compile(source, filename, "exec")


_compile_codec: CompileCodec = compile_source


def use_codec_compiler(compile_codec: CompileCodec) -> None:
    """What turns a codec's generated source into code (``compile_source`` unless set): the codecs do no IO, so a
    program that keeps compiled code between processes (the broker's ``minibroker.server.codec_cache``) puts it here."""
    global _compile_codec
    _compile_codec = compile_codec


STRICT_ENV = "MINIBROKER_STRICT_CODEC"  # protocol.strict's switch


def strict_enabled() -> bool:
    """Whether responses are checked against their schema (``protocol.strict``, which is imported only then)."""
    return os.environ.get(STRICT_ENV) == "1"


def codec(message: Message, version: int) -> StructCodec:
    """The codec of ``message`` at ``version`` (built once, then cached by name and version)."""
    key = (message.name, version)
    found = _CODECS.get(key)
    if found is None:
        if not in_range(version, message.valid):
            raise ProtocolError(f"{message.name} has no version {version}")
        found = _struct_codec(message.fields, version, in_range(version, message.flexible))
        if message.kind == "response" and strict_enabled():
            from . import strict  # the check imports this module: loaded only in strict mode

            found = StructCodec(found.decode, strict.checked(message, version, found.encode))
        _CODECS[key] = found
    return found


def is_flexible(message: Message, version: int) -> bool:
    return in_range(version, message.flexible)
