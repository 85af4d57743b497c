"""Observation for assertions (GET /v1/partitions/.../records, /v1/groups/G, /v1/transactions/ID, POST /v1/wait,
and the same as ``Broker`` methods): what clients wrote and committed, seen from any language."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.test_control import call
from tests.txnutil import make_producer


def test_records_groups_and_transactions_as_clients_left_them(topic_name: str) -> None:
    with Broker(control=True) as broker:
        url = broker.control_url
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(TIMEOUT_S)
        producer = make_producer("confluent", broker.bootstrap_servers, f"txn-{topic_name}")
        try:
            producer.init()
            producer.begin()
            producer.send(topic_name, 0, b"kept", key=b"k")
            producer.commit()
            producer.begin()
            producer.send(topic_name, 0, "dropped \u2603".encode())
            producer.flush()  # in the log, then aborted
            producer.abort()
        finally:
            producer.close()

        status, seen = call(f"{url}/v1/partitions/{topic_name}/0/records")
        assert status == 200 and seen["high_watermark"] == 4 and seen["last_stable_offset"] == 4
        flags = [(b["isTransactional"], b["isControl"]) for b in seen["batches"]]
        assert flags == [(True, False), (True, True), (True, False), (True, True)]
        assert [r["value"] for r in seen["batches"][0]["records"]] == ["kept"]
        assert seen["batches"][2]["records"][0]["value"] == "dropped \u2603"
        assert [b["records"][0]["control"]["type"] for b in seen["batches"] if b["isControl"]] == ["COMMIT", "ABORT"]
        assert broker.records(topic_name, 0, offset=2, limit=1)["batches"][0]["baseOffset"] == 2

        status, txn = call(f"{url}/v1/transactions/txn-{topic_name}")
        assert status == 200 and txn["state"] == "CompleteAbort" and txn["partitions"] == []
        assert call(f"{url}/v1/transactions/nobody")[0] == 404
        assert call(f"{url}/v1/partitions/{topic_name}/9/records")[0] == 404

        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "watched",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic_name])
        stop = threading.Event()

        def consume() -> None:
            while not stop.is_set():
                message = consumer.poll(0.1)
                if message is not None and message.error() is None:
                    consumer.commit(message=message, asynchronous=False)

        poller = threading.Thread(target=consume)
        poller.start()
        try:
            assert call(f"{url}/v1/wait", "POST", {"group_stable": "watched", "timeout_ms": 20_000})[0] == 200
            broker.wait_for(high_watermark=(topic_name, 0, 4))
            status, group = call(f"{url}/v1/groups/watched")
            assert status == 200 and group["group"]["group_state"] == "Stable" and len(group["group"]["members"]) == 1
        finally:
            stop.set()
            poller.join(TIMEOUT_S)
            consumer.close()
        status, answer = call(f"{url}/v1/wait", "POST", {"high_watermark": {"topic": topic_name, "partition": 0,
                                                                            "at_least": 99}, "timeout_ms": 50})
        assert status == 408 and "timed out after 50 ms" in answer["error"]
        with pytest.raises(TimeoutError):
            broker.wait_for(group_stable="never-joined", timeout_ms=50)
