"""Per-topic log configuration with Kafka's names, defaults and validation rules (LogConfig / TopicConfig).

The dataclass constructor trusts its caller (tests and the broker's own defaults); strings coming from
clients (CreateTopics, AlterConfigs) go through ``LogConfig.with_overrides``, which applies Kafka's rules.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from typing import Any, Callable

from ..protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from .errors import InvalidConfigError
from .frozen_config import FrozenConfig, config_class

LONG_MAX = 2**63 - 1
_DAY_MS = 24 * 60 * 60 * 1000

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
# The topic config Kafka 4.0 removed in favour of message.timestamp.before/after.max.ms (KIP-937).
TIMESTAMP_DIFFERENCE = "message.timestamp.difference.max.ms"
CLEANUP_POLICIES = ("compact", "delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_STORED_CODECS = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


@config_class
class LogConfig(FrozenConfig):
    """Effective configuration of one topic's logs; field defaults are Kafka 4.x's topic defaults."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600000
    cleanup_policy: str = "delete"
    delete_retention_ms: int = _DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    unclean_leader_election_enable: bool = False
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    # Kafka's internal.segment.bytes: a test-only segment size below segment.bytes' 1 MiB minimum.
    internal_segment_bytes: int | None = None
    # Topic configs an emulated Kafka release had and 4.0 removed (message.format.version, ...): each spec with its
    # value as text, kept and shown with no effect; none unless the broker emulates such a release.
    retired: tuple[tuple[ConfigSpec, str], ...] = ()

    @property
    def segment_size(self) -> int:
        """The size at which the active segment rolls (internal.segment.bytes wins when set)."""
        return self.segment_bytes if self.internal_segment_bytes is None else self.internal_segment_bytes

    @property
    def stored_codec(self) -> int | None:
        """The codec batches are stored in, or None to keep the producer's (compression.type=producer)."""
        return _STORED_CODECS.get(self.compression_type)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @cached_property
    def delete(self) -> bool:
        """Whether retention (time and size) applies: cleanup.policy contains "delete" (asked at every append and
        retention pass, so parsed once per config)."""
        return "delete" in split_list(self.cleanup_policy)

    @cached_property
    def compact(self) -> bool:
        return "compact" in split_list(self.cleanup_policy)

    @cached_property
    def timestamp_bounds(self) -> tuple[int, int]:
        """How far before and after the broker's clock a CreateTime record's timestamp may be (the topic's
        message.timestamp.before.max.ms and .after.max.ms). Under an emulated 3.x release the retired
        message.timestamp.difference.max.ms stands in for either one left at Long.MAX_VALUE, as its LogConfig did."""
        difference = next((int(value) for spec, value in self.retired if spec.name == TIMESTAMP_DIFFERENCE), LONG_MAX)
        before, after = self.message_timestamp_before_max_ms, self.message_timestamp_after_max_ms
        return (difference if before == LONG_MAX else before), (difference if after == LONG_MAX else after)

    @cached_property
    def roll_ms(self) -> int:
        """The age at which a segment rolls: segment.ms, or max.compaction.lag.ms if lower on a compacted topic."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def with_overrides(self, overrides: dict[str, str]) -> LogConfig:
        """This config with Kafka topic configs (by Kafka name, as strings) applied, validated like Kafka."""
        changes: dict[str, Any] = {}
        retired = {spec.name: (spec, value) for spec, value in self.retired}
        for name, raw in overrides.items():
            spec = TOPIC_CONFIGS.get(name) or retired.get(name, (None,))[0]
            if spec is None:
                raise InvalidConfigError(name, f"Unknown topic config name: {name}")
            if raw is None:
                raise InvalidConfigError(name, "Null value not supported for topic configs")
            if name in retired:
                retired[name] = (spec, spec.format(spec.parse(raw)))
            else:
                changes[spec.field] = spec.parse(raw)
        if self.retired:
            changes["retired"] = tuple(retired.values())
        result = dataclasses.replace(self, **changes)
        _check_combination(result)
        return result

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a topic config of this broker (Kafka 4's, or one an emulated release had)."""
        return name in TOPIC_CONFIGS or any(spec.name == name for spec, _ in self.retired)

    def to_kafka_configs(self) -> dict[str, str]:
        """Every non-internal topic config by its Kafka name, formatted as DescribeConfigs shows it."""
        configs = {
            name: spec.format(getattr(self, spec.field))
            for name, spec in TOPIC_CONFIGS.items()
            if not spec.internal
        }
        configs.update((spec.name, value) for spec, value in self.retired)
        return configs


