"""Wire's elements to and from google.protobuf's FileDescriptorProto, the form confluent-kafka's ProtobufSerializer
registers (base64) and its ProtobufDeserializer asks for (``?format=serialized``). Read as Confluent reads one
(ProtobufSchema.toProtoFile: standard options kept, map entry messages kept as messages, proto3 ``optional`` from
``proto3_optional``); built with every type name fully qualified, and checked by loading it into a
DescriptorPool (protobuf's own validation: duplicate numbers or names, unknown types, bad ranges). Imported only
when a Protobuf schema is parsed: it needs the ``protobuf`` package (``minibroker[registry]``)."""

from __future__ import annotations

import re
from google.protobuf import descriptor_pb2 as d
from google.protobuf import descriptor_pool

from minibroker.registry.parsed import InvalidSchemaError
from minibroker.registry.protobuf_elements import (
    MAX_TAG, SCALARS, Enum, EnumConstant, Extend, Extensions, Field, Message, OneOf, Option, ProtoFile, Range,
    Reserved, Rpc, Service, is_map, map_parts,
)
from minibroker.registry.protobuf_types import Scope, TypeInfo

FDP = d.FieldDescriptorProto
# The standard options Confluent reads from a descriptor, in its order.
_FILE_OPTIONS = (
    "java_package", "java_outer_classname", "java_multiple_files", "java_generate_equals_and_hash",
    "java_string_check_utf8", "optimize_for", "go_package", "cc_generic_services", "java_generic_services",
    "py_generic_services", "deprecated", "cc_enable_arenas", "objc_class_prefix", "csharp_namespace", "swift_prefix",
    "php_class_prefix", "php_namespace", "php_metadata_namespace", "ruby_package",
)
_MESSAGE_OPTIONS = ("no_standard_descriptor_accessor", "deprecated", "map_entry")
_FIELD_OPTIONS = ("ctype", "packed", "jstype", "deprecated", "debug_redact", "retention")
_ENUM_OPTIONS = ("allow_alias", "deprecated")
_VALUE_OPTIONS = ("deprecated", "debug_redact")
_SERVICE_OPTIONS = ("deprecated",)
_METHOD_OPTIONS = ("deprecated", "idempotency_level")
_LABELS = {FDP.LABEL_OPTIONAL: "optional", FDP.LABEL_REQUIRED: "required", FDP.LABEL_REPEATED: "repeated"}


def decode(data: bytes) -> ProtoFile:
    """A serialized FileDescriptorProto read as Confluent reads one."""
    try:
        proto = d.FileDescriptorProto.FromString(data)
    except Exception as exc:  # protobuf's DecodeError, or a RuntimeWarning-free failure of its C parser
        raise InvalidSchemaError(f"not a FileDescriptorProto: {exc}") from None
    return from_descriptor(proto)


def from_descriptor(proto: d.FileDescriptorProto) -> ProtoFile:
    proto3 = proto.syntax == "proto3"
    file = ProtoFile(syntax=proto.syntax if proto.syntax in ("proto2", "proto3") else None,
                     package=proto.package or None)
    public, weak = set(proto.public_dependency), set(proto.weak_dependency)
    for i, name in enumerate(proto.dependency):
        (file.public_imports if i in public else file.weak_imports if i in weak else file.imports).append(name)
    file.options = _options(proto.options, _FILE_OPTIONS)
    file.types = [_message(m, proto3) for m in proto.message_type] + [_enum(e) for e in proto.enum_type]
    file.extends = _extends(proto.extension, proto3)
    file.services = [_service(s) for s in proto.service]
    return file


def _options(options, names: tuple[str, ...]) -> list[Option]:
    found = []
    for name in names:
        if options.HasField(name):
            descriptor = options.DESCRIPTOR.fields_by_name[name]
            value = getattr(options, name)
            if descriptor.type == descriptor.TYPE_BOOL:
                found.append(Option(name, "BOOLEAN", "true" if value else "false"))
            elif descriptor.type == descriptor.TYPE_ENUM:
                found.append(Option(name, "ENUM", descriptor.enum_type.values_by_number[value].name))
            else:
                found.append(Option(name, "STRING", value))
    return found


def _message(proto: d.DescriptorProto, proto3: bool) -> Message:
    message = Message(proto.name)
    oneofs = [OneOf(o.name) for o in proto.oneof_decl]
    for f in proto.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            oneofs[f.oneof_index].fields.append(_field(f, proto3, in_oneof=True))
        else:
            message.fields.append(_field(f, proto3, in_oneof=False))
    message.oneofs = [o for o in oneofs if o.fields]
    message.nested = [_message(m, proto3) for m in proto.nested_type] + [_enum(e) for e in proto.enum_type]
    message.reserveds = [Reserved([_range(r.start, r.end - 1)]) for r in proto.reserved_range]
    message.reserveds += [Reserved([name]) for name in proto.reserved_name]
    message.extensions = [Extensions([_range(r.start, r.end - 1)]) for r in proto.extension_range]
    message.options = _options(proto.options, _MESSAGE_OPTIONS)
    message.extends = _extends(proto.extension, proto3)
    return message


