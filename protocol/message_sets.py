"""Message sets of magic 0 and 1 (Kafka's formats before 0.11), for Produce v0-2 and Fetch v0-3.

Partitions hold V2 record batches only, as Kafka 3.0+ stores them: a produced message set is validated and converted to
one V2 batch as Kafka's LogValidator does on append, and stored batches are down-converted for an old fetch as Kafka's
RecordsUtil.downConvert and LazyDownConversionRecords do.

One message (LegacyRecord), after the log overhead ``offset i64 | size i32``:
crc u32 (CRC-32 of the rest) | magic i8 | attributes i8 | [timestamp i64, magic 1 only] | key bytes | value bytes
Attributes: bits 0-2 the codec (none, gzip, snappy, lz4), bit 3 (magic 1) LogAppendTime. A compressed message is a
wrapper: null key, and as value the compressed message set of its inner messages, whose offsets are absolute (magic 0)
or relative to the first, the wrapper carrying the last one's absolute offset (magic 1).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from .compression import CODEC_NAMES, LZ4, NONE, ZSTD, CompressionError, compress, decompress
from .records import (
    CORRUPT_MESSAGE,
    INVALID_RECORD,
    NO_TIMESTAMP,
    UNSUPPORTED_COMPRESSION_TYPE,
    BatchHeader,
    InvalidRecordError,
    RecordInput,
    decode_batch,
    iter_batches,
    new_batch,
)

MAGIC_V0 = 0
MAGIC_V1 = 1
LOG_OVERHEAD = 12  # offset + size
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # and the timestamp
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
MESSAGE_TOO_LARGE = 10
V2_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD, the length an overflow message claims at least

_LOG_HEADER = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class Message:
    """One message of magic 0 or 1; ``timestamp`` as Kafka reads it (an inner message of a LogAppendTime wrapper has
    the wrapper's, magic 0 has none)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def log_append_time(self) -> bool:
        return self.magic > MAGIC_V0 and bool(self.attributes & TIMESTAMP_TYPE_FLAG)


# ---- produce: validate and convert to one V2 batch (Kafka's UnifiedLog.analyzeAndValidateRecords, LogValidator) ----


def to_record_batch(buf: Buffer, max_message_bytes: int) -> bytearray | None:
    """The V2 batch Kafka appends for a produced message set of magic 0 or 1, or None when it holds no complete message
    (Kafka then appends nothing and answers without an offset).

    The batch keeps the producer's codec (a topic's compression.type is applied to it as to any batch); records keep
    key, value and timestamp (none for magic 0) and get no headers; offsets are the log's to assign. Raises
    InvalidRecordError with Kafka's error code for what Kafka refuses.
    """
    shallow = list(_shallow_messages(buf, max_message_bytes))
    if not shallow:
        return None
    source = NONE
    for message in shallow:
        if message.codec != NONE:
            source = message.codec
        if message.magic != shallow[0].magic:
            raise InvalidRecordError(
                INVALID_RECORD,
                f"Batch magic {message.magic} is not the same as the first batch's magic byte {shallow[0].magic}",
            )
    if source != NONE and len(shallow) > 1:
        raise InvalidRecordError(INVALID_RECORD, "Compressed outer record has more than one batch")
    records = shallow if source == NONE else list(_inner_messages(shallow[0]))
    return new_batch(
        [RecordInput(m.key, m.value, (), m.timestamp) for m in records],
        base_timestamp=records[0].timestamp,
        compression=source,
    )


def _shallow_messages(buf: Buffer, max_message_bytes: int) -> Iterator[Message]:
    """The outer messages, each checked as analyzeAndValidateRecords does: size, then CRC; a partial tail is dropped."""
    for offset, record in _framed(buf):
        magic = _signed_byte(record[4])
        if not 0 <= magic <= 2:
            raise InvalidRecordError(CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}")
        if magic > MAGIC_V1:  # a V2 batch after messages of magic 0 or 1 (LogValidator.validateBatch)
            raise InvalidRecordError(INVALID_RECORD, f"Batch magic {magic} is not the same as the first batch's magic byte")
        size = len(record) + LOG_OVERHEAD
        if size > max_message_bytes:
            raise InvalidRecordError(
                MESSAGE_TOO_LARGE,
                f"The record batch size in the append is {size} bytes which exceeds the maximum configured value "
                f"of {max_message_bytes}.",
            )
        stored, computed = _crcs(record)
        if stored != computed:
            raise InvalidRecordError(CORRUPT_MESSAGE, f"Record is corrupt (stored crc = {stored})")
        yield _message(offset, record)


def _framed(buf: Buffer) -> Iterator[tuple[int, memoryview]]:
    """``(offset, message bytes)`` of each complete message (ByteBufferLogInputStream): a size under the smallest
    message is CORRUPT_MESSAGE, a message cut short ends the set."""
    view = memoryview(buf)
    position = 0
    while len(view) - position >= LOG_OVERHEAD:
        offset, size = _LOG_HEADER.unpack_from(view, position)
        if size < RECORD_OVERHEAD_V0:
            raise InvalidRecordError(
                CORRUPT_MESSAGE, f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})"
            )
        end = position + LOG_OVERHEAD + size
        if end > len(view):
            return
        yield offset, view[position + LOG_OVERHEAD : end]
        position = end


