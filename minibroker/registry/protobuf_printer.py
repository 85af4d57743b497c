"""Wire's elements printed as Confluent prints a Protobuf schema (ProtobufSchemaUtils.toString): the canonical
string the registry keeps and compares, and with ``normalize`` Confluent's normalized form (fields, oneofs, enum
constants, reserved ranges and options sorted; imports sorted and deduplicated; type names fully qualified; map
entry messages written as ``map<K, V>``; numbers in one notation)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

from minibroker.registry.parsed import InvalidSchemaError
from minibroker.registry.protobuf_elements import (
    MAX_TAG, SCALARS, Enum, EnumConstant, Extend, Extensions, Field, Message, OneOf, Option, Primitive, ProtoFile,
    Reserved, Rpc, Service, is_map, map_parts,
)
from minibroker.registry.protobuf_types import Scope, TypeInfo

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            "\\": "\\\\", "'": "\\'", '"': '\\"'}
_NUMERIC = SCALARS - {"bool", "string"}


def to_string(file: ProtoFile, types: dict[str, TypeInfo] | None = None) -> str:
    """The canonical string; given the resolvable ``types``, the normalized one."""
    return _Printer(None if types is None else Scope(types, file.package or "")).file(file)


class _Printer:
    def __init__(self, scope: Scope | None) -> None:
        self.scope = scope
        self.normalize = scope is not None

    def file(self, f: ProtoFile) -> str:
        out: list[str] = []
        if f.syntax is not None and (not self.normalize or f.syntax == "proto3"):
            out.append(f'syntax = "{f.syntax}";\n')
        if f.package is not None:
            out.append(f"package {f.package};\n")
        if f.imports or f.public_imports:
            out.append("\n")
            imports, public = f.imports, f.public_imports
            if self.normalize:
                imports, public = sorted(set(imports)), sorted(set(public))
            out += [f'import "{name}";\n' for name in imports]
            out += [f'import public "{name}";\n' for name in public]
        options = self.options(f.options)
        if options:
            out.append("\n")
            out += [self.option_statement(o) for o in options]
        types = self.types(f.types)
        if types:
            out.append("\n")
            out += self.named(types)
        if f.extends:
            out.append("\n")
            out += [self.extend(e) for e in self.extends(f.extends)]
        if f.services:
            out.append("\n")
            out += [self.service(s) for s in f.services]
        return "".join(out)

    def named(self, types: list[Message | Enum]) -> list[str]:
        """Messages first, then enums, each printed inside its own name scope."""
        out = []
        for kind in (Message, Enum):
            for element in types:
                if isinstance(element, kind):
                    if self.scope:
                        self.scope.names.append(element.name)
                    out.append(self.message(element) if isinstance(element, Message) else self.enum(element))
                    if self.scope:
                        self.scope.names.pop()
        return out

    def types(self, types: list[Message | Enum]) -> list[Message | Enum]:
        if not self.scope:
            return types
        kept = []
        for element in types:
            self.scope.names.append(element.name)
            info = self.scope.get(element.name)
            self.scope.names.pop()
            if not (isinstance(element, Message) and info is not None and info.map_type):
                kept.append(element)
        return kept

    # ---- declarations ----

    def service(self, service: Service) -> str:
        return _block(f"service {service.name}", [self.option_statement(o) for o in self.options(service.options)],
                      [self.rpc(r) for r in service.rpcs])

    def rpc(self, rpc: Rpc) -> str:
        request = self.resolve(rpc.request) if self.normalize else rpc.request
        response = self.resolve(rpc.response) if self.normalize else rpc.response
        out = [f"rpc {rpc.name} (", "stream " if rpc.request_streaming else "", request, ") returns (",
               "stream " if rpc.response_streaming else "", response, ")"]
        options = self.options(rpc.options)
        if options:
            out.append(" {\n")
            out += [_indent(self.option_statement(o)) for o in options]
            out.append("}")
        out.append(";\n")
        return "".join(out)

    def enum(self, enum: Enum) -> str:
        constants = enum.constants
        if self.normalize:
            constants = sorted(constants, key=lambda c: (c.tag, c.name))
        return _block(f"enum {enum.name}", [self.reserved(r) for r in self.reserveds(enum.reserveds)]
                      + [self.option_statement(o) for o in self.options(enum.options)]
                      + [self.constant(c) for c in constants])

    def constant(self, constant: EnumConstant) -> str:
        out = f"{constant.name} = {constant.tag}"
        options = self.options(constant.options)
        if options:
            out += " " + self.option_list(options)
        return out + ";\n"

    def message(self, message: Message) -> str:
        fields, oneofs, extensions = message.fields, message.oneofs, message.extensions
        if self.normalize:
            fields = sorted(fields, key=lambda f: f.tag)
            oneofs = [OneOf(o.name, sorted(o.fields, key=lambda f: f.tag), o.options) for o in oneofs if o.fields]
            oneofs.sort(key=lambda o: o.fields[0].tag)
            extensions = [Extensions([v], e.options) for e in extensions for v in e.values]
            extensions.sort(key=lambda e: _range_start(e.values[0]))
        return _block(
            f"message {message.name}",
            [self.reserved(r) for r in self.reserveds(message.reserveds)],
            [self.option_statement(o) for o in self.options(message.options)],
            [self.field(f) for f in fields],
            [self.oneof(o) for o in oneofs],
            [self.extensions(e) for e in extensions],
            [self.extend(e) for e in self.extends(message.extends)],
            self.named(self.types(message.nested)),
        )

    def reserveds(self, reserveds: list[Reserved]) -> list[Reserved]:
        if not self.normalize:
            return reserveds
        single = [Reserved([v]) for r in reserveds for v in r.values]
        return sorted(single, key=lambda r: (_range_start(r.values[0]), _range_text(r.values[0])))

    def reserved(self, reserved: Reserved) -> str:
        return "reserved " + ", ".join(self.range(v) for v in reserved.values) + ";\n"

    def range(self, value: Any) -> str:
        if isinstance(value, str):
            return f'"{value}"'
        if isinstance(value, int):
            return str(value)
        start, end = value
        if self.normalize and start == end:
            return str(start)
        return f"{start} to {end if end < MAX_TAG else 'max'}"

    def extensions(self, extensions: Extensions) -> str:
        out = "extensions " + ", ".join(self.range(v) for v in extensions.values)
        options = self.options(extensions.options)
        if options:
            out += " " + self.option_list(options)
        return out + ";\n"

    def oneof(self, oneof: OneOf) -> str:
        return _block(f"oneof {oneof.name}", [self.option_statement(o) for o in self.options(oneof.options)],
                      [self.field(f) for f in oneof.fields])

    def extends(self, extends: list[Extend]) -> list[Extend]:
        if not self.normalize:
            return extends
        grouped: dict[str, list[Field]] = {}
        for extend in extends:
            for f in extend.fields:
                grouped.setdefault(self.resolve(extend.name), []).append(f)
        return [Extend(name, fields) for name, fields in grouped.items()]

    def extend(self, extend: Extend) -> str:
        fields = sorted(extend.fields, key=lambda f: f.tag) if self.normalize else extend.fields
        return _block(f"extend {extend.name}", [self.field(f) for f in fields])

    def field(self, f: Field) -> str:
        label, type_name = f.label, f.type
        if self.scope:
            if type_name not in SCALARS and not is_map(type_name):
                type_name = self.resolve(type_name)
                info = self.scope.types.get(type_name[1:])
                if info is not None and info.map_type:
                    type_name = info.map_type
            if is_map(type_name):
                key, value = map_parts(type_name)
                resolved = self.scope.resolve(value)
                if resolved is not None:
                    type_name = f"map<{key}, .{resolved}>"
                label = None
        out = f"{label} " if label else ""
        out += f"{type_name} {f.name} = {f.tag}"
        options = list(f.options)
        if f.default is not None:
            options.append(Option("default", _default_kind(type_name), f.default))
        if f.json_name is not None:
            options.append(Option("json_name", "STRING", f.json_name))
        options = self.options(options)
        if options:
            out += " " + self.option_list(options)
        return out + ";\n"

    # ---- options ----

    def options(self, options: list[Option]) -> list[Option]:
        if not self.normalize or not options:
            return options
        return sorted(options, key=lambda o: o.name)

    def option_statement(self, option: Option) -> str:
        return f"option {self.option(option)};\n"

    def option(self, option: Option) -> str:
        name = f"({option.name})" if option.parenthesized else option.name
        kind, value = option.kind, option.value
        if kind == "STRING":
            return f'{name} = "{_escape(value)}"'
        if kind in ("BOOLEAN", "ENUM"):
            return f"{name} = {value}"
        if kind == "NUMBER":
            return f"{name} = {self.number(value)}"
        if kind == "OPTION":
            return f"{name}.{self.option(value)}"
        if kind == "MAP":
            return f"{name} = {{\n{self.option_map(value)}}}"
        return f"{name} = {self.option_list(value)}"

    def option_list(self, values: list[Any]) -> str:
        if len(values) == 1:
            return f"[{self.value(values[0])}]"
        body = "".join(_indent(self.value(v) + ("," if i < len(values) - 1 else "")) for i, v in enumerate(values))
        return f"[\n{body}]"

    def option_map(self, values: dict[str, Any]) -> str:
        items = list(values.items())
        if self.normalize:
            items = sorted((k, v) for k, v in items if not (isinstance(v, list) and not v))
            items = list(dict(items).items())
        return "".join(
            _indent(f"{key}: {self.value(value)}" + ("," if i < len(items) - 1 else ""))
            for i, (key, value) in enumerate(items))

    def value(self, value: Any) -> str:
        if isinstance(value, str):
            return f'"{_escape(value)}"'
        if isinstance(value, dict):
            return f"{{\n{self.option_map(value)}}}"
        if isinstance(value, list):
            if self.normalize and len(value) == 1:
                return self.value(value[0])
            body = "".join(_indent(self.value(v) + ("," if i < len(value) - 1 else "")) for i, v in enumerate(value))
            return f"[\n{body}]"
        if isinstance(value, Primitive):
            if value.kind in ("BOOLEAN", "ENUM"):
                return value.value
            if value.kind == "NUMBER":
                return self.number(value.value)
            return self.value(value.value)
        if isinstance(value, Option):
            return self.option(value)
        return str(value)

    def number(self, text: str) -> str:
        """As written; normalized, Java's DecimalFormat without grouping (at most three decimals)."""
        if not self.normalize:
            return text
        try:
            number = Decimal(int(text, 0)) if text.lower().lstrip("+-").startswith("0x") else Decimal(text)
        except (ValueError, InvalidOperation):
            return text
        if not number.is_finite():
            return text
        rounded = number.quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN).normalize()
        formatted = format(rounded, "f")
        return "0" if formatted in ("-0", "0") else formatted

    def resolve(self, name: str) -> str:
        resolved = self.scope.resolve(name) if self.scope else None
        if resolved is None:
            raise InvalidSchemaError(f"Could not resolve type: {name}")
        return "." + resolved


def _default_kind(type_name: str) -> str:
    simple = type_name.rpartition(".")[2]
    if simple == "bool":
        return "BOOLEAN"
    if simple == "string":
        return "STRING"
    return "NUMBER" if simple in _NUMERIC else "ENUM"


def _range_start(value: Any) -> int:
    if isinstance(value, tuple):
        return value[0]
    return value if isinstance(value, int) else 2**31 - 1


def _range_text(value: Any) -> str:
    if isinstance(value, tuple):
        return f"{value[0]}..{value[1]}"
    return str(value)


def _escape(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _block(header: str, *sections: list[str]) -> str:
    """`header {`, each section that is not empty after a line break with its statements indented, then `}`, as
    Confluent's printer lays out a declaration's body."""
    out = [header + " {"]
    for section in sections:
        if section:
            out.append("\n")
            out += [_indent(statement) for statement in section]
    out.append("}\n")
    return "".join(out)


def _indent(text: str) -> str:
    """Java's appendIndented: every line indented by two spaces (String.split drops the trailing empty ones)."""
    lines = text.split("\n")
    while len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)
