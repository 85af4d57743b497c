"""The registry's Protobuf schemas without a broker: compatibility cases with the answer Confluent's Protobuf rules
(SchemaDiff and its COMPATIBLE_CHANGES) give at each level, Confluent's messages, canonical and normalized printing
(text and serialized forms give one canonical string where Confluent's do), references and invalid schemas."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("google.protobuf", reason="Protobuf schemas need protobuf (pip install 'minibroker[registry]')")
from google.protobuf import descriptor_pb2  # noqa: E402

from minibroker.registry.parsed import InvalidSchemaError  # noqa: E402
from minibroker.registry.protobuf import ProtobufSchema, parse_protobuf  # noqa: E402
from minibroker.registry.protobuf_compatibility import differences  # noqa: E402
from tests.registryutil import checker  # noqa: E402

check = checker("PROTOBUF")


def proto(body: str, package: str = "test", syntax: str = "proto3", references: dict | None = None) -> ProtobufSchema:
    header = (f'syntax = "{syntax}";\n' if syntax else "") + (f"package {package};\n" if package else "")
    return parse_protobuf(header + body, references or {})


BASE = "message M { string a = 1; int32 b = 2; }"

# (old, new, BACKWARD, FORWARD): whether each direction is compatible by Confluent's rules; FULL is both.
CASES = [
    ("a field added", BASE, "message M { string a = 1; int32 b = 2; string c = 3; }", True, True),
    ("a field removed", BASE, "message M { string a = 1; }", True, True),
    ("a field renamed", BASE, "message M { string a = 1; int32 count = 2; }", True, True),
    ("int32 to int64 (one wire group)", BASE, "message M { string a = 1; int64 b = 2; }", True, True),
    ("int32 to bool (one wire group)", BASE, "message M { string a = 1; bool b = 2; }", True, True),
    ("int32 to sint32", BASE, "message M { string a = 1; sint32 b = 2; }", False, False),
    ("int32 to string", BASE, "message M { string a = 1; string b = 2; }", False, False),
    ("string to bytes", BASE, "message M { bytes a = 1; int32 b = 2; }", True, True),
    ("fixed32 to sfixed32", "message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", True, True),
    ("fixed32 to fixed64", "message M { fixed32 a = 1; }", "message M { fixed64 a = 1; }", False, False),
    ("float to double", "message M { float a = 1; }", "message M { double a = 1; }", False, False),
    ("an enum to int32", "message M { E a = 1; } enum E { Z = 0; }", "message M { int32 a = 1; } enum E { Z = 0; }",
     True, True),
    ("scalar to message", BASE, "message M { string a = 1; N b = 2; } message N { int32 x = 1; }", False, False),
    ("message type renamed", "message M { N n = 1; } message N { int32 x = 1; }",
     "message M { O n = 1; } message O { int32 x = 1; }", False, False),
    ("a message added", BASE, BASE + " message N { int32 x = 1; }", True, False),
    ("a message removed", BASE + " message N { int32 x = 1; }", BASE, False, True),
    ("messages reordered", BASE + " message N { int32 x = 1; }", "message N { int32 x = 1; } " + BASE, True, True),
    ("an enum added", BASE, BASE + " enum E { Z = 0; }", True, True),
    ("an enum constant added", "enum E { Z = 0; }", "enum E { Z = 0; O = 1; }", True, True),
    ("an enum constant renamed", "enum E { Z = 0; }", "enum E { ZERO = 0; }", True, True),
    ("package changed", BASE, BASE, False, False),
    ("a oneof added around a new field", BASE, "message M { string a = 1; int32 b = 2; oneof o { int32 c = 3; } }",
     True, True),
    ("a field moved into a new oneof", BASE, "message M { string a = 1; oneof o { int32 b = 2; } }", True, True),
    ("two fields moved into one oneof", BASE, "message M { oneof o { string a = 1; int32 b = 2; } }", False, True),
    ("a field moved into an existing oneof", "message M { string a = 1; oneof o { int32 b = 2; } }",
     "message M { oneof o { string a = 1; int32 b = 2; } }", False, True),
    ("a oneof field removed", "message M { oneof o { string a = 1; int32 b = 2; } }",
     "message M { oneof o { string a = 1; } }", False, True),
    ("a whole oneof removed", "message M { string a = 1; oneof o { int32 b = 2; } }", "message M { string a = 1; }",
     True, True),
    ("a oneof field moved to the top level", "message M { oneof o { string a = 1; int32 b = 2; } }",
     "message M { string a = 1; oneof o { int32 b = 2; } }", True, False),
    ("a numeric field's label changed", "message M { optional int32 b = 2; }", "message M { repeated int32 b = 2; }",
     False, False),
    ("a string field's label changed", "message M { optional string a = 1; }", "message M { repeated string a = 1; }",
     True, True),
    ("a label added where there was none", BASE, "message M { string a = 1; optional int32 b = 2; }", True, True),
    ("map value type changed", "message M { map<string, int32> m = 1; }", "message M { map<string, string> m = 1; }",
     False, False),
    ("map value type widened", "message M { map<string, int32> m = 1; }", "message M { map<string, int64> m = 1; }",
     True, True),
    ("a nested message's field kind changed", "message M { message N { int32 x = 1; } N n = 1; }",
     "message M { message N { string x = 1; } N n = 1; }", False, False),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_compatibility_at_each_level(old: str, new: str, backward: bool, forward: bool) -> None:
    package = "other" if old == new else "test"  # the one case whose change is the package
    before, after = proto(old).with_version(1), proto(new, package=package)
    assert (check("BACKWARD", after, [before]) == []) is backward
    assert (check("FORWARD", after, [before]) == []) is forward
    assert (check("FULL", after, [before]) == []) is (backward and forward)
    assert check("NONE", after, [before]) == []


def test_proto2_required_fields() -> None:
    old = proto("message M { required string a = 1; optional int32 b = 2; }", syntax="proto2")
    added = proto("message M { required string a = 1; optional int32 b = 2; required int32 c = 3; }", syntax="proto2")
    removed = proto("message M { optional int32 b = 2; }", syntax="proto2")
    assert [d.kind for d in differences(old, added)] == ["REQUIRED_FIELD_ADDED"]
    assert check("BACKWARD", added, [old]) and check("FORWARD", added, [old])
    assert [d.kind for d in differences(old, removed)] == ["REQUIRED_FIELD_REMOVED"]
    assert check("BACKWARD", removed, [old]) and check("FORWARD", removed, [old])


def test_transitive_levels_check_every_version_newest_first() -> None:
    v1 = proto("message M { int32 a = 1; }").with_version(1)
    v2 = proto("message M { int64 b = 2; }").with_version(2)  # a removed, b added: compatible with v1
    v3 = proto("message M { string a = 1; int64 b = 2; }")  # a again, now a string: only v1 knows it
    assert check("BACKWARD", v3, [v1, v2]) == []
    assert check("FORWARD", v3, [v1, v2]) == []
    assert check("FULL", v3, [v1, v2]) == []
    for level in ("BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"):
        messages = check(level, v3, [v1, v2])
        assert "{oldSchemaVersion: 1}" in messages
        assert any("FIELD_SCALAR_KIND_CHANGED" in m for m in messages)


def test_messages_word_the_difference_as_confluent_does() -> None:
    old = proto(BASE).with_version(3)
    messages = check("BACKWARD", proto("message M { string a = 1; string b = 2; }"), [old])
    assert messages == [
        '{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path \'#/M/2\' in the '
        'new schema does not match its kind in the old schema"}',
        "{oldSchemaVersion: 3}",
        f"{{oldSchema: '{old.canonical}'}}",
    ]
    forward = check("FORWARD", proto("message N { int32 x = 1; }"), [old])
    assert forward[0] == ('{errorType:"MESSAGE_REMOVED", description:"The old schema is missing a MESSAGE type at '
                          "path '#/N' in the new schema\"}")
    full = check("FULL", proto("message M { string a = 1; sint32 b = 2; }"), [old])
    assert [m.split("in the ")[1][:3] for m in full[:2]] == ["old", "new"]  # the old-reads-new half comes first


def test_a_changed_type_in_a_referenced_file_is_found() -> None:
    dep_v1 = 'syntax = "proto3";\npackage dep;\nmessage D { int32 x = 1; }\n'
    dep_v2 = 'syntax = "proto3";\npackage dep;\nmessage D { string x = 1; }\n'
    body = 'import "dep.proto";\nmessage M { dep.D d = 1; }'
    old = proto(body, references={"dep.proto": dep_v1})
    new = proto(body, references={"dep.proto": dep_v2})
    kinds = [d.kind for d in differences(old, new)]
    assert "FIELD_SCALAR_KIND_CHANGED" in kinds and "FIELD_NAMED_TYPE_CHANGED" in kinds
    assert check("BACKWARD", new, [old])
    assert check("BACKWARD", proto(body, references={"dep.proto": dep_v1}), [old]) == []


def test_canonical_printing() -> None:
    schema = proto("""
