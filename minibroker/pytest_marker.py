"""``@pytest.mark.minibroker(...)``: what a test asks of its own broker, checked when the test is collected.

``nodes``, ``config`` (settings by Kafka name), ``topics`` (name -> partitions, or a mapping with ``partitions``,
``replication_factor`` and ``config``), ``clock`` (``"system"`` or ``"virtual"``) and ``transcript``. A mistake
in them fails the test's collection with a message naming it, before any broker starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.testing import Broker

MARKER = "minibroker"
MARKER_HELP = (
    f"{MARKER}(nodes=1, config=None, topics=None, clock='system', transcript=None): run the test on a broker of its "
    "own, started for it and stopped after it; kafka_broker, kafka_bootstrap and kafka_control are that broker's"
)
TOPIC_KEYS = {"partitions", "replication_factor", "config"}


class MarkerError(ValueError):
    """The marker's arguments cannot describe a broker."""


@dataclass(frozen=True)
class TopicSpec:
    partitions: int = 1
    replication_factor: int = 1
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MarkedBroker:
    """The broker a marked test gets; ``transcript`` None follows ``--kafka-transcript``."""

    nodes: int = 1
    config: Mapping[str, Any] = field(default_factory=dict)
    topics: Mapping[str, TopicSpec] = field(default_factory=dict)
    clock: str = "system"
    transcript: bool | None = None

    @classmethod
    def from_marker(cls, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> MarkedBroker:
        if args:
            raise MarkerError(f"@pytest.mark.{MARKER} takes keywords only (nodes=..., config=..., ...), not {args!r}")
        unknown = set(kwargs) - {"nodes", "config", "topics", "clock", "transcript"}
        if unknown:
            raise MarkerError(f"@pytest.mark.{MARKER}: unknown keyword(s) {sorted(unknown)}")
        nodes = kwargs.get("nodes", 1)
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise MarkerError(f"@pytest.mark.{MARKER}: nodes must be a whole number of at least 1, not {nodes!r}")
        clock = kwargs.get("clock", "system")
        if clock not in ("system", "virtual"):
            raise MarkerError(f"@pytest.mark.{MARKER}: clock must be 'system' or 'virtual', not {clock!r}")
        config = kwargs.get("config") or {}
        if not isinstance(config, Mapping):
            raise MarkerError(f"@pytest.mark.{MARKER}: config must be a mapping of settings, not {config!r}")
        transcript = kwargs.get("transcript")
        if transcript is not None and not isinstance(transcript, bool):
            raise MarkerError(f"@pytest.mark.{MARKER}: transcript must be True or False, not {transcript!r}")
        topics = {name: topic_spec(name, value) for name, value in _mapping(kwargs.get("topics"), "topics").items()}
        return cls(nodes, dict(config), topics, clock, transcript)

    @contextmanager
    def running(self, transcript_by_default: bool, base: Mapping[str, Any]) -> Iterator[Broker]:
        """The broker (``base`` settings, then the marker's), started with its topics made, and stopped when the
        block ends."""
        from minibroker.testing import Broker

        settings = {**base, **self.config, "nodes": self.nodes, "clock": self.clock}
        transcript = transcript_by_default if self.transcript is None else self.transcript
        with Broker(settings, control=True, transcript=transcript) as broker:
            for name, topic in self.topics.items():
                broker.create_topic(name, topic.partitions, topic.replication_factor, topic.config)
            yield broker


def topic_spec(name: Any, value: Any) -> TopicSpec:
    if not isinstance(name, str):
        raise MarkerError(f"@pytest.mark.{MARKER}: topic names are strings, not {name!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        return TopicSpec(partitions=value)
    spec = _mapping(value, f"topic {name!r}")
    unknown = set(spec) - TOPIC_KEYS
    if unknown:
        raise MarkerError(f"@pytest.mark.{MARKER}: topic {name!r} has unknown keys {sorted(unknown)}; "
                          f"use {sorted(TOPIC_KEYS)}")
    counts = {key: spec.get(key, 1) for key in ("partitions", "replication_factor")}
    for key, count in counts.items():
        if not isinstance(count, int) or isinstance(count, bool):
            raise MarkerError(f"@pytest.mark.{MARKER}: topic {name!r}: {key} must be a whole number, not {count!r}")
    return TopicSpec(counts["partitions"], counts["replication_factor"], dict(_mapping(spec.get("config"), "config")))


def _mapping(value: Any, what: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MarkerError(f"@pytest.mark.{MARKER}: {what} must be a mapping, not {value!r}")
    return value
