"""The KIP-848 server-side assignors, as pure functions: validity, range's exact ranges, uniform's
balance and stickiness, determinism."""

import random
from collections.abc import Mapping

import pytest

from minibroker.groups.assignors import (
    ASSIGNORS,
    MemberSpec,
    RangeAssignor,
    TopicPartitions,
    TopicSpec,
    UniformAssignor,
    assignor_named,
)

T1 = b"\x01" * 16
T2 = b"\x02" * 16
T3 = b"\x03" * 16
MISSING = b"\xff" * 16


def topic(topic_id: bytes, num_partitions: int) -> TopicSpec:
    return TopicSpec(topic_id, topic_id.hex()[:8], num_partitions)


def topic_map(*specs: TopicSpec) -> dict[bytes, TopicSpec]:
    return {spec.topic_id: spec for spec in specs}


def member(
    member_id: str,
    *topic_ids: bytes,
    current: TopicPartitions | None = None,
    instance_id: str | None = None,
) -> MemberSpec:
    return MemberSpec(member_id, instance_id, None, frozenset(topic_ids), current or {})


def member_map(*specs: MemberSpec) -> dict[str, MemberSpec]:
    return {spec.member_id: spec for spec in specs}


def resubscribe(
    members: Mapping[str, MemberSpec], result: Mapping[str, TopicPartitions], *extra: MemberSpec
) -> dict[str, MemberSpec]:
    """The next round's members: the same subscriptions, with last round's result as their current assignment."""
    specs = [
        MemberSpec(m.member_id, m.instance_id, m.rack_id, m.subscribed_topic_ids, result[m.member_id])
        for m in members.values()
    ]
    return member_map(*specs, *extra)


def owners(result: Mapping[str, TopicPartitions]) -> dict[tuple[bytes, int], str]:
    return {(t, p): m for m, assignment in result.items() for t, ps in assignment.items() for p in ps}


def counts(result: Mapping[str, TopicPartitions]) -> dict[str, int]:
    return {m: sum(len(ps) for ps in assignment.values()) for m, assignment in result.items()}


def check_valid(
    members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec], result: Mapping[str, TopicPartitions]
) -> None:
    """Every member present, no partition twice, every subscribed partition placed with a subscriber."""
    assert set(result) == set(members)
    seen: set[tuple[bytes, int]] = set()
    for member_id, assignment in result.items():
        for topic_id, partitions in assignment.items():
            assert partitions, "empty partition sets are omitted"
            assert isinstance(partitions, frozenset)
            assert topic_id in members[member_id].subscribed_topic_ids
            assert topic_id in topics
            for partition in partitions:
                assert 0 <= partition < topics[topic_id].num_partitions
                assert (topic_id, partition) not in seen
                seen.add((topic_id, partition))
    subscribed = set().union(*(m.subscribed_topic_ids for m in members.values())) if members else set()
    expected = {(t, p) for t in subscribed if t in topics for p in range(topics[t].num_partitions)}
    assert seen == expected


def random_case(rng: random.Random, homogeneous: bool) -> tuple[dict[str, MemberSpec], dict[bytes, TopicSpec]]:
    topic_ids = [bytes([i + 1]) * 16 for i in range(rng.randint(1, 5))]
    topics = topic_map(*(topic(t, rng.choice([0, 1, 2, 3, 5, 8, 12, 30])) for t in topic_ids))
    shared = frozenset(rng.sample(topic_ids, rng.randint(1, len(topic_ids))))
    specs = []
    for i in range(rng.randint(0, 9)):
        subscription = shared if homogeneous else frozenset(rng.sample(topic_ids, rng.randint(1, len(topic_ids))))
        if rng.random() < 0.1:
            subscription |= {MISSING}
        instance_id = f"i{rng.randint(0, 99)}-{i}" if rng.random() < 0.3 else None
        specs.append(MemberSpec(f"m{rng.randint(0, 999)}-{i}", instance_id, None, subscription, {}))
    return member_map(*specs), topics


def random_current(
    rng: random.Random, members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec]
) -> dict[str, MemberSpec]:
    """Arbitrary current assignments, including overlapping, unsubscribed and out-of-range ones."""
    specs = []
    for m in members.values():
        current: TopicPartitions = {}
        for topic_id in rng.sample(sorted(topics), rng.randint(0, len(topics))):
            high = topics[topic_id].num_partitions + 2
            current[topic_id] = frozenset(rng.sample(range(high), rng.randint(1, high)))
        specs.append(MemberSpec(m.member_id, m.instance_id, m.rack_id, m.subscribed_topic_ids, current))
    return member_map(*specs)


