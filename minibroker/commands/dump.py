"""``minibroker dump``: segment files and partition directories shown like Kafka's kafka-dump-log.

``control.batch_views.dump_segment`` turns the bytes of one ``.log`` into one dict per batch; ``batch_line`` and
``record_line`` print those dicts in kafka-dump-log's text layout, ``json_ready`` makes them printable as JSON.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from minibroker.control.batch_views import Batch, dump_segment, json_ready
from minibroker.control.record_decoders import DECODER_BY_TOPIC, RecordDecoder, decoder_named

LOG_SUFFIX = ".log"
SEGMENT_NAME_DIGITS = 20
RECORD_INDENT = "|"


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
