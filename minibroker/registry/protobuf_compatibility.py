"""Protobuf compatibility as Confluent's registry decides it (protobuf diff.SchemaDiff, MessageSchemaDiff,
FieldSchemaDiff, EnumSchemaDiff): the differences between an original and an updated schema, those outside
SchemaDiff's COMPATIBLE_CHANGES reported as Confluent words them (Difference.toString); the levels apply them
as for every type (`levels`, `formats.SchemaFormat.check`). Differences come in Confluent's order: Java HashSet
iteration order where Confluent iterates one."""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.registry.protobuf import ProtobufSchema
from minibroker.registry.protobuf_elements import SCALARS, Enum, Field, Message, is_map, map_parts
from minibroker.registry.protobuf_types import LOCAL, Scope, TypeInfo

COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED",
    "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
    "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

_DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package at '{path}' in the %s schema does not match the package in the %s schema",
    "MESSAGE_REMOVED": "The %s schema is missing a MESSAGE type at path '{path}' in the %s schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{path}' in the %s schema does not match the %s schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{path}' in the %s schema does not match its "
    "kind in the %s schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{path}' in the %s schema does not match its "
    "type in the %s schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{path}' in the %s schema does not match "
    "its label in the %s schema",
    "REQUIRED_FIELD_ADDED": "A required field  at path '{path}' in the %s schema is missing in the %s schema",
    "REQUIRED_FIELD_REMOVED": "The %s schema is missing a required field at path: '{path}' in the %s schema",
    "ONEOF_FIELD_REMOVED": "The %s schema is missing a oneof field at path '{path}' in the %s schema",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL": "The oneof field at path '{path}' in the %s schema was moved out of its oneof "
    "to a top-level field in the %s schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{path}' in the %s schema are outside a "
    "oneof in the %s schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{path}' in the %s schema is outside an existing "
    "oneof in the %s schema",
}

# FieldSchemaDiff's wire-compatible groups of scalar types (an enum counts as GENERAL_NUMBER).
_SCALAR_KINDS = {
    **dict.fromkeys(("int32", "int64", "uint32", "uint64", "bool"), "GENERAL_NUMBER"),
    **dict.fromkeys(("sint32", "sint64"), "SIGNED_NUMBER"),
    **dict.fromkeys(("string", "bytes"), "STRING_OR_BYTES"),
    **dict.fromkeys(("fixed32", "sfixed32"), "FIXED32"),
    **dict.fromkeys(("fixed64", "sfixed64"), "FIXED64"),
    "float": "FLOAT", "double": "DOUBLE",
}


@dataclass(frozen=True)
class Difference:
    kind: str
    path: str

    def describe(self, reader: str, writer: str) -> str:
        text = _DESCRIPTIONS.get(self.kind, "").format(path=self.path).replace("%s", "{}", 2)
        return f'{{errorType:"{self.kind}", description:"{text.format(reader, writer)}"}}'


def reads(reader: ProtobufSchema, writer: ProtobufSchema, reader_word: str, writer_word: str) -> list[str]:
    """`reader.isBackwardCompatible(writer)`: the incompatible differences from the writer (original) to the
    reader (update)."""
    return [d.describe(reader_word, writer_word) for d in incompatibilities(writer, reader)]