def _range(start: int, end: int) -> Range:
    return start if start == end else (start, end)


def _field(proto: d.FieldDescriptorProto, proto3: bool, in_oneof: bool) -> Field:
    if in_oneof:
        label = None
    elif proto.proto3_optional:
        label = "optional"
    elif proto3 and proto.label != FDP.LABEL_REPEATED:
        label = None
    else:
        label = _LABELS[proto.label]
    type_name = proto.type_name if proto.HasField("type_name") else FDP.Type.Name(proto.type)[5:].lower()
    return Field(label, type_name, proto.name, proto.number,
                 proto.default_value if not proto3 and proto.HasField("default_value") else None,
                 proto.json_name if proto.HasField("json_name") else None,
                 _options(proto.options, _FIELD_OPTIONS))


def _extends(fields, proto3: bool) -> list[Extend]:
    grouped: dict[str, Extend] = {}
    for f in fields:
        grouped.setdefault(f.extendee, Extend(f.extendee)).fields.append(_field(f, proto3, in_oneof=False))
    return list(grouped.values())


def _enum(proto: d.EnumDescriptorProto) -> Enum:
    enum = Enum(proto.name, _options(proto.options, _ENUM_OPTIONS))
    enum.constants = [EnumConstant(v.name, v.number, _options(v.options, _VALUE_OPTIONS)) for v in proto.value]
    enum.reserveds = [Reserved([_range(r.start, r.end)]) for r in proto.reserved_range]
    enum.reserveds += [Reserved([name]) for name in proto.reserved_name]
    return enum


def _service(proto: d.ServiceDescriptorProto) -> Service:
    rpcs = [Rpc(m.name, m.input_type, m.output_type, m.client_streaming, m.server_streaming,
                _options(m.options, _METHOD_OPTIONS)) for m in proto.method]
    return Service(proto.name, rpcs, _options(proto.options, _SERVICE_OPTIONS))


# ---- elements to a FileDescriptorProto ----

def to_descriptor(file: ProtoFile, name: str, types: dict[str, TypeInfo]) -> d.FileDescriptorProto:
    """The file as a FileDescriptorProto named `name`; InvalidSchemaError for a type name that resolves nowhere."""
    proto = d.FileDescriptorProto(name=name)
    if file.package:
        proto.package = file.package
    if file.syntax:
        proto.syntax = file.syntax
    for imports in (file.imports, file.public_imports, file.weak_imports):
        for imported in imports:
            if imports is file.public_imports:
                proto.public_dependency.append(len(proto.dependency))
            elif imports is file.weak_imports:
                proto.weak_dependency.append(len(proto.dependency))
            proto.dependency.append(imported)
    _set_options(proto.options, file.options)
    builder = _Builder(Scope(types, file.package or ""), file.syntax == "proto3")
    for element in file.types:
        builder.add(element, proto.message_type, proto.enum_type)
    for extend in file.extends:
        builder.extend(extend, proto.extension)
    for service in file.services:
        builder.service(service, proto.service.add())
    return proto


def validate(files: list[d.FileDescriptorProto], builtin: list[bytes]) -> None:
    """Load the files (dependencies first) into a fresh pool, as protobuf builds them; InvalidSchemaError if not."""
    pool = descriptor_pool.DescriptorPool()
    try:
        for data in builtin:
            pool.AddSerializedFile(data)
        for proto in files:
            pool.Add(proto)
    except Exception as exc:  # TypeError or protobuf's DescriptorError, depending on the implementation
        raise InvalidSchemaError(str(exc)) from None


def _set_options(options, elements: list[Option]) -> None:
    for option in elements:
        descriptor = options.DESCRIPTOR.fields_by_name.get(option.name)
        if option.parenthesized or option.kind == "OPTION" or descriptor is None or \
                descriptor.is_repeated or descriptor.message_type is not None:
            continue  # custom options need their extension's definition, which the pool here does not have
        value = str(option.value)
        try:
            if descriptor.type == descriptor.TYPE_BOOL:
                setattr(options, option.name, value == "true")
            elif descriptor.type == descriptor.TYPE_ENUM:
                setattr(options, option.name, descriptor.enum_type.values_by_name[value].number)
            elif descriptor.type == descriptor.TYPE_STRING:
                setattr(options, option.name, value)
        except (KeyError, ValueError, TypeError):
            raise InvalidSchemaError(f"Invalid value for option {option.name}: {value}") from None


def _reserve(proto, reserveds: list[Reserved], exclusive_end: bool) -> None:
    """Reserved names and ranges into a message's descriptor (exclusive range ends) or an enum's (inclusive)."""
    for reserved in reserveds:
        for value in reserved.values:
            if isinstance(value, str):
                proto.reserved_name.append(value)
            else:
                start, end = _bounds(value)
                proto.reserved_range.add(start=start, end=end + 1 if exclusive_end else end)


