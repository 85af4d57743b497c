"""Reader and writer options, with the names of Spark's Kafka connector, turned into client settings.

Kept free of Spark and of confluent-kafka so it can be checked on the driver before any task starts.
``kafka.*`` options go to the client with the prefix removed (librdkafka property names); the few
the source manages itself are refused, as Spark refuses them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from minibroker.spark.offsets import OffsetOptionError, OffsetSpec, parse_offsets, parse_timestamps

KAFKA_PREFIX = "kafka."
BOOTSTRAP = "kafka.bootstrap.servers"
MANAGED_CLIENT_SETTINGS = ("auto.offset.reset", "enable.auto.commit", "enable.partition.eof")
UNSUPPORTED_SOURCE_OPTIONS = ("assign", "subscribePattern")
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


class KafkaOptionError(ValueError):
    """An option is missing, unknown or invalid; raised on the driver with the option's name."""


@dataclass(frozen=True)
class SourceOptions:
    """Everything a read needs, resolved once on the driver and shipped to the tasks with the reader."""

    bootstrap: str
    topics: tuple[str, ...]
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    metadata_timeout_ms: int
    client: Mapping[str, Any] = field(default_factory=dict)

    def consumer_config(self) -> dict[str, Any]:
        """librdkafka settings for an assign-only consumer: no commits, no offset resets, no auto-created topics."""
        return {
            "isolation.level": "read_committed",
            "allow.auto.create.topics": False,
            **self.client,
            "bootstrap.servers": self.bootstrap,
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
        }


@dataclass(frozen=True)
class SinkOptions:
    """Where rows go: the bootstrap servers, the topic option (which wins over a ``topic`` column, as in Spark)."""

    bootstrap: str
    topic: str | None
    metadata_timeout_ms: int
    client: Mapping[str, Any] = field(default_factory=dict)

    def producer_config(self) -> dict[str, Any]:
        return {**self.client, "bootstrap.servers": self.bootstrap}


def source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate read options; batch reads default to earliest..latest, streams start at latest, as in Spark."""
    opts = _lower(options)
    for name in UNSUPPORTED_SOURCE_OPTIONS:
        if name.lower() in opts:
            raise KafkaOptionError(
                f"option {name!r} is not supported by this source: use 'subscribe' (a comma list of topics)"
            )
    topics = tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip())
    if not topics:
        raise KafkaOptionError("option 'subscribe' is required: a comma-separated list of topics")
    if streaming and any(name in opts for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")):
        raise KafkaOptionError("ending offsets are only for batch reads; a stream has no end")
    if not streaming and "maxoffsetspertrigger" in opts:
        raise KafkaOptionError("option 'maxOffsetsPerTrigger' is only for streaming reads")
    starting = _spec(opts, "starting", default="latest" if streaming else "earliest")
    if not streaming and starting.kind == "latest":
        raise KafkaOptionError("startingOffsets='latest' is not allowed for batch reads")
    ending = _spec(opts, "ending", default="latest")
    return SourceOptions(
        bootstrap=_bootstrap(opts),
        topics=topics,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=_positive_int(opts, "maxOffsetsPerTrigger"),
        include_headers=include_headers(opts),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        poll_timeout_ms=_positive_int(opts, "kafkaConsumer.pollTimeoutMs") or 120_000,
        metadata_timeout_ms=_positive_int(opts, "metadataTimeoutMs") or 30_000,
        client=_client_settings(opts, group_prefix=opts.get("groupidprefix", "spark-kafka-source")),
    )


def sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate write options."""
    opts = _lower(options)
    return SinkOptions(
        bootstrap=_bootstrap(opts),
        topic=opts.get("topic") or None,
        metadata_timeout_ms=_positive_int(opts, "metadataTimeoutMs") or 30_000,
        client=_client_settings(opts, group_prefix=None),
    )


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    """Spark option names are case-insensitive; so are ours."""
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bootstrap(opts: Mapping[str, str]) -> str:
    value = opts.get(BOOTSTRAP, "").strip()
    if not value:
        raise KafkaOptionError(f"option {BOOTSTRAP!r} is required, e.g. 127.0.0.1:9092")
    return value


def _client_settings(opts: Mapping[str, str], group_prefix: str | None) -> dict[str, Any]:
    settings = {k[len(KAFKA_PREFIX) :]: v for k, v in opts.items() if k.startswith(KAFKA_PREFIX) and k != BOOTSTRAP}
    for name in MANAGED_CLIENT_SETTINGS:
        if name in settings:
            raise KafkaOptionError(f"option 'kafka.{name}' is managed by the source and cannot be set")
    if group_prefix is not None and "group.id" not in settings:
        settings["group.id"] = f"{group_prefix}-{uuid.uuid4()}"
    return settings


def _spec(opts: Mapping[str, str], side: str, default: str) -> OffsetSpec:
    """At most one of ``<side>Offsets``, ``<side>Timestamp`` and ``<side>OffsetsByTimestamp`` may be given."""
    ending = side == "ending"
    parsers: dict[str, Callable[[str, str], OffsetSpec]] = {
        f"{side}Offsets": lambda name, value: parse_offsets(name, value, ending=ending),
        f"{side}Timestamp": lambda name, value: parse_timestamps(name, value, by_partition=False),
        f"{side}OffsetsByTimestamp": lambda name, value: parse_timestamps(name, value, by_partition=True),
    }
    given = [name for name in parsers if name.lower() in opts]
    if len(given) > 1:
        raise KafkaOptionError(f"options {given} conflict: give only one of them")
    name = given[0] if given else f"{side}Offsets"
    try:
        return parsers[name](name, opts.get(name.lower(), default))
    except OffsetOptionError as exc:
        raise KafkaOptionError(str(exc)) from None


def _positive_int(opts: Mapping[str, str], name: str) -> int | None:
    """The option's value, or None when it is not given."""
    text = opts.get(name.lower())
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise KafkaOptionError(f"option {name!r} must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise KafkaOptionError(f"option {name!r} must be a positive integer, got {value}")
    return value


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.lower() in TRUE_WORDS:
        return True
    if value.lower() in FALSE_WORDS:
        return False
    raise KafkaOptionError(f"option {name!r} must be true or false, got {value!r}")


def include_headers(options: Mapping[str, str]) -> bool:
    """Whether reads have a ``headers`` column (``includeHeaders``, false by default as in Spark)."""
    return _bool(_lower(options), "includeHeaders", False)
