"""Authorization end to end: a broker process with the standard authorizer, SASL_PLAINTEXT, SASL_SSL and SSL (client
certificates) listeners, two users and a super user. Admin clients of confluent-kafka and kafka-python manage ACLs
(which survive a restart), and real producers, consumers and transactional producers meet Kafka's authorization
errors; a broker without an authorizer answers the ACL APIs with SECURITY_DISABLED."""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KResourceType
from kafka.errors import SecurityDisabledError
from minibroker.protocol.frames import encode_request

from minibroker.testing import Broker
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_security import call, raw_login
from tests.tlsutil import TlsFiles

ADMIN, ADMIN_PASSWORD = "admin", "Admin-pw-3k9"
ALICE, ALICE_PASSWORD = "alice", "Alice-pw-7f3k"
BOB, BOB_PASSWORD = "bob", "Bob-pw-9q2z"
PASSWORDS = {ADMIN: ADMIN_PASSWORD, ALICE: ALICE_PASSWORD, BOB: BOB_PASSWORD}
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
TIMEOUT_S = 15
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, SECURITY_DISABLED = 31, 42, 53, 54


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("acls") / "data",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
        f"ssl.certificate.location={tls.server_cert}", f"ssl.key.location={tls.server_key}",
        f"ssl.ca.location={tls.ca}", "ssl.client.auth=requested",
        "sasl.users=" + ",".join(f"{user}:{password}" for user, password in PASSWORDS.items()),
        f"authorizer.class.name={STANDARD}", f"super.users=User:{ADMIN}", "num.partitions=1",
    )
    try:
        yield proc.start()
    finally:
        proc.stop()


def confluent(broker: BrokerProcess, tls: TlsFiles, user: str | None, listener: str = "SASL_PLAINTEXT", **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{broker.listener_ports[listener]}", "security.protocol": listener,
        "socket.timeout.ms": TIMEOUT_S * 1000,
    }
    if "SSL" in listener:
        settings["ssl.ca.location"] = str(tls.ca)
    if user is not None:
        settings.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": PASSWORDS[user]})
    return {**settings, **extra}


def kafka_python_admin(broker: BrokerProcess, user: str) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}", security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=PASSWORDS[user], request_timeout_ms=TIMEOUT_S * 1000,
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def grant(broker: BrokerProcess, tls: TlsFiles, *acls: AclBinding) -> None:
    admin = AdminClient(confluent(broker, tls, ADMIN, "SASL_SSL"))
    for future in admin.create_acls(list(acls), request_timeout=TIMEOUT_S).values():
        assert future.result(timeout=TIMEOUT_S) is None


def topic_acl(name: str, user: str, operation: AclOperation, permission: AclPermissionType = AclPermissionType.ALLOW,
              pattern: ResourcePatternType = ResourcePatternType.LITERAL, host: str = "*",
              kind: ResourceType = ResourceType.TOPIC) -> AclBinding:
    return AclBinding(kind, name, pattern, user if user.startswith("User:") else f"User:{user}", host, operation, permission)


def create_topic(broker: BrokerProcess, tls: TlsFiles, name: str) -> None:
    admin = AdminClient(confluent(broker, tls, ADMIN))
    admin.create_topics([NewTopic(name, num_partitions=1)], request_timeout=TIMEOUT_S)[name].result(timeout=TIMEOUT_S)


