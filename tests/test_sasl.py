"""The SASL mechanisms and session state machine, without sockets: RFC 7677's worked example, kafka-python's
SCRAM client as an independent implementation, wrong and malformed input, and no password kept or shown."""

from __future__ import annotations

import base64
import secrets
from dataclasses import astuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from minibroker.config.settings import ConfigError
from minibroker.sasl.credentials import CredentialStore
from minibroker.sasl.mechanism import AuthenticationFailed
from minibroker.sasl.plain import PlainServer
from minibroker.sasl.scram import ScramServer
from minibroker.sasl.session import SaslAuthority, SaslSession
from minibroker.sasl.settings import parse_mechanisms, parse_users

USERS = {"alice": "alice-Secret-1", "bob": "b:o-pw"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA = 18, 17, 36, 3


@pytest.fixture(scope="module")
def store() -> CredentialStore:
    return CredentialStore(USERS)


def scram_login(server: ScramServer, user: str, password: str) -> ScramClient:
    """A whole exchange driven by kafka-python's client; raises AuthenticationFailed or the client's error."""
    client = ScramClient(user, password, server.mechanism)
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))
    return client


def test_rfc7677_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """RFC 7677 section 3: user "user", password "pencil", fixed salt and nonces, byte-exact server messages."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    monkeypatch.setattr(secrets, "token_bytes", lambda n=32: salt)
    store = CredentialStore({"user": "pencil"})
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n=32: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server = ScramServer("SCRAM-SHA-256", store)
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_kafka_python_client(store: CredentialStore, mechanism: str) -> None:
    for user, password in USERS.items():
        server = ScramServer(mechanism, store)
        scram_login(server, user, password)  # the client checks the server signature
        assert server.complete and server.username == user


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user,password", [("alice", "Wr0ng-guess"), ("alice", USERS["bob"]), ("mallory", "any-Guess")])
def test_scram_wrong_password_or_unknown_user(store: CredentialStore, mechanism: str, user: str, password: str) -> None:
    server = ScramServer(mechanism, store)
    with pytest.raises(AuthenticationFailed) as failure:
        scram_login(server, user, password)
    assert str(failure.value) == (
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )
    assert password not in str(failure.value) + failure.value.reason
    assert not server.complete


def test_unknown_user_gets_a_stable_salt(store: CredentialStore) -> None:
    """A salt that changed per attempt would tell an attacker the user does not exist."""
    salts = set()
    for user in ("mallory", "mallory", "alice", "alice"):
        answer = ScramServer("SCRAM-SHA-512", store).evaluate(f"n,,n={user},r=abc".encode()).decode()
        salts.add((user, answer.split(",")[1]))
    assert len(salts) == 2


@pytest.mark.parametrize(
    "first",
    [
        b"",
        b"n,,",
        b"x,,n=alice,r=abc",
        b"p=tls-unique,,n=alice,r=abc",
        b"n,,m=ext,n=alice,r=abc",
        b"n,,r=abc,n=alice",
        b"n,,n=alice,r=",
        b"n,,n=al=ice,r=abc",
        b"n,a=bob,n=alice,r=abc",
        b"n,,n=alice,r=abc,tokenauth=true",
        b"n,,n=alice,r=abc,r=def",
        b"\xff\xfe",
    ],
)
def test_scram_refuses_malformed_client_first(store: CredentialStore, first: bytes) -> None:
    with pytest.raises(AuthenticationFailed):
        ScramServer("SCRAM-SHA-256", store).evaluate(first)


def test_scram_accepts_escaped_names_and_matching_authzid(store: CredentialStore) -> None:
    odd = CredentialStore({"a,b=c": "pw"})
    server = ScramServer("SCRAM-SHA-256", odd)
    scram_login(server, "a=2Cb=3Dc", "pw")  # kafka-python does not escape names: give it the escaped form
    assert server.username == "a,b=c"
    assert ScramServer("SCRAM-SHA-256", store).evaluate(b"n,a=alice,n=alice,r=abc").startswith(b"r=abc")


@pytest.mark.parametrize(
    "change",
    [
        lambda final: final.replace(b"c=biws", b"c=eSws"),  # a channel binding flag the first message did not send
        lambda final: final.replace(b",r=", b",r=x"),  # another nonce
        lambda final: final[: final.rindex(b",p=")] + b",p=AAAA",  # a short proof
        lambda final: final[: final.rindex(b",p=")] + b",p=***",  # not base64
        lambda final: final[: final.rindex(b",p=")],  # no proof
    ],
)
def test_scram_refuses_tampered_client_final(store: CredentialStore, change) -> None:
    server = ScramServer("SCRAM-SHA-256", store)
    client = ScramClient("alice", USERS["alice"], "SCRAM-SHA-256")
    client.process_server_first_message(server.evaluate(client.first_message()))
    with pytest.raises(AuthenticationFailed):
        server.evaluate(change(client.final_message()))
    assert not server.complete


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=120), min_size=1, max_size=3), st.sampled_from(MECHANISMS))
def test_random_tokens_only_fail_authentication(store: CredentialStore, tokens: list[bytes], mechanism: str) -> None:
    server = PlainServer(store) if mechanism == "PLAIN" else ScramServer(mechanism, store)
    try:
        for token in tokens:
            server.evaluate(token)
    except AuthenticationFailed:
        return
    assert not server.complete


def test_plain(store: CredentialStore) -> None:
    server = PlainServer(store)
    assert server.evaluate(b"\0alice\0" + USERS["alice"].encode()) == b""
    assert server.complete and server.username == "alice"
    assert PlainServer(store).evaluate(b"alice\0alice\0" + USERS["alice"].encode()) == b""
    for token in (b"\0alice\0Wr0ng-guess", b"\0mallory\0x", b"bob\0alice\0" + USERS["alice"].encode(), b"alice", b"\0\0", b"\0\xff\0pw"):
        server = PlainServer(store)
        with pytest.raises(AuthenticationFailed) as failure:
            server.evaluate(token)
        assert not server.complete
        assert b"Wr0ng-guess" not in str(failure.value).encode() + failure.value.reason.encode()


def test_no_password_is_kept(store: CredentialStore) -> None:
    kept = repr(vars(store)) + "".join(repr(astuple(credential)) for credential in store.credentials().values())
    for password in USERS.values():
        assert password not in kept and password.encode() not in kept.encode()


def test_credential_repr_shows_no_key() -> None:
    """Kafka's ScramCredentialValue.toString hides them too: a credential that reaches a log line shows no key."""
    credential = CredentialStore({"carol": "Carol-pw-1"}).scram("carol", "SCRAM-SHA-256")
    assert credential is not None and repr(credential) == "ScramCredential(iterations=4096)"


