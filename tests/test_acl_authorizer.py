"""The authorizer's decisions as Kafka's StandardAuthorizer makes them, ACL filters and creation checks, the ACL file
and certificate subjects as principals: no broker, only the rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minibroker.acls import store
from minibroker.acls.authorizer import Authorizer
from minibroker.acls.model import ALLOW, DENY, LITERAL, MATCH, PREFIXED, Acl, AclFilter, creation_problem, unknown_code
from minibroker.acls.operations import (
    ALL,
    ALTER,
    ALTER_CONFIGS,
    ANY,
    CLUSTER,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    operation_bits,
)
from minibroker.acls.principal import distinguished_name
from minibroker.acls.settings import authorizer_enabled, parse_super_users
from minibroker.config.settings import ConfigError, build_config

ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER_HOST = "127.0.0.1", "10.0.0.7"


def allow(name: str, operation: int, principal: str = ALICE, pattern: int = LITERAL, kind: int = TOPIC, host: str = "*") -> Acl:
    return Acl(kind, name, pattern, principal, host, operation, ALLOW)


def deny(name: str, operation: int, principal: str = ALICE, pattern: int = LITERAL, kind: int = TOPIC, host: str = "*") -> Acl:
    return Acl(kind, name, pattern, principal, host, operation, DENY)


def may(authorizer: Authorizer, operation: int, name: str, principal: str = ALICE, host: str = HOST, kind: int = TOPIC) -> bool:
    return authorizer.authorize(principal, host, operation, kind, name)


def test_no_acl_denies_unless_allow_everyone() -> None:
    assert not may(Authorizer(frozenset(), False), WRITE, "orders")
    assert may(Authorizer(frozenset(), True), WRITE, "orders")


def test_an_acl_on_the_resource_for_someone_else_denies_even_with_allow_everyone() -> None:
    """StandardAuthorizer: allow.everyone.if.no.acl.found applies only when no ACL names the resource at all."""
    authorizer = Authorizer(frozenset(), True, [allow("orders", WRITE, BOB)])
    assert not may(authorizer, WRITE, "orders")
    assert may(authorizer, WRITE, "orders", BOB)
    assert may(authorizer, WRITE, "payments")


def test_literal_prefixed_and_wildcard_resources() -> None:
    authorizer = Authorizer(frozenset(), False, [
        allow("orders", WRITE), allow("pay", READ, pattern=PREFIXED), allow("*", DESCRIBE, BOB),
    ])
    assert may(authorizer, WRITE, "orders")
    assert not may(authorizer, WRITE, "orders-eu")  # literal: the exact name only
    assert may(authorizer, READ, "payments") and may(authorizer, READ, "pay")
    assert not may(authorizer, READ, "pa") and not may(authorizer, READ, "xpayments")
    assert may(authorizer, DESCRIBE, "anything", BOB) and not may(authorizer, DESCRIBE, "anything", BOB, kind=GROUP)


def test_deny_wins_over_allow_and_host_matching() -> None:
    authorizer = Authorizer(frozenset(), False, [
        allow("orders", WRITE), deny("orders", WRITE, host=OTHER_HOST), allow("ord", READ, pattern=PREFIXED),
        deny("orders", ALL, host=HOST, principal=BOB), allow("orders", READ, BOB),
    ])
    assert may(authorizer, WRITE, "orders", host=HOST)
    assert not may(authorizer, WRITE, "orders", host=OTHER_HOST)
    assert may(authorizer, READ, "orders", BOB, host=OTHER_HOST)
    assert not may(authorizer, READ, "orders", BOB, host=HOST)  # DENY ALL from that host beats the ALLOW


def test_prefixed_deny_beats_literal_allow() -> None:
    authorizer = Authorizer(frozenset(), False, [allow("orders", WRITE), deny("ord", WRITE, pattern=PREFIXED)])
    assert not may(authorizer, WRITE, "orders")


def test_wildcard_principal() -> None:
    authorizer = Authorizer(frozenset(), False, [allow("orders", READ, "User:*"), deny("orders", READ, BOB)])
    assert may(authorizer, READ, "orders") and not may(authorizer, READ, "orders", BOB)


def test_implied_operations_only_from_allow() -> None:
    authorizer = Authorizer(frozenset(), False, [
        allow("a", READ), allow("b", WRITE), allow("c", DELETE), allow("d", ALTER), allow("e", ALTER_CONFIGS),
        allow("f", CREATE), allow("g", ALL), deny("h", READ), allow("h", DESCRIBE),
    ])
    for name in "abcd":
        assert may(authorizer, DESCRIBE, name), name
    assert may(authorizer, DESCRIBE_CONFIGS, "e") and not may(authorizer, DESCRIBE, "e")
    assert not may(authorizer, DESCRIBE, "f")
    assert may(authorizer, IDEMPOTENT_WRITE, "g") and may(authorizer, DESCRIBE, "g")
    assert not may(authorizer, READ, "a", BOB)
    assert may(authorizer, DESCRIBE, "h") and not may(authorizer, READ, "h")  # a DENY of READ does not deny DESCRIBE


def test_super_users_may_do_anything() -> None:
    authorizer = Authorizer(frozenset({"User:admin"}), False, [deny("*", ALL, "User:*")])
    assert may(authorizer, DELETE, "orders", "User:admin")
    assert not may(authorizer, DESCRIBE, "orders")


def test_decisions_follow_changes() -> None:
    authorizer = Authorizer(frozenset(), False)
    assert not may(authorizer, WRITE, "orders")
    authorizer.replace([allow("orders", WRITE)])
    assert may(authorizer, WRITE, "orders")
    authorizer.replace([])
    assert not may(authorizer, WRITE, "orders")


def test_authorized_operations_bits() -> None:
    authorizer = Authorizer(frozenset(), False, [allow("orders", READ), allow("g", READ, kind=GROUP)])
    assert authorizer.authorized_operations(ALICE, HOST, TOPIC, "orders") == operation_bits(READ, DESCRIBE)
    assert authorizer.authorized_operations(ALICE, HOST, GROUP, "g") == operation_bits(READ, DESCRIBE)
    assert authorizer.authorized_operations(BOB, HOST, TOPIC, "orders") == 0


def test_authorize_any_resource_of_a_type() -> None:
    """Kafka's authorizeByResourceType, which InitProducerId asks of WRITE on topics for idempotent producers."""
    assert not Authorizer(frozenset(), False).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert Authorizer(frozenset(), False, [allow("x", WRITE)]).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert not Authorizer(frozenset(), False, [allow("x", WRITE), deny("x", WRITE)]).authorize_any(ALICE, HOST, WRITE, TOPIC)
    prefixed = [allow("orders", WRITE, pattern=PREFIXED), deny("ord", WRITE, pattern=PREFIXED)]
    assert not Authorizer(frozenset(), False, prefixed).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert not Authorizer(frozenset(), False, [allow("x", WRITE, host=OTHER_HOST)]).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert Authorizer(frozenset(), False, [allow("*", ALL, "User:*")]).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert not Authorizer(frozenset(), False, [allow("x", WRITE), deny("*", WRITE)]).authorize_any(ALICE, HOST, WRITE, TOPIC)
    assert Authorizer(frozenset({ALICE}), False).authorize_any(ALICE, HOST, WRITE, TOPIC)


