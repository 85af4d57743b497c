"""The registry's Avro parsing, canonical forms and compatibility checks (pure functions, no broker)."""

import json

import pytest

from minibroker.registry.avro import parse_avro
from minibroker.registry.parsed import InvalidSchemaError
from minibroker.registry.levels import LEVELS
from tests.registryutil import checker

check = checker("AVRO")


def record(*fields, name="User", **extra):
    return json.dumps({"type": "record", "name": name, **extra, "fields": list(fields)})


def f(name, type_, **extra):
    return {"name": name, "type": type_, **extra}


COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
COLOR_MORE = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}

# Confluent's "Schema Evolution and Compatibility" examples: (case, old, new, new reads old, old reads new).
PAIRS = [
    ("add field with default", record(f("a", "int")), record(f("a", "int"), f("b", "string", default="x")), True, True),
    ("add field without default", record(f("a", "int")), record(f("a", "int"), f("b", "string")), False, True),
    ("remove field with default", record(f("a", "int"), f("b", "string", default="x")), record(f("a", "int")), True, True),
    ("remove field without default", record(f("a", "int"), f("b", "string")), record(f("a", "int")), True, False),
    ("promote int to long", record(f("a", "int")), record(f("a", "long")), True, False),
    ("promote long to double", record(f("a", "long")), record(f("a", "double")), True, False),
    ("promote float to double", record(f("a", "float")), record(f("a", "double")), True, False),
    ("string to bytes", record(f("a", "string")), record(f("a", "bytes")), True, True),
    ("change string to int", record(f("a", "string")), record(f("a", "int")), False, False),
    ("enum symbol added", record(f("c", COLOR)), record(f("c", COLOR_MORE)), True, False),
    ("enum symbol removed", record(f("c", COLOR_MORE)), record(f("c", COLOR)), False, True),
    ("enum symbol added, readers have a default",
     record(f("c", {**COLOR, "default": "RED"})), record(f("c", {**COLOR_MORE, "default": "RED"})), True, True),
    ("union widened", record(f("a", "string")), record(f("a", ["null", "string"], default=None)), True, False),
    ("union narrowed", record(f("a", ["null", "string"], default=None)), record(f("a", "string")), False, True),
    ("union branch added", record(f("a", ["null", "int"])), record(f("a", ["null", "int", "string"])), True, False),
    ("field renamed with alias", record(f("name", "string")), record(f("full_name", "string", aliases=["name"])), True, False),
    ("field renamed without alias", record(f("name", "string")), record(f("full_name", "string")), False, False),
    ("record renamed with alias", record(f("a", "int")), record(f("a", "int"), name="Person", aliases=["User"]), True, False),
    ("record renamed without alias", record(f("a", "int")), record(f("a", "int"), name="Person"), False, False),
    ("namespace changed", record(f("a", "int"), namespace="x"), record(f("a", "int"), namespace="y"), True, True),
    ("fixed size changed",
     record(f("h", {"type": "fixed", "name": "H", "size": 16})), record(f("h", {"type": "fixed", "name": "H", "size": 32})),
     False, False),
    ("array items promoted", record(f("a", {"type": "array", "items": "int"})),
     record(f("a", {"type": "array", "items": "long"})), True, False),
    ("map values changed", record(f("a", {"type": "map", "values": "int"})),
     record(f("a", {"type": "map", "values": "string"})), False, False),
    ("nested record field added without default",
     record(f("n", {"type": "record", "name": "N", "fields": [f("x", "int")]})),
     record(f("n", {"type": "record", "name": "N", "fields": [f("x", "int"), f("y", "int")]})), False, True),
    ("identical", record(f("a", "int")), record(f("a", "int")), True, True),
]


def expected(level: str, backward: bool, forward: bool) -> bool:
    mode = level.removesuffix("_TRANSITIVE")
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward, "FULL": backward and forward}[mode]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case,old,new,backward,forward", PAIRS, ids=[p[0] for p in PAIRS])
def test_documented_pairs_at_every_level(level, case, old, new, backward, forward):
    messages = check(level, parse_avro(new), [parse_avro(old)])
    assert (messages == []) == expected(level, backward, forward), messages


