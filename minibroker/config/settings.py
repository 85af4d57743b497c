"""Broker configuration: one dataclass with Kafka's own setting names, filled from files, environment and flags.

Every field carries its Kafka name (``metadata["kafka"]``) and a short description, so the
``server.properties`` parser, the environment variables, ``-c key=value`` flags, DescribeConfigs and the
README's reference table are all driven by this one description. Precedence, lowest first: defaults,
properties file, environment (``KAFKA_*``, then ``MINIBROKER_*``), command line.

Every Apache Kafka broker setting is known (``kafka_settings``, facts from Kafka's own definitions), in three
kinds, as a Kafka configuration carries over: minibroker's fields and the broker synonyms of topic configs are
applied; the rest (quorum, threads, socket buffers, replication quotas, ...) are checked as Kafka checks them and have no
effect in one process; names Kafka does not know get Kafka's warning and start-up goes on.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import field, fields
from typing import Any, Mapping

from minibroker.config.sources import SettingsSyntaxError, env_settings, parse_properties
from minibroker.storage.checkpoint import read_text
from minibroker.storage.config import LONG_MAX, LogConfig
from minibroker.storage.errors import InvalidConfigError
from minibroker.storage.frozen_config import FrozenConfig, config_class


class ConfigError(ValueError):
    """A setting is unknown or has an invalid value; raised at start-up with a message naming it."""


def setting(kafka_name: str, default: Any, doc: str, minimum: int | None = None, secret: bool = False) -> Any:
    """A field described by its Kafka name; ``secret`` values stay out of repr, logs and DescribeConfigs."""
    return field(default=default, repr=not secret, metadata={"kafka": kafka_name, "doc": doc, "min": minimum, "secret": secret})


@config_class
class BrokerConfig(FrozenConfig):
    """Every setting the broker applies, by its Kafka name (``metadata["kafka"]``), with its default and meaning."""

    node_id: int = setting(
        "node.id", 1,
        "Id of this broker in Metadata answers; with nodes above 1 the first node's, node k taking node.id + k - 1 (0: "
        "ids 0..N-1, as compose files and clients' suites that number brokers from 0 expect).", 0,
    )
    cluster_id: str = setting(
        "cluster.id", "",
        "Cluster id a new data directory is formatted with (22 characters, as kafka-storage format -t takes it); empty: "
        "a random one. A formatted directory keeps its own. The apache/kafka and Confluent images' CLUSTER_ID and "
        "Bitnami's KAFKA_KRAFT_CLUSTER_ID variables set it.",
    )
    nodes: int = setting(
        "nodes", 1,
        "Brokers served by this one process (a cluster in a box): node k listens on each listener's port + k - 1 "
        "(port 0: free ports), and partitions are placed on the nodes with their replication factor.", 1,
    )
    broker_rack: str = setting(
        "broker.rack", "",
        "Rack of the nodes (Metadata, rack-aware replica placement, fetch from follower): one rack for every node, "
        "comma-separated racks one per node (node k takes the k-th), or a pattern with {node} (rack-{node}: node k in "
        "rack-k); empty: no racks.",
    )
    replica_selector_class: str = setting(
        "replica.selector.class", "",
        "org.apache.kafka.common.replica.RackAwareReplicaSelector: a partition's leader sends a consumer that names "
        "its client.rack to an in-sync replica in that rack, which serves its fetches (KIP-392); empty: consumers read "
        "from leaders.",
    )
    control_port: int = setting(
        "control.port", -1,
        "Port of the control listener (HTTP/JSON test control: nodes, leaders; see the README); -1: off, 0: a free "
        "port.", -1,
    )
    control_host: str = setting(
        "control.host", "127.0.0.1", "Address of the control listener; anything but loopback needs control.token."
    )
    control_token: str = setting(
        "control.token", "", "Bearer token the control listener requires (Authorization: Bearer TOKEN).", secret=True
    )
    control_read_only: bool = setting(
        "control.read.only", False,
        "Serve the control listener's views only (the inspector and GET routes): changes (faults, nodes, topics, the "
        "clock, resets) are refused with 403.",
    )
    schema_registry_port: int = setting(
        "schema.registry.port", -1,
        "Port of the schema registry (Confluent Schema Registry's REST API, schemas kept in _schemas; see the README); "
        "-1: off, 0: a free port.", -1,
    )
    schema_registry_host: str = setting(
        "schema.registry.host", "127.0.0.1",
        "Address of the schema registry's listener; anything but loopback needs schema.registry.token.",
    )
    schema_registry_token: str = setting(
        "schema.registry.token", "",
        "Secret the schema registry requires: Authorization: Bearer TOKEN, or HTTP basic auth with TOKEN as the "
        "password (a client's basic.auth.user.info any-user:TOKEN).", secret=True,
    )
    clock: str = setting(
        "clock", "system",
        "system, or virtual: broker timeouts (sessions, transactions, expirations, retention) follow a clock that moves "
        "only when a test advances it (POST /v1/clock/advance, Broker.advance).",
    )
    kafka_version: str = setting(
        "kafka.version", "",
        "An Apache Kafka release to emulate, e.g. 3.5 (3.5.1 is 3.5): ApiVersions advertises the APIs it served at its "
        "versions (those Kafka 4 removed included, served as it served them), and the rest are refused like unknown "
        "APIs; empty: every version minibroker serves.",
    )
    transcript_enabled: bool = setting(
        "transcript.enabled", False,
        "Keep a transcript of every request and answer (summarised; GET /v1/transcript on the control listener).",
    )
    transcript_max_entries: int = setting(
        "transcript.max.entries", 10000, "Entries the transcript keeps in memory (the newest).", 1
    )
    transcript_file: str = setting(
        "transcript.file", "", "A JSONL file the transcript is appended to (turns the transcript on); "
        "`minibroker transcript FILE` prints it as a timeline.",
    )
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
    controller_listener_names: str = setting(
        "controller.listener.names", "",
        "Listener names of a KRaft controller: listed in listeners and advertised.listeners by Kafka configs, "
        "not served here (one process has no quorum).",
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
    ssl_principal_mapping_rules: str = setting(
        "ssl.principal.mapping.rules", "DEFAULT",
        "Rules mapping a client certificate's subject to its principal's name, Kafka's syntax: RULE:pattern/replacement/ "
        "(/L or /U: lower or upper case) and DEFAULT (the subject), comma-separated, the first that matches applies; "
        "when none does, the connection is closed.",
    )
    sasl_enabled_mechanisms: str = setting(
        "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms offered on SASL listeners."
    )
    connections_max_reauth_ms: int = setting(
        "connections.max.reauth.ms", 0,
        "Lifetime of a SASL session (KIP-368): SaslAuthenticate v1+ tells the client, which re-authenticates on its "
        "connection before it ends; a request after it (other than that SaslHandshake) closes the connection. 0: "
        "sessions do not expire.", 0,
    )
    sasl_users: str = setting(
        "sasl.users", "",
        "USER:PASSWORD pairs, comma-separated, accepted by every SASL mechanism (SCRAM credentials are derived "
        "at start-up; AlterUserScramCredentials replaces or deletes them per mechanism; a password cannot contain a "
        "comma). Never logged.",
        secret=True,
    )
    authorizer_class_name: str = setting(
        "authorizer.class.name", "",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) turns on "
        "authorization with ACLs (CreateAcls, DescribeAcls, DeleteAcls; kept in the data directory); empty: every "
        "request is allowed and the ACL APIs answer SECURITY_DISABLED.",
    )
    super_users: str = setting(
        "super.users", "", "Principals allowed everything whatever the ACLs, separated by semicolons (User:admin;User:CN=ops)."
    )
    allow_everyone_if_no_acl_found: bool = setting(
        "allow.everyone.if.no.acl.found", False,
        "With the authorizer on: allow an operation on a resource that no ACL names (false: deny it).",
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
    max_incremental_fetch_session_cache_slots: int = setting(
        "max.incremental.fetch.session.cache.slots", 1000,
        "Incremental fetch sessions kept (KIP-227); when all are taken a full Fetch gets no session (id 0), unless "
        "one unused for 2 minutes, or one with fewer partitions that was 2 minutes old when last used, gives way "
        "(Kafka's rule).", 0,
    )
    default_replication_factor: int = setting(
        "default.replication.factor", 1,
        "Replicas of auto-created topics and of CreateTopics asking -1; above the live brokers (1) the topic is "
        "refused with INVALID_REPLICATION_FACTOR, as in Kafka.", 1,
    )
    auto_create_topics_enable: bool = setting("auto.create.topics.enable", True, "Create unknown topics on Metadata requests.")
    delete_topic_enable: bool = setting("delete.topic.enable", True, "Allow DeleteTopics.")
    socket_request_max_bytes: int = setting(
        "socket.request.max.bytes", 104857600, "Largest request frame; bigger length prefixes close the connection.", 1
    )
    log_retention_check_interval_ms: int = setting(
        "log.retention.check.interval.ms", 300000, "How often retention is enforced.", 1
    )
    log_cleaner_enable: bool = setting(
        "log.cleaner.enable", True, "Run the log cleaner: with false, compacted topics are never compacted."
    )
    log_cleaner_backoff_ms: int = setting(
        "log.cleaner.backoff.ms", 15000, "Pause of the log cleaner when no compacted log needs cleaning.", 0
    )
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions", 50, "Partitions of __consumer_offsets.", 1)
    offsets_topic_replication_factor: int = setting(
        "offsets.topic.replication.factor", 1,
        "Replicas of __consumer_offsets; not given: Kafka's 3, or the node count if lower (1 on one node). Above the "
        "live brokers it is not created and groups find no coordinator, as in Kafka.", 1,
    )
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
    group_consumer_heartbeat_interval_ms: int = setting(
        "group.consumer.heartbeat.interval.ms", 500,
        "How often members of a consumer-protocol group (KIP-848) heartbeat: they learn new assignments this often "
        "(Kafka's default is 5000).", 1,
    )
    group_consumer_min_heartbeat_interval_ms: int = setting(
        "group.consumer.min.heartbeat.interval.ms", 500,
        "Smallest consumer.heartbeat.interval.ms a group may set (Kafka's default is 5000, above the heartbeat "
        "interval's default here).", 1,
    )
    group_consumer_session_timeout_ms: int = setting(
        "group.consumer.session.timeout.ms", 45000,
        "A consumer-protocol member that has not heartbeated for this long is removed from its group.", 1,
    )
    group_consumer_max_size: int = setting(
        "group.consumer.max.size", 2147483647, "Most members a consumer-protocol group may have.", 1
    )
    group_consumer_assignors: str = setting(
        "group.consumer.assignors", "uniform,range",
        "Server-side assignors of consumer-protocol groups (uniform, range); the first is the default.",
    )
    group_consumer_migration_policy: str = setting(
        "group.consumer.migration.policy", "bidirectional",
        "Which conversions of a group with members between the classic and the consumer protocol are allowed: "
        "bidirectional, upgrade (classic to consumer), downgrade, or disabled (empty groups always convert).",
    )
    group_share_max_size: int = setting("group.share.max.size", 200, "Most members a share group may have.", 1)
    group_coordinator_rebalance_protocols: str = setting(
        "group.coordinator.rebalance.protocols", "classic,consumer,streams",
        "Group protocols served: without consumer, ConsumerGroupHeartbeat is refused (streams is not served; share groups "
        "follow the share.version feature).",
    )
    transaction_state_log_num_partitions: int = setting(
        "transaction.state.log.num.partitions", 50, "Partitions of __transaction_state.", 1
    )
    transaction_state_log_replication_factor: int = setting(
        "transaction.state.log.replication.factor", 1,
        "Replicas of __transaction_state; not given: Kafka's 3, or the node count if lower (1 on one node). Above the "
        "live brokers it is not created and transactional producers find no coordinator, as in Kafka.", 1,
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
    share_coordinator_state_topic_num_partitions: int = setting(
        "share.coordinator.state.topic.num.partitions", 50,
        "Partitions of __share_group_state (made when the first share partition is initialized or a share "
        "coordinator is looked up).", 1,
    )
    share_coordinator_state_topic_replication_factor: int = setting(
        "share.coordinator.state.topic.replication.factor", 1,
        "Replicas of __share_group_state; not given: Kafka's 3, or the node count if lower (1 on one node). Above the "
        "live brokers it is not created and share partitions cannot be initialized, as in Kafka.", 1,
    )
    share_coordinator_state_topic_segment_bytes: int = setting(
        "share.coordinator.state.topic.segment.bytes", 104857600,
        "segment.bytes of __share_group_state when it is created; values below segment.bytes' 1 MiB minimum are "
        "applied as the test-only internal.segment.bytes.", 1,
    )
    share_coordinator_snapshot_update_records_per_snapshot: int = setting(
        "share.coordinator.snapshot.update.records.per.snapshot", 500,
        "ShareUpdate records written for a share partition before its state is written whole again as a "
        "ShareSnapshot.", 0,
    )
    share_coordinator_cold_partition_snapshot_interval_ms: int = setting(
        "share.coordinator.cold.partition.snapshot.interval.ms", 300000,
        "How often share partitions whose state was not written whole for this long get a fresh ShareSnapshot, so "
        "pruning can drop the records before it.", 1,
    )
    share_coordinator_state_topic_prune_interval_ms: int = setting(
        "share.coordinator.state.topic.prune.interval.ms", 300000,
        "How often the records of __share_group_state that no state needs any more (before each partition's oldest "
        "latest snapshot) are deleted.", 1,
    )

    # Every known setting that was given (by Kafka name, as text): the topic defaults, DescribeConfigs' sources and
    # the start-up notes come from it. Names Kafka does not know are kept apart, for the warning.
    given: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    unknown: tuple[str, ...] = field(default=(), repr=False)

    def log_config(self) -> LogConfig:
        """The default topic configuration: Kafka's topic defaults with the broker synonyms that were given."""
        config = LogConfig().with_overrides(topic_defaults(dict(self.given)))
        if not self.kafka_version.strip():
            return config
        from minibroker.config.legacy_settings import retired_topic_configs  # the topic configs the release had

        given = dict(self.given)
        retired = retired_topic_configs(self.kafka_version, given)
        if not retired:  # 4.0 and later
            return config
        config = dataclasses.replace(config, retired=retired)
        if "log.message.timestamp.after.max.ms" not in given:  # 3.x: no bound (KIP-1030 set 1 h in 4.0)
            config = dataclasses.replace(config, message_timestamp_after_max_ms=LONG_MAX)
        return config

    @property
    def data_dir(self) -> str:
        """The first of ``log.dirs`` (a string: a start-up does without pathlib, see ``storage.checkpoint``)."""
        return os.path.normpath(self.log_dirs.split(",")[0])

    @property
    def listener(self) -> tuple[str, int]:
        """(host, port) of the first broker listener (controller listeners are not served)."""
        from minibroker.config.listeners import parse_listeners  # that module builds on this one

        first = parse_listeners(self)[0]
        return first.host, first.port

    def kafka_items(self) -> dict[str, str | None]:
        """Every broker setting by its Kafka name, as text (None: null), for DescribeConfigs: minibroker's own,
        then every other Kafka setting at its given value or Kafka's default."""
        from minibroker.config.kafka_settings import BROKER_SETTINGS, INTERNAL_SETTINGS  # facts, read when asked

        items: dict[str, str | None] = {f.metadata["kafka"]: render(getattr(self, f.name)) for f in SETTING_FIELDS}
        given = dict(self.given)
        definitions = BROKER_SETTINGS
        if self.kafka_version.strip():
            from minibroker.config.legacy_settings import removed_broker_settings  # those the emulated release still had

            definitions = {**BROKER_SETTINGS, **removed_broker_settings(self.kafka_version)}
        for name, (_, default, _) in definitions.items():
            if name not in items and name not in INTERNAL_SETTINGS:
                items[name] = given.get(name, default)
        return items

    def ignored_settings(self) -> list[str]:
        """Kafka settings that were given but mean nothing to one process (quorum, threads, replication quotas, ...)."""
        from minibroker.groups.group_configs import BROKER_SETTINGS_READ

        applied = (
            _BY_KAFKA_NAME.keys() | BROKER_SYNONYMS.keys() | ALIASES.keys() | BROKER_SETTINGS_READ | QUOTA_SETTINGS
            | SHARE_SETTINGS | LEGACY_APPLIED
        )
        return sorted(name for name, _ in self.given if name not in applied)