# --- both assignors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_random_cases_cover_every_partition_once(name: str) -> None:
    assignor = assignor_named(name)
    rng = random.Random(848)
    for _ in range(400):
        members, topics = random_case(rng, homogeneous=rng.random() < 0.5)
        if rng.random() < 0.5:
            members = random_current(rng, members, topics)
        result = assignor.assign(members, topics)
        check_valid(members, topics, result)
        for _ in range(3):
            members = resubscribe(members, result)
            result = assignor.assign(members, topics)
            check_valid(members, topics, result)


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_deterministic_whatever_the_member_order(name: str) -> None:
    assignor = assignor_named(name)
    rng = random.Random(7)
    for _ in range(100):
        members, topics = random_case(rng, homogeneous=False)
        members = random_current(rng, members, topics)
        shuffled = list(members.items())
        rng.shuffle(shuffled)
        first = assignor.assign(members, topics)
        assert assignor.assign(members, topics) == first
        assert assignor.assign(dict(shuffled), dict(reversed(list(topics.items())))) == first


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_edge_cases(name: str) -> None:
    assignor = assignor_named(name)
    assert assignor.assign({}, topic_map(topic(T1, 3))) == {}
    members = member_map(member("a", T1, MISSING), member("b"), member("c", T2))
    topics = topic_map(topic(T1, 2), topic(T2, 0))
    result = assignor.assign(members, topics)
    assert result == {"a": {T1: frozenset({0, 1})}, "b": {}, "c": {}}


def test_registry() -> None:
    assert set(ASSIGNORS) == {"uniform", "range"}
    assert isinstance(assignor_named("uniform"), UniformAssignor)
    assert isinstance(assignor_named("range"), RangeAssignor)
    assert all(assignor.name == name for name, assignor in ASSIGNORS.items())
    with pytest.raises(KeyError):
        assignor_named("cooperative-sticky")


# --- range ----------------------------------------------------------------------------------------------------


def test_range_contiguous_and_co_partitioned() -> None:
    topics = topic_map(topic(T1, 7), topic(T2, 7), topic(T3, 5))
    members = member_map(member("c", T1, T2, T3), member("a", T1, T2), member("b", T1, T2, T3))
    result = RangeAssignor().assign(members, topics)
    assert result == {
        "a": {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1, 2})},
        "b": {T1: frozenset({3, 4}), T2: frozenset({3, 4}), T3: frozenset({0, 1, 2})},
        "c": {T1: frozenset({5, 6}), T2: frozenset({5, 6}), T3: frozenset({3, 4})},
    }


def test_range_places_static_members_first_and_ignores_current() -> None:
    topics = topic_map(topic(T1, 3))
    members = member_map(
        member("a", T1, current={T1: frozenset({0, 1})}),
        member("z", T1, instance_id="i2"),
        member("y", T1, instance_id="i1"),
    )
    result = RangeAssignor().assign(members, topics)
    assert result == {"y": {T1: frozenset({0})}, "z": {T1: frozenset({1})}, "a": {T1: frozenset({2})}}


def test_range_fewer_partitions_than_members() -> None:
    result = RangeAssignor().assign(member_map(*(member(m, T1) for m in "abc")), topic_map(topic(T1, 2)))
    assert result == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({1})}, "c": {}}


# --- uniform --------------------------------------------------------------------------------------------------


def test_uniform_homogeneous_is_balanced_and_minimally_disruptive() -> None:
    """Within one partition everywhere, and only as many partitions move as balance requires."""
    rng = random.Random(3)
    uniform = UniformAssignor()
    for _ in range(300):
        members, topics = random_case(rng, homogeneous=True)
        for _ in range(4):
            previous = owners({m.member_id: m.current for m in members.values()})
            result = uniform.assign(members, topics)
            check_valid(members, topics, result)
            loads = counts(result)
            if loads:
                assert max(loads.values()) - min(loads.values()) <= 1

            moved = sum(1 for tp, owner in previous.items() if owners(result).get(tp) != owner)
            assert moved == minimal_moves(members, topics, previous)

            # Churn: some members leave, some join, a topic may grow; the rest keep their last result.
            survivors = {m: spec for m, spec in members.items() if rng.random() < 0.8}
            members = resubscribe(survivors, {m: result[m] for m in survivors})
            if members or rng.random() < 0.5:
                subscription = next(iter(members.values())).subscribed_topic_ids if members else frozenset(topics)
                joiners = [MemberSpec(f"n{rng.randint(0, 9999)}", None, None, subscription, {}) for _ in range(2)]
                members |= member_map(*rng.sample(joiners, rng.randint(0, 2)))
            grown = rng.choice(sorted(topics))
            topics[grown] = topic(grown, topics[grown].num_partitions + rng.randint(0, 3))


