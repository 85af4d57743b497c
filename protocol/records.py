"""Record batch V2 (magic 2): header parsing, validation, in-place offset assignment, building and decoding.

Layout (all big-endian), see Kafka's DefaultRecordBatch:
baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 | attributes i16 |
lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16 |
baseSequence i32 | recordsCount i32 | records...
The CRC-32C covers attributes to the end, so baseOffset and partitionLeaderEpoch can be rewritten in place.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from .compression import CODEC_NAMES, CompressionError, compress, decompress
from .crc import crc32c
from .varint import decode_varint, decode_varlong, encode_varint, encode_varlong

BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
MAGIC_V2 = 2

BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40
_KNOWN_ATTRIBUTES = 0x7F  # bits 0-6; Kafka rebuilds attributes from these when it rewrites them

NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP: a record without one
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Kafka error codes this module can answer with.
CORRUPT_MESSAGE = 2
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_MARKER = struct.Struct(">hi")  # version, coordinatorEpoch
_CONTROL_RECORD_VERSION = 0

Buffer = bytes | bytearray | memoryview
WritableBuffer = bytearray | memoryview
RecordHeader = tuple[str, bytes | None]


class InvalidRecordError(Exception):
    """Record data Kafka would refuse; ``error_code`` is the Kafka error code to put in the response."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class ControlRecordType(IntEnum):
    """The ``type`` in a control record's key (ControlRecordType.java)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class BatchHeader:
    """The 61-byte header of one V2 batch, as parsed from bytes (``position`` is where it starts)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0

    @property
    def size(self) -> int:
        """Total bytes of the batch including the 12-byte log overhead."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_FLAG else 0


def parse_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Parse the batch header at ``position``; the caller guarantees 61 bytes are there."""
    return BatchHeader(*_HEADER.unpack_from(buf, position), position=position)


@dataclass(slots=True)
class Record:
    """One decoded record; ``timestamp`` is already resolved (LogAppendTime batches use the batch maxTimestamp)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[RecordHeader] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RecordInput:
    """A record to encode with build_batch; a missing timestamp means the batch base timestamp."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[RecordHeader] = ()
    timestamp: int | None = None


# ---- framing and validation (hot path: header and CRC only, records are never decoded) ----


def validate_batches(buf: Buffer) -> list[BatchHeader]:
    """Check one partition's Produce records blob the way Kafka does before appending it.

    Raises InvalidRecordError (and nothing else) for any malformed input.
    """
    if not len(buf):
        raise InvalidRecordError(INVALID_RECORD, "no batches")
    headers = []
    position = 0
    while position < len(buf):
        size = _batch_size_at(buf, position)
        header = parse_header(buf, position)
        _check_batch(buf, header)
        headers.append(header)
        position += size
    return headers


def iter_batches(buf: Buffer, start: int = 0) -> Iterator[BatchHeader]:
    """Yield complete magic-2 batches from ``start``, stopping quietly at a partial or impossible tail.

    For log recovery: the CRC is not checked here, see batch_crc_ok.
    """
    position = start
    while position < len(buf):
        try:
            size = _batch_size_at(buf, position)
        except InvalidRecordError:
            return
        yield parse_header(buf, position)
        position += size


def batch_crc_ok(buf: Buffer, header: BatchHeader) -> bool:
    """Whether the stored CRC matches the batch bytes."""
    return _compute_crc(buf, header) == header.crc


def _batch_size_at(buf: Buffer, position: int) -> int:
    """Total size of the batch at ``position`` once framing is sane (Kafka's ByteBufferLogInputStream checks).

    A batch cut short is INVALID_RECORD: Kafka answers that when a partition holds no complete batch.
    """
    remaining = len(buf) - position
    if remaining < MAGIC_OFFSET + 1:
        raise InvalidRecordError(INVALID_RECORD, f"truncated batch at byte {position}: only {remaining} bytes left")
    (batch_length,) = _INT32.unpack_from(buf, position + 8)
    (magic,) = _INT8.unpack_from(buf, position + MAGIC_OFFSET)
    if not 0 <= magic <= MAGIC_V2:
        raise InvalidRecordError(CORRUPT_MESSAGE, f"invalid magic {magic} in batch at byte {position}")
    if magic != MAGIC_V2:
        raise InvalidRecordError(INVALID_RECORD, f"batch at byte {position} has magic {magic}; only 2 is accepted")
    if batch_length < MIN_BATCH_LENGTH:
        raise InvalidRecordError(
            CORRUPT_MESSAGE, f"batch length {batch_length} at byte {position} is below the minimum {MIN_BATCH_LENGTH}"
        )
    if batch_length + LOG_OVERHEAD > remaining:
        raise InvalidRecordError(
            INVALID_RECORD, f"truncated batch at byte {position}: needs {batch_length + LOG_OVERHEAD}, has {remaining}"
        )
    return batch_length + LOG_OVERHEAD


