"""SharePartition's rules, one by one, on a fake clock: what Kafka's SharePartition does with acquisitions,
acknowledgements, locks, delivery counts, in-flight limits and the start offset."""

from __future__ import annotations

import pytest

from minibroker.protocol.errors import ErrorCode
from minibroker.share.partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRange,
    FetchedBatch,
    SharePartition,
    ShareError,
    ShareLimits,
)
from minibroker.protocol.share_state import DeliveryState, PersistedShareState, StateBatch

ACCEPT, RELEASE, REJECT, GAP, RENEW = (
    AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT, AcknowledgeType.GAP, AcknowledgeType.RENEW,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def make(start: int = 0, **limits: int | bool) -> tuple[SharePartition, FakeClock]:
    clock = FakeClock()
    return SharePartition(start, ShareLimits(**{"lock_duration_ms": 1000, **limits}), clock), clock


def batches(*ranges: tuple[int, int]) -> list[FetchedBatch]:
    return [FetchedBatch(first, last) for first, last in ranges]


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def states(partition: SharePartition) -> dict[int, tuple[str, int]]:
    return {o: (r.state.name, r.delivery_count) for o, r in sorted(partition.records.items())}


def test_acquire_takes_whole_batches_and_counts_a_delivery() -> None:
    partition, clock = make()
    got = partition.acquire("m1", batches((0, 4), (5, 9)), max_records=3, batch_size=500)
    assert got == [AcquiredRange(0, 4, 1)]  # batch-optimized: the whole first batch, past MaxRecords
    assert partition.end_offset == 5 and partition.next_fetch_offset() == 5
    assert partition.next_deadline() == clock.now + 1000
    assert all(r.member == "m1" and r.state == DeliveryState.ACQUIRED for r in partition.records.values())


def test_record_limit_mode_acquires_exactly_max_records() -> None:
    partition, _ = make()
    got = partition.acquire("m1", batches((0, 4), (5, 9)), max_records=3, batch_size=500, record_limit=True)
    assert got == [AcquiredRange(0, 2, 1)]
    assert partition.end_offset == 3
    # the rest of the batch is new to the next fetch
    assert partition.acquire("m2", batches((0, 4), (5, 9)), 3, 500, record_limit=True) == [AcquiredRange(3, 5, 1)]


def test_batch_size_splits_acquired_ranges_at_log_batches() -> None:
    partition, _ = make()
    got = partition.acquire("m1", batches((0, 1), (2, 3), (4, 5)), max_records=100, batch_size=2)
    assert got == [AcquiredRange(0, 1, 1), AcquiredRange(2, 3, 1), AcquiredRange(4, 5, 1)]
    partition2, _ = make()
    assert partition2.acquire("m1", batches((0, 1), (2, 3)), 100, batch_size=10) == [AcquiredRange(0, 3, 1)]


def test_acquired_records_are_not_acquired_again() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    assert partition.acquire("m2", batches((0, 4)), 10, 500) == []
    assert partition.acquire("m2", batches((0, 4), (5, 6)), 10, 500) == [AcquiredRange(5, 6, 1)]


def test_accept_moves_the_start_offset() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(0, 1, ACCEPT)])
    assert partition.start_offset == 2
    partition.acknowledge("m1", [ack(2, 4, ACCEPT, REJECT, GAP)])
    assert partition.start_offset == 5 and partition.records == {} and partition.end_offset == 5
    assert partition.next_deadline() is None


def test_start_offset_waits_for_the_head() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(2, 4, ACCEPT)])
    assert partition.start_offset == 0
    partition.acknowledge("m1", [ack(0, 1, REJECT)])
    assert partition.start_offset == 5


def test_release_makes_records_available_again_with_their_count() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(1, 2, RELEASE)])
    assert partition.next_fetch_offset() == 1
    got = partition.acquire("m2", batches((0, 4)), 10, 500)
    assert got == [AcquiredRange(1, 2, 2)]
    assert partition.records[1].member == "m2"


def test_release_at_the_delivery_limit_archives() -> None:
    partition, _ = make(delivery_count_limit=2)
    for member in ("m1", "m2"):
        partition.acquire(member, batches((0, 0)), 10, 500)
        partition.acknowledge(member, [ack(0, 0, RELEASE)])
    assert partition.start_offset == 1 and partition.records == {}


