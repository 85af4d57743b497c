"""The JSON the web inspector reads, against a broker that real clients filled: the cluster, topic pages, a
partition's records with aborted transactions marked, timestamp search, cut values, single records, JSONL downloads,
groups with their lag, transactional ids with their history, the actions, and a read-only listener."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minibroker.control_client import ControlClient, ControlError
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.txnutil import producer

TOPIC = "orders"
BIG = b"x" * 5000
ZSTD = b"zstd " * 100
ODD_GROUP = "g/<b>&\u00e9"


def send(bootstrap: str, values: list[bytes], **config: Any) -> None:
    sender = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    for value in values:
        sender.produce(TOPIC, value, partition=0, headers=[("h", b"v")])
        sender.flush(TIMEOUT_S)  # one batch each
    assert len(sender) == 0


@pytest.fixture(scope="module")
def filled() -> Iterator[tuple[Broker, ControlClient, dict[str, int]]]:
    """One broker for the module: plain, compressed, idempotent and transactional records, a group's commit."""
    with Broker(control=True, transcript=True, num_partitions=1, log_retention_ms=86_400_000) as broker:
        bootstrap = broker.bootstrap_servers
        broker.create_topic(TOPIC, 1, 1, {"retention.ms": 3_600_000})
        broker.create_topic("wide", 250)
        send(bootstrap, [b"plain", BIG])
        send(bootstrap, [ZSTD], **{"compression.type": "zstd"})  # compressible, so librdkafka compresses it
        send(bootstrap, [b"idempotent"], **{"enable.idempotence": True})
        before_txn = int(time.time() * 1000)
        with producer("confluent", bootstrap, "writer") as txn:
            for value, abort in ((b"committed", False), (b"aborted", True)):
                txn.begin()
                txn.send(TOPIC, 0, value)
                txn.flush()  # written before the abort (confluent-kafka purges what is unsent)
                txn.abort() if abort else txn.commit()
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": ODD_GROUP, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 2)], asynchronous=False)
        consumer.close()
        yield broker, ControlClient(broker.control_url), {"before_txn": before_txn}


def values(batches: list[dict[str, Any]]) -> list[tuple[int, Any, bool, str | None]]:
    """(offset, value, batch aborted, control type) per record."""
    return [(r["offset"], r["value"] if not b["isControl"] else None, b["aborted"],
             r["control"]["type"] if b["isControl"] else None) for b in batches for r in b["records"]]


def test_the_cluster_view_counts_what_the_broker_holds_and_the_requests_it_served(filled) -> None:
    broker, control, _ = filled
    view = control.request("GET", "/v1/cluster")
    assert view["cluster_id"] == broker.core.logs.cluster_id and view["read_only"] is False
    assert [node["listeners"][0]["address"] for node in view["nodes"]] == [broker.bootstrap_servers]
    assert view["nodes"][0]["listeners"][0]["security_protocol"] == "PLAINTEXT"
    settings = {s["name"]: s for s in view["settings"]}
    assert settings["log.retention.ms"] == {"name": "log.retention.ms", "value": "86400000", "default": None}
    assert settings["transcript.enabled"] == {"name": "transcript.enabled", "value": "true", "default": "false"}
    assert "num.partitions" not in settings  # given, but as its default
    transcribed = control.transcript()
    produced = sum(1 for entry in transcribed if entry["api"] == "Produce")
    assert view["requests"]["by_api"]["Produce"] == produced >= 4
    assert view["requests"]["total"] >= len(transcribed)  # and the cluster request itself is not in the transcript yet
    assert view["counts"]["groups"] == 1 and view["counts"]["transactional_ids"] == 1
    assert view["counts"]["topics"] == 4  # orders, wide and the two internal topics


