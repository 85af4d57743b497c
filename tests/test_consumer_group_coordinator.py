"""The consumer group protocol of Kafka 4 (KIP-848) driven through ``GroupCoordinator``, with a fake clock, an
in-memory __consumer_offsets and a topic catalog the tests change.

Requests are built as librdkafka builds them (ConsumerGroupHeartbeat v1): the client names its own member id, joins
with epoch 0 and a full request, then sends only what changed, its owned partitions when they changed. Every answer
is followed by a check of Kafka's invariant: no partition is held (assigned or pending revocation) by two members.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupRegularExpressionKey,
    OffsetCommitKey,
    RecordKey,
    decode_key,
    decode_value,
)

from minibroker.groups.assignors import TopicPartitions, TopicSpec
from minibroker.groups.classic_members import decode_assignment
from minibroker.groups.config import GroupConfig
from minibroker.groups.consumer_coordinator import HeartbeatRequest
from minibroker.groups.consumer_group import ConsumerGroup, ConsumerGroupState, MemberState
from minibroker.groups.coordinator import GroupCoordinator
from minibroker.groups.group_configs import GroupConfigs
from minibroker.groups.requests import JoinRequest, PartitionCommit
from tests.groupfakes import Answers, FakeRecordLog, FakeTimer, assignment, subscription

GROUP = "testgroup"  # partition 27 of 50
TOPIC = "orders"
REBALANCE_MS = 30_000
SESSION_MS = 45_000  # group.consumer.session.timeout.ms
HEARTBEAT_MS = GroupConfig().consumer_heartbeat_interval_ms
LEAVE = -1
STATIC_LEAVE = -2


# ---- a topic catalog the tests change ----


def topic_id(name: str) -> bytes:
    return hashlib.md5(name.encode()).digest()


class FakeTopics:
    """A ``TopicCatalog``: creating a topic or adding partitions bumps its version, as the broker's catalog does."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.version = 0
        self.topics: dict[str, TopicSpec] = {}
        for name, count in partitions.items():
            self.create(name, count)

    def create(self, name: str, partitions: int) -> bytes:
        self.topics[name] = TopicSpec(topic_id(name), name, partitions)
        self.version += 1
        return topic_id(name)

    def add_partitions(self, name: str, total: int) -> None:
        self.topics[name] = TopicSpec(topic_id(name), name, total)
        self.version += 1

    def by_name(self, name: str) -> TopicSpec | None:
        return self.topics.get(name)

    def by_id(self, topic_id: bytes) -> TopicSpec | None:
        return next((spec for spec in self.topics.values() if spec.topic_id == topic_id), None)

    def names(self) -> list[str]:
        return list(self.topics)


# ---- requests and answers ----


def heartbeat_request(
    member_id: str, epoch: int, *, group: str = GROUP, instance_id: str | None = None, rebalance_ms: int = -1,
    topics: Sequence[str] | None = None, regex: str | None = None, assignor: str | None = None,
    owned: TopicPartitions | None = None, api_version: int = 1,
) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id, rack_id=None,
        rebalance_timeout_ms=rebalance_ms, subscribed_topic_names=None if topics is None else list(topics),
        subscribed_topic_regex=regex, server_assignor=assignor, owned=owned, client_id="rdkafka",
        client_host="/127.0.0.1", api_version=api_version,
    )


def join_request(member_id: str, **kwargs: Any) -> HeartbeatRequest:
    """A first (full) heartbeat: epoch 0, a rebalance timeout, a subscription, no owned partitions."""
    kwargs.setdefault("rebalance_ms", REBALANCE_MS)
    if kwargs.get("regex") is None:
        kwargs.setdefault("topics", [TOPIC])
    return heartbeat_request(member_id, 0, owned={}, **kwargs)


def assigned_in(answer: dict[str, Any]) -> TopicPartitions | None:
    """The assignment of a heartbeat answer (None: the answer has none, the client keeps its own)."""
    if answer["assignment"] is None:
        return None
    return {t["topic_id"]: frozenset(t["partitions"]) for t in answer["assignment"]["topic_partitions"]}


def parts(*partitions: int, topic: str = TOPIC) -> TopicPartitions:
    return {topic_id(topic): frozenset(partitions)} if partitions else {}


def all_of(topic: str, count: int) -> TopicPartitions:
    return parts(*range(count), topic=topic)


def merged(*assignments: TopicPartitions) -> TopicPartitions:
    result: dict[bytes, frozenset[int]] = {}
    for each in assignments:
        for tid, partitions in each.items():
            result[tid] = result.get(tid, frozenset()) | partitions
    return result


def assert_exclusive(coordinator: GroupCoordinator) -> None:
    """Kafka's invariant: a partition is assigned to (or being revoked by) one member of a group at most."""
    for group in coordinator.consumer.groups.values():
        holder: dict[tuple[bytes, int], str] = {}
        for member in group.members.values():
            for held in (member.assigned, member.pending_revocation):
                for tid, partitions in held.items():
                    for partition in partitions:
                        assert (tid, partition) not in holder, (
                            f"group {group.group_id}: partition {partition} held by {holder[(tid, partition)]} "
                            f"and {member.member_id}"
                        )
                        holder[(tid, partition)] = member.member_id


def written(log: FakeRecordLog) -> list[tuple[RecordKey, Any]]:
    return [(decode_key(key), decode_value(decode_key(key), value)) for key, value in log.all_records()]


def group_state(group: ConsumerGroup) -> dict[str, Any]:
    return {
        "group_epoch": group.group_epoch, "metadata_hash": group.metadata_hash,
        "assignment_epoch": group.assignment_epoch, "state": group.state(), "members": dict(group.members),
        "static_members": dict(group.static_members), "targets": dict(group.targets),
        "regexes": dict(group.regexes), "partition_epochs": dict(group.partition_epochs),
    }


# ---- the environment ----


