"""JSON schemas loaded into the typed model Confluent's compatibility check walks: the everit loader's
(`SchemaLoader` and its extractors) mapping of a schema object to StringSchema, NumberSchema, ObjectSchema,
ArraySchema, CombinedSchema (an explicit allOf/anyOf/oneOf, a type list, or the synthetic allOf of several
kinds in one object), NotSchema, ConstSchema, EnumSchema, ReferenceSchema and the empty/true/false schemas.

The mapping decides what the comparison sees: ``{"type": ["string", "null"]}`` is an anyOf of two schemas,
``{"properties": {...}}`` without a type is still an object schema, and ``$ref`` hides its siblings. A
``$ref`` resolves within its document (``#/...``; ``#/$defs/X`` also finds ``definitions/X`` as Confluent
bridges them) or to a reference named by the registration; each target is loaded once, so recursive
schemas close into cycles the comparison can detect.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin

from minibroker.registry.java_order import hash_order
from minibroker.registry.parsed import InvalidSchemaError

NO_DEFAULT: Any = object()
CRITERIA = ("allOf", "anyOf", "oneOf")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
_OBJECT_KEYWORDS_V4 = (
    "properties", "required", "minProperties", "maxProperties", "dependencies", "patternProperties",
    "additionalProperties",
)
_ARRAY_KEYWORDS_V4 = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems")
_CONDITIONAL = ("if", "then", "else")
# Drafts by $schema URL (a trailing "#" ignored); anything else is Confluent's default, draft 7.
DRAFTS = {
    "http://json-schema.org/draft-04/schema": 4, "https://json-schema.org/draft-04/schema": 4,
    "http://json-schema.org/schema": 4, "https://json-schema.org/schema": 4,
    "http://json-schema.org/draft-06/schema": 6, "https://json-schema.org/draft-06/schema": 6,
    "http://json-schema.org/draft-07/schema": 7, "https://json-schema.org/draft-07/schema": 7,
    "http://json-schema.org/draft/2019-09/schema": 2019, "https://json-schema.org/draft/2019-09/schema": 2019,
    "http://json-schema.org/draft/2020-12/schema": 2020, "https://json-schema.org/draft/2020-12/schema": 2020,
}


def draft_of(document: Any) -> int:
    url = document.get("$schema") if isinstance(document, dict) else None
    return DRAFTS.get(url.removesuffix("#"), 7) if isinstance(url, str) else 7


@dataclass(eq=False)
class Node:
    """One schema of the model; `kind` is its everit class (``combined`` for all three criteria)."""

    kind: str
    raw: Any = None  # the JSON it was loaded from (None for a synthetic allOf), to collapse equal subschemas
    id: Any = None
    title: Any = None
    description: Any = None
    default: Any = NO_DEFAULT
    unprocessed: dict[str, Any] = field(default_factory=dict)
    # string
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    # number (exclusive limits as numbers, drafts 6+; draft 4's booleans only qualify the limits)
    minimum: Any = None
    maximum: Any = None
    exclusive_minimum: Any = None
    exclusive_maximum: Any = None
    multiple_of: Any = None
    requires_integer: bool = False
    # object
    properties: dict[str, Node] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    # additionalProperties / additionalItems (2020-12: items after prefixItems): open or closed, or their schema
    additional: bool = True
    additional_schema: Node | None = None
    pattern_properties: list[tuple[str, Node]] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    schema_dependencies: dict[str, Node] = field(default_factory=dict)
    min_properties: int | None = None
    max_properties: int | None = None
    unevaluated: Node | None = None  # unevaluatedProperties / unevaluatedItems (drafts 2019-09 and 2020-12)
    # array
    items: Node | None = None
    item_list: list[Node] | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    # combined, not, const, enum
    criterion: str | None = None
    subschemas: list[Node] = field(default_factory=list)
    must_not: Node | None = None
    value: Any = None
    values: list[Any] = field(default_factory=list)
    # reference
    ref_key: tuple[str, str] | None = None
    loader: Loader | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def target(self) -> Node:
        """What a ``$ref`` names (loaded once per location, so cycles meet the same node)."""
        assert self.loader is not None and self.ref_key is not None
        return self.loader.at(*self.ref_key)


class Loader:
    """Loads a root document with its referenced documents (name -> parsed JSON)."""

    def __init__(self, root: Any, references: Mapping[str, Any]) -> None:
        self.draft = draft_of(root)
        self.id_keyword = "id" if self.draft == 4 else "$id"
        root_id = root.get(self.id_keyword) if isinstance(root, dict) else None
        self.base = root_id if isinstance(root_id, str) else ""
        self.documents: dict[str, Any] = {"": root}
        for name, document in references.items():
            self.documents.setdefault(name, document)
            self.documents.setdefault(urljoin(self.base, name), document)
        self._at: dict[tuple[str, str], Node] = {}
        self.object_keywords = _OBJECT_KEYWORDS_V4 + (() if self.draft == 4 else ("propertyNames",)) + (
            ("dependentRequired", "dependentSchemas") if self.draft >= 2019 else ())
        self.array_keywords = _ARRAY_KEYWORDS_V4 + (() if self.draft == 4 else ("contains",)) + (
            ("prefixItems",) if self.draft >= 2020 else ())

    def root(self) -> Node:
        """The root schema, every reference in it resolved (an unresolvable one is an invalid schema)."""
        node = self.load(self.documents[""], "")
        seen: set[int] = set()
        pending = [node]
        while pending:
            current = pending.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if current.kind == "ref":
                pending.append(current.target)
            pending += _children(current)
        return node

    def at(self, document: str, pointer: str) -> Node:
        key = (document, pointer)
        if key not in self._at:
            value = _pointer(self.documents[document], pointer)
            if value is _MISSING:
                raise InvalidSchemaError(f"$ref '{document}#{pointer}' cannot be resolved")
            self._at[key] = _PENDING
            node = self.load(value, document)
            if node.kind == "ref":
                self._resolve(node)
            self._at[key] = node
        node = self._at[key]
        if node is _PENDING:
            raise InvalidSchemaError(f"$ref '{document}#{pointer}' refers only to itself")
        return node

    def load(self, value: Any, document: str) -> Node:
        if isinstance(value, bool):
            return Node("true" if value else "false", raw=value)
        if not isinstance(value, dict):
            raise InvalidSchemaError(f"a schema must be an object or a boolean, found {_json_type(value)}")
        if "$ref" in value:
            node = self._reference(_require(value, "$ref", str), document)
            rest = {k: v for k, v in value.items() if k != "$ref"}
        else:
            rest = dict(value)
            extracted = self._extract(rest, document)
            if not extracted:
                node = Node("empty")
            elif len(extracted) == 1:
                node = extracted[0]
            else:
                node = Node("combined", criterion="allOf", subschemas=extracted)
        node.raw = value
        self._common(node, rest)
        node.unprocessed = rest
        return node

    def _resolve(self, node: Node) -> None:
        """Follows a chain of references to its end now, so a chain that ends nowhere or loops is found here."""
        seen = set()
        while node.kind == "ref" and id(node) not in seen:
            seen.add(id(node))
            node = node.target

    def _reference(self, ref: str, document: str) -> Node:
        where, _, fragment = ref.partition("#")
        if where:
            name = where if where in self.documents else urljoin(self.base, where)
            if name not in self.documents:
                raise InvalidSchemaError(f"$ref '{ref}' names no schema reference of this registration")
            document = name
        return Node("ref", ref_key=(document, unquote(fragment)), loader=self)

    def _common(self, node: Node, rest: dict[str, Any]) -> None:
        if self.id_keyword in rest:
            identifier = _require(rest, self.id_keyword, str)
            node.id = identifier if self.draft < 2019 else None  # json-sKema resolves ids away
            del rest[self.id_keyword]
        for key in ("title", "description"):
            if key in rest:
                setattr(node, key, _require(rest, key, str))
                del rest[key]
        if self.draft >= 7:
            for key in ("readOnly", "writeOnly"):
                if key in rest:
                    _require(rest, key, bool)
                    del rest[key]
        if "default" in rest:
            node.default = rest.pop("default")

    def _extract(self, rest: dict[str, Any], document: str) -> list[Node]:
        """everit's extractors in their order, each consuming its keywords from `rest`."""
        found: list[Node] = []
        full = dict(rest)
        if "enum" in rest:
            found.append(Node("enum", values=list(_require(rest, "enum", list))))
            del rest["enum"]
        for key in hash_order([c for c in CRITERIA if c in rest]):
            subs = [self.load(s, document) for s in _require(rest, key, list)]
            found.append(Node("combined", criterion=key, subschemas=subs))
            del rest[key]
        if "not" in rest:
            found.append(Node("not", must_not=self.load(rest.pop("not"), document)))
        if self.draft != 4 and "const" in rest:
            found.append(Node("const", value=rest.pop("const")))
        if "type" in rest:
            declared = rest.pop("type")
            if isinstance(declared, list):
                found.append(Node("combined", criterion="anyOf", subschemas=[
                    self._typed(_string(t, "type"), full, rest, document) for t in declared]))
            else:
                found.append(self._typed(_string(declared, "type"), full, rest, document))
        if any(k in rest for k in self.array_keywords):
            found.append(self._array(full, rest, document))
        if any(k in rest for k in self.object_keywords):
            found.append(self._object(full, rest, document))
        if any(k in rest for k in _NUMBER_KEYWORDS):
            found.append(self._number(full, rest))
        if any(k in rest for k in _STRING_KEYWORDS):
            found.append(self._string(full, rest))
        if self.draft >= 7 and any(k in rest for k in _CONDITIONAL):
            for key in _CONDITIONAL:
                if key in rest:
                    self.load(rest.pop(key), document)
            found.append(Node("conditional"))
        return found

    def _typed(self, name: str, full: dict[str, Any], rest: dict[str, Any], document: str) -> Node:
        if name == "string":
            return self._string(full, rest)
        if name in ("integer", "number"):
            node = self._number(full, rest)
            node.requires_integer = name == "integer"
            return node
        if name in ("boolean", "null"):
            return Node(name)
        if name == "array":
            return self._array(full, rest, document)
        if name == "object":
            return self._object(full, rest, document)
        raise InvalidSchemaError(f"unknown type: [{name}]")

    def _string(self, full: dict[str, Any], rest: dict[str, Any]) -> Node:
        _consume(rest, _STRING_KEYWORDS)
        node = Node("string", min_length=_int(full, "minLength"), max_length=_int(full, "maxLength"))
        if "pattern" in full:
            node.pattern = _require(full, "pattern", str)
            try:
                re.compile(node.pattern)
            except re.error as e:
                raise InvalidSchemaError(f"invalid pattern '{node.pattern}': {e}") from None
        if "format" in full:
            _require(full, "format", str)
        return node

    def _number(self, full: dict[str, Any], rest: dict[str, Any]) -> Node:
        _consume(rest, _NUMBER_KEYWORDS)
        node = Node("number", minimum=_number(full, "minimum"), maximum=_number(full, "maximum"),
                    multiple_of=_number(full, "multipleOf"))
        if node.multiple_of is not None and node.multiple_of == 0:
            raise InvalidSchemaError("multipleOf should not be 0")
        if self.draft == 4:
            for key in ("exclusiveMinimum", "exclusiveMaximum"):
                if key in full:
                    _require(full, key, bool)
        else:
            node.exclusive_minimum = _number(full, "exclusiveMinimum")
            node.exclusive_maximum = _number(full, "exclusiveMaximum")
        return node

    def _object(self, full: dict[str, Any], rest: dict[str, Any], document: str) -> Node:
        _consume(rest, self.object_keywords)
        node = Node("object", min_properties=_int(full, "minProperties"), max_properties=_int(full, "maxProperties"))
        for name, schema in (_require(full, "properties", dict) if "properties" in full else {}).items():
            if name != self.id_keyword or isinstance(schema, dict):
                node.properties[name] = self.load(schema, document)
        if "additionalProperties" in full:
            self._additional(node, full["additionalProperties"], "additionalProperties", document)
        node.required = [_string(r, "required") for r in _require(full, "required", list)] if "required" in full else []
        for pattern, schema in (_require(full, "patternProperties", dict) if "patternProperties" in full else {}).items():
            node.pattern_properties.append((pattern, self.load(schema, document)))
        dependencies = dict(_require(full, "dependencies", dict)) if "dependencies" in full else {}
        if self.draft >= 2019:
            for keyword in ("dependentRequired", "dependentSchemas"):
                dependencies.update(_require(full, keyword, dict) if keyword in full else {})
        for name, dependency in dependencies.items():
            if isinstance(dependency, list):
                node.property_dependencies[name] = [_string(d, "dependencies") for d in dependency]
            else:
                node.schema_dependencies[name] = self.load(dependency, document)
        if "propertyNames" in full and self.draft != 4:
            self.load(full["propertyNames"], document)
        if self.draft >= 2019 and "unevaluatedProperties" in rest:
            node.unevaluated = self.load(rest.pop("unevaluatedProperties"), document)
        return node

    def _array(self, full: dict[str, Any], rest: dict[str, Any], document: str) -> Node:
        _consume(rest, self.array_keywords)
        node = Node("array", min_items=_int(full, "minItems"), max_items=_int(full, "maxItems"))
        if "uniqueItems" in full:
            node.unique_items = _require(full, "uniqueItems", bool)
        if "additionalItems" in full:
            self._additional(node, full["additionalItems"], "additionalItems", document)
        if self.draft >= 2020 and ("prefixItems" in full or isinstance(full.get("items"), bool)):
            # json-sKema's model, as Confluent translates it: prefixItems are the tuple, items what follows
            prefix = _require(full, "prefixItems", list) if "prefixItems" in full else None
            node.item_list = None if prefix is None else [self.load(i, document) for i in prefix]
            items = full.get("items", True)
            if items is not True:
                self._additional(node, items, "items", document)
        elif "items" in full:
            items = full["items"]
            if isinstance(items, list):
                node.item_list = [self.load(i, document) for i in items]
            else:
                node.items = self.load(items, document)
        if "contains" in full and self.draft != 4:
            self.load(full["contains"], document)
        if self.draft >= 2019 and "unevaluatedItems" in rest:
            node.unevaluated = self.load(rest.pop("unevaluatedItems"), document)
        return node

    def _additional(self, node: Node, value: Any, keyword: str, document: str) -> None:
        """What an object's other properties or an array's other items may be: all or none, or a schema."""
        if isinstance(value, bool):
            node.additional = value
        else:
            node.additional_schema = self.load(_string_or_object(value, keyword), document)