def _crcs(record: memoryview) -> tuple[int, int]:
    """The stored and the computed CRC-32 of one message (LegacyRecord.isValid)."""
    return _UINT32.unpack_from(record)[0], zlib.crc32(record[4:])


def _message(offset: int, record: memoryview, wrapper: Message | None = None) -> Message:
    """Decode one message's fields; lengths that overrun it are CORRUPT_MESSAGE. An inner message of a magic-1
    LogAppendTime wrapper takes the wrapper's timestamp (LegacyRecord.timestamp)."""
    magic = _signed_byte(record[4])
    attributes = record[5]
    position = 6
    timestamp = NO_TIMESTAMP
    if magic > MAGIC_V0:
        if len(record) < RECORD_OVERHEAD_V1:
            raise InvalidRecordError(CORRUPT_MESSAGE, f"Record of magic {magic} is too small, size = {len(record)}")
        (timestamp,) = _INT64.unpack_from(record, position)
        position += 8
        if wrapper is not None and wrapper.log_append_time:
            timestamp = wrapper.timestamp
    key, position = _nullable_bytes(record, position)
    value, position = _nullable_bytes(record, position)
    return Message(offset, magic, attributes, timestamp, key, value)


def _nullable_bytes(record: memoryview, position: int) -> tuple[bytes | None, int]:
    if position + 4 > len(record):
        raise InvalidRecordError(CORRUPT_MESSAGE, "record is too short for its key and value lengths")
    (length,) = _INT32.unpack_from(record, position)
    position += 4
    if length < 0:
        return None, position
    if position + length > len(record):
        raise InvalidRecordError(CORRUPT_MESSAGE, f"a field of {length} bytes overruns the record")
    return bytes(record[position : position + length]), position + length


def _inner_messages(wrapper: Message) -> Iterator[Message]:
    """The inner messages of a compressed wrapper, with the checks of Kafka's DeepRecordsIterator and of LogValidator's
    validateRecord (magic as the wrapper's, CRC per inner message, no inner compression)."""
    if wrapper.codec == ZSTD or wrapper.codec not in CODEC_NAMES:
        raise InvalidRecordError(
            INVALID_RECORD if wrapper.codec == ZSTD else CORRUPT_MESSAGE,
            f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper.codec}",
        )
    if wrapper.value is None:
        raise InvalidRecordError(
            INVALID_RECORD, f"Found invalid compressed record set with null value (magic = {wrapper.magic})"
        )
    plain = _decompress(wrapper.codec, wrapper.value, wrapper.magic)
    inner = []
    for offset, record in _framed(plain):
        message = _message(offset, record, wrapper)
        if message.magic != wrapper.magic:
            raise InvalidRecordError(
                INVALID_RECORD, f"Record's magic {message.magic} does not match outer magic {wrapper.magic}"
            )
        stored, computed = _crcs(record)
        if stored != computed:
            raise InvalidRecordError(
                CORRUPT_MESSAGE, f"Record is corrupt (stored crc = {stored}, computed crc = {computed})"
            )
        if message.codec != NONE:
            raise InvalidRecordError(INVALID_RECORD, "Inner messages must not be compressed")
        inner.append(message)
    if not inner:
        raise InvalidRecordError(INVALID_RECORD, "Found invalid compressed record set with no inner records")
    if wrapper.magic == MAGIC_V1 and wrapper.offset != 0 and wrapper.offset < inner[-1].offset:
        raise InvalidRecordError(
            INVALID_RECORD,
            f"Found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper.offset}' is less "
            f"than the last inner message offset '{inner[-1].offset}' and it is not zero.",
        )
    return iter(inner)