# Three versions where only the transitive levels see the oldest: (case, [v1, v2], v3, {level: compatible}).
HISTORIES = [
    ("field added without default after one with default",
     [record(f("a", "int")), record(f("a", "int"), f("b", "int", default=0))], record(f("a", "int"), f("b", "int")),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": False, "FORWARD": True, "FORWARD_TRANSITIVE": True,
      "FULL": True, "FULL_TRANSITIVE": False}),
    ("field removed once it had gained a default",
     [record(f("a", "int"), f("b", "int")), record(f("a", "int"), f("b", "int", default=0))], record(f("a", "int")),
     {"NONE": True, "BACKWARD": True, "BACKWARD_TRANSITIVE": True, "FORWARD": True, "FORWARD_TRANSITIVE": False,
      "FULL": True, "FULL_TRANSITIVE": False}),
]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case,history,new,answers", HISTORIES, ids=[h[0] for h in HISTORIES])
def test_transitive_levels_check_every_version(level, case, history, new, answers):
    messages = check(level, parse_avro(new), [parse_avro(s) for s in history])
    assert (messages == []) == answers[level], messages


def test_no_previous_schema_is_always_compatible():
    assert check("FULL_TRANSITIVE", parse_avro(record(f("a", "int"))), []) == []


def test_unknown_level_is_refused():
    with pytest.raises(ValueError):
        check("SIDEWAYS", parse_avro('"int"'), [parse_avro('"int"')])


def test_messages_are_confluents():
    old = parse_avro(record(f("a", "int")))
    new = parse_avro(record(f("a", "int"), f("b", "string")))
    assert check("BACKWARD", new, [old.with_version(3)]) == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the new "
        "schema has no default value and is missing in the old schema', additionalInfo:'b'}",
        "{oldSchemaVersion: 3}",
        "{oldSchema: '" + old.canonical + "'}",
    ]
    changed = parse_avro(record(f("a", "string")))
    assert check("FORWARD", changed, [old])[0] == (
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field in the old schema does "
        "not match with the new schema', additionalInfo:'reader type: INT not compatible with writer type: STRING'}"
    )


def test_other_incompatibility_kinds():
    def kinds(new, old):
        return [m.split("'")[1] for m in check("BACKWARD", parse_avro(new), [parse_avro(old)]) if m.startswith("{errorType")]

    assert kinds(record(f("c", COLOR)), record(f("c", COLOR_MORE))) == ["MISSING_ENUM_SYMBOLS"]
    assert "additionalInfo:'[BLUE]'" in check("BACKWARD", parse_avro(record(f("c", COLOR))),
                                              [parse_avro(record(f("c", COLOR_MORE)))])[0]
    assert kinds(record(f("a", "int"), name="P"), record(f("a", "int"))) == ["NAME_MISMATCH"]
    assert kinds(record(f("a", "string")), record(f("a", ["null", "string"]))) == ["TYPE_MISMATCH"]
    assert kinds(record(f("a", ["null", "int"])), record(f("a", "string"))) == ["MISSING_UNION_BRANCH"]
    assert check("BACKWARD", parse_avro(record(f("a", ["null", "int"]))),
                 [parse_avro(record(f("a", ["null", "string"])))])[0].startswith(
        "{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a union field at "
        "path '/fields/0/type/1' in the old schema', additionalInfo:'reader union lacking writer type: STRING'}")
    fixed = lambda n: record(f("h", {"type": "fixed", "name": "H", "size": n}))  # noqa: E731
    assert kinds(fixed(4), fixed(8)) == ["FIXED_SIZE_MISMATCH"]


def test_recursive_records_are_checked():
    node = lambda extra: record(f("value", "int"), f("next", ["null", "Node"], default=None), *extra, name="Node")  # noqa: E731
    assert check("FULL", parse_avro(node([f("tag", "string", default="")])), [parse_avro(node([]))]) == []
    assert check("BACKWARD", parse_avro(node([f("tag", "string")])), [parse_avro(node([]))]) != []


