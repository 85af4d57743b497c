"""The classic group coordinator: the one entry point the request handlers use.

It owns the groups and the committed offsets, checks what Kafka's GroupCoordinatorService checks
before a request reaches a group (group id, session timeout, partition still loading), writes every
change to ``__consumer_offsets`` before answering, and rebuilds its state by replaying that log.
Offsets change only by replaying records (at load, or right after a successful write), so memory
never runs ahead of the log; group membership is the rebalancer's live state and is written as
GroupMetadata records at the points Kafka writes them. Transactional offset commits (TxnOffsetCommit) are
written in the producer's transaction and stay pending (``txn_offsets``) until its marker reaches the group's
partition: COMMIT makes them committed offsets, ABORT drops them, at load as when the marker is written.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from minibroker.cluster.coordinators import ServedPartitions
from minibroker.groups.assignors import TopicSpec
from minibroker.groups.classic_members import ClassicMemberError, ClassicMembers
from minibroker.groups.config import GroupConfig
from minibroker.groups.consumer_coordinator import (
    CONSUMER_TYPE,
    ConsumerGroups,
    HeartbeatError,
    HeartbeatRequest,
    TopicCatalog,
    error_answer,
)
from minibroker.groups.consumer_group import ConsumerGroup
from minibroker.groups.consumer_records import CONSUMER_GROUP_KEYS
from minibroker.groups.group import ClassicGroup, GroupState, Member
from minibroker.groups.group_configs import GroupConfigs
from minibroker.groups.offsets import OffsetAndMetadata, OffsetStore
from minibroker.groups.rebalance import Rebalancer, join_error, sync_error
from minibroker.groups.requests import JoinRequest, LeavingMember, PartitionCommit, Responder
from minibroker.groups.timer import Timer
from minibroker.groups.txn_offsets import PendingTxnOffsets, TopicPartition
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import (
    NO_LEADER_EPOCH,
    SHARE_GROUP_KEYS,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    decode_value,
    encode_key,
    encode_value,
)
from minibroker.protocol.key_partitions import partition_for
from minibroker.protocol.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from minibroker.share.groups import SHARE_TYPE, ShareGroup, ShareGroups, ShareHeartbeat

log = logging.getLogger(__name__)

INVALID_OFFSET = -1
NO_RETENTION = -1
TXN_COMMIT_API_VERSION = 9  # what a transactional commit counts as: any member may make one
CLASSIC_TYPE = "classic"

Record = tuple[RecordKey, Any]

# How a failed __consumer_offsets write is reported to clients (Kafka's appendGroupMetadataErrorToResponseError).
WRITE_ERROR_ANSWERS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


class CoordinatorWriteError(Exception):
    """Appending to __consumer_offsets failed; ``error`` is the Kafka error of the failed append."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


class RecordLog(Protocol):
    """Where the coordinator's records go: the ``__consumer_offsets`` partitions."""

    @property
    def num_partitions(self) -> int: ...

    def append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]], producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> int:
        """Append the (key, value) records as one batch (transactional when ``producer_id`` is set); returns the log
        offset of the first record; raises CoordinatorWriteError."""


class NoTopics:
    """A catalog without topics, for a coordinator that serves no consumer-protocol group (unit tests)."""

    version = 0

    def by_name(self, name: str) -> TopicSpec | None:
        return None

    def by_id(self, topic_id: bytes) -> TopicSpec | None:
        return None

    def names(self) -> list[str]:
        return []