def test_topics_come_in_pages_and_a_topics_partitions_too(filled) -> None:
    _, control, _ = filled
    listed = control.request("GET", "/v1/topics?limit=2")
    assert listed["total"] == 4 and [t["name"] for t in listed["topics"]] == ["__consumer_offsets", "__transaction_state"]
    user = control.request("GET", "/v1/topics?internal=false")["topics"]
    assert [t["name"] for t in user] == [TOPIC, "wide"] and user[0]["records"] == 8 and user[0]["size_bytes"] > 5000
    assert [t["name"] for t in control.request("GET", "/v1/topics?filter=wid")["topics"]] == ["wide"]
    wide = control.request("GET", "/v1/topics/wide?offset=200&limit=100")
    assert wide["partition_count"] == 250 and [p["partition"] for p in wide["partitions"]] == list(range(200, 250))
    orders = control.request("GET", f"/v1/topics/{TOPIC}")
    [partition] = orders["partitions"]
    assert (partition["log_start_offset"], partition["high_watermark"], partition["last_stable_offset"]) == (0, 8, 8)
    assert partition["leader"] == 1 and partition["segments"] == 1 and partition["size_bytes"] > 5000
    configs = {c["name"]: c for c in orders["configs"]}
    assert configs["retention.ms"] == {"name": "retention.ms", "value": "3600000", "source": "topic"}
    assert configs["cleanup.policy"]["source"] == "default"
    with pytest.raises(ControlError, match="404: no topic 'nope'"):
        control.request("GET", "/v1/topics/nope")


def test_records_show_markers_and_aborted_transactions_and_page_on(filled) -> None:
    _, control, _ = filled
    page = control.request("GET", f"/v1/partitions/{TOPIC}/0/records?max=3&value_bytes=100")
    assert page["next_offset"] == 3
    first = page["batches"][0]["records"][0]
    assert first["value"] == "plain" and first["headers"] == [["h", "v"]] and not first["value_truncated"]
    cut = page["batches"][1]["records"][0]
    assert cut["value"] == "x" * 100 and cut["value_truncated"] and cut["valueSize"] == 5000
    assert page["batches"][2]["compressCodec"] == "zstd"
    rest = control.request("GET", f"/v1/partitions/{TOPIC}/0/records?offset={page['next_offset']}")
    assert values(rest["batches"]) == [
        (3, "idempotent", False, None), (4, "committed", False, None), (5, None, False, "COMMIT"),
        (6, "aborted", True, None), (7, None, False, "ABORT"),
    ]


def test_a_timestamp_finds_the_first_record_at_or_after_it(filled) -> None:
    _, control, facts = filled
    found = control.request("GET", f"/v1/partitions/{TOPIC}/0/records?timestamp={facts['before_txn']}&max=1")
    [batch] = found["batches"]
    assert batch["records"][0]["value"] == "committed"
    future = control.request("GET", f"/v1/partitions/{TOPIC}/0/records?timestamp={facts['before_txn'] + 10**9}")
    assert future["batches"] == [] and future["next_offset"] == future["high_watermark"]


def test_one_record_in_full_and_a_range_as_jsonl(filled) -> None:
    broker, control, _ = filled
    full = control.request("GET", f"/v1/partitions/{TOPIC}/0/records/1")
    assert full["value"] == BIG.decode() and full["aborted"] is False and full["batch"]["baseOffset"] == 1
    assert control.request("GET", f"/v1/partitions/{TOPIC}/0/records/6")["aborted"] is True
    with pytest.raises(ControlError, match="404: no record at offset 99"):
        control.request("GET", f"/v1/partitions/{TOPIC}/0/records/99")
    with urllib.request.urlopen(f"{broker.control_url}/v1/partitions/{TOPIC}/0/export?offset=2&end=7") as answer:
        assert answer.headers["Content-Type"] == "application/x-ndjson"
        assert answer.headers["Content-Disposition"] == f'attachment; filename="{TOPIC}-0-2.jsonl"'
        lines = [json.loads(line) for line in answer.read().splitlines()]
    assert [(line["offset"], line["aborted"]) for line in lines] == [(2, False), (3, False), (4, False), (5, False),
                                                                      (6, True)]
    assert lines[0]["value"] == ZSTD.decode() and "control" in lines[3]


