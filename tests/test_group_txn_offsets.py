"""Transactional offset commits in the group coordinator (fake clock, in-memory __consumer_offsets): pending until
the producer's marker reaches the group's partition, committed or dropped by it, live and when loading."""

from __future__ import annotations

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_records import OffsetCommitKey, decode_key
from minibroker.protocol.key_partitions import partition_for

from minibroker.groups.coordinator import GroupCoordinator
from minibroker.groups.group import GroupState
from minibroker.groups.requests import PartitionCommit
from tests.groupfakes import replay_entry
from tests.test_group_coordinator import GROUP, TOPIC, Env

PRODUCER, EPOCH = 4000, 0
OTHER_PRODUCER = 4001
GROUP_PARTITION = 27  # of GROUP, in 50 partitions
OTHER_GROUP = next(f"other-{i}" for i in range(100) if partition_for(f"other-{i}", 50) != GROUP_PARTITION)


@pytest.fixture
def env() -> Env:
    return Env()


def txn_commit(
    env: Env, offsets: dict[int, int], *, producer_id: int = PRODUCER, group: str = GROUP, member_id: str = "",
    generation: int = -1, instance_id: str | None = None,
) -> list[ErrorCode]:
    commits = [PartitionCommit(TOPIC, p, o, -1, "") for p, o in offsets.items()]
    return env.coordinator.commit_transactional_offsets(
        group, producer_id, EPOCH, member_id, instance_id, generation, commits
    )


def marker(env: Env, committed: bool, producer_id: int = PRODUCER, partition: int = GROUP_PARTITION) -> None:
    env.log.write_marker(env.coordinator, partition, producer_id, committed)


def fetched_errors(env: Env, partitions: tuple[int, ...] = (0, 1)) -> dict[int, ErrorCode]:
    answer = env.coordinator.fetch_offsets(GROUP, [(TOPIC, list(partitions))], require_stable=True)
    return {p["partition_index"]: p["error_code"] for p in answer["topics"][0]["partitions"]}


def restarted(env: Env) -> Env:
    again = Env(timer=env.timer, log=env.log, config=env.config)
    env.log.load_into(again.coordinator)
    return again


# ---- pending, commit, abort ----


def test_offsets_are_invisible_until_the_commit_marker(env: Env) -> None:
    assert txn_commit(env, {0: 5, 1: 7}) == [ErrorCode.NONE, ErrorCode.NONE]
    assert env.fetched() == {0: -1, 1: -1}
    marker(env, committed=True)
    assert env.fetched() == {0: 5, 1: 7}
    assert env.coordinator.groups[GROUP].is_empty  # a simple group, created by the commit


def test_abort_marker_drops_them_and_the_committed_offset_stays(env: Env) -> None:
    assert env.commit("", -1, {0: 3}) == [ErrorCode.NONE]
    txn_commit(env, {0: 9})
    marker(env, committed=False)
    assert env.fetched() == {0: 3, 1: -1}
    marker(env, committed=True)  # a later transaction of the same producer has nothing pending here
    assert env.fetched() == {0: 3, 1: -1}


def test_records_are_written_in_the_producers_transaction(env: Env) -> None:
    txn_commit(env, {0: 5})
    [entry] = env.log.partitions[GROUP_PARTITION]
    assert entry.producer_id == PRODUCER
    assert decode_key(entry.key) == OffsetCommitKey(GROUP, TOPIC, 0)


def test_require_stable_answers_unstable_while_pending(env: Env) -> None:
    txn_commit(env, {0: 5})
    assert fetched_errors(env) == {0: ErrorCode.UNSTABLE_OFFSET_COMMIT, 1: ErrorCode.NONE}
    marker(env, committed=True)
    assert fetched_errors(env) == {0: ErrorCode.NONE, 1: ErrorCode.NONE}


def test_only_the_markers_producer_and_partition_complete_it(env: Env) -> None:
    txn_commit(env, {0: 5})
    txn_commit(env, {1: 6}, producer_id=OTHER_PRODUCER)
    marker(env, committed=True, partition=partition_for(OTHER_GROUP, 50))
    marker(env, committed=True, producer_id=OTHER_PRODUCER)
    assert env.fetched() == {0: -1, 1: 6}
    marker(env, committed=True)
    assert env.fetched() == {0: 5, 1: 6}


def test_newer_plain_commit_wins_over_the_transactions_offset(env: Env) -> None:
    txn_commit(env, {0: 5, 1: 5})
    env.commit("", -1, {0: 8})  # written after the transactional record
    marker(env, committed=True)
    assert env.fetched() == {0: 8, 1: 5}


def test_transactions_offset_wins_over_an_older_plain_commit(env: Env) -> None:
    env.commit("", -1, {0: 8})
    txn_commit(env, {0: 5})
    marker(env, committed=True)
    assert env.fetched() == {0: 5, 1: -1}


def test_failed_write_creates_no_group(env: Env) -> None:
    env.log.fail_with = ErrorCode.INVALID_PRODUCER_EPOCH
    assert txn_commit(env, {0: 5}) == [ErrorCode.INVALID_PRODUCER_EPOCH]
    assert GROUP not in env.coordinator.groups


def test_empty_group_id_is_invalid(env: Env) -> None:
    assert txn_commit(env, {0: 5}, group="") == [ErrorCode.INVALID_GROUP_ID]


# ---- group membership (KIP-447) ----