INVALID = [
    ("not JSON", "{"),
    ("NaN is not JSON", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "double", "default": NaN}]}'),
    ("unknown type", '{"type": "integer"}'),
    ("undefined name", record(f("a", "Missing"))),
    ("no name", '{"type": "record", "fields": []}'),
    ("no fields", '{"type": "record", "name": "R"}'),
    ("no field type", '{"type": "record", "name": "R", "fields": [{"name": "a"}]}'),
    ("invalid record name", record(f("a", "int"), name="1User")),
    ("invalid field name", record(f("a-b", "int"))),
    ("named after a primitive", record(f("a", "int"), name="int")),
    ("duplicate field", record(f("a", "int"), f("a", "long"))),
    ("record redefined", record(f("a", {"type": "fixed", "name": "F", "size": 1}),
                                f("b", {"type": "fixed", "name": "F", "size": 2}))),
    ("string default for int", record(f("a", "int", default="1"))),
    ("int default out of range", record(f("a", "int", default=2**31))),
    ("null default for string", record(f("a", "string", default=None))),
    ("union default matching no branch", record(f("a", ["null", "int"], default="x"))),
    ("enum default not a string", record(f("c", COLOR, default=1))),
    ("double default not a number", record(f("d", "double", default="one"))),
    ("a schema object's type must be a name", '{"type": {"type": "int"}}'),
    ("record redefined differently", record(f("a", {"type": "fixed", "name": "F", "size": 1}),
                                            f("b", {"type": "fixed", "name": "F", "size": 1, "doc": "x"}))),
    ("unterminated comment", '"int" /* '),
    ("record default missing a field", record(f("n", {"type": "record", "name": "N", "fields": [f("x", "int")]},
                                                default={}))),
    ("array default of the wrong items", record(f("a", {"type": "array", "items": "int"}, default=["x"]))),
    ("duplicate enum symbol", json.dumps({"type": "enum", "name": "E", "symbols": ["A", "A"]})),
    ("invalid enum symbol", json.dumps({"type": "enum", "name": "E", "symbols": ["A B"]})),
    ("enum's own default not a symbol", json.dumps({**COLOR, "default": "BLUE"})),
    ("fixed without size", '{"type": "fixed", "name": "F"}'),
    ("fixed with a negative size", '{"type": "fixed", "name": "F", "size": -1}'),
    ("array without items", '{"type": "array"}'),
    ("map without values", '{"type": "map"}'),
    ("nested union", '["null", ["int", "string"]]'),
    ("duplicate union branch", '["int", "string", "int"]'),
    ("invalid field order", record(f("a", "int", order="up"))),
    ("a number is no schema", "42"),
]


@pytest.mark.parametrize("case,text", INVALID, ids=[c for c, _ in INVALID])
def test_invalid_schemas_are_refused(case, text):
    with pytest.raises(InvalidSchemaError):
        parse_avro(text)


VALID = [
    ("primitive", '"string"'),
    ("primitive object with properties", '{"type": "int", "connect.name": "x"}'),
    ("invalid logical type is ignored, as Avro does", '{"type": "bytes", "logicalType": "decimal"}'),
    ("unknown logical type", '{"type": "string", "logicalType": "zip-code"}'),
    ("recursive record", record(f("next", ["null", "Node"], default=None), name="Node")),
    ("union of two records", json.dumps([{"type": "record", "name": "A", "fields": []},
                                         {"type": "record", "name": "B", "fields": []}])),
    ("defaults of every kind", record(
        f("n", "null", default=None), f("b", "boolean", default=True), f("l", "long", default=2**40),
        f("d", "double", default=1), f("s", "bytes", default="\u00ff"), f("m", {"type": "map", "values": "int"}, default={"k": 1}),
        f("u", ["string", "null"], default="x"), f("c", COLOR, default="RED"),
    )),
    ("error type", '{"type": "error", "name": "Oops", "fields": []}'),
    # Avro (1.12) accepts a union default matching any branch, and checks only that an enum default is a string.
    ("union default of a later branch", record(f("a", ["null", "int"], default=1))),
    ("enum field default not a symbol", record(f("c", COLOR, default="BLUE"))),
    ("double defaults as Java strings", record(f("d", "double", default="NaN"), f("e", "float", default="1.5f"))),
    ("field order in any case", record(f("a", "int", order="DESCENDING"))),
    ("the same type defined twice alike", record(f("a", {"type": "fixed", "name": "F", "size": 1}),
                                                 f("b", {"type": "fixed", "name": "F", "size": 1}))),
    ("comments, which Avro's JSON parser allows", '/* a comment */ {"type": "int" // another\n}'),
    ("a name that is a type's name in a namespace", record(f("a", "int"), name="n.record")),
]


@pytest.mark.parametrize("case,text", VALID, ids=[c for c, _ in VALID])
def test_valid_schemas_parse_and_print_back_to_the_same_schema(case, text):
    schema = parse_avro(text)
    assert parse_avro(schema.canonical).canonical == schema.canonical


