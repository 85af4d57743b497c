"""What group requests carry into the coordinator: the shapes the handlers build.

Kept apart from the coordinator so the handler table can be imported (at start-up) without the coordinator's
modules, which load on the first group request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

Responder = Callable[[dict[str, Any]], None]
Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool  # JoinGroup v4+: a first join gets MEMBER_ID_REQUIRED
    supports_skip_assignment: bool  # JoinGroup v9+
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int = -1  # OffsetCommit v1's CommitTimestamp; -1: the time of the commit
