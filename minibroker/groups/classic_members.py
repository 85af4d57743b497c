"""The online migration of KIP-848: members of the classic protocol in a consumer-protocol group, and the conversions.

A classic group with members becomes a consumer-protocol group when a ConsumerGroupHeartbeat joins it (its
members keep their partitions and their generation becomes the group epoch); from then on the classic members'
JoinGroup, SyncGroup, Heartbeat and LeaveGroup are answered from the consumer group, as Kafka does: a JoinGroup is
one step of the member towards its target assignment (answered at once, with no leader), the SyncGroup hands out
the member's assignment, and a Heartbeat answers REBALANCE_IN_PROGRESS while the member is behind the group. When
the last member of the consumer protocol leaves, a group of classic members becomes a classic group again and
rebalances. ``group.consumer.migration.policy`` says which of the two conversions are allowed.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from typing import Any

from minibroker.groups.consumer_coordinator import ConsumerGroups, join_key, metadata_hash, sync_key
from minibroker.groups.consumer_group import ConsumerGroup, ConsumerMember, MemberState
from minibroker.groups.consumer_records import (
    Record,
    assignment_record,
    epoch_record,
    member_record,
    member_tombstones,
    replay,
    target_epoch_record,
    target_record,
)
from minibroker.groups.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from minibroker.groups.rebalance import join_error
from minibroker.groups.requests import JoinRequest, LeavingMember, Protocols, Responder
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import ClassicMemberMetadata, GroupMetadataValue, MemberMetadata
from minibroker.protocol.messages import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION
from minibroker.protocol.primitives import ProtocolError, Reader, Writer
from minibroker.protocol.schema import codec

log = logging.getLogger(__name__)

MAX_ASSIGNMENT_VERSION = 3
UPGRADE_POLICIES = {"bidirectional", "upgrade"}
DOWNGRADE_POLICIES = {"bidirectional", "downgrade"}


class ClassicMemberError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


# ---- the embedded consumer protocol ----


def decode_subscription(metadata: bytes) -> dict[str, Any]:
    """A ConsumerProtocolSubscription (any version; its version is the first int16), with ``version`` added."""
    reader = Reader(metadata)
    version = reader.int16()
    body = codec(CONSUMER_PROTOCOL_SUBSCRIPTION, min(version, CONSUMER_PROTOCOL_SUBSCRIPTION.valid[1])).decode(reader)
    return {**body, "version": version}


def decode_assignment(data: bytes) -> dict[str, set[int]]:
    if not data:
        return {}
    reader = Reader(data)
    version = reader.int16()
    body = codec(CONSUMER_PROTOCOL_ASSIGNMENT, min(version, MAX_ASSIGNMENT_VERSION)).decode(reader)
    return {entry["topic"]: set(entry["partitions"]) for entry in body["assigned_partitions"]}


def encode_assignment(partitions: dict[str, set[int]], version: int) -> bytes:
    version = max(0, min(version, MAX_ASSIGNMENT_VERSION))
    writer = Writer()
    writer.int16(version)
    codec(CONSUMER_PROTOCOL_ASSIGNMENT, version).encode(writer, {
        "assigned_partitions": [{"topic": topic, "partitions": sorted(p)} for topic, p in sorted(partitions.items())],
        "user_data": None,
    })
    return writer.getvalue()


class ClassicMembers:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic members in consumer-protocol groups."""

    def __init__(self, consumer: ConsumerGroups) -> None:
        self.consumer = consumer
        self.topics = consumer.topics
        self.timer = consumer.timer

    # ---- names and ids ----

    def _by_id(self, named: dict[str, set[int]]) -> dict[bytes, frozenset[int]]:
        partitions = {}
        for topic, indexes in named.items():
            spec = self.topics.by_name(topic)
            if spec is not None:
                partitions[spec.topic_id] = frozenset(p for p in indexes if p < spec.num_partitions)
        return {topic_id: p for topic_id, p in partitions.items() if p}

    def _by_name(self, partitions: dict[bytes, frozenset[int]]) -> dict[str, set[int]]:
        named = {}
        for topic_id, indexes in partitions.items():
            spec = self.topics.by_id(topic_id)
            if spec is not None:
                named[spec.name] = set(indexes)
        return named

    def assignment_bytes(self, member: ConsumerMember) -> bytes:
        """The member's assigned partitions in the version of the subscription it joined with (Kafka's prepareAssignment)."""
        version = decode_subscription(member.classic.protocols[0][1])["version"] if member.classic else 0
        return encode_assignment(self._by_name(member.assigned), version)

    # ---- requests ----

    def join(self, group: ConsumerGroup, request: JoinRequest, respond: Responder) -> None:
        try:
            respond(self._join(group, request))
        except ClassicMemberError as exc:
            log.info("JoinGroup of %s to consumer-protocol group %s refused: %s", request.member_id, group.group_id, exc)
            respond(join_error(request.member_id, exc.error))

    def _join(self, group: ConsumerGroup, request: JoinRequest) -> dict[str, Any]:
        config = self.consumer.config
        member_id = request.member_id or str(uuid.uuid4())
        if len(group.members) >= config.consumer_max_size and member_id not in group.members:
            raise ClassicMemberError(ErrorCode.GROUP_MAX_SIZE_REACHED, "the group is full")
        if not _supports(group, request.protocol_type, request.protocols):
            raise ClassicMemberError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"member {member_id}'s protocols are not supported")
        if not request.member_id and request.require_known_member_id and request.group_instance_id is None:
            return {**join_error(member_id, ErrorCode.MEMBER_ID_REQUIRED), "member_id": member_id}
        try:
            subscription = decode_subscription(request.protocols[0][1])
        except ProtocolError as exc:
            raise ClassicMemberError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"unreadable subscription: {exc}") from exc
        records: list[Record] = []
        member, replaced = self._member(group, request, member_id, records)
        updated = dataclasses.replace(
            member,
            instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
            rack_id=subscription.get("rack_id") or member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription["topics"]))),
            client_id=request.client_id, client_host=request.client_host,
            classic=ClassicMemberMetadata(request.session_timeout_ms, request.protocols),
        )
        owned = self._by_id({t["topic"]: set(t["partitions"]) for t in subscription.get("owned_partitions") or []})
        reconciled = self.consumer.advance(group, member, updated, replaced, owned, records)
        error = self.consumer.write(group.group_id, records)
        if error != ErrorCode.NONE:
            raise ClassicMemberError(error, "writing the member failed")
        self.timer.cancel(join_key(group.group_id, member_id))
        self.consumer.schedule_session_timeout(group.group_id, member_id, request.session_timeout_ms)
        self.timer.schedule(sync_key(group.group_id, member_id), request.rebalance_timeout_ms, lambda: self.consumer.expire(
            group.group_id, member_id, None, "it did not send its SyncGroup in time",
        ))
        return {
            "error_code": ErrorCode.NONE, "generation_id": reconciled.member_epoch,
            "protocol_type": CONSUMER_PROTOCOL_TYPE, "protocol_name": request.protocols[0][0],
            "leader": "", "skip_assignment": False, "member_id": member_id, "members": [],
        }

    def _member(
        self, group: ConsumerGroup, request: JoinRequest, member_id: str, records: list[Record],
    ) -> tuple[ConsumerMember, str | None]:
        instance_id = request.group_instance_id
        if instance_id is None:
            return group.members.get(member_id) or ConsumerMember(member_id), None
        existing = group.static_member(instance_id)
        if existing is None:
            return group.members.get(member_id) or ConsumerMember(member_id), None
        if existing.member_id == member_id:
            return existing, None
        if request.member_id:
            raise ClassicMemberError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is {existing.member_id}")
        log.info("consumer group %s: static member %s rejoins (classic protocol) as %s", group.group_id, instance_id,
                 member_id)
        records += member_tombstones(group.group_id, existing.member_id)
        records.append(target_record(group.group_id, member_id, group.targets.get(existing.member_id, {})))
        return dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0), existing.member_id

    def _known(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        """Kafka's validateConsumerGroupMember, and the member must speak the classic protocol."""
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise ClassicMemberError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is {member.member_id}")
        if member is None or member.classic is None:
            raise ClassicMemberError(ErrorCode.UNKNOWN_MEMBER_ID, f"{member_id} is not a classic member")
        return member

    def sync(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
        protocol_type: str | None, protocol_name: str | None,
    ) -> dict[str, Any]:
        try:
            member = self._known(group, member_id, instance_id)
            _check_generation(member, generation_id)
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise ClassicMemberError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"protocol type {protocol_type}")
            if protocol_name is not None and protocol_name != member.classic.protocols[0][0]:
                raise ClassicMemberError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"protocol {protocol_name}")
            if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
                self._expect_rejoin(group, member)
                raise ClassicMemberError(ErrorCode.REBALANCE_IN_PROGRESS, "the group has a new epoch")
        except ClassicMemberError as exc:
            return {"error_code": exc.error, "assignment": b"", "protocol_type": protocol_type, "protocol_name": protocol_name}
        self.timer.cancel(sync_key(group.group_id, member.member_id))
        self.consumer.schedule_session_timeout(group.group_id, member.member_id, member.classic.session_timeout_ms)
        return {
            "error_code": ErrorCode.NONE, "assignment": self.assignment_bytes(member),
            "protocol_type": protocol_type, "protocol_name": protocol_name,
        }

    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        try:
            member = self._known(group, member_id, instance_id)
            _check_generation(member, generation_id)
        except ClassicMemberError as exc:
            return exc.error
        self.consumer.schedule_session_timeout(group.group_id, member.member_id, member.classic.session_timeout_ms)
        behind = member.member_epoch < group.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS or (
            member.state == MemberState.UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(group, member)
        )
        if behind:
            self._expect_rejoin(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _waiting_on_unreleased(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        target = group.targets.get(member.member_id, {})
        for topic_id, partitions in target.items():
            for partition in partitions - member.assigned.get(topic_id, frozenset()):
                if group.partition_epoch(topic_id, partition) != -1:
                    return True
        return False

    def _expect_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A member told to rejoin has its rebalance timeout to do so, counted from the first time it was told."""
        key = join_key(group.group_id, member.member_id)
        if not self.timer.is_scheduled(key):
            self.timer.schedule(key, member.rebalance_timeout_ms, lambda: self.consumer.expire(
                group.group_id, member.member_id, None, "it did not rejoin in time",
            ))

    def leave(self, group: ConsumerGroup, leaving: list[LeavingMember]) -> tuple[ErrorCode, list[dict[str, Any]]]:
        answers = []
        for request in leaving:
            try:
                member = self._known(group, request.member_id, request.group_instance_id) if request.member_id else (
                    self._known_instance(group, request.group_instance_id)
                )
                log.info("consumer group %s: classic member %s left (%s)", group.group_id, member.member_id,
                         request.reason or "no reason given")
                error = self.consumer.fence(group, member.member_id)  # a classic member's leave never downgrades
            except ClassicMemberError as exc:
                error = exc.error
            answers.append({"member_id": request.member_id, "group_instance_id": request.group_instance_id,
                            "error_code": error})
        return ErrorCode.NONE, answers

    def _known_instance(self, group: ConsumerGroup, instance_id: str | None) -> ConsumerMember:
        member = group.static_member(instance_id)
        if member is None or member.classic is None:
            raise ClassicMemberError(ErrorCode.UNKNOWN_MEMBER_ID, f"instance {instance_id} is unknown")
        return member

    # ---- conversions ----

    def upgrade(self, classic: ClassicGroup) -> tuple[list[Record], ConsumerGroup]:
        """The records that turn a classic group with members into a consumer-protocol group (Kafka's
        convertToConsumerGroup), and that group as they make it; ClassicMemberError if it cannot be converted."""
        group_id = classic.group_id
        policy = self.consumer.config.consumer_migration_policy
        if policy not in UPGRADE_POLICIES:
            raise ClassicMemberError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE or len(classic.members) > self.consumer.config.consumer_max_size:
            raise ClassicMemberError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group")
        epoch = classic.generation_id
        records: list[Record] = []
        members = []
        try:
            for m in classic.members.values():
                subscription = decode_subscription(m.metadata(classic.protocol_name))
                assigned = self._by_id(decode_assignment(m.assignment))
                members.append(ConsumerMember(
                    m.member_id, m.group_instance_id, subscription.get("rack_id"), m.client_id, m.client_host,
                    tuple(sorted(set(subscription["topics"]))), None, m.rebalance_timeout_ms, None, epoch, epoch,
                    MemberState.STABLE, assigned, {}, ClassicMemberMetadata(m.session_timeout_ms, m.protocols),
                ))
        except (ProtocolError, ValueError) as exc:
            raise ClassicMemberError(ErrorCode.GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade the classic group {group_id} to consumer group because the embedded consumer protocol "
                f"is malformed: {exc}"
            )) from exc
        names = {name for member in members for name in member.subscribed_topic_names}
        specs = [spec for spec in map(self.topics.by_name, sorted(names)) if spec is not None]
        records += [member_record(group_id, member) for member in members]
        records.append(epoch_record(group_id, epoch, metadata_hash(specs)))
        records += [target_record(group_id, member.member_id, member.assigned) for member in members]
        records.append(target_epoch_record(group_id, epoch, self.timer.now_ms()))
        records += [assignment_record(group_id, member) for member in members]
        converted: dict[str, ConsumerGroup] = {}
        for key, value in records:
            replay(converted, key, value)
        log.info("group %s: the classic group (generation %d, %d members) becomes a consumer-protocol group",
                 group_id, epoch, len(members))
        return records, converted[group_id]

    def downgrade_value(self, group: ConsumerGroup, leaving_id: str) -> GroupMetadataValue | None:
        """The classic group a consumer-protocol group becomes when ``leaving_id`` leaves and only classic members stay
        (Kafka's validateOnlineDowngradeWithFencedMember and ClassicGroup.fromConsumerGroup); None if it stays."""
        if self.consumer.config.consumer_migration_policy not in DOWNGRADE_POLICIES:
            return None
        staying = [m for m_id, m in group.members.items() if m_id != leaving_id]
        if not staying or any(m.classic is None for m in staying) or group.members[leaving_id].classic is not None:
            return None
        if len(staying) > self.consumer.config.max_size:
            return None
        protocol = staying[0].classic.protocols[0][0]
        if any(all(name != protocol for name, _ in m.classic.protocols) for m in staying):
            return None
        members = tuple(
            MemberMetadata(
                m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.classic.session_timeout_ms, _metadata(m.classic.protocols, protocol), self.assignment_bytes(m),
            )
            for m in staying
        )
        return GroupMetadataValue(
            protocol_type=CONSUMER_PROTOCOL_TYPE, generation=group.group_epoch, protocol=protocol,
            leader=staying[0].member_id, current_state_timestamp=self.timer.now_ms(), members=members,
        )


def _metadata(protocols: Protocols, name: str) -> bytes:
    return next(metadata for protocol, metadata in protocols if protocol == name)


def _supports(group: ConsumerGroup, protocol_type: str, protocols: Protocols) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol every classic
    member supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return not classic or any(all(any(name == p for p, _ in c.protocols) for c in classic) for name, _ in protocols)


def _check_generation(member: ConsumerMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise ClassicMemberError(ErrorCode.ILLEGAL_GENERATION, (
            f"The request generation id {generation_id} is not equal to the member epoch {member.member_epoch}"
        ))