class ConfigSpec:
    """How one Kafka topic config maps to a LogConfig field: its Kafka type and validator. (A plain class: a
    NamedTuple compiles its constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("name", "field", "type", "validator", "internal")

    def __init__(
        self, name: str, field: str, type: str, validator: Callable[[Any], str | None] | None = None,
        internal: bool = False,
    ) -> None:
        self.name = name
        self.field = field
        self.type = type  # INT, LONG, DOUBLE, BOOLEAN, STRING or LIST, as in Kafka's ConfigDef
        self.validator = validator
        self.internal = internal

    def parse(self, raw: str) -> Any:
        value = PARSERS[self.type](raw.strip())
        if value is None:
            reason = ("Expected value to be either true or false" if self.type == "BOOLEAN"
                      else f"Not a number of type {self.type}")
            raise InvalidConfigError(self.name, f"Invalid value {raw} for configuration {self.name}: {reason}")
        if self.validator is not None:
            reason = self.validator(value)
            if reason is not None:
                raise InvalidConfigError(self.name, f"Invalid value {raw} for configuration {self.name}: {reason}")
        return value

    def format(self, value: Any) -> str:
        if self.type == "BOOLEAN":
            return "true" if value else "false"
        if self.type == "DOUBLE":
            return repr(float(value))
        return str(value)


def is_decimal(text: str) -> bool:
    """One or more ASCII digits (``str.isdigit`` alone takes any Unicode digit). Checked without a regex: compiling
    one at import costs a broker's start-up about 0.2 ms."""
    return text.isascii() and text.isdigit()


def _parse_int(bits: int) -> Callable[[str], int | None]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def parse(text: str) -> int | None:
        if not is_decimal(text[1:] if text[:1] in ("+", "-") else text):
            return None
        value = int(text)
        return value if low <= value <= high else None

    return parse


