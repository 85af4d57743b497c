"""Declarative message descriptions and the one generic codec driven by them.

A ``Message`` lists its ``Field``s with the version ranges in which they exist, are nullable or
are tagged, exactly as Kafka's JSON message definitions say. ``codec(message, version)`` turns
such a description into a decoder and an encoder for one version, once, and caches them: the
per-field work at run time is a list walk, with no per-version branches written by hand.

Decoded messages are plain ``dict``s keyed by snake_case field names; encoders take the same
dicts and fill any missing field with its default.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

from .primitives import ProtocolError, Reader, Writer

MAX_VERSION = 0x7FFF
Versions = tuple[int, int] | None  # inclusive (low, high), or None for "none"

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string", "bytes", "records", "uuid"}
)


def in_range(version: int, versions: Versions) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


@dataclass(frozen=True, slots=True)
class Field:
    """One field: ``type`` is Kafka's type name (``int32``, ``[]string``, ``[]TopicData``, ``Cursor``)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions = None
    tagged: Versions = None
    tag: int | None = None
    default: Any = None
    flexible: Versions | bool = True  # False: never compact, even in flexible versions (RequestHeader.ClientId)
    fields: tuple[Field, ...] = ()

    @property
    def element_type(self) -> str | None:
        return self.type[2:] if self.type.startswith("[]") else None

    @property
    def is_struct(self) -> bool:
        element = self.element_type
        return (element or self.type) not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    api_key: int | None
    kind: str  # "request", "response", "header" or "data"
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...] = field(default=())


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


@dataclass(slots=True)
class StructCodec:
    """Decoder and encoder of one struct (message body or nested struct) at one version."""

    decode: Decode
    encode: Encode


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
_MISSING = object()


def _is_fixed(f: Field) -> bool:
    """A fixed-width scalar: consecutive ones are packed and unpacked with one ``struct`` call."""
    return f.element_type is None and f.type in _STRUCT_FORMATS


def _struct_codec(fields: tuple[Field, ...], version: int, flexible: bool) -> StructCodec:
    """Build the codec of a struct: regular fields in order, then (if flexible) the tagged-field buffer.

    The decoder and encoder are generated as straight-line Python for this struct and version (no per-field
    loop, no per-field dict of options): each run of consecutive fixed-width fields is one precompiled
    ``struct`` call, every other field calls its own codec.
    """
    regular: list[tuple[str, Decode, Encode, Any]] = []
    tagged: dict[int, tuple[str, Decode, Encode, Any]] = {}
    absent: list[tuple[str, Any]] = []
    for f in fields:
        key = snake_case(f.name)
        if not in_range(version, f.versions):
            absent.append((key, f))
            continue
        read, write = _field_codecs(f, version, flexible)
        entry = (key, read, write, f)
        if flexible and in_range(version, f.tagged):
            tagged[f.tag] = entry
        else:
            regular.append(entry)
    tagged_in_order = sorted(tagged.items())

    def decode_tail(r: Reader, out: dict) -> None:
        """Tagged fields (defaults first, then what the buffer holds) and fields absent in this version."""
        if flexible:
            for _, (key, _, _, f) in tagged_in_order:
                out[key] = default_value(f, version)
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
        for key, f in absent:
            out[key] = default_value(f, version)

    def encode_tagged(w: Writer, value: dict) -> None:
        get = value.get
        present = []
        for tag, (key, _, write, f) in tagged_in_order:
            v = get(key)
            if v is not None and v != default_value(f, version):
                present.append((tag, write, v))
        w.uvarint(len(present))
        for tag, write, v in present:
            sub = Writer()
            write(sub, v)
            w.uvarint(tag)
            w.uvarint(len(sub))
            for part in sub.getparts():
                w.raw(part)

    namespace: dict[str, Any] = {
        "M": _MISSING, "ProtocolError": ProtocolError, "decode_tail": decode_tail, "encode_tagged": encode_tagged,
    }
    dec = ["def decode(r):", "    out = {}"]
    enc = ["def encode(w, value):", "    get = value.get"]
    i = 0
    while i < len(regular):
        j = i
        while j < len(regular) and _is_fixed(regular[j][3]):
            j += 1
        if j > i:
            packer = struct.Struct(">" + "".join(_STRUCT_FORMATS[regular[k][3].type] for k in range(i, j)))
            namespace[f"P{i}"], namespace[f"U{i}"] = packer.pack, packer.unpack_from
            for k in range(i, j):
                namespace[f"D{k}"] = default_value(regular[k][3], version)
                enc.append(f"    v{k} = get({regular[k][0]!r}, M)")
                enc.append(f"    if v{k} is M: v{k} = D{k}")
            enc.append(f"    w.buf += P{i}({', '.join(f'v{k}' for k in range(i, j))})")
            size = packer.size
            targets = "".join(f"out[{regular[k][0]!r}], " for k in range(i, j))
            dec.append("    pos = r.pos")
            dec.append(f"    if pos + {size} > r.end:")
            dec.append(f"        raise ProtocolError(f'truncated: need {size} bytes at {{pos}}, have {{r.end - pos}}')")
            dec.append(f"    {targets}= U{i}(r.buf, pos)")
            dec.append(f"    r.pos = pos + {size}")
            i = j
            continue
        key, read, write, f = regular[i]
        namespace[f"R{i}"], namespace[f"W{i}"], namespace[f"D{i}"] = read, write, default_value(f, version)
        dec.append(f"    out[{key!r}] = R{i}(r)")
        enc.append(f"    v = get({key!r}, M)")
        # Kafka never writes null where a version has no null: a string or bytes left None is written empty.
        empty_for_none = f.type in ("string", "bytes") and not in_range(version, f.nullable)
        enc.append(f"    W{i}(w, D{i} if v is M{' or v is None' if empty_for_none else ''} else v)")
        i += 1
    if flexible and not tagged and not absent:
        # The usual case: no known tagged field, so an empty tag buffer (one zero byte) needs no decoding.
        dec.append("    pos = r.pos")
        dec.append("    if pos < r.end and r.buf[pos] == 0:")
        dec.append("        r.pos = pos + 1")
        dec.append("    else:")
        dec.append("        decode_tail(r, out)")
    elif flexible or absent:
        dec.append("    decode_tail(r, out)")
    dec.append("    return out")
    if flexible:
        enc.append("    encode_tagged(w, value)" if tagged else "    w.buf.append(0)")
    exec(compile("\n".join(dec) + "\n\n" + "\n".join(enc) + "\n", f"<codec {version}>", "exec"), namespace)
    return StructCodec(namespace["decode"], namespace["encode"])


_CODECS: dict[tuple[str, int], StructCodec] = {}


def codec(message: Message, version: int) -> StructCodec:
    """The codec of ``message`` at ``version`` (built once, then cached by name and version)."""
    key = (message.name, version)
    found = _CODECS.get(key)
    if found is None:
        if not in_range(version, message.valid):
            raise ProtocolError(f"{message.name} has no version {version}")
        found = _CODECS[key] = _struct_codec(message.fields, version, in_range(version, message.flexible))
    return found


def is_flexible(message: Message, version: int) -> bool:
    return in_range(version, message.flexible)