def test_canonical_is_avro_javas_to_string():
    text = """{
        "namespace": "com.example", "type": "record", "name": "User", "doc": "A user",
        "fields": [
            {"type": "string", "name": "name", "doc": "full name"},
            {"default": null, "name": "email", "type": ["null", "string"]},
            {"name": "kind", "type": {"symbols": ["A", "B"], "name": "Kind", "type": "enum", "default": "A"}},
            {"name": "address", "type": {"type": "record", "name": "Address", "namespace": "com.other",
                                          "fields": [{"name": "kind", "type": "com.example.Kind"}]}},
            {"name": "ratio", "type": "double", "default": 0.5, "order": "descending", "aliases": ["r"]},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}
        ]
    }"""
    assert parse_avro(text).canonical == (
        '{"type":"record","name":"User","namespace":"com.example","doc":"A user","fields":['
        '{"name":"name","type":"string","doc":"full name"},'
        '{"name":"email","type":["null","string"],"default":null},'
        '{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["A","B"],"default":"A"}},'
        '{"name":"address","type":{"type":"record","name":"Address","namespace":"com.other","fields":['
        '{"name":"kind","type":"com.example.Kind"}]}},'
        '{"name":"ratio","type":"double","default":0.5,"order":"descending","aliases":["r"]},'
        '{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}'
    )


def test_canonical_ignores_whitespace_and_key_order_but_not_docs_or_field_order():
    base = parse_avro('{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"long"}]}')
    spaced = parse_avro('{ "fields" : [ { "type" : "int", "name" : "a" },\n {"name": "b", "type": {"type": "long"}} ],'
                        ' "name" : "R", "type" : "record" }')
    assert spaced.canonical == base.canonical
    documented = parse_avro('{"type":"record","name":"R","doc":"why","fields":[{"name":"a","type":"int"},'
                            '{"name":"b","type":"long"}]}')
    assert documented.canonical != base.canonical
    swapped = parse_avro('{"type":"record","name":"R","fields":[{"name":"b","type":"long"},{"name":"a","type":"int"}]}')
    assert swapped.canonical != base.canonical


def test_canonical_writes_namespaces_as_avro_does():
    dotted = parse_avro('{"type":"record","name":"a.b.R","fields":[]}')
    spaced = parse_avro('{"type":"record","name":"R","namespace":"a.b","fields":[]}')
    assert dotted.canonical == spaced.canonical == '{"type":"record","name":"R","namespace":"a.b","fields":[]}'
    nested = parse_avro('{"type":"record","name":"R","namespace":"a","fields":[{"name":"x","type":'
                        '{"type":"record","name":"S","namespace":"","fields":[]}}]}')
    assert '{"type":"record","name":"S","namespace":"","fields":[]}' in nested.canonical


def test_canonical_names_of_types_that_shadow_type_names_stay_qualified():
    schema = parse_avro('{"type":"record","name":"n.record","fields":[{"name":"next","type":["null","record"]}]}')
    assert schema.canonical == (
        '{"type":"record","name":"record","namespace":"n","fields":[{"name":"next","type":["null","n.record"]}]}'
    )


def test_double_defaults_given_as_strings_print_as_numbers():
    schema = parse_avro(record(f("d", "double", default="2.5"), f("n", "double", default="NaN")))
    assert '"default":2.5}' in schema.canonical
    assert '"default":"NaN"}' in schema.canonical


def test_canonical_numbers_and_strings_as_jackson_writes_them():
    schema = parse_avro(record(f("big", "double", default=1e10), f("small", "double", default=0.0001),
                               f("s", "string", default="é\u0001")))
    assert '"default":1.0E10' in schema.canonical
    assert '"default":1.0E-4' in schema.canonical
    assert '"default":"é\\u0001"' in schema.canonical


def test_canonical_keeps_a_backslash_u_written_in_a_string():
    """Only Jackson's own escapes get uppercase hex: a backslash and "u00e9" in the text stay as they are."""
    schema = parse_avro(record(f("s", "string", default="\\u00e9\u001f")))
    assert '"default":"\\\\u00e9\\u001F"' in schema.canonical


