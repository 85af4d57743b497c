"""The batches and records of a segment as kafka-dump-log names their fields (pure: bytes in, dicts out): what
``minibroker dump`` prints, and what the inspector and the control API show of stored data.

Batch dicts use kafka-dump-log's field names; records keep their raw key, value and header bytes, so JSON output can
show them losslessly (``json_ready``: UTF-8 text when the bytes are valid UTF-8, else ``{"base64": ...}``).
"""

from __future__ import annotations

import base64
import mmap
from collections.abc import Iterator
from typing import Any

from minibroker.control.record_decoders import RecordDecoder, SkipRecord
from minibroker.protocol.compression import CODEC_NAMES
from minibroker.protocol.primitives import ProtocolError
from minibroker.protocol.records import (
    DELETE_HORIZON_FLAG,
    BatchHeader,
    ControlRecordType,
    InvalidRecordError,
    Record,
    batch_crc_ok,
    decode_batch,
    iter_batches,
    parse_control_record,
)

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_INT32_MAX = 2**31 - 1

Batch = dict[str, Any]


def dump_segment(data: bytes | mmap.mmap, *, records: bool, decoder: RecordDecoder | None = None) -> Iterator[Batch]:
    """One dict per complete batch; with ``records`` each also lists its records (decoded by ``decoder`` if given)."""
    for header in iter_batches(data):
        batch = batch_fields(data, header)
        if records:
            try:
                batch["records"] = [record_fields(header, record, decoder) for record in decode_batch(data, header)]
            except InvalidRecordError as exc:
                batch["error"] = exc.message
        yield batch


def batch_fields(data: bytes | mmap.mmap, header: BatchHeader) -> Batch:
    """Every header field kafka-dump-log prints, under its names there."""
    return {
        "baseOffset": header.base_offset,
        "lastOffset": header.last_offset,
        "count": header.records_count,
        "baseSequence": header.base_sequence,
        "lastSequence": sequence_at(header.base_sequence, header.last_offset_delta),
        "producerId": header.producer_id,
        "producerEpoch": header.producer_epoch,
        "partitionLeaderEpoch": header.partition_leader_epoch,
        "isTransactional": header.is_transactional,
        "isControl": header.is_control,
        "deleteHorizonMs": header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None,
        "position": header.position,
        "timestampType": TIMESTAMP_TYPES[header.timestamp_type],
        "baseTimestamp": header.base_timestamp,
        "maxTimestamp": header.max_timestamp,
        "size": header.size,
        "magic": header.magic,
        "compressCodec": CODEC_NAMES.get(header.compression, f"unknown({header.compression})"),
        "crc": header.crc,
        "isValid": batch_crc_ok(data, header),
    }


def sequence_at(base_sequence: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from Integer.MAX_VALUE to 0; -1 stays -1."""
    if base_sequence < 0:
        return -1
    if base_sequence > _INT32_MAX - delta:
        return delta - (_INT32_MAX - base_sequence) - 1
    return base_sequence + delta


def record_fields(header: BatchHeader, record: Record, decoder: RecordDecoder | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "keySize": -1 if record.key is None else len(record.key),
        "valueSize": -1 if record.value is None else len(record.value),
        "sequence": sequence_at(header.base_sequence, record.offset - header.base_offset),
        "headers": [[name, value] for name, value in record.headers],
        "key": record.key,
        "value": record.value,
    }
    if header.is_control:
        fields["control"] = control_fields(record)
    elif decoder is not None:
        try:
            fields["decoded"] = decoder(record)
        except SkipRecord as exc:
            fields["decoded"] = {"error": str(exc)}
        except ProtocolError as exc:
            fields["decoded"] = {"error": f"Error at offset {record.offset}, skipping. {exc}"}
    return fields


def control_fields(record: Record) -> dict[str, Any]:
    try:
        record_type, coordinator_epoch = parse_control_record(record)
    except InvalidRecordError as exc:
        return {"error": exc.message}
    try:
        name = ControlRecordType(record_type).name
    except ValueError:
        name = "UNKNOWN"
    control: dict[str, Any] = {"type": name, "typeId": record_type}
    if record_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        control["coordinatorEpoch"] = coordinator_epoch
    return control


def json_ready(obj: Any) -> Any:
    """Bytes become their UTF-8 text when valid, else ``{"base64": ...}``; everything else is kept."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        raw = bytes(obj)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(obj, dict):
        return {key: json_ready(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(item) for item in obj]
    return obj
