"""The protocol transcript: every request and its answer, summarised, in order (setting ``transcript``, the control
API's ``GET /v1/transcript``, ``minibroker transcript FILE``).

An entry names the connection, node, client id, API and version, correlation id, the partitions the request names,
the record batches it carries or its answer returns (offsets, count, producer, transactional and control flags),
the offsets of each partition (asked for, committed, answered; the first and last of the records returned), every
non-zero error code of the answer with the partition or group it belongs to, the fault that acted on it, and how
long it took. Entries are kept in a bounded ring (the newest ``transcript.max.entries``) and, with
``transcript.file``, appended to a JSONL file. The summaries walk the decoded messages generically, so every API
is covered the same way.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from typing import IO, Any, Callable

from minibroker.protocol.errors import error_name
from minibroker.protocol.messages import KAFKA_APIS
from minibroker.protocol.primitives import FileRegion
from minibroker.protocol.records import BatchHeader, iter_batches

log = logging.getLogger(__name__)

PARTITION_KEYS = ("partition_index", "partition", "index")
TopicNames = Callable[[bytes], "str | None"]  # a topic id's name (KIP-516), None for an id no topic has
Walked = list[tuple[dict[str, Any], dict[str, Any]]]  # walk's answer: every dict of a message with where it is
CONTEXT_KEYS = ("group_id", "transactional_id", "key", "member_id")
# A partition's offset fields as requests name them (Fetch's offset asked, ListOffsets' timestamp, DeleteRecords'
# offset, OffsetCommit's and TxnOffsetCommit's offset committed) and as answers do (ListOffsets', Produce's base,
# OffsetFetch's committed, Fetch's high watermark, last stable and log start offsets, DeleteRecords' low watermark).
ASKED_OFFSETS = ("fetch_offset", "timestamp", "offset", "committed_offset")
ANSWERED_OFFSETS = (
    "offset", "base_offset", "committed_offset", "high_watermark", "last_stable_offset", "log_start_offset",
    "low_watermark",
)
OFFSET_PLACES = ("topic", "partition", "group_id")  # the group for OffsetFetch's groups (v8+)
TIMELINE_OFFSETS = {  # an offsets entry's fields as the timeline shows them, in this order
    "fetch_offset": "fetch", "timestamp": "at", "offset": "offset", "committed_offset": "committed",
    "base_offset": "base", "records": "records", "acquired": "acquired", "high_watermark": "hw",
    "last_stable_offset": "lso", "log_start_offset": "start", "low_watermark": "low",
}


class Transcript:
    def __init__(self, max_entries: int, path: str | os.PathLike[str] | None = None) -> None:
        self.entries: deque[dict[str, Any]] = deque(maxlen=max_entries)
        self.next_seq = 1
        self._file: IO[str] | None = open(path, "a", encoding="utf-8") if path is not None else None

    def record(self, entry: dict[str, Any]) -> None:
        entry["seq"] = self.next_seq
        self.next_seq += 1
        self.entries.append(entry)
        if self._file is not None:
            try:
                self._file.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
                self._file.flush()
            except OSError as exc:
                log.error("transcript file not written, closing it: %s", exc)
                self._file = None

    def note(
        self, api_key: int, version: int, correlation_id: int, client_id: str | None, peer: str, node: int,
        request: dict[str, Any], response: dict[str, Any] | None, started_ms: int, elapsed_ms: float,
        fault: int | None, outcome: str, names: TopicNames | None = None,
    ) -> None:
        """Record one exchange (``outcome``: answered, no answer for acks=0, or disconnected); ``names`` names the
        topics a message gives by id."""
        self.record(entry(
            api_key, version, correlation_id, client_id, peer, node, request, response, started_ms, elapsed_ms, fault,
            outcome, names,
        ))

    def since(self, seq: int) -> list[dict[str, Any]]:
        return [entry for entry in self.entries if entry["seq"] > seq]

    def clear(self) -> None:
        self.entries.clear()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def entry(
    api_key: int, version: int, correlation_id: int, client_id: str | None, peer: str, node: int,
    request: dict[str, Any], response: dict[str, Any] | None, started_ms: int, elapsed_ms: float,
    fault: int | None, outcome: str, names: TopicNames | None = None,
) -> dict[str, Any]:
    asked = walk(request, names)  # each message walked once for every part of the summary
    answered = walk(response, names) if response is not None else []
    headers = BatchHeaders()  # and each records field parsed once
    summary: dict[str, Any] = {
        "time_ms": started_ms, "elapsed_ms": round(elapsed_ms, 3), "peer": peer, "node": node, "client_id": client_id,
        "api": KAFKA_APIS[api_key][0], "api_key": api_key, "version": version,
        "correlation_id": correlation_id, "outcome": outcome,
        "partitions": named_partitions(asked), "errors": errors(answered),
    }
    for key in CONTEXT_KEYS:
        if isinstance(request.get(key), str):
            summary[key] = request[key]
    sent = batches(asked, headers)
    if sent:
        summary["request_batches"] = sent
    returned = batches(answered, headers)
    if returned:
        summary["response_batches"] = returned
    found = offsets(asked, answered, headers)
    if found:
        summary["offsets"] = found
    if fault is not None:
        summary["fault"] = fault
    return summary


def named_partitions(walked: Walked) -> dict[str, list[int]]:
    """topic -> partitions a walked message names (topics without partitions: an empty list)."""
    found: dict[str, list[int]] = {}
    for where, _ in walked:
        topic = where.get("topic")
        if topic is not None:
            partitions = found.setdefault(topic, [])
            partition = where.get("partition")
            if partition is not None and partition not in partitions:
                partitions.append(partition)
    return found


def errors(walked: Walked) -> list[dict[str, Any]]:
    """Every non-zero error code of a walked message with where it was: topic, partition, group, key."""
    found = []
    for where, item in walked:
        for key, value in item.items():
            if key.endswith("error_code") and isinstance(value, int) and value != 0:
                found.append({**{k: v for k, v in where.items() if k != "depth"}, "error": error_name(value)})
    return found


class BatchHeaders:
    """The batch headers of the records fields of one entry's messages, each field parsed once (for its batches and
    for the offsets it spans)."""

    def __init__(self) -> None:
        # By the field's id, the field kept beside its headers: an id is an object's only while the object lives.
        self._parsed: dict[int, tuple[bytes | bytearray | memoryview, list[BatchHeader]]] = {}

    def of(self, records: bytes | bytearray | memoryview) -> list[BatchHeader]:
        kept = self._parsed.get(id(records))
        if kept is None:
            kept = self._parsed[id(records)] = (records, list(iter_batches(records)))
        return kept[1]


def batches(walked: Walked, headers: BatchHeaders | None = None) -> list[dict[str, Any]]:
    """The record batches a walked message carries, by topic and partition: offsets, count, producer, flags."""
    headers = headers or BatchHeaders()
    found = []
    for where, item in walked:
        records = item.get("records")
        if isinstance(records, (bytes, bytearray, memoryview)) and records:
            for header in headers.of(records):
                found.append({
                    **{k: v for k, v in where.items() if k in ("topic", "partition")},
                    "base_offset": header.base_offset, "last_offset": header.last_offset,
                    "count": header.records_count, "producer_id": header.producer_id,
                    "producer_epoch": header.producer_epoch, "base_sequence": header.base_sequence,
                    "transactional": header.is_transactional, "control": header.is_control,
                })
        elif records is not None and not isinstance(records, (bytes, bytearray, memoryview)):
            found.append({**{k: v for k, v in where.items() if k in ("topic", "partition")}, "from_file": True})
    return found


def offsets(asked: Walked, answered: Walked, headers: BatchHeaders | None = None) -> list[dict[str, Any]]:
    """Per partition, the offsets its request asks for or commits and those its answer gives, in one dict: with the
    answer's records, their first and last offset (``records``); with a ShareFetch's, the acquired ranges and their
    delivery counts (``acquired``). What decides whether duplicates came from the broker or the client."""
    headers = headers or BatchHeaders()
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for walked, answer in ((asked, False), (answered, True)):
        for where, item in walked:
            if "partition" not in where:
                continue
            shown = answered_offsets(item, headers) if answer else int_fields(item, ASKED_OFFSETS)
            if shown:
                place = tuple(where.get(key) for key in OFFSET_PLACES)
                found.setdefault(place, {key: where[key] for key in OFFSET_PLACES if key in where}).update(shown)
    return list(found.values())


def answered_offsets(item: dict[str, Any], headers: BatchHeaders) -> dict[str, Any]:
    """An answer's offset fields, and what its records and acquired ranges span."""
    shown = int_fields(item, ANSWERED_OFFSETS)
    returned = record_range(item.get("records"), headers)
    if returned is not None:
        shown["records"] = returned
    acquired = item.get("acquired_records")
    if acquired:
        shown["acquired"] = [[r["first_offset"], r["last_offset"], r["delivery_count"]] for r in acquired]
    return shown


