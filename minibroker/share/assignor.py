"""Kafka's SimpleAssignor for share groups (the only share assignor, ``group.share.assignors=simple``).

Each subscribed topic's partitions are spread over the members subscribed to it. With at least as many partitions as
members, every partition goes to one member and the members' shares differ by one at most; with more members than
partitions, members share partitions: each member gets one, and each partition has the same number of members give
or take one. Assignments are sticky: a member keeps what it had while that fits its share, so a member joining or
leaving moves as few partitions as it can. Ties go to the member with the least assigned overall, then by member id,
so the result depends only on its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from minibroker.groups.assignors import TopicPartitions, TopicSpec


def assign(
    subscriptions: Mapping[str, frozenset[str]], topics: Mapping[str, TopicSpec], previous: Mapping[str, TopicPartitions],
) -> dict[str, TopicPartitions]:
    """The target assignment of every member (member id -> topic id -> partitions); ``subscriptions``: member id ->
    subscribed topic names, ``topics``: the subscribed topics that exist, ``previous``: the current target."""
    result: dict[str, dict[bytes, set[int]]] = {member_id: {} for member_id in subscriptions}
    load = dict.fromkeys(subscriptions, 0)
    for name in sorted(topics):
        spec = topics[name]
        members = sorted(m for m, names in subscriptions.items() if name in names)
        if not members or spec.num_partitions <= 0:
            continue
        had = {m: previous.get(m, {}).get(spec.topic_id, frozenset()) for m in members}
        if len(members) <= spec.num_partitions:
            owners = _spread(members, spec.num_partitions, had, load)
        else:
            owners = _share(members, spec.num_partitions, had, load)
        for member_id, partitions in owners.items():
            if partitions:
                result[member_id][spec.topic_id] = partitions
                load[member_id] += len(partitions)
    return {m: {topic_id: frozenset(p) for topic_id, p in assigned.items()} for m, assigned in result.items()}


def _spread(
    members: list[str], num_partitions: int, had: Mapping[str, frozenset[int]], load: Mapping[str, int],
) -> dict[str, set[int]]:
    """Each partition to one member; ``num_partitions // len(members)`` each, one more for the first few."""
    base, extra = divmod(num_partitions, len(members))
    owners: dict[str, set[int]] = {m: set() for m in members}
    taken: set[int] = set()
    # Members keeping most first take the larger quotas, so stickiness wins over the order of ids.
    by_kept = sorted(members, key=lambda m: (-len(had[m]), load[m], m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_kept)}
    for member_id in by_kept:
        for partition in sorted(had[member_id]):
            if partition < num_partitions and partition not in taken and len(owners[member_id]) < quota[member_id]:
                owners[member_id].add(partition)
                taken.add(partition)
    for partition in range(num_partitions):
        if partition in taken:
            continue
        member_id = min(
            (m for m in members if len(owners[m]) < quota[m]), key=lambda m: (len(owners[m]), load[m], m),
        )
        owners[member_id].add(partition)
    return owners


def _share(
    members: list[str], num_partitions: int, had: Mapping[str, frozenset[int]], load: Mapping[str, int],
) -> dict[str, set[int]]:
    """More members than partitions: one partition per member, each partition held by the same number of members
    give or take one."""
    most = -(-len(members) // num_partitions)
    crowded = len(members) - (most - 1) * num_partitions  # how many partitions may have ``most`` members
    holders = [0] * num_partitions

    def has_room(partition: int) -> bool:
        full = sum(count == most for count in holders)
        return holders[partition] < most - 1 or (holders[partition] == most - 1 and full < crowded)

    owners: dict[str, set[int]] = {}
    waiting = []
    for member_id in members:
        kept = next((p for p in sorted(had[member_id]) if p < num_partitions and has_room(p)), None)
        if kept is None:
            waiting.append(member_id)
        else:
            owners[member_id] = {kept}
            holders[kept] += 1
    for member_id in sorted(waiting, key=lambda m: (load[m], m)):
        partition = min(range(num_partitions), key=lambda p: (holders[p], p))
        owners[member_id] = {partition}
        holders[partition] += 1
    return owners
