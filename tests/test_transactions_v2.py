"""Transactions V2 (KIP-890 part 2) over raw requests, as the Java producer speaks them with transaction.version 2:
Produce v12 adds its partition to the transaction itself (no AddPartitionsToTxn), TxnOffsetCommit v5 its group's
(no AddOffsetsToTxn), and every EndTxn v5 bumps the producer epoch, the markers carrying the bumped epoch. A
librdkafka transactional producer (the classic protocol) works on the same broker at the same time."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response
from minibroker.protocol.records import RecordInput, build_batch
from minibroker.protocol.txn_log_records import decode_key

from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection, confluent_create_topic
from tests.txnutil import (
    check_marker,
    consume,
    producer,
    raw_offset_fetch,
    read_segments,
    running_broker,
    transactions_in,
    unique,
    values_by_partition,
)

PRODUCE, FIND_COORDINATOR, INIT_PRODUCER_ID, END_TXN, TXN_OFFSET_COMMIT, UPDATE_FEATURES, DESCRIBE_TXNS = (
    0, 10, 22, 26, 28, 57, 65)
PRODUCE_V2, END_TXN_V2, TXN_OFFSET_COMMIT_V2 = 12, 5, 5
NONE = ErrorCode.NONE


class V2Producer:
    """A transactions-V2 producer made of raw requests: it tracks its producer id, epoch and per-partition
    sequences as the Java TransactionManager does (sequences restart at 0 with every epoch)."""

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        self.conn = RawConnection(bootstrap, timeout=10)
        self.transactional_id = transactional_id
        self.producer_id = self.epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        return decode_response(api_key, version, self.conn.request(api_key, version, body))[1]

    def init(self) -> None:
        answer = self.call(INIT_PRODUCER_ID, 4, {
            "transactional_id": self.transactional_id, "transaction_timeout_ms": 60_000,
            "producer_id": -1, "producer_epoch": -1,
        })
        assert answer["error_code"] == NONE
        self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]

    def produce(self, topic: str, partition: int, *values: bytes, epoch: int | None = None) -> int:
        """One transactional batch (Produce v12); the partition's error code."""
        epoch = self.epoch if epoch is None else epoch
        sequence = self.sequences.get((topic, partition), 0)
        batch = build_batch([RecordInput(None, v) for v in values], producer_id=self.producer_id, producer_epoch=epoch,
                            base_sequence=sequence, is_transactional=True)
        answer = self.call(PRODUCE, PRODUCE_V2, {
            "transactional_id": self.transactional_id, "acks": -1, "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
        })
        [item] = answer["responses"][0]["partition_responses"]
        if item["error_code"] == NONE:
            self.sequences[(topic, partition)] = sequence + len(values)
        return item["error_code"]

    def end(self, commit: bool, epoch: int | None = None, producer_id: int | None = None) -> dict[str, Any]:
        """EndTxn v5; on success the producer goes on with the id and epoch it answers, sequences from 0."""
        answer = self.call(END_TXN, END_TXN_V2, {
            "transactional_id": self.transactional_id, "committed": commit,
            "producer_id": self.producer_id if producer_id is None else producer_id,
            "producer_epoch": self.epoch if epoch is None else epoch,
        })
        if answer["error_code"] == NONE:
            self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]
            self.sequences.clear()
        return answer

    def commit_offsets(self, group_id: str, topic: str, offset: int, version: int = TXN_OFFSET_COMMIT_V2) -> int:
        answer = self.call(TXN_OFFSET_COMMIT, version, {
            "transactional_id": self.transactional_id, "group_id": group_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1, "committed_metadata": ""},
            ]}],
        })
        return answer["topics"][0]["partitions"][0]["error_code"]

    def describe(self) -> dict[str, Any]:
        [state] = self.call(DESCRIBE_TXNS, 0, {"transactional_ids": [self.transactional_id]})["transaction_states"]
        return state

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def v2_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path / "data") as broker:
        yield broker


@pytest.fixture
def v2(v2_broker: BrokerProcess) -> Iterator[V2Producer]:
    client = V2Producer(v2_broker.bootstrap, unique("v2"))
    try:
        client.init()
        yield client
    finally:
        client.close()


def markers_of(data_dir: Path, topic: str, partition: int, producer_id: int) -> list[tuple[int, int, bool]]:
    """(producer id, epoch, committed) of the producer's markers in the stored log, in order."""
    found = []
    for values, marker in transactions_in(read_segments(data_dir, topic, partition), producer_id):
        assert marker is not None, f"{topic}-{partition}: records {values} have no marker"
        found.append((marker.header.producer_id, marker.header.producer_epoch, marker.control_type == 1))
    return found


