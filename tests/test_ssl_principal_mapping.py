"""``ssl.principal.mapping.rules``: the rules read and applied as Kafka's SslPrincipalMapper does (its documented
examples and the cases of its own tests), and over TLS, a client certificate named by them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest

from minibroker.acls.ssl_mapping import MappingError, parse_rules
from minibroker.config.settings import ConfigError
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection
from tests.test_acls import produce_one, unique
from tests.test_security import client_tls
from tests.tlsutil import CLIENT_EXTENSIONS, TlsFiles, make_tls_files, signed_certificate

KAFKA_TEST_RULES = ", ".join((
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
    "DEFAULT",
))
DOCUMENTED_RULES = (  # Kafka's security documentation, "Customizing SSL User Name"
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\n"
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\n"
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\n"
    "DEFAULT"
)


@pytest.mark.parametrize("rules, subject, name", [
    (KAFKA_TEST_RULES, "CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
    (KAFKA_TEST_RULES, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
    (KAFKA_TEST_RULES, "cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
    (KAFKA_TEST_RULES, "cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
    (KAFKA_TEST_RULES, "OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    (DOCUMENTED_RULES, "CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"),
    (DOCUMENTED_RULES, "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"),
    ("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT", "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz", "Tkac\\, Adam"),
    # Java's replacements: $N beyond the groups stays text, further digits only while they name a group, ${name}, \$
    ("RULE:^CN=(\\w+)$/$1-$2/", "CN=app", "app-$2"),
    ("RULE:^CN=(\\w+)$/$12/", "CN=app", "app2"),
    ("RULE:^CN=(?P<who>\\w+)$/${who}\\$/U", "CN=app", "APP$"),
    ("RULE:^CN=(\\w+)(,O=(\\w+))?$/$1@$3/", "CN=app", "app@"),  # a group that took no part: nothing
])
def test_kafka_s_examples_map_as_in_kafka(rules: str, subject: str, name: str) -> None:
    assert parse_rules(rules).name(subject) == name


@pytest.mark.parametrize("rules, written", [  # SslPrincipalMapperTest.testRulesSplitting: what Kafka reads
    ("", "[]"),
    ("DEFAULT", "[DEFAULT]"),
    ("RULE://", "[RULE:/]"),
    ("RULE:/.*/", "[RULE:/.*]"),
    ("RULE:/.*/L", "[RULE:/.*/L]"),
    ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"),
    ("  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"),
    ("  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]"),
    (",   , , ,      , , ,   ", "[]"),
    (",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"),
    ("RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//", "[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]"),
    ("RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/", "[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]"),
    ("RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
     "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]"),
])
def test_rules_are_split_as_kafka_splits_them(rules: str, written: str) -> None:
    assert "[" + ", ".join(map(str, parse_rules(rules).rules)) + "]" == written


@pytest.mark.parametrize("rules, left_over", [
    ("default", "default"), ("DEFAUL", "DEFAUL"), ("DEFAULT/L", "/L"), ("DEFAULT/U", "/U"),
    ("RULE:CN=(.*?),OU=ServiceUsers.*/$1", "RULE:CN=(.*?)"),  # no closing slash: cut at the comma, and refused
    ("rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "rule:^CN=(.*?)"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U", "/U"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/LU", "RULE:^CN=(.*?)"),
])
def test_kafka_s_invalid_rules_stop_start_up(rules: str, left_over: str) -> None:
    with pytest.raises(ConfigError, match=f"^ssl.principal.mapping.rules: Invalid rule: .*unmatched substring: `{re.escape(left_over)}`$"):
        parse_rules(rules)


def test_a_subject_no_rule_maps_is_an_error_naming_the_rules() -> None:
    with pytest.raises(MappingError, match=r"^No rules apply to CN=app,O=Org, rules \[RULE:\^CN=\(\\w\+\)\$/\$1/L\]$"):
        parse_rules("RULE:^CN=(\\w+)$/$1/L").name("CN=app,O=Org")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """The test CA's files, and a second client certificate (``stranger.pem``) whose subject the rules do not map."""
    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    signed_certificate(files.ca.parent, "stranger", "/CN=stranger/O=Elsewhere", CLIENT_EXTENSIONS, 4)
    return files


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrokerProcess]:
    """An SSL listener requiring client certificates; the rules name CN=test-client TEST-CLIENT, a super user."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("mapped") / "data", "listeners=SSL://127.0.0.1:0",
        f"ssl.certificate.location={tls.server_cert}", f"ssl.key.location={tls.server_key}",
        f"ssl.ca.location={tls.ca}", "ssl.client.auth=required",
        "ssl.principal.mapping.rules=RULE:^CN=([a-z-]+)$/$1/U",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:TEST-CLIENT",
    )
    try:
        yield proc.start()
    finally:
        proc.stop()


def test_a_client_certificate_is_named_by_the_rules(mapped: BrokerProcess, tls: TlsFiles) -> None:
    """Only User:TEST-CLIENT may write (and create the topic); unmapped, the principal would be User:CN=test-client."""
    settings = {
        "bootstrap.servers": f"127.0.0.1:{mapped.listener_ports['SSL']}", "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca), "ssl.certificate.location": str(tls.client_cert),
        "ssl.key.location": str(tls.client_key),
    }
    assert produce_one(settings, unique("mapped")) is None


def test_a_certificate_no_rule_maps_closes_the_connection(mapped: BrokerProcess, tls: TlsFiles) -> None:
    directory = Path(tls.ca.parent)
    context = client_tls(tls)
    context.load_cert_chain(directory / "stranger.pem", directory / "stranger.key")
    conn = RawConnection(f"127.0.0.1:{mapped.listener_ports['SSL']}")
    try:
        conn.sock = context.wrap_socket(conn.sock, server_hostname="localhost")
        assert conn.closed_by_peer()
    finally:
        conn.close()
    assert "ssl.principal.mapping.rules cannot name its certificate: No rules apply to O=Elsewhere,CN=stranger" in mapped.log_text()
