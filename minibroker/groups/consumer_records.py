"""The records a consumer-protocol group is made of, and their replay (Kafka's GroupCoordinatorRecordHelpers and the
consumer-group part of GroupMetadataManager.replay).

Writing and reading go through the same functions: the coordinator appends records to ``__consumer_offsets``, then
replays them onto its groups exactly as it replays the log at start-up.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from minibroker.groups.consumer_group import ConsumerGroup, ConsumerMember, MemberState
from minibroker.protocol.group_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

log = logging.getLogger(__name__)

CONSUMER_GROUP_KEYS = (
    ConsumerGroupMetadataKey, ConsumerGroupPartitionMetadataKey, ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupRegularExpressionKey,
)

Record = tuple[Any, Any]


def epoch_record(group_id: str, epoch: int, metadata_hash: int) -> Record:
    return ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch, metadata_hash)


def member_record(group_id: str, member: ConsumerMember) -> Record:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=member.subscribed_topic_names,
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic=member.classic,
    )
    return ConsumerGroupMemberMetadataKey(group_id, member.member_id), value


def target_record(group_id: str, member_id: str, partitions: dict[bytes, frozenset[int]]) -> Record:
    return ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), ConsumerGroupTargetAssignmentMemberValue(partitions)


def target_epoch_record(group_id: str, epoch: int, now_ms: int) -> Record:
    return ConsumerGroupTargetAssignmentMetadataKey(group_id), ConsumerGroupTargetAssignmentMetadataValue(epoch, now_ms)


def assignment_record(group_id: str, member: ConsumerMember) -> Record:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch, state=int(member.state),
        assigned=member.assigned, pending_revocation=member.pending_revocation, epochs=member.epochs,
    )
    return ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id), value


def regex_record(group_id: str, regex: str, topics: frozenset[str], version: int, now_ms: int) -> Record:
    return ConsumerGroupRegularExpressionKey(group_id, regex), ConsumerGroupRegularExpressionValue(
        tuple(sorted(topics)), version, now_ms,
    )


def regex_tombstone(group_id: str, regex: str) -> Record:
    return ConsumerGroupRegularExpressionKey(group_id, regex), None


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """What removing a member writes, in Kafka's order: its assignment, its target, then its subscription."""
    return [
        (ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        (ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
        (ConsumerGroupMemberMetadataKey(group_id, member_id), None),
    ]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """Everything of the group (Kafka's createGroupTombstoneRecords), the epoch record last: its tombstone deletes."""
    group_id = group.group_id
    records: list[Record] = []
    for member_id in group.members:
        records += member_tombstones(group_id, member_id)
    records += [regex_tombstone(group_id, regex) for regex in group.regexes]
    records += [
        (ConsumerGroupTargetAssignmentMetadataKey(group_id), None),
        (ConsumerGroupPartitionMetadataKey(group_id), None),
        (ConsumerGroupMetadataKey(group_id), None),
    ]
    return records


def replay(groups: dict[str, ConsumerGroup], key: Any, value: Any) -> None:
    """Apply one consumer-group record to ``groups`` (a group is created by its first record, deleted by the
    tombstone of its epoch record)."""
    group_id = key.group
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = ConsumerGroup(group_id)
    if isinstance(key, ConsumerGroupMetadataKey):
        if value is None:
            if group.members:
                log.warning("consumer group %s: epoch tombstone while it has members; deleting it anyway", group_id)
            del groups[group_id]
            return
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        if value is None:
            group.remove_member(key.member_id)
            return
        current = group.members.get(key.member_id) or ConsumerMember(key.member_id)
        group.put_member(dataclasses.replace(
            current, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, classic=value.classic,
        ))
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        if value is not None:
            group.assignment_epoch = value.assignment_epoch
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if value is None:
            group.targets.pop(key.member_id, None)
        else:
            group.targets[key.member_id] = dict(value.partitions)
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        current = group.members.get(key.member_id)
        if value is None:
            if current is not None:
                group.put_member(dataclasses.replace(
                    current, member_epoch=0, previous_member_epoch=0, state=MemberState.STABLE, assigned={},
                    pending_revocation={}, epochs={},
                ))
            return
        group.put_member(dataclasses.replace(
            current or ConsumerMember(key.member_id), member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, state=_member_state(value.state),
            assigned=dict(value.assigned), pending_revocation=dict(value.pending_revocation),
            epochs=_assignment_epochs(value),
        ))
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        if value is None:
            group.regexes.pop(key.regex, None)
        else:
            group.regexes[key.regex] = frozenset(value.topics)
    # ConsumerGroupPartitionMetadata: superseded by the metadata hash of the epoch record; nothing to keep.


def _assignment_epochs(value: ConsumerGroupCurrentMemberAssignmentValue) -> dict[tuple[bytes, int], int]:
    """Every partition's assignment epoch: the record's, or (a record written before KIP-1251) the member epoch, as
    Kafka's Utils.assignmentFromTopicPartitions (never negative: a static member that left has epoch -2)."""
    default = max(value.member_epoch, 0)
    return {
        (topic_id, partition): value.epochs.get((topic_id, partition), default)
        for partitions in (value.assigned, value.pending_revocation)
        for topic_id, indexes in partitions.items()
        for partition in indexes
    }


def _member_state(value: int) -> MemberState:
    try:
        return MemberState(value)
    except ValueError:
        return MemberState.UNKNOWN