def test_produce_v12_and_end_txn_v5_bump_the_epoch_per_transaction(
    v2_broker: BrokerProcess, v2: V2Producer, topic_name: str,
) -> None:
    confluent_create_topic(v2_broker.bootstrap, topic_name, 2)
    first = v2.epoch
    assert v2.produce(topic_name, 0, b"a1") == NONE  # no AddPartitionsToTxn before it
    assert v2.produce(topic_name, 1, b"a2") == NONE
    assert v2.produce(topic_name, 0, b"a3") == NONE
    state = v2.describe()
    assert state["transaction_state"] == "Ongoing"
    assert state["topics"] == [{"topic": topic_name, "partitions": [0, 1]}]
    committed = v2.end(commit=True)
    assert (committed["error_code"], committed["producer_id"], committed["producer_epoch"]) == (NONE, v2.producer_id, first + 1)

    assert v2.produce(topic_name, 1, b"b1") == NONE  # the new epoch, sequence 0
    aborted = v2.end(commit=False)
    assert (aborted["error_code"], aborted["producer_epoch"]) == (NONE, first + 2)

    assert v2.produce(topic_name, 0, b"c1") == NONE
    assert v2.end(commit=True)["producer_epoch"] == first + 3
    assert v2.describe()["transaction_state"] == "CompleteCommit"

    data_dir = v2_broker.data_dir
    pid = v2.producer_id
    assert markers_of(data_dir, topic_name, 0, pid) == [(pid, first + 1, True), (pid, first + 3, True)]
    assert markers_of(data_dir, topic_name, 1, pid) == [(pid, first + 1, True), (pid, first + 2, False)]
    batches = read_segments(data_dir, topic_name, 1)
    check_marker(batches[-1], commit=False, producer_id=pid, producer_epoch=first + 2)

    got = consume("confluent", v2_broker.bootstrap, topic_name, 2, 4, "read_committed")
    assert values_by_partition(got) == {0: [b"a1", b"a3", b"c1"], 1: [b"a2"]}


def test_retries_and_stale_epochs_get_kafkas_answers(v2_broker: BrokerProcess, v2: V2Producer, topic_name: str) -> None:
    confluent_create_topic(v2_broker.bootstrap, topic_name, 1)
    epoch = v2.epoch
    assert v2.produce(topic_name, 0, b"x") == NONE
    assert v2.end(commit=True)["producer_epoch"] == epoch + 1

    retried = v2.end(commit=True, epoch=epoch)  # the answer was lost: the retry of the completed commit succeeds
    assert (retried["error_code"], retried["producer_id"], retried["producer_epoch"]) == (NONE, v2.producer_id, epoch + 1)
    assert v2.end(commit=False, epoch=epoch)["error_code"] == ErrorCode.INVALID_TXN_STATE  # a retry, but not of that
    assert v2.end(commit=True, epoch=epoch - 1)["error_code"] == ErrorCode.PRODUCER_FENCED
    assert v2.end(commit=True, epoch=epoch + 2)["error_code"] == ErrorCode.PRODUCER_FENCED
    assert v2.end(commit=True)["error_code"] == ErrorCode.INVALID_TXN_STATE  # nothing to commit at this epoch
    wrong = v2.end(commit=True, producer_id=v2.producer_id + 1000)
    assert (wrong["error_code"], wrong["producer_id"], wrong["producer_epoch"]) == (ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1)

    # A zombie of the first transaction: its epoch is below the marker's, the partition refuses it.
    assert v2.produce(topic_name, 0, b"late", epoch=epoch) == ErrorCode.INVALID_PRODUCER_EPOCH
    # An abort with nothing added is allowed under V2 and bumps the epoch too.
    assert v2.end(commit=False)["producer_epoch"] == epoch + 2
    assert v2.describe()["transaction_state"] == "CompleteAbort"
    assert v2.end(commit=False, epoch=epoch + 1)["producer_epoch"] == epoch + 2  # its retry

    # A new producer with the same transactional id fences this one.
    other = V2Producer(v2_broker.bootstrap, v2.transactional_id)
    try:
        other.init()
        assert other.epoch == epoch + 3
        assert v2.produce(topic_name, 0, b"fenced") == ErrorCode.INVALID_PRODUCER_EPOCH
        assert v2.end(commit=False)["error_code"] == ErrorCode.PRODUCER_FENCED
        assert other.produce(topic_name, 0, b"y") == NONE
        assert other.end(commit=True)["producer_epoch"] == epoch + 4
    finally:
        other.close()
    got = consume("confluent", v2_broker.bootstrap, topic_name, 1, 2, "read_committed")
    assert values_by_partition(got) == {0: [b"x", b"y"]}


