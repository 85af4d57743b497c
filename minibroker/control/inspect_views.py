"""What the web inspector shows, as JSON: the cluster, topics and their partitions, groups and transactional ids,
single records and record ranges for download. Read off the broker's own state on its event loop, bounded by
pages (a topic of 10,000 partitions is listed 100 at a time), so a look never holds up the clients."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from minibroker import __version__
from minibroker.cluster.internal_topics import read_batches
from minibroker.cluster.placements import NO_LEADER
from minibroker.config.settings import SETTING_FIELDS, is_secret
from minibroker.control.api import nodes_view
from minibroker.control.batch_views import batch_fields, json_ready
from minibroker.control.observe import mark_aborted, partition_log, shown_record
from minibroker.protocol.messages import KAFKA_APIS
from minibroker.protocol.records import decode_batch, iter_records
from minibroker.storage.topic_names import INTERNAL_TOPICS
from minibroker.storage.uuid import uuid_to_str

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.storage.log_manager import TopicInfo

PAGE = 100
MAX_PAGE = 1000
EXPORT_MAX_RECORDS = 100_000
SECRET_SHOWN = "[hidden]"


def cluster_view(broker: Broker) -> dict[str, Any]:
    """Nodes and listeners, the settings given (secrets hidden), uptime, request counts by API, and how much there is."""
    from minibroker.cluster.clock import VirtualClock

    groups = broker.loaded_groups
    transactions = broker.loaded_transactions
    return {
        "cluster_id": broker.logs.cluster_id, "version": __version__,
        "kafka_version": broker.config.kafka_version or None,
        "uptime_ms": int((time.monotonic() - broker.started_at) * 1000),
        "read_only": broker.config.control_read_only,
        "clock": {"now_ms": broker.clock(), "virtual": isinstance(broker.clock, VirtualClock)},
        "nodes": nodes_view(broker),
        "settings": given_settings(broker),
        "requests": request_counts(broker),
        "counts": {
            "topics": len(broker.logs.topics),
            "partitions": sum(len(info.partitions) for info in broker.logs.topics.values()),
            "groups": 0 if groups is None else sum(
                len(c.groups) + len(c.consumer.groups) for c in groups.ownership.coordinators.values()),
            "transactional_ids": 0 if transactions is None else sum(
                len(c.transactions) for c in transactions.ownership.coordinators.values()),
        },
    }


def given_settings(broker: Broker) -> list[dict[str, Any]]:
    """The settings that differ from their defaults (minibroker's, else Kafka's): those given with another value, by
    Kafka name, with the default beside them; secrets hidden."""
    from minibroker.config.kafka_settings import BROKER_SETTINGS

    defaults = {name: spec[1] for name, spec in BROKER_SETTINGS.items()}
    defaults.update((f.metadata["kafka"], setting_text(f.default)) for f in SETTING_FIELDS)
    return [
        {"name": name, "value": SECRET_SHOWN if is_secret(name) else value, "default": defaults.get(name)}
        for name, value in sorted(broker.config.given)
        if value != defaults.get(name)
    ]


def setting_text(value: Any) -> str:
    """A default as a setting is written (``true``, not ``True``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def request_counts(broker: Broker) -> dict[str, Any]:
    by_api = {KAFKA_APIS[key][0]: count for key, count in broker.request_counts.items()}
    return {"total": sum(by_api.values()), "by_api": by_api}


def page_bounds(offset: int, limit: int) -> tuple[int, int]:
    return max(offset, 0), min(max(limit, 0), MAX_PAGE)


def topics_view(broker: Broker, offset: int = 0, limit: int = PAGE, text: str = "", internal: bool = True) -> dict:
    """One page of the topics, by name, those containing ``text``."""
    offset, limit = page_bounds(offset, limit)
    names = sorted(
        name for name in broker.logs.topics
        if text in name and (internal or name not in INTERNAL_TOPICS)
    )
    return {
        "total": len(names), "offset": offset, "limit": limit,
        "topics": [topic_summary(broker, broker.logs.topics[name]) for name in names[offset:offset + limit]],
    }


def topic_summary(broker: Broker, info: TopicInfo) -> dict[str, Any]:
    return {
        "name": info.name, "topic_id": uuid_to_str(info.topic_id), "internal": info.name in INTERNAL_TOPICS,
        "partitions": len(info.partitions),
        "replication_factor": len(broker.placements.of(info.name, 0).replicas),
        "size_bytes": sum(log.size_bytes for log in info.partitions),
        "records": sum(log.log_end_offset - log.log_start_offset for log in info.partitions),
    }


def topic_view(broker: Broker, name: str, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
    """A topic's configs (each with where its value comes from) and one page of its partitions."""
    info = broker.topic(name)
    if info is None:
        raise LookupError(f"no topic {name!r}")
    offset, limit = page_bounds(offset, limit)
    given = {setting for setting, _ in broker.config.given}
    effective = info.config.to_kafka_configs()
    partitions = []
    for index in range(offset, min(offset + limit, len(info.partitions))):
        log = info.partitions[index]
        placed = broker.placements.of(name, index)
        partitions.append({
            "partition": index, "leader": placed.leader if placed.leader != NO_LEADER else None,
            "leader_epoch": placed.leader_epoch, "replicas": list(placed.replicas),
            "log_start_offset": log.log_start_offset, "high_watermark": log.log_end_offset,
            "last_stable_offset": log.last_stable_offset, "size_bytes": log.size_bytes,
            "segments": len(log.segment_base_offsets),
        })
    return {
        **topic_summary(broker, info), "partition_count": len(info.partitions), "offset": offset, "limit": limit,
        "configs": [
            {"name": setting, "value": value,
             "source": "topic" if setting in info.overrides else "broker" if setting in given else "default"}
            for setting, value in sorted(effective.items())
        ],
        "partitions": partitions,
    }


def record_view(broker: Broker, topic: str, partition: int | str, offset: int) -> dict[str, Any]:
    """One record in full (its whole value), with its batch and whether an aborted transaction wrote it."""
    log = partition_log(broker, topic, partition)
    for data, header in read_batches(log, max(offset, log.log_start_offset)):
        if header.base_offset > offset:
            break
        record = next(iter_records(data, header, offset), None)
        if record is not None and record.offset == offset:
            batch = batch_fields(data, header)
            mark_aborted(log, [batch], offset, offset + 1)
            return json_ready({**shown_record(header, record, None), "aborted": batch["aborted"], "batch": batch})
        break
    raise LookupError(f"no record at offset {offset} of {topic}-{partition}")


def export_lines(broker: Broker, topic: str, partition: int | str, offset: int, end: int | None) -> Iterator[bytes]:
    """The records of [offset, end) as JSONL (at most EXPORT_MAX_RECORDS), one JSON object per line."""
    log = partition_log(broker, topic, partition)
    end = min(log.log_end_offset if end is None else end, max(offset, log.log_start_offset) + EXPORT_MAX_RECORDS)
    for data, header in read_batches(log, max(offset, log.log_start_offset)):
        if header.base_offset >= end:
            return
        batch = batch_fields(data, header)
        mark_aborted(log, [batch], header.base_offset, header.last_offset + 1)
        for record in decode_batch(data, header):
            if offset <= record.offset < end:
                line = {**shown_record(header, record, None), "aborted": batch["aborted"],
                        "producerId": header.producer_id, "isTransactional": header.is_transactional}
                yield json.dumps(json_ready(line), sort_keys=True).encode() + b"\n"


def groups_view(broker: Broker) -> dict[str, Any]:
    """Every group of every coordinator: protocol, state, member count, coordinator."""
    service = broker.loaded_groups
    listed = []
    for node, coordinator in ({} if service is None else service.ownership.coordinators).items():
        for group in coordinator.groups.values():
            listed.append({"group_id": group.group_id, "protocol": "classic", "protocol_type": group.protocol_type or "",
                           "state": group.state.value, "members": len(group.members), "coordinator": node})
        for group_id, group in coordinator.consumer.groups.items():
            listed.append({"group_id": group_id, "protocol": "consumer", "protocol_type": "consumer",
                           "state": group.state().value, "members": len(group.members), "coordinator": node})
        for group_id, share_group in coordinator.share.groups.items():
            listed.append({"group_id": group_id, "protocol": "share", "protocol_type": "share",
                           "state": share_group.state(), "members": len(share_group.members), "coordinator": node})
    return {"groups": sorted(listed, key=lambda g: g["group_id"])}


def transactions_view(broker: Broker) -> dict[str, Any]:
    service = broker.loaded_transactions
    listed = [
        {"transactional_id": txn.transactional_id, "state": txn.state.kafka_name, "producer_id": txn.producer_id,
         "producer_epoch": txn.producer_epoch, "timeout_ms": txn.timeout_ms, "partitions": len(txn.partitions),
         "coordinator": node}
        for node, coordinator in ({} if service is None else service.ownership.coordinators).items()
        for txn in coordinator.transactions.values()
    ]
    return {"transactions": sorted(listed, key=lambda t: t["transactional_id"])}
