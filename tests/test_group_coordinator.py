"""The classic group coordinator driven directly, with a fake clock and an in-memory __consumer_offsets."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)

from minibroker.groups.config import GroupConfig
from minibroker.groups.coordinator import GroupCoordinator
from minibroker.groups.group import GroupState
from minibroker.groups.requests import JoinRequest, LeavingMember, PartitionCommit
from tests.groupfakes import Answers, FakeRecordLog, FakeTimer, assignment, subscription

SESSION_MS = 10_000
REBALANCE_MS = 30_000
LONG_SESSION_MS = 300_000  # for tests about what happens before a silent member's session would end
GROUP = "testgroup"  # partition 27 of 50
TOPIC = "orders"


@dataclass
class Env:
    timer: FakeTimer = field(default_factory=FakeTimer)
    log: FakeRecordLog = field(default_factory=FakeRecordLog)
    config: GroupConfig = field(default_factory=lambda: GroupConfig(min_session_timeout_ms=1000, initial_rebalance_delay_ms=0))
    coordinator: GroupCoordinator = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.config, self.timer, self.log)

    def join(
        self, member_id: str = "", *, instance_id: str | None = None, client_id: str = "client",
        protocols: tuple[tuple[str, bytes], ...] = (("range", subscription(TOPIC)),), protocol_type: str = "consumer",
        session_ms: int = SESSION_MS, rebalance_ms: int = REBALANCE_MS, known_id_required: bool = True,
        skip_assignment: bool = False, group: str = GROUP,
    ) -> Answers:
        answers = Answers()
        request = JoinRequest(
            group, member_id, instance_id, client_id, "/127.0.0.1", session_ms, rebalance_ms, protocol_type, protocols,
            known_id_required, skip_assignment,
        )
        self.coordinator.join_group(request, answers)
        return answers

    def join_new(self, **kwargs) -> Answers:
        """A dynamic member's first join (MEMBER_ID_REQUIRED) and its rejoin with the id it got."""
        first = self.join(**kwargs)
        assert first.last["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        return self.join(first.last["member_id"], **kwargs)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             instance_id: str | None = None) -> Answers:
        answers = Answers()
        self.coordinator.sync_group(GROUP, member_id, instance_id, generation, "consumer", "range", assignments or {}, answers)
        return answers

    def heartbeat(self, member_id: str, generation: int, instance_id: str | None = None) -> ErrorCode:
        return self.coordinator.heartbeat(GROUP, member_id, instance_id, generation)

    def commit(self, member_id: str, generation: int, offsets: dict[int, int], group: str = GROUP,
               metadata: str = "", api_version: int = 8) -> list[ErrorCode]:
        commits = [PartitionCommit(TOPIC, p, o, -1, metadata) for p, o in offsets.items()]
        return self.coordinator.commit_offsets(group, member_id, None, generation, -1, commits, api_version)

    def fetched(self, group: str = GROUP, partitions: tuple[int, ...] = (0, 1)) -> dict[int, int]:
        answer = self.coordinator.fetch_offsets(group, [(TOPIC, list(partitions))])
        return {p["partition_index"]: p["committed_offset"] for p in answer["topics"][0]["partitions"]}

    def group(self):
        return self.coordinator.groups[GROUP]

    def stable_group(self, count: int, session_ms: int = SESSION_MS) -> list[str]:
        """``count`` members join and sync; returns their ids, leader first."""
        joins = [self.join_new(client_id=f"c{i}", session_ms=session_ms) for i in range(count)]
        self.timer.advance(0)
        answers = [j.last for j in joins]
        assert all(a["error_code"] == ErrorCode.NONE for a in answers)
        leader = answers[0]["leader"]
        generation = answers[0]["generation_id"]
        ids = [a["member_id"] for a in answers]
        plan = {member_id: assignment(TOPIC, i) for i, member_id in enumerate(ids)}
        syncs = [self.sync(m, generation, plan if m == leader else None) for m in ids]
        assert all(s.last["error_code"] == ErrorCode.NONE for s in syncs)
        assert self.group().state == GroupState.STABLE
        return [leader] + [m for m in ids if m != leader]


@pytest.fixture
def env() -> Env:
    return Env()


def group_records(log: FakeRecordLog) -> list:
    return [(decode_key(k), decode_group_value(v)) for k, v in log.all_records() if isinstance(decode_key(k), GroupMetadataKey)]


# ---- JoinGroup ----


def test_first_join_requires_a_member_id_then_forms_generation_one(env: Env) -> None:
    first = env.join(client_id="app")
    assert first.last["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    member_id = first.last["member_id"]
    assert member_id.startswith("app-")
    rejoin = env.join(member_id, client_id="app")
    assert rejoin.items == []  # parked until the join phase completes
    env.timer.advance(0)  # these tests run with group.initial.rebalance.delay.ms = 0
    answer = rejoin.last
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["generation_id"] == 1
    assert answer["leader"] == member_id
    assert answer["protocol_name"] == "range"
    assert [m["member_id"] for m in answer["members"]] == [member_id]
    assert answer["members"][0]["metadata"] == subscription(TOPIC)
    assert env.group().state == GroupState.COMPLETING_REBALANCE


def test_join_before_v4_needs_no_member_id(env: Env) -> None:
    answers = env.join(known_id_required=False)
    env.timer.advance(0)
    assert answers.last["error_code"] == ErrorCode.NONE
    assert answers.last["generation_id"] == 1


def test_new_group_is_written_as_empty_group_metadata(env: Env) -> None:
    env.join()
    [(key, value)] = group_records(env.log)
    assert key == GroupMetadataKey(GROUP)
    assert (value.protocol_type, value.generation, value.protocol, value.leader, value.members) == ("", 0, None, None, ())
    assert list(env.log.partitions) == [27]


def test_protocol_is_chosen_among_those_every_member_supports(env: Env) -> None:
    a = env.join_new(client_id="a", protocols=(("range", b"A1"), ("roundrobin", b"A2")))
    b = env.join_new(client_id="b", protocols=(("roundrobin", b"B2"), ("sticky", b"B3")))
    env.timer.advance(0)
    assert a.last["protocol_name"] == b.last["protocol_name"] == "roundrobin"
    leader = a.last if a.last["members"] else b.last
    assert sorted(m["metadata"] for m in leader["members"]) == [b"A2", b"B2"]


def test_the_protocol_most_members_prefer_wins(env: Env) -> None:
    both = (("roundrobin", b""), ("range", b""))
    joins = [env.join_new(client_id=c, protocols=p) for c, p in (("a", both), ("b", both), ("c", both[::-1]))]
    env.timer.advance(0)
    assert {j.last["protocol_name"] for j in joins} == {"roundrobin"}


def test_member_without_a_common_protocol_is_refused(env: Env) -> None:
    env.join_new(client_id="a")
    env.timer.advance(0)
    assert env.join(protocols=(("sticky", b""),)).last["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(protocol_type="connect").last["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize(("group", "session_ms", "error"), [
    ("", SESSION_MS, ErrorCode.INVALID_GROUP_ID),
    (GROUP, 999, ErrorCode.INVALID_SESSION_TIMEOUT),
    (GROUP, 1_800_001, ErrorCode.INVALID_SESSION_TIMEOUT),
])
def test_join_validation(env: Env, group: str, session_ms: int, error: ErrorCode) -> None:
    assert env.join(group=group, session_ms=session_ms).last["error_code"] == error


def test_join_with_an_unknown_member_id_of_a_missing_group(env: Env) -> None:
    assert env.join("nobody").last["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_initial_rebalance_delay_gathers_members_into_one_generation() -> None:
    env = Env(config=GroupConfig(min_session_timeout_ms=1000, initial_rebalance_delay_ms=100))
    a = env.join_new(client_id="a")
    env.timer.advance(60)
    b = env.join_new(client_id="b")
    env.timer.advance(60)
    assert a.items == b.items == []  # the delay was extended by b's arrival
    env.timer.advance(100)
    assert a.last["generation_id"] == b.last["generation_id"] == 1
    assert len((a.last["members"] or b.last["members"])) == 2


# ---- SyncGroup ----


def test_sync_hands_out_the_leaders_assignment_and_stores_it(env: Env) -> None:
    leader, follower = env.stable_group(2)
    group = env.group()
    assert group.members[leader].assignment != group.members[follower].assignment
    key, value = group_records(env.log)[-1]
    assert value.generation == 1 and value.protocol == "range" and value.leader == leader
    assert {m.member_id: m.assignment for m in value.members} == {m: group.members[m].assignment for m in (leader, follower)}
    assert all(m.subscription == subscription(TOPIC) for m in value.members)


def test_followers_wait_for_the_leaders_sync(env: Env) -> None:
    a = env.join_new(client_id="a")
    b = env.join_new(client_id="b")
    env.timer.advance(0)
    leader = a.last["leader"]
    follower = next(x.last["member_id"] for x in (a, b) if x.last["member_id"] != leader)
    waiting = env.sync(follower, 1)
    assert waiting.items == []
    env.sync(leader, 1, {follower: b"F", leader: b"L"})
    assert waiting.last == {"error_code": ErrorCode.NONE, "protocol_type": "consumer", "protocol_name": "range", "assignment": b"F"}


def test_a_new_member_sends_waiting_followers_back_to_rejoin(env: Env) -> None:
    a = env.join_new(client_id="a")
    b = env.join_new(client_id="b")
    env.timer.advance(0)
    follower = next(x.last["member_id"] for x in (a, b) if x.last["member_id"] != x.last["leader"])
    waiting = env.sync(follower, 1)
    env.join_new(client_id="c")
    assert waiting.last["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert env.group().state == GroupState.PREPARING_REBALANCE


def test_sync_errors(env: Env) -> None:
    leader, _ = env.stable_group(2)
    assert env.sync(leader, 7).last["error_code"] == ErrorCode.ILLEGAL_GENERATION
    assert env.sync("ghost", 1).last["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert env.sync(leader, 1).last["error_code"] == ErrorCode.NONE  # stable: the current assignment again


def test_sync_write_failure_sends_members_back_to_rejoin(env: Env) -> None:
    a = env.join_new(client_id="a")
    env.timer.advance(0)
    env.log.fail_with = ErrorCode.KAFKA_STORAGE_ERROR
    answer = env.sync(a.last["member_id"], 1, {a.last["member_id"]: b"X"})
    assert answer.last["error_code"] == ErrorCode.NOT_COORDINATOR
    assert env.group().state == GroupState.PREPARING_REBALANCE


# ---- Heartbeat and session timeout ----


def test_heartbeat_errors(env: Env) -> None:
    leader, follower = env.stable_group(2)
    assert env.heartbeat(leader, 1) == ErrorCode.NONE
    assert env.heartbeat(leader, 2) == ErrorCode.ILLEGAL_GENERATION
    assert env.heartbeat("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert env.coordinator.heartbeat("other-group", leader, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    env.join_new(client_id="newcomer")
    assert env.heartbeat(follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_silent_member_is_removed_after_its_session_timeout(env: Env) -> None:
    leader, follower = env.stable_group(2)
    for _ in range(2):  # the leader heartbeats every 4 s, the follower never does
        env.timer.advance(4000)
        assert env.heartbeat(leader, 1) == ErrorCode.NONE
    env.timer.advance(SESSION_MS - 8000 - 1)
    assert follower in env.group().members
    env.timer.advance(1)
    assert follower not in env.group().members
    assert env.heartbeat(leader, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = env.join(leader, client_id="c0")
    assert rejoin.last["generation_id"] == 2
    assert [m["member_id"] for m in rejoin.last["members"]] == [leader]


def test_heartbeats_keep_a_member(env: Env) -> None:
    [member] = env.stable_group(1)
    for _ in range(10):
        env.timer.advance(SESSION_MS - 1)
        assert env.heartbeat(member, 1) == ErrorCode.NONE
    assert env.group().state == GroupState.STABLE


def test_pending_member_that_never_rejoins_expires(env: Env) -> None:
    first = env.join()
    assert env.group().is_pending_member(first.last["member_id"])
    env.timer.advance(SESSION_MS)
    assert not env.group().is_pending_member(first.last["member_id"])


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(env: Env) -> None:
    leader, follower = env.stable_group(2, session_ms=LONG_SESSION_MS)
    rejoin = env.join(leader, client_id="c0", session_ms=LONG_SESSION_MS)  # the leader forces a rebalance
    assert rejoin.items == []
    env.timer.advance(REBALANCE_MS - 1)
    assert env.heartbeat(follower, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert rejoin.items == []
    env.timer.advance(1)
    assert rejoin.last["generation_id"] == 2
    assert follower not in env.group().members


def test_member_that_never_syncs_is_removed(env: Env) -> None:
    a = env.join_new(client_id="a", session_ms=LONG_SESSION_MS)
    env.join_new(client_id="b", session_ms=LONG_SESSION_MS)
    env.timer.advance(0)
    leader = a.last["leader"]
    env.sync(leader, 1, {})
    env.timer.advance(REBALANCE_MS - 1)
    assert len(env.group().members) == 2
    env.timer.advance(1)
    group = env.group()
    assert list(group.members) == [leader] and group.state == GroupState.PREPARING_REBALANCE


# ---- LeaveGroup ----


def test_batched_leave_empties_the_group(env: Env) -> None:
    ids = env.stable_group(2)
    error, answers = env.coordinator.leave_group(GROUP, [LeavingMember(m, None) for m in ids] + [LeavingMember("ghost", None)])
    assert error == ErrorCode.NONE
    assert [a["error_code"] for a in answers] == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    group = env.group()
    assert group.state == GroupState.EMPTY and group.generation_id == 2
    _, value = group_records(env.log)[-1]
    assert (value.generation, value.protocol_type, value.members) == (2, "consumer", ())


def test_leave_triggers_a_rebalance_for_the_rest(env: Env) -> None:
    leader, follower = env.stable_group(2)
    env.coordinator.leave_group(GROUP, [LeavingMember(follower, None)])
    assert env.heartbeat(leader, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = env.join(leader, client_id="c0")
    assert rejoin.last["generation_id"] == 2


# ---- static membership ----


def test_static_member_rejoining_fences_its_old_id_without_a_rebalance(env: Env) -> None:
    first = env.join(instance_id="instance-1", client_id="app")
    env.timer.advance(0)
    old_id = first.last["member_id"]
    assert old_id.startswith("instance-1-")
    env.sync(old_id, 1, {old_id: b"A"}, instance_id="instance-1")
    again = env.join(instance_id="instance-1", client_id="app")  # restarted, so without its member id
    new_id = again.last["member_id"]
    assert again.last["error_code"] == ErrorCode.NONE and new_id != old_id
    assert again.last["generation_id"] == 1
    assert env.group().state == GroupState.STABLE
    assert env.heartbeat(old_id, 1, "instance-1") == ErrorCode.FENCED_INSTANCE_ID
    assert env.heartbeat(new_id, 1, "instance-1") == ErrorCode.NONE
    assert env.sync(new_id, 1, instance_id="instance-1").last["assignment"] == b"A"


def test_static_members_are_not_removed_for_missing_a_rebalance(env: Env) -> None:
    first = env.join(instance_id="i1", client_id="a", session_ms=LONG_SESSION_MS)
    env.timer.advance(0)
    static_id = first.last["member_id"]
    env.sync(static_id, 1, {static_id: b"A"}, instance_id="i1")
    dynamic = env.join_new(client_id="b", session_ms=LONG_SESSION_MS)
    env.timer.advance(REBALANCE_MS)
    assert static_id in env.group().members  # kept, although it never rejoined
    assert dynamic.last["generation_id"] == 2


# ---- offsets ----


def test_commit_checks_generation_and_member(env: Env) -> None:
    leader, _ = env.stable_group(2)
    assert env.commit(leader, 1, {0: 5, 1: 9}) == [ErrorCode.NONE, ErrorCode.NONE]
    assert env.commit(leader, 2, {0: 6}) == [ErrorCode.ILLEGAL_GENERATION]
    assert env.commit("ghost", 1, {0: 6}) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert env.commit("", -1, {0: 6}) == [ErrorCode.UNKNOWN_MEMBER_ID]  # a simple commit needs an empty group
    assert env.fetched() == {0: 5, 1: 9}


def test_commit_during_completing_rebalance(env: Env) -> None:
    a = env.join_new()
    env.timer.advance(0)
    assert env.commit(a.last["member_id"], 1, {0: 1}) == [ErrorCode.REBALANCE_IN_PROGRESS]


def test_commit_to_a_missing_group_with_a_generation(env: Env) -> None:
    assert env.commit("m", 3, {0: 1}) == [ErrorCode.ILLEGAL_GENERATION]
    assert env.commit("m", 3, {0: 1}, api_version=9) == [ErrorCode.GROUP_ID_NOT_FOUND]


def test_simple_commits_create_a_group_without_protocol(env: Env) -> None:
    assert env.commit("", -1, {0: 3}, group="simple") == [ErrorCode.NONE]
    assert env.fetched("simple") == {0: 3, 1: -1}
    _, groups = env.coordinator.list_groups([], [])
    assert groups == [{"group_id": "simple", "protocol_type": "", "group_state": "Empty", "group_type": "classic"}]


def test_commit_records_are_offset_commit_v4(env: Env) -> None:
    env.timer.now = 1234
    env.commit("", -1, {2: 77}, metadata="meta")
    [(key, value)] = env.log.all_records()
    assert decode_key(key) == OffsetCommitKey(GROUP, TOPIC, 2)
    assert value[:2] == b"\x00\x04"
    decoded = decode_offset_value(value)
    assert (decoded.offset, decoded.metadata, decoded.commit_timestamp, decoded.expire_timestamp) == (77, "meta", 1234, -1)


def test_commit_retention_writes_v1_with_an_expire_timestamp(env: Env) -> None:
    env.timer.now = 1000
    env.coordinator.commit_offsets(GROUP, "", None, -1, 500, [PartitionCommit(TOPIC, 0, 1, -1, None)], 2)
    [(_, value)] = env.log.all_records()
    assert value[:2] == b"\x00\x01"
    assert decode_offset_value(value).expire_timestamp == 1500


def test_oversized_metadata_is_refused(env: Env) -> None:
    commits = [PartitionCommit(TOPIC, 0, 1, -1, "x" * 4097), PartitionCommit(TOPIC, 1, 1, -1, "x" * 4096)]
    assert env.coordinator.commit_offsets(GROUP, "", None, -1, -1, commits, 8) == [
        ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.NONE
    ]


def test_failed_commit_changes_nothing(env: Env) -> None:
    env.commit("", -1, {0: 1})
    env.log.fail_with = ErrorCode.KAFKA_STORAGE_ERROR
    assert env.commit("", -1, {0: 2}) == [ErrorCode.NOT_COORDINATOR]
    assert env.fetched() == {0: 1, 1: -1}
    assert env.commit("", -1, {0: 2}, group="never-stored") == [ErrorCode.NOT_COORDINATOR]
    assert "never-stored" not in env.coordinator.groups


def test_fetch_all_and_unknown_groups(env: Env) -> None:
    env.commit("", -1, {0: 4, 3: 8})
    answer = env.coordinator.fetch_offsets(GROUP, None)
    assert [(t["name"], [(p["partition_index"], p["committed_offset"]) for p in t["partitions"]]) for t in answer["topics"]] == [
        (TOPIC, [(0, 4), (3, 8)])
    ]
    assert env.fetched("nobody") == {0: -1, 1: -1}
    assert env.coordinator.fetch_offsets("nobody", None)["topics"] == []


def test_offset_delete(env: Env) -> None:
    leader, _ = env.stable_group(2)
    env.commit(leader, 1, {0: 1})
    error, answers = env.coordinator.delete_offsets(GROUP, [(TOPIC, [0]), ("elsewhere", [0])])
    assert error == ErrorCode.NONE  # a consumer group may drop offsets of topics it does not subscribe to
    assert [a["partitions"][0]["error_code"] for a in answers] == [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.NONE]
    env.coordinator.leave_group(GROUP, [LeavingMember(m, None) for m in env.group().members])
    error, _ = env.coordinator.delete_offsets(GROUP, [(TOPIC, [0])])
    assert error == ErrorCode.NONE
    assert env.fetched() == {0: -1, 1: -1}
    assert env.coordinator.delete_offsets("nobody", [(TOPIC, [0])])[0] == ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_delete_in_a_non_consumer_group_needs_it_empty(env: Env) -> None:
    env.join_new(protocol_type="connect")
    env.timer.advance(0)
    assert env.coordinator.delete_offsets(GROUP, [(TOPIC, [0])])[0] == ErrorCode.NON_EMPTY_GROUP


# ---- list, describe, delete ----


def test_list_groups_with_state_filter(env: Env) -> None:
    env.stable_group(1)
    env.commit("", -1, {0: 1}, group="simple")
    _, everything = env.coordinator.list_groups([], [])
    assert {g["group_id"]: g["group_state"] for g in everything} == {GROUP: "Stable", "simple": "Empty"}
    _, stable = env.coordinator.list_groups(["stable"], [])
    assert [g["group_id"] for g in stable] == [GROUP]
    assert env.coordinator.list_groups([], ["consumer"])[1] == []
    assert len(env.coordinator.list_groups([], ["Classic"])[1]) == 2


def test_describe_groups(env: Env) -> None:
    leader, follower = env.stable_group(2)
    described = env.coordinator.describe_group(GROUP)
    assert (described["group_state"], described["protocol_type"], described["protocol_data"]) == ("Stable", "consumer", "range")
    by_id = {m["member_id"]: m for m in described["members"]}
    assert set(by_id) == {leader, follower}
    assert by_id[leader]["member_metadata"] == subscription(TOPIC)
    assert by_id[leader]["member_assignment"] == env.group().members[leader].assignment
    missing = env.coordinator.describe_group("nobody")
    assert (missing["error_code"], missing["group_state"], missing["members"]) == (ErrorCode.NONE, "Dead", [])


def test_delete_groups(env: Env) -> None:
    env.stable_group(1)
    env.commit("", -1, {0: 1}, group="simple")
    results = env.coordinator.delete_groups([GROUP, "simple", "nobody"])
    assert [r["error_code"] for r in results] == [ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND]
    assert "simple" not in env.coordinator.groups
    assert env.fetched("simple") == {0: -1, 1: -1}
    tombstones = [(decode_key(k), v) for k, v in env.log.all_records() if v is None]
    assert tombstones == [(OffsetCommitKey("simple", TOPIC, 0), None), (GroupMetadataKey("simple"), None)]


# ---- persistence ----


def test_state_is_rebuilt_from_the_log(env: Env) -> None:
    leader, follower = env.stable_group(2)
    env.commit(leader, 1, {0: 10, 1: 20})
    env.commit("", -1, {0: 5}, group="simple")
    env.coordinator.delete_groups(["simple"])
    before = env.group()
    restarted = Env(timer=env.timer, log=env.log, config=env.config)
    env.log.load_into(restarted.coordinator)
    group = restarted.group()
    assert (group.state, group.generation_id, group.leader_id, group.protocol_name) == (
        GroupState.STABLE, 1, leader, "range"
    )
    assert {m: group.members[m].assignment for m in group.members} == {m: before.members[m].assignment for m in before.members}
    assert group.subscribed_topics == {TOPIC}
    assert restarted.fetched() == {0: 10, 1: 20}
    assert "simple" not in restarted.coordinator.groups
    assert restarted.heartbeat(follower, 1) == ErrorCode.NONE
    restarted.timer.advance(SESSION_MS)  # nobody heartbeats after the restart: the members expire
    assert restarted.group().members == {}
    assert restarted.group().state == GroupState.EMPTY


def test_loading_partitions_answer_load_in_progress(env: Env) -> None:
    env.coordinator.begin_loading([27])
    assert env.join().last["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert env.heartbeat("m", 1) == ErrorCode.NONE
    assert env.commit("", -1, {0: 1}) == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    assert env.coordinator.fetch_offsets(GROUP, None)["error_code"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert env.coordinator.list_groups([], [])[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert env.commit("", -1, {0: 1}, group="simple") == [ErrorCode.NONE]  # another partition
    env.coordinator.finish_loading(27)
    assert env.join().last["error_code"] == ErrorCode.MEMBER_ID_REQUIRED


# ---- offset expiration ----


def test_offsets_of_an_empty_group_expire_after_retention() -> None:
    env = Env(config=GroupConfig(min_session_timeout_ms=1000, initial_rebalance_delay_ms=0, offsets_retention_ms=60_000))
    [member] = env.stable_group(1, session_ms=LONG_SESSION_MS)
    env.commit(member, 1, {0: 1})
    env.timer.advance(120_000)
    env.heartbeat(member, 1)
    assert env.coordinator.expire_offsets() == 0  # a stable consumer group keeps offsets of subscribed topics
    env.coordinator.leave_group(GROUP, [LeavingMember(member, None)])
    env.timer.advance(59_999)
    assert env.coordinator.expire_offsets() == 0
    env.timer.advance(1)
    assert env.coordinator.expire_offsets() == 2  # the offset, then the group itself
    assert GROUP not in env.coordinator.groups