def int_fields(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, int]:
    return {key: item[key] for key in keys if type(item.get(key)) is int}


def record_range(records: Any, headers: BatchHeaders) -> list[int] | None:
    """[first, last] offset of the record batches an answer returns (whole batches, so the first may come before the
    offset asked for); an answer sent from the segment file is read for it (a region closed unsent: none)."""
    if isinstance(records, FileRegion):
        try:
            records = records.read()
        except OSError:
            return None
    if not isinstance(records, (bytes, bytearray, memoryview)) or not records:
        return None
    parsed = headers.of(records)
    return [parsed[0].base_offset, parsed[-1].last_offset] if parsed else None


def walk(body: Any, names: TopicNames | None = None) -> Walked:
    """Every dict of a message with what encloses it: (context of topic / partition / group / key, the dict); a
    topic named only by id (Fetch v13+, Produce v13, ...) is named by ``names``."""
    out: Walked = []
    stack: list[tuple[Any, dict[str, Any]]] = [(body, {})]
    while stack:
        value, where = stack.pop()
        if isinstance(value, list):
            stack.extend((item, where) for item in reversed(value))
        elif isinstance(value, dict):
            here = dict(where)
            for key in ("name", "topic"):
                if isinstance(value.get(key), str) and value[key]:  # "": the name of a version that names by id
                    here["topic"] = value[key]
            topic_id = value.get("topic_id")
            if names is not None and isinstance(topic_id, bytes) and not value.get("name") and not value.get("topic"):
                name = names(topic_id)
                if name is not None:
                    here["topic"] = name
            for key in PARTITION_KEYS:
                if isinstance(value.get(key), int):
                    here["partition"] = value[key]
                    break
            for key in CONTEXT_KEYS:
                if isinstance(value.get(key), str) and value[key]:
                    here[key] = value[key]
            out.append((here, value))
            stack.extend((child, here) for child in reversed(list(value.values())) if isinstance(child, (dict, list)))
    return out


