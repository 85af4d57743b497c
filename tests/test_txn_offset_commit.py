"""Transactional offset commits (TxnOffsetCommit) across broker restarts and crashes, with confluent-kafka.

Offsets sent with send_offsets_to_transaction sit in __consumer_offsets inside the transaction; at start-up the
group coordinator replays them honouring the markers after them: a committed transaction's offsets are the group's
committed offsets after the restart, an open one's stay pending (invisible, UNSTABLE_OFFSET_COMMIT to
require_stable) until it ends, and a commit the broker crashed in the middle of is completed at start-up.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.transactions.service import CRASH_POINT_ENV
from tests.brokerproc import BrokerProcess
from tests.clientutil import RawConnection, confluent_consumer, confluent_create_topic
from tests.txnutil import OP_TIMEOUT_S, producer, raw_offset_fetch, running_broker, unique

QUICK_RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200, "retry.backoff.max.ms": 200}
NONE = ErrorCode.NONE
UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT


def fetched(bootstrap: str, group_id: str, topic: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """OffsetFetch of partition 0 without and with require_stable: ((error, offset), (error, offset))."""
    return (
        raw_offset_fetch(bootstrap, group_id, topic, 0, require_stable=False),
        raw_offset_fetch(bootstrap, group_id, topic, 0, require_stable=True),
    )


@contextlib.contextmanager
def group_consumer(bootstrap: str, group_id: str) -> Iterator[Consumer]:
    """A consumer of the group that never joins it: only its group metadata is sent with the offsets."""
    consumer = confluent_consumer(bootstrap, **{"group.id": group_id})
    try:
        yield consumer
    finally:
        consumer.close()


def client_committed(bootstrap: str, group_id: str, topic: str) -> int:
    """The committed offset as a read_committed librdkafka consumer (require_stable) gets it."""
    consumer = confluent_consumer(bootstrap, **{"group.id": group_id, "isolation.level": "read_committed"})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=OP_TIMEOUT_S)
    finally:
        consumer.close()
    return tp.offset


@pytest.mark.parametrize("stop", ["restart", "kill"])
def test_committed_and_open_transactional_offsets_across_restart(stop: str, tmp_path: Path, topic_name: str) -> None:
    group_id = unique("txn-group")
    with running_broker(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, 1)
        with group_consumer(bootstrap, group_id) as consumer, producer("confluent", bootstrap, unique("done")) as done:
            done.begin()
            done.send_offsets(topic_name, 0, 3, group_id, consumer)
            done.commit()
        with group_consumer(bootstrap, group_id) as consumer, \
                producer("confluent", bootstrap, unique("open"), **QUICK_RECONNECT) as still_open:
            still_open.begin()
            still_open.send_offsets(topic_name, 0, 7, group_id, consumer)
            assert fetched(bootstrap, group_id, topic_name) == ((NONE, 3), (UNSTABLE, -1))

            if stop == "kill":
                broker.kill()
                broker.start()
            else:
                broker.restart()
            assert fetched(bootstrap, group_id, topic_name) == ((NONE, 3), (UNSTABLE, -1))

            still_open.commit()  # the client reconnects; the marker reaches the loaded group coordinator
            assert fetched(bootstrap, group_id, topic_name) == ((NONE, 7), (NONE, 7))
        assert client_committed(bootstrap, group_id, topic_name) == 7


def test_commit_interrupted_by_a_crash_is_completed_at_start_up(tmp_path: Path, topic_name: str) -> None:
    """The broker dies after writing PrepareCommit, before any marker: at start-up the transaction coordinator writes
    the COMMIT marker to __consumer_offsets, and the group coordinator's state must include it."""
    group_id, transactional_id = unique("txn-group"), unique("crash")
    with running_broker(tmp_path / "data", env={CRASH_POINT_ENV: "before-markers"}) as broker:
        bootstrap = broker.bootstrap
        confluent_create_topic(bootstrap, topic_name, 1)
        with group_consumer(bootstrap, group_id) as consumer, \
                producer("confluent", bootstrap, transactional_id, **QUICK_RECONNECT) as txn:
            txn.begin()
            txn.send_offsets(topic_name, 0, 5, group_id, consumer)
            with pytest.raises(KafkaException):
                txn.producer.commit_transaction(1.0)
            assert broker.proc is not None and broker.proc.wait(10) == -9

            broker.env = {}
            broker.start()
            assert f"completing PrepareCommit of transactional id {transactional_id} found when loading" in broker.log_text()
            assert fetched(bootstrap, group_id, topic_name) == ((NONE, 5), (NONE, 5))
            txn.commit()  # the client's retry: already complete
        assert client_committed(bootstrap, group_id, topic_name) == 5


# ---- TxnOffsetCommit's answers, with hand-made requests ----

INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 25, 26, 28


def call(conn: RawConnection, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    _, response = decode_response(api_key, version, conn.request(api_key, version, body))
    return response


def test_txn_offset_commit_errors(broker: BrokerProcess, topic_name: str) -> None:
    bootstrap = broker.bootstrap
    confluent_create_topic(bootstrap, topic_name, 1)
    transactional_id, group_id = unique("raw"), unique("raw-group")
    with RawConnection(bootstrap, timeout=10) as conn:
        init = call(conn, INIT_PRODUCER_ID, 1, {"transactional_id": transactional_id, "transaction_timeout_ms": 60000})
        producer_id, epoch = init["producer_id"], init["producer_epoch"]
        ids = {"transactional_id": transactional_id, "producer_id": producer_id, "producer_epoch": epoch}

        def commit(version: int, *partitions: tuple[str, int], **fields: Any) -> dict[tuple[str, int], int]:
            topics = [
                {"name": t, "partitions": [{"partition_index": p, "committed_offset": 3, "committed_metadata": ""}]}
                for t, p in partitions or [(topic_name, 0)]
            ]
            answer = call(conn, TXN_OFFSET_COMMIT, version, {**ids, "group_id": group_id, "topics": topics, **fields})
            return {(t["name"], p["partition_index"]): p["error_code"] for t in answer["topics"] for p in t["partitions"]}

        mine = (topic_name, 0)
        assert commit(3) == {mine: ErrorCode.INVALID_TXN_STATE}, "the group's partition is not in the transaction yet"
        added = call(conn, ADD_OFFSETS_TO_TXN, 1, {**ids, "group_id": group_id})
        assert added["error_code"] == ErrorCode.NONE
        assert commit(3, producer_epoch=epoch + 1) == {mine: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert commit(3, group_id="") == {mine: ErrorCode.INVALID_GROUP_ID}
        assert commit(3, mine, (topic_name, 1), ("no-such-topic", 0)) == {
            mine: ErrorCode.NONE, (topic_name, 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert commit(3, member_id="ghost", generation_id=1) == {mine: ErrorCode.UNKNOWN_MEMBER_ID}
        assert commit(0) == {mine: ErrorCode.NONE}  # v0: no group metadata
        assert fetched(bootstrap, group_id, topic_name) == ((NONE, -1), (UNSTABLE, -1))
        assert call(conn, END_TXN, 1, {**ids, "committed": True})["error_code"] == ErrorCode.NONE
        assert fetched(bootstrap, group_id, topic_name) == ((NONE, 3), (NONE, 3))
        assert commit(3) == {mine: ErrorCode.INVALID_TXN_STATE}, "the transaction has ended"
