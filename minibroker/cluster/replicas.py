"""Kafka's checks that depend on how many brokers and replicas are alive, with Kafka's messages.

Data is stored once per partition (see ``cluster.placements``), so every live replica is in sync: the ISR of a partition is
its replicas, and the brokers that can take replicas are the nodes this process serves.
"""

from __future__ import annotations


def replication_problem(factor: int, live_brokers: int) -> str | None:
    """Kafka's INVALID_REPLICATION_FACTOR message for a factor the live brokers cannot reach, or None."""
    if factor <= live_brokers:
        return None
    return (
        f"Unable to replicate the partition {factor} time(s): The target replication factor of {factor} "
        f"cannot be reached because only {live_brokers} broker(s) are registered."
    )


def insync_problem(min_insync_replicas: int, in_sync: int, topic: str, partition: int) -> str | None:
    """Kafka's NOT_ENOUGH_REPLICAS message for an acks=all append the in-sync replicas cannot satisfy, or None."""
    if min_insync_replicas <= in_sync:
        return None
    return (
        f"The size of the current ISR : {in_sync} is insufficient to satisfy the min.isr requirement of "
        f"{min_insync_replicas} for partition {topic}-{partition}"
    )
