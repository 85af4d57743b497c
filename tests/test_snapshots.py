"""snapshot(name) / restore(name): a broker put back to a saved state, with real clients before and after, over the
Python API and the control API; and the copy of a data directory they rest on."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minibroker.control_client import ControlClient, ControlError
from minibroker.storage.snapshots import SnapshotError, SnapshotStore
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.txnutil import consume, producer

TOPIC = "orders"


def produce(bootstrap: str, topic: str, *values: bytes) -> list[int]:
    offsets: list[int] = []
    sender = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        sender.produce(topic, value, partition=0, on_delivery=lambda err, msg: offsets.append(msg.offset()))
    assert sender.flush(TIMEOUT_S) == 0
    return offsets


def commit(bootstrap: str, group: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return consumer.committed([TopicPartition(TOPIC, 0)], timeout=TIMEOUT_S)[0].offset
    finally:
        consumer.close()


def transaction(bootstrap: str, value: bytes, *, abort: bool) -> None:
    with producer("confluent", bootstrap, "txn-snap") as txn:
        txn.begin()
        txn.send(TOPIC, 0, value)
        txn.abort() if abort else txn.commit()


def stored(broker: Broker) -> list[str]:
    """The partition's records: their values, and COMMIT or ABORT for a transaction marker."""
    return [record["control"]["type"] if batch["isControl"] else record["value"]
            for batch in broker.records(TOPIC, 0)["batches"] for record in batch["records"]]


def test_restore_brings_back_records_offsets_and_transactions_and_forgets_what_came_after() -> None:
    with Broker(control=True) as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(TOPIC)
        assert produce(bootstrap, TOPIC, b"a", b"b", b"c") == [0, 1, 2]
        transaction(bootstrap, b"t1", abort=False)
        commit(bootstrap, "g", 2)
        saved = broker.snapshot("base")
        assert saved["name"] == "base" and saved["files"] > 0 and saved["bytes"] > 0
        before = stored(broker)

        produce(bootstrap, TOPIC, b"d", b"e")
        transaction(bootstrap, b"t2", abort=True)
        commit(bootstrap, "g", 5)
        broker.create_topic("later")
        produce(bootstrap, "later", b"gone")
        for _ in range(2):  # a snapshot serves any number of restores
            broker.restore("base")
            topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=TIMEOUT_S).topics
            assert "later" not in topics and TOPIC in topics
            assert stored(broker) == before == ["a", "b", "c", "t1", "COMMIT"]
            assert committed(bootstrap, "g") == 2
            assert broker.transaction("txn-snap")["state"] == "CompleteCommit"
            got = consume("confluent", bootstrap, TOPIC, 1, 4, "read_committed", settle=0.2)
            assert [g.value for g in got] == [b"a", b"b", b"c", b"t1"]
            assert produce(bootstrap, TOPIC, b"after") == [5]  # the log goes on from the restored end
            transaction(bootstrap, b"t3", abort=False)  # the transactional id's epoch goes on too
        assert broker.records(TOPIC, 0)["high_watermark"] == 8


def test_leader_epochs_do_not_go_back_and_a_connected_producer_goes_on() -> None:
    with Broker(nodes=3) as broker:
        bootstrap = ",".join(broker.node_addresses.values())
        broker.create_topic(TOPIC, 1, 3)
        sender = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        sender.produce(TOPIC, b"before", partition=0)
        assert sender.flush(TIMEOUT_S) == 0
        broker.snapshot("s")
        leader = broker.core.placements.of(TOPIC, 0).leader
        moved_epoch = broker.move_leader(TOPIC, 0, leader % 3 + 1)
        sender.produce(TOPIC, b"lost", partition=0)
        assert sender.flush(TIMEOUT_S) == 0
        broker.restore("s")
        placed = broker.core.placements.of(TOPIC, 0)
        assert placed.leader == leader and placed.leader_epoch > moved_epoch
        assert broker.core.partition(TOPIC, 0).latest_epoch == placed.leader_epoch
        sender.produce(TOPIC, b"after", partition=0)
        assert sender.flush(TIMEOUT_S) == 0
        got = consume("confluent", bootstrap, TOPIC, 1, 2, "read_uncommitted", settle=0.2)
        assert [g.value for g in got] == [b"before", b"after"]


def test_the_control_api_takes_lists_restores_and_deletes_snapshots() -> None:
    with Broker(control=True) as broker:
        control = ControlClient(broker.control_url)
        broker.create_topic(TOPIC)
        made = control.snapshot("one")
        assert made["name"] == "one" and made["elapsed_ms"] >= 0
        broker.create_topic("extra")
        assert [s["name"] for s in control.snapshots()] == ["one"]
        assert control.restore("one")["name"] == "one" and broker.core.topic("extra") is None
        with pytest.raises(ControlError) as bad:
            control.snapshot("../escape")
        assert bad.value.status == 400 and "letters, digits" in bad.value.message
        with pytest.raises(ControlError) as unknown:
            control.restore("two")
        assert unknown.value.status == 404 and unknown.value.message == "no snapshot 'two': the snapshots are ['one']"
        control.delete_snapshot("one")
        assert control.snapshots() == []
        with pytest.raises(ControlError, match="404: no snapshot 'one': none was taken"):
            control.delete_snapshot("one")


def test_a_snapshot_copies_the_state_but_not_the_lock_what_is_kept_or_half_written_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "t-0").mkdir(parents=True)
    (data / "empty-0").mkdir()
    (data / "t-0" / "00000000000000000000.log").write_bytes(b"batch")
    (data / "t-0" / "00000000000000000000.index").write_bytes(b"")
    (data / "t-0" / "00000000000000000000.log.cleaned").write_bytes(b"half")
    (data / "t-1-delete").mkdir()
    for name, text in {".lock": "", "producer-id-block": "1000\n", "meta.properties": "cluster"}.items():
        (data / name).write_text(text)
    store = SnapshotStore(keep=("producer-id-block",))
    info = store.save("s", data, {"recovery-point-offset-checkpoint": b"0\n0\n"})
    assert (info.files, info.bytes) == (4, len(b"batch") + len("cluster") + 4)
    (data / "t-0" / "00000000000000000000.log").write_bytes(b"batch and more")
    (data / "t-0" / "00000000000000000000.index").write_bytes(b"grown")
    (data / "producer-id-block").write_text("2000\n")
    (data / "u-0").mkdir()
    (data / "u-0" / "x.log").write_bytes(b"later")
    (data / "empty-0").rmdir()
    store.load("s", data)
    found = sorted(str(path.relative_to(data)) for path in data.rglob("*"))
    assert found == [".lock", "empty-0", "meta.properties", "producer-id-block", "recovery-point-offset-checkpoint",
                     "t-0", "t-0/00000000000000000000.index", "t-0/00000000000000000000.log",
                     "t-0/00000000000000000000.log.cleaned", "t-1-delete"]
    assert (data / "t-0" / "00000000000000000000.log").read_bytes() == b"batch"
    assert (data / "t-0" / "00000000000000000000.index").read_bytes() == b""
    assert (data / "producer-id-block").read_text() == "2000\n"
    with pytest.raises(SnapshotError, match="no snapshot 'x': the snapshots are \\['s'\\]"):
        store.load("x", data)
    with pytest.raises(SnapshotError, match="snapshots are kept in memory, up to 8"):
        SnapshotStore(max_bytes=8).save("big", data)
