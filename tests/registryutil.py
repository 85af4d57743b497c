"""Raw HTTP calls to the schema registry for the tests (urllib: no client library between the test and the wire)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def call(url: str, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    """(status, decoded JSON answer) of one request."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def record_schema(name: str, *fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "test", "fields": list(fields)})


@dataclass(frozen=True)
class Samples:
    """One schema type's schemas, for the tests that run over every type the registry serves."""

    schema_type: str
    v1: str
    v2: str  # v1 evolved as BACKWARD allows
    other: str  # unrelated to v1
    dependency: str  # what `referencing` references as `reference_name`
    reference_name: str
    referencing: str
    invalid: str  # text the type's parser refuses
    unnormalized: str  # a schema whose canonical form is not Confluent's normalized one

    def body(self, schema: str, *references: tuple[str, int]) -> dict[str, Any]:
        """A registration body for `schema` referencing each (subject, version) as `reference_name`."""
        body: dict[str, Any] = {"schema": schema}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if references:
            body["references"] = [{"name": self.reference_name, "subject": subject, "version": version}
                                  for subject, version in references]
        return body


def _json(value: dict[str, Any]) -> str:
    return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", **value})


def _proto(body: str) -> str:
    return f'syntax = "proto3";\npackage test;\n\n{body}\n'


SAMPLES = {
    "AVRO": Samples(
        "AVRO",
        v1=record_schema("User", {"name": "name", "type": "string"}),
        v2=record_schema("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}),
        other=record_schema("Other", {"name": "x", "type": "long"}),
        dependency=record_schema("Address", {"name": "city", "type": "string"}),
        reference_name="test.Address",
        referencing=record_schema("Order", {"name": "to", "type": "test.Address"}),
        invalid='{"type": "record", "fields": []}',  # no name
        unnormalized=json.dumps({"type": "record", "name": "Aliased", "aliases": ["b", "a"], "fields": []}),
    ),
    "JSON": Samples(
        "JSON",
        v1=_json({"type": "object", "additionalProperties": False, "properties": {"name": {"type": "string"}}}),
        v2=_json({"type": "object", "additionalProperties": False,
                  "properties": {"name": {"type": "string"}, "email": {"type": "string"}}}),
        other=_json({"type": "string"}),
        dependency=_json({"type": "object", "properties": {"city": {"type": "string"}}}),
        reference_name="address.json",
        referencing=_json({"type": "object", "properties": {"to": {"$ref": "address.json"}}}),
        invalid=_json({"type": 5}),  # not a JSON Schema type
        unnormalized=_json({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}}),
    ),
    "PROTOBUF": Samples(
        "PROTOBUF",
        v1=_proto("message User {\n  string name = 1;\n}"),
        v2=_proto("message User {\n  string name = 1;\n  int32 age = 2;\n}"),
        other=_proto("message Other {\n  int64 x = 1;\n}"),
        dependency='syntax = "proto3";\npackage dep;\n\nmessage Address {\n  string city = 1;\n}\n',
        reference_name="dep/address.proto",
        referencing=_proto('import "dep/address.proto";\n\nmessage Order {\n  dep.Address to = 1;\n}'),
        invalid=_proto("message User {\n  string name = 1"),  # unclosed
        unnormalized=_proto('option java_package = "x";\noption go_package = "y";\n\nmessage Opt {\n  int32 x = 1;\n}'),
    ),
}
