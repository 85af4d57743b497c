"""Dynamic broker configs (KIP-226): values set with AlterConfigs or IncrementalAlterConfigs on BROKER resources,
per node (resource name: the node's id) or as the cluster default (resource name ""), checked by Kafka's rules
(DynamicBrokerConfig) and laid over the static settings: a node's effective config is its static settings, then
the dynamic default, then its own dynamic values.

Kafka keeps them as ConfigRecords of its metadata log; here they are one small JSON file in the data directory,
rewritten whole on each change (a crash leaves the old set or the new one), readable by its owner only since it
may hold passwords (Kafka's KRaft brokers store them as given, too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from minibroker.config.settings import SETTING_FIELDS, TOPIC_SYNONYMS, ConfigError, build_config, is_secret
from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

if TYPE_CHECKING:
    from minibroker.config.settings import BrokerConfig

FILE_NAME = "broker-configs.json"
FORMAT_VERSION = 1
OWNER_ONLY = 0o600
HIDDEN = "[hidden]"  # Kafka's Password.HIDDEN, in logs

# Kafka 4.3's DynamicBrokerConfig.AllDynamicConfigs, by the classes that reconfigure them.
SSL_RECONFIGURABLE = frozenset({  # SslConfigs.RECONFIGURABLE_CONFIGS: per listener only (listener.name.X.<name>)
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates",
})
LISTENER_RECONFIGURABLE = frozenset({  # DynamicListenerConfig
    "listeners", "listener.security.protocol.map", "principal.builder.class", "ssl.protocol", "ssl.provider",
    "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms", "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds", "max.connections", "max.connection.creation.rate", "num.network.threads",
})
CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
THREAD_POOLS = frozenset({"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"})
DYNAMIC = frozenset(
    SSL_RECONFIGURABLE
    | {  # LogCleaner
        "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
    }
    | {synonyms[0][0] for synonyms in TOPIC_SYNONYMS.values()}  # DynamicLogConfig: each topic config's first synonym
    | {"cordoned.log.dirs"}
    | THREAD_POOLS
    | {"metric.reporters"}
    | LISTENER_RECONFIGURABLE
    | {"max.connections.per.ip", "max.connections.per.ip.overrides"}  # SocketServer
    | {"producer.id.expiration.ms", "transaction.partition.verification.enable"}
    | {  # DynamicRemoteLogConfig
        "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
        "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
        "remote.list.offsets.request.timeout.ms", "remote.log.manager.copier.thread.pool.size",
        "remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size",
        "remote.log.reader.threads",
    }
    | {"follower.fetch.last.tiered.offset.enable", "config.providers"}
    | {  # GroupCoordinatorConfig and ShareCoordinatorConfig
        "group.coordinator.cached.buffer.max.bytes", "group.consumer.assignment.interval.ms",
        "group.consumer.assignor.offload.enable", "group.share.assignment.interval.ms", "group.share.assignor.offload.enable",
        "group.streams.assignment.interval.ms", "group.streams.assignor.offload.enable",
        "share.coordinator.cached.buffer.max.bytes",
    }
)
PER_BROKER = (SSL_RECONFIGURABLE | LISTENER_RECONFIGURABLE) - CLUSTER_LEVEL_LISTENER
LISTENER_PREFIX = "listener.name."
OWN_NAMES = frozenset(f.metadata["kafka"] for f in SETTING_FIELDS)


class BrokerConfigError(Exception):
    """A change Kafka refuses with INVALID_REQUEST (its ConfigException, as ConfigAdminManager turns it)."""


class BrokerConfigFileError(ValueError):
    """The file cannot be read: start-up stops rather than serve without the dynamic configs it holds."""


def listener_base(name: str) -> str | None:
    """``ssl.keystore.location`` of ``listener.name.internal.ssl.keystore.location``; None for another name."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    _, dot, base = name[len(LISTENER_PREFIX):].partition(".")
    return base if dot and base else None


def is_known(name: str) -> bool:
    """A setting of Kafka or of minibroker; other names are custom settings Kafka keeps without checking."""
    from minibroker.config.kafka_settings import BROKER_SETTINGS

    return name in BROKER_SETTINGS or name in OWN_NAMES


def scala_set(names: set[str]) -> str:
    return f"Set({', '.join(sorted(names))})"


def broker_synonyms(name: str) -> list[str]:
    """Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the settings one value can be given by, in precedence order."""
    for group in (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                  ("log.retention.ms", "log.retention.minutes", "log.retention.hours")):
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return [name, "log.flush.scheduler.interval.ms"]
    base = listener_base(name)
    return [name, base] if base is not None else [name]


