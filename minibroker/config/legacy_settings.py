"""Broker settings and topic configs Kafka 3.x accepted and 4.0 removed (the ZooKeeper-era ones a compose file still
carries, the message format and inter-broker protocol versions, ...), accepted under ``kafka.version`` before 4.0
with that release's validation, so a server.properties, compose file or topic-creating tool written for it works as
it did. The topic configs (``message.format.version``, ``message.downconversion.enable``,
``message.timestamp.difference.max.ms``) take their defaults from their broker synonyms, as Kafka's did.

Facts read off Kafka 3.9's definitions (KafkaConfig, ZkConfigs, ServerLogConfigs, PasswordEncoderConfigs,
ReplicationConfigs, GroupCoordinatorConfig; ``define`` calls at the 3.9.0 tag) minus Kafka 4.3.1's
(``kafka_settings``): name -> (ConfigDef type, default as a properties value or None, validator spec as
``setting_values`` reads it). Internal settings (not documented, not shown) are left out. A release before 3.9 is
given 3.9's list; the versions its MetadataVersionValidator accepted are its own (``ibp_versions``).
minibroker keeps them, shows them in DescribeConfigs and lists them among the ignored settings: they mean nothing to
one process that writes V2 batches and talks to no ZooKeeper. The exception is message.timestamp.difference.max.ms,
which bounds CreateTime timestamps where message.timestamp.before/after.max.ms are left unset, as 3.x's LogConfig did.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Mapping

from minibroker.config.releases import release_number, resolve
from minibroker.storage.config import TIMESTAMP_DIFFERENCE, ConfigSpec

FIRST_WITHOUT = "4.0"  # the release that removed them (KIP-724, KIP-896, KIP-500's ZooKeeper removal)

# MetadataVersion's versions that carry an IBP name (inter.broker.protocol.version, log.message.format.version), in
# order, by the release that added them (0.x releases: three-part names).
IBP_VERSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.8", ("0.8.0", "0.8.1", "0.8.2")),
    ("0.9", ("0.9.0",)),
    ("0.10", ("0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0")),
    ("0.11", ("0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2")),
    ("1.0", ("1.0-IV0",)),
    ("1.1", ("1.1-IV0",)),
    ("2.0", ("2.0-IV0", "2.0-IV1")),
    ("2.1", ("2.1-IV0", "2.1-IV1", "2.1-IV2")),
    ("2.2", ("2.2-IV0", "2.2-IV1")),
    ("2.3", ("2.3-IV0", "2.3-IV1")),
    ("2.4", ("2.4-IV0", "2.4-IV1")),
    ("2.5", ("2.5-IV0",)),
    ("2.6", ("2.6-IV0",)),
    ("2.7", ("2.7-IV0", "2.7-IV1", "2.7-IV2")),
    ("2.8", ("2.8-IV0", "2.8-IV1")),
    ("3.0", ("3.0-IV0", "3.0-IV1")),
    ("3.1", ("3.1-IV0",)),
    ("3.2", ("3.2-IV0",)),
    ("3.3", ("3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3")),
    ("3.4", ("3.4-IV0",)),
    ("3.5", ("3.5-IV0", "3.5-IV1", "3.5-IV2")),
    ("3.6", ("3.6-IV0", "3.6-IV1", "3.6-IV2")),
    ("3.7", ("3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4")),
    ("3.8", ("3.8-IV0",)),
    ("3.9", ("3.9-IV0",)),
    ("4.0", ("4.0-IV0", "4.0-IV1")),
)
# Releases whose MetadataVersion already listed (unstable) versions of the next one, which its validator accepted;
# every other release knew its own versions and those before (checked at each release tag).
NEWEST_KNOWN = {"3.7": "3.8-IV0", "3.8": "3.9-IV0", "3.9": "4.0-IV1"}

REMOVED_BROKER_SETTINGS: dict[str, tuple[str, str | None, str]] = {
    "broker.id.generation.enable": ("BOOLEAN", "true", ""),
    "control.plane.listener.name": ("STRING", None, ""),
    "controlled.shutdown.max.retries": ("INT", "3", ""),
    "controlled.shutdown.retry.backoff.ms": ("LONG", "5000", ""),
    "delegation.token.master.key": ("PASSWORD", None, ""),
    "inter.broker.protocol.version": ("STRING", "", "metadata-version"),  # default: the release's own, below
    "leader.imbalance.per.broker.percentage": ("INT", "10", ""),
    "log.message.downconversion.enable": ("BOOLEAN", "true", ""),
    "log.message.format.version": ("STRING", "3.0-IV1", "metadata-version"),  # before 3.0: the release's own
    "log.message.timestamp.difference.max.ms": ("LONG", "9223372036854775807", "range:0:"),
    "offsets.commit.required.acks": ("SHORT", "-1", ""),
    "password.encoder.cipher.algorithm": ("STRING", "AES/CBC/PKCS5Padding", ""),
    "password.encoder.iterations": ("INT", "4096", "range:1024:"),
    "password.encoder.key.length": ("INT", "128", "range:8:"),
    "password.encoder.keyfactory.algorithm": ("STRING", None, ""),
    "password.encoder.old.secret": ("PASSWORD", None, ""),
    "password.encoder.secret": ("PASSWORD", None, ""),
    "reserved.broker.max.id": ("INT", "1000", "range:0:"),
    "zookeeper.clientCnxnSocket": ("STRING", None, ""),
    "zookeeper.connect": ("STRING", None, ""),
    "zookeeper.connection.timeout.ms": ("INT", None, ""),
    "zookeeper.max.in.flight.requests": ("INT", "10", "range:1:"),
    "zookeeper.metadata.migration.enable": ("BOOLEAN", "false", ""),
    "zookeeper.metadata.migration.min.batch.size": ("INT", "200", "range:1:"),
    "zookeeper.session.timeout.ms": ("INT", "18000", ""),
    "zookeeper.set.acl": ("BOOLEAN", "false", ""),
    "zookeeper.ssl.cipher.suites": ("LIST", None, ""),
    "zookeeper.ssl.client.enable": ("BOOLEAN", "false", ""),
    "zookeeper.ssl.crl.enable": ("BOOLEAN", "false", ""),
    "zookeeper.ssl.enabled.protocols": ("LIST", None, ""),
    "zookeeper.ssl.endpoint.identification.algorithm": ("STRING", "HTTPS", ""),
    "zookeeper.ssl.keystore.location": ("STRING", None, ""),
    "zookeeper.ssl.keystore.password": ("PASSWORD", None, ""),
    "zookeeper.ssl.keystore.type": ("STRING", None, ""),
    "zookeeper.ssl.ocsp.enable": ("BOOLEAN", "false", ""),
    "zookeeper.ssl.protocol": ("STRING", "TLSv1.2", ""),
    "zookeeper.ssl.truststore.location": ("STRING", None, ""),
    "zookeeper.ssl.truststore.password": ("PASSWORD", None, ""),
    "zookeeper.ssl.truststore.type": ("STRING", None, ""),
}


def _accepts_legacy(release: str) -> bool:
    return release_number(release) < release_number(FIRST_WITHOUT)


@cache
def ibp_versions(text: str) -> tuple[str, ...]:
    """The IBP names the release accepted (MetadataVersion.fromVersionString): each version it knew, and each
    release's name alone ("2.8", "0.10.2"), which means that release's latest version."""
    release = resolve(text)
    ordered = [version for _, versions in IBP_VERSIONS for version in versions]
    own = [versions for minor, versions in IBP_VERSIONS if release_number(minor) <= release_number(release)][-1]
    known = ordered[: ordered.index(NEWEST_KNOWN.get(release, own[-1])) + 1]
    return tuple(known) + tuple(sorted({version.split("-")[0] for version in known}))


def latest_ibp(text: str) -> str:
    """The release's own inter.broker.protocol.version default (MetadataVersion.latestProduction: its own newest)."""
    return [versions for minor, versions in IBP_VERSIONS if release_number(minor) <= release_number(resolve(text))][-1][-1]


