"""The transaction coordinator's state machine, driven with a fake clock, log and marker writer."""

from __future__ import annotations

from typing import Iterable

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.txn_log_records import TransactionLogValue, decode_key, decode_value, encode_key, encode_value

from minibroker.transactions.coordinator import TransactionCoordinator
from minibroker.transactions.metadata import MAX_EPOCH, TxnState

TP0 = ("orders", 0)
TP1 = ("orders", 1)


class FakeWorld:
    """Records what the coordinator persists and which markers it writes."""

    def __init__(self) -> None:
        self.now = 1_000_000
        self.log: list[tuple[str, TransactionLogValue | None]] = []
        self.markers: list[tuple[int, int, bool, tuple]] = []
        self.next_id = 100

    def write(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        self.log.append((transactional_id, value))

    def write_markers(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool, partitions: Iterable,
    ) -> dict:
        partitions = tuple(sorted(partitions))
        self.markers.append((producer_id, producer_epoch, committed, partitions))
        return {tp: ErrorCode.NONE for tp in partitions}

    def allocate(self) -> int:
        self.next_id += 1
        return self.next_id

    def coordinator(self, crash_hook=None) -> TransactionCoordinator:
        return TransactionCoordinator(self, self, self.allocate, lambda: self.now, 60_000, crash_hook)


@pytest.fixture
def world() -> FakeWorld:
    return FakeWorld()


def exists(tp: tuple[str, int]) -> bool:
    return tp[0] == "orders"


def begin(coordinator: TransactionCoordinator, txn_id: str = "tx") -> tuple[int, int]:
    result = coordinator.init_producer_id(txn_id, 10_000)
    assert result.error == ErrorCode.NONE
    assert coordinator.add_partitions(txn_id, result.producer_id, result.producer_epoch, [TP0, TP1], exists) == {
        TP0: ErrorCode.NONE, TP1: ErrorCode.NONE,
    }
    return result.producer_id, result.producer_epoch


def test_commit_writes_prepare_markers_then_complete(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    pid, epoch = begin(coordinator)
    assert coordinator.end_transaction("tx", pid, epoch, commit=True) == ErrorCode.NONE
    assert world.markers == [(pid, epoch, True, (TP0, TP1))]
    statuses = [value.status for _, value in world.log]
    assert statuses == [TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
    assert world.log[2][1].partitions == {"orders": (0, 1)}
    assert world.log[3][1].partitions == {}
    assert coordinator.end_transaction("tx", pid, epoch, commit=True) == ErrorCode.NONE  # a retried EndTxn
    assert coordinator.end_transaction("tx", pid, epoch, commit=False) == ErrorCode.INVALID_TXN_STATE


def test_abort_and_errors(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    pid, epoch = begin(coordinator)
    assert coordinator.end_transaction("tx", pid + 1, epoch, commit=False) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.end_transaction("tx", pid, epoch - 1, commit=False) == ErrorCode.PRODUCER_FENCED
    assert coordinator.end_transaction("tx", pid, epoch, commit=False) == ErrorCode.NONE
    assert world.markers[-1][2] is False
    assert coordinator.end_transaction("nobody", pid, epoch, commit=True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.end_transaction("tx", pid, epoch, commit=True) == ErrorCode.INVALID_TXN_STATE


def test_unknown_partition_fails_the_whole_add(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    result = coordinator.init_producer_id("tx", 10_000)
    answer = coordinator.add_partitions("tx", result.producer_id, result.producer_epoch, [TP0, ("nope", 0)], exists)
    assert answer == {TP0: ErrorCode.OPERATION_NOT_ATTEMPTED, ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert coordinator.transactions["tx"].state == TxnState.EMPTY


def test_second_producer_fences_the_first_and_aborts_its_transaction(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    pid, epoch = begin(coordinator)
    assert coordinator.init_producer_id("tx", 10_000).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert world.markers == [(pid, epoch + 1, False, (TP0, TP1))]
    retry = coordinator.init_producer_id("tx", 10_000)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, epoch + 2)
    assert coordinator.end_transaction("tx", pid, epoch, commit=True) == ErrorCode.PRODUCER_FENCED
    assert coordinator.add_partitions("tx", pid, epoch, [TP0], exists) == {TP0: ErrorCode.PRODUCER_FENCED}


def test_timed_out_transaction_is_aborted_and_producer_fenced(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    pid, epoch = begin(coordinator)
    world.now += 10_000
    assert coordinator.abort_timed_out() == []
    world.now += 1
    assert coordinator.abort_timed_out() == ["tx"]
    assert world.markers == [(pid, epoch + 1, False, (TP0, TP1))]
    assert coordinator.transactions["tx"].state == TxnState.COMPLETE_ABORT
    assert coordinator.end_transaction("tx", pid, epoch, commit=True) == ErrorCode.PRODUCER_FENCED


def test_invalid_timeout(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    assert coordinator.init_producer_id("tx", 0).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert coordinator.init_producer_id("tx", 60_001).error == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_epoch_exhaustion_gives_a_new_producer_id(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    first = coordinator.init_producer_id("tx", 10_000)
    coordinator.transactions["tx"].producer_epoch = MAX_EPOCH
    again = coordinator.init_producer_id("tx", 10_000)
    assert again.producer_id != first.producer_id and again.producer_epoch == 0


def test_restart_completes_a_decided_transaction(world: FakeWorld) -> None:
    def crash(point: str) -> None:
        if point == "after-prepare":
            raise SystemExit("simulated crash")

    coordinator = world.coordinator(crash)
    pid, epoch = begin(coordinator)
    with pytest.raises(SystemExit):
        coordinator.end_transaction("tx", pid, epoch, commit=True)
    assert world.markers == []
    replayed = [(decode_key(encode_key(i)), decode_value(encode_value(v, 1))) for i, v in world.log]
    restarted = world.coordinator()
    restarted.load(replayed)
    assert restarted.transactions["tx"].state == TxnState.PREPARE_COMMIT
    assert restarted.complete_pending() == ["tx"]
    assert world.markers == [(pid, epoch, True, (TP0, TP1))]
    assert restarted.transactions["tx"].state == TxnState.COMPLETE_COMMIT


def test_log_value_round_trip_and_bytes() -> None:
    value = TransactionLogValue(7, 3, 60_000, TxnState.ONGOING, {"a": (0, 2)}, 11, 10)
    data = encode_value(value, 0)
    assert decode_value(data) == value
    expected = (
        b"\x00\x00" + (7).to_bytes(8, "big") + (3).to_bytes(2, "big") + (60_000).to_bytes(4, "big") + b"\x01"
        + (1).to_bytes(4, "big") + b"\x00\x01a" + (2).to_bytes(4, "big") + (0).to_bytes(4, "big") + (2).to_bytes(4, "big")
        + (11).to_bytes(8, "big") + (10).to_bytes(8, "big")
    )
    assert data == expected
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"
    assert decode_value(None) is None


def test_idle_transactional_ids_expire_with_a_tombstone(world: FakeWorld) -> None:
    coordinator = world.coordinator()
    pid, epoch = begin(coordinator, "finished")
    assert coordinator.end_transaction("finished", pid, epoch, commit=True) == ErrorCode.NONE
    begin(coordinator, "open")
    fresh = coordinator.init_producer_id("fresh", 10_000)
    world.now += 5_000
    assert coordinator.expire_transactional_ids(5_001) == []
    assert coordinator.expire_transactional_ids(5_000) == ["finished", "fresh"]  # "open" has a transaction under way
    assert world.log[-2:] == [("finished", None), ("fresh", None)]
    assert sorted(coordinator.transactions) == ["open"]
    again = coordinator.init_producer_id("fresh", 10_000)
    assert again.error == ErrorCode.NONE and again.producer_id != fresh.producer_id and again.producer_epoch == 0


# ---- transactions V2 (EndTxn v5) ----


def test_v2_end_at_an_exhausted_epoch_moves_to_the_next_producer_id(world: FakeWorld) -> None:
    """TransactionMetadata.prepareAbortOrCommit / prepareComplete: the markers carry the old id at Short.MAX_VALUE, the
    client goes on with a new id at epoch 0, and a retry with the last epoch before the overflow is answered the same."""
    coordinator = world.coordinator()
    pid, _ = begin(coordinator)
    coordinator.transactions["tx"].producer_epoch = MAX_EPOCH
    result = coordinator.end_transaction_v2("tx", pid, MAX_EPOCH, commit=True)
    new_pid = world.next_id
    assert (result.error, result.producer_id, result.producer_epoch) == (ErrorCode.NONE, new_pid, 0)
    assert world.markers == [(pid, MAX_EPOCH + 1, True, (TP0, TP1))]
    prepare, complete = (value for _, value in world.log[-2:])
    assert (prepare.status, prepare.producer_id, prepare.producer_epoch, prepare.next_producer_id) == (
        TxnState.PREPARE_COMMIT, pid, MAX_EPOCH + 1, new_pid)
    assert prepare.client_transaction_version == 2
    assert (complete.status, complete.producer_id, complete.producer_epoch, complete.prev_producer_id,
            complete.next_producer_id) == (TxnState.COMPLETE_COMMIT, new_pid, 0, pid, -1)
    retried = coordinator.end_transaction_v2("tx", pid, MAX_EPOCH, commit=True)
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (ErrorCode.NONE, new_pid, 0)
    assert coordinator.end_transaction_v2("tx", pid, MAX_EPOCH - 1, commit=True).error == ErrorCode.INVALID_PRODUCER_ID_MAPPING

    restarted = world.coordinator()
    restarted.load([(decode_key(encode_key(i)), decode_value(encode_value(v, 1))) for i, v in world.log])
    txn = restarted.transactions["tx"]
    assert (txn.producer_id, txn.producer_epoch, txn.prev_producer_id, txn.client_transaction_version) == (new_pid, 0, pid, 2)


def test_v2_log_value_bytes_have_the_tagged_fields() -> None:
    value = TransactionLogValue(7, 3, 60_000, TxnState.PREPARE_COMMIT, {"a": (0,)}, 11, 10, 7, 9, 2)
    data = encode_value(value, 1)
    assert decode_value(data) == value
    tags = b"\x03" + b"\x00\x08" + (7).to_bytes(8, "big") + b"\x01\x08" + (9).to_bytes(8, "big") + b"\x02\x02\x00\x02"
    assert data == (
        b"\x00\x01" + (7).to_bytes(8, "big") + (3).to_bytes(2, "big") + (60_000).to_bytes(4, "big") + b"\x02"
        + b"\x02" + b"\x02a" + b"\x02" + (0).to_bytes(4, "big") + b"\x00"
        + (11).to_bytes(8, "big") + (10).to_bytes(8, "big") + tags
    )
    empty = TransactionLogValue(7, 3, 60_000, TxnState.EMPTY, {}, 11, -1)
    assert encode_value(empty, 1)[2 + 8 + 2 + 4 + 1] == 0  # null partitions (compact array length 0)
    assert decode_value(encode_value(empty, 0)) == empty


@pytest.mark.parametrize("v2", [False, True])
def test_fencing_at_an_exhausted_epoch_keeps_the_producer_id_of_the_data(world: FakeWorld, v2: bool) -> None:
    """A timed-out transaction at epoch Short.MAX_VALUE - 1 is aborted under the same producer id (its markers must
    close its data's transaction); the producer id moves on afterwards: when the abort completes for a TV2 client, at
    the next InitProducerId for a V1 one."""
    coordinator = world.coordinator()
    init = coordinator.init_producer_id("tx", 10_000)
    pid = init.producer_id
    coordinator.transactions["tx"].producer_epoch = MAX_EPOCH
    added = coordinator.add_partitions("tx", pid, MAX_EPOCH, [TP0], exists, 2 if v2 else 0)
    assert added == {TP0: ErrorCode.NONE}
    world.now += 10_001
    assert coordinator.abort_timed_out() == ["tx"]
    assert world.markers == [(pid, MAX_EPOCH + 1, False, (TP0,))]
    txn = coordinator.transactions["tx"]
    assert txn.state == TxnState.COMPLETE_ABORT
    if v2:
        assert (txn.producer_id, txn.producer_epoch, txn.prev_producer_id) == (world.next_id, 0, pid)
    else:
        assert (txn.producer_id, txn.producer_epoch) == (pid, MAX_EPOCH + 1)
        again = coordinator.init_producer_id("tx", 10_000)
        assert (again.producer_id, again.producer_epoch) == (world.next_id, 0)
