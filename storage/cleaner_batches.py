"""Batches rewritten by the log cleaner, byte for byte as Kafka's MemoryRecords.filterTo writes them.

A batch that keeps only some records is rebuilt with its original base offset and last offset delta (so the
producer's last sequence survives), producer id, epoch, base sequence, transactional and control flags, timestamp
type, partition leader epoch and codec (recompressed). Each kept record keeps its offset and timestamp. With a
delete horizon (KIP-534), the base timestamp holds the horizon and attribute bit 6 is set; record timestamps stay
right because their deltas are taken from that base. A batch that keeps no record but must stay (the last batch of
an active producer, or of a cleaning round) becomes a bare 61-byte header (DefaultRecordBatch.writeEmptyHeader).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ..protocol.compression import compress
from ..protocol.crc import crc32c
from ..protocol.records import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG,
    CRC_OFFSET,
    CRC_START,
    DELETE_HORIZON_FLAG,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    Record,
    encode_record,
)

NO_TIMESTAMP = -1
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")


def delete_horizon_of(header: BatchHeader) -> int | None:
    """The batch's delete horizon (ms), or None if the cleaner has not set one yet."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None


def rebuild_batch(header: BatchHeader, records: Sequence[Record], delete_horizon_ms: int = NO_TIMESTAMP) -> bytes:
    """The batch of ``header`` holding only ``records`` (decoded from it, in offset order)."""
    log_append_time = header.attributes & TIMESTAMP_TYPE_FLAG
    base_timestamp = delete_horizon_ms if delete_horizon_ms != NO_TIMESTAMP else records[0].timestamp
    body = b"".join(
        encode_record(record.offset - header.base_offset, record.timestamp - base_timestamp, record)
        for record in records
    )
    max_timestamp = header.max_timestamp if log_append_time else max(record.timestamp for record in records)
    attributes = header.compression | (header.attributes & (TIMESTAMP_TYPE_FLAG | TRANSACTIONAL_FLAG | CONTROL_FLAG))
    if delete_horizon_ms != NO_TIMESTAMP:
        attributes |= DELETE_HORIZON_FLAG
    return _finish(header, compress(header.compression, body), attributes, base_timestamp, max_timestamp, len(records))


def empty_batch(header: BatchHeader) -> bytes:
    """Kafka's writeEmptyHeader: no records, no codec, base and max timestamp both the original max timestamp."""
    attributes = header.attributes & (TIMESTAMP_TYPE_FLAG | TRANSACTIONAL_FLAG | CONTROL_FLAG)
    return _finish(header, b"", attributes, header.max_timestamp, header.max_timestamp, 0)


def _finish(header: BatchHeader, body: bytes, attributes: int, base_timestamp: int, max_timestamp: int,
            count: int) -> bytes:
    batch = bytearray(BATCH_HEADER_SIZE)
    batch += body
    _HEADER.pack_into(
        batch, 0, header.base_offset, len(batch) - LOG_OVERHEAD, header.partition_leader_epoch, MAGIC_V2, 0,
        attributes, header.last_offset_delta, base_timestamp, max_timestamp, header.producer_id,
        header.producer_epoch, header.base_sequence, count,
    )
    _CRC.pack_into(batch, CRC_OFFSET, crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)
