"""Broker configuration: one dataclass with Kafka's own setting names, filled from files, environment and flags.

Every field carries its Kafka name (``metadata["kafka"]``) and a short description, so the
``server.properties`` parser, the ``MINIBROKER_*`` environment variables, ``-c key=value`` flags,
DescribeConfigs and the README's reference table are all driven by this one description.
Precedence, lowest first: defaults, properties file, environment, command line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from storage.config import LogConfig
from storage.errors import InvalidConfigError

ENV_PREFIX = "MINIBROKER_"
NON_SETTING_VARIABLES = ("MINIBROKER_LOG_LEVEL", "MINIBROKER_TEST_CRASH_POINT", "MINIBROKER_EVENT_LOOP")


class ConfigError(ValueError):
    """A setting is unknown or has an invalid value; raised at start-up with a message naming it."""


def setting(kafka_name: str, default: Any, doc: str, minimum: int | None = None, secret: bool = False) -> Any:
    """A field described by its Kafka name; ``secret`` values stay out of repr, logs and DescribeConfigs."""
    return field(default=default, repr=not secret, metadata={"kafka": kafka_name, "doc": doc, "min": minimum, "secret": secret})


@dataclass(frozen=True)
class BrokerConfig:
    node_id: int = setting("node.id", 1, "Id of this broker in Metadata answers.", 0)
    listeners: str = setting(
        "listeners", "PLAINTEXT://127.0.0.1:9092",
        "Comma-separated NAME://HOST:PORT listeners, each on its own port (port 0 picks a free one); "
        "NAME is PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL or a name from listener.security.protocol.map.",
    )
    advertised_listeners: str = setting(
        "advertised.listeners", "",
        "NAME://HOST:PORT per listener, given in Metadata to clients connected on that listener "
        "(a listener not named here: its bound address). Set it behind NAT or port mapping.",
    )
    listener_security_protocol_map: str = setting(
        "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "NAME:PROTOCOL pairs: the security protocol of each listener name.",
    )
    ssl_certificate_location: str = setting(
        "ssl.certificate.location", "", "PEM file with the server certificate (and its chain) of SSL and SASL_SSL listeners."
    )
    ssl_key_location: str = setting("ssl.key.location", "", "PEM file with the private key of that certificate.")
    ssl_key_password: str = setting("ssl.key.password", "", "Password of an encrypted private key (empty: not encrypted).", secret=True)
    ssl_ca_location: str = setting(
        "ssl.ca.location", "", "PEM file of the CAs that sign client certificates (needed with ssl.client.auth)."
    )
    ssl_client_auth: str = setting(
        "ssl.client.auth", "none", "Client certificates on SSL listeners: none, requested (checked if sent) or required."
    )
    sasl_enabled_mechanisms: str = setting(
        "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms offered on SASL listeners."
    )
    sasl_users: str = setting(
        "sasl.users", "",
        "USER:PASSWORD pairs, comma-separated, accepted by every SASL mechanism (SCRAM credentials are derived "
        "at start-up; a password cannot contain a comma). Never logged.",
        secret=True,
    )
    connection_failed_authentication_delay_ms: int = setting(
        "connection.failed.authentication.delay.ms", 100,
        "Delay before closing a connection whose authentication failed (its answer is sent at once).", 0,
    )
    connections_max_idle_ms: int = setting(
        "connections.max.idle.ms", 600000, "Close connections with no traffic in either direction for this long.", 1
    )
    log_dirs: str = setting("log.dirs", "./minibroker-data", "Data directory holding the partition logs.")
    num_partitions: int = setting("num.partitions", 1, "Partitions of auto-created topics.", 1)
    default_replication_factor: int = setting("default.replication.factor", 1, "Accepted for compatibility; always 1 here.", 1)
    auto_create_topics_enable: bool = setting("auto.create.topics.enable", True, "Create unknown topics on Metadata requests.")
    delete_topic_enable: bool = setting("delete.topic.enable", True, "Allow DeleteTopics.")
    message_max_bytes: int = setting("message.max.bytes", 1048588, "Largest record batch a producer may send.", 0)
    socket_request_max_bytes: int = setting(
        "socket.request.max.bytes", 104857600, "Largest request frame; bigger length prefixes close the connection.", 1
    )
    log_segment_bytes: int = setting("log.segment.bytes", 1073741824, "Segment file size that triggers a roll.", 1048576)
    log_roll_ms: int = setting("log.roll.ms", 604800000, "Segment age that triggers a roll.", 1)
    log_retention_ms: int = setting("log.retention.ms", 604800000, "Delete segments older than this (-1: keep forever).", -1)
    log_retention_bytes: int = setting("log.retention.bytes", -1, "Delete old segments beyond this partition size (-1: no limit).", -1)
    log_retention_check_interval_ms: int = setting(
        "log.retention.check.interval.ms", 300000, "How often retention is enforced.", 1
    )
    log_index_interval_bytes: int = setting("log.index.interval.bytes", 4096, "Bytes between offset index entries.", 0)
    log_index_size_max_bytes: int = setting("log.index.size.max.bytes", 10485760, "Largest index file before a roll.", 4)
    log_flush_interval_messages: int = setting(
        "log.flush.interval.messages", 2**63 - 1, "fsync after this many messages (1: before every acknowledgement).", 1
    )
    log_flush_interval_ms: int = setting("log.flush.interval.ms", 2**63 - 1, "fsync data older than this.", 0)
    log_message_timestamp_type: str = setting(
        "log.message.timestamp.type", "CreateTime", "CreateTime keeps the producer's timestamps; LogAppendTime stamps on append."
    )
    log_cleanup_policy: str = setting("log.cleanup.policy", "delete", "Default cleanup.policy of topics.")
    log_cleaner_backoff_ms: int = setting(
        "log.cleaner.backoff.ms", 15000, "Pause of the log cleaner when no compacted log needs cleaning.", 0
    )
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions", 50, "Partitions of __consumer_offsets.", 1)
    offsets_topic_segment_bytes: int = setting(
        "offsets.topic.segment.bytes", 104857600,
        "segment.bytes of __consumer_offsets when it is created; values below segment.bytes' 1 MiB minimum are "
        "applied as the test-only internal.segment.bytes.", 1,
    )
    offsets_retention_minutes: int = setting(
        "offsets.retention.minutes", 10080, "Committed offsets of an empty group (or a simple consumer) expire after this.", 1
    )
    offsets_retention_check_interval_ms: int = setting(
        "offsets.retention.check.interval.ms", 600000, "How often expired offsets and empty groups are removed.", 1
    )
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes", 4096, "Largest metadata string of a commit.", 0)
    group_initial_rebalance_delay_ms: int = setting(
        "group.initial.rebalance.delay.ms", 100,
        "How long a new group waits for more members before its first rebalance (Kafka's default is 3000).", 0,
    )
    group_min_session_timeout_ms: int = setting("group.min.session.timeout.ms", 6000, "Smallest session timeout a member may ask for.", 0)
    group_max_session_timeout_ms: int = setting(
        "group.max.session.timeout.ms", 1800000, "Largest session timeout a member may ask for.", 0
    )
    group_max_size: int = setting("group.max.size", 2147483647, "Most members a group may have.", 1)
    transaction_state_log_num_partitions: int = setting(
        "transaction.state.log.num.partitions", 50, "Partitions of __transaction_state.", 1
    )
    transaction_max_timeout_ms: int = setting(
        "transaction.max.timeout.ms", 900000, "Largest transaction.timeout.ms a producer may ask for.", 1
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000, "How often open transactions are checked against their timeout.", 1
    )
    transactional_id_expiration_ms: int = setting(
        "transactional.id.expiration.ms", 604800000,
        "How long the coordinator keeps a transactional id with no transaction under way and no state change.", 1
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms", 3600000,
        "How often transactional ids are checked against transactional.id.expiration.ms.", 1
    )
    producer_id_expiration_ms: int = setting(
        "producer.id.expiration.ms", 86400000,
        "How long a partition keeps the state of a producer it has not heard from (none with an open transaction).", 1
    )
    producer_id_expiration_check_interval_ms: int = setting(
        "producer.id.expiration.check.interval.ms", 600000, "How often partitions forget expired producers.", 1
    )

    def log_config(self) -> LogConfig:
        """The default topic configuration implied by the broker's ``log.*`` settings."""
        return LogConfig().with_overrides(
            {
                "segment.bytes": str(self.log_segment_bytes),
                "segment.ms": str(self.log_roll_ms),
                "retention.ms": str(self.log_retention_ms),
                "retention.bytes": str(self.log_retention_bytes),
                "index.interval.bytes": str(self.log_index_interval_bytes),
                "segment.index.bytes": str(self.log_index_size_max_bytes),
                "flush.messages": str(self.log_flush_interval_messages),
                "flush.ms": str(self.log_flush_interval_ms),
                "message.timestamp.type": self.log_message_timestamp_type,
                "cleanup.policy": self.log_cleanup_policy,
                "max.message.bytes": str(self.message_max_bytes),
            }
        )

    @property
    def data_dir(self) -> Path:
        return Path(self.log_dirs.split(",")[0])

    @property
    def listener(self) -> tuple[str, int]:
        return parse_listener(self.listeners)

    def kafka_items(self) -> dict[str, str]:
        """Every setting by its Kafka name, as text (for DescribeConfigs on the broker)."""
        return {f.metadata["kafka"]: render(getattr(self, f.name)) for f in fields(self)}