def test_normalized_sorts_properties_and_aliases_and_qualifies_names():
    a = parse_avro('{"type":"record","name":"R","namespace":"n","aliases":["Y","X"],"b":1,"a":2,'
                   '"fields":[{"name":"f","type":"int","aliases":["q","p"]}]}')
    b = parse_avro('{"a":2,"b":1,"fields":[{"aliases":["p","q"],"type":"int","name":"f"}],"aliases":["X","Y"],'
                   '"type":"record","name":"n.R"}')
    assert a.canonical != b.canonical
    assert a.normalized == b.normalized
    assert a.normalized.startswith('{"name":"n.R","type":"record","fields":[{"name":"f","type":"int"')
    assert '"aliases":["n.X","n.Y"],"a":2,"b":1}' in a.normalized


def test_normalize_gives_the_schema_the_registry_keeps():
    a = parse_avro('{"type":"record","name":"R","namespace":"n","aliases":["Y","X"],"b":1,"a":2,'
                   '"fields":[{"name":"f","type":"int","aliases":["q","p"],"order":"ascending"}]}')
    b = parse_avro('{"a":2,"b":1,"fields":[{"aliases":["p","q"],"type":"int","name":"f"}],"aliases":["X","Y"],'
                   '"type":"record","name":"n.R"}')
    assert a.canonical != b.canonical
    assert a.normalize().canonical == b.normalize().canonical == (
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"f","type":"int","aliases":["p","q"]}],'
        '"a":2,"b":1,"aliases":["X","Y"]}'
    )


def test_normalize_puts_a_valid_logical_types_attributes_first():
    a = parse_avro('{"type":"bytes","scale":2,"x":1,"precision":4,"logicalType":"decimal"}')
    b = parse_avro('{"logicalType":"decimal","x":1,"type":"bytes","precision":4,"scale":2}')
    assert a.canonical != b.canonical
    assert a.normalize().canonical == b.normalize().canonical == (
        '{"type":"bytes","logicalType":"decimal","precision":4,"scale":2,"x":1}'
    )
    invalid = parse_avro('{"type":"bytes","x":1,"logicalType":"decimal"}')
    assert invalid.normalize().canonical == '{"type":"bytes","logicalType":"decimal","x":1}'


def test_normalize_keeps_references():
    address = '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}'
    user = parse_avro('{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}',
                      {"com.acme.Address": address})
    assert user.normalize().canonical == user.canonical


def test_a_field_matching_two_writer_fields_is_reported_as_confluent_does():
    old = parse_avro(record(f("a", "int"), f("b", "int")))
    new = parse_avro(record(f("a", "int", aliases=["b"])))
    messages = check("BACKWARD", new, [old])
    assert messages[0].startswith("Unexpected exception during compatibility check: Reader record field a type:INT pos:0")
    assert check("FORWARD", new, [old]) != []


def test_references_define_types_the_schema_uses():
    address = '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}'
    text = '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}'
    with pytest.raises(InvalidSchemaError):
        parse_avro(text)
    user = parse_avro(text, {"com.acme.Address": address})
    assert user.canonical == (
        '{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}'
    )
    assert '"home","type":"com.acme.Address"' in user.normalized
    changed = parse_avro(address.replace('"string"', '"int"'))
    moved = parse_avro(text, {"com.acme.Address": changed.text})
    assert check("BACKWARD", moved, [user]) != []
    assert check("BACKWARD", user, [user]) == []


def test_only_a_references_own_name_is_written_by_name():
    """Confluent passes Avro the referenced schemas themselves: types nested in them are written out in full."""
    outer = '{"type":"record","name":"Outer","fields":[{"name":"k","type":{"type":"enum","name":"K","symbols":["A"]}}]}'
    schema = parse_avro('{"type":"record","name":"R","fields":[{"name":"o","type":"Outer"},{"name":"k","type":"K"}]}',
                        {"Outer": outer})
    assert schema.canonical == ('{"type":"record","name":"R","fields":[{"name":"o","type":"Outer"},'
                                '{"name":"k","type":{"type":"enum","name":"K","symbols":["A"]}}]}')


def test_references_may_build_on_each_other():
    kind = '{"type":"enum","name":"Kind","symbols":["A"]}'
    item = '{"type":"record","name":"Item","fields":[{"name":"kind","type":"Kind"}]}'
    order = parse_avro('{"type":"array","items":"Item"}', {"Kind": kind, "Item": item})
    assert order.canonical == '{"type":"array","items":"Item"}'
