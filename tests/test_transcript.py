"""The protocol transcript: every exchange summarised (partitions, batches, offsets, errors, faults), over the control
API, in a JSONL file and as `minibroker transcript FILE`. The offsets are checked against what real clients saw: a
producer's delivery reports, a group consumer's records and commits, a transactional producer's offsets sent to its
transaction, ListOffsets answers, a share consumer's deliveries."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from minibroker.protocol.records import RecordInput, build_batch

from minibroker.control.transcript import (
    ANSWERED_OFFSETS,
    ASKED_OFFSETS,
    TIMELINE_OFFSETS,
    batches,
    errors,
    named_partitions,
    offsets,
    shown_offsets,
    walk,
)
from minibroker.testing import Broker
from tests.clientutil import (
    TIMEOUT_S,
    Deadline,
    Message,
    confluent_consumer,
    confluent_produce,
    record_timestamps,
    timestamp_queries,
)
from tests.test_clients_confluent import produce_timed
from tests.test_control import call
from tests.test_share_consumer import poll_until, produce, set_group_configs, share_consumer
from tests.txnutil import producer, unique

REGION_BYTES = 64 * 1024  # a Fetch answer this large is sent from the segment file (PartitionLog.read_region)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(transcript=True) as running:
        yield running


def offsets_of(entries: list[dict[str, Any]], api: str, topic: str) -> list[dict[str, Any]]:
    """The offsets of ``topic``'s partitions in the entries of ``api``, in the order they were recorded."""
    return [found for e in entries if e["api"] == api for found in e.get("offsets", []) if found.get("topic") == topic]


def test_summaries_name_partitions_errors_and_batches() -> None:
    request = {"group_id": "g", "topics": [{"name": "t", "partitions": [{"partition_index": 1}, {"partition_index": 4}]}]}
    assert named_partitions(walk(request)) == {"t": [1, 4]}
    answer = {"error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 1, "error_code": 0}, {"partition_index": 4, "error_code": 16},
    ]}]}
    assert errors(walk(answer)) == [{"topic": "t", "partition": 4, "error": "NOT_COORDINATOR"}]
    assert errors(walk({"error_code": 15, "coordinators": []})) == [{"error": "COORDINATOR_NOT_AVAILABLE"}]
    assert batches(walk({"topics": [{"name": "t", "partitions": [{"partition_index": 0, "records": b""}]}]})) == []