def test_txn_offset_commit_v5_adds_the_group_itself(v2_broker: BrokerProcess, v2: V2Producer, topic_name: str) -> None:
    bootstrap = v2_broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, 1)
    group_id = unique("v2-group")
    found = v2.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group_id]})  # as the client does first
    assert found["coordinators"][0]["error_code"] == NONE
    assert v2.commit_offsets(group_id, topic_name, 5, version=3) == ErrorCode.INVALID_TXN_STATE  # v3: not added
    assert v2.commit_offsets(group_id, topic_name, 5, version=4) == ErrorCode.TRANSACTION_ABORTABLE  # v4: the same
    assert v2.commit_offsets(group_id, topic_name, 5) == NONE  # v5: no AddOffsetsToTxn
    assert v2.describe()["transaction_state"] == "Ongoing"
    assert raw_offset_fetch(bootstrap, group_id, topic_name, 0, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    v2.end(commit=False)
    assert raw_offset_fetch(bootstrap, group_id, topic_name, 0, require_stable=True) == (NONE, -1)

    assert v2.produce(topic_name, 0, b"m") == NONE
    assert v2.commit_offsets(group_id, topic_name, 8) == NONE
    stale = v2.epoch
    v2.end(commit=True)
    assert raw_offset_fetch(bootstrap, group_id, topic_name, 0, require_stable=True) == (NONE, 8)
    v2.epoch = stale  # a zombie of the committed transaction
    assert v2.commit_offsets(group_id, topic_name, 9) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_transaction_log_records_carry_the_v2_fields(v2_broker: BrokerProcess, v2: V2Producer, topic_name: str) -> None:
    """TransactionLogValue v1 as Kafka writes it with transaction.version 2: PreviousProducerId, and the client's
    transaction version 2 once the client ends a transaction with EndTxn v5; `minibroker dump` shows them."""
    confluent_create_topic(v2_broker.bootstrap, topic_name, 1)
    assert v2.produce(topic_name, 0, b"d") == NONE
    v2.end(commit=True)
    result = subprocess.run(
        [sys.executable, "-m", "minibroker", "dump", "--json", "--print-data", str(v2_broker.data_dir / "__transaction_state-0")],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    values = [
        record["decoded"]["value"] for line in result.stdout.splitlines()
        for record in json.loads(line).get("records", [])
        if record["decoded"]["key"]["data"]["transactionalId"] == v2.transactional_id
    ]
    statuses = [value["data"]["transactionStatus"] for value in values]
    assert statuses == [0, 1, 2, 4]  # Empty, Ongoing, PrepareCommit, CompleteCommit
    assert {value["version"] for value in values} == {1}
    assert all(value["data"]["previousProducerId"] == v2.producer_id for value in values)
    assert [value["data"].get("clientTransactionVersion", 0) for value in values] == [0, 2, 2, 2]
    assert values[0]["data"]["transactionPartitions"] is None  # Empty: null, as Kafka writes it
    assert [value["data"]["producerEpoch"] for value in values] == [v2.epoch - 1, v2.epoch - 1, v2.epoch, v2.epoch]


def test_a_librdkafka_transaction_alongside_a_v2_producer(v2_broker: BrokerProcess, v2: V2Producer, topic_name: str) -> None:
    """The classic protocol (AddPartitionsToTxn, EndTxn v1) and V2 on the same partitions at the same time."""
    bootstrap = v2_broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, 2)
    errors: list[BaseException] = []

    def classic() -> None:
        try:
            with producer("confluent", bootstrap, unique("classic")) as txn:
                for round_ in range(3):
                    txn.begin()
                    txn.send_many(topic_name, [(p, f"classic-{round_}-{p}".encode()) for p in (0, 1)])
                    txn.commit() if round_ != 1 else txn.abort()
        except BaseException as exc:  # noqa: BLE001  (reported by the main thread)
            errors.append(exc)

    thread = threading.Thread(target=classic)
    thread.start()
    try:
        for round_ in range(3):
            for partition in (0, 1):
                assert v2.produce(topic_name, partition, f"v2-{round_}-{partition}".encode()) == NONE
            assert v2.end(commit=round_ != 2)["error_code"] == NONE
    finally:
        thread.join(60)
    assert not errors, errors
    got = consume("confluent", bootstrap, topic_name, 2, 8, "read_committed")
    expected = {f"{who}-{r}-{p}".encode() for who in ("classic", "v2") for r in (0, 1, 2) for p in (0, 1)}
    expected -= {f"classic-1-{p}".encode() for p in (0, 1)} | {f"v2-2-{p}".encode() for p in (0, 1)}
    assert sorted(g.value for g in got) == sorted(expected)


def test_the_request_version_decides_whatever_level_is_finalized(
    v2_broker: BrokerProcess, v2: V2Producer, topic_name: str,
) -> None:
    """transaction.version tells clients what to use (the Java producer uses V2 only at 2): with it lowered to 0 the
    broker still serves Produce v12 and EndTxn v5 as V2, as Kafka does, and writes __transaction_state values v0."""
    confluent_create_topic(v2_broker.bootstrap, topic_name, 1)
    lowered = v2.call(UPDATE_FEATURES, 1, {"timeout_ms": 5000, "validate_only": False, "feature_updates": [
        {"feature": "transaction.version", "max_version_level": 0, "upgrade_type": 2}]})
    assert lowered["error_code"] == NONE
    epoch = v2.epoch
    assert v2.produce(topic_name, 0, b"v") == NONE
    assert v2.end(commit=True)["producer_epoch"] == epoch + 1
    assert markers_of(v2_broker.data_dir, topic_name, 0, v2.producer_id) == [(v2.producer_id, epoch + 1, True)]
    versions = [
        int.from_bytes(record.value[:2], "big")
        for batch in read_segments(v2_broker.data_dir, "__transaction_state", 0) for record in batch.records
        if decode_key(record.key) == v2.transactional_id
    ]
    assert versions == [1, 0, 0, 0], "InitProducerId's value before the change, Ongoing, PrepareCommit, CompleteCommit after"
