"""What a handler knows about the request it serves: the broker, the header and the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode

NO_EPOCH = -1
# Answers that name the partition's current leader (KIP-951), so the client need not ask Metadata first.
LEADER_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.faults import Fault
    from minibroker.server import KafkaConnection
    from minibroker.storage.partition_log import PartitionLog


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    connection: KafkaConnection | None = None  # None for requests made in-process (tests, tools)
    fault: Fault | None = None  # an injected error for the partitions it names (control API)

    @property
    def node_id(self) -> int:
        """The node the request was sent to (in-process requests: the first node)."""
        if self.connection is not None:
            return self.connection.listener.node_id
        return self.broker.node_ids[0]

    def led_partition(
        self, topic: str, index: int, current_leader_epoch: int = NO_EPOCH,
    ) -> tuple[PartitionLog | None, ErrorCode]:
        """The partition's log if the node asked leads it, else why not (Kafka's getPartitionOrError and its
        leader epoch check, KIP-320): unknown; NOT_LEADER_OR_FOLLOWER, so the client looks the leader up again; a
        client's epoch older than the leader's FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (-1: not checked)."""
        partition_log = self.broker.partition(topic, index)
        if partition_log is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if self.fault is not None and self.fault.covers(topic, index):
            return None, self.fault.error
        placed = self.broker.placements.of(topic, index)
        if current_leader_epoch != NO_EPOCH and current_leader_epoch < placed.leader_epoch:
            return None, ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch != NO_EPOCH and current_leader_epoch > placed.leader_epoch:
            return None, ErrorCode.UNKNOWN_LEADER_EPOCH
        if placed.leader != self.node_id:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition_log, ErrorCode.NONE

    def current_leader(self, topic: str, index: int) -> dict[str, int]:
        """KIP-951's CurrentLeader of a partition, for answers that send the client to another node."""
        placed = self.broker.placements.of(topic, index)
        return {"leader_id": placed.leader, "leader_epoch": placed.leader_epoch}

    def node_address(self, node_id: int) -> tuple[str, int]:
        """Where clients reach ``node_id``: its listener of the name this request came in on (in-process requests:
        its first listener)."""
        name = self.connection.listener.name if self.connection is not None else None
        for listener in self.broker.listeners:
            if listener.node_id == node_id and name in (None, listener.name):
                return listener.advertised
        return self.advertised_address()

    def advertised_address(self) -> tuple[str, int]:
        """The address of the listener this request came in on, as clients must reach it (Kafka answers
        Metadata and FindCoordinator per listener)."""
        if self.connection is not None:
            return self.connection.listener.advertised
        return self.broker.advertised_host, self.broker.advertised_port
