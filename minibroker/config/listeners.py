"""Listeners: which ports the broker binds, with which security protocol, and what each advertises.

``listeners`` names several ``NAME://HOST:PORT`` endpoints; ``listener.security.protocol.map`` gives each
name its protocol (by default a name is its protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), and
``advertised.listeners`` may give a name another address. A connection remembers its listener, so Metadata
tells a client the address of the listener it came in on, as Kafka does.
"""

from __future__ import annotations

import os
from enum import Enum

from minibroker.config.settings import BrokerConfig, ConfigError


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


CLIENT_AUTH_MODES = ("none", "requested", "required")
DEFAULT_LISTENERS = BrokerConfig.__dataclass_fields__["listeners"].default


class ListenerSpec:
    """One configured endpoint; port 0 binds a free port. (A plain class: a NamedTuple compiles its constructor when
    its module loads, a cost every start-up pays.)"""

    __slots__ = ("name", "protocol", "host", "port")

    def __init__(self, name: str, protocol: SecurityProtocol, host: str, port: int) -> None:
        self.name = name
        self.protocol = protocol
        self.host = host
        self.port = port

    def __eq__(self, other: object) -> bool:
        if type(other) is not ListenerSpec:
            return NotImplemented
        return (self.name, self.protocol, self.host, self.port) == (other.name, other.protocol, other.host, other.port)


def split_endpoint(text: str, setting: str) -> tuple[str, str, int]:
    """``NAME://HOST:PORT`` -> (NAME in upper case, HOST, PORT); ``[::1]`` style hosts lose their brackets."""
    name, sep, address = text.strip().partition("://")
    host, colon, port = address.rpartition(":")
    if not sep or not name or not colon or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{setting}: {text.strip()!r} is not NAME://HOST:PORT")
    return name.upper(), host.strip("[]"), int(port)


def protocol_map(config: BrokerConfig) -> dict[str, SecurityProtocol]:
    """``listener.security.protocol.map`` as {listener name: protocol}."""
    mapping: dict[str, SecurityProtocol] = {}
    for pair in filter(None, (item.strip() for item in config.listener_security_protocol_map.split(","))):
        name, sep, protocol = pair.partition(":")
        if not sep:
            raise ConfigError(f"listener.security.protocol.map: {pair!r} is not NAME:PROTOCOL")
        try:
            mapping[name.strip().upper()] = SecurityProtocol(protocol.strip().upper())
        except ValueError:
            raise ConfigError(
                f"listener.security.protocol.map: {pair!r} is not NAME:PROTOCOL with a protocol among "
                f"{', '.join(p.value for p in SecurityProtocol)}"
            ) from None
    return mapping


def controller_listener_names(config: BrokerConfig) -> set[str]:
    """Listeners of a KRaft controller (``controller.listener.names``): a single process has no quorum to serve."""
    return listener_names(config.controller_listener_names)


def listener_names(text: str) -> set[str]:
    """A comma-separated list of listener names, in upper case as listeners are named."""
    return {name.strip().upper() for name in text.split(",") if name.strip()}


def _endpoint_items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_endpoint(item: str, setting: str) -> tuple[str, str, int]:
    """One endpoint; a plain ``HOST:PORT`` is PLAINTEXT, as older configurations wrote it."""
    return split_endpoint(item if "://" in item else f"PLAINTEXT://{item}", setting)


def _endpoints(text: str, setting: str, skip: set[str]) -> list[tuple[str, str, int]]:
    """``NAME://HOST:PORT,...`` less the names in ``skip``."""
    endpoints = [parse_endpoint(item, setting) for item in _endpoint_items(text)]
    return [endpoint for endpoint in endpoints if endpoint[0] not in skip]


def first_broker_endpoint(listeners: str, controllers: set[str]) -> tuple[str, str, int] | None:
    """The broker's main listener in a ``listeners`` value, as (NAME, HOST, PORT): its first one that is not a
    controller's."""
    endpoints = _endpoints(listeners, "listeners", controllers)
    return endpoints[0] if endpoints else None


def endpoint_text(name: str, host: str, port: int) -> str:
    """``NAME://HOST:PORT``, an IPv6 host in brackets."""
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


def with_endpoint(text: str, setting: str, name: str, host: str | None, port: int | None,
                  default: tuple[str, int]) -> str:
    """``text`` (``NAME://HOST:PORT,...``) with the host and/or port of listener ``name`` replaced and every other
    endpoint kept as written; a name ``text`` lacks is added, ``default`` giving what is not replaced."""
    items = _endpoint_items(text)
    for index, item in enumerate(items):
        item_name, item_host, item_port = parse_endpoint(item, setting)
        if item_name == name:
            items[index] = endpoint_text(name, item_host if host is None else host, item_port if port is None else port)
            return ",".join(items)
    items.append(endpoint_text(name, default[0] if host is None else host, default[1] if port is None else port))
    return ",".join(items)