def test_a_thousand_acls_keep_a_decision_to_dict_lookups() -> None:
    acls = [allow(f"topic-{i}", WRITE) for i in range(500)] + [allow(f"pre{i}-", READ, pattern=PREFIXED) for i in range(500)]
    authorizer = Authorizer(frozenset(), False, acls)
    assert may(authorizer, WRITE, "topic-499") and not may(authorizer, WRITE, "topic-500")
    assert may(authorizer, READ, "pre42-x") and not may(authorizer, READ, "pre42")


FILTER_ANY = dict(resource_type=ANY, name=None, pattern_type=ANY, principal=None, host=None, operation=ANY, permission=ANY)


@pytest.mark.parametrize("changes,matched", [
    ({}, {"lit", "pre", "star"}),
    ({"pattern_type": LITERAL}, {"lit", "star"}),
    ({"pattern_type": PREFIXED, "name": "orders"}, set()),
    ({"pattern_type": PREFIXED, "name": "ord"}, {"pre"}),
    ({"pattern_type": ANY, "name": "orders"}, {"lit"}),
    ({"pattern_type": MATCH, "name": "orders"}, {"lit", "pre", "star"}),
    ({"pattern_type": MATCH, "name": "other"}, {"star"}),
    ({"principal": BOB}, {"pre"}),
    ({"host": "10.0.0.7"}, {"star"}),
    ({"operation": READ}, {"pre"}),
    ({"permission": DENY}, {"star"}),
    ({"resource_type": GROUP}, set()),
])
def test_filters(changes: dict, matched: set[str]) -> None:
    acls = {
        "lit": allow("orders", WRITE),
        "pre": allow("ord", READ, BOB, pattern=PREFIXED),
        "star": deny("*", WRITE, host="10.0.0.7"),
    }
    wanted = AclFilter(**{**FILTER_ANY, **changes})
    assert {key for key, acl in acls.items() if wanted.matches(acl)} == matched


