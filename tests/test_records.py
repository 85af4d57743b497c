"""Record batch V2: validation, in-place rewrites, encode/decode, control records, and kafka-python interop."""

from __future__ import annotations

import itertools
import struct
import sys

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import encode_varint as kafka_encode_varint
from minibroker.protocol.records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    UNSUPPORTED_COMPRESSION_TYPE,
    BatchHeader,
    ControlRecordType,
    InvalidRecordError,
    Record,
    RecordInput,
    assign_offsets,
    batch_crc_ok,
    build_batch,
    build_control_batch,
    decode_all,
    decode_batch,
    iter_batches,
    iter_records,
    parse_control_record,
    parse_header,
    set_log_append_time,
    validate_batches,
)
from minibroker.protocol.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

CODECS = [0, 1, 2, 3, 4]
T0 = 1_700_000_000_000

SAMPLE = [
    RecordInput(b"key-0", b"value-0" * 20, (("trace", b"abc"), ("empty", b""), ("none", None)), T0),
    RecordInput(None, b"value-1" * 20, (), T0 + 5),
    RecordInput(b"key-2", None, (("h\u00e9ader", b"\x00\xff"),), T0 - 3),
    RecordInput(b"", b"", (), T0 + 1000),
]


def expected_records(inputs: list[RecordInput], base_offset: int = 0) -> list[Record]:
    return [
        Record(base_offset + i, item.timestamp, item.key, item.value, list(item.headers))
        for i, item in enumerate(inputs)
    ]


def recompute_crc(batch: bytearray, position: int = 0) -> None:
    header = parse_header(batch, position)
    crc = crc32c.crc32c(bytes(batch[position + 21 : position + header.size]))
    struct.pack_into(">I", batch, position + 17, crc)


def expect_error(code: int, buf: bytes | bytearray) -> InvalidRecordError:
    with pytest.raises(InvalidRecordError) as info:
        validate_batches(buf)
    assert info.value.error_code == code, info.value.message
    return info.value