class GroupCoordinator:
    """The coordinator of one node: it serves the groups of the ``__consumer_offsets`` partitions it owns (those its
    node leads; by default every partition, as on a single broker)."""

    def __init__(
        self, config: GroupConfig, timer: Timer, records: RecordLog, topics: TopicCatalog | None = None,
        owned: Iterable[int] | None = None, group_configs: GroupConfigs | None = None,
        share_group_deleted: Callable[[str], None] | None = None, record_caps: Mapping[str, int] | None = None,
    ) -> None:
        self.config = config
        self.record_caps = record_caps or {}  # the value versions an emulated Kafka release wrote (record_versions)
        self.timer = timer
        self.records = records
        self.groups: dict[str, ClassicGroup] = {}
        self.consumer = ConsumerGroups(config, timer, topics or NoTopics(), self._write, self._downgrade, group_configs)
        self.share = ShareGroups(
            timer, topics or NoTopics(), self._write, group_configs or GroupConfigs({}), config.share_max_size,
        )
        self.share_group_deleted = share_group_deleted or (lambda group_id: None)
        self.classic_members = ClassicMembers(self.consumer)
        self.offsets = OffsetStore()
        self.pending = PendingTxnOffsets()
        self.partitions = ServedPartitions(owned)
        self.rebalancer = Rebalancer(self.groups, timer, config, self._persist_group)

    # ---- partitions, loading and replay ----

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.records.num_partitions)

    def availability(self, group_id: str) -> ErrorCode:
        """Kafka's validateGroupStatus: whether this node serves the group's partition."""
        return self.partitions.status(self.partition_of(group_id))

    def begin_loading(self, partitions: Iterable[int]) -> None:
        """The node now leads these partitions: they are owned, and loading until ``finish_loading``."""
        self.partitions.begin_loading(partitions)

    def resign(self, partition: int) -> None:
        """Leadership of ``partition`` moved away (Kafka's onResignation): its groups, offsets and pending transactional
        offsets are forgotten, their timers cancelled, and members waiting on a join or a sync hear NOT_COORDINATOR, so
        they find the new coordinator, which loads them from the log."""
        self.partitions.resign(partition)
        for group_id in [g for g in self.groups if self.partition_of(g) == partition]:
            group = self.groups.pop(group_id)
            self.rebalancer.abort_pending(group, ErrorCode.NOT_COORDINATOR)
            self.rebalancer.cancel_timers(group)
        for group_id in [g for g in self.consumer.groups if self.partition_of(g) == partition]:
            self.consumer.unload(group_id)
        for group_id in [g for g in self.share.groups if self.partition_of(g) == partition]:
            self.share.unload(group_id)
        self.offsets.forget(lambda group_id: self.partition_of(group_id) == partition)
        self.pending.forget(lambda group_id: self.partition_of(group_id) == partition)

    def replay(self, key: bytes, value: bytes | None, offset: int, producer_id: int = NO_PRODUCER_ID) -> None:
        """Apply one record read back from the log at ``offset`` (``producer_id``: that of its batch if transactional);
        raises ProtocolError for bytes that do not decode."""
        decoded = decode_key(key)
        if isinstance(decoded, OffsetCommitKey):
            self._apply(decoded, decode_offset_value(value), offset, producer_id)
        elif producer_id != NO_PRODUCER_ID:
            log.warning("group %s: skipping group metadata in a transactional batch at offset %d", decoded.group, offset)
        elif isinstance(decoded, GroupMetadataKey):
            self._load_group(decoded.group, decode_group_value(value))
        elif isinstance(decoded, SHARE_GROUP_KEYS):
            self.share.replay(decoded, decode_value(decoded, value))
        else:
            self.consumer.replay(decoded, decode_value(decoded, value))

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` is in ``partition``: its pending offsets there become committed
        (unless a plain commit written after them is newer, as Kafka decides) or are dropped."""
        ended = self.pending.take(producer_id, lambda group_id: self.partition_of(group_id) == partition)
        for group_id, offsets in ended.items():
            log.debug("group %s: %d offset(s) of producer %d %s", group_id, len(offsets), producer_id,
                      "committed" if committed else "aborted")
            if not committed:
                continue
            self._ensure_group(group_id)
            for (topic, index), offset in offsets.items():
                current = self.offsets.get(group_id, topic, index)
                if current is None or current.record_offset < offset.record_offset:
                    self.offsets.put(group_id, topic, index, offset)

    def on_marker(self, partition: int, producer_id: int, committed: bool) -> None:
        """A marker was just written to ``partition``; while it loads, the loader reads the marker from the log, and a
        partition this node does not own is read by the coordinator that loads it."""
        if self.partitions.status(partition) == ErrorCode.NONE:
            self.complete_transaction(partition, producer_id, committed)

    def finish_loading(self, partition: int) -> None:
        """The partition's records are all replayed: its groups go live (members get a session to heartbeat in)."""
        for group in list(self.groups.values()):
            if self.partition_of(group.group_id) == partition:
                self.rebalancer.on_loaded(group)
        for consumer_group in self.consumer.groups.values():
            if self.partition_of(consumer_group.group_id) == partition:
                self.consumer.on_loaded(consumer_group)
        for share_group in self.share.groups.values():
            if self.partition_of(share_group.group_id) == partition:
                self.share.on_loaded(share_group)
        self.partitions.finish_loading(partition)

    def _load_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        old = self.groups.pop(group_id, None)
        if old is not None:
            self.rebalancer.cancel_timers(old)
        if value is None:
            return
        group = ClassicGroup(
            group_id,
            created_ms=self.timer.now_ms(),
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            current_state_timestamp=None if value.current_state_timestamp < 0 else value.current_state_timestamp,
        )
        for m in value.members:
            rebalance_timeout = m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
            group.add(Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance_timeout, m.session_timeout,
                value.protocol_type, ((value.protocol or "", m.subscription),), m.assignment,
            ))
        group.leader_id = value.leader
        group.subscribed_topics = group.compute_subscribed_topics()
        self.groups[group_id] = group

    def _ensure_group(self, group_id: str) -> None:
        if group_id not in self.groups and group_id not in self.consumer.groups:
            log.info("group %s is a simple group (offsets committed without membership)", group_id)
            self.groups[group_id] = ClassicGroup(group_id, created_ms=self.timer.now_ms())

    def _apply(
        self, key: RecordKey, value: OffsetCommitValue | GroupMetadataValue | None, record_offset: int,
        producer_id: int = NO_PRODUCER_ID,
    ) -> None:
        """The in-memory effect of a record we wrote at ``record_offset`` (group metadata values are already live
        state); a transactional offset commit stays pending until its marker."""
        if isinstance(key, CONSUMER_GROUP_KEYS):
            self.consumer.replay(key, value)
        elif isinstance(key, SHARE_GROUP_KEYS):
            self.share.replay(key, value)
        elif isinstance(key, OffsetCommitKey):
            if value is None:
                self.offsets.remove(key.group, key.topic, key.partition)
                self.pending.discard(key.group, key.topic, key.partition)
                return
            self._ensure_group(key.group)
            offset = OffsetAndMetadata.from_record(value, record_offset)
            if producer_id == NO_PRODUCER_ID:
                self.offsets.put(key.group, key.topic, key.partition, offset)
            else:
                self.pending.put(producer_id, key.group, key.topic, key.partition, offset)
        elif value is None:
            group = self.groups.pop(key.group, None)
            if group is not None:
                self.rebalancer.cancel_timers(group)
                group.transition_to(GroupState.DEAD, self.timer.now_ms())
                log.info("group %s deleted", key.group)

    def _write(
        self, group_id: str, records: list[Record], producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> ErrorCode:
        """Append records for one group's partition (in a producer's transaction if given), then apply them; the
        error to answer with."""
        if not records:
            return ErrorCode.NONE
        encoded = [(encode_key(key), encode_value(value, self.record_caps)) for key, value in records]
        try:
            base_offset = self.records.append(self.partition_of(group_id), encoded, producer_id, producer_epoch)
        except CoordinatorWriteError as exc:
            log.warning("writing %d record(s) of group %s to __consumer_offsets failed: %s", len(records), group_id, exc)
            return WRITE_ERROR_ANSWERS.get(exc.error, exc.error)
        for index, (key, value) in enumerate(records):
            self._apply(key, value, base_offset + index, producer_id)
        return ErrorCode.NONE

    def _persist_group(self, group: ClassicGroup, assignment: dict[str, bytes]) -> ErrorCode:
        members = tuple(
            MemberMetadata(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, m.metadata(group.protocol_name), assignment.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=-1 if group.current_state_timestamp is None else group.current_state_timestamp,
            members=members,
        )
        return self._write(group.group_id, [(GroupMetadataKey(group.group_id), value)])

    # ---- membership ----

    def join_group(self, request: JoinRequest, respond: Responder) -> None:
        if not request.group_id:
            respond(join_error(request.member_id, ErrorCode.INVALID_GROUP_ID))
        elif not self.config.min_session_timeout_ms <= request.session_timeout_ms <= self.config.max_session_timeout_ms:
            respond(join_error(request.member_id, ErrorCode.INVALID_SESSION_TIMEOUT))
        elif (unavailable := self.availability(request.group_id)) != ErrorCode.NONE:
            respond(join_error(request.member_id, unavailable))
        elif request.group_id in self.share.groups:
            respond(join_error("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL))  # as Kafka: not a classic group
        else:
            consumer_group = self.consumer.groups.get(request.group_id)
            if consumer_group is not None and not consumer_group.is_empty:
                self.classic_members.join(consumer_group, request, respond)
                return
            if consumer_group is not None:
                log.info("group %s: the empty consumer-protocol group becomes a classic group", request.group_id)
                error = self._write(request.group_id, self.consumer.deletion_records(consumer_group))
                if error != ErrorCode.NONE:
                    respond(join_error(request.member_id, error))
                    return
            self.rebalancer.join(request, respond)

    def consumer_heartbeat(self, request: HeartbeatRequest) -> dict[str, Any]:
        """ConsumerGroupHeartbeat (KIP-848)."""
        if not self.config.consumer_protocol_enabled:
            return error_answer(ErrorCode.UNSUPPORTED_VERSION, "The consumer group protocol is not enabled on this broker.")
        unavailable = self.availability(request.group_id) if request.group_id else ErrorCode.NONE
        if unavailable != ErrorCode.NONE:
            return error_answer(unavailable)
        try:
            self.consumer.validate(request)
            if request.group_id in self.share.groups:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group")
            prefix, converted = self._join_consumer_protocol(request)
            return self.consumer.heartbeat(request, prefix, converted)
        except HeartbeatError as exc:
            if exc.error in (ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.INVALID_REGULAR_EXPRESSION):
                log.info("ConsumerGroupHeartbeat of group %s refused: %s", request.group_id, exc)
            return error_answer(exc.error, str(exc))

    def _join_consumer_protocol(self, request: HeartbeatRequest) -> tuple[list[Record], ConsumerGroup | None]:
        """A heartbeat to a classic group: the records that turn it into a consumer-protocol group (its offsets stay),
        and, for a group with members, the group they make (Kafka's online upgrade); GROUP_ID_NOT_FOUND when the
        group cannot be converted."""
        group = self.groups.get(request.group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return [], None
        tombstone: list[Record] = [(GroupMetadataKey(request.group_id), None)]
        if group.is_empty and request.member_epoch == 0:
            log.info("group %s: the empty classic group becomes a consumer-protocol group", request.group_id)
            return tombstone, None
        if request.member_epoch != 0:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group")
        try:
            records, converted = self.classic_members.upgrade(group)
        except ClassicMemberError as exc:
            raise HeartbeatError(exc.error, str(exc)) from exc
        self.rebalancer.abort_pending(group, ErrorCode.REBALANCE_IN_PROGRESS)
        return tombstone + records, converted

    def _downgrade(self, group: ConsumerGroup, leaving_id: str) -> ErrorCode | None:
        """Kafka's online downgrade: the last member of the consumer protocol leaves a group of classic members, which
        becomes a classic group and rebalances; None when the group stays a consumer-protocol group."""
        value = self.classic_members.downgrade_value(group, leaving_id)
        if value is None:
            return None
        group_id = group.group_id
        error = self._write(group_id, [*self.consumer.deletion_records(group), (GroupMetadataKey(group_id), value)])
        if error != ErrorCode.NONE:
            return error
        self._load_group(group_id, value)
        classic = self.groups[group_id]
        log.info("group %s: the consumer-protocol group becomes a classic group (generation %d, %d members)",
                 group_id, classic.generation_id, len(classic.members))
        self.rebalancer.on_loaded(classic)
        self.rebalancer.rebalance(classic, f"member {leaving_id} left: the group is downgraded to the classic protocol")
        return ErrorCode.NONE

    def consumer_describe(self, group_id: str) -> dict[str, Any]:
        """One group of ConsumerGroupDescribe."""
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return described_error(group_id, unavailable, None)
        if group_id in self.consumer.groups:
            return self.consumer.describe(group_id)
        if group_id in self.groups or group_id in self.share.groups:
            return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")

    # ---- share groups (KIP-932) ----

    def share_heartbeat(self, request: ShareHeartbeat) -> dict[str, Any]:
        """ShareGroupHeartbeat: validated as Kafka validates it before asking the group's partition, which must be
        served here; an id that is a classic or consumer-protocol group is not a share group."""
        try:
            self.share.validate(request)
            unavailable = self.availability(request.group_id)
            if unavailable != ErrorCode.NONE:
                return error_answer(unavailable)
            if self._not_a_share_group(request.group_id):
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a share group.")
            return self.share.heartbeat(request)
        except HeartbeatError as exc:
            if exc.error == ErrorCode.INVALID_REQUEST:
                log.info("ShareGroupHeartbeat of group %s refused: %s", request.group_id, exc)
            return error_answer(exc.error, str(exc))

    def share_describe(self, group_id: str) -> dict[str, Any]:
        """One group of ShareGroupDescribe."""
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return described_error(group_id, unavailable, None)
        if group_id in self.share.groups:
            return self.share.describe(group_id)
        if self._not_a_share_group(group_id):
            return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")

    def share_offsets_refusal(self, group_id: str, creates: bool) -> tuple[ErrorCode, str | None]:
        """Why the start offsets of share group ``group_id`` may not be changed now (NONE: they may), as Kafka's
        getOrMaybeCreateShareGroup and empty-group check: an id of another group type is not a share group, a
        missing group is created only when ``creates`` (AlterShareGroupOffsets since Kafka 4.2, KAFKA-19662), and a
        group with members is NON_EMPTY_GROUP."""
        if self._not_a_share_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        group = self.share.groups.get(group_id)
        if group is None and not creates:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        if group is not None and not group.is_empty:
            return ErrorCode.NON_EMPTY_GROUP, None
        return ErrorCode.NONE, None

    def _not_a_share_group(self, group_id: str) -> bool:
        """The id is a consumer-protocol or a live classic group's (Kafka keeps one group per id, of one type)."""
        return group_id in self.consumer.groups or self._is_classic(group_id)

    def _is_classic(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and not group.is_in(GroupState.DEAD)

    def sync_group(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
        protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes], respond: Responder,
    ) -> None:
        if not group_id:
            respond(sync_error(ErrorCode.INVALID_GROUP_ID))
        elif (unavailable := self.availability(group_id)) != ErrorCode.NONE:
            respond(sync_error(unavailable))
        elif group_id in self.consumer.groups:
            respond(self.classic_members.sync(
                self.consumer.groups[group_id], member_id, instance_id, generation_id, protocol_type, protocol_name,
            ))
        else:
            self.rebalancer.sync(group_id, member_id, instance_id, generation_id, protocol_type, protocol_name, assignments, respond)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        unavailable = self.availability(group_id)
        if unavailable == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE  # as Kafka: the group is still loading, so blindly answer
        if unavailable != ErrorCode.NONE:
            return unavailable
        if group_id in self.consumer.groups:
            return self.classic_members.heartbeat(self.consumer.groups[group_id], member_id, instance_id, generation_id)
        return self.rebalancer.heartbeat(group_id, member_id, instance_id, generation_id)

    def leave_group(self, group_id: str, leaving: list[LeavingMember]) -> tuple[ErrorCode, list[dict[str, Any]]]:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return unavailable, []
        if group_id in self.consumer.groups:
            return self.classic_members.leave(self.consumer.groups[group_id], leaving)
        return self.rebalancer.leave(group_id, leaving)

    # ---- offsets ----

    def commit_offsets(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int, retention_ms: int,
        commits: list[PartitionCommit], api_version: int,
    ) -> list[ErrorCode]:
        """OffsetCommit: one error per commit, in order."""
        missing_group = ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
        return self._commit(
            group_id, member_id, instance_id, generation_id, commits, missing_group, retention_ms, api_version,
        )

    def commit_transactional_offsets(
        self, group_id: str, producer_id: int, producer_epoch: int, member_id: str, instance_id: str | None,
        generation_id: int, commits: list[PartitionCommit],
    ) -> list[ErrorCode]:
        """TxnOffsetCommit: offsets written in the producer's transaction, pending until its marker; one error per commit.

        The caller has checked that the group's partition is in the transaction. Membership is checked as for
        OffsetCommit (KIP-447 clients send the consumer's generation and member id), except that, as in Kafka, a group
        in CompletingRebalance is accepted and so is a request naming no member (what clients before KIP-447 send).
        """
        return self._commit(
            group_id, member_id, instance_id, generation_id, commits, ErrorCode.ILLEGAL_GENERATION, NO_RETENTION,
            TXN_COMMIT_API_VERSION, producer_id, producer_epoch,
        )

    def _commit(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int, commits: list[PartitionCommit],
        missing_group: ErrorCode, retention_ms: int, api_version: int, producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> list[ErrorCode]:
        """``generation_id`` is a classic group's generation or a consumer-protocol group's member epoch."""
        transactional = producer_id != NO_PRODUCER_ID
        if not group_id:
            return [ErrorCode.INVALID_GROUP_ID] * len(commits)
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return [unavailable] * len(commits)
        if group_id in self.share.groups:  # as Kafka's ShareGroup.validateOffsetCommit
            return [ErrorCode.GROUP_ID_NOT_FOUND] * len(commits)
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            limit = self.config.offset_metadata_max_bytes  # a commit refused for its metadata is not validated
            partitions = [(c.topic, c.partition) for c in commits if len(c.metadata or "") <= limit]
            error = self.consumer.validate_commit(
                consumer_group, member_id, instance_id, generation_id, transactional, api_version, partitions,
            )
            if error != ErrorCode.NONE:
                return [error] * len(commits)
            return self._write_commits(group_id, commits, retention_ms, producer_id, producer_epoch, created=False)
        group = self.groups.get(group_id)
        created = group is None
        if group is None:
            if generation_id >= 0:
                return [missing_group] * len(commits)
            log.info("creating simple group %s on a manual offset commit", group_id)
            group = self.groups[group_id] = ClassicGroup(group_id, created_ms=self.timer.now_ms())
        error = self._validate_commit(group, member_id, instance_id, generation_id, transactional)
        if error != ErrorCode.NONE:
            return [error] * len(commits)
        if not transactional and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self.rebalancer.reschedule_heartbeat(group, member_id)  # a commit keeps a classic member's session alive
        return self._write_commits(group_id, commits, retention_ms, producer_id, producer_epoch, created)

    def _write_commits(
        self, group_id: str, commits: list[PartitionCommit], retention_ms: int, producer_id: int, producer_epoch: int,
        created: bool,
    ) -> list[ErrorCode]:
        now = self.timer.now_ms()
        expire = -1 if retention_ms == NO_RETENTION else now + retention_ms
        results = []
        records: list[Record] = []
        for commit in commits:
            metadata = commit.metadata or ""
            if len(metadata) > self.config.offset_metadata_max_bytes:
                results.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            results.append(ErrorCode.NONE)
            stamp = now if commit.commit_timestamp == -1 else commit.commit_timestamp
            value = OffsetCommitValue(commit.offset, metadata, stamp, commit.leader_epoch, expire)
            records.append((OffsetCommitKey(group_id, commit.topic, commit.partition), value))
        if records:
            error = self._write(group_id, records, producer_id, producer_epoch)
            if error != ErrorCode.NONE:
                if created:
                    del self.groups[group_id]  # as Kafka's reverted snapshot: a failed commit creates no group
                return [error] * len(commits)
        return results

    @staticmethod
    def _validate_commit(
        group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int, transactional: bool,
    ) -> ErrorCode:
        """Kafka's ClassicGroup.validateOffsetCommit: plain generation -1 commits need an empty group."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_empty:
            return ErrorCode.NONE
        if generation_id >= 0 or member_id or instance_id is not None:
            error = group.validate_member(member_id, instance_id)
            if error != ErrorCode.NONE:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_empty:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def fetch_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]] | None, require_stable: bool = False,
        member_id: str | None = None, member_epoch: int = -1,
    ) -> dict[str, Any]:
        """OffsetFetch for one group (``topics`` None: every committed offset), as a v8 response group.

        Offsets of open transactions are not shown; with ``require_stable`` a partition that has some is answered
        UNSTABLE_OFFSET_COMMIT instead, so the client retries once the transaction has ended (KIP-447). A member of
        a consumer-protocol group (OffsetFetch v9) must name its current epoch.
        """
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return {"group_id": group_id, "error_code": unavailable, "topics": []}
        if group_id in self.share.groups:  # as Kafka's ShareGroup.validateOffsetFetch
            return {"group_id": group_id, "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "topics": []}
        consumer_group = self.consumer.groups.get(group_id)
        if consumer_group is not None:
            error = self.consumer.validate_fetch(consumer_group, member_id, member_epoch)
            if error != ErrorCode.NONE:
                return {"group_id": group_id, "error_code": error, "topics": []}
        group = self.groups.get(group_id)
        known = consumer_group is not None or (group is not None and not group.is_in(GroupState.DEAD))
        stored = self.offsets.group_offsets(group_id) if known else {}
        if topics is None:
            topics = [(topic, sorted(partitions)) for topic, partitions in stored.items()]
        answers = []
        for topic, partitions in topics:
            found = stored.get(topic, {})
            answers.append({"name": topic, "partitions": [
                _unstable_answer(index) if require_stable and self.pending.is_pending(group_id, topic, index)
                else _offset_answer(index, found.get(index))
                for index in partitions
            ]})
        return {"group_id": group_id, "error_code": ErrorCode.NONE, "topics": answers}

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]) -> tuple[ErrorCode, list[dict[str, Any]]]:
        """OffsetDelete: (group-level error, per-topic answers)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return unavailable, []
        group: ClassicGroup | ConsumerGroup | None = self.consumer.groups.get(group_id) or self.groups.get(group_id)
        if group is None or (isinstance(group, ClassicGroup) and group.is_in(GroupState.DEAD)):
            return ErrorCode.GROUP_ID_NOT_FOUND, []  # share groups too (ShareGroup.validateOffsetDelete)
        if isinstance(group, ClassicGroup) and not group.is_empty and not group.uses_consumer_protocol:
            return ErrorCode.NON_EMPTY_GROUP, []
        answers = []
        records: list[Record] = []
        for topic, partitions in topics:
            error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if group.is_subscribed_to_topic(topic) else ErrorCode.NONE
            answers.append({"name": topic, "partitions": [{"partition_index": p, "error_code": error} for p in partitions]})
            if error == ErrorCode.NONE:
                records += [
                    (OffsetCommitKey(group_id, topic, p), None) for p in partitions
                    if self.offsets.get(group_id, topic, p) or self.pending.is_pending(group_id, topic, p)
                ]
        if records:
            error = self._write(group_id, records)
            if error != ErrorCode.NONE:
                return error, []
        return ErrorCode.NONE, answers

    # ---- administration ----

    def list_groups(self, states: list[str], types: list[str]) -> tuple[ErrorCode, list[dict[str, Any]]]:
        if self.partitions.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        wanted_states = {state.strip().lower() for state in states}
        wanted_types = {kind.strip().lower() for kind in types}
        listed = []
        if not wanted_types or CLASSIC_TYPE in wanted_types:
            listed += [
                {
                    "group_id": group.group_id,
                    "protocol_type": group.protocol_type or "",
                    "group_state": group.state.value,
                    "group_type": CLASSIC_TYPE,
                }
                for group in self.groups.values()
            ]
        if not wanted_types or CONSUMER_TYPE in wanted_types:
            listed += [self.consumer.listed(group) for group in self.consumer.groups.values()]
        if not wanted_types or SHARE_TYPE in wanted_types:
            listed += [self.share.listed(group) for group in self.share.groups.values()]
        return ErrorCode.NONE, [
            group for group in listed if not wanted_states or group["group_state"].lower() in wanted_states
        ]

    def describe_group(self, group_id: str, report_missing: bool = False) -> dict[str, Any]:
        """One DescribeGroups group. No classic group of that id (none, or a consumer-protocol or share group) is
        Dead; ``report_missing`` (v6, KIP-1043) adds GROUP_ID_NOT_FOUND with Kafka's message saying which."""
        answer = {
            "error_code": ErrorCode.NONE, "group_id": group_id, "group_state": GroupState.DEAD.value,
            "protocol_type": "", "protocol_data": "", "members": [],
        }
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return {**answer, "error_code": unavailable, "group_state": ""}
        group = self.groups.get(group_id)
        if group is None:
            if not report_missing:
                return answer
            other_type = group_id in self.consumer.groups or group_id in self.share.groups
            message = f"Group {group_id} is not a classic group." if other_type else f"Group {group_id} not found."
            return {**answer, "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": message}
        stable = group.is_in(GroupState.STABLE)
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment,
            }
            for m in group.members.values()
        ]
        return {
            **answer,
            "group_state": group.state.value,
            "protocol_type": group.protocol_type or "",
            "protocol_data": (group.protocol_name or "") if stable else "",
            "members": members,
        }

    def delete_groups(self, group_ids: list[str]) -> list[dict[str, Any]]:
        """DeleteGroups: an empty group loses its offsets and its metadata (tombstones), others get an error."""
        results = []
        for group_id in group_ids:
            results.append({"group_id": group_id, "error_code": self._delete_group(group_id)})
        return results

    def _delete_group(self, group_id: str) -> ErrorCode:
        unavailable = self.availability(group_id)
        if unavailable != ErrorCode.NONE:
            return unavailable
        share_group = self.share.groups.get(group_id)
        if share_group is not None:
            return self._delete_share_group(share_group)
        group: ClassicGroup | ConsumerGroup | None = self.consumer.groups.get(group_id) or self.groups.get(group_id)
        if group is None or (isinstance(group, ClassicGroup) and group.is_in(GroupState.DEAD)):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_empty:
            return ErrorCode.NON_EMPTY_GROUP
        records: list[Record] = [
            (OffsetCommitKey(group_id, topic, partition), None) for topic, partition in self._offset_partitions(group_id)
        ]
        return self._write(group_id, records + self._group_tombstones(group))

    def _delete_share_group(self, group: ShareGroup) -> ErrorCode:
        """An empty share group's records are tombstoned and its share partitions' state deleted (Kafka deletes the
        share-group state before the group)."""
        if not group.is_empty:
            return ErrorCode.NON_EMPTY_GROUP
        error = self._write(group.group_id, self.share.deletion_records(group))
        if error == ErrorCode.NONE:
            self.share_group_deleted(group.group_id)
        return error

    def _group_tombstones(self, group: ClassicGroup | ConsumerGroup) -> list[Record]:
        if isinstance(group, ConsumerGroup):
            return self.consumer.deletion_records(group)
        return [(GroupMetadataKey(group.group_id), None)]

    def _offset_partitions(self, group_id: str) -> list[TopicPartition]:
        """Partitions with a committed or a pending transactional offset: what deleting the group's offsets tombstones."""
        committed = {(topic, p) for topic, partitions in self.offsets.group_offsets(group_id).items() for p in partitions}
        return sorted(committed.union(self.pending.partitions(group_id)))

    def delete_topic_offsets(self, topics: set[str]) -> int:
        """Deleted topics (Kafka's onPartitionsDeleted): tombstones for every group's offsets of them, committed or
        pending; returns how many were written."""
        written = 0
        for group_id in [*self.groups, *self.consumer.groups]:
            records: list[Record] = [
                (OffsetCommitKey(group_id, topic, partition), None)
                for topic, partition in self._offset_partitions(group_id) if topic in topics
            ]
            if not records:
                continue
            if self.availability(group_id) != ErrorCode.NONE:
                log.warning("group %s is loading: its offsets of deleted topics %s stay", group_id, sorted(topics))
            elif self._write(group_id, records) == ErrorCode.NONE:
                log.info("group %s: %d offset(s) of deleted topics removed", group_id, len(records))
                written += len(records)
        return written

    # ---- offset expiration ----

    def expire_offsets(self) -> int:
        """Kafka's cleanupGroupMetadata: expire old offsets, delete empty groups left with none; returns tombstones written."""
        now = self.timer.now_ms()
        written = 0
        for group_id in [*self.groups, *self.consumer.groups]:
            group: ClassicGroup | ConsumerGroup | None = self.consumer.groups.get(group_id) or self.groups.get(group_id)
            if group is None or self.availability(group_id) != ErrorCode.NONE:
                continue
            records, all_expired = self._expired_offsets(group, now)
            if records:
                log.info("group %s: %d offset(s) expired", group_id, len(records))
            if all_expired and group.is_empty and not self.pending.has_group(group_id):
                log.info("group %s is empty and has no offsets left: deleting it", group_id)
                records += self._group_tombstones(group)
            if records and self._write(group_id, records) == ErrorCode.NONE:
                written += len(records)
        return written

    def _expired_offsets(self, group: ClassicGroup | ConsumerGroup, now: int) -> tuple[list[Record], bool]:
        """(tombstones for expired offsets, whether every offset of the group expired)."""
        offsets = self.offsets.group_offsets(group.group_id)
        if not offsets:
            return [], True
        if isinstance(group, ConsumerGroup):
            base = _commit_time  # as Kafka's ConsumerGroup: from the commit, in every state
        elif group.protocol_type is None:
            base = _commit_time
        elif group.is_empty:
            state_time = group.current_state_timestamp
            base = _commit_time if state_time is None else (lambda _: state_time)
        elif group.uses_consumer_protocol and group.subscribed_topics is not None and group.is_in(GroupState.STABLE):
            base = _commit_time
        else:
            return [], False
        records: list[Record] = []
        all_expired = True
        retention = self.config.offsets_retention_ms
        for topic, partitions in offsets.items():
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for partition, offset in partitions.items():
                if offset.expire_timestamp is not None:
                    expired = now >= offset.expire_timestamp
                else:
                    expired = now - base(offset) >= retention
                if expired:
                    records.append((OffsetCommitKey(group.group_id, topic, partition), None))
                else:
                    all_expired = False
        return records, all_expired


def described_error(group_id: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": error, "error_message": message, "group_id": group_id, "group_state": "", "group_epoch": -1,
        "assignment_epoch": -1, "assignor_name": "", "members": [],
    }


def _commit_time(offset: OffsetAndMetadata) -> int:
    return offset.commit_timestamp


def _unstable_answer(partition: int) -> dict[str, Any]:
    return {
        "partition_index": partition, "committed_offset": INVALID_OFFSET, "committed_leader_epoch": NO_LEADER_EPOCH,
        "metadata": "", "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT,
    }


def _offset_answer(partition: int, offset: OffsetAndMetadata | None) -> dict[str, Any]:
    if offset is None:
        return {
            "partition_index": partition, "committed_offset": INVALID_OFFSET, "committed_leader_epoch": NO_LEADER_EPOCH,
            "metadata": "", "error_code": ErrorCode.NONE,
        }
    return {
        "partition_index": partition, "committed_offset": offset.offset, "committed_leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata, "error_code": ErrorCode.NONE,
    }