def test_acknowledge_needs_the_owner() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m2", [ack(0, 0, ACCEPT)])
    assert caught.value.error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledge_is_all_or_nothing() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(3, 3, ACCEPT)])
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m1", [ack(0, 1, ACCEPT), ack(3, 3, ACCEPT)])  # 3 is no longer acquired
    assert caught.value.error == ErrorCode.INVALID_RECORD_STATE
    assert states(partition)[0] == ("ACQUIRED", 1) and partition.start_offset == 0


def test_acknowledge_past_the_acquired_records_is_an_invalid_request() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    for batch in (ack(5, 6, ACCEPT), ack(3, 6, ACCEPT)):
        with pytest.raises(ShareError) as caught:
            partition.acknowledge("m1", [batch])
        assert caught.value.error == ErrorCode.INVALID_REQUEST


def test_acknowledge_with_nothing_in_flight_is_an_invalid_record_state() -> None:
    partition, _ = make(start=10)
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m1", [ack(10, 10, ACCEPT)])
    assert caught.value.error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledge_below_the_start_offset_is_ignored() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(0, 1, ACCEPT)])
    partition.acknowledge("m1", [ack(0, 1, ACCEPT)])  # already finished: nothing to do, no error
    partition.acknowledge("m1", [ack(0, 2, ACCEPT)])  # 0-1 skipped, 2 accepted
    assert partition.start_offset == 3


def test_acknowledging_twice_is_an_invalid_record_state() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 10, 500)
    partition.acknowledge("m1", [ack(2, 2, ACCEPT)])
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m1", [ack(2, 2, REJECT)])
    assert caught.value.error == ErrorCode.INVALID_RECORD_STATE


def test_unknown_acknowledge_type_is_an_invalid_request() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 0)), 10, 500)
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m1", [ack(0, 0, 7)])
    assert caught.value.error == ErrorCode.INVALID_REQUEST


def test_lock_expiry_releases_and_renew_extends() -> None:
    partition, clock = make()
    partition.acquire("m1", batches((0, 1)), 10, 500)
    clock.now += 600
    partition.acknowledge("m1", [ack(1, 1, RENEW)])
    assert partition.records[1].state == DeliveryState.ACQUIRED
    clock.now += 400
    assert partition.expire_locks()
    assert states(partition) == {0: ("AVAILABLE", 1), 1: ("ACQUIRED", 1)}
    assert partition.next_deadline() == clock.now + 600
    clock.now += 600
    assert partition.expire_locks()
    assert states(partition) == {0: ("AVAILABLE", 1), 1: ("AVAILABLE", 1)}
    assert not partition.expire_locks()
    with pytest.raises(ShareError):
        partition.acknowledge("m1", [ack(0, 0, ACCEPT)])  # the lock is gone


def test_renew_can_be_disabled() -> None:
    partition, _ = make(renew_enabled=False)
    partition.acquire("m1", batches((0, 0)), 10, 500)
    with pytest.raises(ShareError) as caught:
        partition.acknowledge("m1", [ack(0, 0, RENEW)])
    assert caught.value.error == ErrorCode.INVALID_RECORD_STATE


def test_lock_expiry_at_the_delivery_limit_archives() -> None:
    partition, clock = make(delivery_count_limit=2)
    for _ in range(2):
        partition.acquire("m1", batches((0, 0), (1, 1)), 1, 500)
        clock.now += 1000
        partition.expire_locks()
    assert partition.start_offset == 1
    assert states(partition) == {}
    assert partition.next_fetch_offset() == 1


def test_release_member_takes_back_the_delivery() -> None:
    partition, _ = make(delivery_count_limit=2)
    partition.acquire("m1", batches((0, 1)), 10, 500)
    partition.acquire("m2", batches((2, 3)), 10, 500)
    assert partition.release_member("m1")
    assert states(partition) == {0: ("AVAILABLE", 0), 1: ("AVAILABLE", 0), 2: ("ACQUIRED", 1), 3: ("ACQUIRED", 1)}
    assert not partition.release_member("m1")
    assert partition.acquire("m3", batches((0, 3)), 10, 500) == [AcquiredRange(0, 1, 1)]


def test_max_in_flight_stops_new_records_at_a_batch() -> None:
    partition, _ = make(max_in_flight=4)
    got = partition.acquire("m1", batches((0, 2), (3, 5), (6, 8)), 100, 500)
    assert got == [AcquiredRange(0, 5, 1)]  # the second batch starts below the limit and is taken whole
    assert not partition.can_acquire()
    assert partition.acquire("m2", batches((6, 8)), 100, 500) == []
    partition.acknowledge("m1", [ack(0, 5, ACCEPT)])
    assert partition.can_acquire()


