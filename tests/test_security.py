"""TLS and SASL against a broker process with four listeners side by side (PLAINTEXT, SSL, SASL_PLAINTEXT,
SASL_SSL, plus a renamed plaintext one with an advertised address): real clients produce and consume on
each, wrong passwords fail with SASL_AUTHENTICATION_FAILED, unauthenticated requests close the connection,
Metadata names the listener a client came in on, and no password ever reaches the broker log."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer
from kafka.net.sasl.scram import ScramClient
from minibroker.protocol.frames import decode_response, encode_request

from tests.brokerproc import BrokerProcess
from tests.clientutil import (
    Deadline,
    RawConnection,
    check_round_trip,
    confluent_consume,
    confluent_create_topic,
    confluent_produce,
    counts_by_partition,
    make_messages,
)
from tests.test_clients_kafka_python import consume as kafka_python_consume
from tests.test_clients_kafka_python import produce as kafka_python_produce
from tests.tlsutil import TlsFiles

ALICE, ALICE_PASSWORD = "alice", "Alice-pw-7f3k"
BOB, BOB_PASSWORD = "bob", "Bob:pw-9q2z"
WRONG_PASSWORD = "Guess-5x8y"
ADVERTISED_EXTERNAL = ("broker.example", 29092)
SASL_HANDSHAKE, API_VERSIONS, METADATA, SASL_AUTHENTICATE, DESCRIBE_CONFIGS = 17, 18, 3, 36, 32
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58
MESSAGES = 30


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("secure") / "data",
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
        "EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
        "EXTERNAL:PLAINTEXT",
        "advertised.listeners=EXTERNAL://{}:{}".format(*ADVERTISED_EXTERNAL),
        f"ssl.certificate.location={tls.server_cert}",
        f"ssl.key.location={tls.server_key}",
        f"sasl.users={ALICE}:{ALICE_PASSWORD},{BOB}:{BOB_PASSWORD}",
        "num.partitions=2",
    )
    try:
        yield proc.start()
    finally:
        proc.stop()


def address(broker: BrokerProcess, listener: str) -> str:
    return f"127.0.0.1:{broker.listener_ports[listener]}"


def client_tls(tls: TlsFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(tls.ca))


def raw(broker: BrokerProcess, listener: str, tls: TlsFiles | None = None) -> RawConnection:
    conn = RawConnection(address(broker, listener))
    if tls is not None:
        conn.sock = client_tls(tls).wrap_socket(conn.sock, server_hostname="localhost")
    return conn


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return decode_response(api_key, version, conn.request(api_key, version, body))[1]


def handshake(conn: RawConnection, mechanism: str, version: int = 1) -> dict[str, Any]:
    return call(conn, SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(conn: RawConnection, token: bytes) -> dict[str, Any]:
    return call(conn, SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def raw_login(conn: RawConnection, mechanism: str, user: str, password: str) -> dict[str, Any]:
    """A full SaslHandshake v1 + SaslAuthenticate exchange; the last SaslAuthenticate answer."""
    assert handshake(conn, mechanism)["error_code"] == 0
    if mechanism == "PLAIN":
        return authenticate(conn, plain_token(user, password))
    client = ScramClient(user, password, mechanism)
    first = authenticate(conn, client.first_message())
    if first["error_code"]:
        return first
    client.process_server_first_message(first["auth_bytes"])
    final = authenticate(conn, client.final_message())
    if final["error_code"] == 0:
        client.process_server_final_message(final["auth_bytes"])
    return final


def metadata_broker(conn: RawConnection) -> tuple[str, int]:
    [entry] = call(conn, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})["brokers"]
    return entry["host"], entry["port"]


def confluent_settings(broker: BrokerProcess, listener: str, tls: TlsFiles, mechanism: str | None = None,
                       password: str = ALICE_PASSWORD) -> dict[str, Any]:
    settings: dict[str, Any] = {"bootstrap.servers": address(broker, listener), "security.protocol": listener}
    if "SSL" in listener:
        settings["ssl.ca.location"] = str(tls.ca)
    if mechanism:
        settings.update({"sasl.mechanism": mechanism, "sasl.username": ALICE, "sasl.password": password})
    return settings


def kafka_python_settings(listener: str, tls: TlsFiles, mechanism: str | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"security_protocol": listener}
    if "SSL" in listener:
        settings["ssl_cafile"] = str(tls.ca)
    if mechanism:
        settings.update(sasl_mechanism=mechanism, sasl_plain_username=BOB, sasl_plain_password=BOB_PASSWORD)
    return settings


def confluent_round_trip(secure: BrokerProcess, topic: str, settings: dict[str, Any]) -> None:
    confluent_create_topic(secure.bootstrap, topic, partitions=2)
    messages = make_messages(MESSAGES)
    bootstrap = settings.pop("bootstrap.servers")
    placements = confluent_produce(bootstrap, topic, messages, **settings)
    counts = counts_by_partition(placements)
    check_round_trip(messages, placements, confluent_consume(bootstrap, topic, counts, partitions=2, **settings))


def kafka_python_round_trip(secure: BrokerProcess, topic: str, listener: str, settings: dict[str, Any]) -> None:
    confluent_create_topic(secure.bootstrap, topic, partitions=2)
    messages = make_messages(MESSAGES)
    placements = kafka_python_produce(address(secure, listener), topic, messages, **settings)
    counts = counts_by_partition(placements)
    consumed = kafka_python_consume(address(secure, listener), topic, counts, partitions=2, **settings)
    check_round_trip(messages, placements, consumed)


# ---- listeners and Metadata ----


def test_one_log_line_per_listener(secure: BrokerProcess) -> None:
    text = secure.log_text()
    assert secure.port == secure.listener_ports["PLAINTEXT"], "the readiness line names the first listener"
    for name, protocol in [("PLAINTEXT",) * 2, ("SSL",) * 2, ("SASL_PLAINTEXT",) * 2, ("SASL_SSL",) * 2, ("EXTERNAL", "PLAINTEXT")]:
        assert f"listener {name} ({protocol}) on 127.0.0.1:{secure.listener_ports[name]}" in text
    assert len(set(secure.listener_ports.values())) == 5


def test_metadata_advertises_the_listener_of_the_connection(secure: BrokerProcess, tls: TlsFiles) -> None:
    with raw(secure, "PLAINTEXT") as conn:
        assert metadata_broker(conn) == ("127.0.0.1", secure.listener_ports["PLAINTEXT"])
    with raw(secure, "EXTERNAL") as conn:
        assert metadata_broker(conn) == ADVERTISED_EXTERNAL
    with raw(secure, "SSL", tls) as conn:
        assert metadata_broker(conn) == ("127.0.0.1", secure.listener_ports["SSL"])
    with raw(secure, "SASL_SSL", tls) as conn:
        assert raw_login(conn, "SCRAM-SHA-256", ALICE, ALICE_PASSWORD)["error_code"] == 0
        assert metadata_broker(conn) == ("127.0.0.1", secure.listener_ports["SASL_SSL"])


# ---- real clients ----


def test_confluent_sasl_ssl_scram_sha_512(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    confluent_round_trip(secure, topic_name, confluent_settings(secure, "SASL_SSL", tls, "SCRAM-SHA-512"))


def test_kafka_python_sasl_ssl_scram_sha_512(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    kafka_python_round_trip(secure, topic_name, "SASL_SSL", kafka_python_settings("SASL_SSL", tls, "SCRAM-SHA-512"))


def test_confluent_ssl(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    confluent_round_trip(secure, topic_name, confluent_settings(secure, "SSL", tls))


def test_kafka_python_ssl(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    kafka_python_round_trip(secure, topic_name, "SSL", kafka_python_settings("SSL", tls))


def test_confluent_sasl_plaintext_plain(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    confluent_round_trip(secure, topic_name, confluent_settings(secure, "SASL_PLAINTEXT", tls, "PLAIN"))


def test_kafka_python_sasl_plaintext_scram_sha_256(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    kafka_python_round_trip(
        secure, topic_name, "SASL_PLAINTEXT", kafka_python_settings("SASL_PLAINTEXT", tls, "SCRAM-SHA-256")
    )


def test_kafka_python_v0_flow(secure: BrokerProcess, tls: TlsFiles, topic_name: str) -> None:
    """Told the broker is 0.10.2, kafka-python sends SaslHandshake v0 and then bare SASL tokens (KIP-43)."""
    confluent_create_topic(secure.bootstrap, topic_name, partitions=2)
    log_start = len(secure.log_text())
    consumer = KafkaConsumer(
        bootstrap_servers=address(secure, "SASL_PLAINTEXT"), api_version=(0, 10, 2), bootstrap_timeout_ms=10000,
        **kafka_python_settings("SASL_PLAINTEXT", tls, "PLAIN"),
    )
    try:
        assert consumer.partitions_for_topic(topic_name) == {0, 1}
    finally:
        consumer.close()
    assert f"authenticated as '{BOB}' with SASL PLAIN (v0 flow)" in secure.log_text()[log_start:]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_raw_v0_flow(secure: BrokerProcess, mechanism: str) -> None:
    with raw(secure, "SASL_PLAINTEXT") as conn:
        assert handshake(conn, mechanism, version=0)["error_code"] == 0
        if mechanism == "PLAIN":
            conn.send(struct.pack(">i", len(token := plain_token(ALICE, ALICE_PASSWORD))) + token)
            assert conn.recv_frame() == b""
        else:
            client = ScramClient(ALICE, ALICE_PASSWORD, mechanism)
            for step in (client.first_message, client.final_message):
                token = step()
                conn.send(struct.pack(">i", len(token)) + token)
                answer = conn.recv_frame()
                receive = client.process_server_first_message if step == client.first_message else client.process_server_final_message
                receive(answer)
        assert metadata_broker(conn) == ("127.0.0.1", secure.listener_ports["SASL_PLAINTEXT"])
    with raw(secure, "SASL_PLAINTEXT") as conn:
        assert handshake(conn, "PLAIN", version=0)["error_code"] == 0
        conn.send(struct.pack(">i", len(token := plain_token(ALICE, WRONG_PASSWORD))) + token)
        assert conn.closed_by_peer(), "a failed v0 exchange closes the connection without an answer"


# ---- failures ----


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_wrong_password_is_sasl_authentication_failed(
    secure: BrokerProcess, tls: TlsFiles, listener: str, mechanism: str
) -> None:
    with raw(secure, listener, tls if listener == "SASL_SSL" else None) as conn:
        answer = raw_login(conn, mechanism, ALICE, WRONG_PASSWORD)
        assert answer["error_code"] == SASL_AUTHENTICATION_FAILED
        assert "Authentication failed" in answer["error_message"]
        assert conn.closed_by_peer()


def test_confluent_wrong_password(secure: BrokerProcess, tls: TlsFiles) -> None:
    errors: list[KafkaError] = []
    settings = confluent_settings(secure, "SASL_SSL", tls, "SCRAM-SHA-512", password=WRONG_PASSWORD)
    producer = Producer({**settings, "error_cb": errors.append})
    try:
        deadline = Deadline(15)
        while not errors and deadline.left():
            producer.poll(0.1)
    finally:
        producer.purge()
        producer.close()
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors[0].str()


def test_kafka_python_wrong_password(secure: BrokerProcess, tls: TlsFiles, caplog: pytest.LogCaptureFixture) -> None:
    settings = kafka_python_settings("SASL_SSL", tls, "SCRAM-SHA-512") | {"sasl_plain_password": WRONG_PASSWORD}
    caplog.set_level(logging.WARNING, logger="kafka")
    with pytest.raises(Exception, match="Unable to bootstrap"):
        KafkaConsumer(bootstrap_servers=address(secure, "SASL_SSL"), bootstrap_timeout_ms=1500, **settings)
    assert "SaslAuthenticationFailedError" in caplog.text and "invalid credentials" in caplog.text


def test_unknown_mechanism_is_refused_then_closed(secure: BrokerProcess) -> None:
    with raw(secure, "SASL_PLAINTEXT") as conn:
        answer = handshake(conn, "GSSAPI")
        assert answer == {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
        assert conn.closed_by_peer()


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})], id="metadata-first"),
        pytest.param([(SASL_AUTHENTICATE, 2, {"auth_bytes": plain_token(ALICE, ALICE_PASSWORD)})], id="authenticate-first"),
        pytest.param(
            [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), (API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})],
            id="api-versions-after-handshake",
        ),
        pytest.param(
            [(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"}), (METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})],
            id="metadata-after-handshake",
        ),
    ],
)
def test_requests_before_authentication_close_the_connection(secure: BrokerProcess, steps: list) -> None:
    log_start = len(secure.log_text())
    with raw(secure, "SASL_PLAINTEXT") as conn:
        assert call(conn, API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})["error_code"] == 0
        *allowed, (api_key, version, body) = steps
        for allowed_key, allowed_version, allowed_body in allowed:
            assert call(conn, allowed_key, allowed_version, allowed_body)["error_code"] == 0
        conn.send(encode_request(api_key, version, 7, "raw-test", body))
        assert conn.closed_by_peer()
        peer = conn.peer
    deadline = Deadline(3)
    while f"closing {peer}: API key {api_key}" not in secure.log_text()[log_start:] and deadline.left():
        time.sleep(0.02)
    assert f"closing {peer}: API key {api_key}" in secure.log_text()[log_start:]


def test_sasl_apis_outside_authentication_are_illegal_state(secure: BrokerProcess) -> None:
    with raw(secure, "PLAINTEXT") as conn:
        assert handshake(conn, "PLAIN") == {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}
        assert authenticate(conn, b"")["error_code"] == ILLEGAL_SASL_STATE
    with raw(secure, "SASL_PLAINTEXT") as conn:
        assert raw_login(conn, "PLAIN", BOB, BOB_PASSWORD)["error_code"] == 0
        assert handshake(conn, "PLAIN")["error_code"] == ILLEGAL_SASL_STATE
        assert authenticate(conn, plain_token(BOB, BOB_PASSWORD))["error_code"] == ILLEGAL_SASL_STATE
        assert metadata_broker(conn)[1] == secure.listener_ports["SASL_PLAINTEXT"]


def test_plaintext_client_on_tls_listener_gets_nothing(secure: BrokerProcess) -> None:
    with raw(secure, "SSL") as conn:
        conn.send(encode_request(API_VERSIONS, 3, 1, "raw-test", {"client_software_name": "x", "client_software_version": "1"}))
        assert conn.closed_by_peer(within=5)


def test_describe_configs_hides_passwords(secure: BrokerProcess) -> None:
    with raw(secure, "PLAINTEXT") as conn:
        body = {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": ["sasl.users", "listeners"]}],
                "include_synonyms": True, "include_documentation": False}
        [result] = call(conn, DESCRIBE_CONFIGS, 4, body)["results"]
    entries = {entry["name"]: entry for entry in result["configs"]}
    assert entries["sasl.users"]["value"] is None and entries["sasl.users"]["is_sensitive"]
    assert entries["listeners"]["value"].startswith("PLAINTEXT://") and not entries["listeners"]["is_sensitive"]


def test_passwords_never_reach_the_log(secure: BrokerProcess) -> None:
    """Runs last in this module: every login above, good and bad, has been logged by now."""
    text = secure.log_text()
    assert "authenticated as 'alice'" in text and "authentication on listener SASL_SSL failed" in text
    for secret in (ALICE_PASSWORD, BOB_PASSWORD, WRONG_PASSWORD):
        assert secret not in text


def test_mutual_tls(tmp_path: Path, tls: TlsFiles) -> None:
    """ssl.client.auth=required: a client without a certificate from the CA cannot connect."""
    proc = BrokerProcess(
        tmp_path / "data", "listeners=SSL://127.0.0.1:0", f"ssl.certificate.location={tls.server_cert}",
        f"ssl.key.location={tls.server_key}", f"ssl.ca.location={tls.ca}", "ssl.client.auth=required",
    )
    try:
        proc.start()
        context = client_tls(tls)
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as sock:
            try:  # with TLS 1.3 the server refuses the client after the client's side of the handshake is done
                with context.wrap_socket(sock, server_hostname="localhost") as wrapped:
                    wrapped.sendall(encode_request(API_VERSIONS, 0, 1, "raw-test", {}))
                    answer = wrapped.recv(4)
            except (ssl.SSLError, ConnectionError):
                answer = b""
            assert answer == b"", "a client without a certificate got an answer"
        context.load_cert_chain(tls.client_cert, tls.client_key)
        conn = RawConnection(proc.bootstrap)
        conn.sock = context.wrap_socket(conn.sock, server_hostname="localhost")
        with conn:
            assert metadata_broker(conn) == ("127.0.0.1", proc.port)
    finally:
        proc.stop()


def test_ssl_listener_without_certificate_does_not_start(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", "listeners=SSL://127.0.0.1:0")
    try:
        with pytest.raises(RuntimeError, match="SSL listeners need ssl.certificate.location"):
            proc.start()
    finally:
        proc.stop()