def test_unknown_group_with_a_generation_is_an_illegal_generation(env: Env) -> None:
    assert txn_commit(env, {0: 5}, member_id="m", generation=1) == [ErrorCode.ILLEGAL_GENERATION]


def test_members_generation_and_id_are_checked(env: Env) -> None:
    leader, _ = env.stable_group(2)
    generation = env.group().generation_id
    assert txn_commit(env, {0: 5}, member_id=leader, generation=generation + 1) == [ErrorCode.ILLEGAL_GENERATION]
    assert txn_commit(env, {0: 5}, member_id="nobody", generation=generation) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert txn_commit(env, {0: 5}, member_id=leader, generation=generation) == [ErrorCode.NONE]


def test_request_without_member_is_accepted_for_a_stable_group(env: Env) -> None:
    """Clients before KIP-447 (TxnOffsetCommit v0-2) name no member; a plain OffsetCommit would be refused."""
    env.stable_group(1)
    assert txn_commit(env, {0: 5}) == [ErrorCode.NONE]
    assert env.commit("", -1, {0: 5}) == [ErrorCode.UNKNOWN_MEMBER_ID]


def test_fenced_static_member(env: Env) -> None:
    first = env.join(instance_id="instance-1", known_id_required=False)
    env.timer.advance(0)
    old_id = first.last["member_id"]
    second = env.join(instance_id="instance-1", known_id_required=False)  # the instance restarts: a new member id
    env.timer.advance(0)
    generation = env.group().generation_id
    assert second.last["member_id"] != old_id
    assert txn_commit(env, {0: 5}, member_id=old_id, generation=generation, instance_id="instance-1") == [
        ErrorCode.FENCED_INSTANCE_ID
    ]


def test_completing_rebalance_is_accepted(env: Env) -> None:
    joined = env.join_new()
    env.timer.advance(0)
    assert env.group().state == GroupState.COMPLETING_REBALANCE
    member_id, generation = joined.last["member_id"], joined.last["generation_id"]
    assert txn_commit(env, {0: 5}, member_id=member_id, generation=generation) == [ErrorCode.NONE]
    assert env.commit(member_id, generation, {0: 5}) == [ErrorCode.REBALANCE_IN_PROGRESS]


# ---- tombstones, expiry, deleted topics ----


def test_deleting_the_group_drops_pending_offsets(env: Env) -> None:
    txn_commit(env, {0: 5})
    assert env.coordinator.delete_groups([GROUP]) == [{"group_id": GROUP, "error_code": ErrorCode.NONE}]
    marker(env, committed=True)
    assert GROUP not in env.coordinator.groups
    assert env.fetched() == {0: -1, 1: -1}
    assert GROUP not in restarted(env).coordinator.groups


def test_group_with_pending_offsets_is_not_expired(env: Env) -> None:
    txn_commit(env, {0: 5})
    env.timer.advance(env.config.offsets_retention_ms + 1)
    env.coordinator.expire_offsets()
    assert GROUP in env.coordinator.groups
    marker(env, committed=True)
    assert env.fetched() == {0: 5, 1: -1}


def test_deleted_topics_lose_committed_and_pending_offsets(env: Env) -> None:
    env.commit("", -1, {0: 3})
    txn_commit(env, {1: 4})
    env.coordinator.commit_offsets(GROUP, "", None, -1, -1, [PartitionCommit("kept", 0, 2, -1, "")], 8)
    assert env.coordinator.delete_topic_offsets({TOPIC}) == 2
    marker(env, committed=True)
    assert env.fetched() == {0: -1, 1: -1}
    kept = env.coordinator.fetch_offsets(GROUP, [("kept", [0])])["topics"][0]["partitions"][0]
    assert kept["committed_offset"] == 2
    assert restarted(env).fetched() == {0: -1, 1: -1}


# ---- loading ----


def test_loading_honours_the_markers_that_follow(env: Env) -> None:
    txn_commit(env, {0: 5})
    marker(env, committed=True)
    txn_commit(env, {0: 9}, producer_id=OTHER_PRODUCER)
    marker(env, committed=False, producer_id=OTHER_PRODUCER)
    txn_commit(env, {1: 6})  # the producer's next transaction, still open
    again = restarted(env)
    assert again.fetched() == {0: 5, 1: -1}
    assert fetched_errors(again) == {0: ErrorCode.NONE, 1: ErrorCode.UNSTABLE_OFFSET_COMMIT}
    marker(again, committed=True)
    assert again.fetched() == {0: 5, 1: 6}


def test_marker_written_while_the_partition_loads_is_left_to_the_loader(env: Env) -> None:
    """The loader has replayed a committed transaction's offset but not yet its COMMIT marker when the producer's next
    transaction is aborted: acting on that ABORT at once would drop the committed offset."""
    txn_commit(env, {0: 5})
    marker(env, committed=True)
    txn_commit(env, {0: 9})
    loading = GroupCoordinator(env.config, env.timer, env.log)
    loading.begin_loading([GROUP_PARTITION])
    entries = env.log.partitions[GROUP_PARTITION]
    replay_entry(loading, GROUP_PARTITION, 0, entries[0])
    env.log.write_marker(loading, GROUP_PARTITION, PRODUCER, False)
    for offset in range(1, len(entries)):
        replay_entry(loading, GROUP_PARTITION, offset, entries[offset])
    loading.finish_loading(GROUP_PARTITION)
    answer = loading.fetch_offsets(GROUP, [(TOPIC, [0])], require_stable=True)
    assert answer["topics"][0]["partitions"][0]["committed_offset"] == 5
    assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
