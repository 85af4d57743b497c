"""Server-side partition assignors of the KIP-848 consumer group protocol: ``uniform`` and ``range``.

Under KIP-848 the coordinator, not a client leader, computes each group's target assignment, so a
client that names an assignor in ConsumerGroupHeartbeat must get the placement Kafka's built-in
assignor of that name would give it. Both are pure functions of the members' subscriptions, their
current target assignments and the topic metadata, so the coordinator can run them inline and tests
can drive them without a broker.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

TopicPartitions = dict[bytes, frozenset[int]]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[bytes]
    current: TopicPartitions


@dataclass(frozen=True, slots=True)
class TopicSpec:
    topic_id: bytes
    name: str
    num_partitions: int


class Assignor(Protocol):
    name: str

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec]
    ) -> dict[str, TopicPartitions]:
        """Every member id mapped to the partitions it should own (empty when it gets none)."""


def _subscribers(ordered: list[MemberSpec], topics: Mapping[bytes, TopicSpec]) -> dict[bytes, tuple[str, ...]]:
    """Topic id -> member ids subscribed to it, in ``ordered`` order.

    Topics missing from the metadata (deleted, or not created yet) and topics without partitions drop
    out here: there is nothing of theirs to place.
    """
    subscribers: dict[bytes, list[str]] = {}
    for member in ordered:
        for topic_id in sorted(member.subscribed_topic_ids):
            topic = topics.get(topic_id)
            if topic is not None and topic.num_partitions > 0:
                subscribers.setdefault(topic_id, []).append(member.member_id)
    return {topic_id: tuple(member_ids) for topic_id, member_ids in subscribers.items()}


def _range_order(member: MemberSpec) -> tuple[int, str, str]:
    """Static members first, by instance id, as Kafka orders them.

    A static member comes back under a new member id after a restart; ordering by its instance id
    lets it get the same ranges again.
    """
    if member.instance_id is not None:
        return (0, member.instance_id, member.member_id)
    return (1, member.member_id, "")


class RangeAssignor:
    """Contiguous ranges per topic, ``numPartitions % numMembers`` leading members getting one extra.

    Members are placed in the same order for every topic, so members subscribed to topics with equal
    partition counts get the same partition numbers from each (co-partitioning, which joins rely on).
    Like Kafka's, it ignores the current assignment.
    """

    name = "range"

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec]
    ) -> dict[str, TopicPartitions]:
        result: dict[str, TopicPartitions] = {member_id: {} for member_id in members}
        ordered = sorted(members.values(), key=_range_order)
        for topic_id, subscribers in _subscribers(ordered, topics).items():
            quota, extra = divmod(topics[topic_id].num_partitions, len(subscribers))
            start = 0
            for index, member_id in enumerate(subscribers):
                end = start + quota + (index < extra)
                if end > start:
                    result[member_id][topic_id] = frozenset(range(start, end))
                start = end
        return result


class UniformAssignor:
    """Balanced and sticky, as Kafka's default server assignor.

    Members keep what they currently hold, unowned partitions go to the least loaded subscribers, and
    then partitions move from the most loaded members to the least loaded subscribers of their topics
    until no member is two partitions ahead of another subscriber of a topic it holds. With identical
    subscriptions that is balance to within one partition, reached by moving only the partitions that
    balance requires (a joining member takes them all from members that had too many); with differing
    subscriptions it is the per-topic balance Kafka's heterogeneous builder reaches.
    """

    name = "uniform"

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[bytes, TopicSpec]
    ) -> dict[str, TopicPartitions]:
        # Sorted member ids break every tie, which makes the result independent of mapping order.
        ordered = [members[member_id] for member_id in sorted(members)]
        subscribers = _subscribers(ordered, topics)
        held: dict[bytes, dict[str, set[int]]] = {topic_id: {} for topic_id in subscribers}
        load = {member_id: 0 for member_ids in subscribers.values() for member_id in member_ids}

        # Keep what each member holds of its subscriptions. Partitions past a topic's end and, should two
        # members claim one, all claims but the first are dropped rather than trusted.
        claimed: dict[bytes, set[int]] = {topic_id: set() for topic_id in subscribers}
        for member in ordered:
            for topic_id, partitions in member.current.items():
                if topic_id not in member.subscribed_topic_ids or topic_id not in held:
                    continue
                kept = {p for p in partitions if 0 <= p < topics[topic_id].num_partitions} - claimed[topic_id]
                if kept:
                    held[topic_id][member.member_id] = kept
                    claimed[topic_id] |= kept
                    load[member.member_id] += len(kept)

        # Kafka's topic order: the topics hardest to spread evenly (most partitions per subscriber,
        # then fewest subscribers) are placed first, while the loads are still even.
        topic_order = sorted(
            subscribers,
            key=lambda t: (-Fraction(topics[t].num_partitions, len(subscribers[t])), len(subscribers[t]), t),
        )
        for topic_id in topic_order:
            _fill(held[topic_id], subscribers[topic_id], topics[topic_id].num_partitions, load)
        while move := _next_move(held, subscribers, topic_order, load):
            topic_id, giver, receiver = move
            partition = max(held[topic_id][giver])
            held[topic_id][giver].remove(partition)
            held[topic_id].setdefault(receiver, set()).add(partition)
            load[giver] -= 1
            load[receiver] += 1

        result: dict[str, TopicPartitions] = {member.member_id: {} for member in ordered}
        for topic_id, owners in held.items():
            for member_id, partitions in owners.items():
                if partitions:
                    result[member_id][topic_id] = frozenset(partitions)
        return result


def _fill(held: dict[str, set[int]], subscribers: tuple[str, ...], num_partitions: int, load: dict[str, int]) -> None:
    """Give each unowned partition of a topic to its least loaded subscriber."""
    taken = set().union(*held.values())
    heap = [(load[member_id], member_id) for member_id in subscribers]
    heapq.heapify(heap)
    for partition in range(num_partitions):
        if partition in taken:
            continue
        _, member_id = heapq.heappop(heap)
        held.setdefault(member_id, set()).add(partition)
        load[member_id] += 1
        heapq.heappush(heap, (load[member_id], member_id))


def _next_move(
    held: dict[bytes, dict[str, set[int]]],
    subscribers: dict[bytes, tuple[str, ...]],
    topic_order: list[bytes],
    load: dict[str, int],
) -> tuple[bytes, str, str] | None:
    """The next partition move that narrows a gap of two or more: (topic id, giver, receiver).

    Givers are taken most loaded first, so a member gives partitions up only while it is the most
    loaded and never falls so low that it must take others back. (Balancing one topic at a time, as
    Kafka does, can drain a member of one topic and then refill it from another: extra moves.) Every
    move lowers the sum of squared loads, so the moves run out.
    """
    floor = min(load.values(), default=0)
    lightest: dict[tuple[str, ...], str] = {}  # topics usually share a few subscriber lists
    for giver in sorted(load, key=lambda m: (-load[m], m)):
        if load[giver] - floor < 2:
            return None
        best: tuple[bytes, str] | None = None
        for topic_id in topic_order:
            if held[topic_id].get(giver):
                candidates = subscribers[topic_id]
                if candidates not in lightest:
                    lightest[candidates] = min(candidates, key=lambda m: (load[m], m))
                receiver = lightest[candidates]
                if load[giver] - load[receiver] >= 2 and (best is None or load[receiver] < load[best[1]]):
                    best = (topic_id, receiver)
        if best is not None:
            return (best[0], giver, best[1])
    return None


ASSIGNORS: dict[str, Assignor] = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}


def assignor_named(name: str) -> Assignor:
    """The assignor a ConsumerGroupHeartbeat names; ``KeyError`` for one this broker does not have."""
    return ASSIGNORS[name]
