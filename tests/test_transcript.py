"""The protocol transcript: every exchange summarised (partitions, batches, errors, faults), over the control API,
in a JSONL file and as `minibroker transcript FILE`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testing import Broker
from minibroker.transcript import batches, errors, named_partitions, walk
from tests.clientutil import TIMEOUT_S
from tests.test_control import call


def test_summaries_name_partitions_errors_and_batches() -> None:
    request = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 1}, {"partition_index": 4}]}]}
    assert named_partitions(walk(request)) == {"t": [1, 4]}
    answer = {"error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 1, "error_code": 0}, {"partition_index": 4, "error_code": 16},
    ]}]}
    assert errors(walk(answer)) == [{"topic": "t", "partition": 4, "error": "NOT_COORDINATOR"}]
    assert errors(walk({"error_code": 15, "coordinators": []})) == [{"error": "COORDINATOR_NOT_AVAILABLE"}]
    assert batches(walk({"topics": [{"name": "t", "partitions": [{"partition_index": 0, "records": b""}]}]})) == []


def test_the_transcript_follows_a_client_through_the_control_api_and_a_file(tmp_path: Path, topic_name: str) -> None:
    path = tmp_path / "transcript.jsonl"
    with Broker(control=True, transcript_file=str(path)) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic(topic_name, 2)])[topic_name].result(TIMEOUT_S)
        broker.add_fault("Produce", error="NOT_LEADER_OR_FOLLOWER", topic=topic_name, partition=1, count=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "transcribed"})
        for partition in (0, 1):
            producer.produce(topic_name, f"v{partition}".encode(), partition=partition)
        assert producer.flush(TIMEOUT_S) == 0

        status, answer = call(f"{broker.control_url}/v1/transcript?since=0")
        assert status == 200
        produces = [e for e in answer["entries"] if e["api"] == "Produce" and e["client_id"] == "transcribed"]
        assert [x["error"] for e in produces for x in e["errors"]] == ["NOT_LEADER_OR_FOLLOWER"]
        sent = {(b["partition"], b["count"]) for e in produces for b in e.get("request_batches", [])}
        assert sent == {(0, 1), (1, 1)}
        # The producer may still refresh metadata after the fault, so later entries can arrive meanwhile:
        # `since` must return exactly the entries after the given one, however many that is by now.
        newest = answer["entries"][-1]["seq"]
        later = call(f"{broker.control_url}/v1/transcript?since={newest - 1}")[1]["entries"]
        assert [e["seq"] for e in later] == list(range(newest, newest + len(later)))
        assert call(f"{broker.control_url}/v1/transcript?since=x")[0] == 400

    lines = path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
    printed = subprocess.run([sys.executable, "-m", "minibroker", "transcript", str(path)],
                             capture_output=True, text=True, timeout=TIMEOUT_S)
    assert printed.returncode == 0, printed.stderr
    assert f"-> NOT_LEADER_OR_FOLLOWER@{topic_name}-1" in printed.stdout
    assert len(printed.stdout.splitlines()) == len(lines)


def test_no_transcript_unless_asked_for() -> None:
    with Broker(control=True) as broker:
        status, answer = call(f"{broker.control_url}/v1/transcript")
        assert status == 409 and "transcript.enabled" in answer["error"]