def test_groups_show_their_protocol_state_and_lag(filled) -> None:
    _, control, _ = filled
    assert control.request("GET", "/v1/groups")["groups"] == [
        {"group_id": ODD_GROUP, "protocol": "classic", "protocol_type": "", "state": "Empty", "members": 0,
         "coordinator": 1},
    ]
    group = control.group(ODD_GROUP)  # the id travels percent-encoded, "/" included
    assert (group["group_id"], group["protocol"], group["state"], group["members"]) == (ODD_GROUP, "classic", "Empty", [])
    assert group["lag"] == [{"topic": TOPIC, "partition": 0, "committed": 2, "high_watermark": 8, "lag": 6}]


def test_a_transactional_id_shows_its_history(filled) -> None:
    _, control, _ = filled
    [listed] = control.request("GET", "/v1/transactions")["transactions"]
    assert (listed["transactional_id"], listed["state"], listed["coordinator"]) == ("writer", "CompleteAbort", 1)
    states = [entry["state"] for entry in control.transaction("writer")["timeline"]]
    assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort",
                      "CompleteAbort"]


def test_actions_create_and_delete_topics_and_reset_a_groups_offsets(filled) -> None:
    broker, control, _ = filled
    assert control.request("POST", "/v1/topics", {"name": "made", "partitions": 2, "config": {"retention.ms": 1000}})[
        "partitions"] == 2
    assert broker.core.topic("made").overrides == {"retention.ms": "1000"}
    with pytest.raises(ControlError, match="409: TOPIC_ALREADY_EXISTS"):
        control.request("POST", "/v1/topics", {"name": "made"})
    with pytest.raises(ControlError, match="400: INVALID_REPLICATION_FACTOR"):
        control.request("POST", "/v1/topics", {"name": "other", "replication_factor": 2})
    assert control.request("DELETE", "/v1/topics/made") == {"deleted": "made"}
    with pytest.raises(ControlError, match="409: __consumer_offsets is internal"):
        control.request("DELETE", "/v1/topics/__consumer_offsets")
    path = f"/v1/groups/{urllib.parse.quote(ODD_GROUP, safe='')}/offsets"
    assert control.request("POST", path, {"to": "latest"})["offsets"] == [{"topic": TOPIC, "partition": 0, "offset": 8}]
    assert control.group(ODD_GROUP)["lag"][0]["lag"] == 0
    control.request("POST", path, {"to": "earliest"})
    assert control.group(ODD_GROUP)["lag"][0]["committed"] == 0
    with pytest.raises(ControlError, match="400: 'to' must be one of"):
        control.request("POST", path, {"to": "middle"})


def test_a_group_with_members_keeps_its_offsets() -> None:
    with Broker(control=True) as broker:
        control = ControlClient(broker.control_url)
        broker.create_topic(TOPIC)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "busy",
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([TOPIC])
            deadline = time.monotonic() + TIMEOUT_S
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.1)
            [member] = control.group("busy")["members"]
            assert member["assignment"] == [{"topic": TOPIC, "partitions": [0]}]
            with pytest.raises(ControlError, match="409: group 'busy' has 1 member"):
                control.request("POST", "/v1/groups/busy/offsets", {"to": "earliest"})
        finally:
            consumer.close()


def test_a_read_only_listener_serves_views_and_refuses_changes() -> None:
    with Broker(control=True, control_read_only=True) as broker:
        control = ControlClient(broker.control_url)
        assert control.health()["read_only"] is True and control.request("GET", "/v1/topics")["total"] == 0
        for method, path, body in (("POST", "/v1/faults", {"api": "Produce", "error": 6}), ("POST", "/v1/reset", None),
                                   ("POST", "/v1/topics", {"name": "t"}), ("DELETE", "/v1/faults", None)):
            with pytest.raises(ControlError) as refused:
                control.request(method, path, body)
            assert refused.value.status == 403 and "read-only (control.read.only)" in refused.value.message
