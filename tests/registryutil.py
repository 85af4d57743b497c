"""The schema registry tests' helpers: raw HTTP calls (urllib: no client library between the test and the wire),
sample schemas of every type, the broker and confluent-kafka client fixtures the client tests share, and the
registry's level mechanism applied to one schema type for the unit tests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.serialization import MessageField, SerializationContext

from minibroker.registry.formats import FORMATS
from minibroker.registry.levels import incompatibilities
from minibroker.registry.parsed import ParsedSchema
from minibroker.testing import Broker

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    """One broker with the registry for a test module (import this fixture into the module to use it)."""
    with Broker(schema_registry=True) as running:
        yield running


@pytest.fixture
def registry(broker: Broker) -> SchemaRegistryClient:
    """confluent-kafka's client on the module's broker, emptied for each test."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    broker.reset()
    return SchemaRegistryClient({"url": broker.schema_registry_url})


def round_trip(broker: Broker, topic: str, serializer: Callable[[Any, SerializationContext], bytes],
               deserializer: Callable[[bytes, SerializationContext], Any], values: list[Any]) -> list[Any]:
    """Produces the values serialized, then consumes and deserializes as many."""
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value in values:
        producer.produce(topic, value=serializer(value, context))
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"{topic}-readers",
                         "auto.offset.reset": "earliest"})
    received = []
    try:
        consumer.subscribe([topic])
        while len(received) < len(values):
            message = consumer.poll(30)
            assert message is not None and message.error() is None
            received.append(deserializer(message.value(), context))
    finally:
        consumer.close()
    return received


def checker(schema_type: str) -> Callable[[str, ParsedSchema, Sequence[ParsedSchema]], list[str]]:
    """``check(level, new, previous)``: the messages for why `new` may not follow `previous` (oldest first) at
    `level`, through the one level mechanism the registry uses."""
    schema_format = FORMATS[schema_type]

    def check(level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]) -> list[str]:
        return incompatibilities(level, previous, lambda mode, old: schema_format.check(mode, new, old))

    return check


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