# ---- varints ----


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"), (300, "d804")],
)
def test_varint_known_encodings(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


def test_varint_extremes() -> None:
    assert encode_varint(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert encode_varint(-(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert len(encode_varlong(-(2**63))) == 10
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_varlong(2**63)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_matches_kafka_python(value: int) -> None:
    theirs = bytearray()
    kafka_encode_varint(value, theirs.append)
    ours = encode_varint(value)
    assert ours == theirs
    assert decode_varint(b"\xaa" + ours + b"\xbb", 1) == (value, 1 + len(ours))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varlong(value)
    assert decode_varlong(encoded, 0) == (value, len(encoded))


def test_varint_rejects_truncated_and_over_long() -> None:
    with pytest.raises(ValueError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(ValueError):
        decode_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(ValueError):
        decode_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(ValueError):
        decode_varint(b"\x02\x80\x01", 1, end=2)


# ---- build / validate / decode ----


@pytest.mark.parametrize("codec", CODECS)
def test_build_validate_decode_round_trip(codec: int) -> None:
    batch = build_batch(SAMPLE, compression=codec, base_offset=40)
    [header] = validate_batches(batch)
    assert header.compression == codec
    assert header.records_count == 4
    assert header.last_offset_delta == 3
    assert header.base_offset == 40
    assert header.base_timestamp == T0
    assert header.max_timestamp == T0 + 1000
    assert header.size == len(batch)
    assert header.timestamp_type == 0
    assert decode_batch(batch, header) == expected_records(SAMPLE, 40)


@pytest.mark.parametrize("codec", CODECS)
def test_many_records_use_multi_byte_varints(codec: int) -> None:
    inputs = [RecordInput(str(i).encode(), bytes(i % 300), (), T0 + i * 1000) for i in range(500)]
    batch = build_batch(inputs, compression=codec)
    [header] = validate_batches(batch)
    assert decode_batch(batch, header) == expected_records(inputs)


def test_tuple_inputs_and_default_timestamps() -> None:
    batch = build_batch([(b"k", b"v"), (None, b"w", [("h", b"x")])], base_timestamp=T0)
    [(header, records)] = decode_all(batch)
    assert records == [Record(0, T0, b"k", b"v", []), Record(1, T0, None, b"w", [("h", b"x")])]
    assert header.max_timestamp == T0


def test_base_timestamp_defaults_to_first_record_then_now() -> None:
    [(header, _)] = decode_all(build_batch([RecordInput(b"k", b"v", timestamp=T0 + 7)]))
    assert header.base_timestamp == T0 + 7
    [(header, _)] = decode_all(build_batch([(b"k", b"v")]))
    assert header.base_timestamp > T0


def test_build_rejects_empty_batch() -> None:
    with pytest.raises(ValueError):
        build_batch([])


def test_producer_fields_and_flags() -> None:
    batch = build_batch(
        SAMPLE,
        producer_id=1234,
        producer_epoch=5,
        base_sequence=77,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    [header] = validate_batches(batch)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 5, 77)
    assert header.is_transactional and not header.is_control
    assert header.partition_leader_epoch == 9
    assert header.attributes == 0x10


def test_several_concatenated_batches() -> None:
    first = build_batch(SAMPLE[:2], compression=3)
    second = build_batch(SAMPLE[2:], base_offset=2)
    headers = validate_batches(first + second)
    assert [h.position for h in headers] == [0, len(first)]
    assert [h.records_count for h in headers] == [2, 2]
    decoded = decode_all(first + second)
    assert [r for _, records in decoded for r in records] == expected_records(SAMPLE)


def test_validate_accepts_memoryview_and_bytearray() -> None:
    batch = build_batch(SAMPLE)
    assert validate_batches(memoryview(batch)) == validate_batches(bytearray(batch)) == validate_batches(batch)


# ---- validation failures ----


def test_empty_input() -> None:
    assert "no batches" in expect_error(INVALID_RECORD, b"").message


@pytest.mark.parametrize("offset", [21, 22, 30, 45, 60, 61, -1])
def test_crc_mismatch_is_corrupt_message(offset: int) -> None:
    batch = bytearray(build_batch(SAMPLE, compression=1))
    batch[offset] ^= 0x01
    expect_error(CORRUPT_MESSAGE, batch)
    assert not batch_crc_ok(batch, parse_header(batch))


def test_crc_mismatch_in_second_batch() -> None:
    second = bytearray(build_batch(SAMPLE))
    second[70] ^= 0x40
    expect_error(CORRUPT_MESSAGE, build_batch(SAMPLE) + second)


@pytest.mark.parametrize("offset", [0, 7, 12, 15])
def test_bytes_outside_crc_do_not_matter(offset: int) -> None:
    batch = bytearray(build_batch(SAMPLE))
    batch[offset] ^= 0x55
    validate_batches(batch)


@pytest.mark.parametrize("keep", [5, 11, 16, 17, 60, 61, -1])
def test_truncated_batch(keep: int) -> None:
    """Kafka answers INVALID_RECORD when no complete batch is present; a partial tail gets the same answer."""
    batch = build_batch(SAMPLE)
    expect_error(INVALID_RECORD, batch[:keep])
    expect_error(INVALID_RECORD, batch + batch[:keep])


@pytest.mark.parametrize(
    ("magic", "code"), [(0, INVALID_RECORD), (1, INVALID_RECORD), (3, CORRUPT_MESSAGE), (0xFF, CORRUPT_MESSAGE)]
)
def test_wrong_magic(magic: int, code: int) -> None:
    batch = bytearray(build_batch(SAMPLE))
    batch[16] = magic
    expect_error(code, batch)


@pytest.mark.parametrize("length", [-1, 0, 14, 48])
def test_batch_length_too_small(length: int) -> None:
    batch = bytearray(build_batch(SAMPLE))
    struct.pack_into(">i", batch, 8, length)
    expect_error(CORRUPT_MESSAGE, batch)


def test_batch_length_past_end() -> None:
    batch = bytearray(build_batch(SAMPLE))
    struct.pack_into(">i", batch, 8, len(batch))
    expect_error(INVALID_RECORD, batch)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_is_corrupt_message(codec_id: int) -> None:
    batch = bytearray(build_batch(SAMPLE))
    batch[22] = (batch[22] & ~0x07) | codec_id
    recompute_crc(batch)
    expect_error(CORRUPT_MESSAGE, batch)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(batch, parse_header(batch))
    assert info.value.error_code == CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", [0, 4])
@pytest.mark.parametrize(("count", "last_delta"), [(0, -1), (-1, 3), (4, 2), (4, 4), (3, 3)])
def test_count_and_last_offset_delta_must_agree(codec: int, count: int, last_delta: int) -> None:
    batch = bytearray(build_batch(SAMPLE, compression=codec))
    struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">i", batch, 23, last_delta)
    recompute_crc(batch)
    expect_error(INVALID_RECORD, batch)


def test_validate_never_decodes_records() -> None:
    """Garbage inside a well-framed batch with a valid CRC passes: validation is header + CRC only."""
    batch = bytearray(build_batch(SAMPLE, compression=4))
    batch[61:] = b"\xff" * (len(batch) - 61)
    recompute_crc(batch)
    [header] = validate_batches(batch)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(batch, header)
    assert info.value.error_code == CORRUPT_MESSAGE


# ---- iter_batches / batch_crc_ok ----


def test_iter_batches_stops_quietly_at_partial_tail() -> None:
    first, second = build_batch(SAMPLE), build_batch(SAMPLE, compression=2)
    log = first + second
    assert [h.position for h in iter_batches(log)] == [0, len(first)]
    assert [h.position for h in iter_batches(log + second[:40])] == [0, len(first)]
    assert [h.position for h in iter_batches(log + b"\x00" * 100)] == [0, len(first)]
    assert [h.position for h in iter_batches(log, start=len(first))] == [len(first)]
    assert list(iter_batches(b"")) == []
    assert list(iter_batches(first[:-1])) == []


def test_iter_batches_does_not_check_crc() -> None:
    batch = bytearray(build_batch(SAMPLE))
    assert batch_crc_ok(batch, parse_header(batch))
    batch[-1] ^= 0x01
    [header] = iter_batches(batch)
    assert not batch_crc_ok(batch, header)


# ---- in-place rewrites ----


def test_assign_offsets_keeps_crc_valid() -> None:
    first = build_batch(SAMPLE, compression=3)
    buf = bytearray(first + build_batch(SAMPLE))
    header = validate_batches(buf)[1]
    crc_before = buf[len(first) + 17 : len(first) + 21]
    assign_offsets(buf, header, 1_000_000, 42)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000_000, 42)
    pos = len(first)
    assert buf[pos : pos + 8] == struct.pack(">q", 1_000_000)
    assert buf[pos + 12 : pos + 16] == struct.pack(">i", 42)
    assert buf[pos + 17 : pos + 21] == crc_before
    assert validate_batches(buf)[1] == header
    assert [r.offset for r in decode_batch(buf, header)] == [1_000_000 + i for i in range(4)]
    assert buf[: len(first)] == first


@pytest.mark.parametrize("codec", CODECS)
def test_set_log_append_time(codec: int) -> None:
    buf = bytearray(build_batch(SAMPLE, compression=codec, is_transactional=True))
    header = validate_batches(buf)[0]
    set_log_append_time(buf, header, T0 + 99_999)
    assert header == validate_batches(buf)[0]
    assert header.timestamp_type == 1
    assert header.max_timestamp == T0 + 99_999
    assert header.base_timestamp == T0  # Kafka's setMaxTimestamp leaves baseTimestamp alone
    assert header.compression == codec and header.is_transactional
    assert struct.unpack_from(">h", buf, 21)[0] == 0x08 | 0x10 | codec
    assert {r.timestamp for r in decode_batch(buf, header)} == {T0 + 99_999}
    theirs = DefaultRecordBatch(bytes(buf))
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert [r.timestamp for r in theirs] == [T0 + 99_999] * 4


def test_set_log_append_time_twice_is_stable() -> None:
    buf = bytearray(build_batch(SAMPLE))
    header = parse_header(buf)
    set_log_append_time(buf, header, T0)
    snapshot = bytes(buf)
    set_log_append_time(buf, header, T0)
    assert buf == snapshot


def test_set_log_append_time_clears_unknown_attribute_bits() -> None:
    buf = bytearray(build_batch(SAMPLE))
    struct.pack_into(">h", buf, 21, 0x0180)
    recompute_crc(buf)
    header = parse_header(buf)
    set_log_append_time(buf, header, T0)
    assert header.attributes == 0x08
    assert batch_crc_ok(buf, header)


# ---- control records ----


def test_control_batch_layout_byte_for_byte() -> None:
    batch = build_control_batch(
        commit=True,
        producer_id=0x0102030405060708,
        producer_epoch=3,
        coordinator_epoch=0x0A0B0C0D,
        base_offset=500,
        timestamp=T0,
    )
    assert len(batch) == 78
    assert batch[0:8] == struct.pack(">q", 500)  # baseOffset
    assert batch[8:12] == struct.pack(">i", 66)  # batchLength = 78 - 12
    assert batch[12:16] == b"\xff\xff\xff\xff"  # partitionLeaderEpoch -1
    assert batch[16] == 2  # magic
    assert batch[17:21] == struct.pack(">I", crc32c.crc32c(batch[21:]))
    assert batch[21:23] == b"\x00\x30"  # attributes: transactional | control, CreateTime, no compression
    assert batch[23:27] == b"\x00\x00\x00\x00"  # lastOffsetDelta
    assert batch[27:35] == struct.pack(">q", T0)  # baseTimestamp
    assert batch[35:43] == struct.pack(">q", T0)  # maxTimestamp
    assert batch[43:51] == bytes.fromhex("0102030405060708")  # producerId
    assert batch[51:53] == b"\x00\x03"  # producerEpoch
    assert batch[53:57] == b"\xff\xff\xff\xff"  # baseSequence -1
    assert batch[57:61] == b"\x00\x00\x00\x01"  # recordsCount
    assert batch[61] == 0x20  # record length varint: 16
    assert batch[62] == 0x00  # record attributes
    assert batch[63] == 0x00  # timestampDelta
    assert batch[64] == 0x00  # offsetDelta
    assert batch[65] == 0x08  # key length varint: 4
    assert batch[66:70] == b"\x00\x00\x00\x01"  # key: version 0, type 1 COMMIT
    assert batch[70] == 0x0C  # value length varint: 6
    assert batch[71:77] == b"\x00\x00\x0a\x0b\x0c\x0d"  # value: version 0, coordinatorEpoch
    assert batch[77] == 0x00  # header count


@pytest.mark.parametrize(("commit", "kind"), [(True, ControlRecordType.COMMIT), (False, ControlRecordType.ABORT)])
def test_control_batch_round_trip(commit: bool, kind: int) -> None:
    batch = build_control_batch(commit=commit, producer_id=77, producer_epoch=2, coordinator_epoch=11, timestamp=T0)
    [header] = validate_batches(batch)
    assert header.is_control and header.is_transactional
    assert header.base_sequence == -1
    [record] = decode_batch(batch, header)
    assert parse_control_record(record) == (kind, 11)
    theirs = DefaultRecordBatch(bytes(batch))
    assert theirs.is_control_batch and theirs.is_transactional
    [marker] = list(theirs)
    assert marker.type == kind and marker.commit is commit


def test_parse_control_record_other_types_and_errors() -> None:
    leader_change = Record(0, 0, b"\x00\x00\x00\x02", b"\x00\x00", [])
    assert parse_control_record(leader_change) == (ControlRecordType.LEADER_CHANGE, -1)
    bad = [
        (None, b""),  # no key
        (b"\x00\x00\x00", b""),  # key too short
        (b"\xff\xff\x00\x01", b"\x00" * 6),  # negative key version
        (b"\x00\x00\x00\x01", b"\x00\x00"),  # COMMIT with a value too short
        (b"\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x00"),  # ABORT with a negative marker version
    ]
    for key, value in bad:
        with pytest.raises(InvalidRecordError) as info:
            parse_control_record(Record(0, 0, key, value, []))
        assert info.value.error_code == INVALID_RECORD


# ---- malformed record bodies ----


def record_batch_with_body(body: bytes, count: int = 1) -> bytearray:
    batch = bytearray(build_batch([RecordInput(b"k", b"v", timestamp=T0)]))
    batch[61:] = body
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">i", batch, 57, count)
    struct.pack_into(">i", batch, 23, count - 1)
    recompute_crc(batch)
    return batch


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (b"\x0e\x00\x00\x00\x02k\x02v\x00", 1),  # length 7 cuts off the header count
        (b"\x12\x00\x00\x00\x02k\x02v\x00\x00", 1),  # length 9: one unread byte inside the record
        (b"\x10\x00\x00\x00\x0ak\x02v\x00", 1),  # key length 5 runs past the record
        (b"\x12\x00\x00\x00\x02k\x02v\x02\x00", 1),  # header with an empty key, but no value length
        (b"\x12\x00\x00\x00\x02k\x02v\x02\x01", 1),  # negative header key length
        (b"\x10\x00\x00\x00\x02k\x02v\x01", 1),  # negative header count
        (b"\x10\x00\x00\x00\x02k\x02v\x00\x00", 1),  # trailing byte after the last record
        (b"\x10\x00\x00\x00\x02k\x02v\x00", 2),  # fewer records than recordsCount
        (b"\x1c\x00\x00\x00\x02k\x02v\x00", 1),  # record length past the end
        (b"\x01", 1),  # negative record length
    ],
)
def test_malformed_record_body(body: bytes, count: int) -> None:
    batch = record_batch_with_body(body, count)
    [header] = validate_batches(batch)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(batch, header)
    assert info.value.error_code == INVALID_RECORD


