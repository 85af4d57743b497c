"""The .proto language (proto2 and proto3) parsed into Wire's elements, as Confluent's registry parses schema text
(Wire's ProtoParser): comments dropped, ``default`` and ``json_name`` taken out of a field's options, numbers and
enum values kept as written. Written here because no Python library parses .proto text without protoc."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from minibroker.registry.parsed import InvalidSchemaError
from minibroker.registry.protobuf_elements import (
    MAX_TAG, Enum, EnumConstant, Extend, Extensions, Field, Message, OneOf, Option, Primitive, ProtoFile, Range,
    Reserved, Rpc, Service,
)

_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.]))
  | (?P<word>[A-Za-z_][\w.]*|\.[A-Za-z_][\w.]*)
  | (?P<symbol>[{}\[\]()<>;,=:.\-+])
""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'",
            '"': '"', "?": "?"}
LABELS = ("optional", "required", "repeated")


def parse_proto(text: str) -> ProtoFile:
    """The file's elements; InvalidSchemaError with the line of the first thing that is not .proto."""
    return _Parser(text).file()


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, int]] = []
        line, pos = 1, 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise InvalidSchemaError(f"Syntax error in line {line}: unexpected '{text[pos]}'")
            kind = match.lastgroup or ""
            if kind != "space":
                self.tokens.append((kind, match.group(), line))
            line += match.group().count("\n")
            pos = match.end()
        self.at = 0
        self.syntax: str | None = None

    # ---- tokens ----

    def peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.tokens[index][1] if index < len(self.tokens) else ""

    def kind(self) -> str:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else ""

    def fail(self, message: str) -> InvalidSchemaError:
        line = self.tokens[min(self.at, len(self.tokens) - 1)][2] if self.tokens else 1
        return InvalidSchemaError(f"Syntax error in line {line}: {message}")

    def next(self) -> str:
        if self.at >= len(self.tokens):
            raise self.fail("unexpected end of file")
        self.at += 1
        return self.tokens[self.at - 1][1]

    def accept(self, token: str) -> bool:
        if self.peek() == token and self.kind() in ("symbol", "word"):
            self.at += 1
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            raise self.fail(f"expected '{token}' but was '{self.peek()}'")

    def word(self, what: str = "a name") -> str:
        if self.kind() != "word":
            raise self.fail(f"expected {what} but was '{self.peek()}'")
        return self.next()

    def integer(self) -> int:
        text = self.next()
        try:
            return int(text, 0) if not re.fullmatch(r"[-+]?0\d+", text) else int(text, 8)
        except ValueError:
            raise self.fail(f"expected an integer but was '{text}'") from None

    def string(self) -> str:
        if self.kind() != "string":
            raise self.fail(f"expected a string but was '{self.peek()}'")
        parts = []
        while self.kind() == "string":  # adjacent literals concatenate
            parts.append(_unescape(self.next()[1:-1]))
        return "".join(parts)

    # ---- file ----

    def file(self) -> ProtoFile:
        proto = ProtoFile()
        while self.at < len(self.tokens):
            if self.accept(";"):
                continue
            keyword = self.word("a declaration")
            if keyword == "syntax":
                self.expect("=")
                syntax = self.string()
                if syntax not in ("proto2", "proto3"):
                    raise self.fail(f"unexpected syntax: {syntax}")
                if proto.syntax or proto.package or proto.imports or proto.types:
                    raise self.fail("'syntax' element must be the first declaration in a file")
                proto.syntax = self.syntax = syntax
                self.expect(";")
            elif keyword == "package":
                if proto.package is not None:
                    raise self.fail("too many package names")
                proto.package = self.word("a package name")
                self.expect(";")
            elif keyword == "import":
                target = proto.imports
                if self.peek() in ("public", "weak") and self.kind() == "word":
                    target = proto.public_imports if self.next() == "public" else proto.weak_imports
                target.append(self.string())
                self.expect(";")
            elif keyword == "option":
                proto.options.append(self.option_statement())
            elif keyword in ("message", "enum"):
                proto.types.append(self.message() if keyword == "message" else self.enum())
            elif keyword == "extend":
                proto.extends.append(self.extend())
            elif keyword == "service":
                proto.services.append(self.service())
            else:
                raise self.fail(f"unexpected label: {keyword}")
        return proto

    # ---- options ----

    def option_statement(self) -> Option:
        option = self.option()
        self.expect(";")
        return option

    def option(self) -> Option:
        """``name = value`` after ``option`` or inside ``[...]``; ``(ext).sub = v`` nests as kind OPTION."""
        parenthesized = self.accept("(")
        name = self.word("an option name")
        if parenthesized:
            self.expect(")")
        subname = ""
        while self.peek().startswith(".") or self.peek() == ".":
            subname += self.next()
            if subname.endswith("."):
                subname += self.word("an option name")
        self.expect("=")
        kind, value = self.option_value()
        if subname:
            parts = subname.lstrip(".").split(".")
            inner = Option(parts[-1], kind, value)
            for part in reversed(parts[:-1]):
                inner = Option(part, "OPTION", inner)
            return Option(name, "OPTION", inner, parenthesized)
        return Option(name, kind, value, parenthesized)

    def option_value(self) -> tuple[str, Any]:
        kind = self.kind()
        if kind == "string":
            return "STRING", self.string()
        if kind == "number":
            return "NUMBER", self.next()
        if self.peek() in ("-", "+") and self.peek(1) in ("inf", "nan"):
            return "NUMBER", self.next() + self.next()
        if self.accept("{"):
            return "MAP", self.option_map()
        if self.accept("["):
            return "LIST", self.option_list()
        word = self.word("an option value")
        if word in ("true", "false"):
            return "BOOLEAN", word
        return "ENUM", word

    def option_map(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        while not self.accept("}"):
            if self.accept("["):
                key = "[" + self.word("an extension name") + "]"
                self.expect("]")
            else:
                key = self.word("a field name")
            self.accept(":")
            value = self._map_value()
            if key in values:  # a repeated key gathers its values into a list
                existing = values[key]
                values[key] = (existing if isinstance(existing, list) else [existing]) + [value]
            else:
                values[key] = value
            self.accept(",") or self.accept(";")
        return values

    def _map_value(self) -> Any:
        if self.accept("{"):
            return self.option_map()
        if self.accept("["):
            return self.option_list()
        kind, value = self.option_value()
        return Primitive(kind, value)

    def option_list(self) -> list[Any]:
        values: list[Any] = []
        while not self.accept("]"):
            values.append(self._map_value())
            if not self.accept(",") and self.peek() != "]":
                raise self.fail(f"expected ',' or ']' but was '{self.peek()}'")
        return values

    def bracketed_options(self) -> list[Option]:
        options: list[Option] = []
        if self.accept("["):
            while True:
                options.append(self.option())
                if self.accept("]"):
                    break
                self.expect(",")
        return options

    # ---- types ----

    def message(self) -> Message:
        message = Message(self.word("a message name"))
        self.expect("{")
        while not self.accept("}"):
            self.message_member(message)
        return message

    def message_member(self, message: Message) -> None:
        if self.accept(";"):
            return
        keyword = self.peek()
        if keyword == "message":
            self.next()
            message.nested.append(self.message())
        elif keyword == "enum":
            self.next()
            message.nested.append(self.enum())
        elif keyword == "oneof":
            self.next()
            message.oneofs.append(self.oneof())
        elif keyword == "option":
            self.next()
            message.options.append(self.option_statement())
        elif keyword == "reserved":
            self.next()
            message.reserveds.append(Reserved(self.ranges(names=True)))
        elif keyword == "extensions":
            self.next()
            values = self.ranges(names=False, terminated=False)
            message.extensions.append(Extensions(values, self.bracketed_options()))
            self.expect(";")
        elif keyword == "extend":
            self.next()
            message.extends.append(self.extend())
        else:
            message.fields.append(self.field(in_oneof=False))

    def field(self, in_oneof: bool) -> Field:
        label = None
        if self.peek() in LABELS and self.kind() == "word" and self.peek(1) != "=":
            label = self.next()
            if in_oneof:
                raise self.fail(f"'{label}' label is not allowed in a oneof")
            if label == "required" and self.syntax == "proto3":
                raise self.fail("'required' label is not allowed in proto3")
        if self.peek() == "group":
            raise self.fail("groups are not supported")
        type_name = self.data_type()
        if type_name.startswith("map<") and label is not None:
            raise self.fail(f"'{label}' label is not allowed on a map field")
        name = self.word("a field name")
        self.expect("=")
        tag = self.integer()
        options = self.bracketed_options()
        self.expect(";")
        default = _take(options, "default")
        json_name = _take(options, "json_name")
        return Field(label, type_name, name, tag,
                     None if default is None else str(default.value),
                     None if json_name is None else str(json_name.value), options)

    def data_type(self) -> str:
        name = self.word("a type")
        if name == "map" and self.accept("<"):
            key = self.word("a map key type")
            self.expect(",")
            value = self.word("a map value type")
            self.expect(">")
            return f"map<{key}, {value}>"
        return name

    def statements(self, options: list[Option], statement: Callable[[], None]) -> None:
        """A block's statements after its "{", through its "}": empty ones skipped, option statements added to
        `options`, `statement` reading each other one."""
        while not self.accept("}"):
            if self.accept(";"):
                continue
            if self.accept("option"):
                options.append(self.option_statement())
            else:
                statement()

    def oneof(self) -> OneOf:
        oneof = OneOf(self.word("a oneof name"))
        self.expect("{")
        self.statements(oneof.options, lambda: oneof.fields.append(self.field(in_oneof=True)))
        return oneof

    def enum(self) -> Enum:
        enum = Enum(self.word("an enum name"))
        self.expect("{")
        self.statements(enum.options, lambda: self.enum_member(enum))
        return enum

    def enum_member(self, enum: Enum) -> None:
        if self.accept("reserved"):
            enum.reserveds.append(Reserved(self.ranges(names=True)))
            return
        name = self.word("an enum constant")
        self.expect("=")
        tag = self.integer()
        options = self.bracketed_options()
        self.expect(";")
        enum.constants.append(EnumConstant(name, tag, options))

    def ranges(self, names: bool, terminated: bool = True) -> list[Range]:
        values: list[Range] = []
        while True:
            if names and self.kind() == "string":
                values.append(self.string())
            else:
                start = self.integer()
                if self.accept("to"):
                    end = MAX_TAG if self.accept("max") else self.integer()
                    values.append((start, end))
                else:
                    values.append(start)
            if not self.accept(","):
                break
        if terminated:
            self.expect(";")
        return values

    def extend(self) -> Extend:
        extend = Extend(self.word("a type to extend"))
        self.expect("{")
        while not self.accept("}"):
            if not self.accept(";"):
                extend.fields.append(self.field(in_oneof=False))
        return extend

    def service(self) -> Service:
        service = Service(self.word("a service name"))
        self.expect("{")
        self.statements(service.options, lambda: service.rpcs.append(self.rpc()))
        return service

    def rpc(self) -> Rpc:
        self.expect("rpc")
        rpc = Rpc(self.word("an rpc name"), "", "")
        rpc.request_streaming, rpc.request = self.rpc_type("a request type")
        self.expect("returns")
        rpc.response_streaming, rpc.response = self.rpc_type("a response type")
        if self.accept("{"):
            self.statements(rpc.options, lambda: self.expect("option"))  # an rpc's body holds only options
            self.accept(";")
        else:
            self.expect(";")
        return rpc

    def rpc_type(self, what: str) -> tuple[bool, str]:
        """``(Type)`` or ``(stream Type)``: whether it streams, and the type."""
        self.expect("(")
        streaming = self.peek() == "stream" and self.peek(1) != ")"
        if streaming:
            self.next()
        type_name = self.word(what)
        self.expect(")")
        return streaming, type_name


def _take(options: list[Option], name: str) -> Option | None:
    for i, option in enumerate(options):
        if option.name == name and not option.parenthesized:
            return options.pop(i)
    return None


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            out.append(chr(int(digits.group(), 16)) if digits else nxt)
            i += 2 + (len(digits.group()) if digits else 0)
        elif nxt.isdigit():
            digits = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(chr(int(digits.group(), 8)) if digits else nxt)
            i += 1 + (len(digits.group()) if digits else 1)
        else:
            out.append(nxt)
            i += 2
    return "".join(out)
