"""Injected faults (POST /v1/faults, ``Broker.add_fault``): real clients meet errors, delays, dropped connections,
stalls and throttling on the requests a fault matches, and carry on as they would against a misbehaving Kafka."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AIOTopicPartition
from aiokafka.structs import OffsetAndMetadata
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.frames import decode_response

from minibroker.control.faults import FaultSpecError
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, RawConnection
from tests.grouputil import wait_until
from tests.numbered_producer import NumberedProducer

METADATA, API_VERSIONS = 3, 18
METADATA_BODY = {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}


def create_topic(broker: Broker, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(TIMEOUT_S)


def metadata(address: str, timeout: float = 5.0) -> dict[str, Any]:
    with RawConnection(address, timeout=timeout) as conn:
        return decode_response(METADATA, 9, conn.request(METADATA, 9, METADATA_BODY))[1]


@pytest.mark.parametrize(("spec", "message"), [
    ({"api": "Produc", "error": "NOT_LEADER_OR_FOLLOWER"}, "unknown API 'Produc'"),
    ({"error": 6}, "'api' is required"),
    ({"api": "Produce", "error": "NOT_A_KAFKA_ERROR"}, "a Kafka error name"),
    ({"api": "Produce", "action": "explode"}, "action 'explode'"),
    ({"api": "Produce", "error": 6, "versions": [20, 30]}, "never match: this broker serves versions 3-"),
    ({"api": "Produce", "error": 6, "partition": 0}, "a partition needs its topic"),
    ({"api": "Produce", "error": 6, "node": 7}, "no node 7"),
    ({"api": "Produce", "error": 6, "count": 0}, "count must be at least 1"),
    ({"api": "Produce", "error": 6, "probability": 1.5}, "probability must be a number above 0"),
    ({"api": "Produce", "action": "delay"}, "a delay needs delay_ms"),
    ({"api": "Produce", "error": 6, "colour": "red"}, "unknown fault field(s): colour"),
])
def test_a_fault_that_cannot_be_made_or_never_matches_is_refused(spec: dict, message: str) -> None:
    with Broker() as broker:
        with pytest.raises(FaultSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
            broker.add_fault(**spec)
        assert broker.faults() == []


def test_an_idempotent_producer_keeps_order_through_injected_produce_errors(topic_name: str) -> None:
    """30% of Produce answers are NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT: every record once, in order; the
    transcript shows each injected error where it went."""
    with Broker(transcript=True) as broker:
        create_topic(broker, topic_name, 3)
        producer = NumberedProducer(broker.bootstrap_servers, topic_name, 3).start()
        try:
            # The faults begin once each partition knows the producer. Kafka accepts any sequence from a producer it
            # has no state for, so a first batch refused while the next is in flight would leave that next batch to
            # start the sequence, and librdkafka would count the first as delivered (no offset, never stored).
            wait_until(lambda: all(producer.acked.values()), "an acknowledgement on every partition")
            broker.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", probability=0.15, seed=1)
            broker.add_fault("Produce", error="REQUEST_TIMED_OUT", probability=0.18, seed=2)
            wait_until(lambda: all(fault["hits"] > 5 for fault in broker.faults()), "each fault to hit a few answers")
            producer.finish()
        finally:
            producer.close()
        hits = {fault["error"]: fault["hits"] for fault in broker.faults()}
        ids = {fault["error"]: fault["id"] for fault in broker.faults()}
        broker.clear_faults()
        produces = [e for e in broker.transcript() if e["api"] == "Produce"]
        for error, fault_id in ids.items():
            marked = [e for e in produces if e.get("fault") == fault_id]
            assert len(marked) == hits[error]
            assert all(e["errors"] and {x["error"] for x in e["errors"]} == {error} for e in marked)
            assert all({x["topic"] for x in e["errors"]} == {topic_name} for e in marked)
        # The real answers after an injected one: batches sent behind it arrive out of sequence, as in Kafka.
        assert {x["error"] for e in produces if "fault" not in e for x in e["errors"]} <= {"OUT_OF_ORDER_SEQUENCE_NUMBER"}
        assert not producer.errors, producer.errors[:3]
        assert hits["NOT_LEADER_OR_FOLLOWER"] > 5 and hits["REQUEST_TIMED_OUT"] > 5, hits
        for partition, acked in producer.acked.items():
            offsets = [offset for offset, _ in acked]
            numbers = [number for _, number in sorted(acked)]
            assert offsets == list(range(len(acked))), "a gap or a duplicate"
            assert numbers == sorted(numbers) and all(n % 3 == partition for n in numbers)


def test_aiokafka_commits_through_injected_coordinator_errors(topic_name: str) -> None:
    """COORDINATOR_NOT_AVAILABLE on FindCoordinator and NOT_COORDINATOR on OffsetCommit: aiokafka retries, commits."""
    with Broker() as broker:
        create_topic(broker, topic_name, 1)
        broker.add_fault("FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", count=2)
        broker.add_fault("OffsetCommit", error="NOT_COORDINATOR", count=2)

        async def commit_and_read_back() -> int:
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=f"g-{topic_name}",
                                        enable_auto_commit=False, retry_backoff_ms=20)
            await consumer.start()
            try:
                partition = AIOTopicPartition(topic_name, 0)
                consumer.assign([partition])
                await consumer.commit({partition: OffsetAndMetadata(7, "")})
                return await consumer.committed(partition)
            finally:
                await consumer.stop()

        assert asyncio.run(asyncio.wait_for(commit_and_read_back(), TIMEOUT_S)) == 7
        assert [(f["api"], f["hits"], f["count"]) for f in broker.faults()] == [
            ("FindCoordinator", 2, 0), ("OffsetCommit", 2, 0),
        ]


def test_delay_disconnect_stall_and_throttle_act_on_the_requests_they_match() -> None:
    with Broker() as broker:
        address = broker.bootstrap_servers
        broker.add_fault("Metadata", action="delay", delay_ms=300, count=1)
        started = time.monotonic()
        metadata(address)
        assert time.monotonic() - started >= 0.3

        broker.add_fault("Metadata", action="throttle", throttle_ms=1234, count=1)
        assert metadata(address)["throttle_time_ms"] == 1234

        broker.add_fault("Metadata", action="disconnect", count=1)
        with pytest.raises((ConnectionError, EOFError)):
            metadata(address)
        assert metadata(address)["brokers"], "one disconnect only"

        stalled = broker.add_fault("Metadata", action="stall")
        answers: list[dict] = []
        waiter = threading.Thread(target=lambda: answers.append(metadata(address, timeout=TIMEOUT_S)))
        waiter.start()
        time.sleep(0.3)
        assert not answers, "a stalled request was answered"
        assert broker.clear_faults(stalled["id"]) == 1
        waiter.join(TIMEOUT_S)
        assert answers and answers[0]["brokers"]


def test_an_error_names_only_the_partitions_and_clients_it_matches(topic_name: str) -> None:
    with Broker() as broker:
        create_topic(broker, topic_name, 2)
        broker.add_fault("Produce", error="TOPIC_AUTHORIZATION_FAILED", topic=topic_name, partition=1,
                         client_id="victim")
        reports: dict[tuple[str, int], KafkaError | None] = {}
        for client_id in ("victim", "bystander"):
            producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": client_id})
            for partition in (0, 1):
                producer.produce(topic_name, b"x", partition=partition,
                                 on_delivery=lambda err, msg, c=client_id: reports.__setitem__((c, msg.partition()), err))
            producer.flush(TIMEOUT_S)
        failed = {key: err.code() for key, err in reports.items() if err is not None}
        assert failed == {("victim", 1): KafkaError.TOPIC_AUTHORIZATION_FAILED} and len(reports) == 4


def test_curl_injects_a_fault_that_a_client_then_meets(topic_name: str) -> None:
    """The control API from another program (curl): an error on Metadata that confluent-kafka's admin client meets."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    with Broker(control=True) as broker:
        spec = json.dumps({"api": "CreateTopics", "error": "POLICY_VIOLATION", "count": 1})
        made = subprocess.run([curl, "-sf", "-X", "POST", f"{broker.control_url}/v1/faults", "-d", spec],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        assert made.returncode == 0 and json.loads(made.stdout)["error"] == "POLICY_VIOLATION", made.stderr
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        with pytest.raises(Exception, match="POLICY_VIOLATION"):
            admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(TIMEOUT_S)
        listed = subprocess.run([curl, "-sf", f"{broker.control_url}/v1/faults"], capture_output=True, text=True)
        assert [(f["api"], f["hits"]) for f in json.loads(listed.stdout)["faults"]] == [("CreateTopics", 1)]
        cleared = subprocess.run([curl, "-sf", "-X", "DELETE", f"{broker.control_url}/v1/faults"],
                                 capture_output=True, text=True)
        assert json.loads(cleared.stdout) == {"cleared": 1}
        admin.create_topics([NewTopic(topic_name, 1)])[topic_name].result(TIMEOUT_S)


def test_bad_fault_requests_get_a_400_and_unknown_ids_a_404() -> None:
    with Broker(control=True) as broker:
        from tests.test_control import call

        status, answer = call(f"{broker.control_url}/v1/faults", "POST", {"api": "Nope"})
        assert status == 400 and "unknown API 'Nope'" in answer["error"]
        assert call(f"{broker.control_url}/v1/faults/41", "DELETE")[0] == 404
        status, made = call(f"{broker.control_url}/v1/faults", "POST", {"api": 3, "error": int(ErrorCode.REQUEST_TIMED_OUT)})
        assert status == 201 and made["api"] == "Metadata" and made["error"] == "REQUEST_TIMED_OUT"
        assert call(f"{broker.control_url}/v1/faults/{made['id']}", "DELETE") == (200, {"cleared": 1})
