"""The control API from another language: a Node program (tests/js/fault_observer.js) injects faults over HTTP and
kafkajs meets them; the test compares what kafkajs reported with what the broker holds and counted."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from minibroker.testing import Broker

JS_DIR = Path(__file__).resolve().parent / "js"
NODE_TIMEOUT_S = 60.0
DENIED_TOPIC, RETRIED_TOPIC, GROUP = "js-denied", "js-retried", "js-group"


def node_program() -> list[str]:
    """The command that runs the observer, or a skip naming what is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.skip("kafkajs is not installed: run npm ci --prefix tests/js")
    return [node, str(JS_DIR / "fault_observer.js")]


def values(broker: Broker, topic: str) -> list[str]:
    return [record["value"] for batch in broker.records(topic, 0)["batches"] for record in batch["records"]]


def committed(broker: Broker, group: str) -> dict[str, int]:
    offsets = broker.group(group)["offsets"]["topics"]
    return {topic["name"]: p["committed_offset"] for topic in offsets for p in topic["partitions"]}


def run_observer(broker: Broker) -> dict[str, Any]:
    """Run the Node program against ``broker`` (killed if it outlives the timeout) and return its JSON line."""
    done = subprocess.run([*node_program(), broker.control_url, broker.bootstrap_servers], capture_output=True,
                          text=True, timeout=NODE_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kafkajs_meets_faults_injected_from_node() -> None:
    with Broker(control=True) as broker:
        seen = run_observer(broker)

        denied = seen["non_retriable"]
        assert denied["error"]["name"] == "KafkaJSProtocolError"
        assert (denied["error"]["type"], denied["error"]["code"], denied["error"]["retriable"]) == (
            "TOPIC_AUTHORIZATION_FAILED", 29, False)
        assert denied["then_accepted"]["offset"] == 0, "the failed send must not have been written"
        retried = seen["retriable"]
        assert (retried["produce_requests"], retried["retries_logged"]) == (3, 2)
        assert (retried["offset"], retried["error_code"]) == (0, 0)

        hits = {(f["id"], f["error"], f["hits"], f["count"]) for f in broker.faults()}
        assert hits == {(denied["fault_id"], "TOPIC_AUTHORIZATION_FAILED", 1, 0),
                        (retried["fault_id"], "NOT_LEADER_OR_FOLLOWER", 2, 0)}
        assert {(f["id"], f["error"], f["hits"], f["count"]) for f in seen["faults"]} == hits

        assert values(broker, DENIED_TOPIC) == ["accepted"]
        assert values(broker, RETRIED_TOPIC) == ["retried"], "the retried record must land once"
        consumed = sorted((r["topic"], r["offset"], r["value"]) for r in seen["consumed"])
        assert consumed == [(DENIED_TOPIC, 0, "accepted"), (RETRIED_TOPIC, 0, "retried")]
        assert committed(broker, GROUP) == {DENIED_TOPIC: 1, RETRIED_TOPIC: 1}
        assert sorted((c["topic"], c["offset"]) for c in seen["committed"]) == [(DENIED_TOPIC, 1), (RETRIED_TOPIC, 1)]
