"""Unit tests of the primitives, the schema-driven codec and frame handling."""

from __future__ import annotations

import struct
from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minibroker.protocol import frames, strict
from minibroker.protocol.messages import BY_NAME, REQUESTS, RESPONSES
from minibroker.protocol.primitives import ProtocolError, Reader, Writer
from minibroker.protocol.schema import Field, codec, in_range, snake_case


@pytest.fixture(autouse=True)
def lenient_codec() -> Iterator[None]:
    """These tests are of the codec itself, partial messages and defaults included: the strict check of responses
    (tests/test_strict_codec.py) stands aside."""
    with strict.suspended():
        yield


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])
def test_varint_round_trip(value: int) -> None:
    w = Writer()
    w.varint(value)
    assert Reader(w.getvalue()).varint() == value


def test_unsigned_varint_bytes() -> None:
    w = Writer()
    w.uvarint(300)
    assert w.getvalue() == b"\xac\x02"


def test_compact_and_classic_strings() -> None:
    w = Writer()
    w.string("héllo", compact=True)
    w.string(None, compact=True)
    w.string("abc", compact=False)
    w.string(None, compact=False)
    data = w.getvalue()
    assert data == b"\x07h\xc3\xa9llo" + b"\x00" + b"\x00\x03abc" + b"\xff\xff"
    r = Reader(data)
    assert [r.compact_nullable_string(), r.compact_nullable_string(), r.nullable_string(), r.nullable_string()] == [
        "héllo", None, "abc", None,
    ]


def test_snake_case_names() -> None:
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("TopicId") == "topic_id"
    assert snake_case("ZkMigrationReady") == "zk_migration_ready"


def test_tagged_fields_round_trip_and_default_omitted() -> None:
    message = RESPONSES[18]
    body = {"api_keys": [{"api_key": 0, "min_version": 3, "max_version": 11}], "finalized_features_epoch": 7}
    w = Writer()
    codec(message, 3).encode(w, body)
    decoded = codec(message, 3).decode(Reader(w.getvalue()))
    assert decoded["finalized_features_epoch"] == 7
    assert decoded["supported_features"] == []
    w2 = Writer()
    codec(message, 3).encode(w2, {"api_keys": []})
    assert w2.getvalue().endswith(b"\x00")  # empty tag buffer: defaults are not written


def test_unknown_tags_are_skipped() -> None:
    message = REQUESTS[18]
    w = Writer()
    codec(message, 3).encode(w, {"client_software_name": "a", "client_software_version": "b"})
    data = w.getvalue()[:-1] + b"\x01\x05\x02xy"  # one unknown tag (5) of two bytes
    assert codec(message, 3).decode(Reader(data))["client_software_name"] == "a"


@pytest.mark.parametrize("version", [5, 6, 7, 9])
def test_none_is_null_only_where_the_version_allows_it(version: int) -> None:
    """JoinGroup's protocol_name is nullable from v7: before that a None is written as the empty string (what
    Kafka answers when there is no protocol), never as a null the client would refuse."""
    body = {"error_code": 25, "generation_id": -1, "protocol_name": None, "leader": "", "member_id": "", "members": []}
    w = Writer()
    codec(RESPONSES[11], version).encode(w, body)
    decoded = codec(RESPONSES[11], version).decode(Reader(w.getvalue()))
    assert decoded["protocol_name"] == (None if version >= 7 else "")


@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_response_round_trip(version: int) -> None:
    body = {
        "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [{"error_code": 0, "name": "t", "topic_id": bytes(range(16)), "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 0,
                                    "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}]}],
    }
    w = Writer()
    codec(RESPONSES[3], version).encode(w, body)
    decoded = codec(RESPONSES[3], version).decode(Reader(w.getvalue()))
    assert decoded["topics"][0]["name"] == "t"
    assert decoded["brokers"][0]["port"] == 9092
    assert decoded["topics"][0]["partitions"][0]["isr_nodes"] == [1]


def test_large_records_stay_separate_parts() -> None:
    payload = memoryview(bytearray(b"x" * 10_000))
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": payload}]}]}
    parts = frames.encode_response(1, 12, 5, body)
    assert any(part is payload for part in parts)
    size = struct.unpack_from(">i", parts[0])[0]
    assert size == sum(len(p) for p in parts) - 4


def test_small_response_is_one_buffer_with_its_size() -> None:
    parts = frames.encode_response(12, 4, 7, {"throttle_time_ms": 0, "error_code": 27})
    assert len(parts) == 1
    assert bytes(parts[0]) == struct.pack(">iiBihB", 12, 7, 0, 0, 27, 0)
    assert frames.decode_response(12, 4, bytes(parts[0])[4:]) == (7, {"throttle_time_ms": 0, "error_code": 27})


