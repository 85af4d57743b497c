"""SASL session lifetime and re-authentication (KIP-368): with connections.max.reauth.ms a session lives that long
(SaslAuthenticate v1+ says so); the client re-authenticates on its connection with a SaslHandshake, keeping its
mechanism and principal; any other request after the end closes the connection. The broker's clock is virtual here,
so the session ends when the test moves it."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Producer

from tests.brokerproc import BrokerProcess
from tests.clientutil import TIMEOUT_S, Deadline, RawConnection, raw_request_frame
from tests.test_security import authenticate, call, handshake, raw_login

METADATA, API_VERSIONS = 3, 18
NONE, SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE = 0, 58, 34
LIFETIME_MS = 60_000
USERS = {"alice": "alice-Pw-1", "bob": "bob-Pw-1"}
SETTINGS = (
    "listeners=SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.users=" + ",".join(f"{user}:{password}" for user, password in USERS.items()),
)


class SaslBroker:
    """A broker process with a SASL_PLAINTEXT listener and a virtual clock moved over its control API."""

    def __init__(self, proc: BrokerProcess) -> None:
        self.proc = proc
        self.control = proc.control

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.proc.listener_ports['SASL_PLAINTEXT']}"

    def advance(self, ms: int) -> int:
        return self.control.advance(ms)


def sasl_broker(directory: Path, *settings: str) -> Iterator[SaslBroker]:
    proc = BrokerProcess(directory, *SETTINGS, *settings).start()
    try:
        yield SaslBroker(proc)
    finally:
        proc.stop()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[SaslBroker]:
    yield from sasl_broker(tmp_path / "data", f"connections.max.reauth.ms={LIFETIME_MS}", "clock=virtual", "control.port=0")


def login(broker: SaslBroker, user: str = "alice", mechanism: str = "PLAIN") -> RawConnection:
    conn = RawConnection(broker.bootstrap_servers)
    answer = raw_login(conn, mechanism, user, USERS[user])
    assert (answer["error_code"], answer["session_lifetime_ms"]) == (NONE, LIFETIME_MS)
    return conn


def metadata_answered(conn: RawConnection) -> bool:
    return call(conn, METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})["brokers"] != []


def test_a_request_after_the_session_ends_closes_the_connection(broker: SaslBroker) -> None:
    with login(broker) as conn:
        broker.advance(LIFETIME_MS)
        assert metadata_answered(conn), "the session's last millisecond is still in it"
        broker.advance(1)
        conn.send(raw_request_frame(API_VERSIONS, 0, 7))  # any request but a SaslHandshake: closed unanswered
        assert conn.closed_by_peer()


def test_re_authentication_starts_a_new_session_on_the_same_connection(broker: SaslBroker) -> None:
    with login(broker) as conn:
        broker.advance(LIFETIME_MS - 1000)
        again = raw_login(conn, "PLAIN", "alice", USERS["alice"])
        assert (again["error_code"], again["session_lifetime_ms"]) == (NONE, LIFETIME_MS)
        assert handshake(conn, "PLAIN")["error_code"] == ILLEGAL_SASL_STATE  # a second one within a second
        broker.advance(LIFETIME_MS - 1000)  # past the first session's end, within the second's
        assert metadata_answered(conn)
        scram = raw_login(conn, "SCRAM-SHA-256", "alice", USERS["alice"])  # a second later: another mechanism
        assert scram["error_code"] == SASL_AUTHENTICATION_FAILED
        assert scram["error_message"] == (
            "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism "
            "'PLAIN'")
        assert conn.closed_by_peer()


def test_re_authentication_keeps_the_principal(broker: SaslBroker) -> None:
    with login(broker) as conn:
        broker.advance(1000)
        assert handshake(conn, "PLAIN")["error_code"] == NONE
        answer = authenticate(conn, f"\0bob\0{USERS['bob']}".encode())
        assert answer["error_code"] == SASL_AUTHENTICATION_FAILED
        assert answer["error_message"] == "Cannot change principals during re-authentication from User.alice: User.bob"
        assert conn.closed_by_peer()


def test_without_a_lifetime_sessions_do_not_end(tmp_path: Path) -> None:
    for broker in sasl_broker(tmp_path / "data", "clock=virtual", "control.port=0"):
        with RawConnection(broker.bootstrap_servers) as conn:
            answer = raw_login(conn, "PLAIN", "alice", USERS["alice"])
            assert (answer["error_code"], answer["session_lifetime_ms"]) == (NONE, 0)
            broker.advance(10 * LIFETIME_MS)
            assert metadata_answered(conn)
            assert handshake(conn, "PLAIN")["error_code"] == ILLEGAL_SASL_STATE


def test_librdkafka_re_authenticates_before_its_session_ends(tmp_path: Path, topic_name: str) -> None:
    """A confluent-kafka producer on a broker whose sessions last 2 s (the real clock: librdkafka re-authenticates
    by its own timer, at 90 % of the lifetime) sends a second SaslHandshake on the same connection, and every record
    it sends meanwhile is delivered. Without re-authentication each connection would see one handshake."""
    settings = ("connections.max.reauth.ms=2000", "control.port=0", "transcript.enabled=true")
    for broker in sasl_broker(tmp_path / "data", *settings):
        producer = Producer({
            "bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT", "linger.ms": 0,
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": USERS["alice"],
        })
        failed: list[str] = []
        deadline = Deadline(TIMEOUT_S)
        while not reauthenticated(broker) and deadline.left():
            producer.produce(topic_name, b"v", on_delivery=lambda err, _: failed.append(str(err)) if err else None)
            assert producer.flush(TIMEOUT_S) == 0
            time.sleep(0.05)  # a record every 50 ms: the pace of the traffic; the loop waits for the handshake
        assert reauthenticated(broker), "no connection sent a second SaslHandshake"
        assert failed == []


def reauthenticated(broker: SaslBroker) -> bool:
    """Whether some connection (a client address) sent SaslHandshake twice."""
    handshakes = Counter(entry["peer"] for entry in broker.control.transcript() if entry["api"] == "SaslHandshake")
    return max(handshakes.values(), default=0) >= 2
