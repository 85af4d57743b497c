"""Message sets of magic 0 and 1: produced ones validated and converted to V2 batches as Kafka's LogValidator does,
stored V2 batches down-converted for old fetches as Kafka's RecordsUtil.downConvert and LazyDownConversionRecords do."""

from __future__ import annotations

import struct
import zlib

import pytest
from minibroker.protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from minibroker.protocol.message_sets import (
    MAGIC_V0,
    MAGIC_V1,
    OutMessage,
    _with_lz4_header_checksum,
    build_message_set,
    down_convert,
    read_messages,
    to_record_batch,
)
from minibroker.protocol.records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    UNSUPPORTED_COMPRESSION_TYPE,
    InvalidRecordError,
    RecordInput,
    build_batch,
    build_control_batch,
    decode_all,
    parse_header,
    set_log_append_time,
)

MESSAGE_TOO_LARGE = 10
LIMIT = 1 << 20
T0 = 1_700_000_000_000
CODECS = [NONE, GZIP, SNAPPY, LZ4]


def messages(count: int = 4, first: int = 0) -> list[OutMessage]:
    return [
        OutMessage(first + i, T0 + 10 * i, None if i % 2 else b"key-%d" % i, b"value-%d" % i * 3)
        for i in range(count)
    ]


def converted(data: bytes) -> tuple:
    """The one V2 batch the message set converts to: (header, records)."""
    batch = to_record_batch(data, LIMIT)
    assert batch is not None
    ((header, records),) = decode_all(bytes(batch))
    return header, records


def refused(data: bytes, limit: int = LIMIT) -> int:
    with pytest.raises(InvalidRecordError) as caught:
        to_record_batch(data, limit)
    return caught.value.error_code


def message(magic: int, attributes: int, key: bytes | None, value: bytes | None, offset: int = 0,
            timestamp: int = T0, crc: int | None = None) -> bytes:
    """One framed message written field by field (for the malformed cases the builder never writes)."""
    body = bytes((magic, attributes)) + (struct.pack(">q", timestamp) if magic else b"")
    for field in (key, value):
        body += struct.pack(">i", -1 if field is None else len(field)) + (field or b"")
    stored = zlib.crc32(body) if crc is None else crc
    return struct.pack(">qiI", offset, len(body) + 4, stored) + body


def wrapper(magic: int, codec: int, inner: bytes, offset: int = 0, attributes: int = 0) -> bytes:
    return message(magic, codec | attributes, None, compress(codec, inner), offset)


# ---- produce: conversion ----


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
@pytest.mark.parametrize("codec", CODECS)
def test_converted_batch_keeps_records_and_the_producers_codec(magic: int, codec: int) -> None:
    header, records = converted(build_message_set(messages(), magic, codec))
    assert header.compression == codec
    assert (header.producer_id, header.base_sequence, header.is_transactional) == (-1, -1, False)
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, m.key, m.value, []) for i, m in enumerate(messages())
    ]
    expected = [m.timestamp for m in messages()] if magic else [-1] * 4  # magic 0 has no timestamps
    assert [r.timestamp for r in records] == expected
    assert header.max_timestamp == max(expected)


def test_uncompressed_messages_become_one_batch_whatever_their_offsets() -> None:
    data = b"".join(build_message_set([m], MAGIC_V1) for m in messages(3, first=40))
    header, records = converted(data)
    assert header.records_count == 3 and [r.offset for r in records] == [0, 1, 2]


def test_inner_timestamps_of_a_log_append_time_wrapper_are_the_wrappers() -> None:
    data = build_message_set(messages(3), MAGIC_V1, GZIP, log_append_time=T0 + 999)
    _, records = converted(data)
    assert [r.timestamp for r in records] == [T0 + 999] * 3


def test_wrapper_offset_zero_and_wrong_inner_offsets_are_accepted() -> None:
    """librdkafka once sent wrapper offset 0, and old clients got inner offsets wrong: Kafka rewrites them."""
    inner = message(1, 0, None, b"a", offset=7) + message(1, 0, None, b"b", offset=3)
    _, records = converted(wrapper(1, GZIP, inner, offset=0))
    assert [(r.offset, r.value) for r in records] == [(0, b"a"), (1, b"b")]


@pytest.mark.parametrize("broken", [True, False])
def test_magic_0_lz4_is_read_whatever_its_header_checksum(broken: bool) -> None:
    """Kafka before 0.10 computed the lz4 header checksum over the magic too; Kafka ignores it for magic 0."""
    inner = build_message_set(messages(), MAGIC_V0)
    value = _with_lz4_header_checksum(compress(LZ4, inner), broken=broken)
    _, records = converted(message(0, LZ4, None, value))
    assert [r.value for r in records] == [m.value for m in messages()]


def test_magic_1_lz4_needs_the_right_header_checksum() -> None:
    inner = build_message_set(messages(), MAGIC_V1)
    value = _with_lz4_header_checksum(compress(LZ4, inner), broken=True)
    assert refused(message(1, LZ4, None, value)) == CORRUPT_MESSAGE


