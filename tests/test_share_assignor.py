"""The simple share assignor: every subscribed partition has a member, shares differ by one at most, and members keep
what still fits their share when others join or leave."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.groups.assignors import TopicPartitions, TopicSpec
from minibroker.share.assignor import assign

A, B = b"\x0a" * 16, b"\x0b" * 16
TOPICS = {"a": TopicSpec(A, "a", 3), "b": TopicSpec(B, "b", 1)}


def _holders(result: dict[str, TopicPartitions], topic_id: bytes) -> Counter[int]:
    return Counter(p for assigned in result.values() for p in assigned.get(topic_id, ()))


def test_partitions_are_spread_when_they_are_enough() -> None:
    result = assign({"m1": frozenset({"a"}), "m2": frozenset({"a"})}, TOPICS, {})
    assert _holders(result, A) == Counter({0: 1, 1: 1, 2: 1})
    assert sorted(len(r[A]) for r in result.values()) == [1, 2]


def test_members_share_partitions_when_they_outnumber_them() -> None:
    members = {f"m{i}": frozenset({"a"}) for i in range(7)}
    result = assign(members, TOPICS, {})
    assert all(len(r[A]) == 1 for r in result.values())
    assert sorted(_holders(result, A).values()) == [2, 2, 3]


def test_each_topic_goes_to_its_subscribers_only() -> None:
    result = assign({"m1": frozenset({"a"}), "m2": frozenset({"a", "b"}), "m3": frozenset({"c"})}, TOPICS, {})
    assert result["m3"] == {} and B not in result["m1"] and result["m2"][B] == frozenset({0})
    assert _holders(result, A) == Counter({0: 1, 1: 1, 2: 1})


def test_a_joining_member_moves_only_what_it_takes() -> None:
    big = {"a": TopicSpec(A, "a", 6)}
    before = assign({"m1": frozenset({"a"}), "m2": frozenset({"a"})}, big, {})
    after = assign({"m1": frozenset({"a"}), "m2": frozenset({"a"}), "m3": frozenset({"a"})}, big, before)
    assert after["m1"][A] <= before["m1"][A] and after["m2"][A] <= before["m2"][A]
    assert len(after["m3"][A]) == 2


def test_shared_partitions_stay_with_their_members() -> None:
    before = {"m1": {A: frozenset({0})}, "m2": {A: frozenset({0})}, "m3": {A: frozenset({1})}, "m4": {A: frozenset({1})}}
    after = assign({m: frozenset({"a"}) for m in before}, TOPICS, before)
    assert sorted(_holders(after, A).values()) == [1, 1, 2], "no partition is left without a member"
    assert sum(after[m] == before[m] for m in before) == 3


@settings(max_examples=200, deadline=None)
@given(
    members=st.integers(min_value=1, max_value=12),
    partitions=st.integers(min_value=1, max_value=12),
    previous=st.dictionaries(st.integers(0, 11), st.frozensets(st.integers(0, 15), max_size=4), max_size=12),
)
def test_every_partition_is_held_and_shares_are_even(members: int, partitions: int, previous: dict[int, frozenset[int]]) -> None:
    names = [f"m{i}" for i in range(members)]
    spec = {"a": TopicSpec(A, "a", partitions)}
    old = {f"m{i}": {A: held} for i, held in previous.items()}
    result = assign({name: frozenset({"a"}) for name in names}, spec, old)
    holders = _holders(result, A)
    assert set(holders) == set(range(partitions))
    counts = [len(result[name].get(A, ())) for name in names]
    if members <= partitions:
        assert set(holders.values()) == {1} and max(counts) - min(counts) <= 1
    else:
        assert set(counts) == {1} and max(holders.values()) - min(holders.values()) <= 1