def test_offsets_join_what_a_partition_asks_and_answers() -> None:
    fetch = {"topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 7, "log_start_offset": -1}]}]}
    records = build_batch([RecordInput(None, b"v")] * 5, base_offset=5)
    answer = {"responses": [{"topic": "t", "partitions": [{
        "partition_index": 0, "error_code": 0, "high_watermark": 12, "last_stable_offset": 10, "log_start_offset": 2,
        "aborted_transactions": [{"producer_id": 4, "first_offset": 3}], "records": records,
    }]}]}
    [found] = offsets(walk(fetch), walk(answer))
    assert found == {"topic": "t", "partition": 0, "fetch_offset": 7, "records": [5, 9], "high_watermark": 12,
                     "last_stable_offset": 10, "log_start_offset": 2}
    assert shown_offsets(found) == "t-0 fetch 7 records 5..9 hw 12 lso 10 start 2"
    shared = {"responses": [{"topic": "t", "partitions": [{"partition_index": 1, "acquired_records": [
        {"first_offset": 0, "last_offset": 2, "delivery_count": 1},
        {"first_offset": 4, "last_offset": 4, "delivery_count": 2},
    ]}]}]}
    [acquired] = offsets([], walk(shared))
    assert acquired == {"topic": "t", "partition": 1, "acquired": [[0, 2, 1], [4, 4, 2]]}
    assert shown_offsets(acquired) == "t-1 acquired 0..2 (delivery 1), 4..4 (delivery 2)"
    fetched = {"groups": [{"group_id": g, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": offset}]}]} for g, offset in (("a", 3), ("b", -1))]}
    committed = offsets([], walk(fetched))
    assert [(o["group_id"], o["committed_offset"]) for o in committed] == [("a", 3), ("b", -1)]
    assert [shown_offsets(o) for o in committed] == ["a/t-0 committed 3", "b/t-0 committed -1"]
    assert set(ASKED_OFFSETS + ANSWERED_OFFSETS + ("records", "acquired")) == set(TIMELINE_OFFSETS)


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
    shown = [part for line in printed.stdout.splitlines() if " Produce " in line
             for part in line.split(" {", 1)[1].split("}", 1)[0].split("; ")]
    assert sorted(shown) == [
        f"{topic_name}-0 base 0 start 0", f"{topic_name}-1 base -1", f"{topic_name}-1 base 0 start 0"]
    assert len(printed.stdout.splitlines()) == len(lines)


def test_no_transcript_unless_asked_for() -> None:
    with Broker(control=True) as broker:
        status, answer = call(f"{broker.control_url}/v1/transcript")
        assert status == 409 and "transcript.enabled" in answer["error"]


def commits_of(entries: list[dict[str, Any]], api: str, topic: str) -> list[tuple[str, int, int]]:
    """(group, partition, offset committed) of ``topic``'s partitions in the entries of ``api``."""
    return [(c["group_id"], c["partition"], c["committed_offset"]) for c in offsets_of(entries, api, topic)]


def produced_offsets(entries: list[dict[str, Any]], topic: str) -> list[tuple[int, int]]:
    """(partition, offset) of every record the Produce entries carried to ``topic``: each partition's base offset
    answered, and the records its batches held."""
    found = []
    for e in entries:
        for placed in offsets_of([e], "Produce", topic):
            partition, base = placed["partition"], placed["base_offset"]
            count = sum(b["count"] for b in e["request_batches"] if (b["topic"], b["partition"]) == (topic, partition))
            found += [(partition, offset) for offset in range(base, base + count)]
    return sorted(found)


def fetched_offsets(entries: list[dict[str, Any]], topic: str) -> dict[int, list[int]]:
    """partition -> the offsets of the records the Fetch entries returned from the offset asked on, in order."""
    found: dict[int, list[int]] = defaultdict(list)
    for fetched in offsets_of(entries, "Fetch", topic):
        if "records" in fetched:
            first, last = fetched["records"]
            found[fetched["partition"]] += range(max(first, fetched["fetch_offset"]), last + 1)
    return found


def consume_all(consumer: Consumer, count: int) -> dict[int, list[int]]:
    """partition -> offsets of the ``count`` records a subscribed consumer polls, in the order it got them."""
    got: dict[int, list[int]] = defaultdict(list)
    deadline = Deadline()
    while sum(map(len, got.values())) < count and deadline.left():
        message = consumer.poll(min(0.5, deadline.left()))
        if message is not None:
            assert message.error() is None, message.error()
            got[message.partition()].append(message.offset())
    assert sum(map(len, got.values())) == count, got
    return got


def test_produce_fetch_and_commit_offsets_are_those_the_clients_saw(broker: Broker, topic_name: str) -> None:
    broker.create_topic(topic_name, 2)
    since = broker.transcript_position()
    messages = [Message(f"k{i}".encode(), bytes(1024)) for i in range(4 * REGION_BYTES // 1024)]  # ~2 regions each
    placed = confluent_produce(broker.bootstrap_servers, topic_name, messages, **{"linger.ms": 20})
    assert produced_offsets(broker.transcript(since), topic_name) == sorted((p.partition, p.offset) for p in placed)

    group = unique("transcribed")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic_name])
        consumed = consume_all(consumer, len(messages))
        committed = consumer.commit(asynchronous=False)
        answered = consumer.committed([TopicPartition(topic_name, p) for p in (0, 1)], timeout=TIMEOUT_S)
    finally:
        consumer.close()
    entries = broker.transcript(since)
    assert fetched_offsets(entries, topic_name) == consumed
    ends = {p: len(offsets) for p, offsets in consumed.items()}
    answered_fetches = [f for f in offsets_of(entries, "Fetch", topic_name) if "high_watermark" in f]  # not cut off
    assert {(f["partition"], f["high_watermark"], f["last_stable_offset"], f["log_start_offset"])
            for f in answered_fetches} == {(p, end, end, 0) for p, end in ends.items()}
    assert any(b.get("from_file") for e in entries if e["api"] == "Fetch" for b in e.get("response_batches", [])), \
        "no Fetch answer came from the segment file"

    commits = [e for e in entries if e["api"] == "OffsetCommit" and e.get("group_id") == group]
    assert [e["errors"] for e in commits] == [[]]
    assert commits_of(commits, "OffsetCommit", topic_name) == [(group, tp.partition, tp.offset) for tp in committed]
    [last_fetch] = [e for e in entries if e["api"] == "OffsetFetch"][-1:]
    assert {(f["partition"], f["committed_offset"]) for f in offsets_of([last_fetch], "OffsetFetch", topic_name)} \
        == {(tp.partition, tp.offset) for tp in answered} == {(p, end) for p, end in ends.items()}


def test_list_offsets_are_the_timestamps_asked_and_the_offsets_the_clients_got(broker: Broker, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    t0 = int(time.time() * 1000) - 60_000
    produce_timed(broker.bootstrap_servers, topic_name, t0)
    since = broker.transcript_position()
    partition = TopicPartition(topic_name, 0)
    consumer = confluent_consumer(broker.bootstrap_servers)
    try:
        low, high = consumer.get_watermark_offsets(partition, timeout=TIMEOUT_S, cached=False)
        seen = {(-2, low), (-1, high)}
        for asked, _ in timestamp_queries(t0):
            [answer] = consumer.offsets_for_times([TopicPartition(topic_name, 0, asked)], timeout=TIMEOUT_S)
            seen.add((asked, answer.offset))
    finally:
        consumer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    newest = admin.list_offsets({partition: OffsetSpec.max_timestamp()})[partition].result(TIMEOUT_S)
    seen.add((-3, newest.offset))
    assert (low, high, newest.offset) == (0, len(record_timestamps(t0)), high - 1)

    listed = offsets_of(broker.transcript(since), "ListOffsets", topic_name)
    assert {(found["timestamp"], found["offset"]) for found in listed} == seen


def test_offsets_committed_in_a_transaction_and_a_refused_commit(broker: Broker, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    group = unique("txn-transcribed")
    since = broker.transcript_position()
    consumer = confluent_consumer(broker.bootstrap_servers, **{"group.id": group})
    try:
        with producer("confluent", broker.bootstrap_servers, unique("transcribed")) as txn:
            txn.begin()
            txn.send(topic_name, 0, b"v")
            txn.send_offsets(topic_name, 0, 7, group, consumer)
            txn.commit()
        [answered] = consumer.committed([TopicPartition(topic_name, 0)], timeout=TIMEOUT_S)
        broker.add_fault("OffsetCommit", error="OFFSET_METADATA_TOO_LARGE", topic=topic_name, count=1)
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition(topic_name, 0, 9)], asynchronous=False)
    finally:
        consumer.close()
    entries = broker.transcript(since)
    assert commits_of(entries, "TxnOffsetCommit", topic_name) == [(group, 0, 7)]
    assert [f["committed_offset"] for f in offsets_of(entries, "OffsetFetch", topic_name)] == [answered.offset] == [7]
    [commit] = [e for e in entries if e["api"] == "OffsetCommit"]
    assert commit["offsets"] == [{"topic": topic_name, "partition": 0, "group_id": group, "committed_offset": 9}]
    assert commit["errors"] == [{"topic": topic_name, "partition": 0, "error": refused.value.args[0].name()}]


def test_share_fetch_offsets_are_the_records_each_delivery_acquired(topic_name: str) -> None:
    """A record released and delivered again shows in two ShareFetch answers, its delivery counted."""
    with Broker(transcript=True, clock="virtual") as broker:  # no lock expires while the test runs
        broker.create_topic(topic_name, 1)
        set_group_configs(broker, "transcribed", share_auto_offset_reset="earliest")
        produce(broker, topic_name, 3)
        with share_consumer(broker, "transcribed", topic_name, share_acknowledgement_mode="explicit") as consumer:
            first = poll_until(consumer, 3)
            for message, kind in zip(first, (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT)):
                consumer.acknowledge(message, kind)
            consumer.commit_sync(TIMEOUT_S)
            again = poll_until(consumer, 1)
            consumer.acknowledge(again[0])
            consumer.commit_sync(TIMEOUT_S)
        delivered = [(m.offset(), m.delivery_count()) for m in first + again]
        acquired = [(offset, count) for found in offsets_of(broker.transcript(), "ShareFetch", topic_name)
                    for first_offset, last_offset, count in found.get("acquired", [])
                    for offset in range(first_offset, last_offset + 1)]
    assert acquired == delivered == [(0, 1), (1, 1), (2, 1), (1, 2)]
