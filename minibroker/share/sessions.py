"""Share sessions (KIP-932), as Kafka's ShareSessionCache keeps them: one per (group, member) on each node (one
``ShareSessions`` per node, as each Kafka broker has its own cache), the partitions a member fetches from that node so
its incremental ShareFetch requests need not name them again. A member reading partitions led by several nodes has a
session on each of them, each with its own epoch.

Epoch 0 opens a new session (replacing the member's old one on that node; no acknowledgements allowed in it), a
positive epoch must be the session's next one and adds the request's partitions and drops the forgotten ones, -1 closes
it (the caller then releases the member's records). ``group.share.max.share.sessions`` bounds how many a node keeps:
one more is refused with SHARE_SESSION_LIMIT_REACHED. A session belongs to the connection that opened it and ends with
it, as in Kafka, so a node that stops takes its sessions with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minibroker.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF

SharedPartition = tuple[bytes, int]  # (topic id, partition)


class SessionError(Exception):
    """A request Kafka refuses for its session, with the top-level error it answers."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


def next_epoch(epoch: int) -> int:
    """Kafka's ShareRequestMetadata.nextEpoch: after the largest epoch comes 1 again."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    connection: object
    partitions: dict[SharedPartition, None] = field(default_factory=dict)  # ordered as the member asked

    def update(self, wanted: list[SharedPartition], forgotten: list[SharedPartition]) -> None:
        for partition in wanted:
            self.partitions.setdefault(partition, None)
        for partition in forgotten:
            self.partitions.pop(partition, None)


class ShareSessions:
    """One node's share sessions (Kafka's ShareSessionCache of one broker)."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        # The sessions of each connection, so that a connection closing finds its own without looking at all.
        self._by_connection: dict[object, dict[tuple[str, str], None]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def for_fetch(
        self, group_id: str, member_id: str, epoch: int, wanted: list[SharedPartition], forgotten: list[SharedPartition],
        has_acknowledgements: bool, connection: object,
    ) -> tuple[list[SharedPartition], ShareSession | None]:
        """Kafka's SharePartitionManager.newContext: the partitions a ShareFetch reads and its session (None for the
        final epoch: nothing is read). Raises SessionError."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self._sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
            return [], None
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise SessionError(ErrorCode.INVALID_REQUEST)
            self.remove(group_id, member_id)
            if len(self._sessions) >= self.max_sessions:
                raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), connection)
            session.update(wanted, [])
            self._sessions[key] = session
            self._by_connection.setdefault(connection, {})[key] = None
            return list(session.partitions), session
        session = self._sessions.get(key)
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session.update(wanted, forgotten)
        session.epoch = next_epoch(session.epoch)
        return list(session.partitions), session

    def for_acknowledge(self, group_id: str, member_id: str, epoch: int) -> None:
        """Kafka's acknowledgeSessionUpdate: a ShareAcknowledge needs the member's session at its epoch (never 0);
        the final epoch leaves the epoch as it is. Raises SessionError."""
        if epoch == INITIAL_EPOCH:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return
        if session.epoch != epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session.epoch = next_epoch(session.epoch)

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        key = (group_id, member_id)
        session = self._sessions.pop(key, None)
        if session is not None:
            keys = self._by_connection[session.connection]
            del keys[key]
            if not keys:
                del self._by_connection[session.connection]
        return session

    def of_connection(self, connection: object) -> list[ShareSession]:
        return [self._sessions[key] for key in self._by_connection.get(connection, ())]

    def of_group(self, group_id: str) -> list[ShareSession]:
        return [session for session in self._sessions.values() if session.group_id == group_id]
