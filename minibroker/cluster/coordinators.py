"""Coordinators follow the leaders of their topic's partitions, as Kafka's do.

Each node has its own group coordinator and its own transaction coordinator. A coordinator owns the partitions of its
internal topic (``__consumer_offsets``, ``__transaction_state``) that its node leads: when a partition's leader moves,
the old leader's coordinator resigns it (forgets its state) and the new leader's coordinator loads it from the log,
answering COORDINATOR_LOAD_IN_PROGRESS until it has; a partition without a leader is owned by no one. One general
mechanism serves both coordinators, for start-up, topic creation, node stops and starts, and leader moves alike.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Awaitable, Callable, Generic, Iterable, Protocol, TypeVar

from minibroker.cluster.placements import NO_LEADER
from minibroker.protocol.errors import NO_ERROR, ErrorCode

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)


class ServedPartitions:
    """Which partitions of its topic a coordinator serves: those it owns (its node leads them), once loaded."""

    def __init__(self, owned: Iterable[int] | None = None) -> None:
        self.owned = None if owned is None else set(owned)  # None: every partition (a coordinator never told)
        self.loading: set[int] = set()

    def owns(self, partition: int) -> bool:
        return self.owned is None or partition in self.owned

    def status(self, partition: int) -> ErrorCode:
        """NOT_COORDINATOR for a partition another node leads (the client looks the coordinator up again),
        COORDINATOR_LOAD_IN_PROGRESS while it loads, as Kafka's coordinators answer."""
        if not self.owns(partition):
            return ErrorCode.NOT_COORDINATOR
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return NO_ERROR

    def begin_loading(self, partitions: Iterable[int]) -> None:
        partitions = set(partitions)
        if self.owned is not None:
            self.owned |= partitions
        self.loading |= partitions

    def finish_loading(self, partition: int) -> None:
        self.loading.discard(partition)

    def resign(self, partition: int) -> None:
        if self.owned is not None:
            self.owned.discard(partition)
        self.loading.discard(partition)


class PartitionOwner(Protocol):
    partitions: ServedPartitions

    def begin_loading(self, partitions: Iterable[int]) -> None:
        """Own these partitions; they answer COORDINATOR_LOAD_IN_PROGRESS until ``finish_loading``."""

    def finish_loading(self, partition: int) -> None:
        """The partition's log has been read: serve it."""

    def resign(self, partition: int) -> None:
        """Another node leads the partition now: forget its state."""


Owner = TypeVar("Owner", bound=PartitionOwner)
Loader = Callable[[Owner, int, "PartitionLog"], Awaitable[None]]  # replays one partition into its new owner


class PartitionOwnership(Generic[Owner]):
    """Keeps each node's coordinator owning exactly the partitions of ``topic`` its node leads."""

    def __init__(self, broker: Broker, topic: str, make: Callable[[int], Owner], load: Loader) -> None:
        self.broker = broker
        self.topic = topic
        self.make = make
        self.load = load
        self.coordinators: dict[int, Owner] = {}
        self._loads: dict[tuple[int, int], asyncio.Task] = {}  # (node, partition) -> the task loading it

    def start(self) -> None:
        for node in self.broker.node_ids:
            self.coordinator(node)
        self.broker.leader_listeners.append(self.follow)
        self.follow(self.topic)

    def coordinator(self, node: int) -> Owner:
        """The coordinator of ``node`` (made when a node is added), owning nothing until its node leads a partition."""
        coordinator = self.coordinators.get(node)
        if coordinator is None:
            coordinator = self.coordinators[node] = self.make(node)
        return coordinator

    def owner(self, partition: int) -> Owner | None:
        """The coordinator of the partition's leader (None while it has no leader)."""
        leader = self.leader_of(partition)
        return None if leader == NO_LEADER else self.coordinator(leader)

    def resign_all(self) -> None:
        """Every coordinator gives up every partition (a reset): clients waiting on one hear NOT_COORDINATOR."""
        for coordinator in self.coordinators.values():
            for partition in sorted(coordinator.partitions.owned or ()):
                coordinator.resign(partition)

    def stop(self) -> None:
        if self.follow in self.broker.leader_listeners:
            self.broker.leader_listeners.remove(self.follow)
        for task in self._loads.values():
            task.cancel()
        self._loads.clear()

    async def loaded(self) -> None:
        """Wait for the loads under way (start-up finishes what a crash left half-done before serving)."""
        if self._loads:
            await asyncio.wait(list(self._loads.values()))

    def leader_of(self, partition: int) -> int:
        return self.broker.placements.of(self.topic, partition).leader

    def follow(self, topic: str) -> None:
        """After leaders of ``topic`` changed: resign what a node no longer leads, load what it newly leads (an empty
        partition is served at once, so a new topic's first request is not sent away to retry)."""
        info = self.broker.topic(self.topic)
        if topic != self.topic or info is None:
            return
        for partition, partition_log in enumerate(info.partitions):
            leader = self.leader_of(partition)
            for node, coordinator in self.coordinators.items():
                if node != leader and coordinator.partitions.owns(partition):
                    load = self._loads.pop((node, partition), None)
                    if load is not None:
                        load.cancel()
                    coordinator.resign(partition)
                    log.info("node %d resigned as coordinator of %s-%d", node, self.topic, partition)
            coordinator = self.owner(partition)
            if coordinator is not None and not coordinator.partitions.owns(partition):
                coordinator.begin_loading([partition])
                if partition_log.log_end_offset == partition_log.log_start_offset:
                    coordinator.finish_loading(partition)
                else:
                    self._loads[leader, partition] = asyncio.get_running_loop().create_task(
                        self._load(leader, coordinator, partition, partition_log)
                    )

    async def _load(self, node: int, coordinator: Owner, partition: int, partition_log: PartitionLog) -> None:
        try:
            await self.load(coordinator, partition, partition_log)
        except Exception:
            log.exception("loading %s-%d failed", self.topic, partition)
        coordinator.finish_loading(partition)
        del self._loads[node, partition]
