"""Replication as one broker answers it: every partition has one replica, which is its leader and its whole ISR.

Kafka's checks that depend on how many brokers are alive (replication factors, min.insync.replicas) ask here,
so the answers a client gets are the ones a one-broker Kafka cluster gives.
"""

from __future__ import annotations

LIVE_BROKERS = 1


def replication_problem(factor: int) -> str | None:
    """Kafka's INVALID_REPLICATION_FACTOR message for a factor the live brokers cannot reach, or None."""
    if factor <= LIVE_BROKERS:
        return None
    return (
        f"Unable to replicate the partition {factor} time(s): The target replication factor of {factor} "
        f"cannot be reached because only {LIVE_BROKERS} broker(s) are registered."
    )


def insync_problem(min_insync_replicas: int, topic: str, partition: int) -> str | None:
    """Kafka's NOT_ENOUGH_REPLICAS message for an acks=all append the in-sync replicas cannot satisfy, or None."""
    if min_insync_replicas <= LIVE_BROKERS:
        return None
    return (
        f"The size of the current ISR : {LIVE_BROKERS} is insufficient to satisfy the min.isr requirement of "
        f"{min_insync_replicas} for partition {topic}-{partition}"
    )