def render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def is_secret(kafka_name: str) -> bool:
    """Settings whose value must never be shown (passwords)."""
    f = _BY_KAFKA_NAME.get(kafka_name)
    return f is not None and f.metadata["secret"]


def parse_listener(text: str) -> tuple[str, int]:
    """The first of ``NAME://host:port,...`` (or ``host:port``) -> (host, port); names are checked by
    ``minibroker.listeners``."""
    address = text.split(",")[0].strip()
    if "://" in address:
        address = address.split("://", 1)[1]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"listener {text!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


_BY_KAFKA_NAME = {f.metadata["kafka"]: f for f in fields(BrokerConfig)}


def _convert(f: dataclasses.Field, raw: str) -> Any:
    name = f.metadata["kafka"]
    if f.type in ("int", int):
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: {raw!r} is not an integer") from None
        if f.metadata["min"] is not None and value < f.metadata["min"]:
            raise ConfigError(f"{name}: {value} is below the minimum {f.metadata['min']}")
        return value
    if f.type in ("bool", bool):
        lowered = raw.strip().lower()
        if lowered not in ("true", "false"):
            raise ConfigError(f"{name}: {raw!r} is not true or false")
        return lowered == "true"
    return raw.strip()


def parse_properties(text: str) -> dict[str, str]:
    """Kafka-style ``server.properties``: ``key=value`` lines, ``#``/``!`` comments, ``key: value`` too."""
    items: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        sep = min((i for i in (stripped.find("="), stripped.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"line {number}: expected key=value, got {stripped!r}")
        items[stripped[:sep].strip()] = stripped[sep + 1 :].strip()
    return items


def env_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """``MINIBROKER_LOG_SEGMENT_BYTES=1000`` -> ``log.segment.bytes=1000`` (only known settings)."""
    by_env = {ENV_PREFIX + name.replace(".", "_").upper(): name for name in _BY_KAFKA_NAME}
    items = {}
    for key, value in environ.items():
        if key in by_env:
            items[by_env[key]] = value
        elif key.startswith(ENV_PREFIX) and key not in NON_SETTING_VARIABLES:
            raise ConfigError(f"unknown setting in environment variable {key}")
    return items


def build_config(*sources: Mapping[str, str]) -> BrokerConfig:
    """Apply Kafka-named settings in order (later wins) over the defaults; unknown names are errors."""
    values: dict[str, Any] = {}
    for source in sources:
        for name, raw in source.items():
            f = _BY_KAFKA_NAME.get(name)
            if f is None:
                raise ConfigError(f"unknown setting {name!r}")
            values[f.name] = _convert(f, raw)
    config = BrokerConfig(**values)
    from minibroker.listeners import check_security_settings  # here: that module builds on this one

    check_security_settings(config)
    if config.log_message_timestamp_type not in ("CreateTime", "LogAppendTime"):
        raise ConfigError("log.message.timestamp.type must be CreateTime or LogAppendTime")
    try:
        config.log_config()
    except InvalidConfigError as exc:
        raise ConfigError(str(exc)) from None
    return config


def load_config(properties: Path | None, environ: Mapping[str, str], overrides: Mapping[str, str]) -> BrokerConfig:
    file_items = parse_properties(properties.read_text()) if properties else {}
    return build_config(file_items, env_settings(environ), overrides)