def test_decode_rejects_negative_records_count() -> None:
    batch = record_batch_with_body(b"\x10\x00\x00\x00\x02k\x02v\x00", count=-1)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(batch, parse_header(batch))
    assert info.value.error_code == INVALID_RECORD


def test_decode_without_snappy_library_is_unsupported_compression(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = build_batch(SAMPLE, compression=2)
    [header] = validate_batches(batch)
    monkeypatch.setitem(sys.modules, "cramjam", None)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(batch, header)
    assert info.value.error_code == UNSUPPORTED_COMPRESSION_TYPE


def test_decode_failure_leaves_the_buffer_resizable() -> None:
    """Storage may catch the error and then truncate its bytearray: no view may outlive the call."""
    buf = record_batch_with_body(b"\xff" * 20)
    with pytest.raises(InvalidRecordError) as info:
        decode_batch(buf, parse_header(buf))
    assert info.value.__cause__ is not None
    buf += b"more"


def test_well_formed_hand_encoded_record() -> None:
    batch = record_batch_with_body(b"\x14\x00\x04\x00\x02k\x01\x02\x02h\x01")
    [header] = validate_batches(batch)
    assert decode_batch(batch, header) == [Record(0, T0 + 2, b"k", None, [("h", None)])]


# ---- interop with kafka-python (an independent client encoder/decoder) ----


def kafka_python_batch(codec: int, inputs: list[RecordInput], **producer: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=producer.get("producer_id", -1),
        producer_epoch=producer.get("producer_epoch", -1),
        base_sequence=producer.get("base_sequence", -1),
        batch_size=1 << 20,
    )
    for offset, item in enumerate(inputs):
        assert builder.append(offset, item.timestamp, item.key, item.value, list(item.headers)) is not None
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_reads_kafka_python_batches(codec: int) -> None:
    batch = kafka_python_batch(codec, SAMPLE, producer_id=9, producer_epoch=1, base_sequence=100)
    [header] = validate_batches(batch)
    assert header.compression == codec  # the sample compresses, so kafka-python kept the codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 1, 100)
    assert decode_batch(batch, header) == expected_records(SAMPLE)


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    batch = build_batch(SAMPLE, compression=codec, base_offset=10, producer_id=3, producer_epoch=0, base_sequence=5)
    theirs = DefaultRecordBatch(batch)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.base_offset, theirs.last_offset_delta, theirs.records_count) == (10, 3, 4)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (3, 0, 5)
    assert theirs.max_timestamp == T0 + 1000
    decoded = [Record(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert decoded == expected_records(SAMPLE, 10)


def test_same_bytes_as_kafka_python_uncompressed() -> None:
    """kafka-python stamps partitionLeaderEpoch 0; with that, our encoding is identical byte for byte."""
    assert build_batch(SAMPLE, partition_leader_epoch=0) == kafka_python_batch(0, SAMPLE)


# ---- robustness (validate_batches faces untrusted network bytes) ----


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_validate_random_bytes_raises_only_invalid_record_error(data: bytes) -> None:
    try:
        validate_batches(data)
    except InvalidRecordError as exc:
        assert exc.error_code in (CORRUPT_MESSAGE, INVALID_RECORD)
    list(iter_batches(data))


def mutated_batch() -> st.SearchStrategy[tuple[bytearray, bool]]:
    """A real batch with a few bytes overwritten, optionally with the CRC fixed so deeper checks run."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[bytearray, bool]:
        codec = draw(st.sampled_from(CODECS))
        batch = bytearray(build_batch(SAMPLE, compression=codec))
        for _ in range(draw(st.integers(1, 4))):
            batch[draw(st.integers(8, len(batch) - 1))] = draw(st.integers(0, 255))
        cut = draw(st.integers(0, 8))
        if cut:
            del batch[-cut:]
        fix_crc = draw(st.booleans())
        return batch, fix_crc

    return build()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_batch())
def test_mutated_batches_raise_only_invalid_record_error(case: tuple[bytearray, bool]) -> None:
    batch, fix_crc = case
    if fix_crc and len(batch) >= 61 and list(iter_batches(batch)):
        recompute_crc(batch)
    try:
        headers = validate_batches(batch)
    except InvalidRecordError:
        headers = list(iter_batches(batch))
    for header in headers:
        try:
            decode_batch(batch, header)
        except InvalidRecordError as exc:
            assert exc.error_code in (CORRUPT_MESSAGE, INVALID_RECORD)


def test_batch_header_api_is_unchanged() -> None:
    header = parse_header(build_batch(SAMPLE, compression=2, is_transactional=True))
    assert isinstance(header, BatchHeader)
    assert header.size == header.batch_length + 12
    assert header.last_offset == header.base_offset + 3
    assert header.compression == 2 and header.is_transactional and not header.is_control


@pytest.mark.parametrize("compression", [0, 1, 3, 4])  # none, gzip, lz4, zstd
def test_iter_records_decodes_only_the_records_asked_for(compression: int) -> None:
    data = bytearray(build_batch([RecordInput(f"k{i}".encode(), f"v{i}".encode()) for i in range(1000)],
                                 base_offset=100, compression=compression))
    header = parse_header(data, 0)
    assert [(r.offset, r.value) for r in itertools.islice(iter_records(data, header, 105), 2)] == [
        (105, b"v5"), (106, b"v6")]
    assert [r.offset for r in iter_records(data, header)] == list(range(100, 1100))
    assert [r.offset for r in iter_records(data, header, 1099)] == [1099]


def test_iter_records_stops_at_a_malformed_record_only_when_it_gets_there() -> None:
    data = bytearray(build_batch([RecordInput(None, b"x" * 10) for _ in range(3)]))
    header = parse_header(data, 0)
    data[-1] = 0x02  # the last record now claims a header it does not have
    records = iter_records(data, header)
    assert [r.offset for r in itertools.islice(records, 2)] == [0, 1]
    with pytest.raises(InvalidRecordError, match="malformed record"):
        next(records)
