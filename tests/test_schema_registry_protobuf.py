"""confluent-kafka's SchemaRegistryClient, ProtobufSerializer and ProtobufDeserializer against the broker's schema
registry: records round-trip through the broker with auto-registered schemas (the serializer registers the imported
file as a reference, and the deserializer reads both back as ``?format=serialized``), an evolved schema registers
under BACKWARD and an incompatible one gets 409/40901. The message classes are built at test time from
FileDescriptorProtos (no protoc output committed)."""

from __future__ import annotations

from typing import Any

import pytest

from minibroker.testing import Broker
from tests.registryutil import broker, call, registry, round_trip  # noqa: F401 (fixtures)

pytest.importorskip("google.type", reason="ProtobufSerializer needs confluent-kafka[protobuf] (googleapis-common-protos)")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto


def user_classes(*fields: tuple[str, int, int, str]) -> Any:
    """test.User (fields: name, number, type, type name) in test/user.proto, importing test.Address from
    test/address.proto, built into a fresh pool."""
    address = descriptor_pb2.FileDescriptorProto(name="test/address.proto", package="test", syntax="proto3")
    address.message_type.add(name="Address").field.add(
        name="street", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    user = descriptor_pb2.FileDescriptorProto(
        name="test/user.proto", package="test", syntax="proto3", dependency=["test/address.proto"])
    message = user.message_type.add(name="User")
    for name, number, kind, type_name in fields:
        added = message.field.add(name=name, number=number, type=kind, label=F.LABEL_OPTIONAL)
        if type_name:
            added.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(address)
    pool.Add(user)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("test.User"))


V1 = (("name", 1, F.TYPE_STRING, ""), ("favorite", 2, F.TYPE_INT32, ""), ("home", 3, F.TYPE_MESSAGE, ".test.Address"))
V2 = V1 + (("email", 4, F.TYPE_STRING, ""),)
BAD = (("name", 1, F.TYPE_STRING, ""), ("favorite", 2, F.TYPE_STRING, ""), ("home", 3, F.TYPE_MESSAGE, ".test.Address"))


def test_protobuf_records_round_trip_with_a_referenced_file(broker: Broker, registry: SchemaRegistryClient) -> None:
    topic = "users"
    user = user_classes(*V1)
    users = [user(name=f"user-{i}", favorite=i, home={"street": f"{i} Main St"}) for i in range(5)]
    received = round_trip(broker, topic, ProtobufSerializer(user, registry), ProtobufDeserializer(user, {}, registry),
                          users)
    assert sorted(registry.get_subjects()) == ["test/address.proto", f"{topic}-value"]
    assert received == users
    registered = registry.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [
        ("test/address.proto", "test/address.proto", 1)]
    assert registered.schema.schema_str == (
        'syntax = "proto3";\npackage test;\n\nimport "test/address.proto";\n\nmessage User {\n'
        "  string name = 1;\n  int32 favorite = 2;\n  .test.Address home = 3;\n}\n")


def test_an_evolved_schema_registers_and_an_incompatible_one_is_refused(registry: SchemaRegistryClient) -> None:
    topic = "evolving"
    context = SerializationContext(topic, MessageField.VALUE)
    first = user_classes(*V1)
    ProtobufSerializer(first, registry)(first(name="a"), context)
    second = user_classes(*V2)
    ProtobufSerializer(second, registry)(second(name="b", email="b@example.com"), context)
    assert registry.get_versions(f"{topic}-value") == [1, 2]
    bad = user_classes(*BAD)
    with pytest.raises(SchemaRegistryError) as refused:
        ProtobufSerializer(bad, registry)(bad(name="c"), context)
    assert refused.value.http_status_code == 409 and refused.value.error_code == 40901
    assert "FIELD_SCALAR_KIND_CHANGED" in str(refused.value) and "#/User/2" in str(refused.value)
    registry.set_compatibility(f"{topic}-value", "NONE")
    ProtobufSerializer(bad, registry)(bad(name="c"), context)
    assert registry.get_versions(f"{topic}-value") == [1, 2, 3]


def test_normalizing_serializer_registers_the_normalized_form(registry: SchemaRegistryClient) -> None:
    topic = "normalized"
    context = SerializationContext(topic, MessageField.VALUE)
    user = user_classes(*reversed(V1))  # fields declared out of order: normalizing sorts them
    data = ProtobufSerializer(user, registry, {"normalize.schemas": True})(user(name="n", favorite=1), context)
    assert ProtobufDeserializer(user, {}, registry)(data, context) == user(name="n", favorite=1)
    assert registry.get_latest_version(f"{topic}-value").schema.schema_str == (
        'syntax = "proto3";\npackage test;\n\nimport "test/address.proto";\n\nmessage User {\n'
        "  string name = 1;\n  int32 favorite = 2;\n  .test.Address home = 3;\n}\n")
    in_order = user_classes(*V1)
    ProtobufSerializer(in_order, registry, {"normalize.schemas": True})(in_order(name="m"), context)
    assert registry.get_versions(f"{topic}-value") == [1]  # the same schema once normalized


def test_text_and_serialized_forms_of_one_schema_share_an_id(broker: Broker) -> None:
    url = broker.schema_registry_url
    text = 'syntax = "proto3";\npackage test;\n\nmessage Point {\n  int32 x = 1;\n  int32 y = 2;\n}\n'
    status, registered = call(url, "POST", "/subjects/points/versions", {"schema": text, "schemaType": "PROTOBUF"})
    assert status == 200
    status, served = call(url, "GET", f"/schemas/ids/{registered['id']}?format=serialized")
    assert status == 200 and served["schemaType"] == "PROTOBUF"
    assert call(url, "POST", "/subjects/points/versions", {"schema": served["schema"], "schemaType": "PROTOBUF"}) == (
        200, registered)
    status, body = call(url, "POST", "/subjects/points/versions", {"schema": "message {", "schemaType": "PROTOBUF"})
    assert status == 422 and body["error_code"] == 42201
