"""Issue #4 acceptance: transactions across broker restarts and crashes (confluent-kafka over real TCP).

An open transaction survives a restart still open: its records (and everything after them) stay invisible to
read_committed until it ends, by the producer aborting, by a new producer with the same transactional.id, or by
its timeout. A broker killed between the EndTxn decision and the markers finishes the transaction at start-up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.transactions.service import CRASH_POINT_ENV
from protocol.txn_log_records import decode_key, decode_value
from tests.clientutil import confluent_create_topic
from tests.txnutil import (
    CLEANUP_INTERVAL_MS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    check_marker,
    consume,
    latest_offsets,
    producer,
    producer_of,
    read_segments,
    running_broker,
    transactions_in,
    unique,
    values_by_partition,
    wait_until,
)

PARTITIONS = 2
RECORDS = 5  # per partition and transaction
# Reconnect quickly once the broker is back (librdkafka's backoff grows to 10 s while it is down).
QUICK_RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200}
COMPLETE_COMMIT, COMPLETE_ABORT = 4, 5  # Kafka's TransactionState ids in __transaction_state
PREPARE_COMMIT, PREPARE_ABORT = 2, 3


def values(prefix: str, p: int) -> list[bytes]:
    return [f"{prefix}-p{p}-{i}".encode() for i in range(RECORDS)]


def produce_all(txn, topic: str, prefix: str) -> None:
    for p in range(PARTITIONS):
        for value in values(prefix, p):
            txn.send(topic, p, value)


def transaction_states(data_dir: Path, transactional_id: str) -> list[int]:
    """The states of ``transactional_id`` in ``__transaction_state`` (one partition here), oldest first."""
    states = []
    for batch in read_segments(data_dir, "__transaction_state", 0):
        for record in batch.records:
            if record.key is not None and decode_key(record.key) == transactional_id and record.value is not None:
                states.append(decode_value(record.value).status)
    return states


@pytest.mark.parametrize("ending", ["abort", "fence", "timeout"])
def test_open_transaction_survives_restart(ending: str, tmp_path: Path, topic_name: str) -> None:
    # The timeout case starts with a long cleanup interval, so the transaction outlives its timeout unnoticed,
    # and restarts with a short one: the timeout must hold across the restart (the start time is persisted).
    slow_cleanup = "transaction.abort.timed.out.transaction.cleanup.interval.ms=60000"
    fast_cleanup = f"transaction.abort.timed.out.transaction.cleanup.interval.ms={CLEANUP_INTERVAL_MS}"
    timeout_ms = 1000 if ending == "timeout" else 60000
    transactional_id = unique("open")
    with running_broker(tmp_path / "data", slow_cleanup if ending == "timeout" else fast_cleanup) as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, PARTITIONS)
        with producer("confluent", bootstrap, transactional_id, **{"transaction.timeout.ms": timeout_ms}, **QUICK_RECONNECT) as open_txn:
            open_txn.begin()
            produce_all(open_txn, topic_name, "open")
            open_txn.flush()
            with producer("confluent", bootstrap, unique("other")) as other:  # committed after the open records
                other.begin()
                produce_all(other, topic_name, "other")
                other.commit()
            expected_end = {p: 2 * RECORDS + 1 for p in range(PARTITIONS)}

            def check_still_open() -> None:
                assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_UNCOMMITTED) == expected_end
                assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == {p: 0 for p in range(PARTITIONS)}
                assert consume("confluent", bootstrap, topic_name, PARTITIONS, 0, "read_committed") == []

            check_still_open()
            if ending == "timeout":
                broker.settings = [s for s in broker.settings if s != slow_cleanup] + [fast_cleanup]
                broker.stop()
                broker.start()
            else:
                broker.restart()
                check_still_open()
                assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_UNCOMMITTED) == expected_end

            if ending == "abort":
                open_txn.abort()  # the client reconnects to the restarted broker, which knows the transaction
            elif ending == "fence":
                with producer("confluent", bootstrap, transactional_id):  # InitProducerId fences it: abort, epoch bump
                    pass

            def ended() -> bool:
                ends = latest_offsets(bootstrap, topic_name, PARTITIONS, READ_UNCOMMITTED)
                return ends == {p: 2 * RECORDS + 2 for p in range(PARTITIONS)} and latest_offsets(
                    bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == ends

            wait_until(ended, 10, f"the open transaction ended ({ending}) and the LSO at the log end")

        got = values_by_partition(consume("confluent", bootstrap, topic_name, PARTITIONS, PARTITIONS * RECORDS, "read_committed"))
        assert got == {p: values("other", p) for p in range(PARTITIONS)}
        for p in range(PARTITIONS):
            batches = read_segments(broker.data_dir, topic_name, p)
            open_id, open_epoch = producer_of(batches, values("open", p)[0])
            [(aborted, marker)] = transactions_in(batches, open_id)
            assert aborted == values("open", p)
            assert marker.header.base_offset == 2 * RECORDS + 1, "the abort marker is the last batch"
            # The producer's own abort keeps its epoch; a fencing producer or the timeout bumps it.
            marker_epoch = open_epoch if ending == "abort" else open_epoch + 1
            check_marker(marker, commit=False, producer_id=open_id, producer_epoch=marker_epoch)
        assert transaction_states(broker.data_dir, transactional_id)[-1] in (COMPLETE_ABORT, 0)  # 0: Empty after a fence


@pytest.mark.parametrize(("crash_point", "commit"), [("after-prepare", True), ("before-markers", False)])
def test_crash_between_decision_and_markers(crash_point: str, commit: bool, tmp_path: Path, topic_name: str) -> None:
    transactional_id = unique("crash")
    with running_broker(tmp_path / "data", env={CRASH_POINT_ENV: crash_point}) as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, PARTITIONS)
        with producer("confluent", bootstrap, transactional_id, **QUICK_RECONNECT) as txn:
            txn.begin()
            produce_all(txn, topic_name, "crash")
            txn.flush()
            with pytest.raises(Exception):
                # EndTxn: the coordinator writes Prepare*, then the broker SIGKILLs itself before any marker.
                _end_quickly(txn, commit)
            assert broker.proc is not None and broker.proc.wait(10) == -9
            assert f"test crash point {crash_point} reached" in broker.log_text()
            for p in range(PARTITIONS):
                batches = read_segments(broker.data_dir, topic_name, p)
                assert not any(b.header.is_control for b in batches), "a marker written before the crash"
            assert transaction_states(broker.data_dir, transactional_id)[-1] == (PREPARE_COMMIT if commit else PREPARE_ABORT)

            broker.env = {}
            broker.start()  # same port and data: the coordinator finishes the transaction while loading
            outcome = "PrepareCommit" if commit else "PrepareAbort"
            assert f"completing {outcome} of transactional id {transactional_id} found at start-up" in broker.log_text()
            assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == {
                p: RECORDS + 1 for p in range(PARTITIONS)
            }
            for p in range(PARTITIONS):
                batches = read_segments(broker.data_dir, topic_name, p)
                producer_id, epoch = producer_of(batches, values("crash", p)[0])
                [(written, marker)] = transactions_in(batches, producer_id)
                assert written == values("crash", p)
                check_marker(marker, commit=commit, producer_id=producer_id, producer_epoch=epoch)
            assert transaction_states(broker.data_dir, transactional_id)[-1] == (COMPLETE_COMMIT if commit else COMPLETE_ABORT)

            # The client retries its EndTxn against the restarted broker: the same outcome, already complete.
            _end(txn, commit)

        expected = PARTITIONS * RECORDS if commit else 0
        got = values_by_partition(consume("confluent", bootstrap, topic_name, PARTITIONS, expected, "read_committed"))
        assert got == ({p: values("crash", p) for p in range(PARTITIONS)} if commit else {})
        assert len(consume("confluent", bootstrap, topic_name, PARTITIONS, PARTITIONS * RECORDS, "read_uncommitted")) == PARTITIONS * RECORDS


def _end_quickly(txn, commit: bool) -> None:
    """EndTxn with a short API timeout: the broker dies while handling it, so the call fails."""
    call = txn.producer.commit_transaction if commit else txn.producer.abort_transaction
    call(1.0)


def _end(txn, commit: bool) -> None:
    (txn.commit if commit else txn.abort)()