def produce_one(settings: dict[str, Any], topic: str) -> KafkaError | None:
    """The delivery report's error of one message (None: delivered)."""
    producer = Producer({**settings, "message.timeout.ms": 5000})
    reports: list[KafkaError | None] = []
    producer.produce(topic, b"value", on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(TIMEOUT_S) == 0
    return reports[0]


def raw_admin(broker: BrokerProcess, user: str = ADMIN) -> RawConnection:
    conn = RawConnection(f"127.0.0.1:{broker.listener_ports['SASL_PLAINTEXT']}")
    assert raw_login(conn, "PLAIN", user, PASSWORDS[user])["error_code"] == 0
    return conn


def creation(name: str, resource_type: int = 2, pattern: int = 3, principal: str = "User:alice", operation: int = 3,
             permission: int = 3) -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": operation, "permission_type": permission}


def test_admin_clients_manage_acls_that_survive_a_restart(secured: BrokerProcess, tls: TlsFiles) -> None:
    topic, prefix, group = unique("admin"), unique("pre"), unique("group")
    grant(
        secured, tls,
        topic_acl(topic, ALICE, AclOperation.WRITE),
        topic_acl(prefix, BOB, AclOperation.READ, AclPermissionType.DENY, ResourcePatternType.PREFIXED),
        topic_acl(group, BOB, AclOperation.READ, kind=ResourceType.GROUP),
    )
    kp_admin = kafka_python_admin(secured, ADMIN)
    try:
        kp_admin.create_acls([ACL(f"User:{ALICE}", "127.0.0.1", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                                  ResourcePattern(KResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))])
    finally:
        kp_admin.close()
    secured.restart()
    confluent_admin = AdminClient(confluent(secured, tls, ADMIN, "SASL_SSL"))
    on_topic = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None, AclOperation.ANY, AclPermissionType.ANY)
    found = confluent_admin.describe_acls(on_topic, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert {(acl.principal, acl.host, acl.operation) for acl in found} == {
        (f"User:{ALICE}", "*", AclOperation.WRITE), (f"User:{ALICE}", "127.0.0.1", AclOperation.DESCRIBE),
    }
    matching_prefix = AclBindingFilter(ResourceType.TOPIC, prefix + "-x", ResourcePatternType.MATCH, None, None,
                                       AclOperation.ANY, AclPermissionType.DENY)
    [denied] = confluent_admin.describe_acls(matching_prefix, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert (denied.name, denied.resource_pattern_type, denied.principal) == (prefix, ResourcePatternType.PREFIXED, f"User:{BOB}")

    kp_admin = kafka_python_admin(secured, ADMIN)
    try:
        acls, error = kp_admin.describe_acls(ACLFilter(f"User:{BOB}", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                       ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY)))
        assert error.errno == 0
        assert {(acl.resource_pattern.resource_name, acl.permission_type) for acl in acls} >= {
            (prefix, ACLPermissionType.DENY), (group, ACLPermissionType.ALLOW),
        }
        [(_, deleted, error)] = kp_admin.delete_acls([ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                                ResourcePatternFilter(KResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))])
        assert error.errno == 0 and len(deleted) == 2
    finally:
        kp_admin.close()
    assert confluent_admin.describe_acls(on_topic, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S) == []
    secured.restart()
    assert AdminClient(confluent(secured, tls, ADMIN)).describe_acls(on_topic, request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S) == []


