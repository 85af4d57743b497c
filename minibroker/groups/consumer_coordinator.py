"""The consumer group protocol of Kafka 4 (KIP-848): ConsumerGroupHeartbeat, server-side assignment, expiry.

Each heartbeat is Kafka's three steps: update the member (its subscription changes bump the group epoch, and so
does a change of the subscribed topics' metadata), compute a new target assignment with the group's server
assignor when the group epoch is ahead of it, then move the member one step towards its target (``reconcile``).
The steps produce records; they are appended to ``__consumer_offsets`` and then replayed onto the groups, so memory
never runs ahead of the log. Sessions and revocations are timed with the coordinator's ``Timer`` (keyed, injectable).
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Protocol

from minibroker.config.re2_syntax import compile_re2
from minibroker.groups.assignors import MemberSpec, TopicPartitions, TopicSpec, assignor_named
from minibroker.groups.config import GroupConfig
from minibroker.groups.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    preferred_assignor,
    reconcile,
    subscribed_names,
)
from minibroker.groups.consumer_records import (
    Record,
    assignment_record,
    epoch_record,
    group_tombstones,
    member_record,
    member_tombstones,
    regex_record,
    regex_tombstone,
    replay,
    target_epoch_record,
    target_record,
)
from minibroker.groups.group import CONSUMER_PROTOCOL_TYPE
from minibroker.groups.group_configs import GroupConfigs
from minibroker.groups.timer import Timer
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

CONSUMER_TYPE = "consumer"  # ListGroups' group type of these groups
MEMBER_ID_REQUIRED_VERSION = 1  # from v1 the client generates its member id
Writer = Callable[[str, list[Record]], ErrorCode]


def named_partitions(topics: TopicCatalog, partitions: TopicPartitions) -> list[dict[str, Any]]:
    """An assignment as the Describe APIs answer it: by topic id with the topic's name (deleted topics left out)."""
    answer = []
    for topic_id, indexes in sorted(partitions.items()):
        spec = topics.by_id(topic_id)
        if spec is not None:
            answer.append({"topic_id": topic_id, "topic_name": spec.name, "partitions": sorted(indexes)})
    return answer


class TopicCatalog(Protocol):
    """The broker's topics as the coordinator sees them."""

    @property
    def version(self) -> int:
        """Changes whenever a topic is created, deleted or grows partitions."""

    def by_name(self, name: str) -> TopicSpec | None: ...

    def by_id(self, topic_id: bytes) -> TopicSpec | None: ...

    def names(self) -> Iterable[str]:
        """Topics a regular expression may match (internal topics excluded)."""


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: TopicPartitions | None
    client_id: str
    client_host: str
    api_version: int
    # Whether the member's principal may DESCRIBE a topic (None: no authorizer): what its regular expression may match.
    may_describe: Callable[[str], bool] | None = None


def error_answer(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": error, "error_message": message, "member_id": None, "member_epoch": 0,
        "heartbeat_interval_ms": 0, "assignment": None,
    }


def metadata_hash(topics: Iterable[TopicSpec]) -> int:
    """A signed 64-bit digest of the subscribed topics (id, name, partitions): a change means a new assignment."""
    digest = hashlib.blake2b(digest_size=8)
    for topic in sorted(topics, key=lambda t: t.name):
        digest.update(topic.topic_id + topic.name.encode() + b"\0" + topic.num_partitions.to_bytes(4, "big"))
    return int.from_bytes(digest.digest(), "big", signed=True)