def test_parse_users_and_mechanisms() -> None:
    assert parse_users("alice:se:cret, bob:pw") == {"alice": "se:cret", "bob": "pw"}
    assert parse_users("") == {}
    for bad in ("alice", "alice:", ":pw", "alice:a,alice:b", "carol:hunter2,dave"):
        with pytest.raises(ConfigError) as failure:
            parse_users(bad)
        assert "hunter2" not in str(failure.value)
    assert parse_mechanisms("plain, scram-sha-512") == ["PLAIN", "SCRAM-SHA-512"]
    with pytest.raises(ConfigError, match="GSSAPI"):
        parse_mechanisms("PLAIN,GSSAPI")


def test_session_phases(store: CredentialStore) -> None:
    session = SaslSession(SaslAuthority(("PLAIN", "SCRAM-SHA-256"), store))
    assert session.refusal(API_VERSIONS) is None and session.refusal(SASL_HANDSHAKE) is None
    assert session.refusal(METADATA) and session.refusal(SASL_AUTHENTICATE)
    assert not session.handshake("SCRAM-SHA-512", raw_tokens=False)
    assert session.handshake("PLAIN", raw_tokens=True) and session.raw_tokens
    assert session.refusal(API_VERSIONS) and session.refusal(METADATA) and session.refusal(SASL_AUTHENTICATE) is None
    session.authenticate(b"\0alice\0" + USERS["alice"].encode())
    assert session.authenticated and not session.raw_tokens and session.username == "alice"
    assert session.refusal(METADATA) is None
    with pytest.raises(AuthenticationFailed):
        session.authenticate(b"\0alice\0" + USERS["alice"].encode())