def _check_batch(buf: Buffer, header: BatchHeader) -> None:
    """Header and CRC checks of DefaultRecordBatch.ensureValid and LogValidator.validateBatch (client origin)."""
    computed = _compute_crc(buf, header)
    if computed != header.crc:
        raise InvalidRecordError(
            CORRUPT_MESSAGE,
            f"CRC mismatch in batch at byte {header.position}: stored {header.crc:#010x}, computed {computed:#010x}",
        )
    _check_codec(header)
    count = header.records_count
    if count <= 0:
        raise InvalidRecordError(INVALID_RECORD, f"batch at byte {header.position} reports {count} records")
    if header.last_offset_delta != count - 1:
        raise InvalidRecordError(
            INVALID_RECORD,
            f"batch at byte {header.position} has lastOffsetDelta {header.last_offset_delta} for {count} records",
        )


def _check_codec(header: BatchHeader) -> None:
    """Codec ids 5-7 do not exist; Kafka reports them as a corrupt message."""
    if header.compression not in CODEC_NAMES:
        raise InvalidRecordError(
            CORRUPT_MESSAGE, f"unknown compression codec id {header.compression} in batch at byte {header.position}"
        )


def _compute_crc(buf: Buffer, header: BatchHeader) -> int:
    start = header.position + CRC_START
    return crc32c(memoryview(buf)[start : header.position + header.size])


# ---- in-place rewrites done by the broker on append ----


