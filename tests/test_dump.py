"""``minibroker dump``: every batch field, records, control markers and internal-topic records, checked against
what was written, in both the kafka-dump-log text layout and ``--json``.

Partitions are written either through the storage layer (so control batches and internal-topic records can be
placed exactly) or by real clients through a broker; the dump always runs as the real ``minibroker`` command.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from minibroker.protocol import group_records as gr
from minibroker.protocol.compression import CODEC_NAMES, GZIP, LZ4, SNAPPY, ZSTD
from minibroker.protocol.messages import CONSUMER_PROTOCOL_SUBSCRIPTION
from minibroker.protocol.primitives import Writer
from minibroker.protocol.records import RecordInput, build_batch, build_control_batch, parse_header, validate_batches
from minibroker.protocol.schema import codec
from minibroker.storage.config import LogConfig
from minibroker.storage.log_manager import LogManager
from minibroker.storage.producer_state import AppendOrigin

from minibroker.commands.cli import main
from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S, Deadline

T0 = 1_700_000_000_000
PRODUCER_ID = 4242


def run_dump(*args: str | Path) -> subprocess.CompletedProcess:
    """``minibroker dump ARGS`` through the CLI's ``main``, in this process (fast; one test runs the real command)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["dump", *map(str, args)])
    return subprocess.CompletedProcess(["minibroker", "dump", *map(str, args)], status, out.getvalue(), err.getvalue())