def check_names(new: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs: settings that are not dynamic, security settings without a listener
    prefix, values of the wrong type, per-broker settings at the cluster default. Raises BrokerConfigError."""
    from minibroker.config.values import check_kafka_setting

    fixed = {name for name in new if is_known(name) and name not in DYNAMIC}
    if fixed:
        raise BrokerConfigError(f"Cannot update these configs dynamically: {scala_set(fixed)}")
    unprefixed = set(new) & SSL_RECONFIGURABLE
    if unprefixed:
        raise BrokerConfigError(
            f"These security configs can be dynamically updated only per-listener using the listener prefix: {scala_set(unprefixed)}"
        )
    for name, value in new.items():
        try:
            check_kafka_setting(listener_base(name) or name, value)
        except ConfigError as exc:
            raise BrokerConfigError(str(exc)) from None
    if not per_broker:
        only_per_broker = {n for n in new if n in PER_BROKER or (listener_base(n) or "") in PER_BROKER}
        if only_per_broker:
            raise BrokerConfigError(
                f"Cannot update these configs at default cluster level, broker id must be specified: {scala_set(only_per_broker)}"
            )


def check_thread_counts(old: BrokerConfig, new: BrokerConfig) -> None:
    """Kafka's DynamicThreadPool rule: a pool may at most double or halve at once."""
    old_items, new_items = old.kafka_items(), new.kafka_items()
    for name in sorted(THREAD_POOLS):
        before, after = int(old_items.get(name) or 0), int(new_items.get(name) or 0)
        if before == after or before == 0:
            continue
        problem = f"Dynamic thread count update validation failed for {name}={after}"
        if after <= 0:
            raise BrokerConfigError(f"{problem}, value should be at least 1")
        if after < before / 2:
            raise BrokerConfigError(f"{problem}, value should be at least half the current value {before}")
        if after > before * 2:
            raise BrokerConfigError(f"{problem}, value should not be greater than double the current value {before}")


def loggable(values: Mapping[str, str]) -> dict[str, str]:
    """Values as a log line may show them: passwords hidden (Kafka's KafkaConfig.loggableValue)."""
    return {name: HIDDEN if is_secret(listener_base(name) or name) else value for name, value in values.items()}


class BrokerConfigs:
    """The dynamic layers: the cluster default and each node's own values (by Kafka name, as text) over the static
    settings; ``path`` None keeps them in memory only."""

    def __init__(self, static: BrokerConfig, path: StrPath | None = None) -> None:
        self.static = static
        self.path = path
        self.default: dict[str, str] = {}
        self.nodes: dict[int, dict[str, str]] = {}
        self.reload()

    # ---- what DescribeConfigs and the broker read ----

    def layer(self, node: int | None) -> dict[str, str]:
        """The node's own dynamic values, or the cluster default's (None)."""
        return dict(self.default if node is None else self.nodes.get(node, {}))

    def effective(self, node: int, default: Mapping[str, str] | None = None, own: Mapping[str, str] | None = None) -> BrokerConfig:
        """The node's config: static settings, the dynamic default, its own values (or the given replacement layers);
        custom names stay out. ConfigError when the result is not a valid configuration."""
        layers = [self.default if default is None else default, self.nodes.get(node, {}) if own is None else own]
        known = [{name: value for name, value in layer.items() if is_known(name)} for layer in layers]
        if not any(known):
            return self.static
        return build_config(dict(self.static.given), *known)

    # ---- changes ----

    def validate(self, node: int | None, new: Mapping[str, str], nodes: list[int]) -> None:
        """Kafka's checks of a layer's complete new set of values: the names (``check_names``), then the effective
        config of every node it reaches (DynamicBrokerConfig.validate). Raises BrokerConfigError."""
        check_names(new, node is not None)
        for reached in [node] if node is not None else nodes:
            try:
                if node is None:
                    config = self.effective(reached, default=new)
                else:
                    config = self.effective(reached, own=new)
            except ConfigError as exc:
                raise BrokerConfigError(str(exc)) from None
            check_thread_counts(self.effective(reached), config)

    def replace(self, node: int | None, new: Mapping[str, str]) -> None:
        """Store a layer's validated new set of values."""
        if node is None:
            self.default = dict(new)
        elif new:
            self.nodes[node] = dict(new)
        else:
            self.nodes.pop(node, None)
        self._save()

    def clear(self) -> bool:
        """Forget every dynamic value (the broker's reset); False when there was none (nothing written)."""
        if not self.default and not self.nodes:
            return False
        self.default, self.nodes = {}, {}
        self._save()
        return True

    def reload(self) -> None:
        """Read the stored values (at start-up, and after a snapshot put the data directory back)."""
        self.default, self.nodes = {}, {}
        if self.path is None:
            return
        try:
            stored = read_json(self.path)
        except (OSError, ValueError) as exc:
            raise BrokerConfigFileError(f"{self.path}: {exc}") from None
        if stored is None:
            return
        layers = [stored.get("default"), *(stored.get("brokers") or {}).values()] if isinstance(stored, dict) else []
        if (
            not isinstance(stored, dict) or stored.get("version") != FORMAT_VERSION
            or not isinstance(stored.get("brokers"), dict) or not all(
                isinstance(layer, dict) and all(isinstance(v, str) for v in layer.values()) for layer in layers
            ) or not all(node.isdigit() for node in stored["brokers"])
        ):
            raise BrokerConfigFileError(f"{self.path}: not a version {FORMAT_VERSION} broker config file")
        self.default = dict(stored["default"])
        self.nodes = {int(node): dict(layer) for node, layer in stored["brokers"].items()}

    def _save(self) -> None:
        if self.path is None:
            return
        document = {"version": FORMAT_VERSION, "default": self.default,
                    "brokers": {str(node): layer for node, layer in sorted(self.nodes.items())}}
        write_json_atomically(self.path, document, OWNER_ONLY, indent=1, sort_keys=True)