def _bounds(value: int | tuple[int, int]) -> tuple[int, int]:
    """A range's inclusive start and end (a single number is both)."""
    return value if isinstance(value, tuple) else (value, value)


class _Builder:
    def __init__(self, scope: Scope, proto3: bool) -> None:
        self.scope = scope
        self.proto3 = proto3

    def add(self, element: Message | Enum, messages, enums) -> None:
        self.scope.names.append(element.name)
        if isinstance(element, Message):
            self.message(element, messages.add())
        else:
            self.enum(element, enums.add())
        self.scope.names.pop()

    def message(self, message: Message, proto: d.DescriptorProto) -> None:
        proto.name = message.name
        _set_options(proto.options, message.options)
        for element in message.nested:
            self.add(element, proto.nested_type, proto.enum_type)
        for f in message.fields:
            self.field(f, proto.field.add(), proto)
        for index, oneof in enumerate(message.oneofs):
            proto.oneof_decl.add(name=oneof.name)
            for f in oneof.fields:
                self.field(f, proto.field.add(), proto).oneof_index = index
        for f in proto.field:  # proto3 optional fields: one synthetic oneof each, after the real ones
            if f.proto3_optional:
                f.oneof_index = len(proto.oneof_decl)
                proto.oneof_decl.add(name="_" + f.name)
        _reserve(proto, message.reserveds, exclusive_end=True)
        for extensions in message.extensions:
            for value in extensions.values:
                start, end = _bounds(value)
                proto.extension_range.add(start=start, end=min(end, MAX_TAG) + 1)
        for extend in message.extends:
            self.extend(extend, proto.extension)

    def field(self, f: Field, proto: d.FieldDescriptorProto, owner: d.DescriptorProto | None
              ) -> d.FieldDescriptorProto:
        proto.name, proto.number = f.name, f.tag
        proto.label = {"required": FDP.LABEL_REQUIRED, "repeated": FDP.LABEL_REPEATED}.get(
            f.label or "", FDP.LABEL_OPTIONAL)
        if f.label == "optional" and self.proto3:
            proto.proto3_optional = True
        if is_map(f.type) and owner is not None:
            proto.label = FDP.LABEL_REPEATED
            entry = owner.nested_type.add(name=_entry_name(f.name))
            entry.options.map_entry = True
            key, value = map_parts(f.type)
            self.field(Field(None, key, "key", 1), entry.field.add(), None)
            self.field(Field(None, value, "value", 2), entry.field.add(), None)
            proto.type = FDP.TYPE_MESSAGE
            proto.type_name = "." + ".".join(
                ([self.scope.package] if self.scope.package else []) + self.scope.names + [entry.name])
        elif f.type in SCALARS:
            proto.type = FDP.Type.Value("TYPE_" + f.type.upper())
        else:
            full = self.scope.resolve(f.type)
            if full is None:
                raise InvalidSchemaError(f"Could not resolve type: {f.type}")
            info = self.scope.types[full]
            proto.type = FDP.TYPE_ENUM if isinstance(info.element, Enum) else FDP.TYPE_MESSAGE
            proto.type_name = "." + full
        if f.default is not None:
            proto.default_value = f.default
        if f.json_name is not None:
            proto.json_name = f.json_name
        _set_options(proto.options, f.options)
        return proto

    def extend(self, extend: Extend, fields) -> None:
        extendee = self.scope.resolve(extend.name)
        if extendee is None and not extend.name.startswith("google.protobuf."):
            raise InvalidSchemaError(f"Could not resolve type: {extend.name}")
        for f in extend.fields:
            self.field(f, fields.add(), None).extendee = "." + (extendee or extend.name.lstrip("."))

    def enum(self, enum: Enum, proto: d.EnumDescriptorProto) -> None:
        proto.name = enum.name
        _set_options(proto.options, enum.options)
        for constant in enum.constants:
            _set_options(proto.value.add(name=constant.name, number=constant.tag).options, constant.options)
        _reserve(proto, enum.reserveds, exclusive_end=False)

    def service(self, service: Service, proto: d.ServiceDescriptorProto) -> None:
        proto.name = service.name
        _set_options(proto.options, service.options)
        for rpc in service.rpcs:
            method = proto.method.add(name=rpc.name, client_streaming=rpc.request_streaming,
                                      server_streaming=rpc.response_streaming)
            for attribute, type_name in (("input_type", rpc.request), ("output_type", rpc.response)):
                full = self.scope.resolve(type_name)
                if full is None:
                    raise InvalidSchemaError(f"Could not resolve type: {type_name}")
                setattr(method, attribute, "." + full)
            _set_options(method.options, rpc.options)


def _entry_name(field_name: str) -> str:
    """protoc's map entry name: the field name in CamelCase, then ``Entry``."""
    return re.sub(r"(?:^|_)([a-z0-9])", lambda m: m.group(1).upper(), field_name) + "Entry"