def setting_fields() -> tuple[dataclasses.Field, ...]:
    return tuple(f for f in fields(BrokerConfig) if "kafka" in f.metadata)


SETTING_FIELDS = setting_fields()
# Kafka settings the client quotas read (minibroker.quotas): the samples of a quota's rate.
QUOTA_SETTINGS = frozenset({"quota.window.num", "quota.window.size.seconds"})
# Settings Kafka 4.0 removed that an emulated 3.x release applies (minibroker.config.legacy_settings): the default of
# message.timestamp.difference.max.ms.
LEGACY_APPLIED = frozenset({"log.message.timestamp.difference.max.ms"})
# Kafka settings the share partitions read (minibroker.share): how many share sessions each node keeps.
SHARE_SETTINGS = frozenset({"group.share.max.share.sessions"})
_BY_KAFKA_NAME = {f.metadata["kafka"]: f for f in SETTING_FIELDS}

# Kafka's ServerTopicConfigSynonyms: the broker settings that give a topic config its default, first match wins,
# with the factor that turns the broker setting's unit into the topic config's.
_HOUR_MS, _MINUTE_MS = 3_600_000, 60_000
TOPIC_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOUR_MS)),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", _MINUTE_MS), ("log.retention.hours", _HOUR_MS)),
    "max.message.bytes": (("message.max.bytes", 1),),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1),),
    "cleanup.policy": (("log.cleanup.policy", 1),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", 1),),
    "min.insync.replicas": (("min.insync.replicas", 1),),
    "compression.type": (("compression.type", 1),),
    "compression.gzip.level": (("compression.gzip.level", 1),),
    "compression.lz4.level": (("compression.lz4.level", 1),),
    "compression.zstd.level": (("compression.zstd.level", 1),),
    "preallocate": (("log.preallocate", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 1),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
}
BROKER_SYNONYMS = {broker: topic for topic, synonyms in TOPIC_SYNONYMS.items() for broker, _ in synonyms}
# The prefixes of the passwords among the settings Kafka 4.0 removed (minibroker.config.legacy_settings), so asking whether
# a name is secret imports that table only for such names.
LEGACY_SECRET_PREFIXES = ("zookeeper.ssl.", "password.encoder.", "delegation.token.master.")
# Kafka names of settings minibroker holds under another name: broker.id is node.id, log.dir a log.dirs of one.
ALIASES = {"broker.id": "node.id", "log.dir": "log.dirs"}


def topic_defaults(given: Mapping[str, str]) -> dict[str, str]:
    """Topic configs whose default a given broker setting changes, as Kafka derives them (a negative retention in
    minutes or hours is -1, unlimited)."""
    defaults = {}
    for topic, synonyms in TOPIC_SYNONYMS.items():
        for broker, factor in synonyms:
            raw = given.get(broker)
            if raw is None:
                continue
            if factor != 1:
                raw = str(max(int(raw) * factor, -1))
            defaults[topic] = raw
            break
    return defaults


def render(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def is_secret(kafka_name: str) -> bool:
    """Settings whose value must never be shown (passwords)."""
    f = _BY_KAFKA_NAME.get(kafka_name)
    if f is not None:
        return f.metadata["secret"]
    from minibroker.config.kafka_settings import BROKER_SETTINGS

    spec = BROKER_SETTINGS.get(kafka_name)
    if spec is None and kafka_name.startswith(LEGACY_SECRET_PREFIXES):
        from minibroker.config.legacy_settings import REMOVED_BROKER_SETTINGS  # a password of a setting 4.0 removed

        spec = REMOVED_BROKER_SETTINGS.get(kafka_name)
    return spec is not None and spec[0] == "PASSWORD"


def parse_listener(text: str) -> tuple[str, int]:
    """The first of ``NAME://host:port,...`` (or ``host:port``) -> (host, port); names are checked by
    ``minibroker.config.listeners``."""
    address = text.split(",")[0].strip()
    if "://" in address:
        address = address.split("://", 1)[1]
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"listener {text!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


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


def _resolve_aliases(items: dict[str, str]) -> None:
    """broker.id stands for node.id (they must agree when both are given); log.dirs wins over log.dir."""
    for alias, name in ALIASES.items():
        if alias not in items:
            continue
        if name not in items:
            items[name] = items[alias]
        elif alias == "broker.id" and items[name].strip() != items[alias].strip():
            raise ConfigError(f"broker.id ({items[alias]}) and node.id ({items[name]}) must be the same when both are given")


def build_config(*sources: Mapping[str, str]) -> BrokerConfig:
    """Apply Kafka-named settings in order (later wins) over the defaults. minibroker's own settings and the
    Kafka settings it applies are converted and checked; every other Kafka setting is checked against Kafka's
    definition and kept; names Kafka does not know are kept for a warning."""
    items: dict[str, str] = {}
    for source in sources:
        items.update(source)
    _resolve_aliases(items)
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    unknown: list[str] = []
    for name, raw in items.items():
        f = _BY_KAFKA_NAME.get(name)
        if f is not None:
            if f.type == "str":
                from minibroker.config.values import check_kafka_setting

                check_kafka_setting(name, raw)  # Kafka's own rule for the value, where Kafka has the setting
            values[f.name] = _convert(f, raw)
            given[name] = raw.strip()
            continue
        from minibroker.config.values import check_kafka_setting  # Kafka's definitions, read when needed

        checked = check_kafka_setting(name, raw, items.get("kafka.version", "").strip())
        if checked is None:
            unknown.append(name)
        else:
            given[name] = checked
    config = BrokerConfig(**values, given=tuple(given.items()), unknown=tuple(unknown))
    from minibroker.config.listeners import check_security_settings  # here: that module builds on this one

    check_security_settings(config)
    from minibroker.acls.settings import check_authorizer_settings

    check_authorizer_settings(config)
    check_rack_settings(config)
    check_cluster_id(config)
    try:
        config.log_config()
    except InvalidConfigError as exc:
        names = [broker for broker, _ in TOPIC_SYNONYMS.get(exc.name, ()) if broker in given]
        raise ConfigError(f"{', '.join(names) or exc.name}: {exc}") from None
    return config


def check_rack_settings(config: BrokerConfig) -> None:
    """broker.rack must give every node a rack or none; replica.selector.class names Kafka's selector or nothing (a
    class of its own would not load in Kafka either)."""
    if not config.broker_rack and not config.replica_selector_class:
        return
    from minibroker.cluster.racks import RACK_AWARE_SELECTOR, rack_problem  # only when given

    problem = rack_problem(config.broker_rack, config.nodes)
    if problem is not None:
        raise ConfigError(problem)
    if config.replica_selector_class not in ("", RACK_AWARE_SELECTOR):
        raise ConfigError(
            f"replica.selector.class: {config.replica_selector_class!r} is not served; {RACK_AWARE_SELECTOR} is"
        )


def check_cluster_id(config: BrokerConfig) -> None:
    """cluster.id must be what kafka-storage format accepts: Kafka's Uuid in its 22-character form."""
    if not config.cluster_id:
        return
    from minibroker.storage.uuid import check_uuid_string

    try:
        check_uuid_string(config.cluster_id)
    except ValueError as exc:
        raise ConfigError(f"cluster.id: {exc}") from None


def load_config(properties: str | os.PathLike[str] | None, environ: Mapping[str, str], overrides: Mapping[str, str]) -> BrokerConfig:
    return build_config(*setting_sources(properties, environ), overrides)


def setting_sources(properties: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> list[dict[str, str]]:
    """The settings of a properties file and of the environment, lowest precedence first."""
    try:
        file_items = parse_properties(read_text(properties)) if properties else {}
    except SettingsSyntaxError as exc:
        raise ConfigError(str(exc)) from None
    return [file_items, env_settings(environ)]
