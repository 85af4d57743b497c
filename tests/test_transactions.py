"""Issue #4 acceptance: transactional producers of confluent-kafka, kafka-python and aiokafka over real TCP.

Commit and abort interleaved over two partitions, read back by all three clients in both isolation levels; the
markers as they are in the segment files; fencing by a second producer with the same transactional.id; the broker
aborting a transaction that outlived its timeout. Restarts and crashes: test_transactions_recovery.py;
idempotence under forced retries and consume-transform-produce: test_transactions_idempotence.py.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.records import ControlRecordType

from tests.brokerproc import BrokerProcess
from tests.clientutil import confluent_create_topic
from tests.txnutil import (
    CLEANUP_INTERVAL_MS,
    CLIENTS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    check_marker,
    consume,
    data_values,
    is_fenced,
    latest_offsets,
    producer,
    producer_of,
    raw_produce,
    read_segments,
    running_broker,
    transactions_in,
    txn_timeout,
    unique,
    values_by_partition,
    wait_until,
)

PARTITIONS = 2
TRANSACTIONS = 10  # alternately committed and aborted
PER_PARTITION = 10  # records per partition per transaction: 100 committed, 100 aborted in all
TXN_TIMEOUT_MS = 1000


def txn_value(client: str, txn: int, partition: int, i: int) -> bytes:
    outcome = "commit" if txn % 2 == 0 else "abort"
    return f"{client}/{outcome}/txn{txn}/p{partition}/{i}".encode()


def expected_values(client: str, committed_only: bool) -> dict[int, list[bytes]]:
    return {
        p: [txn_value(client, t, p, i) for t in range(TRANSACTIONS) if not (committed_only and t % 2) for i in range(PER_PARTITION)]
        for p in range(PARTITIONS)
    }


def read_all_clients(bootstrap: str, topic: str, expected: dict[str, int]) -> dict[tuple[str, str], dict[int, list]]:
    """Every client's consumer in every isolation level (``expected``: record count per level), in parallel."""
    with ThreadPoolExecutor(len(CLIENTS) * len(expected)) as pool:
        futures = {
            (client, level): pool.submit(consume, client, bootstrap, topic, PARTITIONS, count, level)
            for client in CLIENTS
            for level, count in expected.items()
        }
        return {key: values_by_partition(future.result()) for key, future in futures.items()}


@pytest.mark.parametrize("client", CLIENTS)
def test_commit_and_abort_interleaved(client: str, broker: BrokerProcess, topic_name: str) -> None:
    bootstrap = broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    with producer(client, bootstrap, unique("txn")) as txn:
        for t in range(TRANSACTIONS):
            txn.begin()
            for i in range(PER_PARTITION):
                for p in range(PARTITIONS):
                    txn.send(topic_name, p, txn_value(client, t, p, i))
            if t % 2 == 0:
                txn.commit()
            else:
                txn.flush()  # the aborted records must reach the log (librdkafka purges unsent ones on abort)
                txn.abort()

    # Every client, both isolation levels: exact values, in order, and never a control record.
    results = read_all_clients(bootstrap, topic_name, {"read_committed": 100, "read_uncommitted": 200})
    for (reader, level), got in results.items():
        want = expected_values(client, committed_only=level == "read_committed")
        assert got == want, f"{reader} {level}: {sum(map(len, got.values()))} records, partitions {sorted(got)}"

    # The segment files: per partition, each transaction's records followed by exactly one marker of its outcome.
    for p in range(PARTITIONS):
        batches = read_segments(broker.data_dir, topic_name, p)
        assert data_values(batches) == [txn_value(client, t, p, i) for t in range(TRANSACTIONS) for i in range(PER_PARTITION)]
        producer_id, epoch = producer_of(batches, txn_value(client, 0, p, 0))
        assert producer_id >= 0
        assert all(b.header.producer_id == producer_id for b in batches), "a batch of another producer"
        segments = transactions_in(batches, producer_id)
        assert len(segments) == TRANSACTIONS, f"partition {p}: {len(segments)} transactions/markers"
        for t, (values, marker) in enumerate(segments):
            assert values == [txn_value(client, t, p, i) for i in range(PER_PARTITION)], f"partition {p} txn {t}"
            assert marker is not None, f"partition {p}: no marker after transaction {t}"
            data_epoch = producer_of(batches, values[0])[1]
            check_marker(marker, commit=t % 2 == 0, producer_id=producer_id, producer_epoch=data_epoch)
        assert batches[-1].header.is_control, "the log ends with the last marker"
    ends = latest_offsets(bootstrap, topic_name, PARTITIONS, READ_UNCOMMITTED)
    assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == ends == {
        p: TRANSACTIONS * (PER_PARTITION + 1) for p in range(PARTITIONS)
    }