@cache
def removed_broker_settings(text: str) -> dict[str, tuple[str, str | None, str]]:
    """The settings of ``REMOVED_BROKER_SETTINGS`` as the release ``text`` defined them (nothing from 4.0 on)."""
    release = resolve(text)
    if not _accepts_legacy(release):
        return {}
    own = latest_ibp(release)
    settings = dict(REMOVED_BROKER_SETTINGS)
    settings["inter.broker.protocol.version"] = ("STRING", own, "metadata-version")
    if release_number(release) < release_number("3.0"):
        settings["log.message.format.version"] = ("STRING", own, "metadata-version")
    return settings


def metadata_version_problem(value: str, text: str) -> str | None:
    """Kafka's MetadataVersionValidator: the message for a value the release did not know, or None. As
    fromVersionString reads it, "x.y.z" is "x.y" (three parts kept for 0.x)."""
    parts = value.split(".")
    key = ".".join(parts[: 3 if value.startswith("0.") else 2])
    return None if key in ibp_versions(text) else f"Version {value} is not a valid version"


# The topic configs 4.0 removed: name -> (type, the broker setting that gives the default).
REMOVED_TOPIC_CONFIGS = {
    "message.format.version": ("STRING", "log.message.format.version"),
    "message.downconversion.enable": ("BOOLEAN", "log.message.downconversion.enable"),
    TIMESTAMP_DIFFERENCE: ("LONG", "log.message.timestamp.difference.max.ms"),
}


def removed_config_kind(kind: str, name: str) -> str:
    """The ConfigDef type of a broker setting (``kind`` "broker") or topic config ("topic") 4.0 removed; "" for other
    names."""
    if kind == "topic":
        return REMOVED_TOPIC_CONFIGS.get(name, ("",))[0]
    return REMOVED_BROKER_SETTINGS.get(name, ("",))[0]


def _version_check(text: str, value: str) -> str | None:
    return metadata_version_problem(value, text)


def retired_topic_configs(text: str, given: Mapping[str, str]) -> tuple[tuple[ConfigSpec, str], ...]:
    """The removed topic configs as the release ``text`` had them, each with its default (the broker setting given, or
    the release's default of it); none from 4.0 on. For ``LogConfig.retired``."""
    from minibroker.config.values import validation_problem  # the broker settings' validator specs, read as they are

    broker = removed_broker_settings(text)
    retired = []
    for name, (kind, synonym) in REMOVED_TOPIC_CONFIGS.items():
        if synonym not in broker:
            continue
        validator = broker[synonym][2]
        check = partial(_version_check, resolve(text)) if validator == "metadata-version" else (
            partial(validation_problem, validator) if validator else None)
        retired.append((ConfigSpec(name, "", kind, check), given.get(synonym, broker[synonym][1] or "")))
    return tuple(retired)