def test_acl_requests_are_checked_as_kafka_checks_them(secured: BrokerProcess) -> None:
    name = unique("checked")
    with raw_admin(secured) as conn:
        answer = call(conn, CREATE_ACLS, 3, {"creations": [
            creation(name), creation("other", resource_type=4), creation(""), creation(name, pattern=2),
            creation(name, principal="alice"), creation(name, operation=1), creation("kafka-cluster", resource_type=4, operation=7),
        ]})
        assert [(r["error_code"], r["error_message"]) for r in answer["results"]] == [
            (0, None),
            (INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
            (INVALID_REQUEST, "Invalid empty resource name"),
            (INVALID_REQUEST, "Invalid patternType MATCH"),
            (INVALID_REQUEST, "expected a string in format principalType:principalName but got alice"),
            (INVALID_REQUEST, "Invalid operation ANY"),
            (0, None),
        ]
        described = call(conn, DESCRIBE_ACLS, 3, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": "User:alice",
            "host_filter": None, "operation": 1, "permission_type": 1,
        })
        assert described["error_code"] == 0
        assert {(r["resource_type"], r["resource_name"]) for r in described["resources"]} >= {(2, name), (4, "kafka-cluster")}
        deleted = call(conn, DELETE_ACLS, 2, {"filters": [{
            "resource_type_filter": 4, "resource_name_filter": "kafka-cluster", "pattern_type_filter": 3,
            "principal_filter": "User:alice", "host_filter": "*", "operation": 7, "permission_type": 3,
        }]})
        [result] = deleted["filter_results"]
        assert result["error_code"] == 0 and [(a["resource_type"], a["operation"]) for a in result["matching_acls"]] == [(4, 7)]
    with raw_admin(secured, BOB) as conn:  # neither ALTER nor DESCRIBE on the cluster
        answer = call(conn, CREATE_ACLS, 3, {"creations": [creation(unique("x"))]})
        assert answer["results"][0]["error_code"] == CLUSTER_AUTHORIZATION_FAILED
        assert call(conn, DESCRIBE_ACLS, 1, {
            "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
            "host_filter": None, "operation": 1, "permission_type": 1,
        })["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    with raw_admin(secured) as conn:  # an operation code Kafka does not know: its request classes refuse the request
        conn.send(encode_request(CREATE_ACLS, 3, 7, "raw", {"creations": [creation(name, operation=42)]}))
        assert conn.closed_by_peer()
    assert "request refused: CreatableAcls contain unknown elements" in secured.log_text()


def test_producer_needs_write_and_a_deny_for_its_host_wins(secured: BrokerProcess, tls: TlsFiles) -> None:
    prefix = unique("orders")
    topic = f"{prefix}-eu"
    create_topic(secured, tls, topic)
    grant(secured, tls, topic_acl(topic, ALICE, AclOperation.DESCRIBE))
    settings = confluent(secured, tls, ALICE, "SASL_SSL")
    assert produce_one(settings, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(secured, tls, topic_acl(prefix, ALICE, AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED))
    assert produce_one(settings, topic) is None
    assert produce_one(confluent(secured, tls, ALICE), topic) is None  # SASL_PLAINTEXT: the same principal
    grant(secured, tls, topic_acl(topic, ALICE, AclOperation.WRITE, AclPermissionType.DENY, host="127.0.0.1"))
    assert produce_one(settings, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    denials = [line for line in secured.log_text().splitlines() if f"User:{ALICE} is Denied operation = WRITE" in line and topic in line]
    assert len(denials) == 1, denials  # once per principal, operation and resource, however many requests


def test_consumer_without_read_on_its_group(secured: BrokerProcess, tls: TlsFiles) -> None:
    topic, group = unique("events"), unique("readers")
    create_topic(secured, tls, topic)
    grant(secured, tls, topic_acl(topic, BOB, AclOperation.READ))
    consumer = Consumer(confluent(secured, tls, BOB, **{"group.id": group, "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        error = None
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_metadata_leaves_out_topics_the_user_may_not_describe(secured: BrokerProcess, tls: TlsFiles) -> None:
    hidden, visible = unique("hidden"), unique("visible")
    create_topic(secured, tls, hidden)
    create_topic(secured, tls, visible)
    grant(secured, tls, topic_acl(visible, BOB, AclOperation.READ))
    topics = AdminClient(confluent(secured, tls, BOB)).list_topics(timeout=TIMEOUT_S).topics
    assert visible in topics and hidden not in topics
    admin_topics = AdminClient(confluent(secured, tls, ADMIN)).list_topics(timeout=TIMEOUT_S).topics
    assert {hidden, visible} <= set(admin_topics)
    named = AdminClient(confluent(secured, tls, BOB)).list_topics(hidden, timeout=TIMEOUT_S).topics[hidden]
    assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_transactional_producer_without_write_on_its_id(secured: BrokerProcess, tls: TlsFiles) -> None:
    topic, transactional_id = unique("txn"), unique("tx")
    create_topic(secured, tls, topic)
    grant(secured, tls, topic_acl(topic, ALICE, AclOperation.WRITE),
          topic_acl(transactional_id, ALICE, AclOperation.DESCRIBE, kind=ResourceType.TRANSACTIONAL_ID))
    producer = Producer(confluent(secured, tls, ALICE, **{"transactional.id": transactional_id}))
    with pytest.raises(KafkaException) as failure:
        producer.init_transactions(TIMEOUT_S)
    assert failure.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(secured, tls, topic_acl(transactional_id, ALICE, AclOperation.WRITE, kind=ResourceType.TRANSACTIONAL_ID))
    producer = Producer(confluent(secured, tls, ALICE, **{"transactional.id": transactional_id}))
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(TIMEOUT_S)


def test_client_certificate_subject_is_the_principal(secured: BrokerProcess, tls: TlsFiles) -> None:
    topic = unique("certified")
    create_topic(secured, tls, topic)
    settings = confluent(secured, tls, None, "SSL", **{
        "ssl.certificate.location": str(tls.client_cert), "ssl.key.location": str(tls.client_key),
    })
    assert produce_one(settings, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(secured, tls, topic_acl(topic, "User:CN=test-client", AclOperation.WRITE))
    assert produce_one(settings, topic) is None
    anonymous = confluent(secured, tls, None, "SSL")  # no certificate: User:ANONYMOUS, which no ACL names
    assert produce_one(anonymous, topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_without_an_authorizer_the_acl_apis_answer_security_disabled() -> None:
    with Broker() as broker:
        with RawConnection(broker.bootstrap_servers) as conn:
            assert call(conn, DESCRIBE_ACLS, 3, {
                "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
                "host_filter": None, "operation": 1, "permission_type": 1,
            })["error_code"] == SECURITY_DISABLED
            results = call(conn, CREATE_ACLS, 3, {"creations": [creation("t"), creation("u")]})["results"]
            assert [r["error_code"] for r in results] == [SECURITY_DISABLED] * 2
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        acl = topic_acl("orders", ALICE, AclOperation.WRITE)
        with pytest.raises(KafkaException) as failure:
            admin.create_acls([acl], request_timeout=TIMEOUT_S)[acl].result(timeout=TIMEOUT_S)
        assert failure.value.args[0].code() == KafkaError.SECURITY_DISABLED
        kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=TIMEOUT_S * 1000)
        try:
            with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the broker"):
                kp_admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                 ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY)))
        finally:
            kp_admin.close()
