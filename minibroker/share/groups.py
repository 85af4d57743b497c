"""Share group membership (KIP-932), as Kafka's GroupMetadataManager runs ShareGroupHeartbeat and ShareGroupDescribe.

A heartbeat takes Kafka's three steps: update the member (a new member, or a changed subscription, bumps the group
epoch, and so does a change of the subscribed topics: a new topic, more partitions), compute a new target assignment
with the simple assignor when the group epoch is ahead of it, then give the member its target. Share members own
nothing exclusively, so there is nothing to revoke: a member gets its target at once, with the target's epoch.

Each step produces ``__consumer_offsets`` records (ShareGroup* types 10-15); they are appended and then replayed onto
the groups, exactly as at start-up, so memory never runs ahead of the log. A member that leaves, is fenced or lets
its session expire is removed (tombstones, group epoch + 1). Its acquired records are not the coordinator's to
release (in Kafka they live on the partitions' leaders, which hear nothing from the coordinator): they go back when
the member's share session closes (a final-epoch request, or its connection dropping) or their locks run out.
Sessions run on the coordinator's ``Timer`` (the broker's clock).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from minibroker.groups.assignors import TopicPartitions, TopicSpec
from minibroker.groups.consumer_coordinator import (
    HeartbeatError,
    TopicCatalog,
    error_answer,
    metadata_hash,
    named_partitions,
)
from minibroker.groups.group_configs import GroupConfigs
from minibroker.groups.timer import Timer
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    ShareTopicPartitions,
)
from minibroker.share.assignor import assign

log = logging.getLogger(__name__)

SHARE_TYPE = "share"  # ListGroups' group type and protocol type of these groups
ASSIGNOR_NAME = "simple"
LEAVE_GROUP_MEMBER_EPOCH = -1
STABLE_MEMBER_STATE = 0  # MemberState.STABLE: the only state a share member is in

Record = tuple[Any, Any]
Writer = Callable[[str, list[Record]], ErrorCode]


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: TopicPartitions = field(default_factory=dict)

    def metadata(self) -> tuple[Any, ...]:
        return self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names


@dataclass(eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    targets: dict[str, TopicPartitions] = field(default_factory=dict)
    # The share partitions whose state is initialized (topic id -> (name, partitions)): what StatePartitionMetadata says
    initialized: dict[bytes, tuple[str, frozenset[int]]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.members

    def state(self) -> str:
        """Kafka's ShareGroup.ShareGroupState: Empty or Stable (a share member never waits for another's partitions)."""
        return "Empty" if self.is_empty else "Stable"


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str
    client_host: str


class ShareGroups:
    """The share groups of one coordinator (those of the ``__consumer_offsets`` partitions its node leads)."""

    def __init__(
        self, timer: Timer, topics: TopicCatalog, write: Writer, group_configs: GroupConfigs, max_size: int,
    ) -> None:
        self.timer = timer
        self.topics = topics
        self.write = write
        self.group_configs = group_configs
        self.max_size = max_size
        self.groups: dict[str, ShareGroup] = {}

    # ---- heartbeat ----

    @staticmethod
    def validate(request: ShareHeartbeat) -> None:
        """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
        _require(request.member_id != "", "MemberId can't be empty.")
        _require(request.group_id != "", "GroupId can't be empty.")
        _require(request.rack_id != "", "RackId can't be empty.")
        if request.member_epoch == 0:
            _require(bool(request.subscribed_topic_names), "SubscribedTopicNames must be set in first request.")
        elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            _require(False, "MemberEpoch is invalid.")

    def heartbeat(self, request: ShareHeartbeat) -> dict[str, Any]:
        """One validated ShareGroupHeartbeat; raises HeartbeatError."""
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(request.group_id, request.member_id)
        group_id, member_id = request.group_id, request.member_id
        group = self.groups.get(group_id)
        if group is None:
            if request.member_epoch != 0:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = ShareGroup(group_id)
        if len(group.members) >= self.max_size and member_id not in group.members:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED, (
                f"The share group has reached its maximum capacity of {self.max_size} members."
            ))
        member = self._member(group, request)
        names = request.subscribed_topic_names
        updated = replace(
            member,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            subscribed_topic_names=tuple(sorted(set(names))) if names is not None else member.subscribed_topic_names,
            client_id=request.client_id, client_host=request.client_host,
        )
        records: list[Record] = []
        reconciled = self._advance(group, member, updated, records)
        error = self.write(group_id, records)
        if error != ErrorCode.NONE:
            return error_answer(error)
        self._schedule_session_timeout(group_id, member_id)
        assignment = None
        if request.member_epoch == 0 or reconciled.assigned != member.assigned:
            assignment = {"topic_partitions": _topic_partitions(reconciled.assigned)}
        return {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
            "member_epoch": reconciled.member_epoch, "heartbeat_interval_ms": self.heartbeat_interval_ms(group_id),
            "assignment": assignment,
        }

    def _member(self, group: ShareGroup, request: ShareHeartbeat) -> ShareMember:
        member = group.members.get(request.member_id)
        if member is None:
            if request.member_epoch != 0:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, (
                    f"Member {request.member_id} is not a member of group {group.group_id}."
                ))
            log.info("share group %s: member %s joins", group.group_id, request.member_id)
            return ShareMember(request.member_id)
        if request.member_epoch == 0:  # it lost track of its epoch (fenced): it starts again, owning nothing
            return replace(member, member_epoch=0, previous_member_epoch=0, assigned={})
        received = request.member_epoch
        if received > member.member_epoch:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The share group member has a greater member epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
            ))
        if received < member.member_epoch and received != member.previous_member_epoch:  # else its answer was lost
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The share group member has a smaller member epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
                f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin."
            ))
        return member

    def _advance(self, group: ShareGroup, member: ShareMember, updated: ShareMember, records: list[Record]) -> ShareMember:
        """Kafka's three steps; appends the records and returns the member as they leave it."""
        group_id, member_id = group.group_id, updated.member_id
        joined = member_id not in group.members
        bump = False
        if joined or updated.metadata() != member.metadata():
            records.append(member_record(group_id, updated))
            bump = joined or updated.subscribed_topic_names != member.subscribed_topic_names
        members = dict(group.members)
        members[member_id] = updated
        specs = self._subscribed(members)
        new_hash = metadata_hash(specs.values())
        group_epoch = group.group_epoch
        if bump or new_hash != group.metadata_hash:
            group_epoch += 1
            records.append(epoch_record(group_id, group_epoch, new_hash))
            log.debug("share group %s: epoch %d", group_id, group_epoch)
            state = self._initialized(specs)
            if state != group.initialized:
                records.append(state_record(group_id, state))
        targets = group.targets
        target_epoch = group.assignment_epoch
        if group_epoch > group.assignment_epoch:
            subscriptions = {m_id: frozenset(m.subscribed_topic_names) for m_id, m in members.items()}
            targets = assign(subscriptions, specs, group.targets)
            records += [
                target_record(group_id, m_id, partitions) for m_id, partitions in sorted(targets.items())
                if partitions != group.targets.get(m_id) or m_id not in group.targets
            ]
            records.append(target_epoch_record(group_id, group_epoch, self.timer.now_ms()))
            target_epoch = group_epoch
        target = targets.get(member_id, {})
        reconciled = updated
        if updated.member_epoch != target_epoch or updated.assigned != target:
            reconciled = replace(
                updated, previous_member_epoch=updated.member_epoch, member_epoch=target_epoch, assigned=target,
            )
        if reconciled != updated or joined or member.member_epoch != updated.member_epoch:
            records.append(assignment_record(group_id, reconciled))
        return reconciled

    def _subscribed(self, members: dict[str, ShareMember]) -> dict[str, TopicSpec]:
        names = {name for member in members.values() for name in member.subscribed_topic_names}
        return {name: spec for name in sorted(names) if (spec := self.topics.by_name(name)) is not None}

    @staticmethod
    def _initialized(specs: dict[str, TopicSpec]) -> dict[bytes, tuple[str, frozenset[int]]]:
        """Every subscribed partition's state is initialized at once (the state lives in this broker, so there is no
        share coordinator round trip to wait for)."""
        return {spec.topic_id: (spec.name, frozenset(range(spec.num_partitions))) for spec in specs.values()}

    # ---- leaving, fencing, sessions ----

    def _leave(self, group_id: str, member_id: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        if member_id not in group.members:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        log.info("share group %s: member %s left", group_id, member_id)
        error = self.fence(group, member_id)
        if error != ErrorCode.NONE:
            return error_answer(error)
        return {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
            "member_epoch": LEAVE_GROUP_MEMBER_EPOCH, "heartbeat_interval_ms": 0, "assignment": None,
        }

    def fence(self, group: ShareGroup, member_id: str) -> ErrorCode:
        """Remove a member and bump the group epoch so the others get its partitions (Kafka's shareGroupFenceMember)."""
        self.timer.cancel(_session_key(group.group_id, member_id))
        members = {m_id: m for m_id, m in group.members.items() if m_id != member_id}
        records = member_tombstones(group.group_id, member_id)
        records.append(epoch_record(group.group_id, group.group_epoch + 1, metadata_hash(self._subscribed(members).values())))
        return self.write(group.group_id, records)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "share.heartbeat.interval.ms")

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "share.session.timeout.ms")

    def _group_setting(self, group_id: str, name: str) -> int:
        """The group's own value, else the broker's ``group.<name>`` (read at each heartbeat, as Kafka does)."""
        own = self.group_configs.value(group_id, name)
        return int(self.group_configs.default(name) or 0) if own is None else own

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(
            _session_key(group_id, member_id), self.session_timeout_ms(group_id), lambda: self._expire(group_id, member_id),
        )

    def _expire(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("share group %s: member %s fenced because its session expired", group_id, member_id)
        error = self.fence(group, member_id)
        if error != ErrorCode.NONE:
            log.warning("share group %s: fencing member %s failed (%s); retrying at the next session timeout",
                        group_id, member_id, error.name)
            self._schedule_session_timeout(group_id, member_id)

    def on_loaded(self, group: ShareGroup) -> None:
        """After a load every member gets a full session to heartbeat in, as in Kafka."""
        for member_id in group.members:
            self._schedule_session_timeout(group.group_id, member_id)

    def unload(self, group_id: str) -> None:
        """Forget a group whose partition moved to another coordinator: it lives on in the log."""
        group = self.groups.pop(group_id)
        for member_id in group.members:
            self.timer.cancel(_session_key(group_id, member_id))

    # ---- replay and administration ----

    def replay(self, key: Any, value: Any) -> None:
        group = self.groups.get(key.group)
        replay(self.groups, key, value)
        if group is not None and key.group not in self.groups:
            for member_id in group.members:
                self.timer.cancel(_session_key(key.group, member_id))
            log.info("share group %s deleted", key.group)

    def initialize(self, group_id: str, altered: dict[bytes, tuple[str, frozenset[int]]]) -> ErrorCode:
        """AlterShareGroupOffsets' ShareGroupStatePartitionMetadata record: the altered share partitions (topic id ->
        (name, partitions)) join the group's initialized ones. Replayed, the record creates a group that does not exist
        yet (Kafka 4.2+, KAFKA-19662); nothing is written when no topic was altered or nothing changes."""
        group = self.groups.get(group_id)
        current = {} if group is None else group.initialized
        initialized = dict(current)
        for topic_id, (name, partitions) in altered.items():
            initialized[topic_id] = (name, current.get(topic_id, (name, frozenset()))[1] | partitions)
        if not altered or (group is not None and initialized == current):
            return ErrorCode.NONE
        if group is None:
            log.info("share group %s created by AlterShareGroupOffsets", group_id)
        return self.write(group_id, [state_record(group_id, initialized)])

    def deletion_records(self, group: ShareGroup) -> list[Record]:
        return group_tombstones(group)

    def describe(self, group_id: str) -> dict[str, Any]:
        """One ShareGroupDescribe group (the caller answers for unknown ids)."""
        group = self.groups[group_id]
        return {
            "error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id, "group_state": group.state(),
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch, "assignor_name": ASSIGNOR_NAME,
            "members": [
                {
                    "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "assignment": {"topic_partitions": named_partitions(self.topics, m.assigned)},
                }
                for m in group.members.values()
            ],
        }

    @staticmethod
    def listed(group: ShareGroup) -> dict[str, Any]:
        return {"group_id": group.group_id, "protocol_type": SHARE_TYPE, "group_state": group.state(), "group_type": SHARE_TYPE}


# ---- records (Kafka's GroupCoordinatorRecordHelpers for share groups) and their replay ----


def epoch_record(group_id: str, epoch: int, hash_: int) -> Record:
    return ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(epoch, hash_)


def member_record(group_id: str, member: ShareMember) -> Record:
    value = ShareGroupMemberMetadataValue(member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names)
    return ShareGroupMemberMetadataKey(group_id, member.member_id), value


def target_record(group_id: str, member_id: str, partitions: TopicPartitions) -> Record:
    return ShareGroupTargetAssignmentMemberKey(group_id, member_id), ShareGroupTargetAssignmentMemberValue(partitions)


def target_epoch_record(group_id: str, epoch: int, now_ms: int) -> Record:
    return ShareGroupTargetAssignmentMetadataKey(group_id), ShareGroupTargetAssignmentMetadataValue(epoch, now_ms)


def assignment_record(group_id: str, member: ShareMember) -> Record:
    value = ShareGroupCurrentMemberAssignmentValue(
        member.member_epoch, member.previous_member_epoch, STABLE_MEMBER_STATE, member.assigned,
    )
    return ShareGroupCurrentMemberAssignmentKey(group_id, member.member_id), value


def state_record(group_id: str, initialized: dict[bytes, tuple[str, frozenset[int]]]) -> Record:
    topics = tuple(ShareTopicPartitions(topic_id, name, partitions) for topic_id, (name, partitions) in sorted(initialized.items()))
    return ShareGroupStatePartitionMetadataKey(group_id), ShareGroupStatePartitionMetadataValue(initialized=topics)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """What removing a member writes, in Kafka's order: its assignment, its target, then its subscription."""
    return [
        (ShareGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        (ShareGroupTargetAssignmentMemberKey(group_id, member_id), None),
        (ShareGroupMemberMetadataKey(group_id, member_id), None),
    ]


def group_tombstones(group: ShareGroup) -> list[Record]:
    """Everything of the group, the epoch record last: its tombstone deletes the group."""
    records: list[Record] = []
    for member_id in group.members:
        records += member_tombstones(group.group_id, member_id)
    records += [
        (ShareGroupTargetAssignmentMetadataKey(group.group_id), None),
        (ShareGroupStatePartitionMetadataKey(group.group_id), None),
        (ShareGroupMetadataKey(group.group_id), None),
    ]
    return records


def replay(groups: dict[str, ShareGroup], key: Any, value: Any) -> None:
    """Apply one share group record (a group is created by its first record, deleted by its epoch tombstone)."""
    group_id = key.group
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = ShareGroup(group_id)
    if isinstance(key, ShareGroupMetadataKey):
        if value is None:
            del groups[group_id]
        else:
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif isinstance(key, ShareGroupMemberMetadataKey):
        if value is None:
            group.members.pop(key.member_id, None)
            return
        current = group.members.get(key.member_id) or ShareMember(key.member_id)
        group.members[key.member_id] = replace(
            current, rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
        )
    elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
        if value is not None:
            group.assignment_epoch = value.assignment_epoch
    elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
        if value is None:
            group.targets.pop(key.member_id, None)
        else:
            group.targets[key.member_id] = dict(value.partitions)
    elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
        current = group.members.get(key.member_id)
        if value is None:
            if current is not None:
                group.members[key.member_id] = replace(current, member_epoch=0, previous_member_epoch=0, assigned={})
            return
        group.members[key.member_id] = replace(
            current or ShareMember(key.member_id), member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, assigned=dict(value.assigned),
        )
    elif isinstance(key, ShareGroupStatePartitionMetadataKey):
        group.initialized = {} if value is None else {t.topic_id: (t.name, t.partitions) for t in value.initialized}


def _topic_partitions(partitions: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic_id": topic_id, "partitions": sorted(p)} for topic_id, p in sorted(partitions.items())]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def _session_key(group_id: str, member_id: str) -> str:
    return f"share-session-{group_id}-{member_id}"
