"""SharePartition's ranges against the per-offset model (tests/share_reference.py): random sequences of fetches,
acknowledgements (whole-range and per-offset types, valid or not), member releases, lock expiries, log-start moves,
updates and reloads from the persisted state give the same answers, errors, states, updates and descriptions, and the
ranges stay joined (no two alike neighbours)."""

from __future__ import annotations

import random

import pytest

from minibroker.share.partition import AckBatch, FetchedBatch, SharePartition, ShareError, ShareLimits
from tests.share_reference import OffsetModel

MEMBERS = ("m1", "m2", "m3")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def observed(partition: SharePartition | OffsetModel) -> tuple[object, ...]:
    return (
        partition.start_offset, partition.end_offset,
        {o: (r.state, r.delivery_count, r.member, r.deadline) for o, r in sorted(partition.records.items())},
        partition.next_fetch_offset(), partition.can_acquire(), partition.next_deadline(), partition.finished_count(),
        partition.describe(),
    )


def joined(partition: SharePartition) -> bool:
    """No two neighbouring ranges alike (they would have been joined), none empty, in order without overlaps."""
    batches = partition.batches
    return all(b.first_offset <= b.last_offset for b in batches) and all(
        a.last_offset < b.first_offset and not (a.last_offset + 1 == b.first_offset and a.same_as(b))
        for a, b in zip(batches, batches[1:])
    )


def outcome(call, *args):  # type: ignore[no-untyped-def]
    try:
        return call(*args)
    except ShareError as exc:
        return exc.error, str(exc)


def random_acks(rnd: random.Random, start: int) -> list[AckBatch]:
    acks, position = [], max(0, start - 2)
    for _ in range(rnd.randint(1, 3)):
        first = position + rnd.randint(0, 3)
        last = first + rnd.randint(0, 5)
        if rnd.random() < 0.5:
            types = (rnd.choice((0, 1, 2, 3, 4, 7) if rnd.random() < 0.1 else (0, 1, 2, 3, 4)),)
        else:
            types = tuple(rnd.choice((0, 1, 1, 2, 3, 4)) for _ in range(last - first + 1))
        acks.append(AckBatch(first, last, types))
        position = last + 1
    return acks


@pytest.mark.parametrize("seed", range(300))
def test_ranges_agree_with_the_per_offset_model(seed: int) -> None:
    rnd = random.Random(seed)
    clock = Clock()
    limits = ShareLimits(delivery_count_limit=rnd.randint(1, 4), lock_duration_ms=100,
                         max_in_flight=rnd.choice((3, 10, 40)), renew_enabled=rnd.random() < 0.8)
    model, ranges = OffsetModel(0, limits, clock), SharePartition(0, limits, clock)
    log: list[FetchedBatch] = []
    log_end = 0
    for step in range(rnd.randint(5, 60)):
        choice = rnd.random()
        if choice < 0.15:  # records appended to the log, sometimes after a compacted gap or in an aborted transaction
            first = log_end + rnd.choice((0, 0, 0, 2))
            log.append(FetchedBatch(first, first + rnd.randint(0, 5), aborted=rnd.random() < 0.1))
            log_end = log[-1].last_offset + 1
        elif choice < 0.45:
            member, max_records, batch_size = rnd.choice(MEMBERS), rnd.randint(1, 12), rnd.randint(1, 6)
            record_limit = rnd.random() < 0.4
            fetched = [b for b in log if b.last_offset >= model.next_fetch_offset()][:rnd.randint(1, 5)]
            assert model.acquire(member, fetched, max_records, batch_size, record_limit) == ranges.acquire(
                member, iter(fetched), max_records, batch_size, record_limit,
            ), step
        elif choice < 0.75:
            member, acks = rnd.choice(MEMBERS), random_acks(rnd, model.start_offset)
            assert outcome(model.acknowledge, member, acks) == outcome(ranges.acknowledge, member, acks), step
        elif choice < 0.82:
            member = rnd.choice(MEMBERS)
            assert model.release_member(member) == ranges.release_member(member), step
        elif choice < 0.9:
            clock.now += rnd.randint(10, 120)
            assert model.expire_locks() == ranges.expire_locks(), step
        elif choice < 0.95:
            offset = rnd.randint(model.start_offset, model.end_offset + 2)
            assert model.advance_to(offset) == ranges.advance_to(offset), step
        else:
            assert model.take_update() == ranges.take_update(), step
            state = model.to_persisted()
            assert state == ranges.to_persisted(), step
            if rnd.random() < 0.5:  # a restart
                model = OffsetModel.from_persisted(state, limits, clock)
                ranges = SharePartition.from_persisted(state, limits, clock)
        assert observed(model) == observed(ranges), step
        assert joined(ranges), step
    assert model.take_update() == ranges.take_update()