def _parse_double(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _parse_bool(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.lower())


def split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _parse_list(text: str) -> str:
    """Kafka LIST values are kept as the normalised comma-joined string DescribeConfigs returns."""
    return ",".join(split_list(text))


# Kafka's ConfigDef types: text -> value, or None when the text is not of the type.
PARSERS: dict[str, Callable[[str], Any]] = {
    "SHORT": _parse_int(16),
    "INT": _parse_int(32),
    "LONG": _parse_int(64),
    "DOUBLE": _parse_double,
    "BOOLEAN": _parse_bool,
    "STRING": lambda text: text,
    "LIST": _parse_list,
    "CLASS": lambda text: text,
    "PASSWORD": lambda text: text,
}


def at_least(low: int) -> Callable[[Any], str | None]:
    return lambda value: None if value >= low else f"Value must be at least {low}"


def between(low: float, high: float) -> Callable[[Any], str | None]:
    return lambda value: None if low <= value <= high else f"Value must be between {low} and {high}"


def one_of(*allowed: str) -> Callable[[Any], str | None]:
    return lambda value: None if value in allowed else f"String must be one of: {', '.join(allowed)}"


def _gzip_level(value: int) -> str | None:
    return None if value == -1 or 1 <= value <= 9 else "Value must be between 1 and 9 or equal to -1"


def _cleanup_policy(value: str) -> str | None:
    items = split_list(value)
    if any(item not in CLEANUP_POLICIES for item in items):
        return "String must be one of: compact, delete"
    if len(set(items)) != len(items):
        return "Values must not be duplicated"
    return None


def _throttled_replicas(value: str) -> str | None:
    items = split_list(value)
    if items == ["*"] or all(item.count(":") == 1 and all(map(is_decimal, item.split(":"))) for item in items):
        return None
    return ("Value must be a list of replicas in the form [PartitionId]:[BrokerId],"
            "[PartitionId]:[BrokerId],... or the wildcard '*'")


TOPIC_CONFIGS: dict[str, ConfigSpec] = {
    spec.name: spec
    for spec in (
        ConfigSpec("cleanup.policy", "cleanup_policy", "LIST", _cleanup_policy),
        ConfigSpec("compression.gzip.level", "compression_gzip_level", "INT", _gzip_level),
        ConfigSpec("compression.lz4.level", "compression_lz4_level", "INT", between(1, 17)),
        ConfigSpec("compression.type", "compression_type", "STRING", one_of(*COMPRESSION_TYPES)),
        ConfigSpec("compression.zstd.level", "compression_zstd_level", "INT", between(-131072, 22)),
        ConfigSpec("delete.retention.ms", "delete_retention_ms", "LONG", at_least(0)),
        ConfigSpec("file.delete.delay.ms", "file_delete_delay_ms", "LONG", at_least(0)),
        ConfigSpec("flush.messages", "flush_messages", "LONG", at_least(1)),
        ConfigSpec("flush.ms", "flush_ms", "LONG", at_least(0)),
        ConfigSpec("follower.replication.throttled.replicas", "follower_replication_throttled_replicas",
                   "LIST", _throttled_replicas),
        ConfigSpec("index.interval.bytes", "index_interval_bytes", "INT", at_least(0)),
        ConfigSpec("leader.replication.throttled.replicas", "leader_replication_throttled_replicas",
                   "LIST", _throttled_replicas),
        ConfigSpec("local.retention.bytes", "local_retention_bytes", "LONG", at_least(-2)),
        ConfigSpec("local.retention.ms", "local_retention_ms", "LONG", at_least(-2)),
        ConfigSpec("max.compaction.lag.ms", "max_compaction_lag_ms", "LONG", at_least(1)),
        ConfigSpec("max.message.bytes", "max_message_bytes", "INT", at_least(0)),
        ConfigSpec("message.timestamp.after.max.ms", "message_timestamp_after_max_ms", "LONG", at_least(0)),
        ConfigSpec("message.timestamp.before.max.ms", "message_timestamp_before_max_ms", "LONG", at_least(0)),
        ConfigSpec("message.timestamp.type", "message_timestamp_type", "STRING", one_of(CREATE_TIME, LOG_APPEND_TIME)),
        ConfigSpec("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", "DOUBLE", between(0, 1)),
        ConfigSpec("min.compaction.lag.ms", "min_compaction_lag_ms", "LONG", at_least(0)),
        ConfigSpec("min.insync.replicas", "min_insync_replicas", "INT", at_least(1)),
        ConfigSpec("preallocate", "preallocate", "BOOLEAN"),
        ConfigSpec("remote.log.copy.disable", "remote_log_copy_disable", "BOOLEAN"),
        ConfigSpec("remote.log.delete.on.disable", "remote_log_delete_on_disable", "BOOLEAN"),
        ConfigSpec("remote.storage.enable", "remote_storage_enable", "BOOLEAN"),
        ConfigSpec("retention.bytes", "retention_bytes", "LONG"),
        ConfigSpec("retention.ms", "retention_ms", "LONG", at_least(-1)),
        ConfigSpec("segment.bytes", "segment_bytes", "INT", at_least(1024 * 1024)),
        ConfigSpec("segment.index.bytes", "segment_index_bytes", "INT", at_least(4)),
        ConfigSpec("segment.jitter.ms", "segment_jitter_ms", "LONG", at_least(0)),
        ConfigSpec("segment.ms", "segment_ms", "LONG", at_least(1)),
        ConfigSpec("unclean.leader.election.enable", "unclean_leader_election_enable", "BOOLEAN"),
        ConfigSpec("internal.segment.bytes", "internal_segment_bytes", "INT", at_least(1), internal=True),
    )
}


def _check_combination(config: LogConfig) -> None:
    """Kafka's cross-config rules (LogConfig.validateValues and the tiered-storage switch)."""
    if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
        raise InvalidConfigError(
            "min.compaction.lag.ms",
            f"conflict topic config setting min.compaction.lag.ms ({config.min_compaction_lag_ms}) > "
            f"max.compaction.lag.ms ({config.max_compaction_lag_ms})",
        )
    if config.remote_storage_enable:
        raise InvalidConfigError(
            "remote.storage.enable",
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.",
        )
