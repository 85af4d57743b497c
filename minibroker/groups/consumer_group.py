"""A consumer-protocol group (KIP-848): its members, epochs, target assignment and reconciliation, as pure state.

The group changes only by replaying its ``__consumer_offsets`` records (``consumer_records.py`` turns records into
these calls), so what is in memory is what the log says. ``reconcile`` is Kafka's CurrentAssignmentBuilder: a member
moves towards its target assignment one step per heartbeat, and a partition reaches a new owner only once its old
owner has stopped reporting it (the old owner's "unrevoked partitions" state), so no partition has two owners.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Iterable, Mapping

from minibroker.groups.assignors import TopicPartitions
from minibroker.protocol.group_records import ClassicMemberMetadata, PartitionEpochs

NO_PARTITION_EPOCH = -1
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Kafka's MemberState values, as written in ConsumerGroupCurrentMemberAssignment records."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None  # set for a member that speaks the classic protocol
    # The member epoch each partition of ``assigned`` and ``pending_revocation`` was assigned at (KIP-1251): a commit
    # with an older member epoch is still the owner's when it is not older than its partitions' assignment. A
    # partition missing here was assigned at the member epoch.
    epochs: PartitionEpochs = field(default_factory=dict)

    def assignment_epoch(self, topic_id: bytes, partition: int) -> int | None:
        """The epoch the member was assigned this partition at, None when it neither has it nor is revoking it."""
        if partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(topic_id, ()):
            return self.epochs.get((topic_id, partition), max(self.member_epoch, 0))
        return None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def subscription_differs(self, other: ConsumerMember) -> bool:
        return (self.subscribed_topic_names != other.subscribed_topic_names
                or self.subscribed_topic_regex != other.subscribed_topic_regex)


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    targets: dict[str, TopicPartitions] = field(default_factory=dict)
    regexes: dict[str, frozenset[str]] = field(default_factory=dict)  # resolved regular expression -> topic names
    partition_epochs: dict[tuple[bytes, int], int] = field(default_factory=dict)  # owned partition -> owner's epoch

    @property
    def is_empty(self) -> bool:
        return not self.members

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def partition_epoch(self, topic_id: bytes, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), NO_PARTITION_EPOCH)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in subscribed_names(self.members, self.regexes)

    # ---- replay ----

    def put_member(self, member: ConsumerMember) -> None:
        """A member's new state; keeps the static member index and the partition owners' epochs in step."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and old.instance_id != member.instance_id:
                self.static_members.pop(old.instance_id, None)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._own(member)

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _own(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    self.partition_epochs[(topic_id, partition)] = member.member_epoch

    def _release(self, member: ConsumerMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    if self.partition_epochs.get((topic_id, partition)) == member.member_epoch:
                        del self.partition_epochs[(topic_id, partition)]


def subscribed_names(members: Mapping[str, ConsumerMember], regexes: Mapping[str, frozenset[str]]) -> set[str]:
    """Topics any of ``members`` subscribes to, by name or through a resolved regular expression."""
    names: set[str] = set()
    for member in members.values():
        names.update(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            names.update(regexes.get(member.subscribed_topic_regex, ()))
    return names


def preferred_assignor(members: Iterable[ConsumerMember]) -> str | None:
    """The server assignor most members ask for (Kafka's computePreferredServerAssignor), None if none asks."""
    votes: dict[str, int] = {}
    for member in members:
        if member.server_assignor is not None:
            votes[member.server_assignor] = votes.get(member.server_assignor, 0) + 1
    return max(sorted(votes), key=lambda name: votes[name]) if votes else None


def owns_any(owned: TopicPartitions | None, partitions: TopicPartitions) -> bool:
    """Whether the member still reports one of ``partitions`` (an unknown ``owned`` counts as still owning)."""
    if owned is None:
        return True
    return any(owned.get(topic_id, frozenset()) & wanted for topic_id, wanted in partitions.items())


def reconcile(
    member: ConsumerMember, target_epoch: int, target: TopicPartitions, group: ConsumerGroup,
    owned: TopicPartitions | None,
) -> ConsumerMember:
    """The member's next assignment state towards ``target`` (Kafka's CurrentAssignmentBuilder.build).

    ``owned`` is what the member reported in this heartbeat (None: not reported). A member whose reply to
    a revocation was not seen stays where it is; a partition still owned by another member is withheld
    (UNRELEASED_PARTITIONS) until that member lets it go.
    """
    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, target_epoch, target, group, owned)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, group, owned)
    return _next_assignment(member, member.member_epoch, target_epoch, target, group, owned)


def _next_assignment(
    member: ConsumerMember, member_epoch: int, target_epoch: int, target: TopicPartitions, group: ConsumerGroup,
    owned: TopicPartitions | None,
) -> ConsumerMember:
    assigned: dict[bytes, frozenset[int]] = {}
    revoking: dict[bytes, frozenset[int]] = {}
    adding: dict[bytes, frozenset[int]] = {}
    unreleased = False
    for topic_id in sorted(set(target) | set(member.assigned)):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        free = set()
        for partition in wanted - kept:
            if group.partition_epoch(topic_id, partition) == NO_PARTITION_EPOCH:
                free.add(partition)
            else:
                unreleased = True
        if kept:
            assigned[topic_id] = kept
        if current - kept:
            revoking[topic_id] = current - kept
        if free:
            adding[topic_id] = frozenset(free)
    if revoking and owns_any(owned, revoking):
        return _updated(member, MemberState.UNREVOKED_PARTITIONS, member_epoch, assigned, revoking, {})
    for topic_id, partitions in adding.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _updated(member, state, target_epoch, assigned, {}, adding)


def _updated(
    member: ConsumerMember, state: MemberState, epoch: int, assigned: TopicPartitions, revoking: TopicPartitions,
    added: TopicPartitions,
) -> ConsumerMember:
    """The member's next state; a partition it keeps (or is revoking) keeps its assignment epoch, an ``added`` one
    has the new epoch (Kafka's CurrentAssignmentBuilder.computeNextAssignment)."""
    epochs = {}
    for partitions in (assigned, revoking):
        for topic_id, indexes in partitions.items():
            for partition in indexes:
                kept = member.assignment_epoch(topic_id, partition)
                fresh = partition in added.get(topic_id, ()) or kept is None
                epochs[(topic_id, partition)] = epoch if fresh else kept
    return dataclasses.replace(
        member, state=state, previous_member_epoch=member.member_epoch, member_epoch=epoch, assigned=assigned,
        pending_revocation=revoking, epochs=epochs,
    )