def parse_listeners(config: BrokerConfig) -> list[ListenerSpec]:
    """Every broker listener, in configuration order (the first one is the broker's main address); controller
    listeners are left out."""
    protocols = protocol_map(config)
    specs: list[ListenerSpec] = []
    for name, host, port in _endpoints(config.listeners, "listeners", controller_listener_names(config)):
        if name not in protocols:
            raise ConfigError(f"listeners: no security protocol for listener name {name} (see listener.security.protocol.map)")
        if any(spec.name == name for spec in specs):
            raise ConfigError(f"listeners: listener name {name} appears twice")
        specs.append(ListenerSpec(name, protocols[name], host or "0.0.0.0", port))
    if not specs:
        raise ConfigError("listeners: at least one listener is needed")
    return specs


def advertised_addresses(config: BrokerConfig) -> dict[str, tuple[str, int]]:
    """``advertised.listeners`` as {listener name: (host, port)}; names must be configured listeners (controller
    listeners are left out). Port 0 stands for the port the listener binds, as in Kafka."""
    known = {spec.name for spec in parse_listeners(config)}
    addresses: dict[str, tuple[str, int]] = {}
    for name, host, port in _endpoints(config.advertised_listeners, "advertised.listeners", controller_listener_names(config)):
        if name not in known:
            raise ConfigError(f"advertised.listeners: {name} is not one of the listeners ({', '.join(sorted(known))})")
        addresses[name] = (host, port)
    return addresses


DEFAULT_SASL_MECHANISMS = BrokerConfig.__dataclass_fields__["sasl_enabled_mechanisms"].default


def check_security_settings(config: BrokerConfig) -> None:
    """Refuse at start-up what would only fail at the first connection: unknown names, TLS without a
    certificate, SASL without users, an unknown mechanism."""
    specs = parse_listeners(config)
    advertised_addresses(config)
    if config.ssl_client_auth not in CLIENT_AUTH_MODES:
        raise ConfigError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH_MODES)}, not {config.ssl_client_auth!r}")
    if any(spec.protocol.uses_tls for spec in specs):
        if not config.ssl_certificate_location or not config.ssl_key_location:
            raise ConfigError("SSL listeners need ssl.certificate.location and ssl.key.location")
        if config.ssl_client_auth != "none" and not config.ssl_ca_location:
            raise ConfigError(f"ssl.client.auth={config.ssl_client_auth} needs ssl.ca.location")
    uses_sasl = any(spec.protocol.uses_sasl for spec in specs)
    if not uses_sasl and not config.sasl_users and config.sasl_enabled_mechanisms == DEFAULT_SASL_MECHANISMS:
        return  # nothing of SASL configured: the SASL package is not loaded
    from minibroker.sasl.settings import parse_mechanisms, parse_users  # the SASL package builds on config

    mechanisms = parse_mechanisms(config.sasl_enabled_mechanisms)
    users = parse_users(config.sasl_users)
    if uses_sasl and (not mechanisms or not (users or scram_users_possible(config, mechanisms, specs))):
        raise ConfigError(
            "SASL listeners need sasl.enabled.mechanisms and at least one user in sasl.users (or, with SCRAM, users "
            "made with AlterUserScramCredentials: stored in the data directory, or sent on a listener without SASL)"
        )


def scram_users_possible(config: BrokerConfig, mechanisms: list[str], specs: list[ListenerSpec]) -> bool:
    """Whether SCRAM users can exist without sasl.users: stored by AlterUserScramCredentials before, or to be made
    with it over a listener that needs no login."""
    from minibroker.sasl.credential_file import FILE_NAME
    from minibroker.sasl.settings import SCRAM_HASHES

    if not any(mechanism in SCRAM_HASHES for mechanism in mechanisms):
        return False
    return os.path.exists(os.path.join(config.data_dir, FILE_NAME)) or not all(spec.protocol.uses_sasl for spec in specs)


class Listener:
    """A bound listener: what was configured, the port it got, and the address it gives clients. (A plain class, as
    the other types on the start-up path: making a dataclass costs as much as importing a module.)"""

    __slots__ = ("spec", "port", "advertised", "node_id")

    def __init__(self, spec: ListenerSpec, port: int, advertised: tuple[str, int], node_id: int = 1) -> None:
        self.spec = spec
        self.port = port
        self.advertised = advertised
        self.node_id = node_id  # the node (of a broker serving several) this listener belongs to

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def protocol(self) -> SecurityProtocol:
        return self.spec.protocol


def default_advertised(host: str, port: int) -> tuple[str, int]:
    """A wildcard bind address is not something a client can connect to; give the loopback address instead."""
    return (host if host not in ("0.0.0.0", "::", "") else "127.0.0.1", port)


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (the control listener needs a token anywhere else)."""
    import ipaddress  # only with a control listener

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
