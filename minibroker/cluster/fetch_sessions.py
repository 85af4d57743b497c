"""Incremental fetch sessions (KIP-227), as Kafka's FetchManager, FetchSession and FetchContext keep them.

A full Fetch (epoch 0) creates a session holding its partitions; later requests of the session (epoch 1, 2, ...)
name only the partitions that changed or are forgotten, and are answered only with the partitions whose data, high
watermark, log start offset or error changed. A session made by Fetch v13+ keys its partitions by topic id, one made
by v12 or older by topic name; a request of the other kind answers FETCH_SESSION_TOPIC_ID_ERROR.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from minibroker.protocol.errors import NO_ERROR

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka's min.incremental.fetch.session.eviction.ms: a session unused this long may go

PartitionKey = tuple[bytes | str, int]  # (topic id, or topic name in a session without ids; partition)


@dataclass(slots=True)
class Wanted:
    """One partition a fetch reads: its topic id (zero before v13), its name (None: an id no topic has) and the
    request's fields for it (fetch_offset, partition_max_bytes, current_leader_epoch, ...)."""

    topic_id: bytes
    name: str | None
    index: int
    request: dict[str, Any]
    high_watermark: int = -1  # what the session last answered (Kafka's CachedPartition)
    log_start_offset: int = -1

    def key(self, uses_ids: bool) -> PartitionKey:
        return (self.topic_id if uses_ids else self.name or "", self.index)

    def must_respond(self, answer: dict[str, Any], update: bool) -> bool:
        """Kafka's CachedPartition.maybeUpdateResponseData: new records, a changed high watermark or log start offset,
        a preferred read replica and errors are answered; an error also forgets the high watermark, so the partition is answered again once
        the error is gone."""
        respond = len(answer["records"]) > 0
        if answer["high_watermark"] != self.high_watermark:
            respond = True
            if update:
                self.high_watermark = answer["high_watermark"]
        log_start_offset = answer.get("log_start_offset", -1)
        if log_start_offset != self.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = log_start_offset
        if answer.get("preferred_read_replica", -1) >= 0:  # the consumer must learn where to read (KIP-392)
            respond = True
        if answer["error_code"] != NO_ERROR:
            respond = True
            if update:
                self.high_watermark = -1
        return respond


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 0x7FFFFFFF else epoch + 1


@dataclass(slots=True)
class FetchSession:
    id: int
    uses_ids: bool
    privileged: bool  # made by a follower (replica id >= 0)
    partitions: dict[PartitionKey, Wanted]
    epoch: int
    created_ms: int
    last_used_ms: int

    @property
    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: a consumer's session before a follower's, a smaller before a larger."""
        return (self.privileged, len(self.partitions), self.id)

    def evictable_by(self, privileged: bool) -> bool:
        """Only a session older than EVICTION_MS when last used may be pushed out for a new one; a consumer's
        session, of any age, for a follower's (Kafka's evictableByAll and evictableByPrivileged)."""
        return self.last_used_ms - self.created_ms > EVICTION_MS or (privileged and not self.privileged)

    def update(self, requested: list[Wanted], forgotten: list[PartitionKey]) -> None:
        """The request's partitions replace their cached request fields (new ones are added), then the forgotten go."""
        for wanted in requested:
            cached = self.partitions.get(wanted.key(self.uses_ids))
            if cached is None:
                self.partitions[wanted.key(self.uses_ids)] = wanted
            else:
                cached.request = wanted.request
        for key in forgotten:
            self.partitions.pop(key, None)

    def cached(self, resolve: Callable[[bytes], str | None]) -> list[Wanted]:
        """The session's partitions in order; a partition added under an id no topic had gets its name once one
        does (Kafka's maybeResolveUnknownName)."""
        if self.uses_ids:
            for wanted in self.partitions.values():
                if wanted.name is None:
                    wanted.name = resolve(wanted.topic_id)
        return list(self.partitions.values())

    def answered(self, parts: list[Wanted], answers: list[dict[str, Any]]) -> list[int]:
        """The positions of the answers an incremental response carries; partitions that returned records move to the
        end of the session, so the next reads start with the others (Kafka's fairness rotation)."""
        keep = []
        for position, (wanted, answer) in enumerate(zip(parts, answers)):
            if wanted.must_respond(answer, update=True):
                keep.append(position)
                if len(answer["records"]) > 0:
                    key = wanted.key(self.uses_ids)
                    self.partitions[key] = self.partitions.pop(key)
        return keep


@dataclass
class FetchSessionCache:
    """The sessions of the broker, at most ``slots`` (max.incremental.fetch.session.cache.slots)."""

    slots: int
    clock: Callable[[], int]
    sessions: dict[int, FetchSession] = field(default_factory=dict)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def clear(self) -> None:
        self.sessions.clear()

    def touch(self, session: FetchSession) -> None:
        session.last_used_ms = self.clock()

    def create(self, parts: list[Wanted], uses_ids: bool, privileged: bool) -> int:
        """A new session of ``parts`` (with what they were answered), or INVALID_SESSION_ID when every slot is taken
        and none can be evicted: Kafka's FetchSessionCache.maybeCreateSession."""
        now = self.clock()
        if self.slots <= 0 or (len(self.sessions) >= self.slots and not self._evict(now, privileged, len(parts))):
            return INVALID_SESSION_ID
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = random.randint(1, 0x7FFFFFFF)
        partitions = {wanted.key(uses_ids): wanted for wanted in parts}
        self.sessions[session_id] = FetchSession(
            session_id, uses_ids, privileged, partitions, next_epoch(INITIAL_EPOCH), now, now)
        return session_id

    def _evict(self, now: int, privileged: bool, size: int) -> bool:
        """Kafka's tryEvict: the least recently used session if it is stale (unused for EVICTION_MS), else the least
        valuable evictable one if the new one is worth more."""
        oldest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
        if now - oldest.last_used_ms > EVICTION_MS:
            del self.sessions[oldest.id]
            return True
        candidates = [s for s in self.sessions.values() if s.evictable_by(privileged)]
        if not candidates:
            return False
        weakest = min(candidates, key=lambda s: s.evictable_key)
        if (privileged, size, 0) < weakest.evictable_key:
            return False
        del self.sessions[weakest.id]
        return True
