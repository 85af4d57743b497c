"""Every message and enum a schema can name (its own, its references' and the well-known files'), by full name, and
name resolution as protobuf scopes it (Confluent's diff.Context): the printer's normalized form, the descriptor
builder and the compatibility check all resolve type names through it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.registry.protobuf_elements import Enum, Message, ProtoFile, is_map_entry

LOCAL = ""  # the reference of the schema's own types


@dataclass
class TypeInfo:
    package: str
    reference: str  # LOCAL, or the import name of the file that declares it
    element: Message | Enum
    map_type: str | None = None  # "map<K, V>" for a map field's entry message


def collect(file: ProtoFile, dependencies: Mapping[str, ProtoFile]) -> dict[str, TypeInfo]:
    """The types of the dependencies, then the file's own (which win a clash, as Confluent collects them)."""
    types: dict[str, TypeInfo] = {}
    for reference, dependency in dependencies.items():
        _collect(dependency.package or "", reference, dependency.types, [], types)
    _collect(file.package or "", LOCAL, file.types, [], types)
    return types


def _collect(package: str, reference: str, elements: list[Message | Enum], path: list[str],
             types: dict[str, TypeInfo]) -> None:
    for element in elements:
        scope = path + [element.name]
        name = ".".join(([package] if package else []) + scope)
        map_type = None
        if isinstance(element, Message) and is_map_entry(element):
            fields = {f.name: f.type for f in element.fields}
            map_type = f"map<{fields.get('key')}, {fields.get('value')}>"
        types[name] = TypeInfo(package, reference, element, map_type)
        if isinstance(element, Message):
            _collect(package, reference, element.nested, scope, types)


class Scope:
    """Resolves a type name as written inside the message named by ``names`` (innermost last) of a package."""

    def __init__(self, types: dict[str, TypeInfo], package: str) -> None:
        self.types = types
        self.package = package
        self.names: list[str] = []

    def resolve(self, name: str) -> str | None:
        """The full name (no leading dot) the type name means here, or None."""
        if name.startswith("."):
            return name[1:] if name[1:] in self.types else None
        prefix = ([self.package] if self.package else []) + self.names
        while prefix:
            candidate = ".".join(prefix) + "." + name
            if candidate in self.types:
                return candidate
            prefix.pop()
        return name if name in self.types else None

    def get(self, name: str) -> TypeInfo | None:
        full = self.resolve(name)
        return None if full is None else self.types.get(full)