class ConsumerGroups:
    def __init__(
        self, config: GroupConfig, timer: Timer, topics: TopicCatalog, write: Writer,
        downgrade: Callable[[ConsumerGroup, str], ErrorCode | None] | None = None,
        group_configs: GroupConfigs | None = None,
    ) -> None:
        self.config = config
        # A group's own session timeout and heartbeat interval (group configs), over the broker's
        self.group_configs = group_configs or GroupConfigs({})
        self.timer = timer
        self.topics = topics
        self.write = write
        # Called when a member is fenced: turns the group into a classic group and answers the write's error, or
        # answers None when the group stays (the online downgrade of KIP-848's migration).
        self.downgrade = downgrade
        self.groups: dict[str, ConsumerGroup] = {}
        self._compiled: dict[str, re.Pattern[str]] = {}
        self._regexes_resolved_at: dict[str, int] = {}  # group -> the topic catalog version its regexes were matched at
        # group -> may_describe of the last member that heartbeated with a regex: Kafka (KAFKA-18813) resolves the
        # regexes with the rights of the member whose heartbeat triggered it
        self._regex_viewers: dict[str, Callable[[str], bool] | None] = {}

    # ---- validation ----

    def validate(self, request: HeartbeatRequest) -> None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        _require(request.group_id != "", "GroupId can't be empty.")
        _require(request.instance_id != "", "InstanceId can't be empty.")
        _require(request.rack_id != "", "RackId can't be empty.")
        if request.api_version >= MEMBER_ID_REQUIRED_VERSION or request.member_epoch != 0:
            _require(request.member_id != "", "MemberId can't be empty.")
        epoch = request.member_epoch
        if epoch == 0:
            _require(request.rebalance_timeout_ms != -1, "RebalanceTimeoutMs must be provided in first request.")
            _require(request.owned is not None and not request.owned, "TopicPartitions must be empty when (re-)joining.")
            _require(
                request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            _require(request.instance_id is not None, "InstanceId can't be null.")
        elif epoch < 0 and epoch != LEAVE_GROUP_MEMBER_EPOCH:
            _require(False, "MemberEpoch is invalid.")
        if request.subscribed_topic_regex is not None:
            self._pattern(request.subscribed_topic_regex)
        assignor = request.server_assignor
        if assignor is not None and assignor not in self.config.consumer_assignors:
            raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR, (
                f"ServerAssignor {assignor} is not supported. Supported assignors: "
                f"{', '.join(self.config.consumer_assignors)}."
            ))

    def _pattern(self, regex: str) -> re.Pattern[str]:
        pattern = self._compiled.get(regex)
        if pattern is None:
            try:
                pattern = compile_re2(regex)  # Kafka compiles subscriptions with RE2/J too
            except re.error as exc:
                raise HeartbeatError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}.",
                ) from exc
            self._compiled[regex] = pattern
        return pattern

    # ---- heartbeat ----

    def heartbeat(
        self, request: HeartbeatRequest, prefix: list[Record], converted: ConsumerGroup | None = None,
    ) -> dict[str, Any]:
        """One ConsumerGroupHeartbeat, validated; ``prefix``: records to write first, that turn a classic group into
        the consumer-protocol group ``converted`` (its tombstone, and the converted group's records)."""
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        group_id = request.group_id
        group = converted or self.groups.get(group_id)
        if group is None:
            if request.member_epoch != 0:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id)
        member_id = request.member_id or str(uuid.uuid4())
        if len(group.members) >= self.config.consumer_max_size and member_id not in group.members:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED, (
                f"The consumer group has reached its maximum capacity of {self.config.consumer_max_size} members."
            ))
        records = list(prefix)
        member, replaced = self._member(group, request, member_id, records)
        if _regex_update(request, member) is not None:
            self._regex_viewers[group_id] = request.may_describe
        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(
                tuple(sorted(set(request.subscribed_topic_names))) if request.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=_regex_update(request, member),
            client_id=request.client_id, client_host=request.client_host,
        )
        reconciled = self.advance(group, member, updated, replaced, request.owned, records)
        error = self.write(group_id, records)
        if error != ErrorCode.NONE:
            return error_answer(error)
        if reconciled != updated:  # as Kafka's maybeReconcile: a member still revoking keeps its first deadline
            self._after_reconcile(group_id, reconciled)
        if converted is not None:
            self.on_loaded(converted)  # the classic members' sessions now run on this side
        self.schedule_session_timeout(group_id, member_id)
        full = request.member_epoch == 0 or (
            request.rebalance_timeout_ms != -1 and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        assignment = None
        if full or reconciled.assigned != member.assigned or replaced is not None:
            assignment = {"topic_partitions": _topic_partitions(reconciled.assigned)}
        return {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": member_id,
            "member_epoch": reconciled.member_epoch, "heartbeat_interval_ms": self.heartbeat_interval_ms(group_id),
            "assignment": assignment,
        }

    def advance(
        self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, replaced: str | None,
        owned: TopicPartitions | None, records: list[Record],
    ) -> ConsumerMember:
        """Kafka's three steps for a member that heartbeats (or rejoins, with the classic protocol) as ``updated``:
        its subscription changes and those of the subscribed topics bump the group epoch, a group epoch ahead of the
        target assignment gets a new one, and the member moves one step towards its target. Appends the records and
        returns the member as the records leave it."""
        group_id = group.group_id
        member_id = updated.member_id
        bump = False
        if _metadata_differs(member, updated) or member.member_id not in group.members:
            records.append(member_record(group_id, updated))
            bump = updated.subscription_differs(member)
        members = dict(group.members)
        if replaced is not None:
            del members[replaced]
        members[member_id] = updated
        regexes = self._resolved_regexes(group, members, records)
        subscribed = subscribed_names(members, regexes)
        specs = [spec for spec in map(self.topics.by_name, sorted(subscribed)) if spec is not None]
        new_hash = metadata_hash(specs)
        group_epoch = group.group_epoch
        if bump or new_hash != group.metadata_hash:
            group_epoch += 1
            records.append(epoch_record(group_id, group_epoch, new_hash))
            log.info("consumer group %s: epoch %d", group_id, group_epoch)
        targets = group.targets
        target_epoch = group.assignment_epoch
        if group_epoch > group.assignment_epoch:
            targets = self._assign(group, group_epoch, members, regexes, specs, replaced, records)
            target_epoch = group_epoch
            records.append(target_epoch_record(group_id, group_epoch, self.timer.now_ms()))
        reconciled = updated
        # A static member's new incarnation has its predecessor's target (Kafka's targetAssignment(memberId, instanceId))
        target = targets.get(member_id, targets.get(replaced, {}) if replaced is not None else {})
        if not updated.is_reconciled_to(target_epoch):
            reconciled = reconcile(updated, target_epoch, target, group, owned)
        if reconciled != updated or member_id not in group.members:
            records.append(assignment_record(group_id, reconciled))
        return reconciled

    def _member(
        self, group: ConsumerGroup, request: HeartbeatRequest, member_id: str, records: list[Record],
    ) -> tuple[ConsumerMember, str | None]:
        """(the member the heartbeat is from, the member id it replaces: a static member's previous incarnation)."""
        joining = request.member_epoch == 0
        if request.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise _unknown_member(member_id, group.group_id)
                log.info("consumer group %s: member %s joins", group.group_id, member_id)
                return ConsumerMember(member_id), None
            if joining:
                return _rejoined(member), None
            _check_epoch(member, request)
            return member, None
        existing = group.static_member(request.instance_id)
        if joining:
            if existing is not None and existing.member_id == member_id:
                return _rejoined(existing), None
            if existing is None:
                log.info("consumer group %s: static member %s (%s) joins", group.group_id, member_id, request.instance_id)
                return group.members.get(member_id) or ConsumerMember(member_id), None
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID, (
                    f"Static member {existing.member_id} with instance id {request.instance_id} is not released yet."
                ))
            log.info("consumer group %s: static member %s rejoins as %s", group.group_id, request.instance_id, member_id)
            new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            records += member_tombstones(group.group_id, existing.member_id)
            records.append(target_record(group.group_id, member_id, group.targets.get(existing.member_id, {})))
            return new, existing.member_id
        if existing is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, (
                f"Static member {member_id} with instance id {request.instance_id} was fenced by {existing.member_id}."
            ))
        _check_epoch(existing, request)
        return existing, None

    def _resolved_regexes(
        self, group: ConsumerGroup, members: Mapping[str, ConsumerMember], records: list[Record],
    ) -> dict[str, frozenset[str]]:
        """The group's regular expressions as last resolved (tombstones for those no member uses any more). As in
        Kafka, a new regex, or one whose topics may have changed, is resolved apart (``_refresh_regexes``, right
        after this request), and the group epoch is bumped when its topics are known: until then it matches nothing."""
        used = {m.subscribed_topic_regex for m in members.values() if m.subscribed_topic_regex is not None}
        for regex in group.regexes.keys() - used:
            records.append(regex_tombstone(group.group_id, regex))
        stale = self._regexes_resolved_at.get(group.group_id) != self.topics.version
        if used - group.regexes.keys() or (used and stale):
            key = _regex_key(group.group_id)
            if not self.timer.is_scheduled(key):
                self.timer.schedule(key, 0, lambda: self._refresh_regexes(group.group_id))
        return {regex: topics for regex, topics in group.regexes.items() if regex in used}

    def _refresh_regexes(self, group_id: str) -> None:
        """Match the group's regular expressions against today's topics; a change is written with a new group epoch,
        so the members get the topics at their next heartbeat (Kafka's handleRegularExpressionsResult)."""
        group = self.groups.get(group_id)
        if group is None:
            return
        version = self.topics.version
        used = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex is not None}
        visible = self._regex_viewers.get(group_id) or (lambda name: True)
        resolved = {}
        records: list[Record] = []
        now = self.timer.now_ms()
        for regex in sorted(used):
            try:
                pattern = self._pattern(regex)
            except HeartbeatError as exc:  # only from a log another broker wrote (RE2/J syntax Python lacks)
                log.warning("consumer group %s: %s; it matches no topic", group_id, exc)
                pattern = None
            resolved[regex] = frozenset(
                name for name in self.topics.names() if pattern is not None and pattern.fullmatch(name) and visible(name)
            )
            if resolved[regex] != group.regexes.get(regex):
                records.append(regex_record(group_id, regex, resolved[regex], version, now))
        if records:
            names = subscribed_names(group.members, resolved)
            specs = [spec for spec in map(self.topics.by_name, sorted(names)) if spec is not None]
            records.append(epoch_record(group_id, group.group_epoch + 1, metadata_hash(specs)))
            log.info("consumer group %s: regular expressions resolved again; epoch %d", group_id, group.group_epoch + 1)
        if self.write(group_id, records) == ErrorCode.NONE:
            self._regexes_resolved_at[group_id] = version

    def _assign(
        self, group: ConsumerGroup, epoch: int, members: Mapping[str, ConsumerMember],
        regexes: Mapping[str, frozenset[str]], specs: list[TopicSpec], replaced: str | None, records: list[Record],
    ) -> dict[str, TopicPartitions]:
        """A new target assignment for every member; records for the members whose target changed."""
        by_name = {spec.name: spec for spec in specs}
        assignor = assignor_named(preferred_assignor(members.values()) or self.config.consumer_assignors[0])
        member_specs = {}
        for member_id, member in members.items():
            names = set(member.subscribed_topic_names)
            if member.subscribed_topic_regex is not None:
                names.update(regexes.get(member.subscribed_topic_regex, ()))
            current = group.targets.get(member_id)
            if current is None and replaced is not None and member.instance_id is not None:
                current = group.targets.get(replaced)
            member_specs[member_id] = MemberSpec(
                member_id, member.instance_id, member.rack_id,
                frozenset(by_name[name].topic_id for name in names if name in by_name), current or {},
            )
        targets = assignor.assign(member_specs, {spec.topic_id: spec for spec in specs})
        for member_id, target in targets.items():
            if group.targets.get(member_id) != target or member_id not in group.targets:
                records.append(target_record(group.group_id, member_id, target))
        log.info("consumer group %s: target assignment for epoch %s computed with the %s assignor",
                 group.group_id, epoch, assignor.name)
        return targets

    # ---- leaving and fencing ----

    def _leave(self, request: HeartbeatRequest) -> dict[str, Any]:
        group = self.groups.get(request.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        answer = {
            "error_code": ErrorCode.NONE, "error_message": None, "member_id": request.member_id,
            "member_epoch": request.member_epoch, "heartbeat_interval_ms": 0, "assignment": None,
        }
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise _unknown_member(request.member_id, group.group_id)
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Static member {request.member_id} was fenced by {member.member_id}.",
                )
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("consumer group %s: static member %s (%s) left for now", group.group_id, member.member_id,
                         request.instance_id)
                leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
                error = self.write(group.group_id, [assignment_record(group.group_id, leaving)])
                return answer if error == ErrorCode.NONE else error_answer(error)
        log.info("consumer group %s: member %s left", group.group_id, member.member_id)
        error = self.fence(group, member.member_id)
        return answer if error == ErrorCode.NONE else error_answer(error)

    def fence(self, group: ConsumerGroup, member_id: str) -> ErrorCode:
        """Remove a member and bump the group epoch so the others get its partitions (Kafka's consumerGroupFenceMember);
        when only members of the classic protocol are left, the group may become a classic group instead."""
        self._cancel_timers(group.group_id, member_id)
        if self.downgrade is not None:
            downgraded = self.downgrade(group, member_id)
            if downgraded is not None:
                return downgraded
        records = member_tombstones(group.group_id, member_id)
        members = {m_id: m for m_id, m in group.members.items() if m_id != member_id}
        regexes = self._resolved_regexes(group, members, records)
        specs = [s for s in map(self.topics.by_name, sorted(subscribed_names(members, regexes))) if s is not None]
        records.append(epoch_record(group.group_id, group.group_epoch + 1, metadata_hash(specs)))
        return self.write(group.group_id, records)

    # ---- timers ----

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's consumer.heartbeat.interval.ms, else the broker's (Kafka's consumerGroupHeartbeatIntervalMs)."""
        own = self.group_configs.value(group_id, "consumer.heartbeat.interval.ms")
        return self.config.consumer_heartbeat_interval_ms if own is None else own

    def session_timeout_ms(self, group_id: str) -> int:
        """The group's consumer.session.timeout.ms, else the broker's."""
        own = self.group_configs.value(group_id, "consumer.session.timeout.ms")
        return self.config.consumer_session_timeout_ms if own is None else own

    def schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """A member of the classic protocol has the session timeout it joined with, the others their group's, read
        at each heartbeat (a changed group config applies from the next one)."""
        self.timer.schedule(
            _session_key(group_id, member_id), self.session_timeout_ms(group_id) if timeout_ms is None else timeout_ms,
            lambda: self.expire(group_id, member_id, None, "its session expired"),
        )

    def _after_reconcile(self, group_id: str, member: ConsumerMember) -> None:
        """A member asked to revoke partitions has its rebalance timeout to do it, or it is fenced."""
        key = _rebalance_key(group_id, member.member_id)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            epoch = member.member_epoch
            self.timer.schedule(key, max(member.rebalance_timeout_ms, 0), lambda: self.expire(
                group_id, member.member_id, epoch, f"it did not revoke its partitions within {member.rebalance_timeout_ms} ms",
            ))
        else:
            self.timer.cancel(key)

    def expire(self, group_id: str, member_id: str, epoch: int | None, reason: str) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return
        log.info("consumer group %s: member %s fenced because %s", group_id, member_id, reason)
        error = self.fence(group, member_id)
        if error != ErrorCode.NONE:
            log.warning("consumer group %s: fencing member %s failed (%s); retrying at the next session timeout",
                        group_id, member_id, error.name)
            self.schedule_session_timeout(group_id, member_id)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        for key in (_session_key, _rebalance_key, join_key, sync_key):
            self.timer.cancel(key(group_id, member_id))

    def on_loaded(self, group: ConsumerGroup) -> None:
        """After start-up every member gets a full session to heartbeat in, as in Kafka."""
        for member in group.members.values():
            self.schedule_session_timeout(group.group_id, member.member_id, _classic_session(member))
            if member.classic is None:
                self._after_reconcile(group.group_id, member)

    def cancel_group_timers(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            self._cancel_timers(group.group_id, member_id)

    def unload(self, group_id: str) -> None:
        """Forget a group whose partition moved to another coordinator: it lives on in the log."""
        group = self.groups.pop(group_id)
        self.cancel_group_timers(group)
        self.timer.cancel(_regex_key(group_id))
        self._regexes_resolved_at.pop(group_id, None)
        self._regex_viewers.pop(group_id, None)

    # ---- replay and administration ----

    def replay(self, key: Any, value: Any) -> None:
        group = self.groups.get(key.group)
        replay(self.groups, key, value)
        if group is not None and key.group not in self.groups:
            self.cancel_group_timers(group)
            self._regexes_resolved_at.pop(key.group, None)
            self._regex_viewers.pop(key.group, None)
            log.info("consumer group %s deleted", key.group)

    def deletion_records(self, group: ConsumerGroup) -> list[Record]:
        return group_tombstones(group)

    def validate_commit(self, group: ConsumerGroup, member_id: str, instance_id: str | None, member_epoch: int,
                        transactional: bool, api_version: int, partitions: Iterable[tuple[str, int]]) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetCommit (4.3, KIP-1251): the member's current epoch commits anything; an
        older one commits ``partitions`` (topic, partition) when the member still has (or is revoking) each of them
        and was assigned it at that epoch or before, so a commit sent before a rebalance finished is not lost. A
        TxnOffsetCommit naming no member (clients before KIP-447) is not checked."""
        if member_epoch < 0 and group.is_empty:
            return ErrorCode.NONE
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and member.classic is None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch >= member.member_epoch:
            return _epoch_error(member, member_epoch)
        for topic, partition in partitions:
            spec = self.topics.by_name(topic)
            assigned_at = member.assignment_epoch(spec.topic_id, partition) if spec is not None else None
            if assigned_at is None or member_epoch < assigned_at:
                return _epoch_error(member, member_epoch)
        return ErrorCode.NONE

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Kafka's ConsumerGroup.validateOffsetFetch: an admin (no member, epoch -1) may always read."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _epoch_error(member, member_epoch)

    def describe(self, group_id: str) -> dict[str, Any]:
        """One ConsumerGroupDescribe group (error GROUP_ID_NOT_FOUND is left to the caller)."""
        group = self.groups[group_id]
        return {
            "error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
            "group_state": group.state().value, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": preferred_assignor(group.members.values()) or self.config.consumer_assignors[0],
            "members": [self._describe_member(group, member) for member in group.members.values()],
        }

    def _describe_member(self, group: ConsumerGroup, member: ConsumerMember) -> dict[str, Any]:
        return {
            "member_id": member.member_id, "instance_id": member.instance_id, "rack_id": member.rack_id,
            "member_epoch": member.member_epoch, "client_id": member.client_id, "client_host": member.client_host,
            "subscribed_topic_names": list(member.subscribed_topic_names),
            "subscribed_topic_regex": member.subscribed_topic_regex,
            "assignment": {"topic_partitions": named_partitions(self.topics, member.assigned)},
            "target_assignment": {"topic_partitions": named_partitions(self.topics, group.targets.get(member.member_id, {}))},
            "member_type": 1 if member.classic is None else 0,  # consumer protocol or classic
        }

    def listed(self, group: ConsumerGroup) -> dict[str, Any]:
        return {
            "group_id": group.group_id, "protocol_type": CONSUMER_PROTOCOL_TYPE, "group_state": group.state().value,
            "group_type": CONSUMER_TYPE,
        }


def _epoch_error(member: ConsumerMember, epoch: int) -> ErrorCode:
    """Kafka's ConsumerGroup.validateMemberEpoch: a classic member names its generation, the others their epoch."""
    if epoch == member.member_epoch:
        return ErrorCode.NONE
    return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH


def _classic_session(member: ConsumerMember) -> int | None:
    return None if member.classic is None else member.classic.session_timeout_ms


def _unknown_member(member_id: str, group_id: str) -> HeartbeatError:
    return HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, message)


def _check_epoch(member: ConsumerMember, request: HeartbeatRequest) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: the previous epoch is accepted when the member owns a subset
    of its assignment (the answer that bumped it may have been lost)."""
    received = request.member_epoch
    if received > member.member_epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
            f"The consumer group member has a greater member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        ))
    if received < member.member_epoch:
        owned = request.owned
        subset = owned is not None and all(
            partitions <= member.assigned.get(topic_id, frozenset()) for topic_id, partitions in owned.items()
        )
        if received != member.previous_member_epoch or not subset:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                f"The consumer group member has a smaller member epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
            ))


def _rejoined(member: ConsumerMember) -> ConsumerMember:
    """A member that joins again under its id (epoch 0) after losing track of its epoch, as clients do when fenced:
    it owns nothing (a join reports no partitions) and is reconciled from scratch."""
    return replace(
        member, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE, assigned={}, pending_revocation={},
        epochs={},
    )


def _regex_update(request: HeartbeatRequest, member: ConsumerMember) -> str | None:
    """A regex given replaces the subscription's; an empty one (Kafka's way of clearing it) removes it."""
    if request.subscribed_topic_regex is None:
        return member.subscribed_topic_regex
    return request.subscribed_topic_regex or None


def _metadata_differs(old: ConsumerMember, new: ConsumerMember) -> bool:
    return (
        old.instance_id, old.rack_id, old.client_id, old.client_host, old.subscribed_topic_names,
        old.subscribed_topic_regex, old.rebalance_timeout_ms, old.server_assignor, old.classic,
    ) != (
        new.instance_id, new.rack_id, new.client_id, new.client_host, new.subscribed_topic_names,
        new.subscribed_topic_regex, new.rebalance_timeout_ms, new.server_assignor, new.classic,
    )


def _topic_partitions(partitions: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic_id": topic_id, "partitions": sorted(p)} for topic_id, p in sorted(partitions.items())]


def _session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session-{group_id}-{member_id}"


def _rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance-{group_id}-{member_id}"


def _regex_key(group_id: str) -> str:
    return f"consumer-regex-{group_id}"


def join_key(group_id: str, member_id: str) -> str:
    """A classic member told to rejoin must do so within its rebalance timeout."""
    return f"consumer-join-{group_id}-{member_id}"


def sync_key(group_id: str, member_id: str) -> str:
    """A classic member that joined must send its SyncGroup within its rebalance timeout."""
    return f"consumer-sync-{group_id}-{member_id}"