def _decompress(codec: int, data: bytes, magic: int) -> bytes:
    """A wrapper's value decompressed; magic-0 lz4 frames carry Kafka 0.8's wrong header checksum, which Kafka's
    reader ignores (KafkaLZ4BlockInputStream), so the right one is put in before the frame is read."""
    if codec == LZ4 and magic == MAGIC_V0:
        data = _with_lz4_header_checksum(data, broken=False)
    try:
        return decompress(codec, data)
    except CompressionError as exc:
        raise InvalidRecordError(exc.error_code, str(exc)) from exc


def _signed_byte(value: int) -> int:
    return value - 256 if value > 127 else value


def read_messages(buf: Buffer) -> list[Message]:
    """Every message of a set, compressed ones opened, with absolute offsets as Kafka's consumer sees them (tests and
    tools; checked as on produce, without a size limit)."""
    out = []
    for message in _shallow_messages(buf, 1 << 31):
        if message.codec == NONE:
            out.append(message)
            continue
        inner = list(_inner_messages(message))
        relative = message.magic > MAGIC_V0 and message.offset != 0  # librdkafka once sent wrapper offset 0
        shift = message.offset - inner[-1].offset if relative else 0
        out += [replace(m, offset=m.offset + shift) for m in inner]
    return out


# ---- building message sets (down-conversion and tests) ----