def minimal_moves(
    members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec], previous: Mapping[tuple[bytes, int], str]
) -> int:
    """Fewest held partitions that must change owner: the extra slots go to the biggest holders."""
    if not members:
        return 0
    subscription = next(iter(members.values())).subscribed_topic_ids
    total = sum(topics[t].num_partitions for t in subscription if t in topics)
    quota, extra = divmod(total, len(members))
    held = sorted(
        (sum(1 for (t, p), owner in previous.items() if owner == m and t in subscription) for m in members),
        reverse=True,
    )
    return sum(max(0, h - quota - (i < extra)) for i, h in enumerate(held))


def test_uniform_fourth_member_takes_only_what_balance_requires() -> None:
    uniform = UniformAssignor()
    topics = topic_map(topic(T1, 6))
    members = member_map(*(member(m, T1) for m in "abc"))
    first = uniform.assign(members, topics)
    assert counts(first) == {"a": 2, "b": 2, "c": 2}

    members = resubscribe(members, first, member("d", T1))
    second = uniform.assign(members, topics)
    check_valid(members, topics, second)
    assert sorted(counts(second).values()) == [1, 1, 2, 2]
    before, after = owners(first), owners(second)
    moved = {tp for tp in before if after[tp] != before[tp]}
    assert len(moved) == 1
    assert {after[tp] for tp in moved} == {"d"}
    for m in "abc":
        assert second[m][T1] <= first[m][T1]


def test_uniform_leaving_member_partitions_spread_and_others_keep_theirs() -> None:
    uniform = UniformAssignor()
    topics = topic_map(topic(T1, 5), topic(T2, 4))
    members = member_map(*(member(m, T1, T2) for m in "abcd"))
    first = uniform.assign(members, topics)
    assert sorted(counts(first).values()) == [2, 2, 2, 3]

    members = resubscribe({m: s for m, s in members.items() if m != "b"}, first)
    second = uniform.assign(members, topics)
    check_valid(members, topics, second)
    assert sorted(counts(second).values()) == [3, 3, 3]
    for m in "acd":
        for topic_id, partitions in first[m].items():
            assert partitions <= second[m].get(topic_id, frozenset())
    receivers = {owners(second)[tp] for tp, owner in owners(first).items() if owner == "b"}
    assert len(receivers) > 1


def test_uniform_heterogeneous_known_example() -> None:
    topics = topic_map(topic(T1, 3), topic(T2, 3))
    members = member_map(member("a", T1), member("b", T1, T2), member("c", T2))
    result = UniformAssignor().assign(members, topics)
    check_valid(members, topics, result)
    assert counts(result) == {"a": 2, "b": 2, "c": 2}


def test_uniform_heterogeneous_is_balanced_per_topic() -> None:
    """No subscriber of a topic holding any of it is two partitions ahead of another subscriber."""
    rng = random.Random(11)
    uniform = UniformAssignor()
    for _ in range(300):
        members, topics = random_case(rng, homogeneous=False)
        members = random_current(rng, members, topics)
        for _ in range(2):
            result = uniform.assign(members, topics)
            check_valid(members, topics, result)
            loads = counts(result)
            for topic_id in topics:
                subscribers = [m for m, spec in members.items() if topic_id in spec.subscribed_topic_ids]
                holders = [m for m in subscribers if result[m].get(topic_id)]
                if holders:
                    assert max(loads[m] for m in holders) - min(loads[m] for m in subscribers) <= 1
            members = resubscribe(members, result)


def test_uniform_drops_unsubscribed_and_stale_current_partitions() -> None:
    topics = topic_map(topic(T1, 2), topic(T2, 2))
    members = member_map(
        member("a", T1, current={T1: frozenset({0, 1, 5}), T2: frozenset({0})}),
        member("b", T1, T2, current={T1: frozenset({1})}),
    )
    result = UniformAssignor().assign(members, topics)
    check_valid(members, topics, result)
    assert result["a"] == {T1: frozenset({0, 1})}
    assert result["b"] == {T2: frozenset({0, 1})}
