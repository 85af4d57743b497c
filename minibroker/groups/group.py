"""A classic consumer group: its state machine, members, generation, protocol and leader (Kafka's ClassicGroup).

This module only holds the group's own invariants; the rebalance protocol that drives it (timers,
join/sync/heartbeat/leave) is in ``rebalance.py``. Members waiting for a JoinGroup or SyncGroup answer
hold a ``Responder``: the coordinator answers by calling it once with the response body.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from minibroker.groups.requests import Protocols, Responder
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.messages import CONSUMER_PROTOCOL_SUBSCRIPTION
from minibroker.protocol.primitives import ProtocolError, Reader
from minibroker.protocol.schema import codec

log = logging.getLogger(__name__)


CONSUMER_PROTOCOL_TYPE = "consumer"
MEMBER_ID_DELIMITER = "-"


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
}


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Responder | None = None
    awaiting_sync: Responder | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def has_satisfied_heartbeat(self) -> bool:
        """New members can expire while awaiting join; others awaiting a rebalance answer count as alive."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    created_ms: int
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_timestamp: int | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    new_member_added: bool = False
    subscribed_topics: set[str] | None = None
    _supported_protocols: Counter = field(default_factory=Counter)

    # ---- state ----

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def is_empty(self) -> bool:
        return self.state == GroupState.EMPTY

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise RuntimeError(f"group {self.group_id} cannot go from {self.state.value} to {target.value}")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # ---- members ----

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member, responder: Responder | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type or not self.supports_protocols(member.protocol_type, member.protocols):
            raise RuntimeError(f"member {member.member_id} does not fit group {self.group_id}'s protocols")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._supported_protocols.update(name for name, _ in member.protocols)
        member.awaiting_join = responder
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._supported_protocols.subtract(name for name, _ in member.protocols)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(
        self, member: Member, protocols: Protocols, rebalance_timeout_ms: int, session_timeout_ms: int,
        responder: Responder | None,
    ) -> None:
        self._supported_protocols.subtract(name for name, _ in member.protocols)
        member.protocols = protocols
        self._supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = responder

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """A static member rejoined with a new member id: fence the old id (its pending answers get FENCED_INSTANCE_ID)."""
        old = self.members.pop(old_member_id)
        self.complete_join(old, {
            "error_code": ErrorCode.FENCED_INSTANCE_ID, "member_id": old_member_id, "members": [],
            "protocol_name": None, "protocol_type": None, "leader": "", "skip_assignment": False,
        })
        self.complete_sync(old, {
            "error_code": ErrorCode.FENCED_INSTANCE_ID, "assignment": b"", "protocol_name": None, "protocol_type": None,
        })
        new = Member(
            new_member_id, old.group_instance_id, old.client_id, old.client_host, old.rebalance_timeout_ms,
            old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment,
        )
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return new

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode:
        """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID for a request naming a member that is not (or no longer) this one."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                log.info("memberId %s of static member %s in group %s is fenced by %s",
                         member_id, instance_id, self.group_id, existing)
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    @staticmethod
    def new_member_id(client_id: str, instance_id: str | None) -> str:
        import uuid  # here: the module (and the platform module it loads) only once a member joins

        return (instance_id if instance_id is not None else client_id) + MEMBER_ID_DELIMITER + str(uuid.uuid4())

    def add_pending_member(self, member_id: str) -> None:
        self.pending_join_members.add(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_join_members

    def not_yet_rejoined_dynamic_members(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None and not m.is_static]

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any member that did; False when nobody rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                log.info("group %s leader %s did not rejoin in time; %s is the new leader",
                         self.group_id, self.leader_id, member.member_id)
                self.leader_id = member.member_id
                return True
        return False

    # ---- protocols ----

    def _candidate_protocols(self) -> set[str]:
        return {name for name, count in self._supported_protocols.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and any(
            self._supported_protocols[name] == len(self.members) for name, _ in protocols
        )

    def select_protocol(self) -> str:
        """The protocol all members support that most members prefer (Kafka's vote)."""
        candidates = self._candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return max(votes.items(), key=lambda item: item[1])[0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics of the consumer protocol's subscriptions (read as v0, the prefix of every version); None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                reader = Reader(member.metadata(self.protocol_name))
                reader.int16()
                topics.update(codec(CONSUMER_PROTOCOL_SUBSCRIPTION, 0).decode(reader)["topics"])
        except ProtocolError as exc:
            log.warning("group %s: unreadable consumer subscription (%s); subscribed topics unknown", self.group_id, exc)
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol
        return topic in self.subscribed_topics

    # ---- answers ----

    def complete_join(self, member: Member, response: dict[str, Any]) -> bool:
        responder = member.awaiting_join
        if responder is None:
            return False
        member.awaiting_join = None
        responder(response)
        return True

    def complete_sync(self, member: Member, response: dict[str, Any]) -> bool:
        responder = member.awaiting_sync
        if responder is None:
            return False
        member.awaiting_sync = None
        responder(response)
        return True

    def member_list(self) -> list[dict[str, Any]]:
        """The JoinGroup response's member list, for the leader."""
        return [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata(self.protocol_name)}
            for m in self.members.values()
        ]

    def assignments(self) -> dict[str, bytes]:
        return {member_id: member.assignment for member_id, member in self.members.items()}
