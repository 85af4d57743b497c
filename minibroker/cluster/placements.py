"""The cluster a broker process presents: nodes 1..N, and each partition's replicas, leader and leader epoch.

Data is stored once per partition, whatever its replication factor: the replicas are a placement, so the in-sync
replicas are the live ones and a follower is always caught up. New topics are placed as Kafka's
``AdminUtils.assignReplicasToBrokers`` does: round robin from a random start node (over the nodes alternated by
rack when they have racks), later replicas shifted by a random amount that grows by one every ``len(nodes)``
partitions and spread over the racks; a partition's leader is its first (preferred) replica. The placement is kept in ``cluster-placement.json`` in the data directory (written atomically),
so a restart keeps the leaders and their epochs; a partition the file does not know (a topic made before, or by a
one-node broker) lives on the first node.

A reassignment (AlterPartitionReassignments) completes at once when every replica it adds is live, since a live
replica is always caught up; one that adds a stopped node is in progress, as Kafka's is while a new replica is out
of the ISR: its replicas are the target's then the ones being removed, and it completes when that node starts.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Mapping

from minibroker.storage.checkpoint import StrPath, read_json, write_json_atomically

if TYPE_CHECKING:
    import random

log = logging.getLogger(__name__)

PLACEMENT_FILE = "cluster-placement.json"
NO_LEADER = -1


class PartitionPlacement:
    """One partition's replicas and leader; never changed, replaced. (A plain class: a NamedTuple compiles its
    constructor when its module loads, a cost every start-up pays.)"""

    __slots__ = ("replicas", "leader", "leader_epoch", "adding", "removing")

    def __init__(
        self, replicas: tuple[int, ...], leader: int, leader_epoch: int = 0, adding: tuple[int, ...] = (),
        removing: tuple[int, ...] = (),
    ) -> None:
        self.replicas = replicas
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.adding = adding  # an in-progress reassignment's new replicas, not yet live
        self.removing = removing  # ... and the replicas it will drop

    def __eq__(self, other: object) -> bool:
        if type(other) is not PartitionPlacement:
            return NotImplemented
        return (self.replicas, self.leader, self.leader_epoch, self.adding, self.removing) == (
            other.replicas, other.leader, other.leader_epoch, other.adding, other.removing)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)


def first_live(replicas: tuple[int, ...], live: set[int]) -> int:
    return next((node for node in replicas if node in live), NO_LEADER)


def rack_alternated(nodes: list[int], racks: Mapping[int, str]) -> list[int]:
    """The nodes taken in turn from each rack, racks by name and each rack's nodes by id (Kafka's
    ``AdminUtils.getRackAlternatedBrokerList``): racks a1 a2 b1 c1 c2 give a1 b1 c1 a2 c2."""
    by_rack: dict[str, list[int]] = {}
    for node in sorted(nodes):
        by_rack.setdefault(racks.get(node, ""), []).append(node)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    return [column[row] for row in range(max(map(len, columns), default=0)) for column in columns if row < len(column)]


def assign_replicas(
    nodes: list[int], partitions: int, replication_factor: int, rng: random.Random, first_partition: int = 0,
    racks: Mapping[int, str] | None = None,
) -> list[tuple[int, ...]]:
    """Replicas of ``partitions`` partitions numbered from ``first_partition``, as Kafka's
    ``AdminUtils.assignReplicasToBrokers``: the leaders round robin over the rack-alternated nodes from a random start,
    each further replica at a shift that grows every ``len(nodes)`` partitions, skipping a node whose rack already
    has a replica while some rack has none, and a node that has one while some node has none. Without racks every
    node is in one rack and nothing is skipped: Kafka's rack-unaware placement."""
    racks = racks or {}
    arranged = rack_alternated(nodes, racks)
    count = len(arranged)
    rack_count = len({racks.get(node, "") for node in arranged})
    start = rng.randrange(count)
    shift = rng.randrange(count)
    placed = []
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        replicas = [arranged[first]]
        racks_used = {racks.get(arranged[first], "")}
        step = 0
        while len(replicas) < replication_factor:
            node = arranged[(first + 1 + (shift * rack_count + step) % (count - 1)) % count]
            rack = racks.get(node, "")
            step += 1
            if rack in racks_used and len(racks_used) < rack_count:
                continue
            if node in replicas and len(replicas) < count:
                continue
            replicas.append(node)
            racks_used.add(rack)
        placed.append(tuple(replicas))
    return placed