def incompatibilities(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    return [d for d in differences(original, update) if d.kind not in COMPATIBLE]


def differences(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    """SchemaDiff.compare: every difference, compatible or not, from `original` to `update`."""
    diff = _Diff(Scope(original.types, original.file.package or ""), Scope(update.types, update.file.package or ""))
    if original.file.package != update.file.package:
        diff.add("PACKAGE_CHANGED")
    diff.type_elements(original.file.types, update.file.types)
    return diff.found


class _Diff:
    """Confluent's diff.Context: the path of the element under comparison, the name scope of each side, and the
    messages already being compared (a recursive type is compared once)."""

    def __init__(self, original: Scope, update: Scope) -> None:
        self.original, self.update = original, update
        self.path: list[str] = []
        self.in_progress: set[int] = set()
        self.found: list[Difference] = []

    def add(self, kind: str) -> None:
        self.found.append(Difference(kind, "#/" + "/".join(self.path)))

    def _enter_name(self, name: str) -> None:
        self.path.append(name)
        self.original.names.append(name)
        self.update.names.append(name)

    def _leave_name(self) -> None:
        self.path.pop()
        self.original.names.pop()
        self.update.names.pop()

    def type_elements(self, original: list[Message | Enum], update: list[Message | Enum]) -> None:
        original_messages, original_index, original_enums = _index(original)
        update_messages, update_index, update_enums = _index(update)
        for name in _java_set_order(list(original_messages), list(update_messages)):
            self._enter_name(name)
            old, new = original_messages.get(name), update_messages.get(name)
            if new is None:
                info = self.original.get(name)
                if info is not None and not info.map_type:
                    self.add("MESSAGE_REMOVED")
            elif old is None:
                info = self.update.get(name)
                if info is not None and not info.map_type:
                    self.add("MESSAGE_ADDED")
            else:
                self.message(old, new)
                if original_index.get(name) != update_index.get(name):
                    self.add("MESSAGE_MOVED")
            self._leave_name()
        for name in _java_set_order(list(original_enums), list(update_enums)):
            self._enter_name(name)
            old_enum, new_enum = original_enums.get(name), update_enums.get(name)
            if new_enum is None:
                self.add("ENUM_REMOVED")
            elif old_enum is None:
                self.add("ENUM_ADDED")
            else:
                self.enum(old_enum, new_enum)
            self._leave_name()

    def enum(self, original: Enum, update: Enum) -> None:
        old_by_tag = {c.tag: c for c in original.constants}
        new_by_tag = {c.tag: c for c in update.constants}
        for tag in _java_set_order(list(old_by_tag), list(new_by_tag)):
            self.path.append(str(tag))
            if tag not in new_by_tag:
                self.add("ENUM_CONST_REMOVED")
            elif tag not in old_by_tag:
                self.add("ENUM_CONST_ADDED")
            elif old_by_tag[tag].name != new_by_tag[tag].name:
                self.add("ENUM_CONST_CHANGED")
            self.path.pop()

    def message(self, original: Message, update: Message) -> None:
        """MessageSchemaDiff.compare: every field by tag wherever it sits (top level or a oneof)."""
        if id(original) not in self.in_progress:
            self.in_progress.add(id(original))
            try:
                self._fields(original, update)
            finally:
                self.in_progress.discard(id(original))
        self.type_elements(original.nested, update.nested)

    def _fields(self, original: Message, update: Message) -> None:
        old_fields, old_oneof_of, old_oneofs = _fields_by_tag(original)
        new_fields, new_oneof_of, new_oneofs = _fields_by_tag(update)
        deleted_oneofs = {name for name, oneof in old_oneofs.items()
                          if name not in new_oneofs and not any(f.tag in new_fields for f in oneof.fields)}
        for oneof in update.oneofs:
            self.path.append(oneof.name)
            origins, moved_in = set(), 0
            for f in oneof.fields:
                if f.tag in old_oneof_of:
                    origins.add("oneof:" + old_oneof_of[f.tag])
                elif f.tag in old_fields:
                    origins.add(f"field:{f.tag}")
                    moved_in += 1
            if len(origins) > 1:
                self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF")
            self.path.pop()
        for name in sorted(set(old_oneofs) | set(new_oneofs)):
            if name not in new_oneofs or name not in old_oneofs:
                self.path.append(name)
                self.add("ONEOF_REMOVED" if name not in new_oneofs else "ONEOF_ADDED")
                self.path.pop()
        for tag in sorted(set(old_fields) | set(new_fields)):
            old, new = old_fields.get(tag), new_fields.get(tag)
            old_oneof, new_oneof = old_oneof_of.get(tag), new_oneof_of.get(tag)
            if new is None:
                assert old is not None
                if old_oneof is not None:
                    if old_oneof not in deleted_oneofs:
                        self._at([old_oneof, str(tag)], "ONEOF_FIELD_REMOVED")
                else:
                    self._at([str(tag)], "REQUIRED_FIELD_REMOVED" if old.label == "required" else "FIELD_REMOVED")
            elif old is None:
                if new_oneof is not None:
                    self._at([new_oneof, str(tag)], "ONEOF_FIELD_ADDED")
                else:
                    self._at([str(tag)], "REQUIRED_FIELD_ADDED" if new.label == "required" else "FIELD_ADDED")
            else:
                if old_oneof is not None and new_oneof is None:
                    self._at([str(tag)], "ONEOF_FIELD_MOVED_TO_TOP_LEVEL")
                where = [new_oneof, str(tag)] if new_oneof is not None else [str(tag)]
                self.path += where
                self.field(old, new)
                del self.path[-len(where):]

    def _at(self, where: list[str], kind: str) -> None:
        self.path += where
        self.add(kind)
        del self.path[-len(where):]

    def field(self, original: Field, update: Field) -> None:
        if original.name != update.name:
            self.add("FIELD_NAME_CHANGED")
        self.labels_and_types(original.label, update.label, original.type, update.type)

    def labels_and_types(self, old_label: str | None, new_label: str | None, old_type: str, new_type: str) -> None:
        info = self.original.get(old_type)
        if info is not None and info.map_type:
            old_type = info.map_type
        info = self.update.get(new_type)
        if info is not None and info.map_type:
            new_type = info.map_type
        old_kind, new_kind = _kind(self.original, old_type), _kind(self.update, new_type)
        if old_kind != new_kind:
            self.add("FIELD_KIND_CHANGED")
        elif old_kind == "SCALAR":
            old_scalar, new_scalar = _scalar_kind(self.original, old_type), _scalar_kind(self.update, new_type)
            if old_scalar != new_scalar:
                self.add("FIELD_SCALAR_KIND_CHANGED")
            elif old_label is not None and new_label is not None and old_label != new_label:
                self.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if old_scalar == "STRING_OR_BYTES"
                         else "FIELD_NUMERIC_LABEL_CHANGED")
        elif old_kind == "MESSAGE":
            self.message_types(old_type, new_type)
        else:
            old_key, old_value = map_parts(old_type)
            new_key, new_value = map_parts(new_type)
            self.labels_and_types(None, None, old_key, new_key)
            self.labels_and_types(None, None, old_value, new_value)

    def message_types(self, old_type: str, new_type: str) -> None:
        old_full, new_full = self.original.resolve(old_type), self.update.resolve(new_type)
        if old_full is None or new_full is None:
            if old_type != new_type:
                self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        old_info, new_info = self.original.types[old_full], self.update.types[new_full]
        old_local, new_local = _local(old_full, old_info), _local(new_full, new_info)
        if old_local != new_local:
            self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        if old_info.reference == LOCAL and new_info.reference == LOCAL:
            return  # both the schema's own: compared as its types
        sub = _Diff(Scope(self.original.types, old_info.package), Scope(self.update.types, new_info.package))
        sub.path = old_local.split(".")
        sub.original.names = old_local.split(".")
        sub.update.names = old_local.split(".")
        sub.in_progress = set(self.in_progress)
        assert isinstance(old_info.element, Message) and isinstance(new_info.element, Message)
        sub.message(old_info.element, new_info.element)
        self.found += sub.found
        if any(d.kind not in COMPATIBLE for d in sub.found):
            self.add("FIELD_NAMED_TYPE_CHANGED")


def _index(elements: list[Message | Enum]) -> tuple[dict[str, Message], dict[str, int], dict[str, Enum]]:
    messages: dict[str, Message] = {}
    indexes: dict[str, int] = {}
    enums: dict[str, Enum] = {}
    for element in elements:
        if isinstance(element, Message):
            indexes[element.name] = len(messages)
            messages[element.name] = element
        else:
            enums[element.name] = element
    return messages, indexes, enums


def _fields_by_tag(message: Message) -> tuple[dict[int, Field], dict[int, str], dict]:
    by_tag = {f.tag: f for f in message.fields}
    oneof_of: dict[int, str] = {}
    oneofs = {}
    for oneof in message.oneofs:
        oneofs[oneof.name] = oneof
        for f in oneof.fields:
            by_tag[f.tag] = f
            oneof_of[f.tag] = oneof.name
    return by_tag, oneof_of, oneofs


def _kind(scope: Scope, type_name: str) -> str:
    if type_name in SCALARS:
        return "SCALAR"
    if is_map(type_name):
        return "MAP"
    info = scope.get(type_name)
    return "SCALAR" if info is not None and isinstance(info.element, Enum) else "MESSAGE"


def _scalar_kind(scope: Scope, type_name: str) -> str:
    info = None if type_name in SCALARS else scope.get(type_name)
    if info is not None and isinstance(info.element, Enum):
        return "GENERAL_NUMBER"
    return _SCALAR_KINDS[type_name]


def _local(full: str, info: TypeInfo) -> str:
    return full[len(info.package) + 1:] if info.package and full.startswith(info.package + ".") else full


def _java_hash(key: str | int) -> int:
    """Java's hashCode (String: over UTF-16 units; Integer: the value), spread as HashMap spreads it."""
    if isinstance(key, int):
        h = key & 0xFFFFFFFF
    else:
        h = 0
        data = key.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _java_set_order(first: list, second: list) -> list:
    """The iteration order of ``new HashSet<>(first)`` after ``addAll(second)``: by bucket of the final table, then
    by insertion (HashMap keeps a bucket's entries in insertion order, and a resize keeps their order)."""
    keys = list(dict.fromkeys(first + second))
    capacity = 1
    while capacity < max(int(len(first) / 0.75) + 1, 16):
        capacity *= 2
    while len(keys) > capacity * 0.75:
        capacity *= 2
    position = {key: i for i, key in enumerate(keys)}
    return sorted(keys, key=lambda k: (_java_hash(k) & (capacity - 1), position[k]))