@pytest.mark.parametrize("client", CLIENTS)
def test_second_producer_fences_the_first(client: str, broker: BrokerProcess, topic_name: str) -> None:
    bootstrap = broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    transactional_id = unique("fence")
    with producer(client, bootstrap, transactional_id) as first:
        first.begin()
        for p in range(PARTITIONS):
            first.send(topic_name, p, b"zombie-%d" % p)
        first.flush()
        with producer(client, bootstrap, transactional_id) as second:  # InitProducerId: aborts first's transaction
            # A zombie write with the old epoch (as a hand-made Produce: each client reports the refusal its
            # own way) is refused with INVALID_PRODUCER_EPOCH, as Kafka does since 2.7, and never reaches the log.
            zombie_id, zombie_epoch = producer_of(read_segments(broker.data_dir, topic_name, 0), b"zombie-0")
            error, _ = raw_produce(bootstrap, topic_name, 0, transactional_id, zombie_id, zombie_epoch, 1, [b"zombie-late"])
            assert error == ErrorCode.INVALID_PRODUCER_EPOCH
            with pytest.raises(Exception) as raised:
                first.commit()
            assert is_fenced(client, raised.value), f"{client} raised {raised.value!r}, not its fenced error"
            second.begin()
            for p in range(PARTITIONS):
                second.send(topic_name, p, b"survivor-%d" % p)
            second.commit()

    got = values_by_partition(consume(client, bootstrap, topic_name, PARTITIONS, 2, "read_committed"))
    assert got == {p: [b"survivor-%d" % p] for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        batches = read_segments(broker.data_dir, topic_name, p)
        first_id, first_epoch = producer_of(batches, b"zombie-%d" % p)
        second_id, second_epoch = producer_of(batches, b"survivor-%d" % p)
        assert first_id == second_id and second_epoch > first_epoch
        [(zombie, abort), (survivor, commit)] = transactions_in(batches, first_id)
        assert zombie == [b"zombie-%d" % p] and survivor == [b"survivor-%d" % p]
        # The fencing abort is written with the bumped epoch, so the old epoch can write nothing more.
        assert first_epoch < abort.header.producer_epoch <= second_epoch
        check_marker(abort, commit=False, producer_id=first_id, producer_epoch=abort.header.producer_epoch)
        check_marker(commit, commit=True, producer_id=second_id, producer_epoch=second_epoch)


@pytest.fixture(scope="module")
def quick_timeouts_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker that looks for timed-out transactions every 200 ms."""
    settings = f"transaction.abort.timed.out.transaction.cleanup.interval.ms={CLEANUP_INTERVAL_MS}"
    with running_broker(tmp_path_factory.mktemp("timeouts") / "data", settings) as broker:
        yield broker


@pytest.mark.parametrize("client", CLIENTS)
def test_timed_out_transaction_is_aborted(client: str, quick_timeouts_broker: BrokerProcess, topic_name: str) -> None:
    broker = quick_timeouts_broker
    bootstrap = broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    slow_id = unique("slow")
    with producer(client, bootstrap, slow_id, **txn_timeout(client, TXN_TIMEOUT_MS)) as slow:
        slow.begin()
        opened = time.monotonic()
        for p in range(PARTITIONS):
            for i in range(3):
                slow.send(topic_name, p, b"left-open-%d-%d" % (p, i))
        slow.flush()  # and then neither commit nor abort
        stable = latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED)
        if time.monotonic() - opened < TXN_TIMEOUT_MS / 1000:  # (a very slow machine may be past the timeout already)
            assert stable == {p: 0 for p in range(PARTITIONS)}, "the LSO must stop at the open transaction"

        # The broker aborts it: a marker lands after the records and the LSO reaches the log end.
        def aborted() -> bool:
            ends = latest_offsets(bootstrap, topic_name, PARTITIONS, READ_UNCOMMITTED)
            return ends == {p: 4 for p in range(PARTITIONS)} and latest_offsets(
                bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == ends

        wait_until(aborted, 10, "the timed-out transaction aborted and the LSO at the log end")
        assert f"aborting transaction of {slow_id}" in broker.log_text()

        with producer(client, bootstrap, unique("later")) as later:
            later.begin()
            for p in range(PARTITIONS):
                later.send(topic_name, p, b"later-%d" % p)
            later.commit()
        got = values_by_partition(consume(client, bootstrap, topic_name, PARTITIONS, 2, "read_committed"))
        assert got == {p: [b"later-%d" % p] for p in range(PARTITIONS)}
        assert len(consume(client, bootstrap, topic_name, PARTITIONS, 8, "read_uncommitted")) == 8

        # The producer whose transaction was aborted is fenced (the abort bumped its epoch).
        with pytest.raises(Exception) as raised:
            slow.commit()
        assert is_fenced(client, raised.value), f"{client} raised {raised.value!r}, not its fenced error"

    for p in range(PARTITIONS):
        batches = read_segments(broker.data_dir, topic_name, p)
        producer_id, epoch = producer_of(batches, b"left-open-%d-0" % p)
        [(values, marker)] = transactions_in(batches, producer_id)
        assert values == [b"left-open-%d-%d" % (p, i) for i in range(3)]
        check_marker(marker, commit=False, producer_id=producer_id, producer_epoch=epoch + 1)


def test_interleaved_producers_abort_one_commit_other(broker: BrokerProcess, topic_name: str) -> None:
    """Two transactional producers write batch by batch into the same partitions; the one that commits first is
    held back by the other's open transaction (the LSO stops at its first record) until that one aborts. Each
    client's read_committed consumer then skips the aborted producer's batches among the committed ones."""
    bootstrap = broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, PARTITIONS)
    rounds = 5
    with producer("confluent", bootstrap, unique("loser"), **{"linger.ms": 0}) as loser, \
            producer("confluent", bootstrap, unique("winner"), **{"linger.ms": 0}) as winner:
        loser.begin()
        winner.begin()
        for r in range(rounds):
            for p in range(PARTITIONS):
                loser.send(topic_name, p, b"loser-%d-%d" % (p, r))
            loser.flush()
            for p in range(PARTITIONS):
                winner.send(topic_name, p, b"winner-%d-%d" % (p, r))
            winner.flush()
        winner.commit()
        # Committed, yet invisible behind the loser's open transaction.
        assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == {p: 0 for p in range(PARTITIONS)}
        assert consume("confluent", bootstrap, topic_name, PARTITIONS, 0, "read_committed") == []
        loser.abort()
    end = 2 * rounds + 2
    assert latest_offsets(bootstrap, topic_name, PARTITIONS, READ_COMMITTED) == {p: end for p in range(PARTITIONS)}
    counts = {"read_committed": PARTITIONS * rounds, "read_uncommitted": 2 * PARTITIONS * rounds}
    results = read_all_clients(bootstrap, topic_name, counts)
    for (reader, level), got in results.items():
        if level == "read_committed":
            assert got == {p: [b"winner-%d-%d" % (p, r) for r in range(rounds)] for p in range(PARTITIONS)}, reader
        else:
            both = {p: [v for r in range(rounds) for v in (b"loser-%d-%d" % (p, r), b"winner-%d-%d" % (p, r))]
                    for p in range(PARTITIONS)}
            assert got == both, reader
    for p in range(PARTITIONS):
        batches = read_segments(broker.data_dir, topic_name, p)
        kinds = [(b.header.producer_id, b.control_type) for b in batches]
        loser_id = producer_of(batches, b"loser-%d-0" % p)[0]
        winner_id = producer_of(batches, b"winner-%d-0" % p)[0]
        assert kinds == [(loser_id, None), (winner_id, None)] * rounds + [
            (winner_id, ControlRecordType.COMMIT), (loser_id, ControlRecordType.ABORT)
        ]
