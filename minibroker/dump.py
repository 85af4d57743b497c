"""``minibroker dump``: segment files and partition directories shown like Kafka's kafka-dump-log.

``dump_segment`` turns the bytes of one ``.log`` into one dict per batch (pure: bytes in, dicts out);
``batch_line``/``record_line`` print those dicts in kafka-dump-log's text layout, and ``json_ready``
makes them printable as JSON. Batch dicts use kafka-dump-log's field names; records keep their raw
key, value and header bytes, so JSON output can show them losslessly (UTF-8 text when the bytes are
valid UTF-8, else ``{"base64": ...}``).
"""

from __future__ import annotations

import base64
import json
import mmap
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from minibroker.dump_decoders import DECODER_BY_TOPIC, RecordDecoder, SkipRecord, decoder_named
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

LOG_SUFFIX = ".log"
SEGMENT_NAME_DIGITS = 20
RECORD_INDENT = "|"
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_INT32_MAX = 2**31 - 1

Batch = dict[str, Any]


def dump_paths(
    paths: Sequence[str | os.PathLike[str]], *, print_data: bool, decoder_name: str | None, as_json: bool, out: TextIO, err: TextIO
) -> int:
    """The ``dump`` command: every segment of every path, as text or JSON lines; 1 if a path could not be read."""
    status = 0
    for path in map(Path, paths):
        if not path.exists():
            print(f"minibroker dump: {path}: no such file or directory", file=err)
            status = 1
            continue
        name = decoder_name or auto_decoder_name(path)
        record_decoder = decoder_named(name) if name else None
        files = segment_files(path)
        if not files:
            print(f"minibroker dump: {path}: no segment files (they are in partition directories such as orders-0)", file=err)
            status = 1
        for file in files:
            if file.suffix != LOG_SUFFIX:
                print(f"minibroker dump: skipping {file}: only {LOG_SUFFIX} segment files can be dumped", file=err)
                status = 1
                continue
            records = print_data or record_decoder is not None
            dump_file(file, print_data=records, decoder=record_decoder, as_json=as_json, out=out, err=err)
    return status


def dump_file(
    path: Path, *, print_data: bool, decoder: RecordDecoder | None, as_json: bool, out: TextIO, err: TextIO
) -> None:
    """One segment: kafka-dump-log's header lines, batches and records, and a note on any invalid tail."""
    if not as_json:
        print(f"Dumping {path}", file=out)
        print(f"Log starting offset: {int(path.stem) if path.stem.isdigit() else path.stem}", file=out)
    end = 0
    with mapped(path) as data:
        for batch in dump_segment(data, records=print_data, decoder=decoder):
            end = batch["position"] + batch["size"]
            if as_json:
                print(json.dumps(json_ready({"file": str(path), **batch}), ensure_ascii=False), file=out)
                continue
            print(batch_line(batch), file=out)
            if "error" in batch:
                print(f"{RECORD_INDENT} error: {batch['error']}", file=out)
            for record in batch.get("records", ()):
                print(record_line(batch, record), file=out)
        trailing = len(data) - end
    if trailing > 0:
        print(f"Found {trailing} invalid bytes at the end of {path.name}", file=err if as_json else out)


def segment_files(path: Path) -> list[Path]:
    """The ``.log`` files a path names: itself, or every segment (``<20-digit base offset>.log``) of a partition
    directory, in offset order."""
    if path.is_dir():
        return sorted(p for p in path.glob(f"*{LOG_SUFFIX}") if p.stem.isdigit() and len(p.stem) == SEGMENT_NAME_DIGITS)
    return [path]


def auto_decoder_name(path: Path) -> str | None:
    """``offsets`` for ``__consumer_offsets-N``, ``transaction-log`` for ``__transaction_state-N`` and
    ``share-group-state`` for ``__share_group_state-N``."""
    directory = path if path.is_dir() else path.parent
    topic, sep, partition = directory.name.rpartition("-")
    return DECODER_BY_TOPIC.get(topic) if sep and partition.isdigit() else None


@contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The file's bytes, memory-mapped so a 1 GiB segment is not read into memory at once."""
    with path.open("rb") as file:
        if path.stat().st_size == 0:
            yield b""
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield data


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


# ---- kafka-dump-log's text layout ----


def batch_line(batch: Batch) -> str:
    horizon = batch["deleteHorizonMs"]
    return (
        f"baseOffset: {batch['baseOffset']} lastOffset: {batch['lastOffset']} count: {batch['count']} "
        f"baseSequence: {batch['baseSequence']} lastSequence: {batch['lastSequence']} "
        f"producerId: {batch['producerId']} producerEpoch: {batch['producerEpoch']} "
        f"partitionLeaderEpoch: {batch['partitionLeaderEpoch']} isTransactional: {_bool(batch['isTransactional'])} "
        f"isControl: {_bool(batch['isControl'])} "
        f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} "
        f"position: {batch['position']} {batch['timestampType']}: {batch['maxTimestamp']} size: {batch['size']} "
        f"magic: {batch['magic']} compresscodec: {batch['compressCodec']} crc: {batch['crc']} "
        f"isvalid: {_bool(batch['isValid'])}"
    )


def record_line(batch: Batch, record: dict[str, Any]) -> str:
    """One record as kafka-dump-log prints it with --print-data-log (plus header values, which it omits)."""
    parts = [
        f"{RECORD_INDENT} offset: {record['offset']} {batch['timestampType']}: {record['timestamp']}",
        f"keySize: {record['keySize']} valueSize: {record['valueSize']} sequence: {record['sequence']}",
        "headerKeys: [" + ",".join(name for name, _ in record["headers"]) + "]",
    ]
    control = record.get("control")
    decoded = record.get("decoded")
    if control is not None:
        parts.append(_control_text(control))
    elif decoded is not None:
        parts.append(_decoded_text(decoded))
    else:
        if record["key"] is not None:
            parts.append(f"key: {_text(record['key'])}")
        if record["value"] is not None:
            parts.append(f"payload: {_text(record['value'])}")
        if record["headers"]:
            parts.append("headers: [" + ",".join(f"{name}={_text(value)}" for name, value in record["headers"]) + "]")
    return " ".join(parts)


def _control_text(control: dict[str, Any]) -> str:
    if "error" in control:
        return f"controlError: {control['error']}"
    if "coordinatorEpoch" in control:
        return f"endTxnMarker: {control['type']} coordinatorEpoch: {control['coordinatorEpoch']}"
    return f"controlType: {control['type']}({control['typeId']})"


def _decoded_text(decoded: dict[str, Any]) -> str:
    """kafka-dump-log's offsets/transaction decoders: compact JSON with the type and version as strings (JSON records
such as _schemas' as their JSON)."""
    if "error" in decoded:
        return f"key: {decoded['error']}"
    if "type" not in decoded["key"]:  # a record that is JSON itself (_schemas): shown as it is
        value = decoded["value"]
        return f"key: {_compact(decoded['key'])} payload: {'<DELETE>' if value is None else _compact(value)}"
    key = {"type": str(decoded["key"]["type"]), "data": decoded["key"]["data"]}
    value = decoded["value"]
    payload = "<DELETE>" if value is None else _compact({"version": str(value["version"]), "data": value["data"]})
    return f"key: {_compact(key)} payload: {payload}"


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _text(data: bytes | None) -> str:
    """Kafka's StringDecoder: UTF-8, with malformed bytes replaced."""
    return "null" if data is None else data.decode("utf-8", errors="replace")


def _bool(value: bool) -> str:
    return "true" if value else "false"


# ---- JSON ----


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
