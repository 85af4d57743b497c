"""JSON schemas through the broker's schema registry: confluent-kafka's SchemaRegistryClient, JSONSerializer and
JSONDeserializer round-trip records through the broker with an auto-registered schema; an evolved schema registers
under BACKWARD and an incompatible one gets HTTP 409 / 40901; a schema referencing another subject works; and the
REST answers Confluent gives for JSON (verbose messages, invalid schemas, normalize, another type before)."""

from __future__ import annotations

import json

import pytest

from minibroker.testing import Broker
from tests.registryutil import broker, call, registry, round_trip  # noqa: F401 (fixtures)

pytest.importorskip("jsonschema", reason="JSONSerializer needs jsonschema (pip install 'confluent-kafka[json]')")
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

DRAFT7 = "http://json-schema.org/draft-07/schema#"
USER_V1 = {"$schema": DRAFT7, "title": "User", "type": "object", "additionalProperties": False,
           "properties": {"name": {"type": "string"}, "favorite": {"type": "integer"}}, "required": ["name"]}
USER_V2 = {**USER_V1, "properties": {**USER_V1["properties"], "email": {"type": "string"}}}
USER_BAD = {**USER_V2, "properties": {**USER_V2["properties"], "age": {"type": "integer"}},
            "required": ["name", "age"]}
ADDRESS = {"$schema": DRAFT7, "type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}
CUSTOMER = {"$schema": DRAFT7, "type": "object",
            "properties": {"name": {"type": "string"}, "address": {"$ref": "address.json"}}}


def test_json_records_round_trip_with_auto_registration(broker: Broker, registry: SchemaRegistryClient) -> None:
    users = [{"name": f"user-{i}", "favorite": i} for i in range(5)]
    received = round_trip(broker, "users", JSONSerializer(json.dumps(USER_V1), registry),
                          JSONDeserializer(None, schema_registry_client=registry), users)
    assert received == users
    registered = registry.get_latest_version("users-value")
    assert registered.version == 1 and registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str) == USER_V1
    with pytest.raises(Exception, match="is not of type 'string'"):  # the serializer validates against the schema
        JSONSerializer(json.dumps(USER_V1), registry)({"name": 1}, SerializationContext("users", MessageField.VALUE))


def test_an_evolved_schema_registers_and_an_incompatible_one_is_refused(registry: SchemaRegistryClient) -> None:
    subject = "evolving-value"
    first = registry.register_schema(subject, Schema(json.dumps(USER_V1), "JSON"))
    second = registry.register_schema(subject, Schema(json.dumps(USER_V2), "JSON"))
    assert second != first and registry.get_versions(subject) == [1, 2]
    assert registry.register_schema(subject, Schema(json.dumps(USER_V2, indent=2), "JSON")) == second  # same schema
    assert registry.test_compatibility(subject, Schema(json.dumps(USER_BAD), "JSON")) is False
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(subject, Schema(json.dumps(USER_BAD), "JSON"))
    assert refused.value.http_status_code == 409 and refused.value.error_code == 40901
    assert "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in str(refused.value)
    registry.set_compatibility(subject, "NONE")
    assert registry.register_schema(subject, Schema(json.dumps(USER_BAD), "JSON")) > second


def test_a_schema_referencing_another_subject(broker: Broker, registry: SchemaRegistryClient) -> None:
    registry.register_schema("address", Schema(json.dumps(ADDRESS), "JSON"))
    customer = Schema(json.dumps(CUSTOMER), "JSON", [SchemaReference("address.json", "address", 1)])
    customers = [{"name": "ada", "address": {"street": "Main St"}}]
    received = round_trip(broker, "customers", JSONSerializer(customer, registry),
                          JSONDeserializer(None, schema_registry_client=registry), customers)
    assert received == customers
    registered = registry.get_latest_version("customers-value")
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [("address.json", "address", 1)]
    url = broker.schema_registry_url
    assert call(url, "GET", "/subjects/address/versions/1/referencedby") == (200, [registered.schema_id])
    # The referenced schema is compared through the reference: a required street number breaks BACKWARD.
    stricter = {**ADDRESS, "properties": {**ADDRESS["properties"], "number": {"type": "integer"}},
                "required": ["street", "number"]}
    registry.set_compatibility("address", "NONE")
    registry.register_schema("address", Schema(json.dumps(stricter), "JSON"))
    changed = {"schema": json.dumps(CUSTOMER), "schemaType": "JSON",
               "references": [{"name": "address.json", "subject": "address", "version": 2}]}
    status, answer = call(url, "POST", "/compatibility/subjects/customers-value/versions?verbose=true", changed)
    assert status == 200 and answer["is_compatible"] is False
    assert answer["messages"][0] == (
        '{errorType:"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", description:"The new schema has an open content '
        "model and has a property or item at path '#/properties/address/properties/number' which is missing in the "
        "old schema'}")
    missing = {**changed, "references": []}
    status, answer = call(url, "POST", "/subjects/customers-value/versions", missing)
    assert (status, answer["error_code"]) == (422, 42201)


