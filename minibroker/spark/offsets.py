"""Offset bookkeeping for the Spark reader, free of Spark and of any client so it is unit-testable.

Spark checkpoints a streaming source's offsets as JSON; the Kafka connector writes
``{"topic": {"0": 23, "1": 5}}``, and so does this source, so checkpoints read the same way.
In ``startingOffsets``/``endingOffsets`` JSON, -2 means earliest and -1 means latest, as in Spark.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

TopicPartitionKey = tuple[str, int]
PartitionOffsets = dict[TopicPartitionKey, int]

EARLIEST = -2
LATEST = -1

SpecKind = Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]


class OffsetOptionError(ValueError):
    """An offset option (startingOffsets, endingOffsets, ...) is malformed; the message names it."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends.

    ``offsets`` holds per-partition offsets (kind "offsets", -2/-1 allowed) or per-partition
    timestamps in ms (kind "timestamps"); ``timestamp`` is one timestamp for every partition.
    """

    kind: SpecKind
    offsets: Mapping[TopicPartitionKey, int] = field(default_factory=dict)
    timestamp: int | None = None


def to_json(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    """Spark's checkpoint layout: topics, then partition numbers as strings, both sorted."""
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = offset
    return result


def from_json(data: Mapping[str, Mapping[str, Any]], option: str = "offsets") -> PartitionOffsets:
    """Inverse of :func:`to_json`; validates types so a bad option fails with its name in the message."""
    if not isinstance(data, Mapping):
        raise OffsetOptionError(f"{option}: expected a JSON object of topics, got {data!r}")
    result: PartitionOffsets = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, Mapping):
            raise OffsetOptionError(f"{option}: topic {topic!r} must map partitions to offsets, got {partitions!r}")
        for partition, offset in partitions.items():
            try:
                key = (str(topic), int(partition))
            except ValueError:
                raise OffsetOptionError(
                    f"{option}: partition {partition!r} of topic {topic!r} is not a number"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise OffsetOptionError(f"{option}: offset of {topic}-{partition} must be an integer, got {offset!r}")
            result[key] = offset
    return result


def parse_offsets(option: str, value: str, *, ending: bool) -> OffsetSpec:
    """Parse ``startingOffsets``/``endingOffsets``: "earliest", "latest" or Spark's JSON."""
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        if ending and text.lower() == "earliest":
            raise OffsetOptionError(f"{option}: 'earliest' is not allowed as an ending offset")
        return OffsetSpec(text.lower())  # type: ignore[arg-type]
    offsets = from_json(_load_json(option, text), option)
    for (topic, partition), offset in offsets.items():
        if offset < EARLIEST or (ending and offset == EARLIEST):
            raise OffsetOptionError(f"{option}: invalid offset {offset} for {topic}-{partition}")
    return OffsetSpec("offsets", offsets)


def parse_timestamps(option: str, value: str, *, by_partition: bool) -> OffsetSpec:
    """Parse ``startingTimestamp`` (ms for every partition) or ``startingOffsetsByTimestamp`` (JSON of ms)."""
    if by_partition:
        timestamps = from_json(_load_json(option, value), option)
        if any(ts < 0 for ts in timestamps.values()):
            raise OffsetOptionError(f"{option}: timestamps must not be negative")
        return OffsetSpec("timestamps", timestamps)
    try:
        timestamp = int(value)
    except ValueError:
        raise OffsetOptionError(f"{option}: expected milliseconds since the epoch, got {value!r}") from None
    if timestamp < 0:
        raise OffsetOptionError(f"{option}: timestamps must not be negative")
    return OffsetSpec("timestamp", timestamp=timestamp)


def rate_limit(
    start: Mapping[TopicPartitionKey, int], latest: Mapping[TopicPartitionKey, int], max_rows: int
) -> PartitionOffsets:
    """Cap a micro-batch at about ``max_rows`` records, shared out in proportion to each partition's backlog.

    This is Spark's own rule for ``maxOffsetsPerTrigger``, so batches have the same shape under either connector:
    a share below one record rounds up (every partition with a backlog progresses), others round down.
    """
    backlog = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    result: PartitionOffsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = max_rows * (backlog[tp] / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        result[tp] = min(end, begin + step)
    return result


def _load_json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetOptionError(
            f"{option}: expected 'earliest', 'latest' or JSON such as "
            f'{{"topic":{{"0":-2}}}}, got {text!r} ({exc.msg})'
        ) from None