@pytest.mark.parametrize("acl,problem", [
    (Acl(CLUSTER, "other", LITERAL, ALICE, "*", ALTER, ALLOW), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (Acl(TOPIC, "", LITERAL, ALICE, "*", READ, ALLOW), "Invalid empty resource name"),
    (Acl(ANY, "x", LITERAL, ALICE, "*", READ, ALLOW), "Invalid resourceType ANY"),
    (Acl(TOPIC, "x", MATCH, ALICE, "*", READ, ALLOW), "Invalid patternType MATCH"),
    (Acl(TOPIC, "x", ANY, ALICE, "*", READ, ALLOW), "Invalid patternType ANY"),
    (Acl(TOPIC, "x", LITERAL, ALICE, "*", ANY, ALLOW), "Invalid operation ANY"),
    (Acl(TOPIC, "x", LITERAL, ALICE, "*", READ, ANY), "Invalid permissionType ANY"),
    (Acl(TOPIC, "x", LITERAL, "alice", "*", READ, ALLOW),
     "expected a string in format principalType:principalName but got alice"),
    (Acl(TRANSACTIONAL_ID, "tx", PREFIXED, ALICE, "*", WRITE, DENY), None),
    (Acl(CLUSTER, "kafka-cluster", LITERAL, ALICE, "*", ALL, ALLOW), None),
])
def test_creation_problems(acl: Acl, problem: str | None) -> None:
    assert creation_problem(acl) == problem


def test_unknown_codes() -> None:
    assert not unknown_code(TOPIC, LITERAL, READ, ALLOW)
    assert unknown_code(0, LITERAL, READ, ALLOW) and unknown_code(8, LITERAL, READ, ALLOW)
    assert unknown_code(TOPIC, 5, READ, ALLOW) and unknown_code(TOPIC, LITERAL, 15, ALLOW) and unknown_code(TOPIC, LITERAL, READ, 4)


def test_store_round_trip_and_crash_leftovers(tmp_path: Path) -> None:
    assert store.load(tmp_path) == []
    acls = [allow("orders", WRITE), deny("ord", READ, BOB, pattern=PREFIXED, host=OTHER_HOST)]
    store.save(tmp_path, acls)
    (tmp_path / "acls.json.tmp").write_text('{"version": 1, "acls": [')  # a crash during the next save
    assert store.load(tmp_path) == acls
    store.save(tmp_path, acls[1:])
    assert store.load(tmp_path) == acls[1:] and not (tmp_path / "acls.json.tmp").exists()


@pytest.mark.parametrize("text", ["{", json.dumps({"version": 2, "acls": []}), json.dumps({"version": 1, "acls": [{"name": "x"}]})])
def test_unreadable_store_is_an_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "acls.json").write_text(text)
    with pytest.raises(store.AclFileError):
        store.load(tmp_path)


def test_certificate_subject_as_rfc2253() -> None:
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc"),), (("organizationalUnitName", "ops"), ("commonName", "#client ")))
    assert distinguished_name(subject) == "OU=ops+CN=\\#client\\ ,O=Acme\\, Inc,C=US"
    assert distinguished_name(((("commonName", "test-client"),),)) == "CN=test-client"


def test_settings() -> None:
    config = build_config({"super.users": " User:admin ; User:CN=ops ;", "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    assert parse_super_users(config.super_users) == {"User:admin", "User:CN=ops"}
    assert authorizer_enabled(config) and not authorizer_enabled(build_config({}))
    with pytest.raises(ConfigError, match="super.users"):
        build_config({"super.users": "admin"})
    with pytest.raises(ConfigError, match="authorizer.class.name"):
        build_config({"authorizer.class.name": "com.example.MyAuthorizer"})