def test_rest_answers_for_json_schemas(broker: Broker, registry: SchemaRegistryClient) -> None:
    url = broker.schema_registry_url
    status, types = call(url, "GET", "/schemas/types")
    assert status == 200 and "JSON" in types
    spaced = json.dumps(USER_V1, indent=2)
    assert call(url, "POST", "/subjects/u/versions", {"schema": spaced, "schemaType": "JSON"}) == (200, {"id": 1})
    status, version = call(url, "GET", "/subjects/u/versions/1")
    assert status == 200 and version["schemaType"] == "JSON" and version["schema"] == json.dumps(
        USER_V1, separators=(",", ":"))
    assert call(url, "POST", "/subjects/u", {"schema": json.dumps(USER_V1), "schemaType": "JSON"})[1]["id"] == 1
    status, answer = call(url, "POST", "/compatibility/subjects/u/versions/latest?verbose=true",
                          {"schema": json.dumps(USER_BAD), "schemaType": "JSON"})
    assert status == 200 and answer["is_compatible"] is False
    assert answer["messages"][-2:] == ["{oldSchemaVersion: 1}", "{oldSchema: '" + version["schema"] + "'}"]
    for bad in ('{"type": "text"}', '{"type": "object"', '"object"', '{"properties": {"a": {"$ref": "#/nope"}}}'):
        status, answer = call(url, "POST", "/subjects/bad/versions", {"schema": bad, "schemaType": "JSON"})
        assert (status, answer["error_code"]) == (422, 42201), bad
    # ?normalize=true keeps (and finds) the schema with its keys sorted.
    reordered = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "number"}}}
    body = {"schema": json.dumps(reordered), "schemaType": "JSON"}
    assert call(url, "POST", "/subjects/n/versions?normalize=true", body)[0] == 200
    assert call(url, "GET", "/subjects/n/versions/1")[1]["schema"] == (
        '{"properties":{"a":{"type":"number"},"b":{"type":"string"}},"type":"object"}')
    assert call(url, "POST", "/subjects/n?normalize=true", body)[1]["version"] == 1
    assert call(url, "POST", "/subjects/n", body)[0] == 404


def test_a_previous_version_of_another_type(broker: Broker, registry: SchemaRegistryClient) -> None:
    url = broker.schema_registry_url
    avro = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})
    assert call(url, "POST", "/subjects/mixed/versions", {"schema": avro})[0] == 200
    as_json = {"schema": json.dumps({"type": "object"}), "schemaType": "JSON"}
    status, answer = call(url, "POST", "/subjects/mixed/versions", as_json)
    assert (status, answer["error_code"]) == (409, 40901)
    assert answer["message"].endswith("details: [Incompatible because of different schema type]")
    assert call(url, "POST", "/compatibility/subjects/mixed/versions?verbose=true", as_json)[1] == {
        "is_compatible": False, "messages": ["Incompatible because of different schema type"]}
    # Only the newest version counts below a transitive level: once a JSON version follows, JSON may follow it.
    assert call(url, "PUT", "/config/mixed", {"compatibility": "NONE"})[0] == 200
    assert call(url, "POST", "/subjects/mixed/versions", as_json)[0] == 200
    assert call(url, "PUT", "/config/mixed", {"compatibility": "BACKWARD"})[0] == 200
    newer = {"schema": json.dumps({"type": "object", "title": "v3"}), "schemaType": "JSON"}
    assert call(url, "POST", "/compatibility/subjects/mixed/versions", newer)[1] == {"is_compatible": True}
    assert call(url, "PUT", "/config/mixed", {"compatibility": "BACKWARD_TRANSITIVE"})[0] == 200
    assert call(url, "POST", "/compatibility/subjects/mixed/versions", newer)[1] == {"is_compatible": False}


def test_a_serializer_that_does_not_register_looks_the_schema_up(registry: SchemaRegistryClient) -> None:
    topic = "lookups"
    context = SerializationContext(topic, MessageField.VALUE)
    registered = registry.register_schema(f"{topic}-value", Schema(json.dumps(USER_V1), "JSON"))
    # Spaced differently: the lookup compares canonical forms.
    serializer = JSONSerializer(json.dumps(USER_V1, indent=4), registry, conf={"auto.register.schemas": False})
    data = serializer({"name": "a", "favorite": 1}, context)
    assert int.from_bytes(data[1:5], "big") == registered
    unknown = JSONSerializer(json.dumps(USER_V2), registry, conf={"auto.register.schemas": False})
    with pytest.raises(SchemaRegistryError) as missing:
        unknown({"name": "c"}, context)
    assert missing.value.error_code == 40403
