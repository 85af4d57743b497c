"""The authorizer's settings, with Kafka's names so Kafka configurations carry over: ``authorizer.class.name``
(Kafka's StandardAuthorizer, or the AclAuthorizer of Kafka before 4.0 that 3.x configurations name; empty: no
authorizer), ``super.users`` (``User:alice;User:bob``), ``allow.everyone.if.no.acl.found``, and the
``ssl.principal.mapping.rules`` that name certificate principals."""

from __future__ import annotations

from minibroker.config.settings import BrokerConfig, ConfigError

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
AUTHORIZERS = (STANDARD_AUTHORIZER, ACL_AUTHORIZER)


def authorizer_enabled(config: BrokerConfig) -> bool:
    """Whether requests are authorized; ConfigError for a class minibroker does not have."""
    name = config.authorizer_class_name.strip()
    if name and name not in AUTHORIZERS:
        raise ConfigError(f"authorizer.class.name: {name} is not available (only {' or '.join(AUTHORIZERS)})")
    return bool(name)


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by ``;``, each TYPE:NAME (StandardAuthorizer.getConfiguredSuperUsers)."""
    users = set()
    for item in text.split(";"):
        principal = item.strip()
        if not principal:
            continue
        if ":" not in principal:
            raise ConfigError(
                f"super.users: expected a string in format principalType:principalName but got {principal}"
            )
        users.add(principal)
    return frozenset(users)


def check_authorizer_settings(config: BrokerConfig) -> None:
    authorizer_enabled(config)
    parse_super_users(config.super_users)
    if config.ssl_principal_mapping_rules.strip() != "DEFAULT":  # the default is valid; the parser's patterns not needed
        from minibroker.acls.ssl_mapping import parse_rules

        parse_rules(config.ssl_principal_mapping_rules)