@dataclass(frozen=True, slots=True)
class OutMessage:
    """A message to write: absolute offset, timestamp (ignored for magic 0), key and value."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def build_message_set(
    messages: Sequence[OutMessage], magic: int, codec: int = NONE, log_append_time: int | None = None,
) -> bytes:
    """Messages as Kafka's MemoryRecordsBuilder writes them for ``magic``: uncompressed, one message each; compressed,
    one wrapper holding them (inner offsets relative for magic 1, absolute for magic 0; the wrapper has the last
    offset and, for magic 1, the LogAppendTime or the largest timestamp). ``log_append_time``: the batch's append time
    when it is LogAppendTime (magic 1 then flags every message and stamps it with that time)."""
    attributes = TIMESTAMP_TYPE_FLAG if magic > MAGIC_V0 and log_append_time is not None else 0
    if codec == NONE:
        out = bytearray()
        for m in messages:
            timestamp = m.timestamp if log_append_time is None else log_append_time
            _append_message(out, magic, m.offset, attributes, timestamp, m.key, m.value)
        return bytes(out)
    base = messages[0].offset if magic > MAGIC_V0 else 0
    inner = bytearray()
    for m in messages:
        timestamp = m.timestamp if log_append_time is None else log_append_time
        _append_message(inner, magic, m.offset - base, attributes, timestamp, m.key, m.value)
    value = compress(codec, inner)
    if codec == LZ4 and magic == MAGIC_V0:
        value = _with_lz4_header_checksum(value, broken=True)  # as Kafka writes magic 0 lz4 (KafkaLZ4BlockOutputStream)
    wrapper_time = log_append_time if log_append_time is not None else max(m.timestamp for m in messages)
    out = bytearray()
    _append_message(out, magic, messages[-1].offset, attributes | codec, wrapper_time, None, value)
    return bytes(out)


def _append_message(
    out: bytearray, magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None,
) -> None:
    body = bytearray((magic, attributes))
    if magic > MAGIC_V0:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        body += _INT32.pack(-1 if field is None else len(field))
        if field is not None:
            body += field
    out += _LOG_HEADER.pack(offset, len(body) + 4)
    out += _UINT32.pack(zlib.crc32(body))
    out += body


# ---- fetch: down-conversion of stored V2 batches (RecordsUtil.downConvert, LazyDownConversionRecords) ----


def down_convert(data: Buffer, magic: int, first_offset: int) -> bytes:
    """The fetched V2 batches as Kafka sends them to a fetch of magic 0 (v0-1) or 1 (v2-3): offsets and each batch's
    codec kept, control batches and headers dropped, an uncompressed batch's records before ``first_offset`` left out.

    The size is Kafka's (LazyDownConversionRecords): that of the fetched V2 bytes, or of the first converted batch if
    larger, so the converted messages are cut there (a partial last message, which clients skip) or padded with an
    overflow message (offset -1, a length past the end). Empty ``data`` stays empty. Raises InvalidRecordError
    UNSUPPORTED_COMPRESSION_TYPE when the first batch to convert is zstd; a later one ends the conversion there.
    """
    if not len(data):
        return b""
    out = bytearray()
    first_size = None
    for header in iter_batches(data):
        try:
            converted = _convert_batch(data, header, magic, first_offset)
        except InvalidRecordError as exc:
            if first_size is None or exc.error_code != UNSUPPORTED_COMPRESSION_TYPE:
                raise
            break
        if converted and first_size is None:
            first_size = len(converted)
        out += converted
    if first_size is None:
        return _overflow(LOG_OVERHEAD)
    size = max(len(data), first_size)
    if len(out) >= size:
        return bytes(out[:size])
    return bytes(out) + _overflow(size - len(out))


def _convert_batch(data: Buffer, header: BatchHeader, magic: int, first_offset: int) -> bytes:
    if header.is_control:
        return b""
    if header.compression == ZSTD:
        raise InvalidRecordError(UNSUPPORTED_COMPRESSION_TYPE, "Down-conversion of zstandard-compressed batches is not supported")
    records = decode_batch(data, header)
    if not header.compression:
        records = [r for r in records if r.offset >= first_offset]
    if not records:
        return b""
    messages = [OutMessage(r.offset, r.timestamp, r.key, r.value) for r in records]
    log_append_time = header.max_timestamp if header.timestamp_type == 1 else None
    return build_message_set(messages, magic, header.compression, log_append_time)


def _overflow(remaining: int) -> bytes:
    """The first ``remaining`` bytes of Kafka's overflow message: offset -1 and a length past the response's end."""
    message = _LOG_HEADER.pack(-1, max(remaining + 1, V2_BATCH_OVERHEAD))
    return (message + bytes(max(remaining - len(message), 0)))[:remaining]


# ---- lz4 frame header checksum (xxHash32 of the frame descriptor) ----

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_CONTENT_SIZE_FLAG = 0x08
_PRIME1, _PRIME2, _PRIME3, _PRIME4, _PRIME5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_MASK32 = 0xFFFFFFFF


def _with_lz4_header_checksum(frame: bytes, broken: bool) -> bytes:
    """``frame`` with its header checksum byte recomputed: over the descriptor, as the LZ4 format has it, or
    (``broken``) over magic and descriptor, as Kafka before 0.10 computed it and Kafka still writes for magic 0."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame  # not a frame: the decoder reports it
    checksum_at = 6 + (8 if frame[4] & _LZ4_CONTENT_SIZE_FLAG else 0)
    if len(frame) <= checksum_at:
        return frame
    start = 0 if broken else 4
    checksum = (_xxh32_short(frame[start:checksum_at]) >> 8) & 0xFF
    return frame[:checksum_at] + bytes((checksum,)) + frame[checksum_at + 1 :]


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _xxh32_short(data: bytes) -> int:
    """xxHash32 with seed 0 of fewer than 16 bytes (a frame descriptor is at most 14)."""
    if len(data) >= 16:
        raise ValueError("only inputs under 16 bytes")
    h = (_PRIME5 + len(data)) & _MASK32
    position = 0
    while position + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, position)
        h = (_rotl((h + word * _PRIME3) & _MASK32, 17) * _PRIME4) & _MASK32
        position += 4
    for byte in data[position:]:
        h = (_rotl((h + byte * _PRIME5) & _MASK32, 11) * _PRIME1) & _MASK32
    h ^= h >> 15
    h = (h * _PRIME2) & _MASK32
    h ^= h >> 13
    h = (h * _PRIME3) & _MASK32
    return h ^ (h >> 16)
