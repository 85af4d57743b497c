"""The group coordinator's settings, with Kafka's names and defaults (GroupCoordinatorConfig, OffsetConfig).

One deliberate difference: ``group.initial.rebalance.delay.ms`` defaults to 100 ms (Kafka: 3000), so a
test's first consumer gets its partitions at once rather than three seconds later, while consumers
started together still land in one generation and a consumer that joins before its topic metadata
arrives (kafka-python does) assigns real partitions instead of nothing. At 0 a second consumer started a few
milliseconds after the first makes a second generation, which the first learns of only at its next heartbeat (3 s
in every client): README's "The time a short test takes" has the figures.

A second one, for the consumer group protocol: ``group.consumer.heartbeat.interval.ms`` defaults to 500 ms (Kafka:
5000). A member learns of a new assignment at its next heartbeat, so with Kafka's default every rebalance of a
test's group would take up to five seconds; the session timeout keeps Kafka's 45 s. Its lower bound,
``group.consumer.min.heartbeat.interval.ms``, follows it to 500 ms (Kafka: 5000).
"""

from __future__ import annotations

from dataclasses import dataclass

MINUTE_MS = 60_000


@dataclass(frozen=True, slots=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 100
    max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 5 * MINUTE_MS  # Kafka's classicGroupNewMemberJoinTimeoutMs
    offsets_retention_ms: int = 7 * 24 * 60 * MINUTE_MS
    offsets_retention_check_interval_ms: int = 10 * MINUTE_MS
    offset_metadata_max_bytes: int = 4096
    consumer_heartbeat_interval_ms: int = 500  # Kafka: 5000; see the module docstring
    consumer_session_timeout_ms: int = 45_000
    consumer_max_size: int = 2**31 - 1
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # the first is the default
    consumer_protocol_enabled: bool = True  # group.coordinator.rebalance.protocols lists "consumer"
    consumer_migration_policy: str = "bidirectional"  # which conversions of groups with members between protocols
    share_max_size: int = 200
