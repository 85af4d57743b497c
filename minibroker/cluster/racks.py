"""Racks: each node's ``broker.rack``, and the replica a consumer in a rack is sent to (KIP-392, fetch from follower).

``broker.rack`` is one Kafka broker's rack; one process serving ``--nodes N`` reads it as comma-separated entries, node
k (the k-th node, counted from 1) taking entry k (entries cycle for nodes added later), each entry with ``{node}``
replaced by the node id. So ``eu-1`` puts every node in one rack, ``a,b,c`` node 1 in a, node 2 in b, node 3 in c,
and ``rack-{node}`` node k in ``rack-k``; empty: no node has a rack.

With ``replica.selector.class`` set to Kafka's ``RackAwareReplicaSelector``, the leader of a partition answers a
consumer's Fetch that names its rack (``client.rack``) with the replica to read from instead (Kafka's
``ReplicaManager.findPreferredReadReplica`` and ``RackAwareReplicaSelector.select``): an in-sync replica in the
client's rack, the leader itself when it is in that rack or none is, and among several the most caught up, then the
highest id. Data is stored once, so every in-sync follower is caught up and the highest id in the rack wins.
"""

from __future__ import annotations

from typing import Iterable, Mapping

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NODE_PLACEHOLDER = "{node}"
NO_PREFERRED_REPLICA = -1


def rack_entries(setting: str) -> list[str]:
    """The entries of a ``broker.rack`` value (none when it is empty)."""
    text = setting.strip()
    return [entry.strip() for entry in text.split(",")] if text else []


def rack_problem(setting: str, nodes: int) -> str | None:
    """Why a ``broker.rack`` value cannot give ``nodes`` nodes their racks, or None: an entry is empty, or a list
    names neither one rack for all nor one per node."""
    entries = rack_entries(setting)
    if any(not entry for entry in entries):
        return f"broker.rack {setting!r} has an empty rack: give every node a rack or none"
    if len(entries) > 1 and len(entries) != nodes:
        return (f"broker.rack names {len(entries)} racks for {nodes} nodes: give one rack (a pattern with {{node}} for "
                f"one per node) or one per node")
    return None


def rack_of(setting: str, index: int, node_id: int) -> str | None:
    """The rack of the node at ``index`` (0 for the first node) with id ``node_id``; None without racks."""
    entries = rack_entries(setting)
    if not entries:
        return None
    return entries[index % len(entries)].replace(NODE_PLACEHOLDER, str(node_id))


def node_racks(setting: str, node_ids: Iterable[int]) -> dict[int, str]:
    """Every node's rack, by node id (empty without racks)."""
    racks = {}
    for index, node_id in enumerate(node_ids):
        rack = rack_of(setting, index, node_id)
        if rack is not None:
            racks[node_id] = rack
    return racks


def preferred_read_replica(
    client_rack: str, leader: int, in_sync: Iterable[int], racks: Mapping[int, str],
) -> int:
    """RackAwareReplicaSelector's choice among the leader and its in-sync followers that hold the fetch offset, as the
    leader answers it: a follower in ``client_rack``, or NO_PREFERRED_REPLICA (-1) when the leader is to be read (it is
    in that rack, no replica is, or the client names no rack). Followers are equally caught up: the highest id wins,
    as Kafka's ReplicaView comparator ends on the id."""
    if not client_rack or racks.get(leader) == client_rack:
        return NO_PREFERRED_REPLICA
    same_rack = [node for node in in_sync if node != leader and racks.get(node) == client_rack]
    return max(same_rack, default=NO_PREFERRED_REPLICA)
