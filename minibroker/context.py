"""What a handler knows about the request it serves: the broker, the header and the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.server import KafkaConnection


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    connection: KafkaConnection | None = None  # None for requests made in-process (tests, tools)

    def advertised_address(self) -> tuple[str, int]:
        """The address of the listener this request came in on, as clients must reach it (Kafka answers
        Metadata and FindCoordinator per listener)."""
        if self.connection is not None:
            return self.connection.listener.advertised
        return self.broker.advertised_host, self.broker.advertised_port
