"""Listener, TLS and SASL settings: parsed and checked at start-up, with messages that name the setting and
never show a password."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.config.listeners import ListenerSpec, SecurityProtocol, advertised_addresses, parse_listeners
from minibroker.config.settings import ConfigError, build_config

TLS = {"ssl.certificate.location": "/x/cert.pem", "ssl.key.location": "/x/key.pem"}
USERS = {"sasl.users": "alice:Top-Secret-9,bob:pw"}


def test_several_listeners_in_order() -> None:
    config = build_config(
        {"listeners": "PLAINTEXT://127.0.0.1:0, sasl_ssl://[::1]:9094,INTERNAL://0.0.0.0:9095",
         "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,INTERNAL:SSL"} | TLS | USERS
    )
    assert parse_listeners(config) == [
        ListenerSpec("PLAINTEXT", SecurityProtocol.PLAINTEXT, "127.0.0.1", 0),
        ListenerSpec("SASL_SSL", SecurityProtocol.SASL_SSL, "::1", 9094),
        ListenerSpec("INTERNAL", SecurityProtocol.SSL, "0.0.0.0", 9095),
    ]
    assert config.listener == ("127.0.0.1", 0)


def test_advertised_per_listener() -> None:
    config = build_config(
        {"listeners": "PLAINTEXT://0.0.0.0:9092,SASL_PLAINTEXT://0.0.0.0:9093",
         "advertised.listeners": "SASL_PLAINTEXT://broker:19093"} | USERS
    )
    assert advertised_addresses(config) == {"SASL_PLAINTEXT": ("broker", 19093)}


@pytest.mark.parametrize(
    "items,message",
    [
        ({"listeners": "PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2"}, "appears twice"),
        ({"listeners": "INTERNAL://127.0.0.1:1"}, "no security protocol for listener name INTERNAL"),
        ({"listeners": "PLAINTEXT://127.0.0.1"}, "not NAME://HOST:PORT"),
        ({"listeners": ""}, "listeners: must not be empty"),
        ({"listener.security.protocol.map": "PLAINTEXT:KERBEROS"}, "not NAME:PROTOCOL"),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "not NAME:PROTOCOL"),
        ({"advertised.listeners": "SSL://host:1"}, "SSL is not one of the listeners"),
        ({"listeners": "SSL://127.0.0.1:0"}, "need ssl.certificate.location and ssl.key.location"),
        ({"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": "required"} | TLS, "needs ssl.ca.location"),
        ({"ssl.client.auth": "sometimes"}, "ssl.client.auth: String must be one of"),
        ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "at least one user in sasl.users"),
        ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER"} | USERS, "OAUTHBEARER"),
    ],
)
def test_refused_at_start_up(items: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(items)


def test_passwords_stay_out_of_repr_and_errors() -> None:
    config = build_config({"ssl.key.password": "Key-Pass-4", "listeners": "SASL_PLAINTEXT://127.0.0.1:0"} | USERS)
    assert "Top-Secret-9" not in repr(config) and "Key-Pass-4" not in repr(config)
    with pytest.raises(ConfigError) as failure:
        build_config({"sasl.users": "alice:Top-Secret-9,bob"})
    assert "Top-Secret-9" not in str(failure.value)


def test_tls_files_are_checked_when_the_broker_starts() -> None:
    from minibroker.server.tls import server_context

    missing = build_config({"listeners": "SSL://127.0.0.1:0"} | TLS)
    with pytest.raises(ConfigError, match="ssl.certificate.location"):
        server_context(missing)


def test_scram_users_can_come_from_alter_user_scram_credentials(tmp_path: Path) -> None:
    """Without sasl.users, SASL listeners are accepted when SCRAM users can exist: made over a listener that needs
    no login, or stored in the data directory by an earlier AlterUserScramCredentials."""
    data = {"log.dirs": str(tmp_path)}
    build_config({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"} | data)
    with pytest.raises(ConfigError, match="at least one user in sasl.users"):  # PLAIN checks sasl.users only
        build_config({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                      "sasl.enabled.mechanisms": "PLAIN"} | data)
    with pytest.raises(ConfigError, match="at least one user in sasl.users"):
        build_config({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"} | data)
    (tmp_path / "scram-credentials.json").write_text('{"version": 1, "credentials": []}')
    build_config({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"} | data)
