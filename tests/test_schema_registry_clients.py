"""confluent-kafka's SchemaRegistryClient, AvroSerializer and AvroDeserializer against the broker's schema registry:
records round-trip through the broker with auto-registered schemas, an evolved schema registers under BACKWARD, an
incompatible one gets the client's 409 error; a schema referencing another subject serializes and deserializes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minibroker.testing import Broker
from tests.registryutil import broker, registry, round_trip  # noqa: F401 (fixtures)

pytest.importorskip("fastavro", reason="AvroSerializer needs fastavro (pip install 'confluent-kafka[avro]')")
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

USER_V1 = {"type": "record", "name": "User", "namespace": "test",
           "fields": [{"name": "name", "type": "string"}, {"name": "favorite", "type": "int"}]}
USER_V2 = {**USER_V1, "fields": USER_V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}]}
USER_BAD = {**USER_V1, "fields": USER_V1["fields"] + [{"name": "age", "type": "int"}]}


def test_avro_records_round_trip_with_auto_registration(broker: Broker, registry: SchemaRegistryClient) -> None:
    topic = "users"
    users = [{"name": f"user-{i}", "favorite": i} for i in range(5)]
    received = round_trip(broker, topic, AvroSerializer(registry, json.dumps(USER_V1)), AvroDeserializer(registry), users)
    assert registry.get_subjects() == [f"{topic}-value"]
    assert received == users
    registered = registry.get_latest_version(f"{topic}-value")
    assert registered.version == 1 and json.loads(registered.schema.schema_str) == USER_V1


def test_an_evolved_schema_registers_and_an_incompatible_one_is_refused(registry: SchemaRegistryClient) -> None:
    subject = "evolving-value"
    first = registry.register_schema(subject, Schema(json.dumps(USER_V1), "AVRO"))
    second = registry.register_schema(subject, Schema(json.dumps(USER_V2), "AVRO"))
    assert second != first
    assert registry.get_versions(subject) == [1, 2]
    assert registry.test_compatibility(subject, Schema(json.dumps(USER_BAD), "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(subject, Schema(json.dumps(USER_BAD), "AVRO"))
    assert refused.value.http_status_code == 409 and refused.value.error_code == 40901
    assert registry.get_compatibility() == "BACKWARD"
    registry.set_compatibility(subject, "NONE")
    assert registry.register_schema(subject, Schema(json.dumps(USER_BAD), "AVRO")) > second


def test_the_client_sees_errors_and_deletes(registry: SchemaRegistryClient) -> None:
    with pytest.raises(SchemaRegistryError) as missing:
        registry.get_latest_version("nobody")
    assert (missing.value.http_status_code, missing.value.error_code) == (404, 40401)
    schema_id = registry.register_schema("s", Schema(json.dumps(USER_V1), "AVRO"))
    assert registry.get_schema(schema_id).schema_str == registry.get_version("s", 1).schema.schema_str
    assert registry.delete_subject("s") == [1]
    assert registry.delete_subject("s", permanent=True) == [1]
    assert registry.get_subjects() == []


PLUGIN_USER_TESTS = '''
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient


def test_registry_fixture(kafka_schema_registry_url, kafka_bootstrap):
    client = SchemaRegistryClient({"url": kafka_schema_registry_url})
    schema_id = client.register_schema("plugin-value", Schema('"string"', "AVRO"))
    assert client.get_schema(schema_id).schema_str == '"string"'
    print("RESULT url=" + kafka_schema_registry_url)
'''


def test_the_pytest_plugin_serves_a_registry_fixture(tmp_path: Path) -> None:
    from tests.test_plugin import run_user_tests

    result = run_user_tests(tmp_path, tests=PLUGIN_USER_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "RESULT url=http://127.0.0.1:" in result.stdout


def test_a_serializer_that_does_not_register_looks_the_schema_up(registry: SchemaRegistryClient) -> None:
    topic = "lookups"
    context = SerializationContext(topic, MessageField.VALUE)
    registered = registry.register_schema(f"{topic}-value", Schema(json.dumps(USER_V1), "AVRO"))
    serializer = AvroSerializer(registry, json.dumps(USER_V1), conf={"auto.register.schemas": False})
    data = serializer({"name": "a", "favorite": 1}, context)
    assert int.from_bytes(data[1:5], "big") == registered
    latest = AvroSerializer(registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    assert latest({"name": "b", "favorite": 2}, context)[1:5] == data[1:5]
    unknown = AvroSerializer(registry, json.dumps(USER_V2), conf={"auto.register.schemas": False})
    with pytest.raises(SchemaRegistryError) as missing:
        unknown({"name": "c", "favorite": 3, "email": None}, context)
    assert missing.value.error_code == 40403


def test_an_avro_schema_referencing_another_subject(broker: Broker, registry: SchemaRegistryClient) -> None:
    address = {"type": "record", "name": "Address", "namespace": "test", "fields": [{"name": "city", "type": "string"}]}
    order = {"type": "record", "name": "Order", "namespace": "test",
             "fields": [{"name": "id", "type": "long"}, {"name": "to", "type": "test.Address"}]}
    registry.register_schema("address", Schema(json.dumps(address), "AVRO"))
    references = [SchemaReference("test.Address", "address", 1)]
    order_id = registry.register_schema("orders-value", Schema(json.dumps(order), "AVRO", references))
    assert registry.get_schema(order_id).references[0].subject == "address"
    assert registry.get_referenced_by("address", 1) == [order_id]
    serializer = AvroSerializer(registry, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    deserializer = AvroDeserializer(registry)
    context = SerializationContext("orders", MessageField.VALUE)
    value = {"id": 7, "to": {"city": "Lyon"}}
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce("orders", value=serializer(value, context))
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "orders",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["orders"])
        message = consumer.poll(30)
        assert message is not None and message.error() is None
        assert int.from_bytes(message.value()[1:5], "big") == order_id
        assert deserializer(message.value(), context) == value
    finally:
        consumer.close()
