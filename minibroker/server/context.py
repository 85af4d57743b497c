"""What a handler knows about the request it serves: the broker, the header and the connection, and (with the
authorizer on) what the connection's principal may do."""

from __future__ import annotations

import logging
import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from minibroker.acls.operations import CLUSTER, CLUSTER_NAME, DESCRIBE, SUPPORTED, operation_bits
from minibroker.acls.operations import NAMES as OPERATION_NAMES
from minibroker.acls.principal import ANONYMOUS, connection_principal
from minibroker.protocol.errors import NO_ERROR, ErrorCode

log = logging.getLogger(__name__)

NO_EPOCH = -1
# Answers that name the partition's current leader (KIP-951), so the client need not ask Metadata first.
LEADER_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.server.connection import KafkaConnection
    from minibroker.storage.partition_log import PartitionLog


class InjectedFault(Protocol):
    """What the server needs of a fault the control API injected (``minibroker.control.faults.Fault``): test control
    sits on top of the server, so the server names only this."""

    id: int
    action: str  # "error", "disconnect", "delay", "stall" or "throttle"
    error: ErrorCode
    throttle_ms: int
    cleared: asyncio.Event  # set when a stall is cleared

    def covers(self, topic: str, partition: int) -> bool: ...

    def delay_s(self) -> float: ...


class RequestContext:
    """One request's circumstances: who sent it, on which connection, with which fault injected."""

    __slots__ = ("broker", "api_key", "api_version", "correlation_id", "client_id", "peer", "connection", "fault")

    def __init__(
        self, broker: Broker, api_key: int, api_version: int, correlation_id: int, client_id: str | None, peer: str,
        connection: KafkaConnection | None = None, fault: InjectedFault | None = None,
    ) -> None:
        self.broker = broker
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.peer = peer
        self.connection = connection  # None for requests made in-process (tests, tools)
        self.fault = fault  # an injected error for the partitions it names (control API)

    @property
    def principal(self) -> str:
        """Who sent the request (in-process requests: User:ANONYMOUS); known once a SASL login is complete."""
        connection = self.connection
        if connection is None:
            return ANONYMOUS
        if connection.principal is None:
            principal = connection_principal(connection)
            if connection.sasl is not None and not connection.sasl.authenticated:
                return principal
            connection.principal = principal
        return connection.principal

    @property
    def host(self) -> str:
        """The client's address, as ACLs name hosts."""
        return self.peer.rpartition(":")[0]

    def allowed(self, operation: int, resource_type: int, name: str, log_denied: bool = True) -> bool:
        """Whether the principal may; only called with the authorizer on. A denial is logged once per principal,
        operation and resource (``log_denied`` False: a filter, as Kafka's logIfDenied, not logged)."""
        authorizer = self.broker.authorizer
        principal = self.principal
        if authorizer.authorize(principal, self.host, operation, resource_type, name):
            return True
        if log_denied and authorizer.first_denial(principal, operation, resource_type, name):
            from minibroker.acls.model import RESOURCE_TYPES  # loaded with the authorizer
            from minibroker.protocol.messages import KAFKA_APIS

            log.info(
                "Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s for request = %s "
                "(logged once per principal, operation and resource)",
                principal, OPERATION_NAMES[operation], self.host, RESOURCE_TYPES[resource_type], name,
                KAFKA_APIS[self.api_key][0],
            )
        return False

    def allowed_names(self, operation: int, resource_type: int, names: set[str], log_denied: bool = True) -> set[str]:
        """The names among ``names`` the principal may do the operation on (Kafka's filterByAuthorized)."""
        return {name for name in names if self.allowed(operation, resource_type, name, log_denied)}

    def authorized_operations(self, resource_type: int, name: str) -> int:
        """KIP-430's bits for a resource: every supported operation without an authorizer, else those allowed."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return operation_bits(*SUPPORTED[resource_type])
        return authorizer.authorized_operations(self.principal, self.host, resource_type, name)

    def cluster_authorized_operations(self) -> int:
        """The cluster's KIP-430 bits, 0 without DESCRIBE on it (AuthHelper.computeDescribeClusterResponse)."""
        if self.broker.authorizer is not None and not self.allowed(DESCRIBE, CLUSTER, CLUSTER_NAME):
            return 0
        return self.authorized_operations(CLUSTER, CLUSTER_NAME)

    @property
    def node_id(self) -> int:
        """The node the request was sent to (in-process requests: the first node)."""
        if self.connection is not None:
            return self.connection.listener.node_id
        return self.broker.node_ids[0]

    def led_partition(
        self, topic: str, index: int, current_leader_epoch: int = NO_EPOCH, require_leader: bool = True,
    ) -> tuple[PartitionLog | None, ErrorCode]:
        """The partition's log if the node asked leads it (or, without ``require_leader``, is one of its replicas: a
        consumer fetching from a follower), else why not (Kafka's getPartitionOrError and its leader epoch check,
        KIP-320): unknown; NOT_LEADER_OR_FOLLOWER, so the client looks the leader up again; a client's epoch older than
        the leader's FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (-1: not checked)."""
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
        if placed.leader != self.node_id and (require_leader or self.node_id not in placed.replicas):
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition_log, NO_ERROR

    def with_current_leader(self, answer: dict[str, Any], topic: str, index: int, since_version: int) -> dict[str, Any]:
        """A partition's error ``answer`` with KIP-951's CurrentLeader when its error sends the client to another node
        and the request's version carries the field (from ``since_version``: Produce v10, Fetch v16)."""
        if answer["error_code"] in LEADER_ERRORS and self.api_version >= since_version:
            placed = self.broker.placements.of(topic, index)
            answer["current_leader"] = {"leader_id": placed.leader, "leader_epoch": placed.leader_epoch}
        return answer

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