@dataclass
class Env:
    timer: FakeTimer = field(default_factory=FakeTimer)
    log: FakeRecordLog = field(default_factory=FakeRecordLog)
    topics: FakeTopics = field(default_factory=lambda: FakeTopics({TOPIC: 4}))
    config: GroupConfig = field(
        default_factory=lambda: GroupConfig(min_session_timeout_ms=1000, initial_rebalance_delay_ms=0)
    )
    group_configs: GroupConfigs = field(default_factory=lambda: GroupConfigs({}))
    coordinator: GroupCoordinator = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(
            self.config, self.timer, self.log, self.topics, group_configs=self.group_configs,
        )

    def send(self, request: HeartbeatRequest) -> dict[str, Any]:
        answer = self.coordinator.consumer_heartbeat(request)
        assert_exclusive(self.coordinator)
        return answer

    def consumer(self, member_id: str, instance_id: str | None = None, group: str = GROUP) -> Consumer:
        return Consumer(self, member_id, instance_id, group)

    def joined(self, *member_ids: str, **join: Any) -> list[Consumer]:
        """Consumers that joined one after the other and heartbeat until the group is stable."""
        consumers = []
        for member_id in member_ids:
            consumer = self.consumer(member_id)
            assert consumer.join(**join)["error_code"] == ErrorCode.NONE
            consumers.append(consumer)
        self.settle(*consumers)
        return consumers

    def settle(self, *consumers: Consumer, rounds: int = 5) -> None:
        """Heartbeat (acknowledging every assignment) until the group is stable: a round at least, for a change of
        the topics is noticed by a heartbeat."""
        for _ in range(rounds):
            self.timer.advance(0)  # what the event loop runs between requests (a regex resolved apart)
            for consumer in consumers:
                assert consumer.heartbeat()["error_code"] == ErrorCode.NONE
            if self.group().state() == ConsumerGroupState.STABLE:
                return
        raise AssertionError(f"group {self.group().group_id} still {self.group().state()}")

    def advance(self, ms: int, *heartbeating: Consumer) -> None:
        """Time passes; the ``heartbeating`` consumers heartbeat every heartbeat interval meanwhile."""
        end = self.timer.now + ms
        while self.timer.now + HEARTBEAT_MS <= end:
            self.timer.advance(HEARTBEAT_MS)
            assert_exclusive(self.coordinator)
            for consumer in heartbeating:
                consumer.heartbeat()
        self.timer.advance(end - self.timer.now)
        assert_exclusive(self.coordinator)

    def group(self, group_id: str = GROUP) -> ConsumerGroup:
        return self.coordinator.consumer.groups[group_id]

    def commit(self, member_id: str, epoch: int, offsets: dict[int, int], *, group: str = GROUP,
               api_version: int = 9) -> list[ErrorCode]:
        commits = [PartitionCommit(TOPIC, p, o, -1, "") for p, o in offsets.items()]
        return self.coordinator.commit_offsets(group, member_id, None, epoch, -1, commits, api_version)

    def fetch(self, member_id: str | None = None, epoch: int = -1, *, group: str = GROUP) -> dict[str, Any]:
        return self.coordinator.fetch_offsets(group, [(TOPIC, [0, 1])], member_id=member_id, member_epoch=epoch)

    def fetched(self, group: str = GROUP) -> dict[int, int]:
        answer = self.fetch(group=group)
        assert answer["error_code"] == ErrorCode.NONE
        return {p["partition_index"]: p["committed_offset"] for p in answer["topics"][0]["partitions"]}

    def classic_join(self, member_id: str = "", group: str = GROUP, session_ms: int = 10_000) -> Answers:
        answers = Answers()
        self.coordinator.join_group(JoinRequest(
            group, member_id, None, "classic-client", "/127.0.0.1", session_ms, REBALANCE_MS, "consumer",
            (("range", subscription(TOPIC)),), True, False,
        ), answers)
        return answers

    def restarted(self) -> Env:
        """A new coordinator that replays this one's __consumer_offsets (every record, in order, then goes live)."""
        other = Env(timer=self.timer, log=self.log, topics=self.topics, config=self.config, group_configs=self.group_configs)
        self.log.load_into(other.coordinator)
        return other


class Ack:
    """What a client reports by default: its assignment if it changed since it last reported it, else nothing."""


ACK = Ack()


@dataclass
class Consumer:
    """A librdkafka-like client: it remembers its epoch and its last assignment, and reports its owned partitions
    only when they changed (an assignment it has applied) or when a test says what it still owns."""

    env: Env
    member_id: str
    instance_id: str | None = None
    group: str = GROUP
    epoch: int = 0
    assignment: TopicPartitions = field(default_factory=dict)
    reported: TopicPartitions | None = None

    def join(self, **kwargs: Any) -> dict[str, Any]:
        self.epoch = 0
        self.assignment = {}
        return self._send(join_request(self.member_id, group=self.group, instance_id=self.instance_id, **kwargs))

    def heartbeat(self, owned: TopicPartitions | None | Ack = ACK, epoch: int | None = None,
                  **changes: Any) -> dict[str, Any]:
        """A heartbeat with only what changed (``changes``: other fields, e.g. a new subscription); ``owned``: what
        the client reports it owns, ``epoch``: the epoch it sends (default: its own)."""
        if isinstance(owned, Ack):
            owned = dict(self.assignment) if self.assignment != self.reported else None
        request = heartbeat_request(
            self.member_id, self.epoch if epoch is None else epoch, group=self.group, instance_id=self.instance_id,
            owned=owned, **changes,
        )
        return self._send(request)

    def leave(self, epoch: int = LEAVE) -> dict[str, Any]:
        return self._send(heartbeat_request(self.member_id, epoch, group=self.group, instance_id=self.instance_id))

    def _send(self, request: HeartbeatRequest) -> dict[str, Any]:
        answer = self.env.send(request)
        if answer["error_code"] == ErrorCode.NONE:
            if request.owned is not None:
                self.reported = dict(request.owned)
            self.epoch = answer["member_epoch"]
            assignment = assigned_in(answer)
            if assignment is not None:
                self.assignment = assignment
        return answer


@pytest.fixture
def env() -> Env:
    return Env()