// comments go
import "google/protobuf/timestamp.proto";
option java_package = "com.example";
message User {
  reserved 5, 9 to 11, 100 to max; reserved "old";
  string name = 1 [json_name = "n", deprecated = true];
  map<string, Address> addresses = 4;
  google.protobuf.Timestamp created = 6;
  oneof contact { string phone = 7; Address postal = 8; }
  message Address { string street = 1; }
  enum Kind { KIND_UNKNOWN = 0; ADMIN = 1; }
}
service Users { rpc Get (User) returns (stream User); }
""")
    assert schema.canonical == """syntax = "proto3";
package test;

import "google/protobuf/timestamp.proto";

option java_package = "com.example";

message User {
  reserved 5, 9 to 11, 100 to max;
  reserved "old";

  string name = 1 [
    deprecated = true,
    json_name = "n"
  ];
  map<string, Address> addresses = 4;
  google.protobuf.Timestamp created = 6;

  oneof contact {
    string phone = 7;
    Address postal = 8;
  }

  message Address {
    string street = 1;
  }
  enum Kind {
    KIND_UNKNOWN = 0;
    ADMIN = 1;
  }
}

service Users {
  rpc Get (User) returns (stream User);
}
"""
    assert proto(schema.canonical.split("package test;\n", 1)[1]).canonical == schema.canonical


def test_normalized_form_sorts_and_qualifies() -> None:
    a = proto('import "b.proto";\nimport "a.proto";\noption java_package = "x";\noption go_package = "y";\n'
              "message M { int32 z = 2; N n = 1; message N { int32 x = 1; } }",
              references={"a.proto": 'syntax = "proto3";\n', "b.proto": 'syntax = "proto3";\n'})
    assert a.normalize().canonical == (
        'syntax = "proto3";\npackage test;\n\nimport "a.proto";\nimport "b.proto";\n\noption go_package = "y";\n'
        'option java_package = "x";\n\nmessage M {\n  .test.M.N n = 1;\n  int32 z = 2;\n\n  message N {\n'
        "    int32 x = 1;\n  }\n}\n")


def descriptor_of(schema_text: str) -> str:
    return parse_protobuf(schema_text).formatted("serialized")


def test_text_and_serialized_give_one_canonical_string() -> None:
    text = 'syntax = "proto3";\npackage test;\n\nmessage P {\n  int32 x = 1;\n  repeated string tags = 2;\n}\n'
    serialized = descriptor_of(text)
    assert parse_protobuf(serialized).canonical == parse_protobuf(text).canonical == text
    # with message types and maps only the normalized forms agree (Confluent keeps a descriptor's names qualified
    # and its map entry messages)
    typed = ('syntax = "proto3";\npackage test;\nmessage P { Q q = 1; map<string, Q> m = 2; }\n'
             "message Q { int32 x = 1; }\n")
    from_descriptor = parse_protobuf(descriptor_of(typed))
    assert from_descriptor.canonical != parse_protobuf(typed).canonical
    assert from_descriptor.normalize().canonical == parse_protobuf(typed).normalize().canonical
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert (file.name, file.package, file.syntax) == ("default", "test", "proto3")


@pytest.mark.parametrize("text", [
    "message M {",
    'syntax = "proto3";\nmessage M { string a = 1; int32 b = 1; }',  # a number used twice
    'syntax = "proto3";\nmessage M { Missing a = 1; }',  # a type that resolves nowhere
    'syntax = "proto3";\nmessage M { required string a = 1; }',  # required in proto3
    'syntax = "proto4";',
    "bm90IGEgZGVzY3JpcHRvcg==" + "!",
])
def test_invalid_schemas_are_refused(text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        parse_protobuf(text, {})


def test_imports_resolve_from_references_and_well_known_files() -> None:
    body = 'import "dep.proto";\nimport "confluent/meta.proto";\nmessage M { dep.D d = 1; }'
    with pytest.raises(InvalidSchemaError):
        proto(body)
    schema = proto(body, references={"dep.proto": 'syntax = "proto3";\npackage dep;\nmessage D { int32 x = 1; }'})
    assert "dep.D" in schema.types and "confluent.Meta" in schema.types


def test_google_type_files_resolve_without_a_reference() -> None:
    pytest.importorskip("google.type", reason="google/type files come from googleapis-common-protos")
    schema = proto('import "google/type/money.proto";\nmessage Price { google.type.Money amount = 1; }')
    assert "google.type.Money" in schema.types
    assert parse_protobuf(schema.formatted("serialized")).canonical == schema.canonical.replace(
        "google.type.Money", ".google.type.Money")


def test_a_descriptor_with_a_map_field_is_served_back_as_protobuf_builds_it() -> None:
    from google.protobuf import descriptor_pool, message_factory

    typed = 'syntax = "proto3";\npackage test;\nmessage P { map<string, int32> counts = 1; optional string note = 2; }\n'
    registered = parse_protobuf(descriptor_of(typed))  # as the serializer sends it: the entry message included
    assert "message CountsEntry" in registered.canonical and "optional string note = 2;" in registered.canonical
    served = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(registered.formatted("serialized")))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(served)
    message = message_factory.GetMessageClass(pool.FindMessageTypeByName("test.P"))(counts={"a": 1}, note="n")
    assert dict(message.counts) == {"a": 1} and message.HasField("note")


PROTO2 = '''syntax = "proto2";
package ex;
import "google/protobuf/descriptor.proto";
option optimize_for = SPEED;
option (file_opt) = { name: "x" size: 3 tags: ["a", "b"] nested { deep: true } };
extend google.protobuf.FileOptions { optional Opt file_opt = 50001; }
message Opt { optional string name = 1; optional int32 size = 2; repeated string tags = 3; optional N nested = 4;
  message N { optional bool deep = 1; } }
message M {
  required string id = 1;
  optional int32 count = 2 [default = 5, packed = false, json_name = "cnt"];
  optional Color color = 3 [default = RED];
  extensions 100 to 199, 500 to max;
  enum Color { option allow_alias = true; RED = 0; CRIMSON = 0 [deprecated = true]; reserved 5 to 9, 20; }
}
extend M { optional int32 extra = 100; }
service Svc { rpc Do (M) returns (M) { option deprecated = true; } rpc Stream (stream M) returns (stream M); }
'''


def test_proto2_with_options_extensions_and_services() -> None:
    schema = parse_protobuf(PROTO2)
    assert parse_protobuf(schema.canonical).canonical == schema.canonical
    assert "  optional int32 count = 2 [\n    packed = false,\n    default = 5,\n    json_name = \"cnt\"\n  ];\n" \
        in schema.canonical  # default and json_name after the other options, as Confluent prints them
    assert 'option (file_opt) = {\n  name: "x",\n  size: 3,' in schema.canonical
    assert "  extensions 100 to 199, 500 to max;\n" in schema.canonical
    assert "  rpc Stream (stream M) returns (stream M);\n" in schema.canonical
    served = parse_protobuf(schema.formatted("serialized"))
    custom = schema.canonical[schema.canonical.index("option (file_opt)"):schema.canonical.index("};\n") + 3]
    without_custom = parse_protobuf(schema.canonical.replace(custom, ""))
    assert served.normalize().canonical == without_custom.normalize().canonical  # a descriptor drops custom options