class Placements:
    """Every partition's placement, by topic, as the data directory keeps it."""

    def __init__(
        self, data_dir: StrPath, nodes: list[int], rng: random.Random | None = None, racks: Mapping[int, str] | None = None,
    ) -> None:
        self.path = os.path.join(data_dir, PLACEMENT_FILE)
        self.nodes = nodes
        self.racks = racks if racks is not None else {}  # node -> broker.rack; nodes without one have none
        self._rng = rng
        self._topics: dict[str, list[PartitionPlacement]] = {}

    @property
    def rng(self) -> random.Random:
        """The draws of Kafka's placement, made when the first topic is placed (random loads with it)."""
        if self._rng is None:
            import random

            self._rng = random.Random()
        return self._rng

    def load(self) -> None:
        self._topics = {}
        try:
            stored = read_json(self.path)
            if stored is None:
                return
            self._topics = {
                topic: [
                    PartitionPlacement(
                        tuple(p["replicas"]), p["leader"], p["leader_epoch"],
                        tuple(p.get("adding", ())), tuple(p.get("removing", ())),
                    )
                    for p in partitions
                ]
                for topic, partitions in stored["topics"].items()
            }
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("%s is unreadable (%s): every partition is placed on node %d", self.path, exc, self.nodes[0])
            self._topics = {}

    def _save(self) -> None:
        topics = {topic: [self._stored(p) for p in partitions] for topic, partitions in self._topics.items()}
        write_json_atomically(self.path, {"version": 1, "topics": topics}, sort_keys=True)

    @staticmethod
    def _stored(placed: PartitionPlacement) -> dict:
        stored = {"replicas": list(placed.replicas), "leader": placed.leader, "leader_epoch": placed.leader_epoch}
        if placed.reassigning:
            stored.update(adding=list(placed.adding), removing=list(placed.removing))
        return stored

    def of(self, topic: str, partition: int) -> PartitionPlacement:
        placed = self._topics.get(topic)
        if placed is not None and partition < len(placed):
            return placed[partition]
        return PartitionPlacement((self.nodes[0],), self.nodes[0])

    def assign(self, partitions: int, replication_factor: int, live: set[int]) -> list[tuple[int, ...]]:
        """Replicas for a new topic, on the live nodes (as Kafka's controller places on registered brokers)."""
        return assign_replicas(sorted(live), partitions, replication_factor, self.rng, racks=self.racks)

    def put(self, topic: str, replicas: list[tuple[int, ...]]) -> None:
        """A new topic's replicas, each partition led by its first; one node writes nothing (its default)."""
        if len(self.nodes) == 1:
            return
        self._topics[topic] = [PartitionPlacement(r, r[0]) for r in replicas]
        self._save()

    def grow(
        self, topic: str, old_total: int, new_total: int, live: set[int], replicas: list[tuple[int, ...]] | None = None,
    ) -> None:
        """CreatePartitions: the new partitions get ``replicas`` (validated), else the topic's replication factor
        placed as Kafka continues; each is led by its first live replica."""
        if len(self.nodes) == 1:
            return
        placed = self._materialize(topic, old_total)
        if replicas is None:
            factor = min(len(placed[0].replicas), len(live))
            replicas = assign_replicas(
                sorted(live), new_total - len(placed), factor, self.rng, first_partition=len(placed), racks=self.racks)
        placed += [PartitionPlacement(r, first_live(r, live)) for r in replicas]
        self._save()

    def _materialize(self, topic: str, partitions: int) -> list[PartitionPlacement]:
        """The topic's placements, written out for a topic the file does not know (it lives on the first node)."""
        placed = self._topics.get(topic)
        if placed is None:
            placed = self._topics[topic] = [self.of(topic, index) for index in range(partitions)]
        return placed

    def raise_epochs(self, floors: dict[tuple[str, int], int]) -> None:
        """Lift each partition's leader epoch to at least its floor (after a restore, epochs must not go back)."""
        changed = False
        for topic, placed in self._topics.items():
            for index, partition in enumerate(placed):
                floor = floors.get((topic, index), 0)
                if partition.leader_epoch < floor:
                    placed[index] = PartitionPlacement(
                        partition.replicas, partition.leader, floor, partition.adding, partition.removing)
                    changed = True
        if changed:
            self._save()

    def forget(self, topic: str) -> None:
        if self._topics.pop(topic, None) is not None:
            self._save()

    def elect(self, live: set[int]) -> list[tuple[str, int]]:
        """After a node stopped or started: every partition whose leader is not live gets its first live replica
        (or no leader), each change with a new leader epoch, as Kafka's controller elects; the partitions changed."""
        changed = []
        for topic, placed in self._topics.items():
            for index, partition in enumerate(placed):
                if partition.adding and all(node in live for node in partition.adding):
                    placed[index] = completed(partition, partition.replicas[: len(partition.replicas) - len(partition.removing)], live)
                elif partition.leader not in live and first_live(partition.replicas, live) != partition.leader:
                    placed[index] = PartitionPlacement(
                        partition.replicas, first_live(partition.replicas, live), partition.leader_epoch + 1,
                        partition.adding, partition.removing,
                    )
                else:
                    continue
                changed.append((topic, index))
        if changed:
            self._save()
        return changed

    def move_leader(self, topic: str, partition: int, node: int) -> PartitionPlacement:
        """Make ``node`` (a replica) the leader, with a new leader epoch; ValueError if it is not a replica."""
        placed = self._topics.get(topic)
        current = self.of(topic, partition)
        if placed is None or node not in current.replicas:
            raise ValueError(f"node {node} is not a replica of {topic}-{partition} (replicas {list(current.replicas)})")
        if current.leader != node:
            placed[partition] = PartitionPlacement(
                current.replicas, node, current.leader_epoch + 1, current.adding, current.removing)
            self._save()
        return placed[partition]

    def reassign(
        self, topic: str, partition: int, partitions: int, target: tuple[int, ...] | None, live: set[int],
    ) -> PartitionPlacement:
        """AlterPartitionReassignments for one partition of a topic of ``partitions``: move to ``target`` (at once
        when every added replica is live, else in progress), or cancel the one in progress (``target`` None:
        LookupError if there is none), as Kafka's PartitionReassignmentReplicas and PartitionReassignmentRevert."""
        current = self.of(topic, partition)
        if target is None:
            if not current.reassigning:
                raise LookupError("No partition reassignment is in progress.")
            kept = tuple(node for node in current.replicas if node not in current.adding)
            new = completed(current, kept, live)
        else:
            removing = tuple(node for node in current.replicas if node not in target)
            adding = tuple(node for node in target if node not in current.replicas)
            if all(node in live for node in adding):
                new = completed(current, target, live)
            else:
                new = PartitionPlacement(target + removing, current.leader, current.leader_epoch, adding, removing)
        if new != current:
            self._materialize(topic, partitions)[partition] = new
            self._save()
        return new

    def reassigning(self) -> dict[tuple[str, int], PartitionPlacement]:
        """The partitions whose reassignment is in progress."""
        return {
            (topic, index): p for topic, placed in self._topics.items() for index, p in enumerate(placed) if p.reassigning
        }


def completed(current: PartitionPlacement, replicas: tuple[int, ...], live: set[int]) -> PartitionPlacement:
    """The placement once the replicas are ``replicas``: the leader stays if it is one of them and live, else the
    first live one leads; the leader epoch grows when the leader changes or a replica goes, as Kafka's
    PartitionChangeBuilder bumps it."""
    leader = current.leader if current.leader in replicas and current.leader in live else first_live(replicas, live)
    bump = leader != current.leader or any(node not in replicas for node in current.replicas)
    return PartitionPlacement(replicas, leader, current.leader_epoch + (1 if bump else 0))