def test_a_partial_last_message_is_dropped_and_none_at_all_appends_nothing() -> None:
    data = build_message_set(messages(2), MAGIC_V1)
    _, records = converted(data + data[:20])
    assert len(records) == 2
    assert to_record_batch(data[:20], LIMIT) is None
    assert to_record_batch(b"", LIMIT) is None


# ---- produce: refusals, with Kafka's error codes ----


def test_a_wrong_crc_is_corrupt() -> None:
    good = message(1, 0, b"k", b"v")
    assert refused(message(1, 0, b"k", b"v", crc=zlib.crc32(good[16:]) ^ 1)) == CORRUPT_MESSAGE


def test_a_wrong_inner_crc_is_corrupt() -> None:
    assert refused(wrapper(1, GZIP, message(1, 0, None, b"v", crc=1))) == CORRUPT_MESSAGE


def test_a_size_below_the_smallest_message_is_corrupt() -> None:
    assert refused(struct.pack(">qi", 0, 13) + bytes(13)) == CORRUPT_MESSAGE


def test_an_unknown_magic_is_corrupt() -> None:
    data = bytearray(message(1, 0, None, b"v"))
    data[16] = 7
    assert refused(bytes(data)) == CORRUPT_MESSAGE


def test_lengths_overrunning_the_message_are_corrupt() -> None:
    data = bytearray(message(0, 0, None, b"v"))
    struct.pack_into(">i", data, 22, 50)  # the value's length
    struct.pack_into(">I", data, 12, zlib.crc32(data[16:]))
    assert refused(bytes(data)) == CORRUPT_MESSAGE


def test_corrupt_compressed_data_is_refused() -> None:
    assert refused(message(1, GZIP, None, b"not gzip at all")) == CORRUPT_MESSAGE


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(message(0, 0, None, b"a") + message(1, 0, None, b"b"), id="mixed-magic"),
        pytest.param(wrapper(1, GZIP, message(1, 0, None, b"a")) * 2, id="two-wrappers"),
        pytest.param(wrapper(1, GZIP, wrapper(1, GZIP, message(1, 0, None, b"a"))), id="compressed-inner"),
        pytest.param(wrapper(1, GZIP, message(0, 0, None, b"a")), id="inner-magic-differs"),
        pytest.param(message(1, ZSTD, None, compress(ZSTD, message(1, 0, None, b"a"))), id="zstd-wrapper"),
        pytest.param(message(1, GZIP, None, None), id="null-wrapper-value"),
        pytest.param(message(1, GZIP, None, compress(GZIP, b"")), id="no-inner-messages"),
        pytest.param(
            wrapper(1, GZIP, message(1, 0, None, b"a", offset=0) + message(1, 0, None, b"b", offset=5), offset=2),
            id="wrapper-offset-below-last-inner",
        ),
        pytest.param(message(1, 0, None, b"a") + build_batch([(None, b"b")]), id="v2-batch-after-messages"),
    ],
)
def test_invalid_message_sets_are_invalid_record(data: bytes) -> None:
    assert refused(data) == INVALID_RECORD


def test_a_message_over_max_message_bytes_is_too_large() -> None:
    data = message(1, 0, None, b"x" * 100)
    assert refused(data, limit=len(data) - 1) == MESSAGE_TOO_LARGE
    assert to_record_batch(data, len(data)) is not None


# ---- fetch: down-conversion ----


def stored(records: list[RecordInput], base_offset: int = 0, codec: int = NONE, **options) -> bytes:
    return build_batch(records, base_offset=base_offset, compression=codec, **options)


def inputs(count: int = 4) -> list[RecordInput]:
    return [RecordInput(m.key, m.value, [("h", b"x" * 100)], m.timestamp) for m in messages(count)]  # headers: larger than converted


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_uncompressed_messages_come_back_byte_for_byte(magic: int) -> None:
    original = build_message_set(messages(), magic)
    batch = bytearray(to_record_batch(original, LIMIT))
    assert down_convert(bytes(batch), magic, 0) == original


@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
@pytest.mark.parametrize("codec", CODECS)
def test_down_conversion_keeps_offsets_and_codec_and_drops_headers(magic: int, codec: int) -> None:
    data = stored(inputs(), base_offset=100, codec=codec) + stored(inputs(2), base_offset=104, codec=codec)
    out = down_convert(data, magic, 100)
    got = read_messages(out[: len(out) - _tail(out)])
    assert len(got) >= 4  # at least the first batch whole; the second may be cut at the fetched size
    assert [m.offset for m in got] == list(range(100, 100 + len(got)))
    expected = messages() + messages(2)
    assert [(m.key, m.value) for m in got] == [(m.key, m.value) for m in expected[: len(got)]]
    assert {m.magic for m in got} == {magic}
    assert [m.timestamp for m in got] == [m.timestamp if magic else -1 for m in expected[: len(got)]]