def timeline(entries: list[dict[str, Any]]) -> list[str]:
    """One readable line per entry (``minibroker transcript FILE``, failing tests' reports)."""
    out = []
    for e in entries:
        where = " ".join(f"{t}:{','.join(map(str, p))}" if p else t for t, p in e.get("partitions", {}).items())
        errs = ", ".join(
            f"{x['error']}@{x.get('topic', x.get('group_id', x.get('key', '')))}"
            + (f"-{x['partition']}" if "partition" in x else "") for x in e.get("errors", [])
        )
        sent = sum(b.get("count", 0) for b in e.get("request_batches", []))
        shown = "; ".join(map(shown_offsets, e.get("offsets", [])))
        out.append(
            f"#{e['seq']:<6} {e['time_ms']} node {e['node']} {e['peer']} {e.get('client_id') or '-'} "
            f"{e['api']} v{e['version']} corr {e['correlation_id']}"
            + (f" [{where}]" if where else "")
            + (f" records {sent}" if sent else "")
            + (f" {{{shown}}}" if shown else "")
            + (f" fault {e['fault']}" if "fault" in e else "")
            + (f" -> {errs}" if errs else f" -> {e['outcome']}")
            + f" ({e['elapsed_ms']} ms)"
        )
    return out


def shown_offsets(place: dict[str, Any]) -> str:
    """One partition's offsets in a timeline line: ``[group/]topic-partition fetch 5 records 5..9 hw 10 lso 10``."""
    where = f"{place.get('topic', '?')}-{place['partition']}"  # ?: a topic id no topic has
    shown = [f"{place['group_id']}/{where}" if "group_id" in place else where]
    for key, label in TIMELINE_OFFSETS.items():
        if key in place:
            shown.append(f"{label} {shown_range(place[key])}")
    return " ".join(shown)


def shown_range(value: int | list[Any]) -> str:
    """An offset as itself, [first, last] as first..last, [first, last, delivery count] with the count after it,
    a list of ranges comma-separated."""
    if isinstance(value, int):
        return str(value)
    if value and isinstance(value[0], list):
        return ", ".join(map(shown_range, value))
    first, last, *delivery = value
    return f"{first}..{last}" + "".join(f" (delivery {count})" for count in delivery)