def test_max_in_flight_in_record_limit_mode_is_exact() -> None:
    partition, _ = make(max_in_flight=4)
    assert partition.acquire("m1", batches((0, 9)), 100, 500, record_limit=True) == [AcquiredRange(0, 3, 1)]


def test_available_records_in_flight_are_acquired_at_the_limit() -> None:
    partition, _ = make(max_in_flight=4)
    partition.acquire("m1", batches((0, 3)), 100, 500)
    partition.acknowledge("m1", [ack(2, 2, RELEASE)])
    assert partition.can_acquire()
    assert partition.acquire("m2", batches((0, 3), (4, 6)), 100, 500) == [AcquiredRange(2, 2, 2)]


def test_aborted_records_are_archived_not_delivered() -> None:
    partition, _ = make()
    fetched = [FetchedBatch(0, 1), FetchedBatch(2, 3, aborted=True), FetchedBatch(4, 4)]
    assert partition.acquire("m1", fetched, 100, 500) == [AcquiredRange(0, 1, 1), AcquiredRange(4, 4, 1)]
    partition.acknowledge("m1", [ack(0, 1, ACCEPT)])
    assert partition.start_offset == 4


def test_compacted_offsets_count_as_finished() -> None:
    partition, _ = make()
    assert partition.acquire("m1", batches((0, 1), (5, 6)), 100, 500) == [AcquiredRange(0, 1, 1), AcquiredRange(5, 6, 1)]
    partition.acknowledge("m1", [ack(0, 6, ACCEPT)])  # 2-4 hold no record: nothing to acknowledge there
    assert partition.start_offset == 7


def test_log_start_moving_past_records_archives_them() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 100, 500)
    assert partition.advance_to(3)
    assert partition.start_offset == 3 and sorted(partition.records) == [3, 4]
    assert partition.advance_to(10) and partition.end_offset == 10 and partition.records == {}
    assert not partition.advance_to(5)


def test_persisted_state_round_trip() -> None:
    partition, clock = make()
    partition.acquire("m1", batches((0, 9)), 100, 500)
    partition.acknowledge("m1", [ack(0, 1, ACCEPT), ack(3, 3, ACCEPT), ack(4, 5, RELEASE), ack(6, 6, REJECT)])
    state = partition.to_persisted()
    assert state.start_offset == 2
    assert state.batches == (
        StateBatch(2, 2, DeliveryState.AVAILABLE, 1),  # acquired: persisted as available
        StateBatch(3, 3, DeliveryState.ACKNOWLEDGED, 1),
        StateBatch(4, 5, DeliveryState.AVAILABLE, 1),
        StateBatch(6, 6, DeliveryState.ARCHIVED, 1),
        StateBatch(7, 9, DeliveryState.AVAILABLE, 1),
    )
    loaded = SharePartition.from_persisted(state, partition.limits, clock)
    assert loaded.start_offset == 2 and loaded.end_offset == 10
    assert loaded.next_fetch_offset() == 2
    assert loaded.acquire("m2", batches((0, 9)), 100, 500) == [
        AcquiredRange(2, 2, 2), AcquiredRange(4, 5, 2), AcquiredRange(7, 9, 2),
    ]


def test_loaded_gaps_are_available_and_finished_head_is_dropped() -> None:
    clock = FakeClock()
    state = PersistedShareState(1, 0, 10, (
        StateBatch(8, 11, DeliveryState.ACKNOWLEDGED, 1),
        StateBatch(14, 14, DeliveryState.ARCHIVED, 2),
    ))
    partition = SharePartition.from_persisted(state, ShareLimits(), clock)
    assert partition.start_offset == 12 and partition.end_offset == 15
    assert states(partition) == {12: ("AVAILABLE", 0), 13: ("AVAILABLE", 0), 14: ("ARCHIVED", 2)}


def test_take_update_carries_only_the_changes() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4)), 100, 500)
    assert partition.take_update() is None  # an acquisition is not persisted (a lock does not survive a restart)
    partition.acknowledge("m1", [ack(3, 3, ACCEPT)])
    update = partition.take_update()
    assert update is not None and update.start_offset == 0
    assert update.batches == (StateBatch(3, 3, DeliveryState.ACKNOWLEDGED, 1),)
    partition.acknowledge("m1", [ack(0, 2, ACCEPT)])
    update = partition.take_update()
    assert update is not None and update.start_offset == 4 and update.batches == ()  # the start moved past them


