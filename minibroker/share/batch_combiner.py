"""Kafka's PersisterStateBatchCombiner: state batches merged into one sorted list without overlaps.

Where batches overlap, the offsets take the delivery state of the batch with the higher delivery count, and at equal
counts the higher delivery state (archived over acknowledged over available): a record's state only moves forward, so
whichever write says it went further wins, whatever order the writes came in. Batches before the start offset are
dropped (or cut at it), and neighbours with the same state and count are joined.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from minibroker.protocol.share_state import StateBatch

NO_START_OFFSET = -1  # nothing is pruned


def _priority(batch: StateBatch) -> tuple[int, int]:
    return batch.delivery_count, int(batch.delivery_state)


def combine_batches(
    so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int = NO_START_OFFSET,
) -> tuple[StateBatch, ...]:
    """``so_far`` and ``new`` as one list of non-overlapping batches in offset order, nothing before ``start_offset``."""
    batches = []
    for batch in (*so_far, *new):
        if start_offset != NO_START_OFFSET and batch.first_offset < start_offset:
            if batch.last_offset < start_offset:
                continue
            batch = StateBatch(start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        batches.append(batch)
    batches.sort(key=lambda b: b.first_offset)
    cuts = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[StateBatch] = []
    active: list[tuple[tuple[int, int], int, int]] = []  # (-priority, last offset, index) of batches begun
    following = 0
    for here, after in zip(cuts, cuts[1:]):
        while following < len(batches) and batches[following].first_offset == here:
            batch = batches[following]
            heapq.heappush(active, ((-batch.delivery_count, -int(batch.delivery_state)), batch.last_offset, following))
            following += 1
        while active and active[0][1] < here:
            heapq.heappop(active)
        if not active:
            continue
        winner = batches[active[0][2]]
        last = after - 1
        previous = out[-1] if out else None
        if previous is not None and previous.last_offset + 1 == here and _priority(previous) == _priority(winner):
            out[-1] = StateBatch(previous.first_offset, last, previous.delivery_state, previous.delivery_count)
        else:
            out.append(StateBatch(here, last, winner.delivery_state, winner.delivery_count))
    return tuple(out)
