"""The codec of the request versions Kafka 4 dropped (KIP-896), against byte layouts written out by hand from
Kafka 3.9's message definitions: each version's fields in Kafka's order, old-only fields included."""

from __future__ import annotations

import struct
from typing import Any, Iterator

import pytest
from minibroker.protocol import frames, strict
from minibroker.protocol.messages import REQUESTS, RESPONSES
from minibroker.protocol.primitives import Reader, Writer
from minibroker.protocol.schema import codec


@pytest.fixture(autouse=True)
def lenient_codec() -> Iterator[None]:
    """Bodies here are written out whole; the strict check of responses is not what these tests are about."""
    with strict.suspended():
        yield


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(text: str | None) -> bytes:
    return i16(-1) if text is None else i16(len(text)) + text.encode()


def b(data: bytes) -> bytes:
    return i32(len(data)) + data


def array(*items: bytes) -> bytes:
    return i32(len(items)) + b"".join(items)


def encode(message: Any, version: int, body: dict) -> bytes:
    w = Writer()
    codec(message, version).encode(w, body)
    return w.getvalue()


def decode(message: Any, version: int, data: bytes) -> dict:
    r = Reader(data)
    out = codec(message, version).decode(r)
    assert r.pos == len(data), "the whole body is read"
    return out


def round_trip(message: Any, version: int, body: dict, wire: bytes) -> dict:
    """``body`` encodes to ``wire`` exactly and ``wire`` decodes back to a body holding what ``body`` says."""
    assert encode(message, version, body) == wire
    decoded = decode(message, version, wire)
    assert holds(decoded, body)
    return decoded


def holds(decoded: Any, wanted: Any) -> bool:
    """``decoded`` has every value ``wanted`` names, nested structs field by field (absent fields get defaults)."""
    if isinstance(wanted, dict):
        return all(key in decoded and holds(decoded[key], value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return len(decoded) == len(wanted) and all(holds(d, w) for d, w in zip(decoded, wanted))
    if isinstance(decoded, memoryview):
        decoded = bytes(decoded)
    return decoded == wanted


def test_list_offsets_v0_request_carries_max_num_offsets() -> None:
    body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 2, "timestamp": -2, "max_num_offsets": 5},
    ]}]}
    wire = i32(-1) + array(s("t") + array(i32(2) + i64(-2) + i32(5)))
    decoded = round_trip(REQUESTS[2], 0, body, wire)
    assert decoded["isolation_level"] == 0  # v2+: absent, its default
    # Left out, MaxNumOffsets is 1 (Kafka's default), not 0.
    unset = {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    assert encode(REQUESTS[2], 0, unset) == i32(-1) + array(s("t") + array(i32(0) + i64(-1) + i32(1)))


def test_list_offsets_v0_response_carries_the_offsets_array() -> None:
    body = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "old_style_offsets": [42, 0]},
    ]}]}
    wire = array(s("t") + array(i32(0) + i16(0) + array(i64(42), i64(0))))
    round_trip(RESPONSES[2], 0, body, wire)


def test_list_offsets_v1_has_no_old_style_fields() -> None:
    request = {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    assert encode(REQUESTS[2], 1, request) == i32(-1) + array(s("t") + array(i32(0) + i64(-1)))
    response = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 9, "old_style_offsets": [1]},
    ]}]}
    assert encode(RESPONSES[2], 1, response) == array(s("t") + array(i32(0) + i16(0) + i64(-1) + i64(9)))


def test_offset_commit_v0() -> None:
    body = {"group_id": "g", "topics": [{"name": "t", "partitions": [
        {"partition_index": 1, "committed_offset": 7, "committed_metadata": "m"},
    ]}]}
    wire = s("g") + array(s("t") + array(i32(1) + i64(7) + s("m")))
    decoded = round_trip(REQUESTS[8], 0, body, wire)
    assert decoded["generation_id_or_member_epoch"] == -1 and decoded["member_id"] == ""
    response = {"topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 0}]}]}
    round_trip(RESPONSES[8], 0, response, array(s("t") + array(i32(1) + i16(0))))


def test_offset_commit_v1_carries_the_commit_timestamp_before_the_metadata() -> None:
    body = {"group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "c-1", "topics": [
        {"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 10, "commit_timestamp": 1_700_000_000_000,
             "committed_metadata": None},
        ]},
    ]}
    wire = s("g") + i32(3) + s("c-1") + array(s("t") + array(i32(0) + i64(10) + i64(1_700_000_000_000) + s(None)))
    round_trip(REQUESTS[8], 1, body, wire)
    # v2 has RetentionTimeMs and no CommitTimestamp.
    v2 = dict(body, retention_time_ms=-1)
    assert encode(REQUESTS[8], 2, v2) == (
        s("g") + i32(3) + s("c-1") + i64(-1) + array(s("t") + array(i32(0) + i64(10) + s(None)))
    )


def test_offset_fetch_v0() -> None:
    request = {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
    round_trip(REQUESTS[9], 0, request, s("g") + array(s("t") + array(i32(0), i32(1))))
    response = {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "metadata": "", "error_code": 0},
    ]}]}
    # v0-1: no ThrottleTimeMs (v3+), no top-level ErrorCode (v2+), no leader epoch (v5+).
    round_trip(RESPONSES[9], 0, response, array(s("t") + array(i32(0) + i64(5) + s("") + i16(0))))