def test_describe_shows_runs_with_owner_and_deadline() -> None:
    partition, clock = make()
    partition.acquire("m1", batches((0, 2)), 100, 500)
    partition.acknowledge("m1", [ack(2, 2, ACCEPT)])
    described = partition.describe()
    assert described["start_offset"] == 0 and described["end_offset"] == 3
    assert described["in_flight"] == [
        {"first_offset": 0, "last_offset": 1, "state": "acquired", "delivery_count": 1, "member_id": "m1",
         "lock_deadline_ms": clock.now + 1000},
        {"first_offset": 2, "last_offset": 2, "state": "acknowledged", "delivery_count": 1, "member_id": None,
         "lock_deadline_ms": None},
    ]


# ---- in-flight records as ranges (InFlightBatch): splitting, joining, per-offset rules after a split ----


def ranges_of(partition: SharePartition) -> list[tuple[int, int, str, int, str]]:
    return [(b.first_offset, b.last_offset, b.state.name, b.delivery_count, b.member) for b in partition.batches]


def test_a_fetch_is_one_range_and_a_partial_acknowledgement_splits_it() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 4), (5, 9)), 100, 500)
    assert ranges_of(partition) == [(0, 9, "ACQUIRED", 1, "m1")]
    partition.acknowledge("m1", [ack(3, 5, ACCEPT)])
    assert ranges_of(partition) == [
        (0, 2, "ACQUIRED", 1, "m1"), (3, 5, "ACKNOWLEDGED", 1, ""), (6, 9, "ACQUIRED", 1, "m1"),
    ]


def test_per_offset_types_split_a_range_into_runs_of_one_type() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 5)), 100, 500)
    partition.acknowledge("m1", [ack(1, 4, ACCEPT, ACCEPT, RELEASE, REJECT)])
    assert ranges_of(partition) == [
        (0, 0, "ACQUIRED", 1, "m1"), (1, 2, "ACKNOWLEDGED", 1, ""), (3, 3, "AVAILABLE", 1, ""),
        (4, 4, "ARCHIVED", 1, ""), (5, 5, "ACQUIRED", 1, "m1"),
    ]
    assert partition.take_update().batches == (  # only what changed, in runs of one state and count
        StateBatch(1, 2, DeliveryState.ACKNOWLEDGED, 1), StateBatch(3, 3, DeliveryState.AVAILABLE, 1),
        StateBatch(4, 4, DeliveryState.ARCHIVED, 1),
    )


def test_alike_neighbours_are_joined_again() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 9)), 100, 500)
    partition.acknowledge("m1", [ack(2, 3, RELEASE)])
    partition.acknowledge("m1", [ack(4, 6, RELEASE)])
    partition.acknowledge("m1", [ack(7, 9, RELEASE)])
    assert ranges_of(partition) == [(0, 1, "ACQUIRED", 1, "m1"), (2, 9, "AVAILABLE", 1, "")]
    assert partition.acquire("m2", batches((0, 9)), 100, 500) == [AcquiredRange(2, 9, 2)]
    assert ranges_of(partition) == [(0, 1, "ACQUIRED", 1, "m1"), (2, 9, "ACQUIRED", 2, "m2")]
    partition.acknowledge("m2", [ack(2, 9, ACCEPT)])
    partition.acknowledge("m1", [ack(0, 1, ACCEPT)])
    assert partition.batches == [] and partition.start_offset == 10


def test_a_fetch_takes_the_available_parts_of_a_split_range_with_their_own_counts() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 9)), 100, 500)
    partition.acknowledge("m1", [ack(2, 3, RELEASE), ack(6, 6, RELEASE)])
    got = partition.acquire("m2", batches((0, 9), (10, 11)), 100, 500)
    assert got == [AcquiredRange(2, 3, 2), AcquiredRange(6, 6, 2), AcquiredRange(10, 11, 1)]
    assert ranges_of(partition) == [
        (0, 1, "ACQUIRED", 1, "m1"), (2, 3, "ACQUIRED", 2, "m2"), (4, 5, "ACQUIRED", 1, "m1"),
        (6, 6, "ACQUIRED", 2, "m2"), (7, 9, "ACQUIRED", 1, "m1"), (10, 11, "ACQUIRED", 1, "m2"),
    ]