def ok(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["error_code"] == ErrorCode.NONE, answer
    return answer


def error_of(answer: dict[str, Any]) -> ErrorCode:
    return answer["error_code"]


# ---- joining and reconciliation ----


def test_first_member_gets_every_partition_at_epoch_one(env: Env) -> None:
    a = env.consumer("member-a")
    answer = ok(a.join())
    assert answer["member_id"] == "member-a"
    assert answer["member_epoch"] == 1
    assert answer["heartbeat_interval_ms"] == HEARTBEAT_MS
    assert assigned_in(answer) == all_of(TOPIC, 4)
    group = env.group()
    assert (group.group_epoch, group.assignment_epoch, group.state()) == (1, 1, ConsumerGroupState.STABLE)
    member = group.members["member-a"]
    assert (member.member_epoch, member.state, member.assigned) == (1, MemberState.STABLE, all_of(TOPIC, 4))
    assert all(partition == 27 for partition in env.log.partitions)


def test_second_member_gets_partitions_only_once_the_first_revoked_them(env: Env) -> None:
    [a] = env.joined("member-a")
    b = env.consumer("member-b")

    # B joins: a new group epoch and target; what B is meant to get is still A's, so B gets nothing yet.
    answer = ok(b.join())
    group = env.group()
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    target_a, target_b = group.targets["member-a"], group.targets["member-b"]
    assert merged(target_a, target_b) == all_of(TOPIC, 4)
    assert len(target_a[topic_id(TOPIC)]) == len(target_b[topic_id(TOPIC)]) == 2
    assert answer["member_epoch"] == 2
    assert assigned_in(answer) == {}
    assert group.members["member-b"].state == MemberState.UNRELEASED_PARTITIONS
    assert group.state() == ConsumerGroupState.RECONCILING

    # A heartbeats (nothing changed on its side): it is asked to revoke, its assignment shrinks, its epoch stays.
    answer = ok(a.heartbeat())
    assert answer["member_epoch"] == 1
    assert assigned_in(answer) == target_a
    member_a = env.group().members["member-a"]
    assert member_a.state == MemberState.UNREVOKED_PARTITIONS
    assert member_a.pending_revocation == target_b

    # B still gets nothing: A has not said it let the partitions go.
    answer = ok(b.heartbeat())
    assert answer["member_epoch"] == 2
    assert assigned_in(answer) is None
    assert env.group().members["member-b"].assigned == {}
    answer = ok(a.heartbeat(owned=all_of(TOPIC, 4)))  # still owns them: no progress
    assert answer["member_epoch"] == 1
    assert ok(b.heartbeat())["member_epoch"] == 2
    assert env.group().members["member-b"].assigned == {}

    # A reports it no longer owns them: it moves to epoch 2, and B gets them at its next heartbeat.
    answer = ok(a.heartbeat())
    assert a.reported == target_a
    assert answer["member_epoch"] == 2
    assert assigned_in(answer) is None  # its assignment did not change at this step
    assert env.group().members["member-a"].state == MemberState.STABLE
    answer = ok(b.heartbeat())
    assert answer["member_epoch"] == 2
    assert assigned_in(answer) == target_b
    assert env.group().members["member-b"].state == MemberState.STABLE
    assert env.group().state() == ConsumerGroupState.STABLE

    # The revocation was in time: A's rebalance timeout was cancelled.
    env.advance(2 * REBALANCE_MS, a, b)
    assert set(env.group().members) == {"member-a", "member-b"}


def test_a_full_heartbeat_gets_the_assignment_again(env: Env) -> None:
    [a] = env.joined("member-a")
    assert assigned_in(ok(a.heartbeat())) is None
    full = heartbeat_request("member-a", 1, rebalance_ms=REBALANCE_MS, topics=[TOPIC], owned=all_of(TOPIC, 4))
    assert assigned_in(ok(env.send(full))) == all_of(TOPIC, 4)


def test_member_id_is_generated_at_version_zero(env: Env) -> None:
    answer = ok(env.send(join_request("", api_version=0)))
    assert answer["member_id"]
    assert set(env.group().members) == {answer["member_id"]}


def test_range_assignor_is_used_when_members_ask_for_it(env: Env) -> None:
    env.topics.create("payments", 4)
    env.joined("member-a", "member-b", topics=[TOPIC, "payments"], assignor="range")
    targets = env.group().targets
    # Co-partitioning: each member gets the same partition numbers of both topics.
    assert targets["member-a"] == merged(parts(0, 1), parts(0, 1, topic="payments"))
    assert targets["member-b"] == merged(parts(2, 3), parts(2, 3, topic="payments"))
    assert env.coordinator.consumer_describe(GROUP)["assignor_name"] == "range"


# ---- epochs and request validation ----


def test_epoch_validation(env: Env) -> None:
    a, b = env.joined("member-a", "member-b")
    c = env.consumer("member-c")
    ok(c.join())
    env.settle(a, b, c)
    member = env.group().members["member-a"]
    assert (member.member_epoch, member.previous_member_epoch) == (3, 2)

    assert error_of(a.heartbeat(epoch=4)) == ErrorCode.FENCED_MEMBER_EPOCH
    assert error_of(a.heartbeat(epoch=1, owned={})) == ErrorCode.FENCED_MEMBER_EPOCH  # smaller, not the previous
    # The previous epoch (the answer that bumped it may have been lost) with a subset of its assignment is fine ...
    answer = ok(a.heartbeat(epoch=2, owned=dict(member.assigned)))
    assert answer["member_epoch"] == 3
    assert ok(a.heartbeat(epoch=2, owned={}))["member_epoch"] == 3
    # ... but not without its owned partitions, nor owning more than its assignment.
    assert error_of(a.heartbeat(epoch=2, owned=None)) == ErrorCode.FENCED_MEMBER_EPOCH
    assert error_of(a.heartbeat(epoch=2, owned=all_of(TOPIC, 4))) == ErrorCode.FENCED_MEMBER_EPOCH
    assert env.group().members["member-a"] == member  # a refused heartbeat changes nothing

    ghost = heartbeat_request("ghost", 1, owned={})
    assert error_of(env.send(ghost)) == ErrorCode.UNKNOWN_MEMBER_ID
    missing = heartbeat_request("member-a", 1, group="no-such-group", owned={})
    answer = env.send(missing)
    assert error_of(answer) == ErrorCode.GROUP_ID_NOT_FOUND
    assert "no-such-group" not in env.coordinator.consumer.groups


def test_fenced_member_rejoins_with_epoch_zero_and_is_reconciled_from_scratch(env: Env) -> None:
    a, _ = env.joined("member-a", "member-b")
    assert error_of(a.heartbeat(epoch=99)) == ErrorCode.FENCED_MEMBER_EPOCH
    target = env.group().targets["member-a"]
    answer = ok(a.join())  # the client abandons its partitions and rejoins under its id (minibroker accepts it)
    assert answer["member_epoch"] == env.group().assignment_epoch
    assert env.group().group_epoch == 2  # same subscription: no new epoch
    assert assigned_in(answer) == {}  # what it owned is released by this very heartbeat: it comes with the next
    assert assigned_in(ok(a.heartbeat())) == target
    assert env.group().state() == ConsumerGroupState.STABLE


@pytest.mark.parametrize(("request_", "error", "message"), [
    (join_request("m", group=""), ErrorCode.INVALID_REQUEST, "GroupId can't be empty."),
    (join_request("", api_version=1), ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    (heartbeat_request("", 3, owned={}, api_version=0), ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    (join_request("m", instance_id=""), ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
    (join_request("m", rebalance_ms=-1), ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided"),
    (heartbeat_request("m", 0, rebalance_ms=REBALANCE_MS, topics=[TOPIC], owned=parts(0)), ErrorCode.INVALID_REQUEST,
     "TopicPartitions must be empty"),
    (heartbeat_request("m", 0, rebalance_ms=REBALANCE_MS, topics=[TOPIC], owned=None), ErrorCode.INVALID_REQUEST,
     "TopicPartitions must be empty"),
    (heartbeat_request("m", 0, rebalance_ms=REBALANCE_MS, owned={}), ErrorCode.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex"),
    (heartbeat_request("m", -3), ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
    (heartbeat_request("m", STATIC_LEAVE), ErrorCode.INVALID_REQUEST, "InstanceId can't be null."),
    (join_request("m", assignor="sticky"), ErrorCode.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported"),
    (join_request("m", regex="orders-("), ErrorCode.INVALID_REGULAR_EXPRESSION, "orders-("),
    (join_request("m", regex="orders-(?!eu)"), ErrorCode.INVALID_REGULAR_EXPRESSION, "lookarounds"),  # RE2/J's syntax
], ids=[
    "empty-group", "no-member-id-v1", "no-member-id-epoch", "empty-instance", "no-rebalance-timeout", "owned-on-join",
    "null-owned-on-join", "no-subscription", "bad-epoch", "static-leave-without-instance", "assignor", "regex",
    "regex-lookahead",
])
def test_invalid_requests(env: Env, request_: HeartbeatRequest, error: ErrorCode, message: str) -> None:
    answer = env.send(request_)
    assert answer["error_code"] == error
    assert message in answer["error_message"]
    assert answer["member_epoch"] == 0 and answer["assignment"] is None
    assert env.coordinator.consumer.groups == {}
    assert env.log.all_records() == []


def test_empty_subscription_joins_without_partitions(env: Env) -> None:
    a = env.consumer("member-a")
    answer = ok(a.join(topics=[]))  # allowed since regex support: a member of the group subscribed to nothing
    assert assigned_in(answer) == {}
    assert set(env.group().members) == {"member-a"}


def test_group_max_size() -> None:
    small = Env(config=GroupConfig(min_session_timeout_ms=1000, consumer_max_size=1))
    [a] = small.joined("member-a")
    assert error_of(small.consumer("member-b").join()) == ErrorCode.GROUP_MAX_SIZE_REACHED
    ok(a.heartbeat())  # a member already in the group is not refused


def test_failed_write_changes_nothing(env: Env) -> None:
    [a] = env.joined("member-a")
    before = group_state(env.group())
    env.log.fail_with = ErrorCode.KAFKA_STORAGE_ERROR
    b = env.consumer("member-b")
    assert error_of(b.join()) == ErrorCode.NOT_COORDINATOR
    assert error_of(a.leave()) == ErrorCode.NOT_COORDINATOR
    assert group_state(env.group()) == before
    env.log.fail_with = None
    assert ok(b.join())["member_epoch"] == 2


def test_loading_partition_answers_load_in_progress(env: Env) -> None:
    env.coordinator.begin_loading([27])
    assert error_of(env.consumer("member-a").join()) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert env.coordinator.consumer_describe(GROUP)["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    env.coordinator.finish_loading(27)
    ok(env.consumer("member-a").join())


# ---- leaving, session and rebalance timeouts ----


def test_leaving_member_partitions_go_to_the_others(env: Env) -> None:
    a, b = env.joined("member-a", "member-b")
    epoch = env.group().group_epoch
    answer = ok(a.leave())
    assert (answer["member_id"], answer["member_epoch"]) == ("member-a", LEAVE)
    group = env.group()
    assert set(group.members) == {"member-b"}
    assert group.group_epoch == epoch + 1
    assert group.state() == ConsumerGroupState.ASSIGNING  # the new target comes with the next heartbeat
    answer = ok(b.heartbeat())
    assert answer["member_epoch"] == epoch + 1
    assert assigned_in(answer) == all_of(TOPIC, 4)
    assert env.group().state() == ConsumerGroupState.STABLE
    assert error_of(a.heartbeat()) == ErrorCode.UNKNOWN_MEMBER_ID
    assert error_of(a.leave()) == ErrorCode.UNKNOWN_MEMBER_ID


def test_last_member_leaving_empties_the_group(env: Env) -> None:
    [a] = env.joined("member-a")
    ok(a.leave())
    group = env.group()
    assert group.members == {} and group.state() == ConsumerGroupState.EMPTY
    assert group.group_epoch == 2
    assert error_of(env.send(heartbeat_request("member-a", LEAVE, group="other"))) == ErrorCode.GROUP_ID_NOT_FOUND


def test_session_timeout_fences_a_silent_member(env: Env) -> None:
    a, b = env.joined("member-a", "member-b")
    epoch = env.group().group_epoch
    env.advance(SESSION_MS - 1, b)  # A is silent
    assert set(env.group().members) == {"member-a", "member-b"}
    env.advance(1)
    group = env.group()
    assert set(group.members) == {"member-b"}
    assert group.group_epoch == epoch + 1
    assert assigned_in(ok(b.heartbeat())) == all_of(TOPIC, 4)
    assert error_of(a.heartbeat()) == ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeats_keep_the_session(env: Env) -> None:
    a, b = env.joined("member-a", "member-b")
    env.advance(3 * SESSION_MS, a, b)
    assert set(env.group().members) == {"member-a", "member-b"}


def test_a_groups_configs_set_its_heartbeat_interval_and_session_timeout(env: Env) -> None:
    """Group configs (KIP-848): the next heartbeat of each member is told the group's interval, and the session it
    then starts lasts the group's timeout; other groups keep the broker's."""
    a, b = env.joined("member-a", "member-b")
    other = env.consumer("member-c", group="other")
    assert ok(other.join())["heartbeat_interval_ms"] == HEARTBEAT_MS
    env.group_configs.replace(GROUP, {"consumer.heartbeat.interval.ms": "2000", "consumer.session.timeout.ms": "9000"})
    assert ok(a.heartbeat())["heartbeat_interval_ms"] == 2000
    assert ok(b.heartbeat())["heartbeat_interval_ms"] == 2000
    assert ok(other.heartbeat())["heartbeat_interval_ms"] == HEARTBEAT_MS

    env.advance(9000 - 1, b)  # A is silent for its group's session timeout, far below the broker's
    assert set(env.group().members) == {"member-a", "member-b"}
    env.advance(1, b)
    assert set(env.group().members) == {"member-b"}
    assert set(env.group("other").members) == {"member-c"}, "the other group's member has the broker's timeout"

    env.group_configs.replace(GROUP, {})  # back to the broker's
    assert ok(b.heartbeat())["heartbeat_interval_ms"] == HEARTBEAT_MS


def test_group_configs_are_held_within_the_brokers_bounds() -> None:
    """Kafka's GroupConfig.evaluate: a value set before the broker's bounds narrowed counts as the nearest bound."""
    configs = GroupConfigs({"group.consumer.max.heartbeat.interval.ms": "1500", "group.consumer.min.session.timeout.ms": "20000"})
    configs.replace(GROUP, {"consumer.heartbeat.interval.ms": "2000", "consumer.session.timeout.ms": "9000"})
    assert configs.value(GROUP, "consumer.heartbeat.interval.ms") == 1500
    assert configs.value(GROUP, "consumer.session.timeout.ms") == 20000
    assert configs.value("other", "consumer.session.timeout.ms") is None


def test_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(env: Env) -> None:
    [a] = env.joined("member-a")
    b = env.consumer("member-b")
    ok(b.join())
    ok(a.heartbeat())
    assert env.group().members["member-a"].state == MemberState.UNREVOKED_PARTITIONS
    epoch = env.group().group_epoch

    # A keeps heartbeating (its session stays alive) but keeps reporting the partitions it was asked to give up.
    def stubborn() -> None:
        env.timer.advance(HEARTBEAT_MS)
        if "member-a" in env.group().members:
            assert ok(a.heartbeat(owned=all_of(TOPIC, 4)))["member_epoch"] == 1
        ok(b.heartbeat())

    for _ in range(REBALANCE_MS // HEARTBEAT_MS - 1):
        stubborn()
    env.timer.advance(HEARTBEAT_MS - 1)
    assert "member-a" in env.group().members
    env.timer.advance(1)
    group = env.group()
    assert set(group.members) == {"member-b"}
    assert group.group_epoch == epoch + 1
    answer = ok(b.heartbeat())
    assert assigned_in(answer) == all_of(TOPIC, 4)
    assert env.group().state() == ConsumerGroupState.STABLE
    assert error_of(a.heartbeat(owned=all_of(TOPIC, 4))) == ErrorCode.UNKNOWN_MEMBER_ID


# ---- static membership ----


def test_static_member_leaves_and_a_new_incarnation_gets_its_partitions(env: Env) -> None:
    s = env.consumer("static-1", instance_id="instance-1")
    ok(s.join())
    d = env.consumer("dynamic-1")
    ok(d.join())
    env.settle(s, d)
    group = env.group()
    epoch, owned_by_s = group.group_epoch, group.members["static-1"].assigned

    answer = ok(s.leave(STATIC_LEAVE))
    assert (answer["member_id"], answer["member_epoch"]) == ("static-1", STATIC_LEAVE)
    group = env.group()
    assert group.group_epoch == epoch  # no rebalance: the instance is expected back
    away = group.members["static-1"]
    assert (away.member_epoch, away.assigned) == (STATIC_LEAVE, owned_by_s)
    assert assigned_in(ok(d.heartbeat())) is None  # the others do not get its partitions meanwhile

    restarted = env.consumer("static-2", instance_id="instance-1")
    answer = ok(restarted.join())
    assert answer["member_id"] == "static-2"
    group = env.group()
    assert group.group_epoch == epoch  # the same member, back: no rebalance
    assert answer["member_epoch"] == group.assignment_epoch == epoch
    assert assigned_in(answer) == owned_by_s
    assert "static-1" not in group.members and "static-1" not in group.targets
    assert group.static_members == {"instance-1": "static-2"}
    assert group.targets["static-2"] == owned_by_s
    assert group.members["static-2"].state == MemberState.STABLE
    # A later heartbeat keeps them (the member is reconciled, not left with nothing).
    ok(restarted.heartbeat())
    assert env.group().members["static-2"].assigned == owned_by_s
    assert env.group().state() == ConsumerGroupState.STABLE


def test_instance_id_in_use_and_fenced_instance(env: Env) -> None:
    s = env.consumer("static-1", instance_id="instance-1")
    ok(s.join())
    intruder = env.consumer("static-2", instance_id="instance-1")
    assert error_of(intruder.join()) == ErrorCode.UNRELEASED_INSTANCE_ID
    assert error_of(intruder.heartbeat(epoch=1)) == ErrorCode.FENCED_INSTANCE_ID
    assert error_of(intruder.leave(STATIC_LEAVE)) == ErrorCode.FENCED_INSTANCE_ID
    assert error_of(env.consumer("static-3", instance_id="nobody").heartbeat(epoch=1)) == ErrorCode.UNKNOWN_MEMBER_ID
    assert set(env.group().members) == {"static-1"}
    ok(s.heartbeat())


def static_and_dynamic(env: Env) -> tuple[Consumer, Consumer, int]:
    """A static and a dynamic member, both joined and settled; with the group epoch they reached."""
    s = env.consumer("static-1", instance_id="instance-1")
    d = env.consumer("dynamic-1")
    ok(s.join())
    ok(d.join())
    env.settle(s, d)
    return s, d, env.group().group_epoch


def test_static_member_that_does_not_come_back_is_removed_after_its_session(env: Env) -> None:
    s, d, epoch = static_and_dynamic(env)
    ok(s.leave(STATIC_LEAVE))
    env.advance(SESSION_MS, d)
    group = env.group()
    assert set(group.members) == {"dynamic-1"}
    assert group.group_epoch == epoch + 1
    assert env.group().static_members == {}
    assert d.assignment == all_of(TOPIC, 4)  # handed over at its heartbeat right after the fencing
    assert env.group().state() == ConsumerGroupState.STABLE


def test_static_member_leaving_for_good_triggers_a_rebalance(env: Env) -> None:
    s, d, epoch = static_and_dynamic(env)
    ok(s.leave(LEAVE))
    assert set(env.group().members) == {"dynamic-1"}
    assert env.group().group_epoch == epoch + 1
    assert env.group().static_members == {}
    # The instance id is free: a new incarnation joins as a new member (a new subscription, a new epoch).
    assert ok(env.consumer("static-2", instance_id="instance-1").join())["member_epoch"] == epoch + 2


# ---- regular expressions and topic metadata ----


def regex_records(log: FakeRecordLog) -> list[tuple[str, tuple[str, ...] | None]]:
    return [
        (key.regex, None if value is None else value.topics)
        for key, value in written(log) if isinstance(key, ConsumerGroupRegularExpressionKey)
    ]


def test_regex_subscription_follows_new_topics() -> None:
    env = Env(topics=FakeTopics({"orders-eu": 2, "payments": 2}))
    a = env.consumer("member-a")
    answer = ok(a.join(regex="orders-.*"))
    assert assigned_in(answer) == {}  # as in Kafka, a new regex is resolved apart, after this heartbeat
    env.timer.advance(0)
    assert env.group().regexes == {"orders-.*": frozenset({"orders-eu"})}
    answer = ok(a.heartbeat())  # the resolution bumped the group epoch: the topics come with the next heartbeat
    assert assigned_in(answer) == all_of("orders-eu", 2)
    assert regex_records(env.log) == [("orders-.*", ("orders-eu",))]
    b = env.consumer("member-b")
    ok(b.join(topics=["payments"]))
    env.settle(a, b)
    assert env.group().members["member-b"].assigned == all_of("payments", 2)
    epoch = env.group().group_epoch

    # Without a catalog change nothing is written for the regex.
    ok(a.heartbeat())
    assert regex_records(env.log) == [("orders-.*", ("orders-eu",))]

    env.topics.create("orders-us", 2)
    ok(a.heartbeat())  # notices the new topic and has the regex resolved again
    env.timer.advance(0)
    answer = ok(a.heartbeat())
    group = env.group()
    assert group.group_epoch == epoch + 1
    assert group.regexes == {"orders-.*": frozenset({"orders-eu", "orders-us"})}
    assert regex_records(env.log)[-1] == ("orders-.*", ("orders-eu", "orders-us"))
    assert assigned_in(answer) == merged(all_of("orders-eu", 2), all_of("orders-us", 2))
    assert answer["member_epoch"] == epoch + 1

    # A topic the regex does not match changes neither the regex nor the group epoch.
    env.topics.create("refunds", 2)
    ok(a.heartbeat())
    env.timer.advance(0)
    ok(b.heartbeat())
    assert env.group().group_epoch == epoch + 1
    assert len(regex_records(env.log)) == 2


def test_regex_is_dropped_when_no_member_uses_it() -> None:
    env = Env(topics=FakeTopics({"orders-eu": 2, "payments": 2}))
    a = env.consumer("member-a")
    ok(a.join(regex="orders-.*"))
    env.timer.advance(0)
    ok(a.heartbeat(topics=["payments"], regex=""))  # librdkafka clears a regex with an empty one
    group = env.group()
    assert group.regexes == {}
    assert regex_records(env.log)[-1] == ("orders-.*", None)
    assert group.members["member-a"].subscribed_topic_regex is None
    assert env.group().targets["member-a"] == all_of("payments", 2)


def test_regex_is_resolved_again_after_a_failed_write() -> None:
    env = Env(topics=FakeTopics({"orders-eu": 2}))
    a = env.consumer("member-a")
    ok(a.join(regex="orders-.*"))
    env.settle(a)
    env.topics.create("orders-us", 2)
    ok(a.heartbeat())  # the regex is resolved again apart...
    env.log.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    env.timer.advance(0)  # ...and that write fails
    env.log.fail_with = None
    ok(a.heartbeat())  # so the next heartbeat has it resolved again
    env.timer.advance(0)
    answer = ok(a.heartbeat())
    assert env.group().regexes == {"orders-.*": frozenset({"orders-eu", "orders-us"})}
    assert assigned_in(answer) == merged(all_of("orders-eu", 2), all_of("orders-us", 2))


def test_subscription_change_bumps_the_group_epoch(env: Env) -> None:
    env.topics.create("payments", 2)
    [a] = env.joined("member-a")
    answer = ok(a.heartbeat(topics=[TOPIC, "payments"]))
    assert env.group().group_epoch == 2
    assert assigned_in(answer) == merged(all_of(TOPIC, 4), all_of("payments", 2))


def test_partition_count_change_triggers_a_new_assignment(env: Env) -> None:
    a, b = env.joined("member-a", "member-b")
    epoch = env.group().group_epoch
    env.topics.add_partitions(TOPIC, 8)
    answer = ok(a.heartbeat())
    group = env.group()
    assert group.group_epoch == epoch + 1
    assert merged(*group.targets.values()) == all_of(TOPIC, 8)
    assert answer["member_epoch"] == epoch + 1
    assert len(assigned_in(answer)[topic_id(TOPIC)]) == 4
    env.settle(a, b)
    assert merged(a.assignment, b.assignment) == all_of(TOPIC, 8)


def test_topic_created_after_the_subscription(env: Env) -> None:
    a = env.consumer("member-a")
    answer = ok(a.join(topics=["later"]))
    assert assigned_in(answer) == {}
    env.topics.create("later", 3)
    answer = ok(a.heartbeat())
    assert env.group().group_epoch == 2
    assert assigned_in(answer) == all_of("later", 3)


# ---- persistence ----


def test_groups_are_rebuilt_from_the_log() -> None:
    env = Env(topics=FakeTopics({TOPIC: 4, "orders-eu": 3}))
    a, b = env.joined("member-a", "member-b")
    s = env.consumer("static-1", instance_id="instance-1")
    ok(s.join(regex="orders-.*"))
    env.settle(a, b, s)
    env.topics.add_partitions(TOPIC, 6)
    env.settle(a, b, s)
    c = env.consumer("member-c")
    ok(c.join())
    ok(a.heartbeat())  # A is asked to revoke, B has not heard yet, C waits for partitions: mid-reconciliation
    ok(s.leave(STATIC_LEAVE))
    other = env.consumer("member-b", group="other-group")
    ok(other.join())
    ok(other.leave())
    before = {group_id: group_state(group) for group_id, group in env.coordinator.consumer.groups.items()}
    assert before[GROUP]["state"] == ConsumerGroupState.RECONCILING
    assert before[GROUP]["members"]["member-a"].state == MemberState.UNREVOKED_PARTITIONS
    assert before["other-group"]["state"] == ConsumerGroupState.EMPTY

    restarted = env.restarted()
    after = {group_id: group_state(group) for group_id, group in restarted.coordinator.consumer.groups.items()}
    assert after == before
    assert restarted.coordinator.groups == {}

    # The members go on where they were, and the static member comes back to its partitions.
    for consumer in (a, b, c):
        consumer.env = restarted
    s = restarted.consumer("static-2", instance_id="instance-1")
    assert assigned_in(ok(s.join(regex="orders-.*"))) == all_of("orders-eu", 3)
    restarted.settle(a, b, c, s)
    assert restarted.group().group_epoch == before[GROUP]["group_epoch"]
    assert merged(a.assignment, b.assignment, c.assignment, s.assignment) == merged(
        all_of(TOPIC, 6), all_of("orders-eu", 3),
    )


def test_members_of_a_reloaded_group_expire_without_heartbeats(env: Env) -> None:
    env.joined("member-a", "member-b")
    restarted = env.restarted()
    restarted.advance(SESSION_MS)
    assert restarted.group().members == {}
    assert restarted.group().state() == ConsumerGroupState.EMPTY


def test_delete_empty_consumer_group(env: Env) -> None:
    [a] = env.joined("member-a")
    assert env.commit("member-a", 1, {0: 10}) == [ErrorCode.NONE]
    assert env.coordinator.delete_groups([GROUP]) == [{"group_id": GROUP, "error_code": ErrorCode.NON_EMPTY_GROUP}]
    ok(a.leave())
    before = len(env.log.all_records())
    assert env.coordinator.delete_groups([GROUP]) == [{"group_id": GROUP, "error_code": ErrorCode.NONE}]
    assert GROUP not in env.coordinator.consumer.groups
    assert env.fetched() == {0: -1, 1: -1}
    tombstones = written(env.log)[before:]
    assert all(value is None for _, value in tombstones)
    assert OffsetCommitKey(GROUP, TOPIC, 0) in [key for key, _ in tombstones]
    assert tombstones[-1][0] == ConsumerGroupMetadataKey(GROUP)  # the epoch tombstone last: it deletes the group
    restarted = env.restarted()
    assert restarted.coordinator.consumer.groups == {}
    assert restarted.coordinator.groups == {}
    assert restarted.fetched() == {0: -1, 1: -1}
    assert env.coordinator.delete_groups([GROUP]) == [{"group_id": GROUP, "error_code": ErrorCode.GROUP_ID_NOT_FOUND}]


# ---- offsets ----


def test_offset_commit_validation(env: Env) -> None:
    [a] = env.joined("member-a")
    assert env.commit("member-a", 1, {0: 10}) == [ErrorCode.NONE]
    assert env.commit("member-a", 0, {0: 11}) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert env.commit("member-a", 2, {0: 11}) == [ErrorCode.STALE_MEMBER_EPOCH]
    assert env.commit("ghost", 1, {0: 11}) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert env.commit("", -1, {0: 11}) == [ErrorCode.UNKNOWN_MEMBER_ID]  # the group has members
    assert env.commit("member-a", 1, {0: 11}, api_version=8) == [ErrorCode.UNSUPPORTED_VERSION]
    assert env.fetched() == {0: 10, 1: -1}

    b = env.consumer("member-b")
    ok(b.join())
    env.settle(a, b)
    kept = min(a.assignment[topic_id(TOPIC)])
    lost = min(b.assignment[topic_id(TOPIC)])
    assert env.commit("member-a", 1, {lost: 12}) == [ErrorCode.STALE_MEMBER_EPOCH]  # no longer A's partition
    assert env.commit("member-a", 1, {kept: 12}) == [ErrorCode.NONE]  # KIP-1251: A has had it since epoch 1
    assert env.commit("member-a", a.epoch, {0: 12}) == [ErrorCode.NONE]

    ok(a.leave())
    ok(b.leave())
    assert env.commit("", -1, {1: 20}) == [ErrorCode.NONE]  # an empty group takes commits from outside
    assert env.commit("member-a", 2, {1: 21}) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert env.fetched() == {0: 12, 1: 20}
    assert GROUP not in env.coordinator.groups  # the commits made no classic group


def test_commit_with_an_older_epoch_is_checked_against_each_partitions_assignment_epoch(env: Env) -> None:
    """KIP-1251 (Kafka 4.3's ConsumerGroup.validateOffsetCommit): a member epoch older than the member's is accepted
    for a partition the member has (or is revoking) since that epoch or before; a partition assigned to it later, or
    not its own, makes the whole commit STALE_MEMBER_EPOCH; a newer epoch is always refused."""
    env.topics.create("payments", 2)
    [a] = env.joined("member-a")  # epoch 1: orders 0-3
    tid = topic_id(TOPIC)
    assert a.epoch == 1 and a.assignment == all_of(TOPIC, 4)

    # A subscribes to payments too: epoch 2, payments 0-1 assigned at 2, orders kept from 1.
    ok(a.heartbeat(topics=[TOPIC, "payments"]))
    env.settle(a)
    assert a.epoch == 2
    member = env.group().members["member-a"]
    assert member.assignment_epoch(tid, 0) == 1 and member.assignment_epoch(topic_id("payments"), 0) == 2

    def commit(epoch: int, *partitions: tuple[str, int]) -> list[ErrorCode]:
        commits = [PartitionCommit(topic, p, 5, -1, "") for topic, p in partitions]
        return env.coordinator.commit_offsets(GROUP, "member-a", None, epoch, -1, commits, 9)

    assert commit(1, (TOPIC, 0), (TOPIC, 3)) == [ErrorCode.NONE] * 2
    assert commit(1, ("payments", 0)) == [ErrorCode.STALE_MEMBER_EPOCH]  # assigned at epoch 2
    assert commit(1, (TOPIC, 1), ("payments", 1)) == [ErrorCode.STALE_MEMBER_EPOCH] * 2  # one refuses the whole commit
    assert commit(2, ("payments", 1), (TOPIC, 1)) == [ErrorCode.NONE] * 2
    assert commit(3, (TOPIC, 0)) == [ErrorCode.STALE_MEMBER_EPOCH]  # newer than the member's
    assert commit(0, (TOPIC, 0)) == [ErrorCode.STALE_MEMBER_EPOCH]  # older than the assignment
    assert commit(1, ("unknown-topic", 0)) == [ErrorCode.STALE_MEMBER_EPOCH]

    # B joins: A is asked to revoke two orders partitions; while it revokes them it may still commit them at epoch 1.
    b = env.consumer("member-b")
    ok(b.join())
    ok(a.heartbeat())
    member = env.group().members["member-a"]
    assert member.state == MemberState.UNREVOKED_PARTITIONS and member.member_epoch == 2
    revoked = min(member.pending_revocation[tid])  # the assignor moves orders partitions (A's since epoch 1) to B
    assert member.assignment_epoch(tid, revoked) == 1
    assert commit(1, (TOPIC, revoked)) == [ErrorCode.NONE]
    env.settle(a, b)
    assert commit(1, (TOPIC, revoked)) == [ErrorCode.STALE_MEMBER_EPOCH]  # once revoked it is B's

    # The assignment epochs are in the log: a coordinator that replays it decides the same.
    kept = sorted(env.group().members["member-a"].assigned.get(tid, ()))
    assert kept
    again = env.restarted()
    member = again.group().members["member-a"]
    assert [member.assignment_epoch(tid, p) for p in kept] == [1] * len(kept)
    commits = [PartitionCommit(TOPIC, p, 6, -1, "") for p in kept]
    assert again.coordinator.commit_offsets(GROUP, "member-a", None, 1, -1, commits, 9) == [ErrorCode.NONE] * len(kept)


def test_transactional_commit_naming_no_member_is_accepted_by_a_group_with_members(env: Env) -> None:
    """Kafka's validateOffsetCommit: a TxnOffsetCommit without member id, epoch or instance id (clients before
    KIP-447) is not checked; one naming an unknown member is refused."""
    env.joined("member-a")
    commits = [PartitionCommit(TOPIC, 0, 7, -1, "")]
    commit = env.coordinator.commit_transactional_offsets
    assert commit(GROUP, 1000, 0, "", None, -1, commits) == [ErrorCode.NONE]
    assert commit(GROUP, 1001, 0, "ghost", None, -1, commits) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert commit(GROUP, 1002, 0, "member-a", None, 1, commits) == [ErrorCode.NONE]


def test_offset_fetch_validation(env: Env) -> None:
    env.joined("member-a")
    env.commit("member-a", 1, {0: 10})
    answer = env.fetch("member-a", 1)
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["topics"][0]["partitions"][0]["committed_offset"] == 10
    assert env.fetch("member-a", 0)["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    assert env.fetch("member-a", 2)["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    assert env.fetch("ghost", 1)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert env.fetch(None, -1)["error_code"] == ErrorCode.NONE  # an admin client
    assert env.fetched() == {0: 10, 1: -1}


def test_offset_delete_refuses_subscribed_topics(env: Env) -> None:
    env.topics.create("payments", 2)
    env.joined("member-a")
    env.commit("member-a", 1, {0: 10})
    env.coordinator.commit_offsets(GROUP, "member-a", None, 1, -1, [PartitionCommit("payments", 0, 3, -1, "")], 9)
    error, answers = env.coordinator.delete_offsets(GROUP, [(TOPIC, [0]), ("payments", [0])])
    assert error == ErrorCode.NONE
    assert [(t["name"], t["partitions"][0]["error_code"]) for t in answers] == [
        (TOPIC, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC), ("payments", ErrorCode.NONE),
    ]
    assert env.fetched() == {0: 10, 1: -1}
    assert env.coordinator.offsets.get(GROUP, "payments", 0) is None


# ---- listing and describing ----


def test_list_groups_by_type_and_state(env: Env) -> None:
    _, b = env.joined("member-a", "member-b")
    gone = env.consumer("member-x", group="empty-consumer")
    ok(gone.join())
    ok(gone.leave())
    env.commit("", -1, {0: 1}, group="simple")

    def listed(states: list[str], types: list[str]) -> dict[str, tuple[str, str, str]]:
        error, groups = env.coordinator.list_groups(states, types)
        assert error == ErrorCode.NONE
        return {g["group_id"]: (g["group_type"], g["group_state"], g["protocol_type"]) for g in groups}

    assert listed([], []) == {
        GROUP: ("consumer", "Stable", "consumer"), "empty-consumer": ("consumer", "Empty", "consumer"),
        "simple": ("classic", "Empty", ""),
    }
    assert set(listed([], ["consumer"])) == {GROUP, "empty-consumer"}
    assert set(listed([], ["Classic"])) == {"simple"}
    assert set(listed(["stable"], [])) == {GROUP}
    assert set(listed(["Empty"], ["consumer"])) == {"empty-consumer"}
    assert listed(["Reconciling"], []) == {}

    ok(b.leave())
    assert listed(["Assigning"], ["consumer"]) == {GROUP: ("consumer", "Assigning", "consumer")}
    ok(env.consumer("member-c").join())
    assert set(listed(["Reconciling"], ["consumer"])) == {GROUP}


def test_describe_group_of_a_consumer_group_is_dead(env: Env) -> None:
    env.joined("member-a")
    answer = env.coordinator.describe_group(GROUP)
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["group_state"] == "Dead"
    assert answer["members"] == []


def test_consumer_describe(env: Env) -> None:
    [a] = env.joined("member-a")
    b = env.consumer("member-b")
    ok(b.join())
    ok(a.heartbeat())  # A revoking, B waiting
    group = env.group()
    answer = env.coordinator.consumer_describe(GROUP)
    assert answer["error_code"] == ErrorCode.NONE
    assert (answer["group_id"], answer["group_state"], answer["group_epoch"], answer["assignment_epoch"]) == (
        GROUP, "Reconciling", 2, 2,
    )
    assert answer["assignor_name"] == "uniform"
    members = {m["member_id"]: m for m in answer["members"]}
    assert set(members) == {"member-a", "member-b"}

    def described(partitions: TopicPartitions) -> list[dict[str, Any]]:
        return [
            {"topic_id": tid, "topic_name": TOPIC, "partitions": sorted(p)} for tid, p in sorted(partitions.items())
        ]

    member_a, member_b = members["member-a"], members["member-b"]
    assert member_a["member_epoch"] == 1 and member_b["member_epoch"] == 2
    assert member_a["assignment"] == {"topic_partitions": described(group.targets["member-a"])}
    assert member_a["target_assignment"] == {"topic_partitions": described(group.targets["member-a"])}
    assert member_b["assignment"] == {"topic_partitions": []}
    assert member_b["target_assignment"] == {"topic_partitions": described(group.targets["member-b"])}
    assert member_a["subscribed_topic_names"] == [TOPIC]
    assert (member_a["client_id"], member_a["client_host"], member_a["instance_id"]) == ("rdkafka", "/127.0.0.1", None)
    assert member_a["member_type"] == 1

    ok(a.heartbeat())
    ok(b.heartbeat())
    answer = env.coordinator.consumer_describe(GROUP)
    assert answer["group_state"] == "Stable"
    assert {m["member_id"]: m["member_epoch"] for m in answer["members"]} == {"member-a": 2, "member-b": 2}


def test_consumer_describe_of_other_groups(env: Env) -> None:
    env.commit("", -1, {0: 1}, group="simple")
    answer = env.coordinator.consumer_describe("simple")
    assert answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert "is not a consumer group" in answer["error_message"]
    assert env.coordinator.consumer_describe("missing")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


# ---- classic <-> consumer ----


def test_heartbeat_converts_an_empty_classic_group_and_keeps_its_offsets(env: Env) -> None:
    assert env.commit("", -1, {0: 7, 1: 8}, api_version=8) == [ErrorCode.NONE, ErrorCode.NONE]
    assert GROUP in env.coordinator.groups
    a = env.consumer("member-a")
    answer = ok(a.join())
    assert answer["member_epoch"] == 1
    assert GROUP not in env.coordinator.groups
    assert env.group().members.keys() == {"member-a"}
    assert env.fetched() == {0: 7, 1: 8}
    restarted = env.restarted()
    assert GROUP not in restarted.coordinator.groups
    assert set(restarted.group().members) == {"member-a"}
    assert restarted.fetched() == {0: 7, 1: 8}


def test_heartbeat_to_a_classic_group_with_members_is_refused_when_the_upgrade_is_off() -> None:
    env = Env(config=GroupConfig(
        min_session_timeout_ms=1000, initial_rebalance_delay_ms=0, consumer_migration_policy="downgrade",
    ))
    first = env.classic_join()
    env.classic_join(first.last["member_id"])
    env.timer.advance(0)
    assert env.coordinator.groups[GROUP].members
    for request in (join_request("member-a"), heartbeat_request("member-a", 1, owned={})):
        answer = env.send(request)
        assert answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert "is not a consumer group" in answer["error_message"]
    assert GROUP not in env.coordinator.consumer.groups


def test_classic_join_converts_an_empty_consumer_group_and_keeps_its_offsets(env: Env) -> None:
    [a] = env.joined("member-a")
    env.commit("member-a", 1, {0: 5})
    ok(a.leave())
    answer = env.classic_join().last
    assert answer["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert GROUP not in env.coordinator.consumer.groups
    assert GROUP in env.coordinator.groups
    assert env.fetched() == {0: 5, 1: -1}
    restarted = env.restarted()
    assert restarted.coordinator.consumer.groups == {}
    assert restarted.fetched() == {0: 5, 1: -1}


# ---- the online migration: classic members in a consumer-protocol group ----


@dataclass
class ClassicClient:
    """A classic member as a Java consumer drives it: JoinGroup (with a member id once it has one), SyncGroup as a
    follower, Heartbeat with its generation."""

    env: Env
    member_id: str = ""
    generation: int = -1
    assigned: set[int] = field(default_factory=set)

    def join(self, session_ms: int = 10_000) -> dict[str, Any]:
        answer = self._join(session_ms)
        if answer["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = answer["member_id"]
            answer = self._join(session_ms)
        if answer["error_code"] == ErrorCode.NONE:
            self.generation = answer["generation_id"]
        return answer

    def _join(self, session_ms: int) -> dict[str, Any]:
        answers = self.env.classic_join(self.member_id, session_ms=session_ms)
        self.env.timer.advance(0)  # a classic group answers once its join phase completes
        return answers.last

    def sync(self, assignments: dict[str, bytes] | None = None) -> dict[str, Any]:
        answers = Answers()
        self.env.coordinator.sync_group(
            GROUP, self.member_id, None, self.generation, "consumer", "range", assignments or {}, answers,
        )
        self.env.timer.advance(0)
        answer = answers.last
        if answer["error_code"] == ErrorCode.NONE:
            self.assigned = set(decode_assignment(answer["assignment"]).get(TOPIC, set()))
        return answer

    def heartbeat(self) -> ErrorCode:
        return self.env.coordinator.heartbeat(GROUP, self.member_id, None, self.generation)

    def rejoin_and_sync(self) -> None:
        assert self.join()["error_code"] == ErrorCode.NONE
        assert self.sync()["error_code"] == ErrorCode.NONE


def stable_classic_group(env: Env) -> ClassicClient:
    """A classic group whose one member owns every partition of TOPIC (generation 1)."""
    client = ClassicClient(env)
    answer = client.join()
    assert answer["error_code"] == ErrorCode.NONE and answer["leader"] == client.member_id
    assert client.sync({client.member_id: assignment(TOPIC, 0, 1, 2, 3)})["error_code"] == ErrorCode.NONE
    assert client.assigned == {0, 1, 2, 3}
    return client


def consumer_partitions(consumer: Consumer) -> set[int]:
    return set(consumer.assignment.get(topic_id(TOPIC), frozenset()))


def test_a_heartbeat_upgrades_a_classic_group_with_members(env: Env) -> None:
    classic = stable_classic_group(env)
    a = env.consumer("member-a")
    answer = ok(a.join())
    assert GROUP not in env.coordinator.groups
    group = env.group()
    assert set(group.members) == {classic.member_id, "member-a"}
    assert group.members[classic.member_id].classic is not None
    assert answer["member_epoch"] == 2 and consumer_partitions(a) == set()  # the classic member still owns them all
    assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    classic.rejoin_and_sync()  # an eager member gives everything up before it rejoins
    assert classic.generation == 2 and len(classic.assigned) == 2
    env.settle(a)
    assert consumer_partitions(a) == {0, 1, 2, 3} - classic.assigned
    assert classic.heartbeat() == ErrorCode.NONE
    assert_exclusive(env.coordinator)
    restarted = env.restarted()
    assert restarted.group().members[classic.member_id].classic == group.members[classic.member_id].classic


def test_a_classic_member_joins_a_consumer_group_and_gets_its_share(env: Env) -> None:
    [a] = env.joined("member-a")
    classic = ClassicClient(env)
    joined = classic.join()
    assert joined["error_code"] == ErrorCode.NONE and joined["leader"] == "" and joined["members"] == []
    assert joined["protocol_name"] == "range"
    assert classic.sync()["error_code"] == ErrorCode.NONE
    assert classic.assigned == set()  # member-a must revoke first
    ok(a.heartbeat())  # told to give two partitions up
    ok(a.heartbeat())  # gave them up
    assert len(consumer_partitions(a)) == 2
    assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS  # its partitions are free: rejoin to take them
    classic.rejoin_and_sync()
    assert len(classic.assigned) == 2 and classic.assigned.isdisjoint(consumer_partitions(a))
    assert_exclusive(env.coordinator)
    assert env.coordinator.commit_offsets(
        GROUP, classic.member_id, None, classic.generation, -1, [PartitionCommit(TOPIC, 0, 5, -1, "")], 8,
    ) == [ErrorCode.NONE]
    assert env.coordinator.commit_offsets(
        GROUP, classic.member_id, None, classic.generation - 1, -1, [PartitionCommit(TOPIC, 0, 5, -1, "")], 8,
    ) == [ErrorCode.ILLEGAL_GENERATION]
    described = env.coordinator.consumer_describe(GROUP)
    assert {m["member_id"]: m["member_type"] for m in described["members"]} == {"member-a": 1, classic.member_id: 0}


def test_the_last_consumer_member_leaving_downgrades_the_group_to_classic(env: Env) -> None:
    [a] = env.joined("member-a")
    classic = ClassicClient(env)
    classic.join()
    classic.sync()
    ok(a.heartbeat())
    ok(a.heartbeat())
    classic.rejoin_and_sync()
    assert len(classic.assigned) == 2
    ok(a.leave())
    assert GROUP not in env.coordinator.consumer.groups
    group = env.coordinator.groups[GROUP]
    assert set(group.members) == {classic.member_id}
    assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    answer = classic.join()
    assert answer["error_code"] == ErrorCode.NONE and answer["leader"] == classic.member_id
    assert classic.sync({classic.member_id: assignment(TOPIC, 0, 1, 2, 3)})["error_code"] == ErrorCode.NONE
    assert classic.heartbeat() == ErrorCode.NONE
    restarted = env.restarted()
    assert GROUP in restarted.coordinator.groups and GROUP not in restarted.coordinator.consumer.groups


def test_a_classic_member_that_never_syncs_is_removed(env: Env) -> None:
    [a] = env.joined("member-a")
    classic = ClassicClient(env)
    classic.join()
    env.timer.advance(REBALANCE_MS + 1)
    assert set(env.group().members) == {"member-a"}
    assert classic.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_classic_member_told_to_rejoin_that_does_not_is_removed(env: Env) -> None:
    classic = stable_classic_group(env)
    a = env.consumer("member-a")
    ok(a.join())
    assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    for _ in range(REBALANCE_MS // 8000):  # it keeps its session (10 s) but never rejoins
        env.timer.advance(8000)
        assert classic.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS  # the deadline runs from the first time
    env.timer.advance(8000)
    assert set(env.group().members) == {"member-a"}
    env.settle(a)
    assert consumer_partitions(a) == {0, 1, 2, 3}