def dump_json(*args: str | Path) -> list[dict[str, Any]]:
    result = run_dump("--json", *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def write_partition(data_dir: Path, topic: str, batches: list[bytes]) -> Path:
    """Append ``batches`` to ``topic``-0 with the storage layer, byte for byte (offsets are assigned on append, as the
    broker does; the REPLICATION origin skips producer-state checks, so control batches go in as built)."""
    logs = LogManager(data_dir, LogConfig())
    logs.open()
    try:
        logs.create_topic(topic, 1, {})
        partition_log = logs.get_log(topic, 0)
        for batch in batches:
            buf = bytearray(batch)
            partition_log.append(buf, validate_batches(buf), origin=AppendOrigin.REPLICATION)
    finally:
        logs.close()
    return data_dir / f"{topic}-0"


def as_json_bytes(data: bytes | None) -> Any:
    """How --json shows key, value and header bytes."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


# ---- every kind of batch in one partition ----


def record(i: int) -> RecordInput:
    key = None if i % 3 == 0 else f"key-{i}".encode()
    value = bytes([0xFF, i]) if i % 4 == 1 else f"value {i}".encode()
    headers = [("trace", f"t{i}".encode()), ("empty", b"")] if i % 2 else []
    return RecordInput(key, value, headers, T0 + i)


def mixed_batches() -> list[tuple[str, dict[str, Any], bytes]]:
    """(label, expected header fields, batch bytes): plain, every codec, idempotent, transactional, both markers."""
    cases: list[tuple[str, dict[str, Any], bytes]] = []
    plain = [record(i) for i in range(3)]
    cases.append(("plain", {"compressCodec": "none", "producerId": -1, "baseSequence": -1}, build_batch(plain)))
    for codec_id in (GZIP, SNAPPY, LZ4, ZSTD):
        records = [record(10 * codec_id + i) for i in range(4)]
        cases.append((CODEC_NAMES[codec_id], {"compressCodec": CODEC_NAMES[codec_id]}, build_batch(records, compression=codec_id)))
    idempotent = build_batch([record(50 + i) for i in range(3)], producer_id=PRODUCER_ID, producer_epoch=2, base_sequence=7)
    cases.append(("idempotent", {"producerId": PRODUCER_ID, "producerEpoch": 2, "baseSequence": 7, "lastSequence": 9}, idempotent))
    txn = dict(producer_id=PRODUCER_ID + 1, producer_epoch=0, is_transactional=True)
    cases.append(("txn-data", {"isTransactional": True, "isControl": False}, build_batch([record(60)], base_sequence=0, **txn)))
    commit = build_control_batch(commit=True, producer_id=PRODUCER_ID + 1, producer_epoch=0, coordinator_epoch=3, timestamp=T0 + 61)
    cases.append(("commit", {"isTransactional": True, "isControl": True, "baseSequence": -1}, commit))
    cases.append(("txn-data-2", {"isTransactional": True}, build_batch([record(62), record(63)], base_sequence=1, **txn)))
    abort = build_control_batch(commit=False, producer_id=PRODUCER_ID + 1, producer_epoch=0, coordinator_epoch=4, timestamp=T0 + 64)
    cases.append(("abort", {"isControl": True}, abort))
    return cases


@pytest.fixture(scope="module")
def mixed_partition(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, dict[str, Any], bytes]]]:
    cases = mixed_batches()
    directory = write_partition(tmp_path_factory.mktemp("mixed"), "mixed", [batch for _, _, batch in cases])
    return directory, cases


def test_json_dump_shows_every_batch_field(mixed_partition) -> None:
    directory, cases = mixed_partition
    dumped = dump_json("--print-data", directory)
    assert len(dumped) == len(cases)
    offset = position = 0
    for (label, expected, raw), batch in zip(cases, dumped):
        header = parse_header(raw)
        assert batch["file"] == str(directory / "00000000000000000000.log")
        assert batch["baseOffset"] == offset, label
        assert batch["lastOffset"] == offset + header.records_count - 1, label
        assert batch["count"] == header.records_count, label
        assert batch["position"] == position and batch["size"] == len(raw), label
        assert batch["crc"] == header.crc and batch["isValid"] is True, label
        assert batch["magic"] == 2 and batch["partitionLeaderEpoch"] == 0, label
        assert batch["timestampType"] == "CreateTime" and batch["deleteHorizonMs"] is None, label
        assert (batch["baseTimestamp"], batch["maxTimestamp"]) == (header.base_timestamp, header.max_timestamp), label
        assert batch["producerId"] == header.producer_id and batch["producerEpoch"] == header.producer_epoch, label
        assert batch["isTransactional"] == header.is_transactional and batch["isControl"] == header.is_control, label
        assert {name: batch[name] for name in expected} == expected, label
        offset += header.records_count
        position += len(raw)


def test_json_dump_shows_records_as_written(mixed_partition) -> None:
    directory, cases = mixed_partition
    dumped = dump_json("--print-data", directory)
    for (label, _, raw), batch in zip(cases, dumped):
        header = parse_header(raw)
        if header.is_control:
            continue
        written = [record(i) for i in _record_numbers(raw)]
        got = batch["records"]
        assert [r["offset"] for r in got] == list(range(batch["baseOffset"], batch["lastOffset"] + 1)), label
        for position_in_batch, (sent, shown) in enumerate(zip(written, got)):
            assert shown["key"] == as_json_bytes(sent.key), label
            assert shown["value"] == as_json_bytes(sent.value), label
            assert shown["headers"] == [[name, as_json_bytes(value)] for name, value in sent.headers], label
            assert shown["timestamp"] == sent.timestamp, label
            assert shown["keySize"] == (-1 if sent.key is None else len(sent.key)), label
            assert shown["valueSize"] == len(sent.value), label
            expected_sequence = -1 if header.base_sequence < 0 else header.base_sequence + position_in_batch
            assert shown["sequence"] == expected_sequence, label


def _record_numbers(raw: bytes) -> list[int]:
    """The ``record(i)`` numbers a test batch was built from (its timestamps are T0 + i)."""
    from minibroker.protocol.records import decode_batch

    return [r.timestamp - T0 for r in decode_batch(raw, parse_header(raw))]


def test_control_records_show_marker_type_and_coordinator_epoch(mixed_partition) -> None:
    directory, _ = mixed_partition
    controls = [b["records"][0]["control"] for b in dump_json("--print-data", directory) if b["isControl"]]
    assert controls == [
        {"type": "COMMIT", "typeId": 1, "coordinatorEpoch": 3},
        {"type": "ABORT", "typeId": 0, "coordinatorEpoch": 4},
    ]


def test_text_dump_matches_kafka_dump_log_layout(mixed_partition) -> None:
    """Run as the real command, in its own process."""
    directory, cases = mixed_partition
    result = subprocess.run(
        [sys.executable, "-m", "minibroker", "dump", "--print-data", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping {directory / '00000000000000000000.log'}"
    assert lines[1] == "Log starting offset: 0"
    batch_lines = [line for line in lines if line.startswith("baseOffset: ")]
    assert len(batch_lines) == len(cases)
    first_crc = parse_header(cases[0][2]).crc
    assert batch_lines[0] == (
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: {T0 + 2} size: {len(cases[0][2])} magic: 2 compresscodec: none crc: {first_crc} isvalid: true"
    )
    assert "compresscodec: zstd" in batch_lines[4] and "baseSequence: 7 lastSequence: 9" in batch_lines[5]
    record_lines = [line for line in lines if line.startswith("| ")]
    assert record_lines[0] == f"| offset: 0 CreateTime: {T0} keySize: -1 valueSize: 7 sequence: -1 headerKeys: [] payload: value 0"
    assert record_lines[1] == (
        f"| offset: 1 CreateTime: {T0 + 1} keySize: 5 valueSize: 2 sequence: -1 headerKeys: [trace,empty] "
        "key: key-1 payload: \ufffd\x01 headers: [trace=t1,empty=]"
    )
    assert sum("endTxnMarker: COMMIT coordinatorEpoch: 3" in line for line in record_lines) == 1
    assert sum("endTxnMarker: ABORT coordinatorEpoch: 4" in line for line in record_lines) == 1


def test_without_print_data_only_batches_are_shown(mixed_partition) -> None:
    directory, cases = mixed_partition
    result = run_dump(directory)
    assert result.returncode == 0, result.stderr
    assert sum(line.startswith("baseOffset: ") for line in result.stdout.splitlines()) == len(cases)
    assert "| offset" not in result.stdout
    assert all("records" not in batch for batch in dump_json(directory))


def test_corrupt_batch_and_torn_tail_are_reported(tmp_path: Path) -> None:
    first = build_batch([RecordInput(b"k", b"intact", (), T0)])
    second = build_batch([RecordInput(b"k", b"corrupted", (), T0 + 1)])
    directory = write_partition(tmp_path, "bad", [first, second])
    segment = directory / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[len(first) + len(second) - 1] ^= 0xFF  # last byte of the second batch's record
    data += b"\x00" * 7  # a torn tail, shorter than any batch header
    segment.write_bytes(bytes(data))

    batches = dump_json(segment)
    assert [b["isValid"] for b in batches] == [True, False]
    text = run_dump(segment).stdout
    assert "isvalid: false" in text
    assert text.rstrip().endswith("Found 7 invalid bytes at the end of 00000000000000000000.log")


def test_missing_path_or_a_directory_without_segments_fails_with_a_message(tmp_path: Path) -> None:
    result = run_dump(tmp_path / "nope-0")
    assert result.returncode == 1
    assert "no such file or directory" in result.stderr
    (tmp_path / "stray.log").write_text("not a segment")
    result = run_dump(tmp_path)
    assert result.returncode == 1
    assert "no segment files" in result.stderr and "stray" not in result.stdout


# ---- real clients through the broker ----


def test_dump_of_a_partition_written_by_a_real_producer(tmp_path: Path) -> None:
    """confluent-kafka with gzip and idempotence; --json must list exactly what was acknowledged, in order."""
    values = [(f"key-{i % 3}".encode(), (f"value {i} " * 40).encode(), [("n", str(i).encode())]) for i in range(40)]
    with Broker(data_dir=tmp_path) as broker:
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "compression.type": "gzip", "enable.idempotence": True, "linger.ms": 20}
        )
        acknowledged: list[int] = []
        try:
            for key, value, headers in values:
                producer.produce("real", key=key, value=value, headers=headers, partition=0,
                                 on_delivery=lambda err, msg: acknowledged.append(msg.offset()) if err is None else None)
            assert producer.flush(TIMEOUT_S) == 0
        finally:
            producer.purge()
            producer.close()
    assert acknowledged == list(range(len(values)))

    batches = dump_json("--print-data", tmp_path / "real-0")
    assert {b["compressCodec"] for b in batches} == {"gzip"}
    assert all(b["producerId"] >= 0 and b["baseSequence"] == b["baseOffset"] and b["isValid"] for b in batches)
    shown = [(r["key"], r["value"], r["headers"]) for b in batches for r in b["records"]]
    assert shown == [(k.decode(), v.decode(), [[n, h.decode()] for n, h in hs]) for k, v, hs in values]


def test_dump_of_consumer_offsets_after_a_real_group_commit(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, offsets_topic_num_partitions=1) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        try:
            producer.produce("orders", value=b"x", partition=0)
            assert producer.flush(TIMEOUT_S) == 0
        finally:
            producer.close()
        consumer = Consumer({
            "bootstrap.servers": broker.bootstrap_servers, "group.id": "dump-group", "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        try:
            consumer.subscribe(["orders"])
            deadline = Deadline()
            message = None
            while message is None and deadline.left():
                message = consumer.poll(0.2)
            assert message is not None and message.error() is None
            consumer.commit(message=message, asynchronous=False)
        finally:
            consumer.close()

    decoded = [r["decoded"] for b in dump_json(tmp_path / "__consumer_offsets-0") for r in b["records"]]
    commits = [d for d in decoded if d["key"]["type"] == gr.OFFSET_COMMIT]
    assert commits[-1]["key"]["data"] == {"group": "dump-group", "topic": "orders", "partition": 0}
    assert commits[-1]["value"]["data"]["offset"] == 1
    groups = [d["value"]["data"] for d in decoded if d["key"]["type"] == gr.GROUP_METADATA and d["value"] is not None]
    joined = [group for group in groups if group["members"]]
    assert joined, f"no group metadata with members in {groups}"
    assert joined[-1]["protocolType"] == "consumer"
    assert joined[-1]["members"][0]["subscription"]["topics"] == ["orders"]


def test_dump_of_a_real_transactional_producer(tmp_path: Path) -> None:
    """A committed and an aborted transaction: data batches, COMMIT and ABORT markers, and __transaction_state."""
    with Broker(data_dir=tmp_path, transaction_state_log_num_partitions=1) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "dump-txn"})
        try:
            producer.init_transactions(TIMEOUT_S)
            producer.begin_transaction()
            producer.produce("tx", value=b"committed", partition=0)
            producer.commit_transaction(TIMEOUT_S)
            producer.begin_transaction()
            producer.produce("tx", value=b"aborted", partition=0)
            assert producer.flush(TIMEOUT_S) == 0
            producer.abort_transaction(TIMEOUT_S)
        finally:
            producer.close()

    batches = dump_json("--print-data", tmp_path / "tx-0")
    assert [(b["isTransactional"], b["isControl"]) for b in batches] == [(True, False), (True, True)] * 2
    assert len({(b["producerId"], b["producerEpoch"]) for b in batches}) == 1 and batches[0]["producerId"] >= 0
    assert [b["records"][0]["value"] for b in batches if not b["isControl"]] == ["committed", "aborted"]
    assert [b["records"][0]["control"]["type"] for b in batches if b["isControl"]] == ["COMMIT", "ABORT"]

    states = [r["decoded"] for b in dump_json(tmp_path / "__transaction_state-0") for r in b["records"]]
    assert {s["key"]["data"]["transactionalId"] for s in states} == {"dump-txn"}
    final = states[-1]["value"]["data"]
    assert final["producerId"] == batches[0]["producerId"]
    assert final["transactionStatus"] == 5  # CompleteAbort
    assert any(s["value"]["data"]["transactionPartitions"] == [{"topic": "tx", "partitionIds": [0]}] for s in states)


# ---- internal topics, written byte for byte as Kafka writes them ----


def kafka_string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_consumer_offsets_records_are_decoded_like_kafka(tmp_path: Path) -> None:
    # Offset commit, key type 1, value v1 (the version with expireTimestamp), packed by hand from Kafka's schemas.
    key = struct.pack(">h", 1) + kafka_string("g1") + kafka_string("orders") + struct.pack(">i", 2)
    value_v1 = struct.pack(">hq", 1, 42) + kafka_string("meta") + struct.pack(">qq", T0, T0 + 1000)
    # The same key at v4 (flexible) through group_records, then a tombstone and the group's metadata.
    value_v4 = gr.encode_offset_value(gr.OffsetCommitValue(offset=43, metadata="", commit_timestamp=T0 + 1, leader_epoch=5))
    subscription = Writer()
    subscription.int16(1)
    codec(CONSUMER_PROTOCOL_SUBSCRIPTION, 1).encode(subscription, {"topics": ["orders"], "user_data": None, "owned_partitions": []})
    member = gr.MemberMetadata("m-1", None, "client-1", "/127.0.0.1", 300000, 45000, subscription.getvalue(), b"\x00\x01garbage")
    group_value = gr.encode_group_value(gr.GroupMetadataValue("consumer", 3, "range", "m-1", T0, (member,)))
    records = [
        (key, value_v1),
        (key, value_v4),
        (gr.encode_key(gr.OffsetCommitKey("g1", "orders", 3)), None),
        (gr.encode_key(gr.GroupMetadataKey("g1")), group_value),
        (struct.pack(">h", 9) + b"future", b""),
    ]
    batch = build_batch([RecordInput(k, v, (), T0) for k, v in records])
    directory = write_partition(tmp_path, "__consumer_offsets", [batch])

    decoded = [r["decoded"] for r in dump_json(directory)[0]["records"]]  # decoder chosen from the directory name
    assert decoded[0] == {
        "key": {"type": 1, "data": {"group": "g1", "topic": "orders", "partition": 2}},
        "value": {"version": 1, "data": {"offset": 42, "metadata": "meta", "commitTimestamp": T0, "expireTimestamp": T0 + 1000}},
    }
    assert decoded[1]["value"] == {"version": 4, "data": {"offset": 43, "leaderEpoch": 5, "metadata": "", "commitTimestamp": T0 + 1}}
    assert decoded[2] == {"key": {"type": 1, "data": {"group": "g1", "topic": "orders", "partition": 3}}, "value": None}
    assert decoded[3]["key"] == {"type": 2, "data": {"group": "g1"}}
    group = decoded[3]["value"]
    assert group["version"] == 3
    assert {k: v for k, v in group["data"].items() if k != "members"} == {
        "protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "m-1", "currentStateTimestamp": T0,
    }
    assert group["data"]["members"] == [{
        "memberId": "m-1", "groupInstanceId": None, "clientId": "client-1", "clientHost": "/127.0.0.1",
        "rebalanceTimeout": 300000, "sessionTimeout": 45000,
        "subscription": {"topics": ["orders"], "userData": None, "ownedPartitions": []},
        "assignment": base64.b64encode(b"\x00\x01garbage").decode(),  # unparsable: kept as bytes, as Kafka does
    }]
    assert decoded[4] == {"error": "Unknown record type 9 at offset 4, skipping."}

    text = run_dump(directory).stdout
    assert '| offset: 0 CreateTime: ' in text
    assert (
        'key: {"type":"1","data":{"group":"g1","topic":"orders","partition":2}} '
        'payload: {"version":"1","data":{"offset":42,"metadata":"meta","commitTimestamp":1700000000000,'
        '"expireTimestamp":1700000001000}}'
    ) in text
    assert 'key: {"type":"1","data":{"group":"g1","topic":"orders","partition":3}} payload: <DELETE>' in text


def test_consumer_group_records_are_decoded_like_kafka(tmp_path: Path) -> None:
    """KIP-848 records (types 3-8, 16) as CoordinatorRecordMessageFormatter shows them: camelCase fields, tagged ones
    only when set, topic ids as Kafka's Uuid strings, and fields group_records drops (racks) still shown."""
    orders, payments = bytes(range(1, 17)), bytes([0xFB] * 16)
    orders_uuid, payments_uuid = "AQIDBAUGBwgJCgsMDQ4PEA", "-_v7-_v7-_v7-_v7-_v7-w"  # Uuid.toString of each
    # ConsumerGroupPartitionMetadataValue v0 as a Kafka broker wrote it, with the rack list minibroker never writes.
    racks = b"\x02" + struct.pack(">i", 0) + b"\x02\x02a\x00"  # [{partition 0, racks ["a"]}]
    partition_metadata = struct.pack(">hB", 0, 2) + orders + b"\x07orders" + struct.pack(">i", 1) + racks + b"\x00\x00"
    member = gr.ConsumerGroupMemberMetadataValue(None, "rack-1", "client-1", "/127.0.0.1", ("orders",), None, 300000, "uniform")
    records = [
        (gr.ConsumerGroupMetadataKey("g1"), gr.ConsumerGroupMetadataValue(epoch=5, metadata_hash=77)),
        (gr.ConsumerGroupPartitionMetadataKey("g1"), partition_metadata),
        (gr.ConsumerGroupMemberMetadataKey("g1", "m-1"), member),
        (gr.ConsumerGroupTargetAssignmentMetadataKey("g1"), gr.ConsumerGroupTargetAssignmentMetadataValue(5)),
        (
            gr.ConsumerGroupTargetAssignmentMemberKey("g1", "m-1"),
            gr.ConsumerGroupTargetAssignmentMemberValue({payments: frozenset({1}), orders: frozenset({2, 0})}),
        ),
        (
            gr.ConsumerGroupCurrentMemberAssignmentKey("g1", "m-1"),
            gr.ConsumerGroupCurrentMemberAssignmentValue(5, 4, 0, {orders: frozenset({0})}, {}),
        ),
        (gr.ConsumerGroupRegularExpressionKey("g1", "ord.*"), gr.ConsumerGroupRegularExpressionValue(("orders",), 3, T0)),
        (gr.ConsumerGroupMemberMetadataKey("g1", "m-1"), None),
    ]
    encoded = [(gr.encode_key(k), v if isinstance(v, bytes) else gr.encode_value(v)) for k, v in records]
    directory = write_partition(tmp_path, "__consumer_offsets", [build_batch([RecordInput(k, v, (), T0) for k, v in encoded])])

    decoded = [r["decoded"] for r in dump_json(directory)[0]["records"]]
    member_key = {"type": 5, "data": {"groupId": "g1", "memberId": "m-1"}}
    assert decoded == [
        {"key": {"type": 3, "data": {"groupId": "g1"}}, "value": {"version": 0, "data": {"epoch": 5, "metadataHash": 77}}},
        {
            "key": {"type": 4, "data": {"groupId": "g1"}},
            "value": {"version": 0, "data": {"topics": [{
                "topicId": orders_uuid, "topicName": "orders", "numPartitions": 1,
                "partitionMetadata": [{"partition": 0, "racks": ["a"]}],
            }]}},
        },
        {
            "key": member_key,
            "value": {"version": 0, "data": {
                "instanceId": None, "rackId": "rack-1", "clientId": "client-1", "clientHost": "/127.0.0.1",
                "subscribedTopicNames": ["orders"], "subscribedTopicRegex": None, "rebalanceTimeoutMs": 300000,
                "serverAssignor": "uniform",
            }},
        },
        {"key": {"type": 6, "data": {"groupId": "g1"}}, "value": {"version": 0, "data": {"assignmentEpoch": 5}}},
        {
            "key": {"type": 7, "data": {"groupId": "g1", "memberId": "m-1"}},
            "value": {"version": 0, "data": {"topicPartitions": [
                {"topicId": orders_uuid, "partitions": [0, 2]}, {"topicId": payments_uuid, "partitions": [1]},
            ]}},
        },
        {
            "key": {"type": 8, "data": {"groupId": "g1", "memberId": "m-1"}},
            "value": {"version": 0, "data": {
                "memberEpoch": 5, "previousMemberEpoch": 4, "state": 0,
                "assignedPartitions": [{"topicId": orders_uuid, "partitions": [0]}], "partitionsPendingRevocation": [],
            }},
        },
        {
            "key": {"type": 16, "data": {"groupId": "g1", "regularExpression": "ord.*"}},
            "value": {"version": 0, "data": {"topics": ["orders"], "version": 3, "timestamp": T0}},
        },
        {"key": member_key, "value": None},
    ]

    text = run_dump(directory).stdout
    assert 'key: {"type":"3","data":{"groupId":"g1"}} payload: {"version":"0","data":{"epoch":5,"metadataHash":77}}' in text
    assert 'key: {"type":"5","data":{"groupId":"g1","memberId":"m-1"}} payload: <DELETE>' in text


def test_transaction_state_records_are_decoded_like_kafka(tmp_path: Path) -> None:
    key = struct.pack(">h", 0) + kafka_string("txn-1")
    partitions = struct.pack(">i", 1) + kafka_string("orders") + struct.pack(">iii", 2, 0, 3)
    value_v0 = struct.pack(">hqhib", 0, 77, 4, 60000, 2) + partitions + struct.pack(">qq", T0 + 5, T0)
    batch = build_batch([RecordInput(key, value_v0, (), T0), RecordInput(key, None, (), T0)])
    directory = write_partition(tmp_path, "__transaction_state", [batch])

    decoded = [r["decoded"] for r in dump_json(directory)[0]["records"]]
    assert decoded == [
        {
            "key": {"type": 0, "data": {"transactionalId": "txn-1"}},
            "value": {"version": 0, "data": {
                "producerId": 77, "producerEpoch": 4, "transactionTimeoutMs": 60000, "transactionStatus": 2,
                "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 3]}],
                "transactionLastUpdateTimestampMs": T0 + 5, "transactionStartTimestampMs": T0,
            }},
        },
        {"key": {"type": 0, "data": {"transactionalId": "txn-1"}}, "value": None},
    ]


def test_decoder_flag_applies_to_any_directory(tmp_path: Path) -> None:
    key = gr.encode_key(gr.GroupMetadataKey("g"))
    directory = write_partition(tmp_path, "copied", [build_batch([RecordInput(key, None, (), T0)])])
    assert "decoded" not in dump_json("--print-data", directory)[0]["records"][0]
    assert dump_json("--offsets-decoder", directory)[0]["records"][0]["decoded"] == {
        "key": {"type": 2, "data": {"group": "g"}}, "value": None,
    }