_MISSING: Any = object()
_PENDING: Any = Node("pending")


def _pointer(document: Any, pointer: str) -> Any:
    """A JSON pointer into `document`; ``/$defs/...`` falls back to ``/definitions/...`` (Confluent's bridge)."""
    if pointer in ("", "/"):
        return document
    value = document
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.lstrip("/").split("/")]
    for i, token in enumerate(tokens):
        if isinstance(value, dict):
            if i == 0 and token == "$defs" and isinstance(value.get("definitions"), dict) and isinstance(
                    value.get("$defs", {}), dict):
                value = {**value["definitions"], **value.get("$defs", {})}
            else:
                value = value.get(token, _MISSING)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _children(node: Node) -> list[Node]:
    found = [*node.properties.values(), *node.schema_dependencies.values(), *node.subschemas, *(node.item_list or ())]
    found += [schema for _, schema in node.pattern_properties]
    single = (node.additional_schema, node.unevaluated, node.items, node.must_not)
    return found + [n for n in single if n is not None]


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "number"


def _require(container: dict[str, Any], key: str, kind: type) -> Any:
    value = container[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = {str: "string", list: "array", dict: "object", bool: "boolean"}
        raise InvalidSchemaError(f"#/{key}: expected type: {names[kind]}, found: {_json_type(value)}")
    return value


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidSchemaError(f"#/{key}: expected type: string, found: {_json_type(value)}")
    return value


def _string_or_object(value: Any, key: str) -> Any:
    if not isinstance(value, dict):
        raise InvalidSchemaError(f"#/{key}: expected type: boolean or object, found: {_json_type(value)}")
    return value


def _int(container: dict[str, Any], key: str) -> int | None:
    if key not in container:
        return None
    value = container[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidSchemaError(f"#/{key}: expected type: integer, found: {_json_type(value)}")
    return value


def _number(container: dict[str, Any], key: str) -> Any:
    if key not in container:
        return None
    value = container[key]
    if _json_type(value) != "number":
        raise InvalidSchemaError(f"#/{key}: expected type: number, found: {_json_type(value)}")
    return value


def _consume(rest: dict[str, Any], keywords: tuple[str, ...]) -> None:
    for key in keywords:
        rest.pop(key, None)
