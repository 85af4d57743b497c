"""Rack-aware replica placement (Kafka's AdminUtils.assignReplicasToBrokers, with Kafka's AdminRackAwareTest examples)
and the broker.rack setting (one rack, one per node, a pattern)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from minibroker.cluster.placements import assign_replicas, rack_alternated
from minibroker.cluster.racks import RACK_AWARE_SELECTOR, node_racks, preferred_read_replica, rack_of
from minibroker.config.settings import ConfigError, build_config

KAFKA_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
SIX_IN_THREE = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


class FixedStart:
    """Kafka's fixedStartIndex: the start node and the replica shift are both this index."""

    def __init__(self, index: int) -> None:
        self.index = index

    def randrange(self, _: int) -> int:
        return self.index


def test_nodes_are_alternated_by_rack_as_kafka_does() -> None:
    assert rack_alternated(list(KAFKA_RACKS), KAFKA_RACKS) == [0, 3, 1, 5, 4, 2]
    without_5 = {node: rack for node, rack in KAFKA_RACKS.items() if node != 5}
    assert rack_alternated(list(without_5), without_5) == [0, 3, 1, 4, 2]


def test_rack_aware_placement_is_kafkas() -> None:
    placed = assign_replicas(list(KAFKA_RACKS), 7, 3, FixedStart(0), racks=KAFKA_RACKS)
    assert placed == [(0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2)]


def test_without_racks_placement_is_kafkas_rack_unaware_one() -> None:
    placed = assign_replicas([0, 1, 2, 3, 4], 10, 3, FixedStart(0))
    assert placed == [(0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 0), (4, 0, 1),
                      (0, 2, 3), (1, 3, 4), (2, 4, 0), (3, 0, 1), (4, 1, 2)]


def check_distribution(placed: list[tuple[int, ...]], racks: dict[int, str], factor: int, even: bool = True) -> None:
    """Kafka's RackAwareTest.checkReplicaDistribution: every partition on distinct nodes in min(factor, racks)
    racks, and with even racks each node leads and holds as many as every other."""
    rack_count = len(set(racks.values()))
    for replicas in placed:
        assert len(replicas) == factor and len(set(replicas)) == factor
        assert len({racks[node] for node in replicas}) == min(factor, rack_count), (replicas, racks)
    if even:
        leaders = Counter(replicas[0] for replicas in placed)
        held = Counter(node for replicas in placed for node in replicas)
        assert len(set(leaders[node] for node in racks)) == 1, leaders
        assert len(set(held[node] for node in racks)) == 1, held


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("racks,partitions,factor,even", [
    (SIX_IN_THREE, 6, 3, True),
    (SIX_IN_THREE, 12, 2, True),
    (SIX_IN_THREE, 6, 2, True),
    ({0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, True),
    ({0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1", 6: "rack1", 7: "rack2", 8: "rack2",
      9: "rack3", 10: "rack1", 11: "rack3"}, 96, 3, True),
    ({0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, False),
])
def test_replicas_are_spread_over_racks(
    seed: int, racks: dict[int, str], partitions: int, factor: int, even: bool,
) -> None:
    placed = assign_replicas(sorted(racks), partitions, factor, random.Random(seed), racks=racks)
    check_distribution(placed, racks, factor, even)


@pytest.mark.parametrize("seed", range(10))
def test_more_replicas_than_racks_reach_every_rack(seed: int) -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    placed = assign_replicas(sorted(racks), 6, 5, random.Random(seed), racks=racks)
    assert all(len(set(replicas)) == 5 and len({racks[node] for node in replicas}) == 3 for replicas in placed)


def test_one_rack_spreads_leaders_over_nodes() -> None:
    racks = {node: "rack1" for node in range(6)}
    placed = assign_replicas(sorted(racks), 6, 3, random.Random(3), racks=racks)
    assert Counter(replicas[0] for replicas in placed) == {node: 1 for node in range(6)}


def test_continued_partitions_keep_the_rack_spread() -> None:
    """Kafka's testRackAwareExpansion: partitions numbered from 12 on nodes 6..11."""
    racks = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    placed = assign_replicas(sorted(racks), 12, 2, random.Random(5), first_partition=12, racks=racks)
    check_distribution(placed, racks, 2)


@pytest.mark.parametrize("setting,expected", [
    ("", {}),
    ("eu-1", {1: "eu-1", 2: "eu-1", 3: "eu-1"}),
    ("a, b ,c", {1: "a", 2: "b", 3: "c"}),
    ("rack-{node}", {1: "rack-1", 2: "rack-2", 3: "rack-3"}),
])
def test_every_node_gets_its_rack(setting: str, expected: dict[int, str]) -> None:
    assert node_racks(setting, [1, 2, 3]) == expected
    config = build_config({"nodes": "3", "broker.rack": setting})
    assert node_racks(config.broker_rack, [1, 2, 3]) == expected


def test_nodes_added_later_continue_the_list() -> None:
    assert rack_of("a,b,c", 3, 4) == "a" and rack_of("z{node}", 4, 5) == "z5"


@pytest.mark.parametrize("settings,message", [
    ({"nodes": "3", "broker.rack": "a,b"}, "names 2 racks for 3 nodes"),
    ({"nodes": "3", "broker.rack": "a,,c"}, "empty rack"),
    ({"replica.selector.class": "com.example.MySelector"}, "replica.selector.class"),
])
def test_rack_settings_are_checked(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(settings)


def test_kafkas_selector_is_accepted() -> None:
    assert build_config({"replica.selector.class": RACK_AWARE_SELECTOR}).replica_selector_class == RACK_AWARE_SELECTOR


@pytest.mark.parametrize("client_rack,leader,in_sync,expected", [
    ("b", 1, [1, 2, 3], 2),  # a follower in the client's rack
    ("a", 1, [1, 2, 3], -1),  # the leader is in it
    ("z", 1, [1, 2, 3], -1),  # no replica is
    ("", 1, [1, 2, 3], -1),  # the client names no rack
    ("b", 1, [1, 3], -1),  # the follower in b is not in sync
    ("c", 1, [1, 3, 4], 4),  # two in the rack: the highest id (equally caught up)
])
def test_rack_aware_selector(client_rack: str, leader: int, in_sync: list[int], expected: int) -> None:
    racks = {1: "a", 2: "b", 3: "c", 4: "c"}
    assert preferred_read_replica(client_rack, leader, in_sync, racks) == expected