def test_record_limit_mode_splits_an_available_range() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 9)), 100, 500)
    partition.acknowledge("m1", [ack(0, 9, RELEASE)])
    assert partition.acquire("m2", batches((0, 9)), 4, 500, record_limit=True) == [AcquiredRange(0, 3, 2)]
    assert ranges_of(partition) == [(0, 3, "ACQUIRED", 2, "m2"), (4, 9, "AVAILABLE", 1, "")]
    assert partition.next_fetch_offset() == 4


def test_the_delivery_limit_applies_per_offset_after_a_split() -> None:
    partition, clock = make(delivery_count_limit=2)
    partition.acquire("m1", batches((0, 4)), 100, 500)
    partition.acknowledge("m1", [ack(1, 2, RELEASE)])
    assert partition.acquire("m2", batches((0, 4)), 100, 500) == [AcquiredRange(1, 2, 2)]
    partition.acknowledge("m2", [ack(1, 1, RELEASE)])  # the second delivery of 1 was its last
    clock.now += 1000  # every lock runs out: 0, 3 and 4 had one delivery, 2 had two
    assert partition.expire_locks()
    assert ranges_of(partition) == [(0, 0, "AVAILABLE", 1, ""), (1, 2, "ARCHIVED", 2, ""), (3, 4, "AVAILABLE", 1, "")]
    assert partition.acquire("m3", batches((0, 4)), 100, 500) == [AcquiredRange(0, 0, 2), AcquiredRange(3, 4, 2)]


def test_a_member_released_from_a_split_range_gets_its_deliveries_back() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 5)), 100, 500)
    partition.acknowledge("m1", [ack(2, 3, RELEASE)])
    partition.acquire("m2", batches((0, 5)), 100, 500)
    assert partition.release_member("m1")
    assert ranges_of(partition) == [(0, 1, "AVAILABLE", 0, ""), (2, 3, "ACQUIRED", 2, "m2"), (4, 5, "AVAILABLE", 0, "")]


def test_lock_renewal_of_part_of_a_range_keeps_the_rest_expiring() -> None:
    partition, clock = make()
    partition.acquire("m1", batches((0, 3)), 100, 500)
    clock.now += 600
    partition.acknowledge("m1", [ack(2, 3, RENEW)])
    clock.now += 400
    assert partition.expire_locks()
    assert ranges_of(partition) == [(0, 1, "AVAILABLE", 1, ""), (2, 3, "ACQUIRED", 1, "m1")]
    assert partition.take_update().batches == (StateBatch(0, 1, DeliveryState.AVAILABLE, 1),)


def test_the_log_start_cuts_a_range() -> None:
    partition, _ = make()
    partition.acquire("m1", batches((0, 9)), 100, 500)
    assert partition.advance_to(4)
    assert ranges_of(partition) == [(4, 9, "ACQUIRED", 1, "m1")] and partition.start_offset == 4


def test_loaded_ranges_cover_the_gaps_as_available() -> None:
    clock = FakeClock()
    state = PersistedShareState(1, 0, 0, (
        StateBatch(2, 3, DeliveryState.ACKNOWLEDGED, 1), StateBatch(6, 9, DeliveryState.AVAILABLE, 2),
    ))
    partition = SharePartition.from_persisted(state, ShareLimits(), clock)
    assert ranges_of(partition) == [
        (0, 1, "AVAILABLE", 0, ""), (2, 3, "ACKNOWLEDGED", 1, ""), (4, 5, "AVAILABLE", 0, ""), (6, 9, "AVAILABLE", 2, ""),
    ]
    assert partition.acquire("m1", batches((0, 9)), 100, 500) == [
        AcquiredRange(0, 1, 1), AcquiredRange(4, 5, 1), AcquiredRange(6, 9, 3),
    ]


def test_acquire_takes_no_log_batch_after_the_last_it_needs() -> None:
    partition, _ = make(max_in_flight=6)
    fetched = iter(batches((0, 4), (5, 9), (10, 14)))
    assert partition.acquire("m1", fetched, max_records=3, batch_size=500) == [AcquiredRange(0, 4, 1)]
    assert next(fetched) == FetchedBatch(5, 9)  # MaxRecords reached: the next batch was not read
    fetched = iter(batches((5, 9), (10, 14)))
    assert partition.acquire("m1", fetched, max_records=100, batch_size=500) == [AcquiredRange(5, 9, 1)]
    assert next(fetched) == FetchedBatch(10, 14)  # no room left after the batch that crossed the limit
