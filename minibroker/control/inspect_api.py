"""The control API routes behind the web inspector: the cluster, topic and group lists, a topic's partitions, single
records and downloads (views, minibroker.control.inspect_views), and the actions the page offers when the listener allows
changes: create and delete a topic, reset a group's offsets; and the schema registry's subjects when it runs. Registered in the control API's route table on import."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.control.api import field, observed, query_int, route
from minibroker.server.http import Answer, HttpError, HttpRequest, RawBody

if TYPE_CHECKING:
    from minibroker.broker import Broker
    from minibroker.registry.server import SchemaRegistry

RESET_TARGETS = ("earliest", "latest")
OFFSET_COMMIT_VERSION = 8  # a commit without a member, as Kafka's admin tools send it


@route("GET", "/v1/cluster")
async def cluster(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The cluster: nodes, listeners, the settings that differ from their defaults, uptime and requests served by
    API."""
    from minibroker.control.inspect_views import cluster_view

    return 200, cluster_view(broker)


@route("GET", "/v1/topics")
async def topics(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A page of the topics (query ``offset``, ``limit``, ``filter``)."""
    from minibroker.control.inspect_views import PAGE, topics_view

    internal = request.query.get("internal", ["true"])[0].lower() != "false"
    text = request.query.get("filter", [""])[0]
    return 200, topics_view(broker, query_int(request, "offset", 0), query_int(request, "limit", PAGE), text, internal)


@route("GET", "/v1/topics/{name}")
async def topic(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """A topic: a page of its partitions with offsets, size, segments, leader and epoch, and its configs with their
    sources."""
    from minibroker.control.inspect_views import PAGE, topic_view

    offset, limit = query_int(request, "offset", 0), query_int(request, "limit", PAGE)
    return observed(lambda: topic_view(broker, params[0], offset, limit))


@route("POST", "/v1/topics")
async def create_topic(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"name", "partitions", "replication_factor", "config": {...}}``: as CreateTopics, errors named as Kafka's."""
    body = request.json()
    name = field(body, "name", str)
    partitions = field(body, "partitions", int, default=1)
    factor = field(body, "replication_factor", int, default=1)
    config = {key: str(value) for key, value in field(body, "config", dict, default={}).items()}
    error, message = await broker.create_topic(name, partitions, config, replication_factor=factor)
    if error:
        raise HttpError(409 if error.name == "TOPIC_ALREADY_EXISTS" else 400, f"{error.name}: {message}")
    return 201, {"name": name, "partitions": partitions, "replication_factor": factor}


@route("DELETE", "/v1/topics/{name}")
async def delete_topic(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Delete a topic (an internal topic is refused)."""
    from minibroker.storage.topic_names import INTERNAL_TOPICS

    name = params[0]
    if broker.topic(name) is None:
        raise HttpError(404, f"no topic {name!r}")
    if name in INTERNAL_TOPICS:
        raise HttpError(409, f"{name} is internal: reset the broker instead (POST /v1/reset)")
    await broker.delete_topics([name])
    return 200, {"deleted": name}


@route("GET", "/v1/partitions/{topic}/{partition}/records/{offset}")
async def record(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """One record in full, with its batch."""
    from minibroker.control.inspect_views import record_view

    topic_name, partition, offset = params
    if not offset.isdigit():
        raise HttpError(404, f"no record at offset {offset!r}")
    return observed(lambda: record_view(broker, topic_name, partition, int(offset)))


@route("GET", "/v1/partitions/{topic}/{partition}/export")
async def export(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The records of ``offset`` (default 0) to ``end`` (default the high watermark) as a JSONL download."""
    from minibroker.control.inspect_views import export_lines

    topic_name, partition = params
    offset = query_int(request, "offset", 0)
    end = query_int(request, "end", -1)
    status, lines = observed(lambda: list(export_lines(broker, topic_name, partition, offset, None if end < 0 else end)))
    filename = f"{topic_name}-{partition}-{offset}.jsonl"
    return status, RawBody("application/x-ndjson", b"".join(lines),
                           {"Content-Disposition": f'attachment; filename="{filename}"'})


@route("GET", "/v1/groups")
async def groups(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Every group with its type, state, members and lag."""
    from minibroker.control.inspect_views import groups_view

    return 200, groups_view(broker)


@route("POST", "/v1/groups/{group}/offsets")
async def reset_group_offsets(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """``{"to": "earliest" | "latest"}``: every committed offset of an empty group moves to its partition's log start
    or end (as kafka-consumer-groups --reset-offsets; a group with members is refused, 409)."""
    from minibroker.groups.requests import PartitionCommit
    from minibroker.control.observe import group_coordinator, group_view

    group_id = params[0]
    target = field(request.json(), "to", str)
    if target not in RESET_TARGETS:
        raise HttpError(400, f"'to' must be one of {list(RESET_TARGETS)}, not {target!r}")
    status, view = observed(lambda: group_view(broker, group_id))
    if view["members"]:
        raise HttpError(409, f"group {group_id!r} has {len(view['members'])} member(s): stop them first")
    commits = []
    for row in view["lag"]:
        log = broker.partition(row["topic"], row["partition"])
        if log is not None:
            offset = log.log_start_offset if target == "earliest" else log.log_end_offset
            commits.append(PartitionCommit(row["topic"], row["partition"], offset, -1, ""))
    _, coordinator = group_coordinator(broker, group_id)
    errors = coordinator.commit_offsets(group_id, "", None, -1, -1, commits, OFFSET_COMMIT_VERSION)
    await broker.groups.flush()
    failed = {f"{c.topic}-{c.partition}": e.name for c, e in zip(commits, errors) if e}
    if failed:
        raise HttpError(409, f"offsets not reset: {failed}")
    return 200, {"group_id": group_id, "to": target,
                 "offsets": [{"topic": c.topic, "partition": c.partition, "offset": c.offset} for c in commits]}


@route("GET", "/v1/transactions")
async def transactions(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """Every transactional id with its state."""
    from minibroker.control.inspect_views import transactions_view

    return 200, transactions_view(broker)


@route("GET", "/v1/schemas")
async def schemas(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """The schema registry's subjects (409 when no registry runs)."""
    from minibroker.registry.views import subjects_view

    return 200, subjects_view(_registry(broker).state, broker.schema_registry_url)


@route("GET", "/v1/schemas/{subject}")
async def subject_schemas(broker: Broker, request: HttpRequest, params: list[str]) -> Answer:
    """One subject's versions and schemas."""
    from minibroker.registry.views import subject_view

    view = subject_view(_registry(broker).state, params[0])
    if view is None:
        raise HttpError(404, f"no subject {params[0]!r}")
    return 200, view


def _registry(broker: Broker) -> SchemaRegistry:
    if broker.schema_registry is None:
        raise HttpError(404, "no schema registry: start the broker with schema.registry.port (--schema-registry-port)")
    return broker.schema_registry
