"""Issue #4 acceptance: transactions across broker restarts and crashes (confluent-kafka over real TCP).

An open transaction survives a restart still open: its records (and everything after them) stay invisible to
read_committed until it ends, by the producer aborting, by a new producer with the same transactional.id, or by
its timeout. A broker killed between the EndTxn decision and the markers finishes the transaction at start-up.
Aborted transactions spread over many segments read back right (small fetches, all three clients) before and
after a restart, and an idempotent batch retried after a kill -9 or a restart is recognised as a duplicate.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.txn_log_records import decode_key, decode_value

from minibroker.transactions.service import CRASH_POINT_ENV
from tests.clientutil import confluent_create_topic
from tests.txnutil import (
    CLEANUP_INTERVAL_MS,
    CLIENTS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    check_marker,
    consume,
    data_values,
    latest_offsets,
    producer,
    producer_of,
    raw_init_producer_id,
    raw_produce,
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
# Kafka's TransactionState ids, as in __transaction_state
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT = 0, 1, 2, 3, 4, 5


def values(prefix: str, p: int) -> list[bytes]:
    return [f"{prefix}-p{p}-{i}".encode() for i in range(RECORDS)]


def produce_all(txn, topic: str, prefix: str) -> None:
    for p in range(PARTITIONS):
        for value in values(prefix, p):
            txn.send(topic, p, value)


def transaction_states(data_dir: Path, transactional_id: str) -> list[int]:
    """The states of ``transactional_id`` in ``__transaction_state`` (one partition here), oldest first, repeats
    (an Ongoing record per AddPartitionsToTxn) collapsed."""
    states: list[int] = []
    for batch in read_segments(data_dir, "__transaction_state", 0):
        for record in batch.records:
            if record.key is not None and decode_key(record.key) == transactional_id and record.value is not None:
                status = decode_value(record.value).status
                if not states or states[-1] != status:
                    states.append(status)
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
        config = {"transaction.timeout.ms": timeout_ms, **QUICK_RECONNECT}
        with producer("confluent", bootstrap, transactional_id, **config) as open_txn:
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
        states = transaction_states(broker.data_dir, transactional_id)
        assert states[states.index(ONGOING):] == [ONGOING, PREPARE_ABORT, COMPLETE_ABORT] + ([EMPTY] if ending == "fence" else [])


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
            with pytest.raises(KafkaException) as raised:
                # EndTxn: the coordinator writes Prepare*, then the broker SIGKILLs itself before any marker.
                _end_quickly(txn, commit)
            error = raised.value.args[0]
            # librdkafka: a timed-out commit/abort may be retried with the same call.
            assert error.retriable() and not error.fatal() and not error.txn_requires_abort(), error
            assert broker.proc is not None and broker.proc.wait(10) == -9
            assert f"test crash point {crash_point} reached" in broker.log_text()
            for p in range(PARTITIONS):
                batches = read_segments(broker.data_dir, topic_name, p)
                assert not any(b.header.is_control for b in batches), "a marker written before the crash"
            assert transaction_states(broker.data_dir, transactional_id)[-1] == (PREPARE_COMMIT if commit else PREPARE_ABORT)

            broker.env = {}
            broker.start()  # same port and data: the coordinator finishes the transaction while loading
            outcome = "PrepareCommit" if commit else "PrepareAbort"
            assert f"completing {outcome} of transactional id {transactional_id} found when loading" in broker.log_text()
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
        everything = consume("confluent", bootstrap, topic_name, PARTITIONS, PARTITIONS * RECORDS, "read_uncommitted")
        assert len(everything) == PARTITIONS * RECORDS


def _end_quickly(txn, commit: bool) -> None:
    """EndTxn with a short API timeout: the broker dies while handling it, so the call fails."""
    call = txn.producer.commit_transaction if commit else txn.producer.abort_transaction
    call(1.0)


def _end(txn, commit: bool) -> None:
    (txn.commit if commit else txn.abort)()


# Small fetches for each client: a read_committed fetch then ends inside transactions, so the aborted-transaction
# list of each answer must come from the .txnindex of later segments too.
SMALL_FETCHES: dict[str, dict[str, int]] = {
    "confluent": {"max.partition.fetch.bytes": 150, "fetch.max.bytes": 1000, "message.max.bytes": 1000},
    "kafka-python": {"max_partition_fetch_bytes": 150, "fetch_max_bytes": 150},
    "aiokafka": {"max_partition_fetch_bytes": 150, "fetch_max_bytes": 150},
}


def test_aborted_transactions_across_segments_and_restart(tmp_path: Path, topic_name: str) -> None:
    """One batch per segment (internal.segment.bytes), transactions spanning many segments, alternately committed
    and aborted; every client reads them back with small fetches, before and after a restart (which reloads the
    .txnindex files and the producer state)."""
    transactions, per_partition = 6, 6
    with running_broker(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, PARTITIONS, {"internal.segment.bytes": "100"})
        with producer("confluent", bootstrap, unique("segments"), **{"linger.ms": 0}) as txn:
            for t in range(transactions):
                txn.begin()
                for i in range(per_partition):
                    for p in range(PARTITIONS):
                        txn.send(topic_name, p, b"t%d-p%d-%d" % (t, p, i))
                    if i % 2:
                        txn.flush()  # several batches, each in a segment of its own
                txn.commit() if t % 2 == 0 else txn.abort()
        committed = {p: [b"t%d-p%d-%d" % (t, p, i) for t in range(0, transactions, 2) for i in range(per_partition)]
                     for p in range(PARTITIONS)}
        everything = transactions * per_partition * PARTITIONS
        assert len(list((broker.data_dir / f"{topic_name}-0").glob("*.log"))) > transactions

        def read_back() -> None:
            expected = {"read_committed": everything // 2, "read_uncommitted": everything}
            with ThreadPoolExecutor(len(CLIENTS) * len(expected)) as pool:
                futures = {
                    (client, level): pool.submit(
                        consume, client, bootstrap, topic_name, PARTITIONS, count, level, 0.2, **SMALL_FETCHES[client]
                    )
                    for client in CLIENTS
                    for level, count in expected.items()
                }
                for (client, level), future in futures.items():
                    got = future.result()
                    if level == "read_committed":
                        assert values_by_partition(got) == committed, f"{client} {level}"
                    else:
                        assert len(got) == everything and len({g.value for g in got}) == everything, f"{client} {level}"

        read_back()
        broker.restart()
        read_back()


@pytest.mark.parametrize("stop", ["kill", "restart"])
def test_idempotent_retry_after_restart_is_a_duplicate(stop: str, tmp_path: Path, topic_name: str) -> None:
    """A batch whose answer was lost in a broker crash (or restart) is sent again: the restarted broker has rebuilt
    the producer's state (from the log after a kill -9, from the snapshot written at shutdown after a restart) and
    answers with the offsets of the stored copy instead of storing it twice."""
    with running_broker(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, 1)
        producer_id, epoch = raw_init_producer_id(bootstrap)
        first = [b"first-%d" % i for i in range(5)]
        second = [b"second-%d" % i for i in range(5)]
        assert raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 0, first) == (ErrorCode.NONE, 0)
        assert raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 5, second) == (ErrorCode.NONE, 5)
        if stop == "kill":
            broker.kill()
            broker.start()
        else:
            broker.restart()
        # The last batch again (the client never heard of it): the stored copy's offset, nothing appended.
        assert raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 5, second) == (ErrorCode.NONE, 5)
        if stop == "kill":  # the state replayed from the log knows the earlier batch too
            assert raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 0, first) == (ErrorCode.NONE, 0)
        # A gap in the sequence is refused; the next batch in sequence goes on.
        error, _ = raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 11, [b"gap"])
        assert error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert raw_produce(bootstrap, topic_name, 0, None, producer_id, epoch, 10, [b"third"]) == (ErrorCode.NONE, 10)
        assert data_values(read_segments(broker.data_dir, topic_name, 0)) == first + second + [b"third"]