def test_frame_decoder_splits_and_joins() -> None:
    decoder = frames.FrameReader(100)
    stream = b"\x00\x00\x00\x02ab\x00\x00\x00\x01c"
    got = [bytes(f) for i in range(len(stream)) for f in decoder.feed(stream[i : i + 1])]
    assert got == [b"ab", b"c"]


@pytest.mark.parametrize("prefix", [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x00\x00\x00\x65"])
def test_frame_decoder_refuses_bad_prefix_before_buffering(prefix: bytes) -> None:
    with pytest.raises(frames.FrameTooLarge):
        frames.FrameReader(100).feed(prefix)


def test_request_round_trip_through_frames() -> None:
    data = frames.encode_request(3, 12, 42, "client", {"topics": None, "allow_auto_topic_creation": True})
    frame = frames.FrameReader(1 << 20).feed(data)[0]
    header = frames.parse_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 12, 42, "client")
    assert frames.decode_request_body(header, frame)["topics"] is None


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(REQUESTS)), st.integers(0, 13), st.binary(max_size=200))
def test_random_bodies_only_raise_protocol_error(api_key: int, version: int, data: bytes) -> None:
    message = REQUESTS[api_key]
    if not message.valid[0] <= version <= message.valid[1]:
        return
    try:
        codec(message, version).decode(Reader(data))
    except ProtocolError:
        pass


def test_all_messages_build_codecs_for_every_version() -> None:
    for message in BY_NAME.values():
        if message.valid is None:
            continue
        for version in range(message.valid[0], message.valid[1] + 1):
            w = Writer()
            codec(message, version).encode(w, {})
            assert isinstance(codec(message, version).decode(Reader(w.getvalue())), dict)


SCALARS = {
    "bool": st.booleans(), "int8": st.integers(-(2**7), 2**7 - 1), "int16": st.integers(-(2**15), 2**15 - 1),
    "uint16": st.integers(0, 2**16 - 1), "int32": st.integers(-(2**31), 2**31 - 1), "uint32": st.integers(0, 2**32 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1), "float64": st.floats(allow_nan=False), "uuid": st.binary(min_size=16, max_size=16),
    "string": st.text(max_size=140), "bytes": st.binary(max_size=600), "records": st.binary(max_size=600),
}


def body_of(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict]:
    """Messages of one version as the codec takes them: any field may be left out (its default is written)."""
    present = [f for f in fields if in_range(version, f.versions)]
    return st.fixed_dictionaries({}, optional={snake_case(f.name): value_of(f, version) for f in present})


def value_of(f: Field, version: int) -> st.SearchStrategy:
    element = f.element_type
    if element is not None and f.is_struct:
        value = st.lists(st.deferred(lambda: body_of(f.fields, version)), max_size=3)
    elif element is not None:  # long enough, sometimes, for a compact length of two bytes
        value = st.lists(SCALARS[element], max_size=3) | st.lists(SCALARS[element], min_size=130, max_size=130)
    else:
        value = st.deferred(lambda: body_of(f.fields, version)) if f.is_struct else SCALARS[f.type]
    return value | st.none() if in_range(version, f.nullable) else value


MESSAGE_VERSIONS = [(m.name, v) for m in BY_NAME.values() if m.valid is not None for v in range(m.valid[0], m.valid[1] + 1)]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_every_message_round_trips_through_the_generated_codec(data: st.DataObject) -> None:
    """Encode any message of any version, decode it and encode that again: the same bytes (nested structs, arrays,
    compact lengths past one byte, nulls, tagged fields and defaults included)."""
    name, version = data.draw(st.sampled_from(MESSAGE_VERSIONS))
    message = BY_NAME[name]
    body = data.draw(body_of(message.fields, version))
    first = Writer()
    codec(message, version).encode(first, body)
    encoded = first.getvalue()
    decoded = codec(message, version).decode(Reader(encoded))
    again = Writer()
    codec(message, version).encode(again, decoded)
    assert again.getvalue() == encoded


@pytest.mark.parametrize("client_id, tags", [
    ("c", b"\x00"),  # the usual header v2: no tagged fields
    (None, b"\x00"),  # a null client id
    ("\u00e9t\u00e9", b"\x01\x07\x02ab"),  # a tagged field the broker does not know, skipped
])
def test_request_headers_v2_are_read_with_their_tagged_fields(client_id: str | None, tags: bytes) -> None:
    name = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id.encode())) + client_id.encode()
    body = b"BODY"
    frame = memoryview(struct.pack(">hhi", 3, 12, 7) + name + tags + body)
    header = frames.parse_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 12, 7, client_id)
    assert bytes(frame[header.body_offset:]) == body


@pytest.mark.parametrize("frame, problem", [
    (b"\x00\x03\x00\x0c\x00\x00", "a request header of 6 bytes"),
    (b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x09ab", "overruns the request header"),
    (b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x02\xff\xfe", "invalid UTF-8"),
])
def test_malformed_request_headers_are_protocol_errors(frame: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        frames.parse_request_header(memoryview(frame))