def assign_offsets(buf: WritableBuffer, header: BatchHeader, base_offset: int, leader_epoch: int) -> None:
    """Stamp the broker-assigned base offset and leader epoch; both lie outside the CRC so it stays valid."""
    _INT64.pack_into(buf, header.position, base_offset)
    _INT32.pack_into(buf, header.position + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    header.base_offset = base_offset
    header.partition_leader_epoch = leader_epoch


def set_log_append_time(buf: WritableBuffer, header: BatchHeader, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms``, like DefaultRecordBatch.setMaxTimestamp.

    Only attributes and maxTimestamp change (readers then use maxTimestamp for every record), so the CRC is redone.
    """
    attributes = (header.attributes & _KNOWN_ATTRIBUTES) | TIMESTAMP_TYPE_FLAG
    if attributes == header.attributes and timestamp_ms == header.max_timestamp:
        return
    _INT16.pack_into(buf, header.position + ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, header.position + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    header.attributes = attributes
    header.max_timestamp = timestamp_ms
    header.crc = _compute_crc(buf, header)
    _UINT32.pack_into(buf, header.position + CRC_OFFSET, header.crc)


def recompress_batch(buf: Buffer, header: BatchHeader, codec: int) -> tuple[bytearray, BatchHeader]:
    """The batch with its records section in ``codec`` (a topic's compression.type that is not ``producer``, as
    Kafka's LogValidator does): every other header field is kept, the records are checked as they are decoded."""
    plain, _ = _plain_records(buf, header)
    batch = bytearray(memoryview(buf)[header.position : header.position + BATCH_HEADER_SIZE])
    try:
        batch += compress(codec, plain)
    except CompressionError as exc:
        raise InvalidRecordError(exc.error_code, str(exc)) from exc
    _INT32.pack_into(batch, BATCH_LENGTH_OFFSET, len(batch) - LOG_OVERHEAD)
    _INT16.pack_into(batch, ATTRIBUTES_OFFSET, (header.attributes & _KNOWN_ATTRIBUTES & ~COMPRESSION_MASK) | codec)
    _UINT32.pack_into(batch, CRC_OFFSET, crc32c(memoryview(batch)[CRC_START:]))
    return batch, parse_header(batch)


# ---- decoding (tooling and tests) ----


def decode_all(buf: Buffer) -> list[tuple[BatchHeader, list[Record]]]:
    """Decode every complete batch in ``buf``."""
    return [(header, decode_batch(buf, header)) for header in iter_batches(buf)]


def decode_batch(buf: Buffer, header: BatchHeader) -> list[Record]:
    """Decompress and decode the records of one batch; raises InvalidRecordError on malformed data."""
    return _plain_records(buf, header)[1]


def iter_records(buf: Buffer, header: BatchHeader, from_offset: int = -1) -> Iterator[Record]:
    """The records of one batch at or after ``from_offset``, decoded one at a time as they are asked for: showing 50
    records of a batch of 10,000 decodes 50 (the ones before ``from_offset`` are only skipped over). Unlike
    decode_batch it does not check the bytes after the last record it yields; InvalidRecordError on malformed data."""
    body = memoryview(_records_section(buf, header))
    position = 0
    try:
        for _ in range(header.records_count):
            length, position = decode_varint(body, position)
            end = position + length
            if length < 0 or end > len(body):
                raise ValueError(f"record length {length} overruns the batch")
            if from_offset > header.base_offset and _offset_of(body[position:end], header) < from_offset:
                position = end
                continue
            yield _decode_record(_Reader(body[position:end]), header)
            position = end
    except ValueError as exc:
        raise InvalidRecordError(INVALID_RECORD, f"malformed record in batch at byte {header.position}: {exc}") from exc


def _offset_of(record: memoryview, header: BatchHeader) -> int:
    reader = _Reader(record)
    reader.take(1)  # attributes
    reader.varlong()  # timestamp delta
    return header.base_offset + reader.varint()


def _records_section(buf: Buffer, header: BatchHeader) -> bytes:
    """One batch's records section, uncompressed."""
    _check_codec(header)
    if header.records_count < 0:
        raise InvalidRecordError(
            INVALID_RECORD, f"batch at byte {header.position} reports {header.records_count} records"
        )
    # A private copy: views into the caller's bytearray, kept alive by a traceback, would block its resizing.
    body = bytes(memoryview(buf)[header.position + BATCH_HEADER_SIZE : header.position + header.size])
    if header.compression:
        try:
            body = decompress(header.compression, body)
        except CompressionError as exc:
            raise InvalidRecordError(exc.error_code, str(exc)) from exc
    return body


def _plain_records(buf: Buffer, header: BatchHeader) -> tuple[bytes, list[Record]]:
    """One batch's records section uncompressed, and its records decoded from it."""
    body = _records_section(buf, header)
    try:
        return body, _decode_records(memoryview(body), header)
    except ValueError as exc:
        raise InvalidRecordError(INVALID_RECORD, f"malformed record in batch at byte {header.position}: {exc}") from exc


def _decode_records(body: memoryview, header: BatchHeader) -> list[Record]:
    records = []
    position = 0
    for _ in range(header.records_count):
        length, position = decode_varint(body, position)
        if length < 0 or position + length > len(body):
            raise ValueError(f"record length {length} overruns the batch")
        records.append(_decode_record(_Reader(body[position : position + length]), header))
        position += length
    if position != len(body):
        raise ValueError(f"{len(body) - position} bytes left after {header.records_count} records")
    return records


def _decode_record(reader: _Reader, header: BatchHeader) -> Record:
    """DefaultRecord.readFrom: attributes (unused), deltas, key, value, headers, and no bytes left over."""
    reader.take(1)
    timestamp_delta = reader.varlong()
    offset_delta = reader.varint()
    key = reader.nullable_bytes()
    value = reader.nullable_bytes()
    header_count = reader.varint()
    if header_count < 0:
        raise ValueError(f"negative header count {header_count}")
    headers = [_decode_header(reader) for _ in range(header_count)]
    if reader.position != len(reader.data):
        raise ValueError(f"record has {len(reader.data) - reader.position} unread bytes")
    timestamp = header.max_timestamp if header.timestamp_type == 1 else header.base_timestamp + timestamp_delta
    return Record(header.base_offset + offset_delta, timestamp, key, value, headers)


def _decode_header(reader: _Reader) -> RecordHeader:
    length = reader.varint()
    if length < 0:
        raise ValueError(f"negative header key length {length}")
    # Java decodes header keys leniently (malformed UTF-8 becomes U+FFFD); do the same.
    name = bytes(reader.take(length)).decode("utf-8", errors="replace")
    return name, reader.nullable_bytes()


class _Reader:
    """Bounds-checked cursor over one record's bytes; every overrun is a ValueError."""

    __slots__ = ("data", "position")

    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.position = 0

    def varint(self) -> int:
        value, self.position = decode_varint(self.data, self.position)
        return value

    def varlong(self) -> int:
        value, self.position = decode_varlong(self.data, self.position)
        return value

    def take(self, length: int) -> memoryview:
        end = self.position + length
        if end > len(self.data):
            raise ValueError(f"field of {length} bytes overruns the record")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def nullable_bytes(self) -> bytes | None:
        """A varint length then bytes; any negative length means null, as in Java."""
        length = self.varint()
        return None if length < 0 else bytes(self.take(length))


# ---- building batches (broker-written batches and tests) ----


def build_batch(records: Sequence[RecordInput | tuple], **options: Any) -> bytes:
    """A complete V2 batch with a valid CRC, as bytes (tests, tools, the cleaner); ``options`` as ``new_batch``."""
    return bytes(new_batch(records, **options))


def new_batch(
    records: Sequence[RecordInput | tuple],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    compression: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """Encode a complete V2 batch with a valid CRC, in a buffer of its own: the log assigns offsets in it in place.

    ``records`` holds RecordInput or tuples ``(key, value[, headers[, timestamp]])``. The base timestamp defaults to
    the first record's timestamp (as the Java client does), or now.
    """
    inputs = [_as_fields(item) for item in records]
    if not inputs:
        raise ValueError("a batch needs at least one record")
    if base_timestamp is None:
        base_timestamp = inputs[0][3] if inputs[0][3] is not None else int(time.time() * 1000)
    max_timestamp = base_timestamp
    body = bytearray()
    for delta, (key, value, headers, timestamp) in enumerate(inputs):
        if timestamp is None:
            timestamp = base_timestamp
        elif timestamp > max_timestamp:
            max_timestamp = timestamp
        _append_record(body, delta, timestamp - base_timestamp, key, value, headers)
    if compression:
        body = compress(compression, body)
    attributes = compression | (TRANSACTIONAL_FLAG if is_transactional else 0) | (CONTROL_FLAG if is_control else 0)
    batch = bytearray(_HEADER.pack(
        base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch,
        MAGIC_V2,
        0,  # CRC, computed below over the finished bytes
        attributes,
        len(inputs) - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(inputs),
    ))
    batch += body
    _UINT32.pack_into(batch, CRC_OFFSET, crc32c(memoryview(batch)[CRC_START:]))
    return batch


def _as_fields(item: RecordInput | tuple) -> tuple[bytes | None, bytes | None, Sequence[RecordHeader], int | None]:
    """A record to build as ``(key, value, headers, timestamp)``."""
    if isinstance(item, RecordInput):
        return item.key, item.value, item.headers, item.timestamp
    if not 2 <= len(item) <= 4:
        raise TypeError(f"a record is (key, value[, headers[, timestamp]]), not {len(item)} items")
    return (*item, *_RECORD_DEFAULTS[len(item) - 2:])


_RECORD_DEFAULTS = ((), None)  # headers and timestamp, where a record tuple leaves them out


def encode_record(offset_delta: int, timestamp_delta: int, record: RecordInput | Record) -> bytes:
    """One record as Kafka's DefaultRecord writes it: length-prefixed attributes (0), deltas, key, value, headers."""
    out = bytearray()
    _append_record(out, offset_delta, timestamp_delta, record.key, record.value, record.headers)
    return bytes(out)


def _append_record(
    out: bytearray, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
    headers: Sequence[RecordHeader],
) -> None:
    body = bytearray(1)  # attributes: unused, always 0
    body += _SMALL_VARINTS[timestamp_delta] if -64 <= timestamp_delta < 64 else encode_varlong(timestamp_delta)
    body += _SMALL_VARINTS[offset_delta] if offset_delta < 64 else encode_varint(offset_delta)
    _put_nullable_bytes(body, key)
    _put_nullable_bytes(body, value)
    body += _SMALL_VARINTS[len(headers)] if len(headers) < 64 else encode_varint(len(headers))
    for name, value in headers:
        encoded = name.encode()
        body += encode_varint(len(encoded))
        body += encoded
        _put_nullable_bytes(body, value)
    out += _SMALL_VARINTS[len(body)] if len(body) < 64 else encode_varint(len(body))
    out += body


# zig-zag varints of -64..63 (one byte each), indexed by the value: most deltas and lengths in a small batch
_SMALL_VARINTS = {value: encode_varint(value) for value in range(-64, 64)}


def _put_nullable_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += _SMALL_VARINTS[-1]
    else:
        size = len(data)
        out += _SMALL_VARINTS[size] if size < 64 else encode_varint(size)
        out += data


# ---- control records (transaction markers) ----


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """A COMMIT or ABORT transaction marker batch (MemoryRecords.withEndTransactionMarker), in a buffer of its own
    (the log assigns its offset in place)."""
    key = _COMMIT_KEY if commit else _ABORT_KEY
    value = _END_TXN_MARKER.pack(_CONTROL_RECORD_VERSION, coordinator_epoch)
    return new_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


_COMMIT_KEY = _CONTROL_KEY.pack(_CONTROL_RECORD_VERSION, ControlRecordType.COMMIT)
_ABORT_KEY = _CONTROL_KEY.pack(_CONTROL_RECORD_VERSION, ControlRecordType.ABORT)


def parse_control_record(record: Record) -> tuple[int, int]:
    """Return ``(type, coordinator_epoch)`` of a control record; the epoch is -1 unless it is COMMIT or ABORT."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise InvalidRecordError(INVALID_RECORD, "control record key is shorter than 4 bytes")
    version, record_type = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(INVALID_RECORD, f"invalid control record key version {version}")
    if record_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return record_type, -1
    value = record.value
    if value is None or len(value) < _END_TXN_MARKER.size:
        raise InvalidRecordError(INVALID_RECORD, "transaction marker value is shorter than 6 bytes")
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(INVALID_RECORD, f"invalid transaction marker version {version}")
    return record_type, coordinator_epoch