def test_join_group_v0_has_no_rebalance_timeout() -> None:
    request = {"group_id": "g", "session_timeout_ms": 30000, "member_id": "", "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": b"\x00\x01"}]}
    wire = s("g") + i32(30000) + s("") + s("consumer") + array(s("range") + b(b"\x00\x01"))
    decoded = round_trip(REQUESTS[11], 0, request, wire)
    assert decoded["rebalance_timeout_ms"] == -1
    response = {"error_code": 0, "generation_id": 1, "protocol_name": "range", "leader": "m", "member_id": "m",
                "members": [{"member_id": "m", "metadata": b"\x07"}]}
    wire = i16(0) + i32(1) + s("range") + s("m") + s("m") + array(s("m") + b(b"\x07"))
    round_trip(RESPONSES[11], 0, response, wire)


def test_metadata_v0() -> None:
    round_trip(REQUESTS[3], 0, {"topics": [{"name": "t"}]}, array(s("t")))
    assert encode(REQUESTS[3], 0, {"topics": []}) == array()  # v0: empty means every topic (no null)
    response = {
        "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
        "topics": [{"error_code": 0, "name": "t", "partitions": [
            {"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]},
        ]}],
    }
    wire = (array(i32(1) + s("h") + i32(9092))
            + array(i16(0) + s("t") + array(i16(0) + i32(0) + i32(1) + array(i32(1)) + array(i32(1)))))
    round_trip(RESPONSES[3], 0, response, wire)


def test_produce_v0_request_frame_and_response() -> None:
    records = b"\x00" * 26  # a message set's bytes, carried as they are
    body = {"acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": records}]},
    ]}
    frame = frames.encode_request(0, 0, 7, "cli", body)
    expected_body = i16(1) + i32(1000) + array(s("t") + array(i32(0) + b(records)))
    header = i16(0) + i16(0) + i32(7) + s("cli")  # header v1: no transactional id, no tagged fields
    assert frame == i32(len(header) + len(expected_body)) + header + expected_body
    parsed = frames.parse_request_header(memoryview(frame)[4:])
    decoded = frames.decode_request_body(parsed, memoryview(frame)[4:])
    assert decoded["transactional_id"] is None
    assert bytes(decoded["topic_data"][0]["partition_data"][0]["records"]) == records
    response = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5},
    ]}]}
    # v0: no ThrottleTimeMs (v1+, after the responses), no LogAppendTimeMs (v2+).
    round_trip(RESPONSES[0], 0, response, array(s("t") + array(i32(0) + i16(0) + i64(5))))
    v2 = {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1},
    ]}], "throttle_time_ms": 0}
    assert encode(RESPONSES[0], 2, v2) == array(s("t") + array(i32(0) + i16(0) + i64(5) + i64(-1))) + i32(0)


def test_fetch_v0_request_and_response() -> None:
    request = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 3, "partition_max_bytes": 1024}]},
    ]}
    wire = i32(-1) + i32(500) + i32(1) + array(s("t") + array(i32(0) + i64(3) + i32(1024)))
    decoded = round_trip(REQUESTS[1], 0, request, wire)
    assert decoded["max_bytes"] == 0x7FFFFFFF  # v3+: absent, its default
    response = {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 4, "records": b"xyz"},
    ]}]}
    round_trip(RESPONSES[1], 0, response, array(s("t") + array(i32(0) + i16(0) + i64(4) + b(b"xyz"))))


def test_create_topics_v0_and_delete_topics_v0() -> None:
    request = {"topics": [{"name": "t", "num_partitions": 2, "replication_factor": 1, "assignments": [],
                           "configs": [{"name": "cleanup.policy", "value": "compact"}]}], "timeout_ms": 100}
    wire = (array(s("t") + i32(2) + i16(1) + array() + array(s("cleanup.policy") + s("compact"))) + i32(100))
    decoded = round_trip(REQUESTS[19], 0, request, wire)
    assert decoded["validate_only"] is False  # v1+
    round_trip(RESPONSES[19], 0, {"topics": [{"name": "t", "error_code": 0}]}, array(s("t") + i16(0)))
    round_trip(REQUESTS[20], 0, {"topic_names": ["t"], "timeout_ms": 100}, array(s("t")) + i32(100))
    round_trip(RESPONSES[20], 0, {"responses": [{"name": "t", "error_code": 0}]}, array(s("t") + i16(0)))


def test_describe_configs_v0_is_default_flag() -> None:
    response = {"throttle_time_ms": 0, "results": [{"error_code": 0, "error_message": None, "resource_type": 2,
                "resource_name": "t", "configs": [
                    {"name": "n", "value": "v", "read_only": False, "is_default": True, "is_sensitive": False},
                ]}]}
    wire = i32(0) + array(i16(0) + s(None) + i8(2) + s("t") + array(s("n") + s("v") + i8(0) + i8(1) + i8(0)))
    round_trip(RESPONSES[32], 0, response, wire)
    v1 = response["results"][0]["configs"][0] | {"config_source": 5, "synonyms": []}
    body = {"throttle_time_ms": 0, "results": [response["results"][0] | {"configs": [v1]}]}
    # v1: ConfigSource in IsDefault's place, synonyms after IsSensitive.
    assert encode(RESPONSES[32], 1, body) == (
        i32(0) + array(i16(0) + s(None) + i8(2) + s("t") + array(s("n") + s("v") + i8(0) + i8(5) + i8(0) + array()))
    )


def test_advertised_ranges_stay_kafka_4s() -> None:
    """The codec's wider ranges are not what is served: the handler table keeps Kafka 4's minimums."""
    from minibroker.handlers import TABLE

    assert TABLE[2][:2] == (1, 11) and TABLE[0][0] == 3 and TABLE[1][0] == 4 and TABLE[8][0] == 2
    assert REQUESTS[2].valid[0] == 0 and REQUESTS[0].valid[0] == 0 and REQUESTS[1].valid[0] == 0