def _tail(out: bytes) -> int:
    """Bytes after the last complete message (a partial one or Kafka's overflow message)."""
    position = 0
    while position + 12 <= len(out):
        (size,) = struct.unpack_from(">i", out, position + 8)
        if position + 12 + size > len(out):
            break
        position += 12 + size
    return len(out) - position


def test_compressed_wrapper_has_the_last_offset_and_relative_inner_offsets() -> None:
    out = down_convert(stored(inputs(3), base_offset=50, codec=GZIP), MAGIC_V1, 50)
    (offset,) = struct.unpack_from(">q", out)
    assert offset == 52 and out[17] == GZIP
    (timestamp,) = struct.unpack_from(">q", out, 18)
    assert timestamp == T0 + 20  # the largest


def test_magic_0_lz4_is_written_with_kafkas_header_checksum() -> None:
    out = down_convert(stored(inputs(), codec=LZ4), MAGIC_V0, 0)
    frame = read_wrapper_value(out)
    assert frame == _with_lz4_header_checksum(frame, broken=True) != _with_lz4_header_checksum(frame, broken=False)


def read_wrapper_value(out: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", out, 8)
    (length,) = struct.unpack_from(">i", out, 12 + 14 - 4)  # magic 0: crc, magic, attributes, key length (-1)
    assert struct.unpack_from(">i", out, 18)[0] == -1
    return out[26 : 26 + length]


def test_log_append_time_batches_carry_it_in_magic_1() -> None:
    batch = bytearray(stored(inputs(2), codec=NONE))
    set_log_append_time(batch, parse_header(batch), T0 + 5000)
    out = down_convert(bytes(batch), MAGIC_V1, 0)
    got = read_messages(out)
    assert [m.timestamp for m in got] == [T0 + 5000] * 2 and all(m.log_append_time for m in got)
    batch = bytearray(stored(inputs(2), codec=GZIP))
    set_log_append_time(batch, parse_header(batch), T0 + 5000)
    got = read_messages(down_convert(bytes(batch), MAGIC_V1, 0))
    assert [m.timestamp for m in got] == [T0 + 5000] * 2


def test_records_before_the_fetch_offset_are_left_out_of_uncompressed_batches_only() -> None:
    plain = down_convert(stored(inputs(), base_offset=10), MAGIC_V1, 12)
    assert [m.offset for m in read_messages(plain[: len(plain) - _tail(plain)])] == [12, 13]
    packed = down_convert(stored(inputs(), base_offset=10, codec=GZIP), MAGIC_V1, 12)
    assert [m.offset for m in read_messages(packed[: len(packed) - _tail(packed)])] == [10, 11, 12, 13]


def test_control_batches_are_dropped() -> None:
    marker = bytes(build_control_batch(commit=True, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=4))
    records = stored(inputs(), producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    out = down_convert(records + marker, MAGIC_V1, 0)
    got = read_messages(out[: len(out) - _tail(out)])
    assert [m.offset for m in got] == [0, 1, 2, 3]
    assert down_convert(marker, MAGIC_V1, 4) == struct.pack(">qi", -1, 61)  # nothing left: an overflow message


def test_a_larger_conversion_is_cut_to_the_fetched_size_with_a_partial_last_message() -> None:
    """Many small records grow on conversion; Kafka sends max(fetched size, first converted batch) bytes."""
    many = [RecordInput(None, b"v", (), T0) for _ in range(30)]
    data = stored(many) + stored(many, base_offset=30) + stored(many, base_offset=60)
    out = down_convert(data, MAGIC_V0, 0)
    first = len(build_message_set([OutMessage(i, T0, None, b"v") for i in range(30)], MAGIC_V0))
    assert len(out) == len(data) > first
    assert down_convert(data[: len(data) // 3], MAGIC_V0, 0) == out[:first]  # one batch: at least it, whole
    assert 0 < _tail(out)  # the last message is cut short
    assert [m.offset for m in read_messages(out)] == list(range(len(read_messages(out))))


def test_a_smaller_conversion_is_padded_with_an_overflow_message() -> None:
    data = stored([RecordInput(b"k" * 10, b"v" * 400, [("h", b"x" * 300)], T0)])
    out = down_convert(data, MAGIC_V1, 0)
    converted_size = len(out) - _tail(out)
    assert len(out) == len(data)
    assert out[converted_size : converted_size + 12] == struct.pack(">qi", -1, len(data) - converted_size + 1)


def test_zstd_is_refused_first_and_ends_the_conversion_later() -> None:
    with pytest.raises(InvalidRecordError) as caught:
        down_convert(stored(inputs(), codec=ZSTD), MAGIC_V1, 0)
    assert caught.value.error_code == UNSUPPORTED_COMPRESSION_TYPE
    data = stored(inputs()) + stored(inputs(), base_offset=4, codec=ZSTD)
    out = down_convert(data, MAGIC_V1, 0)
    assert [m.offset for m in read_messages(out[: len(out) - _tail(out)])] == [0, 1, 2, 3]
    assert len(out) == len(data)


def test_nothing_fetched_stays_nothing() -> None:
    assert down_convert(b"", MAGIC_V0, 0) == b""
