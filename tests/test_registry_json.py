"""The registry's JSON Schema support (pure functions, no broker): parsing and validation, Confluent's canonical
and normalized strings, and compatibility by Confluent's SchemaDiff rules at every level, with its messages."""

import json
import sys

import pytest

pytest.importorskip("jsonschema", reason="JSON schemas are validated with jsonschema (pip install 'minibroker[registry]')")

from minibroker.registry.java_order import key_union_order, string_hash  # noqa: E402
from minibroker.registry.json_compatibility import COMPATIBLE_CHANGES, compare  # noqa: E402
from minibroker.registry.json_schema import _meta_validator, parse_json  # noqa: E402
from minibroker.registry.levels import LEVELS  # noqa: E402
from minibroker.registry.parsed import InvalidSchemaError  # noqa: E402
from tests.registryutil import checker  # noqa: E402

check = checker("JSON")


def obj(properties=None, required=(), **extra):
    schema = {"type": "object", "properties": properties or {}, **extra}
    if required:
        schema["required"] = list(required)
    return json.dumps(schema)


def closed(properties=None, required=(), **extra):
    return obj(properties, required, additionalProperties=False, **extra)


S, N, I = {"type": "string"}, {"type": "number"}, {"type": "integer"}  # noqa: E741

# (case, old, new, Confluent's differences from old to new): BACKWARD compares old to new, FORWARD new to old.
DIFFERENCES = [
    ("identical", obj({"a": S}), obj({"a": S}), []),
    ("optional property added to an open model", obj({"a": S}), obj({"a": S, "b": S}),
     ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"]),
    ("required property added to an open model", obj({"a": S}), obj({"a": S, "b": S}, ["b"]),
     ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"]),
    ("property with an empty schema added to an open model", obj({"a": S}), obj({"a": S, "b": {}}),
     ["PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/b"]),
    ("property removed from an open model", obj({"a": S, "b": S}), obj({"a": S}),
     ["PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/b"]),
    ("optional property added to a closed model", closed({"a": S}), closed({"a": S, "b": S}),
     ["OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"]),
    ("required property added to a closed model", closed({"a": S}), closed({"a": S, "b": S}, ["b"]),
     ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"]),
    ("required property with a default added to a closed model", closed({"a": S}),
     closed({"a": S, "b": {**S, "default": "x"}}, ["b"]),
     ["REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"]),
    ("property removed from a closed model", closed({"a": S, "b": S}), closed({"a": S}),
     ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b"]),
    ("property added, covered by a partially open model", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": S}, additionalProperties=S),
     ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"]),
    ("property added, not covered by a partially open model", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": N}, additionalProperties=S),
     ["TYPE_CHANGED #/properties/b", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/b",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b"]),
    ("property added, covered by patternProperties", obj({}, patternProperties={"^x": S}),
     obj({"xa": S}, patternProperties={"^x": S}),
     ["PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/xa",
      "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/xa"]),
    ("model closed", obj({"a": S}), closed({"a": S}), ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"]),
    ("model opened", closed({"a": S}), obj({"a": S}), ["ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"]),
    ("additionalProperties narrowed to a schema", obj({}), obj({}, additionalProperties=S),
     ["ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"]),
    ("property made required", obj({"a": S}), obj({"a": S}, ["a"]), ["REQUIRED_ATTRIBUTE_ADDED #/required/a"]),
    ("property made required with a default", obj({"a": {**S, "default": ""}}), obj({"a": {**S, "default": ""}}, ["a"]),
     ["REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/a"]),
    ("property made optional", obj({"a": S}, ["a"]), obj({"a": S}), ["REQUIRED_ATTRIBUTE_REMOVED #/required/a"]),
    ("type changed", obj({"a": S}), obj({"a": N}), ["TYPE_CHANGED #/properties/a"]),
    ("integer widened to number", obj({"a": I}), obj({"a": N}), ["TYPE_EXTENDED #/properties/a"]),
    ("number narrowed to integer", obj({"a": N}), obj({"a": I}), ["TYPE_NARROWED #/properties/a"]),
    ("type list extended", json.dumps({"type": "string"}), json.dumps({"type": ["string", "null"]}),
     ["SUM_TYPE_EXTENDED #/"]),
    ("type list narrowed", json.dumps({"type": ["string", "null"]}), json.dumps({"type": "string"}),
     ["TYPE_CHANGED #/"]),
    ("maxLength increased", json.dumps({**S, "maxLength": 5}), json.dumps({**S, "maxLength": 6}),
     ["MAX_LENGTH_INCREASED #/maxLength"]),
    ("maxLength decreased", json.dumps({**S, "maxLength": 6}), json.dumps({**S, "maxLength": 5}),
     ["MAX_LENGTH_DECREASED #/maxLength"]),
    ("minLength added", json.dumps(S), json.dumps({**S, "minLength": 1}), ["MIN_LENGTH_ADDED #/minLength"]),
    ("pattern removed", json.dumps({**S, "pattern": "^a"}), json.dumps(S), ["PATTERN_REMOVED #/pattern"]),
    ("pattern changed", json.dumps({**S, "pattern": "^a"}), json.dumps({**S, "pattern": "^b"}),
     ["PATTERN_CHANGED #/pattern"]),
    ("maximum increased", json.dumps({**N, "maximum": 10}), json.dumps({**N, "maximum": 20}),
     ["MAXIMUM_INCREASED #/maximum"]),
    ("minimum increased", json.dumps({**N, "minimum": 1}), json.dumps({**N, "minimum": 2}),
     ["MINIMUM_INCREASED #/minimum"]),
    ("exclusiveMinimum removed", json.dumps({**N, "exclusiveMinimum": 0}), json.dumps(N),
     ["EXCLUSIVE_MINIMUM_REMOVED #/exclusiveMinimum"]),
    ("multipleOf reduced", json.dumps({**N, "multipleOf": 10}), json.dumps({**N, "multipleOf": 5}),
     ["MULTIPLE_OF_REDUCED #/multipleOf"]),
    ("multipleOf expanded", json.dumps({**N, "multipleOf": 0.5}), json.dumps({**N, "multipleOf": 10}),
     ["MULTIPLE_OF_EXPANDED #/multipleOf"]),
    ("multipleOf equal at another scale", json.dumps({**N, "multipleOf": 0.5}), json.dumps({**N, "multipleOf": 0.50}),
     []),
    ("enum extended", json.dumps({"enum": ["a", "b"]}), json.dumps({"enum": ["a", "b", "c"]}),
     ["ENUM_ARRAY_EXTENDED #/enum"]),
    ("enum narrowed", json.dumps({"enum": ["a", "b"]}), json.dumps({"enum": ["a"]}), ["ENUM_ARRAY_NARROWED #/enum"]),
    ("const changed", json.dumps({"const": 1}), json.dumps({"const": 2}), ["ENUM_ARRAY_CHANGED #/const"]),
    ("oneOf branch added", json.dumps({"oneOf": [S, N]}), json.dumps({"oneOf": [S, N, {"type": "boolean"}]}),
     ["SUM_TYPE_EXTENDED #/"]),
    ("oneOf branch removed", json.dumps({"oneOf": [S, N]}), json.dumps({"oneOf": [S]}), ["SUM_TYPE_NARROWED #/"]),
    ("allOf branch added", json.dumps({"allOf": [S]}), json.dumps({"allOf": [S, {"maxLength": 3}]}),
     ["PRODUCT_TYPE_EXTENDED #/"]),
    ("oneOf became anyOf", json.dumps({"oneOf": [S, N]}), json.dumps({"anyOf": [S, N]}),
     ["COMBINED_TYPE_EXTENDED #/"]),
    ("anyOf became oneOf", json.dumps({"anyOf": [S, N]}), json.dumps({"oneOf": [S, N]}),
     ["COMBINED_TYPE_CHANGED #/"]),
    ("oneOf branch changed", json.dumps({"oneOf": [S, N]}), json.dumps({"oneOf": [S, {"type": "boolean"}]}),
     ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"]),
    ("plain schema became a oneOf containing it", json.dumps(S), json.dumps({"oneOf": [S, N]}),
     ["SUM_TYPE_EXTENDED #/"]),
    ("array items changed", json.dumps({"type": "array", "items": S}), json.dumps({"type": "array", "items": N}),
     ["TYPE_CHANGED #/items"]),
    ("tuple item added to a closed array", json.dumps({"type": "array", "items": [S], "additionalItems": False}),
     json.dumps({"type": "array", "items": [S, N], "additionalItems": False}),
     ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"]),
    ("tuple item added to an open array", json.dumps({"type": "array", "items": [S]}),
     json.dumps({"type": "array", "items": [S, N]}), ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"]),
    ("maxItems decreased", json.dumps({"type": "array", "maxItems": 3}), json.dumps({"type": "array", "maxItems": 2}),
     ["MAX_ITEMS_DECREASED #/maxItems"]),
    ("uniqueItems added", json.dumps({"type": "array"}), json.dumps({"type": "array", "uniqueItems": True}),
     ["UNIQUE_ITEMS_ADDED #/uniqueItems"]),
    ("not narrowed", json.dumps({"not": {"type": ["string", "number"]}}), json.dumps({"not": S}),
     ["NOT_TYPE_NARROWED #/not"]),
    ("anything to the empty schema", obj({"a": S}), json.dumps({}), []),
    ("the false schema to anything", json.dumps(False), obj({"a": S}), []),
    ("description, title and id changed", json.dumps({**S, "title": "a", "description": "b", "$id": "c"}),
     json.dumps({**S, "title": "x", "description": "y", "$id": "z"}),
     ["ID_CHANGED #/", "TITLE_CHANGED #/", "DESCRIPTION_CHANGED #/"]),
    ("dependencies moved (hash order)", obj({"foo": N, "bar": S}, dependencies={"foo": ["bar"]}),
     obj({"foo": N, "bar": S}, dependencies={"bar": ["foo"]}),
     ["DEPENDENCY_ARRAY_ADDED #/dependencies/bar", "DEPENDENCY_ARRAY_REMOVED #/dependencies/foo"]),
    ("change behind a local $ref", json.dumps({"definitions": {"x": S}, "properties": {"a": {"$ref": "#/definitions/x"}}}),
     json.dumps({"definitions": {"x": N}, "properties": {"a": {"$ref": "#/definitions/x"}}}),
     ["TYPE_CHANGED #/properties/a"]),
    ("$defs resolved from definitions", json.dumps({"definitions": {"x": S}, "properties": {"a": {"$ref": "#/$defs/x"}}}),
     json.dumps({"definitions": {"x": S}, "properties": {"a": {"$ref": "#/definitions/x"}}}), []),
    ("draft 2020-12 prefixItems closed by items", json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [S], "items": False}),
     json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [S, N], "items": False}),
     ["ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"]),
]


@pytest.mark.parametrize("case,old,new,differences", DIFFERENCES, ids=[d[0] for d in DIFFERENCES])
def test_differences_are_confluents(case, old, new, differences):
    found = compare(parse_json(old).root, parse_json(new).root)
    assert [f"{kind} {path}" for kind, path in found] == differences


def backward_ok(old: str, new: str) -> bool:
    return all(kind in COMPATIBLE_CHANGES for kind, _ in compare(parse_json(old).root, parse_json(new).root))


def expected(level: str, backward: bool, forward: bool) -> bool:
    mode = level.removesuffix("_TRANSITIVE")
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward, "FULL": backward and forward}[mode]


# Confluent's documented JSON Schema evolutions: (case, old, new, BACKWARD compatible, FORWARD compatible).
PAIRS = [
    ("optional property added, open model", obj({"a": S}), obj({"a": S, "b": S}), False, True),
    ("optional property added, closed model", closed({"a": S}), closed({"a": S, "b": S}), True, False),
    ("property removed, open model", obj({"a": S, "b": S}), obj({"a": S}), True, False),
    ("property removed, closed model", closed({"a": S, "b": S}), closed({"a": S}), False, True),
    ("property added and removed, partially open model", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": S}, additionalProperties=S), True, True),
    ("required property added, closed model", closed({"a": S}), closed({"a": S, "b": S}, ["b"]), False, False),
    ("integer widened to number", obj({"a": I}), obj({"a": N}), True, False),
    ("string to number", obj({"a": S}), obj({"a": N}), False, False),
    ("maxLength increased", json.dumps({**S, "maxLength": 5}), json.dumps({**S, "maxLength": 9}), True, False),
    ("enum extended", json.dumps({"enum": [1, 2]}), json.dumps({"enum": [1, 2, 3]}), True, False),
    ("null allowed", obj({"a": S}), obj({"a": {"type": ["string", "null"]}}), True, False),
    ("title changed", json.dumps({**S, "title": "a"}), json.dumps({**S, "title": "b"}), True, True),
    ("identical", closed({"a": S}, ["a"]), closed({"a": S}, ["a"]), True, True),
]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case,old,new,backward,forward", PAIRS, ids=[p[0] for p in PAIRS])
def test_documented_pairs_at_every_level(level, case, old, new, backward, forward):
    assert backward_ok(old, new) == backward and backward_ok(new, old) == forward
    messages = check(level, parse_json(new), [parse_json(old)])
    assert (messages == []) == expected(level, backward, forward), messages


# Three versions where only the transitive levels see the oldest: (case, [v1, v2], v3, {level: compatible}).
HISTORIES = [
    ("closed model: a property added, then another removed",
     [closed({"a": S, "b": S}), closed({"a": S, "b": S, "c": S})], closed({"a": S, "c": S}),
     {"NONE": True, "BACKWARD": False, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("maxLength raised twice, then lowered below the first",
     [json.dumps({**S, "maxLength": 5}), json.dumps({**S, "maxLength": 9})], json.dumps({**S, "maxLength": 7}),
     {"NONE": True, "BACKWARD": False, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("open model: optional property removed after it was added",
     [obj({"a": S}), obj({"a": S, "b": S})], obj({"a": S}),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": True, "FORWARD": False, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("minimum lowered, then raised back above the first",
     [json.dumps({**N, "minimum": 5}), json.dumps({**N, "minimum": 1})], json.dumps({**N, "minimum": 3}),
     {"NONE": True, "BACKWARD": False, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("minimum lowered twice", [json.dumps({**N, "minimum": 5}), json.dumps({**N, "minimum": 3})],
     json.dumps({**N, "minimum": 1}),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": True, "FORWARD": False, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("minimum raised after a lowering, below the first",
     [json.dumps({**N, "minimum": 1}), json.dumps({**N, "minimum": 0})], json.dumps({**N, "minimum": 0.5}),
     {"NONE": True, "BACKWARD": False, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("closed model grows one optional property at a time",
     [closed({"a": S}), closed({"a": S, "b": S})], closed({"a": S, "b": S, "c": S}),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": True, "FORWARD": False, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("a property dropped then re-added with another type",
     [obj({"a": S, "b": S}), obj({"a": S})], obj({"a": S, "b": N}),
     {"NONE": True, "BACKWARD": False, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": False, "FULL_TRANSITIVE": False}),
    ("FORWARD only breaks against the oldest",
     [json.dumps({**S, "maxLength": 5}), json.dumps({**S, "maxLength": 9})], json.dumps({**S, "maxLength": 9}),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": True, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": True, "FULL_TRANSITIVE": False}),
]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case,history,new,answers", HISTORIES, ids=[h[0] for h in HISTORIES])
def test_transitive_levels_check_every_version(level, case, history, new, answers):
    messages = check(level, parse_json(new), [parse_json(s) for s in history])
    assert (messages == []) == answers[level], messages


def test_messages_are_confluents():
    old = parse_json(closed({"a": S}))
    new = parse_json(closed({"a": S, "b": S}, ["b"]))
    assert check("BACKWARD", new, [old.with_version(3)]) == [
        '{errorType:"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", description:"The new schema has an unopen '
        "content model and has a required property at path '#/properties/b' which is missing in the old schema'}",
        "{oldSchemaVersion: 3}",
        "{oldSchema: '" + old.canonical + "'}",
    ]
    assert check("FORWARD", new, [old]) == [
        '{errorType:"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", description:"The old has a closed content model '
        "and is missing a property or item present at path '#/properties/b' in the new schema'}",
        "{oldSchema: '" + old.canonical + "'}",
    ]
    # FULL: the forward half first, without the old schema; then the backward half with it.
    assert check("FULL", new, [old.with_version(1)]) == [
        '{errorType:"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", description:"The old has a closed content model '
        "and is missing a property or item present at path '#/properties/b' in the new schema'}",
        '{errorType:"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", description:"The new schema has an unopen '
        "content model and has a required property at path '#/properties/b' which is missing in the old schema'}",
        "{oldSchemaVersion: 1}",
        "{oldSchema: '" + old.canonical + "'}",
    ]
    narrowed = check("BACKWARD", parse_json(json.dumps({**S, "maxLength": 2})), [parse_json(json.dumps({**S, "maxLength": 3}))])
    assert narrowed[0] == ('{errorType:"MAX_LENGTH_DECREASED", description:"The value at path \'#/maxLength\' in the '
                           "new schema is less than its value in the old schema'}")


def test_no_previous_schema_is_always_compatible_and_unknown_levels_are_refused():
    assert check("FULL_TRANSITIVE", parse_json(obj({"a": S})), []) == []
    with pytest.raises(ValueError):
        check("SIDEWAYS", parse_json("{}"), [parse_json("{}")])


RECURSIVE = {"definitions": {"node": {"type": "object", "properties": {
    "value": {"type": "integer"}, "next": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/node"}]}}}},
    "$ref": "#/definitions/node"}


def test_recursive_schemas_terminate_and_still_see_deep_changes():
    same = parse_json(json.dumps(RECURSIVE))
    assert compare(same.root, parse_json(json.dumps(RECURSIVE)).root) == []
    changed = json.loads(json.dumps(RECURSIVE))
    changed["definitions"]["node"]["properties"]["value"] = S
    found = compare(same.root, parse_json(json.dumps(changed)).root)
    assert ("TYPE_CHANGED", "#/properties/value") in found
    assert any(kind not in COMPATIBLE_CHANGES for kind, _ in found)


def test_references_resolve_by_name():
    address = json.dumps({"type": "object", "properties": {"street": S}})
    wider = json.dumps({"type": "object", "properties": {"street": S, "zip": S}, "required": ["zip"]})
    user = json.dumps({"type": "object", "properties": {"address": {"$ref": "address.json"}}})
    old, new = parse_json(user, {"address.json": address}), parse_json(user, {"address.json": wider})
    assert old.canonical == user.replace(" ", "")
    assert [f"{k} {p}" for k, p in compare(old.root, new.root)] == [
        "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/address/properties/zip"]
    pointer = json.dumps({"properties": {"s": {"$ref": "defs.json#/definitions/street"}}})
    assert parse_json(pointer, {"defs.json": json.dumps({"definitions": {"street": S}})}).root.properties["s"].target.kind == "string"
    with pytest.raises(InvalidSchemaError, match="address.json"):
        parse_json(user)


# (case, text, Confluent's canonical string, its normalized string)
CANONICAL = [
    ("compact, key order kept", '{ "type" : "object",\n "properties": {"b": {}, "a": {"type": "string"}} }',
     '{"type":"object","properties":{"b":{},"a":{"type":"string"}}}',
     '{"properties":{"a":{"type":"string"},"b":{}},"type":"object"}'),
    ("decimals as BigDecimal prints them", '{"type":"number","minimum":1.50,"maximum":1e5,"x":-0.0,"y":-0}',
     '{"type":"number","minimum":1.50,"maximum":1E+5,"x":0.0,"y":0}',
     '{"maximum":1E+5,"minimum":1.50,"type":"number","x":0.0,"y":0}'),
    ("strings escaped as Jackson escapes them", '{"description":"tab\\there \\u0001 \\u00e9 \\/ \\"q\\""}',
     '{"description":"tab\\there \\u0001 é / \\"q\\""}', '{"description":"tab\\there \\u0001 é / \\"q\\""}'),
    ("a repeated key keeps its first place and last value", '{"type":"string","title":"a","type":"number"}',
     '{"type":"number","title":"a"}', '{"title":"a","type":"number"}'),
    ("what follows the first value is ignored", '  {"type":"string"} trailing', '{"type":"string"}',
     '{"type":"string"}'),
    ("a boolean schema", "true", "true", "true"),
    ("nested arrays of objects sorted inside", '{"oneOf":[{"type":"string","maxLength":2},{"type":"null"}]}',
     '{"oneOf":[{"type":"string","maxLength":2},{"type":"null"}]}',
     '{"oneOf":[{"maxLength":2,"type":"string"},{"type":"null"}]}'),
]


@pytest.mark.parametrize("case,text,canonical,normalized", CANONICAL, ids=[c[0] for c in CANONICAL])
def test_canonical_and_normalized_forms(case, text, canonical, normalized):
    schema = parse_json(text)
    assert schema.canonical == canonical
    assert schema.normalize().canonical == normalized
    assert parse_json(schema.canonical).canonical == canonical


INVALID = [
    ("not JSON", '{"type": "string"'),
    ("a string at the root", '"string"'),
    ("an unknown type", '{"type": "text"}'),
    ("a negative minLength", '{"type": "string", "minLength": -1}'),
    ("properties not an object", '{"properties": ["a"]}'),
    ("required not a list of strings", '{"required": [1]}'),
    ("a draft 4 exclusiveMinimum that is a number",
     '{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 1, "exclusiveMinimum": 2}'),
    ("a draft 7 exclusiveMinimum that is a boolean", '{"minimum": 1, "exclusiveMinimum": true}'),
    ("an unresolvable $ref", '{"properties": {"a": {"$ref": "#/definitions/missing"}}}'),
    ("a $ref to no reference", '{"$ref": "other.json"}'),
    ("a $ref that refers only to itself", '{"definitions": {"a": {"$ref": "#/definitions/a"}}, "$ref": "#/definitions/a"}'),
    ("multipleOf zero", '{"type": "number", "multipleOf": 0}'),
]


@pytest.mark.parametrize("case,text", INVALID, ids=[i[0] for i in INVALID])
def test_invalid_schemas_are_refused(case, text):
    with pytest.raises(InvalidSchemaError, match="^Invalid schema of type JSON, details: "):
        parse_json(text)


def test_java_hash_order():
    assert string_hash("hello") == 99162322 ^ (99162322 >> 16)  # "hello".hashCode(), spread as HashMap does
    assert key_union_order(["foo"], ["bar"]) == ["bar", "foo"]
    many = [f"p{i}" for i in range(40)]
    assert sorted(key_union_order(many, ["extra"])) == sorted(many + ["extra"])


def test_without_jsonschema_a_json_schema_is_refused_with_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if not installed
    _meta_validator.cache_clear()
    with pytest.raises(InvalidSchemaError, match=r"minibroker\[registry\]"):
        parse_json('{"type": "string"}')
    monkeypatch.undo()
    _meta_validator.cache_clear()
    assert parse_json('{"type": "string"}').canonical == '{"type":"string"}'



def test_canonical_form_keeps_any_json_value_and_is_a_fixed_point():
    from hypothesis import given, settings, strategies as st

    scalars = (st.none() | st.booleans() | st.integers() | st.text(max_size=8)
               | st.floats(allow_nan=False, allow_infinity=False))
    values = st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=10)

    @settings(max_examples=200, deadline=None)
    @given(values)
    def check_value(value):
        text = json.dumps({"type": "object", "default": value}, indent=1, ensure_ascii=bool(value))
        schema = parse_json(text)
        assert json.loads(schema.canonical) == json.loads(text)
        assert parse_json(schema.canonical).canonical == schema.canonical
        assert json.loads(schema.normalize().canonical) == json.loads(text)

    check_value()
